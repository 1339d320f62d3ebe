//! CodeTether's trigger schedule on real logs (128,000-token window, 8,192 reserved output, the
//! plugin's defaults): the calls where codetether-agent 4.7.4 itself starts a compaction, held,
//! and the plugin's schedule checked against them.
//!
//! The schedules are the real crate's: `make codetether-differential`
//! (plugins/codetether/harness/tests/differential.rs) hands every call's history to
//! codetether-agent's `derive_context` and printed them (2026-11-26):
//! fundwise 0, codex gildore-arena 12 (calls 17-28), vr-forest 13 (calls 169-181; 168-181 before the
//! files its compaction re-attached were rebuilt, 2026-11-29: the calibrated overhead both take
//! as the system prompt fell from 17,744 to 17,566).
//! The plugin matches all three. Gildore call 17 is the closest: the safety budget is 105,984 and
//! CodeTether's estimate 106,000, which the plugin reaches with each text part estimated on its
//! own (the host's part boundaries, ABI 1.6) and pair repair's six placeholder results for the
//! log's `web_search` calls, which have no id and no output (`experimental/pairing.rs`
//! `repair_orphans`). Any other change to the plugin or to the reconstruction it reads shows up
//! here.
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

/// codetether-agent 4.7.4's schedules, and the calls of each the plugin does not trigger at.
const REAL: &[(&str, &[usize], &[usize])] = &[
    ("claude-code_fundwise/claude-session.jsonl", &[], &[]),
    (
        "codex-cli_gildore-arena/codex-session.jsonl",
        &[17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28],
        &[],
    ),
    (
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        &[
            169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181,
        ],
        &[],
    ),
];

#[test]
fn trigger_schedules_are_codetether_agents_on_real_logs() {
    let mut bad = Vec::new();
    for &(rel, real, missed) in REAL {
        let want: Vec<usize> = real
            .iter()
            .copied()
            .filter(|c| !missed.contains(c))
            .collect();
        let got = schedule(rel);
        println!("{rel}: {} {:?}", got.len(), got);
        bad.extend(
            (got != want).then(|| {
                format!("{rel}: plugin {got:?}, codetether-agent {real:?} less {missed:?}")
            }),
        );
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
