//! CodeTether's trigger schedule on real logs: the plugin fires `CompactionStarted` at exactly the
//! calls codetether-agent 4.7.4's own `derive_context` does (128,000-token window, 8,192 reserved
//! output, empty system prompt, no tools). The schedules below were measured once with the
//! harness in plugins/codetether/harness (its command is in docs/strategies/codetether.md):
//! building the real crate takes far longer than CI allows, so it is not a dev-dependency.
//! Needs ../shared/real-logs beside the checkout and `cargo build --workspace` first.

mod compare_support;

use compare_support::{options, plugin, real_log, registry};
use ctxlab::replay::{self, Budget};
use serde_json::json;

/// Calls (indices into the session's calls) where the plugin starts a compaction.
fn schedule(rel: &str) -> Vec<usize> {
    let s = ctxlab::formats::load_file(&real_log(rel)).unwrap();
    let reg = registry();
    let mut o = options(&s);
    o.budget = Some(Budget {
        context_window: 128_000,
        max_output: 8_192,
        reserve: 0,
    });
    let spec = plugin(&reg, "codetether.compression", json!({}));
    let run = replay::run(&s, spec, &o).unwrap();
    run.events
        .iter()
        .filter(|e| e.code == "CompactionStarted")
        .map(|e| e.call)
        .collect()
}

#[test]
fn trigger_schedules_match_codetethers_own() {
    let mut bad = Vec::new();
    for (rel, want) in [
        (
            "claude-code_fundwise/claude-session.jsonl",
            Vec::<usize>::new(),
        ),
        (
            "codex-cli_gildore-arena/codex-session.jsonl",
            (17..=28).collect(),
        ),
        (
            "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
            (168..=181).collect(),
        ),
    ] {
        let got = schedule(rel);
        println!("{rel}: {} {:?}", got.len(), got);
        bad.extend((got != want).then(|| format!("{rel}: {got:?}, CodeTether: {want:?}")));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
