//! Estimates for a session that grows while it is read (a followed log, `formats::follow`).
//!
//! [`LiveCounts`] counts each message once, when it first appears (again only when a poll says
//! it got more content), and keeps the counts. After each poll it rebuilds every call's counted
//! context from those counts alone, walking the calls as the replay engine's `recorded` baseline
//! does (the messages of the call's agent before `context_end`, not `meta`, the log's own
//! compactions applied: what precedes a compaction's boundary goes, except its summary and the
//! messages it kept), and refits the calibration. So after the last poll it holds what
//! `replay::recorded_raw_tokens` and `calibrate` give for the finished file (tested against
//! them), while only the appended messages were tokenized.

use crate::model::{MsgIdx, Session};
use crate::tokens::calibrate::{calibrate, samples, Calibration};
use crate::tokens::TokenCounter;

#[derive(Debug, Clone, Default)]
pub struct LiveCounts {
    /// Tokens of each message counted so far, by message index.
    messages: Vec<u64>,
    /// Each call's counted context (uncalibrated), as `replay::recorded_raw_tokens`.
    raw: Vec<Option<u64>>,
    calibration: Option<Calibration>,
    /// Messages tokenized by the last `update` (for tests and progress).
    counted_last: usize,
}

impl LiveCounts {
    /// Counts of `session` as it is now (every message counted once).
    pub fn new(session: &Session, counter: &dyn TokenCounter) -> LiveCounts {
        let mut c = LiveCounts::default();
        c.update(session, counter, &[]);
        c
    }

    /// `session` grew: counts the messages not seen before and those in `changed` (messages that
    /// got more content), then recomputes every call's context and the calibration. After a
    /// reload (the file was rewritten), start again with [`LiveCounts::new`].
    pub fn update(&mut self, session: &Session, counter: &dyn TokenCounter, changed: &[MsgIdx]) {
        let seen = self.messages.len().min(session.messages.len());
        self.messages.truncate(seen);
        let mut counted = 0;
        for &m in changed {
            if m < seen {
                self.messages[m] = counter.count_message(&session.messages[m]);
                counted += 1;
            }
        }
        for m in &session.messages[seen..] {
            self.messages.push(counter.count_message(m));
            counted += 1;
        }
        self.counted_last = counted;
        self.raw = self.contexts(session);
        self.calibration = calibrate(&samples(session, &self.raw));
    }

    /// Every call's context from the kept message counts (see the module docs).
    fn contexts(&self, session: &Session) -> Vec<Option<u64>> {
        let n = session.agents.len();
        if session.usage_only || session.calls.iter().any(|c| c.agent >= n) {
            return vec![None; session.calls.len()];
        }
        // Per agent: its messages in log order, its compactions by boundary, how far each has
        // reached, and the context held now (message indices) with its total.
        let mut messages: Vec<Vec<MsgIdx>> = vec![Vec::new(); n];
        for (i, m) in session.messages.iter().enumerate() {
            if !m.flags.meta && m.agent < n {
                messages[m.agent].push(i);
            }
        }
        let mut compactions: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, c) in session.compactions.iter().enumerate() {
            if c.agent < n {
                compactions[c.agent].push(i);
            }
        }
        for list in &mut compactions {
            list.sort_by_key(|&i| session.compactions[i].at_message);
        }
        let mut cursor = vec![0usize; n];
        let mut comp_cursor = vec![0usize; n];
        let mut context: Vec<Vec<MsgIdx>> = vec![Vec::new(); n];
        let mut total = vec![0u64; n];
        let mut out = Vec::with_capacity(session.calls.len());
        for call in &session.calls {
            let a = call.agent;
            loop {
                let next_msg = messages[a]
                    .get(cursor[a])
                    .copied()
                    .filter(|&m| m < call.context_end);
                let next_comp = compactions[a]
                    .get(comp_cursor[a])
                    .copied()
                    .filter(|&c| session.compactions[c].at_message < call.context_end);
                match (next_msg, next_comp) {
                    (Some(m), Some(c)) if session.compactions[c].at_message <= m => {
                        comp_cursor[a] += 1;
                        self.compact(session, c, &mut context[a], &mut total[a]);
                    }
                    (Some(m), _) => {
                        cursor[a] += 1;
                        context[a].push(m);
                        total[a] += self.messages[m];
                    }
                    (None, Some(c)) => {
                        comp_cursor[a] += 1;
                        self.compact(session, c, &mut context[a], &mut total[a]);
                    }
                    (None, None) => break,
                }
            }
            out.push(Some(total[a]));
        }
        out
    }

    /// The log's compaction `c`: what precedes its boundary goes, except the summary and the
    /// messages kept verbatim.
    fn compact(&self, session: &Session, c: usize, context: &mut Vec<MsgIdx>, total: &mut u64) {
        let rc = &session.compactions[c];
        let kept_from = rc.kept_from.unwrap_or(rc.at_message);
        context.retain(|&m| {
            let keep = m >= kept_from || Some(m) == rc.summary;
            if !keep {
                *total -= self.messages[m];
            }
            keep
        });
    }

    /// Each call's counted context, uncalibrated (`None` where it cannot be counted).
    pub fn raw(&self) -> &[Option<u64>] {
        &self.raw
    }

    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// Each call's estimate: its counted context, calibrated when the log allows it.
    pub fn estimates(&self, session: &Session) -> Vec<Option<u64>> {
        self.raw
            .iter()
            .zip(&session.calls)
            .map(|(r, c)| {
                r.map(|t| {
                    self.calibration
                        .as_ref()
                        .map_or(t, |k| k.predict(c.agent, t))
                })
            })
            .collect()
    }

    /// Tokens of each message counted so far.
    pub fn message_tokens(&self) -> &[u64] {
        &self.messages
    }

    /// Messages the last update tokenized.
    pub fn counted_last(&self) -> usize {
        self.counted_last
    }
}
