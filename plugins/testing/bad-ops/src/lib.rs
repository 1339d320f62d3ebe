//! Fixture: returns one kind of invalid decision, chosen by the `fault` parameter, so the replay
//! engine's validator can show it rejects each (plugin name, call index and reason in the error).
//!
//! Each fault is built so that it is the *only* thing wrong with the decision, and fires at the
//! first call (from `at_call` on) where the context is large enough for that:
//! - `out_of_range`: drop `[len, len + 1)`, one past the end;
//! - `overlapping`: drop `[i, i + 2)` and `[i + 1, i + 3)` over 3 consecutive plain messages;
//! - `unsorted`: drop `[2, 3)` then `[0, 1)` (needs 3 unpinned messages without tool calls/results);
//! - `touches_pinned`: drop the first pinned message; when none is pinned yet, pin the first
//!   plain message at this call (a valid op) and drop it at the agent's next call;
//! - `oversized_summary`: summarize one plain message into a literal text 8× its size;
//! - `too_many_ops`: `ops` this-call truncations that keep everything, cycling over the positions
//!   (when `ops` exceeds the context they also overlap: the validator checks the op count first,
//!   an O(1) guard before any per-op work).
//!
//! "Plain" means: not pinned, no tool call, no tool result (so pairs are never split by accident).

use ctxlab_plugin_api::abi::FLAG_PINNED;
use ctxlab_plugin_api::*;
use serde_json::json;
use std::collections::HashMap;

const FAULTS: &[&str] = &[
    "out_of_range",
    "overlapping",
    "unsorted",
    "touches_pinned",
    "oversized_summary",
    "too_many_ops",
];

struct BadOps {
    fault: String,
    at_call: u64,
    ops: u64,
    /// Per agent: the id of the message pinned by `touches_pinned`, to drop at the next call.
    pinned: HashMap<String, u64>,
}

fn plain(m: &Msg<'_>) -> bool {
    !m.is_pinned() && !m.has_tool_calls() && !m.has_tool_results()
}

impl Strategy for BadOps {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        if call.call_index() < self.at_call {
            return Ok(());
        }
        let len = call.len();
        let plain_positions = || {
            call.messages()
                .enumerate()
                .filter(|(_, m)| plain(m))
                .map(|(i, _)| i)
        };
        match self.fault.as_str() {
            "out_of_range" => {
                out.drop_range(len..len + 1, Scope::Persistent);
            }
            "overlapping" => {
                let run =
                    (0..len.saturating_sub(2)).find(|&i| (i..i + 3).all(|j| plain(&call.msg(j))));
                if let Some(i) = run {
                    out.drop_range(i..i + 2, Scope::Persistent);
                    out.drop_range(i + 1..i + 3, Scope::Persistent);
                }
            }
            "unsorted" => {
                let p: Vec<usize> = plain_positions().take(2).collect();
                if p.len() == 2 {
                    out.drop_range(p[1]..p[1] + 1, Scope::Persistent);
                    out.drop_range(p[0]..p[0] + 1, Scope::Persistent);
                }
            }
            "touches_pinned" => {
                let first_pinned = call.messages().position(|m| m.has(FLAG_PINNED));
                if let Some(i) = first_pinned {
                    out.drop_range(i..i + 1, Scope::Persistent);
                    out.event(EventKind::Note, "fixture", "dropping a pinned message");
                } else if !self.pinned.contains_key(call.agent()) {
                    if let Some(i) = plain_positions().next() {
                        out.op(OpKind::Pin, Scope::Persistent, i..i + 1);
                        self.pinned
                            .insert(call.agent().to_string(), call.msg(i).id());
                    }
                }
            }
            "oversized_summary" => {
                if let Some(i) = plain_positions().next() {
                    let m = call.msg(i);
                    let text =
                        "summary ".repeat((m.chars() as usize).max(m.tokens() as usize) + 64);
                    out.op(
                        OpKind::Summarize {
                            role: Role::User,
                            max_tokens: 0,
                            summarizer_input_tokens: 0,
                            text,
                        },
                        Scope::Persistent,
                        i..i + 1,
                    );
                }
            }
            "too_many_ops" => {
                for k in 0..self.ops as usize {
                    let i = if len == 0 { 0 } else { k % len };
                    out.op(
                        OpKind::Truncate {
                            head: u64::MAX / 4,
                            tail: u64::MAX / 4,
                            marker: String::new(),
                        },
                        Scope::ThisCall,
                        i..i + 1,
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn export(&self, format: &str) -> Result<String, String> {
        Err(format!(
            "fixture.bad-ops exports nothing (asked for {format})"
        ))
    }
}

struct Factory;

impl StrategyFactory for Factory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "fixture.bad-ops",
            title: "Fixture: invalid decisions",
            system: "fixture",
            description: "Returns the invalid decision named by `fault` at the first call (from at_call on) where it can.",
            params: vec![
                ParamSpec::new(
                    "fault",
                    ParamType::Enum,
                    json!("out_of_range"),
                    "Which rule the decision breaks.",
                )
                .choices(FAULTS),
                ParamSpec::new(
                    "at_call",
                    ParamType::Int,
                    json!(0),
                    "First session-wide call index at which the fault may fire.",
                )
                .min(0.0),
                ParamSpec::new(
                    "ops",
                    ParamType::Int,
                    json!(100_000),
                    "too_many_ops: how many ops the decision carries.",
                )
                .min(1.0),
            ],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(BadOps {
            fault: params.str("fault").to_string(),
            at_call: params.uint("at_call"),
            ops: params.uint("ops"),
            pinned: HashMap::new(),
        }))
    }

    fn import(&self, format: &str, _text: &str) -> Result<serde_json::Value, String> {
        Err(format!(
            "fixture.bad-ops imports nothing (asked for {format})"
        ))
    }
}

export_plugin!(name: "fixture-bad-ops", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);
