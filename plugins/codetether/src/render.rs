//! `messages_to_rlm_context` (codetether-agent 4.7.4 `src/session/helper/error.rs`): the text
//! CodeTether hands its summarizer for a prefix of its list. Every message is `[index Role]`, then
//! each part — a text part and "\n"; `[Thinking]`, the thinking and "\n" (when not blank); a tool
//! call as `[ToolCall id=… name=…]` and `args: …`; a result as `[ToolResult id=…]`, its content
//! and "\n"; an image as `[Image mime_type=… url_len=…]` — then "\n---\n\n". The messages are
//! CodeTether's after its per-step passes (`experimental::apply_all`): thinking gone from
//! assistant messages older than the last 4 (a message of thinking only goes with it), repeated
//! tool outputs replaced by their dedup marker, assistant text older than the last 6 pruned.

use crate::history::{History, Kind};
use crate::prune::{pruned_into, LINGUA_KEEP_LAST, THINKING_KEEP_LAST};
use ctxlab_plugin_api::{Call, PartKind, Role};
use std::fmt::Write;

fn label(kind: Kind, role: Role) -> &'static str {
    if kind == Kind::ToolResults {
        return "Tool";
    }
    match role {
        Role::System => "System",
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::Tool => "Tool",
    }
}

/// Appends `n` in decimal (what `write!(out, "{n}")` writes, without the formatting machinery:
/// every rendered message starts with its index).
pub(crate) fn push_num(out: &mut String, mut n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

/// A part's bytes as text: the host's parts are slices of the message's text, so the part is
/// that text sliced (a check of its two ends) rather than validated again byte by byte.
pub(crate) fn part_str<'a>(text: &'a str, bytes: &'a [u8]) -> &'a str {
    let at = (bytes.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    text.get(at..at.wrapping_add(bytes.len()))
        .filter(|t| std::ptr::eq(t.as_ptr(), bytes.as_ptr()))
        .unwrap_or_else(|| std::str::from_utf8(bytes).unwrap_or_default())
}

/// Appends history position `p` as list message `idx`, and the placeholders pair repair puts
/// after it; `len` is the history's length (the passes' windows count from its end). Returns
/// how many list messages it wrote (0: CodeTether's list does not hold it, an old assistant
/// message of thinking only).
pub(crate) fn message(
    out: &mut String,
    idx: usize,
    call: &Call<'_>,
    h: &History,
    p: usize,
    len: usize,
) -> usize {
    let mut placed = 0;
    let m = call.msg(p);
    let assistant = m.role() == Role::Assistant;
    let no_thinking = assistant && p + THINKING_KEEP_LAST < len;
    let lingua = assistant && p + LINGUA_KEEP_LAST < len;
    let markers = h.dedup_markers.get(&p);
    let marker = |j: usize| markers.and_then(|v| v.iter().find(|x| x.0 == j).map(|x| x.1.as_str()));
    let head = out.len();
    out.push('[');
    push_num(out, idx);
    out.push(' ');
    out.push_str(label(h.entries[p].kind, m.role()));
    out.push_str("]\n");
    let body = out.len();
    let mut tools = m.tools();
    let mut result = 0;
    let mut tool = |out: &mut String, t: ctxlab_plugin_api::Tool<'_>, body: &str| {
        if t.is_result() {
            out.push_str("[ToolResult id=");
            out.push_str(t.id());
            out.push_str("]\n");
            out.push_str(marker(result).unwrap_or(body));
            out.push('\n');
            result += 1;
        } else {
            out.push_str("[ToolCall id=");
            out.push_str(t.id());
            out.push_str(" name=");
            out.push_str(t.name());
            out.push_str("]\nargs: ");
            out.push_str(body);
            out.push('\n');
        }
    };
    match call.parts(p) {
        Some(parts) => {
            for (kind, bytes) in parts {
                let text = part_str(m.text(), bytes);
                match kind {
                    PartKind::Text if lingua => {
                        pruned_into(out, text);
                        out.push('\n');
                    }
                    PartKind::Text => {
                        out.push_str(text);
                        out.push('\n');
                    }
                    PartKind::Thinking => {
                        if !no_thinking && !text.trim().is_empty() {
                            out.push_str("[Thinking]\n");
                            out.push_str(text);
                            out.push('\n');
                        }
                    }
                    PartKind::ToolCall | PartKind::ToolResult => {
                        if let Some(t) = tools.next() {
                            tool(out, t, text);
                        }
                    }
                    PartKind::Other(_) => {}
                }
            }
        }
        None => {
            // An edited message or a summary: its tools as the host holds them, else its text.
            let mut any = false;
            for t in tools.by_ref() {
                tool(out, t, t.body());
                any = true;
            }
            if !any {
                out.push_str(m.text());
                out.push('\n');
            }
        }
    }
    let images = m.images();
    for _ in 0..images {
        out.push_str("[Image mime_type=unknown url_len=0]\n");
    }
    if no_thinking && out.len() == body && call.parts(p).is_some() {
        // Its only content was thinking: prune_thinking removed the message.
        out.truncate(head);
        return 0;
    }
    out.push_str("\n---\n\n");
    // Pair repair's placeholders for its calls no tool-result message answers.
    if assistant && h.placeholders.sum(p, p + 1) > 0 {
        for t in m
            .tools()
            .filter(|t| !t.is_result() && h.unanswered(t.id_bytes()))
        {
            let _ = write!(
                out,
                "[{} Tool]\n[ToolResult id={}]\n{}\n\n---\n\n",
                idx + 1 + placed,
                t.id(),
                crate::history::PLACEHOLDER
            );
            placed += 1;
        }
    }
    1 + placed
}

#[cfg(test)]
mod tests {
    use super::part_str;

    /// A slice of the message's text is that text sliced; bytes from elsewhere are validated.
    #[test]
    fn part_str_slices_the_text_or_validates() {
        let text = "héllo\nwörld";
        let b = text.as_bytes();
        assert_eq!(part_str(text, &b[7..]), "wörld");
        assert!(std::ptr::eq(
            part_str(text, &b[7..]).as_ptr(),
            b[7..].as_ptr()
        ));
        let other = String::from("élan");
        assert_eq!(part_str(text, other.as_bytes()), "élan");
        // Not on a char boundary of the text: validated, and invalid bytes give "".
        assert_eq!(part_str(text, &b[1..2]), "");
    }
}
