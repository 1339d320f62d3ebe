//! Terminal truncation (terminal.rs, terminal_drop.rs, shrink*.rs): keep the last
//! TRUNCATE_KEEP_LAST messages behind a `[CONTEXT TRUNCATED]` marker, shrink retained payloads
//! through the byte caps, then evict the oldest retained messages until the request fits. No
//! summary: the loss is silent, so it is a Truncation event, not a compaction.

use crate::{Settings, Work, TAG};
use ctxlab_plugin_api::pairs::Cuts;
use ctxlab_plugin_api::*;

const DROPPED_PREFIX: &str = "[CONTEXT TRUNCATED]\nOlder conversation was dropped to keep the request under the model's context window. Some retained tool output may also be shortened with head/tail snippets.";
const SHORTENED_ONLY: &str = "[CONTEXT TRUNCATED]\nRecent tool output was too large for the model's context window and was shortened with head/tail snippets.";
/// The newest user message keeps at least this many bytes until the emergency cap.
const LATEST_USER_FLOOR: u64 = 16_384;
const MAX_TRUNCATIONS: usize = 240;

fn is_tool_result(m: &Msg<'_>) -> bool {
    m.role() == Role::Tool || (m.has_tool_results() && m.role() != Role::Assistant)
}

#[derive(Clone, Copy, PartialEq)]
enum Entry {
    Summary,
    Orig(usize),
}

struct Shrunk {
    bytes: u64,
    head: u64,
    tail: u64,
    marker: String,
}

/// `terminal_head_tail`: a marker naming the original size between a head and a tail of half the
/// remaining bytes each; only the marker when the cap leaves no room.
fn head_tail(label: &str, original: u64, cap: u64) -> (u64, u64, String) {
    let marker =
        format!("\n\n[terminal context fallback truncated {label}; original_bytes={original}]\n\n");
    if cap <= marker.len() as u64 + 32 {
        let short = marker.trim().to_string();
        return (0, 0, short);
    }
    let available = cap - marker.len() as u64;
    let head = available / 2;
    (head, available - head, marker)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    call: &Call<'_>,
    s: &Settings,
    cuts: &Cuts,
    w: &Work,
    budget: u64,
    initial: u64,
    tried: &str,
    out: &mut Decision,
) {
    let len = call.len();
    let before = w.estimate(call);
    let n = w.list_len(len);
    let keep = s.truncate_keep_last;
    let (split, dropped_prefix) = if n > keep {
        let p = cuts.at_or_before(w.position(n - keep)).max(w.summary_end);
        (p, true)
    } else {
        (w.summary_end, false)
    };
    let marker = if dropped_prefix {
        DROPPED_PREFIX
    } else {
        SHORTENED_ONLY
    };
    let marker_tokens = (marker.len() as u64).div_ceil(4) + 4;

    let mut list: Vec<Entry> = Vec::with_capacity(len - split + 1);
    if !dropped_prefix && w.summary.is_some() {
        list.push(Entry::Summary);
    }
    list.extend((split..len).map(Entry::Orig));
    let mut tokens: Vec<u64> = (0..len).map(|i| call.msg(i).tokens()).collect();
    let summary_tokens = w.summary.unwrap_or(0);
    let entry_tokens = |e: &Entry, tokens: &[u64]| match e {
        Entry::Summary => summary_tokens,
        Entry::Orig(i) => tokens[*i],
    };
    let total = |list: &[Entry], tokens: &[u64]| {
        w.overhead + marker_tokens + list.iter().map(|e| entry_tokens(e, tokens)).sum::<u64>()
    };
    let mut est = total(&list, &tokens);

    // Shrink payloads over each cap in turn, the newest user message protected until the end.
    let mut shrunk: Vec<Option<Shrunk>> = (0..len).map(|_| None).collect();
    if est > budget {
        let caps: Vec<(u64, bool)> = s
            .payload_caps
            .iter()
            .map(|&c| (c, false))
            .chain(std::iter::once((s.emergency_cap, true)))
            .collect();
        for (cap, include_latest_user) in caps {
            for i in split..len {
                let m = call.msg(i);
                let latest_user = i + 1 == len && m.role() == Role::User;
                let cap = if latest_user && !include_latest_user {
                    cap.max(LATEST_USER_FLOOR)
                } else {
                    cap
                };
                let original = m.text().len() as u64;
                let current = shrunk[i].as_ref().map(|x| x.bytes).unwrap_or(original);
                if current <= cap || original == 0 {
                    continue;
                }
                let label = if is_tool_result(&m) {
                    "tool_result"
                } else if m.has_tool_calls() {
                    "tool_call_arguments"
                } else {
                    "text"
                };
                let (head, tail, mk) = head_tail(label, original, cap);
                let bytes = head + tail + mk.len() as u64;
                let t = (m.tokens() * bytes).div_ceil(original).max(1);
                tokens[i] = t.min(m.tokens());
                shrunk[i] = Some(Shrunk {
                    bytes,
                    head,
                    tail,
                    marker: mk,
                });
            }
            est = total(&list, &tokens);
            if est <= budget {
                break;
            }
        }
    }

    // drop_oldest_until_fits: evict after the marker (and after a leading user message), and the
    // tool results that would be left without their call.
    let start = match list.first() {
        Some(Entry::Orig(i)) if call.msg(*i).role() == Role::User => 1,
        _ => 0,
    };
    let mut evicted_summary = false;
    let mut evict_from = None;
    let mut evict_to = 0;
    while list.len() > start + 1 && est > budget {
        let e = list.remove(start);
        match e {
            Entry::Summary => evicted_summary = true,
            Entry::Orig(i) => {
                evict_from.get_or_insert(i);
                evict_to = i + 1;
            }
        }
        while list.len() > start + 1 {
            match list[start] {
                Entry::Orig(i) if is_tool_result(&call.msg(i)) => {
                    list.remove(start);
                    evict_from.get_or_insert(i);
                    evict_to = i + 1;
                }
                _ => break,
            }
        }
        est = total(&list, &tokens);
    }
    if let Some(from) = evict_from {
        // Never leave a result whose call was evicted: widen to the next safe cut.
        let to = cuts.at_or_after(evict_to);
        list.retain(|e| !matches!(e, Entry::Orig(i) if *i >= from && *i < to));
        evict_to = to;
        est = total(&list, &tokens);
    }

    // Ops, in position order.
    let summary_kept = w.summary.is_some() && !dropped_prefix && !evicted_summary;
    let mut drops: Vec<(usize, usize)> = Vec::new();
    if summary_kept {
        out.op(
            OpKind::Summarize {
                role: Role::Assistant,
                max_tokens: summary_tokens,
                summarizer_input_tokens: 0,
                text: TAG.into(),
            },
            Scope::Persistent,
            0..w.summary_end,
        );
    } else if split > 0 {
        drops.push((0, split));
    }
    if let Some(from) = evict_from {
        match drops.last_mut() {
            Some(last) if last.1 == from => last.1 = evict_to,
            _ => drops.push((from, evict_to)),
        }
    }
    let dropped = |i: usize| drops.iter().any(|&(a, b)| i >= a && i < b);
    let mut truncations: Vec<(usize, &Shrunk)> = shrunk
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.as_ref().map(|x| (i, x)))
        .filter(|(i, _)| !dropped(*i))
        .collect();
    truncations.truncate(MAX_TRUNCATIONS);
    let mut ops: Vec<(usize, Op)> = drops
        .iter()
        .map(|&(a, b)| {
            (
                a,
                Op {
                    kind: OpKind::Drop,
                    scope: Scope::Persistent,
                    start: a,
                    end: b,
                },
            )
        })
        .collect();
    for (i, x) in &truncations {
        ops.push((
            *i,
            Op {
                kind: OpKind::Truncate {
                    head: x.head,
                    tail: x.tail,
                    marker: x.marker.clone(),
                },
                scope: Scope::Persistent,
                start: *i,
                end: i + 1,
            },
        ));
    }
    ops.sort_by_key(|(a, _)| *a);
    out.ops.extend(ops.into_iter().map(|(_, op)| op));

    let kept = list.len() + 1;
    let shrunk_count = truncations.len();
    let lost = if w.summary.is_some() && !summary_kept {
        " (the cascade's summary went with them)"
    } else {
        ""
    };
    out.event_tokens(
        EventKind::Note,
        "CompactionOutcome",
        format!(
            "strategy truncate: {} → {} (budget {}), kept {kept} messages; keep_last tried {tried}, all exhausted",
            fmt_tokens(initial),
            fmt_tokens(est),
            fmt_tokens(budget)
        ),
        initial,
        est,
    );
    out.event_tokens(
        EventKind::Truncation,
        "ContextTruncation",
        format!(
            "dropped {} tokens with no summary{lost}, kept {kept} messages behind [CONTEXT TRUNCATED]; {shrunk_count} payload(s) cut to head/tail",
            fmt_tokens(before.saturating_sub(est))
        ),
        before,
        est,
    );
    if est > budget {
        out.event_tokens(
            EventKind::Failure,
            "CompactionFailure",
            format!(
                "fell_back_to truncate: request still {} > budget {} after terminal truncation",
                fmt_tokens(est),
                fmt_tokens(budget)
            ),
            before,
            est,
        );
    }
}
