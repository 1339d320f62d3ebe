//! The strategy's parameters: FIM One's own environment variables plus the few choices a replay
//! has to make that FIM One takes from its deployment (is a compaction LLM configured, which hint
//! the caller passes, when the summarizer fails).

use ctxlab_plugin_api::abi::BudgetView;
use ctxlab_plugin_api::{fmt_tokens, ParamSpec, ParamType, Params};
use serde_json::json;
use std::collections::BTreeSet;

/// `system_prompt_reserve`: a fixed constant in FIM One, not configurable.
pub const SYSTEM_PROMPT_RESERVE: u64 = 4_000;
/// The usable budget never goes below this (FIM One clamps misconfigurations to 4K).
pub const BUDGET_FLOOR: u64 = 4_000;
/// DbMemory calls `CompactUtils.llm_compact` without `keep_recent`, so its default of 4 applies
/// whatever CONTEXT_GUARD_KEEP_RECENT says.
pub const DB_MEMORY_KEEP_RECENT: usize = 4;
/// ContextGuard's per-message cut: `content[:limit] + "\n[Truncated]"`.
pub const TRUNCATED_MARKER: &str = "\n[Truncated]";

pub const CONTEXT_SIZE: &str = "LLM_CONTEXT_SIZE";
pub const MAX_OUTPUT: &str = "LLM_MAX_OUTPUT_TOKENS";
pub const DEFAULT_BUDGET: &str = "CONTEXT_GUARD_DEFAULT_BUDGET";
pub const MAX_MSG_CHARS: &str = "CONTEXT_GUARD_MAX_MSG_CHARS";
pub const KEEP_RECENT: &str = "CONTEXT_GUARD_KEEP_RECENT";
pub const BUDGET_SOURCE: &str = "budget_source";
pub const COMPACT_LLM: &str = "compact_llm";
pub const HINT: &str = "hint";
pub const MICRO_KEEP: &str = "micro_compact_keep_recent";
pub const SUMMARY_MAX: &str = "summary_max_tokens";
pub const FAILS_AT: &str = "compact_llm_fails_at_calls";

/// FIM One's environment variables, in the order `.env.example` lists them.
pub const ENV_KEYS: [&str; 5] = [
    CONTEXT_SIZE,
    MAX_OUTPUT,
    DEFAULT_BUDGET,
    MAX_MSG_CHARS,
    KEEP_RECENT,
];

pub const HINTS: [&str; 4] = [
    "general",
    "react_iteration",
    "planner_input",
    "step_dependency",
];

pub fn schema() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            CONTEXT_SIZE,
            ParamType::Int,
            json!(128_000),
            "Context window of the main LLM; the usable input budget is this minus \
             LLM_MAX_OUTPUT_TOKENS minus the 4,000-token system prompt reserve (at least 4,000).",
        )
        .min(1.0)
        .key(CONTEXT_SIZE),
        ParamSpec::new(
            MAX_OUTPUT,
            ParamType::Int,
            json!(64_000),
            "Output tokens reserved for the reply; subtracted from LLM_CONTEXT_SIZE.",
        )
        .min(0.0)
        .key(MAX_OUTPUT),
        ParamSpec::new(
            DEFAULT_BUDGET,
            ParamType::Int,
            json!(32_000),
            "ContextGuard's budget when it is built without one (budget_source = guard_default).",
        )
        .min(1.0)
        .key(DEFAULT_BUDGET),
        ParamSpec::new(
            MAX_MSG_CHARS,
            ParamType::Int,
            json!(50_000),
            "Any single message longer than this many characters is cut to it, with a \
             [Truncated] suffix, at every call.",
        )
        .min(1.0)
        .key(MAX_MSG_CHARS),
        ParamSpec::new(
            KEEP_RECENT,
            ParamType::Int,
            json!(4),
            "Compactable messages ContextGuard's LLM compaction keeps verbatim. At least 1: \
             FIM One slices compactable[:-keep_recent], which keeps nothing at 0.",
        )
        .min(1.0)
        .key(KEEP_RECENT),
        ParamSpec::new(
            BUDGET_SOURCE,
            ParamType::Enum,
            json!("env"),
            "Where the budget comes from: env = LLM_CONTEXT_SIZE − LLM_MAX_OUTPUT_TOKENS − 4,000; \
             model_config = the run's context window and max output (FIM One's per-model \
             ModelConfig, which wins over the environment); guard_default = \
             CONTEXT_GUARD_DEFAULT_BUDGET.",
        )
        .choices(&["env", "model_config", "guard_default"]),
        ParamSpec::new(
            COMPACT_LLM,
            ParamType::Bool,
            json!(true),
            "A fast LLM is configured for compaction (ContextGuard/DbMemory compact_llm). \
             Without it, over-budget contexts go straight to smart_truncate.",
        )
        .key("compact_llm"),
        ParamSpec::new(
            HINT,
            ParamType::Enum,
            json!("react_iteration"),
            "Compaction prompt hint the caller passes to check_and_compact: react_iteration in the \
             ReAct loop, step_dependency in DAG steps. Recorded with every compaction.",
        )
        .choices(&HINTS)
        .key("check_and_compact(hint=…)"),
        ParamSpec::new(
            MICRO_KEEP,
            ParamType::Int,
            json!(6),
            "micro_compact keeps this many most recent tool results; older ones become \
             [result cleared -- older than N most recent tool results].",
        )
        .min(0.0)
        .key("micro_compact(keep_recent=…)"),
        ParamSpec::new(
            SUMMARY_MAX,
            ParamType::Int,
            json!(1_000),
            "Cap of the simulated [Conversation summary] (FIM One's summary is whatever the \
             compaction LLM writes; ctxlab simulates its size).",
        )
        .min(1.0),
        ParamSpec::new(
            FAILS_AT,
            ParamType::IntList,
            json!([]),
            "Call indices at which the simulated compaction LLM fails (network error, empty \
             reply): FIM One then falls back to smart_truncate silently.",
        ),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetSource {
    Env,
    ModelConfig,
    GuardDefault,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub context_size: u64,
    pub max_output: u64,
    pub default_budget: u64,
    pub max_msg_chars: u64,
    pub keep_recent: usize,
    pub budget_source: BudgetSource,
    pub compact_llm: bool,
    pub hint: String,
    pub micro_keep: usize,
    pub summary_max: u64,
    pub fails_at: BTreeSet<u64>,
    /// The values as given, for export.
    pub params: Params,
}

/// The usable budget and how it was reached, for events.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub tokens: u64,
    pub why: String,
    /// Set when the floor clamped a smaller value.
    pub clamped_from: Option<i64>,
}

impl Config {
    pub fn from_params(p: &Params) -> Config {
        Config {
            context_size: p.uint(CONTEXT_SIZE),
            max_output: p.uint(MAX_OUTPUT),
            default_budget: p.uint(DEFAULT_BUDGET),
            max_msg_chars: p.uint(MAX_MSG_CHARS),
            keep_recent: p.uint(KEEP_RECENT) as usize,
            budget_source: match p.str(BUDGET_SOURCE) {
                "model_config" => BudgetSource::ModelConfig,
                "guard_default" => BudgetSource::GuardDefault,
                _ => BudgetSource::Env,
            },
            compact_llm: p.bool(COMPACT_LLM),
            hint: p.str(HINT).to_string(),
            micro_keep: p.uint(MICRO_KEEP) as usize,
            summary_max: p.uint(SUMMARY_MAX),
            fails_at: p
                .int_list(FAILS_AT)
                .into_iter()
                .filter(|&i| i >= 0)
                .map(|i| i as u64)
                .collect(),
            params: p.clone(),
        }
    }

    /// Layer 5: usable = context − output − 4,000, never below 4,000. With `model_config` the
    /// run's model wins, as FIM One's per-model ModelConfig wins over the environment; a run
    /// without a known window falls back to the environment values.
    pub fn budget(&self, run: BudgetView) -> Budget {
        let (context, output, source) = match self.budget_source {
            BudgetSource::GuardDefault => {
                return Budget {
                    tokens: self.default_budget,
                    why: format!("{DEFAULT_BUDGET} {}", fmt_tokens(self.default_budget)),
                    clamped_from: None,
                }
            }
            BudgetSource::ModelConfig if run.context_window > 0 => {
                (run.context_window, run.max_output, "model")
            }
            _ => (self.context_size, self.max_output, "env"),
        };
        let raw = context as i64 - output as i64 - SYSTEM_PROMPT_RESERVE as i64;
        let why = format!(
            "{source} context {} − output {} − reserve {}",
            fmt_tokens(context),
            fmt_tokens(output),
            fmt_tokens(SYSTEM_PROMPT_RESERVE)
        );
        if raw < BUDGET_FLOOR as i64 {
            Budget {
                tokens: BUDGET_FLOOR,
                why: format!("{why} = {raw}, clamped to {}", fmt_tokens(BUDGET_FLOOR)),
                clamped_from: Some(raw),
            }
        } else {
            Budget {
                tokens: raw as u64,
                why,
                clamped_from: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn cfg(v: Value) -> Config {
        Config::from_params(&Params::resolve(&schema(), &v).unwrap())
    }

    #[test]
    fn budget_is_context_minus_output_minus_reserve_with_a_floor() {
        let run = BudgetView::default();
        assert_eq!(cfg(json!({})).budget(run).tokens, 60_000);
        let b = cfg(json!({"LLM_CONTEXT_SIZE": 8000, "LLM_MAX_OUTPUT_TOKENS": 4000})).budget(run);
        assert_eq!(b.tokens, 4_000);
        assert_eq!(b.clamped_from, Some(0));
        let b = cfg(json!({"budget_source": "guard_default"})).budget(run);
        assert_eq!(b.tokens, 32_000);
    }

    #[test]
    fn model_config_uses_the_run_window_and_falls_back_to_env() {
        let c = cfg(json!({"budget_source": "model_config"}));
        let run = BudgetView {
            context_window: 200_000,
            max_output: 8_000,
            reserve: 0,
        };
        assert_eq!(c.budget(run).tokens, 188_000);
        assert_eq!(c.budget(BudgetView::default()).tokens, 60_000);
    }

    #[test]
    fn keep_recent_zero_is_refused() {
        let e = Params::resolve(&schema(), &json!({"CONTEXT_GUARD_KEEP_RECENT": 0})).unwrap_err();
        assert!(e.contains("CONTEXT_GUARD_KEEP_RECENT"), "{e}");
    }
}
