//! What the tests of one ABI feature through the real replay engine share (tests/drop_results.rs,
//! tests/message_parts.rs, tests/repeat_op.rs, tests/cut_op.rs): each exports a scripted strategy of its own from
//! its test crate (`export_plugin!`), registers it in process and replays a small session written
//! here with it, on a 100,000-token window with the chars4 counter.

#![allow(dead_code)]

use ctxlab::model::{self, Message, MessageFlags, Part, Role, Session, SourcePos};
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab_plugin_api::abi::PluginTable;
use ctxlab_plugin_api::{
    Call, Decision, Op, ParamSpec, ParamType, Params, Strategy, StrategyFactory, StrategyInfo,
};
use serde_json::{json, Value};

/// What a strategy of [`OpsPerCall`] also does at a call, given the ops it sends then.
pub type Hook = fn(&Call<'_>, &[Op], &mut Decision) -> Result<(), String>;

/// A strategy that sends, at the agent's k-th call, the ops of its `ops` parameter's k-th list
/// (JSON), after its hook (if any) has seen them.
pub struct OpsPerCall {
    pub id: &'static str,
    pub hook: Option<Hook>,
}

struct Scripted {
    ops: Vec<Vec<Op>>,
    hook: Option<Hook>,
}

impl Strategy for Scripted {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let Some(ops) = self.ops.get(call.agent_call_index() as usize) else {
            return Ok(());
        };
        if let Some(hook) = self.hook {
            hook(call, ops, out)?;
        }
        out.ops.extend(ops.iter().cloned());
        Ok(())
    }
    fn export(&self, _: &str) -> Result<String, String> {
        Ok(String::new())
    }
}

impl StrategyFactory for OpsPerCall {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: self.id,
            title: "scripted ops",
            system: "test",
            description: "sends the ops it is given, call by call",
            params: vec![ParamSpec::new(
                "ops",
                ParamType::String,
                json!("[]"),
                "ops per call",
            )],
            export_formats: &[],
        }
    }
    fn create(&self, p: Params) -> Result<Box<dyn Strategy>, String> {
        let ops = serde_json::from_str(p.str("ops")).map_err(|e| e.to_string())?;
        Ok(Box::new(Scripted {
            ops,
            hook: self.hook,
        }))
    }
    fn import(&self, _: &str, _: &str) -> Result<Value, String> {
        Ok(Value::Null)
    }
}

/// A message of the session's first agent.
pub fn msg(role: Role, parts: Vec<Part>) -> Message {
    Message {
        agent: 0,
        role,
        parts,
        timestamp: None,
        flags: MessageFlags::default(),
        source: SourcePos::default(),
    }
}

/// A message of one text part.
pub fn text_msg(role: Role, t: &str) -> Message {
    msg(role, vec![Part::Text { text: t.into() }])
}

/// A model call of the first agent, sent with messages `..context_end`, answered by `reply`.
pub fn call(context_end: usize, reply: Option<usize>) -> model::Call {
    model::Call {
        agent: 0,
        context_end,
        reply,
        usage: None,
        model: None,
        timestamp: None,
        request_id: None,
        source: SourcePos::default(),
    }
}

/// A user request, then `rounds` rounds of (call, the tool result `result(k)`, answer, next
/// request), with a model call before each answer: round k's result is at 2 + 4k and its call
/// sees the messages up to 3 + 4k.
pub fn tool_rounds(id: &str, rounds: usize, result: impl Fn(usize) -> String) -> Session {
    let mut s = Session {
        id: id.into(),
        ..Session::default()
    };
    s.agent_index("main");
    s.messages.push(text_msg(Role::User, "read the files"));
    for k in 0..rounds {
        let id = format!("c{k}");
        s.messages.push(msg(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "read".into(),
                args: "{}".into(),
            }],
        ));
        s.messages.push(msg(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: result(k),
                is_error: false,
            }],
        ));
        s.messages.push(text_msg(Role::Assistant, "done"));
        s.messages.push(text_msg(Role::User, "go on"));
    }
    s.calls = (0..rounds)
        .map(|k| call(3 + 4 * k, Some(3 + 4 * k)))
        .collect();
    s
}

/// The same plugin table as `table`, declaring the older ABI minor `minor`: what a plugin built
/// for that version hands the host (an additive minor keeps the table's layout).
pub fn built_for_minor(table: &'static PluginTable, minor: u32) -> &'static PluginTable {
    Box::leak(Box::new(PluginTable {
        abi_minor: minor,
        ..*table
    }))
}

/// Replays `session` with strategy `strategy` of the in-process plugin `table` (registered as
/// `name`) and its `params`; `record_decisions` keeps each call's decision in the run.
pub fn replay_in_process(
    table: &'static PluginTable,
    name: &str,
    strategy: &str,
    params: serde_json::Value,
    session: &Session,
    record_decisions: bool,
) -> ctxlab::Result<replay::Run> {
    replay_in_process_counted(
        table,
        name,
        strategy,
        params,
        session,
        record_decisions,
        "chars4",
    )
}

/// [`replay_in_process`] with the counter named `counter`.
pub fn replay_in_process_counted(
    table: &'static PluginTable,
    name: &str,
    strategy: &str,
    params: serde_json::Value,
    session: &Session,
    record_decisions: bool,
    counter: &str,
) -> ctxlab::Result<replay::Run> {
    let mut reg = Registry::new();
    reg.add_in_process(table, name).unwrap();
    let entry = reg.require(strategy).unwrap().clone();
    let mut o = ReplayOptions::new(ctxlab::tokens::counter(counter).unwrap());
    o.budget = Some(Budget {
        context_window: 100_000,
        max_output: 0,
        reserve: 0,
    });
    o.record_decisions = record_decisions;
    replay::run(session, StrategySpec::Plugin { entry, params }, &o)
}
