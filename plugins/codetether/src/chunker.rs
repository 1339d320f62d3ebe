//! CodeTether's chunker fallback, `RlmChunker::compress(content, max_tokens, None)`
//! (codetether-rlm 0.1.1 `src/chunker/compress.rs`: `chunk`, then `select_chunks`, then
//! `reassemble`), re-implemented from its description:
//!
//! - **chunk** (`chunk.rs`, `boundaries.rs`): the content's lines (`str::lines`) are cut before
//!   every *boundary* line — trimmed, it opens a conversation turn (`[User]:`, `[Assistant]:`), a
//!   tool block (`[Tool `), a code fence, a path (`/`, `./`, `~/`), a definition (`function`,
//!   `class `, `def `, `async function`, `export`, `fn `, `impl `, `struct `, `enum `), an error
//!   (`error…` or `…error:…` in any case, `Exception…`, `…FAILED…`) or a `# ` heading. A chunk is
//!   its lines joined by "\n", estimated whole (`estimate.rs`); over `max_chunk_tokens` (4,000,
//!   `ChunkOptions::default`) it is split again line by line (`split.rs` `split_large_chunk`):
//!   a piece closes before the line that would take the sum of its lines' own estimates past
//!   4,000, and that sum is the piece's size. Every chunk gets priority 3 (`flush_chunk` and
//!   `split_large_chunk` set it whatever the boundary's kind), so the boundaries' priorities and
//!   `preserve_recent` never reach the selection.
//! - **select** (`select.rs`): the newest chunk first (priority ties are broken by the later
//!   start line), each taken while the running total stays within `max_tokens`; a chunk that does
//!   not fit is skipped and older, smaller ones may still be taken.
//! - **reassemble** (`reassemble.rs`): the taken chunks in order, joined by "\n", with
//!   `\n[... N lines omitted ...]\n` between two that are not adjacent.

#[cfg(test)]
use crate::estimate::estimate_tokens;
use crate::estimate::Span;

/// `ChunkOptions::default().max_chunk_tokens`.
pub const MAX_CHUNK_TOKENS: u64 = 4_000;

/// Whether a line opens a chunk (`find_boundaries`). Every line of a compressed prefix is asked
/// once: the prefixes are checked by the trimmed line's first byte, and one pass over its bytes
/// finds `error:` (any case) and `FAILED` anywhere.
#[cfg(test)]
pub fn is_boundary(line: &str) -> bool {
    boundary(line, true)
}

/// `is_boundary`, told whether the line holds a `:` or a `D` at all (`scan`: without one neither
/// `error:` nor `FAILED` can be in it, and the byte scan is skipped; `scan_line` finds that out
/// in the same pass that counts the line's whitespace).
fn boundary(line: &str, scan: bool) -> bool {
    let t = line.trim();
    let b = t.as_bytes();
    let Some(&first) = b.first() else {
        return false;
    };
    let starts = |p: &[u8]| b.starts_with(p);
    let by_start = match first {
        b'[' => starts(b"[User]:") || starts(b"[Assistant]:") || starts(b"[Tool "),
        b'`' => starts(b"```"),
        b'/' => true,
        b'.' => starts(b"./"),
        b'~' => starts(b"~/"),
        b'f' => starts(b"function") || starts(b"fn "),
        b'c' => starts(b"class "),
        b'd' => starts(b"def "),
        b'a' => starts(b"async function"),
        b'i' => starts(b"impl "),
        b's' => starts(b"struct "),
        b'E' => starts(b"Exception"),
        // `# ` heading: more than two bytes, the second character a space.
        b'#' => b.len() > 2 && b[1] == b' ',
        _ => false,
    } || (first | 0x20 == b'e'
        && (starts(b"export")
            || starts(b"enum ")
            || b.len() >= 5 && b[..5].eq_ignore_ascii_case(b"error")));
    if by_start {
        return true;
    }
    if !scan {
        return false;
    }
    // `to_lowercase().contains("error:")` (no non-ASCII character lowercases to an ASCII letter
    // of "error", so ASCII case folding is the same test) and `contains("FAILED")`.
    for i in 5..b.len() {
        match b[i] {
            b':' if b[i - 5..i].eq_ignore_ascii_case(b"error") => return true,
            b'D' if b[i - 5..=i] == *b"FAILED" => return true,
            _ => {}
        }
    }
    false
}

/// `str::lines`: split on "\n", a trailing "\r" removed from each line, no last empty line.
#[cfg(test)]
pub fn lines(content: &str) -> Vec<&str> {
    content.lines().collect()
}

/// One line of a text as `str::lines` gives it, with its span, whether it holds a `:` or a `D`,
/// and the span of what ends it ("\n", "\r\n" or nothing).
struct ScannedLine<'t> {
    text: &'t str,
    span: Span,
    colon_or_d: bool,
    end: Span,
}

/// Bytes of `b` that are ASCII whitespace, and whether any is `:` or `D`: one pass, in runs of
/// 255 into byte-wide sums so it compiles to vector compares.
fn scan_bytes(b: &[u8]) -> (u64, bool) {
    let mut n = 0u64;
    let mut hit = 0u8;
    for run in b.chunks(255) {
        let mut c = 0u8;
        for &x in run {
            c += ((x == b' ') | ((x.wrapping_sub(9) < 5) & (x != 11))) as u8;
            hit |= ((x == b':') | (x == b'D')) as u8;
        }
        n += c as u64;
    }
    (n, hit != 0)
}

/// The lines of `text` as `str::lines` splits them (on "\n", a "\r" before it removed; a last
/// line without "\n" keeps its "\r"), each measured in one pass; "\n" found with `memchr`.
fn scan_lines<'t>(text: &'t str, mut f: impl FnMut(ScannedLine<'t>)) {
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        let (raw_end, next, mut end) = match memchr::memchr(b'\n', &b[at..]) {
            Some(i) => (at + i, at + i + 1, Span { bytes: 1, ws: 1 }),
            None => (b.len(), b.len(), Span::default()),
        };
        let mut stop = raw_end;
        if next > raw_end && stop > at && b[stop - 1] == b'\r' {
            stop -= 1;
            end = Span { bytes: 2, ws: 2 };
        }
        let (ws, colon_or_d) = scan_bytes(&b[at..stop]);
        f(ScannedLine {
            // A line ends before an ASCII byte or at the end: a char boundary.
            text: &text[at..stop],
            span: Span {
                bytes: (stop - at) as u64,
                ws,
            },
            colon_or_d,
            end,
        });
        at = next;
    }
}

/// One chunk: its first and last line, its size as `select_chunks` sees it.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub start: usize,
    pub end: usize,
    pub tokens: u64,
}

/// Span of `lines[a..b]` joined by "\n".
#[cfg(test)]
fn joined(lines: &[&str], a: usize, b: usize) -> Span {
    let mut s = Span::default();
    for l in &lines[a..b] {
        s = s.plus(Span::of(l));
    }
    let seps = (b - a).saturating_sub(1) as u64;
    s.plus(Span {
        bytes: seps,
        ws: seps,
    })
}

/// `flush_chunk`: lines `a..b` as one chunk, or as `split_large_chunk`'s pieces.
#[cfg(test)]
fn flush(lines: &[&str], a: usize, b: usize, out: &mut Vec<Chunk>) {
    let tokens = joined(lines, a, b).tokens();
    if tokens <= MAX_CHUNK_TOKENS {
        out.push(Chunk {
            start: a,
            end: b - 1,
            tokens,
        });
        return;
    }
    let (mut start, mut sum) = (a, 0u64);
    for i in a..b {
        let t = estimate_tokens(lines[i]);
        if sum + t > MAX_CHUNK_TOKENS && i > start {
            out.push(Chunk {
                start,
                end: i - 1,
                tokens: sum,
            });
            start = i;
            sum = 0;
        }
        sum += t;
    }
    out.push(Chunk {
        start,
        end: b - 1,
        tokens: sum,
    });
}

/// `chunk(content, None)` over the content's lines.
#[cfg(test)]
pub fn chunk(lines: &[&str]) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, l) in lines.iter().enumerate() {
        if i > start && is_boundary(l) {
            flush(lines, start, i, &mut out);
            start = i;
        }
    }
    if start < lines.len() {
        flush(lines, start, lines.len(), &mut out);
    }
    out
}

/// `select_chunks`: newest first, each while it fits; returned in order.
#[cfg(test)]
pub fn select(chunks: &[Chunk], max_tokens: u64) -> Vec<Chunk> {
    let mut total = 0u64;
    let mut taken: Vec<Chunk> = chunks
        .iter()
        .rev()
        .filter(|c| {
            let fits = total + c.tokens <= max_tokens;
            if fits {
                total += c.tokens;
            }
            fits
        })
        .copied()
        .collect();
    taken.reverse();
    taken
}

/// `reassemble` of the taken chunks of `lines`.
#[cfg(test)]
pub fn reassemble(lines: &[&str], taken: &[Chunk]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut last: Option<usize> = None;
    for c in taken {
        if let Some(end) = last {
            out.push('\n');
            if c.start > end + 1 {
                let _ = write!(out, "\n[... {} lines omitted ...]\n\n", c.start - end - 1);
            }
        }
        for (k, l) in lines[c.start..=c.end].iter().enumerate() {
            if k > 0 {
                out.push('\n');
            }
            out.push_str(l);
        }
        last = Some(c.end);
    }
    out
}

/// `RlmChunker::compress(content, max_tokens, None)`: the text's lines measured in one pass
/// and chunked as `Stream` does, then reassembled from the taken runs.
#[cfg(test)]
pub fn compress(content: &str, max_tokens: u64) -> String {
    compress_measured(content, max_tokens).0
}

/// `compress`, and the span of its output.
pub fn compress_measured(content: &str, max_tokens: u64) -> (String, Span) {
    let mut st = Stream::new();
    let mut at: Vec<(u32, u32)> = Vec::with_capacity(content.len() / 64);
    let base = content.as_ptr() as usize;
    scan_lines(content, |l| {
        let a = l.text.as_ptr() as usize - base;
        at.push((a as u32, (a + l.text.len()) as u32));
        st.line(l.text, l.span, l.colon_or_d);
    });
    let (span, ranges) = st.compress_span(max_tokens);
    let mut out = String::with_capacity(span.bytes as usize);
    reassemble_ranges_into(&ranges, &mut out, |a, b, out| {
        for i in a..=b {
            if i > a {
                out.push('\n');
            }
            let (x, y) = at[i as usize];
            out.push_str(&content[x as usize..y as usize]);
        }
    });
    (out, span)
}

/// The chunker as written (`chunk`, `select`, `reassemble` over `lines`): what the tests
/// hold `compress` and `Stream` to.
#[cfg(test)]
pub fn compress_reference(content: &str, max_tokens: u64) -> String {
    let lines = lines(content);
    let chunks = chunk(&lines);
    let taken = select(&chunks, max_tokens);
    reassemble(&lines, &taken)
}

/// Bytes and whitespace that `reassemble` puts between two taken chunks `gap` lines apart: one
/// "\n", or with lines omitted "\n" + `\n[... N lines omitted ...]\n` + "\n".
fn joint(gap: u64) -> Span {
    if gap == 0 {
        Span { bytes: 1, ws: 1 }
    } else {
        let digits = gap.checked_ilog10().map_or(1, |d| d as u64 + 1);
        Span {
            bytes: 28 + digits,
            ws: 8,
        }
    }
}

/// One chunk of a stream: its lines, its size as `select_chunks` sees it, its text's span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rec {
    start: u64,
    end: u64,
    tokens: u64,
    span: Span,
}

/// The chunk being built: its first line, its lines joined, and while it is split
/// (`split_large_chunk`), the piece being built (the greedy split of a prefix of lines is a
/// prefix of the split of all of them, so the pieces before it are closed already).
#[derive(Clone, Debug, Default)]
struct Open {
    start: u64,
    lines: u64,
    joined: Span,
    /// The spans of its lines while it is not split: its pieces are only worked out once its
    /// lines joined go over `MAX_CHUNK_TOKENS`, which most chunks never do.
    spans: Vec<Span>,
    cur: Rec,
    cur_lines: u64,
    /// Its lines joined are over `MAX_CHUNK_TOKENS`: it will be split whatever follows, so the
    /// pieces closed so far are final and went to `Stream::closed` (the selection then finds
    /// them in O(log n), however long a stretch without boundary lines runs).
    split: bool,
}

/// Lines joined of at most this many bytes are within `MAX_CHUNK_TOKENS` at any band (2.8
/// bytes a token at the densest: 11,000 bytes are at most 3,929 tokens).
const SURE_FITS_BYTES: u64 = 11_000;

const NEWLINE: Span = Span { bytes: 1, ws: 1 };

/// Minimums over runs of 2^k values, appended one at a time: the newest value of at most `g`
/// before a position in O(log n).
#[derive(Clone, Debug, Default)]
struct MinTree {
    levels: Vec<Vec<u64>>,
}

impl MinTree {
    fn push(&mut self, v: u64) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        self.levels[0].push(v);
        let mut l = 0;
        while self.levels[l].len() > 1 {
            let j = (self.levels[l].len() - 1) / 2;
            let a = self.levels[l][2 * j];
            let m = self.levels[l].get(2 * j + 1).map_or(a, |&b| a.min(b));
            if self.levels.len() == l + 1 {
                self.levels.push(Vec::new());
            }
            let up = &mut self.levels[l + 1];
            if up.len() == j {
                up.push(m);
            } else {
                up[j] = m;
            }
            l += 1;
        }
    }
    /// The last index below `end` whose value is at most `g`.
    fn last_at_most(&self, end: usize, g: u64) -> Option<usize> {
        let (mut l, mut i) = (0, end);
        while i > 0 && l < self.levels.len() {
            if i % 2 == 1 {
                let j = i - 1;
                if self.levels[l][j] <= g {
                    return Some(self.descend(l, j, g));
                }
            }
            i /= 2;
            l += 1;
        }
        None
    }
    fn descend(&self, mut l: usize, mut j: usize, g: u64) -> usize {
        while l > 0 {
            let r = 2 * j + 1;
            j = if self.levels[l - 1].get(r).is_some_and(|&v| v <= g) {
                r
            } else {
                2 * j
            };
            l -= 1;
        }
        j
    }
}

/// `chunk` kept incrementally over a text that only grows at its end (a prefix of CodeTether's
/// rendered history whose messages no longer change), so `compress` of the text so far costs
/// O(log n) per run of taken chunks rather than a pass over the text.
#[derive(Clone, Debug)]
pub struct Stream {
    lines: u64,
    closed: Vec<Rec>,
    /// Prefix sums over `closed`: (tokens, bytes, whitespace).
    cum: Vec<(u64, u64, u64)>,
    mins: MinTree,
    open: Open,
    /// The span of all the text pushed.
    pub total: Span,
}

/// A derived `Default` would leave `cum` without its leading zero: every stream starts as `new`.
impl Default for Stream {
    fn default() -> Stream {
        Stream::new()
    }
}

impl Stream {
    pub fn new() -> Stream {
        Stream {
            lines: 0,
            closed: Vec::new(),
            cum: vec![(0, 0, 0)],
            mins: MinTree::default(),
            open: Open::default(),
            total: Span::default(),
        }
    }

    fn close(&mut self, r: Rec) {
        // `cum` starts with (0, 0, 0) (`new`, also behind `Default`), so it is never empty.
        let (t, b, w) = self.cum.last().copied().unwrap_or_default();
        self.cum
            .push((t + r.tokens, b + r.span.bytes, w + r.span.ws));
        self.mins.push(r.tokens);
        self.closed.push(r);
    }

    /// Appends text that ends with "\n" (a rendered message); returns how many lines it held.
    pub fn push(&mut self, text: &str) -> u64 {
        let before = self.lines;
        scan_lines(text, |l| {
            self.total = self.total.plus(l.span).plus(l.end);
            self.line(l.text, l.span, l.colon_or_d);
        });
        self.lines - before
    }

    /// One line of `span`; `scan`: it holds a `:` or a `D` (`boundary`).
    fn line(&mut self, line: &str, sp: Span, scan: bool) {
        if self.open.lines > 0 && boundary(line, scan) {
            self.flush_open();
        }
        let n = self.lines;
        self.lines += 1;
        let o = &mut self.open;
        if o.lines == 0 {
            o.start = n;
            o.joined = sp;
        } else {
            o.joined = o.joined.plus(sp).plus(NEWLINE);
        }
        o.lines += 1;
        if o.split {
            self.piece_line(n, sp);
            return;
        }
        o.spans.push(sp);
        if o.joined.bytes > SURE_FITS_BYTES && o.joined.tokens() > MAX_CHUNK_TOKENS {
            // `split_large_chunk` from its first line: the pieces before the last are final.
            o.split = true;
            o.cur_lines = 0;
            let (start, spans) = (o.start, std::mem::take(&mut o.spans));
            for (k, &sp) in spans.iter().enumerate() {
                self.piece_line(start + k as u64, sp);
            }
            self.open.spans = spans;
        }
    }

    /// `split_large_chunk`'s step for line `n`: a piece closes before the line that would take
    /// the sum of its lines' own estimates past `MAX_CHUNK_TOKENS`.
    fn piece_line(&mut self, n: u64, sp: Span) {
        let t = sp.tokens();
        let o = &mut self.open;
        if o.cur_lines > 0 && o.cur.tokens + t > MAX_CHUNK_TOKENS {
            o.cur.end = n - 1;
            o.cur_lines = 0;
            let r = o.cur;
            self.close(r);
        }
        let o = &mut self.open;
        if o.cur_lines == 0 {
            o.cur = Rec {
                start: n,
                end: n,
                tokens: t,
                span: sp,
            };
        } else {
            o.cur.tokens += t;
            o.cur.span = o.cur.span.plus(sp).plus(NEWLINE);
            o.cur.end = n;
        }
        o.cur_lines += 1;
    }

    /// Closes the open chunk (its last piece when split); a new one starts empty.
    fn flush_open(&mut self) {
        if let Some(r) = Self::chunk_of(&self.open) {
            self.close(r);
        }
        let o = &mut self.open;
        o.lines = 0;
        o.split = false;
        o.cur_lines = 0;
        o.spans.clear();
    }

    /// `flush_chunk` of the open chunk as it stands: the whole of it, or when split its last
    /// piece (the earlier ones are closed).
    fn chunk_of(o: &Open) -> Option<Rec> {
        if o.lines == 0 {
            None
        } else if o.split {
            Some(o.cur)
        } else {
            // Not split: its lines joined are within `MAX_CHUNK_TOKENS` (`line`).
            Some(Rec {
                start: o.start,
                end: o.start + o.lines - 1,
                tokens: o.joined.tokens(),
                span: o.joined,
            })
        }
    }

    /// The first closed chunk `j ≤ i` whose chunks `j..i` sum to at most `g` tokens: a
    /// galloping search back from `i` (most runs are short; the first can be long), then a
    /// binary one within the last step.
    fn fit_from(&self, i: usize, g: u64) -> usize {
        let top = self.cum[i].0;
        let over = |j: usize| top - self.cum[j].0 > g;
        let (mut lo, mut hi, mut step) = (0, i, 1);
        while step <= hi {
            let m = hi - step;
            if over(m) {
                lo = m;
                break;
            }
            hi = m;
            step *= 2;
        }
        lo + self.cum[lo..=hi].partition_point(|c| top - c.0 > g)
    }

    /// The span of `compress(text so far, max_tokens)`, and the line ranges (first, last) of
    /// the runs of taken chunks, in order: `Stream::text` writes the output from them.
    pub fn compress_span(&self, max_tokens: u64) -> (Span, Vec<(u64, u64)>) {
        let open = Self::chunk_of(&self.open);
        let tail = open.as_slice();
        let base = self.closed.len();
        // Taken chunks as runs of consecutive indices (newest first): (first, last).
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let take = |a: usize, b: usize, runs: &mut Vec<(usize, usize)>| match runs.last_mut() {
            Some(r) if r.0 == b + 1 => r.0 = a,
            _ => runs.push((a, b)),
        };
        let mut total = 0u64;
        for (k, c) in tail.iter().enumerate().rev() {
            if total + c.tokens <= max_tokens {
                total += c.tokens;
                take(base + k, base + k, &mut runs);
            }
        }
        let mut i = base;
        while i > 0 {
            let g = max_tokens - total;
            // The longest run ending at i − 1 that fits.
            let top = self.cum[i].0;
            let j = self.fit_from(i, g);
            if j < i {
                total += top - self.cum[j].0;
                take(j, i - 1, &mut runs);
                i = j;
            }
            if i == 0 {
                break;
            }
            // Chunk i − 1 does not fit: the newest older one that does.
            match self.mins.last_at_most(i - 1, max_tokens - total) {
                Some(k) => i = k + 1,
                None => break,
            }
        }
        let rec = |x: usize| {
            if x < base {
                self.closed[x]
            } else {
                tail[x - base]
            }
        };
        let mut out = Span::default();
        let mut prev_end: Option<u64> = None;
        let mut ranges = Vec::with_capacity(runs.len());
        for &(a, b) in runs.iter().rev() {
            let (first, last) = (rec(a), rec(b));
            ranges.push((first.start, last.end));
            if let Some(e) = prev_end {
                out = out.plus(joint(first.start - e - 1));
            }
            // Inside a run the chunks are joined by one "\n" each.
            let seps = (b - a) as u64;
            out = out.plus(Span {
                bytes: seps,
                ws: seps,
            });
            let closed_end = (b + 1).min(base);
            if a < closed_end {
                let (lo, hi) = (self.cum[a], self.cum[closed_end]);
                out = out.plus(Span {
                    bytes: hi.1 - lo.1,
                    ws: hi.2 - lo.2,
                });
            }
            for x in a.max(base)..=b {
                if x >= base {
                    out = out.plus(tail[x - base].span);
                }
            }
            prev_end = Some(last.end);
        }
        (out, ranges)
    }
}

/// `reassemble`'s text from the line ranges `compress_span` returned; `lines(a, b, out)`
/// appends lines `a..=b` of the text, joined by "\n". The tests' form of
/// `reassemble_ranges_into`.
#[cfg(test)]
pub fn reassemble_ranges(
    ranges: &[(u64, u64)],
    lines: impl FnMut(u64, u64, &mut String),
) -> String {
    let mut out = String::new();
    reassemble_ranges_into(ranges, &mut out, lines);
    out
}

/// `reassemble`'s text from the line ranges, appended to `out` (a later cascade step writes the previous summary
/// into its context without an intermediate string).
pub fn reassemble_ranges_into(
    ranges: &[(u64, u64)],
    out: &mut String,
    mut lines: impl FnMut(u64, u64, &mut String),
) {
    use std::fmt::Write;
    let mut last: Option<u64> = None;
    for &(a, b) in ranges {
        if let Some(end) = last {
            out.push('\n');
            if a > end + 1 {
                let _ = write!(out, "\n[... {} lines omitted ...]\n\n", a - end - 1);
            }
        }
        lines(a, b, out);
        last = Some(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find_boundaries` as written: every test on the trimmed line in turn.
    fn boundary_reference(line: &str) -> bool {
        let t = line.trim();
        let defs = [
            "function",
            "class ",
            "def ",
            "async function",
            "export",
            "fn ",
            "impl ",
            "struct ",
            "enum ",
        ];
        let low = t.to_lowercase();
        t.starts_with("[User]:")
            || t.starts_with("[Assistant]:")
            || t.starts_with("[Tool ")
            || t.starts_with("```")
            || t.starts_with('/')
            || t.starts_with("./")
            || t.starts_with("~/")
            || defs.iter().any(|p| t.starts_with(p))
            || low.starts_with("error")
            || low.contains("error:")
            || t.starts_with("Exception")
            || t.contains("FAILED")
            || (t.starts_with('#') && t.len() > 2 && t.chars().nth(1) == Some(' '))
    }

    #[test]
    fn the_fast_boundary_test_is_find_boundaries() {
        let mut rng = ctxlab_plugin_api::testing::Rng(5);
        let bits = [
            "[User]:",
            "[Assistant]:",
            "[Tool ",
            "[ToolCall",
            "```",
            "/",
            "./",
            "~/",
            "function",
            "fn ",
            "fnx",
            "class ",
            "def ",
            "async function",
            "export",
            "enum ",
            "impl ",
            "struct ",
            "Exception",
            "# ",
            "#",
            "ERROR",
            "Error",
            "eRRor:",
            "error",
            ":",
            "FAILED",
            "FAILE",
            "x",
            " ",
            "  ",
            "é",
            "İ",
            "\t",
            "e",
            "E",
        ];
        for _ in 0..20_000 {
            let mut l = String::new();
            for _ in 0..rng.below(6) {
                l.push_str(bits[rng.below(bits.len() as u64) as usize]);
            }
            assert_eq!(is_boundary(&l), boundary_reference(&l), "{l:?}");
        }
    }

    #[test]
    fn boundaries_follow_find_boundaries() {
        for l in [
            "[User]: hi",
            "  [Tool bash] ok",
            "```rust",
            "/usr/bin",
            "./x",
            "~/y",
            "fn main() {",
            "export default",
            "Error: nope",
            "ERRORS everywhere",
            "it said error: x",
            "Exception in thread",
            "3 FAILED",
            "# Title",
        ] {
            assert!(is_boundary(l), "{l}");
        }
        for l in [
            "[0 User]",
            "[ToolCall id=a name=b]",
            "#no",
            "##  x",
            "# ",
            "plain text",
            "failed",
            "an error here",
            "",
        ] {
            assert!(!is_boundary(l), "{l}");
        }
    }

    /// codetether-rlm's own test (`chunker/tests.rs` `compress_within_budget`): 1,000 lines of
    /// "line" make one chunk of 4,999 bytes, 999 of them newlines (19.98 %: 3.6 bytes a token,
    /// 1,389 tokens), which does not fit 100 tokens: nothing is kept.
    #[test]
    fn a_single_chunk_over_the_cap_leaves_nothing() {
        let content = "line\n".repeat(1000);
        for f in [compress, compress_reference] {
            assert_eq!(f(&content, 100), "");
            assert_eq!(f(&content, 1_388), "");
            assert_eq!(f(&content, 1_389), content.trim_end());
        }
    }

    #[test]
    fn newest_chunks_first_then_older_ones_that_still_fit() {
        // Chunks: "a…" (lines 0-1), "# b" (2-3), "# c" (4), each estimated whole.
        let content = "intro aaaaaaaaaaaa\nmore aaaaaaaaaaaa\n# b\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n# c end";
        let lines = lines(content);
        let chunks = chunk(&lines);
        assert_eq!(chunks.len(), 3);
        assert_eq!((chunks[0].start, chunks[0].end), (0, 1));
        assert_eq!((chunks[2].start, chunks[2].end), (4, 4));
        let (a, b, c) = (chunks[0].tokens, chunks[1].tokens, chunks[2].tokens);
        // Room for the newest and the oldest but not the middle one: a gap marker between.
        let taken = select(&chunks, a + c);
        assert_eq!(taken.len(), 2);
        assert_eq!(
            reassemble(&lines, &taken),
            "intro aaaaaaaaaaaa\nmore aaaaaaaaaaaa\n\n[... 2 lines omitted ...]\n\n# c end"
        );
        assert!(b > a);
        assert_eq!(compress(content, a + b + c), content);
    }

    /// The stream's `compress_span` is the span of `compress` of the same text, whatever the
    /// text and the cap (random lines, boundaries, long lines that split, tiny chunks).
    #[test]
    fn the_stream_compresses_as_the_whole_text_does() {
        let mut rng = ctxlab_plugin_api::testing::Rng(11);
        let words = [
            "fn x()",
            "# head",
            "plain words here",
            "```",
            "error: bad",
            "/path",
            "",
            "   indented   text  ",
            "x",
            "more text and more",
            "FAILED 3",
            "\r",
        ];
        for round in 0..20 {
            let mut text = String::new();
            let mut stream = Stream::new();
            let msgs = 1 + rng.below(40);
            for _ in 0..msgs {
                let mut m = String::new();
                for _ in 0..1 + rng.below(12) {
                    let w = words[rng.below(words.len() as u64) as usize];
                    if rng.chance(5) {
                        m.push_str(&"y".repeat(rng.below(13_000) as usize));
                    } else {
                        for _ in 0..1 + rng.below(6) {
                            m.push_str(w);
                            m.push(' ');
                        }
                    }
                    m.push('\n');
                }
                stream.push(&m);
                text.push_str(&m);
                for cap in [0, 7, 300, 4_000, 9_000, 32_000, 1 << 40] {
                    let want = compress_reference(&text, cap);
                    let (got, got_span) = compress_measured(&text, cap);
                    assert_eq!(
                        (got, got_span),
                        (want.clone(), Span::of(&want)),
                        "round {round}, cap {cap}"
                    );
                    let (span, ranges) = stream.compress_span(cap);
                    assert_eq!(span, Span::of(&want), "round {round}, cap {cap}");
                    let all = lines(&text);
                    let got = reassemble_ranges(&ranges, |a, b, out| {
                        out.push_str(&all[a as usize..=b as usize].join("\n"))
                    });
                    assert_eq!(got, want, "round {round}, cap {cap}");
                }
            }
        }
    }

    /// `scan_lines` splits as `str::lines` does ("\r\n", a bare "\r", a last line without
    /// "\n", empty lines) and measures each line as `Span::of` and the `:`/`D` test would.
    #[test]
    fn scanned_lines_are_str_lines() {
        let mut rng = ctxlab_plugin_api::testing::Rng(3);
        let bits = [
            "a", " ", "\n", "\r", "\r\n", ":", "D", "é", "\t", "xyz", "\n\n",
        ];
        for _ in 0..5_000 {
            let mut t = String::new();
            for _ in 0..rng.below(12) {
                t.push_str(bits[rng.below(bits.len() as u64) as usize]);
            }
            let mut got = Vec::new();
            let mut total = Span::default();
            scan_lines(&t, |l| {
                assert_eq!(l.span, Span::of(l.text));
                assert_eq!(l.colon_or_d, l.text.contains([':', 'D']));
                total = total.plus(l.span).plus(l.end);
                got.push(l.text);
            });
            assert_eq!(got, t.lines().collect::<Vec<_>>(), "{t:?}");
            assert_eq!(total, Span::of(&t), "{t:?}");
        }
    }

    /// `split_large_chunk`: pieces close before the line that would pass 4,000 tokens of summed
    /// line estimates.
    #[test]
    fn large_chunks_split_by_line_estimates() {
        let line = "x".repeat(2_799); // 999.6: 1,000 tokens
        let content = vec![line.as_str(); 9].join("\n");
        let lines = lines(&content);
        let chunks = chunk(&lines);
        assert_eq!(
            chunks.iter().map(|c| c.tokens).collect::<Vec<_>>(),
            vec![4_000, 4_000, 1_000]
        );
        assert_eq!((chunks[1].start, chunks[1].end), (4, 7));
    }
}
