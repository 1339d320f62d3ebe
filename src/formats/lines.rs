//! Streaming JSONL shared by every line-based reader: one line in memory at a time, the source hash
//! computed while reading, and the recovery rules for what real files contain (invalid UTF-8,
//! several objects run together on one line, truncated last lines, absurdly long lines).

use std::io::{self, BufRead};

use serde::de::IgnoredAny;

use crate::model::SourcePos;

/// Lines longer than this are skipped with a warning instead of being held in memory. Real logs
/// have single tool results of tens of MB; anything beyond this is not a log entry worth the RAM.
pub(crate) const MAX_LINE: usize = 256 << 20;

/// Hashing waits until this many consumed bytes are staged: BLAKE3 is several times faster on
/// large inputs (it hashes many 1 KiB chunks at once with SIMD) than on one line at a time.
const HASH_BATCH: usize = 256 * 1024;

/// Reads lines without their terminator, hashing every byte it consumes.
///
/// `buf` stages the raw bytes (terminators included) of the lines read since the last hash
/// update; the current line is `buf[start..end]`. Everything staged is hashed before the next
/// line once `HASH_BATCH` is reached, and on drop, so the hash is that of the bytes consumed.
pub(crate) struct LineReader<'h, R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    line: u32,
    limit: usize,
    bytes: u64,
    hasher: &'h mut blake3::Hasher,
}

impl<R> Drop for LineReader<'_, R> {
    fn drop(&mut self) {
        self.hasher.update(&self.buf);
    }
}

pub(crate) enum Next {
    /// `LineReader::line()` holds the line.
    Line,
    /// The line (this many bytes) was over the limit and was skipped.
    TooLong(u64),
    Eof,
}

impl<'h, R: BufRead> LineReader<'h, R> {
    pub(crate) fn new(inner: R, hasher: &'h mut blake3::Hasher) -> Self {
        Self::with_limit(inner, hasher, MAX_LINE)
    }

    pub(crate) fn with_limit(inner: R, hasher: &'h mut blake3::Hasher, limit: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::with_capacity(HASH_BATCH + 64 * 1024),
            start: 0,
            end: 0,
            line: 0,
            limit,
            bytes: 0,
            hasher,
        }
    }

    /// Numbers lines after `line`: a file followed while it grows is read in pieces.
    pub(crate) fn resume(inner: R, hasher: &'h mut blake3::Hasher, line: u32) -> Self {
        let mut r = Self::new(inner, hasher);
        r.line = line;
        r
    }

    /// 1-based number of the line last returned.
    pub(crate) fn line_no(&self) -> u32 {
        self.line
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn line(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn flush_hash(&mut self) {
        self.hasher.update(&self.buf);
        self.buf.clear();
    }

    pub(crate) fn next_line(&mut self) -> io::Result<Next> {
        if self.buf.len() >= HASH_BATCH {
            self.flush_hash();
        }
        self.start = self.buf.len();
        let mut total: u64 = 0;
        let mut too_long = false;
        let mut any = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                break;
            }
            any = true;
            let (n, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            let chunk = &avail[..n];
            total += n as u64;
            if !too_long && self.buf.len() - self.start + n > self.limit {
                // Give up the line: hash what is staged of it and keep hashing its bytes as
                // they pass, without holding them.
                too_long = true;
                self.hasher.update(&self.buf);
                self.buf = Vec::with_capacity(64 * 1024);
                self.start = 0;
            }
            if too_long {
                self.hasher.update(chunk);
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.inner.consume(n);
            if done {
                break;
            }
        }
        self.end = self.buf.len();
        if !any {
            return Ok(Next::Eof);
        }
        self.bytes += total;
        self.line = self.line.saturating_add(1);
        if too_long {
            self.end = self.start;
            return Ok(Next::TooLong(total));
        }
        while self.end > self.start && matches!(self.buf[self.end - 1], b'\n' | b'\r') {
            self.end -= 1;
        }
        Ok(Next::Line)
    }
}

/// Deserializes one JSON value from a line. A line that is valid UTF-8 (nearly all) is checked
/// once, in bulk, instead of string by string as `from_slice` does; any other line goes through
/// `from_slice` so that invalid bytes in fields nobody reads stay as harmless as they were.
pub(crate) fn from_line<'a, T: serde::Deserialize<'a>>(json: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(json) {
        Ok(s) => serde_json::from_str(s),
        Err(_) => serde_json::from_slice(json),
    }
}

/// What a reader does with each JSON object of a JSONL file.
pub(crate) trait JsonSink {
    /// Handle one JSON object (the bytes of exactly one value). A serde error means "not the
    /// entry this format expects"; the driver turns it into a warning with the line number.
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()>;
    /// `entry` of a line `feed_line` has already checked to be UTF-8 (every line is checked once
    /// there): a sink that parses with `serde_json::from_str` saves checking it again.
    fn entry_str(&mut self, json: &str, pos: SourcePos) -> serde_json::Result<()> {
        self.entry(json.as_bytes(), pos)
    }
    fn warn(&mut self, pos: SourcePos, message: String);
}

/// Feeds every line of `lines` to `sink`, applying the shared recovery rules. `what` names the
/// expected entry in warnings ("a Claude Code entry").
pub(crate) fn read_jsonl<R: BufRead>(
    lines: &mut LineReader<'_, R>,
    file: u32,
    what: &str,
    sink: &mut impl JsonSink,
) -> io::Result<()> {
    loop {
        match lines.next_line()? {
            Next::Eof => return Ok(()),
            Next::TooLong(n) => {
                let pos = SourcePos {
                    file,
                    line: lines.line_no(),
                };
                sink.warn(
                    pos,
                    format!("line of {n} bytes is longer than the {MAX_LINE}-byte limit; skipped"),
                );
            }
            Next::Line => {
                let pos = SourcePos {
                    file,
                    line: lines.line_no(),
                };
                feed_line(lines.line(), pos, what, sink);
            }
        }
    }
}

/// One line: parse, or recover, or warn. Invalid UTF-8 is repaired before the line is read
/// (`utf8`): a field holding it would otherwise fail the entry, or a nested document (an HTTP
/// capture's body) a part of it.
pub(crate) fn feed_line(line: &[u8], pos: SourcePos, what: &str, sink: &mut impl JsonSink) {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        let fixed = String::from_utf8_lossy(line).into_owned();
        sink.warn(pos, super::utf8::message(1));
        if let Err(e) = sink.entry_str(&fixed, pos) {
            recover(fixed.as_bytes(), e, pos, what, sink);
        }
        return;
    };
    if let Err(e) = sink.entry_str(text, pos) {
        recover(line, e, pos, what, sink);
    }
}

fn recover(
    line: &[u8],
    err: serde_json::Error,
    pos: SourcePos,
    what: &str,
    sink: &mut impl JsonSink,
) {
    if err.is_syntax() && err.to_string().starts_with("trailing characters") {
        // Two writers appending at once leave objects run together on one line: read each.
        let mut stream = serde_json::Deserializer::from_slice(line).into_iter::<IgnoredAny>();
        let mut start = 0;
        let mut pieces = Vec::new();
        while let Some(item) = stream.next() {
            let end = stream.byte_offset();
            match item {
                Ok(_) => pieces.push((start, end)),
                Err(e) => {
                    sink.warn(
                        pos,
                        format!(
                            "expected {what}; after {} JSON object(s) on this line: {e}",
                            pieces.len()
                        ),
                    );
                    break;
                }
            }
            start = end;
        }
        let n = pieces.len();
        for (a, b) in pieces {
            if let Err(e) = sink.entry(&line[a..b], pos) {
                sink.warn(pos, format!("expected {what}: {e}"));
            }
        }
        sink.warn(
            pos,
            format!("{n} JSON objects run together on one line; each was read on its own"),
        );
        return;
    }
    if err.is_eof() {
        sink.warn(
            pos,
            format!("truncated line: the JSON object ends early (expected {what})"),
        );
        return;
    }
    sink.warn(pos, format!("expected {what}: {err}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        ok: Vec<(u32, String)>,
        warnings: Vec<(u32, String)>,
    }

    impl JsonSink for Collect {
        fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
            let v: serde_json::Value = serde_json::from_slice(json)?;
            self.ok.push((pos.line, v["a"].to_string()));
            Ok(())
        }
        fn warn(&mut self, pos: SourcePos, message: String) {
            self.warnings.push((pos.line, message));
        }
    }

    fn run(input: &[u8], limit: usize) -> (Collect, u64, String) {
        let mut h = blake3::Hasher::new();
        let mut r = LineReader::with_limit(input, &mut h, limit);
        let mut c = Collect::default();
        read_jsonl(&mut r, 0, "an object", &mut c).unwrap();
        let bytes = r.bytes();
        drop(r);
        (c, bytes, h.finalize().to_hex().to_string())
    }

    #[test]
    fn recovers_objects_run_together_and_reports_bad_lines() {
        let input = b"{\"a\":1}\r\n\n{\"a\":2}{\"a\":3}\nnot json\n{\"a\":\xff\"x\"}\n{\"a\":4";
        let (c, bytes, hash) = run(input, 1 << 20);
        assert_eq!(bytes, input.len() as u64);
        assert_eq!(hash, blake3::hash(input).to_hex().to_string());
        let lines: Vec<u32> = c.ok.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![1, 3, 3]);
        let w: Vec<u32> = c.warnings.iter().map(|(l, _)| *l).collect();
        assert_eq!(w, vec![3, 4, 5, 5, 6], "{:?}", c.warnings);
        assert!(c.warnings[0].1.contains("run together"));
        assert!(c.warnings[2].1.contains("UTF-8"));
        assert!(c.warnings[4].1.contains("truncated"));
    }

    #[test]
    fn invalid_utf8_inside_a_string_is_replaced_not_lost() {
        let input = b"{\"a\":\"caf\xe9\"}\n";
        let (c, _, _) = run(input, 1 << 20);
        assert_eq!(c.ok.len(), 1);
        assert!(c.ok[0].1.contains('\u{fffd}'));
        assert!(c.warnings[0].1.contains("UTF-8"));
    }

    #[test]
    fn hash_is_the_files_across_batches_and_skipped_lines() {
        // More than two hash batches, with an over-limit line straddling the first one.
        let mut input = Vec::new();
        for i in 0..6000 {
            input.extend(format!("{{\"a\":{i},\"pad\":\"{}\"}}\n", "y".repeat(i % 90)).bytes());
        }
        input.extend(b"{\"a\":\"");
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend(b"\"}\n");
        for i in 0..6000 {
            input.extend(format!("{{\"a\":{i}}}\r\n").bytes());
        }
        input.extend(b"{\"a\":-1}");
        let (c, bytes, hash) = run(&input, 100_000);
        assert_eq!(bytes, input.len() as u64);
        assert_eq!(hash, blake3::hash(&input).to_hex().to_string());
        assert_eq!(c.ok.len(), 12_001);
        assert_eq!(
            c.ok.last().map(|(l, v)| (*l, v.as_str())),
            Some((12_002, "-1"))
        );
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert_eq!(c.warnings[0].0, 6001);
    }

    #[test]
    fn lines_over_the_limit_are_skipped_with_a_warning() {
        let mut input = b"{\"a\":1}\n{\"a\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.extend(b"\"}\n{\"a\":2}\n");
        let (c, bytes, _) = run(&input, 1000);
        assert_eq!(bytes, input.len() as u64);
        assert_eq!(c.ok.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.warnings[0].0, 2);
    }
}
