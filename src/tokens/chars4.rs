//! phi-core's token estimate (`phi_core::context::token::HeuristicTokenCounter`).

use super::{TextTally, TokenCounter};
use crate::model::Part;

pub const MESSAGE_OVERHEAD: u64 = 4;
/// phi-core adds 8 to every tool call and to every tool result.
pub const TOOL_OVERHEAD: u64 = 8;
pub const IMAGE_MIN_TOKENS: u64 = 85;
pub const IMAGE_MAX_TOKENS: u64 = 16_000;
/// phi-core charges one token per 750 bytes of decoded image.
pub const IMAGE_BYTES_PER_TOKEN: u64 = 750;

/// `chars4`: ceil(len/4) per text, +4 per message, +8 per tool call or tool result,
/// images bytes/750 clamped to 85..16,000.
///
/// phi-core's "chars" is Rust's `str::len()`, i.e. UTF-8 bytes: a CJK character costs 3/4 of a
/// token, not 1/4. ctxlab keeps that, since the phi-core plugin must see what phi-core would.
#[derive(Debug, Clone, Copy, Default)]
pub struct Chars4;

impl Chars4 {
    /// phi-core derives the decoded size from the base64 length (`len·3/4`); the session model
    /// already holds the decoded size.
    pub fn image_tokens(bytes: u64) -> u64 {
        (bytes / IMAGE_BYTES_PER_TOKEN).clamp(IMAGE_MIN_TOKENS, IMAGE_MAX_TOKENS)
    }
}

impl TokenCounter for Chars4 {
    fn name(&self) -> &'static str {
        "chars4"
    }

    fn count_text(&self, text: &str) -> u64 {
        (text.len() as u64).div_ceil(4)
    }

    fn count_pieces(&self, pieces: &[&str]) -> u64 {
        pieces
            .iter()
            .map(|p| p.len() as u64)
            .sum::<u64>()
            .div_ceil(4)
    }

    /// Bytes.
    fn tally(&self, text: &str) -> Option<TextTally> {
        Some(TextTally(text.len() as u64, 0))
    }

    fn count_tally(&self, t: TextTally) -> u64 {
        t.0.div_ceil(4)
    }

    fn count_parts(&self, parts: &[Part]) -> u64 {
        let content: u64 = parts
            .iter()
            .map(|p| match p {
                Part::Text { text } | Part::Thinking { text } => self.count_text(text),
                Part::ToolCall { name, args, .. } => {
                    self.count_text(name) + self.count_text(args) + TOOL_OVERHEAD
                }
                Part::ToolResult { content, .. } => self.count_text(content) + TOOL_OVERHEAD,
                Part::Image { bytes, .. } => Self::image_tokens(*bytes),
            })
            .sum();
        MESSAGE_OVERHEAD + content
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_ceil_of_utf8_bytes_over_4() {
        let c = Chars4;
        assert_eq!(c.count_text(""), 0);
        assert_eq!(c.count_text("a"), 1);
        assert_eq!(c.count_text("hello"), 2); // phi-core's own doc example
        assert_eq!(c.count_text("abcdefgh"), 2);
        assert_eq!(c.count_text("中"), 1); // 3 bytes
        assert_eq!(c.count_text("中文字"), 3); // 9 bytes
        assert_eq!(c.count_text("héllo"), 2); // 6 bytes
    }

    #[test]
    fn messages_tools_and_images() {
        let c = Chars4;
        assert_eq!(c.count_parts(&[]), 4);
        let parts = vec![
            Part::ToolCall {
                id: "t".into(),
                name: "bash".into(),
                args: "{\"cmd\":\"ls\"}".into(),
            },
            Part::ToolResult {
                call_id: "t".into(),
                content: "x".repeat(9),
                is_error: true,
            },
        ];
        // name 1 + args 12/4=3 + 8, result 3 + 8, message 4
        assert_eq!(c.count_parts(&parts), 1 + 3 + 8 + 3 + 8 + 4);
        let img = |bytes| {
            vec![Part::Image {
                media_type: "image/jpeg".into(),
                bytes,
            }]
        };
        assert_eq!(c.count_parts(&img(0)), 4 + 85);
        assert_eq!(c.count_parts(&img(750 * 1000)), 4 + 1000);
        assert_eq!(c.count_parts(&img(750 * 1000 + 749)), 4 + 1000);
        assert_eq!(c.count_parts(&img(100_000_000)), 4 + 16_000);
    }
}
