// Marker lanes under a chart (#21): one lane per strategy (or per agent on the Session view),
// compactions as ticks, per-call pruning as its own kind; ticks closer than a few pixels are
// merged into one (thinned), whose hover names how many it stands for and the first reason.

import scheme from "../../src/chart/scheme.json";

export type TickKind = "compaction" | "recorded" | "pruning";

export interface Tick {
  call: number;
  kind: TickKind;
  /** One line for the hover: the reason, the kind, the tokens before and after. */
  label: string;
  /** For pruning: tokens removed from this call's view. */
  tokens?: number;
}

export interface Lane {
  label: string;
  color: string;
  ticks: Tick[];
}

/** A drawn tick: one or more ticks of one kind that fall within `minGap` pixels. */
export interface Thinned {
  x: number;
  kind: TickKind;
  first: Tick;
  last: Tick;
  count: number;
  /** Sum of `tokens` of the ticks it stands for. */
  tokens: number;
}

/** Ticks of one lane in [xmin, xmax] placed by `toPx` and thinned: going left to right, a tick
 *  closer than `minGap` px to the previous drawn tick of its kind joins it. Ticks must be sorted
 *  by call. */
export function thinTicks(ticks: readonly Tick[], toPx: (call: number) => number, xmin: number, xmax: number, minGap: number = scheme.laneMinGapPx): Thinned[] {
  const out: Thinned[] = [];
  const lastOf = new Map<TickKind, Thinned>();
  for (const t of ticks) {
    if (t.call < xmin || t.call > xmax) continue;
    const x = toPx(t.call);
    const prev = lastOf.get(t.kind);
    if (prev && x - prev.x < minGap) {
      prev.last = t;
      prev.count++;
      prev.tokens += t.tokens ?? 0;
      continue;
    }
    const d: Thinned = { x, kind: t.kind, first: t, last: t, count: 1, tokens: t.tokens ?? 0 };
    out.push(d);
    lastOf.set(t.kind, d);
  }
  return out;
}

/** Where per-call pruning bites: a pruning tick at every call whose view a strategy cut
 *  (`pruned[j] > 0` at `calls[j]`), the first of each stretch labelled as where it starts. */
export function pruningTicks(calls: readonly number[], agents: readonly number[], pruned: readonly number[], agentName: (a: number) => string, fmt: (n: number) => string): Tick[] {
  const out: Tick[] = [];
  const biting = new Map<number, boolean>();
  for (let j = 0; j < calls.length; j++) {
    const a = agents[j];
    const p = pruned[j] ?? 0;
    if (p <= 0) {
      biting.set(a, false);
      continue;
    }
    const starts = !biting.get(a);
    biting.set(a, true);
    out.push({
      call: calls[j],
      kind: "pruning",
      tokens: p,
      label: `${starts ? "per-call pruning starts to bite" : "per-call pruning"} (${agentName(a)}) at call ${fmt(calls[j])}: ${fmt(p)} tokens left out of this call's view`,
    });
  }
  return out;
}

/** The hover text of a drawn tick. */
export function describe(t: Thinned, fmt: (n: number) => string): string {
  if (t.count === 1) return t.first.label;
  const what = t.kind === "pruning" ? `${fmt(t.count)} pruned calls, ${fmt(t.tokens)} tokens in all` : `${fmt(t.count)} compactions`;
  const at = t.first.call === t.last.call ? `call ${fmt(t.first.call)}` : `calls ${fmt(t.first.call)}–${fmt(t.last.call)}`;
  return `${what} at ${at}; the first: ${t.first.label}`;
}
