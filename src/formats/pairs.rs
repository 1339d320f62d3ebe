//! Tool calls and their results as a loaded session holds them, checked in one place for every
//! reader (docs/formats.md, "Tool calls and results"):
//!
//! - a tool call id that repeats in an agent's context after its call was answered (a log
//!   concatenated twice, a tool that reuses ids) is renamed `<id>#2`, `#3`… from the repeat on, and the results that follow it are renamed
//!   with it: a result answers the latest call of its id before it. Every id is then unique, so a
//!   replay pairs each result with one call (strategies that refuse to separate a call from its
//!   result, fuseraft and FIM One, no longer fail on such input);
//! - a tool result that answers no earlier call of its agent (an orphan) is kept, with a warning;
//! - calls never answered while the agent went on are counted in one warning per agent.
//!
//! Warnings name the message's file and line; past `MAX_LISTED` of one kind, a count.

use std::collections::HashMap;

use crate::model::{Part, Role, Session, SourcePos};

/// Warnings of one kind listed one by one; the rest are counted.
const MAX_LISTED: usize = 20;

struct Open {
    /// The id the call now has (renamed when it repeats).
    current: String,
    repeats: u32,
    first: SourcePos,
    answered: bool,
    /// Message index of the latest call with this id.
    msg: usize,
}

pub(crate) fn check(s: &mut Session) {
    let mut open: HashMap<(usize, String), Open> = HashMap::new();
    let mut warns: Vec<(SourcePos, String)> = Vec::new();
    let (mut repeats, mut orphans) = (0usize, 0usize);
    // A compaction starts a new context, in which re-sent calls appear again with their ids.
    let mut restarts: Vec<(usize, usize)> = s
        .compactions
        .iter()
        .map(|c| (c.at_message, c.agent))
        .collect();
    restarts.sort_unstable();
    let mut next_restart = 0;
    for (mi, m) in s.messages.iter_mut().enumerate() {
        let (agent, pos) = (m.agent, m.source);
        while next_restart < restarts.len() && restarts[next_restart].0 <= mi {
            let a = restarts[next_restart].1;
            open.retain(|(oa, _), _| *oa != a);
            next_restart += 1;
        }
        for p in &mut m.parts {
            match p {
                Part::ToolCall { id, .. } if !id.is_empty() => {
                    match open.get_mut(&(agent, id.clone())) {
                        // The same call written twice before its result (a response written
                        // in pieces, a retried request): one call.
                        Some(o) if !o.answered => {}
                        Some(o) => {
                            o.repeats += 1;
                            let new = format!("{id}#{}", o.repeats + 1);
                            repeats += 1;
                            if repeats <= MAX_LISTED {
                                warns.push((
                                    pos,
                                    format!(
                                        "tool call id {id} repeats (first at line {}); read as {new}, \
                                         answered by the results that follow it",
                                        o.first.line
                                    ),
                                ));
                            }
                            o.current = new.clone();
                            o.answered = false;
                            o.msg = mi;
                            *id = new;
                        }
                        None => {
                            open.insert(
                                (agent, id.clone()),
                                Open {
                                    current: id.clone(),
                                    repeats: 0,
                                    first: pos,
                                    answered: false,
                                    msg: mi,
                                },
                            );
                        }
                    }
                }
                Part::ToolResult { call_id, .. } if !call_id.is_empty() => {
                    match open.get_mut(&(agent, call_id.clone())) {
                        Some(o) => {
                            o.answered = true;
                            if o.current != *call_id {
                                *call_id = o.current.clone();
                            }
                        }
                        None => {
                            orphans += 1;
                            if orphans <= MAX_LISTED {
                                warns.push((
                                    pos,
                                    format!(
                                        "tool result for {call_id} answers no earlier tool call of \
                                         this agent; kept"
                                    ),
                                ));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let first = |n: usize| if n > MAX_LISTED { n - MAX_LISTED } else { 0 };
    if first(repeats) > 0 || first(orphans) > 0 {
        let pos = SourcePos { file: 0, line: 1 };
        if first(repeats) > 0 {
            warns.push((
                pos,
                format!(
                    "{} more repeated tool call ids, renamed the same way",
                    first(repeats)
                ),
            ));
        }
        if first(orphans) > 0 {
            warns.push((
                pos,
                format!(
                    "{} more tool results answer no earlier call",
                    first(orphans)
                ),
            ));
        }
    }
    // Unanswered: the agent went on (a later assistant message) without the call's result.
    let mut last_reply: HashMap<usize, usize> = HashMap::new();
    for (i, m) in s.messages.iter().enumerate() {
        if m.role == Role::Assistant {
            last_reply.insert(m.agent, i);
        }
    }
    let mut unanswered: HashMap<usize, (usize, usize, String)> = HashMap::new();
    for ((agent, _), o) in &open {
        if !o.answered && last_reply.get(agent).is_some_and(|&l| l > o.msg) {
            let e = unanswered
                .entry(*agent)
                .or_insert((0, usize::MAX, String::new()));
            e.0 += 1;
            if o.msg < e.1 {
                e.1 = o.msg;
                e.2 = o.current.clone();
            }
        }
    }
    let mut unanswered: Vec<_> = unanswered.into_iter().collect();
    unanswered.sort_by_key(|(_, (_, first, _))| *first);
    for (_, (n, first, id)) in unanswered {
        let pos = s.messages[first].source;
        warns.push((
            pos,
            format!(
                "{n} tool call(s) never answered though the agent went on (the first: {id}, here)"
            ),
        ));
    }
    for (pos, w) in warns {
        s.warn(pos, w);
    }
}
