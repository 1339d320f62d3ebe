//! GitHub Copilot CLI session events, `~/.copilot/session-state/<session id>/events.jsonl`: one
//! event a line, `{type, data, id, timestamp, parentId}`.
//!
//! Read: `system.message` (the system prompt, sent with every request), `user.message`
//! (`transformedContent`, what the model got, else `content`), `assistant.message` — one model
//! call per `apiCallId`: `reasoningText`, `content`, `toolRequests` — and
//! `tool.execution_complete` (results, sent with the next request), `system.notification`
//! (injected into the conversation), `session.model_change`, `session.compaction_complete`.
//!
//! **Usage is output only**: `assistant.message.outputTokens`. The input side of every call is
//! unknown, so the session is `estimate_only` and its calls carry `input = 0`: nothing can be
//! calibrated, and every input count ctxlab shows for it is an uncalibrated estimate.

use std::path::Path;

use serde_json::Value;

use super::de::bad_usage_values;
use super::lines::{read_jsonl, JsonSink, LineReader};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "copilot-cli";

struct Sink {
    s: Session,
    agent: AgentIdx,
    model: Option<String>,
    /// Tool results since the last request, sent with the next one.
    results: Vec<Part>,
    results_pos: SourcePos,
    results_ts: Option<i64>,
    /// The last call: its `apiCallId` (a reply written in several events is one call).
    last_api_call: Option<String>,
}

impl Sink {
    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.s.push_message(self.agent, role, parts, ts, pos)
    }

    fn flush_results(&mut self) {
        if !self.results.is_empty() {
            let parts = std::mem::take(&mut self.results);
            self.push(Role::Tool, parts, self.results_ts, self.results_pos);
        }
    }

    fn event(&mut self, e: &Value, pos: SourcePos) {
        let d = &e["data"];
        let ts = e["timestamp"].as_str().and_then(parse_ms);
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        match e["type"].as_str().unwrap_or("") {
            "session.start" => {
                if let Some(id) = d["sessionId"].as_str() {
                    self.s.id = id.into();
                }
            }
            "session.model_change" => {
                self.model = d["newModel"]
                    .as_str()
                    .map(String::from)
                    .or(self.model.take());
            }
            "system.message" => {
                let t = text(&d["content"]);
                self.push(Role::System, vec![Part::Text { text: t }], ts, pos);
            }
            "user.message" => {
                self.flush_results();
                self.last_api_call = None;
                let t = d["transformedContent"]
                    .as_str()
                    .or(d["content"].as_str())
                    .unwrap_or("")
                    .to_string();
                if self.s.title.is_none() {
                    self.s.title = d["content"]
                        .as_str()
                        .and_then(|c| c.lines().find(|l| !l.trim().is_empty()))
                        .map(|l| l.trim().chars().take(80).collect());
                }
                self.push(Role::User, vec![Part::Text { text: t }], ts, pos);
            }
            "system.notification" => {
                self.flush_results();
                let m = self.push(
                    Role::User,
                    vec![Part::Text {
                        text: text(&d["content"]),
                    }],
                    ts,
                    pos,
                );
                self.s.messages[m].flags.injected = true;
            }
            "assistant.message" => self.reply(d, ts, pos),
            "tool.execution_complete" => {
                let ok = d["success"].as_bool().unwrap_or(false);
                let content = match &d["result"] {
                    Value::Object(r) => r
                        .get("content")
                        .and_then(|c| c.as_str())
                        .unwrap_or("")
                        .to_string(),
                    Value::String(s) => s.clone(),
                    _ => d["error"]["message"]
                        .as_str()
                        .or(d["error"].as_str())
                        .unwrap_or("")
                        .to_string(),
                };
                self.results.push(Part::ToolResult {
                    call_id: text(&d["toolCallId"]),
                    content,
                    is_error: !ok,
                });
                self.results_pos = pos;
                self.results_ts = ts;
            }
            "session.compaction_complete" if d["success"].as_bool() != Some(false) => {
                self.flush_results();
                self.last_api_call = None;
                let at = self.s.messages.len();
                let summary = d["summaryContent"].as_str().map(|t| {
                    let m = self.push(Role::User, vec![Part::Text { text: t.into() }], ts, pos);
                    self.s.messages[m].flags.is_summary = true;
                    m
                });
                self.s.compactions.push(RecordedCompaction {
                    agent: self.agent,
                    at_message: at,
                    trigger: "auto".into(),
                    pre_tokens: d["preCompactionTokens"].as_u64(),
                    summary,
                    kept_from: None,
                    timestamp: ts,
                    inferred: false,
                    source: pos,
                });
            }
            _ => {}
        }
    }

    fn reply(&mut self, d: &Value, ts: Option<i64>, pos: SourcePos) {
        let mut parts = Vec::new();
        if let Some(t) = d["reasoningText"].as_str().filter(|t| !t.is_empty()) {
            parts.push(Part::Thinking { text: t.into() });
        }
        if let Some(t) = d["content"].as_str().filter(|t| !t.is_empty()) {
            parts.push(Part::Text { text: t.into() });
        }
        for r in d["toolRequests"].as_array().into_iter().flatten() {
            parts.push(Part::ToolCall {
                id: r["toolCallId"].as_str().unwrap_or("").into(),
                name: r["name"].as_str().unwrap_or("").into(),
                args: match &r["arguments"] {
                    Value::String(s) => s.clone(),
                    Value::Null => "{}".into(),
                    v => v.to_string(),
                },
            });
        }
        let api = d["apiCallId"].as_str().map(String::from);
        let output = match bad_usage_values([("outputTokens", &d["outputTokens"])]) {
            Some(why) => {
                self.s.warn(pos, why);
                None
            }
            None => d["outputTokens"].as_u64(),
        };
        // The same API call again (a reply written in pieces): one call, one message.
        if api.is_some() && api == self.last_api_call && self.results.is_empty() {
            if let Some(c) = self.s.calls.last_mut() {
                if let Some(r) = c.reply {
                    self.s.messages[r].parts.extend(parts);
                }
                if let (Some(u), Some(o)) = (c.usage.as_mut(), output) {
                    u.output = u.output.saturating_add(o);
                }
                return;
            }
        }
        self.flush_results();
        let model = d["model"].as_str().map(String::from).or(self.model.clone());
        let reply = self.push(Role::Assistant, parts, ts, pos);
        self.s.calls.push(Call {
            agent: self.agent,
            context_end: reply,
            reply: Some(reply),
            usage: output.map(|o| Usage {
                output: o,
                ..Usage::default()
            }),
            model,
            timestamp: ts,
            request_id: api.clone(),
            source: pos,
        });
        self.last_api_call = api;
    }
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let v: Value = super::lines::from_line(json)?;
        if !v["type"].is_string() || !v.get("data").is_some_and(|d| d.is_object()) {
            return Err(serde::de::Error::custom(
                "not a Copilot CLI event: no `type` and `data`",
            ));
        }
        self.event(&v, pos);
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

pub fn read(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(
        std::io::BufReader::with_capacity(256 * 1024, f),
        &mut hasher,
    );
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    s.estimate_only = true;
    let agent = s.agent_index("main");
    let mut sink = Sink {
        s,
        agent,
        model: None,
        results: Vec::new(),
        results_pos: SourcePos::default(),
        results_ts: None,
        last_api_call: None,
    };
    read_jsonl(&mut lines, 0, "a Copilot CLI event {type, data}", &mut sink)
        .map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    sink.flush_results();
    let mut s = sink.s;
    s.source.bytes = bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    s.agents[agent].model = s.calls.iter().find_map(|c| c.model.clone());
    if s.id.is_empty() {
        // `session-state/<id>/events.jsonl`: the folder is the session.
        s.id = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    Ok(s)
}

/// A Copilot CLI event: `{type: "session.start"|…, data: {…}, id, timestamp, parentId}` with a
/// dotted type of its own.
pub(crate) fn sniff(o: &serde_json::Map<String, Value>) -> bool {
    const TYPES: &[&str] = &[
        "session.start",
        "session.resume",
        "session.model_change",
        "system.message",
        "user.message",
        "assistant.message",
        "assistant.turn_start",
        "tool.execution_start",
        "tool.execution_complete",
        "hook.start",
    ];
    o.get("type")
        .and_then(|t| t.as_str())
        .is_some_and(|t| TYPES.contains(&t))
        && o.get("data").is_some_and(|d| d.is_object())
        && o.contains_key("parentId")
}
