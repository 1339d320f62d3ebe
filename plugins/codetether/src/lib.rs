//! CodeTether's session compression (src/session/helper/compression/, docs/strategies/codetether.md):
//! at every step, a request over the safety budget goes through the keep_last RLM cascade, then
//! terminal truncation, then a failure.

mod config;
mod terminal;

#[cfg(test)]
mod tests;

use ctxlab_plugin_api::pairs::Cuts;
use ctxlab_plugin_api::*;

pub const TAG: &str = "[AUTO CONTEXT COMPRESSION]";
/// Tokens the tag itself may take with any counter: a summary must stay smaller than its range.
const TAG_TOKENS: u64 = 16;

pub(crate) struct Settings {
    candidates: Vec<usize>,
    truncate_keep_last: usize,
    safety_budget_ratio: f64,
    reserve_overhead_tokens: u64,
    fallback_chunk_ratio: f64,
    payload_caps: Vec<u64>,
    emergency_cap: u64,
    rlm_summary_tokens: u64,
    rlm_fail_above_tokens: u64,
}

struct Compression {
    params: Params,
    s: Settings,
    /// The safety budget of the last call seen, for the chart's line.
    last_budget: Option<u64>,
}

/// The working context as the cascade rewrites it: an optional summary standing for positions
/// `[0, summary_end)`, then the original messages from `summary_end` on.
pub(crate) struct Work {
    pub summary: Option<u64>,
    pub summary_end: usize,
    pub overhead: u64,
}

impl Work {
    pub fn list_len(&self, len: usize) -> usize {
        self.summary.is_some() as usize + (len - self.summary_end)
    }
    /// Position in the view of the list index `i` (a summary is list index 0).
    pub fn position(&self, i: usize) -> usize {
        match self.summary {
            Some(_) => self.summary_end + i.saturating_sub(1),
            None => i,
        }
    }
    pub fn estimate(&self, call: &Call<'_>) -> u64 {
        self.overhead + self.summary.unwrap_or(0) + call.tokens_in(self.summary_end..call.len())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Summarizer {
    Rlm,
    ChunkCompress,
}

impl Summarizer {
    fn as_str(self) -> &'static str {
        match self {
            Summarizer::Rlm => "rlm",
            Summarizer::ChunkCompress => "chunk_compress",
        }
    }
}

/// `usable = window − (max output + RESERVE_OVERHEAD_TOKENS)`, `safety = usable · ratio`.
pub(crate) fn safety_budget(call: &Call<'_>, s: &Settings) -> u64 {
    let b = call.budget();
    let usable = b
        .context_window
        .saturating_sub(b.max_output + s.reserve_overhead_tokens);
    (usable as f64 * s.safety_budget_ratio) as u64
}

impl Strategy for Compression {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let s = &self.s;
        let budget = safety_budget(call, s);
        self.last_budget = Some(budget);
        let initial = call.context_tokens();
        out.gauge("safety_budget", budget as f64);
        if initial <= budget {
            return Ok(());
        }
        out.event_tokens(
            EventKind::Note,
            "CompactionStart",
            format!(
                "reason context_budget: request {} > safety budget {} ({:.0}% of window {} − max output {} − reserve {})",
                fmt_tokens(initial),
                fmt_tokens(budget),
                s.safety_budget_ratio * 100.0,
                fmt_tokens(call.budget().context_window),
                fmt_tokens(call.budget().max_output),
                fmt_tokens(s.reserve_overhead_tokens)
            ),
            initial,
            initial,
        );

        let cuts = Cuts::of(call);
        let len = call.len();
        let mut w = Work {
            summary: None,
            summary_end: 0,
            overhead: call.overhead_tokens(),
        };
        let mut summarizer_input = 0;
        let mut used = Summarizer::Rlm;
        let mut tried = Vec::new();
        let mut est = initial;
        let mut fits = false;
        for &keep_last in &s.candidates {
            if est <= budget {
                fits = true;
                break;
            }
            tried.push(keep_last);
            // compress_messages_keep_last: nothing to do when the list is already that short.
            let n = w.list_len(len);
            if n <= keep_last {
                break;
            }
            let split = cuts
                .at_or_before(w.position(n - keep_last))
                .max(w.summary_end);
            let prefix = w.summary.unwrap_or(0) + call.tokens_in(w.summary_end..split);
            if split == 0 || prefix <= TAG_TOKENS + 1 {
                break;
            }
            let limit = prefix - TAG_TOKENS - 1;
            let size = if s.rlm_fail_above_tokens > 0 && prefix > s.rlm_fail_above_tokens {
                // RlmRouter::auto_process failed: RlmChunker::compress(context, ctx_window / 4).
                out.event(
                    EventKind::Note,
                    "rlm_error",
                    format!(
                        "RLM auto_process failed on a {}-token prefix (> rlm_fail_above_tokens {}); using deterministic chunk compression",
                        fmt_tokens(prefix),
                        fmt_tokens(s.rlm_fail_above_tokens)
                    ),
                );
                used = Summarizer::ChunkCompress;
                let target = (call.budget().context_window as f64 * s.fallback_chunk_ratio) as u64;
                target.min(limit)
            } else {
                used = Summarizer::Rlm;
                s.rlm_summary_tokens.min(limit)
            };
            summarizer_input += prefix;
            w.summary = Some(size);
            w.summary_end = split;
            est = w.estimate(call);
        }
        if !fits {
            fits = est <= budget;
        }
        let tried_txt = tried
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" → ");

        if fits {
            if let Some(size) = w.summary {
                out.op(
                    OpKind::Summarize {
                        role: Role::Assistant,
                        max_tokens: size,
                        summarizer_input_tokens: summarizer_input,
                        text: TAG.into(),
                    },
                    Scope::Persistent,
                    0..w.summary_end,
                );
            }
            out.event_tokens(
                EventKind::Compaction,
                "CompactionOutcome",
                format!(
                    "strategy {}: {} → {} (budget {}), kept {} messages; keep_last tried {tried_txt}",
                    used.as_str(),
                    fmt_tokens(initial),
                    fmt_tokens(est),
                    fmt_tokens(budget),
                    w.list_len(len)
                ),
                initial,
                est,
            );
            return Ok(());
        }
        terminal::apply(call, s, &cuts, &w, budget, initial, &tried_txt, out);
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        self.last_budget
            .map(|b| Threshold {
                kind: ThresholdKind::Trigger,
                line: Line::Occupancy,
                tokens: b,
                label: "SAFETY_BUDGET_RATIO × (window − max output − RESERVE_OVERHEAD_TOKENS)"
                    .into(),
            })
            .into_iter()
            .collect()
    }

    fn export(&self, format: &str) -> Result<String, String> {
        config::export(&self.params, format)
    }
}

pub struct CompressionStrategy;

impl StrategyFactory for CompressionStrategy {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "codetether.compression",
            title: "CodeTether RLM compression",
            system: "codetether",
            description: "CodeTether's context-window enforcement: over 90% of the usable budget, \
                          compress the prefix into one [AUTO CONTEXT COMPRESSION] message keeping \
                          the last 16/12/8/6 messages; chunk compression when the RLM fails; \
                          terminal truncation (silent loss) when every keep_last is exhausted.",
            params: config::schema(),
            export_formats: config::FORMATS,
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        config::validate(&params)?;
        let s = Settings {
            candidates: params
                .int_list("keep_last_candidates")
                .into_iter()
                .map(|k| k as usize)
                .collect(),
            truncate_keep_last: params.uint("truncate_keep_last") as usize,
            safety_budget_ratio: params.float("safety_budget_ratio"),
            reserve_overhead_tokens: params.uint("reserve_overhead_tokens"),
            fallback_chunk_ratio: params.float("fallback_chunk_ratio"),
            payload_caps: params
                .int_list("terminal_payload_caps")
                .into_iter()
                .map(|k| k as u64)
                .collect(),
            emergency_cap: params.uint("terminal_emergency_cap_bytes"),
            rlm_summary_tokens: params.uint("rlm_summary_tokens"),
            rlm_fail_above_tokens: params.uint("rlm_fail_above_tokens"),
        };
        Ok(Box::new(Compression {
            params,
            s,
            last_budget: None,
        }))
    }

    fn import(&self, format: &str, text: &str) -> Result<serde_json::Value, String> {
        config::import(format, text)
    }
}

ctxlab_plugin_api::export_plugin!(
    name: "codetether",
    version: env!("CARGO_PKG_VERSION"),
    strategies: [&CompressionStrategy],
);
