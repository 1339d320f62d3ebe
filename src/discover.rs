//! Session logs that agent tools wrote on this machine: Claude Code's `~/.claude/projects`, Codex
//! CLI's `~/.codex/sessions`, Gemini CLI's `~/.gemini/tmp/*/chats`, OpenCode's database and
//! storage under `~/.local/share/opencode`, GitHub Copilot CLI's `~/.copilot/session-state`, and
//! the task folders Cline, Roo Code and Kilo Code keep in VS Code's global storage. Only file
//! metadata is read, so listing thousands is instant; a log is loaded when the user opens it.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One log found on disk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoundLog {
    pub path: PathBuf,
    /// The tool whose folder it was found in (`claude-code`, `codex`, `gemini-cli`, `opencode`,
    /// `copilot-cli`, `cline`, `roo-code`, `kilo-code`); the reader still sniffs the content.
    pub tool: &'static str,
    pub bytes: u64,
    /// Last modification, milliseconds since the Unix epoch.
    pub modified_ms: Option<i64>,
}

/// What a tool's folder holds, so that each session is listed once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Layout {
    /// `*.jsonl` at any depth; a folder beside `<name>.jsonl` is that session's (Claude Code's
    /// subagents), and Codex's `YYYY/MM/DD/rollout-*.jsonl`.
    Jsonl,
    /// `<project hash>/chats/session-*.json` or `.jsonl` (Gemini CLI).
    GeminiChats,
    /// `opencode*.db` (the SQLite store, every session in one file) and `storage/session/*/*.json`
    /// (the older JSON-file storage).
    OpenCode,
    /// `<session id>/events.jsonl` (GitHub Copilot CLI).
    CopilotEvents,
    /// `tasks/<task id>/ui_messages.json`: the task folder is one session (Cline and its forks).
    ClineTasks,
}

/// Where each tool keeps its logs, relative to the home folder.
pub const PLACES: &[(&str, &str, Layout)] = &[
    ("claude-code", ".claude/projects", Layout::Jsonl),
    ("codex", ".codex/sessions", Layout::Jsonl),
    ("gemini-cli", ".gemini/tmp", Layout::GeminiChats),
    ("opencode", ".local/share/opencode", Layout::OpenCode),
    (
        "copilot-cli",
        ".copilot/session-state",
        Layout::CopilotEvents,
    ),
];

/// VS Code's global storage, per platform and editor build (stable, Insiders, VSCodium, Cursor,
/// Windsurf), relative to the home folder.
const VSCODE_STORAGE: &[&str] = &[
    ".config/Code/User/globalStorage",
    ".config/Code - Insiders/User/globalStorage",
    ".config/VSCodium/User/globalStorage",
    ".config/Cursor/User/globalStorage",
    ".config/Windsurf/User/globalStorage",
    "Library/Application Support/Code/User/globalStorage",
    "Library/Application Support/Code - Insiders/User/globalStorage",
    "Library/Application Support/VSCodium/User/globalStorage",
    "Library/Application Support/Cursor/User/globalStorage",
    "Library/Application Support/Windsurf/User/globalStorage",
    "AppData/Roaming/Code/User/globalStorage",
    "AppData/Roaming/Code - Insiders/User/globalStorage",
    "AppData/Roaming/VSCodium/User/globalStorage",
    "AppData/Roaming/Cursor/User/globalStorage",
    "AppData/Roaming/Windsurf/User/globalStorage",
];

/// The extensions that keep Cline-style task folders in that storage.
pub const VSCODE_EXTENSIONS: &[(&str, &str)] = &[
    ("cline", "saoudrizwan.claude-dev"),
    ("roo-code", "rooveterinaryinc.roo-cline"),
    ("kilo-code", "kilocode.kilo-code"),
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
    for (tool, rel, layout) in PLACES {
        find(&home.join(rel), tool, *layout, &mut out);
    }
    for storage in VSCODE_STORAGE {
        for (tool, ext) in VSCODE_EXTENSIONS {
            find(
                &home.join(storage).join(ext).join("tasks"),
                tool,
                Layout::ClineTasks,
                &mut out,
            );
        }
    }
    out.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(a.path.cmp(&b.path)));
    out
}

fn find(dir: &Path, tool: &'static str, layout: Layout, out: &mut Vec<FoundLog>) {
    match layout {
        Layout::Jsonl => walk(dir, tool, 0, out),
        Layout::GeminiChats => {
            for project in subdirs(dir) {
                for f in files(&project.join("chats")) {
                    let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                    if name.is_some_and(|n| {
                        n.starts_with("session-") && (n.ends_with(".json") || n.ends_with(".jsonl"))
                    }) {
                        push(&f, tool, out);
                    }
                }
            }
        }
        Layout::OpenCode => {
            for f in files(dir) {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                if name.is_some_and(|n| n.starts_with("opencode") && n.ends_with(".db")) {
                    push(&f, tool, out);
                }
            }
            for project in subdirs(&dir.join("storage").join("session")) {
                for f in files(&project) {
                    if f.extension().is_some_and(|x| x == "json") {
                        push(&f, tool, out);
                    }
                }
            }
        }
        Layout::CopilotEvents => {
            for session in subdirs(dir) {
                push(&session.join("events.jsonl"), tool, out);
            }
        }
        Layout::ClineTasks => {
            for task in subdirs(dir) {
                push(&task.join("ui_messages.json"), tool, out);
            }
        }
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default()
}

/// Lists `path` when it is a file.
fn push(path: &Path, tool: &'static str, out: &mut Vec<FoundLog>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if !meta.is_file() {
        return;
    }
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64);
    out.push(FoundLog {
        path: path.to_path_buf(),
        tool,
        bytes: meta.len(),
        modified_ms,
    });
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
            push(&path, tool, out);
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
    fn finds_gemini_opencode_copilot_and_cline_family_sessions_once_each() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let mk = |rel: &str, text: &str| {
            let p = h.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        mk(
            ".gemini/tmp/3f1c/chats/session-2026-01-15T20-51-f7633853.json",
            "{}",
        );
        mk(
            ".gemini/tmp/3f1c/chats/session-2026-03-04T09-30-c1971d3f.jsonl",
            "{}\n",
        );
        mk(".gemini/tmp/3f1c/logs.json", "[]");
        mk(".local/share/opencode/opencode.db", "x");
        mk(
            ".local/share/opencode/storage/session/4f1d/ses_a.json",
            "{}",
        );
        mk(
            ".local/share/opencode/storage/message/ses_a/msg_1.json",
            "{}",
        );
        mk(".local/share/opencode/storage/part/msg_1/prt_1.json", "{}");
        mk(".copilot/session-state/10fb4666/events.jsonl", "{}\n");
        mk(".copilot/session-state/10fb4666/plan.md", "# plan");
        let cline = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1769064454592";
        mk(&format!("{cline}/ui_messages.json"), "[]");
        mk(&format!("{cline}/api_conversation_history.json"), "[]");
        mk(&format!("{cline}/task_metadata.json"), "{}");
        mk(
            "Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/t1/ui_messages.json",
            "[]",
        );
        mk(
            "AppData/Roaming/Cursor/User/globalStorage/kilocode.kilo-code/tasks/t2/ui_messages.json",
            "[]",
        );
        let mut found: Vec<(String, &str)> = logs_in_home(h)
            .iter()
            .map(|f| {
                let rel = f.path.strip_prefix(h).unwrap();
                (rel.display().to_string(), f.tool)
            })
            .collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                (format!("{cline}/ui_messages.json"), "cline"),
                (".copilot/session-state/10fb4666/events.jsonl".into(), "copilot-cli"),
                (".gemini/tmp/3f1c/chats/session-2026-01-15T20-51-f7633853.json".into(), "gemini-cli"),
                (".gemini/tmp/3f1c/chats/session-2026-03-04T09-30-c1971d3f.jsonl".into(), "gemini-cli"),
                (".local/share/opencode/opencode.db".into(), "opencode"),
                (".local/share/opencode/storage/session/4f1d/ses_a.json".into(), "opencode"),
                (
                    "AppData/Roaming/Cursor/User/globalStorage/kilocode.kilo-code/tasks/t2/ui_messages.json".into(),
                    "kilo-code"
                ),
                (
                    "Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/t1/ui_messages.json".into(),
                    "roo-code"
                ),
            ]
        );
    }

    #[test]
    fn a_home_without_tool_folders_has_no_logs() {
        let home = tempfile::tempdir().unwrap();
        assert!(logs_in_home(home.path()).is_empty());
    }
}
