//! The replay engine.
