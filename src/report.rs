//! The HTML report of a comparison: one self-contained file (charts as inline SVG, styles
//! inline, no script, no network) with the metrics table absolute and relative to the `none`
//! baseline, the fidelity of the session's token reconstruction, the charts (colour = strategy,
//! one line per agent, a marker lane per strategy: `chart`), every strategy's compactions and
//! per-call pruning as the lanes show them, what fills each agent's context (stacked areas of
//! `replay::composition`), the parameters of every run and the exported config of every strategy.

use crate::chart::{self, scheme, ChartOptions, Format};
use crate::compare::{ComparedRun, Comparison};
use crate::error::Result;
use crate::fmt::fmt_tokens;
use crate::plugin_host::Registry;
use crate::replay::{Composition, Run};
use std::fmt::Write;

/// Text made safe for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub fn usd(x: f64) -> String {
    let cents = (x * 100.0).round().max(0.0) as u64;
    format!("${}.{:02}", fmt_tokens(cents / 100), cents % 100)
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{:.1} %", v * 100.0))
}

/// `+12.3 %` / `−4.0 %`.
pub fn delta(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(v) if v.abs() < 0.0005 => "±0 %".into(),
        Some(v) if v > 0.0 => format!("+{:.1} %", v * 100.0),
        Some(v) => format!("−{:.1} %", -v * 100.0),
    }
}

/// Recall change in percentage points.
fn delta_points(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(v) if v.abs() < 0.0005 => "±0 pt".into(),
        Some(v) if v > 0.0 => format!("+{:.1} pt", v * 100.0),
        Some(v) => format!("−{:.1} pt", -v * 100.0),
    }
}

fn compactions(run: &Run) -> String {
    let n: u64 = run.metrics.compactions.values().map(|c| c.count).sum();
    if n == 0 {
        return "0".into();
    }
    let kinds: Vec<String> = run
        .metrics
        .compactions
        .iter()
        .map(|(k, c)| {
            let name = serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            format!("{} {name}", fmt_tokens(c.count))
        })
        .collect();
    kinds.join(", ")
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1280px;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:2px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;margin-top:0}table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid #e5e5e5;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6;font-weight:600}
td.d{color:#666;font-size:12px}.bad{color:#b3261e;font-weight:600}
pre{background:#f6f6f6;padding:10px;overflow:auto;font-size:12px;border-radius:4px}
svg{max-width:100%;height:auto}.note{color:#666;font-size:13px}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}
ul.bands{columns:3;list-style:none;padding:0;font-size:13px}ul.lane{font-size:13px;margin:4px 0 12px}";

/// The report of `c`; the registry provides each plugin strategy's exporter; `composition` is
/// what filled the session's contexts (`replay::composition`), drawn per agent when given.
pub fn html(
    c: &Comparison,
    registry: &Registry,
    title: &str,
    composition: Option<&Composition>,
) -> Result<String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
    let first = c.runs.first().map(|r| &r.run);
    let name = if c.name.is_empty() {
        c.session.as_str()
    } else {
        c.name.as_str()
    };
    let _ = write!(h, "<h1>{}</h1>\n", escape(title));
    if let Some(r) = first {
        let _ = write!(
            h,
            "<p class=\"sub\">session {} ({}) · model {} · window {} · max output {} · counter {} · {} calls</p>\n",
            escape(name),
            escape(&c.session),
            escape(r.model.as_deref().unwrap_or("unknown")),
            fmt_tokens(r.budget.context_window),
            fmt_tokens(r.budget.max_output),
            escape(&r.counter),
            fmt_tokens(r.metrics.calls)
        );
    }

    h.push_str("<h2>Fidelity of the token reconstruction</h2>\n");
    match c.fidelity {
        _ if c.runs.iter().any(|r| r.run.estimate_only) => {
            let _ = writeln!(
                h,
                "<p class=\"bad\">The log is {}.</p>",
                escape(crate::model::ESTIMATE_ONLY_NOTE)
            );
        }
        Some(f) => {
            let _ = write!(
                h,
                "<p>Token counts were calibrated on the {} calls whose usage the log recorded: the estimate of each call's input is off by <b>{:.1} %</b> on average, <b>{:.1} %</b> at the 95th percentile. Figures below are as trustworthy as that.</p>\n",
                fmt_tokens(f.samples as u64),
                f.mean_ape,
                f.p95_ape
            );
        }
        None => h.push_str("<p class=\"bad\">The log records no usage to calibrate on: token counts are the counter's estimates, uncalibrated.</p>\n"),
    }
    if let Some(rec) = c
        .runs
        .iter()
        .find(|r| r.run.strategy == "recorded")
        .and_then(|r| r.run.recorded.as_ref())
    {
        let _ = write!(
            h,
            "<p class=\"note\">The <i>recorded</i> baseline against the log's own usage on {} calls: input {} replayed vs {} recorded (mean error {:.1} %, p95 {:.1} %).</p>\n",
            fmt_tokens(rec.calls_with_usage),
            fmt_tokens(c.get("recorded").map_or(0, |r| r.run.metrics.total_input_tokens)),
            fmt_tokens(rec.input_tokens),
            rec.input_mean_ape,
            rec.input_p95_ape
        );
    }

    h.push_str("<h2>Metrics</h2>\n");
    let _ = write!(
        h,
        "<p class=\"note\">Relative figures are against <i>{}</i> (no compaction). Recall is the share of needed facts still in context (lower bound: summaries keep nothing; upper: summaries keep everything).</p>\n",
        escape(&c.baseline)
    );
    let names: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
    let colors = scheme::strategy_colors(&names);
    h.push_str("<table><tr><th>run</th><th>total input tokens</th><th>peak context</th><th>p95 context</th><th>calls over window</th><th>compactions</th><th>overhead tokens</th><th>lost tokens</th><th>cost</th><th>needed-fact recall</th><th>pinned / split</th></tr>\n");
    for (r, color) in c.runs.iter().zip(&colors) {
        metrics_row(&mut h, r, *color);
    }
    h.push_str("</table>\n");
    if let Some(n) = &c.cost_notice {
        let _ = write!(h, "<p class=\"bad\">Note: {}.</p>\n", escape(n));
    }
    for a in &c.budget_assumed {
        let _ = write!(h, "<p class=\"note\">Budget: {}.</p>\n", escape(a));
    }
    for f in &c.failed {
        let _ = write!(
            h,
            "<p class=\"bad\">Not compared: {} failed: {}</p>\n",
            escape(&f.label),
            escape(&f.error)
        );
    }

    let runs: Vec<(&str, &Run)> = c.runs.iter().map(|r| (r.label.as_str(), &r.run)).collect();
    let _ = write!(
        h,
        "<h2>Charts</h2>\n<p class=\"note\">Colour is the strategy; each agent has its own line ({}). Left: cumulative input tokens per agent (billed). Right: context occupancy (tokens in the window at each call); a dotted line is a strategy's own estimate of the context where it has one, the space its thresholds fire in. Under each chart, one lane per strategy: a tick for each compaction (grey: the log's own), a short tick for each call whose view per-call pruning cut (a triangle where it starts to bite); ticks closer than {} px are drawn as one. Horizontal dashed lines are the strategies' thresholds and the context window.</p>\n",
        if runs.len() > scheme::scheme().small_multiples_above {
            "one row per strategy, same axes"
        } else {
            "line style = agent"
        },
        scheme::scheme().lane_min_gap_px
    );
    let svg = chart::comparison_chart(
        &runs,
        &format!("{name} — {} runs", runs.len()),
        Format::Svg,
        &ChartOptions::default(),
    )?;
    h.push_str(&String::from_utf8_lossy(&svg));
    h.push('\n');
    lanes_section(&mut h, &runs);
    if let Some(comp) = composition {
        composition_section(&mut h, comp, &runs)?;
    }

    h.push_str("<h2>Runs: parameters and exported config</h2>\n");
    for r in &c.runs {
        run_section(&mut h, r, registry);
    }
    h.push_str("<p class=\"note\">Written by ctxlab. This file is self-contained: it loads nothing from the network.</p>\n</body></html>\n");
    Ok(h)
}

fn metrics_row(h: &mut String, r: &ComparedRun, color: scheme::Rgb) {
    let m = &r.run.metrics;
    let rel = &r.relative;
    let bad = |n: u64| {
        if n > 0 {
            format!("<span class=\"bad\">{}</span>", fmt_tokens(n))
        } else {
            "0".into()
        }
    };
    let _ = write!(
        h,
        "<tr data-strategy=\"{}\"><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}<br><span class=\"note\">{}</span></td><td>{}<br><span class=\"note\">{}</span></td><td>{}<br><span class=\"note\">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}<br><span class=\"note\">{}</span></td><td>{} – {}<br><span class=\"note\">{} of {} facts</span></td><td>{} / {}</td></tr>\n",
        escape(&r.label),
        color.hex(),
        escape(&r.label),
        fmt_tokens(m.total_input_tokens),
        delta(rel.total_input_tokens),
        fmt_tokens(m.peak_context),
        delta(rel.peak_context),
        fmt_tokens(m.p95_context),
        delta(rel.p95_context),
        bad(m.calls_over_window),
        escape(&compactions(&r.run)),
        fmt_tokens(m.compaction_overhead_tokens),
        fmt_tokens(m.lost_tokens),
        usd(m.cost.total_usd),
        delta(rel.cost_usd),
        pct(m.recall.lower),
        pct(m.recall.upper),
        delta_points(rel.recall_lower),
        fmt_tokens(m.recall.needed),
        bad(m.pinned_violations),
        bad(m.split_tool_pairs),
    );
}

fn run_section(h: &mut String, r: &ComparedRun, registry: &Registry) {
    let run = &r.run;
    let _ = write!(h, "<h3>{}</h3>\n", escape(&r.label));
    let what = match (&run.plugin, run.strategy.as_str()) {
        (Some(p), _) => format!("strategy {} from plugin {}", run.strategy, p),
        (None, "none") => "baseline: no compaction, the full history at every call".into(),
        (None, _) => "baseline: the log's own compactions where it recorded them".into(),
    };
    let _ = write!(
        h,
        "<p class=\"note\">{} · window {} · max output {} · reserve {} · summarizer keeps {:.0} % (cap {}) · cache TTL {}</p>\n",
        escape(&what),
        fmt_tokens(run.budget.context_window),
        fmt_tokens(run.budget.max_output),
        fmt_tokens(run.budget.reserve),
        run.summarizer.ratio * 100.0,
        fmt_tokens(run.summarizer.default_max_tokens),
        match run.cache_ttl {
            crate::replay::CacheTtl::FiveMinutes => "5 minutes",
            crate::replay::CacheTtl::OneHour => "1 hour",
        }
    );
    let Some(entry) = registry.find(&run.strategy) else {
        return;
    };
    let resolved = ctxlab_plugin_api::sdk::Params::resolve(&entry.meta.params, &run.params)
        .map(|p| p.to_json())
        .unwrap_or_else(|_| run.params.clone());
    let _ = write!(
        h,
        "<p>Parameters (defaults filled in):</p><pre>{}</pre>\n",
        escape(&serde_json::to_string_pretty(&resolved).unwrap_or_default())
    );
    match crate::export::config(entry, &run.params, None) {
        Ok(text) => {
            let _ = write!(
                h,
                "<p>Exported as <b>{}</b> (checked: it imports back to the same parameters):</p><pre>{}</pre>\n",
                escape(entry.meta.export_formats.first().map_or("", String::as_str)),
                escape(&text)
            );
        }
        Err(e) => {
            let _ = write!(
                h,
                "<p class=\"bad\">No config exported: {}</p>\n",
                escape(&e.to_string())
            );
        }
    }
}

/// Ticks a lane lists in the report at most; past it, how many more.
const MAX_LISTED_TICKS: usize = 40;

/// Each strategy's lane in words: the marks the chart draws (thinned as drawn at the chart's
/// width), each with its reason, what an app user reads on hover.
fn lanes_section(h: &mut String, runs: &[(&str, &Run)]) {
    let names: Vec<&str> = runs.iter().map(|r| r.0).collect();
    let colors = scheme::strategy_colors(&names);
    let x_max = runs
        .iter()
        .filter_map(|r| r.1.samples.last().map(|s| s.call))
        .max()
        .unwrap_or(0);
    // The plot is about 1,000 px wide in the chart: the same thinning as drawn.
    let px = 1000.0 / (x_max.max(1) as f64);
    h.push_str("<h3>Compactions and per-call pruning, by strategy</h3>\n");
    for ((label, run), color) in runs.iter().zip(colors) {
        let ticks = scheme::run_ticks(run);
        let thinned = scheme::thin_ticks(
            &ticks,
            |c| c as f64 * px,
            0,
            x_max,
            scheme::scheme().lane_min_gap_px,
        );
        let _ = write!(
            h,
            "<div class=\"lane\" data-strategy=\"{}\" data-ticks=\"{}\"><b><span class=\"sw\" style=\"background:{}\"></span>{}</b>: ",
            escape(label),
            thinned.len(),
            color.hex(),
            escape(label)
        );
        if thinned.is_empty() {
            h.push_str("no compaction, no per-call pruning.</div>\n");
            continue;
        }
        h.push_str("<ul class=\"lane\">");
        for t in thinned.iter().take(MAX_LISTED_TICKS) {
            let _ = write!(h, "<li>{}</li>", escape(&scheme::describe(t)));
        }
        if thinned.len() > MAX_LISTED_TICKS {
            let _ = write!(
                h,
                "<li>… and {} more marks</li>",
                fmt_tokens((thinned.len() - MAX_LISTED_TICKS) as u64)
            );
        }
        h.push_str("</ul></div>\n");
    }
}

/// What filled each agent's context, as stacked areas over its calls, with each band's colour
/// and its largest size.
fn composition_section(h: &mut String, comp: &Composition, runs: &[(&str, &Run)]) -> Result<()> {
    let agents: &[String] = runs.first().map_or(&[], |r| &r.1.agents);
    h.push_str("<h2>What fills the context</h2>\n");
    let _ = write!(
        h,
        "<p class=\"note\">Per agent, each call's context as the log recorded it (the reconstruction, uncalibrated, counted with {}), by kind of content. The bands add up to the call's context. The calibrated overhead (system prompt and tool schemas the log does not hold) comes on top of every call, given per agent.</p>\n",
        escape(&comp.counter)
    );
    if comp.calls.iter().all(|c| c.is_none()) {
        h.push_str("<p class=\"bad\">The log holds usage only, no messages: what filled its contexts is unknown.</p>\n");
        return Ok(());
    }
    let opts = ChartOptions {
        width: 1200,
        panel_height: 300,
    };
    for (a, name) in agents.iter().enumerate() {
        let calls = scheme::calls_of(comp, a);
        if calls.is_empty() {
            continue;
        }
        let bands = scheme::agent_areas(comp, &calls, scheme::scheme().max_tools);
        let _ = write!(
            h,
            "<figure class=\"composition\" data-agent=\"{}\" data-bands=\"{}\" data-calls=\"{}\">\n",
            escape(name),
            bands.len(),
            calls.len()
        );
        let overhead = comp
            .overhead
            .get(a)
            .copied()
            .flatten()
            .map(|o| format!("; calibrated overhead {} tokens per call", fmt_tokens(o)))
            .unwrap_or_default();
        let title = format!(
            "agent {name}: what fills its context ({} calls)",
            fmt_tokens(calls.len() as u64)
        );
        let svg = chart::composition_chart(&calls, &bands, &title, Format::Svg, &opts)?;
        h.push_str(&String::from_utf8_lossy(&svg));
        let _ = write!(
            h,
            "\n<figcaption class=\"note\">Largest size of each band{}:</figcaption><ul class=\"bands\">",
            escape(&overhead)
        );
        for b in bands.iter().rev() {
            let _ = write!(
                h,
                "<li><span class=\"sw\" style=\"background:{}\"></span>{} {}</li>",
                b.color.hex(),
                escape(&b.label),
                fmt_tokens(b.own.iter().copied().max().unwrap_or(0))
            );
        }
        h.push_str("</ul></figure>\n");
    }
    Ok(())
}
