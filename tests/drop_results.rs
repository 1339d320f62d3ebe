//! ABI 1.5's `DropResults` through the real replay engine: a strategy removes one tool result
//! out of a message carrying two (phi-core holds each parallel result as a message of its own and
//! keeps some of them, compact_messages.rs `level2_summarize_old_turns` /
//! `keep_within_budget_with_counter` at phi-core 0.15.2). The host validates the op, applies it
//! (the message keeps the other result, its pair with the call stays tracked), counts the pair it
//! separates, and refuses what it cannot mean; a plugin built for ABI 1.4 still loads and runs.

mod in_process_support;

use ctxlab::model::{Part, Role, Session};
use ctxlab::replay;
use ctxlab_plugin_api::abi::{PluginTable, FLAG_EDITED, FLAG_TOOL_RESULT};
use ctxlab_plugin_api::*;
use in_process_support::{built_for_minor, call, msg, replay_in_process};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the strategy saw of one message at one call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    text: String,
    /// (id, body, is_result)
    tools: Vec<(String, String, bool)>,
    tokens: u64,
    flags: u32,
}

/// Per test (`tag`): the views of every call, message by message.
static SEEN: Mutex<Option<HashMap<String, Vec<Vec<Seen>>>>> = Mutex::new(None);

/// Sends the ops of its `ops0` parameter at the agent's first call and those of `ops1` at the
/// second (JSON lists of `Op`), and records every view under `tag`.
struct Scripted {
    tag: String,
    ops: [Vec<Op>; 2],
}

impl Strategy for Scripted {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let view: Vec<Seen> = call
            .messages()
            .map(|m| Seen {
                text: m.text().to_string(),
                tools: m
                    .tools()
                    .map(|t| (t.id().to_string(), t.body().to_string(), t.is_result()))
                    .collect(),
                tokens: m.tokens(),
                flags: m.flags(),
            })
            .collect();
        SEEN.lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(self.tag.clone())
            .or_default()
            .push(view);
        if let Some(ops) = self.ops.get(call.agent_call_index() as usize) {
            out.ops.extend(ops.iter().cloned());
        }
        Ok(())
    }
    fn export(&self, _: &str) -> Result<String, String> {
        Ok(String::new())
    }
}

struct ScriptedFactory;

impl StrategyFactory for ScriptedFactory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "test.scripted",
            title: "scripted ops",
            system: "test",
            description: "sends the ops it is given",
            params: vec![
                ParamSpec::new("tag", ParamType::String, json!(""), "test name"),
                ParamSpec::new("ops0", ParamType::String, json!("[]"), "ops at call 0"),
                ParamSpec::new("ops1", ParamType::String, json!("[]"), "ops at call 1"),
            ],
            export_formats: &[],
        }
    }
    fn create(&self, p: Params) -> Result<Box<dyn Strategy>, String> {
        let ops = |k: &str| serde_json::from_str::<Vec<Op>>(p.str(k)).map_err(|e| e.to_string());
        Ok(Box::new(Scripted {
            tag: p.str("tag").to_string(),
            ops: [ops("ops0")?, ops("ops1")?],
        }))
    }
    fn import(&self, _: &str, _: &str) -> Result<Value, String> {
        Ok(Value::Null)
    }
}

export_plugin!(name: "scripted", version: "0", strategies: [&ScriptedFactory]);

/// 0 user; 1 assistant calling `a`; 2 assistant calling `b`; 3 one tool message with both
/// results; call 0; 4 the reply; 5 user; call 1; 6 reply; 7 user; call 2.
fn session() -> Session {
    let mut s = Session {
        id: "drop-results".into(),
        ..Session::default()
    };
    s.agent_index("main");
    let tool_call = |id: &str| Part::ToolCall {
        id: id.into(),
        name: "read".into(),
        args: "{}".into(),
    };
    let result = |id: &str, content: &str| Part::ToolResult {
        call_id: id.into(),
        content: content.into(),
        is_error: false,
    };
    s.messages = vec![
        msg(
            Role::User,
            vec![Part::Text {
                text: "read both".into(),
            }],
        ),
        msg(Role::Assistant, vec![tool_call("a")]),
        msg(Role::Assistant, vec![tool_call("b")]),
        msg(
            Role::Tool,
            vec![
                result("a", &"alpha ".repeat(50)),
                result("b", &"beta ".repeat(20)),
            ],
        ),
        msg(
            Role::Assistant,
            vec![Part::Text {
                text: "done".into(),
            }],
        ),
        msg(
            Role::User,
            vec![Part::Text {
                text: "next".into(),
            }],
        ),
        msg(Role::Assistant, vec![Part::Text { text: "ok".into() }]),
        msg(
            Role::User,
            vec![Part::Text {
                text: "last".into(),
            }],
        ),
    ];
    s.calls = vec![call(4, Some(4)), call(6, Some(6)), call(8, None)];
    s
}

fn op(kind: OpKind, start: usize, end: usize) -> Op {
    Op {
        kind,
        scope: Scope::Persistent,
        start,
        end,
    }
}

fn drop_results(remove: &[bool], contents: &[&str]) -> OpKind {
    OpKind::DropResults {
        remove: remove.to_vec(),
        contents: contents.iter().map(|c| c.to_string()).collect(),
    }
}

fn replay(tag: &str, ops0: &[Op], ops1: &[Op]) -> ctxlab::Result<replay::Run> {
    replay_with(plugin_table(), tag, ops0, ops1)
}

fn replay_with(
    table: &'static PluginTable,
    tag: &str,
    ops0: &[Op],
    ops1: &[Op],
) -> ctxlab::Result<replay::Run> {
    let params = json!({
        "tag": tag,
        "ops0": serde_json::to_string(ops0).unwrap(),
        "ops1": serde_json::to_string(ops1).unwrap(),
    });
    replay_in_process(
        table,
        "scripted",
        "test.scripted",
        params,
        &session(),
        false,
    )
}

fn seen(tag: &str) -> Vec<Vec<Seen>> {
    SEEN.lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(tag).cloned())
        .unwrap_or_default()
}

fn refusal(tag: &str, ops0: &[Op]) -> String {
    match replay(tag, ops0, &[]) {
        Ok(_) => panic!("{tag}: the host accepted {ops0:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn one_result_leaves_a_message_of_two_and_the_other_stays_with_its_call() {
    let allow = op(OpKind::AllowSplit, 0, 4);
    let run = replay(
        "applied",
        &[allow, op(drop_results(&[true, false], &["beta"]), 3, 4)],
        &[],
    )
    .unwrap();
    let views = seen("applied");
    let (before, after) = (&views[0][3], &views[1][3]);
    assert_eq!(before.tools.len(), 2);
    assert_eq!(after.text, "beta");
    assert_eq!(
        after.tools,
        vec![("b".to_string(), "beta".to_string(), true)]
    );
    assert!(after.flags & FLAG_TOOL_RESULT != 0 && after.flags & FLAG_EDITED != 0);
    // chars4 (4 per message, 8 per result, ⌈bytes/4⌉): 4 + (75 + 8) + (25 + 8) before; after,
    // as for any edit, the text's share is recounted (the 401-byte joined text, 101 tokens, gives
    // way to "beta", 1) and the removed result's 8-token overhead goes.
    assert_eq!(before.tokens, 120);
    assert_eq!(after.tokens, 120 - 101 + 1 - 8);
    // The call of `a` stays while its result went: one separated pair, counted.
    assert_eq!(run.metrics.split_tool_pairs, 1);
    // The next call still shows it; nothing else moved.
    assert_eq!(views[2][3], *after);
    assert_eq!(views[1][..3], views[0][..3]);
}

#[test]
fn the_pair_still_held_stays_protected_and_the_separated_call_is_free() {
    let allow = op(OpKind::AllowSplit, 0, 4);
    let first = [allow, op(drop_results(&[true, false], &["beta"]), 3, 4)];
    // The call of `b` is still paired with its result: dropping it alone is refused.
    let e = match replay("pair-kept", &first, &[op(OpKind::Drop, 2, 3)]) {
        Ok(_) => panic!("dropping the call of `b` alone was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("separates a tool call from its result"), "{e}");
    // The call of `a` lost its result: it goes alone, with no AllowSplit, separating nothing.
    let run = replay("pair-gone", &first, &[op(OpKind::Drop, 1, 2)]).unwrap();
    assert_eq!(run.metrics.split_tool_pairs, 1);
}

#[test]
fn removing_a_result_whose_call_stays_needs_an_allow_split() {
    let e = refusal(
        "not-allowed",
        &[op(drop_results(&[false, true], &["alpha"]), 3, 4)],
    );
    assert!(
        e.contains("drop_results 3..4")
            && e.contains("removes the result of a tool call that stays at position 3"),
        "{e}"
    );
}

#[test]
fn a_selection_that_does_not_fit_the_message_is_refused() {
    let allow = op(OpKind::AllowSplit, 0, 4);
    let e = refusal(
        "short-selection",
        &[allow.clone(), op(drop_results(&[true], &[]), 3, 4)],
    );
    assert!(e.contains("removes every part of the message"), "{e}");
    let e = refusal(
        "one-of-three",
        &[
            allow.clone(),
            op(
                drop_results(&[true, false, false, false], &["x", "y", "z"]),
                3,
                4,
            ),
        ],
    );
    assert!(
        e.contains("carries 2 tool result(s); the selection names 4"),
        "{e}"
    );
    let e = refusal(
        "no-results",
        &[
            allow.clone(),
            op(drop_results(&[true, false], &["x"]), 0, 1),
        ],
    );
    assert!(e.contains("carries 0 tool result(s)"), "{e}");
    let e = refusal(
        "contents",
        &[allow, op(drop_results(&[false, false], &["x"]), 3, 4)],
    );
    assert!(e.contains("1 contents for the 2 parts"), "{e}");
}

#[test]
fn a_selection_with_one_more_part_keeps_or_removes_the_rest_of_the_text() {
    // k + 1 entries: the last one is the text after the results (none here: it is empty).
    let allow = op(OpKind::AllowSplit, 0, 4);
    replay(
        "rest",
        &[
            allow,
            op(
                drop_results(&[false, true, false], &["alpha", "tail"]),
                3,
                4,
            ),
        ],
        &[],
    )
    .unwrap();
    let after = &seen("rest")[1][3];
    assert_eq!(after.text, "alpha\ntail");
    assert_eq!(
        after.tools,
        vec![("a".to_string(), "alpha".to_string(), true)]
    );
}

#[test]
fn a_plugin_built_for_abi_1_4_loads_and_replays_in_this_host() {
    // Additive minor: a 1.4 table is the same table; the host reads it and runs its decisions.
    let t = plugin_table();
    let old = built_for_minor(t, 4);
    let run = replay_with(
        old,
        "abi-1.4",
        &[op(
            OpKind::Mask {
                placeholder: "A\0B".into(),
            },
            3,
            4,
        )],
        &[],
    )
    .unwrap();
    assert_eq!(
        run.plugin.as_deref().map(|p| p.starts_with("scripted")),
        Some(true)
    );
    let after = &seen("abi-1.4")[1][3];
    assert_eq!(after.text, "A\nB");
    assert_eq!(after.tools.len(), 2);
}
