//! FIM One's token estimate (`CompactUtils.estimate_tokens` / `estimate_messages_tokens`).

use super::{ascii_and_other_bytes, ascii_and_other_chars, TextTally, TokenCounter};
use crate::model::Part;

/// FIM One charges a flat 765 tokens per image: OpenAI's cost of a 1024×1024 high-detail image.
pub const IMAGE_TOKENS: u64 = 765;
/// Role marker and delimiters of one message.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// FIM One's estimate of a text of `ascii` ASCII and `other` other characters: 0 for none, else
/// at least 1.
fn estimate(ascii: u64, other: u64) -> u64 {
    if ascii + other == 0 {
        return 0;
    }
    // FIM One computes int(ascii/4.0 + other/1.5); (3·ascii + 8·other)/12 is the same value in
    // integers, without float rounding near whole numbers.
    ((3 * ascii + 8 * other) / 12).max(1)
}

/// `heuristic`: ASCII chars/4 + other chars/1.5, floored, at least 1 for a non-empty text;
/// images 765; +4 per message.
#[derive(Debug, Clone, Copy, Default)]
pub struct Heuristic;

impl TokenCounter for Heuristic {
    fn name(&self) -> &'static str {
        "heuristic"
    }

    fn count_text(&self, text: &str) -> u64 {
        let (ascii, other) = ascii_and_other_chars(text);
        estimate(ascii, other)
    }

    /// The pieces' characters added up. Pieces of a few KB are joined in a buffer kept per
    /// thread and counted in one pass: a cut's marker and tail are short, and each count has a
    /// setup and a scalar end of its own (counted one by one, a LibreChat cut's three pieces
    /// took twice what the joined text takes).
    fn count_pieces(&self, pieces: &[&str]) -> u64 {
        const JOINED: usize = 16 << 10;
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        let (ascii, other) = if len <= JOINED {
            thread_local!(static BUF: std::cell::RefCell<Vec<u8>> = const {
                std::cell::RefCell::new(Vec::new())
            });
            BUF.with_borrow_mut(|buf| {
                buf.clear();
                for p in pieces {
                    buf.extend_from_slice(p.as_bytes());
                }
                ascii_and_other_bytes(buf)
            })
        } else {
            pieces.iter().fold((0, 0), |(a, o), p| {
                let (pa, po) = ascii_and_other_chars(p);
                (a + pa, o + po)
            })
        };
        estimate(ascii, other)
    }

    /// ASCII and other characters.
    fn tally(&self, text: &str) -> Option<TextTally> {
        let (ascii, other) = ascii_and_other_chars(text);
        Some(TextTally(ascii, other))
    }

    fn count_tally(&self, t: TextTally) -> u64 {
        estimate(t.0, t.1)
    }

    /// FIM One sums its per-part estimates and adds the message overhead. It counts only
    /// `content`; ctxlab also counts tool-call names and arguments, tool results and thinking,
    /// because they occupy the model's context all the same (docs/tokens.md).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_follows_fim_one_rounding() {
        let h = Heuristic;
        assert_eq!(h.count_text(""), 0);
        // at least 1 for non-empty text
        assert_eq!(h.count_text("a"), 1);
        assert_eq!(h.count_text("abc"), 1);
        assert_eq!(h.count_text("abcdefg"), 1); // 7/4 = 1.75 -> 1
        assert_eq!(h.count_text("abcdefgh"), 2);
        // non-ASCII: 1.5 chars per token, counted per character not per byte
        assert_eq!(h.count_text("中文"), 1); // 2/1.5 = 1.33
        assert_eq!(h.count_text("中文字"), 2); // 3/1.5 = 2 exactly
        assert_eq!(h.count_text("中文字ab"), 2); // 2 + 0.5
        assert_eq!(h.count_text("中文字abcd"), 3); // 2 + 1
        assert_eq!(h.count_text("é"), 1);
        // mixed: 9 ASCII / 4 + 3 others / 1.5 = 2.25 + 2
        assert_eq!(h.count_text("héllo wörld😀"), 4);
        assert_eq!(h.count_text(&"x".repeat(4000)), 1000);
    }

    /// ABI 1.8's cuts: the pieces counted as the text they join into, short (joined in the
    /// buffer) and long (counted piece by piece), for this counter and chars4.
    #[test]
    fn pieces_count_as_their_joined_text() {
        let words = ["a", "é", "中文", "😀", "\n", "line of text ", ""];
        let mut rng = ctxlab_plugin_api::testing::Rng(5);
        let mut next = move |n: u64| rng.below(n);
        let chars4 = crate::tokens::Chars4;
        for round in 0..300 {
            let pieces: Vec<String> = (0..next(4) + 1)
                .map(|_| {
                    // Now and then past the joining buffer's 16 KB.
                    let n = if round % 50 == 0 { 3000 } else { next(400) };
                    (0..n).map(|_| words[next(7) as usize]).collect()
                })
                .collect();
            let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let joined = refs.concat();
            assert_eq!(Heuristic.count_pieces(&refs), Heuristic.count_text(&joined));
            assert_eq!(chars4.count_pieces(&refs), chars4.count_text(&joined));
        }
        assert_eq!(Heuristic.count_pieces(&["", ""]), 0);
        assert_eq!(Heuristic.count_pieces(&["ab", "cd", "ef"]), 1);
    }

    #[test]
    fn messages_add_overhead_and_flat_image_cost() {
        let h = Heuristic;
        assert_eq!(h.count_parts(&[]), 4);
        let parts = vec![
            Part::Text {
                text: "abcdefgh".into(),
            },
            Part::Image {
                media_type: "image/png".into(),
                bytes: 123_456,
            },
            Part::Image {
                media_type: "image/png".into(),
                bytes: 0,
            },
        ];
        assert_eq!(h.count_parts(&parts), 4 + 2 + 765 * 2);
        let tool = vec![
            Part::ToolCall {
                id: "t1".into(),
                name: "Read".into(),
                args: "{\"path\":\"/a/b.rs\"}".into(),
            },
            Part::ToolResult {
                call_id: "t1".into(),
                content: "x".repeat(40),
                is_error: false,
            },
            Part::Thinking {
                text: "y".repeat(12),
            },
        ];
        // name 1 + args 17/4=4 + result 10 + thinking 3 + overhead 4
        assert_eq!(h.count_parts(&tool), 1 + 4 + 10 + 3 + 4);
    }
}
