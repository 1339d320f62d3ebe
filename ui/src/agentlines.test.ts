import { describe, expect, it } from "vitest";
import { agentSeries } from "./agentlines";

describe("agentSeries", () => {
  it("draws one line per agent with calls, never joining two agents' calls", () => {
    const agents = [
      { index: 0, parent: null, name: "main" },
      { index: 1, parent: 0, name: "Explore" },
      { index: 2, parent: null, name: "idle" },
    ];
    const s = agentSeries(agents, [0, 0, 1, 1, 0], [10, 20, 5, 6, 30], [11, 19, 5, 7, 29]);
    expect(s.map((x) => x.name)).toEqual(["main", "Explore"]);
    expect(s[0].recorded).toEqual([10, 20, null, null, 30]);
    expect(s[1].recorded).toEqual([null, null, 5, 6, null]);
    expect(s[1].estimate).toEqual([null, null, 5, 7, null]);
    expect(s[0].dash).toBeUndefined();
    expect(s[1].dash).toBeDefined();
    expect(s[1].color).not.toBe(s[0].color);
  });
});
