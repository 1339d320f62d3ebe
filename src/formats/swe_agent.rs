//! SWE-agent trajectories (`*.traj`: `{environment, trajectory, history, info}`) and
//! mini-swe-agent trajectories (`*.traj.json`: `{info, messages, trajectory_format}`).
//!
//! Both are one JSON document, read whole (trajectories are bounded by the agent's step limit).
//! Every assistant message is the reply of one call whose context is everything before it.
//! mini-swe-agent keeps each call's OpenAI response in `extra.response`, usage included;
//! SWE-agent 0.x keeps only the run's totals (`info.model_stats`), which are reported as a note,
//! since a total cannot be split into per-call figures without inventing them.

use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::openai::OaUsage;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "swe-agent";

/// The 1-based line where each element of the message list starts, found from where serde_json
/// borrowed it in the text; empty when the list cannot be read so.
fn element_lines(text: &str, mini: bool) -> Vec<u32> {
    #[derive(Deserialize)]
    struct Lists<'a> {
        #[serde(borrow, default)]
        history: Option<Vec<&'a RawValue>>,
        #[serde(borrow, default)]
        messages: Option<Vec<&'a RawValue>>,
    }
    let Ok(l) = serde_json::from_str::<Lists<'_>>(text) else {
        return Vec::new();
    };
    let list = if mini { l.messages } else { l.history };
    let (mut line, mut at) = (1u32, 0usize);
    let mut out = Vec::new();
    for raw in list.unwrap_or_default() {
        let start = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        let Some(between) = text.as_bytes().get(at..start) else {
            return Vec::new();
        };
        line = line.saturating_add(memchr::memchr_iter(b'\n', between).count() as u32);
        at = start;
        out.push(line);
    }
    out
}

pub fn read(path: &Path) -> Result<Session> {
    let mut hasher = blake3::Hasher::new();
    let file = super::utf8::read_lossy(path, &mut hasher)?;
    let doc: Value = serde_json::from_str(&file.text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line() as u32,
        message: format!(
            "expected a SWE-agent or mini-swe-agent trajectory (one JSON object): {e}"
        ),
    })?;
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    s.source.bytes = file.bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    file.fix.warn(&mut s, 0);
    s.id = path
        .file_name()
        .map(|x| {
            x.to_string_lossy()
                .split('.')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    let (list, mini) = match (doc["history"].as_array(), doc["messages"].as_array()) {
        (Some(h), _) => (h, false),
        (None, Some(m)) => (m, true),
        _ => {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                message: "expected `history` (SWE-agent) or `messages` (mini-swe-agent)".into(),
            })
        }
    };
    let model = doc["info"]["config"]["model"]["model_name"]
        .as_str()
        .or_else(|| doc["info"]["model_name"].as_str())
        .map(String::from);
    let lines = element_lines(&file.text, mini);
    for (i, m) in list.iter().enumerate() {
        // The line where the message starts (warnings also name its index).
        let pos = SourcePos {
            file: 0,
            line: lines.get(i).copied().unwrap_or(0),
        };
        let agent = s.agent_index(m["agent"].as_str().unwrap_or("main"));
        let text = content_text(&m["content"]);
        let role = match m["role"].as_str().unwrap_or("") {
            "system" => Role::System,
            "assistant" => Role::Assistant,
            "user" => Role::User,
            "tool" => Role::Tool,
            other => {
                s.warn(pos, format!("message {i}: unknown role {other:?}; skipped"));
                continue;
            }
        };
        let mut parts = Vec::new();
        if let Some(t) = m["thought"]
            .as_str()
            .filter(|t| !t.is_empty() && !text.contains(*t))
        {
            parts.push(Part::Thinking {
                text: t.to_string(),
            });
        }
        parts.push(Part::Text { text });
        let mi = s.messages.len();
        s.push_message(agent, role, parts, None, pos);
        if role == Role::Assistant {
            let response = &m["extra"]["response"];
            let usage = match serde_json::from_value::<OaUsage>(response["usage"].clone())
                .ok()
                .filter(|_| response["usage"].is_object())
                .map(|u| u.checked())
            {
                Some(Err(why)) => {
                    s.warn(pos, format!("message {i}: {why}"));
                    None
                }
                u => u.and_then(Result::ok),
            };
            let call_model = response["model"]
                .as_str()
                .map(String::from)
                .or(model.clone());
            if s.agents[agent].model.is_none() {
                s.agents[agent].model = call_model.clone();
            }
            s.calls.push(Call {
                agent,
                context_end: mi,
                reply: Some(mi),
                usage,
                model: call_model,
                timestamp: response["created"].as_i64().map(|t| t * 1000),
                request_id: response["id"].as_str().map(String::from),
                source: pos,
            });
        }
    }
    let stats = &doc["info"]["model_stats"];
    if !mini || s.calls.iter().all(|c| c.usage.is_none()) {
        if let Some(sent) = stats["tokens_sent"].as_u64() {
            s.warn(
                SourcePos { file: 0, line: 1 },
                format!(
                    "only totals recorded: {} tokens sent, {} received over {} API calls; calls carry no usage",
                    sent,
                    stats["tokens_received"].as_u64().unwrap_or(0),
                    stats["api_calls"].as_u64().unwrap_or(0)
                ),
            );
        }
    }
    Ok(s)
}

fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The start of a trajectory document: SWE-agent's `environment`/`trajectory` keys or
/// mini-swe-agent's `mini_version` / `trajectory_format`.
pub(crate) fn sniff_head(head: &str) -> bool {
    (head.contains("\"environment\"") && head.contains("\"trajectory\""))
        || head.contains("\"mini_version\"")
        || head.contains("\"trajectory_format\"")
}

/// A whole trajectory on one line (written without indentation): mini-swe-agent's
/// `trajectory_format` / `info.mini_version`, or SWE-agent's `environment` and `trajectory`. Its
/// `messages` list would otherwise read as a chat-messages document, without the usage.
pub(crate) fn sniff(o: &serde_json::Map<String, Value>) -> bool {
    o.contains_key("trajectory_format")
        || o.get("info")
            .is_some_and(|i| i.get("mini_version").is_some())
        || (o.contains_key("environment") && o.contains_key("trajectory"))
}
