//! Each test names the codetether-agent 4.7.4 source file and function whose rule it shows.

use super::*;
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use serde_json::{json, Value};

fn strategy(params: Value) -> Box<dyn Strategy> {
    let mut params = params;
    // Logs hold no system prompt: count none unless a test says otherwise.
    params
        .as_object_mut()
        .unwrap()
        .entry("system_prompt_tokens")
        .or_insert(json!(0));
    let p = Params::resolve(&config::schema(), &params).unwrap();
    CompressionStrategy.create(p).unwrap()
}

/// Window 30,240: safety budget (30,240 − 8,192 − 2,048) × 0.9 = 18,000; chunker target 7,560.
const WINDOW: u64 = 30_240;

fn call(msgs: Vec<TestMsg>) -> TestCall {
    TestCall::new(msgs).window(WINDOW)
}

/// A text CodeTether estimates at exactly `n` tokens (one space in four bytes: 4 chars/token).
fn text(tag: &str, n: usize) -> String {
    let mut t = format!("{tag} ");
    while t.len() < 4 * n {
        t.push_str("abc ");
    }
    t.truncate(4 * n);
    t
}

fn user(i: usize, n: usize) -> TestMsg {
    TestMsg::user(&text(&format!("u{i}"), n))
}
fn asst(i: usize, n: usize) -> TestMsg {
    TestMsg::assistant(&text(&format!("a{i}"), n))
}

fn codes(d: &Decision) -> Vec<&str> {
    d.events.iter().map(|e| e.code.as_str()).collect()
}

fn summarize_end(d: &Decision) -> Option<(usize, u64, &str)> {
    d.ops.iter().find_map(|o| match &o.kind {
        OpKind::Summarize {
            max_tokens, text, ..
        } => {
            assert_eq!(o.start, 0);
            assert_eq!(
                o.scope,
                Scope::ThisCall,
                "CodeTether never edits its history"
            );
            Some((o.end, *max_tokens, text.as_str()))
        }
        _ => None,
    })
}

#[test]
fn each_text_part_is_estimated_on_its_own() {
    // token.rs estimate_tokens_for_part: one estimate per content part. With the host's part
    // boundaries (ABI 1.6) a message of two texts is two estimates: 28 bytes without
    // whitespace (2.8 bytes a token: 10) and 8 bytes with two spaces (4.0: 2), 12 in all; the
    // same text joined is one estimate of 37 bytes with 3 whitespace bytes (8 %: 3.2), 12.
    use ctxlab_plugin_api::abi::{PART_TEXT, PART_THINKING};
    let a = "x".repeat(28);
    let m = TestMsg::user("").parts(&[(PART_TEXT, &a), (PART_TEXT, "ab cd ef")]);
    let d = call(vec![m]).decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(estimate_gauge(&d), 10 + 2);
    assert_eq!(estimate::estimate_tokens(&format!("{a}\nab cd ef")), 12);
    let m = TestMsg::assistant("").parts(&[(PART_THINKING, &"t ".repeat(40)), (PART_TEXT, "ok")]);
    let mut h: Vec<TestMsg> = vec![m];
    h.extend((0..4).map(|i| user(i, 10)));
    let d = call(h.clone())
        .decide(strategy(json!({})).as_mut())
        .unwrap();
    // A thinking part is estimated apart too, so thinking_prune.rs removes exactly its
    // estimate: the assistant message is older than the last 4, its thinking (80 bytes, half
    // spaces: 20 tokens) goes, its text (1 token) stays; among the last 4 it is counted.
    assert_eq!(estimate_gauge(&d), 1 + 40);
    h.push(user(9, 10));
    h.remove(1);
    let d = call(h[..4].to_vec())
        .decide(strategy(json!({})).as_mut())
        .unwrap();
    assert_eq!(estimate_gauge(&d), 20 + 1 + 30);
}

#[test]
fn a_tool_call_no_result_answers_gets_pair_repairs_placeholder() {
    // experimental/pairing.rs repair_orphans: an assistant call whose id no tool message
    // answers gets a placeholder result after its message (16 tokens: 55 bytes, 6 spaces);
    // Codex's web_search calls have no id and no output.
    let plain = call(vec![user(0, 10), asst(1, 10)]);
    let base = estimate_gauge(&plain.decide(strategy(json!({})).as_mut()).unwrap());
    let mut searched = TestMsg::tool_call("", "web_search", "{}");
    searched.text = "{}".into();
    let c = call(vec![user(0, 10), searched, asst(1, 10)]);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let call_part = estimate::estimate_tokens(" web_search {}");
    assert_eq!(estimate_gauge(&d), base + call_part + 16);
    // Answered, it has none.
    let c = call(vec![
        user(0, 10),
        TestMsg::tool_call("c1", "read", "{}"),
        TestMsg::tool_result("c1", "read", "r"),
        asst(1, 10),
    ]);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(
        estimate_gauge(&d),
        base + estimate::estimate_tokens("c1 read {}") + 1
    );
}

#[test]
fn estimate_counts_tool_calls_as_id_name_args_and_images_as_2000() {
    // token.rs estimate_tokens_for_part: ToolCall → estimate("id name args"), Image → 2000.
    let mut call_msg = TestMsg::tool_call("call_1", "read", "{\"path\":\"src/main.rs\"}");
    call_msg.text = "{\"path\":\"src/main.rs\"}".into();
    let c = call(vec![
        call_msg,
        TestMsg::tool_result("call_1", "read", &text("r", 100)),
        TestMsg::user("look").image(5000),
    ]);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let est = d
        .gauges
        .iter()
        .find(|g| g.0 == "codetether_estimate")
        .unwrap()
        .1;
    let call_part = estimate::estimate_tokens("call_1 read {\"path\":\"src/main.rs\"}");
    assert_eq!(
        est as u64,
        call_part + 100 + estimate::estimate_tokens("look") + 2000
    );
}

#[test]
fn budget_reserves_session_max_tokens_not_the_models_output() {
    // enforce_budget.rs check_budget + token.rs session_completion_max_tokens (8,192 default).
    let c = call(vec![user(0, 10)]);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(d.gauges[0], ("safety_budget".into(), 18_000.0));
    // The run's max output (8,000 in TestCall) plays no part; the setting does.
    let d = c
        .decide(strategy(json!({"session_max_tokens": 2_192})).as_mut())
        .unwrap();
    assert_eq!(
        d.gauges[0].1,
        ((30_240.0 - 2_192.0 - 2_048.0) * 0.9_f64).floor()
    );
}

#[test]
fn the_window_comes_from_codetethers_model_table() {
    // provider/limits.rs context_window_for_model: gpt-4o → 128,000 whatever the run says.
    let c = call(vec![user(0, 10)]);
    let d = c
        .decide(strategy(json!({"model": "openai/gpt-4o"})).as_mut())
        .unwrap();
    assert_eq!(
        d.gauges[0].1,
        ((128_000.0 - 8_192.0 - 2_048.0) * 0.9_f64).floor()
    );
}

#[test]
fn under_the_safety_budget_nothing_happens() {
    let c = call((0..18).map(|i| user(i, 1_000)).collect()); // 18,000 = budget
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert!(d.events.is_empty() && d.ops.is_empty(), "{d:?}");
}

/// [u0, a1..a20 (1,000 each), u21 (the task), a22..a61 (100 each)]: 24,108 tokens.
fn task_history() -> Vec<TestMsg> {
    let mut m = vec![user(0, 100)];
    m.extend((1..=20).map(|i| asst(i, 1_000)));
    m.push(TestMsg::user("please fix the crash in src/main.rs"));
    m.extend((22..62).map(|i| asst(i, 100)));
    m
}

/// The chunker's summary of `task_history`'s prefix (u0, a1..a20), worked out by hand:
/// `messages_to_rlm_context` writes each message as 5 lines — `[i Role]`, its text, "", "---",
/// "" — estimated on their own when the prefix, one chunk without a boundary line (over 4,000
/// tokens), is split (`split_large_chunk`): u0 is 3 + 100 + 2, each reply 5 + 1,000 + 2. The
/// pieces close before the line that would pass 4,000: u0..a3 and a4's header (3,131), then
/// from a4's text on, 3,021 each up to a19's header, and a19's text to the end (2,009).
/// `select_chunks` under 7,560, newest first: the last two (5,030); the older ones do not fit.
/// So the summary is the text from a16's reply to the end, and its body is what it adds to
/// CodeTether's estimate of the summary message (one text part, estimated whole).
fn task_summary_body(literal: &str) -> u64 {
    let h = task_history();
    let mut kept = h[16].text.clone();
    for i in 17..=20 {
        kept.push_str(&format!("\n\n---\n\n[{i} Assistant]\n{}", h[i].text));
    }
    kept.push_str("\n\n---\n");
    let head = "[AUTO CONTEXT COMPRESSION]\nOlder conversation + tool output was compressed to fit the model context window.\n\n";
    let rest = literal.strip_prefix(head).unwrap();
    estimate::estimate_tokens(&format!("{head}{kept}{rest}")) - estimate::estimate_tokens(literal)
}

#[test]
fn split_point_is_the_last_substantive_user_message_not_len_minus_keep_last() {
    // active_tail.rs active_tail_start: min(newest substantive user message, len − keep_last).
    let c = call(task_history());
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(codes(&d), ["CompactionStarted", "CompactionCompleted"]);
    let (end, body, text) = summarize_end(&d).unwrap();
    assert_eq!(
        end, 21,
        "the active task (u21 and its 40 replies) is never compressed"
    );
    // compression_defer.rs context_summary: RlmChunker::compress(context, window × 0.25).
    assert_eq!(body, task_summary_body(text));
    assert!(text.starts_with("[AUTO CONTEXT COMPRESSION]"));
    // dropped_toc.rs render_toc: the dropped user turns are listed.
    assert!(text.contains("[turn 0] u0 abc"), "{text}");
}

#[test]
fn the_dropped_range_index_lists_ten_user_turns_with_text_as_render_toc_does() {
    // dropped_toc.rs render_toc(prefix, 0) / first_text_excerpt: user turns whose text is not
    // blank, numbered by their index in the prefix, the first line cut at 70 chars with '…';
    // past ten, "… plus N more user turns"; "turns 0-<prefix length − 1>".
    let long = "Refactor the parser so that every token keeps its byte span and its line number too\nsecond line";
    let mut m = Vec::new();
    for i in 0..30 {
        m.push(match i {
            1 => TestMsg::user(long),
            3 => TestMsg::user("   \n  "),
            _ => TestMsg::user(&format!("task {i}")),
        });
        m.push(asst(i, 600));
    }
    let c = call(m);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let (end, _, text) = summarize_end(&d).unwrap();
    // keep_last 16: split = min(newest user 58, 60 − 16) = 44.
    assert_eq!(end, 44);
    let excerpt: String = long.chars().take(70).collect();
    let lines: Vec<String> = [0, 2, 4, 8, 10, 12, 14, 16, 18, 20]
        .iter()
        .map(|&p| match p {
            2 => format!("  [turn 2] {excerpt}…"),
            _ => format!("  [turn {p}] task {}", p / 2),
        })
        .collect();
    let index = format!(
        "\n\n[DROPPED-RANGE INDEX] turns 0-43 were compressed. User turns in that range:\n{}\n  … plus 11 more user turns\nRetrieve any of them via `context_browse` (action=show_turn, turn=N) or a targeted `session_recall` query.",
        lines.join("\n")
    );
    assert!(text.contains(&index), "{text}");
    assert!(text.ends_with("the user to repeat themselves."), "{text}");
}

#[test]
fn short_continuations_do_not_anchor_the_active_tail() {
    // active_tail.rs is_short_continuation: "continue", "ok", … (≤ 80 chars) are skipped.
    let mut m = task_history();
    m.insert(50, TestMsg::user("Continue."));
    let c = call(m);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(summarize_end(&d).unwrap().0, 21);
    assert!(history::is_short_continuation("  OK! "));
    assert!(!history::is_short_continuation("continue with the parser"));
}

#[test]
fn without_user_messages_the_split_is_len_minus_keep_last() {
    let c = call((0..40).map(|i| asst(i, 600)).collect()); // 24,000
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    // keep_last 16: 24 compressed; summary ≈ 7,560 + tag; tail 9,600 → fits.
    assert_eq!(summarize_end(&d).unwrap().0, 24);
}

#[test]
fn cascade_tries_16_then_12_then_8() {
    // enforce_cascade.rs run_cascade over KEEP_LAST_CANDIDATES [16, 12, 8, 6, 3, 1].
    let c = call((0..30).map(|i| user(i, 1_000)).collect());
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let done = &d.events[1];
    assert_eq!(done.code, "CompactionCompleted");
    assert!(done.message.contains("[16, 12, 8]"), "{}", done.message);
    assert_eq!(summarize_end(&d).unwrap().0, 22);
    assert_eq!(
        config::schema()
            .iter()
            .find(|p| p.name == "keep_last_candidates")
            .unwrap()
            .default,
        json!([16, 12, 8, 6, 3, 1])
    );
}

#[test]
fn every_step_is_derived_again_from_the_full_history() {
    // context/derive.rs derive_context: a clone of the full history per step, so a session that
    // stays over budget triggers at every call; the history itself is never edited.
    let mut s = strategy(json!({}));
    let mut m = task_history();
    for step in 0..3 {
        let d = call(m.clone()).decide(s.as_mut()).unwrap();
        assert_eq!(codes(&d)[0], "CompactionStarted", "step {step}");
        assert!(d.ops.iter().all(|o| o.scope == Scope::ThisCall));
        m.push(asst(100 + step, 100));
    }
}

#[test]
fn a_prefix_compressed_before_gets_the_background_rlm_summary() {
    // rlm_background::context_summary: the first step spawns the RLM job and uses the chunker;
    // a later step compressing the same prefix finds the cached summary.
    let mut s = strategy(json!({"rlm_summary_tokens": 3_000}));
    let mut m = task_history();
    let d = call(m.clone()).decide(s.as_mut()).unwrap();
    let (_, body, text) = summarize_end(&d).unwrap();
    assert_eq!(body, task_summary_body(text));
    m.push(asst(99, 50));
    let d = call(m).decide(s.as_mut()).unwrap();
    assert_eq!(summarize_end(&d).unwrap().1, 3_000);
    assert!(d.events[1].message.contains("background"));
}

#[test]
fn history_trigger_messages_compacts_a_long_history_under_budget() {
    // enforce_budget.rs check_budget (history_length) and enforce_attempt.rs attempt_fits.
    let c = call((0..40).map(|i| user(i, 10)).collect());
    let d = c
        .decide(strategy(json!({"history_trigger_messages": 30})).as_mut())
        .unwrap();
    assert!(d.events[0].message.starts_with("reason history_length"));
    // 40 > 30 − 16: compress to keep 16; then 17 ≤ 30 − 12 = 18 fits.
    assert_eq!(summarize_end(&d).unwrap().0, 24);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert!(d.events.is_empty());
}

#[test]
fn orphaned_tool_results_go_with_the_prefix() {
    // experimental/pairing.rs repair_orphans: a result whose call was compressed is dropped.
    let mut m: Vec<TestMsg> = (0..30)
        .map(|i| asst(i, if i < 14 { 1_500 } else { 100 }))
        .collect();
    m[13] = TestMsg::tool_call("c1", "grep", &text("args", 1_500));
    m[14] = TestMsg::tool_result("c1", "grep", &text("out", 100));
    let c = call(m);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    // keep_last 16 splits at 14, between c1 and its result: the result goes too.
    assert_eq!(summarize_end(&d).unwrap().0, 15);
}

#[test]
fn repeated_tool_outputs_become_dedup_markers_once_8_messages_old() {
    // experimental/dedup.rs dedup_tool_outputs: ≥ 256 bytes, outside the last 8 messages.
    let big = text("same", 200); // 800 bytes
    let mut m = vec![
        user(0, 10),
        TestMsg::tool_call("a", "read", "{}"),
        TestMsg::tool_result("a", "read", &big),
        TestMsg::tool_call("b", "read", "{}"),
        TestMsg::tool_result("b", "read", &big),
        TestMsg::tool_call("c", "ls", "{}"),
        TestMsg::tool_result("c", "ls", "small"),
        TestMsg::tool_call("d", "ls", "{}"),
        TestMsg::tool_result("d", "ls", "small"),
    ];
    let mut s = strategy(json!({}));
    let d = call(m.clone()).decide(s.as_mut()).unwrap();
    assert!(
        d.ops.is_empty(),
        "the second copy is still among the last 8"
    );
    m.extend((0..6).map(|i| asst(i, 5)));
    let d = call(m).decide(s.as_mut()).unwrap();
    assert_eq!(d.ops.len(), 1, "{:?}", d.ops);
    let op = &d.ops[0];
    assert_eq!((op.start, op.scope), (4, Scope::Persistent));
    assert_eq!(
        op.kind,
        OpKind::Mask {
            placeholder: "[DEDUP] identical to tool_call_id=a (800 bytes)".into()
        }
    );
}

#[test]
fn an_oversized_last_message_is_compressed_to_35_percent_of_the_window() {
    // compression/oversized.rs compress_last_message_if_oversized.
    let c = call(vec![user(0, 10), TestMsg::user(&text("paste", 12_000))]);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    let op = d.ops.last().unwrap();
    assert_eq!((op.start, op.end, op.scope), (1, 2, Scope::ThisCall));
    let OpKind::Truncate { head, tail, .. } = op.kind else {
        panic!("{op:?}")
    };
    // 35% of 30,240 = 10,584 tokens at 4 chars per token.
    assert_eq!(head + tail, 42_336);
    let est = d.gauges[1].1 as u64;
    assert_eq!(est, 10 + 10_584);
}

#[test]
fn terminal_truncation_splits_at_the_active_tail_and_never_evicts() {
    // compression/terminal.rs terminal_truncate_messages + shrink.rs: the whole history is the
    // active task (one user message at 0), so the cascade has nothing to compress; terminal
    // truncation keeps everything and shrinks payloads through the caps, then reports failure.
    let mut m = vec![user(0, 10)];
    for i in 0..12 {
        let id = format!("t{i}");
        m.push(TestMsg::tool_call(&id, "read", "{}"));
        m.push(TestMsg::tool_result(
            &id,
            "read",
            &text(&format!("file{i}"), 3_000),
        ));
    }
    let c = call(m);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(
        codes(&d),
        [
            "CompactionStarted",
            "ContextTruncated",
            "CompactionCompleted"
        ]
    );
    assert!(d.ops.iter().all(|o| !matches!(o.kind, OpKind::Drop)));
    // 12 results of 12,000 bytes shrunk to 2,048 bytes (512 tokens) fit 18,000.
    let truncs = d
        .ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Truncate { .. }))
        .count();
    assert_eq!(truncs, 12);
    // A tighter window: even the emergency cap is not enough → CompactionFailed, nothing evicted.
    let c = TestCall::new(c.messages.clone()).window(12_000);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(codes(&d).last(), Some(&"CompactionFailed"));
    assert!(d.ops.iter().all(|o| !matches!(o.kind, OpKind::Drop)));
}

#[test]
fn terminal_truncation_drops_before_the_active_tail_behind_a_marker() {
    // enforce_terminal.rs TRUNCATE_KEEP_LAST 4 + active_tail_start + terminal_marker.rs: the
    // cascade can only re-compress its own summary (the task starts at u21), so terminal
    // truncation drops everything before the task behind the marker and shrinks the rest.
    let mut m = vec![user(0, 100)];
    m.extend((1..=20).map(|i| asst(i, 1_000)));
    m.push(TestMsg::user("please fix the crash in src/main.rs"));
    m.extend((22..42).map(|i| asst(i, 1_000)));
    let d = call(m).decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(
        codes(&d),
        [
            "CompactionStarted",
            "ContextTruncated",
            "CompactionCompleted"
        ]
    );
    let (end, body, text) = summarize_end(&d).unwrap();
    assert_eq!((end, body), (21, 0));
    assert!(text.starts_with("[CONTEXT TRUNCATED]\nOlder conversation was dropped"));
    // Each 4,000-byte reply is cut to 2,048 bytes around the fallback marker.
    let truncs: Vec<_> = d
        .ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Truncate { head, tail, marker } => Some((o.start, head + tail, marker)),
            _ => None,
        })
        .collect();
    assert_eq!(truncs.len(), 20);
    assert!(truncs[0].2.contains("truncated text; original_bytes=4000"));
    assert_eq!(truncs[0].1, 2_048 - truncs[0].2.len() as u64);
}

#[test]
fn terminal_truncation_keeps_the_cascades_summary_when_the_list_is_short() {
    // terminal.rs: with ≤ TRUNCATE_KEEP_LAST messages left nothing is dropped; the summary
    // stays behind the "Recent tool output was too large" marker and is shrunk like any text.
    // Window 16,000: safety budget 5,184. The cascade goes down to keep_last 1, [summary, u29];
    // u29 (5,000) and the summary do not fit together.
    let mut m: Vec<TestMsg> = (0..29).map(|i| user(i, 2_000)).collect();
    m.push(user(29, 5_000));
    let c = TestCall::new(m).window(16_000);
    let d = c.decide(strategy(json!({})).as_mut()).unwrap();
    assert_eq!(codes(&d)[1], "ContextTruncated");
    let (end, body, text) = summarize_end(&d).unwrap();
    // The summary is shrunk like the other texts, down to the last payload cap (2,048 bytes:
    // 512 tokens at 4 bytes a token) before the list fits.
    assert_eq!((end, body), (29, 512));
    assert!(text.starts_with("[CONTEXT TRUNCATED]\nRecent tool output"));
    assert!(text.contains("[AUTO CONTEXT COMPRESSION]"));
}

// ── Export ───────────────────────────────────────────────────────────────────────────────────

/// A mirror of the parts of CodeTether's config structs the export writes, field for field:
/// `Config` (codetether-agent 4.7.4 src/config/core.rs:11-49: `default_model: Option<String>`,
/// `rlm: crate::rlm::RlmConfig`, both `#[serde(default)]`) and `RlmConfig` (codetether-rlm 0.1.1
/// src/config.rs:16-40, defaults from its `config_defaults`). The real crate is not a
/// dev-dependency: building it takes far longer than CI allows (docs/strategies/codetether.md).
mod mirror {
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    pub struct Config {
        #[serde(default)]
        pub default_model: Option<String>,
        #[serde(default)]
        pub rlm: RlmConfig,
    }

    #[derive(Deserialize)]
    pub struct RlmConfig {
        #[serde(default = "mode")]
        pub mode: String,
        #[serde(default = "threshold")]
        pub threshold: f64,
        #[serde(default = "max_iterations")]
        pub max_iterations: usize,
        #[serde(default = "max_subcalls")]
        pub max_subcalls: usize,
        #[serde(default = "runtime")]
        pub runtime: String,
        pub root_model: Option<String>,
        pub subcall_model: Option<String>,
        #[serde(default)]
        pub history_trigger_messages: usize,
    }

    fn mode() -> String {
        "auto".into()
    }
    fn threshold() -> f64 {
        0.35
    }
    fn max_iterations() -> usize {
        15
    }
    fn max_subcalls() -> usize {
        50
    }
    fn runtime() -> String {
        "rust".into()
    }

    impl Default for RlmConfig {
        fn default() -> Self {
            RlmConfig {
                mode: mode(),
                threshold: threshold(),
                max_iterations: max_iterations(),
                max_subcalls: max_subcalls(),
                runtime: runtime(),
                root_model: None,
                subcall_model: None,
                history_trigger_messages: 0,
            }
        }
    }
}

fn tuned() -> Value {
    json!({
        "model": "anthropic/claude-sonnet-4-5",
        "rlm_model": "zai/glm-5",
        "history_trigger_messages": 120,
        "session_max_tokens": 16_384,
        "keep_last_candidates": [20, 10, 5],
        "truncate_keep_last": 3,
        "safety_budget_ratio": 0.85,
        "reserve_overhead_tokens": 4_096,
        "fallback_chunk_ratio": 0.2,
        "oversized_last_message_ratio": 0.3,
        "terminal_payload_caps": [65_536, 8_192],
        "terminal_emergency_cap_bytes": 512,
    })
}

fn export(params: &Value, format: &str) -> String {
    let p = Params::resolve(&config::schema(), params).unwrap();
    config::export(&p, format).unwrap()
}

#[test]
fn exported_toml_reads_into_codetethers_config_with_every_tuned_value() {
    // config/load.rs parse_config: toml::from_str::<Config>.
    let text = export(&tuned(), "toml");
    let cfg: mirror::Config = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        cfg.default_model.as_deref(),
        Some("anthropic/claude-sonnet-4-5")
    );
    assert_eq!(cfg.rlm.root_model.as_deref(), Some("zai/glm-5"));
    assert_eq!(cfg.rlm.history_trigger_messages, 120);
    // Untouched RlmConfig fields keep CodeTether's defaults.
    assert_eq!(
        (cfg.rlm.mode.as_str(), cfg.rlm.max_iterations),
        ("auto", 15)
    );
    assert_eq!(
        (
            cfg.rlm.threshold,
            cfg.rlm.max_subcalls,
            cfg.rlm.runtime.as_str()
        ),
        (0.35, 50, "rust")
    );
    assert!(cfg.rlm.subcall_model.is_none());
    // The environment and the compiled-in constants are in the same file, as comments.
    for line in [
        "#   export CODETETHER_SESSION_MAX_TOKENS=16384",
        "#   export CODETETHER_CONTEXT_POLICY=legacy",
        "#   export CODETETHER_RLM_MODEL=zai/glm-5",
        "# const KEEP_LAST_CANDIDATES: [usize; 3] = [20, 10, 5];",
        "# const TRUNCATE_KEEP_LAST: usize = 3;",
        "# const SAFETY_BUDGET_RATIO: f64 = 0.85;",
        "# const RESERVE_OVERHEAD_TOKENS: usize = 4096;",
        "# const OVERSIZED_LAST_MESSAGE_RATIO: f64 = 0.3;",
        "# const TERMINAL_PAYLOAD_CAPS: [usize; 2] = [65536, 8192];",
        "# const TERMINAL_EMERGENCY_CAP_BYTES: usize = 512;",
        "(ctx_window as f64 * 0.2) as usize, None)",
    ] {
        assert!(text.contains(line), "missing {line}\n{text}");
    }
    let env = export(&tuned(), "env");
    assert!(
        env.contains("export CODETETHER_SESSION_MAX_TOKENS=16384\n"),
        "{env}"
    );
}

#[test]
fn export_then_import_gives_the_same_parameters() {
    let schema = config::schema();
    for params in [json!({}), tuned(), json!({"fallback_chunk_ratio": 0.1})] {
        let text = export(&params, "toml");
        let back = config::import("toml", &text).unwrap();
        let want = Params::resolve(&schema, &params).unwrap();
        assert_eq!(Params::resolve(&schema, &back).unwrap(), want, "{text}");
    }
    let back = config::import("env", &export(&tuned(), "env")).unwrap();
    assert_eq!(back["session_max_tokens"], json!(16_384));
}

#[test]
fn import_names_the_line_of_a_bad_value() {
    let err =
        config::import("toml", "[rlm]\n# const TRUNCATE_KEEP_LAST: usize = 0;\n").unwrap_err();
    assert!(
        err.contains("line 2") && err.contains("truncate_keep_last"),
        "{err}"
    );
    let err = config::import("toml", "[rlm]\nhistory_trigger_messages = \"x\"\n").unwrap_err();
    assert!(err.contains("history_trigger_messages"), "{err}");
    let err = config::import("toml", "# export CODETETHER_CONTEXT_POLICY=reset\n").unwrap_err();
    assert!(
        err.contains("context_policy") && err.contains("legacy"),
        "{err}"
    );
}

#[test]
fn validation_refuses_what_codetether_could_not_compile() {
    for bad in [
        json!({"keep_last_candidates": []}),
        json!({"keep_last_candidates": [16, 0]}),
        json!({"terminal_payload_caps": []}),
    ] {
        let p = Params::resolve(&config::schema(), &bad).unwrap();
        assert!(CompressionStrategy.create(p).is_err(), "{bad}");
    }
}

fn estimate_gauge(d: &Decision) -> u64 {
    d.gauges
        .iter()
        .find(|g| g.0 == "codetether_estimate")
        .unwrap()
        .1 as u64
}

#[test]
fn thinking_older_than_4_messages_leaves_the_estimate() {
    // experimental/thinking_prune.rs prune_thinking (KEEP_LAST_MESSAGES 4).
    let reply = text("reply", 10);
    let thought = text("thinking", 2_000);
    let mut m = vec![
        user(0, 10),
        TestMsg::assistant(&format!("{thought}\n{reply}")).content(&reply),
    ];
    let mut s = strategy(json!({}));
    let fresh = estimate_gauge(&call(m.clone()).decide(s.as_mut()).unwrap());
    assert_eq!(
        fresh,
        10 + estimate::estimate_tokens(&format!("{thought}\n{reply}"))
    );
    m.extend((0..4).map(|i| user(10 + i, 10)));
    let aged = estimate_gauge(&call(m).decide(s.as_mut()).unwrap());
    // The thinking's 2,000 tokens are gone; the reply and the four new messages remain.
    assert_eq!(aged, 10 + 10 + 40);
}

#[test]
fn formatting_noise_in_old_assistant_text_leaves_the_estimate() {
    // experimental/lingua.rs prune_low_entropy (KEEP_LAST_MESSAGES 6).
    let noisy = format!("{}\n\n\n\n...\n   \n{}   \n", text("a", 50), text("b", 50));
    let mut m = vec![user(0, 10), TestMsg::assistant(&noisy)];
    let mut s = strategy(json!({}));
    let fresh = estimate_gauge(&call(m.clone()).decide(s.as_mut()).unwrap());
    m.extend((0..6).map(|i| user(10 + i, 10)));
    let aged = estimate_gauge(&call(m).decide(s.as_mut()).unwrap());
    let pruned = prune::pruned_span(&noisy).tokens();
    assert!(pruned < estimate::estimate_tokens(&noisy));
    assert_eq!(
        aged,
        fresh - estimate::estimate_tokens(&noisy) + pruned + 60
    );
}

/// The incremental prefix (history.rs `PrefixStream`) writes back, line for line, the text the
/// direct rendering gives (`render::message` of every position): what a later cascade step
/// renders of a summary measured on the stream.
#[test]
fn the_prefix_stream_writes_back_the_rendered_prefix() {
    use crate::history::{History, PrefixStream};
    let mut msgs = vec![user(0, 30)];
    for i in 0..12 {
        let mut c = TestMsg::tool_call(&format!("c{i}"), "read", "{\"path\":\"/src/x.rs\"}");
        c.text = "{\"path\":\"/src/x.rs\"}".into();
        msgs.push(c);
        msgs.push(TestMsg::tool_result(
            &format!("c{i}"),
            "read",
            &format!("fn f{i}() {{}}\n# heading\nerror: nope\n{}", text("r", 300)),
        ));
        msgs.push(asst(i, 20));
    }
    let tc = call(msgs);
    tc.with_view(|raw| {
        let c = unsafe { Call::from_raw(raw) };
        let mut h = History::new();
        h.sync(&c);
        let len = c.len();
        let mut direct = String::new();
        let mut idx = 0;
        for p in 0..len - 16 {
            idx += crate::render::message(&mut direct, idx, &c, &h, p, len);
        }
        let mut st = PrefixStream::default();
        st.extend(&c, &h, len - 16, len);
        let n = direct.lines().count() as u64;
        let mut back = String::new();
        st.lines_into(&c, &h, len, 0, n - 1, &mut back);
        assert_eq!(back, direct.lines().collect::<Vec<_>>().join("\n"));
        let mut mid = String::new();
        st.lines_into(&c, &h, len, 7, 40, &mut mid);
        assert_eq!(
            mid,
            direct
                .lines()
                .skip(7)
                .take(34)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(
            st.stream.compress_span(500).0,
            estimate::Span::of(&crate::chunker::compress(&direct, 500))
        );
    });
}
