//! The two experimental passes that shrink older assistant messages (codetether-agent 4.7.4
//! `src/session/helper/experimental/`): `thinking_prune.rs` `prune_thinking` removes thinking
//! from assistant messages older than the last 4, `lingua.rs` `prune_low_entropy` strips
//! formatting noise from assistant text older than the last 6. Both are stable once a message is
//! that old, so each message is measured once, when it ages past the window. The host's view
//! flattens thinking into the text: these passes change CodeTether's estimate (its triggers and
//! splits), not what the host sends (docs/strategies/codetether.md).

use crate::estimate::Span;
use ctxlab_plugin_api::{Msg, Role};

/// thinking_prune.rs `KEEP_LAST_MESSAGES`.
pub const THINKING_KEEP_LAST: usize = 4;
/// lingua.rs `KEEP_LAST_MESSAGES`.
pub const LINGUA_KEEP_LAST: usize = 6;

/// Bytes of an assistant message's thinking: its flattened text less its content (text parts, from
/// the host's content counts, ABI 1.3), its tool-call arguments and the joining newlines.
/// `None` when the host does not report content counts.
pub fn thinking_bytes(m: &Msg<'_>) -> Option<u64> {
    if m.role() != Role::Assistant {
        return Some(0);
    }
    let (ascii, other) = m.content_chars()?;
    // Non-ASCII characters are 2–4 bytes; 3 is the usual (CJK, symbols).
    let content = ascii + 3 * other;
    let mut args = 0;
    let mut parts = (content > 0) as u64;
    for t in m.tools() {
        args += t.body().len() as u64;
        parts += 1;
    }
    let rest = (m.text_len() as u64).saturating_sub(content + args + parts);
    // A joining newline or two is not thinking.
    Some(if rest > 2 { rest } else { 0 })
}

/// `prune_text` (lingua.rs) measured: the bytes and whitespace of the text it would return.
/// Lines outside fenced code blocks lose trailing whitespace and runs of spaces; lines of only
/// whitespace or `.…-_*=` count as blank and a run of blanks becomes one newline.
pub fn pruned_span(input: &str) -> Span {
    let mut out = Span::default();
    let mut in_code = false;
    let mut blank_run = 0usize;
    for line in input.split_inclusive('\n') {
        let stripped = line.trim_end_matches('\n');
        if stripped.trim_start().starts_with("```") {
            in_code = !in_code;
            out = out.plus(Span::of(line));
            blank_run = 0;
            continue;
        }
        if in_code {
            out = out.plus(Span::of(line));
            continue;
        }
        let trimmed = stripped.trim_end();
        let noise = trimmed.is_empty()
            || trimmed.chars().all(|c| c.is_ascii_whitespace())
            || trimmed
                .chars()
                .all(|c| matches!(c, '.' | '…' | '-' | '_' | '*' | '='));
        if noise {
            blank_run += 1;
            if blank_run <= 1 {
                out = out.plus(Span::of("\n"));
            }
            continue;
        }
        blank_run = 0;
        // Runs of spaces collapse to one: every space that follows a space goes.
        let b = trimmed.as_bytes();
        let repeats = b[1..]
            .iter()
            .zip(b)
            .filter(|&(&x, &prev)| (x == b' ') & (prev == b' '))
            .count() as u64;
        out = out.plus(Span::of_bytes(b).minus(Span {
            bytes: repeats,
            ws: repeats,
        }));
        if line.ends_with('\n') {
            out = out.plus(Span::of("\n"));
        }
    }
    out
}

/// `prune_text` (lingua.rs): the text itself, for the chunker's rendering of a compressed
/// prefix (`pruned_span` measures the same without writing it).
#[cfg(test)]
pub fn pruned_text(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    pruned_into(&mut out, input);
    out
}

/// `prune_text` appended to `out`.
pub fn pruned_into(out: &mut String, input: &str) {
    let mut in_code = false;
    let mut blank_run = 0usize;
    for line in input.split_inclusive('\n') {
        let stripped = line.trim_end_matches('\n');
        if stripped.trim_start().starts_with("```") {
            in_code = !in_code;
            out.push_str(line);
            blank_run = 0;
            continue;
        }
        if in_code {
            out.push_str(line);
            continue;
        }
        let trimmed = stripped.trim_end();
        let noise = trimmed.is_empty()
            || trimmed
                .chars()
                .all(|c| matches!(c, '.' | '…' | '-' | '_' | '*' | '='));
        if noise {
            blank_run += 1;
            if blank_run <= 1 {
                out.push('\n');
            }
            continue;
        }
        blank_run = 0;
        // Every space that follows a space goes (the first byte always stays); a space is one
        // byte and never inside a multi-byte character, so the kept runs are whole characters.
        let b = trimmed.as_bytes();
        let mut from = 0;
        for i in 1..b.len() {
            if b[i] == b' ' && b[i - 1] == b' ' {
                out.push_str(&trimmed[from..i]);
                from = i + 1;
            }
        }
        out.push_str(&trimmed[from..]);
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruned_text_is_what_pruned_span_measures() {
        for t in [
            "Here is my   plan.\n\n\n\n...\n   \nAnd it works.  \n",
            "```\n  a    b\n```\nx  y\n",
            "  lead  spaces\r\n---\n\n***\nend",
            "",
        ] {
            assert_eq!(Span::of(&pruned_text(t)), pruned_span(t), "{t:?}");
        }
        assert_eq!(pruned_text("a   b  \n\n\n c"), "a b\n\n c");
    }

    /// lingua.rs prune_text: the module's own example, measured.
    #[test]
    fn low_entropy_pruning_collapses_blank_runs_and_spaces() {
        let noisy = "Here is my   plan.\n\n\n\n...\n   \nAnd it works.  \n";
        // "Here is my plan.\n" + "\n" (one blank for the run) + "And it works.\n"
        let want = "Here is my plan.\n\nAnd it works.\n";
        assert_eq!(pruned_span(noisy), Span::of(want));
        let code = "```\n  a    b\n```\nx  y\n";
        assert_eq!(pruned_span(code), Span::of("```\n  a    b\n```\nx y\n"));
    }
}
