//! The safe side of the ABI: what a Rust plugin author writes against.

use crate::abi::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn from_abi(v: u32) -> Role {
        match v {
            ROLE_SYSTEM => Role::System,
            ROLE_USER => Role::User,
            ROLE_ASSISTANT => Role::Assistant,
            _ => Role::Tool,
        }
    }
    pub fn to_abi(self) -> u32 {
        match self {
            Role::System => ROLE_SYSTEM,
            Role::User => ROLE_USER,
            Role::Assistant => ROLE_ASSISTANT,
            Role::Tool => ROLE_TOOL,
        }
    }
}

/// A tool call or tool result of a message.
#[derive(Clone, Copy)]
pub struct Tool<'a>(&'a ToolView);

impl<'a> Tool<'a> {
    pub fn id(&self) -> &'a str {
        unsafe { self.0.id.as_host_str() }
    }
    /// The id's bytes: for matching calls with results.
    pub fn id_bytes(&self) -> &'a [u8] {
        unsafe { self.0.id.as_bytes() }
    }
    pub fn name(&self) -> &'a str {
        unsafe { self.0.name.as_host_str() }
    }
    /// Arguments of a call, content of a result.
    pub fn body(&self) -> &'a str {
        unsafe { self.0.body.as_host_str() }
    }
    /// The body's bytes: for strategies that only count or hash them.
    pub fn body_bytes(&self) -> &'a [u8] {
        unsafe { self.0.body.as_bytes() }
    }
    pub fn is_result(&self) -> bool {
        self.0.is_result != 0
    }
    pub fn is_error(&self) -> bool {
        self.0.is_error != 0
    }
}

/// One message of the working context (borrowed from the host for the duration of the call).
#[derive(Clone, Copy)]
pub struct Msg<'a>(&'a MessageView);

impl<'a> Msg<'a> {
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn role(&self) -> Role {
        Role::from_abi(self.0.role)
    }
    pub fn flags(&self) -> u32 {
        self.0.flags
    }
    pub fn has(&self, flag: u32) -> bool {
        self.0.flags & flag != 0
    }
    pub fn is_pinned(&self) -> bool {
        self.has(FLAG_PINNED)
    }
    pub fn is_summary(&self) -> bool {
        self.has(FLAG_SUMMARY)
    }
    pub fn is_injected(&self) -> bool {
        self.has(FLAG_INJECTED)
    }
    pub fn has_tool_calls(&self) -> bool {
        self.has(FLAG_TOOL_CALL)
    }
    pub fn has_tool_results(&self) -> bool {
        self.has(FLAG_TOOL_RESULT)
    }
    pub fn agent(&self) -> &'a str {
        unsafe { self.0.agent.as_host_str() }
    }
    /// Tokens with the run's counter.
    pub fn tokens(&self) -> u64 {
        self.0.tokens
    }
    pub fn chars(&self) -> u64 {
        self.0.chars
    }
    pub fn text(&self) -> &'a str {
        unsafe { self.0.text.as_host_str() }
    }
    /// The flattened text's bytes: for strategies that only count or hash them.
    pub fn text_bytes(&self) -> &'a [u8] {
        unsafe { self.0.text.as_bytes() }
    }
    /// Bytes of the flattened text as the host passed it: for strategies that only need its
    /// length.
    pub fn text_len(&self) -> usize {
        if self.0.text.ptr.is_null() {
            0
        } else {
            self.0.text.len
        }
    }
    pub fn tools(&self) -> impl Iterator<Item = Tool<'a>> + 'a {
        let s: &'a [ToolView] = if self.0.tools.is_null() || self.0.tools_len == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(self.0.tools, self.0.tools_len) }
        };
        s.iter().map(Tool)
    }
    pub fn images(&self) -> u32 {
        self.0.images
    }
    /// ASCII and other characters of the message's content (text parts and tool-result contents,
    /// no thinking, no tool-call arguments), when the host says (ABI 1.3, FLAG_CONTENT).
    pub fn content_chars(&self) -> Option<(u64, u64)> {
        (self.0.flags & FLAG_CONTENT != 0)
            .then_some((self.0.content_ascii as u64, self.0.content_other as u64))
    }
    pub fn image_bytes(&self) -> u64 {
        self.0.image_bytes
    }
    pub fn request(&self) -> u32 {
        self.0.request
    }
    pub fn timestamp_ms(&self) -> Option<i64> {
        (self.0.timestamp_ms != i64::MIN).then_some(self.0.timestamp_ms)
    }
}

/// The kind of a message part (ABI 1.6, `Call::parts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    /// A kind this SDK does not know (a newer host).
    Other(u32),
}

/// The parts of one message and their bytes of its text (`Call::parts`). A part whose bytes
/// would run past the text (a host bug) ends the iteration.
#[derive(Clone)]
pub struct Parts<'a> {
    parts: &'a [PartView],
    text: &'a [u8],
    at: usize,
}

impl<'a> Parts<'a> {
    pub fn len(&self) -> usize {
        self.parts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

impl<'a> Iterator for Parts<'a> {
    type Item = (PartKind, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let (p, rest) = self.parts.split_first()?;
        self.parts = rest;
        let end = self.at.checked_add(p.bytes as usize)?;
        if end > self.text.len() {
            self.parts = &[];
            return None;
        }
        let bytes = &self.text[self.at..end];
        self.at = end + 1;
        let kind = match p.kind {
            PART_TEXT => PartKind::Text,
            PART_THINKING => PartKind::Thinking,
            PART_TOOL_CALL => PartKind::ToolCall,
            PART_TOOL_RESULT => PartKind::ToolResult,
            k => PartKind::Other(k),
        };
        Some((kind, bytes))
    }
}

/// The facts of one call and the agent's working context.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    raw: &'a CallView,
    msgs: &'a [MessageView],
    counter: Option<&'a dyn Fn(&str) -> u64>,
    cut_counter: Option<&'a CutCounter<'a>>,
}

/// The host's `Sink::count_cut` (ABI 1.8): (message, head bytes, marker, tail bytes) → tokens,
/// `u64::MAX` for a cut the host would refuse.
pub type CutCounter<'a> = dyn Fn(usize, u64, &str, u64) -> u64 + 'a;

impl<'a> Call<'a> {
    /// # Safety
    /// `raw` and the arrays it points to must be valid for `'a` (the host guarantees this for the
    /// duration of `decide`).
    pub unsafe fn from_raw(raw: &'a CallView) -> Call<'a> {
        let msgs = if raw.messages.is_null() || raw.messages_len == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(raw.messages, raw.messages_len)
        };
        Call {
            raw,
            msgs,
            counter: None,
            cut_counter: None,
        }
    }
    /// The same call with the run's token counter (ABI 1.1: the host's `Sink::count_text`).
    pub fn with_counter(self, counter: &'a dyn Fn(&str) -> u64) -> Call<'a> {
        Call {
            counter: Some(counter),
            ..self
        }
    }
    /// Tokens of a bare text with the run's counter; `None` when the host gave no counter.
    pub fn count_text(&self, text: &str) -> Option<u64> {
        self.counter.map(|c| c(text))
    }
    /// The same call with the host's count of cuts (ABI 1.8: `Sink::count_cut`).
    pub fn with_cut_counter(self, cut_counter: &'a CutCounter<'a>) -> Call<'a> {
        Call {
            cut_counter: Some(cut_counter),
            ..self
        }
    }
    /// Whether the host takes an `OpKind::Cut` of message `i` and counts its cuts (ABI 1.8:
    /// the message is flagged `FLAG_CUT`).
    pub fn takes_cut(&self, i: usize) -> bool {
        self.msgs.get(i).is_some_and(|m| m.flags & FLAG_CUT != 0)
    }
    /// Tokens, with the run's counter, of the text an `OpKind::Cut { head, tail, marker }` of
    /// message `i` would give it, without making the text; `None` when the host does not count
    /// cuts of that message or would refuse the cut.
    pub fn count_cut(&self, i: usize, head: u64, marker: &str, tail: u64) -> Option<u64> {
        if !self.takes_cut(i) {
            return None;
        }
        self.cut_counter
            .map(|c| c(i, head, marker, tail))
            .filter(|&t| t != u64::MAX)
    }
    pub fn agent(&self) -> &'a str {
        unsafe { self.raw.agent.as_host_str() }
    }
    pub fn call_index(&self) -> u64 {
        self.raw.call_index
    }
    pub fn agent_call_index(&self) -> u64 {
        self.raw.agent_call_index
    }
    pub fn timestamp_ms(&self) -> Option<i64> {
        (self.raw.timestamp_ms != i64::MIN).then_some(self.raw.timestamp_ms)
    }
    pub fn budget(&self) -> BudgetView {
        self.raw.budget
    }
    pub fn overhead_tokens(&self) -> u64 {
        self.raw.overhead_tokens
    }
    pub fn context_tokens(&self) -> u64 {
        self.raw.context_tokens
    }
    pub fn prev_input_tokens(&self) -> u64 {
        self.raw.prev_input_tokens
    }
    /// The log's usage for the agent's previous call, while the replay still sends what the log
    /// recorded (0 otherwise).
    pub fn prev_recorded_input_tokens(&self) -> u64 {
        self.raw.prev_recorded_input_tokens
    }
    pub fn prev_raw_tokens(&self) -> u64 {
        self.raw.prev_raw_tokens
    }
    pub fn cumulative_input_tokens(&self) -> u64 {
        self.raw.cumulative_input_tokens
    }
    pub fn new_messages(&self) -> u64 {
        self.raw.new_messages
    }
    pub fn new_request(&self) -> bool {
        self.raw.new_request != 0
    }
    pub fn assistant_turns(&self) -> u64 {
        self.raw.assistant_turns
    }
    pub fn len(&self) -> usize {
        self.msgs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }
    pub fn msg(&self, i: usize) -> Msg<'a> {
        Msg(&self.msgs[i])
    }
    /// The parts of message `i` (ABI 1.6), in order, each with its kind and its bytes of the
    /// message's text; `None` when the host does not describe them (a host older than 1.6, an
    /// edited message, a summary: its text is then one part).
    pub fn parts(&self, i: usize) -> Option<Parts<'a>> {
        let m = &self.msgs[i];
        if m.flags & FLAG_PARTS == 0 {
            return None;
        }
        // SAFETY: a message flagged FLAG_PARTS comes from a 1.6 host, whose view holds
        // `message_parts`, one entry per message, valid for the call (abi.rs).
        let list = unsafe {
            let raw: *const CallView = self.raw;
            let table = std::ptr::addr_of!((*raw).message_parts).read();
            if table.is_null() {
                return None;
            }
            *table.add(i)
        };
        let parts: &'a [PartView] = if list.parts.is_null() || list.len == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(list.parts, list.len) }
        };
        Some(Parts {
            parts,
            text: unsafe { m.text.as_bytes() },
            at: 0,
        })
    }
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = Msg<'a>> + ExactSizeIterator + 'a {
        self.msgs.iter().map(Msg)
    }
    /// Sum of the message tokens in a range of positions.
    pub fn tokens_in(&self, r: Range<usize>) -> u64 {
        self.msgs[r].iter().map(|m| m.tokens).sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Changes the agent's history from now on (a compaction).
    Persistent,
    /// Filters only what this call sends.
    ThisCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OpKind {
    /// Remove the messages; nothing replaces them (silent loss).
    Drop,
    /// Replace the messages with one summary message.
    Summarize {
        role: Role,
        /// Cap of the simulated summary (0: no simulated part, `text` only).
        max_tokens: u64,
        /// Tokens the summarizer is sent (0: the tokens of the range).
        summarizer_input_tokens: u64,
        /// Literal summary text (deterministic summaries), counted with the run's counter.
        text: String,
    },
    /// Keep `head` chars and `tail` chars of each message in the range, `marker` between them.
    Truncate {
        head: u64,
        tail: u64,
        marker: String,
    },
    /// Replace the content of each message (tool result) in the range by `placeholder`. On a
    /// message of k tool results, k − 1 NUL separators give each result its own content, k
    /// separators add the rest of the message's text (ABI 1.4); the text is the parts joined by "\n".
    Mask {
        placeholder: String,
    },
    /// ABI 1.8. Keep the first `head` bytes and the last `tail` bytes of each message's text
    /// (as the view gave it), `marker` between them: a truncation at cut points the strategy
    /// chose (on character boundaries), sent without the new text. It makes what `Mask` with
    /// that text would make.
    Cut {
        head: u64,
        tail: u64,
        marker: String,
    },
    /// Move the content out of the context; `stub` stays in its place.
    Offload {
        stub: String,
    },
    Pin,
    Unpin,
    /// ABI 1.2. The removals (drop, summarize) of this decision inside the range may separate a
    /// tool call from its result, as a modelled system that keeps orphan results does (FIM One's
    /// smart_truncate and llm_compact); the host accepts them and counts every pair they separate
    /// in the run's split tool pairs. A literal summary inside it may be larger than what it
    /// replaces (phi-core's `[Summary] <short reply>`). Must precede the removals it covers;
    /// changes nothing itself.
    AllowSplit,
    /// ABI 1.5. Removes some tool results of each message in the range and keeps the others:
    /// `remove[j]` says whether the message's j-th tool result goes; one more entry, when given,
    /// is for the rest of its text (what follows its results). `contents` are the new contents
    /// of the parts that stay, in order (one per `false`); the message's text becomes them
    /// joined by "\n". A removed result whose call is in the context is a separated pair: only
    /// inside an `AllowSplit` range (counted). Removing every part is refused: that is a `Drop`.
    DropResults {
        remove: Vec<bool>,
        contents: Vec<String>,
    },
    /// ABI 1.7, `ThisCall` only. Each message in the range gets again the this-call content edit
    /// (`Truncate`, `Mask`, `Offload`, or one repeated so) the agent's previous decision made to
    /// it, with the same text and tokens; a message that decision did not edit so (or that a
    /// persistent edit changed since) is sent as it is. A strategy that re-sends most of its view
    /// edits call after call sends the changed ones and a `Repeat` per stretch between them.
    Repeat,
}

impl OpKind {
    /// `DropResults` as the op's text (`abi::OP_DROP_RESULTS`): the selection, then a NUL and
    /// the content of each part kept.
    pub fn drop_results_text(remove: &[bool], contents: &[String]) -> String {
        let mut t: String = remove.iter().map(|&r| if r { '1' } else { '0' }).collect();
        for c in contents {
            t.push('\0');
            t.push_str(c);
        }
        t
    }

    /// The op's text back as `DropResults`, or why it is not one.
    pub fn parse_drop_results(text: &str) -> Result<OpKind, String> {
        let mut parts = text.split('\0');
        let selection = parts.next().unwrap_or("");
        let remove = selection
            .chars()
            .map(|c| match c {
                '0' => Ok(false),
                '1' => Ok(true),
                other => Err(format!(
                    "drop_results selection holds {other:?}; expected only '0' (keep) and '1' (remove)"
                )),
            })
            .collect::<Result<Vec<bool>, String>>()?;
        Ok(OpKind::DropResults {
            remove,
            contents: parts.map(str::to_string).collect(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub kind: OpKind,
    pub scope: Scope,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Note,
    Warn,
    Cutover,
    Failure,
    Suppressed,
    Compaction,
    Truncation,
    Stop,
}

impl EventKind {
    pub fn to_abi(self) -> u32 {
        match self {
            EventKind::Note => EVENT_NOTE,
            EventKind::Warn => EVENT_WARN,
            EventKind::Cutover => EVENT_CUTOVER,
            EventKind::Failure => EVENT_FAILURE,
            EventKind::Suppressed => EVENT_SUPPRESSED,
            EventKind::Compaction => EVENT_COMPACTION,
            EventKind::Truncation => EVENT_TRUNCATION,
            EventKind::Stop => EVENT_STOP,
        }
    }
    pub fn from_abi(v: u32) -> EventKind {
        match v {
            EVENT_WARN => EventKind::Warn,
            EVENT_CUTOVER => EventKind::Cutover,
            EVENT_FAILURE => EventKind::Failure,
            EVENT_SUPPRESSED => EventKind::Suppressed,
            EVENT_COMPACTION => EventKind::Compaction,
            EVENT_TRUNCATION => EventKind::Truncation,
            EVENT_STOP => EventKind::Stop,
            _ => EventKind::Note,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Note => "note",
            EventKind::Warn => "warn",
            EventKind::Cutover => "cutover",
            EventKind::Failure => "failure",
            EventKind::Suppressed => "suppressed",
            EventKind::Compaction => "compaction",
            EventKind::Truncation => "truncation",
            EventKind::Stop => "stop",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    pub code: String,
    pub message: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// What a strategy answers at one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub ops: Vec<Op>,
    pub events: Vec<Event>,
    pub gauges: Vec<(String, f64)>,
}

impl Decision {
    /// Empty, keeping the lists' room (the runtime reuses one decision for every call).
    pub fn clear(&mut self) {
        self.ops.clear();
        self.events.clear();
        self.gauges.clear();
    }
    pub fn op(&mut self, kind: OpKind, scope: Scope, range: Range<usize>) -> &mut Self {
        self.ops.push(Op {
            kind,
            scope,
            start: range.start,
            end: range.end,
        });
        self
    }
    pub fn drop_range(&mut self, range: Range<usize>, scope: Scope) -> &mut Self {
        self.op(OpKind::Drop, scope, range)
    }
    /// A simulated summary (size from the host's summarizer model, capped at `max_tokens`).
    pub fn summarize(&mut self, range: Range<usize>, role: Role, max_tokens: u64) -> &mut Self {
        self.op(
            OpKind::Summarize {
                role,
                max_tokens,
                summarizer_input_tokens: 0,
                text: String::new(),
            },
            Scope::Persistent,
            range,
        )
    }
    pub fn event(&mut self, kind: EventKind, code: &str, message: impl Into<String>) -> &mut Self {
        self.events.push(Event {
            kind,
            code: code.to_string(),
            message: message.into(),
            tokens_before: 0,
            tokens_after: 0,
        });
        self
    }
    pub fn event_tokens(
        &mut self,
        kind: EventKind,
        code: &str,
        message: impl Into<String>,
        before: u64,
        after: u64,
    ) -> &mut Self {
        self.events.push(Event {
            kind,
            code: code.to_string(),
            message: message.into(),
            tokens_before: before,
            tokens_after: after,
        });
        self
    }
    pub fn gauge(&mut self, name: &str, value: f64) -> &mut Self {
        self.gauges.push((name.to_string(), value));
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdKind {
    Warn,
    Cutover,
    Trigger,
}

/// Which series a threshold line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// Context occupancy (tokens in the window at a call).
    Occupancy,
    /// Per-agent cumulative input tokens since the last compaction (fuseraft's chart).
    CumulativeSinceCompaction,
    /// Per-agent cumulative input tokens.
    Cumulative,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub kind: ThresholdKind,
    pub line: Line,
    pub tokens: u64,
    /// The parameter it comes from, e.g. `CutoverAt`.
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    Int,
    Float,
    Bool,
    String,
    /// One of `choices`.
    Enum,
    /// A list of strings (`ExcludeAgents`).
    StringList,
    /// A list of integers (CodeTether's keep_last candidates).
    IntList,
    /// A map from string to integer (`ToolResultCharOverrides`).
    IntMap,
}

/// One parameter of a strategy, as the UI and CLI show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// The name used with `--param` and in profiles.
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ParamType,
    pub default: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    pub description: String,
    /// Where it lives in the target system's config (`Compaction.TriggerTurnCount`).
    #[serde(default)]
    pub key: String,
}

impl ParamSpec {
    pub fn new(name: &str, ty: ParamType, default: Value, description: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_string(),
            ty,
            default,
            min: None,
            max: None,
            choices: Vec::new(),
            description: description.to_string(),
            key: String::new(),
        }
    }
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }
    pub fn min(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }
    pub fn choices(mut self, c: &[&str]) -> Self {
        self.choices = c.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn key(mut self, key: &str) -> Self {
        self.key = key.to_string();
        self
    }

    /// Checks the spec itself: a range whose minimum exceeds its maximum, a default that is not a
    /// value of the parameter (wrong type, outside the range, not one of the choices) would make
    /// every run with the defaults fail, or pass the strategy something it never declared.
    pub fn check_spec(&self) -> Result<(), String> {
        let name = &self.name;
        if name.is_empty() {
            return Err("a parameter has an empty name".into());
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min > max {
                return Err(format!(
                    "parameter {name}: its minimum {min} exceeds its maximum {max}"
                ));
            }
        }
        if self.ty == ParamType::Enum && self.choices.is_empty() {
            return Err(format!("parameter {name}: an enum without choices"));
        }
        self.check(&self.default)
            .map_err(|e| format!("its default does not pass its own schema: {e}"))
    }

    /// Checks one value against this spec; the error names the parameter and what was expected.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        let name = &self.name;
        let ok_type = match self.ty {
            // Only what fits an i64: a larger integer would reach the strategy as 0 through
            // `Params::int` (and the C ABI's int64 fields), not as the value given.
            ParamType::Int => v.as_i64().is_some(),
            ParamType::Float => v.as_f64().is_some(),
            ParamType::Bool => v.is_boolean(),
            ParamType::String => v.is_string() || v.is_null(),
            ParamType::Enum => v
                .as_str()
                .map(|s| self.choices.iter().any(|c| c == s))
                .unwrap_or(false),
            ParamType::StringList => v
                .as_array()
                .map(|a| a.iter().all(|x| x.is_string()))
                .unwrap_or(false),
            ParamType::IntList => v
                .as_array()
                .map(|a| a.iter().all(|x| x.as_i64().is_some()))
                .unwrap_or(false),
            ParamType::IntMap => v
                .as_object()
                .map(|o| o.values().all(|x| x.as_i64().is_some()))
                .unwrap_or(false),
        };
        let too_big = v.is_u64()
            || v.as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() >= 9.2e18);
        if !ok_type && self.ty == ParamType::Int && too_big {
            return Err(format!(
                "parameter {name}: {v} is out of range (integers from {} to {})",
                i64::MIN,
                i64::MAX
            ));
        }
        if !ok_type {
            let expected = match self.ty {
                ParamType::Enum => format!("one of {}", self.choices.join(", ")),
                ParamType::Int => "an integer".into(),
                ParamType::Float => "a number".into(),
                ParamType::Bool => "true or false".into(),
                ParamType::String => "a string".into(),
                ParamType::StringList => "a list of strings".into(),
                ParamType::IntList => "a list of integers".into(),
                ParamType::IntMap => "a map of name to integer".into(),
            };
            return Err(format!("parameter {name}: expected {expected}, got {v}"));
        }
        if let Some(x) = v.as_f64() {
            if let Some(min) = self.min {
                if x < min {
                    return Err(format!("parameter {name}: {x} is below the minimum {min}"));
                }
            }
            if let Some(max) = self.max {
                if x > max {
                    return Err(format!("parameter {name}: {x} is above the maximum {max}"));
                }
            }
        }
        Ok(())
    }
}

/// Whether two parameter values are the same value: numbers compare by what they are, not how
/// they are written (`3` and `3.0`, as a whole-number float reads back from TOML or YAML), and
/// lists and maps element by element. Export round-trip checks use this, not `==` on JSON.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(i), Some(j), _, _) => i == j,
                (_, _, Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).map(|b| same_value(a, b)).unwrap_or(false))
        }
        _ => a == b,
    }
}

/// Parameter values checked against a schema, with defaults filled in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params(Map<String, Value>);

impl Params {
    /// Fills defaults and checks every value; unknown names are an error naming the known ones.
    pub fn resolve(schema: &[ParamSpec], given: &Value) -> Result<Params, String> {
        let empty = Map::new();
        let given = match given {
            Value::Null => &empty,
            Value::Object(o) => o,
            other => return Err(format!("parameters must be a JSON object, got {other}")),
        };
        for k in given.keys() {
            if !schema.iter().any(|s| &s.name == k) {
                let known: Vec<&str> = schema.iter().map(|s| s.name.as_str()).collect();
                return Err(format!(
                    "unknown parameter {k}; known parameters: {}",
                    known.join(", ")
                ));
            }
        }
        let mut out = Map::new();
        for spec in schema {
            let v = given.get(&spec.name).unwrap_or(&spec.default);
            // Integers given as floats with no fraction (from TOML/CLI) are accepted as integers.
            let v = match (spec.ty, v.as_f64()) {
                // Within i64 only: `as` would saturate 1e20 to i64::MAX without a word.
                (ParamType::Int, Some(f)) if v.is_f64() && f.fract() == 0.0 && f.abs() < 9.2e18 => {
                    Value::from(f as i64)
                }
                _ => v.clone(),
            };
            spec.check(&v)?;
            out.insert(spec.name.clone(), v);
        }
        Ok(Params(out))
    }
    pub fn get(&self, name: &str) -> &Value {
        self.0.get(name).unwrap_or(&Value::Null)
    }
    pub fn int(&self, name: &str) -> i64 {
        self.get(name).as_i64().unwrap_or(0)
    }
    pub fn uint(&self, name: &str) -> u64 {
        self.int(name).max(0) as u64
    }
    pub fn float(&self, name: &str) -> f64 {
        self.get(name).as_f64().unwrap_or(0.0)
    }
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).as_bool().unwrap_or(false)
    }
    pub fn str(&self, name: &str) -> &str {
        self.get(name).as_str().unwrap_or("")
    }
    pub fn str_list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
    pub fn int_list(&self, name: &str) -> Vec<i64> {
        self.get(name)
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
            .unwrap_or_default()
    }
    pub fn int_map(&self, name: &str) -> Vec<(String, i64)> {
        self.get(name)
            .as_object()
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| v.as_i64().map(|n| (k.clone(), n)))
                    .collect()
            })
            .unwrap_or_default()
    }
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }
    /// Only the values that differ from the schema's defaults.
    pub fn non_defaults(&self, schema: &[ParamSpec]) -> Map<String, Value> {
        schema
            .iter()
            .filter(|s| self.get(&s.name) != &s.default)
            .map(|s| (s.name.clone(), self.get(&s.name).clone()))
            .collect()
    }
}

/// Static description of a strategy.
#[derive(Debug, Clone)]
pub struct StrategyInfo {
    pub id: &'static str,
    pub title: &'static str,
    pub system: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamSpec>,
    pub export_formats: &'static [&'static str],
}

/// One running instance of a strategy for one replay. It sees every call of every agent in
/// time order; keep per-agent state keyed by `Call::agent`.
pub trait Strategy: Send {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String>;
    /// Threshold lines the chart draws for this strategy's parameters.
    fn thresholds(&self) -> Vec<Threshold> {
        Vec::new()
    }
    /// The parameters as the target system's config file.
    fn export(&self, format: &str) -> Result<String, String>;
}

/// Creates instances of one strategy and parses its config files back.
pub trait StrategyFactory: Sync {
    fn info(&self) -> StrategyInfo;
    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String>;
    /// Parses a config file in one of `export_formats` back into parameter values (JSON object).
    fn import(&self, format: &str, text: &str) -> Result<Value, String>;
}

/// `120431` → `"120,431"`: every number a user reads has thousands separators.
/// ASCII and other (non-ASCII) characters of `text`: what `MessageView::content_ascii` and
/// `content_other` hold for a message's content. ASCII bytes and UTF-8 leading bytes are counted,
/// so it is one pass over the bytes.
pub fn ascii_other_chars(text: &str) -> (u64, u64) {
    let mut ascii = 0u64;
    let mut other = 0u64;
    for &b in text.as_bytes() {
        if b < 0x80 {
            ascii += 1;
        } else if b & 0xC0 != 0x80 {
            other += 1;
        }
    }
    (ascii, other)
}

pub fn fmt_tokens(n: u64) -> String {
    let mut out = String::new();
    push_tokens(&mut out, n);
    out
}

/// [`fmt_tokens`] written at the end of `out`, without the formatting machinery or a string of
/// its own: for an event message a plugin writes at every call.
pub fn push_tokens(out: &mut String, mut n: u64) {
    // u64::MAX has 20 digits and 6 separators.
    let mut buf = [0u8; 26];
    let mut i = buf.len();
    let mut digits = 0;
    loop {
        if digits > 0 && digits % 3 == 0 {
            i -= 1;
            buf[i] = b',';
        }
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        digits += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Digits and commas: ASCII.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thousands_separators() {
        assert_eq!(fmt_tokens(0), "0");
        assert_eq!(fmt_tokens(999), "999");
        assert_eq!(fmt_tokens(1000), "1,000");
        assert_eq!(fmt_tokens(120431), "120,431");
        assert_eq!(fmt_tokens(1234567), "1,234,567");
        assert_eq!(fmt_tokens(u64::MAX), "18,446,744,073,709,551,615");
        for n in [0, 7, 999, 1000, 99_999, 100_000, 123_456_789, 1 << 40] {
            let plain = n.to_string();
            assert_eq!(fmt_tokens(n).replace(',', ""), plain, "{n}");
            let mut s = String::from("at ");
            push_tokens(&mut s, n);
            assert_eq!(s, format!("at {}", fmt_tokens(n)));
        }
    }

    fn schema() -> Vec<ParamSpec> {
        vec![
            ParamSpec::new("TriggerTurnCount", ParamType::Int, json!(50), "t").min(1.0),
            ParamSpec::new("Ratio", ParamType::Float, json!(0.1), "r").range(0.0, 1.0),
            ParamSpec::new("Mode", ParamType::Enum, json!("llm"), "m").choices(&["llm", "intent"]),
        ]
    }

    #[test]
    fn params_fill_defaults_and_check_ranges() {
        let p = Params::resolve(&schema(), &json!({"TriggerTurnCount": 40.0})).unwrap();
        assert_eq!(p.int("TriggerTurnCount"), 40);
        assert_eq!(p.float("Ratio"), 0.1);
        assert_eq!(p.str("Mode"), "llm");
        assert_eq!(p.non_defaults(&schema()).len(), 1);
        let e = Params::resolve(&schema(), &json!({"Ratio": 1.5})).unwrap_err();
        assert!(e.contains("Ratio") && e.contains("maximum"), "{e}");
        let e = Params::resolve(&schema(), &json!({"Mode": "lossy"})).unwrap_err();
        assert!(e.contains("one of llm, intent"), "{e}");
        let e = Params::resolve(&schema(), &json!({"Nope": 1})).unwrap_err();
        assert!(
            e.contains("unknown parameter Nope") && e.contains("TriggerTurnCount"),
            "{e}"
        );
    }

    #[test]
    fn values_compare_as_numbers_not_as_text() {
        assert!(same_value(&json!(3), &json!(3.0)));
        assert!(same_value(&json!(1), &json!(1.0)));
        assert!(same_value(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!same_value(&json!(3), &json!(3.5)));
        assert!(!same_value(&json!(3), &json!("3")));
        assert!(same_value(&json!([1, {"a": 2}]), &json!([1.0, {"a": 2.0}])));
        assert!(!same_value(&json!([1, 2]), &json!([1])));
        assert!(!same_value(&json!({"a": 1}), &json!({"b": 1})));
        assert!(same_value(&json!(null), &json!(null)));
    }
}
