// Shapes replay runs into what a chart draws: one line per (strategy, agent) over the session's
// calls, compaction markers, and the threshold lines that belong to the chart's measure.

import type { RunView } from "./bindings/RunView";

/** What a chart measures. Cumulative input tokens and context occupancy are different lines. */
export type Measure = "cumulative" | "cumulative_since_compaction" | "occupancy";

export const MEASURE_TITLES: Record<Measure, string> = {
  cumulative: "Cumulative input tokens per agent (billed, summed over its calls)",
  cumulative_since_compaction: "Cumulative input tokens per agent since its last compaction",
  occupancy: "Context occupancy per agent (tokens in the window at each call)",
};

export interface Line {
  label: string;
  strategy: string;
  run: number;
  agent: number;
  agentId: string;
  /** Indexed by call; null where the call is another agent's. */
  values: (number | null)[];
}

export interface Marker {
  call: number;
  run: number;
  strategy: string;
  agent: number;
  kind: string;
  /** Tokens of the agent's context before and after. */
  before: number;
  after: number;
}

export interface ThresholdLine {
  tokens: number;
  kind: string;
  label: string;
  strategy: string;
}

export interface ChartData {
  /** Call indices 0..n-1. */
  x: number[];
  lines: Line[];
  markers: Marker[];
  thresholds: ThresholdLine[];
}

function column(run: RunView, m: Measure): number[] {
  switch (m) {
    case "cumulative":
      return run.series.cumulative;
    case "cumulative_since_compaction":
      return run.series.cumulative_since_compaction;
    case "occupancy":
      return run.series.input;
  }
}

/** The measure a threshold's `line` is drawn on. */
export function measureOfLine(line: string): Measure {
  return line === "occupancy" ? "occupancy" : (line as Measure);
}

/** The cumulative measure to show first: the one the strategies' thresholds are set on. */
export function preferredCumulative(runs: RunView[]): Measure {
  const since = runs.some((r) => r.thresholds.some((t) => t.line === "cumulative_since_compaction"));
  return since ? "cumulative_since_compaction" : "cumulative";
}

export function shapeRuns(runs: RunView[], measure: Measure, hiddenAgents: ReadonlySet<number> = new Set()): ChartData {
  let n = 0;
  for (const r of runs) for (const c of r.series.call) n = Math.max(n, c + 1);
  const x = Array.from({ length: n }, (_, i) => i);
  const lines: Line[] = [];
  const markers: Marker[] = [];
  const thresholds: ThresholdLine[] = [];
  runs.forEach((run, ri) => {
    const col = column(run, measure);
    const byAgent = new Map<number, (number | null)[]>();
    run.series.call.forEach((call, j) => {
      const a = run.series.agent[j];
      if (hiddenAgents.has(a)) return;
      let vals = byAgent.get(a);
      if (!vals) {
        vals = new Array<number | null>(n).fill(null);
        byAgent.set(a, vals);
      }
      vals[call] = col[j];
    });
    for (const [a, values] of [...byAgent.entries()].sort((p, q) => p[0] - q[0])) {
      const agentId = run.agents[a] ?? String(a);
      const label = runs.length > 1 ? `${run.strategy} · ${agentId}` : agentId;
      lines.push({ label, strategy: run.strategy, run: ri, agent: a, agentId, values });
    }
    for (const c of run.compactions) {
      if (hiddenAgents.has(c.agent)) continue;
      markers.push({
        call: c.call,
        run: ri,
        strategy: run.strategy,
        agent: c.agent,
        kind: c.kind,
        before: c.context_before,
        after: c.context_after,
      });
    }
    for (const t of run.thresholds) {
      if (measureOfLine(t.line) !== measure) continue;
      thresholds.push({ tokens: t.tokens, kind: t.kind, label: t.label, strategy: run.strategy });
    }
  });
  return { x, lines, markers, thresholds };
}

export interface CallRow {
  strategy: string;
  agentId: string;
  input: number;
  output: number;
  cumulative: number;
}

/** What each run did at one call, for the chart's hover. Runs hold one sample per call. */
export function callRows(runs: RunView[], call: number): CallRow[] {
  const rows: CallRow[] = [];
  for (const r of runs) {
    const j = r.series.call[call] === call ? call : r.series.call.indexOf(call);
    if (j < 0) continue;
    rows.push({
      strategy: r.strategy,
      agentId: r.agents[r.series.agent[j]] ?? String(r.series.agent[j]),
      input: r.series.input[j],
      output: r.series.output[j],
      cumulative: r.series.cumulative[j],
    });
  }
  return rows;
}

/** Distinct agents over the runs, by index, for the agent toggles. */
export function agentsOf(runs: RunView[]): { index: number; id: string }[] {
  const seen = new Map<number, string>();
  for (const r of runs) r.agents.forEach((id, i) => seen.has(i) || seen.set(i, id));
  return [...seen.entries()].map(([index, id]) => ({ index, id }));
}
