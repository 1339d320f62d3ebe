//! Tool calls and their results as a loaded session holds them, checked in one place for every
//! reader (docs/formats.md, "Tool calls and results"):
//!
//! - a tool call id that repeats in an agent after its call was answered (a log concatenated
//!   twice, a tool that reuses ids) is renamed `<id>#2`, `#3`… from the repeat on, and the
//!   results that follow it are renamed with it: a result answers the latest call of its id
//!   before it. Every id is then unique, so a replay pairs each result with one call (strategies
//!   that refuse to separate a call from its result, fuseraft and FIM One, no longer fail on
//!   such input);
//! - a tool result that answers no earlier call of its agent (an orphan) is kept, with a warning;
//! - calls never answered while the agent went on are counted in one warning per agent.
//!
//! A message the log sends again is no repeat. At a recorded compaction a reader rebuilds the
//! agent's context from what the log holds next, and that may start with earlier messages again:
//! copies of the entries the tool kept (Cline's history after a truncation, Gemini CLI's after a
//! compression), or the conversation a request re-sends after a restart (an HTTP capture, an OTel
//! trace). A message right after the boundary, before any message of the agent's own, equal to
//! an earlier one of its agent is that message again: it takes the ids its original was read as
//! and changes nothing (a result Cline kept after cutting away its call is what Cline sent, not
//! a defect of the log). A log concatenated twice has no boundary right before its second copy,
//! so its repeats are told.
//!
//! Warnings name the message's file and line; past `MAX_LISTED` of one kind, a count.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap as HashMap, FxHasher};

use crate::model::{Message, MsgIdx, Part, Role, Session, SourcePos};

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

/// Role and tool ids of a message with tool parts, hashed: a message sent again hashes alike
/// (equal parts are then checked on a match only, so long results are not hashed).
fn ids_hash(m: &Message) -> u64 {
    let mut h = FxHasher::default();
    m.role.as_str().hash(&mut h);
    for p in &m.parts {
        match p {
            Part::ToolCall { id, name, .. } => (0u8, id, name).hash(&mut h),
            Part::ToolResult { call_id, .. } => (1u8, call_id).hash(&mut h),
            _ => {}
        }
    }
    h.finish()
}

fn has_tool_parts(m: &Message) -> bool {
    m.parts
        .iter()
        .any(|p| matches!(p, Part::ToolCall { .. } | Part::ToolResult { .. }))
}

/// Per kind of warning: the first `MAX_LISTED` listed, then a count with where the next one is.
#[derive(Default)]
struct Listed {
    n: usize,
    first_unlisted: Option<SourcePos>,
}

impl Listed {
    fn push(
        &mut self,
        warns: &mut Vec<(SourcePos, String)>,
        pos: SourcePos,
        w: impl FnOnce() -> String,
    ) {
        self.n += 1;
        if self.n <= MAX_LISTED {
            warns.push((pos, w()));
        } else if self.first_unlisted.is_none() {
            self.first_unlisted = Some(pos);
        }
    }

    fn rest(&self, warns: &mut Vec<(SourcePos, String)>, what: &str) {
        if let Some(pos) = self.first_unlisted {
            warns.push((
                pos,
                format!("{} more {what} (the next one here)", self.n - MAX_LISTED),
            ));
        }
    }
}

/// What `check` changed, so that a session still growing (a followed log) can take it back
/// before more lines are read and be checked again.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// (message, part, id before).
    renamed: Vec<(MsgIdx, usize, String)>,
    warnings_before: usize,
}

impl Checked {
    pub(crate) fn undo(self, s: &mut Session) {
        for (mi, pi, before) in self.renamed.into_iter().rev() {
            match s.messages.get_mut(mi).and_then(|m| m.parts.get_mut(pi)) {
                Some(Part::ToolCall { id, .. }) => *id = before,
                Some(Part::ToolResult { call_id, .. }) => *call_id = before,
                _ => {}
            }
        }
        s.warnings.truncate(self.warnings_before);
    }
}

/// Sets `slot` to `name`, noting what it was.
fn rename(
    slot: &mut String,
    name: &str,
    at: (MsgIdx, usize),
    renamed: &mut Vec<(MsgIdx, usize, String)>,
) {
    if slot != name {
        renamed.push((at.0, at.1, std::mem::replace(slot, name.to_string())));
    }
}

pub(crate) fn check(s: &mut Session) -> Checked {
    let mut done = Checked {
        renamed: Vec::new(),
        warnings_before: s.warnings.len(),
    };
    let renamed = &mut done.renamed;
    // Per agent, by id: looked up by the part's id, with no key made for the look-up.
    let mut open: Vec<HashMap<String, Open>> = Vec::new();
    let mut warns: Vec<(SourcePos, String)> = Vec::new();
    let (mut repeats, mut orphans) = (Listed::default(), Listed::default());
    // Where an agent's context is rebuilt from what the log holds next.
    let mut rebuilt: Vec<(MsgIdx, usize)> = s
        .compactions
        .iter()
        .map(|c| (c.at_message, c.agent))
        .collect();
    rebuilt.sort_unstable();
    let mut next_rebuilt = 0;
    // Per agent: whether it is in the messages sent again right after such a boundary, and its
    // messages with tool parts so far by role and ids (the first of equal ones).
    let mut resending: HashMap<usize, bool> = HashMap::default();
    let mut seen: HashMap<(usize, u64), MsgIdx> = HashMap::default();
    for mi in 0..s.messages.len() {
        let (agent, pos) = (s.messages[mi].agent, s.messages[mi].source);
        while next_rebuilt < rebuilt.len() && rebuilt[next_rebuilt].0 <= mi {
            resending.insert(rebuilt[next_rebuilt].1, true);
            next_rebuilt += 1;
        }
        if !has_tool_parts(&s.messages[mi]) {
            continue;
        }
        let key = (agent, ids_hash(&s.messages[mi]));
        match seen.get(&key) {
            Some(&orig)
                if resending.get(&agent).copied().unwrap_or(false)
                    && s.messages[orig].role == s.messages[mi].role
                    && s.messages[orig].parts.len() == s.messages[mi].parts.len()
                    && same_but_ids(&s.messages[orig], &s.messages[mi]) =>
            {
                // The message sent again: the ids its original was read as.
                let names: Vec<Option<String>> = s.messages[orig]
                    .parts
                    .iter()
                    .map(|p| match p {
                        Part::ToolCall { id, .. } => Some(id.clone()),
                        Part::ToolResult { call_id, .. } => Some(call_id.clone()),
                        _ => None,
                    })
                    .collect();
                for (pi, (p, name)) in s.messages[mi].parts.iter_mut().zip(names).enumerate() {
                    match (p, name) {
                        (Part::ToolCall { id: slot, .. }, Some(n))
                        | (Part::ToolResult { call_id: slot, .. }, Some(n)) => {
                            rename(slot, &n, (mi, pi), renamed)
                        }
                        _ => {}
                    }
                }
                continue;
            }
            Some(_) => {}
            None => {
                seen.insert(key, mi);
            }
        }
        // A message of its own: what follows is the log going on, no longer sent again.
        resending.insert(agent, false);
        if open.len() <= agent {
            open.resize_with(agent + 1, HashMap::default);
        }
        let open = &mut open[agent];
        for (pi, p) in s.messages[mi].parts.iter_mut().enumerate() {
            match p {
                Part::ToolCall { id, .. } if !id.is_empty() => {
                    match open.get_mut(id.as_str()) {
                        // The same call written twice before its result (a response written
                        // in pieces, a retried request): one call.
                        Some(o) if !o.answered => rename(id, &o.current, (mi, pi), renamed),
                        Some(o) => {
                            o.repeats += 1;
                            let new = format!("{id}#{}", o.repeats + 1);
                            repeats.push(&mut warns, pos, || {
                                format!(
                                    "tool call id {id} repeats (first at line {}); read as {new}, \
                                     answered by the results that follow it",
                                    o.first.line
                                )
                            });
                            rename(id, &new, (mi, pi), renamed);
                            o.current = new;
                            o.answered = false;
                            o.msg = mi;
                        }
                        None => {
                            open.insert(
                                id.clone(),
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
                    match open.get_mut(call_id.as_str()) {
                        Some(o) => {
                            o.answered = true;
                            rename(call_id, &o.current, (mi, pi), renamed);
                        }
                        None => orphans.push(&mut warns, pos, || {
                            format!(
                                "tool result for {call_id} answers no earlier tool call of this \
                                 agent; kept"
                            )
                        }),
                    }
                }
                _ => {}
            }
        }
    }
    repeats.rest(&mut warns, "repeated tool call ids, renamed the same way");
    orphans.rest(&mut warns, "tool results that answer no earlier call");
    // Unanswered: the agent went on (a later assistant message in the same context, before its
    // next recorded compaction) without the call's result. An agent whose log writes no result
    // as such (Cline's UI log folds results into the next request's text) is not checked.
    let n = s.agents.len();
    let mut replies: Vec<Vec<MsgIdx>> = vec![Vec::new(); n];
    let mut answers = vec![false; n];
    for (i, m) in s.messages.iter().enumerate() {
        let Some(r) = replies.get_mut(m.agent) else {
            continue;
        };
        if m.role == Role::Assistant {
            r.push(i);
        }
        answers[m.agent] |= m
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolResult { call_id, .. } if !call_id.is_empty()));
    }
    let mut boundaries: Vec<Vec<MsgIdx>> = vec![Vec::new(); n];
    for c in &s.compactions {
        if let Some(b) = boundaries.get_mut(c.agent) {
            b.push(c.at_message);
        }
    }
    for b in &mut boundaries {
        b.sort_unstable();
    }
    let went_on = |agent: usize, msg: MsgIdx| {
        let (Some(r), Some(b)) = (replies.get(agent), boundaries.get(agent)) else {
            return false;
        };
        let end = b
            .iter()
            .find(|&&at| at > msg)
            .copied()
            .unwrap_or(usize::MAX);
        let next = r.partition_point(|&i| i <= msg);
        answers[agent] && r.get(next).is_some_and(|&i| i < end)
    };
    let mut unanswered: HashMap<usize, (usize, usize, String)> = HashMap::default();
    for (agent, o) in open
        .iter()
        .enumerate()
        .flat_map(|(a, calls)| calls.values().map(move |o| (a, o)))
    {
        if !o.answered && went_on(agent, o.msg) {
            let e = unanswered
                .entry(agent)
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
    done
}

/// Two messages equal but for their tool ids (the original may have been renamed since).
fn same_but_ids(a: &Message, b: &Message) -> bool {
    a.parts.iter().zip(&b.parts).all(|(x, y)| match (x, y) {
        (
            Part::ToolCall { name, args, .. },
            Part::ToolCall {
                name: n2, args: a2, ..
            },
        ) => name == n2 && args == a2,
        (
            Part::ToolResult {
                content, is_error, ..
            },
            Part::ToolResult {
                content: c2,
                is_error: e2,
                ..
            },
        ) => content == c2 && is_error == e2,
        (x, y) => x == y,
    })
}
