// The Tune view's logic: sweep ranges from a parameter's schema, and a sweep's result shaped for
// the Pareto scatter (cost on x, needed-fact recall on y).

import type { CandidateView } from "./bindings/CandidateView";
import type { ParamView } from "./bindings/ParamView";

/** A numeric parameter's sweep as the user sets it. */
export interface Range {
  on: boolean;
  from: string;
  to: string;
  steps: string;
}

export function sweepable(p: ParamView): boolean {
  return p.kind === "int" || p.kind === "float";
}

/** A first range around the default: half to twice it, inside the schema's bounds, 2 steps. */
export function defaultRange(p: ParamView): Range {
  const d = typeof p.default === "number" ? p.default : (p.min ?? 1);
  const clamp = (x: number) => Math.min(p.max ?? Infinity, Math.max(p.min ?? -Infinity, x));
  const round = (x: number) => (p.kind === "int" ? Math.round(x) : Number(x.toPrecision(3)));
  return { on: false, from: String(round(clamp(d / 2))), to: String(round(clamp(d * 2))), steps: "2" };
}

function num(s: string): number | null {
  const t = s.replace(/[,_\s]/g, "");
  return t === "" || !Number.isFinite(Number(t)) ? null : Number(t);
}

/** `steps` evenly spaced values from `from` to `to` (ints rounded, repeats dropped), or why not. */
export function sweepValues(p: ParamView, r: Range): { values: number[] } | { error: string } {
  const from = num(r.from);
  const to = num(r.to);
  const steps = num(r.steps);
  if (from === null || to === null) return { error: `${p.name}: from and to must be numbers` };
  if (steps === null || !Number.isInteger(steps) || steps < 1 || steps > 50) return { error: `${p.name}: steps must be a whole number from 1 to 50` };
  for (const [label, x] of [["from", from], ["to", to]] as const) {
    if (p.min !== null && x < p.min) return { error: `${p.name}: ${label} ${x} is below the minimum ${p.min}` };
    if (p.max !== null && x > p.max) return { error: `${p.name}: ${label} ${x} is above the maximum ${p.max}` };
  }
  const out: number[] = [];
  for (let i = 0; i < steps; i++) {
    const x = steps === 1 ? from : from + ((to - from) * i) / (steps - 1);
    const v = p.kind === "int" ? Math.round(x) : Number(x.toPrecision(6));
    if (!out.includes(v)) out.push(v);
  }
  return { values: out };
}

export interface ParetoData {
  /** Cost of each plotted set, ascending (uPlot's x must be sorted). */
  cost: number[];
  /** Recall of every plotted set. */
  recall: number[];
  /** Recall where the set is on the Pareto front, null elsewhere (drawn as a line). */
  front: (number | null)[];
  /** The candidate index behind each x position. */
  candidate: number[];
  /** Sets that failed (refused parameters) and are not plotted. */
  failed: number[];
}

export function paretoData(candidates: CandidateView[], pareto: number[]): ParetoData {
  const onFront = new Set(pareto);
  const ok = candidates.filter((c) => c.error === null);
  ok.sort((a, b) => a.cost_usd - b.cost_usd || b.recall_lower - a.recall_lower || a.index - b.index);
  return {
    cost: ok.map((c) => c.cost_usd),
    recall: ok.map((c) => c.recall_lower),
    front: ok.map((c) => (onFront.has(c.index) ? c.recall_lower : null)),
    candidate: ok.map((c) => c.index),
    failed: candidates.filter((c) => c.error !== null).map((c) => c.index),
  };
}

/** `TriggerTurnCount=20 CutoverAt=150,000`. */
export function sweptText(swept: unknown): string {
  if (!swept || typeof swept !== "object") return "";
  return Object.entries(swept as Record<string, unknown>)
    .map(([k, v]) => `${k}=${typeof v === "number" ? v.toLocaleString("en-US") : typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
}
