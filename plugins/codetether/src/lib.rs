//! CodeTether's per-step context derivation (codetether-agent 4.7.4, `DerivePolicy::Legacy`,
//! docs/strategies/codetether.md). At every step CodeTether clones the full history and derives
//! the request from it (`src/session/context/derive.rs` `derive_context`): the oversized last
//! message is compressed, tool outputs are deduplicated, and a request over the safety budget goes
//! through the keep_last cascade, then terminal truncation; orphaned tool results are dropped. The
//! history itself never changes, so every summary and truncation here is a this-call edit; the
//! per-step work is kept incremental by `history::History`.

mod chunker;
mod config;
mod derive;
mod estimate;
mod history;
mod prune;
mod render;
mod terminal;

#[cfg(test)]
mod tests;

use ctxlab_plugin_api::hash::FnvMap;
use ctxlab_plugin_api::*;
use history::History;

pub(crate) struct Settings {
    candidates: Vec<usize>,
    truncate_keep_last: usize,
    safety_budget_ratio: f64,
    reserve_overhead_tokens: u64,
    /// `CODETETHER_SESSION_MAX_TOKENS`: the completion budget every request reserves.
    session_max_tokens: u64,
    /// The window of `model` in CodeTether's table; `None`: the run's window.
    window: Option<u64>,
    fallback_chunk_ratio: f64,
    oversized_ratio: f64,
    payload_caps: Vec<u64>,
    emergency_cap: u64,
    rlm_summary_tokens: u64,
    rlm_cache: bool,
    history_trigger: usize,
    /// Tokens of the system prompt and tool schemas; `None`: the host's calibrated overhead.
    system_tokens: Option<u64>,
}

impl Settings {
    /// `check_budget` (enforce_budget.rs:27-56): `(window − (max tokens + reserve)) × ratio`.
    pub fn safety_budget(&self, window: u64) -> u64 {
        let reserve = self.session_max_tokens + self.reserve_overhead_tokens;
        (window.saturating_sub(reserve) as f64 * self.safety_budget_ratio) as u64
    }
    pub fn window(&self, call: &Call<'_>) -> u64 {
        self.window.unwrap_or(call.budget().context_window)
    }
    pub fn overhead(&self, call: &Call<'_>) -> u64 {
        self.system_tokens.unwrap_or(call.overhead_tokens())
    }
}

struct Compression {
    params: Params,
    s: Settings,
    agents: FnvMap<String, History>,
    /// The safety budget of the last call seen, for the chart's line.
    last_budget: Option<u64>,
}

impl Strategy for Compression {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let h = match self.agents.get_mut(call.agent()) {
            Some(h) => h,
            None => self
                .agents
                .entry(call.agent().to_string())
                .or_insert_with(History::new),
        };
        if !h.matches(call) {
            // The host's history changed under us (it never does for this plugin's edits):
            // derive from scratch, as CodeTether does at every step.
            *h = History::new();
        }
        h.sync(call);
        let budget = derive::derive(call, &self.s, h, out);
        self.last_budget = Some(budget);
        Ok(())
    }

    fn thresholds(&self) -> Vec<Threshold> {
        self.last_budget
            .map(|b| Threshold {
                kind: ThresholdKind::Trigger,
                line: Line::Occupancy,
                tokens: b,
                label: "SAFETY_BUDGET_RATIO × (window − CODETETHER_SESSION_MAX_TOKENS − RESERVE_OVERHEAD_TOKENS), in CodeTether's estimate"
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
            title: "CodeTether context derivation",
            system: "codetether",
            description:
                "CodeTether's per-step context derivation: from the full history at every \
                          step, dedup repeated tool outputs; over 90% of (window − 8,192 − 2,048) \
                          in CodeTether's estimate, compress everything before the active task's \
                          tail (keep_last 16/12/8/6/3/1) into one [AUTO CONTEXT COMPRESSION] \
                          message; when that cannot fit, terminal truncation (drop before the \
                          active tail, shrink payloads, never evict).",
            params: config::schema(),
            export_formats: config::FORMATS,
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        config::validate(&params)?;
        let list = |n: &str| params.int_list(n).into_iter().map(|k| k as u64);
        let model = params.str(config::MODEL);
        let system = params.int("system_prompt_tokens");
        let s = Settings {
            candidates: list("keep_last_candidates").map(|k| k as usize).collect(),
            truncate_keep_last: params.uint("truncate_keep_last") as usize,
            safety_budget_ratio: params.float("safety_budget_ratio"),
            reserve_overhead_tokens: params.uint("reserve_overhead_tokens"),
            session_max_tokens: params.uint(config::SESSION_MAX_TOKENS),
            window: (!model.is_empty()).then(|| estimate::context_window_for_model(model)),
            fallback_chunk_ratio: params.float("fallback_chunk_ratio"),
            oversized_ratio: params.float("oversized_last_message_ratio"),
            payload_caps: list("terminal_payload_caps").collect(),
            emergency_cap: params.uint("terminal_emergency_cap_bytes"),
            rlm_summary_tokens: params.uint("rlm_summary_tokens"),
            rlm_cache: params.bool("rlm_background_cache"),
            history_trigger: params.uint(config::HISTORY_TRIGGER) as usize,
            system_tokens: (system >= 0).then_some(system as u64),
        };
        Ok(Box::new(Compression {
            params,
            s,
            agents: FnvMap::default(),
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
