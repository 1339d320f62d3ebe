//! Fixture: drops an assistant message that makes a tool call while keeping the message with its
//! result, splitting the pair. The replay engine's validator must reject the decision.
//!
//! Fires once per agent, at the first call (from `at_call` on) whose context holds a tool call
//! answered by a later message. Only the call message is dropped, and only when it is not pinned,
//! so splitting the pair is the decision's only fault. With `allow` the drop is preceded by an
//! AllowSplit op over it (ABI 1.2): the host must accept it and count the separated pair.

use ctxlab_plugin_api::*;
use serde_json::json;
use std::collections::HashSet;

struct SplitPair {
    at_call: u64,
    allow: bool,
    fired: HashSet<String>,
}

impl Strategy for SplitPair {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        if call.call_index() < self.at_call || self.fired.contains(call.agent()) {
            return Ok(());
        }
        // A fixture may scan: it runs on small samples, never in benches.
        let mut answered: HashSet<&str> = HashSet::new();
        for m in call.messages().rev() {
            if m.has_tool_results() {
                answered.extend(m.tools().filter(|t| t.is_result()).map(|t| t.id()));
            }
        }
        let victim = call.messages().position(|m| {
            m.has_tool_calls()
                && !m.is_pinned()
                && m.tools()
                    .any(|t| !t.is_result() && answered.contains(t.id()))
        });
        if let Some(i) = victim {
            if self.allow {
                out.op(OpKind::AllowSplit, Scope::Persistent, i..i + 1);
            }
            out.drop_range(i..i + 1, Scope::Persistent);
            self.fired.insert(call.agent().to_string());
        }
        Ok(())
    }

    fn export(&self, format: &str) -> Result<String, String> {
        Err(format!(
            "fixture.split-pair exports nothing (asked for {format})"
        ))
    }
}

struct Factory;

impl StrategyFactory for Factory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "fixture.split-pair",
            title: "Fixture: splits a tool call from its result",
            system: "fixture",
            description: "Drops the first answered tool call message but keeps its result.",
            params: vec![
                ParamSpec::new(
                    "at_call",
                    ParamType::Int,
                    json!(0),
                    "First session-wide call index at which the pair may be split.",
                )
                .min(0.0),
                ParamSpec::new(
                    "allow",
                    ParamType::Bool,
                    json!(false),
                    "Precede the drop with an AllowSplit op (the split is then accepted).",
                ),
            ],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(SplitPair {
            at_call: params.uint("at_call"),
            allow: params.bool("allow"),
            fired: HashSet::new(),
        }))
    }

    fn import(&self, format: &str, _text: &str) -> Result<serde_json::Value, String> {
        Err(format!(
            "fixture.split-pair imports nothing (asked for {format})"
        ))
    }
}

export_plugin!(name: "fixture-split-pair", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);
