//! The session model every reader produces and every other part of ctxlab consumes.
//!
//! Invariants (readers keep them, everything else relies on them):
//! - `messages` are in the order the log wrote them (time order within one agent);
//! - `calls` are in time order across agents; `Call::context_end` never decreases for one agent;
//! - every index (`AgentIdx`, message index, call index) points into this session's vectors;
//! - a recorded compaction sits between two calls of its agent: `at_message` is the index of the
//!   first message written after the compaction boundary.

use serde::{Deserialize, Serialize};

/// Index into `Session::agents`.
pub type AgentIdx = usize;
/// Index into `Session::messages`.
pub type MsgIdx = usize;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Session {
    /// Stable id: the log's own session id where it has one, else derived from the file name.
    pub id: String,
    pub title: Option<String>,
    pub source: Source,
    pub agents: Vec<Agent>,
    pub messages: Vec<Message>,
    pub calls: Vec<Call>,
    pub compactions: Vec<RecordedCompaction>,
    /// Thresholds the log itself recorded (fuseraft's warn_at / cutover_at).
    pub thresholds: Vec<RecordedThreshold>,
    /// True when the log holds token counts but no message text: it charts, it cannot be replayed.
    pub usage_only: bool,
    /// True when the log records only the output tokens of each call (GitHub Copilot CLI): the
    /// input side of every call's usage is 0 because it is unknown, so nothing can be calibrated
    /// and every input count is ctxlab's uncalibrated estimate (see `docs/formats.md`).
    #[serde(default)]
    pub estimate_only: bool,
    /// What the tool itself recorded as the cost of calls (OpenCode, Cline), kept beside ctxlab's
    /// own pricing so the two can be cross-checked. Not every call needs one.
    #[serde(default)]
    pub recorded_costs: Vec<RecordedCost>,
    /// Non-fatal problems met while reading (corrupt lines, unknown entries that mattered).
    pub warnings: Vec<Warning>,
    /// The context window the log itself records its agent ran with (Codex
    /// `model_context_window`); a replay's budget takes it before the model table's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The folder the agent worked in, as the log records it (Claude Code's and Codex's `cwd`);
    /// the session's display name falls back to it (`naming::display_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The largest output limit the log's requests asked for (an HTTP capture's `max_tokens`,
    /// `max_completion_tokens`, `max_output_tokens` or Gemini `maxOutputTokens`); a replay's
    /// budget takes it before the model table's (`replay::resolve_limits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Every call's context in the log is the whole request the model read, system prompt and
    /// tool schemas included (an HTTP capture). Nothing is left out for a calibrated overhead
    /// to stand for: calibration's intercept is then only the counter's bias on that fixed
    /// part and the provider's own framing, of either sign (docs/tokens.md, "Captures").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_requests: bool,
}

/// Where a session came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Source {
    /// Reader id, e.g. `claude-code`, `codex`, `pi`, `openai-messages`, `fuseraft-snapshots`, `native`.
    pub format: String,
    /// Every file the session was read from; `SourcePos::file` indexes this list.
    pub files: Vec<String>,
    /// Total bytes read.
    pub bytes: u64,
    /// Content hash (hex) of the files, in order, so a moved or changed log is detected.
    pub hash: String,
}

/// A position in a source file, for error messages and for jumping back to the log.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SourcePos {
    /// Index into `Source::files`.
    pub file: u32,
    /// 1-based line number (0 when unknown).
    pub line: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Agent {
    /// The id the log uses (Claude Code agentId, fuseraft agent name, …); `main` for the root agent.
    pub id: String,
    pub name: String,
    pub model: Option<String>,
    pub parent: Option<AgentIdx>,
    /// The tool call in the parent that spawned this agent (Claude Code's Task/Agent call id).
    pub spawned_by: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        /// Arguments as the model wrote them (JSON text as a rule).
        args: String,
    },
    ToolResult {
        call_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    /// Image bytes are not kept, only their size: counters need nothing more.
    Image {
        #[serde(default)]
        media_type: String,
        /// Size of the decoded image in bytes (0 when unknown).
        bytes: u64,
    },
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessageFlags {
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
    /// A summary written by a compaction (Claude Code's isCompactSummary, pi's compaction summary).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_summary: bool,
    /// A user message that reached the agent while it was working (not a new request).
    #[serde(default, skip_serializing_if = "is_false")]
    pub injected: bool,
    /// Not part of the model's context (UI-only or metadata entries kept for display).
    #[serde(default, skip_serializing_if = "is_false")]
    pub meta: bool,
    /// The size of this message in the model's context as the provider recorded it (Claude
    /// Code: the final `output_tokens` of the reply; Codex: the response's `output_tokens`).
    /// Where set, every count of the message is this figure, not the counter's estimate of its
    /// parts (docs/tokens.md, "Recorded sizes"). Readers set it only from final usage, never
    /// from a streaming snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_tokens: Option<u64>,
    /// Tokens of content the model's context holds but the log does not show: thinking written
    /// as a bare signature, encrypted reasoning. Part of `recorded_tokens` when that is set;
    /// otherwise an estimate added to the count of the parts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden_tokens: u64,
    /// The hidden tokens leave the context when the agent's next human user message arrives
    /// (Codex reasoning; thinking of the Claude models that keep only the current turn's).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden_until_user: bool,
    /// A system message holding a request's fixed part as an HTTP capture recorded it: its last
    /// `tool_schemas` parts are the tool schemas the request declared (one text part per tool,
    /// its JSON as sent), the parts before them the system prompt. Composition counts those
    /// parts as tool schemas (`replay::Kind::Tools`).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tool_schemas: u32,
    /// This message takes the place of an earlier message of its agent, which leaves the
    /// context when this one arrives, in every run (the recorded baseline and every strategy):
    /// content the agent re-sends with each call in its current state rather than as history
    /// (aider's chat files, sent with their current content). Ignored when that message is not
    /// in the context (a strategy already dropped or summarized it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<MsgIdx>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub agent: AgentIdx,
    pub role: Role,
    pub parts: Vec<Part>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: Option<i64>,
    #[serde(default)]
    pub flags: MessageFlags,
    #[serde(default)]
    pub source: SourcePos,
}

impl Message {
    /// Ids of the tool calls this message makes.
    pub fn tool_call_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// Ids of the tool calls this message answers.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
    }

    /// A message a person wrote to the agent (a new request): a user message that is not a
    /// tool answer, a summary, an injected reminder or a display-only entry. Reasoning kept
    /// "until the next user message" leaves the context when one of these arrives.
    pub fn is_human_turn(&self) -> bool {
        self.role == Role::User
            && !self.flags.injected
            && !self.flags.is_summary
            && !self.flags.meta
    }

    /// Total characters of text-like content (text, thinking, tool args and results).
    pub fn text_chars(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text { text } | Part::Thinking { text } => text.chars().count(),
                Part::ToolCall { name, args, .. } => name.chars().count() + args.chars().count(),
                Part::ToolResult { content, .. } => content.chars().count(),
                Part::Image { .. } => 0,
            })
            .sum()
    }
}

/// Token usage the provider or harness reported for one call.
/// `input` is the uncached part: the context size of the call is `input + cache_read + cache_write`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    /// Cache writes with the 5-minute TTL.
    #[serde(default)]
    pub cache_write_5m: u64,
    /// Cache writes with the 1-hour TTL.
    #[serde(default)]
    pub cache_write_1h: u64,
}

impl Usage {
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m.saturating_add(self.cache_write_1h)
    }
    /// Tokens the model read for this call: the context occupancy as the provider counted it.
    pub fn context_tokens(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write())
    }
}

/// One model request by one agent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Call {
    pub agent: AgentIdx,
    /// The call's context, as recorded, is the agent's messages among `messages[..context_end]`
    /// that are not behind a recorded compaction (see `RecordedCompaction`).
    pub context_end: MsgIdx,
    /// The assistant message holding this call's reply, when the log has it.
    pub reply: Option<MsgIdx>,
    pub usage: Option<Usage>,
    pub model: Option<String>,
    pub timestamp: Option<i64>,
    /// Provider/request id (Claude Code `message.id`), when the log has one.
    pub request_id: Option<String>,
    #[serde(default)]
    pub source: SourcePos,
}

/// A compaction the log itself recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedCompaction {
    pub agent: AgentIdx,
    /// Index of the first message written after the compaction boundary; calls with
    /// `context_end > at_message` see the compacted history.
    pub at_message: MsgIdx,
    /// `auto`, `manual`, … as the log says.
    pub trigger: String,
    /// Tokens in the context before the compaction, as the log recorded them.
    pub pre_tokens: Option<u64>,
    /// The summary message that replaced the history, when the log has it.
    pub summary: Option<MsgIdx>,
    /// Messages of the agent from this index (inclusive) up to `at_message` survive the compaction
    /// verbatim (pi's firstKeptEntryIndex, Claude Code's preservedSegment). None: nothing kept.
    pub kept_from: Option<MsgIdx>,
    pub timestamp: Option<i64>,
    /// True when ctxlab inferred the compaction from a drop in usage instead of reading it.
    #[serde(default)]
    pub inferred: bool,
    #[serde(default)]
    pub source: SourcePos,
}

/// A threshold the log recorded (fuseraft snapshots carry warn_at / cutover_at).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedThreshold {
    pub agent: Option<AgentIdx>,
    /// `warn` or `cutover`.
    pub kind: String,
    pub tokens: u64,
}

/// What every view of a session's fidelity says of an `estimate_only` session (one wording, shown
/// by `inspect`, `replay`, `compare`, the HTML report and the app).
pub const ESTIMATE_ONLY_NOTE: &str = "estimate-only: the log records output tokens only (no input, no cache), so every input count is ctxlab's estimate, uncalibrated";

/// The cost of one call as the tool that wrote the log computed it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct RecordedCost {
    /// Index into `Session::calls`.
    pub call: usize,
    /// US dollars.
    pub usd: f64,
}

/// A non-fatal problem met while reading.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Warning {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Line 0: the warning is about the whole file (one that could not be read at all).
        match (self.file.is_empty(), self.line) {
            (true, _) => write!(f, "{}", self.message),
            (false, 0) => write!(f, "{}: {}", self.file, self.message),
            _ => write!(f, "{}:{}: {}", self.file, self.line, self.message),
        }
    }
}

impl Session {
    /// The model a call was made with: its own, else its agent's (what it is priced by).
    pub fn call_model<'a>(&'a self, call: &'a Call) -> Option<&'a str> {
        call.model
            .as_deref()
            .or_else(|| self.agents.get(call.agent).and_then(|a| a.model.as_deref()))
    }

    /// Index of the agent with this id, creating it (with `name = id`) when new.
    pub fn agent_index(&mut self, id: &str) -> AgentIdx {
        if let Some(i) = self.agents.iter().position(|a| a.id == id) {
            return i;
        }
        self.agents.push(Agent {
            id: id.to_string(),
            name: id.to_string(),
            ..Agent::default()
        });
        self.agents.len() - 1
    }

    /// Appends a message with default flags and returns its index (what readers do for every
    /// message they read).
    pub fn push_message(
        &mut self,
        agent: AgentIdx,
        role: Role,
        parts: Vec<Part>,
        timestamp: Option<i64>,
        source: SourcePos,
    ) -> MsgIdx {
        self.messages.push(Message {
            agent,
            role,
            parts,
            timestamp,
            flags: MessageFlags::default(),
            source,
        });
        self.messages.len() - 1
    }

    pub fn warn(&mut self, pos: SourcePos, message: impl Into<String>) {
        let file = self
            .source
            .files
            .get(pos.file as usize)
            .cloned()
            .unwrap_or_default();
        self.warnings.push(Warning {
            file,
            line: pos.line,
            message: message.into(),
        });
    }

    /// Calls of one agent, in order.
    pub fn calls_of(&self, agent: AgentIdx) -> impl Iterator<Item = (usize, &Call)> {
        self.calls
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.agent == agent)
    }
}
