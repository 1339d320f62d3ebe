//! What every replay of a session needs to know of each message, worked out once per session and
//! counter: its tokens, its text as the model sees it, its length in chars, its facts, and which
//! tool call each tool result answers. Counting and scanning text is most of the work of a replay
//! that does it per run; `compare` and `tune` replay one session many times, so they prepare it
//! once (`Prepared::new`) and hand it to every run (`replay::run_prepared`).
//!
//! A `Prepared` holds no pointer into the session (it can be cached beside a shared session);
//! each run checks it was made from the session and counter it is given.

use super::context::message_text;
use super::facts::{FactId, Facts, Interner};
use crate::error::{Error, Result};
use crate::model::{MsgIdx, Part, Session};
use crate::tokens::TokenCounter;
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// No index (no flattened text, no answered call).
const NONE: u32 = u32::MAX;

/// One message, prepared.
#[derive(Debug, Clone, Copy)]
struct Prep {
    tokens: u64,
    chars: u64,
    /// `fact_list[facts.0..facts.1]`: the message's distinct facts, sorted by id.
    facts: (u32, u32),
    /// Index into `texts` when the message's text is several parts joined; `NONE` when it is
    /// its single part (borrowed from the session) or empty.
    text: u32,
}

/// The tool call a tool-result part answers, in the same agent: (message, part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answers {
    pub msg: MsgIdx,
    pub part: u32,
}

/// Per-message tokens, texts and facts of one session under one counter (module docs).
pub struct Prepared {
    session: String,
    messages: usize,
    counter: &'static str,
    prep: Vec<Prep>,
    texts: Vec<Box<str>>,
    fact_list: Vec<FactId>,
    facts: Interner,
    /// `answers[answers_at[m]..answers_at[m + 1]]`: for each tool result of message `m`, in
    /// order, the call it answers (`msg` = `MsgIdx::MAX` when the log has no such call).
    answers_at: Vec<u32>,
    answers: Vec<Answers>,
    /// Per agent: its messages in the session.
    agent_messages: Vec<usize>,
    /// Per agent: tool calls and results in its messages.
    tool_parts: Vec<usize>,
    /// False for `Prepared::counts`: no facts were scanned.
    with_facts: bool,
}

impl Prepared {
    /// Counts, flattens and scans every message of `session` once.
    pub fn new(session: &Session, counter: &dyn TokenCounter) -> Prepared {
        Prepared::build(session, counter, true)
    }

    /// Counts and flattens every message, without scanning for facts: enough for the recorded
    /// per-call contexts (`replay::recorded_raw_tokens_prepared`, calibration), not for a run
    /// (which measures recall), in about half the time.
    pub fn counts(session: &Session, counter: &dyn TokenCounter) -> Prepared {
        Prepared::build(session, counter, false)
    }

    fn build(session: &Session, counter: &dyn TokenCounter, with_facts: bool) -> Prepared {
        let n = session.messages.len();
        let mut prep = Vec::with_capacity(n);
        let mut texts = Vec::new();
        let mut fact_list = Vec::with_capacity(n * 2);
        let interner = Interner::default();
        let mut facts = Facts::new(&interner);
        let mut calls: FxHashMap<(usize, &str), Answers> = FxHashMap::default();
        let mut answers = Vec::new();
        let mut answers_at = Vec::with_capacity(n + 1);
        let mut tool_parts = vec![0; session.agents.len()];
        let mut agent_messages = vec![0; session.agents.len()];
        for (i, m) in session.messages.iter().enumerate() {
            let text = message_text(m);
            let start = fact_list.len() as u32;
            if with_facts {
                fact_list.extend_from_slice(facts.extract_distinct(&text));
            }
            let p = Prep {
                tokens: counter.count_message(m),
                chars: text.chars().count() as u64,
                facts: (start, fact_list.len() as u32),
                text: match text {
                    Cow::Owned(s) => {
                        texts.push(s.into_boxed_str());
                        (texts.len() - 1) as u32
                    }
                    Cow::Borrowed(_) => NONE,
                },
            };
            prep.push(p);
            answers_at.push(answers.len() as u32);
            if let Some(c) = agent_messages.get_mut(m.agent) {
                *c += 1;
            }
            for (k, part) in m.parts.iter().enumerate() {
                if matches!(part, Part::ToolCall { .. } | Part::ToolResult { .. }) {
                    if let Some(t) = tool_parts.get_mut(m.agent) {
                        *t += 1;
                    }
                }
                match part {
                    Part::ToolCall { id, .. } => {
                        calls.insert(
                            (m.agent, id.as_str()),
                            Answers {
                                msg: i,
                                part: k as u32,
                            },
                        );
                    }
                    Part::ToolResult { call_id, .. } => {
                        answers.push(calls.get(&(m.agent, call_id.as_str())).copied().unwrap_or(
                            Answers {
                                msg: MsgIdx::MAX,
                                part: 0,
                            },
                        ));
                    }
                    _ => {}
                }
            }
        }
        answers_at.push(answers.len() as u32);
        let facts = facts.into_interner();
        Prepared {
            session: session.id.clone(),
            messages: n,
            counter: counter.name(),
            prep,
            texts,
            fact_list,
            facts,
            answers_at,
            answers,
            agent_messages,
            tool_parts,
            with_facts,
        }
    }

    /// The counter the tokens were counted with.
    pub fn counter(&self) -> &'static str {
        self.counter
    }

    /// Raw tokens of message `m` under the prepared counter.
    pub fn tokens(&self, m: MsgIdx) -> u64 {
        self.prep[m].tokens
    }

    /// `check`, and refuses a `Prepared::counts` (a run measures recall, which needs facts).
    pub(crate) fn check_for_run(
        &self,
        session: &Session,
        counter: &dyn TokenCounter,
    ) -> Result<()> {
        self.check(session, counter)?;
        if !self.with_facts {
            return Err(Error::Invalid(format!(
                "session {} was prepared for counting only (Prepared::counts); a replay needs Prepared::new",
                self.session
            )));
        }
        Ok(())
    }

    /// Refuses a `Prepared` made from another session or with another counter.
    pub(crate) fn check(&self, session: &Session, counter: &dyn TokenCounter) -> Result<()> {
        if self.session != session.id || self.messages != session.messages.len() {
            return Err(Error::Invalid(format!(
                "the prepared session is {} ({} messages), not {} ({} messages)",
                self.session,
                self.messages,
                session.id,
                session.messages.len()
            )));
        }
        if self.counter != counter.name() {
            return Err(Error::Invalid(format!(
                "the session was prepared with the {} counter, the run uses {}",
                self.counter,
                counter.name()
            )));
        }
        Ok(())
    }

    pub(crate) fn chars(&self, m: MsgIdx) -> u64 {
        self.prep[m].chars
    }

    pub(crate) fn facts_of(&self, m: MsgIdx) -> &[FactId] {
        let (s, e) = self.prep[m].facts;
        &self.fact_list[s as usize..e as usize]
    }

    /// The joined text of message `m` when it has several text-bearing parts (`message_text`);
    /// `None` when its text is its single such part, or empty.
    pub(crate) fn joined_text(&self, m: MsgIdx) -> Option<&str> {
        match self.prep[m].text {
            NONE => None,
            t => Some(&self.texts[t as usize]),
        }
    }

    #[cfg(test)]
    pub(crate) fn interner_len(&self) -> usize {
        self.facts.len()
    }

    pub(crate) fn interner(&self) -> &Interner {
        &self.facts
    }

    /// Tool calls and results among agent `a`'s messages.
    pub(crate) fn tool_parts(&self, a: usize) -> usize {
        self.tool_parts.get(a).copied().unwrap_or(0)
    }

    /// Messages of agent `a`.
    pub(crate) fn agent_messages(&self, a: usize) -> usize {
        self.agent_messages.get(a).copied().unwrap_or(0)
    }

    /// The calls the tool results of message `m` answer, one per result part in order
    /// (`msg` = `MsgIdx::MAX` for a result whose call the log lacks).
    pub(crate) fn answers(&self, m: MsgIdx) -> &[Answers] {
        &self.answers[self.answers_at[m] as usize..self.answers_at[m + 1] as usize]
    }
}
