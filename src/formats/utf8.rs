//! Invalid UTF-8, as every reader handles it (docs/formats.md, "What every reader guarantees"):
//! each invalid sequence is replaced by U+FFFD, the entry that holds it still loads, and the
//! session gets one warning naming the first line where it happened and how many there were.
//!
//! Line-based readers apply this per line (`lines::feed_line`); readers of one JSON document
//! (OpenAI message lists, OTel exports, Gemini chats, OpenCode exports, Cline tasks, SWE-agent
//! trajectories) read their bytes through `Utf8Fix`, as a stream (`doc::Src`) or whole
//! (`read_lossy`).

use std::borrow::Cow;
use std::path::Path;

use crate::model::{Session, SourcePos};
use crate::{Error, Result};

/// Streaming repair: bytes in, valid UTF-8 out. A sequence cut by a chunk boundary is held until
/// the next chunk completes (or disproves) it.
#[derive(Debug, Default)]
pub(crate) struct Utf8Fix {
    /// The unfinished sequence at the end of the last chunk (at most 3 bytes).
    pending: Vec<u8>,
    /// Newlines seen in the input so far.
    newlines: u32,
    /// Invalid sequences replaced.
    pub(crate) replaced: u64,
    /// 1-based line of the first one.
    pub(crate) first_line: u32,
}

impl Utf8Fix {
    /// Appends the repaired `input` to `out`. `eof`: no more input follows (an unfinished
    /// sequence at the end is invalid).
    pub(crate) fn push(&mut self, input: &[u8], eof: bool, out: &mut Vec<u8>) {
        if self.pending.is_empty() {
            if let Ok(s) = std::str::from_utf8(input) {
                // The common case: one check, one copy.
                self.newlines = self
                    .newlines
                    .saturating_add(memchr::memchr_iter(b'\n', s.as_bytes()).count() as u32);
                out.extend_from_slice(input);
                return;
            }
        }
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            input
        } else {
            let mut j = std::mem::take(&mut self.pending);
            j.extend_from_slice(input);
            joined = j;
            &joined
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(_) => {
                    self.copy(rest, out);
                    return;
                }
                Err(e) => {
                    let (good, after) = rest.split_at(e.valid_up_to());
                    self.copy(good, out);
                    match e.error_len() {
                        Some(n) => {
                            self.bad(out);
                            // The invalid bytes may include a newline only if it is one of them;
                            // a newline byte is ASCII, so it is never part of an invalid run.
                            rest = &after[n..];
                        }
                        None if eof => {
                            self.bad(out);
                            return;
                        }
                        None => {
                            self.pending = after.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// One whole line (line number `line_no`, no terminator) of a text reader, repaired.
    pub(crate) fn line<'a>(&mut self, line: &'a [u8], line_no: u32) -> Cow<'a, str> {
        match std::str::from_utf8(line) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => {
                let before = self.replaced;
                let mut out = Vec::with_capacity(line.len() + 8);
                self.push(line, true, &mut out);
                if before == 0 {
                    self.first_line = line_no;
                }
                Cow::Owned(String::from_utf8(out).expect("repaired"))
            }
        }
    }

    /// Ends the input: an unfinished sequence left is invalid.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.bad(out);
        }
    }

    fn copy(&mut self, good: &[u8], out: &mut Vec<u8>) {
        self.newlines = self
            .newlines
            .saturating_add(memchr::memchr_iter(b'\n', good).count() as u32);
        out.extend_from_slice(good);
    }

    fn bad(&mut self, out: &mut Vec<u8>) {
        if self.replaced == 0 {
            self.first_line = self.newlines.saturating_add(1);
        }
        self.replaced += 1;
        out.extend_from_slice("\u{FFFD}".as_bytes());
    }

    /// The session's warning, when anything was replaced.
    pub(crate) fn warn(&self, s: &mut Session, file: u32) {
        if self.replaced > 0 {
            s.warn(
                SourcePos {
                    file,
                    line: self.first_line,
                },
                message(self.replaced),
            );
        }
    }
}

/// The warning's text, shared with the line-based readers.
pub(crate) fn message(replaced: u64) -> String {
    if replaced == 1 {
        "invalid UTF-8, replaced by U+FFFD; the entry is kept".to_string()
    } else {
        format!(
            "invalid UTF-8 ({replaced} sequences from this line on), replaced by U+FFFD; the entries are kept"
        )
    }
}

/// A whole file read for a reader that parses one document at once: its text (repaired), its
/// size on disk and the repair done.
pub(crate) struct Lossy {
    pub(crate) text: String,
    pub(crate) bytes: u64,
    pub(crate) fix: Utf8Fix,
}

/// Reads `path` whole, adding its bytes (as on disk) to `hasher`.
pub(crate) fn read_lossy(path: &Path, hasher: &mut blake3::Hasher) -> Result<Lossy> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    hasher.update(&raw);
    let bytes = raw.len() as u64;
    let mut fix = Utf8Fix::default();
    let text = match String::from_utf8(raw) {
        Ok(t) => t,
        Err(e) => {
            let raw = e.into_bytes();
            let mut out = Vec::with_capacity(raw.len() + 16);
            fix.push(&raw, true, &mut out);
            String::from_utf8(out).expect("repaired")
        }
    };
    Ok(Lossy { text, bytes, fix })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix_in_chunks(input: &[u8], chunk: usize) -> (String, Utf8Fix) {
        let mut f = Utf8Fix::default();
        let mut out = Vec::new();
        for c in input.chunks(chunk) {
            f.push(c, false, &mut out);
        }
        f.finish(&mut out);
        (String::from_utf8(out).unwrap(), f)
    }

    #[test]
    fn repairs_across_chunk_boundaries_and_names_the_first_line() {
        let input = "a\nbé€😀\n".as_bytes().to_vec();
        for chunk in 1..input.len() {
            let (s, f) = fix_in_chunks(&input, chunk);
            assert_eq!(s, "a\nbé€😀\n", "chunk {chunk}");
            assert_eq!(f.replaced, 0);
        }
        let input = b"ok\n\"caf\xe9\"\n\xff\xfe\n\xf0\x9f";
        for chunk in 1..input.len() + 1 {
            let (s, f) = fix_in_chunks(input, chunk);
            assert_eq!(
                s, "ok\n\"caf\u{fffd}\"\n\u{fffd}\u{fffd}\n\u{fffd}",
                "chunk {chunk}"
            );
            assert_eq!((f.replaced, f.first_line), (4, 2), "chunk {chunk}");
        }
    }
}
