//! LibreChat's text-shortening rules, as char caps and the head/tail/marker the host applies.

use ctxlab_plugin_api::Msg;

/// Hard cap of one tool result (`HARD_MAX_TOOL_RESULT_CHARS`).
pub const HARD_MAX_TOOL_RESULT_CHARS: u64 = 400_000;
/// Masked (consumed) tool results keep about this many chars (`MASKED_RESULT_MAX_CHARS`).
pub const MASKED_RESULT_MAX_CHARS: u64 = 300;
/// Smallest per-result cap of pre-flight truncation.
const PREFLIGHT_MIN_CHARS: u64 = 200;

/// What happens to one message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    Truncate {
        head: u64,
        tail: u64,
        marker: String,
    },
    Clear {
        placeholder: String,
    },
}

impl Edit {
    pub fn chars(&self) -> u64 {
        match self {
            Edit::Truncate { head, tail, marker } => head + tail + marker.chars().count() as u64,
            Edit::Clear { placeholder } => placeholder.chars().count() as u64,
        }
    }
}

/// `truncateToolResultContent(content, maxChars)`: head 70 % / tail 30 % around an indicator,
/// head-only when less than 200 chars remain (newline snapping is not modelled).
pub fn result_cut(len: u64, max_chars: u64) -> Option<Edit> {
    if len <= max_chars {
        return None;
    }
    let marker = format!("\n\n… [truncated: {len} chars exceeded {max_chars} limit] …\n\n");
    let mlen = marker.chars().count() as u64;
    if max_chars <= mlen {
        return Some(Edit::Truncate {
            head: max_chars,
            tail: 0,
            marker: String::new(),
        });
    }
    let available = max_chars - mlen;
    if available < 200 {
        return Some(Edit::Truncate {
            head: available,
            tail: 0,
            marker: marker.trim_end().to_string(),
        });
    }
    let head = (available * 7).div_ceil(10);
    Some(Edit::Truncate {
        head,
        tail: available - head,
        marker,
    })
}

/// `truncateToolInput` on the arguments of a message's calls: `excess` chars of arguments go,
/// the rest of the message stays. The host cuts the message's whole text, so the cut is a
/// 70/30 head/tail of what is kept.
pub fn input_cut(msg_chars: u64, excess: u64) -> Option<Edit> {
    if excess == 0 {
        return None;
    }
    let marker = format!("\n… [truncated: {excess} chars of tool input removed] …\n");
    let keep = msg_chars
        .saturating_sub(excess)
        .saturating_sub(marker.chars().count() as u64);
    let head = (keep * 7).div_ceil(10);
    Some(Edit::Truncate {
        head,
        tail: keep - head,
        marker,
    })
}

/// contextPruning's soft trim: head + tail around a "soft-trimmed" indicator.
pub fn soft_trim(len: u64, head: u64, tail: u64) -> Edit {
    Edit::Truncate {
        head,
        tail,
        marker: format!(
            "\n\n… [soft-trimmed: {len} chars → {} chars, middle removed] …\n\n",
            head + tail
        ),
    }
}

/// `calculateMaxToolResultChars(tokens)`: 30 % of a token budget, in chars (4 per token).
pub fn max_result_chars(budget_tokens: u64) -> u64 {
    if budget_tokens == 0 {
        return HARD_MAX_TOOL_RESULT_CHARS;
    }
    ((budget_tokens * 3 / 10) * 4).min(HARD_MAX_TOOL_RESULT_CHARS)
}

/// The per-input cap of `preFlightTruncateToolCallInputs`: 15 % of the budget, at most 200,000.
pub fn max_input_chars(budget_tokens: u64) -> u64 {
    ((budget_tokens * 15 / 100) * 4).min(200_000)
}

/// Recency-weighted cap of the `rank`-th of `count` tool results (oldest 20 %, newest 100 %).
pub fn recency_cap(base_chars: u64, rank: u64, count: u64) -> u64 {
    let position = if count > 1 {
        rank as f64 / (count - 1) as f64
    } else {
        1.0
    };
    let factor = 0.2 + 0.8 * position;
    ((base_chars as f64 * factor).floor() as u64).max(PREFLIGHT_MIN_CHARS)
}

/// Tokens of a message after an edit: its tokens scaled by the chars it keeps.
pub fn tokens_after(msg: &Msg<'_>, edit: Option<&Edit>) -> u64 {
    let tokens = msg.tokens();
    match edit {
        None => tokens,
        Some(e) if msg.chars() == 0 => tokens.min(e.chars().div_ceil(4) + 4),
        Some(e) => {
            let kept = e.chars().min(msg.chars());
            ((tokens as u128 * kept as u128).div_ceil(msg.chars() as u128) as u64).min(tokens)
        }
    }
}
