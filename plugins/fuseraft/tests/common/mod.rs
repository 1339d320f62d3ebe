//! A small host for the tests: keeps each agent's working context, runs `decide` through the SDK
//! (no FFI), checks every decision the way the host validates it, and applies persistent ops.
#![allow(dead_code)]

use ctxlab_plugin_api::abi::{FLAG_EDITED, FLAG_PINNED, FLAG_SUMMARY};
use ctxlab_plugin_api::sdk::*;
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use ctxlab_plugin_fuseraft::FuseraftCompaction;
use serde_json::Value;
use std::collections::HashMap;

pub fn params(p: Value) -> Params {
    Params::resolve(&FuseraftCompaction.info().params, &p).expect("valid parameters")
}

pub fn make(p: Value) -> Box<dyn Strategy> {
    FuseraftCompaction
        .create(params(p))
        .expect("strategy is created")
}

pub fn make_err(p: Value) -> String {
    match FuseraftCompaction.create(params(p)) {
        Ok(_) => panic!("expected the strategy to be refused"),
        Err(e) => e,
    }
}

/// Checks a decision like the host: in bounds, sorted, no overlap, pinned untouched, no tool pair
/// split by a Drop/Summarize, at most 256 ops, summaries no larger than what they replace.
pub fn check(tc: &TestCall, d: &Decision) {
    let n = tc.messages.len();
    assert!(d.ops.len() <= 256, "too many ops: {}", d.ops.len());
    let mut last_end = 0;
    for op in &d.ops {
        assert!(
            op.start < op.end && op.end <= n,
            "out of bounds: {op:?} (len {n})"
        );
        assert!(
            op.start >= last_end,
            "ops not sorted or overlapping: {:?}",
            d.ops
        );
        last_end = op.end;
        if !matches!(op.kind, OpKind::Pin) {
            for m in &tc.messages[op.start..op.end] {
                assert!(
                    m.flags & FLAG_PINNED == 0,
                    "pinned message touched by {op:?}"
                );
            }
        }
        if matches!(op.kind, OpKind::Drop | OpKind::Summarize { .. }) {
            let inside = |i: usize| i >= op.start && i < op.end;
            for (i, m) in tc.messages.iter().enumerate() {
                for t in &m.tools {
                    for (j, o) in tc.messages.iter().enumerate() {
                        if o.tools
                            .iter()
                            .any(|u| u.id == t.id && u.is_result != t.is_result)
                        {
                            assert_eq!(
                                inside(i),
                                inside(j),
                                "{op:?} splits tool pair {} (positions {i} and {j})",
                                t.id
                            );
                        }
                    }
                }
            }
        }
        if let OpKind::Summarize {
            max_tokens, text, ..
        } = &op.kind
        {
            let replaced: u64 = tc.messages[op.start..op.end]
                .iter()
                .map(|m| m.token_count())
                .sum();
            let text_tokens = if text.is_empty() {
                0
            } else {
                (text.chars().count() as u64).div_ceil(4) + 4
            };
            assert!(
                text_tokens + max_tokens / 5 <= replaced,
                "summary larger than what it replaces"
            );
        }
    }
}

pub struct Sim {
    pub strategy: Box<dyn Strategy>,
    pub ctx: HashMap<String, Vec<TestMsg>>,
    pub prev_input: HashMap<String, u64>,
    pub cumulative: HashMap<String, u64>,
    pub window: u64,
    pub max_output: u64,
    next_id: u64,
    pub last_call: Option<TestCall>,
}

impl Sim {
    pub fn new(p: Value) -> Sim {
        Sim {
            strategy: make(p),
            ctx: HashMap::new(),
            prev_input: HashMap::new(),
            cumulative: HashMap::new(),
            window: 1_000_000,
            max_output: 0,
            next_id: 1,
            last_call: None,
        }
    }

    pub fn context(&self, agent: &str) -> &Vec<TestMsg> {
        &self.ctx[agent]
    }

    /// One call of `agent` after `new` messages reached its context.
    pub fn call(&mut self, agent: &str, new: Vec<TestMsg>) -> Decision {
        let ctx = self.ctx.entry(agent.to_string()).or_default();
        let added = new.len() as u64;
        for mut m in new {
            m.id = self.next_id;
            self.next_id += 1;
            ctx.push(m);
        }
        let mut tc = TestCall::new(ctx.clone());
        tc.agent = agent.to_string();
        tc.new_messages = added;
        tc.budget.context_window = self.window;
        tc.budget.max_output = self.max_output;
        tc.prev_input_tokens = *self.prev_input.get(agent).unwrap_or(&0);
        tc.cumulative_input_tokens = *self.cumulative.get(agent).unwrap_or(&0);
        let d = tc.decide(self.strategy.as_mut()).expect("decide succeeds");
        check(&tc, &d);
        // Apply persistent ops, last first so earlier positions stay valid.
        let ctx = self.ctx.get_mut(agent).expect("context");
        for op in d.ops.iter().rev().filter(|o| o.scope == Scope::Persistent) {
            match &op.kind {
                OpKind::Drop => {
                    ctx.drain(op.start..op.end);
                }
                OpKind::Summarize {
                    max_tokens,
                    text,
                    role,
                    ..
                } => {
                    let mut s = TestMsg::new(*role, if text.is_empty() { "summary" } else { text });
                    s.flags |= FLAG_SUMMARY;
                    s.agent = agent.to_string();
                    s.id = self.next_id;
                    self.next_id += 1;
                    s.tokens = Some(s.token_count() + max_tokens / 5);
                    ctx.splice(op.start..op.end, [s]);
                }
                OpKind::Mask { placeholder } | OpKind::Offload { stub: placeholder } => {
                    for m in &mut ctx[op.start..op.end] {
                        m.text = placeholder.clone();
                        for t in &mut m.tools {
                            t.body = placeholder.clone();
                        }
                        m.flags |= FLAG_EDITED;
                        m.tokens = None;
                    }
                }
                OpKind::Pin => {
                    for m in &mut ctx[op.start..op.end] {
                        m.flags |= FLAG_PINNED;
                    }
                }
                OpKind::Unpin | OpKind::Truncate { .. } | OpKind::AllowSplit => {}
                OpKind::DropResults { .. } => unreachable!("fuseraft removes whole messages only"),
                OpKind::Repeat => unreachable!("fuseraft sends every edit it makes"),
                OpKind::Cut { .. } => unreachable!("fuseraft sends its truncations as Truncate"),
            }
        }
        let input: u64 = ctx.iter().map(|m| m.token_count()).sum();
        self.prev_input.insert(agent.to_string(), input);
        *self.cumulative.entry(agent.to_string()).or_default() += input;
        self.last_call = Some(tc);
        d
    }
}

pub fn codes(d: &Decision) -> Vec<&str> {
    d.events.iter().map(|e| e.code.as_str()).collect()
}

pub fn has(d: &Decision, code: &str) -> bool {
    d.events.iter().any(|e| e.code == code)
}

pub fn event<'a>(d: &'a Decision, code: &str) -> &'a Event {
    d.events
        .iter()
        .find(|e| e.code == code)
        .unwrap_or_else(|| panic!("no {code} event in {:?}", d.events))
}

/// A user request and the agent's text reply.
pub fn exchange(i: usize, tokens: u64) -> Vec<TestMsg> {
    vec![
        TestMsg::user(&format!("request {i}")).tokens(tokens),
        TestMsg::assistant(&format!("reply {i}")).tokens(tokens),
    ]
}
