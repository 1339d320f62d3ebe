import { describe, expect, it } from "vitest";
import { fmtBytes, fmtDelta, fmtInt, fmtPct, fmtShare, fmtShort, fmtUsd } from "./format";

describe("format", () => {
  it("puts thousands separators in every count", () => {
    expect(fmtInt(0)).toBe("0");
    expect(fmtInt(999)).toBe("999");
    expect(fmtInt(1000)).toBe("1,000");
    expect(fmtInt(120431)).toBe("120,431");
    expect(fmtInt(1234567)).toBe("1,234,567");
    expect(fmtInt(null)).toBe("—");
  });
  it("shortens axis labels", () => {
    expect(fmtShort(950)).toBe("950");
    expect(fmtShort(1200)).toBe("1.2k");
    expect(fmtShort(120000)).toBe("120k");
    expect(fmtShort(3_400_000)).toBe("3.4M");
  });
  it("formats sizes, money, shares and deltas", () => {
    expect(fmtBytes(512)).toBe("512 B");
    expect(fmtBytes(1536)).toBe("1.5 KB");
    expect(fmtBytes(100 * 1024 * 1024)).toBe("100 MB");
    expect(fmtUsd(1234.5)).toBe("$1,234.50");
    expect(fmtUsd(0.01234)).toBe("$0.0123");
    expect(fmtShare(0.8766)).toBe("87.7%");
    expect(fmtPct(3.14159)).toBe("3.1%");
    expect(fmtDelta(110, 100)).toBe("+10.0%");
    expect(fmtDelta(96, 100)).toBe("−4.0%");
    expect(fmtDelta(5, 0)).toBe("");
  });
});
