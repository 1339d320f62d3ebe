//! The fuseraft strategy: compaction by turn count (llm / intent / hybrid / window), the context
//! budget (WarnAt, CutoverAt, MaxSingleTurnInputTokens), anti-thrash, the ContextWindow view
//! filters, artifact offloading, the in-turn sliding window and the adaptive trim retry.
//!
//! fuseraft checks compaction "after each checkpoint save", i.e. between agent turns; ctxlab sees
//! model calls, so the checks run at the first call of each agent turn (a call whose previous reply
//! by this agent made no tool calls). Everything here is per agent: each agent has its own working
//! context in a replay, so a compaction compacts the calling agent's context and resets its budget.

use crate::intent::{self, Operation};
use crate::settings::*;
use crate::view::{self, Action, PairIndex, MAX_OPS};
use ctxlab_plugin_api::sdk::*;
use std::collections::{HashMap, VecDeque};

pub const SLIDING_PLACEHOLDER: &str = "[result omitted — sliding window]";

/// What fuseraft tracks per agent, kept in step with the agent's working context.
#[derive(Default)]
struct AgentState {
    window: AgentWindow,
    /// Context length after this strategy's persistent ops at the previous call.
    len: usize,
    started: bool,
    /// Assistant messages (non-summary) in the context: fuseraft's assistant-turn count.
    turns: u64,
    /// Characters of the context (window mode's chars/4 estimate).
    chars: u64,
    /// Assistant text replies longer than the replay cap (positions), for MaxReplayChars.
    verbose: Vec<usize>,
    /// call id → (tool, arguments), for the artifact stub.
    calls: HashMap<String, (String, String)>,
    /// Cumulative input tokens since the last compaction.
    cumulative: u64,
    /// Input tokens of the turn in progress.
    turn_input: u64,
    warned: bool,
    grace: bool,
    /// First position of the current turn's own messages.
    turn_start: usize,
    /// Tool results of the current turn: (position, chars), oldest first; the first `masked` are
    /// already replaced by the sliding window.
    in_turn: Vec<(usize, u64)>,
    masked: usize,
    savings: VecDeque<f64>,
    /// Message tokens before the last compaction, measured against the next call.
    pending_savings: Option<u64>,
    /// Turn count at which anti-thrash suppressed compaction.
    suppressed_at: Option<u64>,
    /// Position of the summary written at the previous call (pinned at this one).
    pin_next: Option<usize>,
    turns_compacted: u64,
    cap_warning_on: bool,
    op_cap_noted: bool,
}

pub struct Fuseraft {
    settings: Settings,
    agents: HashMap<String, AgentState>,
    /// Agents in the order they first called, for the export.
    order: Vec<String>,
    validated: bool,
}

impl Fuseraft {
    pub fn new(settings: Settings) -> Result<Fuseraft, String> {
        settings.runtime_errors()?;
        Ok(Fuseraft {
            settings,
            agents: HashMap::new(),
            order: Vec::new(),
            validated: false,
        })
    }
}

fn is_turn(m: &Msg) -> bool {
    m.role() == Role::Assistant && !m.is_summary()
}

impl AgentState {
    fn replay_cap(&self) -> u64 {
        self.window.replay_chars()
    }

    /// Takes in one message at position `i` (appended since the previous call).
    fn absorb(&mut self, m: &Msg, i: usize) {
        if is_turn(m) {
            self.turns += 1;
        }
        self.chars += m.chars();
        if m.role() == Role::Assistant
            && !m.has_tool_calls()
            && !m.is_summary()
            && !m.is_pinned()
            && m.chars() > self.replay_cap()
        {
            self.verbose.push(i);
        }
        for t in m.tools().filter(|t| !t.is_result()) {
            self.calls.insert(
                t.id().to_string(),
                (t.name().to_string(), t.body().to_string()),
            );
        }
    }

    /// Rebuilds the incremental state from the whole context (first call, or a context that
    /// changed in a way this strategy did not make).
    fn rebuild(&mut self, call: &Call) {
        self.turns = 0;
        self.chars = 0;
        self.verbose.clear();
        for i in 0..call.len() {
            self.absorb(&call.msg(i), i);
        }
        self.turn_start = call.len();
        self.in_turn.clear();
        self.masked = 0;
    }

    /// Positions at or after `end` move by `removed` after a persistent cut of `start..end`.
    fn shift(&mut self, start: usize, end: usize, removed: usize) {
        let shift = |p: usize| {
            if p >= end {
                Some(p - removed)
            } else if p < start {
                Some(p)
            } else {
                None
            }
        };
        self.verbose = self.verbose.iter().filter_map(|&p| shift(p)).collect();
        self.turn_start = shift(self.turn_start).unwrap_or(start);
        self.in_turn = self
            .in_turn
            .iter()
            .filter_map(|&(p, c)| shift(p).map(|p| (p, c)))
            .collect();
        self.masked = self.masked.min(self.in_turn.len());
    }

    fn reset_budget(&mut self) {
        self.cumulative = 0;
        self.turn_input = 0;
        self.warned = false;
        self.grace = true;
    }
}

/// The first position after the leading system / pinned / summary messages.
fn first_compactable(call: &Call) -> usize {
    (0..call.len())
        .find(|&i| !view::protected(&call.msg(i)))
        .unwrap_or(call.len())
}

/// Widens `start..end` so no tool call is cut off from its results: leading results whose call is
/// before `start` are left out, results answering calls inside are taken in.
fn pair_safe(call: &Call, mut start: usize, mut end: usize) -> (usize, usize) {
    while start < end && call.msg(start).has_tool_results() && !call.msg(start).has_tool_calls() {
        start += 1;
    }
    loop {
        let ids: Vec<&str> = (start..end)
            .flat_map(|i| {
                call.msg(i)
                    .tools()
                    .filter(|t| !t.is_result())
                    .map(|t| t.id())
                    .collect::<Vec<_>>()
            })
            .collect();
        // Results follow their calls closely; look a bounded distance past the end.
        let mut grow = None;
        for j in end..call.len().min(end + 64) {
            let m = call.msg(j);
            if m.is_pinned() {
                break;
            }
            if m.tools().any(|t| t.is_result() && ids.contains(&t.id())) {
                grow = Some(j + 1);
            }
        }
        match grow {
            Some(e) if e > end => end = e,
            _ => return (start, end),
        }
    }
}

struct Compacted {
    start: usize,
    end: usize,
    /// Messages replacing the range (1 for a summary, 0 for window drops).
    replaced_by: usize,
    turns_removed: u64,
    chars_removed: u64,
}

impl Fuseraft {
    /// The summary range of a turn-count compaction: the oldest (turns − KeepRecentTurns) turns.
    fn summary_range(call: &Call, turns_to_compact: u64) -> Option<(usize, usize)> {
        let start = first_compactable(call);
        let mut seen = 0;
        let mut end = start;
        for i in start..call.len() {
            let m = call.msg(i);
            if m.is_pinned() {
                break;
            }
            if is_turn(&m) {
                seen += 1;
                if seen == turns_to_compact {
                    end = i + 1;
                    break;
                }
            }
            end = i + 1;
        }
        if seen == 0 {
            return None;
        }
        let (s, e) = pair_safe(call, start, end);
        (e > s).then_some((s, e))
    }

    fn operations(call: &Call, start: usize, end: usize, first_turn: u64) -> Vec<Operation> {
        let mut results: HashMap<&str, (bool, &str)> = HashMap::new();
        for i in start..end {
            for t in call.msg(i).tools().filter(|t| t.is_result()) {
                results.insert(t.id(), (t.is_error(), t.body()));
            }
        }
        let mut ops = Vec::new();
        let mut turn = first_turn - 1;
        for i in start..end {
            let m = call.msg(i);
            if is_turn(&m) {
                turn += 1;
            }
            for t in m.tools().filter(|t| !t.is_result()) {
                let failure = match results.get(t.id()) {
                    Some((true, body)) => Some(intent::clip(body, 60)),
                    Some((false, _)) => None,
                    None => Some("no result recorded".to_string()),
                };
                ops.push(Operation {
                    tool: t.name().to_string(),
                    target: intent::target(t.body()).map(|(_, v)| v),
                    failure,
                    turn: turn.max(first_turn),
                    agent: m.agent().to_string(),
                });
            }
        }
        ops
    }

    /// Runs the configured compactor; pushes its op and event. `None`: nothing was compacted.
    fn compact(
        st: &AgentState,
        call: &Call,
        c: &CompactionConfig,
        trigger: &str,
        out: &mut Decision,
    ) -> Option<Compacted> {
        let before = call.context_tokens();
        if c.mode == Mode::Window {
            return Self::window_drop(st, call, c, trigger, out);
        }
        let to_compact = st.turns.saturating_sub(c.keep_recent_turns);
        let Some((start, end)) = (to_compact > 0)
            .then(|| Self::summary_range(call, to_compact))
            .flatten()
        else {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!(
                    "{trigger}: nothing to compact ({} turns, KeepRecentTurns {})",
                    st.turns, c.keep_recent_turns
                ),
            );
            return None;
        };
        let range_tokens = call.tokens_in(start..end);
        let turns_removed = (start..end).filter(|&i| is_turn(&call.msg(i))).count() as u64;
        let chars_removed: u64 = (start..end).map(|i| call.msg(i).chars()).sum();
        let first = st.turns_compacted + 1;
        let last = st.turns_compacted + turns_removed;
        let text = match c.mode {
            Mode::Intent | Mode::Hybrid => {
                intent::reconstruction(first, last, &Self::operations(call, start, end, first))
            }
            _ => String::new(),
        };
        // The host counts the literal text with its own counter: leave a margin so the summary
        // never comes out larger than what it replaces.
        let text_tokens = if text.is_empty() {
            0
        } else {
            intent::estimate_tokens(&text) * 5 / 4
        };
        if text_tokens >= range_tokens {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!(
                    "{trigger}: the intent reconstruction (~{} tokens) would not be smaller than the {} tokens of turns {first}–{last}",
                    fmt_tokens(text_tokens),
                    fmt_tokens(range_tokens)
                ),
            );
            return None;
        }
        let summarizer_input: u64 = if c.max_chars_per_history_message > 0 {
            (start..end)
                .map(|i| {
                    let m = call.msg(i);
                    let cap = c.max_chars_per_history_message;
                    if m.chars() > cap {
                        // Cut to the cap, plus the [TRUNCATED — N chars total] suffix and the
                        // one-line list of the turn's tool calls.
                        m.tokens() * cap / m.chars() + 16
                    } else {
                        m.tokens()
                    }
                })
                .sum()
        } else {
            range_tokens
        };
        let (max_tokens, summarizer_input_tokens) = match c.mode {
            Mode::Intent => (0, 0),
            _ => (range_tokens - text_tokens, summarizer_input),
        };
        out.op(
            OpKind::Summarize {
                role: Role::User,
                max_tokens,
                summarizer_input_tokens,
                text,
            },
            Scope::Persistent,
            start..end,
        );
        let after = if c.mode == Mode::Intent {
            before - range_tokens + text_tokens
        } else {
            0
        };
        out.event_tokens(
            EventKind::Compaction,
            "compaction",
            format!(
                "{} compaction of turns {first}–{last} ({} messages, {} tokens) — trigger {trigger}",
                c.mode.as_str(),
                fmt_tokens((end - start) as u64),
                fmt_tokens(range_tokens)
            ),
            before,
            after,
        );
        if (c.include_reasoning || c.include_symbol_graph)
            && matches!(c.mode, Mode::Llm | Mode::Hybrid)
            && st.turns_compacted == 0
        {
            out.event(
                EventKind::Note,
                "summary_blocks_not_modelled",
                "IncludeReasoning / IncludeSymbolGraph prepend blocks from fuseraft's events log and EvidenceStore, which logs do not carry: the simulated summary leaves them out",
            );
        }
        Some(Compacted {
            start,
            end,
            replaced_by: 1,
            turns_removed,
            chars_removed,
        })
    }

    /// window mode: drop the oldest user+assistant pairs until chars/4 ≤ TokenBudget; pinned
    /// summaries stay; no summary is written.
    fn window_drop(
        st: &AgentState,
        call: &Call,
        c: &CompactionConfig,
        trigger: &str,
        out: &mut Decision,
    ) -> Option<Compacted> {
        let start = first_compactable(call);
        // The open request (last user message and what follows) is never dropped.
        let limit = (start..call.len())
            .rev()
            .find(|&i| {
                let m = call.msg(i);
                m.role() == Role::User && !m.has_tool_results()
            })
            .unwrap_or(call.len());
        let target = c.token_budget.saturating_mul(4);
        let mut chars = st.chars;
        let mut end = start;
        while chars > target && end < limit {
            // One pair: from here to the next user message after an assistant reply.
            let mut j = end;
            let mut saw_reply = false;
            while j < limit {
                let m = call.msg(j);
                if m.is_pinned() {
                    break;
                }
                if j > end && saw_reply && m.role() == Role::User && !m.has_tool_results() {
                    break;
                }
                saw_reply |= m.role() == Role::Assistant;
                chars = chars.saturating_sub(m.chars());
                j += 1;
            }
            if j == end {
                break;
            }
            let (_, e) = pair_safe(call, start, j);
            for k in j..e {
                chars = chars.saturating_sub(call.msg(k).chars());
            }
            end = e;
            if end < call.len() && call.msg(end).is_pinned() {
                break;
            }
        }
        let end = end.min(call.len());
        if end <= start {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!("{trigger}: no user+assistant pair can be dropped"),
            );
            return None;
        }
        let tokens = call.tokens_in(start..end);
        out.drop_range(start..end, Scope::Persistent);
        let before = call.context_tokens();
        out.event_tokens(
            EventKind::Compaction,
            "compaction",
            format!(
                "window compaction dropped {} messages ({} tokens; estimate {} ≤ TokenBudget {} after) — trigger {trigger}",
                fmt_tokens((end - start) as u64),
                fmt_tokens(tokens),
                fmt_tokens(chars / 4),
                fmt_tokens(c.token_budget)
            ),
            before,
            before - tokens,
        );
        Some(Compacted {
            start,
            end,
            replaced_by: 0,
            turns_removed: (start..end).filter(|&i| is_turn(&call.msg(i))).count() as u64,
            chars_removed: st.chars - chars,
        })
    }
}

impl Strategy for Fuseraft {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        if !self.validated {
            self.validated = true;
            for e in self.settings.validate() {
                out.event(
                    EventKind::Warn,
                    "fuseraft_validate",
                    format!("fuseraft validate would reject this config: {e}"),
                );
            }
        }
        let agent = call.agent();
        if !self.agents.contains_key(agent) {
            self.order.push(agent.to_string());
            let st = AgentState {
                window: self.settings.window_for(agent),
                ..AgentState::default()
            };
            self.agents.insert(agent.to_string(), st);
        }
        let settings = &self.settings;
        let st = self.agents.get_mut(agent).ok_or("agent state vanished")?;
        let n = call.len();
        let new = (call.new_messages() as usize).min(n);
        let first_new = n - new;

        // 1. Keep the incremental state in step with the context.
        let first_call = !st.started;
        if first_call || st.len != first_new {
            st.rebuild(call);
        } else {
            for i in first_new..n {
                st.absorb(&call.msg(i), i);
            }
        }
        st.started = true;
        if let Some(before) = st.pending_savings.take() {
            let after = call
                .context_tokens()
                .saturating_sub(call.overhead_tokens())
                .saturating_sub(call.tokens_in(first_new..n));
            let ratio = if before == 0 {
                0.0
            } else {
                before.saturating_sub(after) as f64 / before as f64
            };
            st.savings.push_back(ratio);
        }

        // Does this call start a turn? It continues one when the agent's previous reply made
        // tool calls (the tool loop goes on).
        let continues = (first_new..n)
            .map(|i| call.msg(i))
            .find(|m| m.role() == Role::Assistant && m.agent() == agent)
            .is_some_and(|m| m.has_tool_calls());
        let new_turn = first_call || !continues;

        st.cumulative += call.prev_input_tokens();
        st.turn_input += call.prev_input_tokens();

        let mut locked: Vec<(usize, usize)> = Vec::new();
        if let Some(p) = st.pin_next.take() {
            if p < n && call.msg(p).is_summary() && !call.msg(p).is_pinned() {
                out.op(OpKind::Pin, Scope::Persistent, p..p + 1);
                locked.push((p, p + 1));
            }
        }

        // 2. The checks fuseraft runs after each checkpoint save (between turns).
        let mut compacted: Option<Compacted> = None;
        if new_turn {
            let finished_turn = st.turn_input;
            st.turn_input = 0;
            let b = settings.budget;
            if b.warn_at > 0 && st.cumulative >= b.warn_at && !st.warned {
                st.warned = true;
                let cut = if b.cutover_at > 0 {
                    format!(" (CutoverAt {})", fmt_tokens(b.cutover_at))
                } else {
                    String::new()
                };
                out.event(
                    EventKind::Warn,
                    "context_budget_warn",
                    format!(
                        "{agent}: cumulative input {} ≥ WarnAt {}{cut}",
                        fmt_tokens(st.cumulative),
                        fmt_tokens(b.warn_at)
                    ),
                );
            }
            if let Some(c) = &settings.compaction {
                let grace = std::mem::take(&mut st.grace);
                let turn_fire = c.mode != Mode::Window && st.turns >= c.trigger_turn_count;
                let window_fire = c.mode == Mode::Window && st.chars / 4 > c.token_budget;
                let single_fire = !grace
                    && b.max_single_turn_input_tokens > 0
                    && finished_turn >= b.max_single_turn_input_tokens
                    && !first_call;
                let cut_fire = !grace && b.cutover_at > 0 && st.cumulative >= b.cutover_at;
                let trigger = if turn_fire {
                    Some(format!(
                        "turn_count ({} ≥ TriggerTurnCount {})",
                        st.turns, c.trigger_turn_count
                    ))
                } else if window_fire {
                    Some(format!(
                        "token_budget (estimate {} > TokenBudget {})",
                        fmt_tokens(st.chars / 4),
                        fmt_tokens(c.token_budget)
                    ))
                } else if single_fire || cut_fire {
                    let (reason, msg) = if single_fire {
                        ("single_turn_limit", format!(
                            "{agent}: turn input {} ≥ MaxSingleTurnInputTokens {} (reason single_turn_limit)",
                            fmt_tokens(finished_turn), fmt_tokens(b.max_single_turn_input_tokens)))
                    } else {
                        (
                            "cutover_at",
                            format!(
                                "{agent}: cumulative input {} ≥ CutoverAt {} (reason cutover_at)",
                                fmt_tokens(st.cumulative),
                                fmt_tokens(b.cutover_at)
                            ),
                        )
                    };
                    out.event_tokens(
                        EventKind::Cutover,
                        "context_budget_cutover",
                        msg,
                        st.cumulative,
                        0,
                    );
                    Some(reason.to_string())
                } else {
                    None
                };
                if let Some(trigger) = trigger {
                    // Anti-thrash: the guard lifts once the history has grown by a cycle's worth.
                    if let Some(at) = st.suppressed_at {
                        if st.turns
                            >= at
                                + c.trigger_turn_count
                                    .saturating_sub(c.keep_recent_turns)
                                    .max(1)
                        {
                            st.suppressed_at = None;
                            st.savings.clear();
                        }
                    }
                    let w = c.anti_thrash_window as usize;
                    let r = c.anti_thrash_min_savings_ratio;
                    let thrashing = w > 0
                        && r > 0.0
                        && st.savings.len() >= w
                        && st.savings.iter().rev().take(w).all(|&s| s < r);
                    if thrashing {
                        if st.suppressed_at.is_none() {
                            st.suppressed_at = Some(st.turns);
                            let shown: Vec<String> = st
                                .savings
                                .iter()
                                .rev()
                                .take(w)
                                .rev()
                                .map(|s| format!("{:.1}%", s * 100.0))
                                .collect();
                            out.event(
                                EventKind::Suppressed,
                                "anti_thrash",
                                format!(
                                    "{trigger}: compaction suppressed — each of the last {w} compactions saved less than AntiThrashMinSavingsRatio {:.0}% ({}); waits until the history grows",
                                    r * 100.0,
                                    shown.join(", ")
                                ),
                            );
                        }
                    } else {
                        let before = call.context_tokens().saturating_sub(call.overhead_tokens());
                        compacted = Fuseraft::compact(st, call, c, &trigger, out);
                        if let Some(k) = &compacted {
                            st.pending_savings = Some(before);
                            locked.push((k.start, k.end));
                            while st.savings.len() > w.max(1) {
                                st.savings.pop_front();
                            }
                        }
                        // Counters reset after compaction, whatever triggered it.
                        st.reset_budget();
                    }
                }
            }
            st.turn_start = n;
            st.in_turn.clear();
            st.masked = 0;
        }

        // 3. Artifact offloading (at production time) and the in-turn sliding window.
        let in_range =
            |p: usize, locked: &[(usize, usize)]| locked.iter().any(|&(s, e)| p >= s && p < e);
        let mut persistent_positions: Vec<usize> = Vec::new();
        let mut offload_chars = 0;
        for i in first_new..n {
            let m = call.msg(i);
            if m.has_tool_results()
                && m.chars() > OFFLOAD_CHARS
                && !in_range(i, &locked)
                && !m.has(ctxlab_plugin_api::abi::FLAG_EDITED)
            {
                let res = m.tools().find(|t| t.is_result());
                let (tool, args) = res
                    .and_then(|t| st.calls.get(t.id()).cloned())
                    .unwrap_or_else(|| {
                        (
                            res.map(|t| t.name().to_string()).unwrap_or_default(),
                            String::new(),
                        )
                    });
                let stub = intent::offload_stub(
                    m.chars(),
                    &tool,
                    intent::target(&args).as_ref(),
                    m.text(),
                );
                offload_chars += m.chars() - stub.chars().count() as u64;
                out.op(OpKind::Offload { stub }, Scope::Persistent, i..i + 1);
                out.event_tokens(
                    EventKind::Truncation,
                    "artifact_offloaded",
                    format!(
                        "{tool} result of {} chars offloaded to the artifact store (> 40,000)",
                        fmt_tokens(m.chars())
                    ),
                    m.tokens(),
                    0,
                );
                persistent_positions.push(i);
            }
        }
        st.chars = st.chars.saturating_sub(offload_chars);
        if !new_turn {
            for i in first_new.max(st.turn_start)..n {
                let m = call.msg(i);
                if m.has_tool_results() && !persistent_positions.contains(&i) {
                    st.in_turn.push((i, m.chars()));
                }
            }
            let w = &st.window;
            let mut masked_now: Vec<usize> = Vec::new();
            if w.max_in_turn_tool_pairs > 0 {
                while st.in_turn.len() - st.masked > w.max_in_turn_tool_pairs as usize {
                    masked_now.push(st.masked);
                    st.masked += 1;
                }
            }
            if w.max_in_turn_context_tokens > 0 {
                let mut total: u64 = st.in_turn[st.masked..].iter().map(|&(_, c)| c).sum();
                while total / 4 > w.max_in_turn_context_tokens && st.in_turn.len() - st.masked > 1 {
                    total -= st.in_turn[st.masked].1;
                    masked_now.push(st.masked);
                    st.masked += 1;
                }
            }
            if !masked_now.is_empty() {
                let mut freed = 0;
                let mut tokens = 0;
                for &k in &masked_now {
                    let (p, c) = st.in_turn[k];
                    if persistent_positions.contains(&p) || in_range(p, &locked) {
                        continue;
                    }
                    freed += c.saturating_sub(SLIDING_PLACEHOLDER.chars().count() as u64);
                    tokens += call.msg(p).tokens();
                    out.op(
                        OpKind::Mask {
                            placeholder: SLIDING_PLACEHOLDER.into(),
                        },
                        Scope::Persistent,
                        p..p + 1,
                    );
                    persistent_positions.push(p);
                }
                st.chars = st.chars.saturating_sub(freed);
                out.event_tokens(
                    EventKind::Truncation,
                    "sliding_window",
                    format!(
                        "{} older tool result(s) of this turn replaced (MaxInTurnToolPairs {}, MaxInTurnContextTokens {})",
                        masked_now.len(),
                        w.max_in_turn_tool_pairs,
                        fmt_tokens(w.max_in_turn_context_tokens)
                    ),
                    tokens,
                    0,
                );
            }
        }
        for p in persistent_positions {
            locked.push((p, p + 1));
        }

        // 4. This-call view filters (ContextWindow), then the adaptive trim retry.
        let persistent_ops = out.ops.len();
        let room = MAX_OPS.saturating_sub(persistent_ops);
        let limit = call
            .budget()
            .context_window
            .saturating_sub(call.budget().max_output);
        let compaction_saving = compacted
            .as_ref()
            .map_or(0, |k| call.tokens_in(k.start..k.end) * 3 / 4);
        let over = limit > 0 && call.context_tokens().saturating_sub(compaction_saving) > limit;
        let w = st.window.clone();
        let left_out;
        if w.filters_history() || over {
            let mut plan = vec![Action::Keep; n];
            for &(s, e) in &locked {
                for a in &mut plan[s..e] {
                    *a = Action::Locked;
                }
            }
            let idx = PairIndex::build(call, 0);
            let filtered = view::filter(call, &idx, &mut plan, &w, st.turn_start.min(n));
            if let (Some(count), true) = (filtered, w.context_cap_fraction > 0.0) {
                let at = (w.context_cap_fraction * w.max_tail_messages as f64).ceil() as u64;
                let on = count >= at;
                if on && !st.cap_warning_on {
                    out.event(
                        EventKind::Warn,
                        "context_cap_warning",
                        format!(
                            "{agent}: filtered view holds {count} messages ≥ ContextCapFraction {} of MaxTailMessages {}",
                            w.context_cap_fraction, w.max_tail_messages
                        ),
                    );
                }
                st.cap_warning_on = on;
            }
            if over {
                trim_retry(
                    call,
                    &idx,
                    &mut plan,
                    limit,
                    compaction_saving,
                    st.turn_start.min(n),
                    out,
                );
            }
            left_out = view::emit(&plan, room, out);
        } else {
            // Only MaxReplayChars (fuseraft's default 2,000) applies: its positions are tracked.
            let cap = st.replay_cap();
            let mut picked: Vec<usize> = st
                .verbose
                .iter()
                .rev()
                .copied()
                .filter(|&p| p < st.turn_start && p < n && !in_range(p, &locked))
                .collect();
            left_out = picked.len().saturating_sub(room);
            picked.truncate(room);
            for p in picked.into_iter().rev() {
                let chars = call.msg(p).chars();
                out.op(
                    OpKind::Truncate {
                        head: cap,
                        tail: 0,
                        marker: view::replay_marker(chars),
                    },
                    Scope::ThisCall,
                    p..p + 1,
                );
            }
        }
        if left_out > 0 && !st.op_cap_noted {
            st.op_cap_noted = true;
            out.event(
                EventKind::Note,
                "view_edits_capped",
                format!("{agent}: the ContextWindow view needs more edits than the {MAX_OPS} a call allows; the {left_out} oldest are left unfiltered (noted once per agent)"),
            );
        }
        out.ops.sort_by_key(|o| o.start);

        // 5. Bring the state in step with the context the host will hold after this decision.
        let mut len = n;
        if let Some(k) = compacted {
            let removed = (k.end - k.start) - k.replaced_by;
            st.shift(k.start, k.end, removed);
            st.turns = st.turns.saturating_sub(k.turns_removed);
            st.chars = st.chars.saturating_sub(k.chars_removed);
            st.turns_compacted += k.turns_removed;
            len -= removed;
            if k.replaced_by == 1 {
                st.pin_next = Some(k.start);
            }
            if new_turn {
                st.turn_start = len;
            }
        }
        st.len = len;
        out.gauge("cumulative_since_compaction", st.cumulative as f64);
        out.gauge("assistant_turns", st.turns as f64);
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        let b = self.settings.budget;
        let mut t = Vec::new();
        if b.warn_at > 0 {
            t.push(Threshold {
                kind: ThresholdKind::Warn,
                line: Line::CumulativeSinceCompaction,
                tokens: b.warn_at,
                label: "WarnAt".into(),
            });
        }
        if b.cutover_at > 0 && self.settings.compaction.is_some() {
            t.push(Threshold {
                kind: ThresholdKind::Cutover,
                line: Line::CumulativeSinceCompaction,
                tokens: b.cutover_at,
                label: "CutoverAt".into(),
            });
        }
        if let Some(c) = &self.settings.compaction {
            if c.mode == Mode::Window {
                t.push(Threshold {
                    kind: ThresholdKind::Trigger,
                    line: Line::Occupancy,
                    tokens: c.token_budget,
                    label: "TokenBudget".into(),
                });
            }
        }
        t
    }

    fn export(&self, format: &str) -> Result<String, String> {
        crate::config::export(&self.settings, format, &self.order)
    }
}

/// fuseraft's adaptive context-trim retry: when the call would not fit, tool results are cut to
/// 4,000 chars, then 500 (consumed reads 500 at every stage), then all tool messages are dropped.
fn trim_retry(
    call: &Call,
    idx: &PairIndex,
    plan: &mut [Action],
    limit: u64,
    compaction_saving: u64,
    turn_start: usize,
    out: &mut Decision,
) {
    let estimate = |plan: &[Action]| {
        call.context_tokens()
            .saturating_sub(compaction_saving)
            .saturating_sub(view::saved_tokens(call, plan))
    };
    let mut now = estimate(plan);
    if now <= limit {
        return;
    }
    let stages: [(u64, &str); 3] = [
        (
            4_000,
            "truncate tool results to 4,000 chars (consumed reads 500)",
        ),
        (500, "truncate tool results to 500 chars"),
        (0, "drop all tool messages"),
    ];
    for (k, (cap, what)) in stages.iter().enumerate() {
        if *cap > 0 {
            view::truncate(call, idx, plan, &|_| *cap, true, 0, turn_start);
        } else {
            view::strip(call, idx, plan, true, &[]);
            view::close_pairs(call, idx, plan);
        }
        let after = estimate(plan);
        out.event_tokens(
            EventKind::Truncation,
            &format!("trim_retry_stage_{}", k + 1),
            format!(
                "context ~{} > {} (window − max output): stage {}: {what} → ~{}",
                fmt_tokens(now),
                fmt_tokens(limit),
                k + 1,
                fmt_tokens(after)
            ),
            now,
            after,
        );
        now = after;
        if now <= limit {
            return;
        }
    }
    out.event(
        EventKind::Failure,
        "context_length_exceeded",
        format!("context ~{} still exceeds {} after the three trim stages: the provider call would fail", fmt_tokens(now), fmt_tokens(limit)),
    );
}
