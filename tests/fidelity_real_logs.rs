//! Reconstruction fidelity on every real log with per-call input usage (issue #15): the
//! `recorded` baseline's calibrated input against the input the provider recorded, call by
//! call. Each log is held to the figure it reaches today (docs/tokens.md, "Fidelity on real
//! logs", has the table), so a change that loses content fails here. The target is a mean
//! error ≤ 1.5 % and a p95 ≤ 4 %; logs still above it say so in their row.
//! Needs ../shared/real-logs beside the checkout; fails loudly when it is missing.

use ctxlab::model::Session;
use ctxlab::replay::{self, ReplayOptions, StrategySpec};
use ctxlab::tokens;

mod real_logs;
use real_logs::real;

fn load(rel: &str) -> Vec<Session> {
    ctxlab::formats::load(&real(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

struct Figures {
    mean: f64,
    p95: f64,
    /// Worst error of the first call after a recorded compaction (0 when none).
    after_compaction: f64,
}

/// Replays `rel` through the `recorded` baseline, calibrated, and measures it per call.
fn measure(rel: &str, counter: &str) -> Figures {
    let sessions = load(rel);
    let counter = tokens::counter(counter).unwrap();
    let (mut errors, mut after) = (Vec::new(), 0.0f64);
    for s in &sessions {
        let Some(cal) = tokens::calibrate_session(s, counter.as_ref()) else {
            continue;
        };
        let mut o = ReplayOptions::new(counter.clone());
        o.calibration = Some(cal.clone());
        // The window does not change the baseline's counts.
        o.budget = Some(replay::Budget {
            context_window: 10_000_000,
            max_output: 0,
            reserve: 0,
        });
        let run = replay::run(s, StrategySpec::Recorded, &o).unwrap();
        let ape = |x: &replay::Sample| {
            let rec = x.recorded.unwrap().context_tokens() as f64;
            (x.input_tokens as f64 - rec).abs() / rec * 100.0
        };
        let scored: Vec<&replay::Sample> = run
            .samples
            .iter()
            .filter(|x| x.recorded.is_some_and(|u| u.context_tokens() > 0))
            .collect();
        errors.extend(scored.iter().map(|x| ape(x)));
        // The calibration scores the same calls the same way.
        let r = run.recorded.as_ref().expect("recorded usage");
        assert!(
            (r.input_mean_ape - cal.mean_ape).abs() < 0.05,
            "{rel}: replay {} vs calibration {}",
            r.input_mean_ape,
            cal.mean_ape
        );
        for c in s.compactions.iter().filter(|c| !c.inferred) {
            let first = scored
                .iter()
                .find(|x| x.agent == c.agent && s.calls[x.call].context_end > c.at_message);
            if let Some(x) = first {
                after = after.max(ape(x));
            }
        }
    }
    assert!(!errors.is_empty(), "{rel}: no call with recorded usage");
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    errors.sort_by(f64::total_cmp);
    let p95 = errors[((0.95 * errors.len() as f64).ceil() as usize).max(1) - 1];
    Figures {
        mean,
        p95,
        after_compaction: after,
    }
}

/// Holds `rel` to its figures (a little slack for float noise, none for lost content).
fn hold(rel: &str, counter: &str, mean: f64, p95: f64, after: f64) {
    let f = measure(rel, counter);
    eprintln!(
        "{rel} ({counter}): mean {:.2} %, p95 {:.2} %, first call after a compaction {:.2} %",
        f.mean, f.p95, f.after_compaction
    );
    assert!(f.mean <= mean, "{rel}: mean {:.2} % > {mean} %", f.mean);
    assert!(f.p95 <= p95, "{rel}: p95 {:.2} % > {p95} %", f.p95);
    assert!(
        f.after_compaction <= after,
        "{rel}: first call after a compaction {:.2} % off (> {after} %)",
        f.after_compaction
    );
}

/// Claude Code 2.1.37 re-attaches the files it touched last after a compaction without logging
/// them: those the log holds whole (a full Read, then the logged edits applied in order) are
/// rebuilt (3 of its 5, 3.4k counted tokens): 0.5 / 1.5 % → 0.4 / 1.2 %, the first call after
/// the compaction 26.6 → 11.7 % under. With them it sends the plan file, whose text the
/// `ExitPlanMode` of the first reply after the compaction carries: 0.4 / 1.1 %, 8.6 % under.
/// What it still lacks is not in the log: `chunk.js` and `day-night.js`, shown in pieces only
/// (40 of 223 lines, 261 of 544) (docs/tokens.md, "Fidelity on real logs").
#[test]
fn claude_code_2_1_37_streaming_snapshots() {
    hold(
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        "heuristic",
        0.5,
        1.11,
        8.7,
    );
}

#[test]
fn claude_code_2_1_121_signature_only_thinking() {
    hold(
        "claude-code_fundwise/claude-session.jsonl",
        "heuristic",
        0.4,
        1.0,
        0.0,
    );
}

/// 4.4 % mean, 8.3 % p95, 6.4 % on the first call after the compaction (overhead 6.3k, ratio
/// 2.80) → 0.9 / 1.8 / 2.4 % (overhead 21.5k, ratio 1.76, as fundwise's 1.68 on the same model):
/// each queued task notification costs ~100 tokens beyond its text (170 of them), and the
/// schemas of tools loaded by ToolSearch leave with their result at the compaction
/// (`preCompactDiscoveredTools` are not sent again), at ~1.15k per tool.
#[test]
fn claude_code_2_1_112_opus_4_7_with_compaction() {
    hold(
        "claude-code_posthog-impact/claude-session.jsonl",
        "heuristic",
        0.9,
        1.8,
        2.5,
    );
}

#[test]
fn claude_code_2_1_217_opus_5_manual_compaction() {
    hold(
        "claude-code_oh-my-posh/28/0a344253d3/0/full.jsonl",
        "heuristic",
        0.6,
        1.9,
        // The files re-attached after its compaction, sent as numbered Read results.
        2.0,
    );
}

#[test]
fn llm_trace_claude_code_capture() {
    hold(
        "llm-trace-proxy_wang0618/claude-code.jsonl",
        "heuristic",
        // 1.24 % with the session's ratio for its side agents, 1.15 % with the within-agent one.
        1.2,
        4.8,
        // Its "compactions" are restarts of side calls (a new conversation), not summaries.
        17.0,
    );
}

/// The default counter for a log of an OpenAI model is the exact o200k one.
#[test]
fn codex_logs_default_to_the_exact_o200k_counter() {
    for rel in [
        "codex-cli_gildore-arena/codex-session.jsonl",
        "codex-cli_raze/codex-session.jsonl",
    ] {
        for s in load(rel) {
            assert_eq!(tokens::default_counter_for(&s), "o200k", "{rel}");
        }
    }
    for s in load("claude-code_fundwise/claude-session.jsonl") {
        assert_eq!(tokens::default_counter_for(&s), "heuristic");
    }
}

/// Reasoning kept until the next user message and web searches estimated: 11.8 % → 0.5 %.
#[test]
fn codex_0_130_with_web_searches() {
    hold(
        "codex-cli_gildore-arena/codex-session.jsonl",
        "o200k",
        0.6,
        1.5,
        0.0,
    );
}

#[test]
fn codex_0_114_encrypted_reasoning() {
    hold("codex-cli_raze/codex-session.jsonl", "o200k", 0.1, 0.2, 0.0);
}

/// Two remote compactions whose encrypted summaries are estimated (the rollout has none).
#[test]
fn codex_0_142_with_two_compactions() {
    hold(
        "codex-cli_agentv/00/34f597b72d/1/full.jsonl",
        "o200k",
        0.4,
        0.7,
        1.0,
    );
}

/// Each reply weighs the output its usage recorded (pi writes usage once the response is
/// complete): 1.8 / 3.0 % → 0.9 / 1.7 %, overhead 1.1k → 2.6k (the first call recorded 4.4k).
#[test]
fn pi_with_its_compaction() {
    hold("pi-agent_pi-mono/session.jsonl", "heuristic", 1.0, 1.8, 1.0);
}

#[test]
fn llm_trace_openai_and_gemini_captures() {
    hold(
        "llm-trace-proxy_wang0618/nanobot.jsonl",
        "heuristic",
        1.3,
        3.1,
        4.5,
    );
    hold(
        "llm-trace-proxy_wang0618/adk-deepresearch.jsonl",
        "heuristic",
        // Signed Gemini thoughts kept until the next user message: 2.2 / 6.0 -> 0.2 / 0.9.
        0.3,
        1.0,
        100.0,
    );
}

// ---- Budget honesty (issue #15, item 5) -----------------------------------------------------

/// The `recorded` baseline with the budget ctxlab resolves on its own (log, model table, else
/// assumed from the log).
fn recorded_run(rel: &str) -> replay::Run {
    let s = load(rel).remove(0);
    let o = ReplayOptions::new(tokens::counter_for("auto", &s).unwrap());
    replay::run(&s, StrategySpec::Recorded, &o).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every call a log recorded was sent: the `recorded` baseline never shows one over the window,
/// whatever the budget's figures came from. pi's model-table limit (64k output) is lowered to
/// what its 185,952-token call left; the Codex logs' window is their input budget.
#[test]
fn the_recorded_baseline_is_never_over_the_window() {
    for rel in [
        "pi-agent_pi-mono/session.jsonl",
        "codex-cli_gildore-arena/codex-session.jsonl",
        "llm-trace-proxy_wang0618/claude-code.jsonl",
        "claude-code_posthog-impact/claude-session.jsonl",
        "anthropic-managed-agents_open-hai/transcript.jsonl",
    ] {
        let run = recorded_run(rel);
        assert_eq!(run.metrics.calls_over_window, 0, "{rel}: {:?}", run.budget);
        let peak = run.recorded.as_ref().unwrap().peak_context;
        assert!(
            peak + run.budget.max_output <= run.budget.context_window,
            "{rel}: {peak} + {:?}",
            run.budget
        );
        assert!(
            !run.budget_assumed.iter().any(|n| n.contains("contradicts")),
            "{rel}: {:?}",
            run.budget_assumed
        );
    }
    let pi = recorded_run("pi-agent_pi-mono/session.jsonl");
    assert_eq!(pi.budget.max_output, 200_000 - 185_952);
    assert!(
        pi.budget_assumed
            .iter()
            .any(|n| n.starts_with("max output lowered from 64,000 to 14,048")),
        "{:?}",
        pi.budget_assumed
    );
    // Codex's model_context_window (272,000 × 95 %) already sets the output aside.
    let gildore = recorded_run("codex-cli_gildore-arena/codex-session.jsonl");
    assert_eq!(gildore.budget.context_window, 258_400);
    assert_eq!(gildore.budget.max_output, 0);
}

/// A capture records the output limit each request asked for: the budget takes it from there.
#[test]
fn the_output_limit_a_capture_records_is_the_budgets() {
    for (rel, max) in [
        ("llm-trace-proxy_wang0618/claude-code.jsonl", 32_000),
        ("llm-trace-proxy_wang0618/nanobot.jsonl", 8_192),
    ] {
        let s = load(rel).remove(0);
        assert_eq!(s.max_output, Some(max), "{rel}");
        let run = recorded_run(rel);
        assert_eq!(run.budget.max_output, max, "{rel}");
        let note = format!(
            "max output {} from the log's requests",
            ctxlab::fmt::fmt_tokens(max)
        );
        assert!(
            run.budget_assumed.iter().any(|n| n.starts_with(&note)),
            "{rel}: {:?}",
            run.budget_assumed
        );
        // The assumed window holds the largest context with the output asked for.
        let peak = run.recorded.as_ref().unwrap().peak_context;
        assert!(run.budget.fits(peak), "{rel}: {peak} in {:?}", run.budget);
    }
}

/// A budget the caller gives is kept, and a log it contradicts says so: the recorded baseline
/// then shows those calls over the window (input + max output > window, one definition).
#[test]
fn a_given_budget_the_log_contradicts_is_warned_about() {
    let rel = "pi-agent_pi-mono/session.jsonl";
    let s = load(rel).remove(0);
    let mut o = ReplayOptions::new(tokens::counter("heuristic").unwrap());
    let b = replay::Budget {
        context_window: 200_000,
        max_output: 64_000,
        reserve: 0,
    };
    o.budget = Some(b);
    let run = replay::run(&s, StrategySpec::Recorded, &o).unwrap();
    let over = s
        .calls
        .iter()
        .filter_map(|c| c.usage)
        .filter(|u| u.context_tokens() + 64_000 > 200_000)
        .count();
    assert!(over > 0);
    // Calls the log recorded are judged by what they sent; the others by the reconstruction.
    let recorded_over = run
        .samples
        .iter()
        .filter(|x| x.recorded.is_some_and(|u| u.context_tokens() > 0) && x.over_window)
        .count();
    assert_eq!(recorded_over, over);
    assert!(run.metrics.calls_over_window >= over as u64);
    let w = run
        .budget_assumed
        .iter()
        .find(|n| n.starts_with("warning: the log contradicts this budget"))
        .unwrap_or_else(|| panic!("{:?}", run.budget_assumed));
    assert!(w.contains(&format!("{over} recorded calls")), "{w}");
    assert!(w.contains("up to 185,952 tokens"), "{w}");
    assert!(b.over_window(136_001) && !b.over_window(136_000));
}

// (mean %, p95 %) each log reaches today.
const HOLD_OPEN_HAI: (f64, f64) = (0.5, 3.5);
const HOLD_CLINE_CARD: (f64, f64) = (0.7, 2.6);
const HOLD_CLINE_XRAY: (f64, f64) = (1.1, 3.8);
const HOLD_MINI_SWE: (f64, f64) = (0.2, 0.5);
const HOLD_OPENCODE: (f64, f64) = (0.8, 3.5);
const HOLD_GEMINI_CLI: (f64, f64) = (0.3, 0.5);
const HOLD_AIDER_AFI: (f64, f64) = (3.4, 20.5);
const HOLD_AIDER_POCKETFLOW: (f64, f64) = (2.3, 5.2);

// ---- The other real logs with recorded per-call input (issue #15 asks each held) ------------
// None of these was worked on for issue #15 yet: each is held where it stands, and what remains
// is named where it is known.

/// Anthropic managed-agents events: 7.7 / 23.9 % (ratio 2.28) → 1.2 / 5.9 % (ratio 1.73) once
/// the web searches' nested `search_result` blocks were read and each reply weighs its recorded
/// output (hidden thinking) → 0.5 / 3.5 % (overhead 10.7k, ratio 1.68) with the outcome's rubric
/// (1.5k the first calls missed), the grader's explanation before the next call (a 1.5k step)
/// and the image a `read` returned (a 1.3k step). The p95 is still the first calls, 3–4 % under
/// (see docs/tokens.md).
#[test]
fn anthropic_managed_agents_events() {
    hold(
        "anthropic-managed-agents_open-hai/transcript.jsonl",
        "heuristic",
        HOLD_OPEN_HAI.0,
        HOLD_OPEN_HAI.1,
        0.0,
    );
}

/// Cline exports. Each reply weighs its request's recorded output (`tokensOut`: hidden thinking
/// and the tool-call markup the model wrote): online-card-architecture 1.6 / 6.2 % (ratio 1.23,
/// its first calls 6–9 % over) → 0.6 / 2.5 %, xray 1.2 / 4.9 % → 1.0 / 3.8 %. xray has only its UI
/// log: the deleted ranges stamped on its events are Cline's truncations, and at each point where
/// Cline optimizes its context it replaced every earlier read of a file by a notice
/// (`ContextManager.applyContextOptimizations`), one of them with no truncation (167,668 →
/// 129,005): 29.0 / 87.7 % (ratio 0.08) → 12.9 / 30.6 % with the ranges → 1.2 / 4.9 % (ratio
/// 1.22, as the full folder's 1.23) with the deduplication.
#[test]
fn cline_exports() {
    hold(
        "cline_online-card-architecture",
        "heuristic",
        HOLD_CLINE_CARD.0,
        HOLD_CLINE_CARD.1,
        0.0,
    );
    hold(
        "cline_xray",
        "heuristic",
        HOLD_CLINE_XRAY.0,
        HOLD_CLINE_XRAY.1,
        // The first calls after its truncations and its deduplication.
        4.4,
    );
}

/// mini-swe-agent (x-ai/grok-4-fast): 12.3 % mean, 124.5 % p95 with the heuristic (overhead
/// 1,067 above the first call's 819: the `ls -la` listings of its first steps cost 2.3
/// characters a token, the heuristic reads 4) → 0.1 / 0.4 % with o200k, the default counter for
/// a Grok log now (overhead 140, ratio 0.985). The trajectory is what mini-swe-agent sends
/// (`DefaultAgent.query` posts `self.messages`): nothing was missing.
#[test]
fn mini_swe_agent_trajectory() {
    let rel = "mini-swe-agent_yudai/last_mini_run.traj.json";
    for s in load(rel) {
        assert_eq!(tokens::default_counter_for(&s), "o200k", "{rel}");
    }
    hold(rel, "o200k", HOLD_MINI_SWE.0, HOLD_MINI_SWE.1, 0.0);
}

/// OpenCode: each step's reply is the size its step-finish recorded (final usage: the whole
/// thinking of a sonnet-5 reply whose export shows only its summary): 13.7 / 72.7 % → 0.7 / 3.4 %.
#[test]
fn opencode_export() {
    hold(
        "opencode_pfm-categorization/opencode-session.json",
        "heuristic",
        HOLD_OPENCODE.0,
        HOLD_OPENCODE.1,
        0.0,
    );
}

/// Gemini CLI (entire checkpoint): within target.
#[test]
fn gemini_cli_checkpoint() {
    hold(
        "gemini-cli_entire-cli/ab/2b9748b105/0/full.jsonl",
        "heuristic",
        HOLD_GEMINI_CLI.0,
        HOLD_GEMINI_CLI.1,
        0.0,
    );
}

/// Aider: `> Tokens: N sent` is the prompt of that one call (aider `Coder.calculate_and_show_
/// tokens_and_cost`, rounded to 0.1k below 10k, to 1k above), so the comparison is per call.
/// pocketflow runs `--architect`: each request is two calls, the architect's (the history) and
/// the editor's (a fresh context with the architect's chat files and plan). 33.0 / 87.2 % →
/// 2.2 / 5.1 % (ratio 0.26 → 0.96) once `/clear` empties the history and commands are not
/// messages (24.4 %), then once the chat files carry the content of the whole-file edits aider
/// applied (docs/formats.md, Aider). What is left is the architect's repo map (none on the
/// first call: `Git repo: .git with 0 files`; up to 4,096 tokens after), not in the log.
/// afi-core is a plain chat in the diff format: its chat files are `/add`ed and never shown
/// whole (a warning names them), and its last run's first call (11k, no file in the chat yet)
/// carries a repo map aider grows ×8 when the chat has no files (`map_mul_no_files`): 3.3 / 20.3
/// → 3.4 / 20.4 % (ratio 1.92 → 1.89) with the SEARCH/REPLACE markers and edit errors now read.
#[test]
fn aider_histories() {
    hold(
        "aider_afi-core/.aider.chat.history.md",
        "o200k",
        HOLD_AIDER_AFI.0,
        HOLD_AIDER_AFI.1,
        0.0,
    );
    hold(
        "aider_pocketflow-text2sql-gui/.aider.chat.history.md",
        "heuristic",
        HOLD_AIDER_POCKETFLOW.0,
        HOLD_AIDER_POCKETFLOW.1,
        // The editor's fresh contexts (`new conversation`) and `/clear`: 116 % before the
        // chat files were read.
        4.0,
    );
}

/// Aider prints `sent` rounded (`format_tokens`: exact below 1k, to 0.1k below 10k, to 1k
/// above), so a call of 10–15k is recorded ±500 (3.3–5 %) and the log alone cannot tell a 4 %
/// error from none. Measured as the distance to the interval the printed figure stands for,
/// pocketflow is within target: 1.3 % mean, 2.3 % p95 (one call is far: the estimate is 51 %
/// over its first, which had no repo map); afi-core 2.1 / 15.9 % (its unlogged repo map and
/// chat files).
#[test]
fn aider_beyond_its_own_rounding() {
    for (rel, counter, mean, p95) in [
        (
            "aider_pocketflow-text2sql-gui/.aider.chat.history.md",
            "heuristic",
            1.4,
            2.4,
        ),
        ("aider_afi-core/.aider.chat.history.md", "o200k", 2.2, 16.0),
    ] {
        let s = load(rel).remove(0);
        let counter = tokens::counter(counter).unwrap();
        let mut o = ReplayOptions::new(counter.clone());
        o.calibration = tokens::calibrate_session(&s, counter.as_ref());
        o.budget = Some(replay::Budget {
            context_window: 10_000_000,
            max_output: 0,
            reserve: 0,
        });
        let run = replay::run(&s, StrategySpec::Recorded, &o).unwrap();
        let mut errors: Vec<f64> = run
            .samples
            .iter()
            .filter_map(|x| {
                let rec = x.recorded.map(|u| u.context_tokens()).filter(|&r| r > 0)?;
                let half = match rec {
                    0..=999 => 0,
                    1_000..=9_999 => 50,
                    _ => 500,
                };
                let (lo, hi) = (rec.saturating_sub(half), rec + half);
                let off = lo.saturating_sub(x.input_tokens) + x.input_tokens.saturating_sub(hi);
                Some(off as f64 / rec as f64 * 100.0)
            })
            .collect();
        let m = errors.iter().sum::<f64>() / errors.len() as f64;
        errors.sort_by(f64::total_cmp);
        let p = errors[(0.95 * errors.len() as f64).ceil() as usize - 1];
        eprintln!("{rel}: beyond its rounding, mean {m:.2} %, p95 {p:.2} %");
        assert!(m <= mean && p <= p95, "{rel}: {m:.2} / {p:.2} %");
    }
}
