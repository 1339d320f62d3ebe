//! fuseraft `ctx_snapshots*.jsonl`: one line per agent turn with its token counts, and a line with
//! `compaction_occurred` each time the shared history was compacted. No message text: a
//! usage-only session (it charts, it cannot be replayed).
//!
//! Each call gets an empty assistant message flagged `meta` as its reply: the model places calls
//! and compactions relative to one another through message indices, and these placeholders carry
//! that order without inventing content.

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;

use super::de::{bad_usage, Count, LenientStr};
use super::follow::{new_session, JsonlLive, SessionSink};
use super::lines::JsonSink;
use super::time::parse_ms;
use crate::model::*;
use crate::Result;

pub const ID: &str = "fuseraft-snapshots";

/// The agent name fuseraft writes on compaction lines.
const SYSTEM_AGENT: &str = "system";

#[derive(Deserialize)]
struct Snapshot<'a> {
    #[serde(borrow, default)]
    ts: Option<Cow<'a, str>>,
    #[serde(default)]
    session: LenientStr,
    #[serde(default)]
    agent: LenientStr,
    #[serde(default)]
    turn: Count,
    #[serde(default)]
    turn_input_tokens: Count,
    #[serde(default)]
    turn_output_tokens: Count,
    #[serde(default)]
    warn_at: Count,
    #[serde(default)]
    cutover_at: Count,
    #[serde(default)]
    compaction_occurred: Option<bool>,
}

pub(crate) struct Sink {
    s: Session,
}

impl Sink {
    fn threshold(&mut self, agent: AgentIdx, kind: &str, tokens: Option<u64>) {
        let Some(tokens) = tokens.filter(|&t| t > 0) else {
            return;
        };
        let known = self
            .s
            .thresholds
            .iter()
            .any(|t| t.agent == Some(agent) && t.kind == kind && t.tokens == tokens);
        if !known {
            self.s.thresholds.push(RecordedThreshold {
                agent: Some(agent),
                kind: kind.into(),
                tokens,
            });
        }
    }
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let l: Snapshot<'_> = serde_json::from_slice(json)?;
        let ts = l.ts.as_deref().and_then(parse_ms);
        if self.s.id.is_empty() {
            if let Some(id) = l.session.0.clone() {
                self.s.id = id;
            }
        }
        if l.compaction_occurred == Some(true) {
            // The history all agents share was compacted: every agent's context restarts.
            let at = self.s.messages.len();
            for agent in 0..self.s.agents.len() {
                self.s.compactions.push(RecordedCompaction {
                    agent,
                    at_message: at,
                    trigger: "auto".into(),
                    pre_tokens: None,
                    summary: None,
                    kept_from: None,
                    timestamp: ts,
                    inferred: false,
                    source: pos,
                });
            }
            return Ok(());
        }
        let Some(name) = l.agent.0.filter(|a| !a.is_empty() && a != SYSTEM_AGENT) else {
            self.s.warn(pos, "turn line without an `agent`; skipped");
            return Ok(());
        };
        let agent = self.s.agent_index(&name);
        self.threshold(agent, "warn", l.warn_at.0);
        self.threshold(agent, "cutover", l.cutover_at.0);
        let mi = self.s.messages.len();
        self.s.messages.push(Message {
            agent,
            role: Role::Assistant,
            parts: Vec::new(),
            timestamp: ts,
            flags: MessageFlags {
                meta: true,
                ..MessageFlags::default()
            },
            source: pos,
        });
        let usage = match bad_usage([
            ("turn_input_tokens", l.turn_input_tokens.1),
            ("turn_output_tokens", l.turn_output_tokens.1),
        ]) {
            Some(why) => {
                self.s.warn(pos, why);
                None
            }
            None => Some(Usage {
                input: l.turn_input_tokens.get(),
                output: l.turn_output_tokens.get(),
                ..Usage::default()
            }),
        };
        self.s.calls.push(Call {
            agent,
            context_end: mi,
            reply: Some(mi),
            usage,
            model: None,
            timestamp: ts,
            request_id: l.turn.0.map(|t| format!("turn {t}")),
            source: pos,
        });
        Ok(())
    }

    fn warn(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

pub fn read(path: &Path) -> Result<Session> {
    Ok(super::follow::read_through(path, Live::new(path))?.sink.s)
}

/// A snapshot log being read, kept between reads so that `formats::follow` can feed appended
/// lines.
pub(crate) type Live = JsonlLive<Sink>;

impl Live {
    pub(crate) fn new(path: &Path) -> Self {
        let mut s = new_session(path, ID);
        s.usage_only = true;
        JsonlLive::start(path, Sink { s }, "a fuseraft snapshot line")
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
    o.contains_key("turn_input_tokens")
        || o.contains_key("cumulative_input_tokens")
        || o.contains_key("compaction_occurred")
}
