// Compare's marker lanes and own-estimate lines (#21 points 2–4): one lane per strategy, its
// compactions as ticks (hover: the kind, the strategy's reason, the context before → after) and
// its per-call pruning as its own kind; and, on the occupancy chart, each strategy's own
// estimate of the context (the gauge a plugin reports as `estimate` or `*_estimate`: phi-core's
// chars/4, FIM One's, CodeTether's), the space where its thresholds fire.

import type { RunView } from "./bindings/RunView";
import type { Lane, Tick } from "./lanes";
import { pruningTicks } from "./lanes";
import scheme from "../../src/chart/scheme.json";

/** Above this many strategies Compare draws one chart per strategy by default. */
export const SMALL_MULTIPLES_ABOVE: number = scheme.smallMultiplesAbove;

export function compareLanes(runs: readonly RunView[], colors: ReadonlyMap<string, string>, hiddenAgents: ReadonlySet<number>, fmt: (n: number) => string): Lane[] {
  return runs.map((r) => {
    const agent = (a: number) => r.agents[a] ?? String(a);
    const ticks: Tick[] = [];
    for (const c of r.compactions) {
      if (hiddenAgents.has(c.agent)) continue;
      const why = r.events.find((e) => e.call === c.call && e.agent === c.agent && e.kind !== "compaction")?.message ?? r.events.find((e) => e.call === c.call && e.agent === c.agent)?.message ?? c.trigger;
      ticks.push({
        call: c.call,
        kind: c.kind === "recorded" ? "recorded" : "compaction",
        label: `${c.kind} (${agent(c.agent)}) at call ${fmt(c.call)}: context ${fmt(c.context_before)} → ${fmt(c.context_after)}, ${fmt(c.messages)} messages${why ? ` — ${why}` : ""}`,
      });
    }
    const keep = r.series.call.map((_, j) => !hiddenAgents.has(r.series.agent[j]));
    ticks.push(
      ...pruningTicks(
        r.series.call.filter((_, j) => keep[j]),
        r.series.agent.filter((_, j) => keep[j]),
        (r.series.pruned ?? []).filter((_, j) => keep[j]),
        agent,
        fmt,
      ),
    );
    ticks.sort((a, b) => a.call - b.call);
    return { label: r.strategy, color: colors.get(r.strategy) ?? "#888", ticks };
  });
}

export function isOwnEstimate(gauge: string): boolean {
  return gauge === "estimate" || gauge.endsWith("_estimate");
}

export interface OwnEstimateLine {
  strategy: string;
  agent: number;
  label: string;
  values: (number | null)[];
}

/** Each strategy's own estimate of the context, per agent, over the session's calls. */
export function ownEstimateLines(runs: readonly RunView[], hiddenAgents: ReadonlySet<number>): OwnEstimateLine[] {
  let n = 0;
  for (const r of runs) for (const c of r.series.call) n = Math.max(n, c + 1);
  const out: OwnEstimateLine[] = [];
  for (const r of runs) {
    const agentAt = new Map<number, number>();
    r.series.call.forEach((c, j) => agentAt.set(c, r.series.agent[j]));
    for (const g of r.gauges ?? []) {
      if (!isOwnEstimate(g.name)) continue;
      const byAgent = new Map<number, (number | null)[]>();
      g.call.forEach((c, j) => {
        const a = agentAt.get(c) ?? 0;
        if (hiddenAgents.has(a) || c >= n) return;
        let v = byAgent.get(a);
        if (!v) byAgent.set(a, (v = new Array<number | null>(n).fill(null)));
        v[c] = g.value[j];
      });
      for (const [a, values] of [...byAgent.entries()].sort((p, q) => p[0] - q[0])) {
        out.push({ strategy: r.strategy, agent: a, label: `${r.strategy} · ${r.agents[a] ?? a} · own estimate (${g.name})`, values });
      }
    }
  }
  return out;
}
