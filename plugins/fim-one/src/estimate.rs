//! FIM One's token estimate (`CompactUtils.estimate_tokens` / `estimate_messages_tokens`).
//!
//! The plugin cannot link the ctxlab library, and FIM One decides with its own estimate whatever
//! counter the run uses, so the heuristic is computed here from each message's text and images.

use ctxlab_plugin_api::{ascii_other_chars, Msg};

/// Flat cost of one image in FIM One's estimate.
pub const IMAGE_TOKENS: u64 = 765;
/// Role marker and delimiters FIM One adds per message.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// `CompactUtils.estimate_tokens` of a text with `ascii` ASCII and `other` other characters:
/// `max(1, int(ascii/4 + other/1.5))`, 0 for an empty text.
pub fn counts_tokens(ascii: u64, other: u64) -> u64 {
    if ascii + other == 0 {
        return 0;
    }
    // (3·ascii + 8·other)/12 equals int(ascii/4.0 + other/1.5) without float rounding.
    ((3 * ascii + 8 * other) / 12).max(1)
}

/// `CompactUtils.estimate_tokens` of a text.
pub fn text_tokens(text: &str) -> u64 {
    let (a, o) = ascii_other_chars(text);
    counts_tokens(a, o)
}

/// One message: overhead + text + images (a vision message's text and images are summed).
pub fn message_tokens(text: &str, images: u32) -> u64 {
    MESSAGE_OVERHEAD + text_tokens(text) + IMAGE_TOKENS * images as u64
}

/// A message of the view, as `estimate_messages_tokens` counts it: 4 + `estimate_tokens` of its
/// `content` only — text parts and tool results; the host's flattened text also holds thinking
/// and tool-call arguments, which FIM One does not count (`compact.py`). The host reports the
/// content's characters (ABI 1.3); an older host's flattened text is the fallback. Summaries
/// written by the host's simulated summarizer carry no real text: their size is the host's
/// count.
pub fn msg_tokens(m: &Msg<'_>) -> u64 {
    if m.is_summary() {
        return m.tokens();
    }
    let (a, o) = m
        .content_chars()
        .unwrap_or_else(|| ascii_other_chars(m.text()));
    MESSAGE_OVERHEAD + counts_tokens(a, o) + IMAGE_TOKENS * m.images() as u64
}

/// Characters of the message's content (`len(content)`, which ContextGuard compares with
/// `CONTEXT_GUARD_MAX_MSG_CHARS`).
pub fn content_len(m: &Msg<'_>) -> u64 {
    m.content_chars().map_or(m.chars(), |(a, o)| a + o)
}

/// The estimate of `text` cut by ContextGuard: its first `limit` characters plus `marker`.
pub fn truncated_tokens(text: &str, limit: u64, marker: &str, images: u32) -> u64 {
    let cut = text
        .char_indices()
        .nth(limit as usize)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let mut t = String::with_capacity(cut + marker.len());
    t.push_str(&text[..cut]);
    t.push_str(marker);
    message_tokens(&t, images)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_fim_one_rounding() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("a"), 1);
        assert_eq!(text_tokens("abcdefg"), 1);
        assert_eq!(text_tokens("abcdefgh"), 2);
        assert_eq!(text_tokens("中文字"), 2);
        assert_eq!(text_tokens("中文字abcd"), 3);
        assert_eq!(text_tokens("héllo wörld😀"), 4);
        assert_eq!(message_tokens("", 0), 4);
        assert_eq!(message_tokens("abcdefgh", 2), 4 + 2 + 1530);
    }

    #[test]
    fn truncated_estimate_counts_the_kept_head_and_marker() {
        let text = "x".repeat(100);
        // 40 chars + "\n[Truncated]" (12 chars) = 52 chars -> 13 tokens, + 4
        assert_eq!(truncated_tokens(&text, 40, "\n[Truncated]", 0), 17);
        assert_eq!(
            truncated_tokens("short", 40, "", 0),
            message_tokens("short", 0)
        );
    }
}
