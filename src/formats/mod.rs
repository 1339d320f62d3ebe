//! Log readers: one module per format, chosen by sniffing the content (never the file name).
//!
//! Every reader streams its file line by line (bounded memory), hashes it while reading, and turns
//! a corrupt line into a `Session::warnings` entry with file:line instead of failing; see
//! `docs/formats.md` for what each format holds and what ctxlab cannot know from it.

pub mod aider;
pub mod claude_code;
mod claude_restore;
pub mod cline;
pub mod codex;
pub mod copilot;
mod de;
mod detect;
mod doc;
mod entire;
pub mod follow;
pub mod fuseraft;
pub mod gemini;
pub mod http_capture;
mod lines;
pub mod managed_agents;
pub mod native;
pub mod openai;
pub mod opencode;
pub mod otel;
mod pairs;
pub mod pi;
pub mod swe_agent;
pub mod time;
pub mod usage_counter;
mod utf8;

use std::fs;
use std::path::{Path, PathBuf};

use crate::model::{Session, Warning};
use crate::{Error, Result};

pub use detect::detect;
pub use follow::{Follower, Update};

/// Reader ids (`Source::format`), as `detect` returns them.
pub const FORMATS: &[&str] = &[
    claude_code::ID,
    codex::ID,
    pi::ID,
    openai::ID,
    fuseraft::ID,
    native::ID,
    http_capture::ID,
    otel::ID,
    cline::ID,
    aider::ID,
    swe_agent::ID,
    managed_agents::ID,
    usage_counter::ID,
    gemini::ID,
    opencode::ID,
    copilot::ID,
];

/// Reads one session from one file, in whatever format its content shows.
pub fn load_file(path: &Path) -> Result<Session> {
    let format = detect(path)?;
    load_as(path, format)
}

/// Reads one file with the named reader, skipping detection.
pub fn load_as(path: &Path, format: &str) -> Result<Session> {
    let mut s = match format {
        native::ID => native::read(path),
        claude_code::ID => claude_code::read(path),
        codex::ID => codex::read(path),
        pi::ID => pi::read(path),
        openai::ID => openai::read(path),
        fuseraft::ID => fuseraft::read(path),
        http_capture::ID => http_capture::read(path),
        otel::ID => otel::read(path),
        cline::ID => cline::read(path),
        aider::ID => aider::read(path),
        swe_agent::ID => swe_agent::read(path),
        managed_agents::ID => managed_agents::read(path),
        usage_counter::ID => usage_counter::read(path),
        gemini::ID => gemini::read(path),
        opencode::ID => opencode::read(path),
        copilot::ID => copilot::read(path),
        other => Err(Error::Invalid(format!(
            "unknown format `{other}`; formats: {}",
            FORMATS.join(", ")
        ))),
    }?;
    entire::check(path, &mut s);
    drop_implausible_usage(&mut s);
    pairs::check(&mut s);
    Ok(s)
}

/// More tokens than any one call could read or write (100× the largest context window).
pub const MAX_PLAUSIBLE_TOKENS: u64 = 1_000_000_000;

/// A usage figure past `MAX_PLAUSIBLE_TOKENS` (a corrupt or hostile log: u64::MAX summed to a
/// wrapped total and an absurd cost) is not summed: the call is left without recorded usage and
/// a warning names its line.
fn drop_implausible_usage(s: &mut Session) {
    let mut bad = Vec::new();
    for c in &mut s.calls {
        let Some(u) = &c.usage else { continue };
        let fields = [
            ("input", u.input),
            ("output", u.output),
            ("cache read", u.cache_read),
            ("cache write (5m)", u.cache_write_5m),
            ("cache write (1h)", u.cache_write_1h),
        ];
        if let Some((name, n)) = fields.into_iter().find(|f| f.1 > MAX_PLAUSIBLE_TOKENS) {
            bad.push((c.source, format!(
                "usage {name} of {n} tokens is implausible (above {MAX_PLAUSIBLE_TOKENS}); the call is left without recorded usage"
            )));
            c.usage = None;
        }
    }
    for (pos, msg) in bad {
        s.warn(pos, msg);
    }
}

/// Every session in a file or a folder, and the files of the folder that could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub sessions: Vec<Session>,
    pub failed: Vec<Error>,
}

/// Reads a file, or every log in a folder and its subfolders (a Claude Code project folder holds
/// one session per `.jsonl`; the `<session>/` folders beside them belong to those sessions).
pub fn load_all(path: &Path) -> Result<Loaded> {
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_dir() {
        // An OpenCode database holds many sessions.
        let sessions = if opencode::is_db(path) {
            opencode::read_db_all(path)?
        } else {
            vec![load_file(path)?]
        };
        return Ok(Loaded {
            sessions,
            failed: Vec::new(),
        });
    }
    let mut files = Vec::new();
    let mut out = Loaded::default();
    collect_logs(path, &mut files, &mut out.failed).map_err(|e| Error::io(path, e))?;
    for f in files {
        if opencode::is_db(&f) {
            match opencode::read_db_all(&f) {
                Ok(s) => out.sessions.extend(s),
                Err(e) => out.failed.push(e),
            }
            continue;
        }
        match load_file(&f) {
            Ok(s) => out.sessions.push(s),
            Err(e) => out.failed.push(e),
        }
    }
    Ok(out)
}

/// A file or a folder. Files of a folder that fail to load are reported as warnings on the first
/// session loaded (naming the file); when none loads, the error lists every failure.
pub fn load(path: &Path) -> Result<Vec<Session>> {
    let Loaded {
        mut sessions,
        failed,
    } = load_all(path)?;
    if sessions.is_empty() {
        return Err(match failed.len() {
            0 => Error::UnknownFormat {
                path: path.to_path_buf(),
                reason: "the folder holds no log file (.jsonl, .json, .ndjson, .traj, .aider.chat.history.md)".into(),
                tried: FORMATS.join(", "),
            },
            1 => failed.into_iter().next().expect("one failure"),
            n => Error::Invalid(format!(
                "{}: no session could be read ({n} files):\n{}{}",
                path.display(),
                failed
                    .iter()
                    .take(MAX_LISTED_FAILURES)
                    .map(|e| format!("  {e}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                more_failures(&failed)
            )),
        });
    }
    if failed.len() > MAX_LISTED_FAILURES {
        sessions[0].warnings.push(Warning {
            file: path.display().to_string(),
            line: 0,
            message: more_failures(&failed).trim().to_string(),
        });
    }
    for e in failed.into_iter().take(MAX_LISTED_FAILURES) {
        let (file, line) = match &e {
            Error::Io { path, .. } | Error::UnknownFormat { path, .. } => {
                (path.display().to_string(), 0)
            }
            Error::Parse { path, line, .. } => (path.display().to_string(), *line),
            _ => (String::new(), 0),
        };
        // The warning names the file and line; the error's own text says them again.
        let text = e.to_string();
        let reason = [format!("{file}:{line}: "), format!("{file}: ")]
            .iter()
            .find_map(|p| text.strip_prefix(p.as_str()))
            .unwrap_or(&text)
            .to_string();
        sessions[0].warnings.push(Warning {
            file,
            line,
            message: format!("not loaded: {reason}"),
        });
    }
    Ok(sessions)
}

/// Files of a folder that failed, listed one by one; the rest are counted (a folder of 3,000 bad
/// files made a 1 MB error).
const MAX_LISTED_FAILURES: usize = 20;

/// "… and N more", by kind of failure, for the failures past `MAX_LISTED_FAILURES`.
fn more_failures(failed: &[Error]) -> String {
    let rest = &failed[failed.len().min(MAX_LISTED_FAILURES)..];
    if rest.is_empty() {
        return String::new();
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for e in rest {
        let kind = match e {
            Error::UnknownFormat { .. } => "not a session log",
            Error::Parse { .. } => "a line that could not be read",
            Error::Io { .. } => "could not be read",
            _ => "other errors",
        };
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    format!(
        "\n  … and {} more files not loaded ({}; not listed)",
        rest.len(),
        kinds.join(", ")
    )
}

/// Candidate logs under `dir`, sorted, skipping hidden entries and the per-session folders that
/// sit beside a `<name>.jsonl` (Claude Code's subagents and tool-result spill files).
/// Each real folder and file is visited once (a symlink loop such as `l -> .` or `up -> ..`
/// neither repeats logs nor recurses forever), at most `MAX_FOLDER_DEPTH` folders deep, and only
/// regular files are logs (a FIFO named `p.jsonl` would block the reader forever).
/// A subfolder that cannot be read is a failure of its own (named in `failed`), not the end of
/// the walk; only `dir` itself unreadable is an error.
fn collect_logs(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    failed: &mut Vec<Error>,
) -> std::io::Result<()> {
    let mut seen = std::collections::HashSet::new();
    seen.insert(fs::canonicalize(dir)?);
    collect_logs_in(dir, out, &mut seen, 0, failed)
}

const MAX_FOLDER_DEPTH: u32 = 32;

fn collect_logs_in(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    seen: &mut std::collections::HashSet<PathBuf>,
    depth: u32,
    failed: &mut Vec<Error>,
) -> std::io::Result<()> {
    // OpenCode's storage folder: its root sessions only (messages and parts are read with them).
    if let Some(sessions) = opencode::storage_sessions(dir) {
        out.extend(sessions);
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.') && n != aider::HISTORY_FILE)
        })
        .collect();
    entries.sort();
    for p in entries {
        let Ok(meta) = fs::metadata(&p) else {
            continue; // a dangling symlink
        };
        if !meta.is_dir() && !meta.is_file() {
            continue; // a FIFO, socket or device is no log
        }
        if !fs::canonicalize(&p).is_ok_and(|real| seen.insert(real)) {
            continue; // reached already through another path
        }
        if meta.is_dir() {
            if depth < MAX_FOLDER_DEPTH && !p.with_extension("jsonl").is_file() {
                if let Err(e) = collect_logs_in(&p, out, seen, depth + 1, failed) {
                    failed.push(Error::io(&p, e));
                }
            }
        } else if entire::is_metadata_beside_log(&p) || cline::is_task_companion(&p) {
            // An Entire checkpoint's totals, a Cline task's history or metadata: read with the
            // transcript or the ui_messages.json beside it.
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            // SWE-agent's trajectories are `.traj` JSON; Aider's history is Markdown.
            .is_some_and(|x| matches!(x, "jsonl" | "json" | "ndjson" | "traj"))
            || p.file_name().is_some_and(|n| n == aider::HISTORY_FILE)
            || (p.extension().is_some_and(|x| x == "db") && opencode::is_db(&p))
        {
            out.push(p);
        }
    }
    Ok(())
}
