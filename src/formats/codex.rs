//! OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
//!
//! Lines `{timestamp, type, payload}`. The model's output items of one response (reasoning,
//! assistant message, function calls) arrive as separate `response_item` lines followed by an
//! `event_msg` `token_count` whose `last_token_usage` is that response's usage: the items become one
//! assistant message, the token_count closes the call. Codex repeats the last token_count when a new
//! turn starts; a token_count whose running total did not move is that repetition, not a call.

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::de::{bad_usage, data_url_image, Count, LenientStr, NotACount, StrOrBlocks};
use super::follow::{new_session, JsonlLive, SessionSink};
use super::lines::JsonSink;
use super::time::parse_ms;
use crate::model::*;
use crate::Result;

pub const ID: &str = "codex";

/// Tokens of one web search's results, which the rollout does not write: the drop in recorded
/// input at the next user message of codex-cli_gildore-arena (6 searches, −21.3k net of the new
/// turn's messages) is 3.3k per search (docs/tokens.md, "Codex").
pub const WEB_SEARCH_TOKENS: u64 = 3_300;

/// Tokens of the encrypted summary a remote compaction leaves in `replacement_history` (a
/// `compaction` item): its text is never in the rollout. Measured on codex-cli_agentv (0.142.2,
/// two compactions): the offset of the calls after each compaction against those before it,
/// 5.3k and 5.4k.
pub const COMPACTION_SUMMARY_TOKENS: u64 = 5_300;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<Payload<'a>>,
}

/// Every payload shape in one flat struct: each line fills the fields its type has. The
/// response_item fields are also what an OpenAI Responses request's `input` items hold (the HTTP
/// capture reader reads those with this struct).
#[derive(Deserialize)]
pub(crate) struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(crate) kind: Option<Cow<'a, str>>,
    // session_meta
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    base_instructions: Option<BaseInstructions>,
    /// The folder Codex ran in (`Session::project`).
    #[serde(default)]
    cwd: LenientStr,
    // turn_context
    #[serde(default)]
    model: LenientStr,
    // response_item: message / reasoning / calls / outputs
    #[serde(default)]
    pub(crate) role: LenientStr,
    #[serde(borrow, default)]
    pub(crate) content: StrOrBlocks<Item<'a>>,
    #[serde(default)]
    pub(crate) summary: StrOrBlocks<Item<'a>>,
    #[serde(default)]
    pub(crate) name: LenientStr,
    #[serde(default)]
    pub(crate) arguments: LenientStr,
    #[serde(borrow, default)]
    pub(crate) input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) action: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) call_id: LenientStr,
    #[serde(borrow, default)]
    pub(crate) output: Option<&'a RawValue>,
    // event_msg token_count
    #[serde(default)]
    info: Option<TokenInfo>,
    // compacted
    #[serde(default)]
    message: LenientStr,
    #[serde(borrow, default)]
    replacement_history: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct BaseInstructions {
    #[serde(default)]
    text: LenientStr,
}

#[derive(Deserialize)]
pub(crate) struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    text: LenientStr,
    #[serde(default)]
    image_url: LenientStr,
}

#[derive(Deserialize)]
struct TokenInfo {
    #[serde(default)]
    total_token_usage: Option<TokenUsage>,
    #[serde(default)]
    last_token_usage: Option<TokenUsage>,
    /// The window Codex runs the model with (what it compacts against).
    #[serde(default)]
    model_context_window: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
struct TokenUsage {
    #[serde(default)]
    input_tokens: CountEq,
    #[serde(default)]
    cached_input_tokens: CountEq,
    #[serde(default)]
    output_tokens: CountEq,
    /// Of `output_tokens`, the response's reasoning (its `reasoning` items carry it encrypted).
    #[serde(default)]
    reasoning_output_tokens: CountEq,
    #[serde(default)]
    total_tokens: CountEq,
}

/// A repeated token_count is recognized by its running totals (input, cached, output, total);
/// the reasoning figure is left out: Codex does not always repeat it.
impl PartialEq for TokenUsage {
    fn eq(&self, o: &TokenUsage) -> bool {
        (
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
            self.total_tokens,
        ) == (
            o.input_tokens,
            o.cached_input_tokens,
            o.output_tokens,
            o.total_tokens,
        )
    }
}

#[derive(Deserialize, Clone, Copy, PartialEq, Default)]
#[serde(from = "Count")]
struct CountEq(u64, Option<NotACount>);

impl From<Count> for CountEq {
    fn from(c: Count) -> Self {
        CountEq(c.get(), c.1)
    }
}

impl TokenUsage {
    /// The warning for a figure that is not a token count (`de::bad_usage`).
    fn bad(&self) -> Option<String> {
        bad_usage([
            ("input_tokens", self.input_tokens.1),
            ("cached_input_tokens", self.cached_input_tokens.1),
            ("output_tokens", self.output_tokens.1),
            ("reasoning_output_tokens", self.reasoning_output_tokens.1),
            ("total_tokens", self.total_tokens.1),
        ])
    }

    /// Codex's input includes the cached part; the model's `input` is the uncached rest.
    fn to_usage(self) -> Usage {
        let cached = self.cached_input_tokens.0.min(self.input_tokens.0);
        Usage {
            input: self.input_tokens.0 - cached,
            output: self.output_tokens.0,
            cache_read: cached,
            ..Usage::default()
        }
    }
}

pub(crate) struct Sink {
    s: Session,
    model: Option<String>,
    /// The assistant message the current response is filling, if its items are still arriving.
    open_reply: Option<MsgIdx>,
    /// First message of the response not yet closed by a token_count.
    pending_reply: Option<MsgIdx>,
    last_total: Option<TokenUsage>,
    last_context: Option<u64>,
    calls_at_last_compaction: Option<usize>,
    /// Web searches of the response being read: their results are in the model's context, not in
    /// the rollout.
    web_searches: u64,
}

impl Sink {
    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.open_reply = None;
        self.s.push_message(0, role, parts, ts, pos)
    }

    /// Output items of the model join the reply being built, or start one.
    fn reply_part(&mut self, part: Part, ts: Option<i64>, pos: SourcePos) {
        match self.open_reply {
            Some(mi) => self.s.messages[mi].parts.push(part),
            None => {
                let mi = self.push(Role::Assistant, vec![part], ts, pos);
                self.open_reply = Some(mi);
                self.pending_reply.get_or_insert(mi);
            }
        }
    }

    fn response_item(&mut self, p: Payload<'_>, ts: Option<i64>, pos: SourcePos) {
        let kind = p.kind.as_deref().unwrap_or("");
        match kind {
            "message" => {
                let role = match p.role.0.as_deref() {
                    Some("assistant") => Role::Assistant,
                    Some("user") => Role::User,
                    Some("system" | "developer") => Role::System,
                    other => {
                        self.s.warn(
                            pos,
                            format!("message with unknown role {other:?}; read as user"),
                        );
                        Role::User
                    }
                };
                let parts = items_to_parts(p.content);
                if role == Role::Assistant {
                    for part in parts {
                        self.reply_part(part, ts, pos);
                    }
                    if self.open_reply.is_none() {
                        // An assistant message with no content still answers a request.
                        let mi = self.push(Role::Assistant, Vec::new(), ts, pos);
                        self.open_reply = Some(mi);
                        self.pending_reply.get_or_insert(mi);
                    }
                } else {
                    self.push(role, parts, ts, pos);
                }
            }
            "reasoning" => {
                let text = join_text(p.summary);
                if !text.is_empty() {
                    self.reply_part(Part::Thinking { text }, ts, pos);
                }
            }
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
            | "tool_search_call" => {
                if kind == "web_search_call" {
                    self.web_searches += 1;
                }
                let args = match (p.arguments.0, p.input, p.action) {
                    (Some(a), _, _) => a,
                    (None, Some(raw), _) => raw_text(raw),
                    (None, None, Some(raw)) => raw.get().to_string(),
                    _ => "{}".to_string(),
                };
                let name = p
                    .name
                    .0
                    .unwrap_or_else(|| kind.trim_end_matches("_call").to_string());
                self.reply_part(
                    Part::ToolCall {
                        id: p.call_id.0.unwrap_or_default(),
                        name,
                        args,
                    },
                    ts,
                    pos,
                );
            }
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "tool_search_call_output" => {
                let (content, is_error) = output_text(p.output);
                let mut parts = vec![Part::ToolResult {
                    call_id: p.call_id.0.unwrap_or_default(),
                    content,
                    is_error,
                }];
                // Images a tool returned (`input_image` items: view_image, screenshots) are in
                // the model's input beside the text.
                parts.extend(output_images(p.output));
                self.push(Role::Tool, parts, ts, pos);
            }
            "compaction" | "compaction_summary" => {
                self.compacted(None, Some(Vec::new()), ts, pos);
            }
            _ => {}
        }
    }

    fn token_count(&mut self, info: TokenInfo, ts: Option<i64>, pos: SourcePos) {
        if let Some(w) = info.model_context_window.filter(|&w| w > 0) {
            self.s.context_window = Some(w);
        }
        let Some(total) = info.total_token_usage else {
            return;
        };
        if self.last_total == Some(total) {
            return;
        }
        self.last_total = Some(total);
        let Some(last) = info.last_token_usage else {
            self.s.warn(
                pos,
                "token_count without last_token_usage; no call recorded",
            );
            return;
        };
        let reply = self.pending_reply.take();
        self.open_reply = None;
        if self.web_searches > 0 {
            // The searches ran inside this response: their results are in its own input and in
            // the calls after it until the next user message. They ride on the message just
            // before the reply (the request's last message), so nothing is inserted or moved.
            let n = std::mem::take(&mut self.web_searches);
            let tokens = n * WEB_SEARCH_TOKENS;
            let before = reply
                .and_then(|r| r.checked_sub(1))
                .filter(|&m| self.s.messages[m].flags.recorded_tokens.is_none());
            let m = match before {
                Some(m) => m,
                // No such message: from the next call on, as a message of its own.
                None => self.push(
                    Role::Tool,
                    vec![Part::Text {
                        text: format!("[results of {n} web search(es): not in the rollout]"),
                    }],
                    ts,
                    pos,
                ),
            };
            let f = &mut self.s.messages[m].flags;
            f.hidden_tokens += tokens;
            f.hidden_until_user = true;
        }
        if let Some(r) = reply {
            self.size_reply(r, last);
        }
        let usage = match last.bad() {
            Some(why) => {
                self.s.warn(pos, why);
                None
            }
            None => Some(last.to_usage()),
        };
        self.last_context = Some(last.input_tokens.0.saturating_add(last.output_tokens.0));
        self.s.calls.push(Call {
            agent: 0,
            context_end: reply.unwrap_or(self.s.messages.len()),
            reply,
            usage,
            model: self.model.clone(),
            timestamp: reply.and_then(|r| self.s.messages[r].timestamp).or(ts),
            request_id: None,
            source: pos,
        });
    }

    /// The response's output items are in the context at the size the provider recorded: the
    /// first assistant message of the response carries its `output_tokens` (later ones are
    /// inside that figure); its reasoning stays until the next user message.
    fn size_reply(&mut self, first: MsgIdx, last: TokenUsage) {
        let output = last.output_tokens.0;
        let reasoning = last.reasoning_output_tokens.0.min(output);
        let mut first_seen = false;
        for m in &mut self.s.messages[first..] {
            if m.role != Role::Assistant {
                continue;
            }
            let f = &mut m.flags;
            if first_seen {
                f.recorded_tokens = Some(0);
                continue;
            }
            first_seen = true;
            f.recorded_tokens = Some(output);
            f.hidden_tokens = reasoning;
            f.hidden_until_user = reasoning > 0;
        }
    }

    /// A compaction: `message` is the summary; `replacement_history`, when written, is the whole
    /// history the agent continued with.
    fn compacted(
        &mut self,
        summary: Option<String>,
        replacement: Option<Vec<&RawValue>>,
        ts: Option<i64>,
        pos: SourcePos,
    ) {
        // `compacted` and `context_compacted` describe the same event.
        if self.calls_at_last_compaction == Some(self.s.calls.len()) {
            if let (Some(text), Some(c)) = (summary, self.s.compactions.last()) {
                if c.summary.is_none() {
                    let at = self.s.messages.len();
                    let mi = self.push(Role::User, vec![Part::Text { text }], ts, pos);
                    self.s.messages[mi].flags.is_summary = true;
                    let c = self.s.compactions.last_mut().expect("checked above");
                    c.summary = Some(mi);
                    if c.at_message > at {
                        c.at_message = at;
                    }
                }
            }
            return;
        }
        self.open_reply = None;
        let at = self.s.messages.len();
        let mut summary_idx = None;
        for raw in replacement.unwrap_or_default() {
            if let Ok(p) = serde_json::from_str::<Payload<'_>>(raw.get()) {
                if p.kind.as_deref() == Some("message") {
                    let role = match p.role.0.as_deref() {
                        Some("assistant") => Role::Assistant,
                        Some("system" | "developer") => Role::System,
                        _ => Role::User,
                    };
                    let parts = items_to_parts(p.content);
                    let is_summary = summary.as_deref().is_some_and(|s| {
                        !s.is_empty()
                            && parts
                                .iter()
                                .any(|x| matches!(x, Part::Text { text } if text.contains(s)))
                    });
                    let mi = self.push(role, parts, ts, pos);
                    if is_summary {
                        self.s.messages[mi].flags.is_summary = true;
                        summary_idx = Some(mi);
                    }
                } else if matches!(p.kind.as_deref(), Some("compaction" | "compaction_summary")) {
                    // The summary the server wrote, sent back encrypted: in the context, its
                    // text nowhere in the rollout.
                    let mi = self.push(
                        Role::User,
                        vec![Part::Text {
                            text: "[compaction summary: encrypted, not in the rollout]".into(),
                        }],
                        ts,
                        pos,
                    );
                    let f = &mut self.s.messages[mi].flags;
                    f.is_summary = true;
                    f.recorded_tokens = Some(COMPACTION_SUMMARY_TOKENS);
                    f.hidden_tokens = COMPACTION_SUMMARY_TOKENS;
                    summary_idx.get_or_insert(mi);
                }
            }
        }
        if summary_idx.is_none() {
            if let Some(text) = summary.filter(|t| !t.is_empty()) {
                let mi = self.push(Role::User, vec![Part::Text { text }], ts, pos);
                self.s.messages[mi].flags.is_summary = true;
                summary_idx = Some(mi);
            }
        }
        self.s.compactions.push(RecordedCompaction {
            agent: 0,
            at_message: at,
            trigger: "unknown".into(),
            pre_tokens: self.last_context,
            summary: summary_idx,
            kept_from: None,
            timestamp: ts,
            inferred: false,
            source: pos,
        });
        self.calls_at_last_compaction = Some(self.s.calls.len());
    }
}

fn raw_text(raw: &RawValue) -> String {
    serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_string())
}

/// Tool output: a string, or `{content, success}`, or a list of content items.
pub(crate) fn output_text(raw: Option<&RawValue>) -> (String, bool) {
    let Some(raw) = raw else {
        return (String::new(), false);
    };
    #[derive(Deserialize)]
    struct Obj {
        #[serde(default)]
        content: LenientStr,
        #[serde(default)]
        output: LenientStr,
        #[serde(default)]
        success: Option<bool>,
    }
    if let Ok(s) = serde_json::from_str::<String>(raw.get()) {
        return (s, false);
    }
    if let Ok(o) = serde_json::from_str::<Obj>(raw.get()) {
        if let Some(c) = o.content.0.or(o.output.0) {
            return (c, o.success == Some(false));
        }
    }
    if let Ok(items) = serde_json::from_str::<StrOrBlocks<Item<'_>>>(raw.get()) {
        return (join_text(items), false);
    }
    (raw.get().to_string(), false)
}

/// The `input_image` items of a tool output given as a list of content items.
pub(crate) fn output_images(raw: Option<&RawValue>) -> Vec<Part> {
    match raw.and_then(|r| serde_json::from_str::<StrOrBlocks<Item<'_>>>(r.get()).ok()) {
        Some(items @ StrOrBlocks::Blocks(_)) => items_to_parts(items)
            .into_iter()
            .filter(|p| matches!(p, Part::Image { .. }))
            .collect(),
        _ => Vec::new(),
    }
}

pub(crate) fn items_to_parts(content: StrOrBlocks<Item<'_>>) -> Vec<Part> {
    match content {
        StrOrBlocks::None => Vec::new(),
        StrOrBlocks::Str(text) => vec![Part::Text { text }],
        StrOrBlocks::Blocks(items) => items
            .into_iter()
            .filter_map(|i| match i.kind.as_deref() {
                Some("input_image") => {
                    let (media_type, bytes) =
                        data_url_image(i.image_url.0.as_deref().unwrap_or(""));
                    Some(Part::Image { media_type, bytes })
                }
                _ => i.text.0.map(|text| Part::Text { text }),
            })
            .collect(),
    }
}

pub(crate) fn join_text(content: StrOrBlocks<Item<'_>>) -> String {
    match content {
        StrOrBlocks::None => String::new(),
        StrOrBlocks::Str(s) => s,
        StrOrBlocks::Blocks(items) => items
            .into_iter()
            .filter_map(|i| i.text.0)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

impl JsonSink for Sink {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let l: Line<'_> = serde_json::from_slice(json)?;
        let ts = l.timestamp.as_deref().and_then(parse_ms);
        let Some(p) = l.payload else {
            return Ok(());
        };
        match l.kind.as_deref().unwrap_or("") {
            "session_meta" => {
                if let Some(id) = p.id.0 {
                    self.s.id = id;
                }
                if let Some(cwd) = p.cwd.0 {
                    self.s.project = Some(cwd);
                }
                if let Some(text) = p.base_instructions.and_then(|b| b.text.0) {
                    self.push(Role::System, vec![Part::Text { text }], ts, pos);
                }
            }
            "turn_context" => {
                if let Some(m) = p.model.0 {
                    if self.s.agents[0].model.is_none() {
                        self.s.agents[0].model = Some(m.clone());
                    }
                    self.model = Some(m);
                }
            }
            "response_item" => self.response_item(p, ts, pos),
            "compacted" => self.compacted(p.message.0, p.replacement_history, ts, pos),
            "event_msg" => match p.kind.as_deref() {
                Some("token_count") => {
                    if let Some(info) = p.info {
                        self.token_count(info, ts, pos);
                    }
                }
                Some("context_compacted") => self.compacted(None, None, ts, pos),
                // user_message / agent_message repeat response items; the rest is UI progress.
                _ => {}
            },
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

/// A rollout being read, kept between reads so that `formats::follow` can feed appended lines.
pub(crate) type Live = JsonlLive<Sink>;

impl Live {
    pub(crate) fn new(path: &Path) -> Self {
        let mut s = new_session(path, ID);
        s.agent_index("main");
        let sink = Sink {
            s,
            model: None,
            open_reply: None,
            pending_reply: None,
            last_total: None,
            last_context: None,
            calls_at_last_compaction: None,
            web_searches: 0,
        };
        JsonlLive::start(
            path,
            sink,
            "a Codex rollout line {timestamp, type, payload}",
        )
    }
}

impl SessionSink for Sink {
    fn session(&self) -> &Session {
        &self.s
    }
    fn session_mut(&mut self) -> &mut Session {
        &mut self.s
    }

    /// The last response has no token_count (yet, or ever: an interrupted run): a provisional
    /// call without usage, taken back when more lines arrive.
    fn finish(&mut self) -> bool {
        let Some(reply) = self.pending_reply else {
            return false;
        };
        let s = &mut self.s;
        s.calls.push(Call {
            agent: 0,
            context_end: reply,
            reply: Some(reply),
            usage: None,
            model: self.model.clone(),
            timestamp: s.messages[reply].timestamp,
            request_id: None,
            source: s.messages[reply].source,
        });
        true
    }

    fn unfinish(&mut self) {
        self.s.calls.pop();
    }
}

pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    const KINDS: &[&str] = &[
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
    ];
    o.contains_key("payload")
        && o.get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| KINDS.contains(&t))
}
