//! The simulated summarizer: how large a summary is, and what producing it costs, without
//! calling a model.

use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};

/// Summary size = literal text (counted) + simulated part, where the simulated part is
/// `min(cap, ceil(ratio × replaced tokens))` and the cap is the op's `max_tokens`, or
/// `default_max_tokens` when the op gives neither a cap nor a literal text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SummarizerModel {
    /// Share of the replaced tokens a summary keeps.
    pub ratio: f64,
    /// Cap when a strategy asks for a summary without saying how large.
    pub default_max_tokens: u64,
}

impl Default for SummarizerModel {
    /// 10 % with a 4,096-token cap: what LLM compaction prompts in the modelled systems ask for
    /// ("a concise summary", 2–8k token budgets) on the 20–150k token histories they compact.
    fn default() -> Self {
        SummarizerModel {
            ratio: 0.1,
            default_max_tokens: 4096,
        }
    }
}

/// A summary's size and the summarizer call that produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Tokens of the summary message (literal + simulated + per-message overhead).
    pub tokens: u64,
    /// The simulated part (what the summarizer model writes): its output tokens.
    pub simulated: u64,
    /// Tokens sent to the summarizer; 0 when no model is called (literal text only).
    pub input: u64,
}

impl SummarizerModel {
    pub(crate) fn summary(
        &self,
        replaced: u64,
        max_tokens: u64,
        input_tokens: u64,
        text: &str,
        counter: &dyn TokenCounter,
    ) -> Summary {
        let cap = if max_tokens == 0 && text.is_empty() {
            self.default_max_tokens
        } else {
            max_tokens
        };
        let simulated = if cap > 0 {
            ((self.ratio * replaced as f64).ceil() as u64).min(cap)
        } else {
            0
        };
        let literal = counter.count_parts(&[crate::model::Part::Text {
            text: text.to_string(),
        }]);
        Summary {
            tokens: literal + simulated,
            simulated,
            input: if cap > 0 {
                if input_tokens > 0 {
                    input_tokens
                } else {
                    replaced
                }
            } else {
                0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::test_support::Chars4;

    #[test]
    fn simulated_summary_is_capped_share_of_replaced_tokens() {
        let m = SummarizerModel::default();
        // 10% of 50,000 = 5,000, capped at 2,000; empty literal still costs the message's 4.
        let s = m.summary(50_000, 2_000, 0, "", &Chars4);
        assert_eq!(
            s,
            Summary {
                tokens: 2_004,
                simulated: 2_000,
                input: 50_000
            }
        );
        let s = m.summary(5_000, 2_000, 60_000, "", &Chars4);
        assert_eq!((s.simulated, s.input), (500, 60_000));
        // A literal summary with no cap calls no model.
        let s = m.summary(5_000, 0, 0, "kept: main.rs", &Chars4);
        assert_eq!(
            s,
            Summary {
                tokens: 4 + 4,
                simulated: 0,
                input: 0
            }
        );
        // Neither cap nor text: the default cap applies.
        let s = m.summary(100_000, 0, 0, "", &Chars4);
        assert_eq!(s.simulated, 4_096);
    }
}
