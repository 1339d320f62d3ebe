import { describe, expect, it } from "vitest";
import { decimateIndices, pick } from "./decimate";

describe("decimateIndices", () => {
  it("keeps a short range whole", () => {
    const col = [5, 1, 4, 2];
    expect(Array.from(decimateIndices([col], 0, 4, 100))).toEqual([0, 1, 2, 3]);
  });

  it("keeps every bucket's extremes, so peaks survive", () => {
    const n = 100_000;
    const col = new Float64Array(n);
    for (let i = 0; i < n; i++) col[i] = i % 1000;
    col[54_321] = 1e9; // a single spike
    col[77_777] = -5; // a single dip
    const idx = decimateIndices([col], 0, n, 200);
    expect(idx.length).toBeLessThanOrEqual(200 * 4);
    const kept = Array.from(idx);
    expect(kept).toContain(54_321);
    expect(kept).toContain(77_777);
    expect(kept[0]).toBe(0);
    expect(kept[kept.length - 1]).toBe(n - 1);
    for (let i = 1; i < kept.length; i++) expect(kept[i]).toBeGreaterThan(kept[i - 1]);
  });

  it("decimates a visible window only, skipping gaps of other agents", () => {
    const n = 10_000;
    const a: (number | null)[] = [];
    const b: (number | null)[] = [];
    for (let i = 0; i < n; i++) {
      a.push(i % 2 === 0 ? i : null);
      b.push(i % 2 === 1 ? n - i : null);
    }
    const idx = decimateIndices([a, b], 2_000, 4_000, 50);
    expect(idx[0]).toBe(2_000);
    expect(idx[idx.length - 1]).toBe(3_999);
    expect(pick(a, idx).some((v) => v !== null)).toBe(true);
    expect(pick(b, idx).some((v) => v !== null)).toBe(true);
  });

  it("decimates a million points for a 2,000-pixel chart quickly", () => {
    const n = 1_000_000;
    const cols = [new Float64Array(n), new Float64Array(n)];
    for (let i = 0; i < n; i++) {
      cols[0][i] = i;
      cols[1][i] = Math.sin(i / 1000) * 1e5;
    }
    const t0 = performance.now();
    const idx = decimateIndices(cols, 0, n, 2000);
    const ms = performance.now() - t0;
    expect(idx.length).toBeLessThanOrEqual(2000 * 6);
    expect(ms).toBeLessThan(500);
  });
});
