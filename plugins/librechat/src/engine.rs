//! The agent node of `@librechat/agents` 3.1.63 around the pruner: `Graph.ts` (the pruner made
//! per run and again after a summary, the tool-schema calibration, the summarization gate),
//! `AgentContext.ts` (instruction tokens, the skip rule) and `summarization/index.ts`
//! (`shouldTriggerSummarization`). LibreChat rebuilds every request from the stored conversation,
//! so what the pruner does is a `ThisCall` view filter; only a summary changes the history.

use crate::config::{Config, Trigger};
use crate::prune::{
    js_round, link, Ids, Kept, Kind, Lc, Pruned, Pruner, Recount, Settings, Text, Texts,
    PRESSURE_MASKING,
};
use crate::truncation::HeadTail;
use ctxlab_plugin_api::{
    fmt_tokens, push_tokens, Call, Decision, EventKind, Line, OpKind, Role, Scope, Strategy,
    Threshold, ThresholdKind,
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
    /// What each message is, by position after the leading summary (worked out once, when it
    /// arrives).
    info: Vec<Lc>,
    /// Positions (in `info`) of the pinned messages.
    pinned: Vec<usize>,
    /// Where each tool-call id of `info` occurs (`prune::link`).
    ids: Ids,
    /// Position of the latest human message: the host's counts of the messages after it change
    /// when the next one arrives (a reply's transient tokens, hidden reasoning, leave then).
    request_start: usize,
    /// The this-call edits the last decision sent, by host position, with the version of the
    /// text sent (`prune::new_version`): what a `Repeat` op (ABI 1.7) sends again.
    sent: Vec<(usize, u64)>,
    /// The list before `sent`, kept for its memory (the next decision's list goes there).
    sent_spare: Vec<(usize, u64)>,
    /// The leading summaries at the last decision: with a history that only grew since, the
    /// positions in `sent` still name the same messages.
    sent_base: usize,
    /// The last decision's kept window (`Kept::Window`'s `from`, `end` and the positions of its
    /// exceptions), when it was one: with `sent`, what each message of it sent.
    sent_window: Option<SentWindow>,
}

/// The shape of a decision's kept window (positions after the leading summaries).
#[derive(Debug, Default)]
struct SentWindow {
    from: usize,
    end: usize,
    /// The exceptions' positions, ascending (dropped or sending a text of that call).
    except: Vec<usize>,
}

/// The LangChain shape of one host message, kept between calls; `tools_before` counts the tool
/// results before it.
fn info_of(m: &ctxlab_plugin_api::Msg<'_>, tools_before: usize) -> Lc {
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
    Lc {
        id: m.id(),
        kind: k,
        tokens: m.tokens(),
        len: crate::truncation::js_len(m.text()),
        tools_before,
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
        pinned: m.is_pinned(),
        text_tokens: Default::default(),
        cuts: Default::default(),
        orphan_from: usize::MAX,
    }
}

/// The originals' texts of the call's messages after its leading summary.
struct CallTexts<'c, 'a> {
    call: &'c Call<'a>,
    base: usize,
}

impl Texts for CallTexts<'_, '_> {
    fn text(&self, i: usize) -> &str {
        self.call.msg(self.base + i).text()
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
    /// Sends the edits that did not change as `Repeat` ops (ABI 1.7); off only to test that
    /// this changes nothing.
    repeat: bool,
    /// Sends a cut of an original as a `Cut` op (ABI 1.8: the bytes it keeps, not its text);
    /// off only to test that this changes nothing.
    cut: bool,
    /// Runs keep what they share (see `prune::Frozen`); off only to test that this changes
    /// nothing.
    incremental: bool,
    agents: HashMap<String, AgentState>,
    last_budget: Option<Budget>,
    /// Pre-flight passes that looked only at the last pass's lists (for tests).
    listed: u64,
}

/// The run's counter through the host (ABI 1.1); without one, tokens scale with the characters.
struct HostCount<'c, 'a> {
    call: &'c Call<'a>,
    /// Host position of the pruner's message 0.
    base: usize,
    /// Cuts are counted and sent as cuts where the host takes them (`LibreChat::cut`).
    cut: bool,
}

impl HostCount<'_, '_> {
    /// The count of a message's original, the same at every cut of it.
    fn original_tokens(&self, m: &Lc, original: &str) -> Option<u64> {
        m.text_tokens.get().or_else(|| {
            let c = self.call.count_text(original);
            m.text_tokens.set(c);
            c
        })
    }
}

impl Recount for HostCount<'_, '_> {
    fn can_cut(&self, i: usize) -> bool {
        self.cut && self.call.takes_cut(self.base + i)
    }

    fn recount_cut(&self, m: &Lc, i: usize, kept: HeadTail, marker: &str) -> Option<u64> {
        if !self.cut {
            return None;
        }
        let original = self.call.msg(self.base + i).text();
        let old = self.original_tokens(m, original)?;
        let new = self
            .call
            .count_cut(self.base + i, kept.head.into(), marker, kept.tail.into())?;
        Some(m.tokens.saturating_sub(old) + new)
    }

    fn recount(&self, m: &Lc, old_text: &str, new_text: &str) -> u64 {
        match (
            self.original_tokens(m, old_text),
            self.call.count_text(new_text),
        ) {
            (Some(old), Some(new)) => m.tokens.saturating_sub(old) + new,
            _ => {
                let len = old_text.chars().count().max(1) as f64;
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
    /// Every run works out the whole history, as LibreChat does (for tests).
    pub fn from_scratch(mut self) -> LibreChat {
        self.incremental = false;
        self
    }

    /// Every edit sent with its text at every call, no `Repeat` (for tests).
    pub fn without_repeat(mut self) -> LibreChat {
        self.repeat = false;
        self
    }

    /// Every cut sent with its text, as a `Mask`, never as a `Cut` (for tests).
    pub fn without_cut(mut self) -> LibreChat {
        self.cut = false;
        self
    }

    /// Messages in the frozen prefixes of the agents' pruners (for tests).
    #[cfg(test)]
    pub fn frozen(&self) -> usize {
        self.agents
            .values()
            .filter_map(|a| a.pruner.as_ref())
            .map(|p| p.frozen_len())
            .sum()
    }

    /// Pre-flight passes that looked only at what the last pass left over the caps (for tests).
    #[cfg(test)]
    pub fn listed(&self) -> u64 {
        self.listed
    }

    pub fn new(cfg: Config) -> LibreChat {
        LibreChat {
            cfg,
            repeat: true,
            cut: true,
            incremental: true,
            agents: HashMap::new(),
            last_budget: None,
            listed: 0,
        }
    }
}

fn pct(x: f64) -> String {
    let mut s = String::new();
    push_pct(&mut s, x);
    s
}

/// `x` as a whole percentage, `format!("{:.0}%", x * 100.0)` (ties to even, as the formatter
/// rounds), written without the formatting machinery: the pruning event carries it at every call.
pub(crate) fn push_pct(s: &mut String, x: f64) {
    let v = x * 100.0;
    if (0.0..1e15).contains(&v) {
        crate::truncation::push_uint(s, v.round_ties_even() as u64);
        s.push('%');
    } else {
        use std::fmt::Write;
        let _ = write!(s, "{v:.0}%");
    }
}

impl Strategy for LibreChat {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let cfg = &self.cfg;
        let incremental = self.incremental;
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
        // The host appends `new_messages`; when the ends of the rest are the ones seen, the
        // history only grew (the host changes it only by this strategy's summaries).
        let len = n - base;
        let old = len - (call.new_messages() as usize).min(len);
        let grew = st.info.len() == old
            && (old == 0
                || (st.info[0].id == call.msg(base).id()
                    && st.info[old - 1].id == call.msg(base + old - 1).id()));
        let same = if grew {
            old
        } else {
            st.info
                .iter()
                .zip(base..n)
                .take_while(|(info, i)| info.id == call.msg(*i).id())
                .count()
        };
        if same < st.info.len() {
            st.info.truncate(same);
            st.ids.clear();
            for q in 0..same {
                link(&mut st.info, &mut st.ids, q);
            }
        }
        st.pinned.retain(|&p| p < same);
        if !grew {
            st.request_start = 0;
        }
        // Counts the host changed since the last call (only those since the previous human
        // message can have: `Context::drop_transient`); a frozen prefix that holds one is worked
        // out again.
        let mut recounted: Option<usize> = None;
        for i in st.request_start.min(same)..same {
            let t = call.msg(base + i).tokens();
            if t != st.info[i].tokens {
                st.info[i].tokens = t;
                recounted.get_or_insert(i);
            }
        }
        if let (Some(p), Some(pruner)) = (recounted, st.pruner.as_mut()) {
            if p < pruner.frozen_len() {
                pruner.forget_frozen();
            }
        }
        for i in base + same..n {
            let tools_before = crate::prune::tools_upto(&st.info, st.info.len());
            let m = call.msg(i);
            if m.is_pinned() {
                st.pinned.push(st.info.len());
            }
            let info = info_of(&m, tools_before);
            if info.kind == Kind::Human {
                st.request_start = st.info.len();
            }
            st.info.push(info);
            let q = st.info.len() - 1;
            link(&mut st.info, &mut st.ids, q);
        }
        // The last decision's edits are known at today's positions when the history only grew
        // since (or it made none).
        let repeat = st.sent.is_empty() || (grew && base == st.sent_base);
        let msgs: &[Lc] = &st.info;
        let tx = CallTexts { call, base };

        let b = call.budget();
        let max_context = max_context_tokens(b.context_window, b.max_output, cfg.reserve_ratio);
        if st.pruner.as_ref().is_some_and(|p| p.seen() > same) {
            // Not the history this closure saw: a new one.
            st.pruner = None;
        }
        if call.new_request() {
            // A new run: a new AgentContext and pruner; the calibration ratio carries over.
            if let Some(p) = st.pruner.as_mut() {
                p.new_run(st.ratio);
            }
            st.tool_schema = None;
            st.last_summary_count = 0;
        }
        let pruner = st.pruner.get_or_insert_with(|| {
            let p = Pruner::new(st.ratio);
            if incremental {
                p
            } else {
                p.from_scratch()
            }
        });
        // The graph has the previous call's usage only after a call of this pruner; the reply is
        // the first new AI message, counted with the provider's output tokens.
        let usage = (pruner.calls > 0 && call.prev_recorded_input_tokens() > 0)
            .then(|| pruner.first_new_ai(msgs).map(|i| msgs[i].tokens))
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
        let res: Pruned = pruner.prune(
            &settings,
            msgs,
            &st.ids,
            &tx,
            usage,
            instructions,
            &HostCount {
                call,
                base,
                cut: self.cut,
            },
        );
        self.listed += u64::from(res.listed);
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
                st.sent.clear();
                st.sent_window = None;
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
        // Set above (`get_or_insert_with`); only a summary takes it, and that call has returned.
        let Some(pruner) = st.pruner.as_mut() else {
            return Err("librechat: no pruner for this call (internal error)".into());
        };
        let dirty = pruner.take_dirty();
        let pruner = &*pruner;
        let prev = (repeat && self.repeat).then_some(&st.sent[..]);
        // The last window's messages before the first run text changed since send what they
        // sent then (each run text's version is new when it changes).
        let same = prev
            .filter(|_| grew && base == st.sent_base)
            .and(st.sent_window.as_ref())
            .map(|w| (w, dirty));
        let spare = std::mem::take(&mut st.sent_spare);
        let (sent, window) = emit(
            base,
            msgs,
            &st.ids,
            &tx,
            &st.pinned,
            &res,
            pruner,
            settings.summarization,
            prev,
            same,
            spare,
            out,
        );
        st.sent_spare = std::mem::replace(&mut st.sent, sent);
        st.sent_window = window;
        st.sent_base = base;
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

/// What a kept message sends in place of its original.
#[derive(Clone, Copy)]
enum Edit<'a> {
    /// Its original.
    None,
    /// The run's text of it and its version ([`Pruner::run_text_version`]).
    Run(&'a Text, u64),
    /// A text of this call only.
    Own(&'a str),
}

/// The call's ops: the messages the pruner left out are dropped, the ones it sends changed are
/// replaced by their new text (one op each: LibreChat's markers state each original length).
/// It works on the messages sent and the stretches left out, not on every message.
///
/// With `prev` (the edits the last decision sent, by host position, with their texts' versions,
/// when they still name the same messages), a stretch of kept messages that send what they sent
/// then, edited by the same run text or not edited at all, is one `Repeat` op (ABI 1.7): only
/// the edits that changed are sent with their text. Returns the edits this decision makes (and
/// versions), for the next one.
#[allow(clippy::too_many_arguments)]
fn emit<'r>(
    base: usize,
    msgs: &[Lc],
    ids: &Ids,
    tx: &'r dyn Texts,
    pinned: &[usize],
    res: &'r Pruned,
    pruner: &'r Pruner,
    summarization: bool,
    prev: Option<&[(usize, u64)]>,
    same: Option<(&SentWindow, usize)>,
    spare: Vec<(usize, u64)>,
    out: &mut Decision,
) -> (Vec<(usize, u64)>, Option<SentWindow>) {
    let n = msgs.len();
    let edit_of = |i: usize, own: Option<&'r str>| -> Edit<'r> {
        match own {
            None => pruner
                .run_text_version(i)
                .map_or(Edit::None, |(t, v)| Edit::Run(t, v)),
            Some(t) if t != tx.text(i) => Edit::Own(t),
            Some(_) => Edit::None,
        }
    };
    let is_kept =
        |kept: &[(usize, Edit<'_>)], p: usize| kept.binary_search_by_key(&p, |k| k.0).is_ok();
    // The position of the call a result at `p` answers: the last message carrying its id (ids
    // may repeat: an empty one does).
    let call_of = |r: &str| -> Option<usize> {
        if r.is_empty() {
            (0..n)
                .rev()
                .find(|&q| msgs[q].calls.iter().any(|(id, _)| &**id == r))
        } else {
            ids.get(r).and_then(|e| e.calls.last().copied())
        }
    };
    // A window whose dropped orphans need no widening (below) is walked as it is; else its list.
    let window = match &res.context {
        Kept::Window {
            system,
            from,
            end,
            except,
        } => {
            let first_seen = res
                .context
                .iter()
                .find(|k| !(k.0 == 0 && msgs[0].kind == Kind::System))
                .map(|k| k.0);
            let kept_at = |q: usize| {
                (q == 0 && *system)
                    || ((*from..*end).contains(&q)
                        && except
                            .binary_search_by_key(&q, |e| e.0)
                            .map_or(true, |k| except[k].1.is_some()))
            };
            let widens = first_seen.is_some_and(|p0| {
                except.iter().any(|&(p, ref t)| {
                    t.is_none()
                        && p > p0
                        && msgs[p]
                            .result_of
                            .as_deref()
                            .and_then(call_of)
                            .is_some_and(|q| q < p && !kept_at(q))
                })
            });
            !widens
        }
        Kept::List(_) => false,
    };
    let mut widened = 0;
    let mut list: Vec<(usize, Edit<'_>)> = Vec::new();
    if !window {
        // The kept positions, ascending, with what each sends when it is not its original.
        list = res
            .context
            .iter()
            .map(|(i, t)| (i, edit_of(i, t)))
            .collect();
        let kept = &mut list;
        // The host refuses a drop that separates a call from its result: a result dropped as
        // an orphan whose call lies in another dropped stretch takes the messages between with
        // it. Only a dropped result after a kept message (the system message at 0 aside) can
        // have kept messages before it back to its call.
        let first_seen = kept
            .iter()
            .position(|k| !(k.0 == 0 && msgs[0].kind == Kind::System));
        if let Some(mut k) = first_seen {
            // `kept[k]` is the first kept message at or after `p`.
            let mut p = kept[k].0 + 1;
            k += 1;
            while p < n {
                while k < kept.len() && kept[k].0 < p {
                    k += 1;
                }
                if k < kept.len() && kept[k].0 == p {
                    p += 1;
                    continue;
                }
                if let Some(r) = msgs[p].result_of.as_deref() {
                    if let Some(q) = call_of(r) {
                        if q < p && !is_kept(kept, q) {
                            let before = kept.len();
                            kept.retain(|k| !(q..p).contains(&k.0));
                            widened += before - kept.len();
                            k = kept.partition_point(|x| x.0 < p);
                        }
                    }
                }
                p += 1;
            }
        }
    }
    let kept_len = if window {
        res.context.len()
    } else {
        list.len()
    };
    let dropped = n - kept_len;
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
            let mut m = String::with_capacity(k.2.len() + 12);
            push_tokens(&mut m, k.1 as u64);
            m.push_str(": ");
            m.push_str(k.2);
            out.event(EventKind::Truncation, k.0, m);
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
        // "getMessagesWithinTokenLimit: {dropped} of {n} messages not sent[, lost (no summary)]
        // (pressure {pct})", written piece by piece: it is made at every call.
        let mut m = String::with_capacity(96);
        m.push_str("getMessagesWithinTokenLimit: ");
        push_tokens(&mut m, dropped as u64);
        m.push_str(" of ");
        push_tokens(&mut m, n as u64);
        m.push_str(" messages not sent");
        if !summarization {
            m.push_str(", lost (no summary)");
        }
        m.push_str(" (pressure ");
        push_pct(&mut m, res.pressure);
        m.push(')');
        out.event(EventKind::Truncation, "pruning", m);
    }
    // Left-out stretches are dropped, split around pinned messages (a host notion: sent
    // whatever LibreChat would do).
    let drop = |s: usize, e: usize, out: &mut Decision| {
        let mut from = s;
        let first = pinned.partition_point(|&p| p < s);
        for &p in pinned[first..].iter().take_while(|&&p| p < e) {
            if p > from {
                out.drop_range(base + from..base + p, Scope::ThisCall);
            }
            from = p + 1;
        }
        if e > from {
            out.drop_range(base + from..base + e, Scope::ThisCall);
        }
    };
    let mut ops = Ops {
        base,
        tx,
        prev,
        was: prev.unwrap_or(&[]),
        run: None,
        next: 0,
        sent: {
            let mut v = spare;
            v.clear();
            v.reserve(prev.map_or(0, |p| p.len() + 8));
            v
        },
    };
    match &res.context {
        Kept::Window {
            system,
            from,
            end,
            except,
        } if window => {
            // Only the messages edited now or at the last decision, and the exceptions, are
            // looked at one by one: the stretches between them are kept unedited, as before.
            // The stretch kept in both windows before the first run text changed since
            // (`same`) sends what it sent then: its edits repeat as they are, unread.
            if *system {
                ops.one(0, edit_of(0, None), out, &drop);
            }
            let (content, _) = pruner.run_texts();
            let mut ex = except.iter().peekable();
            let (ma, mb, mut pex) = match same {
                Some((w, dirty)) => (w.from.max(*from), w.end.min(*end).min(dirty), &w.except[..]),
                None => (0, 0, &[][..]),
            };
            let mut i = *from;
            while i < *end {
                if (ma..mb).contains(&i) {
                    while let [p, rest @ ..] = pex {
                        if *p >= i {
                            break;
                        }
                        pex = rest;
                    }
                    let j = mb
                        .min(ex.peek().map_or(*end, |e| e.0))
                        .min(pex.first().map_or(*end, |&p| p));
                    if j > i {
                        #[cfg(debug_assertions)]
                        {
                            // What the walk would find: each message sends its run text of
                            // the last decision (the same version) or its original, as then.
                            let was: Vec<(usize, u64)> = ops
                                .was
                                .iter()
                                .copied()
                                .filter(|w| (base + i..base + j).contains(&w.0))
                                .collect();
                            let now: Vec<(usize, u64)> = (i..j)
                                .filter_map(|p| match edit_of(p, None) {
                                    Edit::Run(_, v) => Some((base + p, v)),
                                    _ => None,
                                })
                                .collect();
                            debug_assert_eq!(was, now, "an unchanged stretch sends what it sent");
                        }
                        ops.unchanged(i, j, out, &drop);
                        i = j;
                        continue;
                    }
                }
                ops.skip_was(i);
                let edited = content[i..*end]
                    .iter()
                    .position(|c| c.is_some())
                    .map_or(*end, |k| i + k);
                let was = ops.was.first().map_or(*end, |w| (w.0 - base).min(*end));
                let exc = ex.peek().map_or(*end, |e| e.0);
                let j = edited.min(was).min(exc);
                if j > i {
                    ops.plain(i, j, out, &drop);
                }
                if j >= *end {
                    break;
                }
                match ex.next_if(|e| e.0 == j) {
                    Some((_, None)) => {}
                    Some((_, Some(t))) => ops.one(j, edit_of(j, Some(t.as_str())), out, &drop),
                    None => ops.one(j, edit_of(j, None), out, &drop),
                }
                i = j + 1;
            }
        }
        _ => {
            for (i, edit) in list {
                ops.one(i, edit, out, &drop);
            }
        }
    }
    ops.flush(out);
    drop(ops.next, n, out);
    let shape = match &res.context {
        Kept::Window {
            from, end, except, ..
        } if window => Some(SentWindow {
            from: *from,
            end: *end,
            except: except.iter().map(|e| e.0).collect(),
        }),
        _ => None,
    };
    (ops.sent, shape)
}

/// The ops of the kept messages, in order: a stretch of kept messages that send what they sent
/// at the last decision (`prev`) is one `Repeat` (when it holds an edit to repeat); a message
/// whose edit changed is a `Mask` with its text; the stretches left out are dropped.
struct Ops<'p> {
    base: usize,
    /// The messages' originals (a cut's text is made of its original).
    tx: &'p dyn Texts,
    prev: Option<&'p [(usize, u64)]>,
    /// What is left of `prev` (host positions at or after the next message).
    was: &'p [(usize, u64)],
    /// The stretch of kept messages a `Repeat` may cover: [start, end), and whether it holds an
    /// edit to repeat.
    run: Option<(usize, usize, bool)>,
    /// The position after the last kept message.
    next: usize,
    /// The edits this decision makes (host position, text version), for the next one.
    sent: Vec<(usize, u64)>,
}

impl Ops<'_> {
    fn flush(&mut self, out: &mut Decision) {
        if let Some((s, e, true)) = self.run.take() {
            out.op(
                OpKind::Repeat,
                Scope::ThisCall,
                self.base + s..self.base + e,
            );
        }
    }

    /// Forgets what the last decision sent before position `i` (positions only grow: each
    /// entry is passed once).
    fn skip_was(&mut self, i: usize) {
        while let [w, rest @ ..] = self.was {
            if w.0 >= self.base + i {
                break;
            }
            self.was = rest;
        }
    }

    /// A message kept at `i`: what lies between it and the last one kept is dropped.
    fn gap(&mut self, i: usize, out: &mut Decision, drop: &dyn Fn(usize, usize, &mut Decision)) {
        if i > self.next {
            self.flush(out);
            drop(self.next, i, out);
        }
    }

    /// The messages of [i, j), kept, unedited now and at the last decision.
    fn plain(
        &mut self,
        i: usize,
        j: usize,
        out: &mut Decision,
        drop: &dyn Fn(usize, usize, &mut Decision),
    ) {
        self.gap(i, out, drop);
        self.next = j;
        if self.prev.is_some() {
            let r = self.run.get_or_insert((i, i, false));
            r.1 = j;
        }
    }

    /// The messages of [i, j), kept now and at the last decision, each sending the run text
    /// (or original) it sent then: their edits of the last decision are this one's.
    fn unchanged(
        &mut self,
        i: usize,
        j: usize,
        out: &mut Decision,
        drop: &dyn Fn(usize, usize, &mut Decision),
    ) {
        self.gap(i, out, drop);
        self.next = j;
        self.skip_was(i);
        let k = self.was.partition_point(|w| w.0 < self.base + j);
        self.sent.extend_from_slice(&self.was[..k]);
        self.was = &self.was[k..];
        let r = self.run.get_or_insert((i, i, false));
        r.1 = j;
        r.2 |= k > 0;
    }

    /// The message at `i`, kept, sending `edit`.
    fn one(
        &mut self,
        i: usize,
        edit: Edit<'_>,
        out: &mut Decision,
        drop: &dyn Fn(usize, usize, &mut Decision),
    ) {
        self.gap(i, out, drop);
        self.next = i + 1;
        // What the last decision sent for this message (its edit, if any).
        self.skip_was(i);
        let before = match self.was.first() {
            Some(w) if w.0 == self.base + i => {
                self.was = &self.was[1..];
                Some(w.1)
            }
            _ => None,
        };
        let same = match (edit, before) {
            (Edit::None, None) => Some(false),
            (Edit::Run(_, v), Some(b)) if v == b => Some(true),
            _ => None,
        };
        match same {
            Some(edited) if self.prev.is_some() => {
                let r = self.run.get_or_insert((i, i, false));
                r.1 = i + 1;
                r.2 |= edited;
            }
            _ => self.flush(out),
        }
        let version = match edit {
            Edit::None => return,
            Edit::Run(_, v) => v,
            Edit::Own(_) => crate::prune::new_version(),
        };
        if same.is_none() || self.prev.is_none() {
            let kind = match edit {
                // A cut of the original (made only for a host that takes it): the host makes
                // the text, only the indicator crosses.
                Edit::Run(t, _) => match t.as_cut() {
                    Some((k, marker)) => OpKind::Cut {
                        head: k.head.into(),
                        tail: k.tail.into(),
                        marker: marker.to_string(),
                    },
                    None => OpKind::Mask {
                        placeholder: t.get(self.tx.text(i)).to_string(),
                    },
                },
                Edit::Own(t) => OpKind::Mask {
                    placeholder: t.to_string(),
                },
                Edit::None => return,
            };
            out.op(kind, Scope::ThisCall, self.base + i..self.base + i + 1);
        }
        self.sent.push((self.base + i, version));
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
