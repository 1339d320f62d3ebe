import { describe, expect, it } from "vitest";
import type { CandidateView } from "./bindings/CandidateView";
import type { ParamView } from "./bindings/ParamView";
import { defaultRange, paretoData, sweepValues, sweptText, sweepable } from "./tune";

const int: ParamView = { name: "TriggerTurnCount", kind: "int", default: 50, min: 1, max: 200, choices: [], description: "", key: "" };
const float: ParamView = { ...int, name: "Ratio", kind: "float", default: 0.5, min: 0, max: 1 };

describe("sweep ranges", () => {
  it("sweeps numbers only", () => {
    expect(sweepable(int)).toBe(true);
    expect(sweepable({ ...int, kind: "bool" })).toBe(false);
  });
  it("starts around the default, inside the bounds", () => {
    expect(defaultRange(int)).toEqual({ on: false, from: "25", to: "100", steps: "2" });
    expect(defaultRange(float)).toMatchObject({ from: "0.25", to: "1" });
  });
  it("spaces values evenly, rounds ints and drops repeats", () => {
    expect(sweepValues(int, { on: true, from: "10", to: "40", steps: "4" })).toEqual({ values: [10, 20, 30, 40] });
    expect(sweepValues(int, { on: true, from: "1", to: "2", steps: "5" })).toEqual({ values: [1, 2] });
    expect(sweepValues(float, { on: true, from: "0", to: "1", steps: "3" })).toEqual({ values: [0, 0.5, 1] });
    expect(sweepValues({ ...int, max: null }, { on: true, from: "1,000", to: "1,000", steps: "1" })).toEqual({ values: [1000] });
  });
  it("says what is wrong with a range", () => {
    expect(sweepValues(int, { on: true, from: "0", to: "10", steps: "2" })).toEqual({ error: "TriggerTurnCount: from 0 is below the minimum 1" });
    expect(sweepValues(int, { on: true, from: "x", to: "10", steps: "2" })).toHaveProperty("error");
    expect(sweepValues(int, { on: true, from: "1", to: "10", steps: "0" })).toHaveProperty("error");
  });
});

function cand(index: number, cost: number, recall: number, error: string | null = null): CandidateView {
  return {
    index, swept: { T: index }, params: {}, cost_usd: cost, total_input_tokens: 0, peak_context: 0, calls_over_window: 0,
    compactions: 0, lost_tokens: 0, recall_lower: recall, recall_upper: recall, error,
  };
}

describe("paretoData", () => {
  it("sorts by cost, marks the front and leaves failed sets out", () => {
    const d = paretoData([cand(0, 3, 0.9), cand(1, 1, 0.5), cand(2, 2, 0.4), cand(3, 0, 0, "refused")], [1, 0]);
    expect(d.cost).toEqual([1, 2, 3]);
    expect(d.recall).toEqual([0.5, 0.4, 0.9]);
    expect(d.front).toEqual([0.5, null, 0.9]);
    expect(d.candidate).toEqual([1, 2, 0]);
    expect(d.failed).toEqual([3]);
  });
});

describe("sweptText", () => {
  it("names each swept value with separators", () => {
    expect(sweptText({ TriggerTurnCount: 20, CutoverAt: 150000 })).toBe("TriggerTurnCount=20 CutoverAt=150,000");
  });
});
