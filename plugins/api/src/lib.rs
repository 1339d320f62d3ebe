//! `ctxlab-plugin-api`: the stable C ABI between ctxlab and its strategy plugins, and the safe SDK
//! Rust plugins are written with.
//!
//! - [`abi`]: the `#[repr(C)]` types and constants; `include/ctxlab_plugin.h` is the same for C.
//! - [`sdk`]: the `Strategy` / `StrategyFactory` traits, parameters, decisions, events.
//! - [`export_plugin!`]: builds the table and exports `ctxlab_plugin_entry_v1`, wrapping every
//!   entry point in `catch_unwind`.
//! - [`testing`]: owned calls and messages to test a strategy without loading it, and a small
//!   deterministic random source for randomized tests.
//! - [`pairs`]: where a strategy may cut without splitting a tool call from its result;
//!   [`hash`]: a fast hash for maps keyed by tool ids.
//!
//! See docs/plugins.md for a complete example.

pub mod abi;
pub mod hash;
pub mod pairs;
#[doc(hidden)]
pub mod rt;
pub mod sdk;
pub mod testing;

pub use sdk::*;
pub use serde_json;
