import { describe, expect, it } from "vitest";
import { run } from "./testruns";
import { strategyColors } from "./colors";
import { compareLanes, isOwnEstimate, ownEstimateLines } from "./comparelanes";

const fmt = (n: number) => n.toLocaleString("en-US");


describe("compareLanes", () => {
  it("gives each strategy one lane in its colour, compactions with their reason, pruning as its own kind", () => {
    const a = run("phi-core.tiers", {
      compactions: [{ call: 3, agent: 0, kind: "summarize", messages: 4, context_before: 300, context_after: 120, trigger: null }],
      events: [{ call: 3, agent: 0, kind: "note", code: "compaction_started", message: "estimate 90,000 leaves headroom 4%" }],
    });
    const b = run("librechat.prune", { series: { ...run("x").series, pruned: [0, 500, 0, 700, 0] } });
    const colors = strategyColors([a.strategy, b.strategy]);
    const lanes = compareLanes([a, b], colors, new Set(), fmt);
    expect(lanes.map((l) => [l.label, l.color])).toEqual([
      ["phi-core.tiers", colors.get("phi-core.tiers")],
      ["librechat.prune", colors.get("librechat.prune")],
    ]);
    expect(lanes[0].ticks).toHaveLength(1);
    expect(lanes[0].ticks[0].label).toBe("summarize (main) at call 3: context 300 → 120, 4 messages — estimate 90,000 leaves headroom 4%");
    expect(lanes[1].ticks.map((t) => [t.call, t.kind, t.tokens])).toEqual([
      [1, "pruning", 500],
      [3, "pruning", 700],
    ]);
  });

  it("leaves out hidden agents' markers", () => {
    const a = run("s", { series: { ...run("x").series, pruned: [0, 0, 90, 0, 0] }, compactions: [{ call: 4, agent: 1, kind: "drop", messages: 1, context_before: 10, context_after: 5, trigger: null }] });
    expect(compareLanes([a], strategyColors(["s"]), new Set([1]), fmt)[0].ticks).toEqual([]);
  });
});

describe("ownEstimateLines", () => {
  it("draws a strategy's own estimate per agent at the calls it reported one", () => {
    const a = run("phi-core.tiers", { gauges: [{ name: "estimate", call: [0, 1, 2, 3], value: [80, 160, 40, 90] }, { name: "pressure", call: [0], value: [0.5] }] });
    const lines = ownEstimateLines([a], new Set());
    expect(lines.map((l) => [l.agent, l.values])).toEqual([
      [0, [80, 160, null, 90, null]],
      [1, [null, null, 40, null, null]],
    ]);
    expect(lines[0].label).toContain("own estimate");
  });

  it("knows the plugins' estimate gauges from their other series", () => {
    expect(["estimate", "fim_estimate", "codetether_estimate"].every(isOwnEstimate)).toBe(true);
    expect(["pressure", "cumulative_since_compaction", "budget"].some(isOwnEstimate)).toBe(false);
  });
});
