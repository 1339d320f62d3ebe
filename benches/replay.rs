//! Replay speed: a generated session of 1,000,000 messages through `none` and through the
//! `fixture.compact` strategy loaded from its shared library (the real plugin path), and the
//! per-call cost at 10k, 100k and 1M messages, which must not grow with the history.
//! Run with `cargo bench --bench replay` after `cargo build --release --workspace`.
//!
//! Only `replay::run_prepared` is timed: the session is generated, prepared (`Prepared::new`:
//! every message counted and scanned for facts, once per session and counter) and the plugin
//! library loaded before (each reported on its own line). The target is judged on the CPU time of the replaying
//! thread (what one core spends, DESIGN.md §9); wall time is printed beside it because on the
//! shared 2-core machine it also counts the time other processes held the core.
//! The digest (BLAKE3 of the run's JSON) shows that engine changes keep results identical.

use ctxlab::fmt::fmt_tokens;
use ctxlab::model::*;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Budget, Prepared, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use std::time::Instant;

mod common;

/// `messages` messages of one agent in turns of four: request, tool call, tool result, answer;
/// a call before the tool call and one before the answer (a call per two messages).
fn session(messages: usize) -> Session {
    common::session::session_of(messages, common::session::Shape::Tiny)
}

fn compact() -> StrategySpec {
    let mut reg = Registry::new();
    common::load_plugin(&mut reg, "ctxlab_fixture_compact");
    StrategySpec::Plugin {
        entry: reg
            .find("fixture.compact")
            .expect("fixture.compact")
            .clone(),
        params: serde_json::json!({ "trigger": 0.8, "summary_tokens": 2000 }),
    }
}

struct Timed {
    wall: f64,
    /// Thread CPU seconds; the wall time where schedstat is not available.
    cpu: f64,
    run: replay::Run,
}

fn time(s: &Session, prepared: &Prepared, spec: &StrategySpec) -> Timed {
    let mut o = ReplayOptions::new(tokens::counter("heuristic").expect("heuristic counter"));
    o.budget = Some(Budget {
        context_window: 100_000,
        max_output: 8_000,
        reserve: 0,
    });
    let c0 = common::thread_cpu();
    let t = Instant::now();
    let run = replay::run_prepared(s, prepared, spec.clone(), &o).expect("replay");
    let wall = t.elapsed().as_secs_f64();
    let cpu = match (c0, common::thread_cpu()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    Timed { wall, cpu, run }
}

/// The fastest of `runs` replays (CPU time): the one least disturbed by the shared machine.
fn best(s: &Session, prepared: &Prepared, spec: &StrategySpec, runs: usize) -> Timed {
    (0..runs.max(1))
        .map(|_| time(s, prepared, spec))
        .min_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .expect("at least one run")
}

fn digest(run: &replay::Run) -> String {
    let json = serde_json::to_vec(run).expect("a run serializes");
    blake3::hash(&json).to_hex()[..12].to_string()
}

fn main() {
    // `cargo bench` passes --bench; a filter argument is not supported.
    println!(
        "replay of generated sessions (one core, heuristic counter, window 100,000); {}",
        common::machine()
    );
    let t = Instant::now();
    let compact = compact();
    let load = format!(
        "plugin library load (fixture.compact, not timed below): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    println!("{load}");
    println!(
        "{:>10} {:>9} {:>22} {:>8} {:>8} {:>14} {:>13} {:>11} {:>13}",
        "messages",
        "calls",
        "strategy",
        "cpu s",
        "wall s",
        "ns/call (cpu)",
        "target",
        "compactions",
        "digest"
    );
    let mut per_call = Vec::new();
    let mut generated = Vec::new();
    let mut md = format!(
        "## Replay (benches/replay.rs)\n\nGenerated single-agent session (benches/common/session.rs, `Tiny`: request, tool call, tool result, answer; a call per two messages), heuristic counter, window 100,000, release build; {}. Only `replay::run_prepared` is timed: session generation, the plugin load and the session's preparation (`Prepared::new`: every message counted and scanned for facts, once per session and counter, shared by every run of it) are reported apart; *cpu s* is the replaying thread's CPU time (best of 3 below 1M messages, one run at 1M), *wall s* the elapsed time of the same run, which on this shared machine also counts other processes. The digest (BLAKE3 of the run's JSON) is the same for every engine version that keeps results identical. Target (DESIGN.md §9): 1,000,000 messages in ≤ 1 s per strategy on one core; per-call cost flat from 10k to 1M.\n\n{load}.\n\n| messages | calls | strategy | cpu s | wall s | ns/call (cpu) | compactions | digest |\n|---:|---:|---|---:|---:|---:|---:|---|\n",
        common::machine()
    );
    // CTXLAB_BENCH_SIZES=100000 (comma-separated) narrows the run for profiling.
    let sizes: Vec<usize> = std::env::var("CTXLAB_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    for &n in &sizes {
        let t = Instant::now();
        let s = session(n);
        let gen = t.elapsed().as_secs_f64();
        let line = format!(
            "{} messages generated in {gen:.3} s (not timed)",
            fmt_tokens(n as u64)
        );
        println!("{line}");
        generated.push(line);
        // Counting and fact scanning happen once per session and counter (what `compare`,
        // `tune` and the app share across runs); timed apart from the replays.
        let counter = tokens::counter("heuristic").expect("heuristic counter");
        let c0 = common::thread_cpu();
        let t = Instant::now();
        let prepared = Prepared::new(&s, &*counter);
        let wall = t.elapsed().as_secs_f64();
        let cpu = match (c0, common::thread_cpu()) {
            (Some(a), Some(b)) => b - a,
            _ => wall,
        };
        let line = format!(
            "{} messages prepared (counted and scanned for facts, once per session) in {cpu:.3} s cpu, {wall:.3} s wall",
            fmt_tokens(n as u64)
        );
        println!("{line}");
        generated.push(line);
        // CTXLAB_BENCH_ONLY=none (or fixture.compact) runs one strategy, for profiling.
        let only = std::env::var("CTXLAB_BENCH_ONLY").ok();
        for (name, spec) in [
            ("none", StrategySpec::None),
            ("fixture.compact (.so)", compact.clone()),
        ] {
            if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
                continue;
            }
            let r = best(&s, &prepared, &spec, if n < 1_000_000 { 3 } else { 1 });
            let ns = r.cpu * 1e9 / s.calls.len() as f64;
            per_call.push((n, name, ns));
            let d = digest(&r.run);
            md.push_str(&format!(
                "| {} | {} | {name} | {:.3} | {:.3} | {ns:.0} | {} | `{d}` |\n",
                fmt_tokens(n as u64),
                fmt_tokens(s.calls.len() as u64),
                r.cpu,
                r.wall,
                r.run.compactions.len()
            ));
            let target = match (n == 1_000_000, r.cpu <= 1.0) {
                (false, _) => "",
                (true, true) => "≤ 1 s ok",
                (true, false) => "≤ 1 s MISSED",
            };
            println!(
                "{:>10} {:>9} {:>22} {:>8.3} {:>8.3} {:>14.0} {:>13} {:>11} {:>13}",
                fmt_tokens(n as u64),
                fmt_tokens(s.calls.len() as u64),
                name,
                r.cpu,
                r.wall,
                ns,
                target,
                r.run.compactions.len(),
                d
            );
        }
    }
    md.push_str(&format!("\n{}.\n", generated.join("; ")));
    for name in ["none", "fixture.compact (.so)"] {
        let v: Vec<f64> = per_call
            .iter()
            .filter(|p| p.1 == name)
            .map(|p| p.2)
            .collect();
        if v.len() < 3 {
            continue;
        }
        let line = format!(
            "{name}: per-call cost 1M / 10k = {:.2} (no growth with history length when ≈ 1)",
            v[2] / v[0]
        );
        println!("{line}");
        md.push_str(&format!("\n{line}\n"));
    }
    // `make bench` (scripts/bench.sh) gathers these fragments into docs/benchmarks.md.
    common::write_fragment("replay", &md);
}
