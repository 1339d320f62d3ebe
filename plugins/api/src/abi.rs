//! The C ABI, version 1. Everything here is `#[repr(C)]` and mirrors `include/ctxlab_plugin.h`.
//!
//! Rules that keep it stable:
//! - fields are only ever appended to `PluginTable` (the host checks `size` before reading a field);
//! - memory is owned by the side that allocated it: views and sinks belong to the host and live for
//!   one call; the table and strategy descriptors belong to the plugin and live for the process;
//! - every string is UTF-8, passed as pointer + length, never NUL-terminated by contract.

use std::ffi::c_void;

/// Bumped when a change breaks existing plugins; the host refuses any other major.
pub const ABI_MAJOR: u32 = 1;
/// Bumped when fields are appended; a host reads only what `PluginTable::size` covers.
pub const ABI_MINOR: u32 = 8;
/// The one symbol a plugin exports.
pub const ENTRY_SYMBOL: &str = "ctxlab_plugin_entry_v1";

/// Borrowed UTF-8 string.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrRef {
    pub ptr: *const u8,
    pub len: usize,
}

impl StrRef {
    pub const EMPTY: StrRef = StrRef {
        ptr: std::ptr::null(),
        len: 0,
    };

    pub fn new(s: &str) -> StrRef {
        StrRef {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The bytes, unchecked: for counting or hashing them.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a` (or be null with len 0).
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            return &[];
        }
        std::slice::from_raw_parts(self.ptr, self.len)
    }

    /// # Safety
    /// `ptr` must point to `len` bytes of valid UTF-8 that outlive `'a` (or be null with len 0).
    pub unsafe fn as_str<'a>(&self) -> &'a str {
        if self.ptr.is_null() || self.len == 0 {
            return "";
        }
        let bytes = std::slice::from_raw_parts(self.ptr, self.len);
        // The host only passes UTF-8; a plugin written in C might not: never trust it blindly.
        match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8_unchecked(&bytes[..e.valid_up_to()]),
        }
    }

    /// A string of a view the host hands a plugin (`CallView`, `MessageView`, `ToolView`), read
    /// without checking its UTF-8 again: the host makes every view string from a Rust `&str`
    /// (in process, and in the `--isolate` child from decoded JSON), as this module's contract
    /// says. Plugins read a view's texts several times per call, and re-validating them was
    /// 14 % of a phi-core replay and 17 % of a LibreChat one (perf, benches/plugins.rs). What a
    /// plugin hands the host is still read with `as_str`. Debug builds check.
    ///
    /// # Safety
    /// As `as_str`; the bytes must be valid UTF-8 (the host's side of the contract).
    pub unsafe fn as_host_str<'a>(&self) -> &'a str {
        if self.ptr.is_null() || self.len == 0 {
            return "";
        }
        let bytes = std::slice::from_raw_parts(self.ptr, self.len);
        debug_assert!(
            std::str::from_utf8(bytes).is_ok(),
            "the host passed a view string that is not UTF-8"
        );
        std::str::from_utf8_unchecked(bytes)
    }
}

/// A host-owned text sink: the plugin calls `write` (possibly several times) to append bytes.
#[repr(C)]
pub struct HostWriter {
    pub ctx: *mut c_void,
    pub write: unsafe extern "C" fn(ctx: *mut c_void, ptr: *const u8, len: usize),
}

pub const ROLE_SYSTEM: u32 = 0;
pub const ROLE_USER: u32 = 1;
pub const ROLE_ASSISTANT: u32 = 2;
pub const ROLE_TOOL: u32 = 3;

/// The message is pinned: ops may not touch it unless an earlier op of the decision unpins it.
pub const FLAG_PINNED: u32 = 1 << 0;
/// The message is a summary written by a compaction (recorded or simulated).
pub const FLAG_SUMMARY: u32 = 1 << 1;
/// A user message that arrived while the agent was working (not a new request).
pub const FLAG_INJECTED: u32 = 1 << 2;
/// The message makes tool calls (`tools` lists them).
pub const FLAG_TOOL_CALL: u32 = 1 << 3;
/// The message carries tool results (`tools` lists them).
pub const FLAG_TOOL_RESULT: u32 = 1 << 4;
/// One of its tool results is an error.
pub const FLAG_ERROR: u32 = 1 << 5;
/// The message was truncated, masked or offloaded by an earlier persistent op.
pub const FLAG_EDITED: u32 = 1 << 6;
/// The message has at least one image.
pub const FLAG_IMAGE: u32 = 1 << 7;
/// The message opens a new user request (the first user message after the agent's last reply).
pub const FLAG_REQUEST: u32 = 1 << 8;
/// ABI 1.3: `content_ascii` / `content_other` are set (a 1.2 host leaves them as padding).
pub const FLAG_CONTENT: u32 = 1 << 9;
/// ABI 1.6: `CallView::message_parts` describes this message's parts (a 1.5 host leaves the flag
/// clear, and its call view ends before that field: read it only for a message with this flag).
pub const FLAG_PARTS: u32 = 1 << 10;
/// ABI 1.8: the host takes `OP_CUT` for this message, and its sink's `count_cut` counts a cut of
/// the message's text. A 1.7 host leaves the flag clear, and its sink ends before `count_cut`:
/// read that field only for a message with this flag.
pub const FLAG_CUT: u32 = 1 << 11;

/// ABI 1.6: kinds of a message's parts (`PartView::kind`).
pub const PART_TEXT: u32 = 0;
pub const PART_THINKING: u32 = 1;
/// A tool call's arguments.
pub const PART_TOOL_CALL: u32 = 2;
/// A tool result's content.
pub const PART_TOOL_RESULT: u32 = 3;

/// ABI 1.6: one part of a message's `text`. The message's text is its parts, in order, joined by
/// one "\n" (images have no text and no part): part `k` is the `bytes` bytes that follow part
/// `k − 1` and its "\n". The tool parts are `tools`, in the same order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartView {
    pub kind: u32,
    pub reserved: u32,
    pub bytes: u64,
}

/// ABI 1.6: the parts of one message.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PartList {
    pub parts: *const PartView,
    pub len: usize,
}

impl PartList {
    pub const EMPTY: PartList = PartList {
        parts: std::ptr::null(),
        len: 0,
    };
}

/// One tool call (in an assistant message) or tool result (in a tool/user message).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ToolView {
    /// The call id (for a result: the id of the call it answers).
    pub id: StrRef,
    /// Tool name (results carry the name of their call where the host knows it).
    pub name: StrRef,
    /// Call arguments (JSON text) for a call; the result content for a result.
    pub body: StrRef,
    /// 1 for a result, 0 for a call.
    pub is_result: u8,
    /// 1 when the result is an error.
    pub is_error: u8,
}

/// One message of the agent's working context, as the host holds it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MessageView {
    /// Stable id of this message within the replay (survives edits and position changes).
    pub id: u64,
    pub role: u32,
    pub flags: u32,
    /// Id of the agent that wrote it.
    pub agent: StrRef,
    /// Tokens of this message with the run's counter (per-message overhead included).
    pub tokens: u64,
    /// Characters of `text`.
    pub chars: u64,
    /// Everything the model sees of the message as one text: text parts, tool arguments and
    /// results, thinking. Tool details are also in `tools`.
    pub text: StrRef,
    pub tools: *const ToolView,
    pub tools_len: usize,
    /// Number of images and their total decoded bytes.
    pub images: u32,
    /// ABI 1.3, valid when `flags` has FLAG_CONTENT: ASCII characters of the message's content,
    /// what an OpenAI-style `content` holds: its text parts and tool-result contents joined by
    /// "\n", without thinking and tool-call arguments (for an edited message or a summary: its
    /// text). Saturates at u32::MAX. It fills what was padding: the layout is the 1.0 one.
    pub content_ascii: u32,
    pub image_bytes: u64,
    /// The agent's request number (0-based) this message belongs to.
    pub request: u32,
    /// ABI 1.3: the other (non-ASCII) characters of that content.
    pub content_other: u32,
    /// Milliseconds since the Unix epoch, or i64::MIN when unknown.
    pub timestamp_ms: i64,
}

/// The budget of the run.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetView {
    pub context_window: u64,
    pub max_output: u64,
    pub reserve: u64,
}

/// What the host tells a strategy at one call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallView {
    /// Agent making the call.
    pub agent: StrRef,
    /// Index of this call among all calls of the session.
    pub call_index: u64,
    /// Index of this call among the agent's calls.
    pub agent_call_index: u64,
    pub timestamp_ms: i64,
    pub budget: BudgetView,
    /// Calibrated fixed overhead (system prompt + tool schemas) the context carries besides messages.
    pub overhead_tokens: u64,
    /// Overhead + the sum of `messages[].tokens`: what the call would send if nothing changes.
    pub context_tokens: u64,
    /// Input tokens of the agent's previous call as replayed (0 for its first call).
    pub prev_input_tokens: u64,
    /// Provider-reported input tokens of the agent's previous call in the log; 0 when unknown,
    /// and 0 once the replayed context has left the log's (an edit by the strategy, or a
    /// compaction the log recorded and this replay did not apply), since the log's usage then
    /// measures a different context.
    pub prev_recorded_input_tokens: u64,
    /// Raw (uncalibrated) counted tokens the agent's previous call sent (0 for its first call).
    pub prev_raw_tokens: u64,
    /// Sum over the agent's previous calls of the replayed input tokens.
    pub cumulative_input_tokens: u64,
    /// Messages appended to the working context since the agent's previous call (at the end).
    pub new_messages: u64,
    /// 1 when a new user request started since the agent's previous call.
    pub new_request: u8,
    /// Number of the agent's assistant turns so far (replies already in the context).
    pub assistant_turns: u64,
    pub messages: *const MessageView,
    pub messages_len: usize,
    /// ABI 1.6: one entry per message, in the same order: its parts. A message's entry is
    /// meaningful only when its flags have `FLAG_PARTS` (an edited message, a summary: clear).
    /// A 1.5 host's view ends before this field; no message then has the flag.
    pub message_parts: *const PartList,
}

pub const OP_DROP: u32 = 0;
pub const OP_SUMMARIZE: u32 = 1;
pub const OP_TRUNCATE: u32 = 2;
/// Replace the content of each message in the range by `text`. ABI 1.4: on a message holding k
/// tool results, a `text` with k − 1 NUL (U+0000) separators gives each result its own content
/// (and with k separators, the last part is the rest of the message's text); the message's text
/// becomes the parts joined by "\n". phi-core's level 1 cuts each result of such a message on
/// its own.
pub const OP_MASK: u32 = 3;
pub const OP_OFFLOAD: u32 = 4;
pub const OP_PIN: u32 = 5;
pub const OP_UNPIN: u32 = 6;
/// ABI 1.2: the removals of the decision inside the range may separate tool calls from their
/// results (counted as split pairs), and (ABI 1.4) a literal summary there may be larger than what it
/// replaces (phi-core writes `[Summary] <short reply>`); a 1.0 host refuses the op as unknown.
pub const OP_ALLOW_SPLIT: u32 = 7;
/// ABI 1.5: removes some of the tool results of each message in the range and keeps the others
/// (phi-core counts each parallel tool result as a message of its own, and its boundaries may
/// fall between two results of one host message). `text` is a selection, one `0` (keep) or `1`
/// (remove) per tool result of the message in order, plus optionally one more for the rest of
/// its text (what follows its results); then, for each part kept, a NUL (U+0000) and its new
/// content. The message's text becomes the kept contents joined by "\n". Removing a result whose
/// call is in the context separates the pair: only inside an `OP_ALLOW_SPLIT` range (counted).
/// Removing every part is refused (that is a drop); a 1.4 host refuses the op as unknown.
pub const OP_DROP_RESULTS: u32 = 8;
/// ABI 1.7, `SCOPE_THIS_CALL` only: each message in the range gets again the this-call content
/// edit (`OP_TRUNCATE`, `OP_MASK`, `OP_OFFLOAD`, or one repeated so) the agent's previous
/// decision made to it, with the same new text and tokens; a message that decision did not edit
/// so, or that a persistent edit changed since, is sent as it is. No `text`. A strategy that
/// sends most of its view edits again call after call (LibreChat re-sends every consumed tool
/// result it keeps masked: ~1,000 a call at a 200K window) sends only the ones that changed and
/// one repeat per stretch between them, and the host works out only those. A 1.6 host refuses
/// the op as unknown.
pub const OP_REPEAT: u32 = 9;
/// ABI 1.8: each message in the range keeps the first `head_chars` **bytes** and the last
/// `tail_chars` **bytes** of its text as the view gave it (`MessageView::text`), with `text`
/// between them: a truncation whose cut points the strategy worked out itself (LibreChat snaps
/// them to newlines and measures in UTF-16 units), sent without the new text. Both cuts must
/// fall on character boundaries and `head_chars + tail_chars` must not exceed the text's length.
/// The result is then what `OP_MASK` with that text would make. A strategy that cuts the same
/// long result anew at every call (LibreChat's indicator states the current cap) hands over a
/// few bytes a cut instead of the cut text; a 1.7 host refuses the op as unknown.
pub const OP_CUT: u32 = 10;

/// The op changes the agent's history for every later call (a compaction).
pub const SCOPE_PERSISTENT: u32 = 0;
/// The op filters only what this call sends (a view filter such as fuseraft's ContextWindow).
pub const SCOPE_THIS_CALL: u32 = 1;

/// One edit of the working context. Positions index `CallView::messages` as the plugin saw them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EditOp {
    pub kind: u32,
    pub scope: u32,
    /// Half-open range of positions [start, end).
    pub start: u64,
    pub end: u64,
    /// TRUNCATE: characters kept from the head and the tail of each message in the range; CUT
    /// (ABI 1.8): bytes.
    pub head_chars: u64,
    pub tail_chars: u64,
    /// SUMMARIZE: cap of the simulated summary in tokens (0: no simulated part, `text` only).
    pub summary_max_tokens: u64,
    /// SUMMARIZE: tokens the summarizer is sent (0: the tokens of the range).
    pub summarizer_input_tokens: u64,
    /// SUMMARIZE: role of the summary message (ROLE_*).
    pub role: u32,
    /// SUMMARIZE: literal summary text (deterministic summaries); MASK: placeholder;
    /// OFFLOAD: stub; TRUNCATE and CUT: marker put between head and tail.
    pub text: StrRef,
}

pub const EVENT_NOTE: u32 = 0;
pub const EVENT_WARN: u32 = 1;
pub const EVENT_CUTOVER: u32 = 2;
pub const EVENT_FAILURE: u32 = 3;
pub const EVENT_SUPPRESSED: u32 = 4;
pub const EVENT_COMPACTION: u32 = 5;
pub const EVENT_TRUNCATION: u32 = 6;
pub const EVENT_STOP: u32 = 7;

/// Something the strategy wants the user to see at this call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventView {
    pub kind: u32,
    /// Machine-readable code in the modelled system's words (`context_budget_warn`, `L2`, …).
    pub code: StrRef,
    /// A sentence a user can read: "cumulative 120,431 ≥ CutoverAt 120,000".
    pub message: StrRef,
    /// Tokens before and after, where the event has them (0 otherwise).
    pub tokens_before: u64,
    pub tokens_after: u64,
}

pub const THRESHOLD_WARN: u32 = 0;
pub const THRESHOLD_CUTOVER: u32 = 1;
pub const THRESHOLD_TRIGGER: u32 = 2;

/// Which series a threshold is drawn against.
pub const LINE_OCCUPANCY: u32 = 0;
pub const LINE_CUMULATIVE_SINCE_COMPACTION: u32 = 1;
pub const LINE_CUMULATIVE: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ThresholdView {
    pub kind: u32,
    pub line: u32,
    pub tokens: u64,
    /// The parameter it comes from (`CutoverAt`).
    pub label: StrRef,
}

/// Host-owned sink: the plugin pushes ops, events, gauges and thresholds; the host copies them.
#[repr(C)]
pub struct Sink {
    pub ctx: *mut c_void,
    pub push_op: unsafe extern "C" fn(ctx: *mut c_void, op: *const EditOp),
    pub push_event: unsafe extern "C" fn(ctx: *mut c_void, ev: *const EventView),
    /// A named per-call value the chart can draw (LibreChat's pressure, phi-core's own estimate).
    pub push_gauge: unsafe extern "C" fn(ctx: *mut c_void, name: StrRef, value: f64),
    pub push_threshold: unsafe extern "C" fn(ctx: *mut c_void, th: *const ThresholdView),
    /// ABI 1.1: tokens of a bare text with the run's counter (`TokenCounter::count_text`), so a
    /// strategy can recount a message it cuts as the host will (null: the host has no counter).
    /// A message's tokens after an edit are `tokens − count_text(old text) + count_text(new)`.
    pub count_text: Option<unsafe extern "C" fn(ctx: *mut c_void, text: StrRef) -> u64>,
    /// ABI 1.8, read only for a message flagged `FLAG_CUT`: tokens of the text an `OP_CUT` of
    /// message `message` (its position in `CallView::messages`) would give it, the first `head`
    /// bytes of its text, `marker`, the last `tail` bytes, with the run's counter, without the
    /// text being made (`count_text` of it, for a counter that counts characters the cost of
    /// the bytes kept); `u64::MAX` when that op would be refused (a cut off a character
    /// boundary, more bytes than the text, no such message).
    pub count_cut: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            message: u64,
            head: u64,
            marker: StrRef,
            tail: u64,
        ) -> u64,
    >,
}

/// Describes one strategy a plugin exports.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrategyDesc {
    /// Globally unique id, e.g. `fuseraft.compaction`.
    pub id: StrRef,
    pub title: StrRef,
    /// The modelled system, e.g. `fuseraft`.
    pub system: StrRef,
    pub description: StrRef,
    /// JSON array of parameter specs (see `ParamSpec`).
    pub params_schema: StrRef,
    /// Comma-separated export formats, e.g. `fuseraft-yaml`.
    pub export_formats: StrRef,
}

pub const STATUS_OK: i32 = 0;
pub const STATUS_ERROR: i32 = 1;
pub const STATUS_PANIC: i32 = 2;

pub type CreateFn = unsafe extern "C" fn(
    strategy: usize,
    params_json: StrRef,
    err: *const HostWriter,
) -> *mut c_void;
pub type DecideFn = unsafe extern "C" fn(
    instance: *mut c_void,
    call: *const CallView,
    sink: *const Sink,
    err: *const HostWriter,
) -> i32;
pub type ThresholdsFn = unsafe extern "C" fn(instance: *mut c_void, sink: *const Sink) -> i32;
pub type ExportFn = unsafe extern "C" fn(
    instance: *mut c_void,
    format: StrRef,
    out: *const HostWriter,
    err: *const HostWriter,
) -> i32;
/// Parses a config file back into parameters (JSON object written to `out`).
pub type ImportFn = unsafe extern "C" fn(
    strategy: usize,
    format: StrRef,
    text: StrRef,
    out: *const HostWriter,
    err: *const HostWriter,
) -> i32;
pub type DestroyFn = unsafe extern "C" fn(instance: *mut c_void);

/// The table `ctxlab_plugin_entry_v1` returns. Fields are only ever appended.
#[repr(C)]
pub struct PluginTable {
    pub abi_major: u32,
    pub abi_minor: u32,
    /// `size_of::<PluginTable>()` as the plugin was built.
    pub size: usize,
    pub name: StrRef,
    pub version: StrRef,
    pub strategies: *const StrategyDesc,
    pub strategies_len: usize,
    pub create: CreateFn,
    pub decide: DecideFn,
    pub thresholds: ThresholdsFn,
    pub export: ExportFn,
    pub import: ImportFn,
    pub destroy: DestroyFn,
}

// The table holds raw pointers to 'static plugin data; it is read-only after construction.
unsafe impl Sync for PluginTable {}
unsafe impl Send for PluginTable {}
unsafe impl Sync for StrategyDesc {}
unsafe impl Send for StrategyDesc {}

pub type EntryFn = unsafe extern "C" fn() -> *const PluginTable;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// ABI 1.3's content counts fill what was padding in 1.0: a 1.0 plugin reads every field at
    /// the offset it was built with (64-bit layout).
    #[test]
    fn the_message_view_keeps_its_1_0_layout() {
        if size_of::<usize>() != 8 {
            return;
        }
        assert_eq!(size_of::<MessageView>(), 112);
        assert_eq!(offset_of!(MessageView, images), 80);
        assert_eq!(offset_of!(MessageView, content_ascii), 84);
        assert_eq!(offset_of!(MessageView, image_bytes), 88);
        assert_eq!(offset_of!(MessageView, request), 96);
        assert_eq!(offset_of!(MessageView, content_other), 100);
        assert_eq!(offset_of!(MessageView, timestamp_ms), 104);
    }

    /// ABI 1.6 appended `message_parts` to the call view: every 1.5 field keeps its offset, so a
    /// plugin built for 1.5 reads the view it always read.
    #[test]
    fn the_call_view_only_grew_at_its_end() {
        if size_of::<usize>() != 8 {
            return;
        }
        assert_eq!(offset_of!(CallView, assistant_turns), 128);
        assert_eq!(offset_of!(CallView, messages), 136);
        assert_eq!(offset_of!(CallView, messages_len), 144);
        assert_eq!(offset_of!(CallView, message_parts), 152);
        assert_eq!(size_of::<CallView>(), 160);
        assert_eq!(size_of::<PartView>(), 16);
        assert_eq!(size_of::<PartList>(), 16);
    }
}
