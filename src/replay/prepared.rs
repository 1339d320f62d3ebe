//! What every replay of a session needs to know of each message, worked out once per session and
//! counter: its tokens, its text as the model sees it, its length in chars, its facts, and which
//! tool call each tool result answers. Counting and scanning text is most of the work of a replay
//! that does it per run; `compare` and `tune` replay one session many times, so they prepare it
//! once (`Prepared::new`) and hand it to every run (`replay::run_prepared`).
//!
//! A `Prepared` holds no pointer into the session (it can be cached beside a shared session);
//! each run checks it was made from the session and counter it is given.

use super::context::message_text;
use super::facts::{FactId, FactSet, Facts, Interner};
use crate::error::{Error, Result};
use crate::model::{MsgIdx, Part, Session};
use crate::tokens::{message_tokens, TokenCounter};
use ctxlab_plugin_api::abi::{
    PartList, PartView, PART_TEXT, PART_THINKING, PART_TOOL_CALL, PART_TOOL_RESULT,
};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// No index (no flattened text, no answered call).
const NONE: u32 = u32::MAX;

/// One message, prepared.
#[derive(Debug, Clone, Copy)]
struct Prep {
    /// Counted and known tokens (`tokens::message_tokens`).
    tokens: u64,
    /// Of `tokens`, known from the log (recorded size or hidden content).
    known: u64,
    /// Of `known`, what leaves the context at the agent's next human message.
    transient: u64,
    chars: u64,
    /// ASCII and other characters of its content (text parts and tool results joined by "\n";
    /// no thinking, no tool arguments): `MessageView::content_ascii/other`.
    content: (u32, u32),
    /// `fact_list[facts.0..facts.1]`: the message's distinct facts, sorted by id.
    facts: (u32, u32),
    /// `indexed_list[indexed.0..indexed.1]`: those of them some call may need (below).
    indexed: (u32, u32),
    /// Index into `texts` when the message's text is several parts joined; `NONE` when it is
    /// its single part (borrowed from the session) or empty.
    text: u32,
    /// `answers[answers.0..answers.1]`: the calls its tool results answer.
    answers: (u32, u32),
    /// Its tool calls and results.
    tool_parts: u32,
    /// `part_views[parts.0..parts.1]`: its parts that have text (all but images), the
    /// `CallView::message_parts` entry of its view (ABI 1.6).
    parts: (u32, u32),
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
    /// Facts some call's reply holds: the only ones recall ever asks about (a needed fact is a
    /// fact of a reply), so the only ones a run indexes. In a tool-heavy session most facts
    /// (identifiers and numbers of tool output) are never written again by the model.
    needed: FactSet,
    /// The needed facts' texts (`facts` restricted to `needed`, same ids): what a run looks the
    /// facts of the texts it writes up in (`Facts::needed_distinct`), a table far smaller than
    /// `facts`.
    needed_names: Interner,
    indexed_list: Vec<FactId>,
    /// For each tool result, in message order, the call it answers (`msg` = `MsgIdx::MAX` when
    /// the log has no such call).
    answers: Vec<Answers>,
    /// Per agent: tool call id → the call, for results still to come (`update`).
    calls: Vec<FxHashMap<Box<str>, Answers>>,
    /// Per agent: its messages in the session.
    agent_messages: Vec<usize>,
    /// Per agent: tool calls and results in its messages.
    tool_parts: Vec<usize>,
    /// Every message's parts with text (all but images), in message order (`Prep::parts`):
    /// made once per session, so a run's views point at them instead of building them.
    part_views: Vec<PartView>,
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
        let mut p = Prepared {
            session: session.id.clone(),
            messages: 0,
            counter: counter.name(),
            prep: Vec::with_capacity(n),
            texts: Vec::new(),
            fact_list: Vec::with_capacity(if with_facts { n * 2 } else { 0 }),
            facts: Interner::default(),
            needed: FactSet::default(),
            needed_names: Interner::default(),
            indexed_list: Vec::new(),
            answers: Vec::new(),
            calls: Vec::new(),
            agent_messages: Vec::new(),
            tool_parts: Vec::new(),
            part_views: Vec::new(),
            with_facts,
        };
        p.grow(session, counter, &[]);
        p
    }

    /// The session grew (a followed log, `formats::follow`): prepares the messages added since
    /// and again those in `changed` (messages that got more content), leaving the rest as they
    /// are, so a poll costs what it added. Refuses another session, another counter, or a
    /// session with fewer messages than prepared (a rewritten file: prepare it anew).
    pub fn update(
        &mut self,
        session: &Session,
        counter: &dyn TokenCounter,
        changed: &[MsgIdx],
    ) -> Result<()> {
        if self.session != session.id
            || self.counter != counter.name()
            || session.messages.len() < self.messages
        {
            return Err(Error::Invalid(format!(
                "the preparation of {} ({} messages, {} counter) cannot grow into {} ({} messages, {} counter)",
                self.session,
                self.messages,
                self.counter,
                session.id,
                session.messages.len(),
                counter.name()
            )));
        }
        self.grow(session, counter, changed);
        Ok(())
    }

    fn grow(&mut self, session: &Session, counter: &dyn TokenCounter, changed: &[MsgIdx]) {
        let agents = session.agents.len();
        if self.agent_messages.len() < agents {
            self.agent_messages.resize(agents, 0);
            self.tool_parts.resize(agents, 0);
            self.calls.resize_with(agents, FxHashMap::default);
        }
        let mut facts = Facts::owning(std::mem::take(&mut self.facts));
        let old = self.messages;
        for &m in changed.iter().filter(|&&m| m < old) {
            let p = self.prepare_one(session, counter, &mut facts, m);
            let a = session.messages[m].agent;
            if let Some(t) = self.tool_parts.get_mut(a) {
                *t = *t - self.prep[m].tool_parts as usize + p.tool_parts as usize;
            }
            self.prep[m] = p;
        }
        for m in old..session.messages.len() {
            let p = self.prepare_one(session, counter, &mut facts, m);
            let a = session.messages[m].agent;
            if a < agents {
                self.agent_messages[a] += 1;
                self.tool_parts[a] += p.tool_parts as usize;
            }
            self.prep.push(p);
        }
        self.messages = session.messages.len();
        self.facts = facts.into_interner();
        if self.with_facts {
            self.index(session);
        }
    }

    /// The facts of the calls' replies, and each message's share of them. Redone whole after a
    /// growth (new replies make facts of earlier messages needed): O(facts in the session),
    /// far below preparing them.
    fn index(&mut self, session: &Session) {
        let mut needed = FactSet::default();
        for c in &session.calls {
            if let Some(r) = c.reply.filter(|&r| r < self.messages) {
                for &f in self.facts_of(r) {
                    needed.insert(f);
                }
            }
        }
        self.indexed_list.clear();
        for i in 0..self.prep.len() {
            let (s, e) = self.prep[i].facts;
            let start = self.indexed_list.len() as u32;
            self.indexed_list.extend(
                self.fact_list[s as usize..e as usize]
                    .iter()
                    .filter(|&&f| needed.contains(f)),
            );
            self.prep[i].indexed = (start, self.indexed_list.len() as u32);
        }
        self.needed_names = self.facts.restricted(|f| needed.contains(f));
        self.needed = needed;
    }

    /// Counts, flattens and scans message `i`; registers its tool calls for results to come.
    fn prepare_one(
        &mut self,
        session: &Session,
        counter: &dyn TokenCounter,
        facts: &mut Facts<'_>,
        i: MsgIdx,
    ) -> Prep {
        let m = &session.messages[i];
        let text = message_text(m);
        let start = self.fact_list.len() as u32;
        if self.with_facts {
            self.fact_list
                .extend_from_slice(facts.extract_distinct(&text));
        }
        let answers_start = self.answers.len() as u32;
        let mut tool_parts = 0;
        for (k, part) in m.parts.iter().enumerate() {
            match part {
                Part::ToolCall { id, .. } => {
                    tool_parts += 1;
                    if let Some(calls) = self.calls.get_mut(m.agent) {
                        calls.insert(
                            id.as_str().into(),
                            Answers {
                                msg: i,
                                part: k as u32,
                            },
                        );
                    }
                }
                Part::ToolResult { call_id, .. } => {
                    tool_parts += 1;
                    let call = self
                        .calls
                        .get(m.agent)
                        .and_then(|c| c.get(call_id.as_str()))
                        .copied();
                    self.answers.push(call.unwrap_or(Answers {
                        msg: MsgIdx::MAX,
                        part: 0,
                    }));
                }
                _ => {}
            }
        }
        let t = message_tokens(counter, m);
        let parts_start = self.part_views.len() as u32;
        self.part_views.extend(m.parts.iter().filter_map(|p| {
            let (kind, bytes) = match p {
                Part::Text { text } => (PART_TEXT, text.len()),
                Part::Thinking { text } => (PART_THINKING, text.len()),
                Part::ToolCall { args, .. } => (PART_TOOL_CALL, args.len()),
                Part::ToolResult { content, .. } => (PART_TOOL_RESULT, content.len()),
                Part::Image { .. } => return None,
            };
            Some(PartView {
                kind,
                reserved: 0,
                bytes: bytes as u64,
            })
        }));
        Prep {
            tokens: t.total(),
            known: t.known,
            transient: t.transient,
            chars: text.chars().count() as u64,
            content: content_chars(m),
            facts: (start, self.fact_list.len() as u32),
            indexed: (0, 0),
            text: match text {
                Cow::Owned(s) => {
                    self.texts.push(s.into_boxed_str());
                    (self.texts.len() - 1) as u32
                }
                Cow::Borrowed(_) => NONE,
            },
            answers: (answers_start, self.answers.len() as u32),
            tool_parts,
            parts: (parts_start, self.part_views.len() as u32),
        }
    }

    /// Messages prepared.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// The counter the tokens were counted with.
    pub fn counter(&self) -> &'static str {
        self.counter
    }

    /// Tokens of message `m`: its recorded size where the log has one, else the prepared
    /// counter's count plus any hidden content (`tokens::message_tokens`).
    pub fn tokens(&self, m: MsgIdx) -> u64 {
        self.prep[m].tokens
    }

    /// Of `tokens(m)`, those known from the log rather than counted.
    pub fn known(&self, m: MsgIdx) -> u64 {
        self.prep[m].known
    }

    /// Of `known(m)`, those that leave the context at the agent's next human message.
    pub fn transient(&self, m: MsgIdx) -> u64 {
        self.prep[m].transient
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

    /// ASCII and other characters of message `m`'s content (`MessageView::content_ascii/other`).
    pub(crate) fn content(&self, m: MsgIdx) -> (u32, u32) {
        self.prep[m].content
    }

    /// The facts of message `m` some call may need (`needed`), sorted by id.
    pub(crate) fn indexed_of(&self, m: MsgIdx) -> &[FactId] {
        let (s, e) = self.prep[m].indexed;
        &self.indexed_list[s as usize..e as usize]
    }

    /// True when some call's reply holds fact `f` (a fact a run writes is never needed).
    pub(crate) fn is_needed(&self, f: FactId) -> bool {
        self.needed.contains(f)
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

    #[cfg(test)]
    pub(crate) fn interner(&self) -> &Interner {
        &self.facts
    }

    /// The needed facts only, with their ids (`needed_names`): the base of a run's `Facts`.
    pub(crate) fn needed_interner(&self) -> &Interner {
        &self.needed_names
    }

    /// Tool calls and results among agent `a`'s messages.
    pub(crate) fn tool_parts(&self, a: usize) -> usize {
        self.tool_parts.get(a).copied().unwrap_or(0)
    }

    /// The parts of message `m`'s text, in order (images have none): its view's
    /// `CallView::message_parts` entry (ABI 1.6), valid while this preparation is not grown.
    pub(crate) fn part_list(&self, m: MsgIdx) -> PartList {
        let (s, e) = self.prep[m].parts;
        if s == e {
            PartList::EMPTY
        } else {
            PartList {
                parts: self.part_views[s as usize..e as usize].as_ptr(),
                len: (e - s) as usize,
            }
        }
    }

    /// Messages of agent `a`.
    pub(crate) fn agent_messages(&self, a: usize) -> usize {
        self.agent_messages.get(a).copied().unwrap_or(0)
    }

    /// The calls the tool results of message `m` answer, one per result part in order
    /// (`msg` = `MsgIdx::MAX` for a result whose call the log lacks).
    pub(crate) fn answers(&self, m: MsgIdx) -> &[Answers] {
        let (s, e) = self.prep[m].answers;
        &self.answers[s as usize..e as usize]
    }
}

/// ASCII and other characters of what an OpenAI-style `content` of `m` holds: its text parts
/// and tool-result contents joined by "\n" (thinking and tool-call arguments are not content).
fn content_chars(m: &crate::model::Message) -> (u32, u32) {
    let (mut ascii, mut other, mut parts) = (0u64, 0u64, 0u64);
    for p in &m.parts {
        let t = match p {
            Part::Text { text } => text,
            Part::ToolResult { content, .. } => content,
            _ => continue,
        };
        let (a, o) = ctxlab_plugin_api::ascii_other_chars(t);
        ascii += a;
        other += o;
        parts += 1;
    }
    ascii += parts.saturating_sub(1);
    (saturate(ascii), saturate(other))
}

/// A count in a u32 view field.
pub(crate) fn saturate(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::test_support::{Chars4, Role, SessionBuilder};

    fn session() -> Session {
        let mut b = SessionBuilder::new();
        let a = b.agent("main");
        let sub = b.agent("sub");
        for i in 0..40 {
            b.msg(
                a,
                Role::User,
                format!("look at src/file_{i}.rs and E{:04}", i * 7),
            );
            b.tool_call(
                a,
                &format!("t{i}"),
                &format!("{{\"path\":\"src/file_{i}.rs\"}}"),
            );
            if i % 3 == 0 {
                b.msg(sub, Role::User, format!("side task {i} in docs/x_{i}.md"));
            }
            b.tool_result(
                a,
                &format!("t{i}"),
                &format!("fn handler_{i}() {{}} // line {}", 100 + i),
            );
            b.msg(a, Role::Assistant, format!("patched src/file_{i}.rs"));
        }
        b.session
    }

    /// What a run reads of a preparation, message by message.
    fn read(
        p: &Prepared,
        s: &Session,
    ) -> Vec<(u64, u64, Vec<FactId>, Vec<Answers>, Option<String>)> {
        (0..s.messages.len())
            .map(|m| {
                (
                    p.tokens(m),
                    p.chars(m),
                    p.facts_of(m).to_vec(),
                    p.answers(m).to_vec(),
                    p.joined_text(m).map(String::from),
                )
            })
            .collect()
    }

    /// `MessageView::content_ascii/other` (ABI 1.3): text parts and tool results joined by
    /// "\n"; thinking and tool-call arguments are not content.
    #[test]
    fn content_counts_leave_out_thinking_and_tool_arguments() {
        let m = crate::model::Message {
            agent: 0,
            role: Role::Assistant,
            parts: vec![
                Part::Thinking {
                    text: "déjà vu, long thoughts".into(),
                },
                Part::Text {
                    text: "Voilà".into(),
                },
                Part::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    args: "{\"path\": \"é\"}".into(),
                },
                Part::ToolResult {
                    call_id: "c0".into(),
                    content: "ok".into(),
                    is_error: false,
                },
            ],
            timestamp: None,
            flags: Default::default(),
            source: Default::default(),
        };
        // "Voilà" + "\n" + "ok": 4 + 1 + 2 ASCII, 1 other.
        assert_eq!(content_chars(&m), (7, 1));
        let empty = crate::model::Message {
            parts: vec![Part::Thinking { text: "x".into() }],
            ..m
        };
        assert_eq!(content_chars(&empty), (0, 0));
    }

    /// A preparation grown poll by poll equals one made from the finished session.
    #[test]
    fn growing_equals_preparing_the_whole_session() {
        let full = session();
        let whole = Prepared::new(&full, &Chars4);
        for cut in [0, 1, 7, 50, 99, full.messages.len()] {
            let mut part = full.clone();
            part.messages.truncate(cut);
            let mut grown = Prepared::new(&part, &Chars4);
            grown.update(&full, &Chars4, &[]).unwrap();
            assert_eq!(read(&grown, &full), read(&whole, &full), "cut at {cut}");
            assert_eq!(grown.tool_parts, whole.tool_parts);
            for m in 0..full.messages.len() {
                let (g, w) = (grown.part_list(m), whole.part_list(m));
                let view = |l: PartList| -> Vec<PartView> {
                    if l.len == 0 {
                        Vec::new()
                    } else {
                        unsafe { std::slice::from_raw_parts(l.parts, l.len) }.to_vec()
                    }
                };
                assert_eq!(view(g), view(w), "message {m}, cut at {cut}");
            }
            assert_eq!(grown.agent_messages, whole.agent_messages);
        }
    }

    /// A message that got more content is prepared again; nothing else changes.
    #[test]
    fn a_changed_message_is_prepared_again() {
        let mut s = session();
        let mut p = Prepared::new(&s, &Chars4);
        let before = read(&p, &s);
        let m = 5;
        if let crate::model::Part::Text { text } = &mut s.messages[m].parts[0] {
            text.push_str(" and src/new_file.rs with more words");
        }
        p.update(&s, &Chars4, &[m]).unwrap();
        let fresh = Prepared::new(&s, &Chars4);
        let after = read(&p, &s);
        assert_eq!(after[m].0, fresh.tokens(m));
        assert!(after[m].0 > before[m].0);
        assert_eq!(after[m].2.len(), fresh.facts_of(m).len());
        for i in (0..s.messages.len()).filter(|&i| i != m) {
            assert_eq!(after[i], before[i], "message {i}");
        }
        // Another session, another counter, or a shorter session cannot be grown into.
        let mut other = s.clone();
        other.id = "other".into();
        assert!(p.update(&other, &Chars4, &[]).is_err());
        let mut shorter = s.clone();
        shorter.messages.truncate(3);
        assert!(p.update(&shorter, &Chars4, &[]).is_err());
    }
}
