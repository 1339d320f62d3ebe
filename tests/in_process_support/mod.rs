//! What the tests of one ABI feature through the real replay engine share (tests/drop_results.rs,
//! tests/message_parts.rs, tests/repeat_op.rs, tests/cut_op.rs): each exports a scripted strategy of its own from
//! its test crate (`export_plugin!`), registers it in process and replays a small session written
//! here with it, on a 100,000-token window with the chars4 counter.

#![allow(dead_code)]

use ctxlab::model::{self, Message, MessageFlags, Part, Role, Session, SourcePos};
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab_plugin_api::abi::PluginTable;

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
