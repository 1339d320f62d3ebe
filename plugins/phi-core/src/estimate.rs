//! phi-core's own token estimate (`HeuristicTokenCounter`, src/context/token.rs). phi-core decides
//! when and how far to compact with this number, not with the model's tokenizer, so the strategy
//! must too; the chart still shows the host's count, and the gauge shows the difference.

use ctxlab_plugin_api::{Msg, Role};

/// `text.len().div_ceil(4)`: bytes, not characters, as phi-core counts.
pub fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// A tool result is its own message in phi-core (`Message::ToolResult`): content + tool name + 8,
/// with no per-message 4. Hosts that carry results inside a user message flag them the same way.
pub fn is_tool_result(m: &Msg<'_>) -> bool {
    m.role() == Role::Tool || (m.has_tool_results() && m.role() != Role::Assistant)
}

/// Estimate of one message with `body_bytes` of text (the text after any truncation).
pub fn message_tokens(m: &Msg<'_>, body_bytes: usize) -> u64 {
    let mut n = text_tokens(body_bytes);
    if is_tool_result(m) {
        for t in m.tools().filter(|t| t.is_result()) {
            n += text_tokens(t.name().len()) + 8;
        }
        if !m.tools().any(|t| t.is_result()) {
            n += 8;
        }
    } else {
        n += 4;
        // Arguments are part of the flattened text already; the name and the 8 are not.
        for t in m.tools().filter(|t| !t.is_result()) {
            n += text_tokens(t.name().len()) + 8;
        }
    }
    n + image_tokens(m.images() as u64, m.image_bytes())
}

/// `(raw_bytes / 750).clamp(85, 16_000)` per image; the view gives the total decoded bytes, so
/// each image is taken to be the average size.
pub fn image_tokens(images: u64, bytes: u64) -> u64 {
    if images == 0 {
        return 0;
    }
    images * (bytes / images / 750).clamp(85, 16_000)
}

pub fn msg_tokens(m: &Msg<'_>) -> u64 {
    message_tokens(m, m.text_len())
}

/// A synthetic user message phi-core inserts (`[Summary] …`, `[Context compacted: …]`).
pub fn user_text_tokens(text: &str) -> u64 {
    text_tokens(text.len()) + 4
}
