//! The example plugin of docs/plugins.md: **keep the last N tool results, mask the older ones**.
//!
//! Tool results are usually the bulk of an agent's context (file reads, command output) and lose
//! their value fast. This strategy keeps the `keep_last` most recent results of each agent as they
//! are and replaces older ones by a short placeholder, persistently (the history changes).
//!
//! It shows the parts every strategy has: a factory describing the strategy and its parameters,
//! per-agent state, incremental work (only the new messages of a call are looked at), ops and
//! events, an export format and its import, and unit tests through `ctxlab_plugin_api::testing`.

use ctxlab_plugin_api::abi::FLAG_EDITED;
use ctxlab_plugin_api::*;
use serde_json::json;
use std::collections::{HashMap, VecDeque};

/// The one parameter's name, as `--param keep_last=3` and profiles spell it.
const KEEP_LAST: &str = "keep_last";
/// The same parameter in the exported config file.
const ENV_KEY: &str = "EXAMPLE_KEEP_LAST_TOOL_RESULTS";
const FORMAT: &str = "example-env";

/// What the strategy remembers about one agent between calls.
#[derive(Default)]
struct AgentState {
    /// Tool-result messages still shown in full, oldest first, as (position, message id).
    /// Masking never moves a message, so positions stay valid; the id proves it (see `resync`).
    shown: VecDeque<(usize, u64)>,
}

impl AgentState {
    fn maskable(m: &Msg<'_>) -> bool {
        m.has_tool_results() && !m.is_pinned() && !m.has(FLAG_EDITED)
    }

    /// Rebuilds `shown` from the whole context. Only needed if positions moved under us (another
    /// edit removed messages); in a normal run it never happens, so calls stay O(new messages).
    fn resync(&mut self, call: &Call<'_>) {
        self.shown = call
            .messages()
            .enumerate()
            .filter(|(_, m)| Self::maskable(m))
            .map(|(i, m)| (i, m.id()))
            .collect();
    }
}

struct KeepLastResults {
    keep_last: usize,
    agents: HashMap<String, AgentState>,
}

impl Strategy for KeepLastResults {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        // Every agent of the session goes through one instance: keep state per agent. The key is
        // allocated once per agent, not per call.
        if !self.agents.contains_key(call.agent()) {
            self.agents
                .insert(call.agent().to_string(), AgentState::default());
        }
        let state = self
            .agents
            .get_mut(call.agent())
            .ok_or("agent state vanished")?;

        // The host appends the messages that reached the agent since its last call at the end.
        let first_new = call.len().saturating_sub(call.new_messages() as usize);
        for i in first_new..call.len() {
            let m = call.msg(i);
            if AgentState::maskable(&m) {
                state.shown.push_back((i, m.id()));
            }
        }

        let excess = state.shown.len().saturating_sub(self.keep_last);
        if excess == 0 {
            out.gauge("tool_results_shown", state.shown.len() as f64);
            return Ok(());
        }
        let stale = state
            .shown
            .iter()
            .take(excess)
            .any(|&(pos, id)| pos >= call.len() || call.msg(pos).id() != id);
        if stale {
            state.resync(call);
        }
        let excess = state.shown.len().saturating_sub(self.keep_last);
        let victims: Vec<usize> = state.shown.drain(..excess).map(|(pos, _)| pos).collect();

        // One op per run of adjacent positions keeps decisions small (the host caps op counts).
        let placeholder = format!(
            "[tool result masked: only the last {} are kept]",
            self.keep_last
        );
        let mut tokens = 0;
        let mut run_start = 0;
        for (k, &pos) in victims.iter().enumerate() {
            tokens += call.msg(pos).tokens();
            let run_ends = victims.get(k + 1) != Some(&(pos + 1));
            if run_ends {
                out.op(
                    OpKind::Mask {
                        placeholder: placeholder.clone(),
                    },
                    Scope::Persistent,
                    victims[run_start]..pos + 1,
                );
                run_start = k + 1;
            }
        }
        out.event_tokens(
            EventKind::Compaction,
            "mask_tool_results",
            format!(
                "masked {} tool result{} ({} tokens): only the last {} are kept",
                fmt_tokens(victims.len() as u64),
                if victims.len() == 1 { "" } else { "s" },
                fmt_tokens(tokens),
                fmt_tokens(self.keep_last as u64)
            ),
            call.context_tokens(),
            0,
        );
        out.gauge("tool_results_shown", state.shown.len() as f64);
        Ok(())
    }

    fn export(&self, format: &str) -> Result<String, String> {
        if format != FORMAT {
            return Err(format!(
                "unknown export format {format}; this strategy exports {FORMAT}"
            ));
        }
        Ok(format!(
            "# ctxlab example strategy: keep the last N tool results\n{ENV_KEY}={}\n",
            self.keep_last
        ))
    }
}

/// Describes the strategy and builds instances; the host talks to this through the C table that
/// `export_plugin!` generates.
pub struct Factory;

impl StrategyFactory for Factory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "example.keep-last-results",
            title: "Keep the last N tool results",
            system: "example",
            description: "Masks every tool result of an agent except the most recent keep_last.",
            params: vec![ParamSpec::new(
                KEEP_LAST,
                ParamType::Int,
                json!(5),
                "How many of the agent's most recent tool results stay in full.",
            )
            .range(0.0, 10_000.0)
            .key(ENV_KEY)],
            export_formats: &[FORMAT],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        // `params` is already checked against the schema (type, range) with defaults filled in.
        Ok(Box::new(KeepLastResults {
            keep_last: params.uint(KEEP_LAST) as usize,
            agents: HashMap::new(),
        }))
    }

    fn import(&self, format: &str, text: &str) -> Result<serde_json::Value, String> {
        if format != FORMAT {
            return Err(format!(
                "unknown import format {format}; this strategy reads {FORMAT}"
            ));
        }
        let mut keep = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected KEY=VALUE, got {line:?}", n + 1))?;
            if k.trim() != ENV_KEY {
                return Err(format!(
                    "line {}: unknown key {}; expected {ENV_KEY}",
                    n + 1,
                    k.trim()
                ));
            }
            let v: u64 = v.trim().parse().map_err(|_| {
                format!(
                    "line {}: {ENV_KEY} must be a whole number, got {:?}",
                    n + 1,
                    v.trim()
                )
            })?;
            keep = Some(v);
        }
        let keep = keep.ok_or_else(|| format!("{ENV_KEY} is missing"))?;
        Ok(json!({ KEEP_LAST: keep }))
    }
}

export_plugin!(name: "example", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlab_plugin_api::testing::{TestCall, TestMsg};

    fn strategy(keep_last: u64) -> Box<dyn Strategy> {
        let params = Params::resolve(&Factory.info().params, &json!({ KEEP_LAST: keep_last }));
        Factory.create(params.unwrap()).unwrap()
    }

    /// A user request followed by `n` tool round trips (call, result).
    fn session(n: usize) -> Vec<TestMsg> {
        let mut msgs = vec![TestMsg::user("fix the build")];
        for i in 0..n {
            let id = format!("t{i}");
            msgs.push(TestMsg::tool_call(&id, "read", "{}"));
            msgs.push(TestMsg::tool_result(&id, "read", &"x".repeat(400)));
        }
        msgs
    }

    fn masked(d: &Decision) -> Vec<(usize, usize)> {
        d.ops
            .iter()
            .map(|o| {
                assert!(matches!(o.kind, OpKind::Mask { .. }) && o.scope == Scope::Persistent);
                (o.start, o.end)
            })
            .collect()
    }

    #[test]
    fn masks_all_but_the_last_n_results() {
        // Results sit at positions 2, 4, 6, 8; keeping 2 masks 2 and 4.
        let d = TestCall::new(session(4)).decide(&mut *strategy(2)).unwrap();
        assert_eq!(masked(&d), vec![(2, 3), (4, 5)]);
        assert_eq!(d.events.len(), 1);
        assert_eq!(
            d.events[0].message,
            "masked 2 tool results (208 tokens): only the last 2 are kept"
        );
        assert_eq!(d.gauges, vec![("tool_results_shown".to_string(), 2.0)]);
    }

    #[test]
    fn adjacent_results_are_masked_by_one_op() {
        let msgs = vec![
            TestMsg::tool_call("a", "read", "{}"),
            TestMsg::tool_result("a", "read", "1"),
            TestMsg::tool_result("a", "read", "2"),
            TestMsg::tool_result("a", "read", "3"),
        ];
        let d = TestCall::new(msgs).decide(&mut *strategy(1)).unwrap();
        assert_eq!(masked(&d), vec![(1, 3)]);
    }

    #[test]
    fn later_calls_only_look_at_new_messages() {
        let mut s = strategy(2);
        let first = TestCall::new(session(3));
        assert_eq!(masked(&first.decide(&mut *s).unwrap()), vec![(2, 3)]);

        // One more round trip arrives; the host marks the masked result as edited.
        let mut msgs = session(4);
        msgs[2] = msgs[2].clone().flag(FLAG_EDITED);
        let mut second = TestCall::new(msgs);
        second.new_messages = 2;
        assert_eq!(masked(&second.decide(&mut *s).unwrap()), vec![(4, 5)]);

        // Nothing new: nothing to do.
        second.new_messages = 0;
        assert!(second.decide(&mut *s).unwrap().ops.is_empty());
    }

    #[test]
    fn pinned_results_are_never_masked() {
        let mut msgs = session(3);
        msgs[2] = msgs[2].clone().pinned();
        let d = TestCall::new(msgs).decide(&mut *strategy(1)).unwrap();
        assert_eq!(masked(&d), vec![(4, 5)]);
    }

    #[test]
    fn agents_are_counted_apart() {
        let mut s = strategy(1);
        let main = TestCall::new(session(2));
        let mut sub = TestCall::new(session(1).into_iter().map(|m| m.agent("sub")).collect());
        sub.agent = "sub".into();
        assert_eq!(masked(&main.decide(&mut *s).unwrap()), vec![(2, 3)]);
        assert!(sub.decide(&mut *s).unwrap().ops.is_empty());
    }

    #[test]
    fn export_parses_back_to_the_same_parameters() {
        let text = strategy(7).export(FORMAT).unwrap();
        assert_eq!(
            text.lines().nth(1),
            Some("EXAMPLE_KEEP_LAST_TOOL_RESULTS=7")
        );
        assert_eq!(
            Factory.import(FORMAT, &text).unwrap(),
            json!({ "keep_last": 7 })
        );
        assert!(strategy(7)
            .export("yaml")
            .unwrap_err()
            .contains("example-env"));
    }

    #[test]
    fn import_errors_name_the_line_and_what_was_expected() {
        let e = Factory
            .import(FORMAT, "# c\nEXAMPLE_KEEP_LAST_TOOL_RESULTS=many\n")
            .unwrap_err();
        assert!(
            e.starts_with("line 2:") && e.contains("whole number"),
            "{e}"
        );
        let e = Factory.import(FORMAT, "KEEP=3").unwrap_err();
        assert!(e.contains("unknown key KEEP"), "{e}");
        assert!(Factory.import(FORMAT, "").unwrap_err().contains("missing"));
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        let e = Params::resolve(&Factory.info().params, &json!({ KEEP_LAST: -1 })).unwrap_err();
        assert!(e.contains("keep_last") && e.contains("minimum"), "{e}");
    }
}
