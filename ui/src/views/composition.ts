// What fills the context (#21 point 5): at the picked call, the context by kind as a stacked
// bar (its segments sum to the call's reconstructed context) with a table; over the session, a
// stacked-area chart per agent. Figures: ctxlab::replay::composition (the `composition` command).

import { api } from "../api";
import type { CompositionView } from "../bindings/CompositionView";
import type { SessionDetail } from "../bindings/SessionDetail";
import { Chart, type ChartLine } from "../chart";
import { agentAreas, callSegments, callsOf, recordedCheck, recordedLine } from "../composition";
import { errorBox, esc, h } from "../dom";
import { fmtInt, fmtPct } from "../format";

let view: CompositionView | null = null;
let viewFor: number | null = null;
let loading: number | null = null;
let error: string | null = null;
let areaAgent: number | null = null;
let charts: Chart[] = [];

async function load(key: number, rerender: () => void) {
  if (loading === key) return;
  loading = key;
  error = null;
  try {
    view = await api.composition(key);
    viewFor = key;
  } catch (e) {
    error = (e as { message: string }).message;
  }
  loading = null;
  rerender();
}

let stale = false;

/** Reads the composition again at the next render (a followed log grew); the one shown stays
 *  until the new one arrives. */
export function invalidateComposition() {
  stale = true;
}

/** The composition panel for call `call` (the one the Session view shows the context of, else
 *  the session's last call). */
export function compositionPanel(d: SessionDetail, call: number, rerender: () => void): HTMLElement {
  for (const c of charts) c.destroy();
  charts = [];
  const key = d.summary.key;
  if (d.summary.usage_only) return h("div.muted", { testid: "composition" }, "Usage-only log: there is no text to break down.");
  if (error && viewFor !== key) return errorBox(error);
  if (!view || viewFor !== key) {
    void load(key, rerender);
    return h("div.muted", { testid: "composition-loading" }, "Reading what fills the context…");
  }
  if (stale) {
    stale = false;
    void load(key, rerender);
  }
  const v = view;
  const c = Math.max(0, Math.min(v.total.length - 1, call));
  const total = v.total[c] ?? 0;
  const segs = callSegments(v, c);
  const agent = v.agent[c];
  const overhead = v.overhead[agent] ?? null;
  const agentName = d.agents.find((a) => a.index === agent)?.name ?? String(agent);
  // The provider's record of this call beside what the stacked kinds explain of it.
  const check = recordedCheck(v, c, d.calls.recorded_context, d.calls.estimate);
  const bar = h(
    "div.comp-bar",
    { testid: "composition-bar", "data-total": String(total), "data-call": String(c) },
    segs.map((s) => h("div.comp-seg", { "data-tokens": String(s.tokens), title: `${s.label}: ${fmtInt(s.tokens)} tokens (${fmtPct((s.tokens * 100) / Math.max(1, total))})`, style: `flex-grow:${s.tokens};background:${s.color}` })),
  );
  const table = h(
    "table.grid.comp-table",
    {},
    h("thead", {}, h("tr", {}, h("th", {}, "Kind"), h("th", {}, "Tokens"), h("th", {}, "Share"))),
    h(
      "tbody",
      {},
      segs.map((s) => h("tr", {}, h("td", {}, h("span.swatch", { style: `background:${s.color}` }), s.label), h("td.num", {}, fmtInt(s.tokens)), h("td.num", {}, fmtPct((s.tokens * 100) / Math.max(1, total))))),
      h("tr.total", {}, h("td", {}, "context (reconstructed)"), h("td.num", { testid: "composition-total" }, fmtInt(total)), h("td.num", {}, "100.0%")),
      check
        ? [
            h("tr.muted", { title: "Input + cache read + cache write, as the provider billed this call" }, h("td", {}, "recorded by the provider"), h("td.num", { testid: "composition-recorded" }, fmtInt(check.recorded)), h("td.num", {}, "")),
            h(
              "tr.muted",
              { title: "What the recorded context holds beyond the counted kinds: system prompt and tool schemas the log does not keep, and the counter's scale error against the provider's tokenizer (the calibration's overhead and ratio)" },
              h("td", {}, "not in the log's text, or counted differently"),
              h("td.num", { testid: "composition-unexplained" }, fmtInt(check.unexplained)),
              h("td.num", {}, ""),
            ),
          ]
        : null,
    ),
  );
  const agentsWithCalls = d.agents.filter((a) => v.agent.some((x, i) => x === a.index && v.total[i] !== null));
  if (areaAgent === null || !agentsWithCalls.some((a) => a.index === areaAgent)) areaAgent = agentsWithCalls[0]?.index ?? null;
  const areaHost = h("div", { testid: "composition-areas" });
  const panel = h(
    "div.composition",
    { testid: "composition" },
    h(
      "div.small",
      {},
      h("strong", {}, `Call ${fmtInt(c)}`),
      ` · ${agentName} · ${fmtInt(total)} tokens in the log's context (${v.counter})`,
      v.whole_requests
        ? h("span.muted", { testid: "composition-whole" }, " · the whole request as captured: system prompt and tool schemas counted from its text, nothing calibrated in")
        : overhead !== null
          ? h("span.muted", {}, ` + about ${fmtInt(overhead)} tokens of system prompt and tool schemas the log does not hold (calibrated overhead)`)
          : null,
      check
        ? h(
            "span.muted",
            { testid: "composition-check" },
            ` · the provider recorded ${fmtInt(check.recorded)}` + (check.error === null ? "" : `; the calibrated estimate is ${fmtInt(check.estimate)} (${check.error >= 0 ? "+" : ""}${check.error.toFixed(1)} %)`),
          )
        : null,
    ),
    bar,
    table,
    h(
      "div.toolbar",
      {},
      h("span.muted", {}, "Over the session, agent:"),
      h(
        "select",
        { testid: "composition-agent", onchange: (e: Event) => ((areaAgent = Number((e.target as HTMLSelectElement).value)), rerender()) },
        agentsWithCalls.map((a) => h("option", { value: String(a.index), selected: a.index === areaAgent }, a.name)),
      ),
    ),
    areaHost,
  );
  if (areaAgent !== null) {
    const calls = callsOf(v, areaAgent);
    const bands = agentAreas(v, calls);
    const n = v.total.length;
    // Top band first: each is filled down to 0, the lower ones paint over it.
    const lines: ChartLine[] = [...bands].reverse().map((b) => {
      const values: (number | null)[] = new Array(n).fill(null);
      calls.forEach((ci, j) => (values[ci] = b.top[j]));
      return { label: b.label, values, color: b.color, fill: b.color, width: 1 };
    });
    const recorded = recordedLine(d.calls.recorded_context, calls, n);
    if (recorded.some((x) => x !== null)) lines.push({ label: "recorded by the provider", values: recorded, color: "#222222", width: 1.5, dash: [6, 4] });
    requestAnimationFrame(() => {
      if (!areaHost.isConnected) return;
      const own = new Map(bands.map((b) => [b.label, b]));
      charts.push(
        new Chart(areaHost, {
          title: `What fills ${d.agents.find((a) => a.index === areaAgent)?.name ?? ""}'s context over its calls (stacked, tokens)`,
          yLabel: "tokens",
          x: Array.from({ length: n }, (_, i) => i),
          lines,
          markers: [],
          thresholds: [],
          height: 240,
          hover: (ci) => {
            const j = calls.indexOf(ci);
            if (j < 0) return `<div><b>call ${fmtInt(ci)}</b> (another agent's)</div>`;
            const rec = recorded[ci];
            return `<div><b>call ${fmtInt(ci)}</b></div>` + (rec === null ? "" : `<div>recorded by the provider: ${fmtInt(rec)}</div>`) + [...own.values()].filter((b) => b.own[j] > 0).map((b) => `<div><span class="swatch" style="background:${b.color}"></span>${esc(b.label)}: ${fmtInt(b.own[j])}</div>`).reverse().join("");
          },
        }),
      );
    });
  }
  return panel;
}
