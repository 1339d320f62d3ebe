import { describe, expect, it } from "vitest";
import { agentFamilies, PALETTE, shade, strategyColors } from "./colors";

describe("strategyColors", () => {
  it("gives every strategy its own colour, the same for the same id", () => {
    const ids = ["none", "recorded", "fuseraft.window", "phi-core.tiers", "fim-one.guard", "librechat.prune", "codetether.derive"];
    const c = strategyColors(ids);
    expect(c.size).toBe(7);
    expect(new Set(c.values()).size).toBe(7);
    expect(c.get("none")).toBe(PALETTE[0]);
    expect(strategyColors([...ids, "none"]).get("codetether.derive")).toBe(c.get("codetether.derive"));
  });

  it("stays distinct past the palette", () => {
    const ids = Array.from({ length: 40 }, (_, i) => `s${i}`);
    const c = strategyColors(ids);
    expect(new Set(c.values()).size).toBe(40);
    for (const p of PALETTE) expect([...c.values()].filter((x) => x === p).length).toBe(1);
  });
});

describe("agentFamilies", () => {
  it("gives subagents a shade of their top-level ancestor's colour", () => {
    const f = agentFamilies([
      { index: 0, parent: null },
      { index: 1, parent: 0 },
      { index: 2, parent: 0 },
      { index: 3, parent: null },
      { index: 4, parent: 1 },
    ]);
    expect(f.get(0)).toEqual({ color: PALETTE[0], family: 0, depth: 0 });
    expect(f.get(3)).toEqual({ color: PALETTE[1], family: 1, depth: 0 });
    expect(f.get(1)?.family).toBe(0);
    expect(f.get(4)?.family).toBe(0);
    expect(f.get(4)?.depth).toBe(2);
    const family0 = [0, 1, 2, 4].map((i) => f.get(i)?.color);
    expect(new Set(family0).size).toBe(4);
    expect(f.get(1)?.color).toBe(shade(PALETTE[0], 0));
  });

  it("survives a parent cycle and an unknown parent", () => {
    const f = agentFamilies([
      { index: 0, parent: 1 },
      { index: 1, parent: 0 },
      { index: 2, parent: 9 },
    ]);
    expect(f.size).toBe(3);
    expect(f.get(2)?.depth).toBe(0);
  });

  it("shades lighter then darker", () => {
    expect(shade("#000000", 0)).not.toBe("#000000");
    expect(shade("#ffffff", 1)).not.toBe("#ffffff");
    expect(shade("#808080", 0) > shade("#808080", 1)).toBe(true);
  });
});
