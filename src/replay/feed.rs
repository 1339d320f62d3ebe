//! Walks a session's calls in time order and says, per call, which messages reached the agent and
//! which recorded compactions took effect since its previous call. The recorded per-call context
//! (`recorded_raw_tokens`, the `recorded` baseline) and every replay start from this one walk.

use crate::model::{Call, MsgIdx, Session};
use rustc_hash::FxHashSet;

/// Something that happened to an agent's context between two of its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The message reached the agent (appended at the end of its context).
    Append(MsgIdx),
    /// Index into `Session::compactions`: the log compacted the agent's history here.
    Compaction(usize),
}

pub(crate) struct Feed<'s> {
    /// Per agent: the messages that are part of its model context, in log order.
    messages: Vec<Vec<MsgIdx>>,
    cursor: Vec<usize>,
    /// Per agent: its recorded compactions, by `at_message`.
    compactions: Vec<Vec<usize>>,
    compaction_cursor: Vec<usize>,
    /// Summary messages written by recorded compactions: part of the recorded history only.
    recorded_summaries: FxHashSet<MsgIdx>,
    session: &'s Session,
}

impl<'s> Feed<'s> {
    pub(crate) fn new(session: &'s Session) -> Feed<'s> {
        let n = session.agents.len();
        let mut messages = vec![Vec::new(); n];
        for (i, m) in session.messages.iter().enumerate() {
            if !m.flags.meta && m.agent < n {
                messages[m.agent].push(i);
            }
        }
        let mut compactions = vec![Vec::new(); n];
        for (i, c) in session.compactions.iter().enumerate() {
            if c.agent < n {
                compactions[c.agent].push(i);
            }
        }
        for list in &mut compactions {
            list.sort_by_key(|&i| session.compactions[i].at_message);
        }
        Feed {
            messages,
            cursor: vec![0; n],
            compaction_cursor: vec![0; n],
            compactions,
            recorded_summaries: session
                .compactions
                .iter()
                .filter_map(|c| c.summary)
                .collect(),
            session,
        }
    }

    /// True for a summary message the log's own compaction wrote: replays that do not apply the
    /// recorded compactions start from the uncompacted history and never see it.
    pub(crate) fn is_recorded_summary(&self, m: MsgIdx) -> bool {
        self.recorded_summaries.contains(&m)
    }

    /// Emits, in log order, what reached `call.agent` since its previous call: messages before
    /// `call.context_end` and the recorded compactions whose boundary lies before it.
    pub(crate) fn advance(&mut self, call: &Call, mut step: impl FnMut(Step)) {
        let a = call.agent;
        if a >= self.messages.len() {
            return;
        }
        let msgs = &self.messages[a];
        let comps = &self.compactions[a];
        loop {
            let next_msg = msgs
                .get(self.cursor[a])
                .copied()
                .filter(|&m| m < call.context_end);
            let next_comp = comps
                .get(self.compaction_cursor[a])
                .copied()
                .filter(|&c| self.session.compactions[c].at_message < call.context_end);
            match (next_msg, next_comp) {
                (Some(m), Some(c)) if self.session.compactions[c].at_message <= m => {
                    self.compaction_cursor[a] += 1;
                    step(Step::Compaction(c));
                }
                (Some(m), _) => {
                    self.cursor[a] += 1;
                    step(Step::Append(m));
                }
                (None, Some(c)) => {
                    self.compaction_cursor[a] += 1;
                    step(Step::Compaction(c));
                }
                (None, None) => break,
            }
        }
    }
}
