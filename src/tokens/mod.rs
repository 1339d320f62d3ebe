//! Token counters and calibration against recorded usage.

use crate::model::{Message, Part};

/// Counts tokens of text and messages. Implementations are cheap to call and thread-safe;
/// callers count each message once and cache the result (a replay never re-tokenizes history).
pub trait TokenCounter: Send + Sync {
    /// `heuristic`, `chars4`, `o200k`, `cl100k`.
    fn name(&self) -> &'static str;
    /// Tokens of a bare text.
    fn count_text(&self, text: &str) -> u64;
    /// Tokens of a message made of these parts, with the counter's per-message overheads.
    fn count_parts(&self, parts: &[Part]) -> u64;
    fn count_message(&self, m: &Message) -> u64 {
        self.count_parts(&m.parts)
    }
}
