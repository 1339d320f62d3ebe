//! The strategy's parameters: FIM One's own environment variables plus the few choices a replay
//! has to make that FIM One takes from its deployment (is a compaction LLM configured, which hint
//! the caller passes, when the summarizer fails).

use ctxlab_plugin_api::abi::BudgetView;
use ctxlab_plugin_api::{fmt_tokens, ParamSpec, ParamType, Params};
use serde_json::json;
use std::collections::BTreeSet;

/// The usable budget never goes below this (`deps._compute_input_budget`:
/// `max(context_size - max_output, 4_000)`).
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
             LLM_MAX_OUTPUT_TOKENS, at least 4,000 (deps.get_context_budget). Governs the web \
             app's DbMemory and ContextGuard budget when no ModelConfig sets the window.",
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
            "ContextGuard's budget when it is built without one (budget_source = guard_default). \
             Unused by the web app, which always passes the computed budget (chat.py builds \
             ContextGuard(default_budget=…)); read by ContextGuard() built bare, as an embedding \
             of FIM One's core library does.",
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
            "Compactable messages ContextGuard's LLM compaction keeps verbatim (DbMemory always \
             keeps 4). 0 is accepted as FIM One accepts it: compactable[:-0] is empty, so \
             nothing is summarized and smart_truncate does the work.",
        )
        .min(0.0)
        .key(KEEP_RECENT),
        ParamSpec::new(
            BUDGET_SOURCE,
            ParamType::Enum,
            json!("env"),
            "Where the budget comes from: env = max(LLM_CONTEXT_SIZE − LLM_MAX_OUTPUT_TOKENS, \
             4,000); model_config = the run's context window and max output (FIM One's \
             per-model ModelConfig, which wins over the environment; without a max output, \
             LLM_MAX_OUTPUT_TOKENS); guard_default = CONTEXT_GUARD_DEFAULT_BUDGET (a bare \
             ContextGuard, not the web app).",
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

    /// Layer 5, `deps._compute_input_budget`: usable = context − output, never below 4,000.
    /// With `model_config` the run's model wins, as FIM One's per-model ModelConfig wins over
    /// the environment (`_get_context_budget_for_role`: `cfg.max_output_tokens or
    /// LLM_MAX_OUTPUT_TOKENS`); a run without a known window falls back to the environment.
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
                let output = if run.max_output > 0 {
                    run.max_output
                } else {
                    self.max_output
                };
                (run.context_window, output, "model")
            }
            _ => (self.context_size, self.max_output, "env"),
        };
        let raw = input_budget(context, output);
        let why = format!(
            "{source} context {} − output {}",
            fmt_tokens(context),
            fmt_tokens(output),
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

/// `context_size - max_output` before the floor (may be negative).
pub fn input_budget(context: u64, output: u64) -> i64 {
    context as i64 - output as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn cfg(v: Value) -> Config {
        Config::from_params(&Params::resolve(&schema(), &v).unwrap())
    }

    /// `deps.get_context_budget` / `_compute_input_budget`: max(context − output, 4,000).
    #[test]
    fn budget_follows_deps_get_context_budget() {
        let run = BudgetView::default();
        let b = |v: Value| cfg(v).budget(run);
        // Defaults 128,000 − 64,000 (no system prompt reserve since 2026-03-23).
        assert_eq!(b(json!({})).tokens, 64_000);
        assert_eq!(b(json!({})).clamped_from, None);
        // Exactly the floor: not clamped.
        let e = b(json!({"LLM_CONTEXT_SIZE": 8000, "LLM_MAX_OUTPUT_TOKENS": 4000}));
        assert_eq!((e.tokens, e.clamped_from), (4_000, None));
        let e = b(json!({"LLM_CONTEXT_SIZE": 70000, "LLM_MAX_OUTPUT_TOKENS": 64000}));
        assert_eq!((e.tokens, e.clamped_from), (6_000, None));
        let e = b(json!({"LLM_CONTEXT_SIZE": 60000, "LLM_MAX_OUTPUT_TOKENS": 64000}));
        assert_eq!((e.tokens, e.clamped_from), (4_000, Some(-4_000)));
        assert_eq!(
            b(json!({"budget_source": "guard_default"})).tokens,
            32_000,
            "ContextGuard's _DEFAULT_BUDGET"
        );
    }

    /// `deps._get_context_budget_for_role`: the ModelConfig's window, its max output or else
    /// LLM_MAX_OUTPUT_TOKENS; no window → the environment.
    #[test]
    fn model_config_uses_the_run_window_and_falls_back_to_env() {
        let c = cfg(json!({"budget_source": "model_config"}));
        let run = BudgetView {
            context_window: 200_000,
            max_output: 8_000,
            reserve: 0,
        };
        assert_eq!(c.budget(run).tokens, 192_000);
        let no_output = BudgetView {
            max_output: 0,
            ..run
        };
        assert_eq!(c.budget(no_output).tokens, 136_000);
        assert_eq!(c.budget(BudgetView::default()).tokens, 64_000);
    }

    /// `ContextGuard._KEEP_RECENT = int(os.getenv(...))`: any int, 0 included.
    #[test]
    fn keep_recent_zero_is_accepted() {
        let c = cfg(json!({"CONTEXT_GUARD_KEEP_RECENT": 0}));
        assert_eq!(c.keep_recent, 0);
    }
}
