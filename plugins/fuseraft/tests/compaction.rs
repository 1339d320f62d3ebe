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

fn summary_range(d: &Decision) -> (usize, usize) {
    let op = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Summarize { .. }))
        .unwrap_or_else(|| panic!("no summary in {:?} / {:?}", d.ops, d.events));
    (op.start, op.end)
}

/// ConversationCompactor.ShouldCompact (fuseraft-cli 058340a): assistant AgentMessages ≥
/// TriggerTurnCount; CompactAsync: keep = clamp(KeepRecentTurns, 1, count − 1) messages.
#[test]
fn conversation_compactor_should_compact_counts_assistant_turns_and_keeps_n_messages() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 5, "KeepRecentTurns": 2}));
    let ds = turns(&mut sim, 6, 100);
    // Calls 0..4 see 0..4 finished turns; call 5 sees 5 ≥ TriggerTurnCount 5.
    for d in &ds[..5] {
        assert!(!has(d, "compaction"), "{:?}", d.events);
    }
    let d = &ds[5];
    let OpKind::Summarize {
        role,
        max_tokens,
        text,
        ..
    } = &d.ops[0].kind
    else {
        panic!("expected a summary, got {:?}", d.ops)
    };
    assert_eq!(*role, Role::User);
    assert!(
        text.is_empty() && *max_tokens > 0,
        "llm mode: simulated summary"
    );
    // 10 messages (5 requests, 5 replies); the last 2 stay: request 4 and reply 4.
    assert_eq!(summary_range(d), (0, 8));
    assert!(event(d, "compaction").message.contains("8 of 10 messages"));
    // The summary is not pinned (fuseraft re-summarizes it at the next compaction).
    assert!(d.ops.iter().all(|o| o.kind != OpKind::Pin));
}

/// ConversationCompactor.ShouldCompact counts AgentMessages: one per agent turn, its tool calls
/// folded in; a tool loop of many model calls is one turn.
#[test]
fn conversation_compactor_a_tool_loop_is_one_turn() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 1}));
    sim.call("main", vec![TestMsg::user("go").tokens(50)]);
    for i in 0..6 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::tool_call(&format!("c{i}"), "shell_run", r#"{"command":"ls"}"#).tokens(50),
                TestMsg::tool_result(&format!("c{i}"), "shell_run", "ok").tokens(50),
            ],
        );
        assert!(!has(&d, "compaction"), "{:?}", d.events);
    }
    let mut fired = Vec::new();
    for i in 0..3 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("done").tokens(50),
                TestMsg::user("next").tokens(50),
            ],
        );
        let g = d
            .gauges
            .iter()
            .find(|(n, _)| n == "assistant_turns")
            .unwrap()
            .1;
        if has(&d, "compaction") {
            fired.push(i);
        } else {
            assert_eq!(
                g,
                (i + 1) as f64,
                "the 7-call tool loop counted as one turn"
            );
        }
    }
    assert_eq!(fired, vec![2], "3 turns: 1 tool loop + 2 plain replies");
}

/// CompactAsync: the previous summary is one of the messages and is summarized again; nothing
/// piles up.
#[test]
fn compact_async_resummarizes_the_previous_summary() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2}));
    let ds = turns(&mut sim, 20, 100);
    let at: Vec<usize> = (0..ds.len())
        .filter(|&i| has(&ds[i], "compaction"))
        .collect();
    assert!(at.len() >= 3, "{at:?}");
    for &i in &at[1..] {
        assert_eq!(
            summary_range(&ds[i]).0,
            0,
            "the range starts at the old summary"
        );
    }
    let summaries = sim
        .context("main")
        .iter()
        .filter(|m| m.flags & ctxlab_plugin_api::abi::FLAG_SUMMARY != 0)
        .count();
    assert_eq!(summaries, 1, "one summary at a time");
}

/// CompactAsync clamps KeepRecentTurns to [1, count − 1]: with 2 messages in history one is kept.
#[test]
fn compact_async_clamps_keep_recent_turns_to_count_minus_one() {
    let mut sim =
        Sim::new(json!({"TriggerTurnCount": 40, "KeepRecentTurns": 30, "CutoverAt": 500}));
    sim.call("main", vec![TestMsg::user("start").tokens(600)]);
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant("r").tokens(300),
            TestMsg::user("u").tokens(10),
        ],
    );
    assert!(has(&d, "context_budget_cutover"), "{:?}", d.events);
    assert_eq!(summary_range(&d), (0, 1), "2 messages: keep clamped to 1");
}

/// EvaluateCompactionTriggerAsync: the post-compaction grace turn suppresses the turn-count
/// trigger too (not only CutoverAt).
#[test]
fn evaluate_trigger_grace_turn_suppresses_turn_count() {
    let mut sim =
        Sim::new(json!({"TriggerTurnCount": 2, "KeepRecentTurns": 1, "AntiThrashWindow": 0}));
    let ds = turns(&mut sim, 9, 100);
    let at: Vec<usize> = (0..ds.len())
        .filter(|&i| has(&ds[i], "compaction"))
        .collect();
    // Call 2 compacts (2 turns); at call 3 the history holds 2 turns again, but it is the grace
    // turn; call 4 compacts; and so on.
    assert_eq!(at, vec![2, 4, 6, 8]);
}

/// ContextBudgetManager.EvaluateAsync: SingleTurnTrigger is input > MaxSingleTurnInputTokens
/// (strict), and EvaluateCompactionTriggerAsync honours it even in the grace turn.
#[test]
fn evaluate_trigger_single_turn_limit_is_strict_and_ignores_grace() {
    let run = |limit: u64| {
        let mut sim = Sim::new(
            json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1, "MaxSingleTurnInputTokens": limit}),
        );
        sim.call("main", vec![TestMsg::user("start").tokens(1000)]);
        (0..4)
            .map(|_| {
                let d = sim.call(
                    "main",
                    vec![
                        TestMsg::assistant("r").tokens(1),
                        TestMsg::user("u").tokens(1),
                    ],
                );
                has(&d, "context_budget_cutover")
            })
            .collect::<Vec<_>>()
    };
    // The first turn's input is exactly 1,000 tokens: not over 1,000; over 999 it fires.
    assert!(!run(1000)[0]);
    assert!(run(999)[0]);
    let mut sim = Sim::new(
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1, "MaxSingleTurnInputTokens": 100}),
    );
    sim.call("main", vec![TestMsg::user("start").tokens(500)]);
    let mut fired = 0;
    for _ in 0..3 {
        let d = sim.call(
            "main",
            vec![
                TestMsg::assistant("r").tokens(500),
                TestMsg::user("u").tokens(500),
            ],
        );
        fired += has(&d, "context_budget_cutover") as usize;
        let e = event(&d, "context_budget_cutover");
        assert!(
            e.message
                .contains("exceeded MaxSingleTurnInputTokens (100)"),
            "{}",
            e.message
        );
    }
    assert_eq!(fired, 3, "every turn, grace or not");
}

/// CompactionCoordinator.NeedsPreTurnCompaction: Σ Content.Length / 3 > MaxSingleTurnInputTokens
/// compacts before the next turn, whatever the turn's billed input.
#[test]
fn needs_pre_turn_compaction_by_chars_over_three() {
    let mut sim = Sim::new(
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 10, "MaxSingleTurnInputTokens": 1000}),
    );
    sim.call("main", vec![TestMsg::user(&"x".repeat(1000)).tokens(5)]);
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant(&"y".repeat(1000)).tokens(5),
            TestMsg::user(&"z".repeat(1200)).tokens(5),
        ],
    );
    assert!(!has(&d, "compaction"), "333 + 333 ≤ 1,000: {:?}", d.events);
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant(&"w".repeat(1500)).tokens(5),
            TestMsg::user("q").tokens(5),
        ],
    );
    assert!(has(&d, "pre_turn_compaction"), "{:?}", d.events);
    assert!(
        !has(&d, "context_budget_cutover"),
        "the turn's input (tokens) is small"
    );
    // 4 messages, keep clamped to 3.
    assert_eq!(summary_range(&d), (0, 1));
}

/// EvaluateCompactionTriggerAsync: a turn that called compact_conversation
/// (CompactionPlugin.FunctionName) compacts, reason agent_requested.
#[test]
fn evaluate_trigger_agent_requested_compaction() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1}));
    sim.call("main", vec![TestMsg::user("start").tokens(100)]);
    sim.call(
        "main",
        vec![
            TestMsg::assistant("a").tokens(100),
            TestMsg::user("b").tokens(100),
        ],
    );
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("k", "compact_conversation", "{}").tokens(10),
            TestMsg::tool_result("k", "compact_conversation", "COMPACT_REQUESTED").tokens(10),
        ],
    );
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant("ok").tokens(10),
            TestMsg::user("c").tokens(10),
        ],
    );
    assert!(
        event(&d, "compaction").message.contains("agent_requested"),
        "{:?}",
        d.events
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

/// One tool-loop turn, then a plain turn: at the plain turn's end (2 turns) the first turn and
/// the second request are compacted.
fn intent_history(sim: &mut Sim) -> Decision {
    tool_turns(sim);
    sim.call(
        "main",
        vec![TestMsg::assistant(&"ok ".repeat(50)), TestMsg::user("more")],
    )
}

/// CompactAsync → CompactFromIntentAsync / BuildIntentDerivedSummary (ctxlab reads the intent
/// log's entries from the logged tool calls).
#[test]
fn compact_from_intent_writes_the_operations_list_from_the_tool_calls() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 2, "KeepRecentTurns": 1, "Mode": "intent"}));
    let d = intent_history(&mut sim);
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
        text.starts_with("[INTENT-DERIVED RECONSTRUCTION — covers turns 1–1]"),
        "{text}"
    );
    assert!(
        text.contains("  ✓ write_file → \"src/api/users.go\" (turn 1, main)"),
        "{text}"
    );
    assert!(text.contains("  ✗ patch_file → \"src/api/auth.go\" — oldText not found in src/api/auth.go (turn 1, main)"), "{text}");
    assert!(
        text.contains("  ✓ shell_run → \"go test ./...\" (turn 1, main)"),
        "{text}"
    );
    assert!(text.contains(
        "RESUMPTION NOTE: History compacted from intent log — deterministic ground truth."
    ));
    let e = event(&d, "compaction");
    assert!(e.tokens_after > 0 && e.tokens_after < e.tokens_before);
}

#[test]
fn hybrid_mode_prepends_the_intent_text_to_a_simulated_summary() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 2, "KeepRecentTurns": 1, "Mode": "hybrid"}));
    let d = intent_history(&mut sim);
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

/// CompactAsync: lossless with no snapshotter falls back to LLM mode (a log has none).
#[test]
fn compact_async_lossless_falls_back_to_llm() {
    let mut sim =
        Sim::new(json!({"TriggerTurnCount": 2, "KeepRecentTurns": 1, "Mode": "lossless"}));
    let ds = turns(&mut sim, 3, 100);
    assert!(has(&ds[0], "lossless_fallback"));
    let OpKind::Summarize {
        max_tokens, text, ..
    } = &ds[2].ops[0].kind
    else {
        panic!("{:?}", ds[2].ops)
    };
    assert!(
        text.is_empty() && *max_tokens > 0,
        "a simulated LLM summary"
    );
}

/// OrchestratorBuilder.BuildAsync's startup checks, in its words, in every mode.
#[test]
fn orchestrator_builder_startup_checks() {
    let e = make_err(json!({"TriggerTurnCount": 0, "KeepRecentTurns": 0}));
    assert!(
        e.starts_with("Compaction.TriggerTurnCount must be a positive integer (got 0)."),
        "{e}"
    );
    let e = make_err(json!({"KeepRecentTurns": 0}));
    assert_eq!(e, "Compaction.KeepRecentTurns must be at least 1.");
    for mode in ["llm", "window"] {
        let e = make_err(json!({"TriggerTurnCount": 10, "KeepRecentTurns": 10, "Mode": mode}));
        assert_eq!(
            e,
            "Compaction.KeepRecentTurns (10) must be less than Compaction.TriggerTurnCount (10)."
        );
    }
    let e = make_err(json!({"Compaction": false, "CutoverAt": 1000}));
    assert!(e.contains("require a Compaction section"), "{e}");
}

/// TrimToWindow / ShouldCompact (window): Σ chars/4 per message (tool results are not message
/// Content), oldest user then assistant message dropped while over TokenBudget, leading
/// summaries kept, at least one message left.
#[test]
fn trim_to_window_drops_oldest_messages_by_per_message_estimate() {
    let mut sim = Sim::new(json!({"Mode": "window", "TokenBudget": 250}));
    let mut summary = TestMsg::user("earlier summary");
    summary.flags |= ctxlab_plugin_api::abi::FLAG_SUMMARY;
    sim.call(
        "main",
        vec![
            TestMsg::system("sys"),
            summary,
            TestMsg::user(&"q".repeat(400)),
        ],
    );
    // A huge tool result does not count: no trim.
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("t", "read_file", r#"{"path":"a"}"#),
            TestMsg::tool_result("t", "read_file", &"r".repeat(30_000)),
        ],
    );
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant(&"a".repeat(400)),
            TestMsg::user(&"q".repeat(400)),
        ],
    );
    assert!(
        !has(&d, "compaction"),
        "~203 tokens ≤ 250 (tool result not counted): {:?}",
        d.events
    );
    let d = sim.call(
        "main",
        vec![
            TestMsg::assistant(&"a".repeat(400)),
            TestMsg::user(&"q".repeat(400)),
        ],
    );
    assert!(has(&d, "compaction"), "{:?}", d.events);
    let ctx = sim.context("main");
    assert_eq!(ctx[0].text, "sys");
    assert_eq!(
        ctx[1].text, "earlier summary",
        "leading summaries are never dropped"
    );
    assert!(
        !ctx.iter().any(|m| m.text == "summary"),
        "window writes no summary"
    );
    // A tiny budget trims to one message of the history (plus the new request).
    let mut sim = Sim::new(json!({"Mode": "window", "TokenBudget": 1}));
    sim.call("main", vec![TestMsg::user(&"q".repeat(400))]);
    for _ in 0..3 {
        sim.call(
            "main",
            vec![
                TestMsg::assistant(&"a".repeat(400)),
                TestMsg::user(&"q".repeat(400)),
            ],
        );
    }
    let ctx = sim.context("main");
    assert_eq!(
        ctx.len(),
        2,
        "{:?}",
        ctx.iter().map(|m| &m.text[..1]).collect::<Vec<_>>()
    );
}

/// ContextWindowFilter.TruncateReplayContent / DefaultMaxReplayChars: the 2,000-char cap applies
/// when the session resumes from the checkpoint after a compaction, not at every call.
#[test]
fn default_max_replay_chars_applies_at_checkpoint_resume_only() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2}));
    sim.call("main", vec![TestMsg::user("a")]);
    let d = sim.call(
        "main",
        vec![TestMsg::assistant(&"v".repeat(3000)), TestMsg::user("b")],
    );
    assert!(d.ops.is_empty(), "no cut at an ordinary call: {:?}", d.ops);
    sim.call(
        "main",
        vec![TestMsg::assistant("short"), TestMsg::user("c")],
    );
    let d = sim.call(
        "main",
        vec![TestMsg::assistant(&"w".repeat(3000)), TestMsg::user("d")],
    );
    let cut = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Truncate { .. }))
        .expect("resume cut");
    assert_eq!(cut.scope, Scope::Persistent);
    let OpKind::Truncate { head, .. } = cut.kind else {
        unreachable!()
    };
    assert_eq!(head, 2000);
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
                .contains("reached context budget cutover"));
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
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1, "CutoverAt": 1000, "AntiThrashWindow": 0}),
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
        json!({"TriggerTurnCount": 1000, "KeepRecentTurns": 1, "CutoverAt": 1000, "MaxSingleTurnInputTokens": 1500}),
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
        e.message
            .contains("exceeded MaxSingleTurnInputTokens (1,500)"),
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
        .contains("window_size"));
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

/// ConversationCompactor.ShouldCompact / IsAntiThrashed / RecordSavings: the guard gates only
/// the turn-count trigger, measures each compaction by (compacted − 1) / total messages, and has
/// no lift of its own; agent-requested compaction (and CutoverAt) still compact.
#[test]
fn anti_thrash_gates_only_the_turn_count_path_by_message_count() {
    let mut sim = Sim::new(
        json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2, "AntiThrashWindow": 2, "AntiThrashMinSavingsRatio": 0.6}),
    );
    let ds = turns(&mut sim, 14, 10);
    let at: Vec<usize> = (0..ds.len())
        .filter(|&i| has(&ds[i], "compaction"))
        .collect();
    // Call 3: 6 messages, 4 compacted → 3/6 = 50 %; call 5: 7 messages, 5 compacted → 4/7 =
    // 57 %: both under 60 %, so from call 7 on the turn-count trigger stays off.
    assert_eq!(at, vec![3, 5], "{at:?}");
    let first = (0..ds.len())
        .find(|&i| has(&ds[i], "anti_thrash"))
        .expect("suppressed");
    assert_eq!(first, 7);
    let e = event(&ds[7], "anti_thrash");
    assert_eq!(e.kind, EventKind::Suppressed);
    assert!(e.message.contains("50.0%, 57.1%"), "{}", e.message);
    // An agent request is not gated.
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("k", "compact_conversation", "{}"),
            TestMsg::tool_result("k", "compact_conversation", "COMPACT_REQUESTED"),
        ],
    );
    let d = sim.call(
        "main",
        vec![TestMsg::assistant("ok"), TestMsg::user("next")],
    );
    assert!(
        event(&d, "compaction").message.contains("agent_requested"),
        "{:?}",
        d.events
    );
    // With the guard off the same history compacts every other turn.
    let mut sim =
        Sim::new(json!({"TriggerTurnCount": 3, "KeepRecentTurns": 2, "AntiThrashWindow": 0}));
    let ds = turns(&mut sim, 14, 10);
    assert!(ds.iter().filter(|d| has(d, "compaction")).count() > 2);
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

/// Checkpoint resume (CompactionCoordinator.TryTriggerCompactionAsync → resume from the
/// checkpoint; AgentMessage carries Content and tool-call records, not results): the kept turns'
/// tool frames and results are not replayed. A message with text and tool calls keeps its calls
/// (a ctxlab op cannot split it), so its results become a placeholder.
#[test]
fn checkpoint_resume_does_not_replay_kept_tool_results() {
    let mut sim = Sim::new(json!({"TriggerTurnCount": 2, "KeepRecentTurns": 1}));
    sim.call("main", vec![TestMsg::user("a")]);
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("c1", "read_file", r#"{"path":"x"}"#),
            TestMsg::tool_result("c1", "read_file", "xx"),
        ],
    );
    sim.call(
        "main",
        vec![TestMsg::assistant("done1"), TestMsg::user("b")],
    );
    sim.call(
        "main",
        vec![
            TestMsg::tool_call("c2", "read_file", r#"{"path":"y"}"#),
            TestMsg::tool_result("c2", "read_file", "yy"),
        ],
    );
    let mut mixed = TestMsg::tool_call("c3", "shell_run", r#"{"command":"ls"}"#);
    mixed.text = "let me look at the tree first".into();
    sim.call(
        "main",
        vec![mixed, TestMsg::tool_result("c3", "shell_run", "a b c")],
    );
    let d = sim.call(
        "main",
        vec![TestMsg::assistant("done2"), TestMsg::user("c")],
    );
    assert!(has(&d, "compaction"), "{:?}", d.events);
    let ctx = sim.context("main");
    let ids: Vec<&str> = ctx
        .iter()
        .flat_map(|m| m.tools.iter().map(|t| t.id.as_str()))
        .collect();
    assert!(!ids.contains(&"c1") && !ids.contains(&"c2"), "{ids:?}");
    let c3 = ctx
        .iter()
        .find(|m| m.tools.iter().any(|t| t.id == "c3" && t.is_result))
        .expect("c3 result kept");
    assert!(
        c3.text.contains("not replayed after compaction"),
        "{}",
        c3.text
    );
    let texts: Vec<&str> = ctx.iter().map(|m| m.text.as_str()).collect();
    // The summary, then the kept turn (its pure frame and result gone), then the new request.
    assert_eq!(
        &texts[1..],
        &["let me look at the tree first", texts[2], "done2", "c"]
    );
}
