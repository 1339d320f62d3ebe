//! The strategy: FIM One's ReAct loop as seen by one agent's calls. At a new user request
//! DbMemory reloads and compacts the earlier history; at every call micro_compact clears old tool
//! results and ContextGuard enforces the budget.

use crate::compact::{Caller, Entry, Outcome, Removal, Settings, Src, SummaryPlan};
use crate::emit::{emit, Plan, Texts};
use crate::estimate::{content_len, message_tokens, msg_tokens, truncated_tokens};
use crate::params::{Config, DB_MEMORY_KEEP_RECENT, MAX_MSG_CHARS, TRUNCATED_MARKER};
use ctxlab_plugin_api::abi::FLAG_REQUEST;
use ctxlab_plugin_api::{
    fmt_tokens, Call, Decision, EventKind, Line, Msg, Role, Strategy, Threshold, ThresholdKind,
};
use std::collections::{HashMap, HashSet, VecDeque};

/// micro_compact's placeholder for a cleared tool result.
pub fn cleared_text(keep: usize) -> String {
    format!("[result cleared -- older than {keep} most recent tool results]")
}

/// The host takes at most 256 ops per decision: clearing a long backlog of tool results (a log
/// whose first call already holds hundreds) is spread over the following calls.
const MAX_MASKS_PER_CALL: usize = 128;

pub struct FimOne {
    cfg: Config,
    agents: HashMap<String, AgentState>,
    /// FIM One's estimate per message, keyed by id and length so an edited message is re-counted.
    cache: HashMap<(u64, u64), u64>,
    last_budget: Option<u64>,
    clamp_reported: bool,
}

#[derive(Default)]
struct AgentState {
    /// FIM One's estimate of the view's messages as this agent's previous call left them.
    total: u64,
    /// The part of `total` in non-summary system messages (not DbMemory history).
    sys: u64,
    /// The view's length after the previous call when nothing was removed (appends only since).
    synced_len: Option<usize>,
    /// Messages edited by the previous call: (position, id, estimate assumed) to re-count.
    reestimate: Vec<(usize, u64, u64)>,
    /// Tool results not cleared yet, oldest first (ids).
    pending: VecDeque<u64>,
    /// Id of the first message of the current request: DbMemory's reload at the next request
    /// only has to look at what came since.
    request_start: Option<u64>,
    /// (position, id) of the plain system messages ContextGuard's smart_truncate dropped in this
    /// request, sorted: not sent for the rest of the request (a this-call drop at every call),
    /// back at the next one, when react.py builds the system messages again.
    hidden: Vec<(usize, u64)>,
}

fn est(cache: &mut HashMap<(u64, u64), u64>, m: Msg<'_>) -> u64 {
    *cache
        .entry((m.id(), m.chars()))
        .or_insert_with(|| msg_tokens(&m))
}

/// Whether micro_compact already cleared this result. The length is compared first: reading the
/// text checks its UTF-8, and this runs over every result of the view after a compaction.
fn is_cleared(m: Msg<'_>, cleared: &str) -> bool {
    m.text_len() == cleared.len() && m.text() == cleared
}

fn is_plain_system(m: Msg<'_>) -> bool {
    m.role() == Role::System && !m.is_summary()
}

/// `microcompact._is_tool_result`: a tool message, or (JSON mode) a user message whose content
/// starts with `Observation: `.
pub fn is_tool_result(m: Msg<'_>) -> bool {
    m.has_tool_results()
        || m.role() == Role::Tool
        || (m.role() == Role::User && m.text().starts_with(OBSERVATION))
}

/// The ReAct loop's JSON-mode observation prefix (`microcompact.py`).
pub const OBSERVATION: &str = "Observation: ";

/// What DbMemory's query brings back of an earlier request (`db.py`, `DbMemory.get_messages`):
/// chat.py persists the user's query and injected messages and one assistant row, the answer,
/// and rows are rebuilt as role + content only (no tool calls). Tool traffic, JSON-mode
/// observations and the loop's intermediate assistant turns are not persisted. System messages
/// are the ReAct loop's own, rebuilt at every request; summaries are system messages too, but no
/// summary is persisted and the loop drops system messages from the history
/// (`react.py`, `if msg.role != "system"`), so they do not come back.
fn persisted(m: Msg<'_>) -> bool {
    match m.role() {
        Role::Tool => false,
        Role::System => !m.is_summary(),
        Role::User => !is_tool_result(m) && !m.has_tool_calls(),
        Role::Assistant => {
            let empty = match m.content_chars() {
                Some((a, o)) => a + o == 0,
                None => m.text().trim().is_empty(),
            };
            !(m.has_tool_calls() || m.has_tool_results()) && !(empty && m.images() == 0)
        }
    }
}

impl FimOne {
    pub fn new(cfg: Config) -> FimOne {
        FimOne {
            cfg,
            agents: HashMap::new(),
            cache: HashMap::new(),
            last_budget: None,
            clamp_reported: false,
        }
    }
}

impl Strategy for FimOne {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let FimOne {
            cfg,
            agents,
            cache,
            last_budget,
            clamp_reported,
        } = self;
        let budget = cfg.budget(call.budget());
        if budget.clamped_from.is_some() && !*clamp_reported {
            *clamp_reported = true;
            out.event(
                EventKind::Warn,
                "budget.floor",
                format!("input budget {} (the 4,000 floor)", budget.why),
            );
        }
        *last_budget = Some(budget.tokens);
        let budget = budget.tokens;
        let n = call.len();
        let new = (call.new_messages() as usize).min(n);
        let first_new = n - new;
        let st = agents.entry(call.agent().to_string()).or_default();
        let cleared = cleared_text(cfg.micro_keep);
        let cleared_est = message_tokens(&cleared, 0);

        // 0. System messages smart_truncate dropped earlier in the request stay out of it; a new
        // request rebuilds them (react.py `_emit_system_messages` at every run).
        let new_request = call.new_request() && new > 0;
        let mut resync = false;
        if !st.hidden.is_empty() {
            if new_request {
                st.hidden.clear();
                resync = true;
            } else if st
                .hidden
                .iter()
                .any(|&(p, id)| p >= first_new || call.msg(p).id() != id)
            {
                // The positions are kept in step with this plugin's own edits; should they ever
                // disagree, the ids are found again.
                let ids: HashSet<u64> = st.hidden.iter().map(|h| h.1).collect();
                st.hidden = (0..first_new)
                    .filter(|&p| ids.contains(&call.msg(p).id()))
                    .map(|p| (p, call.msg(p).id()))
                    .collect();
                resync = true;
            }
        }
        let hidden_at: HashSet<usize> = st.hidden.iter().map(|h| h.0).collect();

        // 1. Estimates of what the agent already had: carried over, or counted again after a
        // compaction changed the view.
        let mut synced = st.synced_len == Some(first_new) && !resync;
        if synced {
            for &(p, id, assumed) in &st.reestimate {
                if p >= first_new || call.msg(p).id() != id {
                    synced = false;
                    break;
                }
                st.total = st.total.saturating_sub(assumed) + est(cache, call.msg(p));
            }
        }
        st.reestimate.clear();
        if !synced {
            st.total = 0;
            st.sys = 0;
            st.pending.clear();
            for p in 0..first_new {
                if hidden_at.contains(&p) {
                    continue;
                }
                let m = call.msg(p);
                let e = est(cache, m);
                st.total += e;
                if is_plain_system(m) {
                    st.sys += e;
                }
                if is_tool_result(m) && !is_cleared(m, &cleared) {
                    st.pending.push_back(m.id());
                }
            }
        }

        // 2. The request this call serves: the current query and what arrived with it.
        let r = if new_request {
            let flagged = (first_new..n)
                .rev()
                .find(|&p| call.msg(p).has(FLAG_REQUEST));
            flagged.unwrap_or_else(|| {
                let cur = call.msg(n - 1).request();
                let mut r = n;
                while r > first_new && call.msg(r - 1).request() == cur {
                    r -= 1;
                }
                r
            })
        } else {
            first_new
        };
        let query = if new_request {
            (r..n).find(|&p| call.msg(p).role() == Role::User)
        } else {
            None
        };
        let mut plan = Plan::default();
        if new_request {
            // Tool results of earlier requests do not come back (step 3).
            st.pending.clear();
        }
        let (mut est_current, mut sys_current) = (0u64, 0u64);
        for p in first_new..n {
            let m = call.msg(p);
            let mut e = est(cache, m);
            let current = p >= r;
            // Vision content arrays are not cut (FIM One skips list content).
            if m.images() == 0 && content_len(&m) > cfg.max_msg_chars && !m.is_summary() {
                plan.at(p).truncate = true;
                let t = truncated_tokens(m.text(), cfg.max_msg_chars, TRUNCATED_MARKER, 0);
                st.reestimate.push((p, m.id(), t));
                out.event_tokens(
                    EventKind::Truncation,
                    "context_guard.truncate_oversized",
                    format!(
                        "message {} has {} chars > {MAX_MSG_CHARS} {}: cut with [Truncated]",
                        p,
                        fmt_tokens(content_len(&m)),
                        fmt_tokens(cfg.max_msg_chars)
                    ),
                    e,
                    t,
                );
                e = t;
            }
            st.total += e;
            if is_plain_system(m) {
                st.sys += e;
                if current {
                    sys_current += e;
                }
            }
            if current {
                est_current += e;
                if m.role() == Role::User && !m.is_pinned() && (Some(p) == query || m.is_injected())
                {
                    plan.at(p).pin = Some(true);
                }
                if is_tool_result(m) && !is_cleared(m, &cleared) {
                    st.pending.push_back(m.id());
                }
            }
        }

        // 3. DbMemory: the history of earlier requests is reloaded (user and assistant messages,
        // unpinned) and compacted to the budget before the first call of the request.
        let mut dropped_est = 0u64;
        let mut load_over = false;
        if new_request && r > 0 {
            let mut lo = r;
            while lo > 0 {
                lo -= 1;
                if Some(call.msg(lo).id()) == st.request_start {
                    break;
                }
            }
            let mut not_back = 0u64;
            // One assistant row per request: its answer, the last assistant message with content.
            let mut answer: HashMap<u32, usize> = HashMap::new();
            for p in lo..r {
                let m = call.msg(p);
                if m.role() == Role::Assistant && persisted(m) {
                    answer.insert(m.request(), p);
                }
            }
            for p in lo..r {
                let m = call.msg(p);
                if m.is_pinned() {
                    plan.at(p).pin = Some(false);
                }
                let back = persisted(m)
                    && (m.role() != Role::Assistant || answer.get(&m.request()) == Some(&p));
                if !back {
                    plan.at(p).removal = Some(Removal::Drop);
                    dropped_est += est(cache, m);
                    not_back += 1;
                }
            }
            if not_back > 0 {
                out.event_tokens(
                    EventKind::Note,
                    "db_memory.reload",
                    format!(
                        "DbMemory reloads the persisted rows (queries, injected messages, one \
                         answer per request): {} messages of earlier requests ({} tokens: tool \
                         traffic, intermediate turns, summaries) are not in the history",
                        fmt_tokens(not_back),
                        fmt_tokens(dropped_est)
                    ),
                    st.total,
                    st.total.saturating_sub(dropped_est),
                );
            }
            let history = st
                .total
                .saturating_sub(est_current + dropped_est + st.sys.saturating_sub(sys_current));
            load_over = history > budget;
        }
        if new_request {
            st.request_start = Some(call.msg(r.min(n - 1)).id());
        }

        // 4. micro_compact: all but the newest micro_compact_keep_recent tool results cleared.
        if st.pending.len() > cfg.micro_keep {
            let n_clear = (st.pending.len() - cfg.micro_keep).min(MAX_MASKS_PER_CALL);
            let ids: HashSet<u64> = st.pending.drain(..n_clear).collect();
            let mut found = 0usize;
            for p in (0..n).rev() {
                if found == ids.len() {
                    break;
                }
                let m = call.msg(p);
                if !ids.contains(&m.id()) {
                    continue;
                }
                found += 1;
                let edit = plan.at(p);
                let before = if edit.truncate {
                    truncated_tokens(m.text(), cfg.max_msg_chars, TRUNCATED_MARKER, 0)
                } else {
                    est(cache, m)
                };
                edit.mask = true;
                st.total = st.total.saturating_sub(before) + cleared_est;
                st.reestimate.retain(|x| x.0 != p);
                st.reestimate.push((p, m.id(), cleared_est));
            }
            let waiting = st.pending.len().saturating_sub(cfg.micro_keep);
            out.event(
                EventKind::Note,
                "micro_compact",
                format!(
                    "micro_compact: cleared {} tool results (kept {} recent){}",
                    found,
                    cfg.micro_keep,
                    if waiting > 0 {
                        format!(
                            "; {} more are cleared at the next calls",
                            fmt_tokens(waiting as u64)
                        )
                    } else {
                        String::new()
                    }
                ),
            );
        }

        // 5. ContextGuard.
        // FIM One estimates its message list only (its system prompt is a message; tool schemas
        // are not counted, `deps.py`: "ContextGuard accounts for it dynamically"), so ctxlab's
        // calibrated overhead, which stands for what a log leaves out, is not added.
        let overhead = 0;
        let mut estimate = overhead + st.total.saturating_sub(dropped_est);
        let mut summaries: Vec<SummaryPlan> = Vec::new();
        if load_over || estimate > budget {
            let ctx = Full {
                cfg,
                budget,
                overhead,
                load_end: (new_request && load_over).then_some(r),
                cleared_est,
                hidden: &hidden_at,
            };
            let (s, after) = ctx.compact(call, cache, &mut plan, out);
            summaries = s;
            estimate = after;
        }
        let newly_hidden = plan.edits.values().any(|e| e.hide);
        st.synced_len = if plan.removes_any() || newly_hidden {
            None
        } else {
            Some(n)
        };
        let texts = Texts {
            mask: &cleared,
            truncate_head: cfg.max_msg_chars,
            truncate_marker: TRUNCATED_MARKER,
        };
        let mut hidden: Vec<usize> = st.hidden.iter().map(|h| h.0).collect();
        hidden.extend(plan.edits.iter().filter(|(_, e)| e.hide).map(|(&p, _)| p));
        hidden.sort_unstable();
        let removed = emit(call, &mut plan, &summaries, &hidden, &texts, out)?;
        // Where the hidden messages stand after this call's persistent removals (a summarize
        // range leaves one message).
        st.hidden = hidden
            .iter()
            .map(|&p| {
                let shift: isize = removed
                    .iter()
                    .filter(|r| r.1 <= p)
                    .map(|r| (r.1 - r.0) as isize - r.2 as isize)
                    .sum();
                ((p as isize - shift) as usize, call.msg(p).id())
            })
            .collect();
        out.gauge("fim_estimate", estimate as f64);
        out.gauge("budget", budget as f64);
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        let budget = match self.last_budget {
            Some(b) => b,
            None if self.cfg.budget_source == crate::params::BudgetSource::ModelConfig => {
                return Vec::new()
            }
            None => self.cfg.budget(Default::default()).tokens,
        };
        vec![Threshold {
            kind: ThresholdKind::Trigger,
            line: Line::Occupancy,
            tokens: budget,
            label: "ContextGuard budget".to_string(),
        }]
    }

    fn export(&self, format: &str) -> Result<String, String> {
        crate::env::export(&self.cfg.params, format)
    }
}

/// The compaction steps when something is over budget: they see the whole view.
struct Full<'c> {
    cfg: &'c Config,
    budget: u64,
    overhead: u64,
    /// DbMemory compacts the history before this position.
    load_end: Option<usize>,
    cleared_est: u64,
    /// Positions of the system messages hidden for the rest of the request.
    hidden: &'c HashSet<usize>,
}

impl Full<'_> {
    fn compact<'a>(
        &self,
        call: &Call<'a>,
        cache: &mut HashMap<(u64, u64), u64>,
        plan: &mut Plan,
        out: &mut Decision,
    ) -> (Vec<SummaryPlan>, u64) {
        let cfg = self.cfg;
        let pinned_after = |p: usize| {
            plan.edits
                .get(&p)
                .and_then(|e| e.pin)
                .unwrap_or(call.msg(p).is_pinned())
        };
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(call.len());
        for (p, m) in call.messages().enumerate() {
            if self.hidden.contains(&p) {
                continue;
            }
            let edit = plan.edits.get(&p);
            if edit.is_some_and(|e| e.removal.is_some()) {
                continue;
            }
            let e = match edit {
                Some(e) if e.mask => self.cleared_est,
                Some(e) if e.truncate => {
                    truncated_tokens(m.text(), cfg.max_msg_chars, TRUNCATED_MARKER, 0)
                }
                _ => est(cache, m),
            };
            entries.push(Entry {
                src: Src::View(p),
                msg: Some(m),
                role: m.role(),
                pinned: pinned_after(p),
                est: e,
                order: 2 * p as u64 + 2,
            });
        }
        let mut oc = Outcome::default();
        let fails = cfg.fails_at.contains(&call.call_index());
        let settings = |caller: Caller, overhead: u64, keep_recent: usize| Settings {
            budget: self.budget,
            overhead,
            keep_recent,
            summary_max: cfg.summary_max,
            hint: &cfg.hint,
            fails,
            caller,
        };
        if let Some(r) = self.load_end {
            let (history, rest): (Vec<Entry<'a>>, Vec<Entry<'a>>) =
                entries.into_iter().partition(|e| {
                    matches!(e.src, Src::View(p) if p < r) && !e.msg.is_some_and(is_plain_system)
                });
            let count = history.len();
            let before: u64 = history.iter().map(|e| e.est).sum();
            let s = settings(Caller::DbMemory, 0, DB_MEMORY_KEEP_RECENT);
            let history = if cfg.compact_llm {
                let h = oc.llm_compact(history, &s);
                oc.drop_new_summaries(h)
            } else {
                oc.smart_truncate(history, &s)
            };
            let after: u64 = history.iter().map(|e| e.est).sum();
            let gone = count
                - history
                    .iter()
                    .filter(|e| matches!(e.src, Src::View(_)))
                    .count();
            oc.events.push(ctxlab_plugin_api::Event {
                kind: EventKind::Compaction,
                code: "db_memory.compact".to_string(),
                message: format!(
                    "Earlier context ({} messages) was summarized{}",
                    fmt_tokens(gone as u64),
                    if cfg.compact_llm {
                        " (the summary is a system message, which the ReAct loop does not \
                         append: the agent sees only the messages kept verbatim)"
                    } else {
                        " (no compaction LLM: smart_truncate, nothing summarized)"
                    }
                ),
                tokens_before: before,
                tokens_after: after,
            });
            entries = rest.into_iter().chain(history).collect();
            entries.sort_by_key(|e| e.order);
        }
        let total = self.overhead + entries.iter().map(|e| e.est).sum::<u64>();
        if total > self.budget {
            let s = settings(Caller::Guard, self.overhead, cfg.keep_recent);
            entries = if cfg.compact_llm {
                oc.llm_compact(entries, &s)
            } else {
                oc.events.push(ctxlab_plugin_api::Event {
                    kind: EventKind::Note,
                    code: "context_guard.over_budget".to_string(),
                    message: format!(
                        "ContextGuard: {} tokens exceeds budget {} (hint={}), no compaction LLM: \
                         smart_truncate",
                        fmt_tokens(total),
                        fmt_tokens(self.budget),
                        cfg.hint
                    ),
                    tokens_before: total,
                    tokens_after: total,
                });
                oc.smart_truncate(entries, &s)
            };
        }
        let after = self.overhead + entries.iter().map(|e| e.est).sum::<u64>();
        for (src, how) in &oc.removed {
            if let Src::View(p) = *src {
                let e = plan.at(p);
                if *how == Removal::Drop && is_plain_system(call.msg(p)) {
                    // Only smart_truncate drops a system message (they are never compactable):
                    // gone for the rest of the request, rebuilt at the next.
                    e.hide = true;
                    e.truncate = false;
                } else {
                    e.removal = Some(*how);
                }
            }
        }
        for &p in &oc.unpinned {
            let e = plan.at(p);
            if e.removal.is_none() {
                e.pin = Some(false);
            }
        }
        out.events.extend(oc.events);
        (oc.summaries, after)
    }
}
