//! ABI 1.6's message parts through the real replay engine: a strategy sees, for every message the
//! session holds as itself, the kinds and bytes of its parts in the order its text joins them
//! (images have none); a message an edit rewrote, and a summary, have none (no FLAG_PARTS); a
//! plugin built for ABI 1.5 still loads and runs.

mod in_process_support;

use ctxlab::model::{Message, Part, Role, Session};
use ctxlab::replay;
use ctxlab_plugin_api::abi::{PluginTable, FLAG_PARTS};
use ctxlab_plugin_api::*;
use in_process_support::{built_for_minor, call as model_call, msg, replay_in_process};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the strategy saw of one message: its text and, when described, its parts.
type Seen = (String, Option<Vec<(PartKind, String)>>);

static SEEN: Mutex<Option<HashMap<String, Vec<Vec<Seen>>>>> = Mutex::new(None);

/// Records every view under `tag`; at the agent's first call masks message 2 and summarizes
/// messages 3..5 (persistent edits), so the second call sees both kinds of rewritten message.
struct Recorder {
    tag: String,
}

impl Strategy for Recorder {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let view: Vec<Seen> = (0..call.len())
            .map(|i| {
                let m = call.msg(i);
                let parts = call.parts(i).map(|p| {
                    p.map(|(k, b)| (k, String::from_utf8(b.to_vec()).unwrap()))
                        .collect()
                });
                assert_eq!(parts.is_some(), m.has(FLAG_PARTS));
                (m.text().to_string(), parts)
            })
            .collect();
        SEEN.lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(self.tag.clone())
            .or_default()
            .push(view);
        if call.agent_call_index() == 0 {
            out.op(
                OpKind::Mask {
                    placeholder: "[masked]".into(),
                },
                Scope::Persistent,
                2..3,
            );
            out.op(
                OpKind::Summarize {
                    role: ctxlab_plugin_api::Role::Assistant,
                    max_tokens: 0,
                    summarizer_input_tokens: 0,
                    text: "s".into(),
                },
                Scope::Persistent,
                3..5,
            );
        }
        Ok(())
    }
    fn export(&self, _: &str) -> Result<String, String> {
        Ok(String::new())
    }
}

struct RecorderFactory;

impl StrategyFactory for RecorderFactory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "test.parts",
            title: "records message parts",
            system: "test",
            description: "records what Call::parts gives",
            params: vec![ParamSpec::new(
                "tag",
                ParamType::String,
                json!(""),
                "test name",
            )],
            export_formats: &[],
        }
    }
    fn create(&self, p: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(Recorder {
            tag: p.str("tag").to_string(),
        }))
    }
    fn import(&self, _: &str, _: &str) -> Result<Value, String> {
        Ok(Value::Null)
    }
}

export_plugin!(name: "parts", version: "0", strategies: [&RecorderFactory]);

fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

/// 0 user: two text parts around an image; 1 assistant: thinking, text, a call; 2 its result;
/// 3 assistant: an empty text part and a call; 4 its result; 5 reply; call 0; 6 user; call 1.
fn session() -> Session {
    let mut s = Session {
        id: "parts".into(),
        ..Session::default()
    };
    s.agent_index("main");
    let call = |id: &str, args: &str| Part::ToolCall {
        id: id.into(),
        name: "read".into(),
        args: args.into(),
    };
    let result = |id: &str, content: &str| Part::ToolResult {
        call_id: id.into(),
        content: content.into(),
        is_error: false,
    };
    s.messages = vec![
        msg(
            Role::User,
            vec![
                text("look at this"),
                Part::Image {
                    media_type: "image/png".into(),
                    bytes: 1_000,
                },
                text("and this\nline two"),
            ],
        ),
        msg(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "hmm, déjà vu".into(),
                },
                text("reading"),
                call("a", "{\"p\":1}"),
            ],
        ),
        msg(Role::Tool, vec![result("a", "out\nput")]),
        msg(Role::Assistant, vec![text(""), call("b", "{}")]),
        msg(Role::Tool, vec![result("b", "r")]),
        msg(Role::Assistant, vec![text("done")]),
        msg(Role::User, vec![text("next")]),
    ];
    s.calls = vec![model_call(5, Some(5)), model_call(7, None)];
    s
}

/// The parts a message of the session has, as the view should describe them.
fn expected(m: &Message) -> Vec<(PartKind, String)> {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some((PartKind::Text, text.clone())),
            Part::Thinking { text } => Some((PartKind::Thinking, text.clone())),
            Part::ToolCall { args, .. } => Some((PartKind::ToolCall, args.clone())),
            Part::ToolResult { content, .. } => Some((PartKind::ToolResult, content.clone())),
            Part::Image { .. } => None,
        })
        .collect()
}

fn replay(table: &'static PluginTable, tag: &str) -> replay::Run {
    let params = json!({ "tag": tag });
    replay_in_process(table, "parts", "test.parts", params, &session(), false).unwrap()
}

fn seen(tag: &str) -> Vec<Vec<Seen>> {
    SEEN.lock().unwrap().as_ref().unwrap()[tag].clone()
}

#[test]
fn every_message_held_as_itself_describes_its_parts() {
    replay(plugin_table(), "parts");
    let s = session();
    let views = seen("parts");
    assert_eq!(views.len(), 2);
    // Call 0: every message is the session's, parts in order, images left out; the joined text
    // is the parts joined by "\n" (an empty text part included).
    for (i, (t, parts)) in views[0].iter().enumerate() {
        let want = expected(&s.messages[i]);
        assert_eq!(parts.as_ref(), Some(&want), "message {i}");
        let joined: Vec<&str> = want.iter().map(|p| p.1.as_str()).collect();
        assert_eq!(t, &joined.join("\n"), "message {i}");
    }
    assert_eq!(views[0][3].0, "\n{}");
    // Call 1: the masked message (2) and the summary (3) have no parts; the others, and the
    // message that arrived since (now 5: the session's 6), still do.
    let v1 = &views[1];
    assert_eq!(v1.len(), 6);
    assert_eq!(v1[2], ("[masked]".to_string(), None));
    assert_eq!(v1[3].1, None);
    for (p, m) in [(0, 0), (1, 1), (4, 5), (5, 6)] {
        assert_eq!(
            v1[p].1.as_ref(),
            Some(&expected(&s.messages[m])),
            "position {p}"
        );
    }
}

#[test]
fn a_plugin_built_for_abi_1_5_loads_and_replays_in_this_host() {
    let t = plugin_table();
    let old = built_for_minor(t, 5);
    let run = replay(old, "abi-1.5");
    assert_eq!(
        run.plugin.as_deref().map(|p| p.starts_with("parts")),
        Some(true)
    );
    assert_eq!(seen("abi-1.5").len(), 2);
}
