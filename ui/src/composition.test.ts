import { describe, expect, it } from "vitest";
import type { CompositionView } from "./bindings/CompositionView";
import { KIND_COLORS, agentAreas, callSegments, callsOf, recordedCheck, recordedLine } from "./composition";

const key = (kind: string, tool: string | null = null) => ({ kind, label: kind, tool });

// Three calls: agent 0 at calls 0 and 2, agent 1 at call 1.
const view: CompositionView = {
  counter: "heuristic",
  overhead: [1000, null],
  whole_requests: false,
  keys: [key("system"), key("user"), key("assistant"), key("tool_results", "Read"), key("tool_results", "Bash"), key("tool_results", "Grep")],
  agent: [0, 1, 0],
  total: [150, 40, 460],
  values: [
    [100, 10, 100],
    [50, 30, 60],
    [0, 0, 100],
    [0, 0, 150],
    [0, 0, 40],
    [0, 0, 10],
  ],
};

// A capture: the system prompt and the tool schemas are kinds of their own, with their colours.
const captured: CompositionView = {
  counter: "o200k",
  overhead: [null],
  whole_requests: true,
  keys: [key("system"), key("tools"), key("user"), key("tool_results", "Read")],
  agent: [0],
  total: [100],
  values: [[20], [60], [5], [15]],
};

describe("callSegments", () => {
  it("keeps a capture's tool schemas apart from the system prompt, each in its colour", () => {
    const s = callSegments(captured, 0);
    expect(s.map((x) => [x.label, x.tokens])).toEqual([
      ["system", 20],
      ["tools", 60],
      ["user", 5],
      ["tool_results: Read", 15],
    ]);
    expect(new Set(s.map((x) => x.color)).size).toBe(4);
    expect(s[1].color).toBe(KIND_COLORS.tools);
  });

  it("sums to the call's context and leaves empty kinds out", () => {
    const s = callSegments(view, 0);
    expect(s.map((x) => x.label)).toEqual(["system", "user"]);
    expect(s.reduce((n, x) => n + x.tokens, 0)).toBe(150);
  });

  it("names the largest tools and joins the rest as other tools, keeping the sum", () => {
    const s = callSegments(view, 2, 2);
    expect(s.map((x) => [x.label, x.tokens])).toEqual([
      ["system", 100],
      ["user", 60],
      ["assistant", 100],
      ["tool_results: Read", 150],
      ["tool_results: Bash", 40],
      ["tool results: other tools", 10],
    ]);
    expect(s.reduce((n, x) => n + x.tokens, 0)).toBe(view.total[2]);
    expect(new Set(s.map((x) => x.color)).size).toBe(s.length);
  });
});

describe("agentAreas", () => {
  it("stacks an agent's bands over its calls, the top band ending at each call's total", () => {
    const calls = callsOf(view, 0);
    expect(calls).toEqual([0, 2]);
    const bands = agentAreas(view, calls);
    expect(bands.map((b) => b.label)).toEqual(["system", "user", "assistant", "tool_results: Read", "tool_results: Bash", "tool_results: Grep"]);
    expect(bands[bands.length - 1].top).toEqual([150, 460]);
    for (let i = 1; i < bands.length; i++) for (let j = 0; j < calls.length; j++) expect(bands[i].top[j]).toBe(bands[i - 1].top[j] + bands[i].own[j]);
  });

  it("only shows the agent's own calls", () => {
    const bands = agentAreas(view, callsOf(view, 1));
    expect(bands.map((b) => [b.label, b.top])).toEqual([
      ["system", [10]],
      ["user", [40]],
    ]);
  });
});

describe("recordedCheck", () => {
  it("sets the provider's record beside the reconstruction and the calibrated estimate", () => {
    const recorded = [1400, null, 1600];
    const estimate = [1300, 90, 1680];
    expect(recordedCheck(view, 0, recorded, estimate)).toEqual({ recorded: 1400, reconstructed: 150, estimate: 1300, unexplained: 1250, error: ((1300 - 1400) * 100) / 1400 });
    expect(recordedCheck(view, 2, recorded, estimate)?.error).toBeCloseTo(5, 10);
  });
  it("says nothing for a call the provider recorded no usage for", () => {
    expect(recordedCheck(view, 1, [1400, null, 1600], [1300, 90, 1680])).toBeNull();
    expect(recordedCheck(view, 0, [0, null, 1600], [1300, 90, 1680])).toBeNull();
  });
  it("keeps the record when the estimate is missing", () => {
    expect(recordedCheck(view, 0, [1400, null, null], [null, null, null])).toEqual({ recorded: 1400, reconstructed: 150, estimate: null, unexplained: 1250, error: null });
  });
});

describe("recordedLine", () => {
  it("places the agent's recorded contexts at its calls only", () => {
    expect(recordedLine([1400, 50, 1600, 0], [0, 2, 3], 4)).toEqual([1400, null, 1600, null]);
  });
});
