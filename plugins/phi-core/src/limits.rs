//! `ExecutionLimits` / `ExecutionTracker` (src/context/execution.rs). phi-core builds a tracker per
//! run of its agent loop — one user request — and checks it before every turn (one turn = one model
//! call): turns done, input + output tokens of those turns, wall-clock time since the run started,
//! and dollar cost when the provider has cost rates. The first limit reached stops the run with
//! `[Agent stopped: <reason>]`, before any compaction of that turn.

use ctxlab_plugin_api::{Call, Role};

#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_turns: u64,
    pub max_total_tokens: u64,
    pub max_duration_secs: u64,
    /// `None`: no cost cap (phi-core's default).
    pub max_cost: Option<f64>,
    pub input_per_million: f64,
    pub output_per_million: f64,
}

#[derive(Debug, Default)]
pub struct Tracker {
    turns: u64,
    tokens_used: u64,
    cost: f64,
    started_ms: Option<i64>,
    /// The stop of this run was already reported.
    pub stopped: bool,
}

impl Tracker {
    /// Brings the tracker to the start of this call: a new run on a new request, else the previous
    /// call counts as a finished turn. Its output is not in the view; the reply that came back
    /// (the assistant messages among the new ones) stands for it.
    pub fn advance(&mut self, call: &Call<'_>, limits: &Limits) {
        if call.agent_call_index() == 0 || call.new_request() {
            *self = Tracker {
                started_ms: call.timestamp_ms(),
                ..Tracker::default()
            };
            return;
        }
        let input = call.prev_input_tokens();
        let output: u64 = call
            .messages()
            .rev()
            .take(call.new_messages() as usize)
            .filter(|m| m.role() == Role::Assistant)
            .map(|m| m.tokens())
            .sum();
        self.turns += 1;
        self.tokens_used += input + output;
        self.cost += (input as f64 * limits.input_per_million
            + output as f64 * limits.output_per_million)
            / 1_000_000.0;
    }

    /// `check_limits`: the reason phi-core would stop before this call, in its own words.
    pub fn check(&self, call: &Call<'_>, limits: &Limits) -> Option<String> {
        if self.turns >= limits.max_turns {
            return Some(format!(
                "Max turns reached ({}/{})",
                self.turns, limits.max_turns
            ));
        }
        if self.tokens_used >= limits.max_total_tokens {
            return Some(format!(
                "Max tokens reached ({}/{})",
                self.tokens_used, limits.max_total_tokens
            ));
        }
        if let (Some(start), Some(now)) = (self.started_ms, call.timestamp_ms()) {
            let elapsed = (now - start).max(0) as f64 / 1000.0;
            if elapsed >= limits.max_duration_secs as f64 {
                return Some(format!(
                    "Max duration reached ({elapsed:.0}s/{:.0}s)",
                    limits.max_duration_secs as f64
                ));
            }
        }
        if let Some(max) = limits.max_cost {
            if self.cost >= max {
                return Some(format!("Max cost reached (${:.4}/${max:.4})", self.cost));
            }
        }
        None
    }

    pub fn has_clock(&self) -> bool {
        self.started_ms.is_some()
    }
}
