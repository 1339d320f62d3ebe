//! Replay speed: a generated session of 1,000,000 messages through `none` and through the
//! `fixture.compact` strategy loaded from its shared library (the real plugin path), and the
//! per-call cost at 10k, 100k and 1M messages, which must not grow with the history.
//! Run with `cargo bench --bench replay` after `cargo build --release --workspace`.

use ctxlab::model::*;
use ctxlab::plugin_host::{checkout_dir, Registry};
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use std::time::Instant;

/// `messages` messages of one agent in turns of four: request, tool call, tool result, answer;
/// a call before the tool call and one before the answer (a call per two messages).
fn session(messages: usize) -> Session {
    let mut s = Session {
        id: format!("bench-{messages}"),
        ..Session::default()
    };
    let a = s.agent_index("main");
    let msg = |role, parts| Message {
        agent: a,
        role,
        parts,
        timestamp: None,
        flags: MessageFlags::default(),
        source: SourcePos::default(),
    };
    let call = |end| Call {
        agent: a,
        context_end: end,
        reply: Some(end),
        usage: None,
        model: None,
        timestamp: None,
        request_id: None,
        source: SourcePos::default(),
    };
    s.messages.reserve(messages);
    let mut i = 0;
    while s.messages.len() < messages {
        let id = format!("toolu_{i}");
        s.messages.push(msg(
            Role::User,
            vec![Part::Text {
                text: format!(
                    "Check src/mod_{}.rs, error E{:04} at line {}",
                    i % 97,
                    i % 9973,
                    i % 1000
                ),
            }],
        ));
        s.calls.push(call(s.messages.len()));
        s.messages.push(msg(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "read".into(),
                args: format!("{{\"path\":\"src/mod_{}.rs\"}}", i % 97),
            }],
        ));
        s.messages.push(msg(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: format!("fn handler_{}() -> u32 {{ {} }}", i % 97, i),
                is_error: false,
            }],
        ));
        s.calls.push(call(s.messages.len()));
        s.messages.push(msg(
            Role::Assistant,
            vec![Part::Text {
                text: format!("handler_{} in src/mod_{}.rs returns {}.", i % 97, i % 97, i),
            }],
        ));
        i += 1;
    }
    // The last call's reply may be cut off by the length.
    s.calls.retain(|c| c.context_end < s.messages.len());
    s
}

fn compact() -> StrategySpec {
    let exe = std::env::current_exe().expect("bench binary path");
    let dir = checkout_dir(&exe).expect("bench binary inside a cargo target folder");
    let lib = dir.join(format!(
        "{}ctxlab_fixture_compact{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        lib.is_file(),
        "{} is missing: run `cargo build --release --workspace` first (`make bench` does it)",
        lib.display()
    );
    let mut reg = Registry::new();
    reg.load_path(&lib).unwrap_or_else(|r| panic!("{r}"));
    StrategySpec::Plugin {
        entry: reg
            .find("fixture.compact")
            .expect("fixture.compact")
            .clone(),
        params: serde_json::json!({ "trigger": 0.8, "summary_tokens": 2000 }),
    }
}

fn time(s: &Session, spec: StrategySpec) -> (f64, replay::Run) {
    let mut o = ReplayOptions::new(tokens::counter("heuristic").unwrap());
    o.budget = Some(Budget {
        context_window: 100_000,
        max_output: 8_000,
        reserve: 0,
    });
    let t = Instant::now();
    let run = replay::run(s, spec, &o).expect("replay");
    (t.elapsed().as_secs_f64(), run)
}

fn main() {
    // `cargo bench` passes --bench; a filter argument is not supported.
    println!("replay of generated sessions (one core, heuristic counter, window 100,000)");
    println!(
        "{:>10} {:>9} {:>22} {:>10} {:>22} {:>10} {:>11}",
        "messages", "calls", "strategy", "seconds", "per call (ns)", "target", "compactions"
    );
    let mut per_call = Vec::new();
    let mut md = String::from(
        "## Replay (benches/replay.rs)\n\nGenerated single-agent session (request, tool call, tool result, answer; a call per two messages), heuristic counter, window 100,000, one core. Target: 1,000,000 messages in ≤ 1 s per strategy; per-call cost flat from 10k to 1M.\n\n| messages | calls | strategy | seconds | per call (ns) | compactions |\n|---:|---:|---|---:|---:|---:|\n",
    );
    // CTXLAB_BENCH_SIZES=100000 (comma-separated) narrows the run for profiling.
    let sizes: Vec<usize> = std::env::var("CTXLAB_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    for &n in &sizes {
        let s = session(n);
        for (name, spec) in [
            ("none", StrategySpec::None),
            ("fixture.compact (.so)", compact()),
        ] {
            let (secs, run) = time(&s, spec);
            let ns = secs * 1e9 / s.calls.len() as f64;
            per_call.push((n, name, ns));
            md.push_str(&format!(
                "| {} | {} | {name} | {secs:.3} | {ns:.0} | {} |\n",
                ctxlab_plugin_api::fmt_tokens(n as u64),
                ctxlab_plugin_api::fmt_tokens(s.calls.len() as u64),
                run.compactions.len()
            ));
            let target = if n == 1_000_000 {
                if secs <= 1.0 {
                    "≤ 1 s ok"
                } else {
                    "≤ 1 s MISSED"
                }
            } else {
                ""
            };
            println!(
                "{:>10} {:>9} {:>22} {:>10.3} {:>22.0} {:>10} {:>11}",
                ctxlab_plugin_api::fmt_tokens(n as u64),
                ctxlab_plugin_api::fmt_tokens(s.calls.len() as u64),
                name,
                secs,
                ns,
                target,
                run.compactions.len()
            );
        }
    }
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
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    let written =
        std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("replay.md"), md));
    if let Err(e) = written {
        eprintln!(
            "bench: cannot write {}: {e}",
            dir.join("replay.md").display()
        );
    }
}
