//! Compaction by turn count, window mode, the context budget and anti-thrash.

mod common;
use common::*;
use ctxlab_plugin_api::sdk::*;
use ctxlab_plugin_api::testing::TestMsg;
use serde_json::json;

/// Calls of a single agent: the first sends a request, each later one appends the reply to the
/// previous call and the next request (each a new turn).
fn turns(sim: &mut Sim, count: usize, tokens: u64) -> Vec<Decision> {
    let mut out = vec![sim.call("main", vec![TestMsg::user("request 0").tokens(tokens)])];
    for i in 1..count {
        out.push(sim.call(
            "main",
            vec![
                TestMsg::assistant(&format!("reply {}", i - 1)).tokens(tokens),
                TestMsg::user(&format!("request {i}")).tokens(tokens),
            ],
        ));
    }
    out
}

#[test]
fn turn_count_compaction_summarizes_the_oldest_turns_and_pins_the_summary() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 5, "KeepRecentTurns": 2}));
    let ds = turns(&mut sim, 6, 100);
    // Calls 0..4 hold 0..4 replies; call 5 holds 5 replies ≥ TriggerTurnCount 5.
    for d in &ds[..5] {
        assert!(!has(d, "compaction"), "{:?}", d.events);
    }
    let d = &ds[5];
    let op = &d.ops[0];
    assert_eq!(op.scope, Scope::Persistent);
    let OpKind::Summarize {
        role,
        max_tokens,
        text,
        ..
    } = &op.kind
    else {
        panic!("expected a summary, got {op:?}")
    };
    assert_eq!(*role, Role::User);
    assert!(
        text.is_empty() && *max_tokens > 0,
        "llm mode: simulated summary"
    );
    // The oldest 5 − 2 = 3 turns: request 0, reply 0, …, reply 2.
    assert_eq!((op.start, op.end), (0, 6));
    assert!(event(d, "compaction").message.contains("turns 1–3"));
    // The next call pins the summary.
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant("reply 5").tokens(100),
            TestMsg::user("r").tokens(100),
        ],
    );
    assert!(
        d.ops.iter().any(|o| o.kind == OpKind::Pin && o.start == 0),
        "{:?}",
        d.ops
    );
    assert!(sim.context("main")[0].flags & ctxlab_plugin_api::abi::FLAG_PINNED != 0);
}

#[test]
fn turn_count_is_checked_between_turns_not_inside_the_tool_loop() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 1}));
    sim.call("main", vec![TestMsg::user("go").tokens(50)]);
    for i in 0..4 {
        // The agent's reply makes a tool call: the next call continues the same turn.
        let d = sim.call(
            "main",
            vec![
                TestMsg::tool_call(&format!("c{i}"), "shell_run", r#"{"command":"ls"}"#).tokens(50),
                TestMsg::tool_result(&format!("c{i}"), "shell_run", "ok").tokens(50),
            ],
        );
        assert!(
            !has(&d, "compaction"),
            "no compaction inside a turn: {:?}",
            d.events
        );
    }
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant("done").tokens(50),
            TestMsg::user("next").tokens(50),
        ],
    );
    assert!(has(&d, "compaction"), "{:?}", d.events);
}

#[test]
fn max_chars_per_history_message_prunes_what_the_summarizer_is_sent() {
    let run = |m: u64| {
        let mut sim = Sim::new(
            json!({"TriggerTurnCount": 3, "KeepRecentTurns": 1, "MaxCharsPerHistoryMessage": m}),
        );
        sim.call("main", vec![TestMsg::user(&"x".repeat(20_000))]);
        sim.call("main", vec![TestMsg::assistant("a"), TestMsg::user("b")]);
        sim.call("main", vec![TestMsg::assistant("a"), TestMsg::user("b")]);
        let d = sim.call("main", vec![TestMsg::assistant("a"), TestMsg::user("b")]);
        match &d.ops[0].kind {
            OpKind::Summarize {
                summarizer_input_tokens,
                ..
            } => *summarizer_input_tokens,
            k => panic!("{k:?}"),
        }
    };
    let off = run(0);
    let pruned = run(4000);
    assert!(off > 5000, "{off}");
    assert!(
        pruned < 1200,
        "the 20,000-char message is cut to 4,000 chars: {pruned}"
    );
}

fn tool_turns(sim: &mut Sim) -> Decision {
    sim.call("main", vec![TestMsg::user("build it")]);
    sim.call(
        "main",
        vec![
            TestMsg::tool_call(
                "w1",
                "write_file",
                r#"{"path":"src/api/users.go","content":"package api"}"#,
            )
            .agent("main"),
            TestMsg::tool_result("w1", "write_file", &"ok ".repeat(200)),
        ],
    );
    let mut fail = TestMsg::tool_result("p1", "patch_file", "oldText not found in src/api/auth.go");
    fail.tools[0].is_error = true;
    sim.call(
        "main",
        vec![
            TestMsg::tool_call(
                "p1",
                "patch_file",
                r#"{"path":"src/api/auth.go","oldText":"x"}"#,
            ),
            fail,
        ],
    );
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("s1", "shell_run", r#"{"command":"go test ./..."}"#),
            TestMsg::tool_result("s1", "shell_run", &"PASS ".repeat(300)),
        ],
    );
    sim.call(
        "main",
        vec![
            TestMsg::assistant(&"all done ".repeat(50)),
            TestMsg::user("thanks"),
        ],
    )
}

#[test]
fn intent_mode_writes_the_operations_list_from_the_tool_calls() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 4, "KeepRecentTurns": 0, "Mode": "intent"}));
    let d = tool_turns(&mut sim);
    let op = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Summarize { .. }))
        .expect("summary");
    let OpKind::Summarize {
        max_tokens, text, ..
    } = &op.kind
    else {
        unreachable!()
    };
    assert_eq!(*max_tokens, 0, "intent is deterministic: no simulated part");
    assert!(
        text.starts_with("[INTENT-DERIVED RECONSTRUCTION — covers turns 1–4]"),
        "{text}"
    );
    assert!(
        text.contains("  ✓ write_file → \"src/api/users.go\" (turn 1, main)"),
        "{text}"
    );
    assert!(text.contains("  ✗ patch_file → \"src/api/auth.go\" — oldText not found in src/api/auth.go (turn 2, main)"), "{text}");
    assert!(
        text.contains("  ✓ shell_run → \"go test ./...\" (turn 3, main)"),
        "{text}"
    );
    assert!(text.contains(
        "RESUMPTION NOTE: History compacted from intent log — deterministic ground truth."
    ));
    assert!(text.contains("Operations marked ✗ (failed) should be retried"));
    let e = event(&d, "compaction");
    assert!(e.tokens_after > 0 && e.tokens_after < e.tokens_before);
}

#[test]
fn hybrid_mode_prepends_the_intent_text_to_a_simulated_summary() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 4, "KeepRecentTurns": 0, "Mode": "hybrid"}));
    let d = tool_turns(&mut sim);
    let op = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Summarize { .. }))
        .expect("summary");
    let OpKind::Summarize {
        max_tokens,
        text,
        summarizer_input_tokens,
        ..
    } = &op.kind
    else {
        unreachable!()
    };
    assert!(text.starts_with("[INTENT-DERIVED RECONSTRUCTION"));
    assert!(*max_tokens > 0 && *summarizer_input_tokens > 0);
}

#[test]
fn lossless_is_refused_with_the_reason() {
    let e = make_err(json!({"Mode": "lossless"}));
    assert!(
        e.contains("lossless") && e.contains("EvidenceStore") && e.contains("logs"),
        "{e}"
    );
}

#[test]
fn trigger_must_exceed_keep_recent_turns() {
    let e = make_err(json!({"TriggerTurnCount": 10, "KeepRecentTurns": 10}));
    assert!(
        e.contains("TriggerTurnCount (10) must be greater than Compaction.KeepRecentTurns (10)"),
        "{e}"
    );
    // window mode does not count turns.
    make(json!({"TriggerTurnCount": 10, "KeepRecentTurns": 10, "Mode": "window"}));
}

#[test]
fn window_mode_drops_oldest_pairs_until_within_token_budget_and_keeps_pinned_summaries() {
    let mut sim = Sim::new(json!({"Mode": "window", "TokenBudget": 1000}));
    let mut summary = TestMsg::user("earlier summary").pinned();
    summary.flags |= ctxlab_plugin_api::abi::FLAG_SUMMARY;
    sim.call(
        "main",
        vec![
            TestMsg::system("sys"),
            summary,
            TestMsg::user(&"q".repeat(1200)),
        ],
    );
    let mut last = None;
    for i in 0..5 {
        last = Some(sim.call(
            "main",
            vec![
                TestMsg::assistant(&"a".repeat(1200)),
                TestMsg::user(&format!("q{i} {}", "q".repeat(1200))),
            ],
        ));
    }
    let d = last.unwrap();
    let _ = d;
    let ctx = sim.context("main");
    let chars: usize = ctx.iter().map(|m| m.text.chars().count()).sum();
    assert!(
        chars / 4 <= 1000 + 400,
        "estimate within budget after the drop: {}",
        chars / 4
    );
    assert_eq!(ctx[0].text, "sys");
    assert_eq!(
        ctx[1].text, "earlier summary",
        "the pinned summary is never dropped"
    );
    assert!(
        ctx.last().unwrap().text.starts_with("q4"),
        "the open request stays"
    );
    assert!(
        !ctx.iter()
            .any(|m| m.flags & ctxlab_plugin_api::abi::FLAG_SUMMARY != 0 && m.text == "summary"),
        "window writes no summary"
    );
}

fn budget_sim(p: serde_json::Value) -> Sim {
    Sim::new(p)
}

#[test]
fn warn_at_fires_once_per_cycle_and_cutover_compacts_and_resets() {
    let mut sim = budget_sim(
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1, "WarnAt": 3000, "CutoverAt": 6000}),
    );
    let mut warns = Vec::new();
    let mut cutovers = Vec::new();
    let mut ds = Vec::new();
    sim.call("main", vec![TestMsg::user("start").tokens(500)]);
    for i in 0..12 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("r").tokens(200),
                TestMsg::user(&format!("u{i}")).tokens(200),
            ],
        );
        if has(&d, "context_budget_warn") {
            warns.push(i);
        }
        if has(&d, "context_budget_cutover") {
            cutovers.push(i);
            assert!(has(&d, "compaction"), "CutoverAt compacts: {:?}", d.events);
            assert!(event(&d, "context_budget_cutover")
                .message
                .contains("≥ CutoverAt 6,000"));
        }
        ds.push(d);
    }
    assert!(!cutovers.is_empty(), "cutover fired");
    // Exactly one warning before the first cutover, and a new one in the next cycle at most.
    let first_cut = cutovers[0];
    assert_eq!(
        warns.iter().filter(|&&w| w < first_cut).count(),
        1,
        "warns {warns:?} cutovers {cutovers:?}"
    );
    // After the cutover the gauge starts again from the next call's input.
    let g = ds[first_cut + 1]
        .gauges
        .iter()
        .find(|(n, _)| n == "cumulative_since_compaction")
        .unwrap()
        .1;
    assert!(g < 3000.0, "counter reset after compaction: {g}");
}

#[test]
fn one_grace_turn_after_a_compaction() {
    // Every turn alone exceeds CutoverAt: without the grace turn it would compact every turn.
    let mut sim = budget_sim(
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 0, "CutoverAt": 1000, "AntiThrashWindow": 0}),
    );
    sim.call("main", vec![TestMsg::user("start").tokens(2000)]);
    let mut fired = Vec::new();
    for i in 0..6 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("r").tokens(2000),
                TestMsg::user("u").tokens(2000),
            ],
        );
        if has(&d, "context_budget_cutover") {
            fired.push(i);
        }
    }
    assert_eq!(fired, vec![0, 2, 4], "every other turn is the grace turn");
}

#[test]
fn single_turn_limit_wins_when_both_fire() {
    let mut sim = budget_sim(
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 0, "CutoverAt": 1000, "MaxSingleTurnInputTokens": 1500}),
    );
    sim.call("main", vec![TestMsg::user("start").tokens(2000)]);
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant("r").tokens(100),
            TestMsg::user("u").tokens(100),
        ],
    );
    let e = event(&d, "context_budget_cutover");
    assert!(
        e.message.contains("single_turn_limit")
            && e.message.contains("MaxSingleTurnInputTokens 1,500"),
        "{}",
        e.message
    );
    assert!(has(&d, "compaction"));
}

#[test]
fn turn_count_and_budget_are_both_active_and_the_first_wins() {
    // Budget first: heavy turns reach CutoverAt long before 50 turns.
    let mut sim =
        budget_sim(json!({"TriggerTurnCount": 50, "KeepRecentTurns": 1, "CutoverAt": 5000}));
    let ds = turns(&mut sim, 5, 1000);
    let first = ds
        .iter()
        .position(|d| has(d, "compaction"))
        .expect("a compaction");
    assert!(has(&ds[first], "context_budget_cutover"));
    // Turn count first: light turns reach the trigger before the budget.
    let mut sim =
        budget_sim(json!({"TriggerTurnCount": 4, "KeepRecentTurns": 1, "CutoverAt": 1_000_000}));
    let ds = turns(&mut sim, 6, 10);
    let first = ds
        .iter()
        .position(|d| has(d, "compaction"))
        .expect("a compaction");
    assert!(!has(&ds[first], "context_budget_cutover"));
    assert!(event(&ds[first], "compaction")
        .message
        .contains("turn_count"));
    // Turn-count compaction resets the budget counters too.
    let gauge = |d: &Decision| {
        d.gauges
            .iter()
            .find(|(n, _)| n == "cumulative_since_compaction")
            .unwrap()
            .1
    };
    assert!(gauge(&ds[first - 1]) > 0.0);
    assert_eq!(gauge(&ds[first]), 0.0, "counters reset at the compaction");
    assert!(gauge(&ds[first + 1]) < gauge(&ds[first - 1]));
}

#[test]
fn anti_thrash_suppresses_compactions_that_save_too_little() {
    // A huge kept tail and tiny compacted turns: each compaction saves almost nothing.
    let mut sim = Sim::new(
        json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2, "AntiThrashWindow": 2, "AntiThrashMinSavingsRatio": 0.5}),
    );
    sim.call("main", vec![TestMsg::user("start").tokens(10)]);
    let mut compactions = 0;
    let mut suppressed = None;
    for i in 0..12 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("r").tokens(10_000),
                TestMsg::user("u").tokens(10),
            ],
        );
        compactions += has(&d, "compaction") as usize;
        if has(&d, "anti_thrash") {
            suppressed.get_or_insert(i);
            let e = event(&d, "anti_thrash");
            assert_eq!(e.kind, EventKind::Suppressed);
            assert!(
                e.message.contains("AntiThrashMinSavingsRatio 50%"),
                "{}",
                e.message
            );
        }
    }
    let at = suppressed.expect("anti-thrash fired");
    assert!(
        compactions >= 2 && at >= 2,
        "two cheap compactions first ({compactions}, at {at})"
    );
    // With the guard off the same history compacts at every turn past the trigger.
    let mut sim =
        Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2, "AntiThrashWindow": 0}));
    sim.call("main", vec![TestMsg::user("start").tokens(10)]);
    let mut n = 0;
    for _ in 0..12 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("r").tokens(10_000),
                TestMsg::user("u").tokens(10),
            ],
        );
        n += has(&d, "compaction") as usize;
        assert!(!has(&d, "anti_thrash"));
    }
    assert!(n > compactions, "{n} > {compactions}");
}

#[test]
fn compaction_needs_the_compaction_section() {
    let mut sim = Sim::new(
        json!({"Compaction": false, "WarnAt": 100, "TriggerTurnCount": 2, "KeepRecentTurns": 1}),
    );
    let ds = turns(&mut sim, 6, 100);
    assert!(ds.iter().all(|d| !has(d, "compaction")));
    assert!(
        ds.iter().any(|d| has(d, "context_budget_warn")),
        "WarnAt still warns"
    );
}

#[test]
fn thresholds_are_on_the_cumulative_since_compaction_line() {
    let s = make(json!({"WarnAt": 80000, "CutoverAt": 120000}));
    let t = s.thresholds();
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|t| t.line == Line::CumulativeSinceCompaction));
    assert!(t
        .iter()
        .any(|t| t.kind == ThresholdKind::Warn && t.tokens == 80000 && t.label == "WarnAt"));
    assert!(t
        .iter()
        .any(|t| t.kind == ThresholdKind::Cutover && t.tokens == 120000 && t.label == "CutoverAt"));
}
