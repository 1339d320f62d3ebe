// The Session view's calls chart (#21 point 1): one line per agent, subagents in a shade of
// their parent's colour and dashed, the calibrated estimate as a thin dotted line beside each,
// the log's compactions as ticks on the agent's marker lane (hover: trigger, tokens before).

import { agentSeries } from "../agentlines";
import type { SessionDetail } from "../bindings/SessionDetail";
import { Chart, type ChartLine } from "../chart";
import { esc, h } from "../dom";
import { fmtInt } from "../format";
import type { Lane } from "../lanes";

export function drawSessionChart(host: HTMLElement, d: SessionDetail, onPick: (call: number) => void, onDrawn: () => void): Chart {
  const series = agentSeries(d.agents, d.calls.agent, d.calls.recorded_context, d.calls.estimate);
  const hasRecorded = d.calls.recorded_context.some((v) => v !== null);
  const hasEstimate = d.calls.estimate.some((v) => v !== null);
  const lines: ChartLine[] = [];
  for (const s of series) {
    if (hasRecorded) lines.push({ label: s.name, values: s.recorded, color: s.color, dash: s.dash, width: s.depth ? 1.5 : 2 });
    if (hasEstimate) lines.push({ label: `${s.name} · estimate`, values: s.estimate, color: s.color, dash: [2, 3], width: 1 });
  }
  const lanes: Lane[] = series
    .filter((s) => d.compactions.some((c) => c.agent === s.agent && c.call !== null))
    .map((s) => ({
      label: s.name,
      color: s.color,
      ticks: d.compactions
        .filter((c) => c.agent === s.agent && c.call !== null)
        .map((c) => ({ call: c.call as number, kind: "recorded" as const, label: `recorded ${c.trigger} compaction at call ${fmtInt(c.call as number)}${c.pre_tokens !== null ? `, ${fmtInt(c.pre_tokens)} tokens before` : ""}${c.inferred ? " (inferred from a drop in usage)" : ""}` }))
        .sort((a, b) => a.call - b.call),
    }));
  const names = new Map(d.agents.map((a) => [a.index, a.name]));
  const legend = h(
    "div.legend",
    { testid: "session-legend" },
    series.map((s) =>
      h(
        "span.legend-entry",
        { "data-agent": String(s.agent), style: `padding-left:${s.depth * 0.8}em` },
        h("span.legend-line", { style: `border-top:2px ${s.dash ? "dashed" : "solid"} ${s.color}` }),
        s.depth ? `↳ ${s.name}` : s.name,
      ),
    ),
    hasRecorded && hasEstimate ? h("span.legend-entry.muted", {}, h("span.legend-line", { style: "border-top:1px dotted currentColor" }), "estimate (calibrated)") : null,
  );
  const box = h("div.chart-box");
  host.append(box);
  const chart = new Chart(box, {
    title: hasRecorded ? "Context per call, one line per agent: recorded (provider's count) and estimate (dotted)" : "Context per call, one line per agent (estimate)",
    yLabel: "tokens",
    x: d.calls.agent.map((_, i) => i),
    lines,
    markers: [],
    lanes,
    legend: false,
    thresholds: [],
    hover: (i) =>
      `<div><b>call ${fmtInt(i)}</b> · ${esc(names.get(d.calls.agent[i]) ?? "")}</div>` +
      (hasRecorded ? `<div>recorded ${fmtInt(d.calls.recorded_context[i])} in / ${fmtInt(d.calls.recorded_output[i])} out</div>` : "") +
      `<div>estimate ${fmtInt(d.calls.estimate[i])}</div>`,
    onPick,
    onDrawn,
  });
  chart.root.dataset.agentSeries = String(series.length);
  chart.root.insertBefore(legend, chart.root.children[1] ?? null);
  return chart;
}
