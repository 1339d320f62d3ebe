//! `ctxlab models`: the model table (windows, prices) — list it, show which models of logs it does
//! not price, import a LiteLLM price list into the user's own models.toml.

use super::compare::aligned;
use ctxlab::fmt::fmt_tokens;
use ctxlab::models::{self, LogModel};
use ctxlab::replay::{MatchKind, ModelTable};
use ctxlab::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// The table every command prices with, and its date; with --unknown, the models of the
    /// given logs and which of them it does not price.
    List {
        /// Logs (files or folders) whose models to look up instead of listing the table.
        #[arg(long, num_args = 1.., value_name = "LOG")]
        unknown: Vec<PathBuf>,
        /// A model table file to use alone instead of yours over the built-in one.
        #[arg(long, value_name = "FILE")]
        pricing: Option<PathBuf>,
    },
    /// Merge a LiteLLM price list (model_prices_and_context_window.json) into your models.toml:
    /// new models are added, entries of an earlier import updated, your own entries kept.
    Import {
        /// The price list (LiteLLM's JSON format).
        file: PathBuf,
        /// The table to merge into (default: your models.toml in the user data folder).
        #[arg(long, value_name = "FILE")]
        into: Option<PathBuf>,
        /// Say what would change without writing.
        #[arg(long)]
        dry_run: bool,
    },
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(v)
            .map_err(|e| Error::Invalid(format!("cannot write JSON: {e}")))?
    );
    Ok(())
}

fn price(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("${v}"))
}

fn tokens(x: Option<u64>) -> String {
    x.map_or("–".into(), fmt_tokens)
}

/// Where the table comes from, and how current it is.
fn table_line(t: &ModelTable) -> String {
    let date = |d: &Option<String>| d.clone().unwrap_or_else(|| "undated".into());
    match (&t.path, &t.builtin_date) {
        (None, _) => format!(
            "model table: built-in, checked {} ({} models)\n",
            date(&t.date),
            t.models.len()
        ),
        (Some(p), Some(b)) => format!(
            "model table: {} ({}, {} models) over the built-in table (checked {b}, {} more)\n",
            p.display(),
            date(&t.date),
            t.from_file,
            t.models.len() - t.from_file
        ),
        (Some(p), None) => format!(
            "model table: {} ({}, {} models; the built-in table is not used)\n",
            p.display(),
            date(&t.date),
            t.models.len()
        ),
    }
}

fn list(t: &ModelTable) -> String {
    let mut out = table_line(t);
    out.push_str("prices in USD per million tokens; – unknown (a model without input and output prices is unpriced)\n");
    let mut rows = vec![[
        "MODEL",
        "WINDOW",
        "MAX OUT",
        "INPUT",
        "OUTPUT",
        "CACHE READ",
        "WRITE 5M",
        "WRITE 1H",
        "FROM",
    ]
    .map(String::from)
    .to_vec()];
    for (i, m) in t.models.iter().enumerate() {
        let mut name = m.id.clone();
        if !m.aliases.is_empty() {
            name.push_str(&format!(" ({})", m.aliases.join(", ")));
        }
        rows.push(vec![
            name,
            tokens(m.context_window),
            tokens(m.max_output),
            price(m.input),
            price(m.output),
            price(m.cache_read),
            price(m.cache_write_5m),
            price(m.cache_write_1h),
            if t.path.is_some() && i < t.from_file {
                "file".into()
            } else {
                "built-in".into()
            },
        ]);
    }
    out.push_str(&aligned(&rows, false));
    out
}

fn unknown(t: &ModelTable, found: &[LogModel]) -> String {
    let mut out = table_line(t);
    let mut rows = vec![["MODEL IN THE LOGS", "CALLS", "ENTRY", "PRICE", "WINDOW"]
        .map(String::from)
        .to_vec()];
    for m in found {
        rows.push(vec![
            m.name.clone(),
            fmt_tokens(m.calls),
            match (&m.entry, &m.by) {
                (Some(e), Some(MatchKind::Id)) => e.clone(),
                (Some(e), Some(MatchKind::Alias)) => format!("{e} (alias)"),
                (Some(e), Some(MatchKind::Suffix(s))) => format!("{e} (as {s})"),
                _ => "–".into(),
            },
            if m.priced { "priced" } else { "UNPRICED" }.into(),
            if m.window_known { "known" } else { "assumed" }.into(),
        ]);
    }
    out.push_str(&aligned(&rows, false));
    let unpriced: Vec<&str> = found
        .iter()
        .filter(|m| !m.priced)
        .map(|m| m.name.as_str())
        .collect();
    if unpriced.is_empty() {
        out.push_str("every model of these logs is priced\n");
    } else {
        out.push_str(&format!(
            "unpriced: {} — their calls are left out of every cost; add them to models.toml or import a price list (ctxlab models import FILE.json)\n",
            unpriced.join(", ")
        ));
    }
    out
}

pub fn run(args: Args) -> Result<()> {
    match args.cmd {
        Cmd::List {
            unknown: logs,
            pricing,
        } => {
            let t = ModelTable::load(pricing.as_deref())?;
            if logs.is_empty() {
                if args.json {
                    return print_json(&t);
                }
                print!("{}", list(&t));
                return Ok(());
            }
            let mut sessions = Vec::new();
            for l in &logs {
                sessions.extend(ctxlab::formats::load(l)?);
            }
            let found = models::log_models(&sessions, &t);
            if args.json {
                return print_json(&serde_json::json!({
                    "table": {"path": t.path, "date": t.date, "builtin_date": t.builtin_date},
                    "models": found,
                }));
            }
            print!("{}", unknown(&t, &found));
            Ok(())
        }
        Cmd::Import {
            file,
            into,
            dry_run,
        } => {
            let into = match into.or_else(ModelTable::user_path) {
                Some(p) => p,
                None => {
                    return Err(Error::Invalid(
                        "no user data folder on this system; pass --into FILE".into(),
                    ))
                }
            };
            let r = models::import_litellm(&file, &into, dry_run)?;
            if args.json {
                return print_json(&r);
            }
            print!("{}", import_text(&r));
            Ok(())
        }
    }
}

fn import_text(r: &models::ImportReport) -> String {
    let mut out = format!(
        "{} {} models from {} into {}: {} added, {} updated, {} of yours kept, {} unchanged; {} entries skipped (not chat models, or no price or limit)\n",
        if r.dry_run { "would merge" } else { "merged" },
        fmt_tokens(r.read as u64),
        r.from.display(),
        r.into.display(),
        fmt_tokens(r.added.len() as u64),
        fmt_tokens(r.updated.len() as u64),
        fmt_tokens(r.kept.len() as u64),
        fmt_tokens(r.unchanged as u64),
        fmt_tokens(r.skipped as u64),
    );
    const SHOW: usize = 20;
    let more = |n: usize| {
        if n > SHOW {
            format!("  … {} more (--json lists all)\n", n - SHOW)
        } else {
            String::new()
        }
    };
    if !r.added.is_empty() {
        out.push_str("added:\n");
        for id in r.added.iter().take(SHOW) {
            out.push_str(&format!("  {id}\n"));
        }
        out.push_str(&more(r.added.len()));
    }
    for (what, list) in [
        ("updated", &r.updated),
        ("kept yours (the price list differs)", &r.kept),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("{what}:\n"));
        for (id, d) in list.iter().take(SHOW) {
            out.push_str(&format!("  {id}: {}\n", d.join(", ")));
        }
        out.push_str(&more(list.len()));
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
