//! ctxlab: reconstruct the context of LLM agents from their session logs and replay it through
//! context-compaction strategies loaded as native plugins.
//!
//! Code map (docs/architecture.md has the whole map and the rules each boundary keeps):
//! - [`model`]: the session model every reader produces;
//! - [`discover`]: session logs agent tools left on this machine (for the app's Library);
//! - [`formats`]: one reader per log format, and sniffing;
//! - [`tokens`]: token counters and calibration against recorded usage;
//! - [`inspect`]: per-session and per-agent summary of a log (`ctxlab inspect`);
//! - [`plugin_host`]: discovery, loading and the safe wrapper around strategy plugins;
//! - [`replay`]: the replay engine, edit-op validation, summarizer and cache/cost model, metrics.
//! - [`store`]: the SQLite library of sessions, runs, profiles and settings;
//! - [`models`]: the model table's user operations: models of logs it prices, LiteLLM import;
//! - [`compare`], [`tune`], [`export`], [`chart`], [`report`]: what is built on runs;
//! - [`fmt`]: how numbers are written for people;
//! - [`capture`]: the recording proxy (`ctxlab capture`) that writes HTTP captures.

/// The allocator of every binary built on the library (the CLI, the app, the benches): see the
/// `mimalloc` feature in Cargo.toml.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod capture;
pub mod chart;
pub mod compare;
pub mod discover;
pub mod error;
pub mod export;
pub mod fmt;
pub mod formats;
pub mod inspect;
pub mod model;
pub mod models;
pub mod naming;
pub mod plugin_host;
pub mod replay;
pub mod report;
pub mod store;
pub mod tokens;
pub mod tune;

pub use error::{Error, Result};
