//! Replay speed of every built-in system plugin (DESIGN.md §9: a 1,000,000-message session through
//! any built-in plugin in ≤ 1 s, one core, release). Each strategy is loaded as the real shared
//! library from the cargo target folder through the plugin `Registry`, with its defaults and with
//! the settings a user is likely to tune, and replays generated tool-heavy sessions of 10k, 100k
//! and 1M messages (benches/common/session.rs). Per-call cost must not grow with the history.
//!
//! Run with `cargo bench --bench plugins` after `cargo build --release --workspace`.
//! `CTXLAB_BENCH_SIZES=100000` (comma-separated) narrows the sizes; `CTXLAB_BENCH_ONLY=librechat`
//! keeps the configurations whose label contains the text; `CTXLAB_BENCH_EVENTS=1` prints how
//! many events of each code every run had (to see which rules fired).

mod common;

use common::session::{session_of, Shape};
use common::{machine, thread_cpu, write_fragment};
use ctxlab::fmt::fmt_tokens;
use ctxlab::model::Session;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Budget, Prepared, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use serde_json::{json, Value};
use std::time::Instant;

const PLUGINS: &[&str] = &["fuseraft", "phi_core", "fim_one", "librechat", "codetether"];
/// A size is skipped when the smaller size's time, scaled by the message count, projects a run
/// longer than this: the figure would only say "missed" after many minutes.
const SKIP_PROJECTED_SECS: f64 = 60.0;

struct Config {
    label: &'static str,
    strategy: &'static str,
    params: Value,
    window: u64,
}

fn configs() -> Vec<Config> {
    let c = |label, strategy, params, window| Config {
        label,
        strategy,
        params,
        window,
    };
    vec![
        c(
            "fuseraft defaults",
            "fuseraft.compaction",
            json!({}),
            200_000,
        ),
        c(
            "fuseraft ContextWindow filters",
            "fuseraft.compaction",
            json!({
                "MaxTailMessages": 60,
                "ContextCapFraction": 0.8,
                "MaxToolResultChars": 2000,
                "ToolResultCharOverrides": {"bash": 4000},
                "MaxReplayChars": 1000,
            }),
            200_000,
        ),
        c(
            "fuseraft MaxTurnAge + in-turn window",
            "fuseraft.compaction",
            json!({
                "MaxTurnAge": 8,
                "MaxInTurnToolPairs": 2,
                "TriggerTurnCount": 200,
                "KeepRecentTurns": 20,
            }),
            200_000,
        ),
        c(
            "fuseraft window mode",
            "fuseraft.compaction",
            json!({"Mode": "window", "TokenBudget": 60000}),
            200_000,
        ),
        c("phi-core defaults", "phi-core.context", json!({}), 200_000),
        c(
            "fim-one defaults",
            "fim-one.context-guard",
            json!({}),
            200_000,
        ),
        c(
            "librechat summarization on",
            "librechat.agents",
            json!({}),
            200_000,
        ),
        c(
            "librechat summarization off",
            "librechat.agents",
            json!({"enabled": false}),
            200_000,
        ),
        c(
            "librechat off + contextPruning",
            "librechat.agents",
            json!({"enabled": false, "contextPruning.enabled": true,
                   "contextPruning.minPrunableToolChars": 1000}),
            200_000,
        ),
        c(
            "librechat on, token_ratio 0.9",
            "librechat.agents",
            json!({"trigger.type": "token_ratio", "trigger.value": 0.9}),
            200_000,
        ),
        c(
            "codetether defaults",
            "codetether.compression",
            json!({}),
            200_000,
        ),
        c(
            "codetether 32k window",
            "codetether.compression",
            json!({}),
            32_000,
        ),
    ]
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    for p in PLUGINS {
        common::load_plugin(&mut reg, &format!("ctxlab_plugin_{p}"));
    }
    reg
}

struct Row {
    label: &'static str,
    messages: usize,
    calls: usize,
    /// CPU seconds of the replaying thread; `None`: skipped.
    secs: Option<f64>,
    wall: f64,
    /// What the skipped run was projected to take.
    projected: Option<f64>,
    engine_secs: f64,
    compactions: usize,
    events: usize,
    /// BLAKE3 of the run's JSON (first 12 hex digits): the same for every version of the host
    /// and plugins that keeps the results identical.
    digest: String,
}

impl Row {
    fn us_per_call(&self) -> Option<f64> {
        self.secs.map(|s| s * 1e6 / self.calls as f64)
    }
}

/// (thread CPU seconds, wall seconds, run): only `replay::run_prepared` is timed (the session is
/// prepared once per size, as `compare` and `tune` do, and that time is reported apart).
fn replay(
    s: &Session,
    prepared: &Prepared,
    spec: StrategySpec,
    window: u64,
) -> (f64, f64, replay::Run) {
    let mut o = ReplayOptions::new(tokens::counter("heuristic").expect("heuristic counter"));
    o.budget = Some(Budget {
        context_window: window,
        max_output: 8_000,
        reserve: 0,
    });
    let c0 = thread_cpu();
    let t = Instant::now();
    let run = replay::run_prepared(s, prepared, spec, &o)
        .unwrap_or_else(|e| panic!("replay failed: {e}"));
    let wall = t.elapsed().as_secs_f64();
    let cpu = thread_cpu().zip(c0).map_or(wall, |(b, a)| b - a);
    (cpu, wall, run)
}

fn main() {
    let reg = registry();
    let sizes: Vec<usize> = std::env::var("CTXLAB_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let only = std::env::var("CTXLAB_BENCH_ONLY").unwrap_or_default();
    let configs: Vec<Config> = configs()
        .into_iter()
        .filter(|c| c.label.contains(only.as_str()))
        .collect();
    println!("built-in plugins on generated tool-heavy sessions (one core, heuristic counter)");
    println!(
        "{:<38} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>6} {:>8} {:>12} {:>12}",
        "strategy",
        "messages",
        "calls",
        "cpu s",
        "wall s",
        "µs/call",
        "engine s",
        "comp.",
        "events",
        "target",
        "digest"
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut prepare_secs = Vec::new();
    for &n in &sizes {
        let s = session_of(n, Shape::ToolHeavy);
        let c0 = thread_cpu();
        let t = Instant::now();
        let prepared = Prepared::new(&s, &*tokens::counter("heuristic").expect("heuristic"));
        let wall = t.elapsed().as_secs_f64();
        let cpu = thread_cpu().zip(c0).map_or(wall, |(b, a)| b - a);
        prepare_secs.push((n, cpu));
        println!(
            "{:<38} {:>10} {:>8} {:>9.3} {:>9.3}",
            "(preparation, once per session)",
            fmt_tokens(n as u64),
            fmt_tokens(s.calls.len() as u64),
            cpu,
            wall
        );
        // The engine alone (no strategy) on the same session and window, for the plugin's share.
        let (engine_secs, _, _) = replay(&s, &prepared, StrategySpec::None, 200_000);
        println!(
            "{:<38} {:>10} {:>8} {:>9.3} {:>9.2}",
            "(engine alone: none)",
            fmt_tokens(n as u64),
            fmt_tokens(s.calls.len() as u64),
            engine_secs,
            engine_secs * 1e6 / s.calls.len() as f64
        );
        for c in &configs {
            let projected = rows
                .iter()
                .rev()
                .find(|r| r.label == c.label && r.secs.is_some())
                .and_then(|r| r.secs.map(|t| t * n as f64 / r.messages as f64));
            let slow_before = projected.is_some_and(|t| t > SKIP_PROJECTED_SECS);
            let entry = reg
                .find(c.strategy)
                .unwrap_or_else(|| panic!("{} is not in the built-in plugins", c.strategy))
                .clone();
            let row = if slow_before {
                Row {
                    label: c.label,
                    messages: n,
                    calls: s.calls.len(),
                    secs: None,
                    wall: 0.0,
                    projected,
                    engine_secs,
                    compactions: 0,
                    events: 0,
                    digest: String::new(),
                }
            } else {
                let spec = StrategySpec::Plugin {
                    entry,
                    params: c.params.clone(),
                };
                let (secs, wall, run) = replay(&s, &prepared, spec, c.window);
                if std::env::var_os("CTXLAB_BENCH_EVENTS").is_some() {
                    let mut codes = std::collections::BTreeMap::<&str, usize>::new();
                    for e in &run.events {
                        *codes.entry(e.code.as_str()).or_default() += 1;
                    }
                    println!("  events of {}: {codes:?}", c.label);
                }
                Row {
                    label: c.label,
                    messages: n,
                    calls: s.calls.len(),
                    secs: Some(secs),
                    wall,
                    projected: None,
                    engine_secs,
                    compactions: run.compactions.len(),
                    events: run.events.len(),
                    digest: digest(&run),
                }
            };
            println!(
                "{:<38} {:>10} {:>8} {:>9} {:>9.3} {:>9} {:>9.3} {:>6} {:>8} {:>12} {:>12}",
                row.label,
                fmt_tokens(n as u64),
                fmt_tokens(row.calls as u64),
                row.secs.map_or_else(
                    || format!("~{:.0}?", row.projected.unwrap_or(0.0)),
                    |t| format!("{t:.3}")
                ),
                row.wall,
                row.us_per_call().map_or("-".into(), |u| format!("{u:.2}")),
                row.engine_secs,
                fmt_tokens(row.compactions as u64),
                fmt_tokens(row.events as u64),
                verdict(&row),
                row.digest
            );
            rows.push(row);
        }
    }
    write_fragment("plugins", &markdown(&rows, &configs, &sizes, &prepare_secs));
}

fn digest(run: &replay::Run) -> String {
    let json = serde_json::to_vec(run).expect("a run serializes");
    blake3::hash(&json).to_hex()[..12].to_string()
}

fn verdict(r: &Row) -> &'static str {
    match (r.messages == 1_000_000, r.secs) {
        (false, _) => "",
        (true, Some(t)) if t <= 1.0 => "≤ 1 s ok",
        (true, None) => "≤ 1 s MISSED (projected)",
        _ => "≤ 1 s MISSED",
    }
}

fn markdown(
    rows: &[Row],
    configs: &[Config],
    sizes: &[usize],
    prepare_secs: &[(usize, f64)],
) -> String {
    let mut s = String::from("## Replay through the built-in plugins\n\n");
    s.push_str(&format!(
        "Each system plugin loaded from its release shared library through the plugin registry, \
         replaying generated tool-heavy sessions of one agent (benches/common/session.rs: requests \
         of 1–4 tool round trips, results of 120–2,500 chars with one in 40 of 12,000 and one in \
         400 of 60,000, a model call before every assistant message), heuristic counter, 8,000 \
         output tokens; {}. One run per cell; figures are CPU seconds of the replaying thread \
         (µs per call in brackets), only `replay::run_prepared` timed: the session is prepared \
         (every message counted and scanned for facts) once per size, as `compare` and `tune` \
         do, and that time is given below the table. *Engine alone* is the same replay \
         with no strategy: most of each figure is the engine's. A size whose time, projected from \
         the smaller size, exceeds {SKIP_PROJECTED_SECS:.0} s is skipped and its projection shown. \
         Per-call cost must stay flat from 10k to 1M messages. Target (DESIGN.md §9): 1,000,000 \
         messages in ≤ 1 s.\n\n",
        machine()
    ));
    s.push_str("| strategy | settings | window |");
    for n in sizes {
        s.push_str(&format!(" {} msgs: s (µs/call) |", fmt_tokens(*n as u64)));
    }
    s.push_str(" compactions (largest size) | target |\n|---|---|---:|");
    for _ in sizes {
        s.push_str("---:|");
    }
    s.push_str("---:|---|\n");
    for c in configs {
        s.push_str(&format!(
            "| {} | `{}` | {} |",
            c.label,
            if c.params.as_object().is_some_and(|o| o.is_empty()) {
                "defaults".to_string()
            } else {
                c.params.to_string()
            },
            fmt_tokens(c.window)
        ));
        let mine: Vec<&Row> = rows.iter().filter(|r| r.label == c.label).collect();
        for r in &mine {
            match (r.secs, r.us_per_call()) {
                (Some(t), Some(u)) => s.push_str(&format!(" {t:.3} ({u:.2}) |")),
                _ => s.push_str(&format!(
                    " skipped: projected {:.0} |",
                    r.projected.unwrap_or(0.0)
                )),
            }
        }
        let last = mine.last();
        s.push_str(&format!(
            " {} | {} |\n",
            last.map_or("-".into(), |r| fmt_tokens(r.compactions as u64)),
            last.map_or("", |r| verdict(r))
        ));
    }
    let engine: Vec<String> = sizes
        .iter()
        .filter_map(|n| rows.iter().find(|r| r.messages == *n))
        .map(|r| {
            format!(
                "{} messages {:.3} s ({:.1} µs/call)",
                fmt_tokens(r.messages as u64),
                r.engine_secs,
                r.engine_secs * 1e6 / r.calls as f64
            )
        })
        .collect();
    s.push_str(&format!(
        "\nEngine alone (no strategy, 200,000 window): {}.\n",
        engine.join(", ")
    ));
    s.push_str(
        "\nA compaction is one edit op a decision applies, not one compacting call: phi-core \
         compacts at about one call in 40 here, and each time level 1 cuts every tool output \
         over its line limit (re-cutting its own earlier cuts once, as phi-core 0.15.2 does), \
         one Truncate, Mask or DropResults op per message, so its count is near one per call.\n",
    );
    let prep: Vec<String> = prepare_secs
        .iter()
        .map(|(n, t)| format!("{} messages {t:.3} s", fmt_tokens(*n as u64)))
        .collect();
    s.push_str(&format!(
        "\nPreparation (once per session and counter, not in the figures above): {}.\n",
        prep.join(", ")
    ));
    s
}
