//! phi-core's context management (docs/strategies/phi-core.md): its own chars/4 estimate, the
//! headroom trigger of the agent loop, the tiered `compact_messages`, and `ExecutionLimits`.

mod config;
mod estimate;
mod limits;
mod mirror;
mod tiers;

#[cfg(test)]
mod tests;

use ctxlab_plugin_api::*;
use limits::{Limits, Tracker};
use mirror::{Mirror, Slot, L1};
use std::collections::HashMap;
use tiers::{Fate, Outcome, Settings};

struct PhiCore {
    params: Params,
    max_context_tokens: u64,
    system_prompt_tokens: u64,
    compact_at_pct: f64,
    compact_budget_threshold_pct: f64,
    keep_recent: usize,
    keep_first: usize,
    tool_output_max_lines: usize,
    limits: Limits,
    end_agent_at_limit: bool,
    agents: HashMap<String, AgentState>,
    /// Tests: check the mirror against a rebuild from the view at every call.
    #[cfg(test)]
    check_mirror: bool,
}

#[derive(Default)]
struct AgentState {
    mirror: Mirror,
    tracker: Tracker,
    clock_note_given: bool,
}

impl PhiCore {
    fn new(params: Params) -> PhiCore {
        let max_cost = params.float("max_cost");
        PhiCore {
            max_context_tokens: params.uint("max_context_tokens"),
            system_prompt_tokens: params.uint("system_prompt_tokens"),
            compact_at_pct: params.float("compact_at_pct"),
            compact_budget_threshold_pct: params.float("compact_budget_threshold_pct"),
            keep_recent: params.uint("keep_recent") as usize,
            keep_first: params.uint("keep_first") as usize,
            tool_output_max_lines: params.uint("legacy_tool_output_max_lines") as usize,
            limits: Limits {
                max_turns: params.uint("max_turns"),
                max_total_tokens: params.uint("max_total_tokens"),
                max_duration_secs: params.uint("max_duration_secs"),
                max_cost: (max_cost > 0.0).then_some(max_cost),
                input_per_million: params.float("input_per_million"),
                output_per_million: params.float("output_per_million"),
            },
            end_agent_at_limit: params.bool(config::END_AGENT_AT_LIMIT),
            agents: HashMap::new(),
            #[cfg(test)]
            check_mirror: false,
            params,
        }
    }

    fn budget(&self) -> u64 {
        self.max_context_tokens
            .saturating_sub(self.system_prompt_tokens)
    }
}

impl Strategy for PhiCore {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        if !self.agents.contains_key(call.agent()) {
            self.agents
                .insert(call.agent().to_string(), AgentState::default());
        }
        let limits = self.limits.clone();
        let budget = self.budget();
        let settings = Settings {
            budget,
            keep_recent: self.keep_recent,
            keep_first: self.keep_first,
            tool_output_max_lines: self.tool_output_max_lines,
        };
        let (max, threshold, end_agent) = (
            self.max_context_tokens,
            self.compact_budget_threshold_pct,
            self.end_agent_at_limit,
        );
        let (pct, sys) = (self.compact_at_pct, self.system_prompt_tokens);
        let state = self
            .agents
            .get_mut(call.agent())
            .ok_or("agent state vanished")?;

        // The agent loop checks its limits before anything else of a turn.
        state.tracker.advance(call, &limits);
        if !state.tracker.has_clock() && !state.clock_note_given && call.agent_call_index() == 0 {
            state.clock_note_given = true;
            out.event(
                EventKind::Note,
                "max_duration_unknown",
                "the log has no timestamps for this agent: max_duration cannot be checked",
            );
        }
        let estimated = state.mirror.sync(call);
        #[cfg(test)]
        if self.check_mirror {
            state.mirror.check(call, settings.tool_output_max_lines)?;
        }
        if !state.tracker.stopped {
            if let Some(reason) = state.tracker.check(call, &limits) {
                state.tracker.stopped = true;
                let code = if end_agent {
                    "agent_stopped"
                } else {
                    "execution_limit"
                };
                out.event(EventKind::Stop, code, format!("[Agent stopped: {reason}]"));
                out.gauge("estimate", (estimated + sys) as f64);
                return Ok(());
            }
        }

        let headroom = headroom(pct, sys, max, estimated);
        out.gauge("headroom_pct", headroom * 100.0);
        if headroom >= threshold {
            out.gauge("estimate", (estimated + sys) as f64);
            return Ok(());
        }

        let started = format!(
            "CompactionStarted: estimate {} of {} max_context_tokens leaves headroom {:.1}% < compact_budget_threshold_pct {:.1}%",
            fmt_tokens(estimated + sys),
            fmt_tokens(max),
            headroom * 100.0,
            threshold * 100.0
        );
        if estimated <= budget {
            // compact_messages returns the messages untouched when they already fit the budget:
            // phi-core fires again at every call until the estimate passes max − system prompt.
            out.event_tokens(
                EventKind::Note,
                "compaction_nothing_to_do",
                format!(
                    "{started}; compact_messages: {} fits budget {} — nothing compacted",
                    fmt_tokens(estimated),
                    fmt_tokens(budget)
                ),
                estimated + sys,
                estimated + sys,
            );
            out.gauge("estimate", (estimated + sys) as f64);
            return Ok(());
        }
        out.event(EventKind::Note, "CompactionStarted", started);

        let outcome = tiers::compact(call, &settings, estimated, &mut state.mirror);
        for step in &outcome.steps {
            let (kind, verb) = if step.changed {
                (EventKind::Compaction, "")
            } else {
                (EventKind::Note, " (changed nothing)")
            };
            out.event_tokens(
                kind,
                step.level.code(),
                format!(
                    "{}{verb}: {} → {} (budget {})",
                    step.what,
                    fmt_tokens(step.before + sys),
                    fmt_tokens(step.after + sys),
                    fmt_tokens(budget + sys)
                ),
                step.before + sys,
                step.after + sys,
            );
        }
        let (fates, unplaced) = tiers::fates(call, &outcome.items, &state.mirror);
        if unplaced > 0 {
            out.event(
                EventKind::Note,
                "host_message_granularity",
                format!(
                    "phi-core writes {unplaced} marker(s) between two tool results of one message, \
                     where no whole message stands for them (left out)"
                ),
            );
        }
        emit_ops(call, &outcome, &fates, out, &mut state.mirror);
        out.gauge("estimate", (outcome.after + sys) as f64);
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        let max = self.max_context_tokens as f64;
        let trigger = (max * (self.compact_at_pct - self.compact_budget_threshold_pct)).max(0.0);
        vec![Threshold {
            kind: ThresholdKind::Trigger,
            line: Line::Occupancy,
            tokens: trigger as u64,
            label: "compact_at_pct − compact_budget_threshold_pct".into(),
        }]
    }

    fn export(&self, format: &str) -> Result<String, String> {
        config::export(&self.params, format)
    }
}

/// The agent loop's trigger: compact when this falls below compact_budget_threshold_pct, i.e. when
/// the estimate passes max·(compact_at_pct − threshold) − system_prompt_tokens.
fn headroom(compact_at_pct: f64, system_prompt_tokens: u64, max: u64, estimated: u64) -> f64 {
    let max = max.max(1) as f64;
    compact_at_pct - system_prompt_tokens as f64 / max - estimated as f64 / max
}

/// Turns each host message's fate into ops over the view: runs of dropped messages are drops, a
/// message replaced by phi-core's user message (with the dropped ones after it) is a literal
/// summary, a cut tool output is a head/tail truncation when the host's cut gives phi-core's text,
/// else its text replaced whole, a message of several tool results phi-core keeps only some of
/// loses the others (`DropResults`, ABI 1.5). Removals are applied as phi-core makes them
/// (one `AllowSplit` over the context first): phi-core's level 2 and 3 boundaries may separate a tool call
/// from its results, and `[Summary] <short reply>` is larger than the reply. The mirror takes the
/// layout the host will hold once the ops are applied.
fn emit_ops(
    call: &Call<'_>,
    outcome: &Outcome,
    fates: &[Fate],
    out: &mut Decision,
    mirror: &mut Mirror,
) {
    let scope = Scope::Persistent;
    if fates.iter().any(|f| *f != Fate::Keep) {
        out.op(OpKind::AllowSplit, scope, 0..fates.len());
    }
    let mut layout: Vec<Slot> = Vec::with_capacity(fates.len());
    let mut dirty: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < fates.len() {
        match &fates[i] {
            Fate::Keep => {
                if outcome.cut[i] {
                    if let L1::Cut { text, parts, units } = &mirror.slots[i].l1 {
                        let m = call.msg(i);
                        let kind = match (parts, as_truncation(m.text(), text)) {
                            (Some(p), _) => OpKind::Mask {
                                placeholder: p.clone(),
                            },
                            (None, Some((head, tail, marker))) => {
                                OpKind::Truncate { head, tail, marker }
                            }
                            (None, None) => OpKind::Mask {
                                placeholder: text.clone(),
                            },
                        };
                        out.op(kind, scope, i..i + 1);
                        dirty.push(layout.len());
                        layout.push(Slot::rewritten(units.iter().sum()));
                        i += 1;
                        continue;
                    }
                }
                layout.push(mirror.take(i));
                i += 1;
            }
            Fate::Part(remove) => {
                let contents: Vec<String> = tiers::unit_contents(call, i, mirror, outcome.cut[i])
                    .into_iter()
                    .zip(remove)
                    .filter(|(_, &r)| !r)
                    .map(|(c, _)| c)
                    .collect();
                let slot = &mirror.slots[i];
                let est: u64 = match (&slot.l1, outcome.cut[i]) {
                    (L1::Cut { units, .. }, true) => units
                        .iter()
                        .zip(remove)
                        .filter(|(_, &r)| !r)
                        .map(|(e, _)| e)
                        .sum(),
                    _ => slot
                        .units
                        .iter()
                        .zip(remove)
                        .filter(|(_, &r)| !r)
                        .map(|(u, _)| u.est)
                        .sum(),
                };
                out.op(
                    OpKind::DropResults {
                        remove: remove.clone(),
                        contents,
                    },
                    scope,
                    i..i + 1,
                );
                dirty.push(layout.len());
                layout.push(Slot::rewritten(est));
                i += 1;
            }
            Fate::Drop | Fate::Replace(_) => {
                let mut j = i + 1;
                while j < fates.len() && fates[j] == Fate::Drop {
                    j += 1;
                }
                match &fates[i] {
                    Fate::Replace(text) => {
                        out.op(
                            OpKind::Summarize {
                                role: Role::User,
                                max_tokens: 0,
                                summarizer_input_tokens: 0,
                                text: text.clone(),
                            },
                            scope,
                            i..j,
                        );
                        dirty.push(layout.len());
                        layout.push(Slot::rewritten(estimate::user_text_tokens(text)));
                    }
                    _ => {
                        out.drop_range(i..j, scope);
                    }
                }
                i = j;
            }
        }
    }
    mirror.compacted(layout, dirty);
}

/// phi-core's cut of `old` as the host's truncation (the first `head` and last `tail` characters
/// with `marker` between), when that gives exactly `new`: one tool output whose kept lines end in
/// "\n" (not "\r\n") and whose text does not end with a newline.
fn as_truncation(old: &str, new: &str) -> Option<(u64, u64, String)> {
    let at = new.find("\n\n[... ")?;
    let marker_end =
        at + new[at..].find(" lines truncated ...]\n\n")? + " lines truncated ...]\n\n".len();
    let (head, marker, tail) = (&new[..at], &new[at..marker_end], &new[marker_end..]);
    let fits = old.starts_with(head)
        && old.ends_with(tail)
        && head.len() + tail.len() <= old.len()
        && old.chars().count() > head.chars().count() + tail.chars().count();
    fits.then(|| {
        (
            head.chars().count() as u64,
            tail.chars().count() as u64,
            marker.to_string(),
        )
    })
}

pub struct ContextStrategy;

impl StrategyFactory for ContextStrategy {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "phi-core.context",
            title: "phi-core tiered compaction",
            system: "phi-core",
            description: "phi-core's agent loop: its chars/4 estimate against max_context_tokens, \
                          compaction when headroom falls under compact_budget_threshold_pct, \
                          tiered compact_messages (L1 tool-output head+tail, L2 one-line turn \
                          summaries, L3 drop the middle), and ExecutionLimits stops.",
            params: config::schema(),
            export_formats: config::FORMATS,
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        if params.uint("max_context_tokens") == 0 {
            return Err("max_context_tokens must be at least 1".into());
        }
        Ok(Box::new(PhiCore::new(params)))
    }

    fn import(&self, format: &str, text: &str) -> Result<serde_json::Value, String> {
        config::import(format, text)
    }
}

ctxlab_plugin_api::export_plugin!(
    name: "phi-core",
    version: env!("CARGO_PKG_VERSION"),
    strategies: [&ContextStrategy],
);
