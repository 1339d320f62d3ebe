//! `ctxlab inspect`: load logs, summarize each session (`ctxlab::inspect::summarize`), print.

use std::path::PathBuf;

use ctxlab::inspect::{composition_text, summarize, SessionReport};
use ctxlab::replay::{composition, Prepared};
use ctxlab::tokens::{self, AUTO_COUNTER};

#[derive(clap::Args)]
pub struct Args {
    /// Session logs, or folders of them (a Claude Code project folder loads every session).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Token counter for the estimates: heuristic, chars4, o200k, cl100k, or auto (o200k for
    /// logs of OpenAI and Grok models, heuristic for the others).
    #[arg(long, default_value = AUTO_COUNTER)]
    counter: String,
    /// One JSON document on stdout (schema in docs/cli.md) instead of tables.
    #[arg(long)]
    json: bool,
    /// What fills the context: each agent's context by kind (system, user text, assistant
    /// text, reasoning, tool calls, tool results by tool, injected, summaries) at its largest
    /// and its last call; with --json, every call's.
    #[arg(long)]
    composition: bool,
    /// With --composition: only this call (index in the session, as the charts number them).
    #[arg(long, requires = "composition")]
    call: Option<usize>,
}

pub fn run(args: Args) -> ctxlab::Result<()> {
    if args.counter != AUTO_COUNTER {
        tokens::counter(&args.counter)?;
    }
    let mut reports: Vec<SessionReport> = Vec::new();
    let mut compositions = Vec::new();
    let mut texts = Vec::new();
    for path in &args.paths {
        for session in ctxlab::formats::load(path)? {
            let counter = tokens::counter_for(&args.counter, &session)?;
            if args.composition {
                let prepared = Prepared::counts(&session, counter.as_ref());
                let comp = composition(&session, &prepared, counter.as_ref())?;
                if !args.json {
                    texts.push(composition_text(&session, &comp, args.call)?);
                }
                compositions.push(serde_json::json!({ "id": session.id, "composition": comp }));
            } else {
                reports.push(summarize(&session, counter.as_ref()));
            }
        }
    }
    if args.composition {
        if args.json {
            let doc = serde_json::json!({ "version": 1, "sessions": compositions });
            let text = serde_json::to_string(&doc).map_err(|e| {
                ctxlab::Error::Invalid(format!("cannot write the composition as JSON: {e}"))
            })?;
            println!("{text}");
        } else {
            print!("{}", texts.join("\n"));
        }
        return Ok(());
    }
    if args.json {
        let doc = serde_json::json!({ "version": 1, "sessions": reports });
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| ctxlab::Error::Invalid(format!("cannot write the report as JSON: {e}")))?;
        println!("{text}");
    } else {
        let text: Vec<String> = reports.iter().map(SessionReport::to_text).collect();
        print!("{}", text.join("\n"));
    }
    Ok(())
}
