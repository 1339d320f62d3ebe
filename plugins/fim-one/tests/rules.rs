//! Every rule of FIM One's context management, through the SDK trait (no FFI).

mod host;

use ctxlab_plugin_api::abi::{FLAG_INJECTED, FLAG_PINNED};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use ctxlab_plugin_api::{EventKind, OpKind, Role, Scope};
use host::*;
use serde_json::json;

/// `n` ASCII chars: n/4 tokens of text, + 4 per message in FIM One's estimate.
fn text(n: usize) -> String {
    "x".repeat(n)
}

const CLEARED: &str = "[result cleared -- older than 6 most recent tool results]";

fn small_budget(extra: serde_json::Value) -> serde_json::Value {
    let mut p = json!({"budget_source": "guard_default", "CONTEXT_GUARD_DEFAULT_BUDGET": 1000,
                       "summary_max_tokens": 100});
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

fn call(msgs: Vec<TestMsg>) -> TestCall {
    TestCall::new(ids(msgs, 1))
}

fn ops_of<'d>(
    d: &'d ctxlab_plugin_api::Decision,
    f: impl Fn(&OpKind) -> bool,
) -> Vec<&'d ctxlab_plugin_api::Op> {
    d.ops.iter().filter(|o| f(&o.kind)).collect()
}

fn removed_persistently(d: &ctxlab_plugin_api::Decision) -> Vec<usize> {
    d.ops
        .iter()
        .filter(|o| o.scope == Scope::Persistent)
        .filter(|o| matches!(o.kind, OpKind::Drop | OpKind::Summarize { .. }))
        .flat_map(|o| o.start..o.end)
        .collect()
}

fn removed(d: &ctxlab_plugin_api::Decision) -> Vec<usize> {
    d.ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Drop | OpKind::Summarize { .. }))
        .flat_map(|o| o.start..o.end)
        .collect()
}

#[test]
fn under_budget_only_the_current_query_is_pinned() {
    let mut s = strategy(json!({}));
    let mut c = call(vec![TestMsg::system("You are FIM One."), query("hello", 0)]);
    c.new_request = true;
    let d = run(s.as_mut(), &c);
    assert_eq!(d.ops.len(), 1, "{:?}", d.ops);
    assert_eq!((d.ops[0].kind.clone(), d.ops[0].start), (OpKind::Pin, 1));
    let budget = d.gauges.iter().find(|g| g.0 == "budget").unwrap().1;
    assert_eq!(
        budget, 64_000.0,
        "deps.get_context_budget: 128,000 − 64,000"
    );
}

/// compact.py `CompactUtils.estimate_messages_tokens`: 4 + `estimate_tokens(msg.content)` per
/// message. The content is the text and the tool results (the host's ABI 1.3 content counts):
/// thinking and tool-call arguments, which the host's flattened text also holds, are not counted.
#[test]
fn the_estimate_counts_message_content_only() {
    let mut s = strategy(json!({}));
    let thinking = text(4000);
    let args = format!("{{\"path\": \"{}\"}}", text(2000));
    let mut reply = TestMsg::tool_call("c1", "read", &args);
    reply.text = format!("{thinking}\nLet me read it.\n{args}");
    let reply = reply.content("Let me read it.");
    let c = call(vec![
        TestMsg::system("You are FIM One."),
        query("read it", 0),
        reply,
        TestMsg::tool_result("c1", "read", &text(400)),
    ]);
    let d = run(s.as_mut(), &c);
    let est = d.gauges.iter().find(|g| g.0 == "fim_estimate").unwrap().1;
    // (4 + 4) + (4 + 1) + (4 + 3) + (4 + 100); the thinking and the arguments would add ~1,500.
    assert_eq!(est, 124.0);
}

/// context_guard.py `_truncate_oversized`: `len(content) > max_message_chars` — the content's
/// length, not the flattened text's.
#[test]
fn only_content_longer_than_the_limit_is_cut() {
    let mut s = strategy(json!({"CONTEXT_GUARD_MAX_MSG_CHARS": 1000}));
    let mut long_thoughts = TestMsg::assistant(&text(5000)).content("short answer");
    long_thoughts.request = 0;
    let c = call(vec![query("go", 0), long_thoughts]);
    let d = run(s.as_mut(), &c);
    assert!(
        ops_of(&d, |k| matches!(k, OpKind::Truncate { .. })).is_empty(),
        "{:?}",
        d.ops
    );
}

#[test]
fn an_oversized_message_is_cut_with_a_truncated_suffix() {
    let mut s = strategy(json!({"CONTEXT_GUARD_MAX_MSG_CHARS": 1000}));
    let mut image = TestMsg::user(&text(5000)).image(1000);
    image.request = 0;
    let c = call(vec![
        query("read it", 0),
        TestMsg::tool_call("t1", "read", "{}"),
        TestMsg::tool_result("t1", "read", &text(5000)),
        image,
    ]);
    let d = run(s.as_mut(), &c);
    let cut = ops_of(&d, |k| matches!(k, OpKind::Truncate { .. }));
    assert_eq!(cut.len(), 1, "vision messages are not cut: {:?}", d.ops);
    assert_eq!(cut[0].start, 2);
    assert_eq!(
        cut[0].kind,
        OpKind::Truncate {
            head: 1000,
            tail: 0,
            marker: "\n[Truncated]".into()
        }
    );
    let after = apply(&c, &d);
    assert_eq!(after[2].text, text(1000) + "\n[Truncated]");
    assert_eq!(events(&d, EventKind::Truncation).len(), 1);
}

/// [system, query, 10 messages of 103 tokens]: over a 1,000 budget.
fn long_request() -> Vec<TestMsg> {
    let mut m = vec![
        TestMsg::system("You are FIM One."),
        query("the task", 0).pinned(),
    ];
    for i in 0..10 {
        m.push(if i % 2 == 0 {
            TestMsg::assistant(&text(396))
        } else {
            TestMsg::user(&text(396))
        });
    }
    m
}

#[test]
fn llm_compaction_keeps_system_pinned_and_the_recent_four_and_summarizes_the_rest() {
    let mut s = strategy(small_budget(json!({})));
    let c = call(long_request());
    let d = run(s.as_mut(), &c);
    let sums = ops_of(&d, |k| matches!(k, OpKind::Summarize { .. }));
    assert_eq!(sums.len(), 1, "{:?}", d.ops);
    assert_eq!(
        (sums[0].start, sums[0].end),
        (2, 8),
        "the 6 oldest compactable messages"
    );
    match &sums[0].kind {
        OpKind::Summarize {
            role,
            text,
            max_tokens,
            ..
        } => {
            assert_eq!(*role, Role::System);
            assert_eq!(text, "[Conversation summary]:");
            assert_eq!(*max_tokens, 100);
        }
        _ => unreachable!(),
    }
    assert_eq!(
        removed(&d),
        (2..8).collect::<Vec<_>>(),
        "system, query and recent 4 stay"
    );
    let ev = events(&d, EventKind::Compaction);
    assert_eq!(ev[0].code, "context_guard.llm_compact");
    assert!(
        ev[0]
            .message
            .contains("exceeds budget 1,000 (hint=react_iteration)"),
        "{}",
        ev[0].message
    );
    assert!(ev[0].tokens_after < ev[0].tokens_before);
}

#[test]
fn the_hint_is_recorded_with_the_compaction() {
    let mut s = strategy(small_budget(json!({"hint": "step_dependency"})));
    let d = run(s.as_mut(), &call(long_request()));
    assert!(events(&d, EventKind::Compaction)[0]
        .message
        .contains("hint=step_dependency"));
}

#[test]
fn still_over_budget_after_the_summary_smart_truncate_runs_on_the_result() {
    let mut s = strategy(small_budget(json!({})));
    let mut m = long_request();
    // The four recent messages alone are over budget.
    for i in 0..4 {
        m.push(if i % 2 == 0 {
            TestMsg::user(&text(2000))
        } else {
            TestMsg::assistant(&text(2000))
        });
    }
    let c = call(m);
    let d = run(s.as_mut(), &c);
    let tr = events(&d, EventKind::Truncation);
    assert!(
        tr.iter().any(|e| e.code == "context_guard.smart_truncate"),
        "{:?}",
        d.events
    );
    let after = apply(&c, &d);
    assert!(
        after.iter().any(|m| m.text == "the task"),
        "the pinned query survives"
    );
    assert_eq!(after.last().unwrap().text, c.messages.last().unwrap().text);
}

#[test]
fn without_a_compaction_llm_smart_truncate_never_starts_with_an_assistant_message() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
    // 12 messages of 103 tokens alternating user/assistant: 9 fit (927), the 9th from the end
    // is an assistant message, so it goes too.
    let m: Vec<TestMsg> = (0..12)
        .map(|i| {
            if i % 2 == 0 {
                TestMsg::user(&text(396))
            } else {
                TestMsg::assistant(&text(396))
            }
        })
        .collect();
    let c = call(m);
    let d = run(s.as_mut(), &c);
    assert!(ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).is_empty());
    assert_eq!(removed(&d), (0..4).collect::<Vec<_>>(), "{:?}", d.ops);
    let after = apply(&c, &d);
    assert_eq!(after[0].role, Role::User);
}

/// compact.py `CompactUtils.smart_truncate` looks at roles only: a tool result whose call did
/// not fit stays (an orphan); the ops say so with AllowSplit and the host counts the split.
#[test]
fn smart_truncate_keeps_tool_results_whose_call_is_gone() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
    let m = vec![
        TestMsg::user(&text(396)),
        TestMsg::tool_call("a", "read", "{}"),
        // 4 + 2736/4 = 688: after the three newest (309) it leaves 3, less than the call's cost.
        TestMsg::tool_result("a", "read", &text(2736)),
        TestMsg::user(&text(396)),
        TestMsg::user(&text(396)),
        TestMsg::assistant(&text(396)),
    ];
    let c = call(m);
    let d = run(s.as_mut(), &c);
    assert_eq!(removed(&d), vec![0, 1], "{:?}", d.ops);
    assert_eq!(
        ops_of(&d, |k| *k == OpKind::AllowSplit)
            .iter()
            .map(|o| (o.start, o.end))
            .collect::<Vec<_>>(),
        vec![(0, 2)]
    );
    assert_eq!(host::validate(&c, &d), 1, "one pair split");
    let after = apply(&c, &d);
    assert!(after[0].tools.iter().any(|t| t.id == "a"), "orphan kept");
}

/// compact.py `CompactUtils.smart_truncate`: `result = pinned + recent`, so with a pinned query
/// the result starts with it and a recent part that starts with an assistant message is kept.
#[test]
fn smart_truncate_puts_pinned_first_so_a_recent_assistant_is_not_popped() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
    let mut m: Vec<TestMsg> = vec![
        TestMsg::system("You are FIM One."),
        query(&text(396), 0).pinned(),
    ];
    for i in 0..12 {
        m.push(if i % 2 == 0 {
            TestMsg::assistant(&text(396))
        } else {
            TestMsg::user(&text(396))
        });
    }
    // Pinned query 103; 8 × 103 = 824 fit in the 897 left; the 8th from the end (position 6) is
    // an assistant message, which FIM One keeps since the result starts with the query.
    let c = call(m);
    let d = run(s.as_mut(), &c);
    assert_eq!(removed(&d), vec![0, 2, 3, 4, 5], "{:?}", d.ops);
    // The system prompt goes too, the oldest non-pinned message: left out of this call (and of
    // the rest of the request), kept in the history for the next request.
    assert!(d
        .ops
        .iter()
        .any(|o| o.scope == Scope::ThisCall && (o.start, o.end) == (0, 1)));
    let after = apply(&c, &d);
    assert_eq!(after[0].role, Role::System);
    assert_eq!(after[1].text, text(396));
    assert_eq!(after[2].role, Role::Assistant);
}

/// context_guard.py `_llm_compact_with_hint`: `old = compactable[:-keep_recent]`, a plain slice:
/// a call in the summarized part loses its result's pairing, the result stays verbatim.
#[test]
fn llm_compaction_slices_compactable_even_through_a_tool_pair() {
    let mut s = strategy(small_budget(json!({})));
    let mut m = long_request();
    // compactable: 10 + call + result + 3 = 15; the recent 4 are [result, a, u, a].
    m.push(TestMsg::tool_call("t1", "read", "{}"));
    m.push(TestMsg::tool_result("t1", "read", &text(396)));
    m.push(TestMsg::assistant(&text(40)));
    m.push(TestMsg::user(&text(40)));
    m.push(TestMsg::assistant(&text(40)));
    let c = call(m);
    let d = run(s.as_mut(), &c);
    assert_eq!(removed(&d), (2..13).collect::<Vec<_>>(), "{:?}", d.ops);
    assert!(!ops_of(&d, |k| *k == OpKind::AllowSplit).is_empty());
    assert_eq!(host::validate(&c, &d), 1);
    let after = apply(&c, &d);
    assert!(after.iter().any(|m| m.tools.iter().any(|t| t.id == "t1")));
}

/// `ContextGuard._KEEP_RECENT = int(os.getenv("CONTEXT_GUARD_KEEP_RECENT", "4"))` accepts 0;
/// `compactable[:-0]` is empty, so nothing is summarized and smart_truncate does the work.
#[test]
fn keep_recent_zero_summarizes_nothing_and_truncates() {
    let mut s = strategy(small_budget(json!({"CONTEXT_GUARD_KEEP_RECENT": 0})));
    let d = run(s.as_mut(), &call(long_request()));
    assert!(ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).is_empty());
    assert!(events(&d, EventKind::Note)
        .iter()
        .any(|e| e.message.contains("compactable[:-0]")));
    assert!(events(&d, EventKind::Truncation)
        .iter()
        .any(|e| e.code == "context_guard.smart_truncate"));
}

/// microcompact.py `_is_tool_result`: JSON-mode observations (user messages starting with
/// "Observation: ") count as tool results.
#[test]
fn micro_compact_clears_json_mode_observations() {
    let mut s = strategy(json!({}));
    let mut m = vec![query("go", 0)];
    for i in 0..8 {
        m.push(TestMsg::assistant(&format!(
            "{{\"tool\": \"read\", \"n\": {i}}}"
        )));
        m.push(TestMsg::user(&format!("Observation: result {i}")));
    }
    let mut c = call(m);
    c.new_request = true;
    let d = run(s.as_mut(), &c);
    let masks = ops_of(&d, |k| matches!(k, OpKind::Mask { .. }));
    assert_eq!(
        masks.iter().map(|o| o.start).collect::<Vec<_>>(),
        vec![2, 4],
        "{:?}",
        d.ops
    );
}

/// context_guard.py `_llm_compact_with_hint`: pinned tokens > 50 % of the budget and more than
/// one pinned → `pinned_msgs[:-1]` are unpinned and put first in the compactable pool; the
/// **last** pinned message stays pinned, even when it is an injected one and not the query.
#[test]
fn pinned_cap_keeps_the_last_pinned_message_and_releases_the_others() {
    let mut s = strategy(small_budget(json!({})));
    let mut m = vec![query(&text(396), 0).pinned()];
    for _ in 0..3 {
        m.push(TestMsg::assistant(&text(100)));
        m.push(TestMsg::user(&text(800)).flag(FLAG_INJECTED | FLAG_PINNED));
    }
    for i in 0..6 {
        m.push(if i % 2 == 0 {
            TestMsg::assistant(&text(396))
        } else {
            TestMsg::user(&text(396))
        });
    }
    let mut c = call(m);
    c.new_messages = 1;
    let d = run(s.as_mut(), &c);
    let warn = events(&d, EventKind::Warn);
    assert_eq!(warn.len(), 1, "{:?}", d.events);
    assert_eq!(warn[0].code, "context_guard.pinned_cap");
    // 103 + 3 × 204 = 715 pinned tokens; FIM One logs 715 / 1000 × 0.5 × 100 = 36 %.
    assert!(
        warn[0].message.contains("715 tokens (36% of budget 1000)"),
        "{}",
        warn[0].message
    );
    let unpinned: Vec<usize> = ops_of(&d, |k| *k == OpKind::Unpin)
        .iter()
        .flat_map(|o| o.start..o.end)
        .collect();
    for p in [0, 2, 4] {
        assert!(unpinned.contains(&p), "{p} released: {:?}", d.ops);
    }
    assert!(!unpinned.contains(&6), "the last pinned stays: {:?}", d.ops);
    let gone = removed(&d);
    assert!(gone.contains(&0), "the released query is summarized first");
    assert!(!gone.contains(&6));
}

#[test]
fn below_half_the_budget_pinned_messages_stay_pinned() {
    let mut s = strategy(small_budget(json!({})));
    let mut m = long_request();
    m.insert(
        3,
        TestMsg::user("also this").flag(FLAG_INJECTED | FLAG_PINNED),
    );
    let d = run(s.as_mut(), &call(m));
    assert!(events(&d, EventKind::Warn).is_empty());
    assert!(
        ops_of(&d, |k| *k == OpKind::Unpin).is_empty(),
        "{:?}",
        d.ops
    );
    assert!(!removed(&d).contains(&3));
}

#[test]
fn a_failed_llm_compaction_falls_back_to_smart_truncate_silently_and_the_event_says_so() {
    let mut s = strategy(small_budget(json!({"compact_llm_fails_at_calls": [7]})));
    let mut c = call(long_request());
    c.call_index = 7;
    let d = run(s.as_mut(), &c);
    let f = events(&d, EventKind::Failure);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, "context_guard.llm_compact_failed");
    assert!(ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).is_empty());
    assert!(!removed(&d).is_empty(), "smart_truncate dropped the oldest");
    assert!(events(&d, EventKind::Truncation)
        .iter()
        .any(|e| e.code == "context_guard.smart_truncate"));
    // Any other call summarizes.
    let mut s = strategy(small_budget(json!({"compact_llm_fails_at_calls": [7]})));
    let mut c = call(long_request());
    c.call_index = 8;
    let d = run(s.as_mut(), &c);
    assert!(events(&d, EventKind::Failure).is_empty());
    assert_eq!(
        ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).len(),
        1
    );
}

/// Three earlier requests (with a tool pair in the last) and a new query.
fn earlier_requests() -> Vec<TestMsg> {
    let mut m = Vec::new();
    for r in 0..3u32 {
        m.push(query(&text(396), r));
        m.push(TestMsg::assistant(&text(396)).request(r));
        m.push(TestMsg::user(&text(396)).request(r));
        m.push(TestMsg::assistant(&text(396)).request(r));
    }
    m.insert(10, TestMsg::tool_call("t9", "search", "{}").request(2));
    m.insert(
        11,
        TestMsg::tool_result("t9", "search", &text(396)).request(2),
    );
    m.push(query("and now?", 3));
    m
}

/// db.py `DbMemory.get_messages`: the persisted rows (queries, user messages, one answer per
/// request) are compacted with `CompactUtils.llm_compact(keep_recent=4)`; its summary is a system
/// message, which react.py does not append (`if msg.role != "system"`): only the 4 recent rows
/// reach the agent.
#[test]
fn load_time_compaction_keeps_the_four_recent_rows_and_the_summary_is_dropped() {
    let mut s = strategy(small_budget(json!({"CONTEXT_GUARD_DEFAULT_BUDGET": 800})));
    let mut c = call(earlier_requests());
    c.new_request = true;
    c.new_messages = 2;
    let n = c.messages.len();
    let d = run(s.as_mut(), &c);
    let load = d
        .events
        .iter()
        .find(|e| e.code == "db_memory.compact")
        .expect("a load-time compaction");
    assert!(
        load.message
            .starts_with("Earlier context (5 messages) was summarized")
            && load.message.contains("does not append"),
        "{}",
        load.message
    );
    let reload = d
        .events
        .iter()
        .find(|e| e.code == "db_memory.reload")
        .expect("reload note");
    assert!(
        reload.message.contains(": 5 messages"),
        "{}",
        reload.message
    );
    assert!(ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).is_empty());
    // Not persisted: the intermediate assistants 1, 5, 9 and the tool pair 10-11; compacted: the
    // five oldest rows 0, 2, 3, 4, 6.
    assert_eq!(
        removed(&d),
        vec![0, 1, 2, 3, 4, 5, 6, 9, 10, 11],
        "{:?}",
        d.ops
    );
    assert!(d
        .ops
        .iter()
        .any(|o| o.kind == OpKind::Pin && o.start == n - 1));
    let after = apply(&c, &d);
    assert!(after.iter().all(|m| m.role != Role::System));
    assert_eq!(after.len(), 5);
}

#[test]
fn load_time_compaction_without_llm_truncates_the_history() {
    let mut s = strategy(small_budget(
        json!({"compact_llm": false, "CONTEXT_GUARD_DEFAULT_BUDGET": 800}),
    ));
    let mut c = call(earlier_requests());
    c.new_request = true;
    c.new_messages = 2;
    let d = run(s.as_mut(), &c);
    let load = d
        .events
        .iter()
        .find(|e| e.code == "db_memory.compact")
        .unwrap();
    assert!(load.message.contains("smart_truncate"), "{}", load.message);
    assert!(ops_of(&d, |k| matches!(k, OpKind::Summarize { .. })).is_empty());
}

/// react.py rebuilds the list at every request: system prompt + DbMemory's non-system history +
/// the query. A summary an earlier ContextGuard compaction wrote is in no database row: it is
/// gone at the next request.
#[test]
fn earlier_summaries_do_not_come_back_at_the_next_request() {
    let mut s = strategy(json!({}));
    let mut m = vec![
        TestMsg::system("You are FIM One."),
        query("first", 0),
        TestMsg::system("[Conversation summary]: earlier")
            .flag(ctxlab_plugin_api::abi::FLAG_SUMMARY)
            .tokens(20),
        TestMsg::assistant("answer"),
        query("second", 1),
    ];
    m[3].request = 0;
    let mut c = call(m);
    c.new_request = true;
    c.new_messages = 1;
    let d = run(s.as_mut(), &c);
    assert_eq!(removed(&d), vec![2], "{:?}", d.ops);
}

/// compact.py `smart_truncate` treats the system prompt like any unpinned message: the oldest,
/// it goes first. react.py builds the system messages again at every run (`_emit_system_messages`
/// before the history): the prompt is left out for the rest of the request (a this-call drop at
/// each call) and sent again at the next request.
#[test]
fn a_system_prompt_smart_truncate_dropped_is_back_at_the_next_request() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
    let mut m = vec![TestMsg::system(&text(396)), query("q", 0).pinned()];
    for i in 0..10 {
        m.push(if i % 2 == 0 {
            TestMsg::assistant(&text(396))
        } else {
            TestMsg::user(&text(396))
        });
    }
    let mut c = call(m);
    c.new_request = true;
    let d = run(s.as_mut(), &c);
    let this_call: Vec<(usize, usize)> = d
        .ops
        .iter()
        .filter(|o| o.scope == Scope::ThisCall)
        .map(|o| (o.start, o.end))
        .collect();
    assert_eq!(this_call, vec![(0, 1)], "{:?}", d.ops);
    assert!(!removed_persistently(&d).contains(&0));
    // The same request: still left out.
    let mut next = apply(&c, &d);
    assert_eq!(next[0].role, Role::System);
    next.push(TestMsg::assistant("x"));
    let mut c2 = TestCall::new(ids(next, 100));
    c2.new_messages = 1;
    c2.call_index = 1;
    let d2 = run(s.as_mut(), &c2);
    assert!(
        d2.ops
            .iter()
            .any(|o| o.scope == Scope::ThisCall && (o.start, o.end) == (0, 1)),
        "{:?}",
        d2.ops
    );
    let est2 = d2.gauges.iter().find(|g| g.0 == "fim_estimate").unwrap().1;
    assert_eq!(est2, 5.0 + 9.0 * 103.0 + 5.0, "the prompt is not counted");
    // The next request: the prompt is sent again and counted.
    let mut third = apply(&c2, &d2);
    third.push(query("again", 1));
    let mut c3 = TestCall::new(ids(third, 200));
    c3.new_messages = 1;
    c3.new_request = true;
    c3.call_index = 2;
    let d3 = run(s.as_mut(), &c3);
    assert!(
        d3.ops
            .iter()
            .all(|o| !(o.scope == Scope::ThisCall && o.start == 0)),
        "{:?}",
        d3.ops
    );
    let est3 = d3.gauges.iter().find(|g| g.0 == "fim_estimate").unwrap().1;
    // prompt 103 + query 5 + the 5 user rows 515 + answer "x" 5 + new query 5 (the intermediate
    // assistants are not persisted, db.py).
    assert_eq!(est3, 633.0);
}

#[test]
fn micro_compact_clears_all_but_the_six_newest_tool_results_incrementally() {
    let mut s = strategy(json!({}));
    let mut m = vec![query("go", 0)];
    for i in 0..8 {
        m.push(TestMsg::tool_call(&format!("c{i}"), "read", "{}"));
        m.push(TestMsg::tool_result(
            &format!("c{i}"),
            "read",
            &format!("result {i}"),
        ));
    }
    let mut c = call(m);
    c.new_request = true;
    let d = run(s.as_mut(), &c);
    let masks = ops_of(&d, |k| matches!(k, OpKind::Mask { .. }));
    assert_eq!(
        masks.iter().map(|o| o.start).collect::<Vec<_>>(),
        vec![2, 4]
    );
    assert_eq!(
        masks[0].kind,
        OpKind::Mask {
            placeholder: CLEARED.into()
        }
    );
    // Next call: one more pair arrives; only the third oldest result is cleared now.
    let mut next = apply(&c, &d);
    next.push(TestMsg::tool_call("c8", "read", "{}"));
    next.push(TestMsg::tool_result("c8", "read", "result 8"));
    let mut c2 = TestCall::new(ids(next, 100));
    c2.new_messages = 2;
    c2.call_index = 1;
    let d2 = run(s.as_mut(), &c2);
    let masks = ops_of(&d2, |k| matches!(k, OpKind::Mask { .. }));
    assert_eq!(
        masks.iter().map(|o| o.start).collect::<Vec<_>>(),
        vec![6],
        "{:?}",
        d2.ops
    );
}

#[test]
fn injected_messages_are_pinned_and_released_when_the_next_request_reloads_history() {
    let mut s = strategy(json!({}));
    let mut c = call(vec![
        query("first", 0),
        TestMsg::assistant("working"),
        TestMsg::user("also check X").flag(FLAG_INJECTED),
    ]);
    c.new_request = true;
    let d = run(s.as_mut(), &c);
    let pins: Vec<usize> = ops_of(&d, |k| *k == OpKind::Pin)
        .iter()
        .map(|o| o.start)
        .collect();
    assert_eq!(pins, vec![0, 2]);
    let mut next = apply(&c, &d);
    next.push(TestMsg::assistant("answer"));
    next.push(query("second", 1));
    let mut c2 = TestCall::new(ids(next, 10));
    c2.new_request = true;
    c2.new_messages = 2;
    let d2 = run(s.as_mut(), &c2);
    let unpins: Vec<usize> = ops_of(&d2, |k| *k == OpKind::Unpin)
        .iter()
        .map(|o| o.start)
        .collect();
    assert_eq!(unpins, vec![0, 2], "{:?}", d2.ops);
    let pins: Vec<usize> = ops_of(&d2, |k| *k == OpKind::Pin)
        .iter()
        .map(|o| o.start)
        .collect();
    assert_eq!(pins, vec![4]);
}

#[test]
fn a_long_multi_request_replay_stays_valid_and_within_budget() {
    let mut s = strategy(
        json!({"budget_source": "guard_default", "CONTEXT_GUARD_DEFAULT_BUDGET": 3000,
                                "compact_llm_fails_at_calls": (80..90).collect::<Vec<u64>>()}),
    );
    let mut ctx: Vec<TestMsg> = Vec::new();
    let mut next_id = 1u64;
    let mut codes = std::collections::BTreeSet::new();
    for i in 0..120u64 {
        let mut fresh = Vec::new();
        let request = (i / 15) as u32;
        let new_request = i % 15 == 0;
        if new_request {
            if i > 0 {
                fresh.push(TestMsg::assistant(&text(600)).request(request - 1));
            }
            fresh.push(query(&text(300), request));
        } else {
            let id = format!("t{i}");
            fresh.push(TestMsg::tool_call(&id, "read", "{}").request(request));
            fresh.push(
                TestMsg::tool_result(&id, "read", &text(1200 + (i as usize % 7) * 200))
                    .request(request),
            );
            if i % 11 == 0 {
                fresh.push(
                    TestMsg::user("also this")
                        .flag(FLAG_INJECTED)
                        .request(request),
                );
            }
        }
        for m in &mut fresh {
            m.id = next_id;
            next_id += 1;
        }
        ctx.extend(fresh.iter().cloned());
        let mut c = TestCall::new(ctx.clone());
        c.call_index = i;
        c.new_messages = fresh.len() as u64;
        c.new_request = new_request;
        let d = run(s.as_mut(), &c);
        for e in &d.events {
            if std::env::var("FIM_DEBUG").is_ok() {
                eprintln!("call {i}: {} {}", e.code, e.message);
            }
            codes.insert(e.code.clone());
        }
        let est = d.gauges.iter().find(|g| g.0 == "fim_estimate").unwrap().1;
        assert!(
            est <= 3000.0,
            "call {i}: estimate {est} over budget; {:?}",
            d.events
        );
        ctx = apply(&c, &d);
    }
    for code in [
        "db_memory.reload",
        "context_guard.llm_compact",
        "context_guard.llm_compact_failed",
        "micro_compact",
    ] {
        assert!(codes.contains(code), "{code} never happened: {codes:?}");
    }
}
