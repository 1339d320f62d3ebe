//! `ctxlab replay`: replay each session of a log through one strategy and print its metrics.

use ctxlab::compare;
use ctxlab::fmt::fmt_tokens;
use ctxlab::replay::{self, Run};
use ctxlab::{Error, Result};
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A session log, or a folder of them.
    log: PathBuf,
    /// Strategy id (`ctxlab plugins` lists them), or a baseline: `none`, `recorded`.
    #[arg(long, short)]
    strategy: String,
    /// A parameter, `name=value` (value as JSON, else as text); repeatable, wins over --params.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Parameters from a TOML file of `name = value` lines.
    #[arg(long = "params", value_name = "FILE")]
    params_file: Option<PathBuf>,
    #[command(flatten)]
    replay: super::compare::ReplayFlags,
    /// Show only this agent (id) in the table and the series.
    #[arg(long)]
    agent: Option<String>,
    /// Print the run as JSON (metrics, events, compactions; the series with --series).
    #[arg(long)]
    json: bool,
    /// With --json: every call's decision, message by message (what the strategy saw, and which
    /// messages it kept, edited, dropped or summarized; text and tools on first appearance).
    #[arg(long, requires = "json")]
    decisions: bool,
    /// Write the per-call series as CSV to this file.
    #[arg(long, value_name = "FILE")]
    series: Option<PathBuf>,
    /// Write the chart (per-agent cumulative input and context occupancy) as PNG.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Write the chart as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let params = compare::parse_params(&args.params, args.params_file.as_deref())?;
    let spec = compare::strategy(&args.replay.registry()?, &args.strategy, params)?;
    let settings = args.replay.settings()?;
    let mut runs = Vec::new();
    for session in ctxlab::formats::load(&args.log)? {
        let mut opts = settings.options(&session)?;
        opts.record_decisions = args.decisions;
        let agent =
            match &args.agent {
                Some(id) => Some(session.agents.iter().position(|a| &a.id == id).ok_or_else(
                    || {
                        let known: Vec<&str> =
                            session.agents.iter().map(|a| a.id.as_str()).collect();
                        Error::Invalid(format!(
                            "no agent {id} in session {}; agents: {}",
                            session.id,
                            known.join(", ")
                        ))
                    },
                )?),
                None => None,
            };
        let fidelity = opts.calibration.as_ref().map(|c| (c.mean_ape, c.p95_ape));
        let run = replay::run(&session, spec.clone(), &opts)?;
        if let Some(path) = &args.series {
            let path = if runs.is_empty() {
                path.clone()
            } else {
                path.with_extension(format!("{}.csv", runs.len()))
            };
            let mut f = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
            replay::write_series_csv(&run, agent, &mut f).map_err(|e| Error::io(&path, e))?;
        }
        for (path, format) in [
            (&args.png, ctxlab::chart::Format::Png),
            (&args.svg, ctxlab::chart::Format::Svg),
        ] {
            if let Some(path) = path {
                // Several sessions in one log: one chart each, numbered like the series files.
                let path = match (runs.is_empty(), path.extension().and_then(|e| e.to_str())) {
                    (true, _) => path.clone(),
                    (false, ext) => {
                        path.with_extension(format!("{}.{}", runs.len(), ext.unwrap_or("")))
                    }
                };
                let title = format!(
                    "{} — {}",
                    ctxlab::naming::display_name(&session),
                    run.strategy
                );
                let parents: Vec<Option<usize>> = session.agents.iter().map(|a| a.parent).collect();
                let bytes =
                    ctxlab::chart::run_chart(&run, &parents, &title, format, &Default::default())?;
                ctxlab::chart::write(&path, &bytes)?;
            }
        }
        if !args.json {
            print!(
                "{}",
                table(
                    &run,
                    &ctxlab::naming::display_name(&session),
                    agent,
                    fidelity
                )
            );
        }
        runs.push((run, fidelity));
    }
    if args.json {
        let docs: Vec<Value> = runs
            .into_iter()
            .map(|(mut run, fidelity)| {
                if args.series.is_none() {
                    run.samples.clear();
                }
                let mut v = serde_json::to_value(&run).unwrap_or(Value::Null);
                if let (Some(o), Some((mean, p95))) = (v.as_object_mut(), fidelity) {
                    o.insert(
                        "fidelity".into(),
                        serde_json::json!({"mean_ape": mean, "p95_ape": p95}),
                    );
                }
                v
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({ "version": 1, "runs": docs }))
            .map_err(|e| Error::Invalid(format!("cannot write the run as JSON: {e}")))?;
        println!("{text}");
    }
    Ok(())
}

fn usd(x: f64) -> String {
    let cents = (x * 100.0).round() as u64;
    format!("${}.{:02}", fmt_tokens(cents / 100), cents % 100)
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{:.1} %", v * 100.0))
}

/// The human table of one run.
/// The run's metrics, under a header naming the session by `name` (`naming::display_name`).
fn table(run: &Run, name: &str, agent: Option<usize>, fidelity: Option<(f64, f64)>) -> String {
    let m = &run.metrics;
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    row("calls", fmt_tokens(m.calls));
    row("total input tokens", fmt_tokens(m.total_input_tokens));
    row("total output tokens", fmt_tokens(m.total_output_tokens));
    row("peak context", fmt_tokens(m.peak_context));
    row("p95 context", fmt_tokens(m.p95_context));
    row("calls over the window", fmt_tokens(m.calls_over_window));
    for (kind, st) in &m.compactions {
        row(
            &format!(
                "compactions: {}",
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            ),
            format!(
                "{} ({} → {} tokens)",
                fmt_tokens(st.count),
                fmt_tokens(st.tokens_before),
                fmt_tokens(st.tokens_after)
            ),
        );
    }
    row(
        "compaction overhead tokens",
        fmt_tokens(m.compaction_overhead_tokens),
    );
    row("silently lost tokens", fmt_tokens(m.lost_tokens));
    row(
        "cache read / write tokens",
        format!(
            "{} / {}",
            fmt_tokens(m.cache_read_tokens),
            fmt_tokens(m.cache_write_tokens)
        ),
    );
    row(
        "cost",
        format!(
            "{} (summarizer {})",
            usd(m.cost.total_usd),
            usd(m.cost.summarizer_usd)
        ),
    );
    row(
        "needed-fact recall",
        format!(
            "{} – {} of {} facts",
            pct(m.recall.lower),
            pct(m.recall.upper),
            fmt_tokens(m.recall.needed)
        ),
    );
    row("pinned violations", fmt_tokens(m.pinned_violations));
    row("split tool pairs", fmt_tokens(m.split_tool_pairs));
    if let Some(r) = run.recorded.as_ref().filter(|_| run.estimate_only) {
        row("recorded output tokens", fmt_tokens(r.output_tokens));
        row("recorded input tokens", "not recorded (output only)".into());
    } else if let Some(r) = &run.recorded {
        row("recorded input tokens", fmt_tokens(r.input_tokens));
        row("recorded cost", usd(r.cost_usd));
        if let Some(d) = r.tool_cost_difference() {
            row(
                "cost the tool recorded",
                format!(
                    "{} on {} calls; ctxlab's prices give {} on them ({:+.1} %)",
                    usd(r.tool_cost_usd),
                    fmt_tokens(r.tool_cost_calls),
                    usd(r.cost_usd_on_tool_calls),
                    d * 100.0
                ),
            );
        }
        row(
            "cache reads: recorded / predicted",
            format!(
                "{} / {}",
                fmt_tokens(r.cache_read_tokens),
                fmt_tokens(r.predicted_cache_read_tokens)
            ),
        );
        // For `recorded` this is the reconstruction's error; for a strategy it is how far its
        // input departs from what the log recorded, not an error.
        let what = if run.strategy == "recorded" {
            "error"
        } else {
            "difference"
        };
        row(
            "replayed vs recorded input",
            format!(
                "mean {:.1} %, p95 {:.1} % {what}",
                r.input_mean_ape, r.input_p95_ape
            ),
        );
    }
    let mut out = format!(
        "session {name} — strategy {}{} — window {}, max output {}, counter {}\n",
        run.strategy,
        run.plugin
            .as_ref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default(),
        fmt_tokens(run.budget.context_window),
        fmt_tokens(run.budget.max_output),
        run.counter
    );
    // The id, for `--session`, as compare prints it.
    if name != run.session {
        out.push_str(&format!("id {}\n", run.session));
    }
    for a in &run.budget_assumed {
        out.push_str(&format!("budget: {a}\n"));
    }
    match fidelity {
        _ if run.estimate_only => out.push_str(&format!(
            "fidelity: {}\n",
            ctxlab::model::ESTIMATE_ONLY_NOTE
        )),
        Some((mean, p95)) => out.push_str(&format!(
            "fidelity: calibrated on the log's usage, estimate error mean {mean:.1} %, p95 {p95:.1} %\n"
        )),
        None => out.push_str("fidelity: unknown (the log records no usage; counts are uncalibrated)\n"),
    }
    let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    for (k, v) in rows {
        out.push_str(&format!("  {k:<w$}  {v}\n"));
    }
    if let Some(n) = m.cost.notice() {
        out.push_str(&format!("  note: {n}\n"));
    }
    // Per agent, when there are several (or one is asked for).
    let n = run.agents.len();
    if n > 1 || agent.is_some() {
        out.push_str("  per agent:\n");
        for (i, id) in run
            .agents
            .iter()
            .enumerate()
            .filter(|(i, _)| agent.map_or(true, |a| a == *i))
        {
            let s: Vec<_> = run.samples.iter().filter(|s| s.agent == i).collect();
            let Some(last) = s.last() else { continue };
            let peak = s.iter().map(|s| s.input_tokens).max().unwrap_or(0);
            out.push_str(&format!(
                "    {id}: {} calls, cumulative input {}, peak context {}\n",
                fmt_tokens(s.len() as u64),
                fmt_tokens(last.cumulative_input),
                fmt_tokens(peak)
            ));
        }
    }
    let notable: Vec<_> = run
        .events
        .iter()
        .filter(|e| agent.map_or(true, |a| e.agent == a))
        .filter(|e| e.kind != ctxlab_plugin_api::EventKind::Note)
        .collect();
    if !notable.is_empty() {
        out.push_str(&format!(
            "  events ({}):\n",
            fmt_tokens(notable.len() as u64)
        ));
        for e in notable.iter().take(20) {
            out.push_str(&format!(
                "    call {}: {} {}: {}\n",
                fmt_tokens(e.call as u64),
                e.kind.as_str(),
                e.code,
                e.message
            ));
        }
        if notable.len() > 20 {
            out.push_str(&format!(
                "    … {} more (--json shows all)\n",
                fmt_tokens(notable.len() as u64 - 20)
            ));
        }
    }
    out
}
