//! `compact_messages` (src/context/compact_messages.rs): three levels tried in order, stopping at the
//! first whose result fits `budget = max_context_tokens − system_prompt_tokens`. Each level works on
//! the previous level's result; here that result is a list of items, each standing for a range of
//! positions of the view, so the final list turns into ops over the view as the host gave it.

use crate::estimate::user_text_tokens;
use crate::mirror::{Mirror, L1};
use ctxlab_plugin_api::pairs::Cuts;
use ctxlab_plugin_api::{Call, Role};

/// The host refuses decisions of more than 256 ops; a few are kept for drops around summaries.
const MAX_TRUNCATIONS: usize = 240;
/// Ops one decision may hold (the host's limit), less a margin for the drops `emit_ops` adds
/// around the items (the trailing range and gaps before truncations).
const MAX_EDITS: usize = 248;

#[derive(Debug, Clone, PartialEq)]
pub struct Trunc {
    pub head: u64,
    pub tail: u64,
    pub marker: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// The message at `start`, possibly cut to head + tail lines by level 1.
    Keep(Option<Trunc>),
    /// A user message phi-core writes in place of the range (`[Summary] …`, `[Context compacted…]`).
    Replace(String),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub start: usize,
    pub end: usize,
    pub est: u64,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    TruncateToolOutputs,
    SummarizeOldTurns,
    DropMiddle,
}

impl Level {
    pub fn code(self) -> &'static str {
        match self {
            Level::TruncateToolOutputs => "level1_truncate_tool_outputs",
            Level::SummarizeOldTurns => "level2_summarize_old_turns",
            Level::DropMiddle => "level3_drop_middle",
        }
    }
}

/// One level that ran: its estimate before and after, and what it did in words.
#[derive(Debug, Clone)]
pub struct Step {
    pub level: Level,
    pub before: u64,
    pub after: u64,
    pub changed: bool,
    pub what: String,
}

pub struct Settings {
    pub budget: u64,
    pub keep_recent: usize,
    pub keep_first: usize,
    pub tool_output_max_lines: usize,
}

pub struct Outcome {
    pub items: Vec<Item>,
    pub steps: Vec<Step>,
    pub after: u64,
    /// Level-1 truncations left for a later call because of the host's op cap.
    pub deferred_truncations: usize,
    /// Old turns level 2 left verbatim for a later call because of the host's op cap.
    pub deferred_summaries: usize,
}

fn total(items: &[Item]) -> u64 {
    items.iter().map(|i| i.est).sum()
}

/// `truncate_text_head_tail`: the first N/2 and last N − N/2 lines with a marker naming how many
/// lines were left out; `None` when the text has N lines or fewer.
pub fn head_tail(text: &str, max_lines: usize) -> Option<(Trunc, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return None;
    }
    let head = max_lines / 2;
    let tail = max_lines - head;
    let omitted = lines.len() - head - tail;
    let joined_chars = |ls: &[&str]| -> (u64, usize) {
        let chars: usize = ls.iter().map(|l| l.chars().count()).sum::<usize>();
        let bytes: usize = ls.iter().map(|l| l.len()).sum::<usize>();
        let seps = ls.len().saturating_sub(1);
        ((chars + seps) as u64, bytes + seps)
    };
    let (head_chars, head_bytes) = joined_chars(&lines[..head]);
    let (tail_chars, tail_bytes) = joined_chars(&lines[lines.len() - tail..]);
    let marker = format!("\n\n[... {omitted} lines truncated ...]\n\n");
    let bytes = head_bytes + marker.len() + tail_bytes;
    Some((
        Trunc {
            head: head_chars,
            tail: tail_chars,
            marker,
        },
        bytes,
    ))
}

/// Runs the tiers on the call's view. `before` is phi-core's estimate of the messages; `mirror`
/// holds each message's estimate and level-1 cut, in step with the view.
pub fn compact(call: &Call<'_>, s: &Settings, before: u64, mirror: &mut Mirror) -> Outcome {
    let mut steps = Vec::new();
    let mut deferred = 0;

    // Level 1: every tool output over the line limit keeps its head and tail.
    let mut items: Vec<Item> = mirror
        .slots
        .iter()
        .enumerate()
        .map(|(i, slot)| Item {
            start: i,
            end: i + 1,
            est: slot.est,
            kind: Kind::Keep(None),
        })
        .collect();
    let mut cut: Vec<(usize, Trunc, u64)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !mirror.slots[i].tool_result {
            continue;
        }
        if let L1::Cut { trunc, est } = mirror.l1(call, i, s.tool_output_max_lines) {
            if *est < item.est {
                cut.push((i, trunc.clone(), *est));
            }
        }
    }
    if cut.len() > MAX_TRUNCATIONS {
        // Keep the truncations that save the most; the rest are still long at the next call.
        cut.sort_by_key(|(i, _, est)| std::cmp::Reverse(items[*i].est - est));
        deferred = cut.len() - MAX_TRUNCATIONS;
        cut.truncate(MAX_TRUNCATIONS);
    }
    let l1_count = cut.len();
    for (i, t, est) in cut {
        items[i].est = est;
        items[i].kind = Kind::Keep(Some(t));
    }
    let after1 = total(&items);
    steps.push(Step {
        level: Level::TruncateToolOutputs,
        before,
        after: after1,
        changed: l1_count > 0,
        what: format!(
            "{l1_count} tool output(s) over {} lines cut to their first {} and last {} lines",
            s.tool_output_max_lines,
            s.tool_output_max_lines / 2,
            s.tool_output_max_lines - s.tool_output_max_lines / 2
        ),
    });
    if after1 <= s.budget {
        return Outcome {
            items,
            steps,
            after: after1,
            deferred_truncations: deferred,
            deferred_summaries: 0,
        };
    }

    let cuts = Cuts::of(call);

    // Level 2: before the last keep_recent messages, each assistant turn becomes a one-line user
    // summary and its tool results go; user messages stay (they carry the intent).
    let len = call.len();
    let mut l2 = 0;
    // Each summary and each gap (a dropped orphan) is one op beside level 1's truncations; the
    // turns past the host's limit stay verbatim until a later call (phi-core fires again while the
    // estimate is over the budget).
    let mut edits = l1_count;
    let mut deferred_summaries = 0;
    if len > s.keep_recent {
        // The boundary moves back to a cut that does not split a tool pair (keeps a little more).
        let boundary = cuts.at_or_before(len - s.keep_recent);
        let mut out: Vec<Item> = Vec::with_capacity(len);
        let mut i = 0;
        while i < boundary {
            let m = call.msg(i);
            if edits >= MAX_EDITS {
                deferred_summaries = (i..boundary)
                    .filter(|&k| call.msg(k).role() == Role::Assistant)
                    .count();
                out.extend(items[i..boundary].iter().cloned());
                break;
            }
            if m.role() == Role::Assistant {
                let mut j = i + 1;
                while j < boundary && mirror.slots[j].tool_result {
                    j += 1;
                }
                let j = cuts.at_or_after(j).min(boundary);
                let calls = m.tools().filter(|t| !t.is_result()).count();
                let summary = if calls > 0 {
                    format!("[Summary] [Assistant used {calls} tool(s)]")
                } else if m.text().len() <= 200 && !m.text().is_empty() {
                    format!("[Summary] {}", m.text())
                } else {
                    "[Summary] [Assistant response]".to_string()
                };
                let replaced = call.tokens_in(i..j);
                let est = user_text_tokens(&summary);
                // The host refuses a summary larger than what it replaces; a short reply whose
                // summary is its own text plus "[Summary] " stays as it is.
                if replaced > est + 8 {
                    out.push(Item {
                        start: i,
                        end: j,
                        est,
                        kind: Kind::Replace(summary),
                    });
                    l2 += 1;
                    edits += 1;
                } else {
                    out.extend(items[i..j].iter().cloned());
                }
                i = j;
            } else if mirror.slots[i].tool_result {
                // An orphaned result in the old part is dropped (a gap in the item list).
                i = cuts.at_or_after(i + 1).min(boundary).max(i + 1);
                edits += 1;
            } else {
                out.push(items[i].clone());
                i += 1;
            }
        }
        out.extend(items[boundary..].iter().cloned());
        items = out;
    }
    let after2 = total(&items);
    steps.push(Step {
        level: Level::SummarizeOldTurns,
        before: after1,
        after: after2,
        changed: after2 != after1,
        what: format!(
            "{l2} assistant turn(s) older than the last {} messages became one-line summaries",
            s.keep_recent
        ),
    });
    if after2 <= s.budget || deferred_summaries > 0 {
        return Outcome {
            items,
            steps,
            after: after2,
            deferred_truncations: deferred,
            deferred_summaries,
        };
    }

    // Level 3: keep keep_first and keep_recent, drop the middle behind a marker.
    let n = items.len();
    let safe = |it: &[Item], k: usize| k == it.len() || cuts.is_safe(it[k].start);
    let mut first_end = s.keep_first.min(n);
    while first_end > 0 && !safe(&items, first_end) {
        first_end -= 1;
    }
    let mut recent_start = n.saturating_sub(s.keep_recent);
    while recent_start > first_end && !safe(&items, recent_start) {
        recent_start -= 1;
    }
    let what;
    if first_end >= recent_start {
        let (kept, removed) = keep_within_budget(&mut items, s.budget, &cuts, len);
        what =
            format!("too few messages to split: kept the last {kept} that fit, {removed} removed");
    } else {
        let removed = recent_start - first_end;
        let text = format!("[Context compacted: {removed} messages removed to fit context window]");
        let marker = Item {
            start: items[first_end].start,
            end: items[recent_start].start,
            est: user_text_tokens(&text),
            kind: Kind::Replace(text),
        };
        let mut out: Vec<Item> = items[..first_end].to_vec();
        out.push(marker);
        out.extend(items[recent_start..].iter().cloned());
        items = out;
        if total(&items) > s.budget {
            let (kept, more) = keep_within_budget(&mut items, s.budget, &cuts, len);
            what = format!(
                "{removed} middle messages removed; still over budget, kept the last {kept} that fit ({more} more removed)"
            );
        } else {
            what = format!(
                "kept the first {first_end} and last {} messages, {removed} removed",
                items.len() - first_end - 1
            );
        }
    }
    let after3 = total(&items);
    steps.push(Step {
        level: Level::DropMiddle,
        before: after2,
        after: after3,
        changed: true,
        what,
    });
    Outcome {
        items,
        steps,
        after: after3,
        deferred_truncations: deferred,
        deferred_summaries: 0,
    }
}

/// `keep_within_budget_with_counter`: keep the newest items that fit, behind a marker.
/// Returns (items kept, items removed).
fn keep_within_budget(
    items: &mut Vec<Item>,
    budget: u64,
    cuts: &Cuts,
    len: usize,
) -> (usize, usize) {
    let mut remaining = budget;
    let mut k = items.len();
    while k > 0 && items[k - 1].est <= remaining {
        remaining -= items[k - 1].est;
        k -= 1;
    }
    // Cut forward to a safe point: dropping one more message beats an orphaned tool result.
    while k < items.len() && !cuts.is_safe(items[k].start) {
        k += 1;
    }
    if k == 0 {
        return (items.len(), 0);
    }
    let text = format!("[Context compacted: {k} messages removed]");
    let end = items.get(k).map(|i| i.start).unwrap_or(len);
    let marker = Item {
        start: 0,
        end,
        est: user_text_tokens(&text),
        kind: Kind::Replace(text),
    };
    let kept: Vec<Item> = items.drain(k..).collect();
    items.clear();
    items.push(marker);
    let n = kept.len();
    items.extend(kept);
    (n, k)
}
