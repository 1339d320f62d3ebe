//! `ctxlab library`: the sessions, runs and profiles kept in the library database.

use super::compare::aligned;
use ctxlab::fmt::fmt_tokens;
use ctxlab::report::usd;
use ctxlab::store::{Imported, Library, SourceStatus};
use ctxlab::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// The library file (default: $CTXLAB_DB, else the user data folder).
    #[arg(long, global = true, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Sessions in the library, with whether their log is still there and unchanged.
    List,
    /// Add the sessions of logs (files or folders); the logs stay where they are.
    Import { logs: Vec<PathBuf> },
    /// A session and its runs.
    Show { id: i64 },
    /// Remove a session (and its runs), or one run with --run, or a profile with --profile.
    Rm {
        /// Session id (with --run: run id).
        id: Option<i64>,
        #[arg(long)]
        run: bool,
        /// Remove the profile STRATEGY/NAME instead.
        #[arg(long, value_name = "STRATEGY/NAME")]
        profile: Option<String>,
    },
    /// Session logs agent tools left in their default folders on this machine (Claude Code,
    /// Codex, Gemini CLI, OpenCode, Copilot CLI, Cline / Roo Code / Kilo Code), newest first.
    Discover,
    /// Tuned profiles.
    Profiles {
        /// Only this strategy's.
        strategy: Option<String>,
    },
}

fn status_text(s: &SourceStatus) -> String {
    match s {
        SourceStatus::Unchanged => "ok".into(),
        SourceStatus::Missing { file } => format!("MOVED OR DELETED ({})", file.display()),
        SourceStatus::Changed { .. } => "CHANGED since import".into(),
    }
}

fn json(v: serde_json::Value) -> Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&v)
            .map_err(|e| Error::Invalid(format!("cannot write JSON: {e}")))?
    );
    Ok(())
}

pub fn run(args: Args) -> Result<()> {
    if let Cmd::Discover = args.cmd {
        return discover(args.json);
    }
    let mut lib = Library::open_default(args.db.as_deref())?;
    match args.cmd {
        // Answered above, without opening the library.
        Cmd::Discover => return discover(args.json),
        Cmd::List => {
            let listing = lib.session_list()?;
            skipped(&listing.skipped);
            let sessions = listing.rows;
            let mut statuses = Vec::new();
            for s in &sessions {
                statuses.push(lib.check_source(s.id)?);
            }
            if args.json {
                let rows: Vec<_> = sessions
                    .iter()
                    .zip(&statuses)
                    .map(|(s, st)| serde_json::json!({"session": s, "source": st}))
                    .collect();
                return json(serde_json::json!({
                    "version": 1, "library": lib.path(), "sessions": rows,
                    "skipped": listing.skipped,
                }));
            }
            println!("library {}", lib.path().display());
            let mut rows = vec![["ID", "SESSION", "FORMAT", "CALLS", "RUNS", "LOG", "FILE"]
                .map(String::from)
                .to_vec()];
            for (s, st) in sessions.iter().zip(&statuses) {
                rows.push(vec![
                    s.id.to_string(),
                    ctxlab::naming::shorten(s.title.as_deref().unwrap_or(&s.session_key), 48),
                    s.format.clone(),
                    fmt_tokens(s.stats.calls),
                    fmt_tokens(s.runs),
                    status_text(st),
                    s.files
                        .first()
                        .map(|f| f.display().to_string())
                        .unwrap_or_default(),
                ]);
            }
            print!("{}", aligned(&rows, true));
        }
        Cmd::Import { logs } => {
            if logs.is_empty() {
                return Err(Error::Invalid("name at least one log to import".into()));
            }
            for log in &logs {
                for s in ctxlab::formats::load(log)? {
                    let (id, how) = lib.import(&s)?;
                    let what = match how {
                        Imported::New => "imported",
                        Imported::Unchanged => "already in the library",
                        Imported::Updated => "refreshed (its log changed)",
                    };
                    println!("session {id} ({}): {what}", s.id);
                }
            }
        }
        Cmd::Show { id } => {
            let s = lib.session(id)?;
            let st = lib.check_source(id)?;
            let listing = lib.run_list(Some(id))?;
            skipped(&listing.skipped);
            let runs = listing.rows;
            if args.json {
                return json(serde_json::json!({
                    "version": 1, "session": s, "source": st, "runs": runs,
                    "skipped": listing.skipped,
                }));
            }
            println!(
                "session {id}: {}",
                s.title.as_deref().unwrap_or(&s.session_key)
            );
            println!(
                "  log: {} [{}]",
                s.files
                    .first()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
                status_text(&st)
            );
            println!(
                "  {} format, {} agents, {} messages, {} calls, {} recorded compactions{}",
                s.format,
                fmt_tokens(s.stats.agents),
                fmt_tokens(s.stats.messages),
                fmt_tokens(s.stats.calls),
                fmt_tokens(s.stats.recorded_compactions),
                if s.stats.usage_only {
                    " (usage only)"
                } else {
                    ""
                }
            );
            let mut rows = vec![["RUN", "LABEL", "STRATEGY", "TOTAL INPUT", "PEAK", "COST"]
                .map(String::from)
                .to_vec()];
            for r in &runs {
                rows.push(vec![
                    r.id.to_string(),
                    r.label.clone(),
                    r.strategy.clone(),
                    fmt_tokens(r.metrics.total_input_tokens),
                    fmt_tokens(r.metrics.peak_context),
                    usd(r.metrics.cost.total_usd),
                ]);
            }
            print!("{}", aligned(&rows, false));
        }
        Cmd::Rm { id, run, profile } => match (id, profile) {
            (None, Some(p)) => {
                let (strategy, name) = p.split_once('/').ok_or_else(|| {
                    Error::Invalid(format!("--profile {p}: expected STRATEGY/NAME"))
                })?;
                lib.remove_profile(strategy, name)?;
                println!("removed profile {name} of {strategy}");
            }
            (Some(id), None) if run => {
                lib.remove_run(id)?;
                println!("removed run {id}");
            }
            (Some(id), None) => {
                lib.remove_session(id)?;
                println!("removed session {id} and its runs (the log itself is untouched)");
            }
            _ => {
                return Err(Error::Invalid(
                    "rm takes a session id, --run RUN_ID, or --profile STRATEGY/NAME".into(),
                ))
            }
        },
        Cmd::Profiles { strategy } => {
            let listing = lib.profile_list(strategy.as_deref())?;
            skipped(&listing.skipped);
            let ps = listing.rows;
            if args.json {
                return json(serde_json::json!({
                    "version": 1, "profiles": ps, "skipped": listing.skipped,
                }));
            }
            let mut rows = vec![["STRATEGY", "NAME", "PARAMETERS", "NOTE"]
                .map(String::from)
                .to_vec()];
            for p in ps {
                rows.push(vec![p.strategy, p.name, p.params.to_string(), p.note]);
            }
            print!("{}", aligned(&rows, true));
        }
    }
    Ok(())
}

/// Rows of the library that did not read back: named on stderr, the rest of the list printed.
fn skipped(rows: &[ctxlab::store::SkippedRow]) {
    for r in rows {
        eprintln!("ctxlab: warning: {r}");
    }
}

/// `library discover`: what `ctxlab::discover` finds under the home folder.
fn discover(as_json: bool) -> Result<()> {
    let found = ctxlab::discover::local_logs();
    if as_json {
        return json(serde_json::json!({"version": 1, "logs": found}));
    }
    if found.is_empty() {
        println!("no logs found in the default folders of Claude Code, Codex, Gemini CLI, OpenCode, Copilot CLI, Cline, Roo Code or Kilo Code");
        return Ok(());
    }
    let mut rows = vec![["TOOL", "BYTES", "MODIFIED", "PATH"]
        .map(String::from)
        .to_vec()];
    rows.extend(found.iter().map(|f| {
        vec![
            f.tool.to_string(),
            fmt_tokens(f.bytes),
            f.modified_ms
                .map(ctxlab::formats::time::format_ms)
                .unwrap_or_default(),
            f.path.display().to_string(),
        ]
    }));
    print!("{}", aligned(&rows, true));
    Ok(())
}
