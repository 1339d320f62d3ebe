//! Logs that are one JSON document (OpenAI message lists, Gemini CLI chat files, OpenCode exports,
//! Cline task files): read as a stream so that only one element of the big array is in memory at a
//! time, hashed and line-counted while serde_json pulls bytes from the file.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::utf8::Utf8Fix;
use crate::model::SourcePos;
use crate::{Error, Result};

/// The file, hashed and line-counted as serde_json pulls bytes from it.
pub(crate) struct Src {
    file: std::fs::File,
    /// Bytes as read from the file (hashed).
    raw: Box<[u8]>,
    /// The same bytes with invalid UTF-8 replaced (what serde_json reads), served from `pos`.
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    fix: Utf8Fix,
    hasher: blake3::Hasher,
    bytes: u64,
    newlines: Rc<Cell<u32>>,
}

impl Src {
    pub(crate) fn open(path: &Path) -> Result<Src> {
        Self::open_hashing(path, blake3::Hasher::new())
    }

    /// As `open`, continuing `hasher` (a session of several files hashes them in order).
    pub(crate) fn open_hashing(path: &Path, hasher: blake3::Hasher) -> Result<Src> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Src {
            file,
            raw: vec![0u8; 256 * 1024].into_boxed_slice(),
            buf: Vec::with_capacity(256 * 1024),
            pos: 0,
            eof: false,
            fix: Utf8Fix::default(),
            hasher,
            bytes: 0,
            newlines: Rc::new(Cell::new(0)),
        })
    }

    /// Newlines read so far (shared with the element seeds, which read it while parsing).
    pub(crate) fn newlines(&self) -> Rc<Cell<u32>> {
        self.newlines.clone()
    }

    /// Reads the rest of the file (the hash is of the file, not of what was parsed) and returns
    /// its size, BLAKE3 hash and the invalid UTF-8 replaced (`Utf8Fix::warn` reports it).
    pub(crate) fn finish(mut self) -> (u64, String, Utf8Fix) {
        let _ = std::io::copy(&mut self, &mut std::io::sink());
        (
            self.bytes,
            self.hasher.finalize().to_hex().to_string(),
            self.fix,
        )
    }
}

impl Read for Src {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() && !self.eof {
            let n = loop {
                match self.file.read(&mut self.raw) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            self.buf.clear();
            self.pos = 0;
            if n == 0 {
                self.eof = true;
                self.fix.finish(&mut self.buf);
            } else {
                self.hasher.update(&self.raw[..n]);
                self.bytes += n as u64;
                self.fix.push(&self.raw[..n], false, &mut self.buf);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        let chunk = &self.buf[self.pos..self.pos + n];
        out[..n].copy_from_slice(chunk);
        let nl = memchr::memchr_iter(b'\n', chunk).count() as u32;
        if nl > 0 {
            self.newlines.set(self.newlines.get().saturating_add(nl));
        }
        self.pos += n;
        Ok(n)
    }
}

/// Where an element just read began: it ended on the current line and spans as many lines as it
/// holds newlines. Positions are 1-based lines of file `file`.
pub(crate) fn element_pos(newlines: &Cell<u32>, raw: &RawValue, file: u32) -> SourcePos {
    let end = newlines.get() + 1;
    let span = memchr::memchr_iter(b'\n', raw.get().as_bytes()).count() as u32;
    SourcePos {
        file,
        line: end.saturating_sub(span),
    }
}

/// Streams a JSON array: `each` gets every element (as raw JSON) and where it starts.
pub(crate) struct EachElement<'a, F> {
    pub newlines: Rc<Cell<u32>>,
    pub file: u32,
    pub each: &'a mut F,
}

impl<'de, F: FnMut(Box<RawValue>, SourcePos)> DeserializeSeed<'de> for EachElement<'_, F> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(Box<RawValue>, SourcePos)> Visitor<'de> for EachElement<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            let pos = element_pos(&self.newlines, &raw, self.file);
            (self.each)(raw, pos);
        }
        Ok(())
    }
}

/// Streams a file that is one JSON array, element by element, continuing `hasher`. Returns the
/// bytes read, the hash, where the document breaks off when it does (the elements before the
/// damage were given to `each`), and the invalid UTF-8 replaced.
pub(crate) fn each_element(
    path: &Path,
    file: u32,
    hasher: blake3::Hasher,
    mut each: impl FnMut(Box<RawValue>, SourcePos),
) -> Result<(u64, String, Option<(u32, String)>, Utf8Fix)> {
    let mut src = Src::open_hashing(path, hasher)?;
    let newlines = src.newlines();
    let result = {
        let mut de = serde_json::Deserializer::from_reader(&mut src);
        EachElement {
            newlines,
            file,
            each: &mut each,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
    };
    let broken = result.err().map(|e| (e.line() as u32, e.to_string()));
    let (bytes, hash, fix) = src.finish();
    Ok((bytes, hash, broken, fix))
}

/// A top-level field of a JSON-object document read by [`each_in_object`].
pub(crate) enum Field<'a> {
    /// An element of the streamed array, with where it starts.
    Element(Box<RawValue>, SourcePos),
    /// One of the other fields asked for, parsed whole (metadata: small).
    Value(&'a str, serde_json::Value),
}

/// What [`each_in_object`] read.
pub(crate) struct Streamed {
    pub bytes: u64,
    pub hash: String,
    /// Where the document breaks off, when it does (the elements before were given).
    pub broken: Option<(u32, String)>,
    pub fix: Utf8Fix,
    /// Whether the array field was there.
    pub saw_array: bool,
}

/// Streams a file that is one JSON object (`what` names it for messages): the elements of its
/// `array` field go to `on` one at a time as they are parsed, the fields named in `fields` whole,
/// the rest is skipped unparsed.
pub(crate) fn each_in_object(
    path: &Path,
    what: &'static str,
    array: &str,
    fields: &[&str],
    mut on: impl FnMut(Field<'_>),
) -> Result<Streamed> {
    use serde::de::{IgnoredAny, MapAccess};
    struct Doc<'a, F> {
        what: &'static str,
        array: &'a str,
        fields: &'a [&'a str],
        newlines: Rc<Cell<u32>>,
        saw_array: bool,
        on: &'a mut F,
    }
    impl<'de, F: FnMut(Field<'_>)> Visitor<'de> for &mut Doc<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.what)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == self.array {
                    self.saw_array = true;
                    let on = &mut *self.on;
                    let mut each = |raw, pos| on(Field::Element(raw, pos));
                    map.next_value_seed(EachElement {
                        newlines: self.newlines.clone(),
                        file: 0,
                        each: &mut each,
                    })?;
                } else if self.fields.contains(&key.as_str()) {
                    let v = map.next_value()?;
                    (self.on)(Field::Value(&key, v));
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(())
        }
    }
    impl<'de, F: FnMut(Field<'_>)> DeserializeSeed<'de> for &mut Doc<'_, F> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    let mut src = Src::open(path)?;
    let mut doc = Doc {
        what,
        array,
        fields,
        newlines: src.newlines(),
        saw_array: false,
        on: &mut on,
    };
    let result = {
        let mut de = serde_json::Deserializer::from_reader(&mut src);
        (&mut doc).deserialize(&mut de).and_then(|()| de.end())
    };
    let saw_array = doc.saw_array;
    let broken = result.err().map(|e| (e.line() as u32, e.to_string()));
    let (bytes, hash, fix) = src.finish();
    Ok(Streamed {
        bytes,
        hash,
        broken,
        fix,
        saw_array,
    })
}

impl Streamed {
    /// A document that breaks off before any message, or has no `array` field, is refused; one
    /// that breaks off later keeps the messages before the break, with a warning in `s`.
    pub(crate) fn settle(
        &self,
        path: &Path,
        what: &str,
        array: &str,
        s: &mut crate::model::Session,
    ) -> Result<()> {
        match &self.broken {
            Some((line, e)) if s.messages.is_empty() => Err(Error::Parse {
                path: path.to_path_buf(),
                line: *line,
                message: format!("expected {what}: {e}"),
            }),
            Some((line, e)) => {
                s.warn(
                    SourcePos {
                        file: 0,
                        line: *line,
                    },
                    format!(
                        "the JSON document breaks off here ({e}); the messages before it are kept"
                    ),
                );
                Ok(())
            }
            None if !self.saw_array => Err(Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                message: format!("expected {what} with a `{array}` list"),
            }),
            None => Ok(()),
        }
    }
}
