//! Anthropic managed-agent (hosted agent) event streams: one event a line,
//! `{role, kind, time, content, raw}` where `raw.type` is the API's event type.
//!
//! A model call runs from `span.model_request_start` to `span.model_request_end` (whose
//! `model_usage` is the call's usage); the agent events between them (`agent.message`,
//! `agent.tool_use`) are its reply. `agent.tool_result` and the user's events
//! (`user.message`, `user.define_outcome` with its rubric) are what reaches the context next, and
//! so is an outcome evaluation's `explanation` (the grader's feedback, sent to the agent before its
//! next call), with the images a tool result returns. Thinking events carry no text and are left
//! out; session events and the other outcome-evaluation events are bookkeeping.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::claude_code::ApiUsage;
use super::de::LenientStr;
use super::lines::{read_jsonl, JsonSink, LineReader};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "anthropic-managed-agents";

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    time: LenientStr,
    #[serde(default)]
    raw: Option<Value>,
}

struct Sink {
    s: Session,
    agent: AgentIdx,
    /// The reply being written by the call in flight.
    reply: Option<MsgIdx>,
}

impl Sink {
    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.s.push_message(self.agent, role, parts, ts, pos)
    }

    fn reply_part(&mut self, part: Part, ts: Option<i64>, pos: SourcePos) {
        match self.reply {
            Some(m) => self.s.messages[m].parts.push(part),
            None => self.reply = Some(self.push(Role::Assistant, vec![part], ts, pos)),
        }
    }
}

/// An `image` content block with a base64 source, as an image part of its decoded size.
fn image(b: &Value) -> Option<Part> {
    if b["type"].as_str() != Some("image") {
        return None;
    }
    let src = &b["source"];
    Some(Part::Image {
        media_type: src["media_type"].as_str().unwrap_or("").to_string(),
        bytes: src["data"].as_str().map_or(0, super::de::base64_len),
    })
}

fn blocks_text(v: &Value) -> String {
    let mut out = Vec::new();
    push_blocks_text(v, &mut out);
    out.join("\n")
}

/// The text of content blocks, nested ones included: a `search_result` block (what the
/// `web_search` tool returns) holds its `title`, `source` and a `content` list of text blocks,
/// all of which the model reads (on the real open-hai stream one search's results are ~13k of
/// the next call's recorded input, and a reader that took only top-level `text` saw nothing).
fn push_blocks_text<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => {
            for b in a {
                if let Some(t) = b["text"].as_str() {
                    out.push(t);
                }
                for k in ["title", "source"] {
                    if let Some(t) = b[k].as_str() {
                        out.push(t);
                    }
                }
                if b["content"].is_array() {
                    push_blocks_text(&b["content"], out);
                }
            }
        }
        _ => {}
    }
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let e: Event = serde_json::from_slice(json)?;
        let Some(raw) = e.raw else {
            self.s.warn(pos, "event without `raw`; skipped");
            return Ok(());
        };
        let ts = e.time.0.as_deref().and_then(parse_ms);
        let s = |k: &str| raw[k].as_str().unwrap_or("").to_string();
        match raw["type"].as_str().unwrap_or("") {
            "session.thread_status_running" => {
                if let Some(name) = raw["agent_name"].as_str() {
                    self.s.agents[self.agent].name = name.to_string();
                }
            }
            "span.model_request_start" => {
                self.reply = None;
            }
            "agent.message" => {
                let text = blocks_text(&raw["content"]);
                self.reply_part(Part::Text { text }, ts, pos);
            }
            "agent.tool_use" | "agent.mcp_tool_use" | "agent.custom_tool_use" => {
                let args = if raw["input"].is_null() {
                    "{}".to_string()
                } else {
                    raw["input"].to_string()
                };
                let part = Part::ToolCall {
                    id: s("id"),
                    name: s("name"),
                    args,
                };
                self.reply_part(part, ts, pos);
            }
            "span.model_request_end" => {
                let usage = match serde_json::from_value::<ApiUsage>(raw["model_usage"].clone())
                    .map(|u| u.checked())
                {
                    Ok(Err(why)) => {
                        self.s.warn(pos, why);
                        None
                    }
                    u => u.ok().and_then(Result::ok),
                };
                let context_end = self.reply.unwrap_or(self.s.messages.len());
                // `model_usage` is final (the span ends with the response): the reply weighs its
                // output tokens, its thinking included, which the events show only as an empty
                // `agent.thinking`.
                if let (Some(r), Some(u)) = (self.reply, usage) {
                    self.s.messages[r].flags.recorded_tokens = Some(u.output);
                }
                self.s.calls.push(Call {
                    agent: self.agent,
                    context_end,
                    reply: self.reply.take(),
                    usage,
                    model: None,
                    timestamp: ts,
                    request_id: raw["model_request_start_id"].as_str().map(String::from),
                    source: pos,
                });
            }
            "agent.tool_result" | "agent.mcp_tool_result" => {
                let call_id = raw["tool_use_id"]
                    .as_str()
                    .or_else(|| raw["mcp_tool_use_id"].as_str())
                    .unwrap_or("")
                    .to_string();
                let mut parts = vec![Part::ToolResult {
                    call_id,
                    content: blocks_text(&raw["content"]),
                    is_error: raw["is_error"].as_bool().unwrap_or(false),
                }];
                // An image the tool returned (a `read` of a PNG): the model reads it (on the
                // real open-hai stream one 2240×448 figure is a 1.3k step in recorded input).
                parts.extend(
                    raw["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(image),
                );
                self.push(Role::Tool, parts, ts, pos);
            }
            "user.message" => {
                let text = blocks_text(&raw["content"]);
                self.push(Role::User, vec![Part::Text { text }], ts, pos);
            }
            "user.define_outcome" => {
                // The agent is given the outcome's description and its rubric (the first call
                // of the real open-hai stream recorded 1.5k more than the description alone:
                // its 3.6k-character rubric).
                let mut text = s("description");
                let rubric = match &raw["rubric"] {
                    Value::String(r) => r.clone(),
                    r => blocks_text(&r["content"]),
                };
                if !rubric.is_empty() {
                    text.push_str("\n\n");
                    text.push_str(&rubric);
                }
                self.push(Role::User, vec![Part::Text { text }], ts, pos);
            }
            "span.outcome_evaluation_end" => {
                // The grader's explanation reaches the agent before its next call (open-hai:
                // a 1.5k step in recorded input with nothing else new).
                let text = s("explanation");
                if !text.is_empty() {
                    let m = self.push(Role::User, vec![Part::Text { text }], ts, pos);
                    self.s.messages[m].flags.injected = true;
                }
            }
            _ => {}
        }
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

pub fn read(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(std::io::BufReader::new(f), &mut hasher);
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let agent = s.agent_index("main");
    let mut sink = Sink {
        s,
        agent,
        reply: None,
    };
    read_jsonl(
        &mut lines,
        0,
        "a managed-agent event {role, kind, raw}",
        &mut sink,
    )
    .map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    let mut s = sink.s;
    s.id = path
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    s.source.bytes = bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    Ok(s)
}

/// An event with a `raw` object whose `type` is a managed-agent event type.
pub(crate) fn sniff(o: &serde_json::Map<String, Value>) -> bool {
    o.get("raw")
        .and_then(|r| r.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| {
            ["session.", "span.", "agent.", "user."]
                .iter()
                .any(|p| t.starts_with(p))
        })
}
