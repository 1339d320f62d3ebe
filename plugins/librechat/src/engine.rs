//! LibreChat's agent context pipeline (`@librechat/agents` `pruneMessages` + the graph's
//! summarization check), run once per call on the agent's working context.
//!
//! LibreChat rebuilds every request from the stored conversation and prunes it again, so masking,
//! fading, context pruning, pruning and emergency truncation are `ThisCall` view filters; only the
//! full compaction of the summarization path changes the history (`Persistent`).

use crate::config::{Config, Trigger};
use crate::live::Live;
use crate::trim::{self, Cut, Edit};
use ctxlab_plugin_api::{
    fmt_tokens, Call, Decision, EventKind, Line, Msg, OpKind, Role, Scope, Strategy, Threshold,
    ThresholdKind,
};
use std::collections::HashMap;

/// Pressure at which observation masking (and fading) starts (`PRESSURE_THRESHOLD_MASKING`).
pub const PRESSURE_MASKING: f64 = 0.8;
/// Pressure bands of context fading: threshold → budget factor (`PRESSURE_BANDS`).
pub const PRESSURE_BANDS: [(f64, f64); 4] = [(0.99, 0.05), (0.9, 0.2), (0.85, 0.5), (0.8, 1.0)];
/// Sanity bounds of the cumulative calibration ratio.
const CALIBRATION_RATIO_MIN: f64 = 0.5;
const CALIBRATION_RATIO_MAX: f64 = 5.0;
/// Instruction overhead is recalibrated when estimate and calibration differ by more than this.
pub const CALIBRATION_VARIANCE_THRESHOLD: f64 = 0.15;
/// The host refuses decisions with more ops than this.
const MAX_OPS: usize = 256;

/// LibreChat's cumulative token calibration for one agent.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub ratio: f64,
    cum_raw: f64,
    cum_provider: f64,
    best_variance: f64,
    /// Best observed instruction overhead (`bestInstructionOverhead`).
    pub best_overhead: Option<u64>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            ratio: 1.0,
            cum_raw: 0.0,
            cum_provider: 0.0,
            best_variance: f64::INFINITY,
            best_overhead: None,
        }
    }
}

impl Calibration {
    /// Feeds the previous call: provider-reported input tokens (instructions included), the raw
    /// message tokens sent, and the instruction tokens.
    pub fn update(&mut self, recorded: u64, raw_messages: u64, overhead: u64) {
        let raw_messages = raw_messages as f64;
        let provider_messages = recorded.saturating_sub(overhead) as f64;
        if raw_messages > 0.0 && provider_messages > 0.0 {
            self.cum_raw += raw_messages;
            self.cum_provider += provider_messages;
            self.ratio = (self.cum_provider / self.cum_raw)
                .clamp(CALIBRATION_RATIO_MIN, CALIBRATION_RATIO_MAX);
        }
        let ours = overhead as f64 + raw_messages * self.ratio;
        if ours > 0.0 && raw_messages > 0.0 {
            let variance = (recorded as f64 / ours - 1.0).abs();
            if variance < self.best_variance {
                self.best_variance = variance;
                self.best_overhead = Some(
                    (recorded as f64 - raw_messages * self.ratio)
                        .round()
                        .max(0.0) as u64,
                );
            }
        }
    }

    /// Instruction tokens to budget with: the calibrated overhead when it differs from the
    /// estimate by more than 15 %, else the estimate.
    pub fn instruction_tokens(&self, estimated: u64) -> u64 {
        match self.best_overhead {
            Some(best) if estimated > 0 => {
                let variance = (best as f64 - estimated as f64).abs() / estimated as f64;
                if variance > CALIBRATION_VARIANCE_THRESHOLD {
                    best
                } else {
                    estimated
                }
            }
            _ => estimated,
        }
    }
}

/// What the plugin knows about an agent's working context, kept up to date from the messages
/// appended since its previous call (positions are stable: this-call ops do not change history).
#[derive(Debug, Default)]
pub(crate) struct Index {
    len: usize,
    first_id: u64,
    last_id: u64,
    /// `tool_before[i]`: tool results at positions < i.
    tool_before: Vec<u32>,
    last_substantive: Option<usize>,
    first_user: Option<usize>,
    pinned: Vec<usize>,
    /// Position of each tool call by id.
    calls: HashMap<String, usize>,
    /// `(position, earliest call it answers)` of every tool result whose calls are in the log.
    results: Vec<(usize, usize)>,
    /// Largest distance from a result back to its call: orphans of a cut lie within it.
    max_gap: usize,
    /// Sum of the messages' raw tokens (the host's counter, uncalibrated).
    raw_tokens: u64,
    /// `raw_prefix[i]`: raw tokens of the messages at positions < i.
    raw_prefix: Vec<u64>,
    /// Where each maximal run of assistant/tool messages starts (contextPruning's turns).
    runs: Vec<usize>,
    /// Char counts of each message's tool-call arguments, `args[args_at[i]..args_at[i + 1]]`:
    /// counted once, as the pipeline re-reads them at every call over the kept window.
    args: Vec<u64>,
    args_at: Vec<u32>,
}

impl Index {
    /// Catches up with the appended messages; false when the history is not the one indexed
    /// (it was compacted): the index starts over.
    fn sync(&mut self, call: &Call<'_>) -> bool {
        let n = call.len();
        let valid = self.len <= n
            && (self.len == 0
                || (call.msg(0).id() == self.first_id
                    && call.msg(self.len - 1).id() == self.last_id));
        if !valid {
            *self = Index::default();
        }
        if self.tool_before.is_empty() {
            self.tool_before.push(0);
        }
        if self.args_at.is_empty() {
            self.args_at.push(0);
        }
        if self.raw_prefix.is_empty() {
            self.raw_prefix.push(0);
        }
        for i in self.len..n {
            let m = call.msg(i);
            self.raw_tokens += m.tokens();
            self.raw_prefix.push(self.raw_tokens);
            if matches!(m.role(), Role::Assistant | Role::Tool)
                && (i == 0 || !matches!(call.msg(i - 1).role(), Role::Assistant | Role::Tool))
            {
                self.runs.push(i);
            }
            let before = self.tool_before[i];
            self.tool_before.push(before + is_tool_result(&m) as u32);
            if is_substantive(&m) {
                self.last_substantive = Some(i);
            }
            if m.role() == Role::User && self.first_user.is_none() {
                self.first_user = Some(i);
            }
            if m.is_pinned() {
                self.pinned.push(i);
            }
            for t in m.tools().filter(|t| !t.is_result()) {
                self.calls.insert(t.id().to_string(), i);
                self.args.push(t.body().chars().count() as u64);
            }
            self.args_at.push(self.args.len() as u32);
            if is_tool_result(&m) {
                let earliest = m
                    .tools()
                    .filter(|t| t.is_result())
                    .map(|t| self.calls.get(t.id()).copied().unwrap_or(usize::MAX))
                    .min()
                    .unwrap_or(usize::MAX);
                if earliest <= i {
                    self.max_gap = self.max_gap.max(i - earliest);
                    self.results.push((i, earliest));
                }
            }
        }
        self.len = n;
        if n > 0 {
            self.first_id = call.msg(0).id();
            self.last_id = call.msg(n - 1).id();
        }
        valid
    }
    pub(crate) fn tool_count(&self) -> u64 {
        self.tool_before[self.len] as u64
    }
    /// (total, over `cap`) chars of the tool-call arguments of the message at `i`.
    fn args_chars(&self, i: usize, cap: u64) -> (u64, u64) {
        self.args[self.args_at[i] as usize..self.args_at[i + 1] as usize]
            .iter()
            .fold((0, 0), |(total, excess), &c| {
                (total + c, excess + c.saturating_sub(cap))
            })
    }
}

pub fn is_tool_result(m: &Msg<'_>) -> bool {
    m.role() == Role::Tool || (m.has_tool_results() && m.role() != Role::Assistant)
}

/// An assistant message with text of its own (not only tool calls): the model has read what came
/// before it. The host flattens tool arguments into the text, so they are taken out first.
pub fn is_substantive(m: &Msg<'_>) -> bool {
    if m.role() != Role::Assistant {
        return false;
    }
    if !m.has_tool_calls() {
        return !m.text().trim().is_empty();
    }
    let mut rest = m.text().to_string();
    for t in m.tools().filter(|t| !t.is_result()) {
        for part in [t.body(), t.name()] {
            if !part.is_empty() {
                rest = rest.replacen(part, "", 1);
            }
        }
    }
    rest.chars().any(char::is_alphanumeric)
}

/// Which stages of the pipeline shape the messages this call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stages {
    /// Tool results before this position are consumed and masked (0: none).
    pub consumed_end: usize,
    /// Token base of recency-weighted pre-flight truncation (fading, fit-to-budget, fallback).
    pub preflight_base: Option<u64>,
    /// contextPruning: tool results in this range of positions may be degraded (the rest is
    /// protected: before the first user message, and the last keepLastAssistants turns).
    pub pruning: Option<(usize, usize)>,
    /// Emergency truncation cap in chars.
    pub emergency: Option<u64>,
}

/// Stage numbers for per-stage accounting.
pub(crate) const MASKING: u8 = 1;
pub(crate) const PREFLIGHT: u8 = 2;
pub(crate) const CONTEXT_PRUNING: u8 = 3;
pub(crate) const EMERGENCY: u8 = 4;

pub(crate) struct Pipeline<'c, 'a> {
    pub call: &'c Call<'a>,
    pub cfg: &'c Config,
    pub index: &'c Index,
    pub stages: Stages,
    placeholder_chars: u64,
}

impl Pipeline<'_, '_> {
    /// How message `i` is shortened with the stages up to `upto` applied, and the chars it keeps.
    pub(crate) fn cut(&self, i: usize, upto: u8) -> Option<(Cut, u64)> {
        let m = self.call.msg(i);
        if m.is_pinned() {
            return None;
        }
        let s = &self.stages;
        let len = m.chars();
        let placeholder = self.placeholder_chars;
        let kept = |c: Cut| (c, c.chars(len, placeholder));
        if m.role() == Role::Assistant && m.has_tool_calls() {
            let cap = [
                s.preflight_base
                    .filter(|_| upto >= PREFLIGHT)
                    .map(trim::max_input_chars),
                s.emergency.filter(|_| upto >= EMERGENCY),
            ]
            .into_iter()
            .flatten()
            .min()?;
            let (_, excess) = self.index.args_chars(i, cap);
            return (excess > 0).then(|| kept(Cut::Input { excess }));
        }
        if !is_tool_result(&m) {
            return None;
        }
        let mut cap = u64::MAX;
        if upto >= MASKING && i < s.consumed_end {
            cap = trim::MASKED_RESULT_MAX_CHARS;
        }
        if let Some(base) = s.preflight_base.filter(|_| upto >= PREFLIGHT) {
            let rank = self.index.tool_before[i] as u64;
            let c = trim::recency_cap(trim::max_result_chars(base), rank, self.index.tool_count());
            cap = cap.min(c);
        }
        let mut cut = (len > cap).then(|| kept(Cut::Result { max: cap }));
        let current = cut.map_or(len, |c| c.1);
        let p = &self.cfg.pruning;
        if let Some((lo, hi)) = s.pruning.filter(|_| upto >= CONTEXT_PRUNING) {
            if i >= lo && i < hi && current >= p.min_prunable_tool_chars {
                let n = self.call.len() as f64;
                let age = (n - i as f64) / n;
                if age >= p.hard_clear_ratio && p.hard_clear_enabled {
                    cut = Some(kept(Cut::Clear));
                } else if age >= p.soft_trim_ratio && current > p.soft_trim_max_chars {
                    cut = Some(kept(Cut::Soft {
                        len: current,
                        head: p.soft_trim_head_chars,
                        tail: p.soft_trim_tail_chars,
                    }));
                }
            }
        }
        if let Some(e) = s.emergency.filter(|_| upto >= EMERGENCY) {
            if cut.map_or(len, |c| c.1) > e {
                cut = Some(kept(Cut::Result { max: e }));
            }
        }
        cut.filter(|c| c.1 < len)
    }

    pub(crate) fn tokens(&self, i: usize, upto: u8) -> u64 {
        trim::tokens_kept(&self.call.msg(i), self.cut(i, upto).map(|c| c.1))
    }

    /// `getMessagesWithinTokenLimit`: keeps messages newest-first while they fit in `available`
    /// (3 tokens primed for the reply), then makes the kept part start at an assistant or user
    /// message when it would start with a tool result. Returns the first kept position.
    fn fit(&self, floor: usize, available: u64) -> usize {
        let n = self.call.len();
        let mut used = 3u64;
        let mut i = n;
        while i > floor && used < available {
            let t = self.tokens(i - 1, EMERGENCY);
            if used + t > available {
                break;
            }
            used += t;
            i -= 1;
        }
        if i < n && is_tool_result(&self.call.msg(i)) {
            if let Some(j) =
                (i..n).find(|&j| matches!(self.call.msg(j).role(), Role::Assistant | Role::User))
            {
                i = j;
            }
        }
        i
    }
}

/// Orphan repair: a kept tool result whose call was pruned is dropped with it — the cut moves
/// past it — so no tool_result is ever sent without its tool_use. Only results within `max_gap`
/// of the cut can answer a pruned call, so only those are looked at. (A result whose call is not
/// in the log at all is kept: nothing pairs with it.) Returns the new cut and the orphan count.
fn repair_orphans(index: &Index, cut: usize) -> (usize, usize) {
    let mut new_cut = cut;
    let mut orphans = 0;
    let from = index.results.partition_point(|&(p, _)| p < cut);
    for &(p, earliest) in &index.results[from..] {
        if p > new_cut + index.max_gap {
            break;
        }
        if earliest < new_cut {
            new_cut = p + 1;
            orphans += 1;
        }
    }
    (new_cut, orphans)
}

/// Position from which the last `keep` assistant turns (AI + tool runs) are protected from
/// contextPruning, walking back as LibreChat does; messages before the first user message are
/// protected too (handled by the caller's lower bound).
fn protected_from(call: &Call<'_>, keep: u64) -> usize {
    let mut turns = 0;
    let mut in_turn = false;
    let mut from = call.len();
    for i in (0..call.len()).rev() {
        let m = call.msg(i);
        if matches!(m.role(), Role::Assistant | Role::Tool) {
            from = i;
            in_turn = true;
        } else {
            if in_turn {
                turns += 1;
                in_turn = false;
                if turns >= keep {
                    break;
                }
            }
            if turns < keep {
                from = i;
            }
        }
    }
    from
}

/// `protected_from` from the index's assistant/tool runs, without walking the messages: the walk
/// stops at the start of the `max(keep, 1)`-th run from the end (0 when there are fewer; with no
/// run at all, 0 for keep > 0 and `n` for keep = 0).
fn protected_from_runs(index: &Index, n: usize, keep: u64) -> usize {
    let runs = &index.runs;
    if runs.is_empty() {
        return if keep > 0 { 0 } else { n };
    }
    let k = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
    if runs.len() >= k {
        runs[runs.len() - k]
    } else {
        0
    }
}

fn band_factor(pressure: f64) -> f64 {
    PRESSURE_BANDS
        .iter()
        .find(|(t, _)| pressure >= *t)
        .map_or(1.0, |(_, f)| *f)
}

#[derive(Debug, Default)]
struct AgentState {
    calibration: Calibration,
    index: Index,
    /// Incremental cuts and token values (unused by the from-scratch reference).
    live: Live,
    /// Message count when summarization last fired (`shouldSkipSummarization`).
    summarized_at_count: Option<usize>,
    /// Calibrated instruction tokens last reported in an event.
    announced_instructions: Option<u64>,
    /// True once this agent's history or a call's view differed from the log's: from then on the
    /// log's usage no longer measures what was sent, and calibration keeps its last ratio.
    diverged: bool,
}

#[derive(Debug, Clone, Copy)]
struct Budget {
    max_context: u64,
    pruning_budget: u64,
    instructions: u64,
}

pub struct LibreChat {
    cfg: Config,
    agents: HashMap<String, AgentState>,
    last_budget: Option<Budget>,
    /// False: every call re-evaluates every kept message from scratch (the reference the
    /// incremental path is tested against).
    incremental: bool,
    /// Edits of result/soft/clear cuts by cut (their text does not depend on the message).
    edit_cache: HashMap<Cut, OpKind>,
}

impl LibreChat {
    pub fn new(cfg: Config) -> LibreChat {
        LibreChat {
            cfg,
            agents: HashMap::new(),
            last_budget: None,
            incremental: true,
            edit_cache: HashMap::new(),
        }
    }

    /// The from-scratch pipeline: O(kept window) per call, same decisions.
    pub fn reference(cfg: Config) -> LibreChat {
        LibreChat {
            incremental: false,
            ..LibreChat::new(cfg)
        }
    }
}

/// Raw tokens in provider space.
fn scale(raw: u64, ratio: f64) -> u64 {
    (raw as f64 * ratio).round() as u64
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The edits of the kept messages `[cut, n)` as op ranges. Results cut to the same cap share one
/// range when every message between them is short enough for the host to leave it as it is
/// (at most head + tail chars) and not pinned.
fn edit_ranges(pipe: &Pipeline<'_, '_>, cut: usize) -> Vec<(usize, usize, Cut)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, Cut, u64)> = None;
    let mut gap_ok = true;
    for i in cut..pipe.call.len() {
        match pipe.cut(i, EMERGENCY) {
            Some((c, _)) => {
                if let Some((s, _, oc, ht)) = open {
                    if oc == c && gap_ok && matches!(c, Cut::Result { .. }) {
                        open = Some((s, i + 1, oc, ht));
                        continue;
                    }
                }
                if let Some((s, e, oc, _)) = open.take() {
                    out.push((s, e, oc));
                }
                let ht = match c.edit(pipe.call.msg(i).chars(), "") {
                    Edit::Truncate { head, tail, .. } => head + tail,
                    Edit::Clear { .. } => 0,
                };
                open = Some((i, i + 1, c, ht));
                gap_ok = true;
            }
            None => {
                if let Some((_, _, _, ht)) = open {
                    let m = pipe.call.msg(i);
                    gap_ok &= !m.is_pinned() && m.chars() <= ht;
                }
            }
        }
    }
    if let Some((s, e, oc, _)) = open {
        out.push((s, e, oc));
    }
    out
}

/// Drop ranges over `[floor, cut)` that leave pinned messages in place.
fn drop_ranges(pinned: &[usize], floor: usize, cut: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = floor;
    let from = pinned.partition_point(|&p| p < floor);
    let to = pinned.partition_point(|&p| p < cut).max(from);
    for &p in &pinned[from..to] {
        if p > start {
            out.push((start, p));
        }
        start = p + 1;
    }
    if cut > start {
        out.push((start, cut));
    }
    out
}

impl Strategy for LibreChat {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let cfg = &self.cfg;
        let incremental = self.incremental;
        let st = match self.agents.get_mut(call.agent()) {
            Some(st) => st,
            None => self.agents.entry(call.agent().to_string()).or_default(),
        };
        let overhead = call.overhead_tokens();
        if !st.diverged && call.prev_recorded_input_tokens() > 0 && call.prev_raw_tokens() > 0 {
            st.calibration.update(
                call.prev_recorded_input_tokens(),
                call.prev_raw_tokens(),
                overhead,
            );
        }
        if !st.index.sync(call) {
            st.live = Live::default();
        }
        let ratio = st.calibration.ratio;
        let instructions = st.calibration.instruction_tokens(overhead);
        let max_context = call.budget().context_window;
        let reserve = if cfg.reserve_ratio > 0.0 && cfg.reserve_ratio < 1.0 {
            (max_context as f64 * cfg.reserve_ratio).round() as u64
        } else {
            0
        };
        let pruning_budget = max_context - reserve.min(max_context);
        let effective = pruning_budget.saturating_sub(instructions);
        let raw_messages = st.index.raw_tokens;
        let calibrated = scale(raw_messages, ratio);
        let pressure = if pruning_budget > 0 {
            calibrated as f64 / pruning_budget as f64
        } else {
            0.0
        };
        out.gauge("pressure", pressure);
        out.gauge("calibration_ratio", ratio);
        self.last_budget = Some(Budget {
            max_context,
            pruning_budget,
            instructions,
        });
        if instructions != overhead && st.announced_instructions != Some(instructions) {
            st.announced_instructions = Some(instructions);
            out.event(
                EventKind::Note,
                "instruction_overhead_calibrated",
                format!(
                    "instruction tokens {} from provider feedback instead of the estimate {} \
                     (variance > 15%)",
                    fmt_tokens(instructions),
                    fmt_tokens(overhead)
                ),
            );
        }
        let n = call.len();
        if n == 0
            || (pressure < PRESSURE_MASKING
                && calibrated + instructions <= pruning_budget
                && !(cfg.enabled && effective == 0))
        {
            return Ok(());
        }
        let floor = usize::from(call.msg(0).role() == Role::System);
        let masking = pressure >= PRESSURE_MASKING;
        let mut stages = Stages {
            consumed_end: 0,
            preflight_base: None,
            pruning: None,
            emergency: None,
        };
        if masking {
            stages.consumed_end = st.index.last_substantive.unwrap_or(0);
            if cfg.enabled {
                let raw_effective = (effective as f64 / ratio).round() as u64;
                stages.preflight_base = (raw_effective > 0).then_some(raw_effective);
            } else {
                let base = ((effective as f64 * band_factor(pressure)).floor() as u64).max(1024);
                stages.preflight_base = Some(base);
                if cfg.pruning.enabled {
                    let first_user = st.index.first_user.unwrap_or(n);
                    let keep = cfg.pruning.keep_last_assistants;
                    let protected = if incremental {
                        protected_from_runs(&st.index, n, keep)
                    } else {
                        protected_from(call, keep)
                    };
                    stages.pruning = Some((first_user, protected));
                }
            }
        }
        let all_to_refine = cfg.enabled && effective == 0;
        let mut pipe = Pipeline {
            call,
            cfg,
            index: &st.index,
            stages,
            placeholder_chars: cfg.pruning.hard_clear_placeholder.chars().count() as u64,
        };
        let raw_budget = (pruning_budget as f64 / ratio).round() as u64;
        let raw_instructions = (instructions as f64 / ratio).round() as u64;
        let live = &mut st.live;
        let mut cut = if all_to_refine {
            n
        } else if incremental {
            live.update(&pipe);
            live.fit(&pipe, floor, raw_budget.saturating_sub(raw_instructions))
        } else {
            pipe.fit(floor, raw_budget.saturating_sub(raw_instructions))
        };
        // Where the budget cut fell: the next call's search starts near it.
        let fit_cut = cut;
        let (repaired, mut orphans) = repair_orphans(&st.index, cut);
        cut = repaired;
        let refine = cut - floor;
        let mut notes: Vec<(EventKind, &str, String)> = Vec::new();
        // The live values hold for this call's stages; a fallback changes them (rare: nothing
        // fits), and that call runs the from-scratch pipeline.
        let mut use_live = incremental && !all_to_refine;
        if !all_to_refine && cut == n && effective > 0 {
            use_live = false;
            if cfg.enabled {
                let before = pipe.stages.preflight_base;
                pipe.stages.preflight_base = Some(effective.max(1024));
                let (c, o) =
                    repair_orphans(&st.index, pipe.fit(floor, pruning_budget - instructions));
                if c < n {
                    cut = c;
                    orphans = o;
                    notes.push((
                        EventKind::Warn,
                        "fallback_fading",
                        "no message fit the budget: pressure-band fading applied as the fallback"
                            .to_string(),
                    ));
                } else {
                    pipe.stages.preflight_base = before;
                }
            }
            if cut == n {
                let cap = ((effective / n as u64) * 4).max(200);
                pipe.stages.emergency = Some(cap);
                let (c, o) =
                    repair_orphans(&st.index, pipe.fit(floor, pruning_budget - instructions));
                cut = c;
                orphans = o;
                notes.push((
                    EventKind::Warn,
                    "emergency_truncation",
                    format!(
                        "empty context after pruning: every tool result and input cut to {} chars \
                         ({} effective tokens over {} messages){}",
                        fmt_tokens(cap),
                        fmt_tokens(effective),
                        fmt_tokens(n as u64),
                        if cut == n { "; still nothing fits" } else { "" }
                    ),
                ));
            }
        }

        if cfg.enabled && refine > 0 {
            let count = n - floor - usize::from(n > floor && call.msg(floor).is_summary());
            if st.summarized_at_count == Some(count) {
                out.event(
                    EventKind::Suppressed,
                    "skip_summarization",
                    format!(
                        "shouldSkipSummarization: message count {} unchanged since the last summary",
                        fmt_tokens(count as u64)
                    ),
                );
            } else {
                let pre_prune = calibrated;
                let remaining = max_context as i128 - pre_prune as i128;
                let fire = match cfg.trigger {
                    None => true,
                    Some(Trigger::TokenRatio(v)) => {
                        max_context == 0 || 1.0 - remaining as f64 / max_context as f64 >= v
                    }
                    Some(Trigger::RemainingTokens(v)) => remaining <= v as i128,
                    Some(Trigger::MessagesToRefine(v)) => refine as u64 >= v,
                };
                if fire {
                    summarize_all(call, cfg, floor, &st.index.pinned, refine, pressure, out);
                    st.summarized_at_count = Some(count);
                    st.index = Index::default();
                    st.live = Live::default();
                    st.diverged = true;
                    return Ok(());
                }
                out.event(
                    EventKind::Note,
                    "trigger_not_met",
                    format!(
                        "{} messages to refine, trigger {} not met: pruned for this call without \
                         a summary",
                        fmt_tokens(refine as u64),
                        trigger_text(cfg.trigger)
                    ),
                );
            }
        }

        // Ops for this call: drops of the pruned prefix, then the edits of what is kept.
        let mut drops = drop_ranges(&st.index.pinned, floor, cut);
        let limit = MAX_OPS.saturating_sub(drops.len());
        // Enough of the edits (from the newest back) to apply the op limit.
        let mut edits = if use_live {
            let (mut back, _) = st.live.edit_ranges_back(&pipe, cut, limit + 1);
            back.reverse();
            back
        } else {
            edit_ranges(&pipe, cut)
        };
        let over = if use_live {
            edits.len() > limit
        } else {
            drops.len() + edits.len() > MAX_OPS
        };
        if over {
            let room = MAX_OPS.saturating_sub(drops.len() + 1);
            // With no room left for any edit (≥ 255 pinned messages in the dropped part),
            // everything after the floor goes.
            let from = if room == 0 {
                n
            } else {
                edits[edits.len() - room].0
            };
            let (c, o) = repair_orphans(&st.index, from);
            orphans += o;
            notes.push((
                EventKind::Warn,
                "op_limit",
                format!(
                    "ctxlab's limit of {MAX_OPS} ops per call: {} more messages dropped than \
                     LibreChat would",
                    fmt_tokens((c - cut) as u64)
                ),
            ));
            cut = c;
            edits.retain(|r| r.1 > cut);
            for r in &mut edits {
                r.0 = r.0.max(cut);
            }
            drops = drop_ranges(&st.index.pinned, floor, cut);
        }

        let (totals, counts) = if use_live {
            let raw = st.index.raw_prefix[n] - st.index.raw_prefix[cut];
            st.live.stage_totals(cut, raw)
        } else {
            stage_totals(&pipe, cut)
        };
        if use_live {
            st.live.settle(fit_cut);
        }
        let kept = stage_events(&pipe, totals, counts, overhead, ratio, out);
        if orphans > 0 {
            out.event(
                EventKind::Note,
                "orphan_repair",
                format!(
                    "{} tool results whose tool calls were pruned dropped with them",
                    fmt_tokens(orphans as u64)
                ),
            );
        }
        for (kind, code, msg) in notes {
            out.event(kind, code, msg);
        }
        if cut > floor {
            out.event_tokens(
                EventKind::Truncation,
                "pruning",
                format!(
                    "getMessagesWithinTokenLimit: {} oldest messages pruned for this call{} \
                     (pressure {}, pruningBudget {})",
                    fmt_tokens((cut - floor) as u64),
                    if cfg.enabled {
                        ""
                    } else {
                        ", lost (no summary)"
                    },
                    pct(pressure),
                    fmt_tokens(pruning_budget)
                ),
                overhead + calibrated,
                overhead + scale(kept + call.tokens_in(0..floor), ratio),
            );
        }
        for (s, e) in drops {
            out.drop_range(s..e, Scope::ThisCall);
        }
        let placeholder = &cfg.pruning.hard_clear_placeholder;
        let op_kind = |cut: Cut, start: usize| match cut.edit(call.msg(start).chars(), placeholder)
        {
            Edit::Truncate { head, tail, marker } => OpKind::Truncate { head, tail, marker },
            Edit::Clear { placeholder } => OpKind::Mask { placeholder },
        };
        if self.edit_cache.len() > 4096 {
            self.edit_cache.clear();
        }
        for (start, end, cut) in edits {
            // Only an input cut's edit depends on the message (its length).
            let kind = if matches!(cut, Cut::Input { .. }) {
                op_kind(cut, start)
            } else {
                self.edit_cache
                    .entry(cut)
                    .or_insert_with(|| op_kind(cut, start))
                    .clone()
            };
            out.op(kind, Scope::ThisCall, start..end);
        }
        if !out.ops.is_empty() {
            st.diverged = true;
        }
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        let Some(b) = self.last_budget else {
            return Vec::new();
        };
        let mut out = vec![
            Threshold {
                kind: ThresholdKind::Warn,
                line: Line::Occupancy,
                tokens: (b.pruning_budget as f64 * PRESSURE_MASKING) as u64 + b.instructions,
                label: "observation masking (80% of pruningBudget)".into(),
            },
            Threshold {
                kind: ThresholdKind::Cutover,
                line: Line::Occupancy,
                tokens: b.pruning_budget,
                label: "pruningBudget = maxContextTokens × (1 − reserveRatio)".into(),
            },
        ];
        if self.cfg.enabled {
            let tokens = match self.cfg.trigger {
                Some(Trigger::TokenRatio(v)) => Some((b.max_context as f64 * v) as u64),
                Some(Trigger::RemainingTokens(v)) => Some(b.max_context.saturating_sub(v)),
                _ => None,
            };
            if let Some(tokens) = tokens {
                out.push(Threshold {
                    kind: ThresholdKind::Trigger,
                    line: Line::Occupancy,
                    tokens,
                    label: format!("summarization trigger {}", trigger_text(self.cfg.trigger)),
                });
            }
        }
        out
    }

    fn export(&self, _format: &str) -> Result<String, String> {
        Err("export goes through the factory (lib.rs)".into())
    }
}

fn trigger_text(t: Option<Trigger>) -> String {
    match t {
        None => "unset (any pruned message)".into(),
        Some(Trigger::TokenRatio(v)) => format!("token_ratio ≥ {v}"),
        Some(Trigger::RemainingTokens(v)) => format!("remaining_tokens ≤ {}", fmt_tokens(v)),
        Some(Trigger::MessagesToRefine(v)) => format!("messages_to_refine ≥ {}", fmt_tokens(v)),
    }
}

/// Full compaction: the whole conversation (the un-masked originals) goes to the summarizer, the
/// state is wiped and the summary comes back as one user message. Pinned messages (a host
/// notion LibreChat does not have) stay in place, which splits the summary around them.
fn summarize_all(
    call: &Call<'_>,
    cfg: &Config,
    floor: usize,
    pinned: &[usize],
    refine: usize,
    pressure: f64,
    out: &mut Decision,
) {
    let n = call.len();
    let segments = drop_ranges(pinned, floor, n);
    let before = call.context_tokens();
    let summary = cfg.max_summary_tokens.min(call.tokens_in(floor..n));
    out.event_tokens(
        EventKind::Compaction,
        "summarization",
        format!(
            "full compaction: {} messages to refine at pressure {}, trigger {}; the whole \
             conversation ({} messages) summarized into one user message (maxSummaryTokens {})",
            fmt_tokens(refine as u64),
            pct(pressure),
            trigger_text(cfg.trigger),
            fmt_tokens((n - floor) as u64),
            fmt_tokens(cfg.max_summary_tokens)
        ),
        before,
        before - call.tokens_in(floor..n) + summary,
    );
    if segments.len() > 1 {
        out.event(
            EventKind::Warn,
            "pinned_kept",
            "pinned messages stay in place: the summary is split around them (LibreChat has no \
             pinning and would summarize them too)",
        );
    }
    for (s, e) in segments {
        out.op(
            OpKind::Summarize {
                role: Role::User,
                max_tokens: cfg.max_summary_tokens,
                summarizer_input_tokens: call.overhead_tokens() + call.tokens_in(s..e),
                text: String::new(),
            },
            Scope::Persistent,
            s..e,
        );
    }
}

/// Per-stage token totals of the kept messages `[cut, n)`, and how many each stage shortened.
fn stage_totals(pipe: &Pipeline<'_, '_>, cut: usize) -> ([u64; 5], [usize; 5]) {
    let n = pipe.call.len();
    let s = &pipe.stages;
    // A stage with nothing to apply leaves the tokens of the one before: not recomputed.
    let active = [
        true,
        s.consumed_end > cut,
        s.preflight_base.is_some(),
        s.pruning.is_some(),
        s.emergency.is_some(),
    ];
    let mut totals = [0u64; 5];
    let mut counts = [0usize; 5];
    for i in cut..n {
        let mut prev = pipe.call.msg(i).tokens();
        totals[0] += prev;
        for stage in MASKING..=EMERGENCY {
            let t = if active[stage as usize] {
                pipe.tokens(i, stage)
            } else {
                prev
            };
            totals[stage as usize] += t;
            if t < prev {
                counts[stage as usize] += 1;
            }
            prev = t;
        }
    }
    (totals, counts)
}

/// One event per stage that changed what this call sends, with the kept messages' tokens before
/// and after that stage.
fn stage_events(
    pipe: &Pipeline<'_, '_>,
    totals: [u64; 5],
    counts: [usize; 5],
    overhead: u64,
    ratio: f64,
    out: &mut Decision,
) -> u64 {
    let s = &pipe.stages;
    let named = [
        (
            MASKING,
            "observation_masking",
            "consumed tool results masked to ~300-char head+tail",
        ),
        (
            PREFLIGHT,
            if pipe.cfg.enabled {
                "fit_to_budget"
            } else {
                "context_fading"
            },
            if pipe.cfg.enabled {
                "oversized results/inputs cut to 30% of the effective budget (recency-weighted)"
            } else {
                "tool results/inputs faded by the pressure band (recency-weighted)"
            },
        ),
        (
            CONTEXT_PRUNING,
            "context_pruning",
            "old tool results soft-trimmed or hard-cleared by position",
        ),
        (
            EMERGENCY,
            "emergency_truncation",
            "messages cut for the emergency retry",
        ),
    ];
    for (stage, code, what) in named {
        let k = stage as usize;
        if counts[k] == 0 {
            continue;
        }
        let detail = match stage {
            PREFLIGHT => s
                .preflight_base
                .map(|b| format!(" (base {} tokens)", fmt_tokens(b)))
                .unwrap_or_default(),
            _ => String::new(),
        };
        out.event_tokens(
            EventKind::Truncation,
            code,
            format!("{}: {what}{detail}", fmt_tokens(counts[k] as u64)),
            overhead + scale(totals[k - 1], ratio),
            overhead + scale(totals[k], ratio),
        );
    }
    totals[EMERGENCY as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlab_plugin_api::testing::{TestCall, TestMsg};

    #[test]
    fn protected_from_runs_equals_the_walk_back() {
        let mut x = 99u64;
        for case in 0..2_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = (x >> 40) as usize % 14;
            let msgs: Vec<TestMsg> = (0..n)
                .map(|i| match (x >> (2 * i % 60)) & 3 {
                    0 => TestMsg::user("u"),
                    1 => TestMsg::assistant("a"),
                    2 => TestMsg::tool_result("t", "read", "r"),
                    _ => TestMsg::system("s"),
                })
                .collect();
            TestCall::new(msgs).with_view(|raw| {
                let call = unsafe { Call::from_raw(raw) };
                let mut index = Index::default();
                index.sync(&call);
                for keep in 0..5 {
                    assert_eq!(
                        protected_from_runs(&index, n, keep),
                        protected_from(&call, keep),
                        "case {case} keep {keep}"
                    );
                }
            });
        }
    }
}
