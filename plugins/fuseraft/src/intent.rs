//! What fuseraft derives from tool calls: the primary argument of a call (for the intent
//! reconstruction and the artifact stub), file paths for the consumed-read rule, and the intent
//! reconstruction text itself.

use serde_json::Value;

/// Argument keys that name what a call acts on, most specific first.
const TARGET_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "filename",
    "file",
    "command",
    "cmd",
    "url",
    "query",
    "pattern",
];
const PATH_KEYS: &[&str] = &["path", "file_path", "filePath", "filename", "file"];

/// Tools whose result is a file's content (fuseraft's read_file; Claude Code's Read).
pub fn is_read_tool(name: &str) -> bool {
    matches!(name, "read_file" | "Read")
}
/// Tools that rewrite a file (fuseraft's write_file / patch_file; Claude Code's Write / Edit).
pub fn is_write_tool(name: &str) -> bool {
    matches!(
        name,
        "write_file" | "patch_file" | "Write" | "Edit" | "MultiEdit" | "edit_file"
    )
}

fn args_object(args: &str) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// `(key, value)` of the argument a call acts on, e.g. `("path", "src/a.cs")`.
pub fn target(args: &str) -> Option<(String, String)> {
    let o = args_object(args)?;
    for k in TARGET_KEYS {
        if let Some(s) = o.get(*k).and_then(|v| v.as_str()) {
            return Some((k.to_string(), s.to_string()));
        }
    }
    o.iter()
        .find_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
}

/// The file a call reads or writes.
pub fn path(args: &str) -> Option<String> {
    let o = args_object(args)?;
    PATH_KEYS
        .iter()
        .find_map(|k| o.get(*k).and_then(|v| v.as_str()).map(String::from))
}

/// First `n` chars of `s`, with `…` when cut.
pub fn clip(s: &str, n: usize) -> String {
    let one_line = s.lines().next().unwrap_or("").trim();
    if one_line.chars().count() <= n && !s.trim().contains('\n') {
        one_line.to_string()
    } else {
        let mut out: String = one_line.chars().take(n).collect();
        out.push('…');
        out
    }
}

/// One tool call in the compacted range.
pub struct Operation {
    pub tool: String,
    pub target: Option<String>,
    /// `None`: applied; `Some(first line of the error)`: failed.
    pub failure: Option<String>,
    pub turn: u64,
    pub agent: String,
}

/// fuseraft's intent-mode summary for turns `first..=last`.
pub fn reconstruction(first: u64, last: u64, ops: &[Operation]) -> String {
    let mut s = format!(
        "[INTENT-DERIVED RECONSTRUCTION — covers turns {first}–{last}]\n\nOPERATIONS (chronological):\n"
    );
    if ops.is_empty() {
        s.push_str("  (none)\n");
    }
    for op in ops {
        let mark = if op.failure.is_some() { '✗' } else { '✓' };
        s.push_str(&format!("  {mark} {}", op.tool));
        if let Some(t) = &op.target {
            s.push_str(&format!(" → \"{}\"", clip(t, 80)));
        }
        if let Some(f) = &op.failure {
            s.push_str(&format!(" — {}", clip(f, 60)));
        }
        s.push_str(&format!(" (turn {}, {})\n", op.turn, op.agent));
    }
    s.push_str(
        "\nRESUMPTION NOTE: History compacted from intent log — deterministic ground truth.\n\
         Do not re-execute operations marked ✓ (applied).\n\
         Operations marked ✗ (failed) should be retried if the task requires them.",
    );
    s
}

/// A generous token estimate of a text the host will count (ASCII chars/4, others 1 each, +4):
/// used only to make sure a literal summary stays smaller than what it replaces.
pub fn estimate_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    ascii.div_ceil(4) + other + 4
}

/// 12 hex digits naming an artifact (FNV-1a of the content: stable across runs).
pub fn artifact_id(content: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in content.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// The stub that replaces an offloaded tool result.
pub fn offload_stub(
    chars: u64,
    tool: &str,
    target: Option<&(String, String)>,
    content: &str,
) -> String {
    let mut s = format!(
        "[result offloaded — {} chars stored to artifact store]\nTool: {tool}",
        ctxlab_plugin_api::sdk::fmt_tokens(chars)
    );
    if let Some((k, v)) = target {
        s.push_str(&format!(" | {k}={}", clip(v, 120)));
    }
    s.push_str(&format!(
        "\nArtifact: {}\nUse targeted tools (e.g. read_file with startLine/maxLines, or grep_in_file) for specific sections.",
        artifact_id(content)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_paths() {
        assert_eq!(
            target(r#"{"path":"src/a.go","content":"x"}"#),
            Some(("path".into(), "src/a.go".into()))
        );
        assert_eq!(
            target(r#"{"command":"go test ./..."}"#),
            Some(("command".into(), "go test ./...".into()))
        );
        assert_eq!(
            path(r#"{"file_path":"/x/y.rs"}"#).as_deref(),
            Some("/x/y.rs")
        );
        assert_eq!(path("not json"), None);
    }

    #[test]
    fn stub_matches_the_seed() {
        let content = "x".repeat(52_000);
        let s = offload_stub(
            52_000,
            "read_file",
            Some(&("path".into(), "src/LargeService.cs".into())),
            &content,
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "[result offloaded — 52,000 chars stored to artifact store]"
        );
        assert_eq!(lines[1], "Tool: read_file | path=src/LargeService.cs");
        assert!(lines[2].starts_with("Artifact: ") && lines[2].len() == "Artifact: ".len() + 12);
        assert_eq!(
            lines[3],
            "Use targeted tools (e.g. read_file with startLine/maxLines, or grep_in_file) for specific sections."
        );
    }
}
