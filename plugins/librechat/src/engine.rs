//! The agent node of `@librechat/agents` 3.1.63 around the pruner: `Graph.ts` (the pruner made
//! per run and again after a summary, the tool-schema calibration, the summarization gate),
//! `AgentContext.ts` (instruction tokens, the skip rule) and `summarization/index.ts`
//! (`shouldTriggerSummarization`). LibreChat rebuilds every request from the stored conversation,
//! so what the pruner does is a `ThisCall` view filter; only a summary changes the history.

use crate::config::{Config, Trigger};
use crate::prune::{js_round, Kind, Lc, Pruned, Pruner, Recount, Sent, Settings, PRESSURE_MASKING};
use ctxlab_plugin_api::{
    fmt_tokens, Call, Decision, EventKind, Line, OpKind, Role, Scope, Strategy, Threshold,
    ThresholdKind,
};
use std::collections::HashMap;

/// `CALIBRATION_VARIANCE_THRESHOLD` (Graph.ts): the tool-schema estimate is replaced by the
/// calibrated one when they differ by more than this.
pub const CALIBRATION_VARIANCE_THRESHOLD: f64 = 0.15;

/// What LibreChat keeps per agent across calls (its `AgentContext` and the pruner closure).
#[derive(Debug, Default)]
struct AgentState {
    pruner: Option<Pruner>,
    /// `agentContext.calibrationRatio`: seeds the next pruner (persisted across runs).
    ratio: f64,
    /// `toolSchemaTokens` once the graph recalibrated it this run (else the host's overhead).
    tool_schema: Option<f64>,
    /// `_lastSummarizationMsgCount`.
    last_summary_count: usize,
    /// What each message is, by position after the leading summary (worked out once).
    info: Vec<Info>,
}

/// The LangChain shape of one host message, kept between calls.
#[derive(Debug)]
struct Info {
    id: u64,
    kind: Kind,
    has_text: bool,
    result_of: Option<Box<str>>,
    calls: Vec<(Box<str>, Box<str>)>,
    max_arg: u64,
}

impl Info {
    fn of(m: &ctxlab_plugin_api::Msg<'_>) -> Info {
        let k = kind(
            m.role(),
            m.has_tool_results() && m.role() != Role::Assistant,
        );
        let calls: Vec<(Box<str>, Box<str>)> = if k == Kind::Ai {
            m.tools()
                .filter(|t| !t.is_result())
                .map(|t| (t.id().into(), t.body().into()))
                .collect()
        } else {
            Vec::new()
        };
        Info {
            id: m.id(),
            kind: k,
            has_text: k == Kind::Ai && has_own_text(m),
            result_of: (k == Kind::Tool)
                .then(|| m.tools().find(|t| t.is_result()).map(|t| t.id().into()))
                .flatten(),
            max_arg: calls
                .iter()
                .map(|(_, a)| crate::truncation::js_len(a))
                .max()
                .unwrap_or(0),
            calls,
        }
    }
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
}

/// The run's counter through the host (ABI 1.1); without one, tokens scale with the characters.
struct HostCount<'c, 'a>(&'c Call<'a>);

impl Recount for HostCount<'_, '_> {
    fn recount(&self, m: &Lc<'_>, new_text: &str) -> u64 {
        match (self.0.count_text(m.text), self.0.count_text(new_text)) {
            (Some(old), Some(new)) => m.tokens.saturating_sub(old) + new,
            _ => {
                let len = m.text.chars().count().max(1) as f64;
                (m.tokens as f64 * new_text.chars().count() as f64 / len).ceil() as u64
            }
        }
    }
}

/// LangChain's type of a host message.
pub fn kind(role: Role, has_results: bool) -> Kind {
    match role {
        Role::System => Kind::System,
        Role::Assistant => Kind::Ai,
        Role::Tool => Kind::Tool,
        Role::User if has_results => Kind::Tool,
        Role::User => Kind::Human,
    }
}

/// The AI message's own text: its flattened text less the tool calls' arguments and names.
pub fn has_own_text(m: &ctxlab_plugin_api::Msg<'_>) -> bool {
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
    !rest.trim().is_empty()
}

/// `computeEffectiveMaxContextTokens` (LibreChat `packages/api/src/agents/run.ts`) on the base
/// `initializeAgent` computes: `maxContextTokens = round((window − maxOutput) × 0.95)`, and with a
/// reserve ratio r, `min(that, max(1024, round((window − maxOutput) × (1 − r))))`. The SDK then
/// takes its own reserve from this (`prune.ts`), so r counts twice.
pub fn max_context_tokens(window: u64, max_output: u64, reserve_ratio: f64) -> u64 {
    let base = window.saturating_sub(max_output) as f64;
    let initial = js_round(base * 0.95);
    if reserve_ratio <= 0.0 || reserve_ratio >= 1.0 {
        return initial as u64;
    }
    initial.min(1024f64.max(js_round(base * (1.0 - reserve_ratio)))) as u64
}

/// `shouldTriggerSummarization` (summarization/index.ts): `total` is the pre-prune context plus
/// the instruction tokens.
pub fn should_trigger(
    trigger: Option<Trigger>,
    max_context: u64,
    total: f64,
    remaining: f64,
    refine: usize,
) -> bool {
    if refine == 0 {
        return false;
    }
    let remaining_pre = if max_context > 0 {
        max_context as f64 - total
    } else {
        remaining
    };
    match trigger {
        None => true,
        Some(Trigger::TokenRatio(v)) => {
            max_context > 0 && 1.0 - remaining_pre / max_context as f64 >= v
        }
        Some(Trigger::RemainingTokens(v)) => remaining_pre <= v as f64,
        Some(Trigger::MessagesToRefine(v)) => refine as f64 >= v as f64,
    }
}

impl LibreChat {
    pub fn new(cfg: Config) -> LibreChat {
        LibreChat {
            cfg,
            agents: HashMap::new(),
            last_budget: None,
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

impl Strategy for LibreChat {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let cfg = &self.cfg;
        let n = call.len();
        // A summary at the start is instruction tokens (AgentContext.instructionTokens), never a
        // message the pruner sees.
        let mut base = 0;
        while base < n && call.msg(base).is_summary() {
            base += 1;
        }
        let summary_tokens = call.tokens_in(0..base) as f64;
        let st = self.agents.entry(call.agent().to_string()).or_default();
        // The shapes of the messages seen before stay; a history that changed is worked out anew.
        let same = st
            .info
            .iter()
            .zip(base..n)
            .take_while(|(info, i)| info.id == call.msg(*i).id())
            .count();
        st.info.truncate(same);
        for i in base + same..n {
            st.info.push(Info::of(&call.msg(i)));
        }
        let msgs: Vec<Lc<'_>> = st
            .info
            .iter()
            .zip(base..n)
            .map(|(info, i)| {
                let m = call.msg(i);
                Lc {
                    kind: info.kind,
                    id: info.id,
                    tokens: m.tokens(),
                    text: m.text(),
                    calls: &info.calls,
                    max_arg: info.max_arg,
                    has_text: info.has_text,
                    result_of: info.result_of.as_deref(),
                }
            })
            .collect();

        let b = call.budget();
        let max_context = max_context_tokens(b.context_window, b.max_output, cfg.reserve_ratio);
        if call.new_request() {
            // A new run: a new AgentContext and pruner; the calibration ratio carries over.
            st.pruner = None;
            st.tool_schema = None;
            st.last_summary_count = 0;
        }
        if st.pruner.as_ref().is_some_and(|p| !p.continues(&msgs)) {
            st.pruner = None;
        }
        let pruner = st.pruner.get_or_insert_with(|| Pruner::new(st.ratio));
        // The graph has the previous call's usage only after a call of this pruner; the reply is
        // the first new AI message, counted with the provider's output tokens.
        let usage = (pruner.calls > 0 && call.prev_recorded_input_tokens() > 0)
            .then(|| pruner.first_new_ai(&msgs).map(|i| msgs[i].tokens))
            .flatten()
            .map(|output| (call.prev_recorded_input_tokens(), output));
        let overhead = call.overhead_tokens() as f64;
        let instructions = st.tool_schema.unwrap_or(overhead) + summary_tokens;
        let settings = Settings {
            max_tokens: max_context as i64,
            summarization: cfg.summarization_enabled(),
            reserve_ratio: cfg.reserve_ratio,
            pruning: cfg.pruning.clone(),
        };
        let res: Pruned = pruner.prune(&settings, &msgs, usage, instructions, &HostCount(call));
        if res.calibration_ratio > 0.0 {
            st.ratio = res.calibration_ratio;
        }
        if let Some(resolved) = res.resolved_overhead {
            let tool = st.tool_schema.unwrap_or(overhead);
            let non_tool = instructions - tool;
            let calibrated = (resolved - non_tool).max(0.0);
            let variance = if tool > 0.0 {
                (calibrated - tool).abs() / tool
            } else {
                1.0
            };
            if variance > CALIBRATION_VARIANCE_THRESHOLD {
                st.tool_schema = Some(calibrated);
                out.event(
                    EventKind::Note,
                    "instruction_overhead_calibrated",
                    format!(
                        "tool schema tokens {} → {} (provider-observed instruction overhead {})",
                        fmt_tokens(tool as u64),
                        fmt_tokens(calibrated as u64),
                        fmt_tokens(resolved as u64)
                    ),
                );
            }
        }
        let instructions_now = st.tool_schema.unwrap_or(overhead) + summary_tokens;
        self.last_budget = Some(Budget {
            max_context,
            pruning_budget: res.pruning_budget.max(0.0) as u64,
            instructions: res.instructions.max(0.0) as u64,
        });
        out.gauge("pressure", res.pressure);
        out.gauge("calibration_ratio", res.calibration_ratio);

        let m = msgs.len();
        if settings.summarization && res.refine > 0 {
            let skip = st.last_summary_count > 0 && m <= st.last_summary_count;
            let fire = !skip
                && should_trigger(
                    cfg.trigger,
                    max_context,
                    res.pre_prune + instructions_now,
                    res.remaining,
                    res.refine,
                );
            if fire {
                // markSummarizationTriggered, then the summarize node rebuilds the token map
                // (the count goes back to 0) and drops the pruner.
                st.last_summary_count = 0;
                st.pruner = None;
                summarize_all(call, cfg, res.refine, res.pressure, out);
                return Ok(());
            }
            if skip {
                out.event(
                    EventKind::Suppressed,
                    "skip_summarization",
                    format!(
                        "shouldSkipSummarization: {} messages, not more than at the last summary",
                        fmt_tokens(m as u64)
                    ),
                );
            } else {
                out.event(
                    EventKind::Note,
                    "trigger_not_met",
                    format!(
                        "{} messages to refine, trigger {} not met: pruned for this call",
                        fmt_tokens(res.refine as u64),
                        trigger_text(cfg.trigger)
                    ),
                );
            }
        }
        let pruner = st.pruner.as_ref().expect("the pruner of this call");
        emit(call, base, &msgs, &res, pruner, settings.summarization, out);
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
        if self.cfg.summarization_enabled() {
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

/// The call's ops: the messages the pruner left out are dropped, the ones it sends changed are
/// replaced by their new text (one op each: LibreChat's markers state each original length).
fn emit(
    call: &Call<'_>,
    base: usize,
    msgs: &[Lc<'_>],
    res: &Pruned,
    pruner: &Pruner,
    summarization: bool,
    out: &mut Decision,
) {
    let n = msgs.len();
    let mut kept = vec![false; n];
    let mut texts: Vec<Option<&str>> = vec![None; n];
    for (i, t) in &res.context {
        kept[*i] = true;
        texts[*i] = match t {
            Sent::Run => pruner.run_text(*i),
            Sent::Own(t) => Some(t.as_str()).filter(|t| *t != msgs[*i].text),
        };
    }
    // The host refuses a drop that separates a call from its result: a result dropped as an
    // orphan whose call lies in another dropped stretch takes the messages between with it.
    // Only a dropped result after a kept message can have kept messages before it back to its
    // call (the system message at 0 never lies between): the map of calls is built only then.
    let mut pos_of_call: Option<HashMap<&str, usize>> = None;
    let mut widened = 0;
    let mut seen_kept = false;
    for p in 0..n {
        if kept[p] {
            seen_kept |= !(p == 0 && msgs[0].kind == Kind::System);
            continue;
        }
        if !seen_kept || msgs[p].result_of.is_none() {
            continue;
        }
        let pos_of_call = pos_of_call.get_or_insert_with(|| {
            msgs.iter()
                .enumerate()
                .flat_map(|(i, m)| m.calls.iter().map(move |(id, _)| (&**id, i)))
                .collect()
        });
        if let Some(q) = msgs[p].result_of.and_then(|r| pos_of_call.get(r)).copied() {
            if q < p && !kept[q] {
                for j in q..p {
                    if kept[j] {
                        kept[j] = false;
                        widened += 1;
                    }
                }
            }
        }
    }
    let dropped = kept.iter().filter(|k| !**k).count();
    for k in [
        ("observation_masking", res.masked, "consumed tool results masked (recency-weighted share of the budget, at least 300 chars)"),
        (
            if summarization { "fit_to_budget" } else { "context_fading" },
            res.preflight,
            "tool results / inputs truncated to a recency-weighted share of the budget",
        ),
        ("context_pruning", res.context_pruned, "old tool results soft-trimmed or hard-cleared by position"),
        ("orphan_repair", res.orphans, "tool messages whose call was pruned dropped with it"),
    ] {
        if k.1 > 0 {
            out.event(EventKind::Truncation, k.0, format!("{}: {}", fmt_tokens(k.1 as u64), k.2));
        }
    }
    if res.fallback {
        out.event(EventKind::Warn, "fallback_fading", "empty context after pruning: tool results faded against the whole effective budget and pruned again");
    }
    if let Some(cap) = res.emergency {
        out.event(
            EventKind::Warn,
            "emergency_truncation",
            format!(
                "empty context after pruning: every tool result and input cut to {} chars",
                fmt_tokens(cap)
            ),
        );
    }
    if widened > 0 {
        out.event(
            EventKind::Warn,
            "orphan_span",
            format!(
                "{} kept messages dropped with an orphan tool result (ctxlab drops a call and its result in one stretch)",
                fmt_tokens(widened as u64)
            ),
        );
    }
    if dropped > 0 {
        out.event(
            EventKind::Truncation,
            "pruning",
            format!(
                "getMessagesWithinTokenLimit: {} of {} messages not sent{} (pressure {})",
                fmt_tokens(dropped as u64),
                fmt_tokens(n as u64),
                if summarization {
                    ""
                } else {
                    ", lost (no summary)"
                },
                pct(res.pressure)
            ),
        );
    }
    let mut i = 0;
    while i < n {
        if kept[i] {
            if let Some(t) = texts[i] {
                out.op(
                    OpKind::Mask {
                        placeholder: t.to_string(),
                    },
                    Scope::ThisCall,
                    base + i..base + i + 1,
                );
            }
            i += 1;
            continue;
        }
        let s = i;
        while i < n && !kept[i] && !call.msg(base + i).is_pinned() {
            i += 1;
        }
        if i > s {
            out.drop_range(base + s..base + i, Scope::ThisCall);
        } else {
            // A pinned message (a host notion) is sent whatever LibreChat would do.
            i += 1;
        }
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

/// Full compaction: the whole conversation (the earlier summary too) goes to the summarizer and
/// comes back as one user message; pinned messages stay in place and split it.
fn summarize_all(call: &Call<'_>, cfg: &Config, refine: usize, pressure: f64, out: &mut Decision) {
    let n = call.len();
    let mut segments = Vec::new();
    let mut s = 0;
    for i in 0..=n {
        if i == n || call.msg(i).is_pinned() {
            if i > s {
                segments.push((s, i));
            }
            s = i + 1;
        }
    }
    let before = call.context_tokens();
    out.event_tokens(
        EventKind::Compaction,
        "summarization",
        format!(
            "{} messages to refine at pressure {}, trigger {}: the whole conversation ({} messages) \
             summarized into one user message",
            fmt_tokens(refine as u64),
            pct(pressure),
            trigger_text(cfg.trigger),
            fmt_tokens(n as u64)
        ),
        before,
        before.saturating_sub(call.tokens_in(0..n)),
    );
    if segments.len() > 1 {
        out.event(
            EventKind::Warn,
            "pinned_kept",
            "pinned messages stay in place: the summary is split around them",
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
