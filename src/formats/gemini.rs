//! Gemini CLI chat files, `~/.gemini/tmp/<project hash>/chats/session-*.json(l)`.
//!
//! Two shapes, one record type (`MessageRecord` in google-gemini/gemini-cli
//! `packages/core/src/services/chatRecordingService.ts`):
//! - up to 0.2x: one pretty-printed JSON document `{sessionId, projectHash, startTime,
//!   lastUpdated, messages: [...]}`, rewritten whole after every change. Streamed message by
//!   message.
//! - newer: JSON lines. Line 1 is `{sessionId, projectHash, startTime, lastUpdated, kind?}`; then
//!   message records (a record whose `id` was seen before replaces it: that is how tokens and tool
//!   calls are added to a reply), `{"$set": {...}}` metadata updates (`$set.messages` replaces the
//!   whole history: a compression or a masking of tool output) and `{"$rewindTo": id}` (the
//!   history from that message on is dropped). The final history is known only at the end, so the
//!   records are kept (the latest version of each) and the session is built from them.
//!
//! A `gemini` record is one model response: `thoughts` (summaries), `content`, `toolCalls` (each
//! with its `result`, the `functionResponse` parts sent back), `tokens{input, output, cached,
//! thoughts, tool, total}` — `input` is the whole prompt including `cached`. When a tool call is
//! recorded after another record (an `info` notice) came between, Gemini CLI writes it as a new
//! `gemini` record with no text, no thoughts and no tokens: that record continues the previous
//! response and is merged into it, not counted as a call.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::de::{bad_usage, Count};
use super::lines::{read_jsonl, JsonSink, LineReader};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "gemini-cli";

/// Gemini CLI's compression summary (`getCompressionPrompt` asks for a `<state_snapshot>`).
const SNAPSHOT_TAG: &str = "<state_snapshot>";

#[derive(Deserialize, Clone)]
struct Rec {
    id: String,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    thoughts: Option<Vec<Thought>>,
    #[serde(default)]
    tokens: Option<Tokens>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, rename = "toolCalls")]
    tool_calls: Option<Vec<ToolCallRec>>,
}

#[derive(Deserialize, Clone)]
struct Thought {
    #[serde(default)]
    subject: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize, Clone, Copy, Default)]
struct Tokens {
    #[serde(default)]
    input: Count,
    #[serde(default)]
    output: Count,
    #[serde(default)]
    cached: Count,
    #[serde(default)]
    thoughts: Count,
}

#[derive(Deserialize, Clone)]
struct ToolCallRec {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Value,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    status: String,
}

impl Tokens {
    /// `input` includes the cached part; output counts the thoughts too (both are billed as
    /// output, as `candidatesTokenCount + thoughtsTokenCount`). `tool` (grounding results) is not
    /// context. All zeros is no usage.
    /// `Some(Err)`: the warning for a figure that is not a token count (`de::bad_usage`).
    fn usage(self) -> Option<std::result::Result<Usage, String>> {
        if let Some(why) = bad_usage([
            ("tokens.input", self.input.1),
            ("tokens.output", self.output.1),
            ("tokens.cached", self.cached.1),
            ("tokens.thoughts", self.thoughts.1),
        ]) {
            return Some(Err(why));
        }
        let (input, output, cached, thoughts) = (
            self.input.get(),
            self.output.get(),
            self.cached.get(),
            self.thoughts.get(),
        );
        if input == 0 && output == 0 && cached == 0 && thoughts == 0 {
            return None;
        }
        Some(Ok(Usage {
            input: input.saturating_sub(cached),
            output: output.saturating_add(thoughts),
            cache_read: cached.min(input),
            ..Usage::default()
        }))
    }
}

/// Text of a `PartListUnion`: a string, a part, or a list of parts (`text` kept; inline data
/// sized as an image; function responses as JSON text).
fn content_parts(v: &Value, out: &mut Vec<Part>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(Part::Text { text: s.clone() }),
        Value::Array(items) => items.iter().for_each(|p| content_parts(p, out)),
        Value::Object(o) => {
            if let Some(t) = o.get("text").and_then(|t| t.as_str()) {
                if o.get("thought").and_then(|t| t.as_bool()) == Some(true) {
                    out.push(Part::Thinking { text: t.into() });
                } else if !t.is_empty() {
                    out.push(Part::Text { text: t.into() });
                }
            } else if let Some(d) = o.get("inlineData") {
                out.push(Part::Image {
                    media_type: d["mimeType"].as_str().unwrap_or("").into(),
                    bytes: super::de::base64_len(d["data"].as_str().unwrap_or("")),
                });
            } else if let Some(r) = o.get("functionResponse") {
                out.push(Part::ToolResult {
                    call_id: r["id"].as_str().unwrap_or("").into(),
                    content: response_text(&r["response"]),
                    is_error: r["response"].get("error").is_some(),
                });
            }
        }
        _ => {}
    }
}

/// A function response as the model sees it: its `output` text, else the response as JSON.
fn response_text(r: &Value) -> String {
    match r.get("output").or_else(|| r.get("error")) {
        Some(Value::String(s)) => s.clone(),
        _ => r.to_string(),
    }
}

/// What one tool call's result puts in the next request.
fn tool_result(tc: &ToolCallRec) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut found = false;
    if let Value::Array(items) = &tc.result {
        for p in items {
            if let Some(r) = p.get("functionResponse") {
                found = true;
                parts.push(Part::ToolResult {
                    call_id: tc.id.clone(),
                    content: response_text(&r["response"]),
                    is_error: tc.status == "error" || r["response"].get("error").is_some(),
                });
            } else {
                content_parts(p, &mut parts);
            }
        }
    }
    if !found {
        // A cancelled or still running call: Gemini CLI sends an error response for it.
        parts.insert(
            0,
            Part::ToolResult {
                call_id: tc.id.clone(),
                content: match &tc.result {
                    Value::Null | Value::Array(_) => String::new(),
                    other => response_text(other),
                },
                is_error: tc.status != "success",
            },
        );
    }
    parts
}

/// Turns message records, in history order, into the session.
struct Builder {
    s: Session,
    agent: AgentIdx,
    /// The last response: its call and assistant message (a continuation record adds to them).
    last_reply: Option<(usize, MsgIdx)>,
    /// Tool results of the last response, sent with the next request.
    pending: Vec<Part>,
    pending_pos: SourcePos,
    pending_ts: Option<i64>,
    /// A `$set.messages` replaced the history here: the next message starts the new one.
    boundary: Option<SourcePos>,
    /// Responses already counted as calls (a compressed history repeats the ones it kept).
    called: HashSet<String>,
}

impl Builder {
    fn new(path: &Path) -> Builder {
        let mut s = Session::default();
        s.source.format = ID.into();
        s.source.files.push(path.display().to_string());
        let agent = s.agent_index("main");
        Builder {
            s,
            agent,
            last_reply: None,
            pending: Vec::new(),
            pending_pos: SourcePos::default(),
            pending_ts: None,
            boundary: None,
            called: HashSet::new(),
        }
    }

    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.s.push_message(self.agent, role, parts, ts, pos)
    }

    fn flush_results(&mut self) {
        if !self.pending.is_empty() {
            let parts = std::mem::take(&mut self.pending);
            self.push(Role::Tool, parts, self.pending_ts, self.pending_pos);
        }
    }

    fn record(&mut self, r: Rec, pos: SourcePos) {
        let ts = r.timestamp.as_deref().and_then(parse_ms);
        match r.kind.as_str() {
            "user" => {
                self.flush_results();
                self.last_reply = None;
                let mut parts = Vec::new();
                content_parts(&r.content, &mut parts);
                let summary = parts.iter().any(
                    |p| matches!(p, Part::Text { text } if text.trim_start().starts_with(SNAPSHOT_TAG)),
                );
                let role = if !parts.is_empty()
                    && parts.iter().all(|p| matches!(p, Part::ToolResult { .. }))
                {
                    Role::Tool
                } else {
                    Role::User
                };
                let at = self.s.messages.len();
                if summary || self.boundary.is_some() {
                    let pos = self.boundary.take().unwrap_or(pos);
                    self.compaction(at, summary.then_some(at), ts, pos);
                }
                let m = self.push(role, parts, ts, pos);
                self.s.messages[m].flags.is_summary = summary;
            }
            "gemini" => self.response(r, ts, pos),
            _ => {
                // info, error, warning: shown to the user, never sent to the model.
                let mut parts = Vec::new();
                content_parts(&r.content, &mut parts);
                let m = self.push(Role::System, parts, ts, pos);
                self.s.messages[m].flags.meta = true;
            }
        }
    }

    fn response(&mut self, r: Rec, ts: Option<i64>, pos: SourcePos) {
        let mut parts = Vec::new();
        for t in r.thoughts.iter().flatten() {
            let text = match (t.subject.is_empty(), t.description.is_empty()) {
                (false, false) => format!("**{}**\n{}", t.subject, t.description),
                (false, true) => t.subject.clone(),
                _ => t.description.clone(),
            };
            parts.push(Part::Thinking { text });
        }
        content_parts(&r.content, &mut parts);
        let usage = match r.tokens.and_then(Tokens::usage) {
            Some(Err(why)) => {
                self.s.warn(pos, why);
                None
            }
            u => u.and_then(Result::ok),
        };
        let calls = r.tool_calls.unwrap_or_default();
        // Tool calls recorded after a notice: the same response as the previous record.
        if parts.is_empty() && usage.is_none() && !calls.is_empty() {
            if let Some((_, reply)) = self.last_reply {
                self.tool_calls(reply, &calls, pos);
                return;
            }
        }
        self.flush_results();
        if let Some(bpos) = self.boundary.take() {
            let at = self.s.messages.len();
            self.compaction(at, None, ts, bpos);
        }
        let reply = self.push(Role::Assistant, parts, ts, pos);
        // Written by Gemini CLI itself (no model: the acknowledgement after a compression
        // summary, `recordSyntheticMessage`), or kept verbatim by a compression and so in the
        // context again: a message, not a new call.
        if r.model.is_none() && usage.is_none() || !self.called.insert(r.id.clone()) {
            self.last_reply = None;
            self.tool_calls(reply, &calls, pos);
            return;
        }
        self.s.calls.push(Call {
            agent: self.agent,
            context_end: reply,
            reply: Some(reply),
            usage,
            model: r.model.clone(),
            timestamp: ts,
            request_id: Some(r.id.clone()),
            source: pos,
        });
        self.last_reply = Some((self.s.calls.len() - 1, reply));
        self.tool_calls(reply, &calls, pos);
    }

    fn tool_calls(&mut self, reply: MsgIdx, calls: &[ToolCallRec], pos: SourcePos) {
        for tc in calls {
            self.s.messages[reply].parts.push(Part::ToolCall {
                id: tc.id.clone(),
                name: tc.name.clone(),
                args: if tc.args.is_null() {
                    "{}".into()
                } else {
                    tc.args.to_string()
                },
            });
            self.pending.extend(tool_result(tc));
            self.pending_pos = pos;
        }
        self.pending_ts = self.s.messages[reply].timestamp;
    }

    /// A compression: the history before `at` was replaced by what follows (starting with the
    /// summary, when the log has one).
    fn compaction(&mut self, at: MsgIdx, summary: Option<MsgIdx>, ts: Option<i64>, pos: SourcePos) {
        let pre_tokens = self
            .s
            .calls
            .iter()
            .rev()
            .find_map(|c| c.usage.map(|u| u.context_tokens() + u.output));
        self.s.compactions.push(RecordedCompaction {
            agent: self.agent,
            at_message: at,
            trigger: "unknown".into(),
            pre_tokens,
            summary,
            kept_from: None,
            timestamp: ts,
            inferred: false,
            source: pos,
        });
    }

    fn finish(mut self, path: &Path, bytes: u64, hash: String) -> Session {
        self.flush_results();
        if let Some(pos) = self.boundary.take() {
            let at = self.s.messages.len();
            self.compaction(at, None, None, pos);
        }
        let mut s = self.s;
        s.source.bytes = bytes;
        s.source.hash = hash;
        let model = s.calls.iter().find_map(|c| c.model.clone());
        s.agents[0].model = model;
        if s.id.is_empty() {
            s.id = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        if s.title.is_none() {
            s.title = s
                .messages
                .iter()
                .find(|m| m.role == Role::User)
                .and_then(|m| m.parts.first())
                .and_then(|p| match p {
                    Part::Text { text } => text.lines().next(),
                    _ => None,
                })
                .map(|t| t.chars().take(80).collect());
        }
        s
    }
}

pub fn read(path: &Path) -> Result<Session> {
    if first_line_is_header(path)? {
        read_lines(path)
    } else {
        read_document(path)
    }
}

/// JSON lines start with a complete header object on line 1.
fn first_line_is_header(path: &Path) -> Result<bool> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = blake3::Hasher::new();
    let mut lines = LineReader::with_limit(std::io::BufReader::new(f), &mut h, 16 << 20);
    while let super::lines::Next::Line = lines.next_line().map_err(|e| Error::io(path, e))? {
        let l = lines.line();
        if l.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        return Ok(
            serde_json::from_slice::<serde_json::Map<String, Value>>(l).is_ok_and(|o| sniff(&o))
        );
    }
    Ok(false)
}

/// The legacy document, streamed message by message.
fn read_document(path: &Path) -> Result<Session> {
    use super::doc::Field;
    const WHAT: &str = "a Gemini CLI chat object {sessionId, messages}";
    let mut b = Builder::new(path);
    let doc =
        super::doc::each_in_object(
            path,
            WHAT,
            "messages",
            &["sessionId", "summary"],
            |f| match f {
                Field::Element(raw, pos) => match serde_json::from_str::<Rec>(raw.get()) {
                    Ok(r) => b.record(r, pos),
                    Err(e) => {
                        b.s.warn(pos, format!("expected a Gemini CLI message record: {e}"))
                    }
                },
                Field::Value("sessionId", Value::String(id)) => b.s.id = id,
                Field::Value("summary", Value::String(t)) => b.s.title = Some(t),
                Field::Value(..) => {}
            },
        )?;
    doc.settle(path, WHAT, "messages", &mut b.s)?;
    let mut s = b.finish(path, doc.bytes, doc.hash);
    doc.fix.warn(&mut s, 0);
    Ok(s)
}

/// The newer JSON lines: the history is the latest version of each record, in first-seen order,
/// minus rewinds, and `$set.messages` replaces it.
#[derive(Default)]
struct Lines {
    header: bool,
    id: Option<String>,
    summary: Option<String>,
    /// (record, where its latest version was written).
    history: Vec<(Rec, SourcePos)>,
    index: HashMap<String, usize>,
    /// Replacements of the whole history (`$set.messages`), with the history before each.
    replaced: Vec<Replaced>,
    warnings: Vec<(SourcePos, String)>,
}

/// A `$set.messages` that changed which messages make the history (a compression).
struct Replaced {
    before: Vec<(Rec, SourcePos)>,
    pos: SourcePos,
}

impl Lines {
    fn reindex(&mut self) {
        self.index = self
            .history
            .iter()
            .enumerate()
            .map(|(i, (r, _))| (r.id.clone(), i))
            .collect();
    }
}

impl JsonSink for Lines {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let o: serde_json::Map<String, Value> = super::lines::from_line(json)?;
        if let Some(to) = o.get("$rewindTo") {
            let to = to.as_str().unwrap_or("");
            let cut = self.index.get(to).copied().unwrap_or(0);
            self.history.truncate(cut);
            self.reindex();
            return Ok(());
        }
        if let Some(set) = o.get("$set") {
            if let Some(t) = set.get("summary").and_then(|t| t.as_str()) {
                self.summary = Some(t.into());
            }
            if let Some(msgs) = set.get("messages").and_then(|m| m.as_array()) {
                let mut new = Vec::with_capacity(msgs.len());
                for m in msgs {
                    match serde_json::from_value::<Rec>(m.clone()) {
                        Ok(r) => {
                            let at = self.index.get(&r.id).map(|&i| self.history[i].1);
                            new.push((r, at.unwrap_or(pos)));
                        }
                        Err(e) => self
                            .warnings
                            .push((pos, format!("expected a Gemini CLI message record: {e}"))),
                    }
                }
                let same = new.len() == self.history.len()
                    && new
                        .iter()
                        .zip(&self.history)
                        .all(|((a, _), (b, _))| a.id == b.id);
                let before = std::mem::replace(&mut self.history, new);
                if !same {
                    self.replaced.push(Replaced { before, pos });
                }
                self.reindex();
            }
            return Ok(());
        }
        if !self.header && sniff(&o) {
            self.header = true;
            self.id = o["sessionId"].as_str().map(String::from);
            return Ok(());
        }
        let r: Rec = serde_json::from_value(Value::Object(o))?;
        match self.index.get(&r.id) {
            Some(&i) => self.history[i] = (r, pos),
            None => {
                self.index.insert(r.id.clone(), self.history.len());
                self.history.push((r, pos));
            }
        }
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.warnings.push((pos, message));
    }
}

fn read_lines(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(
        std::io::BufReader::with_capacity(256 * 1024, f),
        &mut hasher,
    );
    let mut l = Lines::default();
    read_jsonl(&mut lines, 0, "a Gemini CLI record", &mut l).map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    let mut b = Builder::new(path);
    // Each replacement of the history: the history as it was, then a boundary before what
    // replaced it (the next replacement's `before`, or the final history).
    for rep in std::mem::take(&mut l.replaced) {
        for (r, pos) in rep.before {
            b.record(r, pos);
        }
        b.flush_results();
        b.last_reply = None;
        b.boundary = Some(rep.pos);
    }
    for (r, pos) in l.history {
        b.record(r, pos);
    }
    for (pos, w) in l.warnings {
        b.s.warn(pos, w);
    }
    b.s.id = l.id.unwrap_or_default();
    b.s.title = l.summary;
    Ok(b.finish(path, bytes, hasher.finalize().to_hex().to_string()))
}

/// The first line of the JSON-lines shape (also the top of the legacy document): the session
/// header with `sessionId` and `projectHash`.
pub(crate) fn sniff(o: &serde_json::Map<String, Value>) -> bool {
    o.get("projectHash").is_some_and(|v| v.is_string())
        && o.get("sessionId").is_some_and(|v| v.is_string())
        && !o.contains_key("type")
}

/// The start of a legacy pretty-printed chat document: Gemini CLI writes `sessionId` and
/// `projectHash` first; a writer that sorts keys puts `messages` first, whose records say
/// `"type": "gemini"`.
pub(crate) fn sniff_head(head: &str) -> bool {
    let h = head.trim_start();
    let compact: String = h.chars().filter(|c| !c.is_whitespace()).collect();
    h.starts_with('{')
        && ((h.contains("\"projectHash\"") && h.contains("\"sessionId\""))
            || (compact.starts_with("{\"lastUpdated\"") || compact.starts_with("{\"messages\""))
                && compact.contains("\"type\":\"gemini\""))
}
