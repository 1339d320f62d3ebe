//! Per-call edits of one agent's view, as a plan over positions, and its translation into ops the
//! host accepts (sorted, non-overlapping, tool pairs never split, at most `MAX_OPS`).
//!
//! The ContextWindow filters run in fuseraft's order: TextOnly / ExcludeAgents → MaxTurnAge →
//! MaxTailMessages, then MaxToolResultChars (consumed reads at 500) and MaxReplayChars.

use crate::intent;
use crate::settings::{AgentWindow, CONSUMED_READ_CHARS};
use ctxlab_plugin_api::sdk::{Call, Decision, Msg, OpKind, Role, Scope};
use std::cell::OnceCell;
use std::collections::HashMap;

/// FNV-1a (`ctxlab_plugin_api::hash`): the pair index hashes every call id of the view at each
/// planned call, and SipHash was a visible share of that. Only looked up, never iterated, so the
/// hasher changes no order.
use ctxlab_plugin_api::hash::FnvMap;

/// The host refuses a decision with more ops than this.
pub const MAX_OPS: usize = 256;

pub const STRIPPED: &str = "[tool result omitted — ContextWindow]";
/// `ToolResultWindowTrimmer`'s tombstone (fuseraft adds the call's label and a 300-char preview).
pub const EVICTED: &str = "[tool result — evicted after tool window exceeded]";

/// The marker a truncation ends with, written out only for the ops a call emits (most planned
/// truncations of a long view are only counted, never sent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Marker {
    /// `[… N chars omitted]` (MaxToolResultChars, the trim retry), with the message's chars.
    Omitted(u64),
    /// The consumed-read marker, with the message's chars.
    Consumed(u64),
    /// `[… truncated for replay — N chars total]` (MaxReplayChars), with the message's chars.
    Replay(u64),
}

const OMITTED: (&str, &str) = ("\n[… ", " chars omitted]");
const CONSUMED: (&str, &str) = (
    "\n[… ",
    " chars omitted — the file was modified later (write_file/patch_file); re-read it if needed]",
);
const REPLAY: (&str, &str) = ("\n[… truncated for replay — ", " chars total]");

impl Marker {
    fn parts(self, head: u64) -> ((&'static str, &'static str), u64) {
        match self {
            Marker::Omitted(chars) => (OMITTED, chars - head),
            Marker::Consumed(chars) => (CONSUMED, chars - head),
            Marker::Replay(chars) => (REPLAY, chars),
        }
    }

    /// The marker's text after `head` kept chars.
    pub fn text(self, head: u64) -> String {
        let ((pre, post), n) = self.parts(head);
        format!("{pre}{}{post}", ctxlab_plugin_api::sdk::fmt_tokens(n))
    }

    /// `intent::estimate_tokens(&self.text(head))` without writing the text: the number is ASCII
    /// digits and separators.
    pub fn tokens(self, head: u64) -> u64 {
        let ((pre, post), n) = self.parts(head);
        let count = |s: &str| {
            s.chars().fold((0u64, 0u64), |(a, o), c| {
                if c.is_ascii() {
                    (a + 1, o)
                } else {
                    (a, o + 1)
                }
            })
        };
        let (a1, o1) = count(pre);
        let (a2, o2) = count(post);
        let digits = n.checked_ilog10().unwrap_or(0) as u64 + 1;
        let ascii = a1 + a2 + digits + (digits - 1) / 3;
        ascii.div_ceil(4) + o1 + o2 + 4
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    Keep,
    /// Taken by a persistent op of this decision (or the prefix no filter touches).
    Locked,
    Drop,
    Truncate {
        head: u64,
        marker: Marker,
    },
    Mask(&'static str),
}

impl Action {
    fn kept(&self) -> bool {
        !matches!(self, Action::Drop)
    }
}

/// Messages no view filter removes: the system prompt, pinned messages and compaction summaries.
pub fn protected(m: &Msg) -> bool {
    m.role() == Role::System || m.is_pinned() || m.is_summary()
}

/// A message that only makes tool calls (no text of its own): what TextOnly calls a frame.
pub fn is_pure_frame(m: &Msg) -> bool {
    if !m.has_tool_calls() {
        return false;
    }
    let text = m.text();
    let mut bodies = m.tools().map(|t| t.body()).filter(|b| !b.is_empty());
    if let (Some(body), None) = (bodies.next(), bodies.next()) {
        // One body (the usual frame): the text less its first occurrence, without a copy.
        let blank = |s: &str| s.trim().is_empty();
        return match text.find(body) {
            Some(at) => blank(&text[..at]) && blank(&text[at + body.len()..]),
            None => blank(text),
        };
    }
    let mut rest = m.text().to_string();
    for t in m.tools() {
        if !t.body().is_empty() {
            rest = rest.replacen(t.body(), "", 1);
        }
    }
    rest.trim().is_empty()
}

/// Where the calls and results of the view sit (borrowing the view's strings: no copies).
pub struct PairIndex<'a> {
    /// call id → position of the message making it.
    pub call_pos: FnvMap<&'a str, usize>,
    /// call id → (tool name, arguments).
    pub call_info: FnvMap<&'a str, (&'a str, &'a str)>,
    /// position of a call message → positions of the messages answering it.
    pub results_of: HashMap<usize, Vec<usize>>,
    /// Consumed reads of the view, worked out once per call (the filters and every trim stage
    /// ask).
    consumed: OnceCell<Vec<bool>>,
}

impl<'a> PairIndex<'a> {
    pub fn build(call: &Call<'a>, from: usize) -> PairIndex<'a> {
        let mut idx = PairIndex {
            call_pos: FnvMap::default(),
            call_info: FnvMap::default(),
            results_of: HashMap::new(),
            consumed: OnceCell::new(),
        };
        for i in from..call.len() {
            let m = call.msg(i);
            for t in m.tools() {
                if t.is_result() {
                    if let Some(&c) = idx.call_pos.get(t.id()) {
                        let v = idx.results_of.entry(c).or_default();
                        if v.last() != Some(&i) {
                            v.push(i);
                        }
                    }
                } else {
                    idx.call_pos.insert(t.id(), i);
                    idx.call_info.insert(t.id(), (t.name(), t.body()));
                }
            }
        }
        idx
    }
    /// Positions of the call messages a result message answers.
    fn calls_of(&self, m: &Msg) -> Vec<usize> {
        m.tools()
            .filter(|t| t.is_result())
            .filter_map(|t| self.call_pos.get(t.id()).copied())
            .collect()
    }
    /// Tool name of a result message (the result's own name, else its call's).
    pub fn tool_name(&self, m: &Msg<'a>) -> &'a str {
        for t in m.tools().filter(|t| t.is_result()) {
            if !t.name().is_empty() {
                return t.name();
            }
            if let Some((n, _)) = self.call_info.get(t.id()) {
                return n;
            }
        }
        ""
    }
    /// The file a read result came from, when its call was a read.
    fn read_path(&self, m: &Msg) -> Option<String> {
        m.tools().filter(|t| t.is_result()).find_map(|t| {
            let (name, args) = self.call_info.get(t.id())?;
            intent::is_read_tool(name)
                .then(|| intent::path(args))
                .flatten()
        })
    }
}

/// Reads (positions) whose file is written or patched later in the view.
fn consumed_reads(call: &Call, idx: &PairIndex, from: usize) -> Vec<bool> {
    let n = call.len();
    let mut last_write: HashMap<String, usize> = HashMap::new();
    for i in from..n {
        for t in call.msg(i).tools().filter(|t| !t.is_result()) {
            if intent::is_write_tool(t.name()) {
                if let Some(p) = intent::path(t.body()) {
                    last_write.insert(p, i);
                }
            }
        }
    }
    let mut out = vec![false; n];
    if last_write.is_empty() {
        return out;
    }
    for (i, slot) in out.iter_mut().enumerate().skip(from) {
        let m = call.msg(i);
        if m.has_tool_results() {
            if let Some(p) = idx.read_path(&m) {
                *slot = last_write.get(&p).is_some_and(|&w| w > i);
            }
        }
    }
    out
}

pub fn replay_marker(chars: u64) -> String {
    Marker::Replay(chars).text(0)
}

/// TextOnly / ExcludeAgents: which messages leave the view.
pub fn strip(call: &Call, idx: &PairIndex, plan: &mut [Action], tools: bool, exclude: &[String]) {
    for (i, a) in plan.iter_mut().enumerate() {
        if *a != Action::Keep {
            continue;
        }
        let m = call.msg(i);
        if protected(&m) {
            continue;
        }
        if m.role() == Role::Assistant && exclude.iter().any(|x| x == m.agent()) {
            *a = Action::Drop;
        } else if tools && m.has_tool_results() && !m.has_tool_calls() {
            *a = Action::Drop;
        } else if tools && is_pure_frame(&m) {
            *a = Action::Drop;
        }
    }
    // A result answering a call that stays in the view keeps its place (emptied), so the call is
    // never left without its answer.
    for i in 0..plan.len() {
        if plan[i] == Action::Drop && call.msg(i).has_tool_results() {
            let m = call.msg(i);
            if idx.calls_of(&m).iter().any(|&c| plan[c].kept()) {
                plan[i] = Action::Mask(STRIPPED);
            }
        }
    }
}

/// Drops every droppable message before `cut`.
fn drop_before(call: &Call, plan: &mut [Action], cut: usize) {
    for (i, a) in plan.iter_mut().enumerate().take(cut) {
        if *a != Action::Locked && !protected(&call.msg(i)) {
            *a = Action::Drop;
        }
    }
}

/// MaxTurnAge: keep the messages of the last `n` assistant turns (and the open turn after them).
pub fn turn_age(call: &Call, plan: &mut [Action], n: u64) {
    let mut seen = 0;
    for i in (0..plan.len()).rev() {
        let m = call.msg(i);
        if plan[i].kept() && m.role() == Role::Assistant && !m.is_summary() {
            seen += 1;
            if seen == n + 1 {
                drop_before(call, plan, i + 1);
                return;
            }
        }
    }
}

/// MaxTailMessages: keep the last `n` messages of the filtered view. Returns how many the filtered
/// view held before the cap (for ContextCapFraction).
pub fn tail(call: &Call, plan: &mut [Action], n: u64) -> u64 {
    let kept = plan.iter().filter(|a| a.kept()).count() as u64;
    if kept > n {
        let mut count = 0;
        for i in (0..plan.len()).rev() {
            if plan[i].kept() {
                count += 1;
                if count == n {
                    drop_before(call, plan, i);
                    break;
                }
            }
        }
    }
    kept
}

/// Makes every dropped run closed under tool pairs: a dropped call drops its results; a dropped
/// result whose call stays is emptied instead; a call whose results are dropped in another run
/// (a kept message between them) stays with its results emptied.
pub fn close_pairs(call: &Call, idx: &PairIndex, plan: &mut [Action]) {
    for (&c, results) in &idx.results_of {
        if plan[c] == Action::Drop {
            for &r in results {
                if plan[r] != Action::Locked {
                    plan[r] = Action::Drop;
                }
            }
        }
    }
    for i in 0..plan.len() {
        if plan[i] == Action::Drop && call.msg(i).has_tool_results() {
            let m = call.msg(i);
            if idx.calls_of(&m).iter().any(|&c| plan[c].kept()) {
                plan[i] = Action::Mask(STRIPPED);
            }
        }
    }
    for (&c, results) in &idx.results_of {
        if plan[c] != Action::Drop {
            continue;
        }
        let last = results.iter().copied().max().unwrap_or(c);
        if (c..=last).any(|j| plan[j] != Action::Drop) {
            plan[c] = Action::Keep;
            for &r in results {
                if plan[r] == Action::Drop {
                    plan[r] = Action::Mask(STRIPPED);
                }
            }
        }
    }
}

/// Caps tool results at `cap_of(tool)` chars (consumed reads at 500) and replayed assistant text
/// (before `turn_start`) at `replay_chars`.
pub fn truncate<'a>(
    call: &Call<'a>,
    idx: &PairIndex<'a>,
    plan: &mut [Action],
    cap_of: &dyn Fn(&str) -> u64,
    consumed_rule: bool,
    replay_chars: u64,
    turn_start: usize,
) {
    let consumed: &[bool] = if consumed_rule {
        idx.consumed.get_or_init(|| consumed_reads(call, idx, 0))
    } else {
        &[]
    };
    for i in 0..plan.len() {
        let m = call.msg(i);
        let chars = m.chars();
        let current = match &plan[i] {
            Action::Keep => u64::MAX,
            Action::Truncate { head, .. } => *head,
            _ => continue,
        };
        if m.has_tool_results() {
            let is_consumed = consumed.get(i).copied().unwrap_or(false);
            let mut cap = cap_of(idx.tool_name(&m));
            if is_consumed {
                cap = if cap == 0 {
                    CONSUMED_READ_CHARS
                } else {
                    cap.min(CONSUMED_READ_CHARS)
                };
            }
            if cap > 0 && chars > cap && cap < current {
                let marker = if is_consumed && cap == CONSUMED_READ_CHARS {
                    Marker::Consumed(chars)
                } else {
                    Marker::Omitted(chars)
                };
                plan[i] = Action::Truncate { head: cap, marker };
            }
        } else if replay_chars > 0
            && i < turn_start
            && m.role() == Role::Assistant
            && !m.has_tool_calls()
            && !protected(&m)
            && chars > replay_chars
            && replay_chars < current
        {
            plan[i] = Action::Truncate {
                head: replay_chars,
                marker: Marker::Replay(chars),
            };
        }
    }
}

/// The full ContextWindow filter of one agent's view.
pub fn filter(
    call: &Call,
    idx: &PairIndex,
    plan: &mut [Action],
    w: &AgentWindow,
    turn_start: usize,
) -> Option<u64> {
    strip(call, idx, plan, w.strips_tools(), &w.exclude_agents);
    if w.max_turn_age > 0 {
        turn_age(call, plan, w.max_turn_age);
    }
    let mut filtered = None;
    if w.max_tail_messages > 0 {
        close_pairs(call, idx, plan);
        filtered = Some(tail(call, plan, w.max_tail_messages));
    }
    close_pairs(call, idx, plan);
    truncate(
        call,
        idx,
        plan,
        &|tool| w.tool_cap(tool),
        w.max_tool_result_chars > 0,
        w.replay_chars(),
        turn_start,
    );
    filtered
}

/// Tokens the plan takes off the view (an estimate for truncations and masks).
pub fn saved_tokens(call: &Call, plan: &[Action]) -> u64 {
    plan.iter()
        .enumerate()
        .map(|(i, a)| {
            let m = call.msg(i);
            match a {
                Action::Drop => m.tokens(),
                Action::Truncate { head, marker } => {
                    let kept = m.tokens() * head / m.chars().max(1) + marker.tokens(*head);
                    m.tokens().saturating_sub(kept)
                }
                Action::Mask(p) => m.tokens().saturating_sub(intent::estimate_tokens(p)),
                _ => 0,
            }
        })
        .sum()
}

/// Emits the plan's edits as this-call ops, newest first when more than `room` are needed.
/// Returns how many edits were left out.
pub fn emit(plan: &[Action], room: usize, out: &mut Decision) -> usize {
    // (start, end, action) of each edit; texts are written only for the ops sent.
    let mut ops: Vec<(usize, usize, Action)> = Vec::new();
    let mut i = 0;
    while i < plan.len() {
        match plan[i] {
            Action::Drop => {
                let s = i;
                while i < plan.len() && plan[i] == Action::Drop {
                    i += 1;
                }
                ops.push((s, i, Action::Drop));
                continue;
            }
            a @ (Action::Truncate { .. } | Action::Mask(_)) => ops.push((i, i + 1, a)),
            Action::Keep | Action::Locked => {}
        }
        i += 1;
    }
    let skip = ops.len().saturating_sub(room);
    for (s, e, a) in ops.into_iter().skip(skip) {
        let kind = match a {
            Action::Truncate { head, marker } => OpKind::Truncate {
                head,
                tail: 0,
                marker: marker.text(head),
            },
            Action::Mask(p) => OpKind::Mask {
                placeholder: p.to_string(),
            },
            _ => OpKind::Drop,
        };
        out.op(kind, Scope::ThisCall, s..e);
    }
    skip
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlab_plugin_api::testing::{TestCall, TestMsg, TestTool};

    /// The markers as they were written before texts became lazy.
    fn written(kind: &str, chars: u64, head: u64) -> String {
        let f = ctxlab_plugin_api::sdk::fmt_tokens;
        match kind {
            "omitted" => format!("\n[… {} chars omitted]", f(chars - head)),
            "consumed" => format!(
                "\n[… {} chars omitted — the file was modified later (write_file/patch_file); re-read it if needed]",
                f(chars - head)
            ),
            _ => format!("\n[… truncated for replay — {} chars total]", f(chars)),
        }
    }

    #[test]
    fn lazy_markers_write_and_count_as_the_written_ones() {
        let mut sizes = vec![0u64, 1, 9, 10, 99, 100, 999, 1_000, 9_999, 10_000, 999_999];
        sizes.extend([1_000_000, 12_345_678, 1_000_000_000, u64::MAX / 2]);
        sizes.extend((0..2_000).map(|k| k * 7_919 % 5_000_000));
        for &n in &sizes {
            for head in [0u64, 500, 4_000] {
                let chars = n + head;
                for (kind, m) in [
                    ("omitted", Marker::Omitted(chars)),
                    ("consumed", Marker::Consumed(chars)),
                    ("replay", Marker::Replay(chars)),
                ] {
                    let text = written(kind, chars, head);
                    assert_eq!(m.text(head), text);
                    assert_eq!(m.tokens(head), intent::estimate_tokens(&text), "{text}");
                }
            }
        }
    }

    /// `is_pure_frame` as it was: remove each body's first occurrence from a copy of the text.
    fn pure_frame_by_copy(m: &Msg) -> bool {
        if !m.has_tool_calls() {
            return false;
        }
        let mut rest = m.text().to_string();
        for t in m.tools() {
            if !t.body().is_empty() {
                rest = rest.replacen(t.body(), "", 1);
            }
        }
        rest.trim().is_empty()
    }

    #[test]
    fn pure_frames_are_found_without_copying_the_text() {
        let call_of = |text: &str, bodies: &[&str]| {
            let mut m = TestMsg::tool_call("c0", "read", bodies.first().copied().unwrap_or(""));
            m.text = text.into();
            m.tools.clear();
            for (k, b) in bodies.iter().enumerate() {
                m.tools.push(TestTool {
                    id: format!("c{k}"),
                    name: "read".into(),
                    body: (*b).into(),
                    is_result: false,
                    is_error: false,
                });
            }
            m
        };
        let cases: Vec<TestMsg> = vec![
            call_of("{\"p\":1}", &["{\"p\":1}"]),
            call_of("  {\"p\":1}\n", &["{\"p\":1}"]),
            call_of("let me read {\"p\":1}", &["{\"p\":1}"]),
            call_of("{\"p\":1} then more", &["{\"p\":1}"]),
            call_of("", &["{\"p\":1}"]),
            call_of(" \n ", &[""]),
            call_of("text", &[""]),
            call_of("{}{}", &["{}"]),
            call_of("{}\n{}", &["{}", "{}"]),
            call_of("{\"a\":1}\n{\"b\":2}", &["{\"a\":1}", "{\"b\":2}"]),
            call_of("{\"a\":1} and {\"b\":2}", &["{\"a\":1}", "{\"b\":2}"]),
            call_of("ünï {}", &["{}"]),
            call_of("\u{3000}{}\u{3000}", &["{}"]),
            TestMsg::assistant("no calls"),
        ];
        let c = TestCall::new(cases);
        c.with_view(|raw| {
            let call = unsafe { Call::from_raw(raw) };
            for m in call.messages() {
                assert_eq!(is_pure_frame(&m), pure_frame_by_copy(&m), "{:?}", m.text());
            }
        });
    }
}
