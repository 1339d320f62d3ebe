//! Exact BPE counts with OpenAI's o200k_base / cl100k_base vocabularies, compiled into the binary
//! by the `bpe-openai` crate (no download at run time). benches/tokens.rs races it against
//! tiktoken-rs, and tests/tokens.rs checks that both give the same counts.

use super::TokenCounter;
use crate::model::Part;

/// OpenAI's chat framing: 3 tokens per message plus 1 for the role.
pub const MESSAGE_OVERHEAD: u64 = 4;
/// Without the image's dimensions, an image costs what a 1024×1024 high-detail one does.
pub const IMAGE_TOKENS: u64 = 765;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// GPT-4o, GPT-4.1, o-series, GPT-5.
    O200k,
    /// GPT-4, GPT-3.5.
    Cl100k,
}

/// `o200k` / `cl100k`: text counted exactly as tiktoken's `encode_ordinary` would (special-token
/// strings inside a log are plain text); +4 per message; images 765.
pub struct Exact {
    vocabulary: Vocabulary,
    tokenizer: &'static bpe_openai::Tokenizer,
}

impl Exact {
    /// The first call per vocabulary decodes it (tens of milliseconds); later calls are free.
    pub fn new(vocabulary: Vocabulary) -> Exact {
        let tokenizer = match vocabulary {
            Vocabulary::O200k => bpe_openai::o200k_base(),
            Vocabulary::Cl100k => bpe_openai::cl100k_base(),
        };
        Exact {
            vocabulary,
            tokenizer,
        }
    }
}

impl TokenCounter for Exact {
    fn name(&self) -> &'static str {
        match self.vocabulary {
            Vocabulary::O200k => "o200k",
            Vocabulary::Cl100k => "cl100k",
        }
    }

    fn count_text(&self, text: &str) -> u64 {
        self.tokenizer.count(text) as u64
    }

    fn count_parts(&self, parts: &[Part]) -> u64 {
        let content: u64 = parts
            .iter()
            .map(|p| match p {
                Part::Text { text } | Part::Thinking { text } => self.count_text(text),
                Part::ToolCall { name, args, .. } => self.count_text(name) + self.count_text(args),
                Part::ToolResult { content, .. } => self.count_text(content),
                Part::Image { .. } => IMAGE_TOKENS,
            })
            .sum();
        MESSAGE_OVERHEAD + content
    }
}
