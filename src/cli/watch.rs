//! `ctxlab watch <log>`: follow a log while its agent writes it (`ctxlab::formats::Follower`),
//! printing the session summary, then one line per new call and per recorded compaction.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

use ctxlab::fmt::fmt_tokens;
use ctxlab::formats::{Follower, Update};
use ctxlab::inspect::summarize;
use ctxlab::model::{RecordedCompaction, Session};
use ctxlab::replay::ModelTable;
use ctxlab::tokens::live::{call_row, CallRow};
use ctxlab::tokens::{self, DEFAULT_COUNTER};
use ctxlab::Error;

#[derive(clap::Args)]
pub struct Args {
    /// The session log being written (Claude Code, Codex, pi, fuseraft or ctxlab native JSONL).
    log: PathBuf,
    /// How often to look for appended lines, in milliseconds.
    #[arg(long, default_value_t = 500, value_name = "MS")]
    interval: u64,
    /// JSON Lines on stdout: a `session` event (the inspect report), then `call`, `compaction`,
    /// `warning` and `reloaded` events.
    #[arg(long)]
    json: bool,
    /// Stop after this many new calls (default: run until interrupted).
    #[arg(long, value_name = "N")]
    exit_after: Option<usize>,
    /// Model table (context windows) instead of the user's or the built-in one.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
}

pub fn run(args: Args) -> ctxlab::Result<()> {
    let models = ModelTable::load(args.pricing.as_deref())?;
    let interval = Duration::from_millis(args.interval.max(10));
    let mut out = Printer {
        json: args.json,
        models: &models,
    };
    let mut follower = open_when_written(&args.log, interval)?;
    out.session(follower.session())?;
    let mut calls = 0;
    loop {
        if args.exit_after.is_some_and(|n| calls >= n) {
            return Ok(());
        }
        sleep(interval);
        let Some(update) = follower.poll()? else {
            continue;
        };
        calls += out.update(
            follower.session(),
            &update,
            args.exit_after.map(|n| n - calls),
        )?;
    }
}

/// A log that is not there yet, or holds no complete line, is waited for: watching can start
/// before the agent does.
fn open_when_written(log: &Path, interval: Duration) -> ctxlab::Result<Follower> {
    let mut said = false;
    loop {
        let written = has_complete_line(log)?;
        if written {
            return Follower::open(log);
        }
        if !said {
            eprintln!("waiting for {} to be written…", log.display());
            said = true;
        }
        sleep(interval);
    }
}

fn has_complete_line(log: &Path) -> ctxlab::Result<bool> {
    // Opening a FIFO blocks until someone writes to it: only a regular file is followed.
    if std::fs::metadata(log).is_ok_and(|m| !m.is_file()) {
        return Err(Error::Invalid(format!(
            "{}: not a regular file; watch follows a log file",
            log.display()
        )));
    }
    let f = match std::fs::File::open(log) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(log, e)),
    };
    let mut r = std::io::BufReader::new(f);
    loop {
        let buf = r.fill_buf().map_err(|e| Error::io(log, e))?;
        if buf.is_empty() {
            return Ok(false);
        }
        if buf.contains(&b'\n') {
            return Ok(true);
        }
        let n = buf.len();
        r.consume(n);
    }
}

enum Event {
    Call(usize),
    Compaction(usize),
}

struct Printer<'m> {
    json: bool,
    models: &'m ModelTable,
}

impl Printer<'_> {
    fn session(&mut self, s: &Session) -> ctxlab::Result<()> {
        let counter = tokens::counter(DEFAULT_COUNTER)?;
        let report = summarize(s, counter.as_ref());
        if self.json {
            emit(serde_json::json!({ "event": "session", "report": report }))?;
        } else {
            write!(std::io::stdout(), "{}", report.to_text()).map_err(stdout_err)?;
            writeln!(
                std::io::stdout(),
                "\nfollowing {} ({} calls so far); new calls appear below",
                s.source.files.first().map_or("", String::as_str),
                fmt_tokens(s.calls.len() as u64)
            )
            .map_err(stdout_err)?;
        }
        flush()
    }

    /// Prints what an update brought; returns how many new calls it printed (at most `limit`).
    fn update(&mut self, s: &Session, u: &Update, limit: Option<usize>) -> ctxlab::Result<usize> {
        if let Some(reason) = &u.reloaded {
            if self.json {
                emit(serde_json::json!({ "event": "reloaded", "reason": reason }))?;
            } else {
                writeln!(std::io::stdout(), "! {reason}").map_err(stdout_err)?;
            }
        }
        for w in &u.warnings {
            if self.json {
                emit(serde_json::json!({ "event": "warning", "warning": w }))?;
            } else {
                writeln!(std::io::stdout(), "! {w}").map_err(stdout_err)?;
            }
        }
        // Calls and compactions in the order they happened (one update may hold several);
        // the key: timestamp (unknown last), then position in the log.
        let mut events: Vec<((i64, u32, u32), Event)> = u
            .calls
            .iter()
            .map(|&i| {
                let c = &s.calls[i];
                let key = (
                    c.timestamp.unwrap_or(i64::MAX),
                    c.source.file,
                    c.source.line,
                );
                (key, Event::Call(i))
            })
            .chain(u.compactions.clone().map(|i| {
                let c = &s.compactions[i];
                let key = (
                    c.timestamp.unwrap_or(i64::MAX),
                    c.source.file,
                    c.source.line,
                );
                (key, Event::Compaction(i))
            }))
            .collect();
        events.sort_by_key(|(key, _)| *key);
        let mut printed = 0;
        for (_, event) in events {
            if limit.is_some_and(|n| printed >= n) {
                break;
            }
            match event {
                Event::Compaction(k) => self.compaction(s, &s.compactions[k])?,
                Event::Call(i) => {
                    let row = call_row(s, i, self.models);
                    if self.json {
                        emit(serde_json::json!({ "event": "call", "call": row }))?;
                    } else {
                        writeln!(std::io::stdout(), "{}", call_line(&row)).map_err(stdout_err)?;
                    }
                    printed += 1;
                }
            }
        }
        // A reply's usage arrives after it (Codex) or grows while it streams (Claude Code).
        for &i in &u.changed_calls {
            let row = call_row(s, i, self.models);
            if self.json {
                emit(serde_json::json!({ "event": "call_updated", "call": row }))?;
            } else {
                writeln!(std::io::stdout(), "{} (updated)", call_line(&row)).map_err(stdout_err)?;
            }
        }
        flush()?;
        Ok(printed)
    }

    fn compaction(&mut self, s: &Session, c: &RecordedCompaction) -> ctxlab::Result<()> {
        let agent = s.agents.get(c.agent).map_or("?", |a| a.name.as_str());
        if self.json {
            return emit(
                serde_json::json!({ "event": "compaction", "agent_name": agent, "compaction": c }),
            );
        }
        writeln!(
            std::io::stdout(),
            "== compaction of {agent} ({}{}{})",
            c.trigger,
            c.pre_tokens
                .map(|t| format!(", {} tokens before", fmt_tokens(t)))
                .unwrap_or_default(),
            if c.inferred { ", inferred" } else { "" }
        )
        .map_err(stdout_err)
    }
}

/// `#12  main  in 3  out 1,234  cache r 45,678 w 1,234  context 47,915 / 200,000 (24.0 %)`.
fn call_line(r: &CallRow) -> String {
    let mark = if r.after_compaction { "*" } else { " " };
    let mut line = format!(
        "{mark}#{:<6} {:<24}",
        r.index + 1,
        truncate(&r.agent_name, 24)
    );
    match r.usage {
        Some(u) => line.push_str(&format!(
            " in {:>9}  out {:>7}  cache r {:>9} w {:>8}",
            fmt_tokens(u.input),
            fmt_tokens(u.output),
            fmt_tokens(u.cache_read),
            fmt_tokens(u.cache_write())
        )),
        None => line.push_str(&format!(" {:<56}", "usage not recorded (yet)")),
    }
    if let Some(c) = r.context {
        line.push_str(&format!("  context {:>9}", fmt_tokens(c)));
        if let (Some(w), Some(p)) = (r.window, r.occupancy()) {
            line.push_str(&format!(" / {} ({p:.1} %)", fmt_tokens(w)));
        }
    }
    if r.after_compaction {
        line.push_str("  after compaction");
    }
    line
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n - 1).collect();
    t.push('…');
    t
}

fn emit(v: serde_json::Value) -> ctxlab::Result<()> {
    writeln!(std::io::stdout(), "{v}").map_err(stdout_err)
}

fn flush() -> ctxlab::Result<()> {
    std::io::stdout().flush().map_err(stdout_err)
}

fn stdout_err(e: std::io::Error) -> Error {
    Error::Invalid(format!("cannot write to stdout: {e}"))
}
