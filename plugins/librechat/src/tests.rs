//! The rules of `@librechat/agents` 3.1.63 as this plugin models them, each test naming the
//! source it follows. The differential test (tests/oracles/librechat) runs the package itself.

use crate::config::Config;
use crate::config::Trigger;
use crate::engine::{max_context_tokens, should_trigger, LibreChat};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use ctxlab_plugin_api::{OpKind, Params, Scope, StrategyFactory};

fn engine(params: serde_json::Value) -> LibreChat {
    let p = Params::resolve(&crate::config::schema(), &params).unwrap();
    LibreChat::new(Config::from_params(&p).unwrap())
}

/// A call with this window and no output reserve.
fn call(msgs: Vec<TestMsg>, window: u64) -> TestCall {
    let mut c = TestCall::new(msgs).window(window);
    c.budget.max_output = 0;
    c
}

/// A tool-heavy conversation: user, then `turns` × (assistant call, long result, answer).
fn conversation(turns: usize, result_chars: usize) -> Vec<TestMsg> {
    let mut v = vec![TestMsg::user("please look at the files")];
    for t in 0..turns {
        let id = format!("call{t}");
        v.push(TestMsg::tool_call(&id, "read", "{\"path\":\"a.rs\"}"));
        let body: String = (0..result_chars / 20)
            .map(|i| format!("line {i:05} .......\n"))
            .collect();
        v.push(TestMsg::tool_result(&id, "read", &body));
        v.push(TestMsg::assistant(&format!(
            "I read part {t} and it looks fine."
        )));
    }
    v
}

/// Graph.ts + prune.ts: below the budget nothing is touched (no masking below 80 % pressure).
#[test]
fn nothing_changes_while_the_conversation_fits() {
    let mut e = engine(serde_json::json!({}));
    let d = call(conversation(2, 400), 100_000).decide(&mut e).unwrap();
    assert!(d.ops.is_empty(), "{:?}", d.ops);
}

/// prune.ts `maskConsumedToolResults`: at ≥ 80 % pressure consumed results share the budget by
/// recency (weights 0.2–1.0 over 0.6 × count, at least 300 chars) — the newest keeps more.
#[test]
fn masking_shares_the_budget_by_recency() {
    let mut e = engine(serde_json::json!({}));
    let msgs = conversation(12, 4000);
    let call = call(msgs, 15_000);
    let d = call.decide(&mut e).unwrap();
    let masks: Vec<(usize, usize)> = d
        .ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Mask { placeholder } => Some((o.start, placeholder.chars().count())),
            _ => None,
        })
        .collect();
    assert!(masks.len() >= 2, "{:?}", d.ops);
    assert!(masks.iter().all(|m| m.1 >= 300));
    let (first, last) = (masks[0].1, masks[masks.len() - 1].1);
    assert!(last > first, "newer results keep more: {masks:?}");
    for o in &d.ops {
        assert_eq!(o.scope, Scope::ThisCall);
    }
    // The marker states the original length (utils/truncation.ts).
    let OpKind::Mask { placeholder } = &d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Mask { .. }))
        .unwrap()
        .kind
    else {
        unreachable!()
    };
    assert!(placeholder.contains("chars exceeded"), "{placeholder}");
}

/// prune.ts `getMessagesWithinTokenLimit`: over the budget the oldest messages go, and a kept
/// part never starts with a tool result.
#[test]
fn pruning_drops_the_oldest_and_never_starts_with_a_result() {
    let mut e = engine(serde_json::json!({"enabled": false}));
    let call = call(conversation(30, 2000), 2_000);
    let d = call.decide(&mut e).unwrap();
    let drop = d
        .ops
        .iter()
        .find(|o| o.kind == OpKind::Drop)
        .expect("a drop");
    assert_eq!(drop.start, 0);
    let first_kept = drop.end;
    assert!(first_kept < 91);
    assert!(d.events.iter().any(|e| e.code == "pruning"));
}

/// summarization/index.ts `shouldTriggerSummarization`: the token triggers use the pre-prune
/// total with instructions; messages_to_refine the pruned count; none → always.
#[test]
fn triggers_follow_should_trigger_summarization() {
    assert!(should_trigger(None, 1000, 10.0, 0.0, 1));
    assert!(!should_trigger(None, 1000, 10.0, 0.0, 0));
    assert!(should_trigger(
        Some(Trigger::TokenRatio(0.8)),
        1000,
        800.0,
        0.0,
        1
    ));
    assert!(!should_trigger(
        Some(Trigger::TokenRatio(0.8)),
        1000,
        799.0,
        0.0,
        1
    ));
    assert!(should_trigger(
        Some(Trigger::RemainingTokens(200)),
        1000,
        800.0,
        0.0,
        1
    ));
    assert!(!should_trigger(
        Some(Trigger::RemainingTokens(199)),
        1000,
        800.0,
        0.0,
        1
    ));
    assert!(should_trigger(
        Some(Trigger::MessagesToRefine(3)),
        1000,
        0.0,
        0.0,
        3
    ));
    assert!(!should_trigger(
        Some(Trigger::MessagesToRefine(3)),
        1000,
        0.0,
        0.0,
        2
    ));
}

/// LibreChat run.ts `computeEffectiveMaxContextTokens` over initializeAgent's 95 %: a reserve
/// ratio r applies to the base and then again in the SDK.
#[test]
fn the_reserve_counts_twice() {
    assert_eq!(max_context_tokens(100_000, 0, 0.05), 95_000);
    assert_eq!(max_context_tokens(100_000, 0, 0.2), 80_000);
    assert_eq!(max_context_tokens(100_000, 20_000, 0.0), 76_000);
    assert_eq!(max_context_tokens(1_000, 0, 0.5), 950.min(1024));
}

/// Graph.ts + summarization/node.ts: when pruning leaves messages to refine and the trigger
/// fires, the whole conversation becomes one summary (persistent).
#[test]
fn summarization_replaces_the_whole_conversation() {
    let mut e = engine(serde_json::json!({}));
    let msgs = conversation(30, 2000);
    let n = msgs.len();
    let d = call(msgs, 8_000).decide(&mut e).unwrap();
    let s = d
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Summarize { .. }))
        .expect("summary");
    assert_eq!((s.start, s.end), (0, n));
    assert_eq!(s.scope, Scope::Persistent);
}

/// `model: ""` turns summarization off (shapeSummarizationConfig); `parameters.maxSummaryTokens`
/// wins over the top-level one (summarization/node.ts); an empty `summarization:` is refused.
#[test]
fn import_follows_shape_summarization_config() {
    let v = crate::config::import("summarization:\n  model: \"\"\n").unwrap();
    assert_eq!(v["enabled"], false);
    let v = crate::config::import(
        "summarization:\n  maxSummaryTokens: 100\n  parameters:\n    maxSummaryTokens: 300\n",
    )
    .unwrap();
    assert_eq!(v["maxSummaryTokens"], 300);
    assert!(crate::config::import("summarization:\n").is_err());
    // No default cap: the export leaves maxSummaryTokens out.
    let p = Params::resolve(&crate::config::schema(), &serde_json::json!({})).unwrap();
    let full = crate::config::export(&p, true).unwrap();
    assert!(!full.contains("maxSummaryTokens"), "{full}");
    let _ = crate::Agents.info();
}

/// A tool result of at least `chars` characters: lines 1, 2, … as `line` writes them.
fn numbered_lines(chars: usize, mut line: impl FnMut(usize) -> String) -> String {
    let mut body = String::new();
    let mut n = 0;
    while body.chars().count() < chars {
        n += 1;
        body.push_str(&line(n));
    }
    body
}

/// A long tool-heavy conversation: requests of 1–3 tool round trips, results of 150–1,050
/// chars in lines with non-ASCII characters (emoji are two UTF-16 units), one in 20 of 6,000;
/// near the end some tool inputs are long enough for the input cap.
fn long_conversation(messages: usize) -> Vec<TestMsg> {
    let mut r = ctxlab_plugin_api::testing::Rng(7);
    let mut v = vec![TestMsg::user("start")];
    let mut t = 0;
    while v.len() < messages {
        v.push(TestMsg::user(&format!("request {t}: fix src/mod_{t}.rs")));
        for k in 0..1 + r.below(3) {
            let id = format!("c{t}_{k}");
            let args = if v.len() > messages * 9 / 10 && r.below(4) == 0 {
                format!("{{\"patch\":\"{}\"}}", "x→".repeat(3000))
            } else {
                format!("{{\"path\":\"src/mod_{t}.rs\"}}")
            };
            v.push(TestMsg::tool_call(&id, "read", &args));
            let chars = if r.below(20) == 0 {
                6000
            } else {
                150 + r.below(900) as usize
            };
            let body = numbered_lines(chars, |line| {
                format!("{line:>4}→ let v = handler(ctx, {}); 😀\n", r.below(1000))
            });
            v.push(TestMsg::tool_result(&id, "read", &body));
        }
        v.push(TestMsg::assistant(&format!("Done with part {t}.")));
        t += 1;
    }
    v
}

/// The frozen prefix (prune.rs `Frozen`: what every run of a long conversation leaves alike is
/// not worked out again) and the pre-flight's lists (`Tall`: a pass looks only at what the last
/// one left over its caps, and at the new messages) change no decision: the same calls through
/// an engine whose every run starts from the originals and whose every pass walks the whole
/// run, as LibreChat's `createPruneMessages` closure does, give the same ops, events and gauges
/// call by call, with each setting the benches use — and the prefix and the lists are really
/// used.
#[test]
fn runs_that_keep_the_frozen_prefix_decide_as_runs_from_scratch() {
    let history = long_conversation(900);
    for (params, freezes) in [
        (serde_json::json!({"enabled": false}), true),
        (
            serde_json::json!({"enabled": false, "contextPruning.enabled": true,
                               "contextPruning.minPrunableToolChars": 1000}),
            true,
        ),
        (serde_json::json!({}), false),
        (
            serde_json::json!({"trigger.type": "token_ratio", "trigger.value": 0.9}),
            false,
        ),
    ] {
        let mut inc = engine(params.clone());
        let mut full = engine(params.clone()).from_scratch().without_repeat();
        let mut last = Vec::new();
        let (mut repeats, mut masks) = (0, 0);
        let mut most = 0;
        for (k, c) in calls_over(&history, 32_000) {
            let a = c.decide(&mut inc).unwrap();
            repeats += a.ops.iter().filter(|o| o.kind == OpKind::Repeat).count();
            masks += a
                .ops
                .iter()
                .filter(|o| matches!(o.kind, OpKind::Mask { .. }))
                .count();
            let a = resolved(a, &mut last);
            let b = c.decide(&mut full).unwrap();
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "{params} at call before {k}"
            );
            most = most.max(inc.frozen());
            assert_eq!(full.frozen(), 0);
        }
        if freezes {
            assert!(most > history.len() / 4, "{params}: frozen prefix {most}");
        }
        assert!(
            inc.listed() > 0,
            "{params}: no pre-flight pass took its lists"
        );
        assert_eq!(full.listed(), 0);
        assert!(repeats > 0, "{params}: no repeat op");
        let without = full_masks(&params, &history);
        assert!(
            masks < without,
            "{params}: {masks} masks sent, {without} without repeats"
        );
    }
}

/// Long runs: two requests answered by 30 tool rounds of ~12,000-char results each. As a run
/// adds results, every older result's pre-flight cap shrinks (its rank's share of the budget),
/// so later calls of the run cut again results an earlier pass left over the least cap (the
/// pass's lists, `Tall`). The engine that walks every pass decides the same, call by call, with
/// summarization on and off.
#[test]
fn long_runs_cut_again_what_the_pre_flight_lists_hold() {
    let mut v = vec![TestMsg::user("start")];
    for t in 0..2 {
        v.push(TestMsg::user(&format!("request {t}: read every module")));
        for k in 0..30 {
            let id = format!("c{t}_{k}");
            v.push(TestMsg::tool_call(
                &id,
                "read",
                &format!("{{\"path\":\"m{k}.rs\"}}"),
            ));
            let body = numbered_lines(12_000, |line| {
                format!("{line:>4}→ let v{k} = handler(ctx, {t}); 😀\n")
            });
            v.push(TestMsg::tool_result(&id, "read", &body));
        }
        v.push(TestMsg::assistant(&format!("Done with request {t}.")));
    }
    for params in [serde_json::json!({}), serde_json::json!({"enabled": false})] {
        let mut inc = engine(params.clone());
        let mut full = engine(params.clone()).from_scratch().without_repeat();
        let mut last = Vec::new();
        let mut cuts = 0;
        for (k, c) in calls_over(&v, 32_000) {
            let a = resolved(c.decide(&mut inc).unwrap(), &mut last);
            let b = c.decide(&mut full).unwrap();
            cuts += b
                .events
                .iter()
                .filter(|e| e.code == "fit_to_budget" || e.code == "context_fading")
                .count();
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "{params} at call before {k}"
            );
        }
        assert!(
            inc.listed() > 0,
            "{params}: no pre-flight pass took its lists"
        );
        assert!(cuts >= 4, "{params}: {cuts} calls with pre-flight cuts");
    }
}

/// Random conversations (requests of 1–12 tool rounds, results from a few hundred to 15,000
/// chars, some long tool inputs), windows and settings: an engine that keeps what runs and
/// passes share (the frozen prefix, the pre-flight's lists) decides as one that works out every
/// run and pass from the originals, call by call. The pressure moves the fading's caps down and
/// up, new runs put lengths back to the originals, and a clearing placeholder may be longer
/// than the result it clears: each must drop what the pass kept.
#[test]
fn random_runs_decide_as_runs_from_scratch() {
    let mut r = ctxlab_plugin_api::testing::Rng(23);
    let mut listed = 0;
    for case in 0..14 {
        let mut v = vec![TestMsg::user("start")];
        let messages = 120 + r.below(200) as usize;
        let mut t = 0;
        while v.len() < messages {
            v.push(TestMsg::user(&format!("request {t}")));
            for k in 0..1 + r.below(12) {
                let id = format!("c{t}_{k}");
                let args = if r.below(10) == 0 {
                    format!(
                        "{{\"patch\":\"{}\"}}",
                        "y→".repeat(500 + r.below(6000) as usize)
                    )
                } else {
                    format!("{{\"path\":\"m{k}.rs\"}}")
                };
                v.push(TestMsg::tool_call(&id, "read", &args));
                let chars = match r.below(10) {
                    0..=5 => 100 + r.below(500),
                    6..=8 => 2_000 + r.below(3_000),
                    _ => 8_000 + r.below(7_000),
                } as usize;
                let body = numbered_lines(chars, |line| {
                    format!("{line:>4}→ v{k} = f(ctx, {}); 😀\n", r.below(99))
                });
                v.push(TestMsg::tool_result(&id, "read", &body));
            }
            v.push(TestMsg::assistant(&format!("Done with request {t}.")));
            t += 1;
        }
        let window = [8_000, 16_000, 32_000, 64_000][r.below(4) as usize];
        let params = match r.below(5) {
            0 => serde_json::json!({}),
            1 => serde_json::json!({"trigger.type": "token_ratio", "trigger.value": 0.9}),
            2 => serde_json::json!({"enabled": false}),
            3 => serde_json::json!({"enabled": false, "contextPruning.enabled": true,
                                    "contextPruning.minPrunableToolChars": 1000}),
            _ => serde_json::json!({"enabled": false, "contextPruning.enabled": true,
                                    "contextPruning.minPrunableToolChars": 0,
                                    "contextPruning.hardClear.placeholder": "x".repeat(400)}),
        };
        let mut inc = engine(params.clone());
        let mut full = engine(params.clone()).from_scratch().without_repeat();
        let mut last = Vec::new();
        for (k, c) in calls_over(&v, window) {
            let a = resolved(c.decide(&mut inc).unwrap(), &mut last);
            let b = c.decide(&mut full).unwrap();
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "case {case}, {params}, window {window}, at call before {k}"
            );
        }
        listed += inc.listed();
    }
    assert!(listed > 0, "no pre-flight pass took its lists");
}

/// ABI 1.8: cuts of originals kept as cuts (counted by the host without their text, sent as
/// `Cut` ops) decide as the same cuts made whole (counted as texts, sent as `Mask` ops with
/// their text): call by call the same ops once each `Cut` is made into the text it names, the
/// same events and gauges, with summarization on and off, through a counter as the host offers
/// it (chars/4) — and cuts are really sent.
#[test]
fn cuts_sent_as_cuts_decide_as_cuts_sent_whole() {
    let history = long_conversation(700);
    let count: fn(&str) -> u64 = |t| (t.len() as u64).div_ceil(4);
    for params in [serde_json::json!({}), serde_json::json!({"enabled": false})] {
        let mut by_cut = engine(params.clone());
        let mut whole = engine(params.clone()).without_cut();
        let mut cuts = 0;
        for (k, mut c) in calls_over(&history, 32_000) {
            c.counter = Some(count);
            let mut a = c.decide(&mut by_cut).unwrap();
            for o in &mut a.ops {
                if let OpKind::Cut { head, tail, marker } = &o.kind {
                    let t = &c.messages[o.start].text;
                    let placeholder = format!(
                        "{}{marker}{}",
                        &t[..*head as usize],
                        &t[t.len() - *tail as usize..]
                    );
                    o.kind = OpKind::Mask { placeholder };
                    cuts += 1;
                }
            }
            let b = c.decide(&mut whole).unwrap();
            assert!(!b.ops.iter().any(|o| matches!(o.kind, OpKind::Cut { .. })));
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "{params} at call before {k}"
            );
        }
        assert!(cuts > 10, "{params}: {cuts} cuts sent");
    }
}

/// The calls of an agent over `history` at this window, one before each assistant message
/// (with the messages it sees, those new since the last call, and whether a request came):
/// (the assistant message's position, the call).
fn calls_over(history: &[TestMsg], window: u64) -> impl Iterator<Item = (usize, TestCall)> + '_ {
    let mut prev = 0;
    (1..history.len())
        .filter(|&k| history[k].role == ctxlab_plugin_api::Role::Assistant)
        .map(move |k| {
            let mut c = call(history[..k].to_vec(), window);
            c.new_messages = (k - prev) as u64;
            c.new_request = history[prev..k]
                .iter()
                .any(|m| m.role == ctxlab_plugin_api::Role::User);
            prev = k;
            (k, c)
        })
}

/// The masks an engine without `Repeat` sends over the same calls.
fn full_masks(params: &serde_json::Value, history: &[TestMsg]) -> usize {
    let mut e = engine(params.clone()).without_repeat();
    let mut masks = 0;
    for (_, c) in calls_over(history, 32_000) {
        let d = c.decide(&mut e).unwrap();
        masks += d
            .ops
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Mask { .. }))
            .count();
    }
    masks
}

/// A decision with its `Repeat` ops (ABI 1.7) made into what the host makes of them: the
/// previous decision's this-call content edits of the range's messages, again. `last` holds
/// those edits by position (the histories here only grow, so positions name the same messages).
fn resolved(
    d: ctxlab_plugin_api::Decision,
    last: &mut Vec<ctxlab_plugin_api::Op>,
) -> ctxlab_plugin_api::Decision {
    let mut ops = Vec::new();
    let mut now = Vec::new();
    for o in d.ops {
        match &o.kind {
            OpKind::Repeat => {
                assert_eq!(o.scope, Scope::ThisCall);
                for e in last
                    .iter()
                    .filter(|e| o.start <= e.start && e.start < o.end)
                {
                    ops.push(e.clone());
                    now.push(e.clone());
                }
            }
            OpKind::Mask { .. }
            | OpKind::Cut { .. }
            | OpKind::Truncate { .. }
            | OpKind::Offload { .. }
                if o.scope == Scope::ThisCall =>
            {
                assert_eq!(o.end, o.start + 1);
                now.push(o.clone());
                ops.push(o);
            }
            _ => ops.push(o),
        }
    }
    *last = now;
    ctxlab_plugin_api::Decision { ops, ..d }
}

/// The pressure in event messages, written without the formatter, reads as the formatter
/// writes it: whole percentages, ties to even on the exact binary value, and past the written
/// range (negative, huge, not a number) the formatter itself.
#[test]
fn pressure_percentages_read_as_the_formatter_writes_them() {
    let mut xs = vec![
        0.0, 0.004, 0.005, 0.015, 0.025, 0.125, 0.805, 0.8, 0.999, 1.0, 1.005, 2.5,
    ];
    xs.extend((0..20_000).map(|k| k as f64 / 10_000.0));
    xs.extend((0..2_000).map(|k| (k as f64 + 0.5) / 100.0));
    xs.extend([-0.2, -0.004, 1e13, 1e14, f64::INFINITY, f64::NAN]);
    for x in xs {
        let mut s = String::from("(pressure ");
        crate::engine::push_pct(&mut s, x);
        assert_eq!(s, format!("(pressure {:.0}%", x * 100.0), "{x}");
    }
}
