//! Following a log that is still being written (an agent running now).
//!
//! `Follower::open` reads what the file holds with the same reader state `load_file` uses, and
//! keeps that state; every `Follower::poll` reads only the bytes appended since, hands the
//! complete lines among them to that state, and says what changed. A line still being written is
//! left for the next poll, so a line split across writes (or a UTF-8 sequence split across them)
//! is read whole. Following a single-file log written in any number of pieces therefore ends
//! with the session `load_file` returns for the finished file.
//!
//! Readers keep what they learn at the end of a file (a reply still waiting for its usage, the
//! session id taken from the file name, calls sorted across agents, warnings about subagents
//! without a file) out of their running state: `LiveLog::finish` adds it for the session shown and
//! `LiveLog::unfinish` takes it back before more lines are read.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lines::{read_jsonl, JsonSink, LineReader};
use super::{claude_code, codex, detect, fuseraft, http_capture, native, pi, FORMATS};
use crate::model::{Agent, AgentIdx, MsgIdx, RecordedCompaction, Session, Usage, Warning};
use crate::{Error, Result};

/// A reader whose state is kept between reads of a growing file.
/// Reads a whole file through a reader's kept state, so that `load_file` and following share
/// one code path.
pub(crate) fn read_through<L: LiveLog>(path: &std::path::Path, mut live: L) -> Result<L> {
    let f = std::fs::File::open(path).map_err(|e| crate::Error::io(path, e))?;
    live.feed(0, &mut io::BufReader::with_capacity(256 * 1024, f), 0)
        .map_err(|e| crate::Error::io(path, e))?;
    live.finish()?;
    Ok(live)
}

pub(crate) trait LiveLog: Send {
    /// Reads the lines of source file `file` that `input` holds, numbering them after `line`;
    /// returns the number of the last line read.
    fn feed(&mut self, file: usize, input: &mut dyn BufRead, line: u32) -> io::Result<u32>;
    /// Completes the session from what has been read so far.
    fn finish(&mut self) -> Result<()>;
    /// Takes back what `finish` added.
    fn unfinish(&mut self);
    fn session(&self) -> &Session;
    /// The finished session, for the checks every reader's session gets (`formats::pairs`).
    fn session_mut(&mut self) -> &mut Session;
    /// For each call of the finished session, its index in reading order, when `finish` reorders
    /// calls (by time across agents).
    fn call_order(&self) -> Option<&[usize]> {
        None
    }
    /// Files that belong to the session and appeared since the last look (Claude Code subagents),
    /// registered as its source files: their `Source::files` index and path.
    fn discover(&mut self) -> Vec<(usize, PathBuf)> {
        Vec::new()
    }
    /// The last `finish` changed what earlier reads had given (not only added to it): the
    /// follower then announces the whole session as new.
    fn rebuilt(&self) -> bool {
        false
    }
}

/// A log whose reader decides earlier lines by later ones (an HTTP capture: which requests form
/// an agent, which are side calls, is told by the requests that follow) and so reads whole.
/// Following keeps the complete lines read so far and reads them all again at each poll; when
/// that changes anything already shown, the update is a reload. A capture holds one line per
/// model call, so reading it again costs little next to the calls themselves.
struct WholeLive {
    path: PathBuf,
    read: fn(&Path, &[u8]) -> Result<Session>,
    bytes: Vec<u8>,
    session: Session,
    rebuilt: bool,
}

impl WholeLive {
    fn new(path: &Path, read: fn(&Path, &[u8]) -> Result<Session>) -> Self {
        WholeLive {
            path: path.to_path_buf(),
            read,
            bytes: Vec::new(),
            session: Session::default(),
            rebuilt: false,
        }
    }
}

impl LiveLog for WholeLive {
    fn feed(&mut self, _file: usize, input: &mut dyn BufRead, line: u32) -> io::Result<u32> {
        let before = self.bytes.len();
        input.read_to_end(&mut self.bytes)?;
        let lines = memchr::memchr_iter(b'\n', &self.bytes[before..]).count();
        Ok(line.saturating_add(u32::try_from(lines).unwrap_or(u32::MAX)))
    }

    fn finish(&mut self) -> Result<()> {
        let fresh = (self.read)(&self.path, &self.bytes)?;
        let shown = std::mem::replace(&mut self.session, fresh);
        self.rebuilt = !extends(&shown, &self.session);
        Ok(())
    }

    fn unfinish(&mut self) {}

    fn session(&self) -> &Session {
        &self.session
    }

    fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    fn rebuilt(&self) -> bool {
        self.rebuilt
    }
}

/// Whether `new` holds everything `old` did, unchanged and at the same indices.
fn extends(old: &Session, new: &Session) -> bool {
    fn prefix<T: PartialEq>(a: &[T], b: &[T]) -> bool {
        a.len() <= b.len() && a == &b[..a.len()]
    }
    prefix(&old.agents, &new.agents)
        && prefix(&old.messages, &new.messages)
        && prefix(&old.calls, &new.calls)
        && prefix(&old.compactions, &new.compactions)
}

/// The sink of a JSON-lines reader whose log the shared frame [`JsonlLive`] reads: it holds the
/// session, and may complete it at `finish` (e.g. a response still waiting for its usage).
pub(crate) trait SessionSink: JsonSink + Send {
    fn session(&self) -> &Session;
    fn session_mut(&mut self) -> &mut Session;
    /// Adds what only the end of the reading so far can tell; true when something was added
    /// that [`SessionSink::unfinish`] must take back before more lines are fed.
    fn finish(&mut self) -> bool {
        false
    }
    fn unfinish(&mut self) {}
}

/// One JSON-lines log being read (Codex, pi, fuseraft snapshots), kept between reads so that
/// following can feed appended lines: the reader's sink, the hash of what was read, and the file
/// stem that names a session whose log never says its id.
pub(crate) struct JsonlLive<S> {
    pub(crate) sink: S,
    hasher: blake3::Hasher,
    stem: String,
    /// Names the expected entry in warnings ("a pi session entry (JSON object)").
    what: &'static str,
    /// `finish` named the session after the file (a later line may still name it).
    id_from_stem: bool,
    /// `finish` added something to the session that `unfinish` takes back.
    sink_finished: bool,
}

/// An empty session of `format` read from `path`.
pub(crate) fn new_session(path: &Path, format: &str) -> Session {
    let mut s = Session::default();
    s.source.format = format.into();
    s.source.files.push(path.display().to_string());
    s
}

impl<S: SessionSink> JsonlLive<S> {
    pub(crate) fn start(path: &Path, sink: S, what: &'static str) -> Self {
        JsonlLive {
            sink,
            hasher: blake3::Hasher::new(),
            stem: path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default(),
            what,
            id_from_stem: false,
            sink_finished: false,
        }
    }
}

impl<S: SessionSink> LiveLog for JsonlLive<S> {
    fn feed(&mut self, _file: usize, input: &mut dyn BufRead, line: u32) -> io::Result<u32> {
        let mut lines = LineReader::resume(input, &mut self.hasher, line);
        read_jsonl(&mut lines, 0, self.what, &mut self.sink)?;
        let read = lines.bytes();
        let last = lines.line_no();
        self.sink.session_mut().source.bytes += read;
        Ok(last)
    }

    fn finish(&mut self) -> Result<()> {
        self.sink_finished = self.sink.finish();
        let s = self.sink.session_mut();
        if s.id.is_empty() {
            s.id = self.stem.clone();
            self.id_from_stem = true;
        }
        s.source.hash = self.hasher.clone().finalize().to_hex().to_string();
        Ok(())
    }

    fn unfinish(&mut self) {
        if std::mem::take(&mut self.sink_finished) {
            self.sink.unfinish();
        }
        if std::mem::take(&mut self.id_from_stem) {
            self.sink.session_mut().id.clear();
        }
    }

    fn session(&self) -> &Session {
        self.sink.session()
    }

    fn session_mut(&mut self) -> &mut Session {
        self.sink.session_mut()
    }
}

/// What one poll found in the appended bytes. Messages, compactions and agents are only ever
/// appended, so their indices stay valid; calls are kept in time order across agents, and only
/// a call of one agent sorting before calls already seen of another moves earlier calls
/// (`calls_reordered`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Update {
    /// Set when the file was truncated, replaced or rewritten: it was read again from the start
    /// and every index below refers to the new session (all of it is new). Says what happened.
    pub reloaded: Option<String>,
    /// New agents (subagents whose file appeared, sidechains).
    pub agents: Range<AgentIdx>,
    /// Earlier agents whose name, parent or spawning call became known.
    pub changed_agents: Vec<AgentIdx>,
    /// New messages.
    pub messages: Range<MsgIdx>,
    /// Earlier messages that got more content (Claude Code writes each content block of a reply
    /// on its own line; Codex writes a reply's items one by one).
    pub changed_messages: Vec<MsgIdx>,
    /// Indices, in the updated session, of the calls that appeared, ascending.
    pub calls: Vec<usize>,
    /// Indices of calls seen before whose usage or reply changed (usage written after the reply,
    /// streaming usage snapshots).
    pub changed_calls: Vec<usize>,
    /// True when a new call sorted before calls seen before: earlier call indices moved.
    pub calls_reordered: bool,
    /// New recorded compactions.
    pub compactions: Range<usize>,
    /// Earlier compactions completed by later lines (their summary, their boundary).
    pub changed_compactions: Vec<usize>,
    /// Warnings that were not there before.
    pub warnings: Vec<Warning>,
    /// Bytes read by this poll.
    pub bytes: u64,
}

impl Update {
    fn is_empty(&self) -> bool {
        self.bytes == 0
            && self.reloaded.is_none()
            && self.agents.is_empty()
            && self.changed_agents.is_empty()
            && self.messages.is_empty()
            && self.changed_messages.is_empty()
            && self.calls.is_empty()
            && self.changed_calls.is_empty()
            && self.compactions.is_empty()
            && self.changed_compactions.is_empty()
            && self.warnings.is_empty()
    }
}

/// A session log followed while it grows.
pub struct Follower {
    path: PathBuf,
    format: &'static str,
    log: Box<dyn LiveLog>,
    /// One per `Source::files` entry.
    files: Vec<Cursor>,
    seen: Seen,
    /// A read failed part way: lines may have been read without their cursor moving on.
    broken: Option<String>,
    /// What the checks of every session (`formats::pairs`) changed in the finished session,
    /// taken back before more lines are read.
    checked: Option<super::pairs::Checked>,
    /// The file was truncated, removed or replaced and holds no complete line yet (a log rotated
    /// and about to be refilled): why it will be read again once it does.
    pending_reload: Option<String>,
}

/// How far one file has been read.
struct Cursor {
    path: PathBuf,
    /// End of the last complete line read.
    offset: u64,
    /// Lines read.
    line: u32,
    /// Bytes past `offset` up to here hold no newline: the start of a line still being written.
    scanned: u64,
    /// Device and inode, to notice the file being replaced.
    identity: Option<(u64, u64)>,
}

impl Cursor {
    fn new(path: PathBuf) -> Self {
        Cursor {
            path,
            offset: 0,
            line: 0,
            scanned: 0,
            identity: None,
        }
    }
}

#[cfg(unix)]
fn identity(m: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Why a format cannot be followed.
fn not_followable(format: &str) -> &'static str {
    match format {
        super::openai::ID | super::cline::ID | super::swe_agent::ID => {
            "the log is one JSON document, rewritten as a whole rather than appended line by line"
        }
        super::otel::ID => "spans are written as multi-line JSON objects or one OTLP document",
        _ => "its reader does not keep its state between reads; reload the file instead",
    }
}

impl Follower {
    /// Reads the log as `formats::load_file` does (up to its last complete line) and gets ready to
    /// read what is appended to it.
    pub fn open(path: &Path) -> Result<Follower> {
        let format = detect(path)?;
        Self::open_as(path, format)
    }

    /// As `open`, with the named reader instead of sniffing.
    pub fn open_as(path: &Path, format: &str) -> Result<Follower> {
        let (format, log): (&'static str, Box<dyn LiveLog>) = match format {
            claude_code::ID => (claude_code::ID, Box::new(claude_code::Live::new(path))),
            codex::ID => (codex::ID, Box::new(codex::Live::new(path))),
            pi::ID => (pi::ID, Box::new(pi::Live::new(path))),
            fuseraft::ID => (fuseraft::ID, Box::new(fuseraft::Live::new(path))),
            native::ID => (native::ID, Box::new(native::Live::new(path))),
            http_capture::ID => (
                http_capture::ID,
                Box::new(WholeLive::new(path, http_capture::read_bytes)),
            ),
            other if FORMATS.contains(&other) => {
                return Err(Error::Invalid(format!(
                    "{}: following is not supported for the {other} format: {}",
                    path.display(),
                    not_followable(other)
                )))
            }
            other => {
                return Err(Error::Invalid(format!(
                    "unknown format `{other}`; formats: {}",
                    FORMATS.join(", ")
                )))
            }
        };
        let mut f = Follower {
            path: path.to_path_buf(),
            format,
            log,
            files: vec![Cursor::new(path.to_path_buf())],
            seen: Seen::default(),
            broken: None,
            checked: None,
            pending_reload: None,
        };
        let read = f.read_appended();
        let finished = f.finish();
        read?;
        finished?;
        f.seen.update(f.log.session(), f.log.call_order());
        Ok(f)
    }

    /// The session as read so far.
    pub fn session(&self) -> &Session {
        self.log.session()
    }

    /// The reader id (`Source::format`).
    pub fn format(&self) -> &'static str {
        self.format
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was appended since the last poll. `None` when no new line is complete yet.
    pub fn poll(&mut self) -> Result<Option<Update>> {
        let reload = match self.broken.take() {
            Some(e) => Some(format!(
                "reading {} failed ({e}): read again from the start",
                self.path.display()
            )),
            None => match self.pending_reload.take() {
                Some(r) => Some(r),
                None => self.changed_under_us()?,
            },
        };
        if let Some(reason) = reload {
            // Truncated to nothing or replaced by an empty file, to be written again: wait for
            // its first line (a rotated log refilled a moment later) instead of failing to read
            // an empty file.
            if !has_complete_line(&self.path) {
                self.pending_reload = Some(reason);
                return Ok(None);
            }
            let fresh = Follower::open_as(&self.path, self.format)
                .or_else(|_| Follower::open(&self.path))?;
            *self = fresh;
            return Ok(Some(self.everything(reason)));
        }
        let grown = self
            .files
            .iter()
            .any(|c| fs::metadata(&c.path).is_ok_and(|m| m.len() > c.offset.max(c.scanned)));
        let appeared = self.log.discover();
        for (file, path) in &appeared {
            debug_assert_eq!(*file, self.files.len());
            self.files.push(Cursor::new(path.clone()));
        }
        if !grown && appeared.is_empty() {
            return Ok(None);
        }
        self.unfinish();
        let read = self.read_appended();
        let finished = self.finish();
        let bytes = read.inspect_err(|e| self.broken = Some(e.to_string()))?;
        finished?;
        if self.log.rebuilt() {
            let mut update = self.everything(format!(
                "{}: the new lines changed how earlier ones read (an HTTP capture's agents are \
                 decided by the requests that follow): the session is shown anew",
                self.path.display()
            ));
            update.bytes = bytes;
            self.seen.update(self.log.session(), self.log.call_order());
            return Ok(Some(update));
        }
        let mut update = self.seen.diff(self.log.session(), self.log.call_order());
        update.bytes = bytes;
        self.seen.update(self.log.session(), self.log.call_order());
        Ok((!update.is_empty()).then_some(update))
    }

    /// Completes the session read so far as `formats::load_as` does.
    fn finish(&mut self) -> Result<()> {
        self.log.finish()?;
        self.checked = Some(super::pairs::check(self.log.session_mut()));
        Ok(())
    }

    fn unfinish(&mut self) {
        if let Some(c) = self.checked.take() {
            c.undo(self.log.session_mut());
        }
        self.log.unfinish();
    }

    /// Reads the complete lines appended to every file, then the files that appeared beside
    /// them; returns the bytes read.
    fn read_appended(&mut self) -> Result<u64> {
        let mut bytes = 0;
        let mut first = 0;
        loop {
            for (i, c) in self.files.iter_mut().enumerate().skip(first) {
                bytes += read_lines(c, i, self.log.as_mut())?;
            }
            first = self.files.len();
            let appeared = self.log.discover();
            if appeared.is_empty() {
                return Ok(bytes);
            }
            for (file, path) in appeared {
                debug_assert_eq!(file, self.files.len());
                self.files.push(Cursor::new(path));
            }
        }
    }

    /// Whether a file was truncated, replaced or rewritten since it was read: a reason to read
    /// everything again.
    fn changed_under_us(&self) -> Result<Option<String>> {
        for c in &self.files {
            let meta = match fs::metadata(&c.path) {
                Ok(m) => m,
                Err(e) if c.path == self.path => return Err(Error::io(&c.path, e)),
                Err(_) => {
                    return Ok(Some(format!(
                        "{} was removed: the session was read again from the start",
                        c.path.display()
                    )))
                }
            };
            if c.identity.is_some() && identity(&meta) != c.identity {
                return Ok(Some(format!(
                    "{} was replaced by another file: read again from the start",
                    c.path.display()
                )));
            }
            if meta.len() < c.offset {
                return Ok(Some(format!(
                    "{} shrank from {} to {} bytes: read again from the start",
                    c.path.display(),
                    c.offset,
                    meta.len()
                )));
            }
            if c.offset > 0 && !ends_line_at(&c.path, c.offset)? {
                return Ok(Some(format!(
                    "{} was rewritten (byte {} no longer ends a line): read again from the start",
                    c.path.display(),
                    c.offset
                )));
            }
        }
        Ok(None)
    }

    /// An update that announces the whole session as new.
    fn everything(&self, reason: String) -> Update {
        let s = self.session();
        Update {
            reloaded: Some(reason),
            agents: 0..s.agents.len(),
            messages: 0..s.messages.len(),
            calls: (0..s.calls.len()).collect(),
            compactions: 0..s.compactions.len(),
            warnings: s.warnings.clone(),
            bytes: s.source.bytes,
            ..Update::default()
        }
    }
}

/// Does the file exist and hold at least one complete line?
fn has_complete_line(path: &Path) -> bool {
    // Opening a FIFO would block until something writes to it: only a regular file is a log.
    if !fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(mut f) = File::open(path) else {
        return false;
    };
    let size = f.metadata().map_or(0, |m| m.len());
    size > 0 && last_line_end(&mut f, 0, size).is_ok_and(|e| e.is_some())
}

/// Is the byte before `offset` still a newline?
fn ends_line_at(path: &Path, offset: u64) -> Result<bool> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut b = [0u8];
    f.seek(SeekFrom::Start(offset - 1))
        .and_then(|_| f.read_exact(&mut b))
        .map_err(|e| Error::io(path, e))?;
    Ok(b[0] == b'\n')
}

/// Feeds the complete lines appended to one file; returns the bytes read.
fn read_lines(c: &mut Cursor, file: usize, log: &mut dyn LiveLog) -> Result<u64> {
    let io_err = |e| Error::io(&c.path, e);
    let mut f = File::open(&c.path).map_err(io_err)?;
    let meta = f.metadata().map_err(io_err)?;
    c.identity = identity(&meta);
    let size = meta.len();
    c.scanned = c.scanned.min(size);
    let Some(end) = last_line_end(&mut f, c.offset.max(c.scanned), size).map_err(io_err)? else {
        c.scanned = size;
        return Ok(0);
    };
    f.seek(SeekFrom::Start(c.offset)).map_err(io_err)?;
    let mut input = BufReader::with_capacity(256 * 1024, f.take(end - c.offset));
    c.line = log.feed(file, &mut input, c.line).map_err(io_err)?;
    let read = end - c.offset;
    c.offset = end;
    c.scanned = end;
    Ok(read)
}

/// End of the last complete line between `from` and `size`, looking back from `size`: the bytes
/// after it are a line still being written.
fn last_line_end(f: &mut File, from: u64, size: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut hi = size;
    while hi > from {
        let lo = hi.saturating_sub(buf.len() as u64).max(from);
        let chunk = &mut buf[..(hi - lo) as usize];
        f.seek(SeekFrom::Start(lo))?;
        f.read_exact(chunk)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(Some(lo + i as u64 + 1));
        }
        hi = lo;
    }
    Ok(None)
}

/// What the session held after the previous poll, enough to tell what changed.
#[derive(Default)]
struct Seen {
    agents: Vec<Agent>,
    /// Parts and flags of each message (a reader may size a message when a later line tells).
    parts: Vec<(usize, crate::model::MessageFlags)>,
    /// Each call's recorded fields, by reading order.
    calls: Vec<CallPrint>,
    compactions: Vec<RecordedCompaction>,
    warnings: Vec<Warning>,
}

#[derive(Clone, Copy, PartialEq)]
struct CallPrint {
    usage: Option<Usage>,
    reply: Option<MsgIdx>,
    context_end: MsgIdx,
}

impl CallPrint {
    fn of(c: &crate::model::Call) -> Self {
        CallPrint {
            usage: c.usage,
            reply: c.reply,
            context_end: c.context_end,
        }
    }
}

/// Reading-order index of the call at `i`.
fn raw(order: Option<&[usize]>, i: usize) -> usize {
    order.map_or(i, |o| o[i])
}

impl Seen {
    fn diff(&self, s: &Session, order: Option<&[usize]>) -> Update {
        let changed = |old: usize, new_items: &mut dyn Iterator<Item = bool>| -> Vec<usize> {
            new_items
                .take(old)
                .enumerate()
                .filter_map(|(i, d)| d.then_some(i))
                .collect()
        };
        let mut u = Update {
            agents: self.agents.len()..s.agents.len(),
            changed_agents: changed(
                self.agents.len(),
                &mut s.agents.iter().zip(&self.agents).map(|(a, b)| a != b),
            ),
            messages: self.parts.len()..s.messages.len(),
            changed_messages: changed(
                self.parts.len(),
                &mut s
                    .messages
                    .iter()
                    .zip(&self.parts)
                    .map(|(m, &(n, f))| m.parts.len() != n || m.flags != f),
            ),
            compactions: self.compactions.len()..s.compactions.len(),
            changed_compactions: changed(
                self.compactions.len(),
                &mut s
                    .compactions
                    .iter()
                    .zip(&self.compactions)
                    .map(|(a, b)| a != b),
            ),
            ..Update::default()
        };
        for (i, c) in s.calls.iter().enumerate() {
            match self.calls.get(raw(order, i)) {
                None => u.calls.push(i),
                Some(p) if *p != CallPrint::of(c) => u.changed_calls.push(i),
                Some(_) => {}
            }
        }
        u.calls_reordered = u.calls.first().is_some_and(|&i| i < self.calls.len());
        // Warnings read from lines only grow; those `finish` adds sit at the end and may go.
        let same = s
            .warnings
            .iter()
            .zip(&self.warnings)
            .take_while(|(a, b)| a == b)
            .count();
        u.warnings = s.warnings[same..]
            .iter()
            .filter(|w| !self.warnings[same..].contains(w))
            .cloned()
            .collect();
        u
    }

    fn update(&mut self, s: &Session, order: Option<&[usize]>) {
        self.agents.clone_from(&s.agents);
        self.parts.clear();
        self.parts
            .extend(s.messages.iter().map(|m| (m.parts.len(), m.flags)));
        self.calls.resize(
            s.calls.len(),
            CallPrint {
                usage: None,
                reply: None,
                context_end: 0,
            },
        );
        for (i, c) in s.calls.iter().enumerate() {
            self.calls[raw(order, i)] = CallPrint::of(c);
        }
        self.compactions.clone_from(&s.compactions);
        self.warnings.clone_from(&s.warnings);
    }
}
