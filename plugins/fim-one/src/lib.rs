//! Strategy plugin modelling FIM One's context management (../shared/seeds/
//! fim-one-context-management.txt; docs/strategies/fim-one.md): the usable budget, DbMemory's
//! load-time compaction, micro_compact, ContextGuard with LLM compaction and smart_truncate, and
//! the pinning of the current query and injected messages.

mod compact;
mod emit;
pub mod env;
pub mod estimate;
mod guard;
pub mod params;

pub use guard::{cleared_text, FimOne};

use ctxlab_plugin_api::{Params, Strategy, StrategyFactory, StrategyInfo};
use serde_json::Value;

pub struct ContextGuardFactory;

pub const STRATEGY_ID: &str = "fim-one.context-guard";

impl StrategyFactory for ContextGuardFactory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: STRATEGY_ID,
            title: "FIM One ContextGuard + DbMemory",
            system: "FIM One",
            description: "Input budget = context − output, at least 4,000. At each new request \
                          DbMemory reloads the earlier queries and answers and compacts them to the \
                          budget (its summary is dropped by the ReAct loop); \
                          at every call micro_compact clears all but the 6 newest tool results and \
                          ContextGuard cuts oversized messages, then summarizes (or smart-truncates) \
                          whatever exceeds the budget, keeping pinned and recent messages.",
            params: params::schema(),
            export_formats: env::FORMATS,
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(FimOne::new(params::Config::from_params(&params))))
    }

    fn import(&self, format: &str, text: &str) -> Result<Value, String> {
        env::import(format, text)
    }
}

ctxlab_plugin_api::export_plugin!(
    name: "fim-one",
    version: env!("CARGO_PKG_VERSION"),
    strategies: [&ContextGuardFactory],
);
