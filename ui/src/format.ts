// Numbers as users read them: thousands separators everywhere, fixed units.

const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** 120431 → "120,431"; null/undefined → "—". */
export function fmtInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  return int.format(Math.round(n));
}

/** Compact axis labels: 1,200 → "1.2k", 3,400,000 → "3.4M". */
export function fmtShort(n: number): string {
  const a = Math.abs(n);
  if (a >= 1e9) return trim(n / 1e9) + "G";
  if (a >= 1e6) return trim(n / 1e6) + "M";
  if (a >= 1e3) return trim(n / 1e3) + "k";
  return String(Math.round(n));
}

function trim(x: number): string {
  return x.toFixed(Math.abs(x) >= 100 ? 0 : 1).replace(/\.0$/, "");
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${fmtInt(n)} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

export function fmtUsd(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const digits = Math.abs(n) < 1 ? 4 : 2;
  return "$" + n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A share 0..1 as a percentage. */
export function fmtShare(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—";
  return `${(x * 100).toFixed(1)}%`;
}

/** A value already in percent. */
export function fmtPct(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—";
  return `${x.toFixed(1)}%`;
}

/** Milliseconds since the epoch → "2025-11-02 14:07" in local time. */
export function fmtDate(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  const p = (x: number) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Relative change against a baseline, "+12.3%" / "−4.0%". */
export function fmtDelta(value: number, base: number): string {
  if (!Number.isFinite(value) || !Number.isFinite(base) || base === 0) return "";
  const d = ((value - base) / base) * 100;
  if (Math.abs(d) < 0.05) return "±0%";
  return `${d > 0 ? "+" : "−"}${Math.abs(d).toFixed(1)}%`;
}
