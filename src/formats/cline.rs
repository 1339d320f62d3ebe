//! Cline task logs: `ui_messages.json` (what the extension shows: a JSON array of `say`/`ask`
//! events) and, when it sits beside it, `api_conversation_history.json` (the Anthropic-shaped
//! messages Cline sent).
//!
//! Each `say: api_req_started` event is one model call; its `text` is JSON with the request's new
//! user content (`request`) and the usage (`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`,
//! `cost`). With the conversation history beside it, the messages come from there and the k-th
//! assistant message is the reply of the k-th call. Without it, the context is rebuilt from the UI
//! log: the request text is the user turn, and the reasoning, text and tool events that follow are
//! the reply. Both files are JSON documents and are read whole.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude_code::{push_blocks, user_role, Block};
use super::de::StrOrBlocks;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "cline";

const HISTORY: &str = "api_conversation_history.json";

fn read_doc(path: &Path) -> Result<(Vec<u8>, Vec<Value>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let v: Vec<Value> = serde_json::from_slice(&bytes).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line() as u32,
        message: format!("expected a JSON array of Cline messages: {e}"),
    })?;
    Ok((bytes, v))
}

struct ApiReq {
    usage: Usage,
    request: String,
    model: Option<String>,
    ts: Option<i64>,
}

fn api_req(e: &Value) -> Option<ApiReq> {
    let info: Value = serde_json::from_str(e["text"].as_str()?).ok()?;
    let n = |k: &str| info[k].as_u64().unwrap_or(0);
    Some(ApiReq {
        usage: Usage {
            input: n("tokensIn"),
            output: n("tokensOut"),
            cache_read: n("cacheReads"),
            cache_write_5m: n("cacheWrites"),
            cache_write_1h: 0,
        },
        request: info["request"].as_str().unwrap_or("").to_string(),
        model: e["modelInfo"]["modelId"].as_str().map(String::from),
        ts: e["ts"].as_i64(),
    })
}

pub fn read(path: &Path) -> Result<Session> {
    let (bytes, events) = read_doc(path)?;
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes);
    s.source.bytes = bytes.len() as u64;
    s.id = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    let agent = s.agent_index("main");
    s.title = events
        .iter()
        .find(|e| e["say"] == "task")
        .and_then(|e| e["text"].as_str())
        .map(|t| t.lines().next().unwrap_or("").chars().take(80).collect());
    let calls: Vec<ApiReq> = events
        .iter()
        .filter(|e| e["say"] == "api_req_started")
        .filter_map(api_req)
        .collect();
    let history = path.with_file_name(HISTORY);
    if history.is_file() {
        let (hbytes, msgs) = read_doc(&history)?;
        hasher.update(&hbytes);
        s.source.bytes += hbytes.len() as u64;
        s.source.files.push(history.display().to_string());
        from_history(&mut s, agent, &msgs, &calls, &history);
    } else {
        from_ui(&mut s, agent, &events, &calls);
    }
    s.source.hash = hasher.finalize().to_hex().to_string();
    Ok(s)
}

fn from_history(
    s: &mut Session,
    agent: AgentIdx,
    msgs: &[Value],
    calls: &[ApiReq],
    history: &PathBuf,
) {
    let pos = SourcePos { file: 1, line: 0 };
    let mut k = 0;
    for (i, m) in msgs.iter().enumerate() {
        let raw = m["content"].to_string();
        let content: StrOrBlocks<Block<'_>> = serde_json::from_str(&raw).unwrap_or_default();
        let mut parts = Vec::new();
        push_blocks(content, &mut parts);
        let role = match m["role"].as_str() {
            Some("assistant") => Role::Assistant,
            Some("user") => user_role(&parts),
            other => {
                s.warn(
                    pos,
                    format!(
                        "{}: message {i}: role {other:?} is not user or assistant; skipped",
                        history.display()
                    ),
                );
                continue;
            }
        };
        let mi = s.messages.len();
        s.messages.push(Message {
            agent,
            role,
            parts,
            timestamp: m["ts"].as_i64(),
            flags: MessageFlags::default(),
            source: pos,
        });
        if role == Role::Assistant {
            let c = calls.get(k);
            k += 1;
            s.calls.push(Call {
                agent,
                context_end: mi,
                reply: Some(mi),
                usage: c.map(|c| c.usage),
                model: c.and_then(|c| c.model.clone()),
                timestamp: c.and_then(|c| c.ts),
                request_id: None,
                source: pos,
            });
        }
    }
    if k < calls.len() {
        s.warn(pos, format!("{} api_req_started events but {k} assistant messages in {HISTORY}: the last calls have no reply", calls.len()));
    }
    set_model(s, agent);
}

fn from_ui(s: &mut Session, agent: AgentIdx, events: &[Value], calls: &[ApiReq]) {
    let mut k = 0;
    let mut reply: Option<MsgIdx> = None;
    for (i, e) in events.iter().enumerate() {
        // Positions inside one JSON document: the event's index, 1-based, stands for the line.
        let pos = SourcePos {
            file: 0,
            line: i as u32 + 1,
        };
        let text = e["text"].as_str().unwrap_or("").to_string();
        let part = match e["say"].as_str().unwrap_or("") {
            "api_req_started" => {
                close(s, &mut reply);
                let Some(c) = calls.get(k) else { continue };
                k += 1;
                s.messages.push(Message {
                    agent,
                    role: Role::User,
                    parts: vec![Part::Text {
                        text: c.request.clone(),
                    }],
                    timestamp: c.ts,
                    flags: MessageFlags::default(),
                    source: pos,
                });
                s.calls.push(Call {
                    agent,
                    context_end: s.messages.len(),
                    reply: None,
                    usage: Some(c.usage),
                    model: c.model.clone(),
                    timestamp: c.ts,
                    request_id: None,
                    source: pos,
                });
                continue;
            }
            "reasoning" => Part::Thinking { text },
            "text" | "completion_result" => Part::Text { text },
            "tool" | "command" | "browser_action" | "use_mcp_server" => Part::ToolCall {
                id: format!("ui-{i}"),
                name: serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v["tool"].as_str().map(String::from))
                    .unwrap_or_else(|| e["say"].as_str().unwrap_or("").to_string()),
                args: text,
            },
            _ => continue,
        };
        if s.calls.is_empty() || text_empty(&part) {
            continue;
        }
        let r = *reply.get_or_insert_with(|| {
            s.messages.push(Message {
                agent,
                role: Role::Assistant,
                parts: Vec::new(),
                timestamp: e["ts"].as_i64(),
                flags: MessageFlags::default(),
                source: pos,
            });
            s.messages.len() - 1
        });
        s.messages[r].parts.push(part);
    }
    close(s, &mut reply);
    set_model(s, agent);
}

fn text_empty(p: &Part) -> bool {
    matches!(p, Part::Text { text } | Part::Thinking { text } if text.trim().is_empty())
}

/// The reply written since the last call belongs to that call.
fn close(s: &mut Session, reply: &mut Option<MsgIdx>) {
    if let (Some(r), Some(c)) = (reply.take(), s.calls.last_mut()) {
        if c.reply.is_none() {
            c.reply = Some(r);
        }
    }
}

fn set_model(s: &mut Session, agent: AgentIdx) {
    s.agents[agent].model = s.calls.iter().find_map(|c| c.model.clone());
}

/// A JSON array whose first element is a Cline UI event (`ts` with `say` or `ask`).
pub(crate) fn sniff_head(head: &str) -> bool {
    let h = head.trim_start();
    h.starts_with('[')
        && h.contains("\"ts\"")
        && (h.contains("\"say\"") || h.contains("\"ask\""))
        && h.contains("\"type\"")
}
