//! Every rule of FIM One's context management, through the SDK trait (no FFI).

mod host;

use ctxlab_plugin_api::abi::{FLAG_INJECTED, FLAG_PINNED};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use ctxlab_plugin_api::{EventKind, OpKind, Role};
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
    assert_eq!(budget, 60_000.0, "128,000 − 64,000 − 4,000");
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

#[test]
fn smart_truncate_drops_tool_results_whose_call_is_gone() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
    let m = vec![
        TestMsg::user(&text(396)),
        TestMsg::tool_call("a", "read", &text(396)),
        TestMsg::tool_result("a", "read", &text(396)),
        TestMsg::tool_result("a2", "read", &text(2400)),
        TestMsg::user(&text(396)),
        TestMsg::assistant(&text(396)),
    ];
    // The walk keeps the last three (103 + 103 + 604 = 810) and stops at the result of "a",
    // whose call is gone; the rest is dropped without splitting the pair.
    let c = call(m);
    let d = run(s.as_mut(), &c);
    let after = apply(&c, &d);
    assert!(
        after.iter().all(|m| m.tools.iter().all(|t| t.id != "a")),
        "{:?}",
        d.ops
    );
}

#[test]
fn pinned_cap_unpins_injected_messages_but_never_the_query() {
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
    let unpinned: Vec<usize> = ops_of(&d, |k| *k == OpKind::Unpin)
        .iter()
        .flat_map(|o| o.start..o.end)
        .collect();
    for p in [2, 4, 6] {
        assert!(
            unpinned.contains(&p),
            "injected message {p} released: {:?}",
            d.ops
        );
    }
    assert!(
        !unpinned.contains(&0),
        "the query stays pinned: {:?}",
        d.ops
    );
    assert!(!removed(&d).contains(&0));
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

#[test]
fn load_time_compaction_summarizes_earlier_requests_before_the_first_call() {
    let mut s = strategy(small_budget(json!({})));
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
        load.message.starts_with("Earlier context (")
            && load.message.contains("messages) was summarized"),
        "{}",
        load.message
    );
    let reload = d
        .events
        .iter()
        .find(|e| e.code == "db_memory.reload")
        .expect("reload note");
    assert!(
        reload.message.contains("2 tool messages"),
        "{}",
        reload.message
    );
    let sum = ops_of(&d, |k| matches!(k, OpKind::Summarize { .. }));
    assert_eq!(sum.len(), 1, "{:?}", d.ops);
    assert!(sum[0].end < n);
    let gone = removed(&d);
    assert!(
        gone.contains(&10) && gone.contains(&11),
        "the tool pair is not reloaded"
    );
    assert!(!gone.contains(&(n - 1)));
    // The new query is pinned; the first of the earlier queries was pinned by nobody here.
    assert!(d
        .ops
        .iter()
        .any(|o| o.kind == OpKind::Pin && o.start == n - 1));
    // The summary plus the four recent history messages fit in the budget.
    let after = apply(&c, &d);
    assert_eq!(after.iter().filter(|m| m.role == Role::System).count(), 1);
}

#[test]
fn load_time_compaction_without_llm_truncates_the_history() {
    let mut s = strategy(small_budget(json!({"compact_llm": false})));
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
        json!({"budget_source": "guard_default", "CONTEXT_GUARD_DEFAULT_BUDGET": 4000,
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
            est <= 4000.0,
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
