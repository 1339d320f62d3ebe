//! OpenAI chat messages: a JSON array of messages, an object `{"messages": [...], "model": ...}`,
//! or JSON lines of messages. Roles `system`/`developer`, `user`, `assistant` (with `tool_calls`),
//! `tool` (with `tool_call_id`); an optional per-message `name` is the agent that wrote it.
//! Every assistant message is the reply of one call whose context is everything before it; an
//! optional per-message `usage` (`prompt_tokens`, `completion_tokens`,
//! `prompt_tokens_details.cached_tokens`) and `model` are read when present.
//!
//! A JSON document is streamed element by element (one message in memory at a time).

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::de::{bad_usage, data_url_image, Count, LenientStr, StrOrBlocks};
use super::doc::{element_pos, Src};
use super::lines::{read_jsonl, JsonSink, LineReader};
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "openai-messages";

#[derive(Deserialize)]
pub(crate) struct OaMessage {
    #[serde(default)]
    role: LenientStr,
    #[serde(default)]
    content: StrOrBlocks<OaPart>,
    #[serde(default)]
    name: LenientStr,
    #[serde(default)]
    tool_calls: Option<Vec<OaToolCall>>,
    #[serde(default)]
    function_call: Option<OaFunction>,
    #[serde(default)]
    tool_call_id: LenientStr,
    #[serde(default)]
    reasoning_content: LenientStr,
    #[serde(default)]
    usage: Option<OaUsage>,
    #[serde(default)]
    model: LenientStr,
}

#[derive(Deserialize)]
struct OaPart {
    #[serde(rename = "type", default)]
    kind: LenientStr,
    #[serde(default)]
    text: LenientStr,
    #[serde(default)]
    image_url: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct OaToolCall {
    #[serde(default)]
    id: LenientStr,
    #[serde(default)]
    function: Option<OaFunction>,
}

#[derive(Deserialize)]
struct OaFunction {
    #[serde(default)]
    name: LenientStr,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
pub(crate) struct OaUsage {
    #[serde(default)]
    prompt_tokens: Count,
    #[serde(default)]
    completion_tokens: Count,
    #[serde(default)]
    prompt_tokens_details: Option<CachedDetails>,
}

#[derive(Deserialize)]
struct CachedDetails {
    #[serde(default)]
    cached_tokens: Count,
}

impl OaUsage {
    /// The usage, or the warning for a figure that is not a token count (`de::bad_usage`).
    pub(crate) fn checked(&self) -> std::result::Result<Usage, String> {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens.1);
        match bad_usage([
            ("prompt_tokens", self.prompt_tokens.1),
            ("completion_tokens", self.completion_tokens.1),
            ("prompt_tokens_details.cached_tokens", cached),
        ]) {
            Some(why) => Err(why),
            None => Ok(self.to_usage()),
        }
    }

    /// `prompt_tokens` includes the cached part: `input` is what was not read from the cache.
    fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens.get();
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .map_or(0, |d| d.cached_tokens.get())
            .min(prompt);
        Usage {
            input: prompt - cached,
            output: self.completion_tokens.get(),
            cache_read: cached,
            ..Usage::default()
        }
    }
}

/// The role and parts of one chat message (shared with readers of captured request bodies);
/// `Err` carries the role that is not a chat role.
pub(crate) fn convert(m: OaMessage) -> std::result::Result<(Role, Vec<Part>), String> {
    let role_name = m.role.0.unwrap_or_default();
    let role = match role_name.as_str() {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" | "function" => Role::Tool,
        _ => return Err(role_name),
    };
    let mut parts = Vec::new();
    if let Some(text) = m.reasoning_content.0.filter(|t| !t.is_empty()) {
        parts.push(Part::Thinking { text });
    }
    let mut text_parts = Vec::new();
    match m.content {
        StrOrBlocks::None => {}
        StrOrBlocks::Str(text) => {
            if !text.is_empty() {
                text_parts.push(Part::Text { text });
            }
        }
        StrOrBlocks::Blocks(blocks) => {
            for b in blocks {
                match b.kind.0.as_deref() {
                    Some("image_url" | "input_image") => {
                        let url = b.image_url.as_deref().map(image_url).unwrap_or_default();
                        let (media_type, bytes) = data_url_image(&url);
                        text_parts.push(Part::Image { media_type, bytes });
                    }
                    _ => {
                        if let Some(text) = b.text.0 {
                            text_parts.push(Part::Text { text });
                        }
                    }
                }
            }
        }
    }
    if role == Role::Tool {
        let mut content = String::new();
        let mut images = Vec::new();
        for p in text_parts {
            match p {
                Part::Text { text } => {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&text);
                }
                img => images.push(img),
            }
        }
        parts.push(Part::ToolResult {
            call_id: m.tool_call_id.0.unwrap_or_default(),
            content,
            is_error: false,
        });
        parts.extend(images);
    } else {
        parts.extend(text_parts);
    }
    for tc in m.tool_calls.unwrap_or_default() {
        let f = tc.function;
        parts.push(Part::ToolCall {
            id: tc.id.0.unwrap_or_default(),
            name: f
                .as_ref()
                .and_then(|f| f.name.0.clone())
                .unwrap_or_default(),
            args: args_text(f.as_ref().and_then(|f| f.arguments.as_deref())),
        });
    }
    if let Some(f) = m.function_call {
        parts.push(Part::ToolCall {
            id: String::new(),
            name: f.name.0.unwrap_or_default(),
            args: args_text(f.arguments.as_deref()),
        });
    }
    Ok((role, parts))
}

/// Arguments as the model wrote them: the JSON string's content, or the raw JSON of an object.
fn args_text(raw: Option<&RawValue>) -> String {
    match raw {
        None => "{}".into(),
        Some(r) => serde_json::from_str::<String>(r.get()).unwrap_or_else(|_| r.get().to_string()),
    }
}

struct Builder {
    s: Session,
    model: Option<String>,
    call_owner: HashMap<String, AgentIdx>,
}

impl Builder {
    fn new(path: &Path) -> Builder {
        let mut s = Session::default();
        s.source.format = ID.into();
        s.source.files.push(path.display().to_string());
        Builder {
            s,
            model: None,
            call_owner: HashMap::new(),
        }
    }

    fn message(&mut self, m: OaMessage, pos: SourcePos) {
        let name = m.name.0.clone();
        let tool_call_id = m.tool_call_id.0.clone();
        let usage = match m.usage.as_ref().map(OaUsage::checked) {
            Some(Err(why)) => {
                self.s.warn(pos, why);
                None
            }
            u => u.and_then(Result::ok),
        };
        let msg_model = m.model.0.clone();
        let (role, parts) = match convert(m) {
            Ok(x) => x,
            Err(found) => {
                self.s.warn(pos, format!("expected a message role (system, user, assistant, tool), found {found:?}; skipped"));
                return;
            }
        };
        let agent = match (&name, role) {
            (Some(n), _) if !n.is_empty() => self.s.agent_index(n),
            (_, Role::Tool) => tool_call_id
                .as_ref()
                .and_then(|id| self.call_owner.get(id).copied())
                .unwrap_or_else(|| self.s.agent_index("main")),
            _ => self.s.agent_index("main"),
        };
        for id in parts.iter().filter_map(|p| match p {
            Part::ToolCall { id, .. } if !id.is_empty() => Some(id),
            _ => None,
        }) {
            self.call_owner.insert(id.clone(), agent);
        }
        let mi = self.s.messages.len();
        self.s.push_message(agent, role, parts, None, pos);
        if role == Role::Assistant {
            let model = msg_model.or_else(|| self.model.clone());
            if self.s.agents[agent].model.is_none() {
                self.s.agents[agent].model = model.clone();
            }
            self.s.calls.push(Call {
                agent,
                context_end: mi,
                reply: Some(mi),
                usage,
                model,
                timestamp: None,
                request_id: None,
                source: pos,
            });
        }
    }

    fn finish(mut self, path: &Path, bytes: u64, hash: String) -> Session {
        // The document's `model` may come after its messages (keys in any order).
        if let Some(model) = &self.model {
            for c in self.s.calls.iter_mut().filter(|c| c.model.is_none()) {
                c.model = Some(model.clone());
            }
            for a in self.s.agents.iter_mut().filter(|a| a.model.is_none()) {
                a.model = Some(model.clone());
            }
        }
        if self.s.id.is_empty() {
            self.s.id = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        self.s.source.bytes = bytes;
        self.s.source.hash = hash;
        self.s
    }
}

/// `"image_url": "..."` or `"image_url": {"url": "..."}`.
fn image_url(raw: &RawValue) -> String {
    #[derive(Deserialize)]
    struct U {
        #[serde(default)]
        url: LenientStr,
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .or_else(|| {
            serde_json::from_str::<U>(raw.get())
                .ok()
                .and_then(|u| u.url.0)
        })
        .unwrap_or_default()
}

impl JsonSink for Builder {
    fn entry(&mut self, json: &[u8], pos: SourcePos) -> serde_json::Result<()> {
        let m: OaMessage = serde_json::from_slice(json)?;
        self.message(m, pos);
        Ok(())
    }
    fn warn(&mut self, pos: SourcePos, message: String) {
        self.s.warn(pos, message);
    }
}

struct DocSeed<'b> {
    b: &'b mut Builder,
    newlines: Rc<Cell<u32>>,
}

impl<'de> DeserializeSeed<'de> for DocSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of chat messages, or an object with `messages`")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        loop {
            let raw: Option<Box<RawValue>> = seq.next_element()?;
            let Some(raw) = raw else { return Ok(()) };
            let pos = element_pos(&self.newlines, &raw, 0);
            match serde_json::from_str::<OaMessage>(raw.get()) {
                Ok(m) => self.b.message(m, pos),
                Err(e) => self
                    .b
                    .s
                    .warn(pos, format!("expected a chat message object: {e}")),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut saw_messages = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "messages" => {
                    saw_messages = true;
                    map.next_value_seed(DocSeed {
                        b: &mut *self.b,
                        newlines: self.newlines.clone(),
                    })?;
                }
                "model" => self.b.model = map.next_value::<LenientStr>()?.0,
                "id" | "session_id" => {
                    if let Some(id) = map.next_value::<LenientStr>()?.0 {
                        self.b.s.id = id;
                    }
                }
                "title" => self.b.s.title = map.next_value::<LenientStr>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !saw_messages {
            return Err(serde::de::Error::custom(
                "the object has no `messages` list",
            ));
        }
        Ok(())
    }
}

pub fn read(path: &Path) -> Result<Session> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut first = [0u8; 1];
    let lead = loop {
        match file.read(&mut first) {
            Ok(0) => break None,
            Ok(_) if first[0].is_ascii_whitespace() => continue,
            Ok(_) => break Some(first[0]),
            Err(e) => return Err(Error::io(path, e)),
        }
    };
    if lead == Some(b'[') || (lead == Some(b'{') && !first_line_is_message(path)) {
        return read_document(path);
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(
        std::io::BufReader::with_capacity(256 * 1024, file),
        &mut hasher,
    );
    let mut b = Builder::new(path);
    read_jsonl(&mut lines, 0, "a chat message object", &mut b).map_err(|e| Error::io(path, e))?;
    let bytes = lines.bytes();
    drop(lines);
    Ok(b.finish(path, bytes, hasher.finalize().to_hex().to_string()))
}

/// JSON lines of messages start with a complete message object on the first line.
fn first_line_is_message(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut h = blake3::Hasher::new();
    let mut lines = LineReader::with_limit(std::io::BufReader::new(f), &mut h, 16 << 20);
    while let Ok(super::lines::Next::Line) = lines.next_line() {
        let l = lines.line();
        if l.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        return serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(l)
            .is_ok_and(|o| o.contains_key("role"));
    }
    false
}

fn read_document(path: &Path) -> Result<Session> {
    let mut src = Src::open(path)?;
    let newlines = src.newlines();
    let mut b = Builder::new(path);
    let result = {
        let mut de = serde_json::Deserializer::from_reader(&mut src);
        DocSeed {
            b: &mut b,
            newlines: newlines.clone(),
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
    };
    if let Err(e) = result {
        let line = e.line() as u32;
        if b.s.messages.is_empty() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line,
                message: format!(
                    "expected a list of chat messages or an object with `messages`: {e}"
                ),
            });
        }
        // Messages read before the damage are kept, as for a corrupt line in JSONL.
        b.s.warn(
            SourcePos { file: 0, line },
            format!("the JSON document breaks off here ({e}); the messages before it are kept"),
        );
    }
    // A `messages` list none of whose entries is a chat message is another tool's document
    // (Gemini CLI's chat file, an OpenCode export): refused, never loaded as an empty session.
    if b.s.messages.is_empty() && !b.s.warnings.is_empty() {
        let first = &b.s.warnings[0];
        return Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            reason: format!(
                "a JSON document with a `messages` list, but none of its {} entries is a chat \
                 message (line {}: {})",
                b.s.warnings.len(),
                first.line,
                first.message
            ),
            tried: super::FORMATS.join(", "),
        });
    }
    let (bytes, hash, fix) = src.finish();
    let mut s = b.finish(path, bytes, hash);
    fix.warn(&mut s, 0);
    Ok(s)
}

/// An object with a `messages` list, or a line that is a chat message and nothing else (event
/// streams that merely have a `role` among other fields are other formats).
pub(crate) fn sniff(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    const MESSAGE_KEYS: &[&str] = &[
        "role",
        "content",
        "name",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "reasoning_content",
        "refusal",
        "annotations",
        "audio",
        "usage",
        "model",
    ];
    o.get("messages").is_some_and(|m| m.is_array())
        || (o.get("role").is_some_and(|r| r.is_string())
            && (o.contains_key("content") || o.contains_key("tool_calls"))
            && o.keys().all(|k| MESSAGE_KEYS.contains(&k.as_str())))
}
