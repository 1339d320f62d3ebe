//! Fixture: a strategy that panics inside `decide` at one call. The SDK turns the panic into an
//! error status; the host must report it (plugin name, "panic: ...") and keep running.

use ctxlab_plugin_api::*;
use serde_json::json;

struct Panics {
    at_call: u64,
}

impl Strategy for Panics {
    fn decide(&mut self, call: &Call<'_>, _out: &mut Decision) -> Result<(), String> {
        if call.call_index() == self.at_call {
            panic!("fixture panic at call {}", call.call_index());
        }
        Ok(())
    }

    fn export(&self, format: &str) -> Result<String, String> {
        Err(format!(
            "fixture.panics exports nothing (asked for {format})"
        ))
    }
}

struct Factory;

impl StrategyFactory for Factory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "fixture.panics",
            title: "Fixture: panics in decide",
            system: "fixture",
            description: "Panics in decide at the call whose session-wide index is at_call.",
            params: vec![ParamSpec::new(
                "at_call",
                ParamType::Int,
                json!(0),
                "Session-wide call index at which decide panics.",
            )
            .min(0.0)],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(Panics {
            at_call: params.uint("at_call"),
        }))
    }

    fn import(&self, format: &str, _text: &str) -> Result<serde_json::Value, String> {
        Err(format!(
            "fixture.panics imports nothing (asked for {format})"
        ))
    }
}

export_plugin!(name: "fixture-panics", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);
