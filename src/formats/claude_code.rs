//! Claude Code transcripts: `~/.claude/projects/<project>/<session>.jsonl` plus the subagents in
//! `<session>/subagents/agent-<id>.jsonl`.
//!
//! One entry per content block, all blocks of one API response sharing `message.id` and repeating
//! its usage: blocks are merged into one assistant message and one call per `message.id` (keeping
//! the usage with the largest `output_tokens`, since 2.1.3x writes streaming snapshots).
//! `compact_boundary` + the `isCompactSummary` user entry become a recorded compaction.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap as HashMap;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::de::{bad_usage, base64_len, Count, LenientStr, StrOrBlocks};
use super::follow::LiveLog;
use super::lines::{from_line, read_jsonl, JsonSink, LineReader};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "claude-code";

/// Claude Code writes this model name on messages it made up itself (API errors, "no response").
const SYNTHETIC_MODEL: &str = "<synthetic>";

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    /// The API request an assistant entry's response answered: one per `message.id`.
    #[serde(rename = "requestId", borrow, default)]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "agentId", borrow, default)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(rename = "isCompactSummary", default)]
    is_compact_summary: Option<bool>,
    #[serde(borrow, default)]
    message: Option<ApiMessage<'a>>,
    #[serde(rename = "compactMetadata", borrow, default)]
    compact: Option<CompactMeta<'a>>,
    #[serde(borrow, default)]
    data: Option<ProgressData<'a>>,
    #[serde(rename = "parentToolUseID", borrow, default)]
    parent_tool_use_id: Option<Cow<'a, str>>,
    #[serde(rename = "toolUseResult", default)]
    tool_use_result: Option<AgentRef>,
    #[serde(rename = "aiTitle", default)]
    ai_title: LenientStr,
    #[serde(rename = "customTitle", default)]
    custom_title: LenientStr,
    #[serde(default)]
    summary: LenientStr,
    /// The folder Claude Code ran in (`Session::project`).
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    /// `attachment` entries: what Claude Code injects into the next user turn.
    #[serde(borrow, default)]
    attachment: Option<&'a RawValue>,
    /// The session's plan slug: its plan file is `plans/<slug>.md` (2.1.x).
    #[serde(borrow, default)]
    slug: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ApiMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: StrOrBlocks<Block<'a>>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    /// Set on the entry that carries the response's final usage (2.1.1xx and later); the
    /// entries of 2.1.3x carry streaming snapshots and no stop reason.
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct ApiUsage {
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    output_tokens: Count,
    #[serde(default)]
    cache_read_input_tokens: Count,
    #[serde(default)]
    cache_creation_input_tokens: Count,
    #[serde(default)]
    cache_creation: Option<CacheCreation>,
    /// Per-iteration usage (2.1.18x); the real usage when the top-level fields are 0.
    #[serde(default)]
    iterations: Option<Vec<ApiUsage>>,
}

#[derive(Deserialize)]
pub(crate) struct CacheCreation {
    #[serde(default)]
    ephemeral_5m_input_tokens: Count,
    #[serde(default)]
    ephemeral_1h_input_tokens: Count,
}

impl ApiUsage {
    /// The usage, or the warning for a figure that is not a token count (`de::bad_usage`).
    pub(crate) fn checked(&self) -> std::result::Result<Usage, String> {
        match self.bad() {
            Some(why) => Err(why),
            None => Ok(self.to_usage()),
        }
    }

    fn bad(&self) -> Option<String> {
        let c = self.cache_creation.as_ref();
        bad_usage([
            ("input_tokens", self.input_tokens.1),
            ("output_tokens", self.output_tokens.1),
            ("cache_read_input_tokens", self.cache_read_input_tokens.1),
            (
                "cache_creation_input_tokens",
                self.cache_creation_input_tokens.1,
            ),
            (
                "cache_creation.ephemeral_5m_input_tokens",
                c.and_then(|c| c.ephemeral_5m_input_tokens.1),
            ),
            (
                "cache_creation.ephemeral_1h_input_tokens",
                c.and_then(|c| c.ephemeral_1h_input_tokens.1),
            ),
        ])
        .or_else(|| self.iterations.iter().flatten().find_map(ApiUsage::bad))
    }

    fn to_usage(&self) -> Usage {
        let top = self
            .input_tokens
            .get()
            .saturating_add(self.cache_read_input_tokens.get())
            .saturating_add(self.cache_creation_input_tokens.get());
        if top == 0 {
            // Some 2.1.18x entries leave the top level at 0 (at most a cache-creation breakdown
            // of one part of the call) and write the real figures per iteration: the context is
            // the last iteration's, the output all iterations'.
            if let Some(last) = self.iterations.as_deref().and_then(<[ApiUsage]>::last) {
                let mut u = last.own_usage();
                u.output = self
                    .iterations
                    .iter()
                    .flatten()
                    .map(|i| i.output_tokens.get())
                    .fold(0u64, u64::saturating_add)
                    .max(self.output_tokens.get());
                return u;
            }
        }
        self.own_usage()
    }

    /// The top-level fields, iterations aside.
    fn own_usage(&self) -> Usage {
        let total = self.cache_creation_input_tokens.get();
        let (w5, w1) = match &self.cache_creation {
            Some(c) => {
                let (a, b) = (
                    c.ephemeral_5m_input_tokens.get(),
                    c.ephemeral_1h_input_tokens.get(),
                );
                if a.checked_add(b) == Some(total) || total == 0 {
                    (a, b)
                } else {
                    (total, 0)
                }
            }
            None => (total, 0),
        };
        Usage {
            input: self.input_tokens.get(),
            output: self.output_tokens.get(),
            cache_read: self.cache_read_input_tokens.get(),
            cache_write_5m: w5,
            cache_write_1h: w1,
        }
    }
}

/// One Anthropic content block; a flat struct so unknown kinds and fields cost nothing.
#[derive(Deserialize)]
pub(crate) struct Block<'a> {
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
    input: Option<&'a RawValue>,
    #[serde(default)]
    tool_use_id: LenientStr,
    #[serde(borrow, default)]
    content: StrOrBlocks<Block<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    source: Option<ImageSource<'a>>,
    /// A thinking block's signature: all the log keeps of thinking that 2.1.1xx+ writes empty.
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct ImageSource<'a> {
    #[serde(default)]
    media_type: LenientStr,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct CompactMeta<'a> {
    #[serde(borrow, default)]
    trigger: Option<Cow<'a, str>>,
    #[serde(rename = "preTokens", default)]
    pre_tokens: Count,
    #[serde(rename = "preservedSegment", borrow, default)]
    preserved: Option<PreservedSegment<'a>>,
    /// The entries the compaction kept: those the log writes after the boundary ran before it.
    #[serde(rename = "preservedMessages", default)]
    preserved_messages: Option<PreservedMessages>,
}

#[derive(Deserialize)]
struct PreservedMessages {
    #[serde(rename = "allUuids", default)]
    all_uuids: Vec<String>,
}

#[derive(Deserialize)]
struct PreservedSegment<'a> {
    #[serde(rename = "headUuid", borrow, default)]
    head_uuid: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ProgressData<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "agentId", borrow, default)]
    agent_id: Option<Cow<'a, str>>,
}

/// `toolUseResult.agentId` of a Task/Agent result; the field is a string or an object, or absent.
#[derive(Default)]
struct AgentRef(Option<String>);

impl<'de> Deserialize<'de> for AgentRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Obj {
            #[serde(rename = "agentId", default)]
            agent_id: LenientStr,
        }
        // Anything that is not an object (strings, arrays) carries no agent id.
        let v = LenientAny::deserialize(d)?;
        Ok(AgentRef(v.0.and_then(|o: Obj| o.agent_id.0)))
    }
}

/// Deserialize `T` from a map, or nothing from any other value.
struct LenientAny<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LenientAny<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
        use std::fmt;
        use std::marker::PhantomData;
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LenientAny<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                a: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                Ok(LenientAny(Some(T::deserialize(
                    de::value::MapAccessDeserializer::new(a),
                )?)))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientAny(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(LenientAny(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// What content blocks put in the model's context that their parts do not show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unseen {
    /// Signature characters of thinking blocks written without their text (the thinking is in
    /// the model's context, the log shows only its signature).
    pub signature: u64,
    /// `tool_reference` blocks: each loads a tool's schema into the context (ToolSearch).
    pub tool_references: u64,
}

impl std::ops::AddAssign for Unseen {
    fn add_assign(&mut self, o: Unseen) {
        self.signature += o.signature;
        self.tool_references += o.tool_references;
    }
}

/// Converts Anthropic content blocks into parts (shared with other Anthropic-shaped logs), and
/// tells what the blocks hold that the parts do not show.
pub(crate) fn push_blocks(content: StrOrBlocks<Block<'_>>, parts: &mut Vec<Part>) -> Unseen {
    let mut unseen = Unseen::default();
    match content {
        StrOrBlocks::Str(text) => {
            if !text.is_empty() {
                parts.push(Part::Text { text });
            }
        }
        StrOrBlocks::None => {}
        StrOrBlocks::Blocks(blocks) => {
            for b in blocks {
                unseen += push_block(b, parts);
            }
        }
    }
    unseen
}

fn push_block(b: Block<'_>, parts: &mut Vec<Part>) -> Unseen {
    let mut unseen = Unseen::default();
    let kind = b.kind.as_deref().unwrap_or("");
    match kind {
        "text" => {
            if let Some(text) = b.text.0 {
                parts.push(Part::Text { text });
            }
        }
        "thinking" => {
            let text = b.thinking.0.unwrap_or_default();
            if text.is_empty() {
                // Signature-only (2.1.1xx+): the thinking is there, unseen.
                unseen.signature = b.signature.as_deref().map_or(0, |s| s.len() as u64);
                return unseen;
            }
            parts.push(Part::Thinking { text });
        }
        "tool_use" | "server_tool_use" | "mcp_tool_use" => parts.push(Part::ToolCall {
            id: b.id.0.unwrap_or_default(),
            name: b.name.0.unwrap_or_default(),
            args: b
                .input
                .map_or_else(|| "{}".to_string(), |r| r.get().to_string()),
        }),
        "image" | "document" => parts.push(image_part(b.source)),
        k if k == "tool_result" || k.ends_with("_tool_result") => {
            let mut text = String::new();
            let mut images = Vec::new();
            match b.content {
                StrOrBlocks::Str(s) => text = s,
                StrOrBlocks::None => {}
                StrOrBlocks::Blocks(inner) => {
                    for ib in inner {
                        match ib.kind.as_deref() {
                            Some("text") => {
                                if let Some(t) = ib.text.0 {
                                    // Most results are one text block: take it, copy nothing.
                                    if text.is_empty() {
                                        text = t;
                                    } else {
                                        text.push('\n');
                                        text.push_str(&t);
                                    }
                                }
                            }
                            Some("image" | "document") => images.push(image_part(ib.source)),
                            Some("tool_reference") => unseen.tool_references += 1,
                            _ => {}
                        }
                    }
                }
            }
            parts.push(Part::ToolResult {
                call_id: b.tool_use_id.0.unwrap_or_default(),
                content: text,
                is_error: b.is_error.unwrap_or(false),
            });
            parts.extend(images);
        }
        _ => {}
    }
    unseen
}

fn image_part(src: Option<ImageSource<'_>>) -> Part {
    let (media_type, bytes) = match src {
        Some(s) => (
            s.media_type.0.unwrap_or_default(),
            s.data.as_deref().map_or(0, base64_len),
        ),
        None => (String::new(), 0),
    };
    Part::Image { media_type, bytes }
}

/// The text an attachment puts in the model's context, and the tokens of fixed reminder text
/// it adds; `None` for attachments the model never sees (hook messages shown to the user,
/// permission bookkeeping, unknown kinds).
fn attachment_text(a: &serde_json::Value) -> Option<(String, u64)> {
    use serde_json::Value;
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(o) => {
                // A file's or a memory's text; else the whole object (todo items) as JSON.
                if let Some(c) = o.get("content").filter(|c| !c.is_null()) {
                    strings(c, out)
                } else if let Some(f) = o.get("file") {
                    strings(f, out)
                } else {
                    out.push(v.to_string())
                }
            }
            _ => {}
        }
    }
    let kind = a.get("type").and_then(Value::as_str).unwrap_or("");
    if matches!(kind, "task_reminder" | "todo_reminder") {
        // The reminder's fixed text, and one line per item (not the item's JSON).
        let items = a.get("content").and_then(Value::as_array);
        let lines: Vec<String> = items
            .into_iter()
            .flatten()
            .map(|i| {
                let field = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or("");
                let subject = match field("subject") {
                    "" => field("content"),
                    s => s,
                };
                format!("#{}. [{}] {}", field("id"), field("status"), subject)
            })
            .collect();
        let fixed = if kind == "task_reminder" {
            TASK_REMINDER_TOKENS
        } else {
            TODO_REMINDER_TOKENS
        };
        return Some((lines.join("\n"), fixed));
    }
    if let Some(text) = read_attachment_text(kind, a) {
        return Some((text, 0));
    }
    if kind == "plan_file_reference" {
        let field = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("");
        let text = plan_reference_text(field("planFilePath"), field("planContent"));
        return Some((text, PLAN_REFERENCE_TOKENS));
    }
    let fixed = match kind {
        "queued_command" => QUEUED_COMMAND_TOKENS,
        "file"
        | "compact_file_reference"
        | "skill_listing"
        | "hook_success"
        | "hook_additional_context"
        | "nested_memory"
        | "deferred_tools_delta"
        | "agent_listing_delta"
        | "mcp_instructions_delta"
        | "edited_text_file"
        | "selected_lines_in_ide"
        | "opened_file_in_ide"
        | "diagnostics"
        | "plan_mode"
        | "critical_system_reminder" => 0,
        _ => return None,
    };
    let mut out = Vec::new();
    for field in [
        "filename",
        "prompt",
        "content",
        "addedBlocks",
        "addedNames",
        "addedTypes",
    ] {
        if let Some(v) = a.get(field) {
            strings(v, &mut out);
        }
    }
    Some((out.join("\n"), fixed))
}

/// The text Claude Code sends for a file it attaches (a file re-attached after a compaction, an
/// @-mentioned file) or only names (`compact_file_reference`: too large to re-attach), as it
/// renders them (Claude Code's `normalizeAttachmentForAPI`, cases `file` and
/// `compact_file_reference`, through `createToolUseMessage` / `createToolResultMessage`): a Read
/// call and its result, the file's lines numbered as the Read tool numbers them (`N<TAB>line`,
/// the format the log's own Read results show from 2.1.1xx on), each in a system reminder.
/// `None` for other kinds and for a file attachment without text (an image).
fn read_attachment_text(kind: &str, a: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let filename = a.get("filename").and_then(Value::as_str)?;
    let reminder = |t: &str| format!("<system-reminder>\n{t}\n</system-reminder>");
    match kind {
        "compact_file_reference" => Some(reminder(&format!(
            "Note: {filename} was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it."
        ))),
        "file" => {
            let content = a.get("content")?;
            if content.get("type").and_then(Value::as_str) != Some("text") {
                return None;
            }
            let file = content.get("file")?;
            let text = file.get("content").and_then(Value::as_str)?;
            let start = file.get("startLine").and_then(Value::as_u64).unwrap_or(1);
            let mut numbered = String::with_capacity(text.len() + text.len() / 8);
            for (i, line) in text.lines().enumerate() {
                if i > 0 {
                    numbered.push('\n');
                }
                numbered.push_str(&(start + i as u64).to_string());
                numbered.push('\t');
                numbered.push_str(line);
            }
            let input = serde_json::json!({ "file_path": filename });
            Some(format!(
                "{}\n{}",
                reminder(&format!(
                    "Called the Read tool with the following input: {input}"
                )),
                reminder(&format!("Result of calling the Read tool:\n{numbered}"))
            ))
        }
        _ => None,
    }
}

/// The text of a plan Claude Code sends after a compaction, without its fixed sentences
/// (`PLAN_REFERENCE_TOKENS`): the plan file's path and its text, in a system reminder.
fn plan_reference_text(path: &str, plan: &str) -> String {
    format!("<system-reminder>\n{path}\n\n{plan}\n</system-reminder>")
}

/// Makes `m` the plan Claude Code sent after a compaction.
fn set_plan_reference(m: &mut Message, path: &str, plan: &str) {
    m.parts = vec![Part::Text {
        text: plan_reference_text(path, plan),
    }];
    m.flags.hidden_tokens = PLAN_REFERENCE_TOKENS;
    m.flags.meta = false;
}

/// The plan message a compaction's rebuild placed before the agent's first reply after it:
/// an `ExitPlanMode` in that reply carries the plan file's text at that moment (Claude Code
/// fills its `plan` input from disk), which nothing changed since the compaction.
struct PlanSlot {
    msg: MsgIdx,
    reply: MsgIdx,
    path: String,
}

/// The files (and the plan) compaction `ci` re-attached, rebuilt from the log
/// (`claude_restore`): injected user messages placed before the agent's first reply after it
/// (the files the log does not hold whole are left out). Returns the plan's message and path:
/// its text as the log last showed it, or, when the log never showed it whole but the agent
/// used plan mode, a placeholder outside the context (`meta`) until the reply shows it.
fn push_restored(
    s: &mut Session,
    files: &mut super::claude_restore::Files,
    ci: usize,
    ts: Option<i64>,
    pos: SourcePos,
) -> Option<(MsgIdx, String)> {
    let c = &s.compactions[ci];
    let (agent, at) = (c.agent, c.at_message);
    let r = files.restore(&s.messages, agent, at, c.kept_from);
    let injected = |parts| Message {
        agent,
        role: Role::User,
        parts,
        timestamp: ts,
        flags: MessageFlags {
            injected: true,
            ..MessageFlags::default()
        },
        source: pos,
    };
    for text in r.texts {
        s.messages.push(injected(vec![Part::Text { text }]));
    }
    // Files the log does not show whole (`r.unknown`) are left out: not a problem of the log,
    // and a warning on every such compaction would drown the ones that are.
    let path = r.plan_path?;
    let mut m = injected(Vec::new());
    match &r.plan {
        Some(plan) => set_plan_reference(&mut m, &path, plan),
        None if r.plan_seen => m.flags.meta = true,
        None => return None,
    }
    s.messages.push(m);
    Some((s.messages.len() - 1, path))
}

/// The `plan` of an `ExitPlanMode` call among a reply's parts.
fn exit_plan(parts: &[Part]) -> Option<String> {
    parts.iter().find_map(|p| match p {
        Part::ToolCall { name, args, .. } => super::claude_restore::exit_plan_text(name, args),
        _ => None,
    })
}

/// A user message made only of tool results (and the images they returned) answers tool calls.
pub(crate) fn user_role(parts: &[Part]) -> Role {
    let has_result = parts.iter().any(|p| matches!(p, Part::ToolResult { .. }));
    let only_results = parts
        .iter()
        .all(|p| matches!(p, Part::ToolResult { .. } | Part::Image { .. }));
    if has_result && only_results {
        Role::Tool
    } else {
        Role::User
    }
}

/// What the entries of one `message.id` have told so far.
struct Response {
    /// The reply message and its call (none for synthetic messages).
    msg: MsgIdx,
    call: Option<usize>,
    /// Largest streaming-snapshot `output_tokens` seen, while no final usage came.
    best: u64,
    /// An entry with a stop reason carried the final usage.
    final_usage: bool,
    /// Signature characters of the response's signature-only thinking blocks.
    signature: u64,
    /// An entry's usage held a figure that is not a token count: the call keeps no usage.
    bad_usage: bool,
    /// Line of the response's first entry.
    line: u32,
    /// The entry's `requestId`, when it has one.
    request: Option<String>,
}

/// Tokens per signature character of a thinking block written without its text: the estimate
/// of hidden thinking when the log has no final usage (docs/tokens.md, "Hidden thinking").
pub const THINKING_TOKENS_PER_SIGNATURE_CHAR: f64 = 0.28;

/// Tokens of one tool schema loaded on demand (a `tool_reference` block of a ToolSearch result):
/// the step in recorded input at the call after such a result, less the reply's recorded output,
/// on the real 2.1.112 log's three ToolSearch results with nothing else new: 2,970 for TaskCreate,
/// TaskUpdate and TaskList, 1,830 for Monitor, 2,180 for TaskUpdate and WebFetch; 6,980 for 6
/// tools (docs/tokens.md, "Claude Code").
pub const TOOL_SCHEMA_TOKENS: u64 = 1_150;

/// The fixed text of an empty task / todo reminder attachment (its items, when it has any,
/// are counted as text besides): measured as the step in recorded input at the calls after one
/// with nothing else new (2.1.112: +377 for `task_reminder`; 2.1.121: +170 for `todo_reminder`).
pub const TASK_REMINDER_TOKENS: u64 = 300;
pub const TODO_REMINDER_TOKENS: u64 = 170;

/// What a `queued_command` attachment (a task notification, or a prompt typed while the agent
/// worked) costs beyond its prompt's text: Claude Code sends it wrapped (`wrapCommandText` and a
/// system reminder), and the notification's IDs and paths cost more per character than the
/// counter's scale. Measured on claude-code_posthog-impact's 170 task notifications as the
/// constant of the steps in recorded input at calls whose new content is notifications and tool
/// results (102–105 per notification beside 1.73–1.81 per counted token; docs/tokens.md).
pub const QUEUED_COMMAND_TOKENS: u64 = 100;

/// The fixed text around the plan Claude Code sends after a compaction when the session has a
/// plan file (`plan_file_reference`, 2.1.37 `normalizeAttachmentForAPI`): two sentences before
/// the path and the plan and one after, 152 characters, 27 English words, not in any log. Its
/// size is modelled, not fitted: ~1.3 tokens a word of plain English, as Claude's tokenizer
/// counts prose. The path and the plan are counted as text (docs/tokens.md, "Claude Code").
pub const PLAN_REFERENCE_TOKENS: u64 = 35;

/// Which earlier thinking a model keeps in its context (`data/thinking.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingRetention {
    /// Every earlier turn's thinking stays.
    All,
    /// Only the thinking since the last human message stays.
    Turn,
}

#[derive(Deserialize)]
struct RetentionTable {
    rule: Vec<RetentionRule>,
}

#[derive(Deserialize)]
struct RetentionRule {
    prefix: String,
    retention: ThinkingRetention,
}

fn retention_rules() -> &'static [RetentionRule] {
    static RULES: std::sync::OnceLock<Vec<RetentionRule>> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        toml::from_str::<RetentionTable>(include_str!("../../data/thinking.toml"))
            .expect("data/thinking.toml parses (tested)")
            .rule
    })
}

/// The retention of `model`'s thinking: the first rule of `data/thinking.toml` whose prefix
/// starts the name (provider prefixes such as `anthropic/` cut), else `All`.
pub fn thinking_retention(model: &str) -> ThinkingRetention {
    let name = model.rsplit(['/', '.']).next().unwrap_or(model);
    let name = if name.starts_with("claude") {
        name
    } else {
        model
    };
    retention_rules()
        .iter()
        .find(|r| name.starts_with(&r.prefix))
        .map_or(ThinkingRetention::All, |r| r.retention)
}

/// The context size of a reply: its final `output_tokens` when the log has them (never a
/// streaming snapshot); its signature-only thinking as hidden tokens (an estimate from the
/// signatures' length), which leave the context at the next human message on models that keep
/// only the current turn's thinking.
pub(crate) fn set_reply_size(
    m: &mut Message,
    signature: u64,
    final_output: Option<u64>,
    turn_only: bool,
) {
    m.flags.recorded_tokens = final_output;
    m.flags.hidden_tokens = (signature as f64 * THINKING_TOKENS_PER_SIGNATURE_CHAR).round() as u64;
    if let Some(out) = final_output {
        m.flags.hidden_tokens = m.flags.hidden_tokens.min(out);
    }
    m.flags.hidden_until_user = turn_only && m.flags.hidden_tokens > 0;
}

#[derive(Default)]
struct AgentState {
    /// `message.id` → what its entries told so far.
    by_id: HashMap<String, Response>,
    /// The compaction waiting for its summary message.
    pending_compaction: Option<usize>,
    /// The agent's latest reply: entries of its `message.id` continue it.
    last_reply: Option<MsgIdx>,
    /// `message.id`s met again after another response (warned, each read as a new call).
    repeated_ids: usize,
    /// A compaction whose summary came and whose re-attached files the log has not written
    /// (yet): rebuilt at the agent's next reply unless a `file` attachment comes first.
    restore: Option<usize>,
    /// The files the agent's messages showed, taken in as far as its last rebuilt compaction.
    files: super::claude_restore::Files,
    /// The plan message of the agent's last rebuilt compaction, while its first reply after it
    /// is read.
    plan_slot: Option<PlanSlot>,
    /// A precomputed compaction (docs/formats.md): the uuids of the entries it kept that the log
    /// has not written yet, and its summary, held back until they are read.
    awaiting: Vec<String>,
    deferred: Option<Deferred>,
    /// `preservedSegment.headUuid` of the pending compaction when its entry was not read yet.
    head: Option<String>,
}

/// A compaction summary held back while the entries written after its boundary but sent before
/// it are read (`AgentState::awaiting`).
struct Deferred {
    message: Message,
    uuid: Option<String>,
    compaction: usize,
    /// `preservedSegment.headUuid`, when the entry it names was not read yet.
    head: Option<String>,
}

/// A subagent the main file mentions: its id, the tool call that spawned it, where it was seen.
struct Link {
    agent_id: String,
    tool_use_id: String,
    pos: SourcePos,
}

/// What one file's reading remembers between lines (kept across reads when the file is followed).
struct FileState {
    /// The agent this file belongs to.
    agent: AgentIdx,
    /// Only the main file may hold sidechain entries of older versions.
    main: bool,
    agents: HashMap<AgentIdx, AgentState>,
    uuid_msg: HashMap<String, MsgIdx>,
    links: Vec<Link>,
    session_id: Option<String>,
    title: Option<String>,
    custom_title: Option<String>,
    /// The first `cwd` the file records.
    cwd: Option<String>,
    /// The session's plan slug (`Entry::slug`).
    slug: Option<String>,
    /// Some agent holds a compaction summary back (`AgentState::deferred`).
    deferring: bool,
    /// The last model an entry named, and whether its thinking stays for the turn only.
    retention: Option<(String, bool)>,
}

impl FileState {
    fn new(agent: AgentIdx, main: bool) -> Self {
        FileState {
            agent,
            main,
            agents: HashMap::default(),
            uuid_msg: HashMap::default(),
            links: Vec::new(),
            session_id: None,
            title: None,
            custom_title: None,
            cwd: None,
            slug: None,
            deferring: false,
            retention: None,
        }
    }
}

struct FileSink<'s> {
    s: &'s mut Session,
    f: &'s mut FileState,
}

impl FileSink<'_> {
    fn agent_for(&mut self, e: &Entry<'_>) -> AgentIdx {
        if !(self.f.main && e.is_sidechain == Some(true)) {
            return self.f.agent;
        }
        let id = e.agent_id.as_deref().unwrap_or("sidechain");
        let idx = self.s.agent_index(id);
        if idx != self.f.agent && self.s.agents[idx].parent.is_none() {
            self.s.agents[idx].parent = Some(self.f.agent);
        }
        idx
    }

    fn assistant(&mut self, e: Entry<'_>, pos: SourcePos) {
        let agent = self.agent_for(&e);
        let ts = e.timestamp.as_deref().and_then(parse_ms);
        let Some(m) = e.message else {
            self.s
                .warn(pos, "assistant entry without `message`; skipped");
            return;
        };
        let mut parts = Vec::new();
        let signature = push_blocks(m.content, &mut parts).signature;
        let mut bad_usage = false;
        let usage = match m.usage.as_ref().map(ApiUsage::checked) {
            Some(Err(why)) => {
                self.s.warn(pos, why);
                bad_usage = true;
                None
            }
            u => u.and_then(Result::ok),
        };
        let final_usage = m.stop_reason.is_some() && usage.is_some();
        let model = m.model.map(Cow::into_owned);
        let synthetic = model.as_deref() == Some(SYNTHETIC_MODEL);
        // The entries of a file name one model or a few, one after another: the rule of the
        // last one is kept.
        let turn_only = match model.as_deref() {
            None => false,
            Some(m) => match &self.f.retention {
                Some((last, turn)) if last == m => *turn,
                _ => {
                    let turn = thinking_retention(m) == ThinkingRetention::Turn;
                    self.f.retention = Some((m.to_string(), turn));
                    turn
                }
            },
        };
        let state = self.f.agents.entry(agent).or_default();
        if let Some(id) = m.id.as_deref() {
            // A response's entries follow one another (tool results may come between them) and
            // share one `requestId`; its id again after another response or from another
            // request is not more of it (a log concatenated twice, ids rewritten): a new call,
            // said.
            let request = e.request_id.as_deref();
            let repeat = state
                .by_id
                .get(id)
                .filter(|r| {
                    Some(r.msg) != state.last_reply
                        || r.request
                            .as_deref()
                            .zip(request)
                            .is_some_and(|(a, b)| a != b)
                })
                .map(|r| r.line);
            if let Some(first) = repeat {
                state.repeated_ids += 1;
                if state.repeated_ids <= 20 {
                    self.s.warn(
                        pos,
                        format!(
                            "message.id {id} repeats (first at line {first}) after another \
                             response; read as a new call"
                        ),
                    );
                } else if state.repeated_ids == 21 {
                    self.s.warn(
                        pos,
                        "more message.ids repeat after other responses from here on; each \
                         read as a new call, not listed",
                    );
                }
            } else if let Some(r) = state.by_id.get_mut(id) {
                let mi = r.msg;
                if let Some(slot) = state.plan_slot.as_ref().filter(|p| p.reply == mi) {
                    if let Some(plan) = exit_plan(&parts) {
                        set_plan_reference(&mut self.s.messages[slot.msg], &slot.path, &plan);
                    }
                }
                self.s.messages[mi].parts.extend(parts);
                r.signature += signature;
                r.bad_usage |= bad_usage;
                if let (Some(ci), true) = (r.call, r.bad_usage) {
                    self.s.calls[ci].usage = None;
                } else if let (Some(ci), Some(u)) = (r.call, usage) {
                    let call = &mut self.s.calls[ci];
                    // The final usage wins; before it, the largest streaming snapshot.
                    if final_usage
                        || (!r.final_usage && (call.usage.is_none() || u.output >= r.best))
                    {
                        call.usage = Some(u);
                        r.best = u.output;
                    }
                }
                r.final_usage |= final_usage;
                let (sig, fin) = (r.signature, r.final_usage);
                let out = r.call.and_then(|c| self.s.calls[c].usage).map(|u| u.output);
                set_reply_size(
                    &mut self.s.messages[mi],
                    sig,
                    fin.then_some(out).flatten(),
                    turn_only,
                );
                if let Some(uuid) = e.uuid {
                    self.f.uuid_msg.insert(uuid.into_owned(), mi);
                }
                return;
            }
        }
        state.plan_slot = None;
        if state.deferred.is_none() {
            if let Some(ci) = state.restore.take() {
                if state.files.plan_name.is_none() {
                    state.files.plan_name =
                        self.f
                            .slug
                            .as_deref()
                            .map(|slug| match self.s.agents[agent].id.as_str() {
                                "main" => format!("{slug}.md"),
                                id => format!("{slug}-agent-{id}.md"),
                            });
                }
                let slot = push_restored(self.s, &mut state.files, ci, ts, pos);
                state.plan_slot = slot.map(|(msg, path)| PlanSlot {
                    msg,
                    reply: self.s.messages.len(),
                    path,
                });
            }
        }
        let mi = self.s.messages.len();
        if let Some(slot) = state.plan_slot.as_ref() {
            if let Some(plan) = exit_plan(&parts) {
                set_plan_reference(&mut self.s.messages[slot.msg], &slot.path, &plan);
            }
        }
        self.s.push_message(agent, Role::Assistant, parts, ts, pos);
        state.last_reply = Some(mi);
        let ci = (!synthetic).then(|| {
            self.s.calls.push(Call {
                agent,
                context_end: mi,
                reply: Some(mi),
                usage,
                model: model.clone(),
                timestamp: ts,
                request_id: m.id.as_deref().map(str::to_string),
                source: pos,
            });
            self.s.calls.len() - 1
        });
        if !synthetic && self.s.agents[agent].model.is_none() {
            self.s.agents[agent].model = model;
        }
        set_reply_size(
            &mut self.s.messages[mi],
            signature,
            usage.filter(|_| final_usage).map(|u| u.output),
            turn_only,
        );
        if let Some(id) = m.id {
            let out = usage.map_or(0, |u| u.output);
            state.by_id.insert(
                id.into_owned(),
                Response {
                    msg: mi,
                    call: ci,
                    best: out,
                    final_usage,
                    signature,
                    bad_usage,
                    line: pos.line,
                    request: e.request_id.as_deref().map(str::to_string),
                },
            );
        }
        if let Some(uuid) = e.uuid {
            self.f.uuid_msg.insert(uuid.into_owned(), mi);
        }
    }

    fn user(&mut self, e: Entry<'_>, pos: SourcePos) {
        let agent = self.agent_for(&e);
        let ts = e.timestamp.as_deref().and_then(parse_ms);
        if let (Some(r), Some(m)) = (&e.tool_use_result, &e.message) {
            if let (Some(agent_id), StrOrBlocks::Blocks(blocks)) = (&r.0, &m.content) {
                if let Some(call_id) = blocks.iter().find_map(|b| b.tool_use_id.0.clone()) {
                    self.f.links.push(Link {
                        agent_id: agent_id.clone(),
                        tool_use_id: call_id,
                        pos,
                    });
                }
            }
        }
        let Some(m) = e.message else {
            self.s.warn(pos, "user entry without `message`; skipped");
            return;
        };
        let mut parts = Vec::new();
        let unseen = push_blocks(m.content, &mut parts);
        let is_summary = e.is_compact_summary == Some(true);
        // Tool schemas loaded on demand are in the context from the result that loads them until
        // a compaction drops that result: `compactMetadata.preCompactDiscoveredTools` names the
        // tools loaded before it, but their schemas are not sent again after it (measured on
        // claude-code_posthog-impact, docs/tokens.md "Claude Code": carrying them bent its fit
        // to 4.4 % mean error; without them 0.9 %).
        let tools = unseen.tool_references;
        let message = Message {
            agent,
            role: user_role(&parts),
            parts,
            timestamp: ts,
            flags: MessageFlags {
                is_summary,
                hidden_tokens: tools * TOOL_SCHEMA_TOKENS,
                ..MessageFlags::default()
            },
            source: pos,
        };
        if is_summary {
            let state = self.f.agents.entry(agent).or_default();
            if let (false, Some(ci)) = (state.awaiting.is_empty(), state.pending_compaction) {
                // Entries the compaction kept come after it in the log: the summary waits.
                state.pending_compaction = None;
                state.restore = Some(ci);
                let head = state.head.take();
                state.deferred = Some(Deferred {
                    message,
                    uuid: e.uuid.map(Cow::into_owned),
                    compaction: ci,
                    head,
                });
                self.f.deferring = true;
                return;
            }
        }
        let mi = self.s.messages.len();
        self.s.messages.push(message);
        if let Some(uuid) = e.uuid {
            self.f.uuid_msg.insert(uuid.into_owned(), mi);
        }
        if is_summary {
            let state = self.f.agents.entry(agent).or_default();
            state.restore = Some(match state.pending_compaction {
                Some(ci) => ci,
                None => self.s.compactions.len(),
            });
            match state.pending_compaction.take() {
                Some(ci) => self.s.compactions[ci].summary = Some(mi),
                // A summary without a boundary (hand-edited or older logs): still a compaction.
                None => self.s.compactions.push(RecordedCompaction {
                    agent,
                    at_message: mi,
                    trigger: "unknown".into(),
                    pre_tokens: None,
                    summary: Some(mi),
                    kept_from: None,
                    timestamp: ts,
                    inferred: false,
                    source: pos,
                }),
            }
        }
    }

    /// An `attachment` entry: Claude Code renders it as system-reminder text in the next user
    /// turn, so it is an injected user message of the text it carries (plus the fixed text of
    /// the reminders that carry none). Attachments for the UI alone add nothing.
    fn attachment(&mut self, e: Entry<'_>, pos: SourcePos) {
        let Some(raw) = e.attachment else {
            return;
        };
        let Ok(a) = serde_json::from_str::<serde_json::Value>(raw.get()) else {
            self.s
                .warn(pos, "attachment that is not a JSON object; skipped");
            return;
        };
        let agent = self.agent_for(&e);
        if matches!(
            a.get("type").and_then(serde_json::Value::as_str),
            Some("file" | "compact_file_reference")
        ) {
            // The log writes the files the compaction re-attached (2.1.1xx+).
            self.f.agents.entry(agent).or_default().restore = None;
        }
        let Some((text, fixed)) = attachment_text(&a) else {
            return;
        };
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(Part::Text { text });
        }
        if parts.is_empty() && fixed == 0 {
            return;
        }
        let mi = self.s.messages.len();
        self.s.messages.push(Message {
            agent,
            role: Role::User,
            parts,
            timestamp: e.timestamp.as_deref().and_then(parse_ms),
            flags: MessageFlags {
                injected: true,
                hidden_tokens: fixed,
                ..MessageFlags::default()
            },
            source: pos,
        });
        if let Some(uuid) = e.uuid {
            self.f.uuid_msg.insert(uuid.into_owned(), mi);
        }
    }

    fn system(&mut self, e: Entry<'_>, pos: SourcePos) {
        if e.subtype.as_deref() != Some("compact_boundary") {
            return;
        }
        let agent = self.agent_for(&e);
        let meta = e.compact;
        let kept_from = meta
            .as_ref()
            .and_then(|m| m.preserved.as_ref())
            .and_then(|p| p.head_uuid.as_deref())
            .and_then(|u| self.f.uuid_msg.get(u).copied());
        self.s.compactions.push(RecordedCompaction {
            agent,
            at_message: self.s.messages.len(),
            trigger: meta
                .as_ref()
                .and_then(|m| m.trigger.as_deref())
                .unwrap_or("unknown")
                .to_string(),
            pre_tokens: meta.as_ref().and_then(|m| m.pre_tokens.0),
            summary: None,
            kept_from,
            timestamp: e.timestamp.as_deref().and_then(parse_ms),
            inferred: false,
            source: pos,
        });
        let state = self.f.agents.entry(agent).or_default();
        state.pending_compaction = Some(self.s.compactions.len() - 1);
        state.head = meta
            .as_ref()
            .and_then(|m| m.preserved.as_ref())
            .and_then(|p| p.head_uuid.as_deref())
            .filter(|_| kept_from.is_none())
            .map(str::to_string);
        // A precomputed compaction: the kept entries not read yet are written after it.
        state.awaiting = meta
            .as_ref()
            .and_then(|m| m.preserved_messages.as_ref())
            .map(|p| {
                p.all_uuids
                    .iter()
                    .filter(|u| !self.f.uuid_msg.contains_key(u.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
    }

    /// Puts `agent`'s held-back compaction summary in its place: after the entries it kept.
    fn flush_deferred(&mut self, agent: AgentIdx) {
        let Some(state) = self.f.agents.get_mut(&agent) else {
            return;
        };
        state.awaiting.clear();
        let Some(d) = state.deferred.take() else {
            return;
        };
        self.f.deferring = self.f.agents.values().any(|a| a.deferred.is_some());
        let mi = self.s.messages.len();
        self.s.messages.push(d.message);
        let c = &mut self.s.compactions[d.compaction];
        c.at_message = mi;
        c.summary = Some(mi);
        if let Some(h) = d.head.and_then(|h| self.f.uuid_msg.get(&h).copied()) {
            c.kept_from.get_or_insert(h);
        }
        if let Some(uuid) = d.uuid {
            self.f.uuid_msg.insert(uuid, mi);
        }
    }
}

impl JsonSink for FileSink<'_> {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        self.parsed(from_line(json)?, pos)
    }
    fn entry_str(&mut self, json: &str, pos: SourcePos) -> serde_json::Result<()> {
        self.parsed(serde_json::from_str(json)?, pos)
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.warn_at(pos, message);
    }
}

impl FileSink<'_> {
    fn parsed(&mut self, e: Entry<'_>, pos: SourcePos) -> serde_json::Result<()> {
        if self.f.main {
            if let Some(id) = &e.session_id {
                if self.f.session_id.as_deref() != Some(id) {
                    self.f.session_id = Some(id.to_string());
                }
            }
            if self.f.cwd.is_none() {
                self.f.cwd = e.cwd.as_deref().map(String::from);
            }
        }
        if self.f.slug.is_none() {
            self.f.slug = e.slug.as_deref().map(String::from);
        }
        let kind = e.kind.as_deref().unwrap_or("");
        // An entry of an agent holding a summary back: one the compaction kept goes before the
        // summary, the first other entry after it.
        let mut flush_after = None;
        if self.f.deferring && matches!(kind, "assistant" | "user" | "attachment" | "system") {
            let agent = self.agent_for(&e);
            if let Some(st) = self.f.agents.get_mut(&agent) {
                let before = st.awaiting.len();
                if let Some(u) = e.uuid.as_deref() {
                    st.awaiting.retain(|a| a != u);
                }
                if st.awaiting.len() == before {
                    self.flush_deferred(agent);
                } else if st.awaiting.is_empty() {
                    flush_after = Some(agent);
                }
            }
        }
        match kind {
            "assistant" => self.assistant(e, pos),
            "user" => self.user(e, pos),
            "system" => self.system(e, pos),
            "attachment" => self.attachment(e, pos),
            "progress" => {
                if let (Some(d), Some(tool)) = (&e.data, &e.parent_tool_use_id) {
                    if d.kind.as_deref() == Some("agent_progress") {
                        if let Some(a) = &d.agent_id {
                            self.f.links.push(Link {
                                agent_id: a.to_string(),
                                tool_use_id: tool.to_string(),
                                pos,
                            });
                        }
                    }
                }
            }
            "ai-title" => {
                if let Some(t) = e.ai_title.0 {
                    self.f.title = Some(t);
                }
            }
            "custom-title" => {
                if let Some(t) = e.custom_title.0 {
                    self.f.custom_title = Some(t);
                }
            }
            "summary" => {
                if self.f.title.is_none() {
                    self.f.title = e.summary.0;
                }
            }
            // file-history-snapshot, queue-operation, permission-mode, last-prompt, …:
            // bookkeeping of the UI, not part of any context.
            _ => {}
        }
        if let Some(agent) = flush_after {
            self.flush_deferred(agent);
        }
        Ok(())
    }

    fn warn_at(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

/// Reads one Claude Code session: the main file and every subagent file beside it.
pub fn read(path: &Path) -> Result<Session> {
    let mut live = Live::new(path);
    live.read_file(0, path)?;
    for (file, p) in live.discover() {
        live.read_file(file, &p)?;
    }
    live.finish()?;
    Ok(live.s)
}

const WHAT: &str = "a Claude Code entry (JSON object)";

/// A Claude Code session being read: the main file and the subagent files found so far, each with
/// the state its reading needs to go on, so that `formats::follow` can feed lines appended later.
pub(crate) struct Live {
    s: Session,
    hasher: blake3::Hasher,
    path: PathBuf,
    /// One per `s.source.files` entry, the main file first.
    files: Vec<FileState>,
    /// Subagent id → the tool call that spawned it (first mention in the main file wins).
    spawners: HashMap<String, (String, SourcePos)>,
    /// Main-file links already merged into `spawners`.
    links_seen: usize,
    /// What `finish` added to the session, taken back by `unfinish` before more lines are read:
    /// warnings from this index on, and the calls' reader order when they were sorted by time.
    raw_warnings: usize,
    order: Option<Vec<usize>>,
}

/// The main file's agent.
const MAIN: AgentIdx = 0;

impl Live {
    pub(crate) fn new(path: &Path) -> Self {
        let mut s = Session::default();
        s.source.format = ID.to_string();
        let main = s.agent_index("main");
        debug_assert_eq!(main, MAIN);
        s.source.files.push(path.display().to_string());
        Live {
            s,
            hasher: blake3::Hasher::new(),
            path: path.to_path_buf(),
            files: vec![FileState::new(MAIN, true)],
            spawners: HashMap::default(),
            links_seen: 0,
            raw_warnings: 0,
            order: None,
        }
    }

    /// Reads source file `file` from `path` to its end.
    fn read_file(&mut self, file: usize, path: &Path) -> Result<()> {
        let f = fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut input = std::io::BufReader::with_capacity(256 * 1024, f);
        self.feed(file, &mut input, 0)
            .map_err(|e| Error::io(path, e))?;
        Ok(())
    }
}

impl LiveLog for Live {
    fn feed(
        &mut self,
        file: usize,
        input: &mut dyn std::io::BufRead,
        line: u32,
    ) -> std::io::Result<u32> {
        let mut lines = LineReader::resume(input, &mut self.hasher, line);
        let mut sink = FileSink {
            s: &mut self.s,
            f: &mut self.files[file],
        };
        read_jsonl(&mut lines, file as u32, WHAT, &mut sink)?;
        self.s.source.bytes += lines.bytes();
        Ok(lines.line_no())
    }

    /// Subagent files beside the main file that are not read yet, in name order, each registered
    /// as a source file (the index returned) of a subagent of the main agent.
    fn discover(&mut self) -> Vec<(usize, PathBuf)> {
        let dir = subagent_dir(&self.path);
        let mut new: Vec<PathBuf> = match fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "jsonl")
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .and_then(|n| n.strip_prefix("agent-"))
                            // The summarizer's own call when the session was compacted: not an
                            // agent of the session.
                            .is_some_and(|n| !n.starts_with("acompact"))
                        && !self.s.source.files.contains(&p.display().to_string())
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        new.sort();
        new.into_iter()
            .map(|p| {
                let stem = p.file_stem().and_then(|n| n.to_str()).unwrap_or("");
                let idx = self.s.agent_index(stem.trim_start_matches("agent-"));
                self.s.agents[idx].parent = Some(MAIN);
                self.s.source.files.push(p.display().to_string());
                self.files.push(FileState::new(idx, false));
                (self.files.len() - 1, p)
            })
            .collect()
    }

    /// Completes the session from what has been read: subagent names and spawning calls, warnings
    /// for subagents without a file, id, title, hash, and calls in time order.
    fn finish(&mut self) -> Result<()> {
        // A summary still held back (the log ends before the entries its compaction kept).
        for f in &mut self.files {
            if f.deferring {
                let agents: Vec<AgentIdx> = f.agents.keys().copied().collect();
                let mut sink = FileSink { s: &mut self.s, f };
                for a in agents {
                    sink.flush_deferred(a);
                }
            }
        }
        self.raw_warnings = self.s.warnings.len();
        let main = &self.files[0];
        for l in &main.links[self.links_seen..] {
            self.spawners
                .entry(l.agent_id.clone())
                .or_insert((l.tool_use_id.clone(), l.pos));
        }
        self.links_seen = main.links.len();
        for f in &self.files[1..] {
            if self.s.agents[f.agent].spawned_by.is_some() {
                continue;
            }
            let id = self.s.agents[f.agent].id.clone();
            let spawned_by = self.spawners.get(&id).map(|(t, _)| t.clone());
            let name = spawned_by
                .as_deref()
                .and_then(|t| task_name(&self.s, MAIN, t))
                .unwrap_or(id);
            let a = &mut self.s.agents[f.agent];
            a.spawned_by = spawned_by;
            a.name = name;
        }
        let found: Vec<&str> = self.files[1..]
            .iter()
            .map(|f| self.s.agents[f.agent].id.as_str())
            .collect();
        let mut missing: Vec<_> = self
            .spawners
            .iter()
            .filter(|(id, _)| !found.contains(&id.as_str()))
            .map(|(id, (tool, pos))| (*pos, id.clone(), tool.clone()))
            .collect();
        missing.sort_by_key(|(pos, _, _)| (pos.file, pos.line));
        let dir = subagent_dir(&self.path);
        for (pos, id, tool) in missing {
            self.s.warn(
                pos,
                format!(
                    "subagent {id} (spawned by tool call {tool}) has no file {}: its calls are not in this session",
                    dir.join(format!("agent-{id}.jsonl")).display()
                ),
            );
        }
        let main = &self.files[0];
        self.s.id = main
            .session_id
            .clone()
            .unwrap_or_else(|| file_stem(&self.path));
        self.s.title = main.custom_title.clone().or_else(|| main.title.clone());
        self.s.project = main.cwd.clone();
        self.s.source.hash = self.hasher.clone().finalize().to_hex().to_string();
        if self.s.agents.len() > 1 {
            self.order = Some(sort_calls_by_time(&mut self.s));
        }
        Ok(())
    }

    /// Takes back what `finish` added, so that the readers' call indices hold again.
    fn unfinish(&mut self) {
        self.s.warnings.truncate(self.raw_warnings);
        if let Some(order) = self.order.take() {
            let mut raw: Vec<Option<Call>> = (0..order.len()).map(|_| None).collect();
            for (c, r) in self.s.calls.drain(..).zip(order) {
                raw[r] = Some(c);
            }
            self.s.calls = raw.into_iter().flatten().collect();
        }
    }

    /// For each call of the finished session, its index in reading order.
    fn call_order(&self) -> Option<&[usize]> {
        self.order.as_deref()
    }

    fn session(&self) -> &Session {
        &self.s
    }

    fn session_mut(&mut self) -> &mut Session {
        &mut self.s
    }
}

fn subagent_dir(path: &Path) -> PathBuf {
    path.with_extension("").join("subagents")
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `subagent_type: description` from the Task/Agent call that spawned a subagent.
fn task_name(s: &Session, main: AgentIdx, tool_use_id: &str) -> Option<String> {
    let args = s
        .messages
        .iter()
        .filter(|m| m.agent == main && m.role == Role::Assistant)
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match p {
            Part::ToolCall { id, args, .. } if id == tool_use_id => Some(args),
            _ => None,
        })?;
    #[derive(Deserialize)]
    struct TaskArgs {
        #[serde(default)]
        subagent_type: LenientStr,
        #[serde(default)]
        description: LenientStr,
    }
    let a: TaskArgs = serde_json::from_str(args).ok()?;
    match (a.subagent_type.0, a.description.0) {
        (Some(t), Some(d)) => Some(format!("{t}: {d}")),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// Calls of all agents in time order; one agent's calls keep their log order even if its clock
/// steps back, so `context_end` never decreases within an agent.
/// Returns, for each call in its new place, its index before sorting.
pub(crate) fn sort_calls_by_time(s: &mut Session) -> Vec<usize> {
    let mut last: HashMap<AgentIdx, i64> = HashMap::default();
    let mut keyed: Vec<(i64, usize, Call)> = s
        .calls
        .drain(..)
        .enumerate()
        .map(|(i, c)| {
            let prev = last.get(&c.agent).copied().unwrap_or(i64::MIN);
            let k = c.timestamp.map_or(prev, |t| t.max(prev));
            last.insert(c.agent, k);
            (k, i, c)
        })
        .collect();
    keyed.sort_by_key(|(k, i, _)| (*k, *i));
    let order = keyed.iter().map(|(_, i, _)| *i).collect();
    s.calls = keyed.into_iter().map(|(_, _, c)| c).collect();
    order
}

/// Does this first JSON object look like a Claude Code entry?
pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    const KINDS: &[&str] = &[
        "file-history-snapshot",
        "queue-operation",
        "ai-title",
        "custom-title",
        "last-prompt",
        "permission-mode",
        "attachment",
    ];
    let kind = o.get("type").and_then(|t| t.as_str()).unwrap_or("");
    o.contains_key("sessionId")
        || o.contains_key("parentUuid")
        || KINDS.contains(&kind)
        || (kind == "summary" && o.contains_key("leafUuid"))
}
