//! Fixture: a strategy that panics inside `decide` at one call. The SDK turns the panic into an
//! error status; the host must report it (plugin name, "panic: ...") and keep running.
//!
//! `how` picks what it does instead of panicking, for the out-of-process runner (`--isolate`),
//! since none of these can be caught in-process: `abort` (the process aborts), `exit`
//! (`_exit(3)`-like: the process ends), `loop` (never returns), `memory` (allocates and touches
//! memory until it fails).

use ctxlab_plugin_api::*;
use serde_json::json;

struct Panics {
    at_call: u64,
    how: String,
}

const HOWS: &[&str] = &["panic", "abort", "exit", "loop", "memory"];

impl Strategy for Panics {
    fn decide(&mut self, call: &Call<'_>, _out: &mut Decision) -> Result<(), String> {
        if call.call_index() == self.at_call {
            match self.how.as_str() {
                "abort" => std::process::abort(),
                "exit" => std::process::exit(3),
                "loop" => loop {
                    std::hint::spin_loop();
                },
                "memory" => {
                    let mut hog: Vec<Vec<u8>> = Vec::new();
                    loop {
                        hog.push(vec![1u8; 64 << 20]);
                        std::hint::black_box(&hog);
                    }
                }
                _ => panic!("fixture panic at call {}", call.call_index()),
            }
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
            params: vec![
                ParamSpec::new(
                    "at_call",
                    ParamType::Int,
                    json!(0),
                    "Session-wide call index at which decide panics.",
                )
                .min(0.0),
                ParamSpec::new(
                    "how",
                    ParamType::Enum,
                    json!("panic"),
                    "What decide does at that call: panic, abort, exit, loop or memory.",
                )
                .choices(HOWS),
            ],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(Panics {
            at_call: params.uint("at_call"),
            how: params.str("how").to_string(),
        }))
    }

    fn import(&self, format: &str, _text: &str) -> Result<serde_json::Value, String> {
        Err(format!(
            "fixture.panics imports nothing (asked for {format})"
        ))
    }
}

export_plugin!(name: "fixture-panics", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);
