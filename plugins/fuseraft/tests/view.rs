//! ContextWindow view filters, artifact offloading, the in-turn sliding window, trim retry.

mod common;
use common::*;
use ctxlab_plugin_api::sdk::*;
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use serde_json::json;

fn decide(p: serde_json::Value, msgs: Vec<TestMsg>) -> (TestCall, Decision) {
    let mut s = make(p);
    let tc = TestCall::new(msgs);
    let d = tc.decide(s.as_mut()).expect("decide");
    check(&tc, &d);
    (tc, d)
}

/// Which positions leave the view (this-call drops).
fn dropped(d: &Decision) -> Vec<usize> {
    d.ops
        .iter()
        .filter(|o| o.kind == OpKind::Drop)
        .inspect(|o| assert_eq!(o.scope, Scope::ThisCall))
        .flat_map(|o| o.start..o.end)
        .collect()
}

fn history() -> Vec<TestMsg> {
    vec![
        TestMsg::system("sys"), // 0
        TestMsg::user("task"),  // 1
        TestMsg::tool_call("a", "read_file", r#"{"path":"a.rs"}"#).agent("Developer"), // 2
        TestMsg::tool_result("a", "read_file", "fn a() {}"), // 3
        TestMsg::assistant("I read a.rs").agent("Developer"), // 4
        TestMsg::assistant("tests pass").agent("Tester"), // 5
        TestMsg::user("review please"), // 6
    ]
}

#[test]
fn text_only_strips_frames_and_results_for_this_call_only() {
    let (_, d) = decide(json!({"TextOnly": true}), history());
    assert_eq!(dropped(&d), vec![2, 3]);
}

#[test]
fn text_only_keeps_the_text_of_a_mixed_message_and_empties_its_results() {
    let mut mixed = TestMsg::tool_call("b", "shell_run", r#"{"command":"ls"}"#);
    mixed.text = format!("Let me look. {}", mixed.text);
    let msgs = vec![
        TestMsg::user("t"),
        mixed,
        TestMsg::tool_result("b", "shell_run", "x y z"),
        TestMsg::assistant("ok"),
    ];
    let (_, d) = decide(json!({"TextOnly": true}), msgs);
    assert!(dropped(&d).is_empty(), "{:?}", d.ops);
    assert!(
        d.ops
            .iter()
            .any(|o| o.start == 2 && matches!(o.kind, OpKind::Mask { .. })),
        "{:?}",
        d.ops
    );
}

#[test]
fn exclude_agents_strips_their_messages_and_every_tool_result() {
    let (_, d) = decide(json!({"ExcludeAgents": ["Tester"]}), history());
    // Tester's reply goes; tool results go even without TextOnly, and the frame with them.
    assert_eq!(dropped(&d), vec![2, 3, 5]);
}

#[test]
fn max_turn_age_keeps_the_last_turns_after_the_strip() {
    let (_, d) = decide(json!({"MaxTurnAge": 1}), history());
    // Last assistant turn: Tester's reply (5) and the open request (6); system prompt stays.
    assert_eq!(dropped(&d), vec![1, 2, 3, 4]);
    let (_, d) = decide(
        json!({"MaxTurnAge": 1, "ExcludeAgents": ["Tester"]}),
        history(),
    );
    // Tester's reply and the tool frame are stripped first, so only the Developer's reply is an
    // assistant turn: everything before it belongs to that turn and stays.
    assert_eq!(dropped(&d), vec![2, 3, 5]);
}

#[test]
fn max_tail_messages_caps_the_filtered_view_and_warns_at_the_cap_fraction() {
    let (_, d) = decide(json!({"MaxTailMessages": 3}), history());
    assert_eq!(dropped(&d), vec![1, 2, 3]);
    assert!(!has(&d, "context_cap_warning"));
    let (_, d) = decide(
        json!({"MaxTailMessages": 10, "ContextCapFraction": 0.5}),
        history(),
    );
    assert!(dropped(&d).is_empty());
    let e = event(&d, "context_cap_warning");
    assert_eq!(e.kind, EventKind::Warn);
    assert!(e.message.contains("7 messages"), "{}", e.message);
    let (_, d) = decide(
        json!({"MaxTailMessages": 10, "ContextCapFraction": 0.8}),
        history(),
    );
    assert!(!has(&d, "context_cap_warning"), "7 < 8");
}

fn truncations(d: &Decision) -> Vec<(usize, u64, String)> {
    d.ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Truncate { head, marker, .. } => Some((o.start, *head, marker.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn max_tool_result_chars_with_overrides_and_the_consumed_read_rule() {
    let big = "x".repeat(10_000);
    let msgs = vec![
        TestMsg::user("t"),
        TestMsg::tool_call("r1", "read_file", r#"{"path":"a.rs"}"#),
        TestMsg::tool_result("r1", "read_file", &big), // 2: consumed (a.rs written at 7)
        TestMsg::tool_call("r2", "read_file", r#"{"path":"b.rs"}"#),
        TestMsg::tool_result("r2", "read_file", &big), // 4: unconsumed
        TestMsg::tool_call("g", "grep_file", r#"{"pattern":"x"}"#),
        TestMsg::tool_result("g", "grep_file", &big), // 6: override
        TestMsg::tool_call("w", "write_file", r#"{"path":"a.rs","content":"y"}"#),
        TestMsg::tool_result("w", "write_file", "ok"),
        TestMsg::tool_call("s", "search_content", r#"{"query":"x"}"#),
        TestMsg::tool_result("s", "search_content", &big), // 10: override 0 = no truncation
        TestMsg::assistant("done"),
    ];
    let (_, d) = decide(
        json!({"MaxToolResultChars": 8000, "ToolResultCharOverrides": {"grep_file": 5000, "search_content": 0}}),
        msgs.clone(),
    );
    let t = truncations(&d);
    assert_eq!(
        t.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(2, 500), (4, 8000), (6, 5000)]
    );
    assert!(t[0].2.contains("modified later"), "{}", t[0].2);
    assert!(t[1].2.contains("2,000 chars omitted"), "{}", t[1].2);
    // Without MaxToolResultChars nothing is cut (overrides alone mean nothing).
    let (_, d) = decide(
        json!({"ToolResultCharOverrides": {"grep_file": 5000}}),
        msgs,
    );
    assert!(truncations(&d).is_empty());
}

#[test]
/// ContextWindowFilter.Apply step 7 (TruncateAssistantContent): only when MaxReplayChars > 0;
/// the 2,000 default (DefaultMaxReplayChars) is for checkpoint resume, not for every call.
fn max_replay_chars_cuts_only_when_set_and_never_cuts_summaries() {
    let long = "y".repeat(3_000);
    let mut summary = TestMsg::user(&long);
    summary.flags |= ctxlab_plugin_api::abi::FLAG_SUMMARY;
    let mut s = TestMsg::assistant(&long);
    s.flags |= ctxlab_plugin_api::abi::FLAG_SUMMARY;
    let msgs = vec![
        summary,
        s,
        TestMsg::user("q"),
        TestMsg::assistant(&long),
        TestMsg::user("next"),
    ];
    let (_, d) = decide(json!({}), msgs.clone());
    assert!(truncations(&d).is_empty(), "0 = off at an ordinary call");
    let (_, d) = decide(json!({"MaxReplayChars": 2500}), msgs.clone());
    let t = truncations(&d);
    assert_eq!(t.len(), 1, "summaries are never cut");
    assert_eq!((t[0].0, t[0].1), (3, 2500));
    assert!(t[0].2.contains("3,000 chars total"));
    // Per-agent settings: the override applies to the agent it names only.
    let (_, d) = decide(
        json!({"Agents": "{\"main\": {\"MaxReplayChars\": 1000}}"}),
        msgs.clone(),
    );
    assert_eq!(truncations(&d)[0].1, 1000);
    let (_, d) = decide(
        json!({"Agents": "{\"Reviewer\": {\"MaxReplayChars\": 1000}}"}),
        msgs,
    );
    assert!(truncations(&d).is_empty());
}

/// ToolResultArtifactStore.TryOffload: offloaded when content.Length > ThresholdChars (40,000);
/// BuildStub's four lines (the id is a random GUID prefix in fuseraft, an FNV-1a hash here).
#[test]
fn results_over_40000_chars_are_offloaded_to_the_seeds_stub() {
    let mut sim = Sim::new(json!({}));
    sim.call("main", vec![TestMsg::user("read it")]);
    let d = sim.call(
        "main",
        vec![
            TestMsg::tool_call("c", "read_file", r#"{"path":"src/LargeService.cs"}"#),
            TestMsg::tool_result("c", "read_file", &"z".repeat(52_000)),
        ],
    );
    let op = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Offload { .. }))
        .expect("offload");
    assert_eq!(op.scope, Scope::Persistent);
    let OpKind::Offload { stub } = &op.kind else {
        unreachable!()
    };
    assert!(stub.starts_with("[result offloaded — 52,000 chars stored to artifact store]\nTool: read_file | path=src/LargeService.cs\nArtifact: "), "{stub}");
    assert!(has(&d, "artifact_offloaded"));
    // 40,000 chars exactly stays inline.
    let d = sim.call(
        "main",
        vec![
            TestMsg::tool_call("d", "read_file", r#"{"path":"x"}"#),
            TestMsg::tool_result("d", "read_file", &"z".repeat(40_000)),
        ],
    );
    assert!(!d
        .ops
        .iter()
        .any(|o| matches!(o.kind, OpKind::Offload { .. })));
}

fn tool_loop(sim: &mut Sim, calls: usize, size: usize) -> Vec<Decision> {
    let mut out = vec![sim.call("Developer", vec![TestMsg::user("go")])];
    for i in 0..calls {
        out.push(sim.call(
            "Developer",
            vec![
                    TestMsg::tool_call(&format!("c{i}"), "shell_run", r#"{"command":"make"}"#)
                        .agent("Developer"),
                    TestMsg::tool_result(&format!("c{i}"), "shell_run", &"o".repeat(size)),
                ],
        ));
    }
    out
}

#[test]
fn in_turn_sliding_window_keeps_the_last_pairs_and_the_call_ids() {
    let mut sim = Sim::new(json!({"MaxInTurnToolPairs": 2}));
    let ds = tool_loop(&mut sim, 5, 100);
    assert!(!has(&ds[2], "sliding_window"));
    assert!(has(&ds[3], "sliding_window"), "{:?}", ds[3].events);
    let ctx = sim.context("Developer");
    let results: Vec<&TestMsg> = ctx.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 5);
    for r in &results[..3] {
        assert_eq!(r.text, "[result omitted — sliding window]");
    }
    for r in &results[3..] {
        assert_eq!(r.text.len(), 100);
    }
    assert_eq!(results[0].tools[0].id, "c0", "the call id is kept");
    // A new turn starts a new window.
    let d = sim.call(
        "Developer",
        vec![
            TestMsg::assistant("done").agent("Developer"),
            TestMsg::user("more"),
        ],
    );
    assert!(!has(&d, "sliding_window"));
}

#[test]
fn in_turn_context_tokens_trims_oldest_only_when_over_budget() {
    let mut sim = Sim::new(json!({"MaxInTurnContextTokens": 1000}));
    let ds = tool_loop(&mut sim, 3, 1600); // 400 tokens each: 3 × 400 > 1,000 at the third
    assert!(!has(&ds[2], "sliding_window"));
    assert!(has(&ds[3], "sliding_window"));
    let masked = sim
        .context("Developer")
        .iter()
        .filter(|m| m.text == "[result omitted — sliding window]")
        .count();
    assert_eq!(masked, 1);
}

#[test]
fn adaptive_trim_retry_runs_its_three_stages_in_order() {
    let mut msgs = vec![TestMsg::user("t")];
    for i in 0..6 {
        msgs.push(TestMsg::tool_call(
            &format!("c{i}"),
            "shell_run",
            r#"{"command":"x"}"#,
        ));
        msgs.push(TestMsg::tool_result(
            &format!("c{i}"),
            "shell_run",
            &"o".repeat(20_000),
        ));
    }
    msgs.push(TestMsg::assistant(&"t".repeat(12_000)));
    msgs.push(TestMsg::user("next"));
    let total: u64 = msgs.iter().map(|m| m.token_count()).sum();
    // Stage 1 suffices: 6 × 4,000 chars ≈ 6,000 tokens + 3,000 of text.
    let (_, d) = decide(json!({"MaxReplayChars": 100000}), msgs.clone());
    assert!(!has(&d, "trim_retry_stage_1"), "fits: {total}");
    let run = |window: u64| {
        let mut s = make(json!({"MaxReplayChars": 100000}));
        let tc = TestCall::new(msgs.clone()).window(window);
        let mut tc = tc;
        tc.budget.max_output = 0;
        let d = tc.decide(s.as_mut()).unwrap();
        check(&tc, &d);
        d
    };
    let d = run(10_000);
    assert_eq!(codes(&d), vec!["trim_retry_stage_1"]);
    assert!(truncations(&d).iter().filter(|t| t.1 == 4000).count() == 6);
    let d = run(5_000);
    assert_eq!(codes(&d), vec!["trim_retry_stage_1", "trim_retry_stage_2"]);
    let d = run(3_200);
    assert_eq!(
        codes(&d),
        vec![
            "trim_retry_stage_1",
            "trim_retry_stage_2",
            "trim_retry_stage_3"
        ]
    );
    assert_eq!(dropped(&d).len(), 12, "all tool messages dropped");
    let d = run(1_000);
    assert_eq!(codes(&d).last(), Some(&"context_length_exceeded"));
}

#[test]
fn view_filters_leave_the_shared_history_untouched() {
    let mut sim = Sim::new(json!({"TextOnly": true, "MaxTailMessages": 2}));
    sim.call("main", history());
    assert_eq!(
        sim.context("main").len(),
        7,
        "this-call filters never change the history"
    );
}

#[test]
fn decisions_stay_valid_over_a_long_mixed_session() {
    let mut sim = Sim::new(json!({
        "TriggerTurnCount": 12, "KeepRecentTurns": 4, "Mode": "intent",
        "WarnAt": 20000, "CutoverAt": 40000, "MaxInTurnToolPairs": 3,
        "Agents": "{\"Reviewer\": {\"TextOnly\": true, \"MaxTurnAge\": 3, \"MaxToolResultChars\": 300}}"
    }));
    let mut compactions = 0;
    for t in 0..40 {
        for agent in ["Developer", "Reviewer"] {
            sim.call(agent, vec![TestMsg::user(&format!("task {t}"))]);
            for k in 0..3 {
                let id = format!("{agent}{t}-{k}");
                let d = sim.call(
                    agent,
                    vec![
                        TestMsg::tool_call(&id, "read_file", &format!(r#"{{"path":"f{k}.rs"}}"#))
                            .agent(agent),
                        TestMsg::tool_result(&id, "read_file", &"r".repeat(1500)),
                    ],
                );
                compactions += has(&d, "compaction") as usize;
            }
            let d = sim.call(
                agent,
                vec![TestMsg::assistant(&"done ".repeat(600)).agent(agent)],
            );
            compactions += has(&d, "compaction") as usize;
        }
    }
    assert!(compactions > 4, "{compactions}");
}
