// Replay / Compare: pick strategies and their parameters (forms generated from each plugin's
// schema), replay the session through them with progress and cancel, and compare: per-agent
// cumulative input tokens and context occupancy (separate charts), compaction markers,
// threshold lines, the metrics table, and what each strategy kept at a call.

import { api } from "../api";
import type { ContextView } from "../bindings/ContextView";
import type { RunView } from "../bindings/RunView";
import type { StrategyInfo } from "../bindings/StrategyInfo";
import { Chart } from "../chart";
import { MEASURE_TITLES, type Measure, agentsOf, callRows, preferredCumulative, shapeRuns } from "../chartdata";
import { agentDash, strategyColors } from "../colors";
import { compareLanes, ownEstimateLines, SMALL_MULTIPLES_ABOVE } from "../comparelanes";
import { clear, empty, errorBox, esc, h } from "../dom";
import { collectParams, fieldOf } from "../form";
import { fmtDelta, fmtInt, fmtPct, fmtShare, fmtUsd } from "../format";
import { changed, type Selection, store } from "../store";
import { compareNotes } from "./pricing";
import { contextList } from "./session";

let charts: Chart[] = [];
let runError: { code: string; message: string } | null = null;
let formErrors: Record<string, Record<string, string>> = {};
const hiddenAgents = new Set<number>();
let cumulative: Measure | null = null;
/** null: automatic (one chart per strategy above SMALL_MULTIPLES_ABOVE strategies). */
let perStrategy: boolean | null = null;
const hiddenStrategies = new Set<string>();
// `auto`: the log's own default counter, as the CLI picks it (o200k for OpenAI models and captures).
let counter = "auto";
let calibrate = true;
const budget = { window: "", maxOutput: "", reserve: "" };
let keptCall = "";
let kept: ContextView[] = [];
let keptError: string | null = null;
let nextJob = 1;

export function paramsOf(sel: Selection, info: StrategyInfo | undefined) {
  return collectParams(info?.params ?? [], sel.values);
}

function info(id: string): StrategyInfo | undefined {
  return store.strategies?.strategies.find((s) => s.id === id);
}

function num(s: string): number | null {
  const t = s.replace(/[,_\s]/g, "");
  return t === "" || !Number.isFinite(Number(t)) ? null : Number(t);
}

/** The counter, calibration and budget set here; the Tune view replays with the same. */
export function replaySettings() {
  return { counter, calibrate, budget: { context_window: num(budget.window), max_output: num(budget.maxOutput), reserve: num(budget.reserve) } };
}

export async function runComparison() {
  const key = store.current;
  if (key === null || store.running || store.picked.length === 0) return;
  formErrors = {};
  const strategies = [];
  for (const sel of store.picked) {
    const { params, errors } = paramsOf(sel, info(sel.id));
    if (Object.keys(errors).length) formErrors[sel.id] = errors;
    strategies.push({ id: sel.id, params });
  }
  if (Object.keys(formErrors).length) {
    runError = { code: "invalid", message: "Some parameters are not valid; see the forms." };
    changed();
    return;
  }
  const job = nextJob++;
  store.running = { job, text: "Starting…", share: 0 };
  runError = null;
  kept = [];
  changed();
  try {
    store.runs = await api.replay(
      {
        session: key,
        strategies,
        counter,
        calibrate,
        job,
        budget: { context_window: num(budget.window), max_output: num(budget.maxOutput), reserve: num(budget.reserve) },
      },
      (p) => {
        if (!store.running) return;
        if (p.kind === "calls") {
          store.running.text = `${p.strategy} (${p.run}/${p.runs}): call ${fmtInt(p.done)} of ${fmtInt(p.total)}`;
          store.running.share = (p.run - 1 + (p.total ? p.done / p.total : 1)) / p.runs;
        } else {
          store.running.text = `${p.strategy} done`;
        }
        updateProgress();
      },
    );
    cumulative = preferredCumulative(store.runs);
    store.status = `Replayed ${store.runs.length} strateg${store.runs.length === 1 ? "y" : "ies"}`;
  } catch (e) {
    runError = e as { code: string; message: string };
    if (runError.code === "cancelled") store.status = "Replay cancelled";
  }
  store.running = null;
  changed();
}

export async function cancelRun() {
  if (store.running) await api.cancel(store.running.job);
}

function updateProgress() {
  const bar = document.querySelector<HTMLElement>("[data-testid=progress] .bar");
  const text = document.querySelector<HTMLElement>("[data-testid=progress] .text");
  if (bar && store.running) bar.style.width = `${Math.round(store.running.share * 100)}%`;
  if (text && store.running) text.textContent = store.running.text;
}

function strategyPicker(): HTMLElement {
  const all = store.strategies?.strategies ?? [];
  const picked = new Set(store.picked.map((p) => p.id));
  return h(
    "div.picker",
    { testid: "strategy-picker" },
    all.map((s) => {
      const sel = store.picked.find((p) => p.id === s.id);
      const box = h("input", {
        type: "checkbox",
        checked: picked.has(s.id),
        testid: `pick-${s.id}`,
        onchange: (e: Event) => {
          if ((e.target as HTMLInputElement).checked) store.picked.push({ id: s.id, values: {} });
          else store.picked = store.picked.filter((p) => p.id !== s.id);
          changed();
        },
      });
      return h(
        "div.strategy",
        {},
        h("label.strategy-name", { title: s.description }, box, h("span", {}, s.title), h("span.muted.small", {}, ` ${s.id} · ${s.system}`)),
        sel && s.params.length ? paramForm(s, sel) : null,
      );
    }),
    store.strategies?.refused.length
      ? h("details.small", {}, h("summary", {}, `${store.strategies.refused.length} plugin librar${store.strategies.refused.length === 1 ? "y" : "ies"} refused`), store.strategies.refused.map((r) => h("div", {}, `${r.path}: ${r.reason}`)))
      : null,
    all.length <= 2 ? h("div.small.muted", {}, `No strategy plugins found; searched: ${(store.strategies?.searched ?? []).join(", ")}`) : null,
  );
}

export function paramForm(s: StrategyInfo, sel: Selection): HTMLElement {
  const errs = formErrors[s.id] ?? {};
  return h(
    "details.params",
    { open: Object.keys(errs).length > 0 },
    h("summary", {}, `Parameters (${s.params.length})`),
    s.params.map((p) => {
      const f = fieldOf(p);
      const current = sel.values[p.name] ?? f.initial;
      const set = (v: string | boolean) => {
        sel.values[p.name] = v;
      };
      let input: HTMLElement;
      if (f.input === "checkbox") {
        input = h("input", { type: "checkbox", checked: current === true, onchange: (e: Event) => set((e.target as HTMLInputElement).checked) });
      } else if (f.input === "select") {
        input = h("select", { onchange: (e: Event) => set((e.target as HTMLSelectElement).value) }, f.choices.map((c) => h("option", { value: c, selected: c === current }, c)));
      } else {
        input = h("input", { type: f.input === "number" ? "number" : "text", step: f.step, min: f.min, max: f.max, value: String(current), placeholder: f.placeholder, oninput: (e: Event) => set((e.target as HTMLInputElement).value) });
      }
      input.dataset.testid = `param-${s.id}-${p.name}`;
      return h("label.param", { title: f.help }, h("span.param-name", {}, p.name), input, h("span.param-help", {}, f.help), errs[p.name] ? h("span.param-error", {}, errs[p.name]) : null);
    }),
  );
}

function runOptions(): HTMLElement {
  const field = (label: string, key: keyof typeof budget, hint: string) =>
    h("label.opt", { title: hint }, label, h("input", { type: "text", value: budget[key], placeholder: hint, oninput: (e: Event) => (budget[key] = (e.target as HTMLInputElement).value) }));
  return h(
    "div.options",
    {},
    field("Context window", "window", store.detail?.summary.model ? `from ${store.detail.summary.model}` : "tokens"),
    field("Max output", "maxOutput", "from the model"),
    field("Reserve", "reserve", "0"),
    h(
      "label.opt",
      {},
      "Counter",
      h("select", { onchange: (e: Event) => (counter = (e.target as HTMLSelectElement).value) }, (store.strategies?.counters ?? ["auto"]).map((c) => h("option", { value: c, selected: c === counter }, c))),
    ),
    h("label.opt", { title: "Fit overhead and ratio on the log's recorded usage" }, h("input", { type: "checkbox", checked: calibrate, onchange: (e: Event) => (calibrate = (e.target as HTMLInputElement).checked) }), "Calibrate"),
  );
}

function metricsTable(runs: RunView[]): HTMLElement {
  const colors = strategyColors(runs.map((r) => r.strategy));
  const base = runs.find((r) => r.strategy === "none") ?? null;
  const delta = (v: number, b: number | undefined) => (base && b !== undefined && runs.length > 1 ? h("span.delta", {}, ` ${fmtDelta(v, b)}`) : null);
  const cols: [string, (r: RunView) => (Node | string | null)[], string][] = [
    ["Total input", (r) => [fmtInt(r.metrics.total_input_tokens), delta(r.metrics.total_input_tokens, base?.metrics.total_input_tokens)], "Input tokens summed over every call"],
    ["Peak context", (r) => [fmtInt(r.metrics.peak_context)], "Largest context of one call"],
    ["p95 context", (r) => [fmtInt(r.metrics.p95_context)], "95th percentile context"],
    ["Over window", (r) => [fmtInt(r.metrics.calls_over_window)], "Calls whose input exceeds the context window"],
    ["Compactions", (r) => [fmtInt(r.metrics.compactions)], "Persistent edits of a history"],
    ["Overhead", (r) => [fmtInt(r.metrics.compaction_overhead_tokens)], "Summarizer input + output tokens"],
    ["Lost", (r) => [fmtInt(r.metrics.lost_tokens)], "Tokens dropped with no summary"],
    ["Cost", (r) => [fmtUsd(r.metrics.cost_usd), delta(r.metrics.cost_usd, base?.metrics.cost_usd), r.metrics.unpriced_calls ? h("span.muted", {}, ` (${fmtInt(r.metrics.unpriced_calls)} unpriced)`) : null], "USD with the prompt-cache model"],
    ["Recall", (r) => [r.metrics.recall_lower === null ? "—" : `${fmtShare(r.metrics.recall_lower)} – ${fmtShare(r.metrics.recall_upper)}`], "Needed-fact recall: lower bound (summaries keep nothing) – upper bound (summaries keep everything)"],
    ["Pinned / split", (r) => [`${fmtInt(r.metrics.pinned_violations)} / ${fmtInt(r.metrics.split_tool_pairs)}`], "Pinned violations and split tool pairs (both 0 for a valid strategy)"],
    ["Fidelity", (r) => [r.metrics.fidelity_mean_ape === null ? "—" : `±${fmtPct(r.metrics.fidelity_mean_ape)} / ±${fmtPct(r.metrics.fidelity_p95_ape)}`], "Replayed vs recorded input: mean / p95 absolute error"],
  ];
  return h(
    "div.table-wrap",
    {},
    h(
    "table.grid.metrics",
    { testid: "metrics-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "Strategy"), cols.map(([t, , tip]) => h("th", { title: tip }, t)))),
    h(
      "tbody",
      {},
      runs.map((r) =>
        h(
          "tr",
          { "data-strategy": r.strategy, "data-calls": String(r.metrics.calls) },
          h("td", {}, h("span.swatch", { style: `background:${colors.get(r.strategy)}` }), r.strategy, r.plugin ? h("div.muted.small", {}, r.plugin) : null),
          cols.map(([, f]) => h("td.num", {}, ...f(r))),
        ),
      ),
    ),
    ),
  );
}

/** One chart per strategy: the user's choice, else above SMALL_MULTIPLES_ABOVE strategies. */
function smallMultiples(runs: RunView[]): boolean {
  return perStrategy ?? runs.length > SMALL_MULTIPLES_ABOVE;
}

/** One entry per strategy in its colour (a click hides or shows its lines), and the line style
 *  of each agent. */
function legend(runs: RunView[]): HTMLElement {
  const colors = strategyColors(runs.map((r) => r.strategy));
  const agents = agentsOf(runs);
  return h(
    "div.legend",
    { testid: "compare-legend" },
    runs.map((r) =>
      h(
        "button.legend-entry",
        {
          "data-strategy": r.strategy,
          "data-color": colors.get(r.strategy),
          class: `legend-entry${hiddenStrategies.has(r.strategy) ? " off" : ""}`,
          title: "Hide or show this strategy's lines",
          onclick: () => ((hiddenStrategies.has(r.strategy) ? hiddenStrategies.delete(r.strategy) : hiddenStrategies.add(r.strategy)), changed()),
        },
        h("span.swatch", { style: `background:${colors.get(r.strategy)}` }),
        r.strategy,
      ),
    ),
    agents.length > 1
      ? h(
          "span.legend-agents",
          {},
          agents.map((a) => h("span.legend-agent", { "data-agent": String(a.index) }, h("span.legend-line", { style: `border-top:2px ${agentDash(a.index) ? "dashed" : "solid"} var(--fg-muted)` }), a.id)),
        )
      : null,
  );
}

function drawCharts(host: HTMLElement, runs: RunView[]) {
  for (const c of charts) c.destroy();
  charts = [];
  const colors = strategyColors(runs.map((r) => r.strategy));
  const shown = runs.filter((r) => !hiddenStrategies.has(r.strategy));
  const measures: Measure[] = [cumulative ?? preferredCumulative(runs), "occupancy"];
  const groups = smallMultiples(runs) ? shown.map((r) => [r]) : [shown];
  for (const group of groups) {
    if (!group.length) continue;
    for (const m of measures) {
      const d = shapeRuns(group, m, hiddenAgents);
      const lines = d.lines.map((l) => ({ label: l.label, values: l.values, color: colors.get(l.strategy), dash: agentDash(l.agent) }));
      const own = m === "occupancy" ? ownEstimateLines(group, hiddenAgents) : [];
      for (const o of own) lines.push({ label: o.label, values: o.values, color: colors.get(o.strategy), dash: [2, 3], width: 1 } as (typeof lines)[number]);
      const ownOf = new Set(own.map((o) => o.strategy));
      const box = h("div.chart-box");
      host.append(box);
      const chart = new Chart(box, {
        title: (groups.length > 1 ? `${group[0].strategy}: ` : "") + MEASURE_TITLES[m] + (own.length ? "; dotted: each strategy's own estimate, where its thresholds fire" : ""),
        yLabel: "tokens",
        x: d.x,
        lines,
        markers: [],
        lanes: compareLanes(group, colors, hiddenAgents, fmtInt),
        legend: false,
        // A threshold a strategy checks on its own estimate is labelled so: it fires where the
        // dotted line crosses it, not where the provider's count does.
        thresholds: d.thresholds.map((t) => ({ ...t, label: `${t.strategy}: ${t.label}${m === "occupancy" && ownOf.has(t.strategy) ? ` · on ${t.strategy}'s own estimate` : ""}` })),
        hover: (call) =>
          `<div><b>call ${fmtInt(call)}</b></div>` +
          callRows(group, call)
            .map((r) => `<div><span class="swatch" style="background:${colors.get(r.strategy)}"></span>${esc(r.strategy)} · ${esc(r.agentId)}: ${fmtInt(r.input)} in / ${fmtInt(r.output)} out</div>`)
            .join(""),
        onPick: (call) => {
          keptCall = String(call);
          void loadKept();
        },
      });
      chart.root.dataset.strategies = String(group.length);
      charts.push(chart);
    }
  }
}

async function loadKept() {
  const key = store.current;
  const call = Number(keptCall);
  if (key === null || !Number.isInteger(call) || call < 0) return;
  keptError = null;
  try {
    kept = await Promise.all(
      store.runs.map((r) => api.contextAt(key, call, { id: r.strategy, params: r.params ?? {} }, r.counter, { context_window: r.context_window, max_output: r.max_output, reserve: r.reserve })),
    );
  } catch (e) {
    keptError = (e as { message: string }).message;
  }
  changed();
}

export function renderCompare(root: HTMLElement) {
  for (const c of charts) c.destroy();
  charts = [];
  const d = store.detail;
  if (!d) {
    clear(root, empty("No session selected", "Open a log in the Library (Alt+1) and pick it; then compare strategies here."));
    return;
  }
  const runs = store.runs;
  const progress = store.running
    ? h("div.progress", { testid: "progress" }, h("div.bar", { style: `width:${Math.round(store.running.share * 100)}%` }), h("span.text", {}, store.running.text), h("button", { onclick: () => void cancelRun(), testid: "cancel" }, "Cancel (Esc)"))
    : null;
  const toggles = runs.length
    ? h(
        "div.toolbar",
        {},
        h("span.muted", {}, "Agents:"),
        agentsOf(runs).map((a) =>
          h("label.toggle", {}, h("input", { type: "checkbox", checked: !hiddenAgents.has(a.index), testid: `agent-${a.index}`, onchange: (e: Event) => ((e.target as HTMLInputElement).checked ? hiddenAgents.delete(a.index) : hiddenAgents.add(a.index), changed()) }), a.id),
        ),
        h(
          "select",
          { title: "Which cumulative line", onchange: (e: Event) => ((cumulative = (e.target as HTMLSelectElement).value as Measure), changed()) },
          h("option", { value: "cumulative", selected: cumulative === "cumulative" }, "cumulative: total"),
          h("option", { value: "cumulative_since_compaction", selected: cumulative === "cumulative_since_compaction" }, "cumulative: since compaction"),
        ),
        h("label.toggle", { title: `On by default above ${SMALL_MULTIPLES_ABOVE} strategies` }, h("input", { type: "checkbox", testid: "per-strategy", checked: smallMultiples(runs), onchange: (e: Event) => ((perStrategy = (e.target as HTMLInputElement).checked), changed()) }), "one chart per strategy"),
        h("span.muted.small", {}, "Drag to zoom, wheel to zoom, Shift+wheel to pan, double-click to reset; click a strategy in the legend to hide it. Under each chart, one marker lane per strategy: compactions as ticks, per-call pruning as short ticks (▼ where it starts to bite); hover a tick for the reason."),
      )
    : null;
  const chartsHost = h("div.charts", { testid: "charts" });
  const keptInput = h("input.num-input", { type: "number", min: 0, value: keptCall, placeholder: "call", testid: "kept-call" });
  keptInput.addEventListener("input", () => (keptCall = keptInput.value));
  keptInput.addEventListener("keydown", (e) => e.key === "Enter" && void loadKept());

  clear(
    root,
    h(
      "div.compare",
      {},
      h(
        "aside.side",
        {},
        h("h3", {}, "Strategies"),
        d.summary.usage_only ? errorBox("This log holds token counts but no message text: it can be charted but not replayed.") : null,
        strategyPicker(),
        h("h3", {}, "Budget and counting"),
        runOptions(),
        h(
          "div.toolbar",
          {},
          h("button.primary", { onclick: () => void runComparison(), disabled: !!store.running || store.picked.length === 0, testid: "run-compare", title: "Ctrl+Enter" }, store.picked.length > 1 ? `Compare ${store.picked.length} strategies` : "Replay"),
        ),
      ),
      h(
        "section.results",
        {},
        progress,
        runError ? errorBox(runError.message, runError.code) : null,
        runs.length ? null : empty("Nothing replayed yet", "Tick one or more strategies (baselines included), adjust their parameters, and press Replay (Ctrl+Enter)."),
        toggles,
        runs.length ? legend(runs) : null,
        chartsHost,
        runs.length ? h("h3", {}, "Metrics") : null,
        runs.length ? metricsTable(runs) : null,
        runs.length ? compareNotes(runs) : null,
        runs.length ? h("h3", {}, "What did each strategy keep at call N") : null,
        runs.length ? h("div.toolbar", {}, "Call ", keptInput, h("button", { onclick: () => void loadKept(), testid: "show-kept" }, "Show side by side"), h("span.muted.small", {}, "or click a point on a chart")) : null,
        keptError ? errorBox(keptError) : null,
        kept.length ? h("div.kept", { testid: "kept" }, kept.map((k, i) => h("div.kept-col", { style: `border-top:3px solid ${strategyColors(runs.map((r) => r.strategy)).get(k.strategy) ?? "transparent"}` }, contextList(k, `kept-${i}`)))) : null,
      ),
    ),
  );
  if (runs.length) drawCharts(chartsHost, runs);
}
