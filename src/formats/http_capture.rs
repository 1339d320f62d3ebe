//! HTTP captures of model APIs: one line per exchange `{request, response, error, id, timestamp}`
//! as a recording proxy writes them (llm-trace and the like). Request bodies are Anthropic
//! Messages, OpenAI chat completions or Gemini `contents`; the response is the JSON body or, for
//! streams, its SSE lines (`sse_lines`), whose `message_start` / `message_delta` events carry
//! Anthropic's usage.
//!
//! Every request holds the exact context of its call, so the session is built to reproduce it:
//! successive requests of one agent share a prefix and append to it. The reader reads the file
//! twice. The first pass hashes each request's messages and builds the tree of requests (the parent
//! of a request is the latest earlier one of the same kind — same system prompt and tools — whose
//! messages, plus its reply, begin the request). The second pass turns the tree into agents:
//! - a request that extends its parent appends the new messages to the parent's agent;
//! - a one-off request that forks an agent's history while the agent goes on without it (Claude
//!   Code's prompt suggestions, a compaction request) is a side call of a side agent;
//! - any other request that does not extend what its agent last sent (the client rewrote or cut
//!   its history, a resumed conversation, a new conversation of the same kind) restarts its agent:
//!   a recorded compaction with trigger `restart`, after which the request's messages are the
//!   agent's whole context.
//!
//! The system prompt (outside the messages in the Anthropic, Gemini and Responses APIs) and the
//! tool schemas are the request's fixed part: one system message at the start of each agent's
//! context holds them (`fixed_part`), so that the context is the whole request
//! (`Session::whole_requests`) and nothing is left for a calibrated overhead to stand for.
//! Token-counting requests (`count_tokens`, whose response holds only `input_tokens`) are not
//! model calls and are skipped.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::claude_code::{push_blocks, user_role, ApiUsage, Block};
use super::codex::Payload;
use super::de::{bad_usage, base64_len, Count, LenientStr, StrOrBlocks};
use super::lines::{read_jsonl, JsonSink, LineReader};
use super::openai::{convert as openai_convert, OaMessage, OaUsage};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "http-capture";

/// The three request bodies this reader understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
    /// OpenAI's Responses API (`input` items; what Codex sends).
    Responses,
    Gemini,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
    #[serde(default)]
    timestamp: LenientStr,
    #[serde(default)]
    id: LenientStr,
}

/// The keys that tell the three APIs apart.
#[derive(Deserialize, Default)]
struct Probe {
    #[serde(default)]
    contents: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    input: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    system: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    choices: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    candidates: Option<serde::de::IgnoredAny>,
    #[serde(rename = "type", default)]
    kind: LenientStr,
    #[serde(default)]
    sse_lines: Option<Vec<String>>,
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    content: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
}

/// One exchange, decoded.
struct Exchange {
    /// The request's messages: the call's context.
    messages: Vec<(Role, Vec<Part>)>,
    /// System prompt text (Anthropic `system`, Gemini `systemInstruction`, or a leading system
    /// message of OpenAI) — for telling agents apart, not part of `messages` unless the API puts
    /// it there.
    system: String,
    /// The system prompt where the API keeps it outside the messages (Anthropic `system`,
    /// Gemini `systemInstruction`, Responses `instructions`), as parts.
    system_parts: Vec<Part>,
    /// Names of the declared tools.
    tools: Vec<String>,
    /// The declared tools, each as the JSON text the request sent.
    tool_schemas: Vec<String>,
    reply: Option<Vec<Part>>,
    usage: Option<Usage>,
    /// Why the response's usage was dropped (a figure that is not a token count).
    usage_bad: Option<String>,
    model: Option<String>,
    request_id: Option<String>,
    timestamp: Option<i64>,
    /// The output limit the request asked for (`max_tokens`, `max_completion_tokens`,
    /// `max_output_tokens`, Gemini `generationConfig.maxOutputTokens`).
    max_output: Option<u64>,
    /// Gemini: the reply carries a `thoughtSignature`, and the thought tokens the response
    /// recorded (`thoughtsTokenCount`): the context holds them until the next user message.
    reply_signed: bool,
    reply_thoughts: u64,
    /// A token-counting request: no model call.
    count_only: bool,
    /// Gemini: the call numbering of the request, continued by the reply.
    reply_ids: Option<GmIds>,
}

impl Exchange {
    fn set_usage(&mut self, u: std::result::Result<Usage, String>) {
        (self.usage, self.usage_bad) = match u {
            Ok(u) => (Some(u), None),
            Err(why) => (None, Some(why)),
        };
    }
}

/// Decodes one capture line. `Err` says what was expected.
fn decode(json: &[u8]) -> std::result::Result<Exchange, String> {
    let line: Line<'_> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let request = line
        .request
        .ok_or("expected a captured exchange with a `request` body")?;
    let req_probe: Probe = serde_json::from_str(request.get()).unwrap_or_default();
    let (resp_probe, response) = match line.response {
        Some(r) if r.get().starts_with('{') => (
            serde_json::from_str::<Probe>(r.get()).unwrap_or_default(),
            Some(r),
        ),
        _ => (Probe::default(), None),
    };
    let sse = resp_probe.sse_lines.as_deref().unwrap_or(&[]);
    let sse_has = |needle: &str| sse.iter().any(|l| l.contains(needle));
    let api = if req_probe.contents.is_some() || resp_probe.candidates.is_some() {
        Api::Gemini
    } else if req_probe.input.is_some() {
        Api::Responses
    } else if resp_probe.choices.is_some() || sse_has("\"choices\"") {
        Api::OpenAi
    } else if req_probe.system.is_some()
        || resp_probe.kind.0.as_deref() == Some("message")
        || sse_has("message_start")
    {
        Api::Anthropic
    } else {
        guess_api(request.get())
    };
    let mut x = Exchange {
        messages: Vec::new(),
        system: String::new(),
        system_parts: Vec::new(),
        tools: Vec::new(),
        tool_schemas: Vec::new(),
        reply: None,
        usage: None,
        usage_bad: None,
        model: None,
        request_id: line.id.0,
        timestamp: line.timestamp.0.as_deref().and_then(parse_ms),
        max_output: None,
        reply_signed: false,
        reply_thoughts: 0,
        count_only: false,
        reply_ids: None,
    };
    let counting_only = resp_probe.input_tokens.0.is_some()
        && resp_probe.content.is_none()
        && resp_probe.usage.is_none()
        && resp_probe.choices.is_none()
        && resp_probe.candidates.is_none();
    if counting_only {
        x.count_only = true;
        return Ok(x);
    }
    match api {
        Api::Anthropic => anthropic_request(request.get(), &mut x)?,
        Api::OpenAi => openai_request(request.get(), &mut x)?,
        Api::Gemini => gemini_request(request.get(), &mut x)?,
        Api::Responses => responses_request(request.get(), &mut x)?,
    }
    if let Some(r) = response {
        match (api, resp_probe.sse_lines) {
            (Api::Anthropic, Some(lines)) => anthropic_stream(&lines, &mut x),
            (Api::Anthropic, None) => anthropic_response(r.get(), &mut x),
            (Api::OpenAi, Some(lines)) => openai_stream(&lines, &mut x),
            (Api::OpenAi, None) => openai_response(r.get(), &mut x),
            (Api::Gemini, Some(lines)) => {
                for data in sse_data(&lines) {
                    gemini_response(data, &mut x);
                }
            }
            (Api::Gemini, None) => gemini_response(r.get(), &mut x),
            (Api::Responses, Some(lines)) => responses_stream(&lines, &mut x),
            (Api::Responses, None) => responses_response(r.get(), &mut x),
        }
    }
    Ok(x)
}

/// A request whose response was lost: OpenAI when its messages use OpenAI-only shapes.
fn guess_api(request: &str) -> Api {
    #[derive(Deserialize)]
    struct R {
        #[serde(default)]
        messages: Vec<Box<RawValue>>,
    }
    let r: R = serde_json::from_str(request).unwrap_or(R {
        messages: Vec::new(),
    });
    let openai = r.messages.iter().any(|m| {
        let s = m.get();
        s.contains("\"tool_calls\"")
            || s.contains("\"tool_call_id\"")
            || s.contains("\"role\":\"system\"")
            || s.contains("\"role\": \"system\"")
    });
    if openai {
        Api::OpenAi
    } else {
        Api::Anthropic
    }
}

fn sse_data(lines: &[String]) -> impl Iterator<Item = &str> {
    lines.iter().filter_map(|l| {
        let d = l.strip_prefix("data:")?.trim_start();
        (d.starts_with('{')).then_some(d)
    })
}

// ---- Anthropic Messages -------------------------------------------------------------------

#[derive(Deserialize)]
struct AnRequest<'a> {
    #[serde(default)]
    model: LenientStr,
    #[serde(borrow, default)]
    messages: Vec<AnMessage<'a>>,
    #[serde(borrow, default)]
    system: StrOrBlocks<Block<'a>>,
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    max_tokens: Count,
}

#[derive(Deserialize)]
struct AnMessage<'a> {
    #[serde(default)]
    role: LenientStr,
    #[serde(borrow, default)]
    content: StrOrBlocks<Block<'a>>,
}

#[derive(Deserialize)]
struct NamedTool {
    #[serde(default)]
    name: LenientStr,
    #[serde(default)]
    function: Option<NamedFunction>,
}

#[derive(Deserialize)]
struct NamedFunction {
    #[serde(default)]
    name: LenientStr,
}

/// Keeps a request's `tools` (Anthropic, OpenAI chat and Responses): each one's JSON text as
/// sent, and its name (`name`, or OpenAI chat's `function.name`).
fn set_tools(tools: Vec<&RawValue>, x: &mut Exchange) {
    for t in tools {
        if let Ok(n) = serde_json::from_str::<NamedTool>(t.get()) {
            if let Some(name) = n.name.0.or_else(|| n.function.and_then(|f| f.name.0)) {
                x.tools.push(name);
            }
        }
        x.tool_schemas.push(t.get().to_string());
    }
}

fn text_of(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        if let Part::Text { text } = p {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

fn anthropic_request(body: &str, x: &mut Exchange) -> std::result::Result<(), String> {
    let r: AnRequest<'_> = serde_json::from_str(body)
        .map_err(|e| format!("expected an Anthropic Messages request body: {e}"))?;
    x.model = r.model.0;
    x.max_output = r.max_tokens.0;
    push_blocks(r.system, &mut x.system_parts);
    x.system = text_of(&x.system_parts);
    set_tools(r.tools, x);
    for m in r.messages {
        let mut parts = Vec::new();
        push_blocks(m.content, &mut parts);
        let role = match m.role.0.as_deref() {
            Some("assistant") => Role::Assistant,
            Some("user") => user_role(&parts),
            other => return Err(format!("expected role user or assistant, found {other:?}")),
        };
        x.messages.push((role, parts));
    }
    Ok(())
}

#[derive(Deserialize)]
struct AnResponse<'a> {
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    model: LenientStr,
    #[serde(borrow, default)]
    content: StrOrBlocks<Block<'a>>,
    #[serde(default)]
    usage: Option<ApiUsage>,
}

fn anthropic_response(body: &str, x: &mut Exchange) {
    let Ok(r) = serde_json::from_str::<AnResponse<'_>>(body) else {
        return;
    };
    let mut parts = Vec::new();
    let had_content = !matches!(r.content, StrOrBlocks::None);
    push_blocks(r.content, &mut parts);
    if had_content {
        x.reply = Some(parts);
    }
    if let Some(u) = &r.usage {
        x.set_usage(u.checked());
    }
    set_if_some(&mut x.model, r.model.0);
    set_if_some(&mut x.request_id, r.id.0);
}

fn set_if_some(slot: &mut Option<String>, v: Option<String>) {
    if let Some(v) = v.filter(|v| !v.is_empty()) {
        *slot = Some(v);
    }
}

/// A content block being streamed.
enum Streamed {
    Text(String),
    Thinking(String),
    Tool {
        id: String,
        name: String,
        args: String,
    },
    Other,
}

fn anthropic_stream(lines: &[String], x: &mut Exchange) {
    // Keyed by the stream's block index, so memory is bounded by the events, not by an index.
    let mut blocks: std::collections::BTreeMap<u64, Streamed> = Default::default();
    let mut usage = Map::new();
    let mut started = false;
    for data in sse_data(lines) {
        let Ok(ev) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        match ev["type"].as_str().unwrap_or("") {
            "message_start" => {
                started = true;
                let m = &ev["message"];
                set_if_some(&mut x.model, m["model"].as_str().map(String::from));
                set_if_some(&mut x.request_id, m["id"].as_str().map(String::from));
                merge_usage(&mut usage, &m["usage"]);
            }
            "message_delta" => merge_usage(&mut usage, &ev["usage"]),
            "content_block_start" => {
                let b = &ev["content_block"];
                let s = |k: &str| b[k].as_str().unwrap_or("").to_string();
                let block = match b["type"].as_str().unwrap_or("") {
                    "text" => Streamed::Text(s("text")),
                    "thinking" => Streamed::Thinking(s("thinking")),
                    "tool_use" | "server_tool_use" | "mcp_tool_use" => Streamed::Tool {
                        id: s("id"),
                        name: s("name"),
                        // The start event carries `input: {}`; the arguments arrive as deltas.
                        args: String::new(),
                    },
                    _ => Streamed::Other,
                };
                let next = blocks.keys().next_back().map_or(0, |k| k.saturating_add(1));
                blocks.insert(ev["index"].as_u64().unwrap_or(next), block);
            }
            "content_block_delta" => {
                let Some(b) = ev["index"].as_u64().and_then(|i| blocks.get_mut(&i)) else {
                    continue;
                };
                let d = &ev["delta"];
                match (b, d["type"].as_str().unwrap_or("")) {
                    (Streamed::Text(t), "text_delta") => {
                        t.push_str(d["text"].as_str().unwrap_or(""))
                    }
                    (Streamed::Thinking(t), "thinking_delta") => {
                        t.push_str(d["thinking"].as_str().unwrap_or(""))
                    }
                    (Streamed::Tool { args, .. }, "input_json_delta") => {
                        args.push_str(d["partial_json"].as_str().unwrap_or(""))
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !started {
        return;
    }
    let parts = blocks
        .into_values()
        .filter_map(|b| match b {
            Streamed::Text(text) => Some(Part::Text { text }),
            Streamed::Thinking(text) => Some(Part::Thinking { text }),
            Streamed::Tool { id, name, args } => Some(Part::ToolCall {
                id,
                name,
                args: if args.is_empty() { "{}".into() } else { args },
            }),
            Streamed::Other => None,
        })
        .collect();
    x.reply = Some(parts);
    if !usage.is_empty() {
        if let Ok(u) = serde_json::from_value::<ApiUsage>(Value::Object(usage)) {
            x.set_usage(u.checked());
        }
    }
}

/// `message_delta` repeats or completes `message_start`'s usage: later non-null fields win.
fn merge_usage(into: &mut Map<String, Value>, from: &Value) {
    if let Some(o) = from.as_object() {
        for (k, v) in o {
            if !v.is_null() {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

// ---- OpenAI chat completions --------------------------------------------------------------

#[derive(Deserialize)]
struct OaRequest<'a> {
    #[serde(default)]
    model: LenientStr,
    #[serde(default)]
    messages: Vec<OaMessage>,
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    max_tokens: Count,
    #[serde(default)]
    max_completion_tokens: Count,
    #[serde(default)]
    max_output_tokens: Count,
}

fn openai_request(body: &str, x: &mut Exchange) -> std::result::Result<(), String> {
    let r: OaRequest<'_> = serde_json::from_str(body)
        .map_err(|e| format!("expected an OpenAI chat-completions request body: {e}"))?;
    x.model = r.model.0;
    x.max_output = r
        .max_completion_tokens
        .0
        .or(r.max_output_tokens.0)
        .or(r.max_tokens.0);
    set_tools(r.tools, x);
    for m in r.messages {
        let (role, parts) =
            openai_convert(m).map_err(|r| format!("expected a chat role, found {r:?}"))?;
        if x.messages.is_empty() && role == Role::System {
            x.system = text_of(&parts);
        }
        x.messages.push((role, parts));
    }
    Ok(())
}

#[derive(Deserialize)]
struct OaResponse {
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    model: LenientStr,
    #[serde(default)]
    choices: Vec<OaChoice>,
    #[serde(default)]
    usage: Option<OaUsage>,
}

#[derive(Deserialize)]
struct OaChoice {
    #[serde(default)]
    message: Option<OaMessage>,
}

fn openai_response(body: &str, x: &mut Exchange) {
    let Ok(r) = serde_json::from_str::<OaResponse>(body) else {
        return;
    };
    if let Some(m) = r.choices.into_iter().next().and_then(|c| c.message) {
        if let Ok((_, parts)) = openai_convert(m) {
            x.reply = Some(parts);
        }
    }
    if let Some(u) = &r.usage {
        x.set_usage(u.checked());
    }
    set_if_some(&mut x.model, r.model.0);
    set_if_some(&mut x.request_id, r.id.0);
}

/// Streamed chunks: content and tool-call fragments are concatenated in order.
fn openai_stream(lines: &[String], x: &mut Exchange) {
    let mut thinking = String::new();
    let mut text = String::new();
    // Keyed by `tool_calls[].index`: memory is bounded by the chunks, not by an index.
    let mut tools: std::collections::BTreeMap<u64, (String, String, String)> = Default::default();
    let mut any = false;
    for data in sse_data(lines) {
        let Ok(ev) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        any = true;
        set_if_some(&mut x.model, ev["model"].as_str().map(String::from));
        set_if_some(&mut x.request_id, ev["id"].as_str().map(String::from));
        if ev["usage"].is_object() {
            if let Ok(u) = serde_json::from_value::<OaUsage>(ev["usage"].clone()) {
                x.set_usage(u.checked());
            }
        }
        let d = &ev["choices"][0]["delta"];
        text.push_str(d["content"].as_str().unwrap_or(""));
        thinking.push_str(d["reasoning_content"].as_str().unwrap_or(""));
        for tc in d["tool_calls"].as_array().into_iter().flatten() {
            let t = tools.entry(tc["index"].as_u64().unwrap_or(0)).or_default();
            t.0.push_str(tc["id"].as_str().unwrap_or(""));
            t.1.push_str(tc["function"]["name"].as_str().unwrap_or(""));
            t.2.push_str(tc["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    if !any {
        return;
    }
    let mut parts = Vec::new();
    if !thinking.is_empty() {
        parts.push(Part::Thinking { text: thinking });
    }
    if !text.is_empty() {
        parts.push(Part::Text { text });
    }
    for (id, name, args) in tools.into_values() {
        parts.push(Part::ToolCall { id, name, args });
    }
    x.reply = Some(parts);
}

// ---- OpenAI Responses ----------------------------------------------------------------------
//
// The request's `input` is a list of items, the same items a Codex rollout records as
// `response_item`s (read into codex.rs's `Payload`, their contents with its helpers): messages, the model's
// reasoning (summary text; its encrypted content is not readable), tool calls and their outputs.
// `instructions` is the system prompt, outside the items as Anthropic's `system` is. A stream
// ends with `response.completed`, which carries the whole response.

#[derive(Deserialize)]
struct RsRequest<'a> {
    #[serde(default)]
    model: LenientStr,
    #[serde(default)]
    instructions: LenientStr,
    #[serde(borrow, default)]
    input: StrOrBlocks<Payload<'a>>,
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
}

/// Appends one item to `messages`: the model's items (reasoning, text, tool calls) join the
/// assistant message they follow, as one reply.
fn responses_item(item: Payload<'_>, messages: &mut Vec<(Role, Vec<Part>)>) {
    let kind = item.kind.unwrap_or(std::borrow::Cow::Borrowed("message"));
    let reply = |part: Part, messages: &mut Vec<(Role, Vec<Part>)>| match messages.last_mut() {
        Some((Role::Assistant, parts)) => parts.push(part),
        _ => messages.push((Role::Assistant, vec![part])),
    };
    match kind.as_ref() {
        "message" => {
            let role = match item.role.0.as_deref() {
                Some("assistant") => Role::Assistant,
                Some("system" | "developer") => Role::System,
                _ => Role::User,
            };
            let parts = super::codex::items_to_parts(item.content);
            if role == Role::Assistant {
                for p in parts {
                    reply(p, messages);
                }
            } else {
                messages.push((role, parts));
            }
        }
        "reasoning" => {
            let text = super::codex::join_text(item.summary);
            if !text.is_empty() {
                reply(Part::Thinking { text }, messages);
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
        | "tool_search_call" => {
            let args = match (item.arguments.0, item.input, item.action) {
                (Some(a), _, _) => a,
                (None, Some(raw), _) => serde_json::from_str::<String>(raw.get())
                    .unwrap_or_else(|_| raw.get().to_string()),
                (None, None, Some(raw)) => raw.get().to_string(),
                _ => "{}".to_string(),
            };
            let name = item
                .name
                .0
                .unwrap_or_else(|| kind.trim_end_matches("_call").to_string());
            let id = item.call_id.0.unwrap_or_default();
            reply(Part::ToolCall { id, name, args }, messages);
        }
        k if k.ends_with("_call_output") => {
            let (content, is_error) = super::codex::output_text(item.output);
            let mut parts = vec![Part::ToolResult {
                call_id: item.call_id.0.unwrap_or_default(),
                content,
                is_error,
            }];
            parts.extend(super::codex::output_images(item.output));
            messages.push((Role::Tool, parts));
        }
        _ => {}
    }
}

fn responses_request(body: &str, x: &mut Exchange) -> std::result::Result<(), String> {
    let r: RsRequest = serde_json::from_str(body)
        .map_err(|e| format!("expected an OpenAI Responses request body: {e}"))?;
    x.model = r.model.0;
    set_tools(r.tools, x);
    x.system = r.instructions.0.unwrap_or_default();
    if !x.system.is_empty() {
        x.system_parts.push(Part::Text {
            text: x.system.clone(),
        });
    }
    match r.input {
        StrOrBlocks::None => {}
        StrOrBlocks::Str(text) => x.messages.push((Role::User, vec![Part::Text { text }])),
        StrOrBlocks::Blocks(items) => {
            for item in items {
                responses_item(item, &mut x.messages);
            }
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct RsResponse<'a> {
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    model: LenientStr,
    #[serde(borrow, default)]
    output: Vec<Payload<'a>>,
    #[serde(default)]
    usage: Option<RsUsage>,
}

#[derive(Deserialize)]
struct RsUsage {
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    output_tokens: Count,
    #[serde(default)]
    input_tokens_details: Option<RsCached>,
}

#[derive(Deserialize)]
struct RsCached {
    #[serde(default)]
    cached_tokens: Count,
}

fn responses_response(body: &str, x: &mut Exchange) {
    let Ok(r) = serde_json::from_str::<RsResponse>(body) else {
        return;
    };
    let mut messages = Vec::new();
    for item in r.output {
        responses_item(item, &mut messages);
    }
    let parts: Vec<Part> = messages
        .into_iter()
        .filter(|(role, _)| *role == Role::Assistant)
        .flat_map(|(_, parts)| parts)
        .collect();
    x.reply = Some(parts);
    if let Some(u) = r.usage {
        let prompt = u.input_tokens.get();
        let cached = u
            .input_tokens_details
            .map_or(0, |d| d.cached_tokens.get())
            .min(prompt);
        x.usage = Some(Usage {
            input: prompt - cached,
            output: u.output_tokens.get(),
            cache_read: cached,
            ..Usage::default()
        });
    }
    set_if_some(&mut x.model, r.model.0);
    set_if_some(&mut x.request_id, r.id.0);
}

/// A streamed response: its final event (`response.completed`, or `response.incomplete` /
/// `response.failed`) holds the whole response.
fn responses_stream(lines: &[String], x: &mut Exchange) {
    #[derive(Deserialize)]
    struct Ev<'a> {
        #[serde(rename = "type", default)]
        kind: LenientStr,
        #[serde(borrow, default)]
        response: Option<&'a RawValue>,
    }
    for data in sse_data(lines) {
        let Ok(ev) = serde_json::from_str::<Ev>(data) else {
            continue;
        };
        if let (Some("response.completed" | "response.incomplete" | "response.failed"), Some(r)) =
            (ev.kind.0.as_deref(), ev.response)
        {
            responses_response(r.get(), x);
        }
    }
}

// ---- Gemini contents ----------------------------------------------------------------------

#[derive(Deserialize)]
struct GmRequest<'a> {
    #[serde(default)]
    contents: Vec<GmContent>,
    #[serde(rename = "systemInstruction", alias = "system_instruction", default)]
    system: Option<GmContent>,
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    model: LenientStr,
    #[serde(rename = "generationConfig", alias = "generation_config", default)]
    generation: GmGeneration,
}

#[derive(Deserialize, Default)]
struct GmGeneration {
    #[serde(rename = "maxOutputTokens", alias = "max_output_tokens", default)]
    max_output: Count,
}

#[derive(Deserialize, Default)]
struct GmContent {
    #[serde(default)]
    role: LenientStr,
    #[serde(default)]
    parts: Vec<GmPart>,
}

#[derive(Deserialize)]
struct GmPart {
    #[serde(default)]
    text: LenientStr,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "thoughtSignature", alias = "thought_signature", default)]
    thought_signature: LenientStr,
    #[serde(rename = "functionCall", alias = "function_call", default)]
    function_call: Option<GmFunction>,
    #[serde(rename = "functionResponse", alias = "function_response", default)]
    function_response: Option<GmFunction>,
    #[serde(rename = "inlineData", alias = "inline_data", default)]
    inline_data: Option<GmBlob>,
    #[serde(rename = "executableCode", default)]
    executable_code: Option<Map<String, Value>>,
    #[serde(rename = "codeExecutionResult", default)]
    code_result: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct GmFunction {
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    name: LenientStr,
    #[serde(default)]
    args: Option<Box<RawValue>>,
    #[serde(default)]
    response: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct GmBlob {
    #[serde(rename = "mimeType", alias = "mime_type", default)]
    mime_type: LenientStr,
    #[serde(default)]
    data: LenientStr,
}

/// Gemini pairs a function response with its call by order when the call has no id: number the
/// calls and responses of each function name so that the pairs get the same id, `name#n`.
#[derive(Default)]
struct GmIds {
    calls: HashMap<String, u32>,
    responses: HashMap<String, u32>,
}

impl GmIds {
    fn id(seen: &mut HashMap<String, u32>, f: &GmFunction) -> (String, String) {
        let name = f.name.0.clone().unwrap_or_default();
        let n = seen.entry(name.clone()).or_insert(0);
        *n += 1;
        let id = f.id.0.clone().unwrap_or_else(|| format!("{name}#{n}"));
        (id, name)
    }
}

fn gemini_parts(parts: Vec<GmPart>, ids: &mut GmIds) -> Vec<Part> {
    let mut out = Vec::new();
    for p in parts {
        if let Some(f) = p.function_call {
            let (id, name) = GmIds::id(&mut ids.calls, &f);
            let args = f.args.map_or_else(|| "{}".into(), |a| a.get().to_string());
            out.push(Part::ToolCall { id, name, args });
        } else if let Some(f) = p.function_response {
            let (call_id, _) = GmIds::id(&mut ids.responses, &f);
            let content = f.response.map_or_else(String::new, |r| r.get().to_string());
            out.push(Part::ToolResult {
                call_id,
                content,
                is_error: false,
            });
        } else if let Some(b) = p.inline_data {
            out.push(Part::Image {
                media_type: b.mime_type.0.unwrap_or_default(),
                bytes: b.data.0.as_deref().map_or(0, base64_len),
            });
        } else if let Some(c) = p.executable_code {
            let text = c
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            out.push(Part::Text { text });
        } else if let Some(c) = p.code_result {
            let text = c
                .get("output")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            out.push(Part::Text { text });
        } else if let Some(text) = p.text.0 {
            if p.thought == Some(true) {
                out.push(Part::Thinking { text });
            } else {
                out.push(Part::Text { text });
            }
        }
    }
    out
}

fn gemini_request(body: &str, x: &mut Exchange) -> std::result::Result<(), String> {
    let r: GmRequest<'_> = serde_json::from_str(body)
        .map_err(|e| format!("expected a Gemini request body with `contents`: {e}"))?;
    x.model = r.model.0;
    x.max_output = r.generation.max_output.0;
    let mut ids = GmIds::default();
    if let Some(s) = r.system {
        x.system_parts = gemini_parts(s.parts, &mut GmIds::default());
        x.system = text_of(&x.system_parts);
    }
    for raw in r.tools {
        x.tool_schemas.push(raw.get().to_string());
        let Ok(t) = serde_json::from_str::<Map<String, Value>>(raw.get()) else {
            continue;
        };
        for (k, v) in t {
            match v.as_array() {
                Some(decls) if k.starts_with("function") => x.tools.extend(
                    decls
                        .iter()
                        .filter_map(|d| d["name"].as_str().map(String::from)),
                ),
                _ => x.tools.push(k),
            }
        }
    }
    for c in r.contents {
        let parts = gemini_parts(c.parts, &mut ids);
        let role = match c.role.0.as_deref() {
            Some("model") => Role::Assistant,
            Some("function" | "tool") => Role::Tool,
            _ => user_role(&parts),
        };
        x.messages.push((role, parts));
    }
    // The reply's calls continue the request's numbering.
    x.reply_ids = Some(ids);
    Ok(())
}

#[derive(Deserialize)]
struct GmResponse {
    #[serde(default)]
    candidates: Vec<GmCandidate>,
    #[serde(rename = "usageMetadata", default)]
    usage: Option<GmUsage>,
    #[serde(rename = "modelVersion", default)]
    model: LenientStr,
    #[serde(rename = "responseId", default)]
    id: LenientStr,
}

#[derive(Deserialize)]
struct GmCandidate {
    #[serde(default)]
    content: Option<GmContent>,
}

#[derive(Deserialize)]
struct GmUsage {
    #[serde(rename = "promptTokenCount", default)]
    prompt: Count,
    #[serde(rename = "candidatesTokenCount", default)]
    candidates: Count,
    #[serde(rename = "thoughtsTokenCount", default)]
    thoughts: Count,
    #[serde(rename = "cachedContentTokenCount", default)]
    cached: Count,
}

fn gemini_response(body: &str, x: &mut Exchange) {
    let Ok(r) = serde_json::from_str::<GmResponse>(body) else {
        return;
    };
    if let Some(c) = r.candidates.into_iter().next().and_then(|c| c.content) {
        x.reply_signed |= c.parts.iter().any(|p| p.thought_signature.0.is_some());
        let mut ids = x.reply_ids.take().unwrap_or_default();
        let parts = gemini_parts(c.parts, &mut ids);
        x.reply_ids = Some(ids);
        let reply = x.reply.get_or_insert_with(Vec::new);
        let mut parts = parts.into_iter();
        // A streamed reply comes as chunks, each continuing the text (or thought) the previous
        // chunk ended with: one part, as the next request sends it back.
        if let Some(first) = parts.next() {
            match (reply.last_mut(), first) {
                (Some(Part::Text { text: a }), Part::Text { text: b })
                | (Some(Part::Thinking { text: a }), Part::Thinking { text: b }) => a.push_str(&b),
                (_, p) => reply.push(p),
            }
        }
        reply.extend(parts);
    }
    if let Some(u) = r.usage {
        let prompt = u.prompt.get();
        let cached = u.cached.get().min(prompt);
        x.set_usage(
            match bad_usage([
                ("promptTokenCount", u.prompt.1),
                ("candidatesTokenCount", u.candidates.1),
                ("thoughtsTokenCount", u.thoughts.1),
                ("cachedContentTokenCount", u.cached.1),
            ]) {
                Some(why) => Err(why),
                None => Ok(Usage {
                    input: prompt - cached,
                    output: u.candidates.get().saturating_add(u.thoughts.get()),
                    cache_read: cached,
                    ..Usage::default()
                }),
            },
        );
        x.reply_thoughts = u.thoughts.get();
    }
    set_if_some(&mut x.model, r.model.0);
    set_if_some(&mut x.request_id, r.id.0);
}

// ---- From requests to agents --------------------------------------------------------------

/// What identifies an agent across requests: its system prompt and its tools. Parts of system
/// prompts that change from call to call without changing the agent (dates, times, version
/// stamps, Claude Code's per-request billing header) are left out.
fn kind_of(x: &Exchange) -> u64 {
    let mut h = blake3::Hasher::new();
    for line in x.system.lines() {
        if line.starts_with("x-anthropic-billing-header") {
            continue;
        }
        for word in line.split_whitespace() {
            if !word.bytes().any(|b| b.is_ascii_digit()) {
                h.update(word.as_bytes());
                h.update(b" ");
            }
        }
        h.update(b"\n");
    }
    h.update(b"\0tools");
    for t in &x.tools {
        h.update(t.as_bytes());
        h.update(b"\0");
    }
    first_u64(&h.finalize())
}

fn first_u64(h: &blake3::Hash) -> u64 {
    let b = h.as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// Identity of a message's content: what the model read. Tool arguments are compared as JSON
/// values, since a stream's concatenated argument text and the next request's object differ in
/// spacing only.
fn message_hash(role: Role, parts: &[Part]) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(role.as_str().as_bytes());
    let field = |h: &mut blake3::Hasher, s: &str| {
        h.update(&(s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    for p in parts {
        match p {
            Part::Text { text } => {
                h.update(b"t");
                field(&mut h, text);
            }
            Part::Thinking { text } => {
                h.update(b"k");
                field(&mut h, text);
            }
            Part::ToolCall { id, name, args } => {
                h.update(b"c");
                field(&mut h, id);
                field(&mut h, name);
                let canon = serde_json::from_str::<Value>(args)
                    .map(|v| v.to_string())
                    .unwrap_or_else(|_| args.clone());
                field(&mut h, &canon);
            }
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                h.update(if *is_error { b"E" } else { b"r" });
                field(&mut h, call_id);
                field(&mut h, content);
            }
            Part::Image { media_type, bytes } => {
                h.update(b"i");
                field(&mut h, media_type);
                h.update(&bytes.to_le_bytes());
            }
        }
    }
    first_u64(&h.finalize())
}

/// Hash of a sequence of message hashes, extended one message at a time.
fn seq_next(prev: u64, msg: u64) -> u64 {
    let mut x = prev ^ msg.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// What the first pass keeps of a request.
struct Req {
    kind: u64,
    hashes: Vec<u64>,
    reply: Option<u64>,
    /// Not a model call (undecodable, or a token count).
    skip: bool,
    model: Option<String>,
    system_head: String,
}

/// How the second pass turns request `i` into messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Skip,
    /// The agent's context so far is the first `from` messages of this request: append the rest.
    /// `hide_reply_of`: the parent's reply did not make it into this request as the model wrote
    /// it, so it leaves the context (the request's own version of it, if any, is appended).
    Extend {
        agent: usize,
        from: usize,
        hide_reply_of: Option<usize>,
    },
    /// The request's messages are the agent's whole context; `restart` when the agent had one.
    Fresh {
        agent: usize,
        restart: bool,
    },
}

struct PlanAgent {
    kind: u64,
    side_of: Option<usize>,
    tip: Option<usize>,
    calls: usize,
    first: usize,
}

struct Plan {
    steps: Vec<Step>,
    agents: Vec<PlanAgent>,
}

fn plan(reqs: &[Req]) -> Plan {
    let n = reqs.len();
    // Parent: the latest earlier request of the same kind whose messages (and reply) begin this one.
    let mut parent: Vec<Option<(usize, usize, bool)>> = vec![None; n];
    let mut prefixes: HashMap<(u64, u64), usize> = HashMap::new();
    for (i, r) in reqs.iter().enumerate() {
        if r.skip {
            continue;
        }
        let mut seqs = Vec::with_capacity(r.hashes.len() + 1);
        let mut s = r.kind;
        seqs.push(s);
        for &h in &r.hashes {
            s = seq_next(s, h);
            seqs.push(s);
        }
        for k in (1..seqs.len()).rev() {
            let Some(&j) = prefixes.get(&(r.kind, seqs[k])) else {
                continue;
            };
            let p = &reqs[j];
            let len = p.hashes.len();
            let with_reply = k == len + 1;
            let same = (k == len || with_reply)
                && p.hashes[..] == r.hashes[..len]
                && (!with_reply || p.reply == Some(r.hashes[len]));
            if same {
                parent[i] = Some((j, k, with_reply));
                break;
            }
        }
        prefixes.insert((r.kind, s), i);
        if let Some(h) = r.reply {
            prefixes.insert((r.kind, seq_next(s, h)), i);
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in parent.iter().enumerate() {
        if let Some((j, _, _)) = p {
            children[*j].push(i);
        }
    }
    // A side call: a one-off fork whose reply the agent's later requests do not carry.
    let mut side = vec![false; n];
    let mut cont: Vec<Option<usize>> = vec![None; n];
    for j in 0..n {
        let kids = &children[j];
        for (a, &c) in kids.iter().enumerate() {
            let Some(reply) = reqs[c].reply else { continue };
            side[c] = children[c].is_empty()
                && kids[a + 1..].iter().any(|&s| {
                    let from = parent[s].map_or(0, |p| p.1);
                    !reqs[s].hashes[from..].contains(&reply)
                });
        }
        cont[j] = kids.iter().copied().find(|&c| !side[c]);
    }
    let mut chain_last: Vec<usize> = (0..n).collect();
    for i in (0..n).rev() {
        if let Some(c) = cont[i] {
            chain_last[i] = chain_last[c];
        }
    }
    let mut agents: Vec<PlanAgent> = Vec::new();
    let mut agent_of = vec![usize::MAX; n];
    let mut steps = vec![Step::Skip; n];
    for i in 0..n {
        if reqs[i].skip {
            continue;
        }
        let ended = |a: &PlanAgent| a.tip.is_none_or(|t| chain_last[t] < i);
        let step = match parent[i] {
            Some((j, k, with_reply)) if cont[j] == Some(i) => Step::Extend {
                agent: agent_of[j],
                from: k,
                hide_reply_of: (!with_reply && reqs[j].reply.is_some()).then_some(j),
            },
            Some((j, _, _)) => {
                let owner = agent_of[j];
                let found = if side[i] {
                    agents.iter().position(|a| {
                        a.side_of == Some(owner) && a.kind == reqs[i].kind && ended(a)
                    })
                } else {
                    ended(&agents[owner]).then_some(owner)
                };
                fresh(
                    &mut agents,
                    found,
                    reqs[i].kind,
                    Some(owner).filter(|_| side[i]),
                    i,
                )
            }
            None => {
                let found = agents
                    .iter()
                    .rposition(|a| a.side_of.is_none() && a.kind == reqs[i].kind && ended(a));
                fresh(&mut agents, found, reqs[i].kind, None, i)
            }
        };
        let a = match step {
            Step::Extend { agent, .. } | Step::Fresh { agent, .. } => agent,
            Step::Skip => continue,
        };
        agents[a].tip = Some(i);
        agents[a].calls += 1;
        agent_of[i] = a;
        steps[i] = step;
    }
    Plan { steps, agents }
}

fn fresh(
    agents: &mut Vec<PlanAgent>,
    found: Option<usize>,
    kind: u64,
    side_of: Option<usize>,
    i: usize,
) -> Step {
    match found {
        Some(agent) => Step::Fresh {
            agent,
            restart: agents[agent].tip.is_some(),
        },
        None => {
            agents.push(PlanAgent {
                kind,
                side_of,
                tip: None,
                calls: 0,
                first: i,
            });
            Step::Fresh {
                agent: agents.len() - 1,
                restart: false,
            }
        }
    }
}

// ---- The two passes -----------------------------------------------------------------------

struct Scan {
    reqs: Vec<Req>,
    warnings: Vec<(SourcePos, String)>,
}

impl JsonSink for Scan {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        // The syntax is checked first so that the driver's recovery (objects run together,
        // invalid UTF-8, truncation) sees serde's own errors.
        serde_json::from_slice::<serde::de::IgnoredAny>(json)?;
        let req = match decode(json) {
            Ok(x) if x.count_only => skipped(),
            Ok(x) => Req {
                kind: kind_of(&x),
                hashes: x
                    .messages
                    .iter()
                    .map(|(r, p)| message_hash(*r, p))
                    .collect(),
                reply: x.reply.as_ref().map(|p| message_hash(Role::Assistant, p)),
                skip: false,
                model: x.model.clone(),
                system_head: system_head(&x.system),
            },
            Err(e) => {
                self.warnings.push((pos, format!("{e}; exchange skipped")));
                skipped()
            }
        };
        self.reqs.push(req);
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.warnings.push((pos, message));
    }
}

fn skipped() -> Req {
    Req {
        kind: 0,
        hashes: Vec::new(),
        reply: None,
        skip: true,
        model: None,
        system_head: String::new(),
    }
}

/// The line of a system prompt that names the agent best: the first line of its last block
/// that is not Claude Code's billing header or its fixed preamble.
fn system_head(system: &str) -> String {
    let line = system
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("x-anthropic-billing-header"))
        .find(|l| !l.starts_with("You are Claude Code, Anthropic's official CLI"))
        .unwrap_or("");
    let mut head: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        head.push('…');
    }
    head
}

struct Build<'p> {
    s: Session,
    /// Plan agent `a` is session agent `a`.
    plan: &'p Plan,
    next: usize,
    reply_of: HashMap<usize, MsgIdx>,
    last_context: HashMap<AgentIdx, u64>,
}

impl JsonSink for Build<'_> {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        serde_json::from_slice::<serde::de::IgnoredAny>(json)?;
        let i = self.next;
        self.next += 1;
        let step = self.plan.steps.get(i).copied().unwrap_or(Step::Skip);
        let Ok(x) = decode(json) else { return Ok(()) };
        let (plan_agent, from) = match step {
            Step::Skip => return Ok(()),
            Step::Extend {
                agent,
                from,
                hide_reply_of,
            } => {
                if let Some(m) = hide_reply_of.and_then(|j| self.reply_of.get(&j)) {
                    self.s.messages[*m].flags.meta = true;
                }
                (agent, from)
            }
            Step::Fresh { agent, restart } => {
                if restart {
                    let a = agent;
                    self.s.compactions.push(RecordedCompaction {
                        agent: a,
                        at_message: self.s.messages.len(),
                        trigger: "restart".into(),
                        pre_tokens: self.last_context.get(&a).copied(),
                        summary: None,
                        kept_from: None,
                        timestamp: x.timestamp,
                        inferred: false,
                        source: pos,
                    });
                }
                (agent, 0)
            }
        };
        let agent = plan_agent;
        let mut messages = x.messages;
        let fixed = if from == 0 {
            fixed_part(&mut messages, x.system_parts, x.tool_schemas)
        } else {
            0
        };
        for (k, (role, parts)) in messages.into_iter().enumerate().skip(from) {
            let m = self.s.push_message(agent, role, parts, x.timestamp, pos);
            if k == 0 {
                self.s.messages[m].flags.tool_schemas = fixed;
                // A restart re-sends the system prompt and tools the agent's context already
                // holds: in the recorded history they are what the restart kept (its summary);
                // replays from the uncompacted history keep the first ones and never see these.
                let restart = matches!(step, Step::Fresh { restart: true, .. });
                if let Some(c) = self.s.compactions.last_mut().filter(|_| restart) {
                    if role == Role::System {
                        c.summary = Some(m);
                    }
                }
            }
        }
        let context_end = self.s.messages.len();
        // Gemini keeps a signed reply's thoughts (its signature stands for them) in the context
        // until the next user message: the response's recorded thought tokens, hidden.
        let thoughts = if x.reply_signed { x.reply_thoughts } else { 0 };
        let reply = x.reply.map(|parts| {
            self.s.messages.push(Message {
                agent,
                role: Role::Assistant,
                parts,
                timestamp: x.timestamp,
                flags: MessageFlags {
                    hidden_tokens: thoughts,
                    hidden_until_user: thoughts > 0,
                    ..MessageFlags::default()
                },
                source: pos,
            });
            self.reply_of.insert(i, context_end);
            context_end
        });
        if let Some(u) = x.usage {
            self.last_context.insert(agent, u.context_tokens());
        }
        if let Some(why) = x.usage_bad {
            self.s.warn(pos, why);
        }
        if self.s.agents[agent].model.is_none() {
            self.s.agents[agent].model = x.model.clone();
        }
        if let Some(m) = x.max_output {
            self.s.max_output = Some(self.s.max_output.map_or(m, |o| o.max(m)));
        }
        self.s.calls.push(Call {
            agent,
            context_end,
            reply,
            usage: x.usage,
            model: x.model,
            timestamp: x.timestamp,
            request_id: x.request_id,
            source: pos,
        });
        Ok(())
    }
    fn warn(&mut self, _: SourcePos, _: String) {
        // The first pass already reported every problem of the file.
    }
}

/// Puts the request's fixed part in front of its messages, for a request whose messages start
/// its agent's context: the system prompt the API keeps outside the messages and the tool
/// schemas, one system message (a leading system message of OpenAI chat takes the schemas), so
/// that the context holds everything the request sent. Returns how many of the first message's
/// parts are tool schemas (`MessageFlags::tool_schemas`).
///
/// An agent's later requests extend this context and carry the same system prompt and tools
/// (the same kind, `kind_of`); where a date or version stamp in the system prompt changes
/// between them, the context keeps the first request's.
fn fixed_part(
    messages: &mut Vec<(Role, Vec<Part>)>,
    system: Vec<Part>,
    schemas: Vec<String>,
) -> u32 {
    let n = schemas.len() as u32;
    let schemas = schemas.into_iter().map(|text| Part::Text { text });
    match messages.first_mut() {
        Some((Role::System, parts)) if system.is_empty() => parts.extend(schemas),
        _ if system.is_empty() && n == 0 => {}
        _ => {
            let mut parts = system;
            parts.extend(schemas);
            messages.insert(0, (Role::System, parts));
        }
    }
    n
}

fn open_lines(path: &Path) -> Result<std::io::BufReader<std::fs::File>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(std::io::BufReader::with_capacity(256 * 1024, f))
}

pub fn read(path: &Path) -> Result<Session> {
    read_with(path, || open_lines(path))
}

/// Reads a capture held in memory (the complete lines of a capture still being written), as
/// `read` reads the file at `path`.
pub(crate) fn read_bytes(path: &Path, bytes: &[u8]) -> Result<Session> {
    read_with(path, || Ok(bytes))
}

/// The two passes over the lines `open` gives (called once per pass).
fn read_with<R: std::io::BufRead>(path: &Path, open: impl Fn() -> Result<R>) -> Result<Session> {
    const WHAT: &str = "a captured exchange {request, response}";
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(open()?, &mut hasher);
    let mut scan = Scan {
        reqs: Vec::new(),
        warnings: Vec::new(),
    };
    read_jsonl(&mut lines, 0, WHAT, &mut scan).map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    let plan = plan(&scan.reqs);

    let mut s = Session::default();
    s.source.format = ID.into();
    s.whole_requests = true;
    s.source.files.push(path.display().to_string());
    s.source.bytes = bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    s.id = path
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The busiest agent that is nobody's side agent is `main`.
    let main = (0..plan.agents.len())
        .filter(|&a| plan.agents[a].side_of.is_none())
        .max_by_key(|&a| (plan.agents[a].calls, std::cmp::Reverse(a)));
    for (a, pa) in plan.agents.iter().enumerate() {
        let id = if Some(a) == main {
            "main".to_string()
        } else {
            format!("agent-{}", a + 1)
        };
        let first = &scan.reqs[pa.first];
        let model = first.model.clone().unwrap_or_default();
        let what = if first.system_head.is_empty() {
            "no system prompt".to_string()
        } else {
            first.system_head.clone()
        };
        let name = match pa.side_of {
            Some(_) => format!("side calls ({model}): {what}"),
            None => format!("{model}: {what}"),
        };
        s.agents.push(Agent {
            id,
            name,
            ..Agent::default()
        });
    }
    for (a, pa) in plan.agents.iter().enumerate() {
        s.agents[a].parent = pa.side_of;
    }
    for (pos, message) in scan.warnings {
        s.warn(pos, message);
    }
    drop(scan.reqs);

    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(open()?, &mut hasher);
    let mut build = Build {
        s,
        plan: &plan,
        next: 0,
        reply_of: HashMap::new(),
        last_context: HashMap::new(),
    };
    read_jsonl(&mut lines, 0, WHAT, &mut build).map_err(|e| Error::io(path, e))?;
    Ok(build.s)
}

/// A line `{request: {...}, response | error: ...}`.
pub(crate) fn sniff(o: &Map<String, Value>) -> bool {
    o.get("request").is_some_and(Value::is_object)
        && (o.contains_key("response") || o.contains_key("error"))
}
