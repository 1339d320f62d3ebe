//! Per-call edits of one agent's view, as a plan over positions, and its translation into ops the
//! host accepts (sorted, non-overlapping, tool pairs never split, at most `MAX_OPS`).
//!
//! The ContextWindow filters run in fuseraft's order: TextOnly / ExcludeAgents → MaxTurnAge →
//! MaxTailMessages, then MaxToolResultChars (consumed reads at 500) and MaxReplayChars.

use crate::intent;
use crate::settings::{AgentWindow, CONSUMED_READ_CHARS};
use ctxlab_plugin_api::sdk::{Call, Decision, Msg, OpKind, Role, Scope};
use std::collections::HashMap;

/// The host refuses a decision with more ops than this.
pub const MAX_OPS: usize = 256;

pub const STRIPPED: &str = "[tool result omitted — ContextWindow]";

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Keep,
    /// Taken by a persistent op of this decision (or the prefix no filter touches).
    Locked,
    Drop,
    Truncate {
        head: u64,
        marker: String,
    },
    Mask(String),
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
    let mut rest = m.text().to_string();
    for t in m.tools() {
        if !t.body().is_empty() {
            rest = rest.replacen(t.body(), "", 1);
        }
    }
    rest.trim().is_empty()
}

/// Where the calls and results of the view sit.
pub struct PairIndex {
    /// call id → position of the message making it.
    pub call_pos: HashMap<String, usize>,
    /// call id → (tool name, arguments).
    pub call_info: HashMap<String, (String, String)>,
    /// position of a call message → positions of the messages answering it.
    pub results_of: HashMap<usize, Vec<usize>>,
}

impl PairIndex {
    pub fn build(call: &Call, from: usize) -> PairIndex {
        let mut idx = PairIndex {
            call_pos: HashMap::new(),
            call_info: HashMap::new(),
            results_of: HashMap::new(),
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
                    idx.call_pos.insert(t.id().to_string(), i);
                    idx.call_info.insert(
                        t.id().to_string(),
                        (t.name().to_string(), t.body().to_string()),
                    );
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
    pub fn tool_name(&self, m: &Msg) -> String {
        for t in m.tools().filter(|t| t.is_result()) {
            if !t.name().is_empty() {
                return t.name().to_string();
            }
            if let Some((n, _)) = self.call_info.get(t.id()) {
                return n.clone();
            }
        }
        String::new()
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

fn omitted_marker(chars: u64, head: u64) -> String {
    format!(
        "\n[… {} chars omitted]",
        ctxlab_plugin_api::sdk::fmt_tokens(chars - head)
    )
}

fn consumed_marker(chars: u64, head: u64) -> String {
    format!(
        "\n[… {} chars omitted — the file was modified later (write_file/patch_file); re-read it if needed]",
        ctxlab_plugin_api::sdk::fmt_tokens(chars - head)
    )
}

pub fn replay_marker(chars: u64) -> String {
    format!(
        "\n[… truncated for replay — {} chars total]",
        ctxlab_plugin_api::sdk::fmt_tokens(chars)
    )
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
                plan[i] = Action::Mask(STRIPPED.into());
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
                plan[i] = Action::Mask(STRIPPED.into());
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
                    plan[r] = Action::Mask(STRIPPED.into());
                }
            }
        }
    }
}

/// Caps tool results at `cap_of(tool)` chars (consumed reads at 500) and replayed assistant text
/// (before `turn_start`) at `replay_chars`.
pub fn truncate(
    call: &Call,
    idx: &PairIndex,
    plan: &mut [Action],
    cap_of: &dyn Fn(&str) -> u64,
    consumed_rule: bool,
    replay_chars: u64,
    turn_start: usize,
) {
    let consumed = if consumed_rule {
        consumed_reads(call, idx, 0)
    } else {
        Vec::new()
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
            let mut cap = cap_of(&idx.tool_name(&m));
            if is_consumed {
                cap = if cap == 0 {
                    CONSUMED_READ_CHARS
                } else {
                    cap.min(CONSUMED_READ_CHARS)
                };
            }
            if cap > 0 && chars > cap && cap < current {
                let marker = if is_consumed && cap == CONSUMED_READ_CHARS {
                    consumed_marker(chars, cap)
                } else {
                    omitted_marker(chars, cap)
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
                marker: replay_marker(chars),
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
                    let kept =
                        m.tokens() * head / m.chars().max(1) + intent::estimate_tokens(marker);
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
    let mut ops: Vec<(usize, usize, OpKind)> = Vec::new();
    let mut i = 0;
    while i < plan.len() {
        match &plan[i] {
            Action::Drop => {
                let s = i;
                while i < plan.len() && plan[i] == Action::Drop {
                    i += 1;
                }
                ops.push((s, i, OpKind::Drop));
                continue;
            }
            Action::Truncate { head, marker } => ops.push((
                i,
                i + 1,
                OpKind::Truncate {
                    head: *head,
                    tail: 0,
                    marker: marker.clone(),
                },
            )),
            Action::Mask(p) => ops.push((
                i,
                i + 1,
                OpKind::Mask {
                    placeholder: p.clone(),
                },
            )),
            Action::Keep | Action::Locked => {}
        }
        i += 1;
    }
    let skip = ops.len().saturating_sub(room);
    for (s, e, k) in ops.into_iter().skip(skip) {
        out.op(k, Scope::ThisCall, s..e);
    }
    skip
}
