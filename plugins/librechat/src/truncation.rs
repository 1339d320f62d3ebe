//! LibreChat's text-shortening rules, re-implemented from `@librechat/agents` 3.1.63
//! `src/utils/truncation.ts` (`calculateMaxToolResultChars`, `truncateToolResultContent`,
//! `truncateToolInput`) and `src/messages/contextPruning.ts` (`softTrimContent`).
//!
//! Lengths and cut positions are JavaScript's: UTF-16 code units (`String.prototype.length`,
//! `slice`, `indexOf`), so a text with characters outside the Basic Multilingual Plane (emoji)
//! is measured and cut exactly where LibreChat cuts it. A cut that splits a surrogate pair
//! leaves a lone surrogate in JavaScript; here it becomes U+FFFD, one code unit as well, so
//! lengths stay the same.

/// `HARD_MAX_TOOL_RESULT_CHARS`.
pub const HARD_MAX_TOOL_RESULT_CHARS: u64 = 400_000;

/// `calculateMaxToolResultChars`: 30 % of the window at ~4 chars per token, at most 400,000.
pub fn max_tool_result_chars(context_tokens: i64) -> u64 {
    if context_tokens <= 0 {
        return HARD_MAX_TOOL_RESULT_CHARS;
    }
    (((context_tokens as f64 * 0.3).floor() as u64) * 4).min(HARD_MAX_TOOL_RESULT_CHARS)
}

/// `preFlightTruncateToolCallInputs`' cap: 15 % of the window at ~4 chars per token, at most
/// 200,000.
pub fn max_tool_input_chars(context_tokens: i64) -> u64 {
    let t = (context_tokens.max(0) as f64 * 0.15).floor() as u64;
    (t * 4).min(200_000)
}

/// A text's length as JavaScript's `String.prototype.length` gives it (UTF-16 code units).
pub fn js_len(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// `units.slice(from, to)` as text (a lone surrogate at a cut becomes U+FFFD).
fn slice(units: &[u16], from: usize, to: usize) -> String {
    String::from_utf16_lossy(&units[from.min(units.len())..to.min(units.len())])
}

const NL: u16 = b'\n' as u16;

/// Index of the last `\n` at or before `at` (`String.prototype.lastIndexOf('\n', at)`).
fn last_newline(units: &[u16], at: usize) -> Option<usize> {
    let end = at.min(units.len().saturating_sub(1));
    units[..units.len().min(end + 1)]
        .iter()
        .rposition(|&u| u == NL)
}

/// Index of the first `\n` at or after `from` (`String.prototype.indexOf('\n', from)`).
fn next_newline(units: &[u16], from: usize) -> Option<usize> {
    units
        .get(from..)
        .and_then(|rest| rest.iter().position(|&u| u == NL))
        .map(|p| from + p)
}

/// `truncateToolResultContent(content, maxChars)`: head ~70 % and tail ~30 % of what the
/// indicator leaves, both snapped to a newline within 200 chars; the indicator states the
/// original length. `None` when the content already fits.
pub fn truncate_result(content: &str, max_chars: u64) -> Option<String> {
    let chars: Vec<u16> = content.encode_utf16().collect();
    let len = chars.len();
    let max = max_chars as usize;
    if len <= max {
        return None;
    }
    let indicator = format!("\n\n… [truncated: {len} chars exceeded {max_chars} limit] …\n\n");
    let available = max as i64 - js_len(&indicator) as i64;
    if available <= 0 {
        return Some(slice(&chars, 0, max));
    }
    let available = available as usize;
    if available < 200 {
        return Some(slice(&chars, 0, available) + indicator.trim_end());
    }
    let head_size = ((available as f64) * 0.7).ceil() as usize;
    let tail_size = available - head_size;
    let mut head_end = head_size;
    if let Some(nl) = last_newline(&chars, head_size) {
        if nl as i64 > head_size as i64 - 200 && nl > 0 {
            head_end = nl;
        }
    }
    let mut tail_start = len - tail_size;
    if let Some(nl) = next_newline(&chars, tail_start) {
        if nl > 0 && nl < tail_start + 200 {
            tail_start = nl + 1;
        }
    }
    Some(slice(&chars, 0, head_end) + &indicator + &slice(&chars, tail_start, len))
}

/// `truncateToolInput(serialized, maxChars)._truncated`: head ~70 % and tail ~30 %, no newline
/// snapping; head-only below 100 chars of room. `None` when it fits.
pub fn truncate_input(serialized: &str, max_chars: u64) -> Option<String> {
    let chars: Vec<u16> = serialized.encode_utf16().collect();
    let len = chars.len();
    let max = max_chars as usize;
    if len <= max {
        return None;
    }
    let indicator = format!("\n… [truncated: {len} chars exceeded {max_chars} limit] …\n");
    let available = max as i64 - js_len(&indicator) as i64;
    if available < 100 {
        return Some(slice(&chars, 0, max) + indicator.trim_end());
    }
    let available = available as usize;
    let head_size = ((available as f64) * 0.7).ceil() as usize;
    let tail_size = available - head_size;
    Some(slice(&chars, 0, head_size) + &indicator + &slice(&chars, len - tail_size, len))
}

/// contextPruning's `softTrimContent`: `headChars` + indicator + the last `tailChars`.
pub fn soft_trim(content: &str, head: u64, tail: u64) -> String {
    let chars: Vec<u16> = content.encode_utf16().collect();
    let len = chars.len();
    let indicator = format!(
        "\n\n… [soft-trimmed: {len} chars → {} chars, middle removed] …\n\n",
        head + tail
    );
    // `content.slice(-tailChars)`: the whole text when tailChars is 0 (slice(-0) = slice(0)).
    let tail_from = if tail == 0 {
        0
    } else {
        len.saturating_sub(tail as usize)
    };
    slice(&chars, 0, head as usize) + &indicator + &slice(&chars, tail_from, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// utils/truncation.ts `truncateToolResultContent`: the head ends at the last newline within
    /// 200 chars before its 70 % mark, the tail starts after the first newline within 200 chars
    /// of its 30 % mark, and the indicator carries the original length.
    #[test]
    fn result_truncation_snaps_to_newlines_and_states_the_original_length() {
        let lines: String = (0..100)
            .map(|i| format!("line {i:03} ........\n"))
            .collect();
        let out = truncate_result(&lines, 1000).unwrap();
        let len = lines.chars().count();
        let indicator = format!("\n\n… [truncated: {len} chars exceeded 1000 limit] …\n\n");
        let (head, tail) = out.split_once(&indicator).expect("indicator");
        assert!(
            head.ends_with("........"),
            "head ends at a line end: {head:?}"
        );
        assert!(tail.starts_with("line "), "tail starts at a line: {tail:?}");
        let available = 1000 - indicator.chars().count();
        let head_size = (available as f64 * 0.7).ceil() as usize;
        assert!(head.len() <= head_size && head.len() > head_size - 200);
        assert!(out.chars().count() <= 1000);
        assert_eq!(truncate_result(&lines, len as u64), None);
    }

    /// utils/truncation.ts measures `content.length` and cuts with `slice`: UTF-16 code units.
    /// 1,000 emoji are 2,000 units there (1,000 chars in Rust), so a 1,500 limit cuts them, the
    /// indicator states 2,000, and the result is at most 1,500 units. A cut inside a surrogate
    /// pair leaves one unit (U+FFFD here, a lone surrogate in JavaScript).
    #[test]
    fn lengths_are_utf16_code_units_as_in_javascript() {
        let text = "😀".repeat(1000);
        assert_eq!(js_len(&text), 2000);
        let out = truncate_result(&text, 1500).expect("2,000 units exceed 1,500");
        assert!(
            out.contains("[truncated: 2000 chars exceeded 1500 limit]"),
            "{out}"
        );
        assert!(js_len(&out) <= 1500, "{}", js_len(&out));
        let indicator = "\n\n… [truncated: 2000 chars exceeded 1500 limit] …\n\n";
        let available = 1500 - js_len(indicator);
        let head = (available as f64 * 0.7).ceil() as u64;
        let (h, t) = out.split_once(indicator).unwrap();
        assert_eq!(js_len(h), head);
        assert_eq!(js_len(t), available - head);
        // An odd head size splits a pair: the half left is one unit.
        assert_eq!(head % 2, 1);
        assert!(h.ends_with('\u{FFFD}'));
        assert_eq!(truncate_result(&text, 2000), None);
        let input = truncate_input(&text, 1500).unwrap();
        assert!(input.contains("[truncated: 2000 chars exceeded 1500 limit]"));
        let trimmed = soft_trim(&text, 10, 10);
        assert!(trimmed.contains("[soft-trimmed: 2000 chars → 20 chars"));
        assert_eq!(
            js_len(&trimmed)
                - js_len("\n\n… [soft-trimmed: 2000 chars → 20 chars, middle removed] …\n\n"),
            20
        );
    }

    #[test]
    fn tiny_budgets_keep_the_head_only() {
        let text = "x".repeat(5000);
        let out = truncate_result(&text, 230).unwrap();
        assert!(out.starts_with("xxx") && out.ends_with('…'));
        // No room for the indicator at all: the first maxChars chars.
        assert_eq!(truncate_result(&text, 20).unwrap(), "x".repeat(20));
        let input = truncate_input(&text, 120).unwrap();
        assert!(input.starts_with(&"x".repeat(120)) && input.ends_with('…'));
    }

    #[test]
    fn caps_follow_calculate_max_tool_result_chars() {
        assert_eq!(max_tool_result_chars(10_000), 12_000);
        assert_eq!(max_tool_result_chars(1_000_000), 400_000);
        assert_eq!(max_tool_result_chars(0), 400_000);
        assert_eq!(max_tool_input_chars(10_000), 6_000);
        assert_eq!(max_tool_input_chars(10_000_000), 200_000);
    }

    #[test]
    fn soft_trim_keeps_head_and_tail() {
        let t = soft_trim("abcdefghij", 2, 3);
        assert!(t.starts_with("ab\n\n… [soft-trimmed: 10 chars → 5 chars"));
        assert!(t.ends_with("hij"));
    }
}
