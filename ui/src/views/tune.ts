// Tune: sweep ranges of a strategy's numeric parameters over the current session, progress and
// cancel, the Pareto scatter of cost vs needed-fact recall, a picked point's parameters and why
// each of its compactions fired, and saving it as a profile in the library.

import uPlot from "uplot";
import { api } from "../api";
import type { CompactionPointView } from "../bindings/CompactionPointView";
import type { TuneView } from "../bindings/TuneView";
import { clear, empty, errorBox, h } from "../dom";
import { fmtInt, fmtUsd } from "../format";
import { changed, store } from "../store";
import { defaultRange, paretoData, sweepable, sweepValues, sweptText, type Range } from "../tune";
import { paramsOf, replaySettings } from "./compare";

let strategy = "";
let objective = "cost";
const ranges = new Map<string, Range>(); // by `strategy/param`
let result: TuneView | null = null;
let resultSession: number | null = null;
let picked: number | null = null;
let why: CompactionPointView[] | null = null;
let error: { code: string; message: string } | null = null;
let running: { job: number; done: number; total: number } | null = null;
let nextJob = 1_000_000; // apart from Compare's job ids
let profileName = "";
let plot: uPlot | null = null;

function plugins() {
  return (store.strategies?.strategies ?? []).filter((s) => s.params.some(sweepable));
}

function rangeOf(param: string): Range {
  const key = `${strategy}/${param}`;
  let r = ranges.get(key);
  if (!r) {
    const p = plugins().find((s) => s.id === strategy)?.params.find((x) => x.name === param);
    r = p ? defaultRange(p) : { on: false, from: "", to: "", steps: "2" };
    ranges.set(key, r);
  }
  return r;
}

/** The fixed parameters: those set in Compare's form when the strategy is picked there. */
function baseParams() {
  const info = plugins().find((s) => s.id === strategy);
  const sel = store.picked.find((p) => p.id === strategy);
  return sel && info ? paramsOf(sel, info).params : {};
}

export async function runTune() {
  const key = store.current;
  const info = plugins().find((s) => s.id === strategy);
  if (key === null || !info || running) return;
  const sweeps = [];
  for (const p of info.params.filter(sweepable)) {
    const r = rangeOf(p.name);
    if (!r.on) continue;
    const v = sweepValues(p, r);
    if ("error" in v) {
      error = { code: "invalid", message: v.error };
      changed();
      return;
    }
    sweeps.push({ param: p.name, values: v.values });
  }
  if (sweeps.length === 0) {
    error = { code: "invalid", message: "Tick at least one parameter to sweep." };
    changed();
    return;
  }
  const job = nextJob++;
  running = { job, done: 0, total: sweeps.reduce((n, s) => n * s.values.length, 1) };
  error = null;
  result = null;
  picked = null;
  why = null;
  changed();
  try {
    const { counter, calibrate, budget } = replaySettings();
    result = await api.tune({ session: key, strategy, params: baseParams(), sweeps, objective, counter, budget, calibrate, job }, (p) => {
      if (!running) return;
      running.done = p.done;
      running.total = p.total;
      const bar = document.querySelector<HTMLElement>("[data-testid=tune-progress] .bar");
      const text = document.querySelector<HTMLElement>("[data-testid=tune-progress] .text");
      if (bar) bar.style.width = `${Math.round((p.total ? p.done / p.total : 1) * 100)}%`;
      if (text) text.textContent = `Replayed ${fmtInt(p.done)} of ${fmtInt(p.total)} parameter sets`;
    });
    resultSession = key;
    picked = result.best;
    why = result.explanation;
    store.status = `Swept ${fmtInt(result.candidates.length)} parameter sets of ${strategy}`;
  } catch (e) {
    error = e as { code: string; message: string };
    if (error.code === "cancelled") store.status = "Sweep cancelled";
  }
  running = null;
  changed();
}

export async function cancelTune() {
  if (running) await api.cancel(running.job);
}

async function pick(index: number) {
  if (!result || resultSession === null) return;
  picked = index;
  why = null;
  changed();
  const c = result.candidates[index];
  if (c.error !== null) return;
  try {
    const { counter, calibrate, budget } = replaySettings();
    why = await api.explain(resultSession, { id: result.strategy, params: c.params }, counter, budget, calibrate);
  } catch (e) {
    error = e as { code: string; message: string };
  }
  changed();
}

async function saveProfile() {
  if (!result || picked === null || !profileName.trim()) return;
  const c = result.candidates[picked];
  try {
    await api.saveProfile(result.strategy, profileName.trim(), c.params, `tuned in the app, objective ${result.objective}, ${sweptText(c.swept)}`);
    store.status = `Saved profile ${profileName.trim()} of ${result.strategy}`;
    error = null;
  } catch (e) {
    error = e as { code: string; message: string };
  }
  changed();
}

function scatter(r: TuneView): HTMLElement {
  const d = paretoData(r.candidates, r.pareto);
  const root = h("div.chart", { testid: "pareto-chart" });
  plot?.destroy();
  const selected = d.candidate.map((c) => (c === picked ? d.recall[d.candidate.indexOf(c)] : null));
  const css = getComputedStyle(document.documentElement);
  const axis = css.getPropertyValue("--fg-muted").trim() || "#8e96a8";
  const grid = css.getPropertyValue("--grid").trim() || "rgba(160,170,190,0.12)";
  const opts: uPlot.Options = {
    width: 700,
    height: 320,
    // Padded so the cheapest and dearest points are not cut by the plot's edge.
    scales: { x: { time: false, range: (_u, lo, hi) => { const pad = (hi - lo) * 0.06 || Math.abs(lo) * 0.05 || 0.01; return [lo - pad, hi + pad]; } }, y: { range: (_u, lo, hi) => [Math.min(0, lo), Math.max(1, hi)] } },
    axes: [
      { label: "Cost (USD)", stroke: axis, grid: { stroke: grid }, ticks: { stroke: grid }, values: (_u, xs) => xs.map((x) => fmtUsd(x)) },
      { label: "Needed-fact recall", size: 60, stroke: axis, grid: { stroke: grid }, ticks: { stroke: grid }, values: (_u, ys) => ys.map((y) => `${Math.round(y * 100)}%`) },
    ],
    series: [
      { label: "cost", value: (_u, x) => (x === null ? "—" : fmtUsd(x)) },
      { label: "parameter sets", stroke: "#4e9ce6", paths: () => null, points: { show: true, size: 9, fill: "#4e9ce6" }, value: (_u, y) => (y === null ? "—" : `${(y * 100).toFixed(1)}%`) },
      { label: "Pareto front", stroke: "#e5894a", width: 2, spanGaps: true, points: { show: true, size: 11 }, value: (_u, y) => (y === null ? "—" : `${(y * 100).toFixed(1)}%`) },
      { label: "picked", stroke: "#e05d6f", paths: () => null, points: { show: true, size: 16, width: 3, fill: "transparent" } },
    ],
    cursor: { drag: { x: false, y: false } },
  };
  requestAnimationFrame(() => {
    opts.width = Math.max(360, root.clientWidth - 8);
    plot = new uPlot(opts, [d.cost, d.recall, d.front, selected], root);
    plot.over.addEventListener("click", () => {
      const i = plot?.cursor.idx;
      if (i !== null && i !== undefined) void pick(d.candidate[i]);
    });
  });
  return h(
    "div",
    {},
    root,
    d.failed.length ? h("div.small.muted", {}, `${fmtInt(d.failed.length)} set(s) refused by the strategy are not plotted (see the table).`) : null,
  );
}

function candidates(r: TuneView): HTMLElement {
  const front = new Set(r.pareto);
  return h(
    "div.table-scroll",
    {},
    h(
      "table.grid",
      { testid: "tune-candidates" },
      h("thead", {}, h("tr", {}, ...["#", "Swept", "Cost", "Recall", "Input tokens", "Peak context", "Compactions", "Over window", ""].map((t) => h("th", {}, t)))),
      h(
        "tbody",
        {},
        r.candidates.map((c) =>
          h(
            "tr",
            { class: c.index === picked ? "selected clickable" : "clickable", onclick: () => void pick(c.index), title: c.error ?? "Pick this set" },
            h("td.num", {}, String(c.index)),
            h("td", {}, sweptText(c.swept)),
            ...(c.error !== null
              ? [h("td", { colspan: 6 }, h("span.badge.error", {}, "refused"), ` ${c.error}`)]
              : [
                  h("td.num", {}, fmtUsd(c.cost_usd)),
                  h("td.num", {}, `${(c.recall_lower * 100).toFixed(1)}%`),
                  h("td.num", {}, fmtInt(c.total_input_tokens)),
                  h("td.num", {}, fmtInt(c.peak_context)),
                  h("td.num", {}, fmtInt(c.compactions)),
                  h("td.num", {}, fmtInt(c.calls_over_window)),
                ]),
            h("td", {}, c.index === r.best ? h("span.badge.ok", {}, `best (${r.objective})`) : null, front.has(c.index) ? h("span.badge", {}, "Pareto") : null),
          ),
        ),
      ),
    ),
  );
}

function pickedPanel(r: TuneView): HTMLElement | null {
  if (picked === null) return null;
  const c = r.candidates[picked];
  return h(
    "section.picked",
    { testid: "tune-picked" },
    h("h3", {}, `Set #${c.index}: ${sweptText(c.swept)}`),
    h("pre.params", {}, JSON.stringify(c.params, null, 2)),
    h(
      "div.toolbar",
      {},
      h("input", { type: "text", placeholder: "profile name", value: profileName, testid: "profile-name", oninput: (e: Event) => (profileName = (e.target as HTMLInputElement).value) }),
      h("button", { onclick: () => void saveProfile(), testid: "save-profile", disabled: c.error !== null }, "Save as profile"),
    ),
    h("h3", {}, "Why each compaction fired"),
    why === null
      ? h("div.muted", {}, c.error ?? "Replaying this set…")
      : why.length === 0
        ? h("div.muted", {}, "This set never compacts this session.")
        : h("ol.why", { testid: "tune-why" }, why.map((w) => h("li", {}, h("strong", {}, `${w.agent}: `), w.why))),
  );
}

export function renderTune(root: HTMLElement) {
  const all = plugins();
  if (!all.some((s) => s.id === strategy)) strategy = all[0]?.id ?? "";
  const info = all.find((s) => s.id === strategy);
  if (store.current === null) {
    clear(root, empty("No session", "Open a session in the Library first; the sweep replays it."));
    return;
  }
  if (!info) {
    clear(root, empty("No strategy with numeric parameters", "Strategy plugins are found beside the app, in ~/.local/share/ctxlab/plugins and in $CTXLAB_PLUGIN_PATH."));
    return;
  }
  const rows = info.params.filter(sweepable).map((p) => {
    const r = rangeOf(p.name);
    const input = (k: "from" | "to" | "steps", width: string) =>
      h("input", { type: "text", value: r[k], style: `width:${width}`, testid: `sweep-${p.name}-${k}`, oninput: (e: Event) => (r[k] = (e.target as HTMLInputElement).value) });
    const hint = [p.description, p.min !== null ? `min ${fmtInt(p.min)}` : "", p.max !== null ? `max ${fmtInt(p.max)}` : "", `default ${String(p.default)}`].filter(Boolean).join(" · ");
    return h(
      "tr",
      { title: hint },
      h("td", {}, h("label", {}, h("input", { type: "checkbox", checked: r.on, testid: `sweep-${p.name}`, onchange: (e: Event) => ((r.on = (e.target as HTMLInputElement).checked), changed()) }), ` ${p.name}`)),
      h("td", {}, input("from", "6.5em")),
      h("td", {}, input("to", "6.5em")),
      h("td", {}, input("steps", "2.5em")),
    );
  });
  const r = result && resultSession === store.current && result.strategy === strategy ? result : null;
  clear(
    root,
    h(
      "div.toolbar",
      {},
      h("label.opt", {}, "Strategy ", h("select", { testid: "tune-strategy", onchange: (e: Event) => ((strategy = (e.target as HTMLSelectElement).value), changed()) }, all.map((s) => h("option", { value: s.id, selected: s.id === strategy }, s.title)))),
      h("label.opt", { title: "What the best set optimises" }, "Best by ", h("select", { onchange: (e: Event) => (objective = (e.target as HTMLSelectElement).value) }, ["cost", "tokens", "recall"].map((o) => h("option", { value: o, selected: o === objective }, o)))),
      h("button.primary", { onclick: () => void runTune(), disabled: running !== null, testid: "run-tune" }, "Sweep"),
    ),
    h("div.small.muted", {}, "Tick the parameters to sweep: every combination is replayed. The other parameters come from Replay / Compare's form when the strategy is picked there (else their defaults), as do the counter, budget and calibration."),
    h(
      "div.tune-grid",
      {},
      h("div.sweeps-scroll", {}, h("table.grid.sweeps", { testid: "sweeps" }, h("thead", {}, h("tr", {}, ...["Sweep", "From", "To", "Steps"].map((t) => h("th", {}, t)))), h("tbody", {}, rows))),
      h(
        "div",
        {},
        r ? h("h3", {}, `Cost vs recall: ${fmtInt(r.candidates.length)} sets, ${fmtInt(r.pareto.length)} on the Pareto front (click a point)`) : empty("No sweep yet", "Tick parameters on the left, set their ranges and press Sweep."),
        r ? scatter(r) : null,
      ),
    ),
    running
      ? h(
          "div.progress",
          { testid: "tune-progress" },
          h("div.bar", { style: `width:${Math.round((running.total ? running.done / running.total : 0) * 100)}%` }),
          h("span.text", {}, `Replayed ${fmtInt(running.done)} of ${fmtInt(running.total)} parameter sets`),
          h("button", { onclick: () => void cancelTune(), title: "Esc" }, "Cancel"),
        )
      : null,
    error ? errorBox(error.message, error.code) : null,
    r ? pickedPanel(r) : null,
    r ? candidates(r) : null,
  );
}
