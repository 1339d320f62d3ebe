//! A small stand-in for the host: checks a decision the way the host validates it and applies it
//! to the test messages, so that sequences of calls can be replayed without the replay engine.

#![allow(dead_code)]

use ctxlab_plugin_api::abi::{FLAG_EDITED, FLAG_PINNED, FLAG_REQUEST, FLAG_SUMMARY};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use ctxlab_plugin_api::{
    Decision, EventKind, OpKind, Params, Role, Scope, Strategy, StrategyFactory,
};
use ctxlab_plugin_fim_one::ContextGuardFactory;
use serde_json::Value;

pub fn strategy(params: Value) -> Box<dyn Strategy> {
    let f = ContextGuardFactory;
    let p = Params::resolve(&f.info().params, &params).expect("valid parameters");
    f.create(p).expect("created")
}

/// The host's rules: ranges in bounds, edit ranges sorted and disjoint, pinned messages unpinned
/// before they are touched, Drop/Summarize never split a tool call from its results unless an
/// AllowSplit op covers them (ABI 1.1). Returns the pairs split that way.
pub fn validate(call: &TestCall, d: &Decision) -> usize {
    let msgs = &call.messages;
    assert!(d.ops.len() <= 256, "{} ops", d.ops.len());
    let mut last_end = 0usize;
    let mut unpinned = vec![false; msgs.len()];
    let mut allowed: Vec<(usize, usize)> = Vec::new();
    let mut split = 0usize;
    for op in &d.ops {
        assert!(
            op.start < op.end && op.end <= msgs.len(),
            "out of bounds: {op:?}"
        );
        match &op.kind {
            OpKind::Unpin => (op.start..op.end).for_each(|p| unpinned[p] = true),
            OpKind::Pin => {}
            OpKind::AllowSplit => allowed.push((op.start, op.end)),
            k => {
                assert!(op.start >= last_end, "unsorted or overlapping: {:?}", d.ops);
                last_end = op.end;
                for p in op.start..op.end {
                    assert!(
                        msgs[p].flags & FLAG_PINNED == 0 || unpinned[p],
                        "pinned message {p} touched without Unpin: {:?}",
                        d.ops
                    );
                }
                if matches!(k, OpKind::Drop | OpKind::Summarize { .. }) {
                    let ok = allowed.iter().any(|&(s, e)| s <= op.start && op.end <= e);
                    for p in op.start..op.end {
                        for t in &msgs[p].tools {
                            for (q, m) in msgs.iter().enumerate() {
                                if q != p
                                    && m.tools.iter().any(|u| u.id == t.id)
                                    && !(op.start..op.end).contains(&q)
                                {
                                    assert!(
                                        ok,
                                        "op {op:?} splits tool {} (messages {p} and {q})",
                                        t.id
                                    );
                                    split += 1;
                                }
                            }
                        }
                    }
                }
                if let OpKind::Summarize { max_tokens, .. } = k {
                    let replaced: u64 =
                        msgs[op.start..op.end].iter().map(|m| m.token_count()).sum();
                    assert!(
                        *max_tokens + 10 <= replaced,
                        "summary larger than what it replaces"
                    );
                }
            }
        }
    }
    split
}

/// Runs one call: validates the decision and returns it.
pub fn run(s: &mut dyn Strategy, call: &TestCall) -> Decision {
    let d = call.decide(s).expect("decide");
    validate(call, &d);
    d
}

/// The working context after the decision, as the host would leave it.
pub fn apply(call: &TestCall, d: &Decision) -> Vec<TestMsg> {
    let mut msgs: Vec<Option<TestMsg>> = call.messages.iter().cloned().map(Some).collect();
    let mut inserts: Vec<(usize, TestMsg)> = Vec::new();
    for op in &d.ops {
        // A this-call op filters what the call sends; the history keeps the message.
        if op.scope == Scope::ThisCall {
            continue;
        }
        for p in op.start..op.end {
            let Some(m) = msgs[p].as_mut() else { continue };
            match &op.kind {
                OpKind::AllowSplit => {}
                OpKind::DropResults { .. } => unreachable!("FIM One removes whole messages only"),
                OpKind::Repeat => unreachable!("FIM One sends every edit it makes"),
                OpKind::Cut { .. } => unreachable!("FIM One sends its cuts as Truncate"),
                OpKind::Pin => m.flags |= FLAG_PINNED,
                OpKind::Unpin => m.flags &= !FLAG_PINNED,
                OpKind::Mask { placeholder } => {
                    m.text = placeholder.clone();
                    m.tokens = None;
                    m.flags |= FLAG_EDITED;
                }
                OpKind::Truncate { head, marker, .. } => {
                    m.text = m.text.chars().take(*head as usize).collect::<String>() + marker;
                    m.tokens = None;
                    m.flags |= FLAG_EDITED;
                }
                OpKind::Offload { stub } => m.text = stub.clone(),
                OpKind::Drop => msgs[p] = None,
                OpKind::Summarize {
                    max_tokens,
                    text,
                    role,
                    ..
                } => {
                    if p == op.start {
                        let mut s = TestMsg::new(*role, text).tokens(max_tokens + 10);
                        s.flags |= FLAG_SUMMARY;
                        s.id = 1_000_000 + p as u64 + 1000 * call.call_index;
                        inserts.push((p, s));
                    }
                    msgs[p] = None;
                }
            }
        }
    }
    let mut out = Vec::new();
    for (p, m) in msgs.into_iter().enumerate() {
        for (q, s) in &inserts {
            if *q == p {
                out.push(s.clone());
            }
        }
        if let Some(m) = m {
            out.push(m);
        }
    }
    out
}

/// Messages with stable ids (the host's ids survive edits).
pub fn ids(mut msgs: Vec<TestMsg>, from: u64) -> Vec<TestMsg> {
    for (i, m) in msgs.iter_mut().enumerate() {
        if m.id == 0 {
            m.id = from + i as u64;
        }
    }
    msgs
}

pub fn query(text: &str, request: u32) -> TestMsg {
    TestMsg::user(text).flag(FLAG_REQUEST).request(request)
}

pub fn events<'d>(d: &'d Decision, kind: EventKind) -> Vec<&'d ctxlab_plugin_api::Event> {
    d.events.iter().filter(|e| e.kind == kind).collect()
}

pub fn role_of(m: &TestMsg) -> Role {
    m.role
}
