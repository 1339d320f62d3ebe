// A RunView for the UI's unit tests: calls 0..4 by agents main, main, sub, main, sub, nothing
// compacted, no thresholds; `over` replaces whole fields.
import type { RunView } from "./bindings/RunView";

export function run(strategy: string, over: Partial<RunView> = {}): RunView {
  return {
    strategy,
    plugin: null,
    params: null,
    counter: "heuristic",
    context_window: 200000,
    max_output: 8000,
    reserve: 0,
    model: null,
    calibrated: true,
    agents: ["main", "sub"],
    series: {
      call: [0, 1, 2, 3, 4],
      agent: [0, 0, 1, 0, 1],
      timestamp: [null, null, null, null, null],
      input: [100, 200, 50, 120, 80],
      output: [10, 20, 5, 12, 8],
      cumulative: [100, 300, 50, 420, 130],
      cumulative_since_compaction: [100, 300, 50, 120, 130],
      over_window: [false, false, false, false, false],
      pruned: [0, 0, 0, 0, 0],
    },
    compactions: [],
    events: [],
    thresholds: [],
    gauges: [],
    metrics: {} as RunView["metrics"],
    cost_notice: null,
    budget_assumed: [],
    ...over,
  };
}
