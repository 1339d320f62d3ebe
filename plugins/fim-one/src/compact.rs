//! CompactUtils and ContextGuard's compaction paths over a list of entries: messages of the view
//! (by position) and summaries written during this call. They decide which entries survive; the
//! caller turns the outcome into ops.

use crate::estimate::{text_tokens, MESSAGE_OVERHEAD};
use ctxlab_plugin_api::{fmt_tokens, Event, EventKind, Msg, Role};
use std::collections::HashSet;

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
    /// FIM One's estimate, after this call's masks and truncations.
    pub est: u64,
    /// Sort key: the view order, with a summary just before the messages it precedes.
    pub order: u64,
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

    /// `CompactUtils.smart_truncate` (compact.py): when the estimate is over `max_tokens`, the
    /// pinned messages are kept and their cost deducted; walking the others from the newest,
    /// each is kept while it fits and the walk stops at the first that does not; the result is
    /// `pinned + recent`, from which leading assistant messages are popped. Tool results whose
    /// call is gone stay (FIM One looks at roles only). The replay keeps the survivors in place
    /// (the host does not reorder), so "leading" is taken in FIM One's order: pinned first.
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
        // result = pinned + recent; `while result[0].role == "assistant": result.pop(0)`.
        let order = (0..entries.len())
            .filter(|&i| entries[i].pinned)
            .chain((0..entries.len()).filter(|&i| !entries[i].pinned && keep[i]));
        for i in order.collect::<Vec<_>>() {
            if entries[i].role != Role::Assistant {
                break;
            }
            keep[i] = false;
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

    /// `CompactUtils.llm_compact` (DbMemory) / `ContextGuard._llm_compact_with_hint`: system
    /// and pinned messages stay; `compactable` = the others, in order; at most `keep_recent` of
    /// them → smart_truncate; otherwise (ContextGuard only) the pinned cap, then the plain slice
    /// `compactable[:-keep_recent]` becomes one `[Conversation summary]` system message and
    /// `compactable[-keep_recent:]` stays verbatim, whatever tool pairs the slice cuts; still over
    /// budget → smart_truncate on the result. A failed compaction LLM → smart_truncate.
    pub fn llm_compact<'a>(
        &mut self,
        mut entries: Vec<Entry<'a>>,
        s: &Settings<'_>,
    ) -> Vec<Entry<'a>> {
        let before = s.overhead + sum(&entries);
        if before <= s.budget {
            return entries;
        }
        let mut compactable: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].role != Role::System && !entries[i].pinned)
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
        if s.caller == Caller::Guard {
            self.pinned_cap(&mut entries, &mut compactable, s);
        }
        // Python's `compactable[:-0]` is empty: with keep_recent 0 nothing is summarized.
        let split = if s.keep_recent == 0 {
            0
        } else {
            compactable.len().saturating_sub(s.keep_recent)
        };
        let (old, recent) = compactable.split_at(split);
        if old.is_empty() {
            self.events.push(event(
                EventKind::Note,
                format!("{}.llm_compact", s.caller.code()),
                "keep_recent 0: compactable[:-0] is empty, the compaction LLM is sent no history \
                 (its summary of nothing is not modelled); smart_truncate"
                    .to_string(),
                before,
                before,
            ));
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
        let summary = Entry {
            src: Src::Summary(k_sum),
            msg: None,
            role: Role::System,
            pinned: false,
            est: MESSAGE_OVERHEAD + text_tokens(SUMMARY_PREFIX) + 1 + tokens,
            order: recent.iter().map(|&i| entries[i].order).min().unwrap_or(0) - 1,
        };
        let old_set: HashSet<usize> = old.iter().copied().collect();
        let mut compacted = Vec::with_capacity(entries.len() - old.len() + 1);
        for (i, e) in entries.into_iter().enumerate() {
            if old_set.contains(&i) {
                self.remove(&e, Removal::Absorbed(k_sum));
            } else {
                compacted.push(e);
            }
        }
        compacted.push(summary);
        compacted.sort_by_key(|e| e.order);
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

    /// The pinned cap of `_llm_compact_with_hint`: pinned (non-system) messages over half the
    /// budget, and more than one → all but the **last** pinned message are unpinned and put in
    /// front of the compactable pool (`compactable = overflow + compactable`), so the slice
    /// summarizes them first.
    fn pinned_cap(
        &mut self,
        entries: &mut [Entry<'_>],
        compactable: &mut Vec<usize>,
        s: &Settings<'_>,
    ) {
        let pinned: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].pinned && entries[i].role != Role::System)
            .collect();
        let pinned_tokens: u64 = pinned.iter().map(|&i| entries[i].est).sum();
        if pinned.len() <= 1 || pinned_tokens * 2 <= s.budget {
            return;
        }
        let overflow = &pinned[..pinned.len() - 1];
        for &i in overflow {
            entries[i].pinned = false;
            if let Src::View(p) = entries[i].src {
                self.unpinned.push(p);
            }
        }
        let released: u64 = overflow.iter().map(|&i| entries[i].est).sum();
        // FIM One's log line computes `pinned_tokens / budget * 0.5 * 100` (half the share).
        self.events.push(event(
            EventKind::Warn,
            "context_guard.pinned_cap".to_string(),
            format!(
                "ContextGuard: pinned messages consume {} tokens ({:.0}% of budget {}) — \
                 unpinning oldest inject messages: {} released, the last pinned message kept",
                pinned_tokens,
                pinned_tokens as f64 / s.budget.max(1) as f64 * 0.5 * 100.0,
                s.budget,
                overflow.len()
            ),
            pinned_tokens,
            pinned_tokens - released,
        ));
        let mut all = overflow.to_vec();
        all.extend_from_slice(compactable);
        *compactable = all;
    }

    /// DbMemory's summary is a system message, and the ReAct loop appends only the non-system
    /// messages of the loaded history (`react.py`, `if msg.role != "system"`): the summaries this
    /// load wrote never reach the agent; the messages they replaced are simply gone.
    pub fn drop_new_summaries<'a>(&mut self, entries: Vec<Entry<'a>>) -> Vec<Entry<'a>> {
        entries
            .into_iter()
            .filter(|e| match e.src {
                Src::Summary(k) => {
                    self.summaries[k].alive = false;
                    false
                }
                Src::View(_) => true,
            })
            .collect()
    }
}
