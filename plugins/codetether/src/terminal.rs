//! Terminal truncation (codetether-agent 4.7.4 `src/session/helper/compression/terminal.rs`
//! `terminal_truncate_messages`, `shrink.rs`, `shrink_caps.rs`, `shrink_part.rs`,
//! `enforce_terminal*.rs`): split at the active tail of the last TRUNCATE_KEEP_LAST messages, put
//! a `[CONTEXT TRUNCATED]` marker in front, shrink every retained content part over each byte cap
//! in turn to a head and tail, and stop. Nothing retained is ever evicted: a request still over
//! the budget goes out as it is, with `CompactionFailed`.

use crate::derive::{List, View};
use crate::estimate::{estimate_tokens, Span};
use crate::history::{is_tool_result, Kind, Parts, TextKind};
use crate::Settings;
use ctxlab_plugin_api::*;

/// terminal_marker.rs `truncation_marker`.
const DROPPED_PREFIX: &str = "[CONTEXT TRUNCATED]\nOlder conversation was dropped to keep the request under the model's context window. Some retained tool output may also be shortened with head/tail snippets.";
const SHORTENED_ONLY: &str = "[CONTEXT TRUNCATED]\nRecent tool output was too large for the model's context window and was shortened with head/tail snippets.";
/// shrink_caps.rs: the newest user message keeps at least this many bytes until the emergency cap.
const LATEST_USER_FLOOR: u64 = 16_384;

/// One content part of a retained message, as `shrink_content_part` sees it.
struct Part {
    /// Bytes of the payload the caps apply to (text, result content, call arguments).
    bytes: u64,
    /// Tokens of the rest of the part as estimated (a call's id and name).
    fixed: u64,
    cpt: f64,
    label: &'static str,
    is_text: bool,
    /// Payload bytes after shrinking, when shrunk.
    shrunk: Option<u64>,
}

impl Part {
    fn tokens(&self, bytes: u64) -> u64 {
        if bytes == 0 {
            return self.fixed;
        }
        self.fixed + (bytes as f64 / self.cpt).ceil() as u64
    }
    /// `shrink_string_payload` + `terminal_head_tail`: the new length when over `cap`.
    fn shrink(&mut self, cap: u64) -> bool {
        let current = self.shrunk.unwrap_or(self.bytes);
        if current <= cap {
            return false;
        }
        let marker = marker(self.label, current).len() as u64;
        self.shrunk = Some(if cap <= marker + 32 { marker - 4 } else { cap });
        true
    }
}

fn marker(label: &str, original: u64) -> String {
    format!("\n\n[terminal context fallback truncated {label}; original_bytes={original}]\n\n")
}

struct Item {
    pos: usize,
    parts: Vec<Part>,
    latest_user: bool,
}

impl Item {
    fn saved(&self) -> u64 {
        self.parts
            .iter()
            .filter_map(|p| {
                p.shrunk
                    .map(|b| p.tokens(p.bytes).saturating_sub(p.tokens(b)))
            })
            .sum()
    }
}

/// The parts of the message at `pos` that terminal truncation may shrink; `pruned`: its
/// thinking is already gone (thinking prune, messages older than the last 4).
fn parts_of(call: &Call<'_>, pos: usize, pruned: bool) -> Vec<Part> {
    let p = Parts::of(call, pos);
    let mut out = Vec::new();
    for &(span, kind) in &p.texts {
        if span.bytes == 0 || (pruned && kind == TextKind::Thinking) {
            continue;
        }
        out.push(Part {
            bytes: span.bytes,
            fixed: 0,
            cpt: span.chars_per_token(),
            label: match kind {
                TextKind::Text => "text",
                TextKind::Thinking => "thinking",
            },
            is_text: kind == TextKind::Text,
            shrunk: None,
        });
    }
    for (span, is_result, body) in p.tools {
        let payload = Span {
            bytes: body,
            ws: span.ws.min(body),
        };
        out.push(Part {
            bytes: body,
            fixed: span.tokens().saturating_sub(payload.tokens()),
            cpt: span.chars_per_token(),
            label: if is_result {
                "tool_result"
            } else {
                "tool_call_arguments"
            },
            is_text: false,
            shrunk: None,
        });
    }
    out
}

/// Applies terminal truncation to the cascade's list `l`; pushes this call's edits and events and
/// returns the end of the range the marker replaces (0 when none).
pub(crate) fn apply(
    v: &View<'_, '_>,
    s: &Settings,
    l: &List,
    budget: u64,
    initial: u64,
    ops: &mut Vec<Op>,
    out: &mut Decision,
) -> usize {
    let keep = s.truncate_keep_last;
    let before = v.list_est(l);
    let count = v.count(l);
    let split = if count > keep {
        v.active_tail_start(l, keep)
    } else {
        0
    };
    let dropped_prefix = split > 0;
    let first = if dropped_prefix {
        v.position(l, split)
    } else {
        l.start
    };
    let summary = if dropped_prefix {
        None
    } else {
        l.summary.clone()
    };
    let marker_text = if dropped_prefix {
        DROPPED_PREFIX
    } else {
        SHORTENED_ONLY
    };
    let covered = if dropped_prefix || summary.is_some() {
        v.repaired_end(first)
    } else {
        0
    };
    let base = v.overhead + estimate_tokens(marker_text);
    let retained = v.est(first, v.len);
    let mut summary_tokens = summary.as_ref().map_or(0, |x| x.tokens);
    let mut est = base + summary_tokens + retained;

    // shrink_retained_payloads_to_budget: only messages with a payload over the smallest cap can
    // change; their parts are read once.
    let smallest = s
        .emergency_cap
        .min(s.payload_caps.iter().copied().min().unwrap_or(u64::MAX));
    let oversized_last = v.last_est < v.h.entries[v.len - 1].est;
    let mut items: Vec<Item> = Vec::new();
    if est > budget {
        for pos in first..v.len {
            let m = v.call.msg(pos);
            let pending =
                v.h.pending_masks
                    .binary_search_by_key(&pos, |x| x.0)
                    .is_ok();
            if m.text_len() as u64 <= smallest || pending || (oversized_last && pos + 1 == v.len) {
                continue;
            }
            items.push(Item {
                pos,
                parts: parts_of(
                    v.call,
                    pos,
                    pos + crate::prune::THINKING_KEEP_LAST < v.len && m.role() == Role::Assistant,
                ),
                latest_user: pos + 1 == v.len
                    && matches!(v.h.entries[pos].kind, Kind::User { .. })
                    && !is_tool_result(&m),
            });
        }
        let mut summary_bytes = summary.as_ref().map(|x| x.body * 4);
        let total = |items: &[Item], summary_tokens: u64| {
            base + summary_tokens + retained - items.iter().map(Item::saved).sum::<u64>()
        };
        let caps = s
            .payload_caps
            .iter()
            .map(|&c| (c, false))
            .chain(std::iter::once((s.emergency_cap, true)));
        for (cap, include_latest_user) in caps {
            for it in &mut items {
                for p in &mut it.parts {
                    let c = if p.is_text && it.latest_user && !include_latest_user {
                        cap.max(LATEST_USER_FLOOR)
                    } else {
                        cap
                    };
                    p.shrink(c);
                }
            }
            // The summary message is a text part too.
            if let (Some(b), Some(sum)) = (summary_bytes.as_mut(), summary.as_ref()) {
                if *b > cap {
                    *b = cap;
                    summary_tokens = sum.tokens - sum.body + cap / 4;
                }
            }
            est = total(&items, summary_tokens);
            if est <= budget {
                break;
            }
        }
    }

    // Edits: the marker in place of the dropped prefix (merged with the summary it precedes
    // when nothing was dropped), then each shrunk message as a head and tail of its text.
    if covered > 0 {
        let (text, body) = match &summary {
            Some(sum) => (
                format!("{marker_text}\n\n{}", sum.text(v.h, v.call)),
                summary_tokens.saturating_sub(sum.text_tokens()),
            ),
            None => (marker_text.to_string(), 0),
        };
        ops.push(Op {
            kind: crate::derive::replacement(v.h, covered, text, body),
            scope: Scope::ThisCall,
            start: 0,
            end: covered,
        });
    }
    let mut shrunk_parts = 0;
    for it in &items {
        if it.pos < covered {
            continue;
        }
        let mut kept: u64 = 0;
        let mut first_marker = None;
        for p in &it.parts {
            match p.shrunk {
                Some(b) => {
                    shrunk_parts += 1;
                    let mk = marker(p.label, p.bytes);
                    kept += b.saturating_sub(mk.len() as u64);
                    first_marker.get_or_insert(mk);
                }
                None => kept += p.bytes,
            }
        }
        let Some(mk) = first_marker else { continue };
        let m = v.call.msg(it.pos);
        let chars = m.chars();
        let kept = (kept * chars / (m.text_len() as u64).max(1)).min(chars);
        ops.push(Op {
            kind: OpKind::Truncate {
                head: kept / 2,
                tail: kept - kept / 2,
                marker: mk,
            },
            scope: Scope::ThisCall,
            start: it.pos,
            end: it.pos + 1,
        });
    }

    // enforce_terminal_events.rs: ContextTruncated, CompactionCompleted(Truncate), and
    // CompactionFailed when the request is still over the budget.
    let kept_messages = 1 + summary.is_some() as usize + (v.len - first);
    out.event_tokens(
        EventKind::Truncation,
        "ContextTruncated",
        format!(
            "dropped {} tokens with no summary, kept {kept_messages} messages; {shrunk_parts} part(s) cut to head/tail",
            before.saturating_sub(est)
        ),
        before,
        est,
    );
    out.event_tokens(
        EventKind::Note,
        "CompactionCompleted",
        format!("strategy truncate: {initial} → {est} (budget {budget})"),
        initial,
        est,
    );
    if est > budget {
        out.event_tokens(
            EventKind::Failure,
            "CompactionFailed",
            format!(
                "fell_back_to truncate: terminal truncation still exceeds safety budget ({est} > {budget})"
            ),
            before,
            est,
        );
    }
    covered
}
