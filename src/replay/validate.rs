//! Host-side checks of a strategy's decision, before anything is applied. A decision either
//! passes whole or the run fails with the reason; a strategy never half-edits a context.

use super::context::Context;
use super::summarizer::SummarizerModel;
use crate::model::Part;
use crate::plugin_host::RawDecision;
use crate::tokens::TokenCounter;
use ctxlab_plugin_api::{Op, OpKind, Scope};
use std::rc::Rc;

/// Most ops one decision may carry; more is a runaway plugin. LibreChat rewrites every consumed
/// tool result it keeps, each with its own text (its truncation marker states the original
/// length), so one call may need an op per kept message.
pub const MAX_OPS: usize = 65_536;

/// One checked edit of a range, with what it does to the token count.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub op: Op,
    /// Raw tokens of the range before the edit.
    pub before: u64,
    /// Raw tokens of what stands in its place after the edit (summary, edited texts).
    pub after: u64,
    /// SUMMARIZE: the simulated part of the summary, and the summarizer's input.
    pub simulated: u64,
    pub summarizer_input: u64,
    /// TRUNCATE / MASK / OFFLOAD / REPEAT: each message's new text and raw tokens (shared with
    /// the context's cache of edits: strategies send the same this-call edits call after call).
    pub texts: EditTexts,
}

/// The new texts of an edit's messages: one inline (the common case, and every `Repeat`), so
/// that a decision of a thousand one-message edits allocates nothing per edit.
#[derive(Debug, Clone, Default)]
pub(crate) enum EditTexts {
    #[default]
    Empty,
    One((Rc<str>, u64)),
    Many(Vec<(Rc<str>, u64)>),
}

impl EditTexts {
    pub(crate) fn push(&mut self, t: (Rc<str>, u64)) {
        *self = match std::mem::take(self) {
            EditTexts::Empty => EditTexts::One(t),
            EditTexts::One(a) => EditTexts::Many(vec![a, t]),
            EditTexts::Many(mut v) => {
                v.push(t);
                EditTexts::Many(v)
            }
        };
    }
}

impl std::ops::Deref for EditTexts {
    type Target = [(Rc<str>, u64)];
    fn deref(&self) -> &Self::Target {
        match self {
            EditTexts::Empty => &[],
            EditTexts::One(t) => std::slice::from_ref(t),
            EditTexts::Many(v) => v,
        }
    }
}

/// A checked decision: content edits sorted by position, pins/unpins in decision order.
#[derive(Debug)]
pub(crate) struct Plan {
    pub edits: Vec<Planned>,
    /// The this-call edits `Repeat` ops made again (ABI 1.7): one stretch of the context's
    /// standing edits per op, in order; none of them is at a position an edit of `edits`
    /// touches. A strategy may repeat a thousand edits a call: nothing here is per edit.
    pub repeated: Vec<Repeated>,
    /// Raw tokens of the repeated edits' messages before the edits (now), after them, and what
    /// each takes off (Σ of `before − after`, at least 0 each), and the first one's position
    /// (`usize::MAX` when none).
    pub repeated_before: u64,
    pub repeated_after: u64,
    pub repeated_pruned: u64,
    pub repeated_first: usize,
    pub flags: Vec<Op>,
    /// Tool pairs the decision's removals separate, as an `AllowSplit` op let them.
    pub split_pairs: u64,
}

/// The previous decision's this-call edits of one `Repeat` op's range, made again: the
/// context's standing edits `lo..hi` (`Context::standing_range`; after `Context::set_standing`,
/// where that call put them).
#[derive(Debug, Clone)]
pub(crate) struct Repeated {
    /// The op's range of positions.
    pub start: usize,
    pub end: usize,
    pub lo: usize,
    pub hi: usize,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            edits: Vec::new(),
            repeated: Vec::new(),
            repeated_before: 0,
            repeated_after: 0,
            repeated_pruned: 0,
            repeated_first: usize::MAX,
            flags: Vec::new(),
            split_pairs: 0,
        }
    }
}

impl Plan {
    /// Raw tokens the call sends after every edit, persistent and this-call.
    pub(crate) fn sent_tokens(&self, total: u64) -> u64 {
        let t = self.edits.iter().fold(total, |t, p| t - p.before + p.after);
        t - self.repeated_before + self.repeated_after
    }
    /// First position any edit touches (where the prompt's cached prefix ends).
    pub(crate) fn first_touched(&self, scope: Option<Scope>) -> usize {
        let repeated = match scope {
            None | Some(Scope::ThisCall) => self.repeated_first,
            Some(Scope::Persistent) => usize::MAX,
        };
        self.edits
            .iter()
            .filter(|p| scope.map_or(true, |s| p.op.scope == s))
            .map(|p| p.op.start)
            .min()
            .unwrap_or(usize::MAX)
            .min(repeated)
    }
    /// Raw tokens this call's view edits (this-call scope) take off what it sends.
    pub(crate) fn pruned_tokens(&self) -> u64 {
        let edits: u64 = self
            .edits
            .iter()
            .filter(|p| p.op.scope == Scope::ThisCall)
            .map(|p| p.before.saturating_sub(p.after))
            .sum();
        edits + self.repeated_pruned
    }
    /// Whether the decision changes anything the call sends.
    pub(crate) fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.repeated.is_empty()
    }
    /// The repeated edit at position `pos`, if any: its text and tokens (after
    /// `Context::set_standing`).
    pub(crate) fn repeated_at<'c>(
        &self,
        ctx: &'c Context<'_>,
        pos: usize,
    ) -> Option<(&'c Rc<str>, u64)> {
        let k = self.repeated.partition_point(|r| r.end <= pos);
        let r = self.repeated.get(k).filter(|r| r.start <= pos)?;
        ctx.standing_at(r.lo, r.hi, pos)
    }
    /// Every repeated edit, in order: (position, its text, its tokens) (after
    /// `Context::set_standing`).
    pub(crate) fn repeated_edits<'c>(
        &'c self,
        ctx: &'c Context<'_>,
    ) -> impl Iterator<Item = (usize, &'c Rc<str>, u64)> + 'c {
        self.repeated
            .iter()
            .flat_map(move |r| ctx.standing_edits(r.lo, r.hi))
    }
}

fn kind_name(k: &OpKind) -> &'static str {
    match k {
        OpKind::Drop => "drop",
        OpKind::Summarize { .. } => "summarize",
        OpKind::Truncate { .. } => "truncate",
        OpKind::Mask { .. } => "mask",
        OpKind::Cut { .. } => "cut",
        OpKind::Offload { .. } => "offload",
        OpKind::Pin => "pin",
        OpKind::Unpin => "unpin",
        OpKind::AllowSplit => "allow_split",
        OpKind::DropResults { .. } => "drop_results",
        OpKind::Repeat => "repeat",
    }
}

/// `head` chars + marker + `tail` chars of `text` (which has `chars` chars), or `None` when that
/// would not shorten it. Walks `head` chars from the front and `tail` from the back, never the
/// whole text.
pub(crate) fn truncated(
    text: &str,
    chars: u64,
    head: u64,
    tail: u64,
    marker: &str,
) -> Option<String> {
    if head.saturating_add(tail) >= chars {
        return None;
    }
    let head_end = text
        .char_indices()
        .nth(head as usize)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = if tail == 0 {
        text.len()
    } else {
        text.char_indices()
            .nth_back(tail as usize - 1)
            .map_or(0, |(i, _)| i)
    };
    let mut out = String::with_capacity(head_end + marker.len() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push_str(marker);
    out.push_str(&text[tail_start..]);
    Some(out)
}

/// Checks `d` against the agent's context and works out every edit's effect.
pub(crate) fn check(
    mut d: RawDecision,
    ctx: &Context<'_>,
    counter: &dyn TokenCounter,
    summarizer: &SummarizerModel,
) -> Result<(Plan, RawDecision), String> {
    if let Some(m) = d.malformed.first() {
        return Err(format!("malformed decision: {m}"));
    }
    if d.ops.len() > MAX_OPS {
        return Err(format!(
            "{} ops in one decision; at most {MAX_OPS} are accepted",
            d.ops.len()
        ));
    }
    let len = ctx.len();
    let mut plan = Plan::default();
    let mut unpinned: Vec<(usize, usize)> = Vec::new();
    let mut split_allowed: Vec<(usize, usize)> = Vec::new();
    let mut last_end = 0usize;
    // The ops move into the plan (no copy of their texts).
    let ops = std::mem::take(&mut d.ops);
    plan.edits.reserve(ops.len());
    // Where a `Cut` builds its text, kept from op to op (LibreChat sends ~18 a call).
    let mut cut_buf = String::new();
    for (n, op) in ops.into_iter().enumerate() {
        // Built only for an error message: a valid decision formats nothing.
        let (kind, start, end) = (kind_name(&op.kind), op.start, op.end);
        let what = move || format!("op {n} ({kind} {start}..{end})");
        if op.start >= op.end {
            return Err(format!("{}: empty or reversed range", what()));
        }
        if op.end > len {
            return Err(format!(
                "{}: range ends past the context, which holds {len} messages",
                what()
            ));
        }
        if op.kind == OpKind::AllowSplit {
            split_allowed.push((op.start, op.end));
            continue;
        }
        if matches!(op.kind, OpKind::Pin | OpKind::Unpin) {
            if op.kind == OpKind::Unpin {
                unpinned.push((op.start, op.end));
            }
            plan.flags.push(op);
            continue;
        }
        if op.start < last_end {
            return Err(format!(
                "{}: overlaps or precedes the previous edit (ends at {last_end}); edits must be sorted and not overlap",
                what()
            ));
        }
        last_end = op.end;
        if op.kind == OpKind::Repeat {
            if op.scope != Scope::ThisCall {
                return Err(format!(
                    "{}: a repeat is a this-call op (it repeats the previous decision's view edits)",
                    what()
                ));
            }
            // The previous decision's edits of the range's messages, again: each one a
            // one-message edit with its text and tokens as they were, the range's tokens now
            // (their sums are the context's, less those of the edits no op repeats: below).
            let (lo, hi) = ctx.standing_range(op.start, op.end);
            if lo == hi {
                continue;
            }
            if ctx.pinned_in(op.start, op.end) > 0 {
                for (i, _, _) in ctx.standing_edits(lo, hi) {
                    if ctx.views[i].flags & ctxlab_plugin_api::abi::FLAG_PINNED != 0
                        && !unpinned.iter().any(|&(s, e)| s <= i && i < e)
                    {
                        return Err(format!(
                            "{}: touches pinned message at position {i} without unpinning it first",
                            what()
                        ));
                    }
                }
            }
            plan.repeated.push(Repeated {
                start: op.start,
                end: op.end,
                lo,
                hi,
            });
            continue;
        }
        if ctx.pinned_in(op.start, op.end) > 0 {
            let touched = (op.start..op.end).find(|&i| {
                ctx.views[i].flags & ctxlab_plugin_api::abi::FLAG_PINNED != 0
                    && !unpinned.iter().any(|&(s, e)| s <= i && i < e)
            });
            if let Some(i) = touched {
                return Err(format!(
                    "{}: touches pinned message at position {i} without unpinning it first",
                    what()
                ));
            }
        }
        let before = ctx.tokens_in(op.start, op.end);
        let mut p = Planned {
            op: Op {
                kind: OpKind::Drop,
                ..op
            },
            before,
            after: 0,
            simulated: 0,
            summarizer_input: 0,
            texts: EditTexts::Empty,
        };
        let removal = matches!(op.kind, OpKind::Drop | OpKind::Summarize { .. });
        // The modelled system's own removals, applied as it makes them.
        let as_modelled = removal
            && split_allowed
                .iter()
                .any(|&(s, e)| s <= op.start && op.end <= e);
        if as_modelled {
            plan.split_pairs += ctx.split_pairs_in(op.start, op.end);
        } else if removal && ctx.splits_pair(op.start, op.end) {
            return Err(format!(
                "{}: separates a tool call from its result (both must go or stay together; an \
                 allow_split op before it lets a strategy that keeps orphans do so)",
                what()
            ));
        }
        match &op.kind {
            OpKind::Drop => {}
            OpKind::Summarize {
                max_tokens,
                summarizer_input_tokens,
                text,
                ..
            } => {
                let s = summarizer.summary(
                    before,
                    *max_tokens,
                    *summarizer_input_tokens,
                    text,
                    counter,
                );
                if s.tokens > before && !as_modelled {
                    return Err(format!(
                        "{}: summary of {} tokens is larger than the {} tokens it replaces",
                        what(),
                        s.tokens,
                        before
                    ));
                }
                p.after = s.tokens;
                p.simulated = s.simulated;
                p.summarizer_input = s.input;
            }
            OpKind::Truncate { head, tail, marker } => {
                for i in op.start..op.end {
                    let sig = EditSig::Truncate {
                        head: *head,
                        tail: *tail,
                        marker,
                    };
                    p.texts.push(ctx.edited(i, sig, counter, |text_tokens| {
                        let old = ctx.text(i);
                        let new = truncated(old, ctx.views[i].chars, *head, *tail, marker);
                        match new {
                            Some(new) => {
                                let tokens = retokens(ctx, i, text_tokens(), &new, counter);
                                (new.into(), tokens)
                            }
                            // Nothing to cut: the text and its tokens stay.
                            None => (old.into(), ctx.views[i].tokens),
                        }
                    }));
                }
            }
            OpKind::Cut { head, tail, marker } => {
                // The text each message gets is built here, once, from its own text: the
                // plugin handed over the cut points and the marker, not the cut text.
                let buf = &mut cut_buf;
                for i in op.start..op.end {
                    let old = ctx.text(i);
                    let (Some((h, t)), Some((cut_tokens, pieces_nul))) = (
                        cut_pieces(old, *head, *tail),
                        ctx.count_cut(i, *head, *tail, marker, counter),
                    ) else {
                        return Err(format!(
                            "{}: keeps the first {head} and the last {tail} bytes of the message \
                             at position {i}, whose text is {} bytes; expected two cuts on \
                             character boundaries that do not overlap",
                            what(),
                            old.len()
                        ));
                    };
                    let old_text = ctx.text_tokens(i, counter);
                    // `cut_tokens` is the count of the cut text, from what the context kept of
                    // the message's cuts; a text without NUL has no results' parts to split.
                    let split = if pieces_nul || memchr::memchr(0, marker.as_bytes()).is_some() {
                        buf.clear();
                        buf.push_str(h);
                        buf.push_str(marker);
                        buf.push_str(t);
                        split_results(buf, ctx.results_in(i))
                    } else {
                        None
                    };
                    let tokens = match split {
                        Some((joined, _)) => retokens(ctx, i, old_text, &joined, counter),
                        None => ctx.views[i].tokens.saturating_sub(old_text) + cut_tokens,
                    };
                    p.texts.push((rc_concat(&[h, marker, t]), tokens));
                }
            }
            OpKind::Mask { placeholder: t } | OpKind::Offload { stub: t } => {
                // One copy of the text for every message of the range (most ranges hold one).
                let mut shared: Option<Rc<str>> = None;
                for i in op.start..op.end {
                    // Parts for several tool results (ABI 1.4) are counted as the text they
                    // become; the separators stay for `Context::apply` to split at.
                    let old_text = ctx.text_tokens(i, counter);
                    let tokens = match split_results(t, ctx.results_in(i)) {
                        Some((joined, _)) => retokens(ctx, i, old_text, &joined, counter),
                        None => retokens(ctx, i, old_text, t, counter),
                    };
                    let text = shared.get_or_insert_with(|| Rc::from(t.as_str()));
                    p.texts.push((text.clone(), tokens));
                }
            }
            OpKind::DropResults { remove, contents } => {
                let kept = remove.iter().filter(|&&r| !r).count();
                if kept == 0 {
                    return Err(format!(
                        "{}: removes every part of the message (a drop does that)",
                        what()
                    ));
                }
                if contents.len() != kept {
                    return Err(format!(
                        "{}: {} contents for the {kept} parts its selection keeps",
                        what(),
                        contents.len()
                    ));
                }
                let covered = split_allowed
                    .iter()
                    .any(|&(s, e)| s <= op.start && op.end <= e);
                // What one tool result weighs besides its content (the counter's per-part
                // overhead), gone with each removed result.
                let result = Part::ToolResult {
                    call_id: String::new(),
                    content: String::new(),
                    is_error: false,
                };
                let overhead = counter
                    .count_parts(std::slice::from_ref(&result))
                    .saturating_sub(counter.count_parts(&[]));
                let parts = contents.join("\0");
                for i in op.start..op.end {
                    let k = ctx.results_in(i);
                    if k == 0 || (remove.len() != k && remove.len() != k + 1) {
                        return Err(format!(
                            "{}: the message at position {i} carries {k} tool result(s); the \
                             selection names {} (one per result, and one more for the rest of \
                             its text)",
                            what(),
                            remove.len()
                        ));
                    }
                    let split = ctx.results_split(i, remove);
                    if split > 0 && !covered {
                        return Err(format!(
                            "{}: removes the result of a tool call that stays at position {i} \
                             (an allow_split op before it lets a strategy that keeps orphans do so)",
                            what()
                        ));
                    }
                    plan.split_pairs += split;
                    let removed = remove[..k].iter().filter(|&&r| r).count() as u64;
                    let tokens = retokens(
                        ctx,
                        i,
                        ctx.text_tokens(i, counter),
                        &contents.join("\n"),
                        counter,
                    );
                    // The parts stay NUL-separated for `Context::apply` to split at.
                    p.texts.push((
                        Rc::from(parts.as_str()),
                        tokens.saturating_sub(removed * overhead),
                    ));
                }
            }
            OpKind::Pin | OpKind::Unpin | OpKind::AllowSplit | OpKind::Repeat => {
                unreachable!("handled above")
            }
        }
        if !p.texts.is_empty() {
            p.after = p.texts.iter().map(|t| t.1).sum();
        }
        p.op.kind = op.kind;
        plan.edits.push(p);
    }
    if !plan.repeated.is_empty() {
        let (before, after, pruned) = ctx.standing_sums(&plan.repeated);
        plan.repeated_before = before;
        plan.repeated_after = after;
        plan.repeated_pruned = pruned;
        plan.repeated_first = ctx
            .standing_edits(plan.repeated[0].lo, plan.repeated[0].hi)
            .next()
            .map_or(usize::MAX, |e| e.0);
    }
    Ok((plan, d))
}

/// The pieces joined, copied once, straight into the shared text (`Rc::from` of a joined
/// `String` copied each cut text twice: 2 % of a LibreChat replay's instructions).
fn rc_concat(pieces: &[&str]) -> Rc<str> {
    let len = pieces.iter().map(|p| p.len()).sum();
    let mut rc = Rc::<[u8]>::new_uninit_slice(len);
    let dst = Rc::get_mut(&mut rc).expect("a new Rc is not shared");
    let mut at = 0;
    for p in pieces {
        dst[at..at + p.len()].copy_from_slice(as_uninit(p.as_bytes()));
        at += p.len();
    }
    // SAFETY: every byte was written above; the bytes are `str`s one after another, so UTF-8,
    // and `Rc<[u8]>` and `Rc<str>` have the same layout (what `Rc::<str>::from` itself relies on).
    unsafe { Rc::from_raw(Rc::into_raw(rc.assume_init()) as *const str) }
}

/// Initialised bytes seen as possibly uninitialised ones (always sound), to copy them with
/// `copy_from_slice` (one `memcpy`) into memory not yet written.
fn as_uninit(b: &[u8]) -> &[std::mem::MaybeUninit<u8>] {
    // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and any `u8` is a valid one.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast(), b.len()) }
}

/// The two pieces an `OpKind::Cut` keeps of `text` (ABI 1.8): its first `head` bytes and its
/// last `tail` bytes, or `None` when a cut falls off a character boundary or they overlap.
pub fn cut_pieces(text: &str, head: u64, tail: u64) -> Option<(&str, &str)> {
    let n = text.len() as u64;
    if head.checked_add(tail)? > n {
        return None;
    }
    let (h, t) = (head as usize, (n - tail) as usize);
    Some((text.get(..h)?, text.get(t..)?))
}

/// ABI 1.4: a mask text holding NUL separators for a message with tool results gives each result
/// its own new content. With k results and k − 1 or k separators, the parts are the results'
/// contents in order, then (with k separators) the rest of the message's text; the message's text
/// is the parts joined by "\n", as the host flattens a message. Returns that text and each
/// result's byte span in it; `None` when the text is an ordinary placeholder.
pub(crate) fn split_results(text: &str, results: usize) -> Option<(String, Vec<(usize, usize)>)> {
    if results == 0 {
        return None;
    }
    // Separators past `results` make it an ordinary text whatever their number: stop there.
    // (memchr: an edit text of a message with one result is scanned at memory speed, where a
    // byte-by-byte count was 8 % of a LibreChat replay.)
    let n = memchr::memchr_iter(0, text.as_bytes())
        .take(results + 1)
        .count();
    if n == 0 || (n + 1 != results && n != results) {
        return None;
    }
    let mut joined = String::with_capacity(text.len());
    let mut spans = Vec::with_capacity(n + 1);
    for (k, part) in text.split('\0').enumerate() {
        if k > 0 {
            joined.push('\n');
        }
        let a = joined.len();
        joined.push_str(part);
        spans.push((a, joined.len()));
    }
    spans.truncate(results);
    Some((joined, spans))
}

/// Tokens of the message at `i` with `text` for its text, whose text now weighs `old_text`
/// (`counter.count_text(ctx.text(i))`): the message's per-message overheads stay, only the
/// text's share changes.
fn retokens(
    ctx: &Context<'_>,
    i: usize,
    old_text: u64,
    text: &str,
    counter: &dyn TokenCounter,
) -> u64 {
    ctx.views[i].tokens.saturating_sub(old_text) + counter.count_text(text)
}

/// What an edit of one message's text is, for the context's cache of edits: the host's own
/// truncation (a mask or offload text comes whole from the plugin).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EditSig<'d> {
    Truncate {
        head: u64,
        tail: u64,
        marker: &'d str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rc_concat_joins_the_pieces() {
        assert_eq!(&*rc_concat(&[]), "");
        assert_eq!(&*rc_concat(&["", "", ""]), "");
        assert_eq!(
            &*rc_concat(&["ab", "\n… [cut] …\n", "中文😀"]),
            "ab\n… [cut] …\n中文😀"
        );
        let long = "x→".repeat(5000);
        assert_eq!(&*rc_concat(&[&long, "", &long]), long.repeat(2));
    }

    #[test]
    fn truncation_keeps_head_marker_tail() {
        let t = |s: &str, h, tl, m: &str| truncated(s, s.chars().count() as u64, h, tl, m);
        assert_eq!(t("abcdefghij", 2, 3, "…").as_deref(), Some("ab…hij"));
        assert_eq!(t("abcdefghij", 2, 0, "[cut]").as_deref(), Some("ab[cut]"));
        assert_eq!(t("abcdefghij", 0, 1, "-").as_deref(), Some("-j"));
        assert_eq!(t("abc", 2, 1, "…"), None);
        assert_eq!(t("äöüßéèà", 1, 1, "-").as_deref(), Some("ä-à"));
        assert_eq!(t("äöüßéèà", 2, 3, "-").as_deref(), Some("äö-éèà"));
    }
}
