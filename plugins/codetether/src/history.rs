//! One agent's history as CodeTether sees it, kept incrementally between calls.
//!
//! CodeTether derives every step's context from a clone of the full, append-only history
//! (`src/session/context/derive.rs` `derive_context`). The plugin never edits the host's history
//! with a compaction (its summaries and truncations are this-call view filters), so the history
//! the host hands over only grows: what CodeTether recomputes per step from the whole history is
//! kept here and extended by the new messages only. Per message: its estimate, whether it anchors
//! the active tail, and where the tool pairs around it end.

use crate::estimate::{Span, IMAGE_TOKENS};
use ctxlab_plugin_api::hash::FnvMap;
use ctxlab_plugin_api::{Msg, Role};
use std::cell::RefCell;

/// Longest text `is_short_continuation` still compares (active_tail.rs, SHORT_CONTINUATION_CHARS).
const SHORT_CONTINUATION_CHARS: usize = 80;
/// The short follow-ups that do not anchor the active task (active_tail.rs `is_short_continuation`).
const CONTINUATIONS: &[&str] = &[
    "continue",
    "status",
    "resume",
    "go on",
    "keep going",
    "hey",
    "ok",
    "okay",
    "yes",
    "y",
];

/// How CodeTether's message list would hold this message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Role::User` with text: an active-tail anchor candidate.
    User {
        substantive: bool,
    },
    /// Tool results only (`Role::Tool`): pair repair drops it when its calls are gone.
    ToolResults,
    Other,
}

pub(crate) struct Entry {
    pub id: u64,
    pub kind: Kind,
    /// CodeTether's estimate of the message as derived (after tool-output dedup).
    pub est: u64,
    /// Estimate of its text parts only (what the oversized-last-message rule measures).
    pub text_est: u64,
    /// With the host's parts: the estimate of its thinking parts (what thinking prune removes).
    pub thinking: Option<u64>,
    /// Latest position of a call this message's results answer (for pair repair); `None` when
    /// it answers no call of the history.
    pub answers_up_to: Option<u32>,
}

pub(crate) struct History {
    pub entries: Vec<Entry>,
    /// `cum[i]`: sum over positions `< i` of each message's estimate when it arrived; the passes
    /// that lower it later (prune, dedup) add their changes to `adj`.
    cum: Vec<u64>,
    adj: Deltas,
    /// The same over the host's token counts, lowered to 0 where a dedup marker replaced the
    /// message (a lower bound of what the host holds).
    host_cum: Vec<u64>,
    host_adj: Deltas,
    /// Positions of user messages, and of the substantive ones, ascending.
    users: Vec<usize>,
    substantive: Vec<usize>,
    /// Positions of the user messages with text: the turns `render_toc` lists.
    toc_users: Vec<usize>,
    /// The last dropped-range index rendered: (start, base, lines) and its lines joined, with
    /// their span. The cascade compresses from the same start at every call, so the first ten
    /// user turns it lists are the same: rendered once.
    toc: RefCell<TocCache>,
    /// `reach[q]`: the latest position of a result answering a call made before position `q`
    /// (0 when none): cut `q` is safe when `reach[q] < q`.
    reach: Vec<u32>,
    calls: FnvMap<Vec<u8>, u32>,
    /// Tool-output dedup (experimental/dedup.rs): first sighting of each large result.
    seen: FnvMap<(u64, u64), String>,
    dedup_upto: usize,
    thinking_upto: usize,
    lingua_upto: usize,
    /// Pair repair's placeholders (experimental/pairing.rs `repair_orphans`): an assistant tool
    /// call whose id no tool-result message of the list answers gets a tool message of
    /// `PLACEHOLDER` right after its message. `placeholders` counts them per position; the
    /// calls still waiting, by id; the ids answered so far.
    pub placeholders: Deltas,
    pending: FnvMap<Vec<u8>, Vec<u32>>,
    fulfilled: FnvMap<Vec<u8>, ()>,
    /// The first cascade step's prefix, chunked incrementally (derive.rs `compress`).
    pub stream: RefCell<PrefixStream>,
    /// The buffer a later cascade step renders its prefix into (derive.rs `compress`), reused
    /// from call to call rather than grown again from empty.
    pub context: RefCell<String>,
    /// The dedup markers CodeTether's list holds: position → (result ordinal, marker).
    pub dedup_markers: FnvMap<usize, Vec<(usize, String)>>,
    /// Dedup markers decided but not yet sent to the host as edits: (position, placeholder).
    pub pending_masks: Vec<(usize, String)>,
    /// Prefixes compressed at an earlier step: their background RLM summary is cached by now.
    pub compressed: FnvSet,
}

/// The content of pair repair's placeholder result (pairing.rs `repair_orphans`).
pub(crate) const PLACEHOLDER: &str = "[tool result unavailable: elided by context management]";
/// Its estimate: 55 bytes, 6 of them spaces (10.9 %: 3.6 bytes a token).
pub(crate) const PLACEHOLDER_TOKENS: u64 = 16;

/// The identity of a tool result's content for dedup: its length and a 64-bit hash read eight
/// bytes at a time in two lanes (FNV over every byte was a tenth of a call's cost: every result
/// of 256 bytes or more is hashed once, when it ages past the last eight messages).
fn content_key(body: &[u8]) -> (u64, u64) {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
    let (mut a, mut c) = (K1 ^ body.len() as u64, K2);
    let mut runs = body.chunks_exact(16);
    for r in &mut runs {
        a = (a ^ word(&r[..8])).wrapping_mul(K2).rotate_left(31);
        c = (c ^ word(&r[8..])).wrapping_mul(K1).rotate_left(29);
    }
    for &b in runs.remainder() {
        a = (a ^ b as u64).wrapping_mul(K2).rotate_left(31);
    }
    let mut h = a ^ c.rotate_left(17).wrapping_mul(K1);
    h ^= h >> 32;
    h = h.wrapping_mul(K2);
    (h ^ (h >> 29), body.len() as u64)
}

/// The history's first `upto` positions rendered (`render::message`, list indices from 0) and
/// chunked as they were appended.
#[derive(Default)]
pub(crate) struct PrefixStream {
    pub stream: crate::chunker::Stream,
    pub upto: usize,
    /// The next list index.
    pub idx: usize,
    /// Per position rendered: its first line and its list index.
    first_line: Vec<u64>,
    index: Vec<u32>,
    lines: u64,
    buf: String,
}

impl PrefixStream {
    /// Renders and chunks positions up to `end`; starts again if it went past it.
    pub fn extend(
        &mut self,
        call: &ctxlab_plugin_api::Call<'_>,
        h: &History,
        end: usize,
        len: usize,
    ) {
        if self.upto > end {
            *self = PrefixStream::default();
        }
        if self.upto == 0 {
            self.stream = crate::chunker::Stream::new();
        }
        while self.upto < end {
            self.buf.clear();
            self.first_line.push(self.lines);
            self.index.push(self.idx as u32);
            self.idx += crate::render::message(&mut self.buf, self.idx, call, h, self.upto, len);
            self.lines += self.stream.push(&self.buf);
            self.upto += 1;
        }
    }

    /// Appends lines `a..=b` of the rendered prefix, joined by "\n": the messages holding them
    /// are rendered again, as they were.
    pub fn lines_into(
        &self,
        call: &ctxlab_plugin_api::Call<'_>,
        h: &History,
        len: usize,
        a: u64,
        b: u64,
        out: &mut String,
    ) {
        let mut p = self
            .first_line
            .partition_point(|&l| l <= a)
            .saturating_sub(1);
        let mut buf = String::new();
        let mut first = true;
        while p < self.upto && self.first_line[p] <= b {
            buf.clear();
            crate::render::message(&mut buf, self.index[p] as usize, call, h, p, len);
            for (k, line) in buf.lines().enumerate() {
                let n = self.first_line[p] + k as u64;
                if n < a || n > b {
                    continue;
                }
                if !first {
                    out.push('\n');
                }
                out.push_str(line);
                first = false;
            }
            p += 1;
        }
    }
}

/// A set of hashes (the compressed prefixes' keys), hashed with FNV rather than SipHash.
pub(crate) type FnvSet =
    std::collections::HashSet<u64, std::hash::BuildHasherDefault<ctxlab_plugin_api::hash::Fnv>>;

#[derive(Default)]
pub(crate) struct TocCache {
    key: Option<(usize, usize, usize)>,
    text: String,
    span: Span,
}

/// dropped_toc.rs `EXCERPT_CHARS`.
const TOC_EXCERPT_CHARS: usize = 70;

/// One line of `render_toc`: `  [turn N] ` and `first_text_excerpt` (the first line of the
/// trimmed text, 70 chars, `…` when longer).
fn toc_line(out: &mut String, turn: usize, text: &str) {
    use std::fmt::Write;
    let line = text.trim().lines().next().unwrap_or_default();
    let _ = write!(out, "  [turn {turn}] ");
    let mut chars = line.chars();
    out.extend(chars.by_ref().take(TOC_EXCERPT_CHARS));
    if chars.next().is_some() {
        out.push('…');
    }
}

/// `is_short_continuation` on a user message's text.
pub(crate) fn is_short_continuation(text: &str) -> bool {
    let t = text.trim();
    if t.len() > SHORT_CONTINUATION_CHARS {
        return false;
    }
    let lower = t.to_ascii_lowercase();
    let trimmed = lower.trim_matches(|c: char| c.is_ascii_punctuation());
    CONTINUATIONS.contains(&trimmed)
}

/// Whether CodeTether would hold `m` as a tool-results message (its results in a `Role::Tool`).
pub(crate) fn is_tool_result(m: &Msg<'_>) -> bool {
    m.role() == Role::Tool || (m.has_tool_results() && m.role() != Role::Assistant)
}

/// One message's parts as CodeTether estimates them (`estimate_tokens_for_part`: each part on
/// its own). With the host's part boundaries (ABI 1.6, `Call::parts`) every text and thinking
/// part is its own; without them (an edited message, a summary, an older host) the text parts
/// are what the flattened text holds besides the tool bodies, as one part.
pub(crate) struct Parts {
    /// The text parts joined by "\n": what the oversized-last-message rule measures
    /// (`oversized_text.rs` `extract_message_text`).
    pub text: Span,
    /// Each text or thinking part on its own, with its kind.
    pub texts: Vec<(Span, TextKind)>,
    /// (span as estimated, is a result, body bytes).
    pub tools: Vec<(Span, bool, u64)>,
    pub images: u64,
    /// The host described the parts.
    pub exact: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextKind {
    Text,
    Thinking,
}

/// A tool part as `estimate_tokens_for_part` estimates it: a result's content, or a call's
/// `id + ' ' + name + ' ' + arguments`.
fn tool_span(t: &ctxlab_plugin_api::Tool<'_>, body: Span) -> Span {
    if t.is_result() {
        body
    } else {
        Span::of_bytes(t.id_bytes())
            .plus(Span::of(t.name()))
            .plus(body)
            .plus(Span { bytes: 2, ws: 2 })
    }
}

impl Parts {
    pub fn of(call: &ctxlab_plugin_api::Call<'_>, p: usize) -> Parts {
        let m = call.msg(p);
        if let Some(parts) = call.parts(p) {
            use ctxlab_plugin_api::PartKind;
            let mut out = Parts {
                text: Span::default(),
                texts: Vec::new(),
                tools: Vec::new(),
                images: m.images() as u64,
                exact: true,
            };
            let mut tools = m.tools();
            let mut text_parts = 0u64;
            for (kind, bytes) in parts {
                match kind {
                    PartKind::Text => {
                        let sp = Span::of_bytes(bytes);
                        out.text = out.text.plus(sp);
                        text_parts += 1;
                        out.texts.push((sp, TextKind::Text));
                    }
                    PartKind::Thinking => {
                        out.texts.push((Span::of_bytes(bytes), TextKind::Thinking))
                    }
                    PartKind::ToolCall | PartKind::ToolResult => {
                        if let Some(t) = tools.next() {
                            let body = Span::of_bytes(bytes);
                            out.tools
                                .push((tool_span(&t, body), t.is_result(), body.bytes));
                        }
                    }
                    PartKind::Other(_) => {}
                }
            }
            let seps = text_parts.saturating_sub(1);
            out.text = out.text.plus(Span {
                bytes: seps,
                ws: seps,
            });
            return out;
        }
        let text = m.text_bytes();
        let mut bodies = Span::default();
        let mut tools = Vec::new();
        // A message of one part: the host's text is that part (the same bytes), all in the tool.
        let mut only_tool = false;
        for t in m.tools() {
            let b = t.body_bytes();
            only_tool = tools.is_empty() && std::ptr::eq(b, text);
            let body = Span::of_bytes(b);
            bodies = bodies.plus(body).plus(Span { bytes: 1, ws: 1 });
            tools.push((tool_span(&t, body), t.is_result(), body.bytes));
        }
        // The host joins parts with '\n'; what is left after the tool bodies is the text parts.
        let text = if tools.is_empty() {
            Span::of_bytes(text)
        } else if only_tool && tools.len() == 1 {
            Span::default()
        } else {
            Span::of_bytes(text).minus(bodies)
        };
        Parts {
            text,
            texts: if text.bytes > 0 {
                vec![(text, TextKind::Text)]
            } else {
                Vec::new()
            },
            tools,
            images: m.images() as u64,
            exact: false,
        }
    }
    /// Tokens of its thinking parts (0 when the parts are not described).
    pub fn thinking_tokens(&self) -> u64 {
        self.texts
            .iter()
            .filter(|t| t.1 == TextKind::Thinking)
            .map(|t| t.0.tokens())
            .sum()
    }
    pub fn tokens(&self) -> u64 {
        self.texts.iter().map(|t| t.0.tokens()).sum::<u64>()
            + self.tools.iter().map(|t| t.0.tokens()).sum::<u64>()
            + self.images * IMAGE_TOKENS
    }
}

impl History {
    pub fn new() -> History {
        History {
            entries: Vec::new(),
            cum: vec![0],
            adj: Deltas::default(),
            host_cum: vec![0],
            host_adj: Deltas::default(),
            users: Vec::new(),
            substantive: Vec::new(),
            toc_users: Vec::new(),
            toc: RefCell::new(TocCache::default()),
            reach: vec![0],
            calls: FnvMap::default(),
            seen: FnvMap::default(),
            dedup_upto: 0,
            thinking_upto: 0,
            lingua_upto: 0,
            stream: RefCell::new(PrefixStream::default()),
            context: RefCell::new(String::new()),
            dedup_markers: FnvMap::default(),
            placeholders: Deltas::default(),
            pending: FnvMap::default(),
            fulfilled: FnvMap::default(),
            pending_masks: Vec::new(),
            compressed: Default::default(),
        }
    }

    /// Whether the first `len` messages of the view are the ones this history holds.
    pub fn matches(&self, call: &ctxlab_plugin_api::Call<'_>) -> bool {
        let n = self.entries.len();
        n <= call.len() && (n == 0 || call.msg(n - 1).id() == self.entries[n - 1].id)
    }

    /// Appends the messages of the view this history has not seen yet.
    pub fn sync(&mut self, call: &ctxlab_plugin_api::Call<'_>) {
        for p in self.entries.len()..call.len() {
            let m = call.msg(p);
            let parts = Parts::of(call, p);
            let kind = if is_tool_result(&m) {
                Kind::ToolResults
            } else if m.role() == Role::User {
                Kind::User {
                    substantive: !is_short_continuation(m.text()),
                }
            } else {
                Kind::Other
            };
            match kind {
                Kind::User { substantive } => {
                    self.users.push(p);
                    if !m.text().trim().is_empty() {
                        self.toc_users.push(p);
                    }
                    if substantive {
                        self.substantive.push(p);
                    }
                }
                Kind::ToolResults | Kind::Other => {}
            }
            // Cut p + 1 (after this message) is reached by whatever reached cut p.
            let carried = *self.reach.last().unwrap_or(&0);
            self.reach.push(carried);
            let mut answers_up_to: Option<u32> = None;
            for t in m.tools() {
                if !t.is_result() {
                    self.calls.insert(t.id_bytes().to_vec(), p as u32);
                } else if let Some(&c) = self.calls.get(t.id_bytes()) {
                    answers_up_to = Some(answers_up_to.map_or(c, |a| a.max(c)));
                    if (c as usize) < p {
                        // Cuts c+1..=p separate the call from this result.
                        for q in c as usize + 1..=p {
                            if self.reach[q] < p as u32 {
                                self.reach[q] = p as u32;
                            }
                        }
                    }
                }
            }
            let est = parts.tokens();
            let text_est = parts.text.tokens();
            self.cum.push(self.cum[p] + est);
            self.adj.push();
            self.host_cum.push(self.host_cum[p] + m.tokens());
            self.host_adj.push();
            self.placeholders.push();
            self.entries.push(Entry {
                id: m.id(),
                kind,
                est,
                text_est,
                thinking: parts.exact.then(|| parts.thinking_tokens()),
                answers_up_to,
            });
            // repair_orphans: a call no tool-result message answers gets a placeholder; a
            // tool-result message answers every call of its ids, earlier or later.
            if kind == Kind::ToolResults {
                for t in m.tools().filter(|t| t.is_result()) {
                    if self.fulfilled.insert(t.id_bytes().to_vec(), ()).is_none() {
                        for q in self.pending.remove(t.id_bytes()).unwrap_or_default() {
                            // A placeholder already chunked goes: chunk again from scratch.
                            if (q as usize) < self.stream.get_mut().upto {
                                *self.stream.get_mut() = PrefixStream::default();
                            }
                            self.placeholders.add(q as usize, -1);
                            self.adj.add(q as usize, -(PLACEHOLDER_TOKENS as i64));
                        }
                    }
                }
            } else if m.role() == Role::Assistant {
                for t in m.tools().filter(|t| !t.is_result()) {
                    if !self.fulfilled.contains_key(t.id_bytes()) {
                        self.pending
                            .entry(t.id_bytes().to_vec())
                            .or_default()
                            .push(p as u32);
                        self.placeholders.add(p, 1);
                        self.adj.add(p, PLACEHOLDER_TOKENS as i64);
                    }
                }
            }
        }
    }

    /// Sum of the estimates of positions `a..b`.
    pub fn est(&self, a: usize, b: usize) -> u64 {
        ((self.cum[b] - self.cum[a]) as i64 + self.adj.sum(a, b)) as u64
    }

    /// At least the host's tokens of positions `a..b`.
    pub fn host_tokens(&self, a: usize, b: usize) -> u64 {
        ((self.host_cum[b] - self.host_cum[a]) as i64 + self.host_adj.sum(a, b)) as u64
    }

    /// Whether call id `id` has a placeholder (no tool-result message answers it).
    pub fn unanswered(&self, id: &[u8]) -> bool {
        !self.fulfilled.contains_key(id)
    }

    /// The host now holds a dedup marker at `p`: count it as nothing (a lower bound).
    pub fn masked(&mut self, p: usize) {
        let old = self.host_tokens(p, p + 1);
        self.host_adj.add(p, -(old as i64));
    }

    /// Cut `q` (between positions q − 1 and q) separates no tool call from its result.
    pub fn safe_cut(&self, q: usize) -> bool {
        q == 0 || q >= self.entries.len() || (self.reach[q] as usize) < q
    }

    /// The newest user message at or after `from` (substantive ones first), as
    /// `active_user_tail_start`'s `user_anchor` finds it.
    pub fn anchor(&self, from: usize) -> Option<usize> {
        let last = |v: &[usize]| v.last().copied().filter(|&p| p >= from);
        last(&self.substantive).or_else(|| last(&self.users))
    }

    /// `render_toc` over history positions `start..end` listed from turn `base`: how many user
    /// turns with text it holds, and the span of its first ten lines joined by newlines.
    pub fn toc_lines(
        &self,
        call: &ctxlab_plugin_api::Call<'_>,
        start: usize,
        base: usize,
        end: usize,
    ) -> (usize, Span) {
        let from = self.toc_users.partition_point(|&p| p < start);
        let n = self.toc_users.partition_point(|&p| p < end) - from;
        let k = n.min(crate::derive::TOC_ENTRIES);
        let mut c = self.toc.borrow_mut();
        if c.key != Some((start, base, k)) {
            c.text.clear();
            for (i, &p) in self.toc_users[from..from + k].iter().enumerate() {
                if i > 0 {
                    c.text.push('\n');
                }
                toc_line(&mut c.text, base + p - start, call.msg(p).text());
            }
            c.span = Span::of(&c.text);
            c.key = Some((start, base, k));
        }
        (n, c.span)
    }

    /// The lines `toc_lines` last rendered.
    pub fn with_toc_text(&self, f: impl FnOnce(&str)) {
        f(&self.toc.borrow().text)
    }

    /// experimental/dedup.rs `dedup_tool_outputs`, extended to the messages that have aged past
    /// the last `keep_last` since the previous call: a result of `min_bytes` or more identical to
    /// an earlier one becomes `[DEDUP] identical to tool_call_id=<first> (<N> bytes)`. Once a
    /// message is eligible it stays so and its first sighting never changes, so the marker is
    /// what every later derivation sends: it is kept as a persistent edit of the message.
    pub fn dedup(
        &mut self,
        call: &ctxlab_plugin_api::Call<'_>,
        keep_last: usize,
        min_bytes: usize,
    ) {
        let eligible = self.entries.len().saturating_sub(keep_last);
        for p in self.dedup_upto..eligible {
            let m = call.msg(p);
            if !m.has_tool_results() {
                continue;
            }
            let mut markers: Vec<String> = Vec::new();
            let mut all = true;
            let mut saved = 0u64;
            let mut at = Vec::new();
            for (j, t) in m.tools().filter(|t| t.is_result()).enumerate() {
                let body = t.body_bytes();
                if body.len() < min_bytes {
                    all = false;
                    continue;
                }
                let key = content_key(body);
                match self.seen.get(&key) {
                    Some(first) => {
                        let marker = format!(
                            "[DEDUP] identical to tool_call_id={first} ({} bytes)",
                            body.len()
                        );
                        saved += Span::of_bytes(body)
                            .tokens()
                            .saturating_sub(Span::of(&marker).tokens());
                        at.push((j, marker.clone()));
                        markers.push(marker);
                    }
                    None => {
                        all = false;
                        self.seen.insert(key, t.id().to_string());
                    }
                }
            }
            if markers.is_empty() {
                continue;
            }
            self.set_est(p, self.entries[p].est.saturating_sub(saved));
            self.dedup_markers.insert(p, at);
            let only_results = m.role() != Role::Assistant && {
                let parts = Parts::of(call, p);
                if parts.exact {
                    parts.text.bytes == 0
                } else {
                    parts.text.bytes <= m.tools().count() as u64
                }
            };
            if all && only_results && !m.is_pinned() {
                self.pending_masks.push((p, markers.join("\n")));
            }
        }
        self.dedup_upto = self.dedup_upto.max(eligible);
    }

    /// thinking_prune.rs `prune_thinking` and lingua.rs `prune_low_entropy` on the messages that
    /// have aged past their windows since the previous call (prune.rs): CodeTether's estimate of
    /// those messages drops by what the passes remove.
    pub fn prune(&mut self, call: &ctxlab_plugin_api::Call<'_>) {
        use crate::prune::*;
        let len = self.entries.len();
        for p in self.thinking_upto..len.saturating_sub(THINKING_KEEP_LAST) {
            let m = call.msg(p);
            if m.role() != Role::Assistant {
                continue;
            }
            // With the host's parts, the thinking parts' own estimates go.
            let saved = match self.entries[p].thinking {
                Some(t) => t,
                None => {
                    let Some(thinking) = thinking_bytes(&m).filter(|&t| t > 0) else {
                        continue;
                    };
                    let text = Parts::of(call, p).text;
                    let ws = thinking * text.ws / text.bytes.max(1);
                    // With the thinking goes the newline that joined it to the text.
                    let kept = text.minus(Span {
                        bytes: thinking + 1,
                        ws: ws + 1,
                    });
                    text.tokens().saturating_sub(kept.tokens())
                }
            };
            if saved > 0 {
                self.set_est(p, self.entries[p].est.saturating_sub(saved));
            }
        }
        self.thinking_upto = self
            .thinking_upto
            .max(len.saturating_sub(THINKING_KEEP_LAST));
        for p in self.lingua_upto..len.saturating_sub(LINGUA_KEEP_LAST) {
            let m = call.msg(p);
            if m.role() != Role::Assistant {
                continue;
            }
            let saved = match call.parts(p) {
                // lingua.rs prunes each text part of an assistant message on its own.
                Some(parts) => parts
                    .filter(|(k, _)| *k == ctxlab_plugin_api::PartKind::Text)
                    .map(|(_, b)| {
                        let t = crate::render::part_str(m.text(), b);
                        Span::of(t).tokens().saturating_sub(pruned_span(t).tokens())
                    })
                    .sum(),
                None => {
                    if m.has_tool_calls() || thinking_bytes(&m) != Some(0) {
                        continue;
                    }
                    let text = m.text();
                    Span::of(text)
                        .tokens()
                        .saturating_sub(pruned_span(text).tokens())
                }
            };
            if saved > 0 {
                self.set_est(p, self.entries[p].est.saturating_sub(saved));
            }
        }
        self.lingua_upto = self.lingua_upto.max(len.saturating_sub(LINGUA_KEEP_LAST));
    }

    fn set_est(&mut self, p: usize, est: u64) {
        let old = self.entries[p].est;
        self.entries[p].est = est;
        self.adj.add(p, est as i64 - old as i64);
    }
}

/// Changes to per-position values, summed over ranges in O(log n) (a Fenwick tree that grows
/// by one position per message): lowering an old message's estimate costs no pass over the
/// positions after it, so the per-call work stays flat however long the history.
#[derive(Default)]
pub(crate) struct Deltas {
    /// 1-based: `t[i]` sums the changes at positions `i − lowbit(i) .. i`.
    t: Vec<i64>,
}

impl Deltas {
    /// A new position, unchanged.
    pub fn push(&mut self) {
        if self.t.is_empty() {
            self.t.push(0);
        }
        let i = self.t.len();
        let low = i & i.wrapping_neg();
        // `t[i]` covers positions i − low .. i, of which the new one holds nothing yet.
        let v = self.prefix(i - 1) - self.prefix(i - low);
        self.t.push(v);
    }
    pub fn add(&mut self, p: usize, d: i64) {
        let mut i = p + 1;
        while i < self.t.len() {
            self.t[i] += d;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum of the changes at positions `< n`.
    fn prefix(&self, n: usize) -> i64 {
        let mut i = n;
        let mut s = 0;
        while i > 0 {
            s += self.t[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
    /// Sum of the changes at positions `a..b`.
    pub fn sum(&self, a: usize, b: usize) -> i64 {
        self.prefix(b) - self.prefix(a)
    }
}

#[cfg(test)]
mod deltas_tests {
    use super::Deltas;

    /// Range sums equal a plain array's while positions are added and changed in any order.
    #[test]
    fn deltas_sum_like_an_array() {
        let mut d = Deltas::default();
        let mut plain: Vec<i64> = Vec::new();
        let mut x: u64 = 7;
        for step in 0..600 {
            d.push();
            plain.push(0);
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let p = (x >> 33) as usize % plain.len();
            let v = ((x >> 13) % 41) as i64 - 20;
            d.add(p, v);
            plain[p] += v;
            let a = (x >> 20) as usize % plain.len();
            let b = a + (x >> 40) as usize % (plain.len() - a + 1);
            assert_eq!(d.sum(a, b), plain[a..b].iter().sum::<i64>(), "step {step}");
        }
    }
}
