//! Per-call pruning (issue #21 point 3): a strategy that filters each call's view without
//! compacting the history (LibreChat's pruning) reports, per call, the tokens it left out
//! (`Sample::pruned_tokens`), which the charts mark as their own kind. Needs the plugins built
//! (`cargo build --workspace`).

mod compare_support;

use compare_support::*;
use ctxlab::replay;

#[test]
fn librechat_prunes_the_view_per_call_and_says_how_much() {
    let reg = registry();
    let s = session(VR_FOREST);
    let mut o = options(&s);
    // A window smaller than the session's 165k peak, so the pruning has to bite.
    o.budget = Some(replay::Budget {
        context_window: 100_000,
        max_output: 8_000,
        reserve: 0,
    });
    let none = replay::run(&s, replay::StrategySpec::None, &o).unwrap();
    let lc = replay::run(
        &s,
        plugin(&reg, "librechat.agents", serde_json::json!({})),
        &o,
    )
    .unwrap();
    // Until its first summary (a persistent compaction) LibreChat's history is the whole log's:
    // whatever it sends less than `none` is what it pruned from the call's view.
    let first = lc.compactions.first().map_or(usize::MAX, |c| c.call);
    assert!(none.samples.iter().all(|x| x.pruned_tokens == 0));
    let pruned: Vec<_> = lc
        .samples
        .iter()
        .filter(|x| x.pruned_tokens > 0 && x.call < first)
        .collect();
    assert!(
        !pruned.is_empty(),
        "the pruning bites once the context passes the window"
    );
    // What it left out is the difference from sending everything (calibration rounding aside).
    for (a, b) in none
        .samples
        .iter()
        .zip(&lc.samples)
        .take_while(|p| p.0.call < first)
    {
        let gap = a.input_tokens as i64 - b.input_tokens as i64;
        assert!(
            (gap - b.pruned_tokens as i64).abs() <= 2,
            "call {}: none sends {}, librechat {} and says it pruned {}",
            a.call,
            a.input_tokens,
            b.input_tokens,
            b.pruned_tokens
        );
    }
}
