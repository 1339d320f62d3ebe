//! LibreChat's text-shortening rules. A `Cut` says how a message is shortened and how many chars
//! it keeps, without building any text (the pipeline evaluates cuts for every kept message at
//! every call); `Cut::edit` builds the head/tail/marker the host applies, only for emitted ops.

use ctxlab_plugin_api::Msg;

/// Hard cap of one tool result (`HARD_MAX_TOOL_RESULT_CHARS`).
pub const HARD_MAX_TOOL_RESULT_CHARS: u64 = 400_000;
/// Masked (consumed) tool results keep about this many chars (`MASKED_RESULT_MAX_CHARS`).
pub const MASKED_RESULT_MAX_CHARS: u64 = 300;
/// Smallest per-result cap of pre-flight truncation.
const PREFLIGHT_MIN_CHARS: u64 = 200;

/// What the host does to one message's content.
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

/// How one message is shortened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cut {
    /// `truncateToolResultContent(content, max)`.
    Result { max: u64 },
    /// `truncateToolInput` on the message's call arguments: `excess` chars of them go.
    Input { excess: u64 },
    /// contextPruning's soft trim of a result whose current length is `len`.
    Soft { len: u64, head: u64, tail: u64 },
    /// contextPruning's hard clear.
    Clear,
}

fn digits(n: u64) -> u64 {
    n.checked_ilog10().unwrap_or(0) as u64 + 1
}

/// The indicator of `truncateToolResultContent`. LibreChat also writes the original length in it;
/// ctxlab leaves it out so that results cut to the same cap carry the same edit and consecutive
/// ones can share one op (the host's limit is 256 ops per call).
fn result_marker(max: u64) -> String {
    format!("\n\n… [truncated: exceeded {max} limit] …\n\n")
}

fn result_marker_chars(max: u64) -> u64 {
    "\n\n… [truncated: exceeded  limit] …\n\n".chars().count() as u64 + digits(max)
}

fn input_marker(excess: u64) -> String {
    format!("\n… [truncated: {excess} chars of tool input removed] …\n")
}

/// `input_marker(excess).chars().count()` without building it: the pipeline sizes every kept
/// message at every call, the marker text is only needed for emitted ops.
fn input_marker_chars(excess: u64) -> u64 {
    "\n… [truncated:  chars of tool input removed] …\n"
        .chars()
        .count() as u64
        + digits(excess)
}

fn soft_marker(len: u64, kept: u64) -> String {
    format!("\n\n… [soft-trimmed: {len} chars → {kept} chars, middle removed] …\n\n")
}

/// `soft_marker(len, kept).chars().count()` without building it.
fn soft_marker_chars(len: u64, kept: u64) -> u64 {
    "\n\n… [soft-trimmed:  chars →  chars, middle removed] …\n\n"
        .chars()
        .count() as u64
        + digits(len)
        + digits(kept)
}

impl Cut {
    /// Chars a message of `len` chars keeps (never more than `len`).
    pub fn chars(&self, len: u64, placeholder_chars: u64) -> u64 {
        let kept = match *self {
            Cut::Result { max } => {
                let m = result_marker_chars(max);
                if max <= m {
                    max
                } else if max - m < 200 {
                    max - 2
                } else {
                    max
                }
            }
            Cut::Input { excess } => len.saturating_sub(excess).max(input_marker_chars(excess)),
            Cut::Soft {
                len: cur,
                head,
                tail,
            } => head + tail + soft_marker_chars(cur, head + tail),
            Cut::Clear => placeholder_chars,
        };
        kept.min(len)
    }

    /// Head + tail chars of a result cut (what the host leaves of a message longer than that),
    /// without building the marker; `None` for the other cuts.
    pub fn result_head_tail(&self) -> Option<u64> {
        match *self {
            Cut::Result { max } => {
                let m = result_marker_chars(max);
                Some(if max <= m { max } else { max - m })
            }
            _ => None,
        }
    }

    /// The head/tail/marker (or placeholder) the host applies to a message of `len` chars.
    pub fn edit(&self, len: u64, placeholder: &str) -> Edit {
        match *self {
            Cut::Result { max } => result_edit(len, max),
            Cut::Input { excess } => {
                let marker = input_marker(excess);
                let keep = len
                    .saturating_sub(excess)
                    .saturating_sub(marker.chars().count() as u64);
                let head = (keep * 7).div_ceil(10);
                Edit::Truncate {
                    head,
                    tail: keep - head,
                    marker,
                }
            }
            Cut::Soft {
                len: cur,
                head,
                tail,
            } => Edit::Truncate {
                head,
                tail,
                marker: soft_marker(cur, head + tail),
            },
            Cut::Clear => Edit::Clear {
                placeholder: placeholder.to_string(),
            },
        }
    }
}

/// `truncateToolResultContent`: head 70 % / tail 30 % around the indicator, head-only with the
/// indicator's trailing newlines trimmed when less than 200 chars remain (newline snapping is
/// not modelled).
fn result_edit(_len: u64, max: u64) -> Edit {
    let marker = result_marker(max);
    let m = marker.chars().count() as u64;
    if max <= m {
        return Edit::Truncate {
            head: max,
            tail: 0,
            marker: String::new(),
        };
    }
    let available = max - m;
    if available < 200 {
        return Edit::Truncate {
            head: available,
            tail: 0,
            marker: marker.trim_end().to_string(),
        };
    }
    let head = (available * 7).div_ceil(10);
    Edit::Truncate {
        head,
        tail: available - head,
        marker,
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

/// Tokens of a message that keeps `kept` of its chars: its tokens scaled by the share kept.
pub fn tokens_kept(msg: &Msg<'_>, kept: Option<u64>) -> u64 {
    let tokens = msg.tokens();
    match kept {
        None => tokens,
        Some(k) if msg.chars() == 0 => tokens.min(k.div_ceil(4) + 4),
        Some(k) => {
            let k = k.min(msg.chars());
            ((tokens as u128 * k as u128).div_ceil(msg.chars() as u128) as u64).min(tokens)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_head_tail_is_what_the_edit_keeps() {
        for max in [
            0, 1, 30, 38, 39, 40, 41, 200, 238, 239, 240, 300, 4_000, 400_000,
        ] {
            let Edit::Truncate { head, tail, .. } = (Cut::Result { max }).edit(10_000, "") else {
                panic!("a result cut truncates");
            };
            assert_eq!((Cut::Result { max }).result_head_tail(), Some(head + tail));
        }
        assert_eq!(Cut::Clear.result_head_tail(), None);
    }

    #[test]
    fn marker_sizes_match_the_markers() {
        for v in [0, 1, 9, 10, 99, 100, 4_000, 123_456, u64::MAX] {
            assert_eq!(
                input_marker_chars(v),
                input_marker(v).chars().count() as u64
            );
            assert_eq!(
                result_marker_chars(v),
                result_marker(v).chars().count() as u64
            );
            for k in [0, 7, 3_000, 1_000_000] {
                assert_eq!(
                    soft_marker_chars(v, k),
                    soft_marker(v, k).chars().count() as u64
                );
            }
        }
    }
}
