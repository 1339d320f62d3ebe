//! pi coding-agent sessions (badlogic/pi-mono `~/.pi/agent/sessions/.../*.jsonl`).
//!
//! Entries: a `session` header, then `message` entries (`user`, `assistant` with usage
//! {input, output, cacheRead, cacheWrite}, `toolResult`, `bashExecution`, …), `compaction`
//! {summary, firstKeptEntryIndex | firstKeptEntryId, tokensBefore}, and settings changes.
//! Entry indices count every JSON object of the file, the header being entry 0.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::de::{bad_usage, base64_len, Count, LenientStr, StrOrBlocks};
use super::follow::{new_session, JsonlLive, SessionSink};
use super::lines::JsonSink;
use super::time::parse_ms;
use crate::model::*;
use crate::Result;

pub const ID: &str = "pi";

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    id: LenientStr,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "modelId", default)]
    model_id: LenientStr,
    /// The header's folder pi ran in (`Session::project`).
    #[serde(default)]
    cwd: LenientStr,
    #[serde(borrow, default)]
    message: Option<PiMessage<'a>>,
    // compaction / branch_summary
    #[serde(default)]
    summary: LenientStr,
    #[serde(rename = "firstKeptEntryIndex", default)]
    first_kept_index: Count,
    #[serde(rename = "firstKeptEntryId", default)]
    first_kept_id: LenientStr,
    #[serde(rename = "tokensBefore", default)]
    tokens_before: Count,
    #[serde(rename = "fromHook", default)]
    from_hook: Option<bool>,
}

#[derive(Deserialize)]
struct PiMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: StrOrBlocks<Block<'a>>,
    #[serde(default)]
    usage: Option<PiUsage>,
    #[serde(default)]
    model: LenientStr,
    #[serde(rename = "toolCallId", default)]
    tool_call_id: LenientStr,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(default)]
    timestamp: Count,
    // bashExecution
    #[serde(default)]
    command: LenientStr,
    #[serde(default)]
    output: LenientStr,
    #[serde(rename = "excludeFromContext", default)]
    exclude: Option<bool>,
    #[serde(rename = "responseId", default)]
    response_id: LenientStr,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    text: LenientStr,
    #[serde(default)]
    thinking: LenientStr,
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    name: LenientStr,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
    #[serde(rename = "mimeType", default)]
    mime_type: LenientStr,
}

#[derive(Deserialize)]
struct PiUsage {
    #[serde(default)]
    input: Count,
    #[serde(default)]
    output: Count,
    #[serde(rename = "cacheRead", default)]
    cache_read: Count,
    #[serde(rename = "cacheWrite", default)]
    cache_write: Count,
    /// pi's own price of the call (`{input, output, cacheRead, cacheWrite, total}`, USD).
    #[serde(default)]
    cost: Option<PiCost>,
}

#[derive(Deserialize)]
struct PiCost {
    #[serde(default)]
    total: Option<f64>,
}

pub(crate) struct Sink {
    s: Session,
    /// For every entry (JSON object) of the file: the first message index at or after it.
    entry_msg: Vec<MsgIdx>,
    id_entry: HashMap<String, usize>,
    header_seen: bool,
}

fn parts_of(content: StrOrBlocks<Block<'_>>) -> Vec<Part> {
    let blocks = match content {
        StrOrBlocks::None => return Vec::new(),
        StrOrBlocks::Str(text) => return vec![Part::Text { text }],
        StrOrBlocks::Blocks(b) => b,
    };
    blocks
        .into_iter()
        .filter_map(|b| match b.kind.as_deref() {
            Some("text") => b.text.0.map(|text| Part::Text { text }),
            Some("thinking") => b.thinking.0.map(|text| Part::Thinking { text }),
            Some("toolCall") => Some(Part::ToolCall {
                id: b.id.0.unwrap_or_default(),
                name: b.name.0.unwrap_or_default(),
                args: b
                    .arguments
                    .map_or_else(|| "{}".into(), |r| r.get().to_string()),
            }),
            Some("image") => Some(Part::Image {
                media_type: b.mime_type.0.unwrap_or_default(),
                bytes: b.data.as_deref().map_or(0, base64_len),
            }),
            _ => None,
        })
        .collect()
}

impl Sink {
    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.s.push_message(0, role, parts, ts, pos)
    }

    fn message(&mut self, m: PiMessage<'_>, entry_ts: Option<i64>, pos: SourcePos) {
        let ts = m.timestamp.0.map(|t| t as i64).or(entry_ts);
        match m.role.as_deref().unwrap_or("") {
            "user" => {
                let parts = parts_of(m.content);
                self.push(Role::User, parts, ts, pos);
            }
            "assistant" => {
                let parts = parts_of(m.content);
                let tool_cost = m
                    .usage
                    .as_ref()
                    .and_then(|u| u.cost.as_ref())
                    .and_then(|c| c.total)
                    .filter(|c| c.is_finite() && *c > 0.0);
                let bad = m.usage.as_ref().and_then(|u| {
                    bad_usage([
                        ("input", u.input.1),
                        ("output", u.output.1),
                        ("cacheRead", u.cache_read.1),
                        ("cacheWrite", u.cache_write.1),
                    ])
                });
                if let Some(why) = &bad {
                    self.s.warn(pos, why.clone());
                }
                let usage = m.usage.filter(|_| bad.is_none()).map(|u| Usage {
                    input: u.input.get(),
                    output: u.output.get(),
                    cache_read: u.cache_read.get(),
                    cache_write_5m: u.cache_write.get(),
                    cache_write_1h: 0,
                });
                // Aborted and failed requests record all-zero usage: the provider reported nothing.
                let usage = usage.filter(|u| *u != Usage::default());
                let reply = (!parts.is_empty()).then(|| self.push(Role::Assistant, parts, ts, pos));
                // pi writes the usage once the response is complete (final usage): the reply
                // weighs its output tokens.
                if let (Some(r), Some(u)) = (reply, usage) {
                    self.s.messages[r].flags.recorded_tokens = Some(u.output);
                }
                let model = m.model.0;
                if self.s.agents[0].model.is_none() {
                    self.s.agents[0].model = model.clone();
                }
                self.s.calls.push(Call {
                    agent: 0,
                    context_end: reply.unwrap_or(self.s.messages.len()),
                    reply,
                    usage,
                    model,
                    timestamp: ts,
                    request_id: m.response_id.0,
                    source: pos,
                });
                if let Some(usd) = tool_cost {
                    self.s.recorded_costs.push(RecordedCost {
                        call: self.s.calls.len() - 1,
                        usd,
                    });
                }
            }
            "toolResult" => {
                let mut text = String::new();
                let mut images = Vec::new();
                for p in parts_of(m.content) {
                    match p {
                        Part::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(&t);
                        }
                        img @ Part::Image { .. } => images.push(img),
                        _ => {}
                    }
                }
                let mut parts = vec![Part::ToolResult {
                    call_id: m.tool_call_id.0.unwrap_or_default(),
                    content: text,
                    is_error: m.is_error.unwrap_or(false),
                }];
                parts.extend(images);
                self.push(Role::Tool, parts, ts, pos);
            }
            "bashExecution" => {
                // The user's own `!command`: pi shows it to the model as a user message.
                if m.exclude != Some(true) {
                    let text = format!(
                        "Ran `{}`\n```\n{}\n```",
                        m.command.0.unwrap_or_default(),
                        m.output.0.unwrap_or_default()
                    );
                    self.push(Role::User, vec![Part::Text { text }], ts, pos);
                }
            }
            "custom" | "hookMessage" => {
                let parts = parts_of(m.content);
                if !parts.is_empty() {
                    self.push(Role::User, parts, ts, pos);
                }
            }
            "branchSummary" | "compactionSummary" => {
                let parts = parts_of(m.content);
                let mi = self.push(Role::User, parts, ts, pos);
                self.s.messages[mi].flags.is_summary = true;
            }
            other => self
                .s
                .warn(pos, format!("message with unknown role {other:?}; skipped")),
        }
    }

    fn compaction(&mut self, e: Entry<'_>, ts: Option<i64>, pos: SourcePos) {
        let at = self.s.messages.len();
        let text = e.summary.0.unwrap_or_default();
        let mi = self.push(Role::User, vec![Part::Text { text }], ts, pos);
        self.s.messages[mi].flags.is_summary = true;
        // A number that is no index (1e20, -1) names no earlier entry either.
        let index = e
            .first_kept_index
            .0
            .or(e.first_kept_index.1.map(|_| u64::MAX));
        let kept_entry = match (index, e.first_kept_id.0) {
            (Some(i), _) => Some(usize::try_from(i).unwrap_or(usize::MAX)),
            (None, Some(id)) => match self.id_entry.get(&id) {
                Some(&i) => Some(i),
                None => {
                    self.s.warn(
                        pos,
                        format!("firstKeptEntryId {id} names no earlier entry; nothing kept"),
                    );
                    None
                }
            },
            (None, None) => None,
        };
        let kept_from = match kept_entry {
            // The current entry is already counted: only earlier entries can be kept.
            Some(i) if i < self.entry_msg.len().saturating_sub(1) => {
                Some(self.entry_msg[i].min(at))
            }
            Some(i) => {
                self.s.warn(
                    pos,
                    format!("firstKeptEntryIndex {i} is not an earlier entry; nothing kept"),
                );
                None
            }
            None => None,
        };
        self.s.compactions.push(RecordedCompaction {
            agent: 0,
            at_message: at,
            trigger: if e.from_hook == Some(true) {
                "hook"
            } else {
                "unknown"
            }
            .into(),
            pre_tokens: e.tokens_before.0,
            summary: Some(mi),
            kept_from,
            timestamp: ts,
            inferred: false,
            source: pos,
        });
    }
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let e: Entry<'_> = serde_json::from_slice(json)?;
        let index = self.entry_msg.len();
        self.entry_msg.push(self.s.messages.len());
        if let Some(id) = &e.id.0 {
            self.id_entry.insert(id.clone(), index);
        }
        let ts = e.timestamp.as_deref().and_then(parse_ms);
        match e.kind.as_deref().unwrap_or("") {
            "session" => {
                if !self.header_seen {
                    self.header_seen = true;
                    if let Some(id) = e.id.0 {
                        self.s.id = id;
                    }
                    if let Some(m) = e.model_id.0 {
                        self.s.agents[0].model = Some(m);
                    }
                    self.s.project = e.cwd.0;
                }
            }
            "message" => match e.message {
                Some(m) => self.message(m, ts, pos),
                None => self.s.warn(pos, "message entry without `message`; skipped"),
            },
            "compaction" => self.compaction(e, ts, pos),
            "branch_summary" => {
                if let Some(text) = e.summary.0 {
                    let mi = self.push(Role::User, vec![Part::Text { text }], ts, pos);
                    self.s.messages[mi].flags.is_summary = true;
                }
            }
            // thinking_level_change, model_change, label, session_info, custom: settings and UI.
            _ => {}
        }
        Ok(())
    }

    fn warn(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

pub fn read(path: &Path) -> Result<Session> {
    Ok(super::follow::read_through(path, Live::new(path))?.sink.s)
}

/// A pi session being read, kept between reads so that `formats::follow` can feed appended lines.
pub(crate) type Live = JsonlLive<Sink>;

impl Live {
    pub(crate) fn new(path: &Path) -> Self {
        let mut s = new_session(path, ID);
        s.agent_index("main");
        let sink = Sink {
            s,
            entry_msg: Vec::new(),
            id_entry: HashMap::new(),
            header_seen: false,
        };
        JsonlLive::start(path, sink, "a pi session entry (JSON object)")
    }
}

impl SessionSink for Sink {
    fn session(&self) -> &Session {
        &self.s
    }
    fn session_mut(&mut self) -> &mut Session {
        &mut self.s
    }
}

pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    let kind = o.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let claude_like = o.contains_key("sessionId") || o.contains_key("parentUuid");
    match kind {
        "session" => !claude_like && o.contains_key("id"),
        "message" => !claude_like && o.get("message").is_some_and(|m| m.get("role").is_some()),
        "compaction" => o.contains_key("tokensBefore"),
        _ => false,
    }
}
