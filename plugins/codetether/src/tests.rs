use super::*;
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use serde_json::{json, Value};

fn strategy(params: Value) -> Box<dyn Strategy> {
    let p = Params::resolve(&config::schema(), &params).unwrap();
    CompressionStrategy.create(p).unwrap()
}

/// Window 12,048, no max output: usable 10,000, safety budget 9,000.
fn call(msgs: Vec<TestMsg>) -> TestCall {
    let mut c = TestCall::new(msgs).window(12_048);
    c.budget.max_output = 0;
    c
}

fn users(n: usize, tokens: u64) -> Vec<TestMsg> {
    (0..n)
        .map(|i| TestMsg::user(&format!("message {i}")).tokens(tokens))
        .collect()
}

fn codes(d: &Decision) -> Vec<(EventKind, &str)> {
    d.events.iter().map(|e| (e.kind, e.code.as_str())).collect()
}

fn event<'a>(d: &'a Decision, code: &str) -> &'a Event {
    d.events.iter().find(|e| e.code == code).unwrap()
}

/// No Drop/Summarize range may hold a tool call without its result or the other way round.
fn assert_pairs_whole(c: &TestCall, d: &Decision) {
    for op in &d.ops {
        if !matches!(op.kind, OpKind::Drop | OpKind::Summarize { .. }) {
            continue;
        }
        for (i, m) in c.messages.iter().enumerate() {
            for t in &m.tools {
                for (j, n) in c.messages.iter().enumerate() {
                    if j != i && n.tools.iter().any(|u| u.id == t.id) {
                        let a = (op.start..op.end).contains(&i);
                        let b = (op.start..op.end).contains(&j);
                        assert_eq!(a, b, "op {op:?} splits tool pair {} ({i}/{j})", t.id);
                    }
                }
            }
        }
    }
}

#[test]
fn under_the_safety_budget_nothing_happens() {
    let c = call(users(18, 500)); // 9,000 = budget: fits
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert!(d.events.is_empty() && d.ops.is_empty());
    assert_eq!(d.gauges, vec![("safety_budget".to_string(), 9_000.0)]);
}

#[test]
fn usable_budget_subtracts_max_output_and_the_reserve() {
    // 200,000 − 8,000 − 2,048 = 189,952; × 0.90 = 170,956.
    let c = TestCall::new(users(1, 10));
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(d.gauges[0].1, 170_956.0);
}

#[test]
fn table_row_rlm_keep_last_fits() {
    let c = call(users(40, 500)); // 20,000
    let d = c
        .decide(strategy(json!({"rlm_summary_tokens": 500})).as_mut())
        .unwrap();
    assert_eq!(
        codes(&d),
        vec![
            (EventKind::Note, "CompactionStart"),
            (EventKind::Compaction, "CompactionOutcome")
        ]
    );
    let e = event(&d, "CompactionOutcome");
    assert!(
        e.message.starts_with("strategy rlm: 20,000 → 8,500"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("kept 17 messages; keep_last tried 16"),
        "{}",
        e.message
    );
    assert_eq!((e.tokens_before, e.tokens_after), (20_000, 8_500));
    assert_eq!(d.ops.len(), 1);
    let op = &d.ops[0];
    assert_eq!((op.start, op.end), (0, 24));
    assert_eq!(
        op.kind,
        OpKind::Summarize {
            role: Role::Assistant,
            max_tokens: 500,
            summarizer_input_tokens: 12_000,
            text: TAG.into()
        }
    );
}

#[test]
fn keep_last_shrinks_16_then_12_then_8_until_the_request_fits() {
    let c = call(users(40, 500));
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let e = event(&d, "CompactionOutcome");
    // 16: 4,096 + 8,000 > 9,000; 12: 4,096 + 6,000 > 9,000; 8: 4,096 + 4,000 fits.
    assert!(
        e.message.contains("keep_last tried 16 → 12 → 8"),
        "{}",
        e.message
    );
    assert_eq!(e.tokens_after, 8_096);
    let op = &d.ops[0];
    assert_eq!((op.start, op.end), (0, 32));
    let OpKind::Summarize {
        summarizer_input_tokens,
        ..
    } = &op.kind
    else {
        panic!("{op:?}")
    };
    // Each step re-summarizes the previous summary with the next messages.
    assert_eq!(
        *summarizer_input_tokens,
        12_000 + (4_096 + 2_000) + (4_096 + 2_000)
    );
}

#[test]
fn table_row_rlm_error_falls_back_to_chunk_compression() {
    let c = call(users(40, 500));
    let d = c
        .decide(strategy(json!({"rlm_fail_above_tokens": 1000})).as_mut())
        .unwrap();
    assert_eq!(
        d.events.iter().filter(|e| e.code == "rlm_error").count(),
        3,
        "one failure per attempt"
    );
    let e = event(&d, "CompactionOutcome");
    assert_eq!(e.kind, EventKind::Compaction);
    assert!(
        e.message.starts_with("strategy chunk_compress"),
        "{}",
        e.message
    );
    // Chunk target = window / 4 = 3,012.
    let OpKind::Summarize { max_tokens, .. } = &d.ops[0].kind else {
        panic!()
    };
    assert_eq!(*max_tokens, 3_012);
    assert_eq!(e.tokens_after, 3_012 + 4_000);
}

#[test]
fn table_row_all_keep_last_exhausted_applies_terminal_truncation() {
    let c = call(users(40, 1_500));
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(
        codes(&d),
        vec![
            (EventKind::Note, "CompactionStart"),
            (EventKind::Note, "CompactionOutcome"),
            (EventKind::Truncation, "ContextTruncation")
        ]
    );
    assert!(event(&d, "CompactionOutcome")
        .message
        .starts_with("strategy truncate"));
    assert!(event(&d, "CompactionOutcome")
        .message
        .contains("16 → 12 → 8 → 6, all exhausted"));
    // The last 4 stay, everything older (the cascade's summary too) is dropped outright.
    assert_eq!(d.ops.len(), 1);
    assert_eq!(d.ops[0].kind, OpKind::Drop);
    assert_eq!((d.ops[0].start, d.ops[0].end), (0, 36));
    let t = event(&d, "ContextTruncation");
    assert!(
        t.message.contains("the cascade's summary went with them"),
        "{}",
        t.message
    );
    assert!(t.tokens_after <= 9_000);
}

#[test]
fn table_row_terminal_truncation_still_over_budget_is_a_failure() {
    let mut msgs = users(10, 100);
    msgs.push(TestMsg::user("the whole repository").tokens(20_000));
    let c = call(msgs);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let f = event(&d, "CompactionFailure");
    assert_eq!(f.kind, EventKind::Failure);
    assert!(
        f.message.starts_with("fell_back_to truncate"),
        "{}",
        f.message
    );
    assert!(f.tokens_after > 9_000);
    // Keep the last 4 (7..11), then evict the oldest retained ones — except a leading user
    // message, which drop_oldest_until_fits protects — down to the newest.
    let dropped: usize = d
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Drop)
        .map(|o| o.end - o.start)
        .sum();
    assert_eq!(dropped, 9);
    assert!(d.ops.iter().all(|o| !(o.start..o.end).contains(&7)));
}

#[test]
fn a_short_history_skips_the_cascade_because_keep_last_16_has_nothing_to_compress() {
    let c = call(users(10, 1_500)); // 15,000 in 10 messages
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let e = event(&d, "CompactionOutcome");
    assert!(
        e.message.contains("keep_last tried 16, all exhausted"),
        "{}",
        e.message
    );
    assert_eq!((d.ops[0].start, d.ops[0].end), (0, 6));
}

#[test]
fn the_sources_longer_candidate_list_reaches_3_and_1() {
    let msgs = users(40, 2_000);
    let doc = call(msgs.clone())
        .decide(strategy(json!({"rlm_summary_tokens": 500})).as_mut())
        .unwrap();
    assert!(doc.events.iter().any(|e| e.code == "ContextTruncation"));
    let source = call(msgs)
        .decide(
            strategy(json!({"rlm_summary_tokens": 500,
                            "keep_last_candidates": [16, 12, 8, 6, 3, 1]}))
            .as_mut(),
        )
        .unwrap();
    let e = event(&source, "CompactionOutcome");
    assert!(
        e.message.contains("tried 16 → 12 → 8 → 6 → 3"),
        "{}",
        e.message
    );
    assert_eq!((source.ops[0].start, source.ops[0].end), (0, 37));
}

#[test]
fn terminal_truncation_shrinks_oversized_payloads_through_the_caps() {
    let out = "x".repeat(600_000);
    let msgs = vec![
        TestMsg::user("go"),
        TestMsg::tool_call("c1", "cat", "{}"),
        TestMsg::tool_result("c1", "cat", &out),
    ];
    let mut c = TestCall::new(msgs).window(102_048);
    c.budget.max_output = 0;
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert!(d.events.iter().all(|e| e.kind != EventKind::Failure));
    assert_eq!(d.ops.len(), 1);
    let OpKind::Truncate { head, tail, marker } = &d.ops[0].kind else {
        panic!("{:?}", d.ops)
    };
    assert_eq!((d.ops[0].start, d.ops[0].end), (2, 3));
    assert!(
        marker.contains("truncated tool_result; original_bytes=600000"),
        "{marker}"
    );
    // The first cap, 262,144 bytes, is enough here.
    assert_eq!(head + tail + marker.len() as u64, 262_144);
    assert!(event(&d, "ContextTruncation").tokens_after <= 90_000);
}

#[test]
fn cuts_never_split_a_tool_call_from_its_result() {
    let mut msgs = vec![TestMsg::user("go")];
    for i in 0..30 {
        let id = format!("c{i}");
        msgs.push(TestMsg::tool_call(&id, "read", "{}").tokens(300));
        msgs.push(TestMsg::tool_result(&id, "read", "text").tokens(300));
    }
    for (params, _) in [(json!({}), 0), (json!({"rlm_summary_tokens": 100000}), 1)] {
        let c = call(msgs.clone());
        let d = c.decide(strategy(params).as_mut()).unwrap();
        assert!(!d.ops.is_empty());
        assert_pairs_whole(&c, &d);
    }
}

#[test]
fn thresholds_draw_the_last_safety_budget() {
    let mut s = strategy(json!({}));
    assert!(s.thresholds().is_empty());
    call(users(1, 1)).decide(s.as_mut()).unwrap();
    assert_eq!(s.thresholds()[0].tokens, 9_000);
}

fn param_sets() -> Vec<Value> {
    let mut out = vec![json!({})];
    for seed in 1..50u64 {
        let mut o = serde_json::Map::new();
        if seed % 3 != 0 {
            o.insert("rlm_model".into(), json!(format!("provider/model-{seed}")));
        }
        if seed % 2 == 0 {
            let n = 1 + seed as usize % 6;
            let v: Vec<u64> = (0..n).map(|k| 20 - (k as u64 * 3 + seed % 3)).collect();
            o.insert("keep_last_candidates".into(), json!(v));
        }
        if seed % 4 == 1 {
            o.insert("truncate_keep_last".into(), json!(1 + seed % 9));
        }
        if seed % 5 != 0 {
            o.insert(
                "safety_budget_ratio".into(),
                json!(0.5 + (seed % 49) as f64 / 100.0),
            );
        }
        if seed % 3 == 1 {
            o.insert("reserve_overhead_tokens".into(), json!(seed * 97));
        }
        if seed % 6 == 2 {
            o.insert(
                "fallback_chunk_ratio".into(),
                json!((seed % 9 + 1) as f64 / 10.0),
            );
        }
        if seed % 7 == 3 {
            let caps: Vec<u64> = (0..(seed % 5 + 1)).map(|k| 100_000 >> k).collect();
            o.insert("terminal_payload_caps".into(), json!(caps));
        }
        if seed % 2 == 1 {
            o.insert("terminal_emergency_cap_bytes".into(), json!(256 + seed));
        }
        out.push(Value::Object(o));
    }
    out
}

#[test]
fn export_then_import_gives_the_same_parameters() {
    for given in param_sets() {
        let p = Params::resolve(&config::schema(), &given).unwrap();
        let s = CompressionStrategy.create(p.clone()).unwrap();
        for f in config::FORMATS {
            let text = s.export(f).unwrap();
            let back = CompressionStrategy.import(f, &text).unwrap();
            let q = Params::resolve(&config::schema(), &back).unwrap();
            assert_eq!(p, q, "format {f}, params {given}\n{text}");
        }
    }
}

#[test]
fn export_separates_the_setting_from_the_source_constants() {
    let s =
        strategy(json!({"rlm_model": "zai/glm-4.7", "keep_last_candidates": [16, 12, 8, 6, 3, 1]}));
    let text = s.export("env").unwrap();
    assert!(
        text.contains("\nCODETETHER_RLM_MODEL=zai/glm-4.7\n"),
        "{text}"
    );
    assert!(text.contains("Tuned source constants"), "{text}");
    assert!(text.contains(
        "# src/session/helper/compression/enforce_cascade.rs\n# const KEEP_LAST_CANDIDATES: [usize; 6] = [16, 12, 8, 6, 3, 1];"
    ), "{text}");
    assert!(
        !text.contains("SAFETY_BUDGET_RATIO"),
        "defaults stay out: {text}"
    );
    let full = strategy(json!({})).export("env-full").unwrap();
    assert!(
        full.contains("const SAFETY_BUDGET_RATIO: f64 = 0.9;"),
        "{full}"
    );
    assert!(
        full.contains("const TERMINAL_EMERGENCY_CAP_BYTES: usize = 1024;"),
        "{full}"
    );
    assert!(full.contains("# CODETETHER_RLM_MODEL unset"), "{full}");
}

#[test]
fn validation_refuses_what_codetether_could_not_compile() {
    let p = Params::resolve(&config::schema(), &json!({"keep_last_candidates": []})).unwrap();
    let e = CompressionStrategy.create(p).err().unwrap();
    assert!(e.contains("KEEP_LAST_CANDIDATES"), "{e}");
    let e = CompressionStrategy
        .import("env", "# const KEEP_LAST_COUNT: usize = 3;\n")
        .unwrap_err();
    assert!(
        e.contains("line 1") && e.contains("unknown constant KEEP_LAST_COUNT"),
        "{e}"
    );
    let e = CompressionStrategy
        .import("env", "# const SAFETY_BUDGET_RATIO: f64 = 1.5;\n")
        .unwrap_err();
    assert!(e.contains("maximum"), "{e}");
    let e = CompressionStrategy.import("toml", "").unwrap_err();
    assert!(e.contains("env, env-full"), "{e}");
}
