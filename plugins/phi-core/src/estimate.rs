//! The messages phi-core would hold for a host message, and its estimate of each
//! (`HeuristicTokenCounter`, phi-core 0.15.2 src/context/token.rs: `estimate_text`,
//! `estimate_content`, `estimate_message`). phi-core decides when and how far to compact with
//! this number, not with the model's tokenizer, so the strategy must too.
//!
//! How a host message maps to phi-core's messages (docs/strategies/phi-core.md, "What phi-core
//! is handed"): phi-core holds no system message (the system prompt is only
//! `system_prompt_tokens`); a message carrying k tool results is k `Message::ToolResult`s (content:
//! one text block, the result's body), followed by a user message holding any further text of it;
//! an assistant message is one text block (the text before its tool-call arguments, when not
//! empty) and one `ToolCall` per call (arguments parsed as JSON, else a JSON string); every other
//! message is one user text block. Images go to the message's first phi-core message.

use ctxlab_plugin_api::{Msg, Role};

/// `estimate_text`: `text.len().div_ceil(4)`, bytes not characters.
pub fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Bytes of `serde_json::Value::to_string()` of a tool call's arguments: what `estimate_content`
/// measures for a `Content::ToolCall`. Arguments that are not JSON are held as a JSON string.
pub fn json_len(args: &str) -> usize {
    match serde_json::from_str::<serde_json::Value>(args) {
        Ok(v) => v.to_string().len(),
        Err(_) => serde_json::Value::String(args.to_string())
            .to_string()
            .len(),
    }
}

/// One `Content::Image` per image, each of the message's average decoded size: phi-core holds
/// base64 (`4·⌈bytes/3⌉` characters) and estimates `(len·3/4 / 750).clamp(85, 16_000)`.
pub fn image_tokens(images: u64, bytes: u64) -> u64 {
    if images == 0 {
        return 0;
    }
    let b64 = (bytes / images).div_ceil(3) * 4;
    images * (b64 * 3 / 4 / 750).clamp(85, 16_000)
}

/// `[Summary] …` and `[Context compacted: …]`: user messages of one text block.
pub fn user_text_tokens(text: &str) -> u64 {
    text_tokens(text.len()) + 4
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    User,
    Assistant,
    ToolResult,
}

/// One phi-core message of a host message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub kind: UnitKind,
    pub est: u64,
}

/// What a host message is to phi-core: its messages, and where their texts are.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A system message: not a phi-core message.
    System,
    /// One user text block.
    User,
    /// `prefix` bytes of text block (0: none), then the tool calls.
    Assistant { prefix: usize, calls: usize },
    /// Tool results, each with its own body (`Body::Tools`), or the message's whole text as the
    /// first result's body and the others empty (`Body::Whole`: a message the host rewrote,
    /// whose results all carry the new text, or whose text does not start with its results);
    /// `extra` is the byte offset where a trailing user text starts.
    Results { body: Body, extra: Option<usize> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Tools,
    Whole,
}

/// A tool result message in phi-core's sense: role tool, or a non-assistant message with results.
pub fn is_tool_result(m: &Msg<'_>) -> bool {
    m.role() == Role::Tool || (m.has_tool_results() && m.role() != Role::Assistant)
}

/// The shape of `m` and its phi-core messages with their estimates.
pub fn units(m: &Msg<'_>, out: &mut Vec<Unit>) -> Shape {
    let images = image_tokens(m.images() as u64, m.image_bytes());
    let text = m.text();
    match m.role() {
        Role::System => Shape::System,
        _ if is_tool_result(m) => {
            let results: Vec<_> = m.tools().filter(|t| t.is_result()).collect();
            let unit = |body: usize, name: usize| Unit {
                kind: UnitKind::ToolResult,
                est: text_tokens(body) + text_tokens(name) + 8,
            };
            if results.is_empty() {
                out.push(Unit {
                    est: unit(text.len(), 0).est + images,
                    ..unit(0, 0)
                });
                return Shape::Results {
                    body: Body::Whole,
                    extra: None,
                };
            }
            // Does the text start with the bodies joined by "\n" (the host's flattening)?
            let mut at = 0usize;
            let mut joined = true;
            for (k, t) in results.iter().enumerate() {
                if k > 0 {
                    if text.as_bytes().get(at) != Some(&b'\n') {
                        joined = false;
                        break;
                    }
                    at += 1;
                }
                if !text[at.min(text.len())..].starts_with(t.body()) {
                    joined = false;
                    break;
                }
                at += t.body().len();
            }
            let extra = if joined && at == text.len() {
                Some(None)
            } else if joined && text.as_bytes().get(at) == Some(&b'\n') {
                Some(Some(at + 1))
            } else {
                None
            };
            match extra {
                Some(extra) => {
                    for (k, t) in results.iter().enumerate() {
                        let mut u = unit(t.body().len(), t.name().len());
                        if k == 0 {
                            u.est += images;
                        }
                        out.push(u);
                    }
                    if let Some(e) = extra {
                        out.push(Unit {
                            kind: UnitKind::User,
                            est: text_tokens(text.len() - e) + 4,
                        });
                    }
                    Shape::Results {
                        body: Body::Tools,
                        extra,
                    }
                }
                None => {
                    for (k, t) in results.iter().enumerate() {
                        let mut u = unit(if k == 0 { text.len() } else { 0 }, t.name().len());
                        if k == 0 {
                            u.est += images;
                        }
                        out.push(u);
                    }
                    Shape::Results {
                        body: Body::Whole,
                        extra: None,
                    }
                }
            }
        }
        Role::Assistant => {
            let calls: Vec<_> = m.tools().filter(|t| !t.is_result()).collect();
            let prefix = assistant_prefix(text, calls.iter().map(|t| t.body()));
            let mut est = text_tokens(prefix) + 4 + images;
            for t in &calls {
                est += text_tokens(t.name().len()) + text_tokens(json_len(t.body())) + 8;
            }
            out.push(Unit {
                kind: UnitKind::Assistant,
                est,
            });
            Shape::Assistant {
                prefix,
                calls: calls.len(),
            }
        }
        _ => {
            out.push(Unit {
                kind: UnitKind::User,
                est: text_tokens(text.len()) + 4 + images,
            });
            Shape::User
        }
    }
}

/// Bytes of an assistant text before its tool-call arguments: the host joins the parts with
/// "\n", arguments last. When the text does not end with them, all of it is text.
pub fn assistant_prefix<'a>(text: &str, args: impl DoubleEndedIterator<Item = &'a str>) -> usize {
    let mut end = text.len();
    let mut any = false;
    for a in args.rev() {
        if any {
            if end == 0 || text.as_bytes()[end - 1] != b'\n' {
                return text.len();
            }
            end -= 1;
        }
        if !text[..end].ends_with(a) {
            return text.len();
        }
        end -= a.len();
        any = true;
    }
    if !any || end == 0 {
        return end;
    }
    if text.as_bytes()[end - 1] == b'\n' {
        end - 1
    } else {
        text.len()
    }
}
