//! One step's derivation (codetether-agent 4.7.4 `src/session/context/derive.rs` `derive_context`
//! with the Legacy policy): the oversized-last-message pass, tool-output dedup, the budget gate,
//! the keep_last cascade, terminal truncation, and pair repair — on CodeTether's own estimates.

use crate::estimate::{estimate_tokens, Span};
use crate::history::{History, Kind};
use crate::{terminal, Settings};
use ctxlab_plugin_api::hash::Fnv;
use ctxlab_plugin_api::*;
use std::hash::Hasher;

const SUMMARY_HEAD: &str = "[AUTO CONTEXT COMPRESSION]\nOlder conversation + tool output was compressed to fit the model context window.\n\n";
const SUMMARY_TAIL: &str = "\n\n[RECOVERY] If you need specific details that this summary dropped (exact file paths, prior tool output, earlier user instructions, numeric values), call the `session_recall` tool with a targeted query instead of guessing or asking the user to repeat themselves.";
/// The first step's prefix is chunked incrementally when it ends this many messages before the
/// history's end (every pass's window: dedup 8, low-entropy 6, thinking 4; keep_last 16).
const STREAM_AFTER: usize = 16;
/// dropped_toc.rs `MAX_ENTRIES`: at most 10 user turns listed.
pub const TOC_ENTRIES: usize = 10;
/// experimental/dedup.rs `KEEP_LAST_MESSAGES` and `MIN_DEDUP_BYTES`.
pub const DEDUP_KEEP_LAST: usize = 8;
pub const DEDUP_MIN_BYTES: usize = 256;

/// A synthetic message at the head of CodeTether's list: the cascade's summary.
#[derive(Clone, Debug)]
pub(crate) struct Summary {
    /// CodeTether's estimate of the whole message.
    pub tokens: u64,
    /// The summary body (chunker or RLM output) in tokens: the simulated part.
    pub body: u64,
    /// The summary's body as far as it is known.
    pub chunked: Body,
    /// The dropped-range index of its literal text; the text itself is only written for the
    /// list the cascade ends with (`Summary::text`).
    pub toc: Toc,
    pub rlm: bool,
}

/// What a summary's body is made of.
#[derive(Clone, Debug)]
pub(crate) enum Body {
    /// The chunker's output.
    Text(std::rc::Rc<String>),
    /// The chunker's output for the history's first `toc.end` positions, measured on the
    /// incremental stream (`History::stream`): the line ranges it keeps, written only when a
    /// later step of the cascade renders it.
    Stream(std::rc::Rc<Vec<(u64, u64)>>),
    /// A background RLM summary: only simulated.
    Rlm,
}

/// `render_toc(prefix, 0)` of a prefix: the list `l` (summary first when it has one) up to
/// history position `end`, `prefix_len` messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Toc {
    pub start: usize,
    pub base: usize,
    pub end: usize,
    pub prefix_len: usize,
}

const TOC_OPEN: &str = "\n\n[DROPPED-RANGE INDEX] turns 0-";
const TOC_MID: &str = " were compressed. User turns in that range:\n";
const TOC_PLUS_OPEN: &str = "\n  … plus ";
const TOC_PLUS_CLOSE: &str = " more user turns";
const TOC_CLOSE: &str = "\nRetrieve any of them via `context_browse` (action=show_turn, turn=N) or a targeted `session_recall` query.";

/// Decimal digits of `n`.
fn digits(n: usize) -> u64 {
    n.checked_ilog10().map_or(1, |d| d as u64 + 1)
}

impl Toc {
    /// Bytes and whitespace of the rendered index, from the cached lines and the lengths of
    /// its numbers: the summary's estimate without writing its text.
    fn span(&self, h: &History, call: &Call<'_>) -> Span {
        let (n, lines) = h.toc_lines(call, self.start, self.base, self.end);
        if n == 0 {
            return Span::default();
        }
        let mut s = Span::of(TOC_OPEN)
            .plus(Span {
                bytes: digits(self.prefix_len.saturating_sub(1)),
                ws: 0,
            })
            .plus(Span::of(TOC_MID))
            .plus(lines)
            .plus(Span::of(TOC_CLOSE));
        if n > TOC_ENTRIES {
            s = s
                .plus(Span::of(TOC_PLUS_OPEN))
                .plus(Span {
                    bytes: digits(n - TOC_ENTRIES),
                    ws: 0,
                })
                .plus(Span::of(TOC_PLUS_CLOSE));
        }
        s
    }
    /// `render_toc`'s text (dropped_toc.rs:18-42).
    fn render(&self, h: &History, call: &Call<'_>, out: &mut String) {
        use std::fmt::Write;
        let (n, _) = h.toc_lines(call, self.start, self.base, self.end);
        if n == 0 {
            return;
        }
        out.push_str(TOC_OPEN);
        let _ = write!(out, "{}", self.prefix_len.saturating_sub(1));
        out.push_str(TOC_MID);
        h.with_toc_text(|t| out.push_str(t));
        if n > TOC_ENTRIES {
            out.push_str(TOC_PLUS_OPEN);
            let _ = write!(out, "{}", n - TOC_ENTRIES);
            out.push_str(TOC_PLUS_CLOSE);
        }
        out.push_str(TOC_CLOSE);
    }
}

impl Summary {
    /// The literal text around the body: tag, dropped-range index, recovery note
    /// (compression_summary.rs `install`).
    pub fn text(&self, h: &History, call: &Call<'_>) -> String {
        let mut t = String::with_capacity(SUMMARY_HEAD.len() + SUMMARY_TAIL.len() + 1_024);
        t.push_str(SUMMARY_HEAD);
        self.toc.render(h, call, &mut t);
        t.push_str(SUMMARY_TAIL);
        t
    }
    /// The whole message as CodeTether holds it: tag, body, index, note. A background RLM
    /// summary's body is not known: words of 4 bytes stand for its `body` tokens.
    pub fn full_text_into(&self, h: &History, call: &Call<'_>, t: &mut String) {
        t.push_str(SUMMARY_HEAD);
        match &self.chunked {
            Body::Text(c) => t.push_str(c),
            Body::Stream(ranges) => {
                let st = h.stream.borrow();
                crate::chunker::reassemble_ranges_into(ranges, t, |a, b, out| {
                    st.lines_into(call, h, call.len(), a, b, out)
                });
            }
            Body::Rlm => {
                for _ in 0..self.body {
                    t.push_str("rlm ");
                }
            }
        }
        self.toc.render(h, call, t);
        t.push_str(SUMMARY_TAIL);
    }
    /// CodeTether's estimate of that literal text.
    pub fn text_tokens(&self) -> u64 {
        self.tokens - self.body
    }
}

/// CodeTether's message list during one derivation: an optional summary, then the history from
/// position `start` on. `chain` identifies the compressed prefix (the background RLM cache key).
#[derive(Clone, Debug)]
pub(crate) struct List {
    pub summary: Option<Summary>,
    pub start: usize,
    pub chain: u64,
}

impl List {
    fn full() -> List {
        List {
            summary: None,
            start: 0,
            chain: 0,
        }
    }
}

/// The history as this step's derivation sees it.
pub(crate) struct View<'c, 'a> {
    pub call: &'c Call<'a>,
    pub h: &'c History,
    pub len: usize,
    pub overhead: u64,
    pub window: u64,
    /// The last message's estimate after the oversized-last-message pass.
    pub last_est: u64,
}

impl View<'_, '_> {
    /// Estimate of history positions `a..b` in this step's derivation.
    pub fn est(&self, a: usize, b: usize) -> u64 {
        if a < b && b == self.len {
            self.h.est(a, b - 1) + self.last_est
        } else {
            self.h.est(a, b)
        }
    }
    /// `estimate_request_tokens(system_prompt, messages, tools)` of a list.
    pub fn list_est(&self, l: &List) -> u64 {
        self.overhead + l.summary.as_ref().map_or(0, |s| s.tokens) + self.est(l.start, self.len)
    }
    /// Messages of the list: the summary, the history from `l.start`, pair repair's
    /// placeholders among them.
    pub fn count(&self, l: &List) -> usize {
        self.index(l, self.len)
    }
    /// List index of history position `p` (≥ `l.start`).
    fn index(&self, l: &List, p: usize) -> usize {
        l.summary.is_some() as usize + (p - l.start) + self.h.placeholders.sum(l.start, p) as usize
    }
    /// History position at list index `i` (not the summary): the first position whose index is
    /// `i` or more (an index that falls on a placeholder resumes after its call's message).
    pub fn position(&self, l: &List, i: usize) -> usize {
        let (mut lo, mut hi) = (l.start, self.len);
        if self.index(l, hi) == self.count_plain(l, hi) {
            return (l.start + i - l.summary.is_some() as usize).min(self.len);
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.index(l, mid) >= i {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
    fn count_plain(&self, l: &List, p: usize) -> usize {
        l.summary.is_some() as usize + (p - l.start)
    }
    /// `active_tail_start(messages, keep_last)` (active_tail.rs:7-17) as a list index: the newest
    /// substantive user message (else any user message), but no later than `len − keep_last`.
    pub fn active_tail_start(&self, l: &List, keep_last: usize) -> usize {
        let recent = self.count(l).saturating_sub(keep_last);
        match self.h.anchor(l.start) {
            Some(p) => self.index(l, p).min(recent),
            None => recent,
        }
    }
    /// Where the derived context resumes after a prefix ending at `start`: pair repair
    /// (experimental/pairing.rs `repair_orphans`) drops the tool-result messages whose calls
    /// went with the prefix; the host's rule that a call and its result go together widens it
    /// further in the rare case CodeTether would keep a result without its call.
    pub fn repaired_end(&self, start: usize) -> usize {
        let mut q = start;
        while q < self.len {
            let e = &self.h.entries[q];
            let orphan = e.kind == Kind::ToolResults
                && e.answers_up_to.is_some_and(|c| (c as usize) < start);
            if !orphan {
                break;
            }
            q += 1;
        }
        while q < self.len && !self.h.safe_cut(q) {
            q += 1;
        }
        q
    }
}

/// `compress_messages_keep_last` (keep_last.rs:32-69): everything before the active tail becomes
/// one summary message: the background RLM summary when an earlier step compressed the same
/// prefix (`rlm_background::context_summary`), else `RlmChunker::compress(context, window × 0.25)`
/// at once (compression_defer.rs:21-27). `None` when there is nothing to compress.
fn compress(
    v: &View<'_, '_>,
    s: &Settings,
    l: &List,
    keep_last: usize,
    seen: &crate::history::FnvSet,
) -> Option<List> {
    let count = v.count(l);
    if count <= keep_last {
        return None;
    }
    let split = v.active_tail_start(l, keep_last);
    if split == 0 {
        return None;
    }
    let start = v.position(l, split);
    let mut key = Fnv::default();
    key.write_u64(l.chain);
    key.write_u64(start as u64);
    let chain = key.finish();
    let rlm = s.rlm_cache && seen.contains(&chain);
    let cap = (v.window as f64 * s.fallback_chunk_ratio) as u64;
    // keep_last.rs: the prefix rendered for the summarizer (`messages_to_rlm_context`), nothing
    // to compress when it is blank; compression_defer.rs: the background RLM summary
    // (simulated: `rlm_summary_tokens`), else `RlmChunker::compress(context, window × 0.25)`.
    // The first step's prefix is the history's first `start` messages, all past every pass's
    // window: their rendering no longer changes, so it is chunked once, incrementally.
    let (chunked, body_span, context_tokens) =
        if l.summary.is_none() && l.start == 0 && start + STREAM_AFTER <= v.len {
            let mut st = v.h.stream.borrow_mut();
            st.extend(v.call, v.h, start, v.len);
            if st.idx == 0 || st.stream.total.bytes == 0 {
                return None;
            }
            let ctx_tokens = st.stream.total.tokens();
            if rlm {
                (Body::Rlm, Span::default(), ctx_tokens)
            } else {
                let (span, ranges) = st.stream.compress_span(cap);
                (Body::Stream(ranges.into()), span, ctx_tokens)
            }
        } else {
            // One buffer for every later step's context (History::context), kept at its size.
            let mut context = std::mem::take(&mut *v.h.context.borrow_mut());
            context.clear();
            let mut idx = 0;
            if let Some(sum) = &l.summary {
                // The summary as list message 0 (`[0 Assistant]`, its text, the separator).
                context.push_str("[0 Assistant]\n");
                sum.full_text_into(v.h, v.call, &mut context);
                context.push_str("\n\n---\n\n");
                idx = 1;
            }
            for p in l.start..start {
                idx += crate::render::message(&mut context, idx, v.call, v.h, p, v.len);
            }
            let got = if context.trim().is_empty() {
                None
            } else if rlm {
                Some((Body::Rlm, Span::default(), estimate_tokens(&context)))
            } else {
                let (out, span) = crate::chunker::compress_measured(&context, cap);
                // Only a background summary's size depends on the context's estimate.
                Some((Body::Text(out.into()), span, 0))
            };
            *v.h.context.borrow_mut() = context;
            got?
        };
    let toc = Toc {
        start: l.start,
        base: l.summary.is_some() as usize,
        end: start,
        prefix_len: split,
    };
    let literal = Span::of(SUMMARY_HEAD)
        .plus(toc.span(v.h, v.call))
        .plus(Span::of(SUMMARY_TAIL));
    // The message is one text part, estimated whole (its band is the whole text's).
    let (tokens, body) = match &chunked {
        Body::Rlm => {
            let body = context_tokens.min(s.rlm_summary_tokens);
            (literal.tokens() + body, body)
        }
        _ => {
            let tokens = literal.plus(body_span).tokens();
            (tokens, tokens.saturating_sub(literal.tokens()))
        }
    };
    Some(List {
        summary: Some(Summary {
            tokens,
            body,
            chunked,
            toc,
            rlm,
        }),
        start,
        chain,
    })
}

/// The edit standing for positions `0..end` replaced by one synthetic message of literal `text`
/// and a simulated part of `body` tokens. The host refuses a summary larger than what it
/// replaces (CodeTether's markers are inserted, whatever their size): when the literal cannot
/// fit even at its upper bound (a token per byte), only its first line is kept, then nothing
/// (a plain drop); the simulated part is capped to what is left.
pub(crate) fn replacement(h: &History, end: usize, text: String, body: u64) -> OpKind {
    const MESSAGE_TOKENS: u64 = 16;
    let replaced = h.host_tokens(0, end);
    let upper = |t: &str| t.len() as u64 + MESSAGE_TOKENS;
    let summarize = |t: String| {
        let body = body.min(replaced - upper(&t));
        OpKind::Summarize {
            role: Role::Assistant,
            max_tokens: body,
            summarizer_input_tokens: 0,
            text: t,
        }
    };
    if upper(&text) <= replaced {
        return summarize(text);
    }
    let short = text.lines().next().unwrap_or_default().to_string();
    if upper(&short) <= replaced {
        return summarize(short);
    }
    OpKind::Drop
}

/// Derives this call's request; returns the safety budget.
pub(crate) fn derive(call: &Call<'_>, s: &Settings, h: &mut History, out: &mut Decision) -> u64 {
    let len = call.len();
    let window = s.window(call);
    let budget = s.safety_budget(window);
    out.gauge("safety_budget", budget as f64);
    if len == 0 {
        return budget;
    }
    // experimental::apply_all: thinking prune, dedup, low-entropy pruning (pair repair below).
    h.prune(call);
    h.dedup(call, DEDUP_KEEP_LAST, DEDUP_MIN_BYTES);
    let mut ops: Vec<Op> = Vec::new();

    // compress_last_message_if_oversized (oversized.rs:37-70): text over 35% of the window is
    // replaced by the chunker's projection to that size.
    let last = &h.entries[len - 1];
    let threshold = (window as f64 * s.oversized_ratio) as u64;
    let mut last_est = last.est;
    if last.text_est > threshold {
        last_est = last.est - last.text_est + threshold;
        let m = call.msg(len - 1);
        let cpt = Span::of(m.text()).chars_per_token();
        let keep_bytes = (threshold as f64 * cpt) as u64;
        let chars = m.chars();
        let keep = (keep_bytes * chars / (m.text_len() as u64).max(1)).min(chars);
        ops.push(Op {
            kind: OpKind::Truncate {
                head: keep / 2,
                tail: keep - keep / 2,
                marker:
                    "\n\n[oversized last message: RlmChunker::compress to 35% of the window]\n\n"
                        .into(),
            },
            scope: Scope::ThisCall,
            start: len - 1,
            end: len,
        });
    }
    let v = View {
        call,
        h,
        len,
        overhead: s.overhead(call),
        window,
        last_est,
    };

    // check_budget (enforce_budget.rs:27-56).
    let full = List::full();
    let initial = v.list_est(&full);
    out.gauge("codetether_estimate", initial as f64);
    let history_over = s.history_trigger > 0 && v.count(&full) >= s.history_trigger;
    let reason = if initial <= budget && !history_over {
        None
    } else if history_over && initial <= budget {
        Some("history_length")
    } else {
        Some("context_budget")
    };
    let mut covered = 0;
    let mut keys = Vec::new();
    if let Some(reason) = reason {
        out.event_tokens(
            EventKind::Note,
            "CompactionStarted",
            format!("reason {reason}: estimate {initial} / safety budget {budget}"),
            initial,
            budget,
        );
        // run_cascade (enforce_cascade.rs:25-64).
        let mut l = full;
        let mut fits = false;
        let mut tried = Vec::new();
        for &k in &s.candidates {
            let est = v.list_est(&l);
            let still_long =
                s.history_trigger > 0 && v.count(&l) > s.history_trigger.saturating_sub(k);
            if est <= budget && !still_long {
                fits = true;
                break;
            }
            tried.push(k);
            match compress(&v, s, &l, k, &v.h.compressed) {
                Some(next) => {
                    keys.push(next.chain);
                    l = next;
                }
                None => break,
            }
        }
        let est = v.list_est(&l);
        fits = fits || est <= budget;
        if fits {
            if let Some(sum) = &l.summary {
                covered = v.repaired_end(l.start);
                ops.push(Op {
                    kind: replacement(v.h, covered, sum.text(v.h, call), sum.body),
                    scope: Scope::ThisCall,
                    start: 0,
                    end: covered,
                });
            }
            out.event_tokens(
                EventKind::Compaction,
                "CompactionCompleted",
                format!(
                    "strategy {}: {initial} → {est}, kept {} messages; keep_last tried {tried:?}",
                    match &l.summary {
                        Some(x) if x.rlm => "rlm (background summary)",
                        Some(_) => "rlm (chunker fallback)",
                        None => "rlm",
                    },
                    v.count(&l)
                ),
                initial,
                est,
            );
        } else {
            covered = terminal::apply(&v, s, &l, budget, initial, &mut ops, out);
        }
    }
    let h_len = h.pending_masks.len();
    // Dedup markers go to the host once the message is sent at all (not under this step's
    // summary); they stay pending otherwise.
    let from = h.pending_masks.partition_point(|&(p, _)| p < covered);
    let masks: Vec<(usize, String)> = h.pending_masks.drain(from..h_len).collect();
    for (p, marker) in masks {
        h.masked(p);
        ops.push(Op {
            kind: OpKind::Mask {
                placeholder: marker,
            },
            scope: Scope::Persistent,
            start: p,
            end: p + 1,
        });
    }
    h.compressed.extend(keys);
    ops.retain(|o| o.start >= covered || (o.start == 0 && o.end == covered));
    ops.sort_by_key(|o| o.start);
    out.ops.extend(ops);
    budget
}
