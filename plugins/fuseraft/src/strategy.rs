//! The fuseraft strategy: compaction (llm / intent / hybrid / window) with fuseraft's trigger
//! order, the context budget (WarnAt, CutoverAt, MaxSingleTurnInputTokens), the pre-turn check,
//! agent-requested compaction, anti-thrash, the ContextWindow view filters, the tool-result
//! window (MaxToolResultTokens), artifact offloading, the in-turn sliding window and the adaptive
//! trim retry. Sources (fuseraft/fuseraft-cli, commits in docs/strategies/fuseraft.md):
//! `CompactionCoordinator.EvaluateCompactionTriggerAsync` / `NeedsPreTurnCompaction`,
//! `ContextBudgetManager.EvaluateAsync`, `ConversationCompactor.ShouldCompact` / `CompactAsync` /
//! `TrimToWindow`, `ContextWindowFilter`, `ToolResultWindowTrimmer`.
//!
//! fuseraft keeps one history of `AgentMessage`s per session (`checkpoint.Messages`): a user
//! message, or one assistant message per agent turn with its tool calls folded in (tool results
//! are not part of it). Each ctxlab agent has its own working context, so each agent is modelled
//! as its own fuseraft session: its context, read as such units, is its `checkpoint.Messages`.
//! fuseraft checks after each completed turn (checkpoint save); ctxlab sees model calls, so the
//! checks run at the first call of the agent's next turn, on the units the finished turn left.

use crate::intent::{self, Operation};
use crate::settings::*;
use crate::view::{self, Action, PairIndex, MAX_OPS};
use ctxlab_plugin_api::sdk::*;
use std::collections::{HashMap, VecDeque};

pub const SLIDING_PLACEHOLDER: &str = "[result omitted — sliding window]";
/// A kept tool result that fuseraft's checkpoint resume does not replay.
pub const RESUME_PLACEHOLDER: &str =
    "[tool result not replayed after compaction — checkpoint resume]";
/// fuseraft's `CompactionPlugin.FunctionName`: an agent calling it requests a compaction.
pub const COMPACTION_TOOL: &str = "compact_conversation";
/// Size of `ConversationCompactor.SummaryPrompt` without the history (about 1,450 chars).
pub const BUILTIN_PROMPT_CHARS: u64 = 1_450;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnitKind {
    User,
    Assistant,
    Summary,
}

/// One `AgentMessage` of fuseraft's session history, as it lies in the agent's context.
#[derive(Debug, Clone, Copy)]
struct Unit {
    /// Position of its first message.
    start: usize,
    kind: UnitKind,
    /// `Content.Length`: the chars of the user message or of the turn's assistant messages.
    chars: u64,
    /// An assistant turn whose last reply made tool calls: its tool loop goes on.
    open: bool,
    /// The turn called `compact_conversation`.
    requests_compaction: bool,
}

/// What fuseraft tracks per agent (per modelled session), kept in step with the agent's context.
#[derive(Default)]
struct AgentState {
    window: AgentWindow,
    /// Context length after this strategy's persistent ops at the previous call.
    len: usize,
    started: bool,
    /// Leading messages that are not part of the session history (system prompt, pinned
    /// messages; in window mode also leading summaries, which TrimToWindow never drops).
    prefix: usize,
    /// `TokenEstimator.EstimateTokens` (chars/4) and the pre-turn chars/3 of prefix summaries.
    prefix_est4: u64,
    prefix_est3: u64,
    units: VecDeque<Unit>,
    assistant_units: u64,
    /// Σ chars/4 per unit (window mode's estimate) and Σ chars/3 (the pre-turn estimate).
    est4: u64,
    est3: u64,
    /// Assistant text replies longer than MaxReplayChars (positions), when it is set.
    verbose: Vec<usize>,
    /// call id → (tool, arguments), for the artifact stub.
    calls: HashMap<String, (String, String)>,
    /// Tool results (position, chars/4) for MaxToolResultTokens, when it is set.
    results: VecDeque<(usize, u64)>,
    results_est: u64,
    /// Cumulative input tokens since the last compaction.
    cumulative: u64,
    /// Input tokens of the turn in progress.
    turn_input: u64,
    warned: bool,
    /// fuseraft's `_justCompacted`.
    just_compacted: bool,
    /// First position of the current turn's own messages.
    turn_start: usize,
    /// Tool results of the current turn: (position, chars), oldest first; the first `masked` are
    /// already replaced by the sliding window.
    in_turn: Vec<(usize, u64)>,
    masked: usize,
    /// `ConversationCompactor._recentSavings`: (compacted − 1) / total per compaction.
    savings: VecDeque<f64>,
    thrash_noted: bool,
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
        settings.startup_errors()?;
        Ok(Fuseraft {
            settings,
            agents: HashMap::new(),
            order: Vec::new(),
            validated: false,
        })
    }
}

fn est4(chars: u64) -> u64 {
    chars / 4
}
fn est3(chars: u64) -> u64 {
    chars / 3
}

impl AgentState {
    fn pos(&self, u: &Unit) -> usize {
        u.start
    }

    fn add_unit(&mut self, u: Unit) {
        if u.kind == UnitKind::Assistant {
            self.assistant_units += 1;
        }
        self.est4 += est4(u.chars);
        self.est3 += est3(u.chars);
        self.units.push_back(u);
    }

    /// Takes in one message at position `i` (appended since the previous call).
    fn absorb(&mut self, m: &Msg, i: usize, window_mode: bool) {
        for t in m.tools().filter(|t| !t.is_result()) {
            self.calls.insert(
                t.id().to_string(),
                (t.name().to_string(), t.body().to_string()),
            );
        }
        if self.window.max_replay_chars > 0
            && m.role() == Role::Assistant
            && !m.has_tool_calls()
            && !m.is_summary()
            && !m.is_pinned()
            && m.chars() > self.window.max_replay_chars
        {
            self.verbose.push(i);
        }
        if m.has_tool_results() {
            let e = est4(m.chars());
            self.results.push_back((i, e));
            self.results_est += e;
        }
        let leading = self.units.is_empty() && i == self.prefix;
        if leading && (m.role() == Role::System || m.is_pinned() || (window_mode && m.is_summary()))
        {
            self.prefix += 1;
            if m.is_summary() {
                self.prefix_est4 += est4(m.chars());
                self.prefix_est3 += est3(m.chars());
            }
            return;
        }
        let unit = |kind, chars, open, req| Unit {
            start: i,
            kind,
            chars,
            open,
            requests_compaction: req,
        };
        if m.is_summary() {
            self.add_unit(unit(UnitKind::Summary, m.chars(), false, false));
        } else if m.role() == Role::User && !m.has_tool_results() {
            self.add_unit(unit(UnitKind::User, m.chars(), false, false));
        } else if m.role() == Role::Assistant {
            let req = m
                .tools()
                .any(|t| !t.is_result() && t.name() == COMPACTION_TOOL);
            match self.units.back_mut() {
                Some(last) if last.kind == UnitKind::Assistant && last.open => {
                    let before = last.chars;
                    last.chars += m.chars();
                    last.open = m.has_tool_calls();
                    last.requests_compaction |= req;
                    let after = last.chars;
                    self.est4 = self.est4 - est4(before) + est4(after);
                    self.est3 = self.est3 - est3(before) + est3(after);
                }
                _ => self.add_unit(unit(
                    UnitKind::Assistant,
                    m.chars(),
                    m.has_tool_calls(),
                    req,
                )),
            }
        }
        // Tool results and other messages belong to the turn in progress (not to Content).
    }

    /// Rebuilds the incremental state from the whole context (first call, or a context that
    /// changed in a way this strategy did not make).
    fn rebuild(&mut self, call: &Call, upto: usize, window_mode: bool) {
        self.prefix = 0;
        self.prefix_est4 = 0;
        self.prefix_est3 = 0;
        self.units.clear();
        self.assistant_units = 0;
        self.est4 = 0;
        self.est3 = 0;
        self.verbose.clear();
        self.results.clear();
        self.results_est = 0;
        for i in 0..upto {
            self.absorb(&call.msg(i), i, window_mode);
        }
        self.turn_start = upto;
        self.in_turn.clear();
        self.masked = 0;
    }

    /// `ContextBudgetManager.Reset` + `_justCompacted = true` (`PostCompactionReset`).
    fn post_compaction_reset(&mut self) {
        self.cumulative = 0;
        self.warned = false;
        self.just_compacted = true;
    }

    /// `ConversationCompactor.IsAntiThrashed`.
    fn anti_thrashed(&self, c: &CompactionConfig) -> bool {
        let w = c.anti_thrash_window as usize;
        w > 0
            && c.anti_thrash_min_savings_ratio > 0.0
            && self.savings.len() >= w
            && self
                .savings
                .iter()
                .all(|&r| r < c.anti_thrash_min_savings_ratio)
    }

    /// `ConversationCompactor.RecordSavings`.
    fn record_savings(&mut self, ratio: f64, c: &CompactionConfig) {
        self.savings.push_back(ratio);
        while self.savings.len() > (c.anti_thrash_window as usize).max(1) {
            self.savings.pop_front();
        }
    }
}

/// Widens `start..end` so no tool call is cut off from its results.
fn pair_safe(call: &Call, start: usize, mut end: usize) -> usize {
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
        let mut grow = None;
        for j in end..call.len().min(end + 64) {
            let m = call.msg(j);
            if m.tools().any(|t| t.is_result() && ids.contains(&t.id())) {
                grow = Some(j + 1);
            }
        }
        match grow {
            Some(e) if e > end => end = e,
            _ => return end,
        }
    }
}

/// What a compaction did to the agent's context.
struct Compacted {
    start: usize,
    end: usize,
}

impl Fuseraft {
    fn operations(call: &Call, start: usize, end: usize, first_turn: u64) -> Vec<Operation> {
        let mut results: HashMap<&str, (bool, &str)> = HashMap::new();
        for i in start..end {
            for t in call.msg(i).tools().filter(|t| t.is_result()) {
                results.insert(t.id(), (t.is_error(), t.body()));
            }
        }
        let mut ops = Vec::new();
        // One turn per AgentMessage: an assistant message after a reply without tool calls.
        let mut turn = first_turn - 1;
        let mut in_loop = false;
        for i in start..end {
            let m = call.msg(i);
            if m.role() == Role::Assistant && !m.is_summary() {
                if !in_loop {
                    turn += 1;
                }
                in_loop = m.has_tool_calls();
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

    /// `ConversationCompactor.CompactAsync`: the oldest (count − keep) units, the previous summary
    /// included, become one summary; keep = KeepRecentTurns clamped to [1, count − 1] messages.
    fn compact(
        st: &mut AgentState,
        call: &Call,
        c: &CompactionConfig,
        trigger: &str,
        out: &mut Decision,
    ) -> Option<Compacted> {
        if c.mode == Mode::Window {
            return Self::trim_to_window(st, call, c, trigger, out);
        }
        let count = st.units.len();
        if count < 2 {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!("{trigger}: Compaction skipped: fewer than 2 messages in history — nothing to compact."),
            );
            return None;
        }
        let keep = (c.keep_recent_turns as usize).clamp(1, count - 1);
        let k = count - keep;
        st.record_savings((k as f64 - 1.0) / count as f64, c);
        let start = st.pos(&st.units[0]);
        let end = pair_safe(call, start, st.pos(&st.units[k]));
        if (start..end).any(|i| call.msg(i).is_pinned()) {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!("{trigger}: a pinned message lies in the {k} oldest messages; ctxlab never compacts a pinned message"),
            );
            return None;
        }
        let range_tokens = call.tokens_in(start..end);
        let turns_removed = st
            .units
            .iter()
            .take(k)
            .filter(|u| u.kind == UnitKind::Assistant)
            .count() as u64;
        let first = st.turns_compacted + 1;
        let last = st.turns_compacted + turns_removed.max(1);
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
        // PruneContent: messages over MaxCharsPerHistoryMessage are cut (summaries never are),
        // plus the [TRUNCATED — N chars total] suffix and the tool list.
        let summarizer_input: u64 = (start..end)
            .map(|i| {
                let m = call.msg(i);
                let cap = c.max_chars_per_history_message;
                if cap > 0 && !m.is_summary() && m.chars() > cap {
                    m.tokens() * cap / m.chars() + 16
                } else {
                    m.tokens()
                }
            })
            .sum();
        // GenerateSummaryAsync sends SummaryTemplate (or the built-in prompt) around the history.
        let prompt_chars = if c.summary_template.trim().is_empty() {
            BUILTIN_PROMPT_CHARS
        } else {
            c.summary_template.chars().count() as u64
        };
        let (max_tokens, summarizer_input_tokens) = match c.mode {
            Mode::Intent => (0, 0),
            _ => (
                range_tokens - text_tokens,
                summarizer_input + prompt_chars / 4,
            ),
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
        let before = call.context_tokens();
        let after = if c.mode == Mode::Intent {
            before - range_tokens + text_tokens
        } else {
            0
        };
        let mode = if c.mode == Mode::Lossless {
            "llm (lossless fallback)"
        } else {
            c.mode.as_str()
        };
        out.event_tokens(
            EventKind::Compaction,
            "compaction",
            format!(
                "{mode} compaction of {k} of {count} messages (turns {first}–{last}, {} tokens), {keep} kept — trigger {trigger}",
                fmt_tokens(range_tokens)
            ),
            before,
            after,
        );
        if (c.include_reasoning || c.include_symbol_graph || c.include_exploration)
            && matches!(c.mode, Mode::Llm | Mode::Hybrid | Mode::Lossless)
            && st.turns_compacted == 0
        {
            out.event(
                EventKind::Note,
                "summary_blocks_not_modelled",
                "IncludeReasoning / IncludeSymbolGraph / IncludeExploration prepend blocks from fuseraft's events log and EvidenceStore, which logs do not carry: the simulated summary leaves them out",
            );
        }
        st.turns_compacted += turns_removed;
        Some(Compacted { start, end })
    }

    /// `ConversationCompactor.TrimToWindow`: drop the oldest user / assistant messages (leading
    /// summaries stay) while the per-message chars/4 estimate exceeds TokenBudget; at least one
    /// message remains. No summary.
    fn trim_to_window(
        st: &mut AgentState,
        call: &Call,
        c: &CompactionConfig,
        trigger: &str,
        out: &mut Decision,
    ) -> Option<Compacted> {
        let mut total = st.est4 + st.prefix_est4;
        let count = st.units.len();
        let mut k = 0;
        while total > c.token_budget && k + 1 < count {
            let before = k;
            if st.units[k].kind == UnitKind::User {
                total -= est4(st.units[k].chars);
                k += 1;
            }
            if k + 1 < count && st.units[k].kind == UnitKind::Assistant {
                total -= est4(st.units[k].chars);
                k += 1;
            }
            if k == before {
                break;
            }
        }
        if k == 0 {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!("{trigger}: TrimToWindow found nothing to drop"),
            );
            return None;
        }
        let start = st.pos(&st.units[0]);
        let end = pair_safe(call, start, st.pos(&st.units[k]));
        if (start..end).any(|i| call.msg(i).is_pinned()) {
            out.event(
                EventKind::Note,
                "compaction_skipped",
                format!("{trigger}: a pinned message lies in the messages TrimToWindow would drop"),
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
                "window compaction dropped {k} of {count} messages ({} tokens; estimate {} after, TokenBudget {}) — trigger {trigger}",
                fmt_tokens(tokens),
                fmt_tokens(total),
                fmt_tokens(c.token_budget)
            ),
            before,
            before - tokens,
        );
        Some(Compacted { start, end })
    }

    /// Checkpoint-resume replay: after a compaction fuseraft resumes the session from the
    /// checkpoint, rebuilding each kept message from its `AgentMessage` — its Content only, through
    /// `ContextWindowFilter.TruncateReplayContent` — so kept non-summary assistant text over
    /// MaxReplayChars (0: `DefaultMaxReplayChars` 2,000) is cut, and the kept turns' tool frames
    /// and results, which an AgentMessage does not carry, are gone. A ctxlab op cannot take the
    /// tool calls out of a message that also has text: such a message keeps its calls and its
    /// results become a placeholder. Returns the ranges it edited.
    fn resume_replay(
        st: &AgentState,
        call: &Call,
        from: usize,
        to: usize,
        out: &mut Decision,
    ) -> Vec<(usize, usize)> {
        let cap = st.window.resume_replay_chars();
        // Calls made by messages that keep their text: their results are masked, not dropped.
        let mut kept_calls: Vec<&str> = Vec::new();
        for i in from..to {
            let m = call.msg(i);
            if m.has_tool_calls() && (!view::is_pure_frame(&m) || m.is_pinned()) {
                kept_calls.extend(m.tools().filter(|t| !t.is_result()).map(|t| t.id()));
            }
        }
        let mut edited: Vec<(usize, usize)> = Vec::new();
        let mut drop_from: Option<usize> = None;
        let mut flush = |drop_from: &mut Option<usize>, i: usize, out: &mut Decision| {
            if let Some(s) = drop_from.take() {
                out.drop_range(s..i, Scope::Persistent);
                edited.push((s, i));
            }
        };
        let mut single: Vec<(usize, OpKind)> = Vec::new();
        for i in from..to {
            let m = call.msg(i);
            let droppable = !m.is_pinned()
                && !m.is_summary()
                && ((m.has_tool_calls() && view::is_pure_frame(&m))
                    || (m.has_tool_results()
                        && !m.has_tool_calls()
                        && m.tools()
                            .filter(|t| t.is_result())
                            .all(|t| !kept_calls.contains(&t.id()))));
            if droppable {
                drop_from.get_or_insert(i);
                continue;
            }
            flush(&mut drop_from, i, out);
            if m.is_pinned() || m.is_summary() {
                continue;
            }
            if m.has_tool_results() && !m.has_tool_calls() {
                single.push((
                    i,
                    OpKind::Mask {
                        placeholder: RESUME_PLACEHOLDER.into(),
                    },
                ));
            } else if m.role() == Role::Assistant && !m.has_tool_calls() && m.chars() > cap {
                single.push((
                    i,
                    OpKind::Truncate {
                        head: cap,
                        tail: 0,
                        marker: view::replay_marker(m.chars()),
                    },
                ));
            }
        }
        flush(&mut drop_from, to, out);
        for (i, kind) in single {
            out.op(kind, Scope::Persistent, i..i + 1);
            edited.push((i, i + 1));
        }
        edited
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
            if let Some(c) = &self.settings.compaction {
                if c.mode == Mode::Lossless {
                    out.event(
                        EventKind::Note,
                        "lossless_fallback",
                        "Compaction mode is 'lossless' but no snapshotter is available (it needs a state-machine session's EvidenceStore, which logs do not carry) — falling back to LLM mode, as fuseraft does.",
                    );
                }
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
        let window_mode = settings
            .compaction
            .as_ref()
            .is_some_and(|c| c.mode == Mode::Window);
        let st = self.agents.get_mut(agent).ok_or("agent state vanished")?;
        let n = call.len();
        let new = (call.new_messages() as usize).min(n);
        let first_new = n - new;

        // Does this call start a turn? It continues one when the agent's previous reply made
        // tool calls (the tool loop goes on).
        let first_call = !st.started;
        let continues = (first_new..n)
            .map(|i| call.msg(i))
            .find(|m| m.role() == Role::Assistant && m.agent() == agent)
            .is_some_and(|m| m.has_tool_calls());
        let new_turn = first_call || !continues;
        // At a new turn, the messages up to the finished turn's last reply are the checkpoint
        // the checks see; the new request after it belongs to the next turn.
        let ckpt_end = if new_turn {
            (first_new..n)
                .rev()
                .find(|&i| call.msg(i).role() == Role::Assistant)
                .map_or(first_new, |i| i + 1)
        } else {
            n
        };

        // 1. Keep the incremental state in step with the context.
        if first_call || st.len != first_new {
            st.rebuild(call, ckpt_end, window_mode);
        } else {
            for i in first_new..ckpt_end {
                st.absorb(&call.msg(i), i, window_mode);
            }
        }
        st.started = true;
        st.cumulative += call.prev_input_tokens();
        st.turn_input += call.prev_input_tokens();

        let mut locked: Vec<(usize, usize)> = Vec::new();

        // 2. What fuseraft runs after each completed turn, then before the next one.
        let mut compacted: Option<Compacted> = None;
        if new_turn {
            let finished_turn = std::mem::take(&mut st.turn_input);
            let b = settings.budget;
            let mut trigger: Option<String> = None;
            if !first_call && finished_turn > 0 {
                // ContextBudgetManager.EvaluateAsync.
                if b.warn_at > 0 && st.cumulative >= b.warn_at && !st.warned {
                    st.warned = true;
                    out.event(
                        EventKind::Warn,
                        "context_budget_warn",
                        format!(
                            "{agent} has accumulated {} cumulative input tokens (warn_at: {}). Context rot risk — compaction will trigger at {} tokens.",
                            fmt_tokens(st.cumulative),
                            fmt_tokens(b.warn_at),
                            fmt_tokens(b.cutover_at)
                        ),
                    );
                }
            }
            if let (Some(c), false) = (&settings.compaction, first_call) {
                // CompactionCoordinator.EvaluateCompactionTriggerAsync, in its order.
                let single = finished_turn > 0
                    && b.max_single_turn_input_tokens > 0
                    && finished_turn > b.max_single_turn_input_tokens;
                let cutover = !single
                    && finished_turn > 0
                    && b.cutover_at > 0
                    && st.cumulative >= b.cutover_at;
                if single {
                    st.just_compacted = false;
                    let msg = format!(
                        "{agent} single-turn input ({}) exceeded MaxSingleTurnInputTokens ({}). Compacting before next turn...",
                        fmt_tokens(finished_turn),
                        fmt_tokens(b.max_single_turn_input_tokens)
                    );
                    out.event_tokens(
                        EventKind::Cutover,
                        "context_budget_cutover",
                        msg,
                        finished_turn,
                        0,
                    );
                    trigger = Some("single_turn_limit".into());
                } else if st.just_compacted {
                    // Post-compaction grace: one turn without the other triggers.
                    st.just_compacted = false;
                } else {
                    let should = if c.mode == Mode::Window {
                        let e = st.est4 + st.prefix_est4;
                        (e > c.token_budget).then(|| {
                            format!(
                                "window_size (~{} tokens > budget {})",
                                fmt_tokens(e),
                                fmt_tokens(c.token_budget)
                            )
                        })
                    } else if st.assistant_units >= c.trigger_turn_count {
                        if st.anti_thrashed(c) {
                            if !st.thrash_noted {
                                st.thrash_noted = true;
                                let shown: Vec<String> = st
                                    .savings
                                    .iter()
                                    .map(|s| format!("{:.1}%", s * 100.0))
                                    .collect();
                                out.event(
                                    EventKind::Suppressed,
                                    "anti_thrash",
                                    format!(
                                        "Compaction skipped: anti-thrash guard triggered (last {} compactions saved < {:.0}% each: {}); the turn-count trigger stays off until a compaction by another trigger saves more",
                                        c.anti_thrash_window,
                                        c.anti_thrash_min_savings_ratio * 100.0,
                                        shown.join(", ")
                                    ),
                                );
                            }
                            None
                        } else {
                            Some(format!(
                                "window_size ({} assistant turns >= TriggerTurnCount {})",
                                st.assistant_units, c.trigger_turn_count
                            ))
                        }
                    } else {
                        None
                    };
                    let requested = st
                        .units
                        .iter()
                        .rev()
                        .find(|u| u.kind == UnitKind::Assistant)
                        .is_some_and(|u| u.requests_compaction);
                    if should.is_some() {
                        trigger = should;
                    } else if requested {
                        trigger = Some(format!("agent_requested ({COMPACTION_TOOL})"));
                    } else if cutover {
                        out.event_tokens(
                            EventKind::Cutover,
                            "context_budget_cutover",
                            format!(
                                "{agent} reached context budget cutover ({} ≥ {} input tokens). Compacting history...",
                                fmt_tokens(st.cumulative),
                                fmt_tokens(b.cutover_at)
                            ),
                            st.cumulative,
                            0,
                        );
                        trigger = Some("cumulative_budget".into());
                    }
                }
            }
            // NeedsPreTurnCompaction: before the next turn runs, chars/3 of the history against
            // MaxSingleTurnInputTokens (skipped right after a compaction).
            if trigger.is_none()
                && settings.compaction.is_some()
                && !st.just_compacted
                && b.max_single_turn_input_tokens > 0
                && st.est3 + st.prefix_est3 > b.max_single_turn_input_tokens
            {
                out.event(
                    EventKind::Cutover,
                    "pre_turn_compaction",
                    format!(
                        "Pre-turn context estimate (~{} tokens, chars/3) exceeds MaxSingleTurnInputTokens ({}). Compacting before next turn...",
                        fmt_tokens(st.est3 + st.prefix_est3),
                        fmt_tokens(b.max_single_turn_input_tokens)
                    ),
                );
                trigger = Some("pre_turn".into());
            }
            if let (Some(trigger), Some(c)) = (trigger, &settings.compaction) {
                compacted = Fuseraft::compact(st, call, c, &trigger, out);
                if let Some(k) = &compacted {
                    locked.push((k.start, k.end));
                    st.thrash_noted = false;
                }
                // PostCompactionReset runs whether or not there was anything to compact.
                st.post_compaction_reset();
            }
            // The rest of the new messages: the next turn's request.
            for i in ckpt_end..n {
                st.absorb(&call.msg(i), i, window_mode);
            }
            st.turn_start = n;
            st.in_turn.clear();
            st.masked = 0;
        }
        if let Some(k) = &compacted {
            let edited = Fuseraft::resume_replay(st, call, k.end, ckpt_end, out);
            locked.extend(edited);
        }
        // 3. Artifact offloading (at production time) and the in-turn sliding window.
        let in_range =
            |p: usize, locked: &[(usize, usize)]| locked.iter().any(|&(s, e)| p >= s && p < e);
        let mut persistent_positions: Vec<usize> = Vec::new();
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
                let mut tokens = 0;
                for &k in &masked_now {
                    let (p, _) = st.in_turn[k];
                    if persistent_positions.contains(&p) || in_range(p, &locked) {
                        continue;
                    }
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
            let _ = settings;
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
            tool_result_window(st, &settings.budget, &mut plan);
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
            // Only MaxReplayChars (when set) and the tool-result window apply: their positions
            // are tracked, and only the newest `room` edits are looked at.
            let cap = w.max_replay_chars;
            let mut picked: Vec<(usize, bool)> = Vec::new();
            let mut wanted = 0;
            if cap > 0 {
                for &p in st.verbose.iter().rev() {
                    if p < st.turn_start && p < n && !in_range(p, &locked) {
                        wanted += 1;
                        if picked.len() < room {
                            picked.push((p, false));
                        }
                    }
                }
            }
            let (limit_t, keep) = (
                settings.budget.max_tool_result_tokens,
                settings.budget.in_turn_tool_window,
            );
            if limit_t > 0 && st.results_est > limit_t && st.results.len() > keep as usize {
                let evict = st.results.len() - keep as usize;
                for &(p, _) in st.results.iter().take(evict).rev() {
                    if p < n && !in_range(p, &locked) {
                        wanted += 1;
                        if picked.len() < room {
                            picked.push((p, true));
                        }
                    }
                }
            }
            left_out = wanted - picked.len();
            picked.sort_unstable();
            for (p, evicted) in picked {
                let chars = call.msg(p).chars();
                let kind = if evicted {
                    OpKind::Mask {
                        placeholder: view::EVICTED.into(),
                    }
                } else {
                    OpKind::Truncate {
                        head: cap,
                        tail: 0,
                        marker: view::replay_marker(chars),
                    }
                };
                out.op(kind, Scope::ThisCall, p..p + 1);
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
        // A compaction rewrites the kept messages too (checkpoint resume): the next call reads
        // the (now short) context again.
        st.len = if compacted.is_some() { usize::MAX } else { n };
        out.gauge("cumulative_since_compaction", st.cumulative as f64);
        out.gauge("assistant_turns", st.assistant_units as f64);
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

/// `ToolResultWindowTrimmer`: when the tool results of the view exceed MaxToolResultTokens
/// (chars/4 per result message), all but the last InTurnToolWindow become tombstones, for this
/// call only.
fn tool_result_window(st: &AgentState, b: &BudgetConfig, plan: &mut [Action]) {
    let (limit, keep) = (b.max_tool_result_tokens, b.in_turn_tool_window as usize);
    if limit == 0 || st.results_est <= limit || st.results.len() <= keep {
        return;
    }
    let evict = st.results.len() - keep;
    for &(p, _) in st.results.iter().take(evict) {
        if p < plan.len() && matches!(plan[p], Action::Keep | Action::Truncate { .. }) {
            plan[p] = Action::Mask(view::EVICTED);
        }
    }
}
