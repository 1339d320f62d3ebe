use super::*;
use ctxlab_plugin_api::abi::{BudgetView, CallView, StrRef};
use ctxlab_plugin_api::testing::{Rng, TestCall, TestMsg};
use serde_json::{json, Value};

fn strategy(params: Value) -> Box<dyn Strategy> {
    let p = Params::resolve(&config::schema(), &params).unwrap();
    ContextStrategy.create(p).unwrap()
}

/// A small window so crafted histories cross it: budget = 1,000 − 0.
fn small(extra: Value) -> Box<dyn Strategy> {
    let mut p = json!({"max_context_tokens": 1000, "system_prompt_tokens": 0});
    if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    strategy(p)
}

fn lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("line {i:04} of output"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Event codes, without the note that the test logs carry no timestamps.
fn codes(d: &Decision) -> Vec<&str> {
    d.events
        .iter()
        .map(|e| e.code.as_str())
        .filter(|c| *c != "max_duration_unknown")
        .collect()
}

/// The decision without its `AllowSplit`, which must come first and cover the whole context when
/// the decision removes anything (phi-core's removals are its own: they may split tool pairs).
fn edits(mut d: Decision) -> Decision {
    let removes = d.ops.iter().any(|o| {
        matches!(
            o.kind,
            OpKind::Drop | OpKind::Summarize { .. } | OpKind::DropResults { .. }
        )
    });
    let allow = d.ops.iter().position(|o| o.kind == OpKind::AllowSplit);
    assert_eq!(allow, removes.then_some(0), "{:?}", d.ops.first());
    if allow.is_some() {
        let a = d.ops.remove(0);
        assert_eq!(a.start, 0);
    }
    d
}

fn gauge(d: &Decision, name: &str) -> f64 {
    d.gauges
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap()
}

#[test]
fn estimate_follows_phi_core_rules() {
    let call = TestCall::new(vec![
        TestMsg::user("hello"),                          // ceil(5/4)+4 = 6
        TestMsg::tool_call("c1", "read", "{\"p\":1}"),   // ceil(7/4)+4 + ceil(4/4)+8 = 15
        TestMsg::tool_result("c1", "read", "abcdefghi"), // ceil(9/4) + ceil(4/4)+8 = 12
        TestMsg::user("").image(100),                    // 0+4 + 85 (clamped up)
        TestMsg::user("").image(20_000_000),             // 0+4 + 16,000 (clamped down)
    ]);
    let mut s = strategy(json!({"system_prompt_tokens": 0}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(gauge(&d, "estimate"), (6 + 15 + 12 + 89 + 16_004) as f64);
}

#[test]
fn estimate_is_kept_incrementally_and_rescanned_after_a_compaction() {
    let mut s = strategy(json!({}));
    let mut msgs = vec![TestMsg::user("abcd"), TestMsg::assistant("efgh")];
    let d = TestCall::new(msgs.clone())
        .decide(s.as_mut())
        .map(edits)
        .unwrap();
    assert_eq!(gauge(&d, "estimate"), (4_000 + 5 + 5) as f64);
    msgs.push(TestMsg::user("12345678"));
    let mut c = TestCall::new(msgs.clone());
    c.agent_call_index = 1;
    c.new_messages = 1;
    let d = c.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(gauge(&d, "estimate"), (4_000 + 5 + 5 + 6) as f64);
    // A history that does not extend the one seen (the host rewrote it) is rescanned.
    let mut c = TestCall::new(vec![TestMsg::user("x")]);
    c.agent_call_index = 2;
    c.new_messages = 0;
    let d = c.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(gauge(&d, "estimate"), (4_000 + 5) as f64);
}

#[test]
fn trigger_is_headroom_below_threshold_and_nothing_happens_until_the_budget_is_passed() {
    // Defaults: headroom = 0.90 − 4,000/100,000 − est/100,000 < 0.05  ⇔  est > 81,000.
    let msg = |tokens_est: u64| TestMsg::user(&"a".repeat(((tokens_est - 4) * 4) as usize));
    let mut s = strategy(json!({}));
    let d = TestCall::new(vec![msg(80_900)])
        .decide(s.as_mut())
        .map(edits)
        .unwrap();
    assert!(codes(&d).is_empty() && d.ops.is_empty(), "{:?}", d.events);
    assert!((gauge(&d, "headroom_pct") - 5.1).abs() < 1e-9);

    let mut s = strategy(json!({}));
    let d = TestCall::new(vec![msg(81_001)])
        .decide(s.as_mut())
        .map(edits)
        .unwrap();
    assert_eq!(codes(&d), vec!["compaction_nothing_to_do"]);
    assert!(d.ops.is_empty());
    let e = d
        .events
        .iter()
        .find(|e| e.code == "compaction_nothing_to_do")
        .unwrap();
    assert!(e.message.contains("fits budget 96,000"), "{}", e.message);

    let t = strategy(json!({})).thresholds();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].kind, ThresholdKind::Trigger);
    assert_eq!(t[0].tokens, 85_000);
}

#[test]
fn level1_truncates_long_tool_outputs_and_stops_when_that_fits() {
    let big = lines(200); // ~4,000 chars: over the 1,000 budget alone
    let call = TestCall::new(vec![
        TestMsg::user("read it"),
        TestMsg::tool_call("c1", "read", "{}"),
        TestMsg::tool_result("c1", "read", &big),
        TestMsg::assistant("ok"),
    ]);
    let mut s = small(json!({"legacy_tool_output_max_lines": 10}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(
        codes(&d),
        vec!["CompactionStarted", "level1_truncate_tool_outputs"]
    );
    assert_eq!(d.ops.len(), 1);
    let op = &d.ops[0];
    assert_eq!((op.start, op.end), (2, 3));
    let OpKind::Truncate { head, tail, marker } = &op.kind else {
        panic!("{op:?}")
    };
    assert_eq!(marker, "\n\n[... 190 lines truncated ...]\n\n");
    let expect_head: String = big.lines().take(5).collect::<Vec<_>>().join("\n");
    let expect_tail: String = big.lines().skip(195).collect::<Vec<_>>().join("\n");
    assert_eq!(*head, expect_head.chars().count() as u64);
    assert_eq!(*tail, expect_tail.chars().count() as u64);
    let e = d
        .events
        .iter()
        .find(|e| e.code == "level1_truncate_tool_outputs")
        .unwrap();
    assert!(
        e.tokens_after < e.tokens_before && e.tokens_after <= 1000,
        "{e:?}"
    );
}

/// Turns of: assistant tool call + short result, so level 1 finds nothing to cut.
fn turns(n: usize, result: &str) -> Vec<TestMsg> {
    let mut v = vec![TestMsg::user("start the job")];
    for i in 0..n {
        let id = format!("c{i}");
        v.push(TestMsg::tool_call(
            &id,
            "bash",
            &format!("{{\"cmd\":\"step {i}\"}}"),
        ));
        v.push(TestMsg::tool_result(&id, "bash", result));
    }
    v
}

#[test]
fn level2_summarizes_turns_older_than_keep_recent() {
    let msgs = turns(20, &"x".repeat(200)); // 41 messages, ~70 est each: ~2,900
    let call = TestCall::new(msgs);
    let mut s = small(json!({}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(
        codes(&d),
        vec![
            "CompactionStarted",
            "level1_truncate_tool_outputs",
            "level2_summarize_old_turns"
        ]
    );
    let ev = |c: &str| d.events.iter().find(|e| e.code == c).unwrap();
    assert_eq!(
        ev("level1_truncate_tool_outputs").kind,
        EventKind::Note,
        "L1 changed nothing"
    );
    assert_eq!(ev("level2_summarize_old_turns").kind, EventKind::Compaction);
    // 41 messages, keep_recent 10 → boundary 31 (a safe cut: 31 is a tool call). Turns at
    // 1..31 are 15 assistant+result pairs; the user message at 0 stays.
    assert_eq!(d.ops.len(), 15);
    for (k, op) in d.ops.iter().enumerate() {
        assert_eq!((op.start, op.end), (1 + 2 * k, 3 + 2 * k));
        let OpKind::Summarize {
            role,
            text,
            max_tokens,
            ..
        } = &op.kind
        else {
            panic!("{op:?}")
        };
        assert_eq!(*role, Role::User);
        assert_eq!(*max_tokens, 0);
        assert_eq!(text, "[Summary] [Assistant used 1 tool(s)]");
    }
    assert!(ev("level2_summarize_old_turns").tokens_after <= 1000);
}

#[test]
fn level2_summarizes_every_old_assistant_message_in_one_compaction() {
    // phi-core has no cap: 405 old turns are 405 summaries in one decision.
    let call = TestCall::new(turns(410, &"x".repeat(200)));
    let mut s = strategy(json!({"max_context_tokens": 20_000, "system_prompt_tokens": 0}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    // 821 messages, keep_recent 10 → boundary 811 (a tool call): 405 old turns.
    assert_eq!(d.ops.len(), 405);
    assert!(d
        .ops
        .iter()
        .all(|op| matches!(op.kind, OpKind::Summarize { .. }) && op.end - op.start == 2));
    assert_eq!(d.ops[0].start, 1);
    assert!(!codes(&d).contains(&"level3_drop_middle"));
}

#[test]
fn level2_summary_texts_follow_phi_core() {
    // compact_messages.rs level2_summarize_old_turns: text blocks of at most 200 bytes joined by
    // " " (the text wins over tool calls), else "[Assistant used N tool(s)]", else
    // "[Assistant response]"; every old assistant message is summarized, even a short one.
    let mut with_text = TestMsg::tool_call("c1", "read", "{}");
    with_text.text = "Let me read it.\n{}".into();
    let msgs = vec![
        TestMsg::user("go"),
        with_text,
        TestMsg::tool_result("c1", "read", &"r".repeat(4000)),
        TestMsg::assistant("ok"),
        TestMsg::assistant(&"long ".repeat(50)),
        TestMsg::tool_call("c2", "bash", "{\"cmd\":\"ls\"}"),
        TestMsg::tool_result("c2", "bash", "a"),
        TestMsg::user("next"),
    ];
    let call = TestCall::new(msgs);
    let mut s = small(json!({"keep_recent": 1, "legacy_tool_output_max_lines": 1000}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    let texts: Vec<(usize, usize, &str)> = d
        .ops
        .iter()
        .map(|op| match &op.kind {
            OpKind::Summarize { text, .. } => (op.start, op.end, text.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        vec![
            (1, 3, "[Summary] Let me read it."),
            (3, 4, "[Summary] ok"),
            (4, 5, "[Summary] [Assistant response]"),
            (5, 7, "[Summary] [Assistant used 1 tool(s)]"),
        ]
    );
}

#[test]
fn level1_decides_the_same_with_results_remembered_from_earlier_calls() {
    // Call 1 has only short results (remembered as short); call 2 adds long ones. An instance that
    // saw call 1 must cut exactly what a fresh one cuts.
    let mut msgs = turns(30, &lines(5));
    let first = TestCall::new(msgs.clone());
    for i in 0..6 {
        let id = format!("long{i}");
        msgs.push(TestMsg::tool_call(&id, "bash", "{}"));
        msgs.push(TestMsg::tool_result(&id, "bash", &lines(400 + i)));
    }
    let second = TestCall::new(msgs);
    let mut warm = small(json!({}));
    let d1 = first.decide(warm.as_mut()).map(edits).unwrap();
    assert!(codes(&d1).contains(&"level1_truncate_tool_outputs"));
    let d2 = second.decide(warm.as_mut()).map(edits).unwrap();
    let fresh = second.decide(small(json!({})).as_mut()).map(edits).unwrap();
    assert_eq!(format!("{:?}", d2.ops), format!("{:?}", fresh.ops));
    assert!(d2
        .ops
        .iter()
        .any(|op| matches!(op.kind, OpKind::Truncate { .. })));
}

#[test]
fn level2_splits_a_tool_pair_at_the_keep_recent_boundary_as_phi_core_does() {
    // 40 messages: keep_recent 10 → boundary 30, a tool result whose call is at 29. phi-core
    // summarizes the call and keeps the result (compact_messages.rs: `boundary = len −
    // keep_recent`, no tool-pair adjustment); the op says it is phi-core's own result.
    let mut msgs = turns(19, &"x".repeat(200));
    msgs.push(TestMsg::user("next"));
    let call = TestCall::new(msgs);
    let mut s = small(json!({}));
    let raw = call.decide(s.as_mut()).unwrap();
    let allow = raw
        .ops
        .first()
        .filter(|o| o.kind == OpKind::AllowSplit)
        .cloned();
    let d = edits(raw);
    let last = d
        .ops
        .iter()
        .rfind(|o| matches!(o.kind, OpKind::Summarize { .. }))
        .unwrap();
    assert_eq!((last.start, last.end), (29, 30), "the result at 30 stays");
    assert_eq!(allow.map(|a| (a.start, a.end)), Some((0, 40)));
}

#[test]
fn system_messages_are_not_phi_core_messages() {
    // phi-core holds the system prompt outside its messages (only system_prompt_tokens counts):
    // a system message is neither estimated, nor counted by keep_first, nor dropped.
    let mut msgs = vec![TestMsg::system(&"s".repeat(4000))];
    msgs.extend((0..30).map(|i| TestMsg::user(&format!("{i:02} {}", "u".repeat(300)))));
    let call = TestCall::new(msgs);
    let mut s = small(json!({}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    // 30 user messages as in level3_keeps_first_and_recent…: first 2 (positions 1, 2) stay.
    assert_eq!(d.ops.len(), 1);
    assert_eq!((d.ops[0].start, d.ops[0].end), (3, 21));
}

#[test]
fn a_message_of_several_tool_results_is_several_phi_core_messages() {
    // Estimate: each result is content + ceil(name/4) + 8 (token.rs estimate_message).
    let mut m = TestMsg::tool_result("a", "read", "abcd");
    m.tools.push(ctxlab_plugin_api::testing::TestTool {
        id: "b".into(),
        name: "grep".into(),
        body: "efghijkl".into(),
        is_result: true,
        is_error: false,
    });
    m.text = "abcd\nefghijkl".into();
    let call = TestCall::new(vec![m]);
    let mut s = strategy(json!({"system_prompt_tokens": 0}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(gauge(&d, "estimate"), ((1 + 1 + 8) + (2 + 1 + 8)) as f64);
}

/// One assistant message calling `ids`, and one tool message holding their results (`body`).
fn parallel(ids: &[&str], body: &str) -> [TestMsg; 2] {
    let tool = |id: &str, is_result: bool| ctxlab_plugin_api::testing::TestTool {
        id: id.into(),
        name: "read".into(),
        body: if is_result { body.into() } else { "{}".into() },
        is_result,
        is_error: false,
    };
    let mut call = TestMsg::assistant(&vec!["{}"; ids.len()].join("\n"));
    call.tools = ids.iter().map(|id| tool(id, false)).collect();
    call.flags |= ctxlab_plugin_api::abi::FLAG_TOOL_CALL;
    let mut results = TestMsg::tool_result(ids[0], "read", body);
    results.tools = ids.iter().map(|id| tool(id, true)).collect();
    results.text = vec![body; ids.len()].join("\n");
    [call, results]
}

#[test]
fn level2_removes_the_tool_results_before_its_boundary_out_of_a_message_of_several() {
    // compact_messages.rs `level2_summarize_old_turns`: phi-core holds each parallel result as a
    // message of its own and `boundary = len − keep_recent` counts them; here it falls after the
    // first of three results: that one goes with its call's `[Summary]`, the other two stay.
    // The host removes it out of the message (DropResults, ABI 1.5).
    let body = "r".repeat(1_400);
    let mut msgs = vec![TestMsg::user(&"q".repeat(400))];
    msgs.extend(parallel(&["a", "b", "c"], &body));
    let call = TestCall::new(msgs);
    let mut s = small(json!({"keep_recent": 2}));
    let raw = call.decide(s.as_mut()).unwrap();
    assert_eq!(
        raw.ops.first().map(|o| (&o.kind, o.start, o.end)),
        Some((&OpKind::AllowSplit, 0, 3))
    );
    let d = edits(raw);
    assert_eq!(d.ops.len(), 2, "{:?}", d.ops);
    assert_eq!(
        (&d.ops[0].kind, d.ops[0].start),
        (
            &OpKind::Summarize {
                role: Role::User,
                max_tokens: 0,
                summarizer_input_tokens: 0,
                text: "[Summary] [Assistant used 3 tool(s)]".into(),
            },
            1
        )
    );
    assert_eq!(
        (&d.ops[1].kind, d.ops[1].start, d.ops[1].end),
        (
            &OpKind::DropResults {
                remove: vec![true, false, false],
                contents: vec![body.clone(), body.clone()],
            },
            2,
            3
        )
    );
    assert_eq!(codes(&d).last(), Some(&"level2_summarize_old_turns"));
}

#[test]
fn level3_keeps_the_newest_results_of_a_message_of_several_that_fit() {
    // compact_messages.rs `keep_within_budget_with_counter` (level 3 when keep_first and
    // keep_recent overlap): the newest phi-core messages that fit the budget, counted per tool
    // result. The first result (4,000 bytes on one line, left whole by level 1) does not fit;
    // the second, cut by level 1 (`truncate_text_head_tail`), does and stays, cut. The marker
    // stands in for the first whole message removed.
    let long = "r".repeat(4_000);
    let many = lines(100);
    let [call_msg, mut results] = parallel(&["a", "b"], &long);
    results.tools[1].body = many.clone();
    results.text = format!("{long}\n{many}");
    let msgs = vec![
        TestMsg::user("go"),
        call_msg,
        results,
        TestMsg::user(&"u".repeat(100)),
        TestMsg::user(&"v".repeat(100)),
    ];
    let call = TestCall::new(msgs);
    let mut s = small(json!({"keep_recent": 100, "legacy_tool_output_max_lines": 4}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(d.ops.len(), 2, "{:?}", d.ops);
    assert_eq!(
        (&d.ops[0].kind, d.ops[0].start, d.ops[0].end),
        (
            &OpKind::Summarize {
                role: Role::User,
                max_tokens: 0,
                summarizer_input_tokens: 0,
                text: "[Context compacted: 3 messages removed]".into(),
            },
            0,
            2
        )
    );
    assert_eq!(
        (&d.ops[1].kind, d.ops[1].start, d.ops[1].end),
        (
            &OpKind::DropResults {
                remove: vec![true, false],
                contents: vec![tiers::head_tail(&many, 4).unwrap()],
            },
            2,
            3
        )
    );
}

#[test]
fn the_trigger_fires_at_81000_estimated_tokens_not_at_80999() {
    // run.rs (inline): headroom = 0.90 − 4,000/100,000 − est/100,000 < 0.05, in f64.
    let msg = |est: u64| TestMsg::user(&"a".repeat(((est - 4) * 4) as usize));
    let d = TestCall::new(vec![msg(80_999)])
        .decide(strategy(json!({})).as_mut())
        .unwrap();
    assert!(codes(&d).is_empty(), "{:?}", d.events);
    let d = TestCall::new(vec![msg(81_000)])
        .decide(strategy(json!({})).as_mut())
        .unwrap();
    assert_eq!(codes(&d), vec!["compaction_nothing_to_do"]);
}

#[test]
fn level3_keeps_first_and_recent_and_drops_the_middle_behind_a_marker() {
    let msgs: Vec<TestMsg> = (0..30)
        .map(|i| TestMsg::user(&format!("{i:02} {}", "u".repeat(300))))
        .collect();
    let call = TestCall::new(msgs);
    let mut s = small(json!({}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(
        codes(&d),
        vec![
            "CompactionStarted",
            "level1_truncate_tool_outputs",
            "level2_summarize_old_turns",
            "level3_drop_middle"
        ]
    );
    // 30 × ~80 = 2,400; first 2 + last 10 + marker = ~970 ≤ 1,000.
    assert_eq!(d.ops.len(), 1);
    let op = &d.ops[0];
    assert_eq!((op.start, op.end), (2, 20));
    let OpKind::Summarize { text, .. } = &op.kind else {
        panic!("{op:?}")
    };
    assert_eq!(
        text,
        "[Context compacted: 18 messages removed to fit context window]"
    );
}

#[test]
fn level3_keeps_only_the_recent_messages_that_fit_when_first_and_recent_overlap() {
    let msgs: Vec<TestMsg> = (0..6)
        .map(|i| TestMsg::user(&format!("{i} {}", "u".repeat(1200))))
        .collect();
    let call = TestCall::new(msgs);
    let mut s = small(json!({}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!(codes(&d).last(), Some(&"level3_drop_middle"));
    // Each message is ~305: three fit in 1,000.
    let op = &d.ops[0];
    assert_eq!((op.start, op.end), (0, 3));
    let OpKind::Summarize { text, .. } = &op.kind else {
        panic!("{op:?}")
    };
    assert_eq!(text, "[Context compacted: 3 messages removed]");
}

#[test]
fn legacy_fields_drive_the_tiers_and_compaction_config_fields_do_not() {
    let msgs: Vec<TestMsg> = (0..30)
        .map(|i| TestMsg::user(&format!("{i:02} {}", "u".repeat(300))))
        .collect();
    let call = TestCall::new(msgs);
    let mut s = small(json!({"keep_first_turns": 7, "keep_recent_turns": 3}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!((d.ops[0].start, d.ops[0].end), (2, 20));
    let mut s = small(json!({"keep_first": 1, "keep_recent": 5}));
    let d = call.decide(s.as_mut()).map(edits).unwrap();
    assert_eq!((d.ops[0].start, d.ops[0].end), (1, 25));
}

#[test]
fn execution_limits_stop_the_agent_at_the_51st_call_of_a_request() {
    let mut s = strategy(json!({}));
    let mut msgs = vec![TestMsg::user("go").request(0)];
    for k in 0..=50u64 {
        let mut c = TestCall::new(msgs.clone());
        c.agent_call_index = k;
        c.new_messages = 1;
        c.new_request = k == 0;
        c.prev_input_tokens = 100;
        let d = c.decide(s.as_mut()).map(edits).unwrap();
        if k < 50 {
            assert!(
                d.events.iter().all(|e| e.kind != EventKind::Stop),
                "call {k}"
            );
        } else {
            let e = d.events.iter().find(|e| e.kind == EventKind::Stop).unwrap();
            assert_eq!(e.message, "[Agent stopped: Max turns reached (50/50)]");
            assert_eq!(e.code, "execution_limit");
        }
        msgs.push(TestMsg::assistant("working"));
    }
    // A new request starts a new run: the tracker is fresh.
    let mut c = TestCall::new(msgs.clone());
    c.agent_call_index = 51;
    c.new_request = true;
    let d = c.decide(s.as_mut()).map(edits).unwrap();
    assert!(d.events.iter().all(|e| e.kind != EventKind::Stop));
}

#[test]
fn end_agent_at_limit_asks_the_engine_to_end_the_agent_and_tokens_count_input_and_output() {
    let mut s = strategy(json!({"end_agent_at_limit": true, "max_total_tokens": 1000}));
    let mut c = TestCall::new(vec![TestMsg::user("go")]);
    c.new_request = true;
    assert!(codes(&c.decide(s.as_mut()).unwrap()).is_empty());
    // Previous call: 900 input + a reply of 104 tokens → 1,004 ≥ 1,000.
    let mut c = TestCall::new(vec![
        TestMsg::user("go"),
        TestMsg::assistant(&"r".repeat(400)),
    ]);
    c.agent_call_index = 1;
    c.new_messages = 1;
    c.prev_input_tokens = 900;
    let d = c.decide(s.as_mut()).map(edits).unwrap();
    let e = d.events.iter().find(|e| e.kind == EventKind::Stop).unwrap();
    assert_eq!(e.code, "agent_stopped");
    assert_eq!(e.message, "[Agent stopped: Max tokens reached (1004/1000)]");
}

#[test]
fn duration_and_cost_limits_use_phi_core_wording() {
    let limits = Limits {
        max_turns: 50,
        max_total_tokens: 1_000_000,
        max_duration_secs: 600,
        max_cost: Some(0.01),
        input_per_million: 10.0,
        output_per_million: 0.0,
    };
    let view = |ts: i64, idx: u64, prev: u64| CallView {
        agent: StrRef::new("main"),
        call_index: idx,
        agent_call_index: idx,
        timestamp_ms: ts,
        budget: BudgetView::default(),
        overhead_tokens: 0,
        context_tokens: 0,
        prev_input_tokens: prev,
        prev_recorded_input_tokens: 0,
        prev_raw_tokens: 0,
        cumulative_input_tokens: 0,
        new_messages: 0,
        new_request: (idx == 0) as u8,
        assistant_turns: 0,
        messages: std::ptr::null(),
        messages_len: 0,
        message_parts: std::ptr::null(),
    };
    let mut t = Tracker::default();
    let v0 = view(1_000_000, 0, 0);
    let c0 = unsafe { Call::from_raw(&v0) };
    t.advance(&c0, &limits);
    let v1 = view(1_000_000 + 601_000, 1, 10);
    let c1 = unsafe { Call::from_raw(&v1) };
    t.advance(&c1, &limits);
    assert_eq!(
        t.check(&c1, &limits).as_deref(),
        Some("Max duration reached (601s/600s)")
    );
    let v2 = view(1_000_000 + 1_000, 2, 1_000);
    let c2 = unsafe { Call::from_raw(&v2) };
    t.advance(&c2, &limits);
    // 1,010 input tokens at $10/M = $0.0101 ≥ $0.01.
    assert_eq!(
        t.check(&c2, &limits).as_deref(),
        Some("Max cost reached ($0.0101/$0.0100)")
    );
}

/// Deterministic parameter sets over the exported keys.
fn param_sets() -> Vec<Value> {
    let schema = config::schema();
    let mut out = vec![json!({})];
    for seed in 1..60u64 {
        let mut o = serde_json::Map::new();
        for (k, (name, _, _)) in config::FILE_KEYS.iter().enumerate() {
            let pick = (seed * 31 + k as u64 * 17) % 5;
            if pick < 2 {
                continue;
            }
            let spec = schema.iter().find(|s| s.name == *name).unwrap();
            let v = match spec.ty {
                ParamType::Int => json!(1 + (seed * 997 + k as u64 * 13) % 200_000),
                ParamType::Float => {
                    let max = spec.max.unwrap_or(100.0);
                    json!(((seed * 7 + k as u64) % 97) as f64 / 97.0 * max)
                }
                ParamType::String => json!(format!("focus on file {seed}.rs")),
                _ => unreachable!(),
            };
            o.insert(name.to_string(), v);
        }
        out.push(Value::Object(o));
    }
    out
}

#[test]
fn export_then_import_gives_the_same_parameters_in_every_format() {
    for given in param_sets() {
        let p = Params::resolve(&config::schema(), &given).unwrap();
        let s = ContextStrategy.create(p.clone()).unwrap();
        for f in config::FORMATS {
            let text = s.export(f).unwrap();
            let back = ContextStrategy.import(f, &text).unwrap();
            let q = Params::resolve(&config::schema(), &back).unwrap();
            assert_eq!(p, q, "format {f}, params {given}\n{text}");
        }
    }
}

#[test]
fn export_writes_phi_core_sections_and_only_changed_keys() {
    let s = strategy(
        json!({"compact_at_pct": 0.8, "max_turns": 20, "keep_recent": 6,
                            "input_per_million": 3.0}),
    );
    let text = s.export("toml").unwrap();
    assert!(text.contains("compact_at_pct = 0.8\n"), "{text}");
    assert!(text.contains("[execution]\nmax_turns = 20\n"), "{text}");
    assert!(
        text.contains("[provider.cost]\ninput_per_million = 3.0\n"),
        "{text}"
    );
    // Always written: without it phi-core builds no ContextConfig (builder.rs).
    assert!(text.contains("\nmax_context_tokens = 100000\n"), "{text}");
    assert!(text.contains("[ctxlab]\nkeep_recent = 6\n"), "{text}");
    assert!(
        text.contains("#   keep_recent: 6,"),
        "legacy field explained: {text}"
    );
    let full = s.export("toml-full").unwrap();
    assert!(full.contains("max_context_tokens = 100000"), "{full}");
    let yaml = s.export("yaml").unwrap();
    assert!(
        yaml.contains("compaction:\n  compact_at_pct: 0.8"),
        "{yaml}"
    );
}

#[test]
fn import_refuses_what_phi_core_cannot_deserialize() {
    let e = ContextStrategy
        .import("toml", "[compaction]\nkeep_recent_turns = \"ten\"\n")
        .unwrap_err();
    assert!(
        e.contains("compaction.keep_recent_turns") && e.contains("usize"),
        "{e}"
    );
    let e = ContextStrategy.import("toml", "[compaction\n").unwrap_err();
    assert!(e.contains("TOML"), "{e}");
    let e = ContextStrategy.import("ini", "").unwrap_err();
    assert!(e.contains("toml, yaml, json"), "{e}");
    // Sections phi-core has but ctxlab does not model are ignored, as serde(default) does.
    let v = ContextStrategy
        .import(
            "toml",
            "[agent]\nsystem_prompt = \"x\"\n[compaction]\nmax_context_tokens = 50000\n",
        )
        .unwrap();
    assert_eq!(v, json!({"max_context_tokens": 50000}));
}

#[test]
fn export_refuses_values_phi_core_would_refuse_and_writes_whole_floats() {
    let e = strategy(json!({"focus_message": "keep ${HOME} paths"}))
        .export("yaml")
        .unwrap_err();
    assert!(
        e.contains("${HOME}") && e.contains("environment variable"),
        "{e}"
    );
    // "${" with no name or no closing brace passes through phi-core literally.
    assert!(strategy(json!({"focus_message": "cost in ${} or ${x"}))
        .export("toml")
        .is_ok());
    // Above i64::MAX a value is refused before the exporter sees it (it used to reach the
    // strategy as 0: issue #25, finding 16); i64::MAX itself writes to TOML and JSON.
    let e = Params::resolve(&config::schema(), &json!({"max_total_tokens": u64::MAX})).unwrap_err();
    assert!(
        e.contains("max_total_tokens") && e.contains("out of range"),
        "{e}"
    );
    for format in ["toml", "json"] {
        assert!(strategy(json!({"max_total_tokens": i64::MAX}))
            .export(format)
            .is_ok());
    }
    let t = strategy(json!({"compact_at_pct": 1, "input_per_million": 3}))
        .export("toml")
        .unwrap();
    assert!(
        t.contains("compact_at_pct = 1.0\n") && t.contains("input_per_million = 3.0\n"),
        "{t}"
    );
}

#[test]
fn the_plugin_table_lists_the_strategy() {
    let t = plugin_table();
    assert_eq!(t.strategies_len, 1);
}

/// A small model of the host for multi-call tests: the agent's working context, persistent ops
/// applied as the engine applies them (last to first; summaries get new ids; truncation keeps
/// `head` chars, the marker and `tail` chars, and the tool bodies become the new text).
struct MiniHost {
    msgs: Vec<TestMsg>,
    next_id: u64,
    seen: usize,
    calls: u64,
}

impl MiniHost {
    fn new() -> MiniHost {
        MiniHost {
            msgs: Vec::new(),
            next_id: 1,
            seen: 0,
            calls: 0,
        }
    }
    fn push(&mut self, mut m: TestMsg) {
        m.id = self.next_id;
        self.next_id += 1;
        self.msgs.push(m);
    }
    fn call(&mut self) -> TestCall {
        let mut c = TestCall::new(self.msgs.clone());
        c.new_messages = (self.msgs.len() - self.seen) as u64;
        c.agent_call_index = self.calls;
        c.call_index = self.calls;
        self.calls += 1;
        c
    }
    fn apply(&mut self, d: &Decision) {
        let mut ops: Vec<&Op> = d
            .ops
            .iter()
            .filter(|o| o.scope == Scope::Persistent && o.kind != OpKind::AllowSplit)
            .collect();
        ops.sort_by_key(|o| o.start);
        for op in ops.into_iter().rev() {
            match &op.kind {
                OpKind::Drop => {
                    self.msgs.drain(op.start..op.end);
                }
                OpKind::Summarize { role, text, .. } => {
                    let mut m = TestMsg::new(*role, text);
                    m.flags |= ctxlab_plugin_api::abi::FLAG_SUMMARY;
                    m.id = self.next_id;
                    self.next_id += 1;
                    self.msgs.splice(op.start..op.end, [m]);
                }
                OpKind::Truncate { head, tail, marker } => {
                    for m in &mut self.msgs[op.start..op.end] {
                        let chars: Vec<char> = m.text.chars().collect();
                        let (h, t) = (*head as usize, *tail as usize);
                        if h + t >= chars.len() {
                            continue;
                        }
                        let mut s: String = chars[..h].iter().collect();
                        s.push_str(marker);
                        s.extend(&chars[chars.len() - t..]);
                        m.text = s.clone();
                        for tool in &mut m.tools {
                            tool.body = s.clone();
                        }
                        m.flags |= ctxlab_plugin_api::abi::FLAG_EDITED;
                    }
                }
                OpKind::Mask { placeholder } => {
                    for m in &mut self.msgs[op.start..op.end] {
                        // ABI 1.1: NUL-separated parts are the results' own contents.
                        let parts: Vec<&str> = placeholder.split('\0').collect();
                        let mut k = 0;
                        for tool in &mut m.tools {
                            tool.body = if parts.len() > 1 && tool.is_result {
                                k += 1;
                                parts[k - 1].to_string()
                            } else {
                                placeholder.clone()
                            };
                        }
                        m.text = parts.join("\n");
                        m.flags |= ctxlab_plugin_api::abi::FLAG_EDITED;
                    }
                }
                other => panic!("phi-core does not emit {other:?}"),
            }
        }
        self.seen = self.msgs.len();
    }
}

/// Tool output of `n` lines, with the shapes level 1 must get right: CRLF endings, a trailing
/// newline, multi-byte characters, empty lines.
fn random_output(r: &mut Rng) -> String {
    let n = match r.below(10) {
        0..=4 => 1 + r.below(12),
        5..=7 => 10 + r.below(60),
        _ => 60 + r.below(300),
    };
    let eol = if r.below(6) == 0 { "\r\n" } else { "\n" };
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push_str(eol);
        }
        match r.below(8) {
            0 => {}
            1 => s.push_str("résumé → ünïcode ✓"),
            _ => s.push_str(&format!("{i:>4} let v = handler_{}(ctx);", r.below(97))),
        }
    }
    if r.below(3) == 0 {
        s.push_str(eol);
    }
    s
}

/// Runs `calls` model calls of a random tool-heavy session through two instances — one keeping its
/// mirror across calls (and checking it against the view at every call), one rebuilding all its
/// state from the view at every call — and asserts they decide exactly the same.
fn incremental_equals_from_scratch(seed: u64, params: Value, calls: usize) -> Vec<String> {
    let p = Params::resolve(&config::schema(), &params).unwrap();
    let mut inc = PhiCore::new(p.clone());
    inc.check_mirror = true;
    let mut scratch = PhiCore::new(p);
    let mut host = MiniHost::new();
    let mut r = Rng(seed);
    let mut codes_seen = Vec::new();
    let mut k = 0;
    let mut decide = |host: &mut MiniHost, k: &mut usize, codes_seen: &mut Vec<String>| {
        let call = host.call();
        let a = call
            .decide(&mut inc)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for st in scratch.agents.values_mut() {
            st.mirror.reset();
        }
        let b = call.decide(&mut scratch).unwrap();
        assert_eq!(
            a, b,
            "seed {seed}, call {k}: incremental and from-scratch differ"
        );
        for e in &a.events {
            if !codes_seen.contains(&e.code) {
                codes_seen.push(e.code.clone());
            }
        }
        host.apply(&a);
        *k += 1;
    };
    while k < calls {
        host.push(TestMsg::user(&format!(
            "request {k}: fix src/mod_{}.rs",
            r.below(97)
        )));
        for round in 0..r.below(5) {
            decide(&mut host, &mut k, &mut codes_seen);
            let id = format!("t{k}_{round}");
            let tool = ["read", "grep", "bash"][r.below(3) as usize];
            host.push(TestMsg::tool_call(&id, tool, "{\"path\":\"src/a.rs\"}"));
            host.push(TestMsg::tool_result(&id, tool, &random_output(&mut r)));
        }
        decide(&mut host, &mut k, &mut codes_seen);
        let answer = match r.below(4) {
            0 => String::new(),
            1 => "done".to_string(),
            _ => "the handler returns early; ".repeat(1 + r.below(40) as usize),
        };
        host.push(TestMsg::assistant(&answer));
    }
    codes_seen
}

#[test]
fn incremental_state_decides_as_a_rebuild_from_the_view_over_random_sessions() {
    let mut all: Vec<String> = Vec::new();
    let sets = [
        json!({"max_context_tokens": 3000, "system_prompt_tokens": 0,
               "legacy_tool_output_max_lines": 20}),
        json!({"max_context_tokens": 6000, "system_prompt_tokens": 500, "keep_recent": 6,
               "keep_first": 1, "legacy_tool_output_max_lines": 8}),
        json!({"max_context_tokens": 1500, "system_prompt_tokens": 100, "keep_recent": 3,
               "keep_first": 3, "legacy_tool_output_max_lines": 50}),
        json!({"max_context_tokens": 20000, "system_prompt_tokens": 0, "keep_recent": 40,
               "legacy_tool_output_max_lines": 4, "max_turns": 1000}),
    ];
    for (i, params) in sets.iter().enumerate() {
        for seed in 0..6 {
            let codes = incremental_equals_from_scratch(seed * 31 + i as u64, params.clone(), 400);
            for c in codes {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
        }
    }
    // The sessions reach every level (and the op-cap deferral) at least once.
    for want in [
        "compaction_nothing_to_do",
        "level1_truncate_tool_outputs",
        "level2_summarize_old_turns",
        "level3_drop_middle",
    ] {
        assert!(all.iter().any(|c| c == want), "{want} never fired: {all:?}");
    }
}
