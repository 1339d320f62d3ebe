import { describe, expect, it } from "vitest";
import type { CallColumns } from "./bindings/CallColumns";
import type { LiveUpdate } from "./bindings/LiveUpdate";
import { applyLive } from "./live";

function cols(n: number, base = 0): CallColumns {
  const r = [...Array(n).keys()].map((i) => i + base);
  return { agent: r.map(() => 0), timestamp: r.map((i) => i * 1000), recorded_context: r.map((i) => i * 10), recorded_output: r.map(() => 5), estimate: r.map((i) => i * 11) };
}

function update(from: number, n: number, total: number): LiveUpdate {
  const c = cols(n, from);
  c.estimate = c.estimate.map(() => null);
  return { from_call: from, calls: c, total_calls: total, estimate: [], reloaded: null, error: null, bytes: 100 };
}

describe("applyLive", () => {
  it("appends new calls after the ones held", () => {
    const c = cols(3);
    expect(applyLive(c, update(3, 2, 5))).toBe(2);
    expect(c.recorded_context).toEqual([0, 10, 20, 30, 40]);
    expect(c.estimate).toEqual([0, 11, 22, null, null]);
    expect(c.agent.length).toBe(5);
  });
  it("updates a changed call in place and keeps its estimate", () => {
    const c = cols(3);
    const u = update(2, 2, 4);
    u.calls.recorded_context[0] = 999;
    expect(applyLive(c, u)).toBe(1);
    expect(c.recorded_context).toEqual([0, 10, 999, 30]);
    expect(c.estimate).toEqual([0, 11, 22, null]);
  });
  it("takes every call's estimate from the update (the calibration is refitted on the grown log)", () => {
    const c = cols(3);
    const u = update(3, 2, 5);
    u.calls.estimate = [33, 44];
    u.estimate = [1, 12, 23, 33, 44];
    expect(applyLive(c, u)).toBe(2);
    expect(c.estimate).toEqual([1, 12, 23, 33, 44]);
    expect(c.recorded_context).toEqual([0, 10, 20, 30, 40]);
  });
  it("replaces everything after a reload", () => {
    const c = cols(5);
    expect(applyLive(c, { ...update(0, 2, 2), reloaded: "truncated" })).toBe(-3);
    expect(c.recorded_context).toEqual([0, 10]);
  });
  it("changes nothing for an error", () => {
    const c = cols(2);
    expect(applyLive(c, { from_call: 2, calls: cols(0), total_calls: 2, estimate: [], reloaded: null, error: "read failed", bytes: 0 })).toBe(0);
    expect(c.agent.length).toBe(2);
  });
});
