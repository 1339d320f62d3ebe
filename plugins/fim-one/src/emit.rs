//! Turns a call's plan (per-position edits and removals) into ops the host accepts: ranges in
//! order, pinned messages unpinned before they are touched. FIM One's compaction keeps tool
//! results whose call it removed (`CompactUtils.smart_truncate` and the plain
//! `compactable[:-keep_recent]` slice of `llm_compact` look at roles, not at tool pairs), so the
//! removals are preceded by an `AllowSplit` op (ABI 1.2) and the host counts the pairs they split.

use crate::compact::{Removal, SummaryPlan, SUMMARY_PREFIX};
use crate::estimate::text_tokens;
use ctxlab_plugin_api::{Call, Decision, OpKind, Role, Scope};
use std::collections::BTreeMap;

/// What happens to one message of the view at this call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edit {
    /// micro_compact clears it.
    pub mask: bool,
    /// ContextGuard cuts it to max_message_chars.
    pub truncate: bool,
    /// Some(true): pin; Some(false): unpin.
    pub pin: Option<bool>,
    pub removal: Option<Removal>,
    /// A system message smart_truncate dropped: left out of every call until the next request.
    pub hide: bool,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub edits: BTreeMap<usize, Edit>,
}

impl Plan {
    pub fn at(&mut self, pos: usize) -> &mut Edit {
        self.edits.entry(pos).or_default()
    }
    pub fn removes_any(&self) -> bool {
        self.edits.values().any(|e| e.removal.is_some())
    }
}

pub struct Texts<'t> {
    pub mask: &'t str,
    pub truncate_head: u64,
    pub truncate_marker: &'t str,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Drop,
    Summarize(usize),
}

/// Maximal runs of removed positions, per kind.
fn runs(plan: &Plan, summaries: &[SummaryPlan]) -> Vec<(usize, usize, Kind)> {
    let mut out: Vec<(usize, usize, Kind)> = Vec::new();
    for (&p, e) in &plan.edits {
        let kind = match e.removal {
            None => continue,
            Some(Removal::Drop) => Kind::Drop,
            Some(Removal::Absorbed(k)) if summaries[k].alive => Kind::Summarize(k),
            Some(Removal::Absorbed(_)) => Kind::Drop,
        };
        match out.last_mut() {
            Some((_, end, k)) if *end == p && *k == kind => *end = p + 1,
            _ => out.push((p, p + 1, kind)),
        }
    }
    out
}

/// Writes the plan as ops; `hidden` (sorted) are left out of this call only. Returns the
/// persistent removal ranges: (start, end, 1 when a summary takes their place).
pub fn emit(
    call: &Call<'_>,
    plan: &mut Plan,
    summaries: &[SummaryPlan],
    hidden: &[usize],
    texts: &Texts<'_>,
    out: &mut Decision,
) -> Result<Vec<(usize, usize, usize)>, String> {
    let removals = if plan.removes_any() {
        removal_ranges(call, plan, summaries)
    } else {
        Vec::new()
    };
    let persistent: Vec<(usize, usize, usize)> = removals
        .iter()
        .map(|r| (r.0, r.1, matches!(r.2, OpKind::Summarize { .. }) as usize))
        .collect();
    let mut ops = 0usize;
    if let (Some(first), Some(last)) = (removals.first(), removals.last()) {
        out.op(OpKind::AllowSplit, Scope::Persistent, first.0..last.1);
        ops += 1;
    }
    let mut ranges: Vec<(usize, usize, OpKind, Scope)> = removals
        .into_iter()
        .map(|(a, b, k)| (a, b, k, Scope::Persistent))
        .collect();
    for &p in hidden {
        match ranges
            .iter_mut()
            .find(|r| r.3 == Scope::ThisCall && r.1 == p)
        {
            Some(r) => r.1 = p + 1,
            None => ranges.push((p, p + 1, OpKind::Drop, Scope::ThisCall)),
        }
    }
    ranges.sort_by_key(|r| r.0);
    let mut ri = 0usize;
    let positions: Vec<usize> = plan
        .edits
        .iter()
        .filter(|(_, e)| e.removal.is_none() && !e.hide)
        .map(|(&p, _)| p)
        .collect();
    let mut pi = 0usize;
    while ri < ranges.len() || pi < positions.len() {
        let take_range = match (ranges.get(ri), positions.get(pi)) {
            (Some(r), Some(&p)) => r.0 < p,
            (Some(_), None) => true,
            _ => false,
        };
        if take_range {
            let (a, b, kind, scope) = ranges[ri].clone();
            ri += 1;
            if (a..b).any(|p| call.msg(p).is_pinned()) {
                out.op(OpKind::Unpin, Scope::Persistent, a..b);
                ops += 1;
            }
            out.op(kind, scope, a..b);
            ops += 1;
            continue;
        }
        let p = positions[pi];
        pi += 1;
        let e = &plan.edits[&p];
        let view_pinned = call.msg(p).is_pinned();
        let want_pinned = e.pin.unwrap_or(view_pinned);
        let touch = e.mask || e.truncate;
        if view_pinned && (touch || !want_pinned) {
            out.op(OpKind::Unpin, Scope::Persistent, p..p + 1);
            ops += 1;
        }
        if e.mask {
            out.op(
                OpKind::Mask {
                    placeholder: texts.mask.to_string(),
                },
                Scope::Persistent,
                p..p + 1,
            );
            ops += 1;
        } else if e.truncate {
            out.op(
                OpKind::Truncate {
                    head: texts.truncate_head,
                    tail: 0,
                    marker: texts.truncate_marker.to_string(),
                },
                Scope::Persistent,
                p..p + 1,
            );
            ops += 1;
        }
        if want_pinned && (!view_pinned || touch) {
            out.op(OpKind::Pin, Scope::Persistent, p..p + 1);
            ops += 1;
        }
    }
    if ops > 256 {
        return Err(format!(
            "fim-one: {ops} ops at call {} exceed the host's limit of 256",
            call.call_index()
        ));
    }
    Ok(persistent)
}

/// The removal ranges as ops, with the summary of each compaction placed on one of its ranges.
fn removal_ranges(
    call: &Call<'_>,
    plan: &Plan,
    summaries: &[SummaryPlan],
) -> Vec<(usize, usize, OpKind)> {
    let mut rs = runs(plan, summaries);
    // One summary message per compaction: it goes on its last range (next to the recent
    // messages, where FIM One puts it) when that range is large enough to hold it, else on its
    // largest; the other ranges it absorbed are dropped, their tokens counted as its input.
    let mut placed: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (k, s) in summaries.iter().enumerate() {
        let mine: Vec<(usize, usize)> = rs
            .iter()
            .filter(|r| r.2 == Kind::Summarize(k))
            .map(|r| (r.0, r.1))
            .collect();
        let room = |r: &(usize, usize)| call.tokens_in(r.0..r.1);
        let need = s.tokens + text_tokens(SUMMARY_PREFIX) + 8;
        let chosen = match mine.last() {
            Some(last) if room(last) >= need => Some(*last),
            _ => mine.iter().copied().max_by_key(room),
        };
        if let Some(c) = chosen {
            placed.insert(k, c);
        }
    }
    for r in rs.iter_mut() {
        if let Kind::Summarize(k) = r.2 {
            if placed.get(&k) != Some(&(r.0, r.1)) {
                r.2 = Kind::Drop;
            }
        }
    }
    // Adjacent drops become one range.
    let mut merged: Vec<(usize, usize, Kind)> = Vec::new();
    for r in rs {
        match merged.last_mut() {
            Some(m) if m.1 == r.0 && m.2 == Kind::Drop && r.2 == Kind::Drop => m.1 = r.1,
            _ => merged.push(r),
        }
    }
    let mut ranges = Vec::with_capacity(merged.len());
    for (a, b, kind) in merged {
        let op = match kind {
            Kind::Drop => OpKind::Drop,
            Kind::Summarize(k) => {
                let input: u64 = plan
                    .edits
                    .iter()
                    .filter(|(_, e)| e.removal == Some(Removal::Absorbed(k)))
                    .map(|(&p, _)| call.msg(p).tokens())
                    .sum();
                let room = call
                    .tokens_in(a..b)
                    .saturating_sub(text_tokens(SUMMARY_PREFIX) + 8);
                let max_tokens = summaries[k].tokens.min(room);
                if max_tokens == 0 {
                    OpKind::Drop
                } else {
                    OpKind::Summarize {
                        role: Role::System,
                        max_tokens,
                        summarizer_input_tokens: input,
                        text: SUMMARY_PREFIX.to_string(),
                    }
                }
            }
        };
        ranges.push((a, b, op));
    }
    ranges
}
