import { describe, expect, it } from "vitest";
import { describe as describeTick, pruningTicks, type Tick, thinTicks } from "./lanes";

const fmt = (n: number) => n.toLocaleString("en-US");
const tick = (call: number, kind: Tick["kind"] = "compaction"): Tick => ({ call, kind, label: `at ${call}` });

describe("thinTicks", () => {
  it("keeps ticks far enough apart and merges the dense ones", () => {
    const ticks = [0, 1, 2, 3, 50, 100].map((c) => tick(c));
    // 1 px per call: calls 0–3 fall within 4 px of the first.
    const t = thinTicks(ticks, (c) => c, 0, 1000, 4);
    expect(t.map((x) => [x.first.call, x.last.call, x.count])).toEqual([
      [0, 3, 4],
      [50, 50, 1],
      [100, 100, 1],
    ]);
  });

  it("draws at most one tick per minGap pixels however many compactions there are", () => {
    const ticks = Array.from({ length: 5000 }, (_, i) => tick(i));
    const t = thinTicks(ticks, (c) => (c / 5000) * 800, 0, 5000, 4);
    expect(t.length).toBeLessThanOrEqual(201);
    expect(t.reduce((n, x) => n + x.count, 0)).toBe(5000);
  });

  it("thins each kind apart and leaves out what is off the visible range", () => {
    const ticks = [tick(10), tick(11, "pruning"), tick(12), tick(500)];
    const t = thinTicks(ticks, (c) => c, 0, 100, 4);
    expect(t.map((x) => [x.kind, x.count])).toEqual([
      ["compaction", 2],
      ["pruning", 1],
    ]);
  });

  it("describes a merged tick by its count and first reason", () => {
    const [t] = thinTicks([tick(1), tick(2)], (c) => c, 0, 10);
    expect(describeTick(t, fmt)).toBe("2 compactions at calls 1–2; the first: at 1");
  });
});

describe("pruningTicks", () => {
  it("marks each pruned call and where each agent's stretch starts", () => {
    const t = pruningTicks([0, 1, 2, 3, 4, 5], [0, 0, 1, 0, 0, 0], [0, 1200, 0, 0, 300, 400], (a) => `agent${a}`, fmt);
    expect(t.map((x) => [x.call, x.tokens])).toEqual([
      [1, 1200],
      [4, 300],
      [5, 400],
    ]);
    expect(t[0].label).toBe("per-call pruning starts to bite (agent0) at call 1: 1,200 tokens left out of this call's view");
    expect(t[1].label.startsWith("per-call pruning starts")).toBe(true);
    expect(t[2].label.startsWith("per-call pruning (agent0)")).toBe(true);
  });

  it("sums what merged pruning ticks removed", () => {
    const t = pruningTicks([0, 1, 2], [0, 0, 0], [10, 20, 30], String, fmt);
    const [m] = thinTicks(t, (c) => c, 0, 10);
    expect(m.tokens).toBe(60);
    expect(describeTick(m, fmt)).toContain("3 pruned calls, 60 tokens in all");
  });
});
