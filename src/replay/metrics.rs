//! Every figure of a run, computed here and nowhere else; docs/metrics.md defines each one.

use super::pricing::{CacheTtl, Price};
use crate::model::{AgentIdx, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One call of the replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Index into `Session::calls`.
    pub call: usize,
    pub agent: AgentIdx,
    pub timestamp: Option<i64>,
    /// Tokens the call sends: calibrated overhead + its messages after the strategy's edits.
    /// This is also the context occupancy at the call.
    pub input_tokens: u64,
    /// Counted tokens of the messages sent, without overhead or calibration.
    pub raw_tokens: u64,
    /// Tokens this call's view filters (this-call-only edits: fuseraft's ContextWindow,
    /// LibreChat's per-call pruning) left out of what it sends, calibrated; 0 when none.
    #[serde(default)]
    pub pruned_tokens: u64,
    /// Recorded output tokens of the call, else the counted tokens of its reply.
    pub output_tokens: u64,
    /// Messages sent.
    pub messages: u32,
    /// The agent's input tokens summed over its calls so far, this one included.
    pub cumulative_input: u64,
    /// The same, restarted at the agent's last compaction (fuseraft's chart).
    pub cumulative_since_compaction: u64,
    /// Prompt-cache model: tokens read from the cache / written to it.
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost_usd: f64,
    /// The call does not fit the budget (`Budget::over_window`: input + max output > window), so
    /// it could not have been sent. The `recorded` baseline judges a call the log recorded by its
    /// recorded context: it was sent.
    pub over_window: bool,
    /// The usage the log recorded for this call.
    pub recorded: Option<Usage>,
    /// Needed-fact recall at this call: facts needed, and how many were kept (bounds).
    pub needed_facts: u32,
    pub recalled_lower: u32,
    pub recalled_upper: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    Drop,
    Summarize,
    Truncate,
    Mask,
    Offload,
    /// A compaction the log recorded, applied by the `recorded` baseline.
    Recorded,
}

/// One persistent edit of an agent's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// The call before which it happened.
    pub call: usize,
    pub agent: AgentIdx,
    pub kind: CompactionKind,
    pub messages: u32,
    /// Context tokens (calibrated) of the agent before and after the decision's edits.
    pub context_before: u64,
    pub context_after: u64,
    /// Tokens of the edited messages, and of what stands in their place.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Summaries: tokens the summarizer read and wrote (compaction overhead).
    pub summarizer_input: u64,
    pub summarizer_output: u64,
    /// Recorded compactions: the log's trigger (`auto`, `manual`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionStats {
    pub count: u64,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Uncached input and cache writes.
    pub input_usd: f64,
    pub cache_read_usd: f64,
    pub output_usd: f64,
    /// The simulated summarizer's calls.
    pub summarizer_usd: f64,
    pub total_usd: f64,
    /// Calls whose model the table does not price: counted in tokens, left out of the cost.
    pub unpriced_calls: u64,
    /// The same, by model (most calls first).
    #[serde(default)]
    pub unpriced: Vec<Unpriced>,
}

/// Calls of one model the table does not price.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpriced {
    /// The model as the log names it; empty when the calls name no model.
    pub model: String,
    pub calls: u64,
}

impl Cost {
    /// What the cost leaves out, in words every output that shows the cost prints beside it:
    /// `cost excludes 157 calls of claude-opus-4-6: no price — add it to models.toml or import a
    /// price list (ctxlab models import)`. `None` when every call was priced.
    pub fn notice(&self) -> Option<String> {
        unpriced_notice(&self.unpriced)
    }
}

/// The notice for these unpriced calls (`Cost::notice`).
pub fn unpriced_notice(unpriced: &[Unpriced]) -> Option<String> {
    if unpriced.is_empty() {
        return None;
    }
    let parts: Vec<String> = unpriced
        .iter()
        .map(|u| {
            let calls = if u.calls == 1 { "call" } else { "calls" };
            if u.model.is_empty() {
                format!(
                    "{} {calls} that name no model",
                    crate::fmt::fmt_tokens(u.calls)
                )
            } else {
                format!("{} {calls} of {}", crate::fmt::fmt_tokens(u.calls), u.model)
            }
        })
        .collect();
    Some(format!(
        "cost excludes {}: no price — add {} to models.toml or import a price list (ctxlab models import)",
        parts.join(", "),
        if unpriced.len() == 1 { "it" } else { "them" }
    ))
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    /// Needed facts over all calls.
    pub needed: u64,
    /// Share kept when summaries keep nothing / everything; `None` when nothing was needed.
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

/// The figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub calls: u64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub peak_context: u64,
    pub p95_context: u64,
    pub calls_over_window: u64,
    pub compactions: BTreeMap<CompactionKind, CompactionStats>,
    /// Summarizer input + output tokens.
    pub compaction_overhead_tokens: u64,
    /// Tokens dropped with no summary.
    pub lost_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost: Cost,
    pub recall: Recall,
    pub pinned_violations: u64,
    pub split_tool_pairs: u64,
}

/// What the log itself recorded, beside the replay's prediction of it (fidelity).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedMetrics {
    pub calls_with_usage: u64,
    /// Sum of the recorded context tokens (input + cache read + cache write).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub peak_context: u64,
    pub cost_usd: f64,
    /// The cache model's cache reads on the same calls.
    pub predicted_cache_read_tokens: u64,
    /// Replayed input tokens vs recorded context tokens: mean and p95 absolute % error.
    pub input_mean_ape: f64,
    pub input_p95_ape: f64,
    /// The tool's own cost where the log records it (`Session::recorded_costs`: Cline, OpenCode,
    /// pi), on the priced calls that carry one; `cost_usd_on_tool_calls` is ctxlab's price of the
    /// recorded usage of the same calls, for the cross-check.
    #[serde(default)]
    pub tool_cost_calls: u64,
    #[serde(default)]
    pub tool_cost_usd: f64,
    #[serde(default)]
    pub cost_usd_on_tool_calls: f64,
}

impl RecordedMetrics {
    /// ctxlab's price of the recorded usage against the tool's own, on the calls that record one:
    /// `(ctxlab − tool) / tool`; `None` when no priced call records a cost.
    pub fn tool_cost_difference(&self) -> Option<f64> {
        (self.tool_cost_calls > 0 && self.tool_cost_usd > 0.0)
            .then(|| (self.cost_usd_on_tool_calls - self.tool_cost_usd) / self.tool_cost_usd)
    }
}

/// The prompt-cache model for one call: the prefix unchanged since the agent's previous call is
/// read from the cache when that call is recent enough, the rest is written.
pub(crate) fn cache_split(input: u64, unchanged_prefix: u64, warm: bool) -> (u64, u64) {
    let read = if warm { unchanged_prefix.min(input) } else { 0 };
    (read, input - read)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Collects a run's figures call by call.
#[derive(Default)]
pub(crate) struct Tally {
    m: Metrics,
    contexts: Vec<u64>,
    recalled_lower: u64,
    recalled_upper: u64,
    rec: RecordedMetrics,
    apes: Vec<f64>,
    unpriced: BTreeMap<String, u64>,
}

impl Tally {
    /// Tallies a call; `price` is its model's prices, or the model's name when it has none;
    /// `tool_cost` what the tool itself recorded as the call's cost.
    pub(crate) fn call(
        &mut self,
        s: &Sample,
        price: std::result::Result<&Price, &str>,
        ttl: CacheTtl,
        tool_cost: Option<f64>,
    ) {
        let m = &mut self.m;
        m.calls += 1;
        m.total_input_tokens += s.input_tokens;
        m.total_output_tokens += s.output_tokens;
        m.peak_context = m.peak_context.max(s.input_tokens);
        m.calls_over_window += s.over_window as u64;
        m.cache_read_tokens += s.cache_read;
        m.cache_write_tokens += s.cache_write;
        match price {
            Ok(p) => {
                m.cost.input_usd += p.cost(0, 0, s.cache_write, 0, ttl);
                m.cost.cache_read_usd += p.cost(0, s.cache_read, 0, 0, ttl);
                m.cost.output_usd += p.cost(0, 0, 0, s.output_tokens, ttl);
            }
            Err(model) => {
                m.cost.unpriced_calls += 1;
                // Looked up before a key is made: most unpriced calls repeat a model already
                // counted.
                match self.unpriced.get_mut(model) {
                    Some(n) => *n += 1,
                    None => {
                        self.unpriced.insert(model.to_string(), 1);
                    }
                }
            }
        }
        let price = price.ok();
        m.recall.needed += s.needed_facts as u64;
        self.recalled_lower += s.recalled_lower as u64;
        self.recalled_upper += s.recalled_upper as u64;
        self.contexts.push(s.input_tokens);
        if let Some(u) = s.recorded {
            let r = &mut self.rec;
            let ctx = u.context_tokens();
            r.calls_with_usage += 1;
            r.input_tokens += ctx;
            r.output_tokens += u.output;
            r.cache_read_tokens += u.cache_read;
            r.cache_write_tokens += u.cache_write();
            r.peak_context = r.peak_context.max(ctx);
            r.predicted_cache_read_tokens += s.cache_read;
            if let Some(p) = price {
                let usd = p.usage_cost(&u);
                r.cost_usd += usd;
                if let Some(t) = tool_cost {
                    r.tool_cost_calls += 1;
                    r.tool_cost_usd += t;
                    r.cost_usd_on_tool_calls += usd;
                }
            }
            if ctx > 0 {
                self.apes
                    .push((s.input_tokens as f64 - ctx as f64).abs() / ctx as f64 * 100.0);
            }
        }
    }

    /// Price of a call (the same split `call` tallies).
    pub(crate) fn call_cost(price: Option<&Price>, s: &Sample, ttl: CacheTtl) -> f64 {
        price.map_or(0.0, |p| {
            p.cost(0, s.cache_read, s.cache_write, s.output_tokens, ttl)
        })
    }

    pub(crate) fn compaction(&mut self, c: &Compaction, price: Option<&Price>) {
        let st = self.m.compactions.entry(c.kind).or_default();
        st.count += 1;
        st.tokens_before += c.tokens_before;
        st.tokens_after += c.tokens_after;
        self.m.compaction_overhead_tokens += c.summarizer_input + c.summarizer_output;
        if c.kind == CompactionKind::Drop {
            self.m.lost_tokens += c.tokens_before;
        }
        if let Some(p) = price {
            // The summarizer is a plain, uncached call of the agent's model.
            self.m.cost.summarizer_usd += p.cost(
                c.summarizer_input,
                0,
                0,
                c.summarizer_output,
                CacheTtl::FiveMinutes,
            );
        }
    }

    pub(crate) fn violations(&mut self, pinned: u64, split_pairs: u64) {
        self.m.pinned_violations += pinned;
        self.m.split_tool_pairs += split_pairs;
    }

    pub(crate) fn finish(mut self) -> (Metrics, Option<RecordedMetrics>) {
        self.contexts.sort_unstable();
        let m = &mut self.m;
        m.p95_context = percentile(&self.contexts, 0.95);
        let c = &mut m.cost;
        c.total_usd = c.input_usd + c.cache_read_usd + c.output_usd + c.summarizer_usd;
        let mut unpriced: Vec<Unpriced> = std::mem::take(&mut self.unpriced)
            .into_iter()
            .map(|(model, calls)| Unpriced { model, calls })
            .collect();
        unpriced.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.model.cmp(&b.model)));
        c.unpriced = unpriced;
        if m.recall.needed > 0 {
            m.recall.lower = Some(self.recalled_lower as f64 / m.recall.needed as f64);
            m.recall.upper = Some(self.recalled_upper as f64 / m.recall.needed as f64);
        }
        let recorded = (self.rec.calls_with_usage > 0).then(|| {
            let mut r = self.rec;
            if !self.apes.is_empty() {
                r.input_mean_ape = self.apes.iter().sum::<f64>() / self.apes.len() as f64;
                self.apes.sort_by(f64::total_cmp);
                let rank =
                    ((0.95 * self.apes.len() as f64).ceil() as usize).clamp(1, self.apes.len());
                r.input_p95_ape = self.apes[rank - 1];
            }
            r
        });
        (self.m, recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_only_the_unchanged_prefix_of_a_warm_cache() {
        assert_eq!(cache_split(1000, 800, true), (800, 200));
        assert_eq!(cache_split(1000, 800, false), (0, 1000));
        assert_eq!(cache_split(500, 800, true), (500, 0));
    }

    #[test]
    fn p95_is_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.95), 95);
        assert_eq!(percentile(&[7], 0.95), 7);
        assert_eq!(percentile(&[], 0.95), 0);
    }
}
