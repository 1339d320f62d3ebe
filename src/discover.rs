//! Session logs that agent tools wrote on this machine: Claude Code's `~/.claude/projects` and
//! Codex CLI's `~/.codex/sessions`. Only file metadata is read, so listing thousands is instant;
//! a log is loaded when the user opens it.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One log found on disk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoundLog {
    pub path: PathBuf,
    /// `claude-code` or `codex`: the tool whose folder it was found in (the reader still sniffs).
    pub tool: &'static str,
    pub bytes: u64,
    /// Last modification, milliseconds since the Unix epoch.
    pub modified_ms: Option<i64>,
}

/// Where each tool keeps its logs, under a home folder.
pub const PLACES: &[(&str, &str)] = &[
    ("claude-code", ".claude/projects"),
    ("codex", ".codex/sessions"),
];

/// Logs under the user's home folder, newest first.
pub fn local_logs() -> Vec<FoundLog> {
    dirs::home_dir()
        .map(|home| logs_in_home(&home))
        .unwrap_or_default()
}

/// Logs under `home`'s tool folders, newest first. A missing or unreadable folder adds nothing.
pub fn logs_in_home(home: &Path) -> Vec<FoundLog> {
    let mut out = Vec::new();
    for (tool, rel) in PLACES {
        walk(&home.join(rel), tool, 0, &mut out);
    }
    out.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(a.path.cmp(&b.path)));
    out
}

/// Claude Code keeps `<project>/<session>.jsonl` with a `<session>/` folder of subagents beside
/// it (part of that session, not a log of its own); Codex keeps `YYYY/MM/DD/rollout-*.jsonl`.
/// Depth is bounded so a symlink loop or a deep tree cannot stall the listing.
fn walk(dir: &Path, tool: &'static str, depth: u32, out: &mut Vec<FoundLog>) {
    const MAX_DEPTH: u32 = 4;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            if depth < MAX_DEPTH && !path.with_extension("jsonl").is_file() {
                walk(&path, tool, depth + 1, out);
            }
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64);
            out.push(FoundLog {
                path,
                tool,
                bytes: meta.len(),
                modified_ms,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_claude_sessions_and_codex_rollouts_but_not_subagent_files() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join(".claude/projects/-work-app");
        std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
        std::fs::write(project.join("s1.jsonl"), "{}\n").unwrap();
        std::fs::write(project.join("s1/subagents/agent-a.jsonl"), "{}\n").unwrap();
        std::fs::write(project.join("notes.txt"), "x").unwrap();
        let day = home.path().join(".codex/sessions/2025/11/02");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::write(day.join("rollout-1.jsonl"), "{}\n{}\n").unwrap();

        let found = logs_in_home(home.path());
        let mut names: Vec<(String, &str, u64)> = found
            .iter()
            .map(|f| {
                let rel = f.path.strip_prefix(home.path()).unwrap();
                (rel.display().to_string(), f.tool, f.bytes)
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                (
                    ".claude/projects/-work-app/s1.jsonl".into(),
                    "claude-code",
                    3
                ),
                (
                    ".codex/sessions/2025/11/02/rollout-1.jsonl".into(),
                    "codex",
                    6
                ),
            ]
        );
        assert!(found.iter().all(|f| f.modified_ms.is_some()));
    }

    #[test]
    fn a_home_without_tool_folders_has_no_logs() {
        let home = tempfile::tempdir().unwrap();
        assert!(logs_in_home(home.path()).is_empty());
    }
}
