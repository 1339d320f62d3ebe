//! CodeTether's own token arithmetic, re-implemented (codetether-agent 4.7.4):
//! - `RlmChunker::estimate_tokens` (codetether-rlm 0.1.1 `src/chunker/estimate.rs`): bytes divided
//!   by 2.8 / 3.2 / 3.6 / 4.0 chars per token as the share of ASCII whitespace bytes is under 5 %,
//!   10 %, 20 % or more, rounded up;
//! - `estimate_tokens_for_part` (`src/session/helper/token.rs`): a tool call is estimated as
//!   `id + ' ' + name + ' ' + arguments`, an image is 2,000 tokens;
//! - `context_window_for_model` (`src/provider/limits.rs`): the window of a model by substring.

/// Tokens CodeTether charges for one image part (`token.rs`, `ContentPart::Image => 2000`).
pub const IMAGE_TOKENS: u64 = 2_000;

/// Bytes and ASCII-whitespace bytes of a text: all `estimate_tokens` looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub bytes: u64,
    pub ws: u64,
}

impl Span {
    pub fn of(text: &str) -> Span {
        Span::of_bytes(text.as_bytes())
    }
    pub fn of_bytes(b: &[u8]) -> Span {
        Span {
            bytes: b.len() as u64,
            ws: ascii_whitespace(b),
        }
    }
    pub fn plus(self, o: Span) -> Span {
        Span {
            bytes: self.bytes + o.bytes,
            ws: self.ws + o.ws,
        }
    }
    pub fn minus(self, o: Span) -> Span {
        Span {
            bytes: self.bytes.saturating_sub(o.bytes),
            ws: self
                .ws
                .saturating_sub(o.ws)
                .min(self.bytes.saturating_sub(o.bytes)),
        }
    }
    /// `estimate_tokens` of a text with these counts.
    pub fn tokens(self) -> u64 {
        tokens_of(self.bytes, self.ws)
    }
    /// Chars per token `estimate_tokens` uses for this text.
    pub fn chars_per_token(self) -> f64 {
        chars_per_token(self.bytes, self.ws)
    }
}

/// Bytes of `b` that `u8::is_ascii_whitespace` accepts (space, \t, \n, \x0C, \r), counted in
/// runs of 255 into a byte-wide sum so the loop compiles to vector compares: every message's
/// text is counted once when it arrives, and results run to tens of kilobytes.
pub fn ascii_whitespace(b: &[u8]) -> u64 {
    let mut n = 0u64;
    for run in b.chunks(255) {
        let mut c = 0u8;
        for &x in run {
            c += ((x == b' ') | ((x.wrapping_sub(9) < 5) & (x != 11))) as u8;
        }
        n += c as u64;
    }
    n
}

fn chars_per_token(bytes: u64, ws: u64) -> f64 {
    if bytes == 0 {
        return 4.0;
    }
    let ratio = ws as f64 / bytes as f64;
    if ratio < 0.05 {
        2.8
    } else if ratio < 0.10 {
        3.2
    } else if ratio < 0.20 {
        3.6
    } else {
        4.0
    }
}

/// `RlmChunker::estimate_tokens` from the byte and whitespace counts.
pub fn tokens_of(bytes: u64, ws: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    // `f64::ceil` is a libm call on the baseline x86-64 target; this is the same value for
    // every quotient below 2^53 (the truncation is exact there).
    let x = bytes as f64 / chars_per_token(bytes, ws);
    let t = x as u64;
    t + ((t as f64) < x) as u64
}

/// `RlmChunker::estimate_tokens(text)`.
pub fn estimate_tokens(text: &str) -> u64 {
    Span::of(text).tokens()
}

/// `context_window_for_model` (provider/limits.rs:29-86): case-insensitive substring rules, most
/// specific first, 128,000 for anything unknown.
pub fn context_window_for_model(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    let has = |s: &str| m.contains(s);
    let any = |l: &[&str]| l.iter().any(|s| m.contains(s));
    if any(&[
        "claude-opus-4-7",
        "claude-opus-4.7",
        "4.7-opus",
        "glm-5.2",
        "glm5.2",
    ]) {
        1_000_000
    } else if any(&["glm-5", "glm5"]) {
        200_000
    } else if any(&["kimi-k2", "kimi.k2"]) || has("gpt-5") {
        256_000
    } else if any(&["gpt-4o", "gpt-4-turbo", "gpt-4"]) {
        128_000
    } else if has("claude") {
        200_000
    } else if any(&["gemini-2.5-pro", "gemini-2-pro"]) {
        2_000_000
    } else if has("gemini") {
        1_000_000
    } else if any(&["minimax-m3", "minimaxm3", "minimax/m3"]) {
        1_000_000
    } else if any(&["minimax", "m2.5"]) {
        256_000
    } else if any(&["qwen", "qwq"]) {
        131_072
    } else if has("deepseek-v4") {
        1_048_576
    } else if any(&[
        "deepseek-r1",
        "deepseek-v3",
        "deepseek-chat",
        "deepseek-reasoner",
    ]) {
        128_000
    } else if any(&["llama-4", "llama4"]) {
        256_000
    } else if any(&["nova-pro", "nova-lite", "nova-premier"]) {
        300_000
    } else if any(&["nova-micro", "nova-2"]) {
        128_000
    } else if any(&["moonshot", "k1.5", "k1.6"]) {
        200_000
    } else if any(&["mistral-large", "magistral"]) {
        128_000
    } else if has("mistral") {
        32_000
    } else if has("jamba") {
        256_000
    } else {
        128_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// codetether-rlm 0.1.1 src/chunker/estimate.rs `estimate_tokens`: the four bands and ceil.
    #[test]
    fn estimate_tokens_follows_the_whitespace_bands() {
        assert_eq!(estimate_tokens(""), 0);
        // No whitespace: 2.8 chars per token; 28 bytes → 10, 29 → 11 (ceil).
        assert_eq!(estimate_tokens(&"x".repeat(28)), 10);
        assert_eq!(estimate_tokens(&"x".repeat(29)), 11);
        // 1 space in 16 bytes = 6.25 % → 3.2: 16 / 3.2 = 5.
        assert_eq!(estimate_tokens("abcdefg hijklmno"), 5);
        // 1 in 8 = 12.5 % → 3.6: ceil(8 / 3.6) = 3.
        assert_eq!(estimate_tokens("abc defg"), 3);
        // 1 in 4 = 25 % → 4.0; newlines and tabs are whitespace too.
        assert_eq!(estimate_tokens("ab\ncd\tef gh abc"), 4);
        // Bytes, not chars: 'é' is two bytes.
        assert_eq!(estimate_tokens("éééé"), 3);
    }

    /// The integer ceiling is `f64::ceil`'s at every band, across every size a text of up to
    /// 2 MB can have.
    #[test]
    fn tokens_round_up_as_ceil_does() {
        for bytes in 1..2_000_000u64 {
            for ws in [0, bytes / 19, bytes / 9, bytes / 6, bytes / 2] {
                let want = (bytes as f64 / chars_per_token(bytes, ws)).ceil() as u64;
                assert_eq!(tokens_of(bytes, ws), want, "{bytes} {ws}");
            }
        }
    }

    /// The counted whitespace is exactly `is_ascii_whitespace`'s, over every byte value and
    /// across the 255-byte runs.
    #[test]
    fn whitespace_count_is_is_ascii_whitespace() {
        let all: Vec<u8> = (0..=255u8).cycle().take(255 * 7 + 13).collect();
        let want = all.iter().filter(|c| c.is_ascii_whitespace()).count() as u64;
        assert_eq!(ascii_whitespace(&all), want);
        assert_eq!(ascii_whitespace(&[b' '; 600]), 600);
        assert_eq!(ascii_whitespace(b"\x0b"), 0);
    }

    /// codetether-agent 4.7.4 src/provider/limits.rs `context_window_for_model` (its own test cases).
    #[test]
    fn context_window_table_matches_codetether() {
        for (m, w) in [
            ("zai/glm-5", 200_000),
            ("glm-5.2", 1_000_000),
            ("kimi-k2.5", 256_000),
            ("anthropic.claude-opus-4-7-v1:0", 1_000_000),
            ("claude-3-5-sonnet", 200_000),
            ("claude-sonnet-4-5-20250929", 200_000),
            ("gpt-4o-mini", 128_000),
            ("gpt-5.1-codex", 256_000),
            ("gemini-2.0-flash", 1_000_000),
            ("Gemini-2.5-Pro", 2_000_000),
            ("minimax/m3", 1_000_000),
            ("minimax-m2.5", 256_000),
            ("qwen-2.5-coder", 131_072),
            ("deepseek-v4-flash", 1_048_576),
            ("deepseek-reasoner", 128_000),
            ("mistral-small", 32_000),
            ("mistral-large-2", 128_000),
            ("totally-unknown-model", 128_000),
        ] {
            assert_eq!(context_window_for_model(m), w, "{m}");
        }
    }
}
