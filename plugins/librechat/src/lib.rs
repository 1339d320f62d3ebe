//! Strategy plugin modelling LibreChat's agent context management (`@librechat/agents`):
//! observation masking, context fading, position-based context pruning, newest-first pruning
//! with orphan repair, emergency truncation, and — when summarization is enabled — full
//! compaction into one user message. See docs/strategies/librechat.md.

pub mod config;
pub mod engine;
pub mod prune;
pub mod truncation;

#[cfg(test)]
mod tests;

use config::Config;
use ctxlab_plugin_api::{Params, Strategy, StrategyFactory, StrategyInfo};
use engine::LibreChat;

/// The export formats: only the non-default keys, or every key.
pub const FORMAT: &str = "librechat-yaml";
pub const FORMAT_FULL: &str = "librechat-yaml-full";

pub struct Agents;

/// An instance: the pipeline plus the parameters it was created with (for export).
struct Instance {
    engine: LibreChat,
    params: Params,
}

impl Strategy for Instance {
    fn decide(
        &mut self,
        call: &ctxlab_plugin_api::Call<'_>,
        out: &mut ctxlab_plugin_api::Decision,
    ) -> Result<(), String> {
        self.engine.decide(call, out)
    }
    fn thresholds(&self) -> Vec<ctxlab_plugin_api::Threshold> {
        self.engine.thresholds()
    }
    fn export(&self, format: &str) -> Result<String, String> {
        export(&self.params, format)
    }
}

fn export(params: &Params, format: &str) -> Result<String, String> {
    match format {
        FORMAT => config::export(params, false),
        FORMAT_FULL => config::export(params, true),
        other => Err(format!(
            "unknown export format {other}; librechat exports {FORMAT} or {FORMAT_FULL}"
        )),
    }
}

impl StrategyFactory for Agents {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "librechat.agents",
            title: "LibreChat agents (summarization on/off)",
            system: "librechat",
            description: "LibreChat's agent context pipeline. Both paths mask consumed tool \
                          results at 80% pressure. enabled: true → fit-to-budget truncation, \
                          newest-first pruning and full compaction into one user message when the \
                          trigger fires. enabled: false → pressure-band fading, optional \
                          position-based contextPruning, newest-first pruning with orphan repair \
                          (pruned messages are lost) and emergency truncation.",
            params: config::schema(),
            export_formats: &[FORMAT, FORMAT_FULL],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        let cfg = Config::from_params(&params)?;
        Ok(Box::new(Instance {
            engine: LibreChat::new(cfg),
            params,
        }))
    }

    fn import(&self, format: &str, text: &str) -> Result<serde_json::Value, String> {
        match format {
            FORMAT | FORMAT_FULL => config::import(text),
            other => Err(format!(
                "unknown import format {other}; librechat reads {FORMAT} or {FORMAT_FULL}"
            )),
        }
    }
}

ctxlab_plugin_api::export_plugin!(
    name: "librechat",
    version: env!("CARGO_PKG_VERSION"),
    strategies: [&Agents]
);
