//! What fills the context (`ctxlab::replay::composition`, issue #21 point 5) on real third-party
//! logs: every call's composition sums to its reconstructed context (`recorded_raw_tokens`, the
//! `recorded` baseline's uncalibrated series), the kinds land where the log puts them, and
//! `ctxlab inspect --composition` prints and exports it.

use std::process::Command;

use ctxlab::replay::{composition, recorded_raw_tokens, Kind, Prepared};
use ctxlab::tokens;

mod real_logs;
use real_logs::real as real_log;

/// Loads `rel`, checks every call's composition against its reconstructed context, and returns
/// the session's compositions (for the per-log assertions).
fn check(rel: &str, counter: &str) -> (ctxlab::model::Session, ctxlab::replay::Composition) {
    let mut sessions = ctxlab::formats::load(&real_log(rel)).expect("load");
    assert_eq!(sessions.len(), 1, "{rel}: one session");
    let session = sessions.remove(0);
    let counter = tokens::counter(counter).unwrap();
    let prepared = Prepared::counts(&session, counter.as_ref());
    let comp = composition(&session, &prepared, counter.as_ref()).unwrap();
    let raw = recorded_raw_tokens(&session, counter.as_ref());
    assert_eq!(comp.calls.len(), session.calls.len(), "{rel}: one per call");
    assert!(!session.calls.is_empty(), "{rel}: calls");
    for (i, (c, r)) in comp.calls.iter().zip(&raw).enumerate() {
        let c = c
            .as_ref()
            .unwrap_or_else(|| panic!("{rel}: call {i} has a composition"));
        assert_eq!(c.call, i);
        assert_eq!(c.agent, session.calls[i].agent, "{rel}: call {i}'s agent");
        let sum: u64 = c.slices.iter().map(|s| s.tokens).sum();
        assert_eq!(sum, c.total, "{rel}: call {i}: slices add up to the total");
        assert_eq!(
            Some(c.total),
            *r,
            "{rel}: call {i}: the composition sums to the reconstructed context"
        );
        assert!(
            c.slices.iter().all(|s| s.tokens > 0),
            "{rel}: no empty slice"
        );
        assert!(
            c.slices
                .iter()
                .all(|s| (s.kind == Kind::ToolResults) == s.tool.is_some()),
            "{rel}: tool results, and only they, name their tool"
        );
    }
    (session, comp)
}

#[test]
fn claude_code_calls_sum_to_their_context_and_the_compaction_leaves_the_summary() {
    // 182 calls, Read-heavy, one auto compaction before the last call (SOURCES.md).
    let (session, comp) = check(
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        "heuristic",
    );
    let calls: Vec<_> = comp.calls.iter().flatten().collect();
    let peak = calls.iter().max_by_key(|c| c.total).unwrap();
    let read = peak
        .slices
        .iter()
        .find(|s| s.tool.as_deref() == Some("Read"))
        .expect("Read results at the peak");
    let largest_tool = peak
        .slices
        .iter()
        .filter(|s| s.kind == Kind::ToolResults)
        .max_by_key(|s| s.tokens)
        .unwrap();
    assert_eq!(
        largest_tool.tool.as_deref(),
        Some("Read"),
        "Read fills it most"
    );
    assert!(
        read.tokens * 4 > peak.total,
        "Read results are over a quarter of the peak"
    );
    assert!(peak.tokens(Kind::Reasoning) > 0, "thinking is counted");
    assert!(peak.tokens(Kind::ToolCalls) > 0);
    // After the recorded compaction the summary is what is left of the history.
    let c = &session.compactions[0];
    let after = calls
        .iter()
        .find(|x| session.calls[x.call].context_end > c.at_message)
        .expect("a call after the compaction");
    assert!(
        after.tokens(Kind::Summaries) > 0,
        "the summary is in the context"
    );
    assert!(after.total < peak.total / 4, "the history left");
    assert_eq!(comp.overhead.len(), session.agents.len());
    assert!(comp.overhead[0].unwrap() > 1_000, "calibrated overhead");
}

#[test]
fn codex_reasoning_leaves_with_the_next_user_message_and_results_name_their_tool() {
    let (_, comp) = check("codex-cli_gildore-arena", "o200k");
    let calls: Vec<_> = comp.calls.iter().flatten().collect();
    assert!(calls.iter().any(|c| c.tokens(Kind::Reasoning) > 0));
    // Codex reasoning is transient (`hidden_until_user`): it shrinks at a new human message
    // while the rest of the context only grows (the log records no compaction).
    assert!(
        calls.windows(2).any(
            |w| w[1].tokens(Kind::Reasoning) < w[0].tokens(Kind::Reasoning)
                && w[1].total > w[0].total - w[0].tokens(Kind::Reasoning)
        ),
        "reasoning leaves at a human message"
    );
    assert!(calls.iter().any(|c| c
        .slices
        .iter()
        .any(|s| s.tool.as_deref() == Some("exec_command"))));
}

#[test]
fn every_agent_of_a_multi_agent_capture_is_broken_down() {
    // Claude Code behind a logging proxy: 8 agents (main, side calls, an Explore subagent…).
    let (session, comp) = check("llm-trace-proxy_wang0618/claude-code.jsonl", "heuristic");
    for a in 0..session.agents.len() {
        assert!(
            comp.calls
                .iter()
                .flatten()
                .any(|c| c.agent == a && c.total > 0),
            "agent {a} has a composition"
        );
    }
}

#[test]
fn a_compacting_claude_code_session_sums_at_every_call() {
    check("claude-code_oh-my-posh", "heuristic");
}

#[test]
fn inspect_composition_prints_kinds_by_tool_and_exports_every_call() {
    let log = real_log("claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .args(["inspect", "--composition"])
            .arg(&log)
            .args(extra)
            .output()
            .expect("run ctxlab");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, text, err) = run(&[]);
    assert!(ok, "{err}");
    assert!(text.contains("peak (call 180)"), "{text}");
    // (The kind column is as wide as its longest name: the files re-attached after the
    // compaction add the "injected" row.)
    assert!(
        text.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.starts_with(&["tool", "results", "Read"])
        }),
        "{text}"
    );
    assert!(text.contains("calibrated overhead"), "{text}");

    let (ok, text, err) = run(&["--call", "100"]);
    assert!(ok, "{err}");
    assert!(text.contains("call 100"), "{text}");

    let (ok, _, err) = run(&["--call", "100000"]);
    assert!(!ok);
    assert!(
        err.contains("--call 100000: the session has 182 calls"),
        "{err}"
    );

    let (ok, json, err) = run(&["--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let calls = v["sessions"][0]["composition"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 182);
    for c in calls {
        let sum: u64 = c["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, c["total"].as_u64().unwrap());
    }
}
