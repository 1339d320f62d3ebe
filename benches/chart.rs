//! Charts and tuning at scale: a 1,000,000-call run drawn to PNG and SVG (min-max decimated to
//! the pixel width; the SVG must stay under 200 KB), and the throughput of a parameter sweep
//! (runs per second) on a real Claude Code log, on one thread and on every core.

mod common;

use common::{best_of, machine, target_dir, write_fragment};
use ctxlab::chart::{self, decimate, ChartOptions, Format};
use ctxlab::compare::Settings;
use ctxlab::fmt::fmt_tokens;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Run, Sample, StrategySpec};
use ctxlab::tune::{self, Objective, Sweep, TuneOptions, TuneSession};
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::Path;

const REAL_LOG: &str = "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl";

fn real_log() -> std::path::PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/real-logs")
        .join(REAL_LOG);
    assert!(
        p.is_file(),
        "missing {}: ../shared/real-logs must sit beside the checkout",
        p.display()
    );
    p
}

/// A run of `n` calls of two agents, shaped like a long session with periodic compactions.
fn synthetic(base: &Run, n: usize) -> Run {
    let mut run = base.clone();
    run.agents = vec!["main".into(), "sub".into()];
    let mut cumulative = [0u64; 2];
    run.samples = (0..n)
        .map(|i| {
            let agent = usize::from(i % 7 == 0);
            let occupancy = 20_000 + (i % 40_000) as u64 * 3 + ((i * 7919) % 2_000) as u64;
            cumulative[agent] += occupancy;
            Sample {
                call: i,
                agent,
                timestamp: None,
                input_tokens: occupancy,
                raw_tokens: occupancy,
                pruned_tokens: 0,
                output_tokens: 200,
                messages: 10,
                cumulative_input: cumulative[agent],
                cumulative_since_compaction: cumulative[agent],
                cache_read: 0,
                cache_write: occupancy,
                cost_usd: 0.0,
                over_window: false,
                recorded: None,
                needed_facts: 0,
                recalled_lower: 0,
                recalled_upper: 0,
            }
        })
        .collect();
    run
}

fn plugins() -> Registry {
    let exe = std::env::current_exe().expect("bench executable");
    let dir = exe
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "deps"))
        .and_then(Path::parent)
        .expect("bench runs from target/<profile>/deps");
    let mut reg = Registry::new();
    let lib = dir.join(format!("{DLL_PREFIX}ctxlab_plugin_fuseraft{DLL_SUFFIX}"));
    reg.load_path(&lib).unwrap_or_else(|r| {
        panic!("{r}: run `cargo build --release --workspace` first (make bench does)")
    });
    reg
}

fn main() {
    let session = ctxlab::formats::load_file(&real_log()).expect("load the real log");
    let opts = Settings::default().options(&session).expect("options");
    let base = replay::run(&session, StrategySpec::None, &opts).expect("replay");
    let n = 1_000_000;
    let run = synthetic(&base, n);
    let copts = ChartOptions::default();

    let points: Vec<(f64, f64)> = run
        .samples
        .iter()
        .map(|s| (s.call as f64, s.input_tokens as f64))
        .collect();
    let (t_dec, dec) = best_of(5, || decimate::min_max(&points, 0.0, n as f64, 1090));
    let (t_png, png) = best_of(3, || {
        chart::run_chart(&run, &[], "bench", Format::Png, &copts).expect("png")
    });
    let (t_svg, svg) = best_of(3, || {
        chart::run_chart(&run, &[], "bench", Format::Svg, &copts).expect("svg")
    });
    let _ = std::fs::write(target_dir().join("bench-chart-1m.png"), &png);
    assert!(
        svg.len() <= 200 * 1024,
        "SVG of 1,000,000 points is {} bytes",
        svg.len()
    );

    let reg = plugins();
    let entry = reg
        .require("fuseraft.compaction")
        .expect("fuseraft")
        .clone();
    let sweeps = [
        Sweep::parse("TriggerTurnCount=12,15,20,25,30,40,50,60,80,100").expect("sweep"),
        Sweep::parse("KeepRecentTurns=4,10").expect("sweep"),
    ];
    let runs = 20.0;
    let sessions = [TuneSession {
        session: &session,
        opts: Settings::default().options(&session).expect("options"),
    }];
    let sweep = |threads| {
        let o = TuneOptions {
            objective: Objective::Cost,
            threads,
            ..Default::default()
        };
        tune::run(&sessions, &entry, &serde_json::json!({}), &sweeps, &o).expect("tune")
    };
    let (t1, r1) = best_of(2, || sweep(1));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (tn, rn) = best_of(2, || sweep(cores));
    assert_eq!(r1, rn, "the sweep is deterministic over threads");

    let mut s = String::from("## Charts and tuning (benches/chart.rs)\n\n");
    s.push_str(&format!(
        "{}. A run of {} calls (two agents) drawn at {}×{} per panel; the sweep is fuseraft.compaction \
         over TriggerTurnCount × KeepRecentTurns ({} runs, then one more replay that explains the best set) on the real Claude Code log `{REAL_LOG}` \
         ({} calls); runs/s counts the sweep's runs over the whole time. Targets (DESIGN.md §9): \
         1,000,000 points drawn without a visible stall; SVG ≤ 200 KB whatever the series length.\n\n",
        machine(),
        fmt_tokens(n as u64),
        copts.width,
        copts.panel_height,
        runs,
        fmt_tokens(session.calls.len() as u64)
    ));
    s.push_str("| what | time | result |\n|---|---:|---|\n");
    s.push_str(&format!(
        "| min-max decimation of 1,000,000 points to 1,090 columns | {:.1} ms | {} points kept |\n",
        t_dec.as_secs_f64() * 1e3,
        fmt_tokens(dec.len() as u64)
    ));
    s.push_str(&format!(
        "| chart of 1,000,000 calls to PNG (cumulative + occupancy panels) | {:.0} ms | {} KB |\n",
        t_png.as_secs_f64() * 1e3,
        fmt_tokens(png.len() as u64 / 1024)
    ));
    s.push_str(&format!(
        "| chart of 1,000,000 calls to SVG (cumulative + occupancy panels) | {:.0} ms | {} KB (limit 200 KB) |\n",
        t_svg.as_secs_f64() * 1e3,
        fmt_tokens(svg.len() as u64 / 1024)
    ));
    s.push_str(&format!(
        "| tune sweep, 1 thread | {:.2} s | {:.1} runs/s |\n",
        t1.as_secs_f64(),
        runs / t1.as_secs_f64()
    ));
    s.push_str(&format!(
        "| tune sweep, {cores} threads | {:.2} s | {:.1} runs/s |\n",
        tn.as_secs_f64(),
        runs / tn.as_secs_f64()
    ));
    print!("{s}");
    write_fragment("chart", &s);
}
