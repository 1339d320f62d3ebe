// Shapes what fills the context (ctxlab::replay::composition, sent as columns by the
// `composition` command) for the Session view: the stacked bar of one call, and per agent the
// stacked areas over its calls. Tool results keep their tool's name for the largest tools and
// the rest join "other tools", so every bar still sums to the call's context.

import type { CompositionView } from "./bindings/CompositionView";
import scheme from "../../src/chart/scheme.json";

/** Colours by kind (tool results: shades of one family, by rank), from the library's scheme. */
export const KIND_COLORS: Record<string, string> = scheme.kindColors;
const TOOL_SHADES: readonly string[] = scheme.toolShades;
const OTHER_TOOLS: string = scheme.otherTools;
/** Tools whose results keep their own band; the rest are "other tools". */
export const MAX_TOOLS: number = scheme.maxTools;

export interface Segment {
  key: string;
  label: string;
  color: string;
  tokens: number;
}

/** Which keys of the view stay apart: every kind but tool results, and the `maxTools` tools
 *  with most tokens at any of `calls` (all calls when omitted); the others are "other tools". */
export function groups(v: CompositionView, maxTools = MAX_TOOLS, calls?: readonly number[]): { keep: Set<number>; toolRank: Map<number, number> } {
  const peak = (k: number) => {
    let m = 0;
    const col = v.values[k];
    if (calls) for (const c of calls) m = Math.max(m, col[c] ?? 0);
    else for (const x of col) m = Math.max(m, x);
    return m;
  };
  const tools = v.keys.map((k, i) => ({ k, i })).filter((x) => x.k.kind === "tool_results").map((x) => ({ i: x.i, peak: peak(x.i) })).filter((x) => x.peak > 0);
  tools.sort((a, b) => b.peak - a.peak || a.i - b.i);
  const keep = new Set<number>();
  v.keys.forEach((k, i) => k.kind !== "tool_results" && keep.add(i));
  const toolRank = new Map<number, number>();
  tools.slice(0, maxTools).forEach((t, r) => {
    keep.add(t.i);
    toolRank.set(t.i, r);
  });
  return { keep, toolRank };
}

function keyLabel(v: CompositionView, i: number): string {
  const k = v.keys[i];
  return k.tool === null ? k.label : `${k.label}: ${k.tool}`;
}

function keyColor(v: CompositionView, i: number, toolRank: Map<number, number>): string {
  const k = v.keys[i];
  if (k.kind !== "tool_results") return KIND_COLORS[k.kind] ?? OTHER_TOOLS;
  const r = toolRank.get(i);
  return r === undefined ? OTHER_TOOLS : TOOL_SHADES[r % TOOL_SHADES.length];
}

/** The segments of call `call`'s context, in stacking order, empty ones left out. Their tokens
 *  sum to `v.total[call]`. */
export function callSegments(v: CompositionView, call: number, maxTools = MAX_TOOLS): Segment[] {
  const { keep, toolRank } = groups(v, maxTools, [call]);
  const out: Segment[] = [];
  let other = 0;
  v.keys.forEach((_, i) => {
    const t = v.values[i][call] ?? 0;
    if (t <= 0) return;
    if (keep.has(i)) out.push({ key: String(i), label: keyLabel(v, i), color: keyColor(v, i, toolRank), tokens: t });
    else other += t;
  });
  if (other > 0) out.push({ key: "other", label: "tool results: other tools", color: OTHER_TOOLS, tokens: other });
  return out;
}

export interface AreaSeries {
  label: string;
  color: string;
  /** Per call of the agent: the top of this band (the sum of it and every band below). */
  top: number[];
  /** The band's own tokens at each call. */
  own: number[];
}

/** Stacked areas of one agent over its calls: `calls` are the agent's call indices, in order.
 *  The last band's top is each call's total. */
export function agentAreas(v: CompositionView, calls: readonly number[], maxTools = MAX_TOOLS): AreaSeries[] {
  const { keep, toolRank } = groups(v, maxTools, calls);
  const bands: { label: string; color: string; own: number[] }[] = [];
  const other = calls.map(() => 0);
  let anyOther = false;
  v.keys.forEach((_, i) => {
    const own = calls.map((c) => v.values[i][c] ?? 0);
    if (!own.some((x) => x > 0)) return;
    if (keep.has(i)) bands.push({ label: keyLabel(v, i), color: keyColor(v, i, toolRank), own });
    else {
      anyOther = true;
      own.forEach((x, j) => (other[j] += x));
    }
  });
  if (anyOther) bands.push({ label: "tool results: other tools", color: OTHER_TOOLS, own: other });
  const acc = calls.map(() => 0);
  return bands.map((b) => {
    const top = b.own.map((x, j) => (acc[j] += x));
    return { ...b, top };
  });
}

/** The agent's calls, in order. */
export function callsOf(v: CompositionView, agent: number): number[] {
  const out: number[] = [];
  v.agent.forEach((a, i) => a === agent && v.total[i] !== null && out.push(i));
  return out;
}

/** What the provider recorded for call `call` beside what the composition explains of it:
 *  `reconstructed` (the stacked kinds, counted by ctxlab's counter), `estimate` (that count
 *  calibrated: overhead + ratio, what the charts plot), and `recorded` (input + cache the
 *  provider billed). `unexplained` is the part of the recorded context the stacked kinds do not
 *  hold (system prompt and tool schemas the log lacks, and the counter's scale error); `error`
 *  is the estimate's signed error against the record, in percent. `null` where the log has no
 *  usage for the call. */
export interface RecordedCheck {
  recorded: number;
  reconstructed: number;
  estimate: number | null;
  unexplained: number;
  error: number | null;
}

export function recordedCheck(v: CompositionView, call: number, recorded: readonly (number | null)[], estimate: readonly (number | null)[]): RecordedCheck | null {
  const r = recorded[call];
  const total = v.total[call];
  if (r === null || r === undefined || r <= 0 || total === null || total === undefined) return null;
  const e = estimate[call] ?? null;
  return { recorded: r, reconstructed: total, estimate: e, unexplained: r - total, error: e === null ? null : ((e - r) * 100) / r };
}

/** The provider's recorded context at the agent's `calls`, as a line over `n` calls (null
 *  elsewhere and where a call recorded none). */
export function recordedLine(recorded: readonly (number | null)[], calls: readonly number[], n: number): (number | null)[] {
  const out: (number | null)[] = new Array(n).fill(null);
  for (const c of calls) {
    const r = recorded[c];
    if (r !== null && r !== undefined && r > 0) out[c] = r;
  }
  return out;
}
