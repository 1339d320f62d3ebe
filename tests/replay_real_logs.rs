//! `recorded` reconstructs the context real logs really had: replayed per-call input tokens match
//! the recorded usage within the calibration error `inspect` reports, before and after each
//! recorded compaction; `none` does the same on logs without compactions.
//! Needs ../shared/real-logs beside the checkout; fails loudly when it is missing.

use ctxlab::model::Session;
use ctxlab::replay::{self, ReplayOptions, Run, StrategySpec};
use ctxlab::tokens::{self, Calibration};

mod real_logs;
use real_logs::real;

fn load(rel: &str) -> Session {
    let mut s = ctxlab::formats::load(&real(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(s.len(), 1, "{rel}: one session");
    s.remove(0)
}

fn replay(s: &Session, spec: StrategySpec) -> (Run, Calibration) {
    let counter = tokens::counter("heuristic").unwrap();
    let cal = tokens::calibrate_session(s, counter.as_ref()).expect("the log records usage");
    let mut o = ReplayOptions::new(counter);
    o.calibration = Some(cal.clone());
    // Codex logs name models newer than the table may know; the window does not change counts.
    o.budget = Some(replay::Budget {
        context_window: 400_000,
        max_output: 32_000,
        reserve: 0,
    });
    (replay::run(s, spec, &o).unwrap(), cal)
}

fn ape(sample: &replay::Sample) -> f64 {
    let rec = sample.recorded.unwrap().context_tokens() as f64;
    (sample.input_tokens as f64 - rec).abs() / rec * 100.0
}

/// Per-call errors of the replay are the calibration's: same mean, same p95, and the calls on
/// both sides of each recorded compaction are within the p95 (plus one point of slack for the
/// rounding of the fit).
fn check(
    rel: &str,
    spec: StrategySpec,
    expect_compactions: bool,
    max_mean_ape: f64,
    after_slack: f64,
) {
    let s = load(rel);
    let (run, cal) = replay(&s, spec);
    let r = run.recorded.as_ref().expect("recorded usage");
    assert!(
        (r.input_mean_ape - cal.mean_ape).abs() < 0.05,
        "{rel}: replay error {} vs calibration {}",
        r.input_mean_ape,
        cal.mean_ape
    );
    assert!(
        r.input_p95_ape <= cal.p95_ape + 0.05,
        "{rel}: p95 {} vs {}",
        r.input_p95_ape,
        cal.p95_ape
    );
    assert!(
        cal.mean_ape < max_mean_ape,
        "{rel}: the reconstruction is off by {} % on average",
        cal.mean_ape
    );
    assert_eq!(run.metrics.split_tool_pairs, 0, "{rel}");
    assert_eq!(!s.compactions.is_empty(), expect_compactions, "{rel}");
    for c in &run.compactions {
        let after = run
            .samples
            .iter()
            .find(|x| x.call >= c.call && x.agent == c.agent && x.recorded.is_some());
        let before = run
            .samples
            .iter()
            .rev()
            .find(|x| x.call < c.call && x.agent == c.agent && x.recorded.is_some());
        for (x, slack) in [(before, 1.0), (after, after_slack)] {
            let Some(x) = x else { continue };
            assert!(
                ape(x) <= cal.p95_ape.max(cal.mean_ape * 3.0) + slack,
                "{rel}: call {} next to the compaction at call {}: {:.1} % off (p95 {:.1} %)",
                x.call,
                c.call,
                ape(x),
                cal.p95_ape
            );
        }
        // The recorded compaction really shrank the context.
        if let (Some(b), Some(a)) = (before, after) {
            assert!(
                a.input_tokens < b.input_tokens,
                "{rel}: call {} did not shrink",
                a.call
            );
        }
    }
}

/// After its compaction Claude Code re-attaches what the agent had open (the plan file, recently
/// read files) without writing it to the log: the first call after the boundary carries ~6k raw
/// tokens the replay cannot see, so that call is off by up to 30 % (measured: 26.6 %). The calls
/// before the boundary are held to the calibration's p95.
#[test]
fn claude_code_with_a_compaction() {
    check(
        "claude-code_vr-forest",
        StrategySpec::Recorded,
        true,
        5.0,
        30.0,
    );
}

#[test]
fn claude_code_without_compaction_recorded_and_none_agree() {
    check(
        "claude-code_fundwise/claude-session.jsonl",
        StrategySpec::Recorded,
        false,
        5.0,
        1.0,
    );
    check(
        "claude-code_fundwise/claude-session.jsonl",
        StrategySpec::None,
        false,
        5.0,
        1.0,
    );
}

/// The heuristic counter fits this Codex log loosely (inspect reports 11.8 % mean error): the
/// replay must reproduce exactly that error, not better or worse.
#[test]
fn codex() {
    let s = load("codex-cli_gildore-arena/codex-session.jsonl");
    check(
        "codex-cli_gildore-arena/codex-session.jsonl",
        StrategySpec::Recorded,
        !s.compactions.is_empty(),
        15.0,
        1.0,
    );
}

#[test]
fn pi_with_its_compaction() {
    let s = load("pi-agent_pi-mono/session.jsonl");
    check(
        "pi-agent_pi-mono/session.jsonl",
        StrategySpec::Recorded,
        !s.compactions.is_empty(),
        5.0,
        1.0,
    );
}

/// Gemini CLI records the whole prompt of each call (`tokens.input`, cached included): the
/// reconstruction is calibrated on it like the others.
#[test]
fn gemini_cli() {
    check(
        "gemini-cli_entire-cli/ab/2b9748b105/0/full.jsonl",
        StrategySpec::Recorded,
        false,
        5.0,
        1.0,
    );
}

/// A complete Cline task folder: the history is what Cline sent (text tool results included), the
/// UI log's `api_req_started` the usage of each request.
#[test]
fn cline_task_folder() {
    check(
        "cline_online-card-architecture/exported_task_1769064454592",
        StrategySpec::Recorded,
        false,
        5.0,
        1.0,
    );
}

/// The OpenCode export: the reconstruction is calibrated on every step's usage. The reasoning
/// parts are the summaries Anthropic returns while the context holds the full thinking, so each
/// reply is sized by its step's recorded output (13.7 % mean before, 0.7 % now; held closely by
/// tests/fidelity_real_logs.rs).
#[test]
fn opencode_export() {
    check(
        "opencode_pfm-categorization/opencode-session.json",
        StrategySpec::Recorded,
        false,
        1.5,
        1.0,
    );
}
