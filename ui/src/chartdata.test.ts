import { describe, expect, it } from "vitest";
import type { RunView } from "./bindings/RunView";
import { run as baseRun } from "./testruns";
import { agentsOf, callRows, preferredCumulative, shapeRuns } from "./chartdata";

// The shared run, with one compaction at call 3 and a warn and a cutover threshold.
function run(strategy: string, over: Partial<RunView> = {}): RunView {
  return baseRun(strategy, {
    compactions: [{ call: 3, agent: 0, kind: "summarize", messages: 4, context_before: 300, context_after: 120, trigger: null }],
    thresholds: [
      { kind: "warn", line: "cumulative_since_compaction", tokens: 250, label: "WarnAt" },
      { kind: "cutover", line: "occupancy", tokens: 180, label: "CutoverAt" },
    ],
    ...over,
  });
}

describe("shapeRuns", () => {
  it("draws one line per agent, null where another agent called", () => {
    const d = shapeRuns([run("a")], "cumulative");
    expect(d.x).toEqual([0, 1, 2, 3, 4]);
    expect(d.lines.map((l) => l.label)).toEqual(["main", "sub"]);
    expect(d.lines[0].values).toEqual([100, 300, null, 420, null]);
    expect(d.lines[1].values).toEqual([null, null, 50, null, 130]);
    expect(d.markers).toEqual([{ call: 3, run: 0, strategy: "a", agent: 0, kind: "summarize", before: 300, after: 120 }]);
    expect(d.thresholds).toEqual([]);
  });

  it("keeps occupancy and cumulative apart, each with its own thresholds", () => {
    const occ = shapeRuns([run("a")], "occupancy");
    expect(occ.lines[0].values).toEqual([100, 200, null, 120, null]);
    expect(occ.thresholds).toEqual([{ tokens: 180, kind: "cutover", label: "CutoverAt", strategy: "a" }]);
    const since = shapeRuns([run("a")], "cumulative_since_compaction");
    expect(since.lines[0].values).toEqual([100, 300, null, 120, null]);
    expect(since.thresholds.map((t) => t.label)).toEqual(["WarnAt"]);
  });

  it("labels lines by strategy when comparing, and hides toggled agents with their markers", () => {
    const d = shapeRuns([run("none", { compactions: [], thresholds: [] }), run("fuseraft")], "cumulative", new Set([0]));
    expect(d.lines.map((l) => l.label)).toEqual(["none · sub", "fuseraft · sub"]);
    expect(d.markers).toEqual([]);
  });

  it("prefers the cumulative measure the thresholds are set on", () => {
    expect(preferredCumulative([run("a")])).toBe("cumulative_since_compaction");
    expect(preferredCumulative([run("a", { thresholds: [] })])).toBe("cumulative");
  });
});

describe("callRows", () => {
  it("gives each strategy's input and output at a call", () => {
    const rows = callRows([run("a"), run("b", { series: { ...run("b").series, input: [1, 2, 3, 4, 5] } })], 3);
    expect(rows).toEqual([
      { strategy: "a", agentId: "main", input: 120, output: 12, cumulative: 420 },
      { strategy: "b", agentId: "main", input: 4, output: 12, cumulative: 420 },
    ]);
  });
  it("lists agents for the toggles", () => {
    expect(agentsOf([run("a")])).toEqual([
      { index: 0, id: "main" },
      { index: 1, id: "sub" },
    ]);
  });
});
