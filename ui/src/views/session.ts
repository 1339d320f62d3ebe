// Session: agents (subagents nested), the calls over time with recorded usage beside the
// estimate (fidelity), recorded compactions, and the context of any call.

import { api } from "../api";
import type { AgentView } from "../bindings/AgentView";
import type { ContextView } from "../bindings/ContextView";
import type { SessionDetail } from "../bindings/SessionDetail";
import type { Chart } from "../chart";
import { clear, empty, errorBox, h } from "../dom";
import { fmtBytes, fmtInt, fmtPct } from "../format";
import { applyLive } from "../live";
import { changed, store } from "../store";
import { compositionPanel, invalidateComposition } from "./composition";
import { refreshStored } from "./library";
import { drawSessionChart } from "./sessionchart";
import { invalidatePricing, pricingSection } from "./pricing";

let chart: Chart | null = null;
let contextCall: number | null = null;
let context: ContextView | null = null;
let contextError: string | null = null;
let contextFor: number | null = null;
/** Sessions whose log is followed now, with the calls gained since following started. */
const following = new Map<number, number>();
let followError: string | null = null;
let chartReported = false;

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

/** The agents, fidelity and compactions of a followed session (the live updates carry only the
 *  calls), and the library's rows, read again once the log has been quiet for a moment. */
function refreshSoon(key: number, delay = 1500) {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    try {
      const fresh = await api.sessionDetail(key);
      if (store.detail?.summary.key === key) store.detail = fresh;
      invalidatePricing();
      invalidateComposition();
      store.library = await api.library();
    } catch {
      // Closed meanwhile: nothing to refresh.
    }
    changed();
  }, delay);
}

async function toggleFollow(key: number) {
  followError = null;
  if (following.has(key)) {
    following.delete(key);
    await api.unfollow(key);
    store.status = "Stopped following the log";
    refreshSoon(key, 0);
    // The library records the grown log when the follower stops (at its next poll).
    setTimeout(() => void refreshStored(), 800);
    changed();
    return;
  }
  following.set(key, 0);
  changed();
  try {
    await api.follow(key, (u) => {
      if (!following.has(key)) return;
      const d = store.detail;
      if (u.error !== null) store.status = `Following: ${u.error}`;
      else if (d && d.summary.key === key) {
        const added = applyLive(d.calls, u);
        d.summary.calls = u.total_calls;
        following.set(key, (following.get(key) ?? 0) + added);
        store.status = u.reloaded ?? `Following: ${fmtInt(u.total_calls)} calls (${added >= 0 ? "+" : ""}${fmtInt(added)})`;
        refreshSoon(key);
      }
      changed();
    });
    store.status = "Following the log: new calls appear as they are written";
  } catch (e) {
    following.delete(key);
    followError = (e as { message: string }).message;
  }
  changed();
}

export function agentTree(agents: AgentView[]): { agent: AgentView; depth: number }[] {
  const out: { agent: AgentView; depth: number }[] = [];
  const visit = (parent: number | null, depth: number) => {
    for (const a of agents.filter((x) => (x.parent ?? null) === parent)) {
      out.push({ agent: a, depth });
      if (depth < 32) visit(a.index, depth + 1);
    }
  };
  visit(null, 0);
  // Agents whose parent is unknown still show, at the top level.
  for (const a of agents) if (!out.some((o) => o.agent.index === a.index)) out.push({ agent: a, depth: 0 });
  return out;
}

export function contextList(ctx: ContextView, testid: string): HTMLElement {
  return h(
    "div.context",
    { testid },
    h("div.context-head", {}, h("strong", {}, ctx.strategy), ` · call ${fmtInt(ctx.call)} · ${fmtInt(ctx.messages.filter((m) => m.state !== "dropped").length)} messages · ${fmtInt(ctx.tokens)} tokens`),
    ctx.messages.map((m) =>
      h(
        "div",
        { class: `ctx-msg role-${m.role} state-${m.state}${m.new_since_previous ? " new" : ""}`, title: m.preview },
        h("span.role", {}, m.role),
        h("span.num.tokens", {}, fmtInt(m.tokens)),
        h("span.state", {}, m.state === "verbatim" ? "" : m.state === "summary" ? (m.replaces ? `summary of ${fmtInt(m.replaces)}` : "summary") : m.state),
        m.tools.length ? h("span.tools", {}, m.tools.join(", ")) : null,
        h("span.preview", {}, m.preview),
      ),
    ),
  );
}

async function loadContext(d: SessionDetail, call: number, rerender: () => void) {
  contextCall = call;
  // The call belongs to this session from now on (a render before the context arrives keeps it).
  contextFor = d.summary.key;
  contextError = null;
  rerender();
  try {
    context = await api.contextAt(d.summary.key, call, { id: "recorded", params: {} }, null, null);
    contextFor = d.summary.key;
  } catch (e) {
    context = null;
    contextError = (e as { message: string }).message;
  }
  rerender();
}

export function renderSession(root: HTMLElement, rerender: () => void) {
  chart?.destroy();
  chart = null;
  const d = store.detail;
  if (!d) {
    clear(root, store.current === null ? empty("No session selected", "Open a log in the Library (Alt+1), then pick it.") : h("div.muted", {}, "Loading the session…"));
    return;
  }
  if (contextFor !== d.summary.key) {
    context = null;
    contextCall = null;
  }
  const s = d.summary;
  const fid = d.fidelity;
  const fidelity = fid
    ? h(
        "div.fidelity",
        { testid: "fidelity", title: `Calibrated ${fid.counter} estimate vs the tokens the provider recorded, over ${fmtInt(fid.samples)} calls. Overhead ${fmtInt(fid.overhead)} tokens per call (system prompt, tool schemas), ratio ${fid.ratio.toFixed(3)}.` },
        h("span.label", {}, "Estimate fidelity"),
        h("strong", {}, `±${fmtPct(fid.mean_ape)}`),
        ` mean, ±${fmtPct(fid.p95_ape)} p95 over ${fmtInt(fid.samples)} calls (${fid.counter})`,
      )
    : h("div.fidelity.muted", { testid: "fidelity" }, s.usage_only ? "Usage-only log: it charts, but it holds no text to replay." : s.estimate_only ? "Estimate-only log: it records output tokens only (no input, no cache), so every input count is ctxlab's estimate, uncalibrated." : "No call has both recorded usage and text: the estimate cannot be checked against this log.");

  const tree = agentTree(d.agents);
  const agents = h(
    "table.grid",
    { testid: "agents" },
    h("thead", {}, h("tr", {}, ...["Agent", "Model", "Calls", "Messages", "Input (uncached)", "Output", "Cache read", "Peak context", "Compactions", "Estimate error"].map((t) => h("th", {}, t)))),
    h(
      "tbody",
      {},
      tree.map(({ agent: a, depth }) =>
        h(
          "tr",
          {},
          h("td", { style: `padding-left:${0.6 + depth * 1.4}em` }, depth ? "↳ " : "", a.name),
          h("td", {}, a.model ?? "—"),
          h("td.num", {}, fmtInt(a.calls)),
          h("td.num", {}, fmtInt(a.messages)),
          h("td.num", {}, fmtInt(a.input)),
          h("td.num", {}, fmtInt(a.output)),
          h("td.num", {}, fmtInt(a.cache_read)),
          h("td.num", {}, fmtInt(a.peak_context)),
          h("td.num", {}, fmtInt(a.compactions)),
          h("td.num", {}, a.fidelity_mean_ape === null ? "—" : `±${fmtPct(a.fidelity_mean_ape)}`),
        ),
      ),
    ),
  );

  const callInput = h("input.num-input", { type: "number", min: 0, max: Math.max(0, s.calls - 1), value: String(contextCall ?? Math.max(0, s.calls - 1)), testid: "context-call" });
  const showContext = () => void loadContext(d, Math.max(0, Math.min(s.calls - 1, Number(callInput.value) || 0)), rerender);
  callInput.addEventListener("keydown", (e) => e.key === "Enter" && showContext());

  const chartHost = h("div");
  clear(
    root,
    h(
      "div.session-head",
      {},
      h(
        "div.toolbar",
        {},
        h("h2", { title: s.id }, s.name),
        h(
          "button",
          { onclick: () => void toggleFollow(s.key), testid: "follow-toggle", title: "Follow the log while an agent writes it: new calls appear on the chart as they are appended" },
          following.has(s.key) ? "■ Stop following" : "▶ Follow",
        ),
        following.has(s.key) ? h("span.badge.ok", { testid: "live" }, `● live · +${fmtInt(following.get(s.key) ?? 0)} calls`) : null,
      ),
      h("div.muted", { testid: "session-summary", "data-calls": String(s.calls) }, `${s.format} · ${s.path} · ${fmtBytes(s.bytes)} · ${fmtInt(s.calls)} calls · ${fmtInt(s.agents)} agent${s.agents === 1 ? "" : "s"} · ${s.model ?? "model unknown"}`),
      fidelity,
    ),
    followError ? errorBox(followError, "follow") : null,
    s.warning_count ? h("details.warnings", {}, h("summary", {}, `${fmtInt(s.warning_count)} line${s.warning_count === 1 ? "" : "s"} could not be read`), s.warnings.map((w) => h("div.small", {}, `${w.file}:${w.line}: ${w.message}`))) : null,
    h("h3", {}, "Agents"),
    agents,
    h("h3", {}, "Cost and budget"),
    pricingSection(s.key),
    chartHost,
    d.compactions.length
      ? h("div.small.muted", {}, `Recorded compactions: ${d.compactions.map((c) => `${d.agents[c.agent]?.name ?? c.agent} at call ${c.call === null ? "?" : fmtInt(c.call)} (${c.trigger}${c.pre_tokens !== null ? `, ${fmtInt(c.pre_tokens)} tokens before` : ""}${c.inferred ? ", inferred" : ""})`).join("; ")}`)
      : null,
    h("h3", {}, "What fills the context"),
    s.calls > 0 ? compositionPanel(d, contextCall ?? s.calls - 1, rerender) : null,
    h("h3", {}, "Context at a call"),
    h("div.toolbar", {}, "Call ", callInput, h("button", { onclick: showContext, testid: "show-context" }, "Show context"), h("span.muted.small", {}, "Click a point on the chart to pick its call. New messages since the agent's previous call are marked.")),
    contextError ? errorBox(contextError) : null,
    context ? contextList(context, "session-context") : contextCall !== null ? h("div.muted", {}, "Reading the context…") : null,
  );
  if (s.calls > 0) {
    chart = drawSessionChart(chartHost, d, (i) => void loadContext(d, i, rerender), () => {
      // Once on screen (the frame after uPlot's draw), tell the startup bench.
      void store.benchStartup.then((listening) => {
        if (!listening || chartReported) return;
        chartReported = true;
        requestAnimationFrame(() => requestAnimationFrame(() => void api.startupMark("chart")));
      });
    });
  }
}
