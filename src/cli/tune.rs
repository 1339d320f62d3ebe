//! `ctxlab tune`: sweep a strategy's parameters over one or more logs; the Pareto front of cost
//! vs recall, the best set under constraints and why its compactions fired.

use super::compare::{aligned, ReplayFlags};
use ctxlab::compare;
use ctxlab::fmt::fmt_tokens;
use ctxlab::report::usd;
use ctxlab::store::Library;
use ctxlab::tune::{self, Constraint, Sweep, TuneOptions, TuneResult, TuneSession};
use ctxlab::{Error, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(clap::Args)]
pub struct Args {
    /// Session logs (files or folders); every session in them is tuned for together.
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// The strategy id (`ctxlab plugins`).
    #[arg(long, short)]
    strategy: String,
    /// A fixed parameter, `name=value`; repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Fixed parameters from a TOML file of `name = value` lines.
    #[arg(long = "params", value_name = "FILE")]
    params_file: Option<PathBuf>,
    /// A swept parameter and its values, `Name=v1,v2,...`; repeatable (the grid is every combination).
    #[arg(long, required = true, value_name = "NAME=V1,V2,...")]
    sweep: Vec<String>,
    /// What the best set minimises: cost, tokens, or recall (maximised).
    #[arg(long, default_value = "cost")]
    objective: String,
    /// A condition the best set must meet, e.g. `overflow=0`, `recall>=0.9`, `cost<=12.5`.
    #[arg(long, value_name = "METRIC OP VALUE")]
    constraint: Vec<String>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    replay: ReplayFlags,
    /// Save the best set as a profile of the strategy under this name.
    #[arg(long, value_name = "NAME")]
    save_profile: Option<String>,
    /// Store every run of the sweep in the library as it finishes.
    #[arg(long)]
    save_runs: bool,
    /// The library file (default: $CTXLAB_DB, else the user data folder).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Candidates listed (best first by the objective); the JSON has them all.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// Print the whole result as JSON (progress goes to stderr as JSON lines).
    #[arg(long)]
    json: bool,
    /// Run up to this many parameter sets (default 10,000): a larger grid is refused before
    /// anything runs, with its size.
    #[arg(long, value_name = "N")]
    max_candidates: Option<usize>,
}

pub fn run(args: Args) -> Result<()> {
    let registry = args.replay.registry()?;
    let entry = registry.require(&args.strategy)?.clone();
    let base = compare::dotted(
        compare::parse_params(&args.param, args.params_file.as_deref())?,
        &entry.meta.params,
    );
    let sweeps: Vec<Sweep> = args
        .sweep
        .iter()
        .map(|s| Sweep::parse(s))
        .collect::<Result<_>>()?;
    let constraints: Vec<Constraint> = args
        .constraint
        .iter()
        .map(|c| Constraint::parse(c))
        .collect::<Result<_>>()?;
    // Refused before any log is read or anything is written.
    let grid = tune::Grid::new(&base, &sweeps)?;
    grid.check_size(args.max_candidates)?;
    let settings = args.replay.settings()?;
    let mut sessions = Vec::new();
    for log in &args.logs {
        sessions.extend(ctxlab::formats::load(log)?);
    }
    let mut tuned = Vec::with_capacity(sessions.len());
    for s in &sessions {
        tuned.push(TuneSession {
            session: s,
            opts: settings.options(s)?,
        });
    }
    let library = if args.save_runs || args.save_profile.is_some() {
        Some(Mutex::new(Library::open_default(args.db.as_deref())?))
    } else {
        None
    };
    let mut session_ids = Vec::new();
    if let (Some(lib), true) = (&library, args.save_runs) {
        let mut lib = lib
            .lock()
            .map_err(|_| Error::Invalid("library lock poisoned".into()))?;
        for s in &sessions {
            session_ids.push(lib.import(s)?.0);
        }
    }
    let save_error: Mutex<Option<Error>> = Mutex::new(None);
    let on_run = |c: usize, s: usize, run: &ctxlab::replay::Run| {
        let (Some(lib), Some(&sid)) = (&library, session_ids.get(s)) else {
            return;
        };
        let label = format!("tune #{c} {}", swept_text(&grid.get(c).0));
        let saved = lib
            .lock()
            .map_err(|_| Error::Invalid("library lock poisoned".into()))
            .and_then(|mut l| l.save_run(sid, &label, run));
        match saved {
            Ok(id) => {
                // The id is printed only once the run's transaction has committed.
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "saved run {id}");
                let _ = out.flush();
            }
            Err(e) => {
                if let Ok(mut slot) = save_error.lock() {
                    slot.get_or_insert(e);
                }
            }
        }
    };
    let terminal = super::progress(!args.json);
    let json_lines = super::json_progress();
    let progress = |done: usize, total: usize| {
        if args.json {
            json_lines(done, total)
        } else {
            terminal(done, total)
        }
    };
    let opts = TuneOptions {
        objective: args.objective.parse()?,
        constraints,
        threads: args.threads.unwrap_or(0),
        cancel: None,
        progress: Some(&progress),
        on_run: args.save_runs.then_some(&on_run as tune::OnRun),
        max_candidates: args.max_candidates,
    };
    let result = tune::run(&tuned, &entry, &base, &sweeps, &opts)?;
    if let Some(e) = save_error.into_inner().ok().flatten() {
        return Err(e);
    }
    if let (Some(lib), Some(name)) = (&library, &args.save_profile) {
        let best = result.best.ok_or_else(|| {
            Error::Invalid("no parameter set meets the constraints, so no profile was saved".into())
        })?;
        let c = &result.candidates[best];
        let note = format!(
            "tune over {} session{}, objective {}, {}",
            sessions.len(),
            if sessions.len() == 1 { "" } else { "s" },
            result.objective,
            swept_text(&c.swept)
        );
        lib.lock()
            .map_err(|_| Error::Invalid("library lock poisoned".into()))?
            .save_profile(&entry.meta.id, name, &c.params, &note)?;
        if !args.json {
            println!("saved the best set as profile {name} of {}", entry.meta.id);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"version": 1, "tune": result}))
                .map_err(|e| Error::Invalid(format!("cannot write JSON: {e}")))?
        );
    } else {
        print!("{}", report(&result, &sweeps, args.top));
    }
    // Every set failed: the sweep found nothing, which is an error (exit 1), not a result.
    if let Some(first) = all_failed(&result) {
        return Err(Error::Invalid(format!(
            "every one of the {} parameter sets failed (the first: {first})",
            result.candidates.len()
        )));
    }
    Ok(())
}

/// The first error when every candidate failed.
fn all_failed(r: &tune::TuneResult) -> Option<&str> {
    if r.candidates.is_empty() || r.candidates.iter().any(|c| c.error.is_none()) {
        return None;
    }
    r.candidates[0].error.as_deref()
}

fn swept_text(swept: &serde_json::Map<String, serde_json::Value>) -> String {
    swept
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn report(r: &TuneResult, sweeps: &[Sweep], top: usize) -> String {
    let mut out = format!(
        "tune {} on {} session{}: {} parameter sets, objective {}{}\n",
        r.strategy,
        r.sessions.len(),
        if r.sessions.len() == 1 { "" } else { "s" },
        fmt_tokens(r.candidates.len() as u64),
        r.objective,
        if r.constraints.is_empty() {
            String::new()
        } else {
            format!(
                ", constraints {}",
                r.constraints
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let mut order: Vec<&tune::Candidate> = r.candidates.iter().collect();
    // Best first: the best set, the Pareto front by cost, then the rest by cost.
    let rank = |c: &tune::Candidate| {
        if Some(c.index) == r.best {
            0
        } else if r.pareto.contains(&c.index) {
            1
        } else {
            2
        }
    };
    order.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(a.totals.cost_usd.total_cmp(&b.totals.cost_usd))
            .then(a.index.cmp(&b.index))
    });
    let mut header = vec!["#".to_string()];
    header.extend(sweeps.iter().map(|s| s.param.clone()));
    header.extend(
        [
            "COST",
            "TOTAL INPUT",
            "PEAK",
            "OVERFLOW",
            "COMPACTIONS",
            "RECALL",
            "",
            "",
        ]
        .map(String::from),
    );
    let mut rows = vec![header];
    for c in order.iter().take(top) {
        let mut row = vec![format!("{}", c.index)];
        row.extend(sweeps.iter().map(|s| {
            c.swept
                .get(&s.param)
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| v.to_string())
                })
                .unwrap_or_default()
        }));
        if let Some(e) = &c.error {
            row.extend([
                "failed".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                e.chars().take(80).collect(),
            ]);
        } else {
            let t = &c.totals;
            row.extend([
                usd(t.cost_usd),
                fmt_tokens(t.total_input_tokens),
                fmt_tokens(t.peak_context),
                fmt_tokens(t.calls_over_window),
                fmt_tokens(t.compactions),
                format!(
                    "{:.1}–{:.1} %",
                    t.recall_lower * 100.0,
                    t.recall_upper * 100.0
                ),
                if r.pareto.contains(&c.index) {
                    "pareto".into()
                } else {
                    String::new()
                },
                if Some(c.index) == r.best {
                    "BEST".into()
                } else if !c.feasible {
                    "fails constraints".into()
                } else {
                    String::new()
                },
            ]);
        }
        rows.push(row);
    }
    out.push_str(&aligned(&rows, true));
    if r.candidates.len() > top {
        out.push_str(&format!(
            "({} more; --top N or --json shows them)\n",
            fmt_tokens((r.candidates.len() - top) as u64)
        ));
    }
    match r.best {
        None if all_failed(r).is_some() => out.push_str("every parameter set failed\n"),
        None => out.push_str("no parameter set meets the constraints\n"),
        Some(b) => {
            let c = &r.candidates[b];
            out.push_str(&format!(
                "\nbest: #{b} {} — cost {}, recall {:.1} %, {} calls over the window\n",
                swept_text(&c.swept),
                usd(c.totals.cost_usd),
                c.totals.recall_lower * 100.0,
                fmt_tokens(c.totals.calls_over_window)
            ));
            if r.explanation.is_empty() {
                out.push_str("it never compacted on these sessions\n");
            } else {
                out.push_str("why each of its compactions fired:\n");
                for p in r.explanation.iter().take(40) {
                    let who = if r.sessions.len() > 1 {
                        format!("{} ", p.session)
                    } else {
                        String::new()
                    };
                    out.push_str(&format!("  {who}[{}] {}\n", p.agent, p.why));
                }
                if r.explanation.len() > 40 {
                    out.push_str(&format!(
                        "  … {} more (--json shows all)\n",
                        fmt_tokens((r.explanation.len() - 40) as u64)
                    ));
                }
            }
        }
    }
    out
}
