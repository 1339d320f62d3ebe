//! LibreChat's text-shortening rules, re-implemented from `@librechat/agents` 3.1.63
//! `src/utils/truncation.ts` (`calculateMaxToolResultChars`, `truncateToolResultContent`,
//! `truncateToolInput`) and `src/messages/contextPruning.ts` (`softTrimContent`).
//!
//! Lengths and cut positions are JavaScript's: UTF-16 code units (`String.prototype.length`,
//! `slice`, `indexOf`), so a text with characters outside the Basic Multilingual Plane (emoji)
//! is measured and cut exactly where LibreChat cuts it. A cut that splits a surrogate pair
//! leaves a lone surrogate in JavaScript; here it becomes U+FFFD, one code unit as well, so
//! lengths stay the same.

/// `HARD_MAX_TOOL_RESULT_CHARS`.
pub const HARD_MAX_TOOL_RESULT_CHARS: u64 = 400_000;

/// `calculateMaxToolResultChars`: 30 % of the window at ~4 chars per token, at most 400,000.
pub fn max_tool_result_chars(context_tokens: i64) -> u64 {
    if context_tokens <= 0 {
        return HARD_MAX_TOOL_RESULT_CHARS;
    }
    (((context_tokens as f64 * 0.3).floor() as u64) * 4).min(HARD_MAX_TOOL_RESULT_CHARS)
}

/// `preFlightTruncateToolCallInputs`' cap: 15 % of the window at ~4 chars per token, at most
/// 200,000.
pub fn max_tool_input_chars(context_tokens: i64) -> u64 {
    let t = (context_tokens.max(0) as f64 * 0.15).floor() as u64;
    (t * 4).min(200_000)
}

/// A text's length as JavaScript's `String.prototype.length` gives it (UTF-16 code units):
/// one per character, two for a character outside the Basic Multilingual Plane (a four-byte
/// UTF-8 sequence), counted on the bytes 64 at a time ([`units_of_block`]).
pub fn js_len(s: &str) -> u64 {
    if s.is_ascii() {
        return s.len() as u64;
    }
    let b = s.as_bytes();
    let mut blocks = b.chunks_exact(64);
    let mut units = 0u64;
    for block in &mut blocks {
        units += units_of_block(block);
    }
    // The rest a word at a time: most lengths asked are of a few lines (the distance from a cut
    // to the newline it snaps to).
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        units += units_of_word(w);
    }
    units + words.remainder().iter().map(|&b| unit_of(b)).sum::<u64>()
}

/// The UTF-16 units a UTF-8 byte starts: 0 for a continuation byte, 2 for the lead of a
/// four-byte sequence, else 1.
fn unit_of(b: u8) -> u64 {
    u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0)
}

/// [`unit_of`] summed over 64 bytes, eight at a time: per byte lane, a continuation byte is
/// `10xxxxxx` (bit 7 set, bit 6 clear) and a four-byte lead `11110xxx` (bits 7 to 4 set); the
/// lanes count at most 8 each, summed across by one multiplication (no `popcnt`, which the
/// baseline x86-64 target does not have).
fn units_of_block(block: &[u8]) -> u64 {
    let (mut cont, mut four) = (0u64, 0u64);
    for w in block.chunks_exact(8) {
        let (c, f) = lanes_of_word(w);
        cont += c;
        four += f;
    }
    block.len() as u64 - across(cont) + across(four)
}

/// Per byte lane of eight bytes (bit 0 of each lane): whether it is a continuation byte, and
/// whether it is the lead of a four-byte sequence ([`units_of_block`]).
fn lanes_of_word(w: &[u8]) -> (u64, u64) {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
    (
        (w & !(w << 1) & HIGH) >> 7,
        (w & (w << 1) & (w << 2) & (w << 3) & HIGH) >> 7,
    )
}

/// The lanes' counts summed across (each at most 8 per lane).
fn across(lanes: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    lanes.wrapping_mul(ONES) >> 56
}

/// [`unit_of`] summed over eight bytes.
fn units_of_word(w: &[u8]) -> u64 {
    let (cont, four) = lanes_of_word(w);
    8 - across(cont) + across(four)
}

/// Where UTF-16 unit `u` of `s` starts, as a byte offset (the end when `u` is past it), and
/// whether `u` falls between the two halves of a surrogate pair (the offset is then the pair's
/// character), walking from a known place `(byte, unit)` of `s` (a character start and the
/// units before it) forward or back: a cut near the last cut of the same text costs the
/// distance between them.
fn byte_near(s: &str, from: (usize, usize), u: usize) -> (usize, bool) {
    if u >= from.1 {
        forward(s, from, u)
    } else {
        backward(s, from, u)
    }
}

/// [`byte_near`] for `u` at or after `from`: 64 bytes at a time while the whole block lies
/// before `u`, then by character.
fn forward(s: &str, from: (usize, usize), u: usize) -> (usize, bool) {
    let bytes = s.as_bytes();
    // Units of the characters that start before byte `p`.
    let (mut p, mut units) = from;
    while p + 64 <= bytes.len() {
        let w = units_of_block(&bytes[p..p + 64]) as usize;
        if units + w > u {
            break;
        }
        units += w;
        p += 64;
    }
    // Back to the start of the character `p` may split: its units were counted with its lead.
    let mut b = p;
    while !s.is_char_boundary(b) {
        b -= 1;
    }
    if b < p {
        units -= unit_of(bytes[b]) as usize;
    }
    for (off, c) in s[b..].char_indices() {
        if units == u {
            return (b + off, false);
        }
        let w = c.len_utf16();
        if units + w > u {
            return (b + off, true);
        }
        units += w;
    }
    (s.len(), false)
}

/// [`byte_near`] for `u` before `from`: 64 bytes at a time while the unit before the block
/// stays past `u`, then by character.
fn backward(s: &str, from: (usize, usize), u: usize) -> (usize, bool) {
    let bytes = s.as_bytes();
    // Units of the characters that start before byte `q` (a character split at `q` counts
    // with the bytes after it: its lead is before `q`, its continuation bytes count nothing).
    let (mut q, mut units) = from;
    while q >= 64 {
        let w = units_of_block(&bytes[q - 64..q]) as usize;
        if units - w <= u {
            break;
        }
        units -= w;
        q -= 64;
    }
    // Forward to the next character start: continuation bytes count no unit.
    while !s.is_char_boundary(q) {
        q += 1;
    }
    for (b, c) in s[..q].char_indices().rev() {
        units -= c.len_utf16();
        if units == u {
            return (b, false);
        }
        if units < u {
            return (b, true);
        }
    }
    (0, false)
}

/// Where the last head and tail cuts of one text fell (`(byte, unit)` each, at a character
/// start): the next cut of the same text at a nearby cap walks from there
/// ([`truncate_result_of`]). Kept per original message; never given for another text.
#[derive(Debug, Default, Clone)]
pub struct Cuts(std::cell::Cell<Option<[(u32, u32); 2]>>);

/// `content.slice(from, to)` from byte positions found by [`byte_near`]: a half pair at either
/// cut becomes U+FFFD (one unit, as the lone surrogate JavaScript leaves).
fn slice_at(s: &str, from: (usize, bool), to: (usize, bool)) -> String {
    let mut out = String::new();
    push_slice(&mut out, s, from, to);
    out
}

/// [`slice_at`], appended to `out`.
fn push_slice(out: &mut String, s: &str, from: (usize, bool), to: (usize, bool)) {
    let mut start = from.0;
    if from.1 {
        out.push('\u{FFFD}');
        start += s[start..].chars().next().map_or(0, char::len_utf8);
    }
    if start < to.0 {
        out.push_str(&s[start..to.0]);
    }
    if to.1 && (start <= to.0) && !(from.1 && from.0 == to.0) {
        out.push('\u{FFFD}');
    }
}

/// `units.slice(from, to)` as text (a lone surrogate at a cut becomes U+FFFD).
fn slice(units: &[u16], from: usize, to: usize) -> String {
    String::from_utf16_lossy(&units[from.min(units.len())..to.min(units.len())])
}

#[cfg(test)]
const NL: u16 = b'\n' as u16;

/// Index of the last `\n` at or before `at` (`String.prototype.lastIndexOf('\n', at)`).
#[cfg(test)]
fn last_newline(units: &[u16], at: usize) -> Option<usize> {
    let end = at.min(units.len().saturating_sub(1));
    units[..units.len().min(end + 1)]
        .iter()
        .rposition(|&u| u == NL)
}

/// Index of the first `\n` at or after `from` (`String.prototype.indexOf('\n', from)`).
#[cfg(test)]
fn next_newline(units: &[u16], from: usize) -> Option<usize> {
    units
        .get(from..)
        .and_then(|rest| rest.iter().position(|&u| u == NL))
        .map(|p| from + p)
}

/// `truncateToolResultContent(content, maxChars)`: head ~70 % and tail ~30 % of what the
/// indicator leaves, both snapped to a newline within 200 chars; the indicator states the
/// original length. `None` when the content already fits. Works on the UTF-8 text, walking only
/// the head and the tail to find their UTF-16 positions.
pub fn truncate_result(content: &str, max_chars: u64) -> Option<String> {
    truncate_result_of(content, js_len(content), max_chars, None).map(|(t, ..)| t)
}

/// A cut result as the bytes kept from the head and the tail of its content, with the
/// indicator between them: `content[..head] + indicator + content[content.len() - tail..]`
/// (what `OpKind::Cut` sends instead of the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadTail {
    pub head: u32,
    pub tail: u32,
}

/// A cut result: its text, or (ABI 1.8's `Cut`) the bytes it keeps of the content's head and
/// tail and the indicator between them, the text not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    Text(String),
    Kept(HeadTail, Indicator),
}

/// [`truncate_result`] of a content whose length (UTF-16 units) the caller keeps, with the
/// result's length (worked out from the cuts, not counted again) and, when the result is a
/// head and a tail of the content around the indicator, the bytes it keeps of each.
pub fn truncate_result_of(
    content: &str,
    len: u64,
    max_chars: u64,
    cuts: Option<&Cuts>,
) -> Option<(String, u64, Option<HeadTail>)> {
    let (cut, units) = cut_result_of(content, len, max_chars, cuts)?;
    Some(match cut {
        Cut::Text(t) => (t, units, None),
        Cut::Kept(k, indicator) => {
            let (h, t) = (k.head as usize, content.len() - k.tail as usize);
            let mut out = String::with_capacity(h + indicator.len() + (content.len() - t));
            out.push_str(&content[..h]);
            out.push_str(&indicator);
            out.push_str(&content[t..]);
            debug_assert_eq!(units, js_len(&out));
            (out, units, Some(k))
        }
    })
}

/// [`truncate_result_of`] without making the text when the result is a head and a tail of the
/// content around the indicator (no half pair replaced at a cut, the content under 4 GiB): the
/// bytes it keeps of each and the indicator. `cuts`: where the last cuts of this same content
/// fell, if known (updated).
pub fn cut_result_of(
    content: &str,
    len: u64,
    max_chars: u64,
    cuts: Option<&Cuts>,
) -> Option<(Cut, u64)> {
    let len = len as usize;
    // All ASCII: a unit is a byte, and no walk finds it. (The length given says so for the
    // content it was measured on; `is_ascii` makes sure of it, so that no other text can be
    // cut off a character boundary. It stops at the first other byte.)
    let ascii = len == content.len() && content.is_ascii();
    let near = |from: (usize, usize), u: usize| {
        if ascii {
            (u.min(len), false)
        } else {
            byte_near(content, from, u)
        }
    };
    let units_in = |a: usize, b: usize| {
        if ascii {
            b - a
        } else {
            js_len(&content[a..b]) as usize
        }
    };
    let cuts = cuts.filter(|_| !ascii && u32::try_from(content.len()).is_ok());
    let [head_from, tail_from] = cuts
        .and_then(|c| c.0.get())
        .map(|k| k.map(|(b, u)| (b as usize, u as usize)))
        .unwrap_or([(0, 0), (content.len(), len)]);
    let max = max_chars as usize;
    if len <= max {
        return None;
    }
    let indicator = Indicator::result(len as u64, max_chars);
    // Its two ellipses are three bytes and one unit each; the rest is ASCII.
    let indicator_units = indicator.len() - 4;
    debug_assert_eq!(indicator_units as u64, js_len(&indicator));
    let available = max as i64 - indicator_units as i64;
    let start = (0, false);
    if available <= 0 {
        let out = slice_at(content, start, forward(content, (0, 0), max));
        let units = js_len(&out);
        return Some((Cut::Text(out), units));
    }
    let available = available as usize;
    if available < 200 {
        let out =
            slice_at(content, start, forward(content, (0, 0), available)) + indicator.trim_end();
        let units = js_len(&out);
        return Some((Cut::Text(out), units));
    }
    let head_size = ((available as f64) * 0.7).ceil() as usize;
    let tail_size = available - head_size;
    // The last newline at or before unit `head_size` (`lastIndexOf('\n', headSize)`), when it
    // is within 200 units of it (so within 800 bytes: no farther one is looked for).
    // Units of the head and the tail as cut (a half pair at a cut is one unit, U+FFFD).
    let mut head_units = head_size;
    let mut head = near(head_from, head_size);
    let head_cut = head;
    let (hb, split) = head;
    let at_head = !split && content.as_bytes().get(hb) == Some(&b'\n');
    let nl = if at_head {
        Some((hb, head_size))
    } else {
        let unit_of_hb = head_size - usize::from(split);
        let mut from = hb.saturating_sub(800);
        while !content.is_char_boundary(from) {
            from += 1;
        }
        content[from..hb]
            .rfind('\n')
            .map(|b| from + b)
            .map(|b| (b, unit_of_hb - units_in(b, hb)))
    };
    if let Some((b, unit)) = nl {
        if unit as i64 > head_size as i64 - 200 && unit > 0 {
            head = (b, false);
            head_units = unit;
        }
    }
    // The first newline at or after unit `len - tailSize` (`indexOf('\n', tailStart)`), when
    // it is within 200 units of it.
    let tail_start = len - tail_size;
    let mut tail_units = tail_size;
    let mut tail = near(tail_from, tail_start);
    if let Some(c) = cuts {
        // Each cut as a character start and the units before it (a split pair's start is one
        // unit before the cut).
        let at = |(b, split): (usize, bool), u: usize| (b as u32, (u - usize::from(split)) as u32);
        c.0.set(Some([at(head_cut, head_size), at(tail, tail_start)]));
    }
    let (tb, split) = tail;
    let (from_b, from_unit) = if split {
        let w = content[tb..].chars().next().map_or(0, char::len_utf8);
        (tb + w, tail_start + 1)
    } else {
        (tb, tail_start)
    };
    let mut to = (from_b + 800).min(content.len());
    while !content.is_char_boundary(to) {
        to -= 1;
    }
    if let Some(off) = content[from_b..to].find('\n') {
        let unit = from_unit + units_in(from_b, from_b + off);
        if unit > 0 && unit < tail_start + 200 {
            tail = (from_b + off + 1, false);
            tail_units = len - (unit + 1);
        }
    }
    let units = (head_units + indicator_units + tail_units) as u64;
    if let (Ok(head_bytes), Ok(tail_bytes)) =
        (u32::try_from(head.0), u32::try_from(content.len() - tail.0))
    {
        if !head.1 && !tail.1 {
            let kept = HeadTail {
                head: head_bytes,
                tail: tail_bytes,
            };
            return Some((Cut::Kept(kept, indicator), units));
        }
    }
    let mut out = String::with_capacity(head.0 + indicator.len() + (content.len() - tail.0) + 6);
    push_slice(&mut out, content, start, head);
    out.push_str(&indicator);
    push_slice(&mut out, content, tail, (content.len(), false));
    debug_assert_eq!(units, js_len(&out));
    Some((Cut::Text(out), units))
}

/// `truncateToolResultContent`'s indicator, `\n\n… [truncated: {len} chars exceeded {max}
/// limit] …\n\n`, written without the formatting machinery (it is made for every cut) and kept
/// inline: at most 87 bytes (two 20-digit numbers), so a cut kept as the run's text is one
/// allocation, not two (LibreChat with summarization on makes ~18 cuts a call).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Indicator {
    len: u8,
    bytes: [u8; INDICATOR_MAX],
}

const INDICATOR_MAX: usize = 88;

impl Indicator {
    pub fn result(len: u64, max: u64) -> Indicator {
        let mut s = Indicator {
            len: 0,
            bytes: [0; INDICATOR_MAX],
        };
        s.push("\n\n… [truncated: ");
        s.push(itoa::Buffer::new().format(len));
        s.push(" chars exceeded ");
        s.push(itoa::Buffer::new().format(max));
        s.push(" limit] …\n\n");
        s
    }

    /// Only whole `str`s are written, so the bytes stay UTF-8.
    fn push(&mut self, t: &str) {
        let at = self.len as usize;
        self.bytes[at..at + t.len()].copy_from_slice(t.as_bytes());
        self.len += t.len() as u8;
    }
}

impl std::ops::Deref for Indicator {
    type Target = str;
    fn deref(&self) -> &str {
        // SAFETY: `push` is the only writer, and it appends whole `str`s.
        unsafe { std::str::from_utf8_unchecked(&self.bytes[..self.len as usize]) }
    }
}

impl std::fmt::Debug for Indicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// `v` in decimal (`itoa`: two digits a step from a table, no formatter; made twice per cut).
pub(crate) fn push_uint(s: &mut String, v: u64) {
    s.push_str(itoa::Buffer::new().format(v));
}

/// `truncateToolInput(serialized, maxChars)._truncated`: head ~70 % and tail ~30 %, no newline
/// snapping; head-only below 100 chars of room. `None` when it fits.
pub fn truncate_input(serialized: &str, max_chars: u64) -> Option<String> {
    let chars: Vec<u16> = serialized.encode_utf16().collect();
    let len = chars.len();
    let max = max_chars as usize;
    if len <= max {
        return None;
    }
    let indicator = format!("\n… [truncated: {len} chars exceeded {max_chars} limit] …\n");
    let available = max as i64 - js_len(&indicator) as i64;
    if available < 100 {
        return Some(slice(&chars, 0, max) + indicator.trim_end());
    }
    let available = available as usize;
    let head_size = ((available as f64) * 0.7).ceil() as usize;
    let tail_size = available - head_size;
    Some(slice(&chars, 0, head_size) + &indicator + &slice(&chars, len - tail_size, len))
}

/// contextPruning's `softTrimContent`: `headChars` + indicator + the last `tailChars`.
pub fn soft_trim(content: &str, head: u64, tail: u64) -> String {
    let chars: Vec<u16> = content.encode_utf16().collect();
    let len = chars.len();
    let indicator = format!(
        "\n\n… [soft-trimmed: {len} chars → {} chars, middle removed] …\n\n",
        head + tail
    );
    // `content.slice(-tailChars)`: the whole text when tailChars is 0 (slice(-0) = slice(0)).
    let tail_from = if tail == 0 {
        0
    } else {
        len.saturating_sub(tail as usize)
    };
    slice(&chars, 0, head as usize) + &indicator + &slice(&chars, tail_from, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `truncateToolResultContent` on UTF-16 code units, as JavaScript runs it: the reference
    /// the UTF-8 version must equal.
    fn truncate_result_units(content: &str, max_chars: u64) -> Option<String> {
        let chars: Vec<u16> = content.encode_utf16().collect();
        let len = chars.len();
        let max = max_chars as usize;
        if len <= max {
            return None;
        }
        let indicator = format!("\n\n… [truncated: {len} chars exceeded {max_chars} limit] …\n\n");
        let available = max as i64 - js_len(&indicator) as i64;
        if available <= 0 {
            return Some(slice(&chars, 0, max));
        }
        let available = available as usize;
        if available < 200 {
            return Some(slice(&chars, 0, available) + indicator.trim_end());
        }
        let head_size = ((available as f64) * 0.7).ceil() as usize;
        let tail_size = available - head_size;
        let mut head_end = head_size;
        if let Some(nl) = last_newline(&chars, head_size) {
            if nl as i64 > head_size as i64 - 200 && nl > 0 {
                head_end = nl;
            }
        }
        let mut tail_start = len - tail_size;
        if let Some(nl) = next_newline(&chars, tail_start) {
            if nl > 0 && nl < tail_start + 200 {
                tail_start = nl + 1;
            }
        }
        Some(slice(&chars, 0, head_end) + &indicator + &slice(&chars, tail_start, len))
    }

    /// The UTF-8 `truncate_result` cuts where the UTF-16 one does, on random texts of ASCII,
    /// newlines, BMP characters and emoji (surrogate pairs), and on texts all ASCII, at every
    /// kind of limit.
    #[test]
    fn result_truncation_on_utf8_equals_the_one_on_utf16_units() {
        let mut r = ctxlab_plugin_api::testing::Rng(11);
        let pieces = ["a", "bc", "\n", "→", "😀", "line\n", "ü"];
        let mut kept = 0;
        for _ in 0..3000 {
            let n = r.below(1500) as usize;
            let mut text = String::new();
            // Dense multi-byte text without newlines; sparse newlines (one in ~300 pieces, so
            // the newline nearest a cut may lie past the 200 units LibreChat looks within);
            // all ASCII (cut without a walk: a unit is a byte); every piece alike.
            let shape = r.below(5);
            for _ in 0..n {
                let p = match shape {
                    0 => r.below(2) + 3,
                    1 if r.below(300) == 0 => 2,
                    1 => [0, 1, 3, 4, 6][r.below(5) as usize],
                    2 => [0, 1, 2, 5][r.below(4) as usize],
                    _ => r.below(pieces.len() as u64),
                };
                text.push_str(pieces[p as usize]);
            }
            let len = js_len(&text);
            assert_eq!(len, text.encode_utf16().count() as u64);
            // The same text cut again and again, each cut walking from the last one's place.
            let cuts = Cuts::default();
            let maxes = [
                0,
                1,
                7,
                60,
                230,
                260,
                300,
                301,
                555,
                len / 3,
                (len / 2).saturating_sub(37),
                len / 2,
                len.saturating_sub(1),
                len,
            ];
            // Up and then down: the last cuts lie before and after the next ones.
            for max in maxes.iter().chain(maxes.iter().rev()).copied() {
                let want = truncate_result_units(&text, max);
                assert_eq!(truncate_result(&text, max), want, "{text:?} at {max}");
                let near = truncate_result_of(&text, len, max, Some(&cuts));
                // The bytes kept of the head and the tail, with the indicator between them,
                // are the cut text (what the host makes of an `OpKind::Cut`).
                if let Some((t, _, Some(k))) = &near {
                    let (h, tl) = (k.head as usize, k.tail as usize);
                    assert!(h + tl <= text.len(), "{text:?} at {max}: {k:?}");
                    let marker = &t[h..t.len() - tl];
                    let rebuilt = format!("{}{marker}{}", &text[..h], &text[text.len() - tl..]);
                    assert_eq!(&rebuilt, t, "{text:?} at {max}: {k:?}");
                    assert!(marker.contains("[truncated: "), "{marker:?}");
                    kept += 1;
                }
                let near = near.map(|(t, ..)| t);
                assert_eq!(near, want, "{text:?} at {max}, from the last cuts");
            }
        }
        // Most cuts are such a head and tail (the rest fall back to the whole text).
        assert!(kept > 10_000, "{kept} cuts as kept bytes");
    }

    /// utils/truncation.ts `truncateToolResultContent`: the head ends at the last newline within
    /// 200 chars before its 70 % mark, the tail starts after the first newline within 200 chars
    /// of its 30 % mark, and the indicator carries the original length.
    #[test]
    fn result_truncation_snaps_to_newlines_and_states_the_original_length() {
        let lines: String = (0..100)
            .map(|i| format!("line {i:03} ........\n"))
            .collect();
        let out = truncate_result(&lines, 1000).unwrap();
        let len = lines.chars().count();
        let indicator = format!("\n\n… [truncated: {len} chars exceeded 1000 limit] …\n\n");
        let (head, tail) = out.split_once(&indicator).expect("indicator");
        assert!(
            head.ends_with("........"),
            "head ends at a line end: {head:?}"
        );
        assert!(tail.starts_with("line "), "tail starts at a line: {tail:?}");
        let available = 1000 - indicator.chars().count();
        let head_size = (available as f64 * 0.7).ceil() as usize;
        assert!(head.len() <= head_size && head.len() > head_size - 200);
        assert!(out.chars().count() <= 1000);
        assert_eq!(truncate_result(&lines, len as u64), None);
    }

    /// utils/truncation.ts measures `content.length` and cuts with `slice`: UTF-16 code units.
    /// 1,000 emoji are 2,000 units there (1,000 chars in Rust), so a 1,500 limit cuts them, the
    /// indicator states 2,000, and the result is at most 1,500 units. A cut inside a surrogate
    /// pair leaves one unit (U+FFFD here, a lone surrogate in JavaScript).
    #[test]
    fn lengths_are_utf16_code_units_as_in_javascript() {
        let text = "😀".repeat(1000);
        assert_eq!(js_len(&text), 2000);
        let out = truncate_result(&text, 1500).expect("2,000 units exceed 1,500");
        assert!(
            out.contains("[truncated: 2000 chars exceeded 1500 limit]"),
            "{out}"
        );
        assert!(js_len(&out) <= 1500, "{}", js_len(&out));
        let indicator = "\n\n… [truncated: 2000 chars exceeded 1500 limit] …\n\n";
        let available = 1500 - js_len(indicator);
        let head = (available as f64 * 0.7).ceil() as u64;
        let (h, t) = out.split_once(indicator).unwrap();
        assert_eq!(js_len(h), head);
        assert_eq!(js_len(t), available - head);
        // An odd head size splits a pair: the half left is one unit.
        assert_eq!(head % 2, 1);
        assert!(h.ends_with('\u{FFFD}'));
        assert_eq!(truncate_result(&text, 2000), None);
        let input = truncate_input(&text, 1500).unwrap();
        assert!(input.contains("[truncated: 2000 chars exceeded 1500 limit]"));
        let trimmed = soft_trim(&text, 10, 10);
        assert!(trimmed.contains("[soft-trimmed: 2000 chars → 20 chars"));
        assert_eq!(
            js_len(&trimmed)
                - js_len("\n\n… [soft-trimmed: 2000 chars → 20 chars, middle removed] …\n\n"),
            20
        );
    }

    #[test]
    fn the_indicator_is_the_formatted_one() {
        for (len, max) in [
            (0, 0),
            (1, 9),
            (10, 10),
            (12_000, 2_987),
            (u64::MAX, 400_000),
        ] {
            assert_eq!(
                &*Indicator::result(len, max),
                format!("\n\n… [truncated: {len} chars exceeded {max} limit] …\n\n")
            );
        }
    }

    #[test]
    fn tiny_budgets_keep_the_head_only() {
        let text = "x".repeat(5000);
        let out = truncate_result(&text, 230).unwrap();
        assert!(out.starts_with("xxx") && out.ends_with('…'));
        // No room for the indicator at all: the first maxChars chars.
        assert_eq!(truncate_result(&text, 20).unwrap(), "x".repeat(20));
        let input = truncate_input(&text, 120).unwrap();
        assert!(input.starts_with(&"x".repeat(120)) && input.ends_with('…'));
    }

    #[test]
    fn caps_follow_calculate_max_tool_result_chars() {
        assert_eq!(max_tool_result_chars(10_000), 12_000);
        assert_eq!(max_tool_result_chars(1_000_000), 400_000);
        assert_eq!(max_tool_result_chars(0), 400_000);
        assert_eq!(max_tool_input_chars(10_000), 6_000);
        assert_eq!(max_tool_input_chars(10_000_000), 200_000);
    }

    #[test]
    fn soft_trim_keeps_head_and_tail() {
        let t = soft_trim("abcdefghij", 2, 3);
        assert!(t.starts_with("ab\n\n… [soft-trimmed: 10 chars → 5 chars"));
        assert!(t.ends_with("hij"));
    }
}
