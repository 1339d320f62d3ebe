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
//! - `random`: from `seed` and the call index, 0–7 ops of any kind with any ranges (past the end,
//!   reversed, near `usize::MAX`), sizes and scopes (a cut is first counted through the host's
//!   `count_cut` with the same arguments), and 0–3 events: the host's validation under
//!   a fuzz loop (`tests/fuzz_hostile.rs`), where a run either succeeds or fails with the plugin,
//!   the call and the reason, and never panics.
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
    "random",
];

struct BadOps {
    fault: String,
    at_call: u64,
    ops: u64,
    seed: u64,
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
            "random" => random_decision(
                self.seed ^ call.call_index().wrapping_mul(0x9E37_79B9),
                call,
                out,
            ),
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

/// xorshift64*: the same ops for the same seed and call.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn random_decision(seed: u64, call: &Call<'_>, out: &mut Decision) {
    let len = call.len();
    // splitmix64 of the seed: neighbouring seeds start far apart.
    let mut x = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB) | 1;
    let mut pick = |n: u64| next(&mut x) % n.max(1);
    // Mostly ranges a strategy could mean (so that runs go on to later calls and rules), now
    // and then a hostile one.
    let bound = |pick: &mut dyn FnMut(u64) -> u64| match pick(12) {
        0 => len + 1,
        1 => usize::MAX - pick(2) as usize,
        _ => pick(len as u64 + 1) as usize,
    };
    let n = [0, 0, 0, 1, 1, 2, 3, 7][pick(8) as usize];
    // An empty context takes no range but a hostile one.
    let n = if len == 0 && pick(4) != 0 { 0 } else { n };
    for _ in 0..n {
        let (a, b) = (bound(&mut pick), bound(&mut pick));
        let (start, end) = if pick(10) == 0 {
            (a, b)
        } else {
            (a.min(b), a.max(b).max(a.min(b) + 1))
        };
        let size = match pick(4) {
            0 => 0,
            1 => u64::MAX,
            2 => u64::MAX / 4,
            _ => pick(10_000),
        };
        let text = "x".repeat(pick(3) as usize * pick(5_000) as usize);
        let kind = match pick(10) {
            0 => OpKind::Drop,
            1 => OpKind::Summarize {
                role: if pick(2) == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                max_tokens: size,
                summarizer_input_tokens: size,
                text,
            },
            2 => OpKind::Truncate {
                head: size,
                tail: pick(1_000),
                marker: text,
            },
            3 => OpKind::Mask {
                placeholder: if pick(2) == 0 { text } else { "\0\0".into() },
            },
            4 => OpKind::Offload { stub: text },
            5 => OpKind::Pin,
            6 => OpKind::Unpin,
            7 => OpKind::AllowSplit,
            // ABI 1.8: cuts at any bytes (off character boundaries, past the text), counted
            // first through the host's `count_cut` with the same hostile arguments.
            8 => {
                let tail = match pick(3) {
                    0 => u64::MAX - size,
                    1 => pick(100),
                    _ => size,
                };
                let _ = call.count_cut(start, size, &text, tail);
                OpKind::Cut {
                    head: size,
                    tail,
                    marker: text,
                }
            }
            _ => OpKind::Drop,
        };
        let scope = if pick(2) == 0 {
            Scope::Persistent
        } else {
            Scope::ThisCall
        };
        out.op(kind, scope, start..end);
    }
    for _ in 0..pick(4) {
        let kind = [
            EventKind::Note,
            EventKind::Warn,
            EventKind::Cutover,
            EventKind::Failure,
            EventKind::Suppressed,
            EventKind::Compaction,
            EventKind::Truncation,
            EventKind::Stop,
        ][pick(8) as usize];
        out.event(kind, "fixture.random", "y".repeat(pick(2_000) as usize));
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
                ParamSpec::new(
                    "seed",
                    ParamType::Int,
                    json!(1),
                    "random: the seed of the ops (with the call index).",
                )
                .min(0.0),
            ],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(BadOps {
            fault: params.str("fault").to_string(),
            at_call: params.uint("at_call"),
            ops: params.uint("ops"),
            seed: params.uint("seed"),
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
