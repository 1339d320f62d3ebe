//! CompactUtils and ContextGuard's compaction paths over a list of entries: messages of the view
//! (by position) and summaries written during this call. They decide which entries survive; the
//! caller turns the outcome into ops.

use crate::estimate::{text_tokens, MESSAGE_OVERHEAD};
use ctxlab_plugin_api::{fmt_tokens, Event, EventKind, Msg, Role};
use std::collections::{HashMap, HashSet};

/// The prefix FIM One gives its summary message: `[Conversation summary]: {summary}`.
pub const SUMMARY_PREFIX: &str = "[Conversation summary]:";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// A message of the view, by position.
    View(usize),
    /// A summary written during this call, by index into `Outcome::summaries`.
    Summary(usize),
}

#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub src: Src,
    pub msg: Option<Msg<'a>>,
    pub role: Role,
    pub pinned: bool,
    /// The current user query: the one pinned message the pinned cap never releases.
    pub query: bool,
    /// FIM One's estimate, after this call's masks and truncations.
    pub est: u64,
    /// Sort key: the view order, with a summary just before the messages it precedes.
    pub order: u64,
}

impl Entry<'_> {
    fn is_view_summary(&self) -> bool {
        matches!(self.src, Src::View(_)) && self.msg.is_some_and(|m| m.is_summary())
    }
    fn call_ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.msg
            .into_iter()
            .flat_map(|m| m.tools())
            .filter(|t| !t.is_result())
            .map(|t| t.id())
    }
    fn result_ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.msg
            .into_iter()
            .flat_map(|m| m.tools())
            .filter(|t| t.is_result())
            .map(|t| t.id())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Gone without a summary.
    Drop,
    /// Folded into summary `k`.
    Absorbed(usize),
}

#[derive(Debug, Clone)]
pub struct SummaryPlan {
    /// Simulated size of the summary text (capped by summary_max_tokens).
    pub tokens: u64,
    /// False when a later step (smart_truncate) dropped the summary again.
    pub alive: bool,
}

/// Which compaction runs: ContextGuard's per-iteration one, or DbMemory's at load time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Guard,
    DbMemory,
}

impl Caller {
    fn code(self) -> &'static str {
        match self {
            Caller::Guard => "context_guard",
            Caller::DbMemory => "db_memory",
        }
    }
}

/// What the compaction steps of one call decided.
#[derive(Default)]
pub struct Outcome {
    pub removed: Vec<(Src, Removal)>,
    pub summaries: Vec<SummaryPlan>,
    /// View positions the pinned cap released.
    pub unpinned: Vec<usize>,
    pub events: Vec<Event>,
}

pub struct Settings<'s> {
    pub budget: u64,
    /// Tokens outside the entries that count against the budget (ctxlab's calibrated system
    /// prompt and tool schemas; FIM One has its system prompt among the messages).
    pub overhead: u64,
    pub keep_recent: usize,
    pub summary_max: u64,
    pub hint: &'s str,
    /// The simulated compaction LLM fails at this call.
    pub fails: bool,
    pub caller: Caller,
}

fn sum(entries: &[Entry<'_>]) -> u64 {
    entries.iter().map(|e| e.est).sum()
}

fn event(kind: EventKind, code: String, message: String, before: u64, after: u64) -> Event {
    Event {
        kind,
        code,
        message,
        tokens_before: before,
        tokens_after: after,
    }
}

impl Outcome {
    fn remove(&mut self, e: &Entry<'_>, how: Removal) {
        if let Src::Summary(k) = e.src {
            // A summary dropped later: the messages it absorbed are simply gone.
            self.summaries[k].alive = false;
        }
        self.removed.push((e.src, how));
    }

    /// `CompactUtils.smart_truncate`: pinned messages stay; walking backwards, the newest
    /// non-pinned messages are kept while they fit; the kept list never starts with an assistant
    /// message. Kept in place (FIM One moves pinned messages to the front; a replay cannot
    /// reorder), so "starts with" is the first kept message in order. Tool results whose call
    /// was dropped go too: the host never sends a result without its call.
    pub fn smart_truncate<'a>(
        &mut self,
        entries: Vec<Entry<'a>>,
        s: &Settings<'_>,
    ) -> Vec<Entry<'a>> {
        let total = s.overhead + sum(&entries);
        if total <= s.budget {
            return entries;
        }
        let pinned: u64 = entries.iter().filter(|e| e.pinned).map(|e| e.est).sum();
        let mut avail = s.budget as i64 - s.overhead as i64 - pinned as i64;
        let mut keep: Vec<bool> = entries.iter().map(|e| e.pinned).collect();
        for (i, e) in entries.iter().enumerate().rev() {
            if e.pinned {
                continue;
            }
            if avail - (e.est as i64) < 0 {
                break;
            }
            keep[i] = true;
            avail -= e.est as i64;
        }
        loop {
            let mut changed = false;
            let dropped_calls: HashSet<&str> = entries
                .iter()
                .zip(&keep)
                .filter(|(_, k)| !**k)
                .flat_map(|(e, _)| e.call_ids())
                .collect();
            if !dropped_calls.is_empty() {
                for (i, e) in entries.iter().enumerate() {
                    if keep[i] && !e.pinned && e.result_ids().any(|id| dropped_calls.contains(id)) {
                        keep[i] = false;
                        changed = true;
                    }
                }
            }
            if let Some(i) = keep.iter().position(|k| *k) {
                if !entries[i].pinned && entries[i].role == Role::Assistant {
                    keep[i] = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut kept = Vec::with_capacity(entries.len());
        let mut dropped = 0usize;
        for (e, k) in entries.into_iter().zip(keep) {
            if k {
                kept.push(e);
            } else {
                dropped += 1;
                self.remove(&e, Removal::Drop);
            }
        }
        let after = s.overhead + sum(&kept);
        if dropped == 0 {
            return kept;
        }
        self.events.push(event(
            EventKind::Truncation,
            format!("{}.smart_truncate", s.caller.code()),
            format!(
                "smart_truncate to budget {}: dropped {} messages ({} → {} tokens), pinned kept",
                fmt_tokens(s.budget),
                dropped,
                fmt_tokens(total),
                fmt_tokens(after)
            ),
            total,
            after,
        ));
        kept
    }

    /// `llm_compact` (DbMemory) / `_llm_compact_with_hint` (ContextGuard): system and pinned
    /// messages stay, the `keep_recent` newest compactable ones stay verbatim, the rest becomes
    /// one `[Conversation summary]` system message; still over budget → smart_truncate.
    pub fn llm_compact<'a>(
        &mut self,
        mut entries: Vec<Entry<'a>>,
        s: &Settings<'_>,
    ) -> Vec<Entry<'a>> {
        let before = s.overhead + sum(&entries);
        if before <= s.budget {
            return entries;
        }
        // DbMemory's history holds no system messages of its own: earlier summaries stand for the
        // user and assistant messages they replaced, which FIM One would reload and summarize.
        let is_system = |e: &Entry<'_>| {
            e.role == Role::System && !(s.caller == Caller::DbMemory && e.is_view_summary())
        };
        let compactable: Vec<usize> = (0..entries.len())
            .filter(|&i| !is_system(&entries[i]) && !entries[i].pinned)
            .collect();
        if compactable.len() <= s.keep_recent {
            self.events.push(event(
                EventKind::Note,
                format!("{}.llm_compact", s.caller.code()),
                format!(
                    "{} compactable messages ≤ keep_recent {}: not enough to split, smart_truncate",
                    compactable.len(),
                    s.keep_recent
                ),
                before,
                before,
            ));
            return self.smart_truncate(entries, s);
        }
        // The newest keep_recent stay; the split moves back so that no kept tool result loses
        // its call to the summary.
        let mut k = compactable.len() - s.keep_recent;
        let call_at: HashMap<&str, usize> = compactable
            .iter()
            .enumerate()
            .flat_map(|(ci, &i)| entries[i].call_ids().map(move |id| (id, ci)))
            .collect();
        loop {
            let earliest = compactable[k..]
                .iter()
                .flat_map(|&i| entries[i].result_ids())
                .filter_map(|id| call_at.get(id).copied())
                .min();
            match earliest {
                Some(c) if c < k => k = c,
                _ => break,
            }
        }
        let mut old: Vec<usize> = compactable[..k].to_vec();
        if s.caller == Caller::Guard {
            self.pinned_cap(&mut entries, &mut old, s);
        }
        if old.is_empty() {
            return self.smart_truncate(entries, s);
        }
        if s.fails {
            // FIM One catches the exception, logs a warning and truncates; the agent never knows.
            self.events.push(event(
                EventKind::Failure,
                format!("{}.llm_compact_failed", s.caller.code()),
                "LLM compact failed, falling back to truncation (simulated failure of the \
                 compaction LLM at this call; FIM One continues silently)"
                    .to_string(),
                before,
                before,
            ));
            return self.smart_truncate(entries, s);
        }
        let old_est: u64 = old.iter().map(|&i| entries[i].est).sum();
        let tokens = s.summary_max.min(old_est).max(1);
        let k_sum = self.summaries.len();
        self.summaries.push(SummaryPlan {
            tokens,
            alive: true,
        });
        let first_recent = compactable[k.min(compactable.len() - 1)];
        let summary = Entry {
            src: Src::Summary(k_sum),
            msg: None,
            role: Role::System,
            pinned: false,
            query: false,
            est: MESSAGE_OVERHEAD + text_tokens(SUMMARY_PREFIX) + 1 + tokens,
            order: entries[first_recent].order - 1,
        };
        let old_set: HashSet<usize> = old.iter().copied().collect();
        let mut compacted = Vec::with_capacity(entries.len() - old.len() + 1);
        for (i, e) in entries.into_iter().enumerate() {
            if old_set.contains(&i) {
                self.remove(&e, Removal::Absorbed(k_sum));
            } else {
                if i == first_recent {
                    compacted.push(summary);
                }
                compacted.push(e);
            }
        }
        let after = s.overhead + sum(&compacted);
        let what = match s.caller {
            Caller::Guard => format!(
                "ContextGuard: {} tokens exceeds budget {} (hint={}), compacting: {} messages → one \
                 [Conversation summary], {} recent kept verbatim",
                fmt_tokens(before),
                fmt_tokens(s.budget),
                s.hint,
                old_set.len(),
                s.keep_recent
            ),
            Caller::DbMemory => format!(
                "DbMemory llm_compact: {} history messages → one [Conversation summary], {} recent \
                 kept verbatim",
                old_set.len(),
                s.keep_recent
            ),
        };
        self.events.push(event(
            EventKind::Compaction,
            format!("{}.llm_compact", s.caller.code()),
            what,
            before,
            after,
        ));
        if after > s.budget {
            return self.smart_truncate(compacted, s);
        }
        compacted
    }

    /// Pinned messages over half the budget: all but the current query are released into the
    /// oldest part of the compactable pool (FIM One prepends them there, so they are summarized).
    fn pinned_cap(&mut self, entries: &mut [Entry<'_>], old: &mut Vec<usize>, s: &Settings<'_>) {
        let pinned: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].pinned && entries[i].role != Role::System)
            .collect();
        let pinned_tokens: u64 = pinned.iter().map(|&i| entries[i].est).sum();
        if pinned.len() <= 1 || pinned_tokens * 2 <= s.budget {
            return;
        }
        // FIM One keeps the last pinned message, which it calls the current query; in a replay
        // the query is flagged, and injected messages after it are the ones released.
        let keep = pinned
            .iter()
            .copied()
            .find(|&i| entries[i].query)
            .or(pinned.last().copied());
        let mut released = Vec::new();
        for &i in &pinned {
            if Some(i) != keep {
                entries[i].pinned = false;
                if let Src::View(p) = entries[i].src {
                    self.unpinned.push(p);
                }
                released.push(i);
            }
        }
        self.events.push(event(
            EventKind::Warn,
            "context_guard.pinned_cap".to_string(),
            format!(
                "pinned messages consume {} tokens ({}% of budget {}) — unpinning {} oldest \
                 inject messages, keeping the current query",
                fmt_tokens(pinned_tokens),
                pinned_tokens * 100 / s.budget.max(1),
                fmt_tokens(s.budget),
                released.len()
            ),
            pinned_tokens,
            pinned_tokens - released.iter().map(|&i| entries[i].est).sum::<u64>(),
        ));
        let mut all: Vec<usize> = released.into_iter().chain(old.iter().copied()).collect();
        all.sort_unstable();
        *old = all;
    }
}
