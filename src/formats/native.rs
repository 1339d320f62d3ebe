//! ctxlab's own JSONL format: the session model written out record by record, so that any tool can
//! produce a session ctxlab reads without loss. Specified in docs/formats.md ("ctxlab native").

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::follow::LiveLog;
use super::lines::{read_jsonl, JsonSink, LineReader};
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "native";
/// The format version this build writes and the newest it reads.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    /// Always `"session"`: marks the file as ctxlab native.
    ctxlab: String,
    version: u32,
    #[serde(default)]
    id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    usage_only: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    estimate_only: bool,
    /// `Session::context_window`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_window: Option<u64>,
    /// `Session::project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    /// `Session::max_output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_output: Option<u64>,
    /// `Session::whole_requests`.
    #[serde(default, skip_serializing_if = "is_false")]
    whole_requests: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum RecordRef<'a> {
    Agent(&'a Agent),
    Message(&'a Message),
    Call(&'a Call),
    Compaction(&'a RecordedCompaction),
    Threshold(&'a RecordedThreshold),
    Cost(&'a RecordedCost),
    Warning(&'a Warning),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Record {
    Agent(Agent),
    Message(Message),
    Call(Call),
    Compaction(RecordedCompaction),
    Threshold(RecordedThreshold),
    Cost(RecordedCost),
    Warning(Warning),
}

/// Writes `s` as ctxlab native JSONL: the header line, then agents, messages, calls,
/// compactions, thresholds and warnings, one record a line.
pub fn write(s: &Session, w: impl Write) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(w);
    let header = Header {
        ctxlab: "session".into(),
        version: VERSION,
        id: s.id.clone(),
        title: s.title.clone(),
        usage_only: s.usage_only,
        estimate_only: s.estimate_only,
        context_window: s.context_window,
        project: s.project.clone(),
        max_output: s.max_output,
        whole_requests: s.whole_requests,
    };
    let line = |w: &mut std::io::BufWriter<_>, r: &dyn erased::Ser| -> std::io::Result<()> {
        r.write_json(w)?;
        w.write_all(b"\n")
    };
    line(&mut w, &header)?;
    for a in &s.agents {
        line(&mut w, &RecordRef::Agent(a))?;
    }
    for m in &s.messages {
        line(&mut w, &RecordRef::Message(m))?;
    }
    for c in &s.calls {
        line(&mut w, &RecordRef::Call(c))?;
    }
    for c in &s.compactions {
        line(&mut w, &RecordRef::Compaction(c))?;
    }
    for t in &s.thresholds {
        line(&mut w, &RecordRef::Threshold(t))?;
    }
    for c in &s.recorded_costs {
        line(&mut w, &RecordRef::Cost(c))?;
    }
    for x in &s.warnings {
        line(&mut w, &RecordRef::Warning(x))?;
    }
    w.flush()
}

/// Object-safe "serialize as one JSON line" for the writer's records.
mod erased {
    pub trait Ser {
        fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
            serde_json::to_writer(w, self).map_err(std::io::Error::from)
        }
    }
}

pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    o.get("ctxlab").and_then(|v| v.as_str()) == Some("session")
}

struct Sink {
    s: Session,
    header_seen: bool,
    /// Set when the header says a newer version: reading stops with this error.
    fatal: Option<(u32, String)>,
    agent_lines: Vec<u32>,
    cost_lines: Vec<u32>,
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        if self.fatal.is_some() {
            return Ok(());
        }
        if !self.header_seen {
            let h: Header = serde_json::from_slice(json)?;
            if h.ctxlab != "session" {
                self.fatal = Some((
                    pos.line,
                    "expected the ctxlab header {\"ctxlab\":\"session\",...}".into(),
                ));
                return Ok(());
            }
            if h.version > VERSION || h.version == 0 {
                self.fatal = Some((
                    pos.line,
                    format!(
                        "ctxlab native version {} (this ctxlab reads versions 1 to {VERSION})",
                        h.version
                    ),
                ));
                return Ok(());
            }
            self.header_seen = true;
            self.s.id = h.id;
            self.s.title = h.title;
            self.s.usage_only = h.usage_only;
            self.s.estimate_only = h.estimate_only;
            self.s.context_window = h.context_window;
            self.s.project = h.project;
            self.s.max_output = h.max_output;
            self.s.whole_requests = h.whole_requests;
            return Ok(());
        }
        let record = match serde_json::from_slice::<Record>(json) {
            Ok(r) => r,
            Err(e) => match without_bad_usage(json) {
                // A call whose usage holds a number that is not a token count: kept, without
                // recorded usage (`de::bad_usage`).
                Some((why, fixed)) => {
                    self.s.warn(pos, why);
                    serde_json::from_slice::<Record>(&fixed)?
                }
                None => return Err(e),
            },
        };
        match record {
            Record::Agent(a) => {
                self.s.agents.push(a);
                self.agent_lines.push(pos.line);
            }
            Record::Message(mut m) => {
                m.source = pos;
                self.s.messages.push(m);
            }
            Record::Call(mut c) => {
                c.source = pos;
                self.s.calls.push(c);
            }
            Record::Compaction(mut c) => {
                c.source = pos;
                self.s.compactions.push(c);
            }
            Record::Threshold(t) => self.s.thresholds.push(t),
            Record::Cost(c) => {
                self.s.recorded_costs.push(c);
                self.cost_lines.push(pos.line);
            }
            Record::Warning(w) => self.s.warnings.push(w),
        }
        Ok(())
    }

    fn warn(&mut self, pos: SourcePos, message: String) {
        if !self.header_seen && self.fatal.is_none() {
            self.fatal = Some((pos.line, format!("expected the ctxlab header: {message}")));
            return;
        }
        self.s.warn(pos, message);
    }
}

/// A `call` record whose `usage` holds a figure that is not a token count: the warning, and the
/// record with `usage: null`.
fn without_bad_usage(json: &[u8]) -> Option<(String, Vec<u8>)> {
    let mut v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let usage = v.get_mut("call")?.get_mut("usage")?;
    let o = usage.as_object()?;
    let why = super::de::bad_usage_values(o.iter().map(|(k, v)| (k.as_str(), v)))?;
    *usage = serde_json::Value::Null;
    Some((why, serde_json::to_vec(&v).ok()?))
}

pub fn read(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut live = Live::new(path);
    live.feed(0, &mut std::io::BufReader::with_capacity(256 * 1024, f), 0)
        .map_err(|e| Error::io(path, e))?;
    live.check()?;
    let mut s = live.sink.s;
    s.source.hash = live.hasher.finalize().to_hex().to_string();
    validate(&mut s, &live.sink.agent_lines, &live.sink.cost_lines);
    Ok(s)
}

/// A native file being read, kept between reads so that `formats::follow` can feed appended
/// lines. Validation may drop records that later lines would make valid, so the session shown
/// (`view`) is a validated copy of what was read.
pub(crate) struct Live {
    sink: Sink,
    hasher: blake3::Hasher,
    path: std::path::PathBuf,
    view: Session,
}

impl Live {
    pub(crate) fn new(path: &Path) -> Self {
        let mut s = Session::default();
        s.source.format = ID.into();
        s.source.files.push(path.display().to_string());
        Live {
            sink: Sink {
                s,
                header_seen: false,
                fatal: None,
                agent_lines: Vec::new(),
                cost_lines: Vec::new(),
            },
            hasher: blake3::Hasher::new(),
            path: path.to_path_buf(),
            view: Session::default(),
        }
    }

    /// A header from a newer ctxlab, or no header at all, ends the reading.
    fn check(&self) -> Result<()> {
        if let Some((line, message)) = &self.sink.fatal {
            return Err(Error::Parse {
                path: self.path.clone(),
                line: *line,
                message: message.clone(),
            });
        }
        if !self.sink.header_seen {
            return Err(Error::Parse {
                path: self.path.clone(),
                line: 1,
                message: "expected the ctxlab header {\"ctxlab\":\"session\",\"version\":1,...}; the file is empty".into(),
            });
        }
        Ok(())
    }
}

impl LiveLog for Live {
    fn feed(&mut self, _file: usize, input: &mut dyn BufRead, line: u32) -> std::io::Result<u32> {
        let mut lines = LineReader::resume(input, &mut self.hasher, line);
        read_jsonl(&mut lines, 0, "a ctxlab native record", &mut self.sink)?;
        self.sink.s.source.bytes += lines.bytes();
        Ok(lines.line_no())
    }

    fn finish(&mut self) -> Result<()> {
        self.check()?;
        let mut view = self.sink.s.clone();
        view.source.hash = self.hasher.clone().finalize().to_hex().to_string();
        validate(&mut view, &self.sink.agent_lines, &self.sink.cost_lines);
        self.view = view;
        Ok(())
    }

    fn unfinish(&mut self) {}

    fn session(&self) -> &Session {
        &self.view
    }

    fn session_mut(&mut self) -> &mut Session {
        &mut self.view
    }
}

/// Indices come from another tool: every one is checked so the rest of ctxlab can trust them.
fn validate(s: &mut Session, agent_lines: &[u32], cost_lines: &[u32]) {
    let file = 0;
    let mut warns = Vec::new();
    let n_agents = s.agents.len();
    for (i, a) in s.agents.iter_mut().enumerate() {
        if a.parent.is_some_and(|p| p >= n_agents || p == i) {
            warns.push((
                agent_lines.get(i).copied().unwrap_or(1),
                format!(
                    "agent {i}: parent {} is not another agent; cleared",
                    a.parent.unwrap_or_default()
                ),
            ));
            a.parent = None;
        }
    }
    if s.agents.is_empty() && (!s.messages.is_empty() || !s.calls.is_empty()) {
        s.agents.push(Agent {
            id: "main".into(),
            name: "main".into(),
            ..Agent::default()
        });
        warns.push((1, "no agent records; one agent `main` assumed".into()));
    }
    let n_agents = s.agents.len();
    let n_msgs = s.messages.len();
    for m in &mut s.messages {
        if m.agent >= n_agents {
            warns.push((
                m.source.line,
                format!("message agent {} does not exist; given to agent 0", m.agent),
            ));
            m.agent = 0;
        }
    }
    // Calls dropped here renumber the rest: recorded costs follow their call.
    let mut new_index = Vec::with_capacity(s.calls.len());
    let mut kept = 0;
    s.calls.retain(|c| {
        let ok = c.agent < n_agents && c.context_end <= n_msgs;
        if !ok {
            warns.push((c.source.line, format!("call agent {} / context_end {} out of range ({n_agents} agents, {n_msgs} messages); dropped", c.agent, c.context_end)));
            new_index.push(None);
        } else {
            new_index.push(Some(kept));
            kept += 1;
        }
        ok
    });
    let mut i = 0;
    s.recorded_costs.retain_mut(|c| {
        let line = cost_lines.get(i).copied().unwrap_or(0);
        i += 1;
        match new_index.get(c.call).copied().flatten() {
            Some(n) if c.usd.is_finite() => {
                c.call = n;
                true
            }
            _ => {
                warns.push((
                    line,
                    format!(
                        "cost of call {} refers to no call (or is not a number); dropped",
                        c.call
                    ),
                ));
                false
            }
        }
    });
    for c in &mut s.calls {
        if c.reply.is_some_and(|r| r >= n_msgs) {
            warns.push((
                c.source.line,
                format!(
                    "call reply {} is not a message (the session has {} messages); cleared",
                    c.reply.unwrap_or_default(),
                    s.messages.len()
                ),
            ));
            c.reply = None;
        }
    }
    s.compactions.retain(|c| {
        let ok = c.agent < n_agents
            && c.at_message <= n_msgs
            && c.summary.is_none_or(|m| m < n_msgs)
            && c.kept_from.is_none_or(|k| k <= c.at_message);
        if !ok {
            warns.push((
                c.source.line,
                "compaction refers to an agent or message that does not exist; dropped".into(),
            ));
        }
        ok
    });
    for t in &mut s.thresholds {
        if t.agent.is_some_and(|a| a >= n_agents) {
            t.agent = None;
        }
    }
    for (line, msg) in warns {
        s.warn(SourcePos { file, line }, msg);
    }
}
