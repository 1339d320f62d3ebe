//! Estimates for a session that grows while it is read (a followed log, `formats::follow`), and
//! the row a live view shows of each call ([`call_row`]). The follower only reads; what its new
//! calls are worth is worked out here, so readers never reach into the replay.
//!
//! [`LiveCounts`] counts each message once, when it first appears (again only when a poll says
//! it got more content), in a `replay::Prepared` grown poll by poll. After each poll it rebuilds
//! every call's counted context from those counts alone with the replay engine's `recorded`
//! baseline, and refits the calibration. So after the last poll it holds what
//! `replay::recorded_raw_tokens` and `calibrate` give for the finished file (tested against
//! them), while only the appended messages were tokenized.

use serde::Serialize;

use crate::model::{AgentIdx, MsgIdx, Session, Usage};
use crate::replay::{recorded_contexts_prepared, session_model, ModelTable, Prepared, RawContext};
use crate::tokens::calibrate::{calibrate, samples, Calibration};
use crate::tokens::TokenCounter;

pub struct LiveCounts {
    /// Every message's tokens so far (no facts: estimates need none), grown poll by poll.
    prepared: Prepared,
    /// Each call's counted context (uncalibrated), as `replay::recorded_contexts`.
    contexts: Vec<Option<RawContext>>,
    /// Their totals, as `replay::recorded_raw_tokens`.
    raw: Vec<Option<u64>>,
    calibration: Option<Calibration>,
    /// Messages tokenized by the last `update` (for tests and progress).
    counted_last: usize,
}

impl LiveCounts {
    /// Counts of `session` as it is now (every message counted once).
    pub fn new(session: &Session, counter: &dyn TokenCounter) -> LiveCounts {
        let mut c = LiveCounts {
            prepared: Prepared::counts(session, counter),
            contexts: Vec::new(),
            raw: Vec::new(),
            calibration: None,
            counted_last: session.messages.len(),
        };
        c.refit(session, counter);
        c
    }

    /// `session` grew: counts the messages not seen before and those in `changed` (messages that
    /// got more content), then recomputes every call's context and the calibration. After a
    /// reload (the file was rewritten), start again with [`LiveCounts::new`]; a session that
    /// cannot have grown from the counted one (fewer messages, another id) is counted anew.
    pub fn update(&mut self, session: &Session, counter: &dyn TokenCounter, changed: &[MsgIdx]) {
        let seen = self.prepared.messages();
        match self.prepared.update(session, counter, changed) {
            Ok(()) => {
                self.counted_last =
                    session.messages.len() - seen + changed.iter().filter(|&&m| m < seen).count();
            }
            Err(_) => {
                self.prepared = Prepared::counts(session, counter);
                self.counted_last = session.messages.len();
            }
        }
        self.refit(session, counter);
    }

    /// Every call's context from the kept counts, by the replay engine's `recorded` baseline
    /// (one reconstruction for the app, the CLI and this), and the calibration.
    fn refit(&mut self, session: &Session, counter: &dyn TokenCounter) {
        self.contexts = recorded_contexts_prepared(session, &self.prepared, counter)
            .unwrap_or_else(|_| vec![None; session.calls.len()]);
        self.raw = self.contexts.iter().map(|c| c.map(|c| c.total())).collect();
        self.calibration = calibrate(&samples(session, &self.contexts));
    }

    /// Each call's counted context, uncalibrated (`None` where it cannot be counted).
    pub fn raw(&self) -> &[Option<u64>] {
        &self.raw
    }

    /// Each call's context, counted and known tokens apart (what calibration fits).
    pub fn contexts(&self) -> &[Option<RawContext>] {
        &self.contexts
    }

    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// Each call's estimate: its counted context, calibrated when the log allows it.
    pub fn estimates(&self, session: &Session) -> Vec<Option<u64>> {
        self.contexts
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.map(|t| {
                    self.calibration
                        .as_ref()
                        .map_or(t.total(), |k| k.predict_call(session, i, t))
                })
            })
            .collect()
    }

    /// The counts kept so far (for `inspect::summarize_prepared`).
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    /// Messages counted so far.
    pub fn messages(&self) -> usize {
        self.prepared.messages()
    }

    /// Messages the last update tokenized.
    pub fn counted_last(&self) -> usize {
        self.counted_last
    }
}

/// One call as a live view shows it: who made it, what it cost, how full its context was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRow {
    /// Index in `Session::calls`.
    pub index: usize,
    pub agent: AgentIdx,
    pub agent_name: String,
    pub model: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: Option<i64>,
    /// As the log recorded it (none yet for a reply whose usage line has not been written).
    pub usage: Option<Usage>,
    /// Context occupancy: tokens the provider read for this call (input + cache read + write).
    pub context: Option<u64>,
    /// The model's context window, when the model table knows the model.
    pub window: Option<u64>,
    /// The agent's first call after a recorded compaction.
    pub after_compaction: bool,
}

impl CallRow {
    /// Share of the context window the call used, in percent.
    pub fn occupancy(&self) -> Option<f64> {
        match (self.context, self.window) {
            (Some(c), Some(w)) if w > 0 => Some(c as f64 * 100.0 / w as f64),
            _ => None,
        }
    }
}

/// Call `index` of `s` as a row; the window comes from `models` (the call's model, else its
/// agent's, else the session's).
pub fn call_row(s: &Session, index: usize, models: &ModelTable) -> CallRow {
    let c = &s.calls[index];
    let agent = s.agents.get(c.agent);
    let model = c
        .model
        .clone()
        .or_else(|| agent.and_then(|a| a.model.clone()))
        .or_else(|| session_model(s).map(str::to_string));
    // The agent's previous call, to see whether a compaction boundary lies between the two.
    let prev_end = s.calls[..index]
        .iter()
        .rev()
        .find(|p| p.agent == c.agent)
        .map(|p| p.context_end);
    let after_compaction = s.compactions.iter().any(|k| {
        k.agent == c.agent
            && k.at_message < c.context_end
            && prev_end.is_none_or(|e| k.at_message >= e)
    });
    CallRow {
        index,
        agent: c.agent,
        agent_name: agent.map_or_else(|| c.agent.to_string(), |a| a.name.clone()),
        window: model
            .as_deref()
            .and_then(|m| models.find(m))
            .and_then(|m| m.context_window),
        model,
        timestamp: c.timestamp,
        usage: c.usage,
        context: c.usage.map(|u| u.context_tokens()),
        after_compaction,
    }
}
