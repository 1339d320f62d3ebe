//! Strategy plugin modelling fuseraft's context management (see docs/strategies/fuseraft.md and
//! ../shared/seeds/fuseraft-context-management.txt).

pub mod config;
pub mod intent;
pub mod settings;
pub mod strategy;
pub mod view;

use ctxlab_plugin_api::sdk::{Params, Strategy, StrategyFactory, StrategyInfo};
use serde_json::Value;

/// The whole of fuseraft's context management for one replay: Compaction, ContextBudget, per-agent
/// ContextWindow, artifact offloading, the in-turn sliding window and the adaptive trim retry.
pub struct FuseraftCompaction;

impl StrategyFactory for FuseraftCompaction {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "fuseraft.compaction",
            title: "fuseraft: Compaction + ContextBudget + ContextWindow",
            system: "fuseraft",
            description:
                "Compaction by assistant-turn count (llm, intent, hybrid) or token estimate \
                          (window), the per-agent context budget (WarnAt, CutoverAt, \
                          MaxSingleTurnInputTokens) with anti-thrash, per-agent ContextWindow view \
                          filters, artifact offloading of results over 40,000 chars, the in-turn \
                          sliding window and the adaptive trim retry.",
            params: settings::schema(),
            export_formats: &[config::FORMAT, config::FORMAT_FULL],
        }
    }
    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        let s = settings::Settings::from_params(&params)?;
        Ok(Box::new(strategy::Fuseraft::new(s)?))
    }
    fn import(&self, format: &str, text: &str) -> Result<Value, String> {
        config::import(format, text)
    }
}

ctxlab_plugin_api::export_plugin!(
    name: "fuseraft",
    version: env!("CARGO_PKG_VERSION"),
    strategies: [&FuseraftCompaction],
);
