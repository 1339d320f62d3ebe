//! The replay loop (DESIGN §4): for each call in time order, bring the agent's context up to
//! date, ask the strategy, validate and apply its decision, measure the call.
//!
//! Per-call work is proportional to what changed: messages are counted, flattened and scanned
//! for facts once, when they reach the agent; the strategy sees the context array the host keeps
//! (no rebuild); token sums, pinned counts and tool-pair spans are prefix or tree indexes that a
//! persistent edit rebuilds from its first position only.

use super::context::{model_role, sdk_role, Context, Replacement};
use super::facts::{FactId, FactSet, Facts, LineFacts};
use super::feed::{Feed, Step};
use super::metrics::{cache_split, Compaction, CompactionKind, Sample, Tally};
use super::prepared::Prepared;
use super::pricing::Price;
use super::validate::{self, Plan};
use super::*;
use crate::model::{AgentIdx, MsgIdx};
use crate::plugin_host::{Instance, RawDecision};
use crate::tokens::Fit;
use ctxlab_plugin_api::abi::{BudgetView, CallView, StrRef};
use ctxlab_plugin_api::{EventKind, OpKind, Scope};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

/// What one agent carries from one call to the next.
#[derive(Default)]
struct AgentState {
    calls: u64,
    prev_input: u64,
    prev_raw: u64,
    prev_recorded: u64,
    /// The replayed context has left the log's: a strategy edited it, or the log compacted
    /// where this replay did not. From then on the log's usage no longer measures what the
    /// replay sends, so strategies stop receiving it (their calibration would go wrong).
    left_log: bool,
    /// The agent's previous call still sent what the log recorded.
    prev_matched_log: bool,
    cumulative: u64,
    since_compaction: u64,
    /// Messages appended since the previous call, and requests seen at it.
    appended: u64,
    requests_at_prev: u32,
    /// First position whose content differs from what the previous call sent (prompt cache).
    diverged_at: usize,
    /// Messages the previous call's context held after its persistent edits.
    prev_len: usize,
    prev_timestamp: Option<i64>,
    /// Every fact this agent's history ever held.
    seen: FactSet,
}

/// What the engine needs of `ReplayOptions`, with the counter borrowed (so that
/// `recorded_raw_tokens` can run the same engine with a caller's counter).
pub(crate) struct Setup<'o> {
    pub counter: &'o dyn TokenCounter,
    pub calibration: Option<&'o Calibration>,
    pub summarizer: SummarizerModel,
    pub models: &'o ModelTable,
    pub cache_ttl: CacheTtl,
    pub stop_at_call: Option<usize>,
    pub cancel: Option<&'o AtomicBool>,
    pub progress: Option<&'o (dyn Fn(usize, usize) + Sync)>,
    pub record_decisions: bool,
}

impl<'o> Setup<'o> {
    pub(crate) fn of(o: &'o ReplayOptions<'o>) -> Setup<'o> {
        Setup {
            counter: &*o.counter,
            calibration: o.calibration.as_ref(),
            summarizer: o.summarizer,
            models: &o.models,
            cache_ttl: o.cache_ttl,
            stop_at_call: o.stop_at_call,
            cancel: o.cancel,
            progress: o.progress,
            record_decisions: o.record_decisions,
        }
    }
}

pub(crate) struct Engine<'s, 'o> {
    session: &'s Session,
    prepared: &'s Prepared,
    opts: Setup<'o>,
    label: String,
    recorded: bool,
    budget: Budget,
    contexts: Vec<Context<'s>>,
    agents: Vec<AgentState>,
    /// The session's needed facts (the base: `Prepared::needed_interner`), found in the texts
    /// the run writes; nothing is interned beside them.
    facts: Facts<'s>,
    next_id: u64,
    tally: Tally,
    samples: Vec<Sample>,
    compactions: Vec<Compaction>,
    events: Vec<RunEvent>,
    gauges: std::collections::BTreeMap<String, Vec<GaugePoint>>,
    /// Prices of every model name the session's calls and agents give (`None`: unpriced).
    prices: std::collections::HashMap<&'s str, Option<Price>>,
    /// What the tool itself recorded as each call's cost (`Session::recorded_costs`), by call.
    tool_costs: std::collections::HashMap<usize, f64>,
    steps: Vec<Step>,
    /// Per call measured: the known tokens (recorded units) of the context it sent.
    known: Vec<u64>,
    /// The recall measure's facts of the texts the run's edits write (kept across calls).
    text_facts: TextFacts,
}

/// What a run returns (`Engine::run`).
pub(crate) type Parts = (
    Vec<Sample>,
    Vec<Compaction>,
    Vec<RunEvent>,
    std::collections::BTreeMap<String, Vec<GaugePoint>>,
    Metrics,
    Option<RecordedMetrics>,
    Option<Vec<KeptMessage>>,
    Vec<CallDecision>,
    Vec<u64>,
);

impl<'s, 'o> Engine<'s, 'o> {
    pub(crate) fn new(
        session: &'s Session,
        prepared: &'s Prepared,
        opts: Setup<'o>,
        label: String,
        recorded: bool,
        budget: Budget,
    ) -> Self {
        let n = session.agents.len();
        let mut agents: Vec<AgentState> = Vec::with_capacity(n);
        agents.resize_with(n, AgentState::default);
        for a in &mut agents {
            a.diverged_at = usize::MAX;
        }
        // Each call is priced with its own model when the log names one, else its agent's; a
        // model the table does not price leaves the call unpriced (never another model's price).
        let prices = session
            .calls
            .iter()
            .filter_map(|c| c.model.as_deref())
            .chain(session.agents.iter().filter_map(|a| a.model.as_deref()))
            .map(|m| (m, opts.models.price(m)))
            .collect();
        let contexts = (0..n)
            .map(|a| {
                let ratio = opts.calibration.map_or(1.0, |c| c.fit_for(a).ratio);
                Context::new(session, prepared, a, 1.0 / ratio)
            })
            .collect();
        Engine {
            session,
            prepared,
            opts,
            label,
            recorded,
            budget,
            contexts,
            agents,
            // Only needed facts are ever indexed or asked about (`Facts::needed_distinct`).
            facts: Facts::new(prepared.needed_interner()),
            next_id: 0,
            tally: Tally::default(),
            samples: Vec::with_capacity(session.calls.len()),
            compactions: Vec::new(),
            events: Vec::new(),
            gauges: Default::default(),
            prices,
            tool_costs: session
                .recorded_costs
                .iter()
                .map(|c| (c.call, c.usd))
                .collect(),
            steps: Vec::new(),
            known: Vec::with_capacity(session.calls.len()),
            text_facts: TextFacts::default(),
        }
    }

    /// Calibrated tokens of `raw` view tokens of agent `a`'s context: the fit's overhead and
    /// ratio, with the context's known tokens at their recorded size (the view weighs them
    /// `1 / ratio` of the agent's fit; this puts back what rounding, or a call's other model,
    /// leaves of the difference).
    fn predict(&self, a: AgentIdx, fit: Fit, raw: u64) -> u64 {
        predict_in(&self.contexts[a], fit, raw)
    }

    /// The fit call `ci` is predicted with: its agent's, or its agent's for the call's model
    /// when the agent ran on several (`Calibration::fit_for_call`).
    fn fit(&self, ci: usize) -> Fit {
        self.opts
            .calibration
            .map_or(Fit::IDENTITY, |c| c.fit_for_call(self.session, ci))
    }

    fn fail(&self, call: usize, reason: impl Into<String>) -> Error {
        Error::Replay {
            strategy: self.label.clone(),
            call,
            reason: reason.into(),
        }
    }

    /// The call's prices, or the name of its model when the table does not price it (empty when
    /// neither the call nor its agent names a model).
    fn price(&self, call: &'s crate::model::Call) -> std::result::Result<Price, &'s str> {
        let session: &'s Session = self.session;
        match session.call_model(call) {
            Some(m) => self.prices.get(m).copied().flatten().ok_or(m),
            None => Err(""),
        }
    }

    /// Replays every call (or up to `stop_at_call`) and returns the run's parts.
    pub(crate) fn run(self, decider: Option<Instance>) -> Result<Parts> {
        self.run_observed(decider, None)
    }

    /// `run`, showing `observe` each call's context once the decision is checked and before it
    /// is measured (what `replay::composition` breaks down by kind).
    pub(crate) fn run_observed(
        mut self,
        mut decider: Option<Instance>,
        mut observe: Option<&mut dyn FnMut(usize, &Context<'s>)>,
    ) -> Result<Parts> {
        let session = self.session;
        let mut feed = Feed::new(session);
        let total = session.calls.len();
        let last = self.opts.stop_at_call.map_or(total, |s| (s + 1).min(total));
        let mut kept = None;
        let mut decisions = Vec::new();
        let mut described = std::collections::HashSet::new();
        for ci in 0..last {
            if ci % 1024 == 0 {
                if self.opts.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return Err(Error::Cancelled);
                }
                if let Some(p) = self.opts.progress {
                    p(ci, total);
                }
            }
            let call = &session.calls[ci];
            let a = call.agent;
            if a >= self.contexts.len() {
                return Err(self.fail(
                    ci,
                    format!("the call names agent {a}, which the session does not have"),
                ));
            }
            self.steps.clear();
            let mut steps = std::mem::take(&mut self.steps);
            feed.advance(call, |s| steps.push(s));
            for &s in &steps {
                match s {
                    Step::Append(m) if self.recorded || !feed.is_recorded_summary(m) => {
                        self.append(a, m)
                    }
                    Step::Append(_) => {}
                    Step::Compaction(c) if self.recorded => self.recorded_compaction(ci, a, c),
                    Step::Compaction(_) => self.agents[a].left_log = true,
                }
            }
            self.steps = steps;
            let facts = self.opts.record_decisions.then(|| {
                let v = self.call_view(ci);
                (
                    v.overhead_tokens,
                    v.prev_recorded_input_tokens,
                    v.new_messages,
                    v.new_request,
                )
            });
            let decision = match decider.as_mut() {
                None => RawDecision::default(),
                Some(inst) => {
                    let view = self.call_view(ci);
                    let cuts = ContextCuts {
                        ctx: &self.contexts[a],
                        counter: &*self.opts.counter,
                    };
                    inst.decide_counted(&view, Some(&*self.opts.counter), Some(&cuts))
                        .map_err(|e| self.fail(ci, e.to_string()))?
                }
            };
            if !decision.ops.is_empty() {
                self.contexts[a].settle();
            }
            let ctx = &self.contexts[a];
            let (mut plan, decision) =
                validate::check(decision, ctx, self.opts.counter, &self.opts.summarizer)
                    .map_err(|r| self.fail(ci, r))?;
            // What the next decision's `Repeat` ops (ABI 1.7) make again; nothing to do for a
            // decision without edits when the last one left none (every call of `none`, and of
            // a strategy that only compacts now and then).
            if !plan.is_empty() || self.contexts[a].has_standing() {
                self.contexts[a].set_standing(&mut plan);
            }
            if self.opts.stop_at_call == Some(ci) {
                kept = Some(self.kept(a, &plan));
            }
            if let Some(f) = observe.as_mut() {
                f(ci, &self.contexts[a]);
            }
            if let Some((overhead, recorded, new, request)) = facts {
                decisions.push(CallDecision {
                    call: ci,
                    agent: a,
                    overhead_tokens: overhead,
                    prev_recorded_input_tokens: recorded,
                    new_messages: new,
                    new_request: request != 0,
                    context: self.decided(a, &plan, &mut described),
                });
            }
            self.measure_and_apply(ci, plan, decision);
        }
        if let Some(p) = self.opts.progress {
            p(last, total);
        }
        let (metrics, recorded) = self.tally.finish();
        Ok((
            self.samples,
            self.compactions,
            self.events,
            self.gauges,
            metrics,
            recorded,
            kept,
            decisions,
            self.known,
        ))
    }

    fn append(&mut self, a: AgentIdx, m: MsgIdx) {
        // A message that takes an earlier one's place (`MessageFlags::replaces`): the agent's own
        // state, so the earlier one leaves in every run, and the cache breaks where it stood.
        if let Some(old) = self.session.messages[m].flags.replaces {
            let ctx = &mut self.contexts[a];
            if let Some(p) = ctx.position_of_message(old) {
                ctx.apply(
                    p,
                    p + 1,
                    Replacement::Nothing,
                    &mut self.next_id,
                    &mut self.facts,
                );
                let st = &mut self.agents[a];
                st.diverged_at = st.diverged_at.min(p);
            }
        }
        let st = &mut self.agents[a];
        for &f in self.prepared.indexed_of(m) {
            st.seen.insert(f);
        }
        st.appended += 1;
        self.next_id += 1;
        self.contexts[a].append(m, self.next_id);
    }

    /// The `recorded` baseline applies the log's compaction: everything before the boundary
    /// goes, except the summary and the messages kept verbatim.
    fn recorded_compaction(&mut self, ci: usize, a: AgentIdx, c: usize) {
        let keep = recorded_keep(self.session, c);
        let fit = self.fit(ci);
        let price = self.price(&self.session.calls[ci]);
        let predicted_before = self.predict(a, fit, self.contexts[a].total_tokens());
        let ctx = &mut self.contexts[a];
        // Runs of positions to remove, last first so earlier positions stay valid.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (i, e) in ctx.entries.iter().enumerate() {
            if e.msg.is_some_and(|m| !keep(m)) {
                match runs.last_mut() {
                    Some(r) if r.1 == i => r.1 = i + 1,
                    _ => runs.push((i, i + 1)),
                }
            }
        }
        let (mut pinned, mut split, mut removed, mut messages) = (0, 0, 0, 0);
        for &(s, e) in runs.iter().rev() {
            pinned += ctx.pinned_in(s, e) as u64;
            split += ctx.split_pairs_in(s, e);
            removed += ctx.tokens_in(s, e);
            messages += (e - s) as u32;
            ctx.apply(
                s,
                e,
                Replacement::Nothing,
                &mut self.next_id,
                &mut self.facts,
            );
        }
        let first = runs.first().map_or(usize::MAX, |r| r.0);
        let st = &mut self.agents[a];
        st.diverged_at = st.diverged_at.min(first);
        st.since_compaction = 0;
        self.tally.violations(pinned, split);
        let rc = &self.session.compactions[c];
        let comp = Compaction {
            call: ci,
            agent: a,
            kind: CompactionKind::Recorded,
            messages,
            context_before: rc.pre_tokens.unwrap_or(predicted_before),
            context_after: self.predict(a, fit, self.contexts[a].total_tokens()),
            tokens_before: scale(fit, removed),
            // The summary reaches the agent as the next message; its size is what replaced the history.
            tokens_after: rc
                .summary
                .filter(|&m| m < self.session.messages.len())
                .map_or(0, |m| scale(fit, self.prepared.tokens(m))),
            summarizer_input: 0,
            summarizer_output: 0,
            trigger: Some(rc.trigger.clone()),
        };
        self.tally.compaction(&comp, price.as_ref().ok());
        self.events.push(RunEvent {
            call: ci,
            agent: a,
            kind: EventKind::Compaction,
            code: format!("recorded_{}", rc.trigger),
            message: format!(
                "the log compacted the history ({} trigger): {} messages, context {} → {}",
                rc.trigger,
                fmt_tokens(messages as u64),
                fmt_tokens(comp.context_before),
                fmt_tokens(comp.context_after)
            ),
            tokens_before: comp.context_before,
            tokens_after: comp.context_after,
        });
        self.compactions.push(comp);
    }

    fn call_view(&self, ci: usize) -> CallView {
        let call = &self.session.calls[ci];
        let a = call.agent;
        let ctx = &self.contexts[a];
        let st = &self.agents[a];
        let fit = self.fit(ci);
        CallView {
            agent: StrRef::new(&self.session.agents[a].id),
            call_index: ci as u64,
            agent_call_index: st.calls,
            timestamp_ms: call.timestamp.unwrap_or(i64::MIN),
            budget: BudgetView {
                context_window: self.budget.context_window,
                max_output: self.budget.max_output,
                reserve: self.budget.reserve,
            },
            overhead_tokens: fit.predict(0),
            context_tokens: self.predict(a, fit, ctx.total_tokens()),
            prev_input_tokens: st.prev_input,
            prev_recorded_input_tokens: if st.prev_matched_log {
                st.prev_recorded
            } else {
                0
            },
            prev_raw_tokens: st.prev_raw,
            cumulative_input_tokens: st.cumulative,
            new_messages: st.appended,
            new_request: (ctx.requests > st.requests_at_prev) as u8,
            assistant_turns: ctx.assistant_turns,
            messages: ctx.views.as_ptr(),
            messages_len: ctx.views.len(),
            message_parts: ctx.parts.as_ptr(),
        }
    }

    /// Needed facts of the call (its reply's facts the agent's history already held) and how
    /// many the sent context keeps: (needed, lower, upper).
    fn recall(&mut self, ci: usize, plan: &Plan) -> (u32, u32, u32) {
        let call = &self.session.calls[ci];
        let Some(r) = call.reply.filter(|&r| r < self.session.messages.len()) else {
            return (0, 0, 0);
        };
        let a = call.agent;
        let facts = self.prepared.facts_of(r);
        let ctx = &self.contexts[a];
        let seen = &self.agents[a].seen;
        let (mut needed, mut lower, mut upper) = (0, 0, 0);
        let memo = &mut self.text_facts;
        // Its keys are the texts' addresses: valid for this call's plan only.
        memo.seen.clear();
        for f in facts.iter().filter(|&&f| seen.contains(f)) {
            needed += 1;
            let (l, u) = kept_fact(ctx, plan, *f, &self.facts, memo);
            lower += l as u32;
            upper += (l || u) as u32;
        }
        (needed, lower, upper)
    }

    fn measure_and_apply(&mut self, ci: usize, plan: Plan, decision: RawDecision) {
        let session = self.session;
        let call = &session.calls[ci];
        let a = call.agent;
        let fit = self.fit(ci);
        let price = self.price(call);
        let (needed, lower, upper) = self.recall(ci, &plan);
        let ctx = &self.contexts[a];
        let total = ctx.total_tokens();
        let raw = plan.sent_tokens(total);
        let input = self.predict(a, fit, raw);
        self.known.push(ctx.known().0);
        let messages = plan
            .edits
            .iter()
            .fold(ctx.len() as i64, |n, p| match p.op.kind {
                OpKind::Drop => n - (p.op.end - p.op.start) as i64,
                OpKind::Summarize { .. } => n - (p.op.end - p.op.start) as i64 + 1,
                _ => n,
            }) as u32;
        // Prompt cache: what precedes the first change since the previous call is read.
        let st = &self.agents[a];
        let diverged = st
            .diverged_at
            .min(st.prev_len)
            .min(plan.first_touched(None))
            .min(ctx.len());
        let ttl = self.opts.cache_ttl.millis();
        let warm = st.calls > 0
            && match (st.prev_timestamp, call.timestamp) {
                (Some(p), Some(t)) => t - p <= ttl,
                _ => true,
            };
        let (cache_read, cache_write) =
            cache_split(input, fit.predict(ctx.tokens_in(0, diverged)), warm);
        let output = match (call.usage, call.reply) {
            (Some(u), _) => u.output,
            (None, Some(r)) if r < session.messages.len() => self.prepared.tokens(r),
            _ => 0,
        };

        // Persistent edits: pins/unpins first (positions unchanged), then content edits from the
        // last to the first so earlier positions stay valid.
        // Only a compaction record uses the context before and after the call's edits; a call
        // without persistent edits (most calls) makes none.
        let context_before = if plan.edits.iter().any(|p| p.op.scope == Scope::Persistent) {
            self.predict(a, fit, total)
        } else {
            0
        };
        // Pairs a strategy separated on purpose (AllowSplit): measured like a recorded
        // compaction's, so the metric says what the modelled system sends.
        self.tally.violations(0, plan.split_pairs);
        let persistent: Vec<&validate::Planned> = plan
            .edits
            .iter()
            .filter(|p| p.op.scope == Scope::Persistent)
            .collect();
        let ctx = &mut self.contexts[a];
        for op in &plan.flags {
            let (set, clear) = match op.kind {
                OpKind::Pin => (ctxlab_plugin_api::abi::FLAG_PINNED, 0),
                _ => (0, ctxlab_plugin_api::abi::FLAG_PINNED),
            };
            ctx.apply(
                op.start,
                op.end,
                Replacement::Flags { set, clear },
                &mut self.next_id,
                &mut self.facts,
            );
        }
        let mut records = Vec::new();
        for p in persistent.iter().rev() {
            let (kind, rep) = match &p.op.kind {
                OpKind::Drop => (CompactionKind::Drop, Replacement::Nothing),
                OpKind::Summarize { role, text, .. } => (
                    CompactionKind::Summarize,
                    Replacement::Summary {
                        role: sdk_role(*role),
                        text: text.clone(),
                        tokens: p.after,
                    },
                ),
                OpKind::Truncate { .. } => (
                    CompactionKind::Truncate,
                    Replacement::Texts(p.texts.to_vec()),
                ),
                OpKind::Mask { .. } | OpKind::Cut { .. } => {
                    (CompactionKind::Mask, Replacement::Texts(p.texts.to_vec()))
                }
                OpKind::Offload { .. } => (
                    CompactionKind::Offload,
                    Replacement::Texts(p.texts.to_vec()),
                ),
                OpKind::DropResults { remove, .. } => (
                    CompactionKind::Drop,
                    Replacement::Results {
                        texts: p.texts.to_vec(),
                        remove: remove.clone(),
                    },
                ),
                OpKind::Pin | OpKind::Unpin | OpKind::AllowSplit | OpKind::Repeat => continue,
            };
            // Removed tool results are lost with no summary: the drop is what they weighed.
            let (before, after) = match p.op.kind {
                OpKind::DropResults { .. } => (p.before.saturating_sub(p.after), 0),
                _ => (p.before, p.after),
            };
            ctx.apply(
                p.op.start,
                p.op.end,
                rep,
                &mut self.next_id,
                &mut self.facts,
            );
            records.push(Compaction {
                call: ci,
                agent: a,
                kind,
                messages: (p.op.end - p.op.start) as u32,
                context_before,
                context_after: 0,
                tokens_before: scale(fit, before),
                tokens_after: scale(fit, after),
                summarizer_input: scale(fit, p.summarizer_input),
                summarizer_output: scale(fit, p.simulated),
                trigger: None,
            });
        }
        let context_after = if records.is_empty() {
            0
        } else {
            predict_in(ctx, fit, ctx.total_tokens())
        };
        for mut r in records.into_iter().rev() {
            r.context_after = context_after;
            self.tally.compaction(&r, price.as_ref().ok());
            self.compactions.push(r);
        }

        let st = &mut self.agents[a];
        let compacted = !persistent.is_empty();
        st.calls += 1;
        st.cumulative += input;
        st.since_compaction = if compacted {
            input
        } else {
            st.since_compaction + input
        };
        let pruned_raw = plan.pruned_tokens();
        let mut s = Sample {
            call: ci,
            agent: a,
            timestamp: call.timestamp,
            input_tokens: input,
            raw_tokens: raw,
            pruned_tokens: scale(fit, pruned_raw),
            output_tokens: output,
            messages,
            cumulative_input: st.cumulative,
            cumulative_since_compaction: st.since_compaction,
            cache_read,
            cache_write,
            cost_usd: 0.0,
            // The log proves a call it recorded was sent: the `recorded` baseline judges those
            // by the recorded context, not by its reconstruction of it.
            over_window: self.budget.over_window(match call.usage {
                Some(u) if self.recorded && u.context_tokens() > 0 => u.context_tokens(),
                _ => input,
            }),
            recorded: call.usage,
            needed_facts: needed,
            recalled_lower: lower,
            recalled_upper: upper,
        };
        s.cost_usd = Tally::call_cost(price.as_ref().ok(), &s, self.opts.cache_ttl);
        let tool_cost = self.tool_costs.get(&ci).copied();
        self.tally.call(
            &s,
            price.as_ref().map_err(|m| *m),
            self.opts.cache_ttl,
            tool_cost,
        );
        st.prev_input = input;
        st.prev_raw = raw;
        st.prev_recorded = call.usage.map_or(0, |u| u.context_tokens());
        st.left_log |= !plan.is_empty();
        st.prev_matched_log = !st.left_log;
        st.prev_timestamp = call.timestamp.or(st.prev_timestamp);
        st.appended = 0;
        st.requests_at_prev = ctx.requests;
        st.prev_len = ctx.len();
        // The next call's cache reads up to the first edit this call sent differently from its
        // history (this-call view filters); persistent edits are already in the history.
        st.diverged_at = plan.first_touched(Some(Scope::ThisCall));
        self.samples.push(s);
        for e in decision.events {
            self.events.push(RunEvent {
                call: ci,
                agent: a,
                kind: e.kind,
                code: e.code,
                message: e.message,
                tokens_before: e.tokens_before,
                tokens_after: e.tokens_after,
            });
        }
        for (name, value) in decision.gauges {
            self.gauges
                .entry(name)
                .or_default()
                .push(GaugePoint { call: ci, value });
        }
    }

    /// The context the strategy saw, message by message, with what its decision did to each
    /// (`ReplayOptions::record_decisions`); text and tools of the messages not `described` yet.
    fn decided(
        &self,
        a: AgentIdx,
        plan: &Plan,
        described: &mut std::collections::HashSet<u64>,
    ) -> Vec<DecidedMessage> {
        let ctx = &self.contexts[a];
        let mut out: Vec<DecidedMessage> = (0..ctx.len())
            .map(|i| {
                let v = &ctx.views[i];
                let new = described.insert(v.id);
                // SAFETY: the views point into the context's own storage, alive while it is.
                let tools = new.then(|| {
                    let tools = if v.tools.is_null() || v.tools_len == 0 {
                        &[][..]
                    } else {
                        unsafe { std::slice::from_raw_parts(v.tools, v.tools_len) }
                    };
                    tools
                        .iter()
                        .map(|t| unsafe {
                            DecidedTool {
                                id: t.id.as_str().to_string(),
                                name: t.name.as_str().to_string(),
                                body: t.body.as_str().to_string(),
                                result: t.is_result != 0,
                            }
                        })
                        .collect()
                });
                DecidedMessage {
                    id: v.id,
                    message: ctx.entries[i].msg,
                    role: model_role(v.role),
                    summary: v.flags & ctxlab_plugin_api::abi::FLAG_SUMMARY != 0,
                    tokens: v.tokens,
                    chars: v.chars,
                    state: KeptState::Verbatim,
                    sent_tokens: v.tokens,
                    sent_chars: v.chars,
                    text: new.then(|| ctx.text(i).to_string()),
                    tools,
                }
            })
            .collect();
        for p in &plan.edits {
            let (s, e) = (p.op.start, p.op.end);
            match &p.op.kind {
                OpKind::Drop | OpKind::Summarize { .. } => {
                    let state = if matches!(p.op.kind, OpKind::Drop) {
                        KeptState::Dropped
                    } else {
                        KeptState::Summary
                    };
                    for m in &mut out[s..e] {
                        m.state = state;
                        m.sent_tokens = 0;
                        m.sent_chars = 0;
                    }
                }
                _ => {
                    for (j, (m, t)) in (s..e).zip(out[s..e].iter_mut().zip(p.texts.iter())) {
                        m.sent_tokens = t.1;
                        m.sent_chars = t.0.chars().count() as u64;
                        // An op's range may hold messages it leaves as they are. Whether a
                        // message was edited is whether its text changed: an edit may keep the
                        // length and the count (a tool input LibreChat wraps in
                        // `{ _truncated, _originalChars }` can come out as long as it was).
                        if *t.0 != *ctx.text(j) || m.sent_tokens != m.tokens {
                            m.state = KeptState::Edited;
                        }
                    }
                }
            }
        }
        for (pos, text, tokens) in plan.repeated_edits(ctx) {
            let Some(m) = out.get_mut(pos) else {
                continue;
            };
            m.sent_tokens = tokens;
            m.sent_chars = text.chars().count() as u64;
            if m.sent_chars != m.chars || m.sent_tokens != m.tokens {
                m.state = KeptState::Edited;
            }
        }
        out
    }

    /// What the call sends, message by message, with what the decision did to each.
    fn kept(&self, a: AgentIdx, plan: &Plan) -> Vec<KeptMessage> {
        let ctx = &self.contexts[a];
        let mut out = Vec::with_capacity(ctx.len());
        let mut edits = plan.edits.iter().peekable();
        let mut repeated = plan.repeated_edits(ctx).peekable();
        let mut i = 0;
        while i < ctx.len() {
            let entry = &ctx.entries[i];
            let v = &ctx.views[i];
            let base = KeptMessage {
                message: entry.msg,
                role: model_role(v.role),
                tokens: v.tokens,
                state: if entry.msg.is_none() {
                    KeptState::Summary
                } else if v.flags & ctxlab_plugin_api::abi::FLAG_EDITED != 0 {
                    KeptState::Edited
                } else {
                    KeptState::Verbatim
                },
                replaces: 0,
            };
            if let Some((_, _, tokens)) = repeated.next_if(|r| r.0 == i) {
                out.push(KeptMessage {
                    tokens,
                    state: KeptState::Edited,
                    ..base
                });
                i += 1;
                continue;
            }
            match edits.peek() {
                Some(p) if p.op.start == i => {
                    let p = edits.next().expect("peeked");
                    let (s, e) = (p.op.start, p.op.end);
                    match &p.op.kind {
                        OpKind::Drop => {
                            for j in s..e {
                                out.push(KeptMessage {
                                    message: ctx.entries[j].msg,
                                    tokens: ctx.views[j].tokens,
                                    state: KeptState::Dropped,
                                    ..base.clone()
                                })
                            }
                        }
                        OpKind::Summarize { role, .. } => out.push(KeptMessage {
                            message: None,
                            role: sdk_role(*role),
                            tokens: p.after,
                            state: KeptState::Summary,
                            replaces: (e - s) as u32,
                        }),
                        _ => {
                            for (j, t) in (s..e).zip(p.texts.iter()) {
                                out.push(KeptMessage {
                                    message: ctx.entries[j].msg,
                                    role: model_role(ctx.views[j].role),
                                    tokens: t.1,
                                    state: KeptState::Edited,
                                    replaces: 0,
                                })
                            }
                        }
                    }
                    i = e;
                }
                _ => {
                    out.push(base);
                    i += 1;
                }
            }
        }
        out
    }
}

/// `Engine::predict` on a context borrowed apart from the engine.
fn predict_in(ctx: &Context<'_>, fit: Fit, raw: u64) -> u64 {
    let (known, known_view) = ctx.known();
    (fit.overhead + fit.ratio * raw as f64 + (known as f64 - fit.ratio * known_view as f64))
        .round()
        .max(0.0) as u64
}

fn scale(fit: Fit, raw: u64) -> u64 {
    (fit.ratio * raw as f64).round().max(0.0) as u64
}

/// The facts of the texts a call's edits write, scanned once per call and text: a strategy
/// that sends a long literal summary at every call (CodeTether's) had it scanned once per
/// needed fact. Across calls, through `LineFacts`: that summary changes in a few numbers from
/// one call to the next, and its other lines are not scanned again.
#[derive(Default)]
struct TextFacts {
    seen: Vec<(*const u8, usize, Vec<FactId>)>,
    lines: LineFacts,
}

impl TextFacts {
    fn contains(&mut self, facts: &Facts<'_>, text: &str, f: FactId) -> bool {
        let key = (text.as_ptr(), text.len());
        let i = match self.seen.iter().position(|e| (e.0, e.1) == key) {
            Some(i) => i,
            None => {
                self.seen
                    .push((key.0, key.1, self.lines.ids_in(facts, text)));
                self.seen.len() - 1
            }
        };
        self.seen[i].2.binary_search(&f).is_ok()
    }
}

/// Whether the call keeps fact `f` verbatim (lower bound) or through a summary (upper bound).
fn kept_fact(
    ctx: &Context<'_>,
    plan: &Plan,
    f: FactId,
    facts: &Facts<'_>,
    memo: &mut TextFacts,
) -> (bool, bool) {
    let removed = |pos: usize| -> Option<&validate::Planned> {
        let k = plan.edits.partition_point(|p| p.op.start <= pos);
        (k > 0 && pos < plan.edits[k - 1].op.end).then(|| &plan.edits[k - 1])
    };
    let repeated = |pos: usize| plan.repeated_at(ctx, pos);
    let mut upper = false;
    // Newest occurrence first. A drop or a summary treats every occurrence in its range alike,
    // so after the first one the rest of the range is skipped: a this-call summary of most of
    // the history (CodeTether's, at every call) costs one look, not one per occurrence.
    let mut k = ctx.occurrence_count(f);
    while k > 0 {
        let key = ctx.occurrence(f, k - 1);
        k -= 1;
        let Some(pos) = ctx.position(key) else {
            continue;
        };
        if let Some((text, _)) = repeated(pos) {
            if memo.contains(facts, text, f) {
                return (true, true);
            }
            continue;
        }
        match removed(pos) {
            None => return (true, true),
            Some(p) => match &p.op.kind {
                OpKind::Summarize { text, .. } => {
                    if memo.contains(facts, text, f) {
                        return (true, true);
                    }
                    upper = true;
                    k = k.min(ctx.occurrences_below(f, ctx.key_at(p.op.start)));
                }
                OpKind::Drop => {
                    k = k.min(ctx.occurrences_below(f, ctx.key_at(p.op.start)));
                }
                _ => {
                    if memo.contains(facts, &p.texts[pos - p.op.start].0, f) {
                        return (true, true);
                    }
                }
            },
        }
    }
    if !upper {
        upper = ctx.coverage.keys(f).any(|key| {
            ctx.position(key).is_some_and(|pos| {
                repeated(pos).is_none()
                    && removed(pos).map_or(true, |p| matches!(p.op.kind, OpKind::Summarize { .. }))
            })
        });
    }
    (false, upper)
}

/// `Sink::count_cut` answered from the agent's context, which remembers the tallies of the
/// pieces a message's cuts keep (`Context::count_cut`).
struct ContextCuts<'x, 'a> {
    ctx: &'x Context<'a>,
    counter: &'x dyn crate::tokens::TokenCounter,
}

impl crate::plugin_host::CutCounter for ContextCuts<'_, '_> {
    fn count_cut(&self, i: usize, head: u64, marker: &str, tail: u64) -> Option<u64> {
        self.ctx
            .count_cut(i, head, tail, marker, self.counter)
            .map(|(tokens, _)| tokens)
    }
}
