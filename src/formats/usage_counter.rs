//! Usage-only counters written by request-intercepting proxies: one line per model request with
//! the context size it carried, `{ts, turn, tokens, model, topTool, sessionId?}` (X-Ray Claude
//! Code Interceptor). No text: a usage-only session.
//!
//! Agents are (session, model) pairs. A request far below its agent's last one is either a one-off
//! call of another agent sharing the model (a subagent's or a side call's request; the main agent's
//! next request climbs back) or a compaction (the next requests stay low). The first becomes a call
//! of the side agent `<agent> side`; the second an inferred compaction. Which one it is can only be
//! told from the request after it, so the rows are read first (a few numbers each) and placed after.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::de::{Count, LenientStr};
use super::lines::{read_jsonl, JsonSink, LineReader};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "usage-counter";

/// A request below this share of its agent's previous one is a drop.
const DROP: f64 = 0.5;

#[derive(Deserialize)]
struct Row {
    #[serde(default)]
    ts: LenientStr,
    #[serde(default)]
    turn: Count,
    #[serde(default)]
    tokens: Count,
    #[serde(default)]
    model: LenientStr,
    #[serde(rename = "sessionId", default)]
    session_id: LenientStr,
}

struct Kept {
    pos: SourcePos,
    ts: Option<i64>,
    turn: Option<u64>,
    tokens: u64,
    key: String,
    model: Option<String>,
}

struct Sink {
    rows: Vec<Kept>,
    warnings: Vec<(SourcePos, String)>,
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let r: Row = serde_json::from_slice(json)?;
        let Some(tokens) = r.tokens.0 else {
            let why = match r.tokens.1 {
                Some(bad) => format!(
                    "`tokens` of {bad} is not a token count (negative, fractional or out of \
                     range); the row is skipped"
                ),
                None => "expected a row with a `tokens` count; skipped".into(),
            };
            self.warnings.push((pos, why));
            return Ok(());
        };
        let model = r.model.0;
        let session = r.session_id.0.unwrap_or_else(|| "session".into());
        self.rows.push(Kept {
            pos,
            ts: r.ts.0.as_deref().and_then(parse_ms),
            turn: r.turn.0,
            tokens,
            key: format!("{session}/{}", model.as_deref().unwrap_or("model")),
            model,
        });
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.warnings.push((pos, message));
    }
}

pub fn read(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(std::io::BufReader::new(f), &mut hasher);
    let mut sink = Sink {
        rows: Vec::new(),
        warnings: Vec::new(),
    };
    read_jsonl(&mut lines, 0, "a usage row {ts, tokens, model}", &mut sink)
        .map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    let mut s = Session {
        id: path
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default(),
        usage_only: true,
        ..Session::default()
    };
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    s.source.bytes = bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    for (pos, m) in sink.warnings {
        s.warn(pos, m);
    }
    place(&mut s, &sink.rows);
    Ok(s)
}

fn place(s: &mut Session, rows: &[Kept]) {
    // Per key, the row indices in order: the next row of the same key tells a dip from a drop.
    let mut next_same: Vec<Option<usize>> = vec![None; rows.len()];
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate().rev() {
        next_same[i] = last_of.insert(r.key.as_str(), i);
    }
    let mut level: HashMap<String, u64> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        let prev = level.get(&r.key).copied();
        let low = |t: u64, p: u64| (t as f64) < p as f64 * DROP;
        let mut key = r.key.clone();
        if let Some(p) = prev.filter(|&p| low(r.tokens, p)) {
            let stays_low = next_same[i].is_none_or(|n| low(rows[n].tokens, p));
            if stays_low {
                let agent = s.agent_index(&r.key);
                s.compactions.push(RecordedCompaction {
                    agent,
                    at_message: s.messages.len(),
                    trigger: "inferred".into(),
                    pre_tokens: Some(p),
                    summary: None,
                    kept_from: None,
                    timestamp: r.ts,
                    inferred: true,
                    source: r.pos,
                });
                level.insert(r.key.clone(), r.tokens);
            } else {
                key = format!("{} side", r.key);
            }
        } else {
            level.insert(r.key.clone(), r.tokens);
        }
        let agent = s.agent_index(&key);
        if s.agents[agent].model.is_none() {
            s.agents[agent].model = r.model.clone();
        }
        if key != r.key {
            s.agents[agent].parent = Some(s.agent_index(&r.key));
        }
        let mi = s.messages.len();
        // An empty placeholder reply orders calls and compactions without inventing content.
        s.messages.push(Message {
            agent,
            role: Role::Assistant,
            parts: Vec::new(),
            timestamp: r.ts,
            flags: MessageFlags {
                meta: true,
                ..MessageFlags::default()
            },
            source: r.pos,
        });
        s.calls.push(Call {
            agent,
            context_end: mi,
            reply: Some(mi),
            usage: Some(Usage {
                input: r.tokens,
                ..Usage::default()
            }),
            model: r.model.clone(),
            timestamp: r.ts,
            request_id: r.turn.map(|t| format!("turn {t}")),
            source: r.pos,
        });
    }
}

/// `{ts, turn, tokens, model}` and nothing that makes it a message or a snapshot.
pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    o.get("tokens").is_some_and(|t| t.is_u64())
        && o.contains_key("ts")
        && o.contains_key("turn")
        && !o.contains_key("content")
}
