//! `ctxlab compare`: several strategies side by side on one session, with the baselines; what
//! each kept at a call; charts and the HTML report.

use clap::CommandFactory;
use ctxlab::chart::{self, ChartOptions, Format};
use ctxlab::compare::{self, Comparison, KeptComparison, Settings, StrategyRun};
use ctxlab::fmt::fmt_tokens;
use ctxlab::model::Session;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{CacheTtl, KeptState};
use ctxlab::report::{delta, usd};
use ctxlab::store::Library;
use ctxlab::{Error, Result};
use std::path::{Path, PathBuf};

/// How to replay: shared by `compare` and `tune`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayFlags {
    /// Context window in tokens (default: the log model's, from the model table).
    #[arg(long)]
    window: Option<u64>,
    /// Maximum output tokens (default: the model's; 0 with --window alone).
    #[arg(long)]
    max_output: Option<u64>,
    /// Tokens the strategy keeps free besides the output.
    #[arg(long, default_value_t = 0)]
    reserve: u64,
    /// Token counter: heuristic, chars4, o200k, cl100k, or auto (o200k for logs of OpenAI
    /// and Grok models, heuristic for the others).
    #[arg(long, default_value = ctxlab::tokens::AUTO_COUNTER)]
    counter: String,
    /// Model table (windows and prices) instead of the user's or the built-in one.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    /// Prompt-cache lifetime: 5m or 1h.
    #[arg(long, default_value = "5m")]
    cache_ttl: String,
    /// Take counts as they are instead of calibrating them on the log's recorded usage.
    #[arg(long)]
    no_calibration: bool,
    /// Run each plugin strategy in a child process, with a time and a memory limit: a plugin
    /// that aborts, exits, crashes or loops fails its own run, not ctxlab (slower; for plugins
    /// you do not trust, docs/plugins.md "Trust").
    #[arg(long)]
    isolate: bool,
    /// With --isolate: seconds to wait for any one answer of the plugin before killing it.
    #[arg(long, value_name = "SECS", requires = "isolate")]
    isolate_timeout: Option<f64>,
    /// With --isolate: the plugin process's memory limit, in MiB.
    #[arg(long, value_name = "MIB", requires = "isolate")]
    isolate_memory: Option<u64>,
}

impl ReplayFlags {
    /// The plugins found, run in child processes with `--isolate`.
    pub fn registry(&self) -> Result<Registry> {
        let mut registry = Registry::discover();
        if self.isolate {
            let exe = std::env::current_exe().map_err(|e| {
                Error::Invalid(format!("--isolate: cannot find ctxlab itself: {e}"))
            })?;
            let mut iso = ctxlab::plugin_host::Isolation::new(exe);
            if let Some(secs) = self.isolate_timeout {
                iso.timeout = std::time::Duration::try_from_secs_f64(secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        Error::Invalid(format!(
                            "--isolate-timeout {secs}: expected a number of seconds above 0"
                        ))
                    })?;
            }
            if let Some(mib) = self.isolate_memory {
                iso.memory_bytes = mib.saturating_mul(1 << 20);
            }
            registry.isolate(iso);
        }
        Ok(registry)
    }

    pub fn settings(&self) -> Result<Settings> {
        Ok(Settings {
            counter: self.counter.clone(),
            window: self.window,
            max_output: self.max_output,
            reserve: self.reserve,
            pricing: self.pricing.clone(),
            cache_ttl: match self.cache_ttl.as_str() {
                "5m" => CacheTtl::FiveMinutes,
                "1h" => CacheTtl::OneHour,
                other => {
                    return Err(Error::Invalid(format!(
                        "--cache-ttl {other}: expected 5m or 1h"
                    )))
                }
            },
            calibrate: !self.no_calibration,
        })
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// A session log.
    log: PathBuf,
    /// A strategy id (`ctxlab plugins`); repeatable. The --param options after it are its own.
    #[arg(long, short)]
    strategy: Vec<String>,
    /// A parameter of the --strategy before it, `name=value` (value as JSON, else as text).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Every installed strategy with its defaults (besides any --strategy given).
    #[arg(long)]
    all: bool,
    /// Which session of the log, by id, when it holds several.
    #[arg(long)]
    session: Option<String>,
    #[command(flatten)]
    replay: ReplayFlags,
    /// Show what each run's context held at this call (index from 0, as in `inspect`).
    #[arg(long, value_name = "CALL")]
    kept_at: Option<usize>,
    /// With --kept-at: list every message, not only those the runs disagree on.
    #[arg(long)]
    all_rows: bool,
    /// Write the charts (small multiples) as PNG.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Write the charts as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write the self-contained HTML report.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Open the HTML report in the browser once written.
    #[arg(long, requires = "html")]
    open: bool,
    /// Store the session and every run in the library.
    #[arg(long)]
    save: bool,
    /// The library file (default: $CTXLAB_DB, else the user data folder).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Print the comparison as JSON (without the per-call series).
    #[arg(long)]
    json: bool,
}

/// Each --strategy with the --param options that follow it on the command line.
fn strategy_params(args: &Args) -> Vec<(String, Vec<String>)> {
    let m = crate::Cli::command().get_matches_from(std::env::args_os());
    let Some(sub) = m.subcommand_matches("compare") else {
        return args
            .strategy
            .iter()
            .map(|s| (s.clone(), Vec::new()))
            .collect();
    };
    let at =
        |id: &str| -> Vec<usize> { sub.indices_of(id).map(|i| i.collect()).unwrap_or_default() };
    let (s_at, p_at) = (at("strategy"), at("param"));
    let mut out: Vec<(String, Vec<String>)> = args
        .strategy
        .iter()
        .map(|s| (s.clone(), Vec::new()))
        .collect();
    for (p, &pi) in args.param.iter().zip(&p_at) {
        if let Some(k) = s_at.iter().rposition(|&si| si < pi) {
            out[k].1.push(p.clone());
        }
    }
    out
}

pub fn load_one(log: &Path, id: Option<&str>) -> Result<Session> {
    let mut sessions = ctxlab::formats::load(log)?;
    match id {
        Some(id) => {
            let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
            let i = sessions.iter().position(|s| s.id == id).ok_or_else(|| {
                Error::Invalid(format!(
                    "no session {id} in {}; sessions: {}",
                    log.display(),
                    ids.join(", ")
                ))
            })?;
            Ok(sessions.swap_remove(i))
        }
        None if sessions.len() == 1 => Ok(sessions.remove(0)),
        None => Err(Error::Invalid(format!(
            "{} holds {} sessions; pick one with --session ID: {}",
            log.display(),
            sessions.len(),
            sessions
                .iter()
                .map(|s| format!("{} ({})", s.id, ctxlab::naming::display_name(s)))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

pub fn run(args: Args) -> Result<()> {
    let registry = args.replay.registry()?;
    if args.param.len() > 0 && args.strategy.is_empty() {
        return Err(Error::Invalid(
            "--param needs a --strategy before it".into(),
        ));
    }
    let mut strategies = Vec::new();
    for (id, params) in strategy_params(&args) {
        let params = compare::parse_params(&params, None)?;
        strategies.push(StrategyRun::new(compare::strategy(&registry, &id, params)?));
    }
    if args.all {
        for e in registry.strategies() {
            strategies.push(StrategyRun::new(ctxlab::replay::StrategySpec::Plugin {
                entry: e.clone(),
                params: serde_json::json!({}),
            }));
        }
    }
    let session = load_one(&args.log, args.session.as_deref())?;
    let opts = args.replay.settings()?.options(&session)?;
    let progress = super::progress(!args.json);
    let c = compare::run(&session, &strategies, &opts, Some(&progress))?;
    let kept = match args.kept_at {
        Some(call) => Some(compare::kept_at(&session, &strategies, call, &opts)?),
        None => None,
    };
    let title = format!(
        "{} — {} runs",
        ctxlab::naming::display_name(&session),
        c.runs.len()
    );
    let runs: Vec<(&str, &ctxlab::replay::Run)> =
        c.runs.iter().map(|r| (r.label.as_str(), &r.run)).collect();
    for (path, format) in [(&args.png, Format::Png), (&args.svg, Format::Svg)] {
        if let Some(p) = path {
            let bytes = chart::comparison_chart(&runs, &title, format, &ChartOptions::default())?;
            chart::write(p, &bytes)?;
            if !args.json {
                println!("chart written to {}", p.display());
            }
        }
    }
    if let Some(p) = &args.html {
        let prepared = ctxlab::replay::Prepared::counts(&session, opts.counter.as_ref());
        let comp = ctxlab::replay::composition(&session, &prepared, opts.counter.as_ref())?;
        let text = ctxlab::report::html(&c, &registry, &title, Some(&comp))?;
        std::fs::write(p, text).map_err(|e| Error::io(p, e))?;
        if !args.json {
            println!("report written to {}", p.display());
        }
        if args.open {
            open(p);
        }
    }
    if args.save {
        let mut lib = Library::open_default(args.db.as_deref())?;
        let (sid, _) = lib.import(&session)?;
        for r in &c.runs {
            lib.save_run(sid, &r.label, &r.run)?;
        }
        if !args.json {
            println!(
                "saved {} runs of session {sid} to {}{}",
                c.runs.len(),
                lib.path().display(),
                if c.failed.is_empty() {
                    String::new()
                } else {
                    format!(" (not the {} that failed)", c.failed.len())
                }
            );
        }
    }
    // Everything that ran is shown, written and saved; then the exit code says some did not.
    let failed = (!c.failed.is_empty()).then(|| {
        Error::Invalid(format!(
            "{} of {} strategies failed: {}",
            c.failed.len(),
            c.failed.len() + c.runs.len(),
            c.failed
                .iter()
                .map(|f| f.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    });
    if args.json {
        let mut c = c;
        for r in &mut c.runs {
            r.run.samples.clear();
        }
        let doc = serde_json::json!({ "version": 1, "comparison": c, "kept_at": kept });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc)
                .map_err(|e| Error::Invalid(format!("cannot write JSON: {e}")))?
        );
        return failed.map_or(Ok(()), Err);
    }
    print!("{}", table(&c));
    if let Some(k) = &kept {
        print!("{}", kept_table(k, args.all_rows));
    }
    failed.map_or(Ok(()), Err)
}

/// Opens a file in the desktop's browser; says where it is when that is not possible.
fn open(path: &Path) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let ok = std::process::Command::new(opener)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "could not open a browser here; open {} yourself",
            path.display()
        );
    }
}

/// Columns padded to their widest cell: figures right-aligned, text left-aligned. The first row
/// is the header; `text_last` keeps the last column unpadded (free text).
pub fn aligned(rows: &[Vec<String>], text_last: bool) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let figure = |c: &str| {
        !c.is_empty()
            && c.chars().any(|ch| ch.is_ascii_digit())
            && c.chars()
                .all(|ch| ch.is_ascii_digit() || ",.$% –−+±#ptx".contains(ch))
    };
    let w: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let right: Vec<bool> = (0..n)
        .map(|i| {
            let cells: Vec<&String> = rows.iter().skip(1).filter_map(|r| r.get(i)).collect();
            cells.iter().any(|c| !c.is_empty())
                && cells
                    .iter()
                    .all(|c| c.is_empty() || figure(c) || c.as_str() == "–")
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = w[i] - c.chars().count();
            if text_last && i + 1 == n {
                line.push_str(c);
            } else if right[i] {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn table(c: &Comparison) -> String {
    let mut out = format!("session {} — {} runs\n", c.name, c.runs.len());
    if c.name != c.session {
        out.push_str(&format!("id {}\n", c.session));
    }
    match c.fidelity {
        _ if c.runs.iter().any(|r| r.run.estimate_only) => out.push_str(&format!(
            "fidelity: {}\n",
            ctxlab::model::ESTIMATE_ONLY_NOTE
        )),
        Some(f) => out.push_str(&format!(
            "fidelity: calibrated on {} calls, estimate error mean {:.1} %, p95 {:.1} %\n",
            fmt_tokens(f.samples as u64),
            f.mean_ape,
            f.p95_ape
        )),
        None => {
            out.push_str("fidelity: unknown (the log records no usage; counts are uncalibrated)\n")
        }
    }
    let mut rows = vec![vec![
        "RUN".to_string(),
        "TOTAL INPUT".into(),
        format!("vs {}", c.baseline),
        "PEAK".into(),
        "OVER WINDOW".into(),
        "COMPACTIONS".into(),
        "LOST".into(),
        "COST".into(),
        format!("vs {}", c.baseline),
        "RECALL".into(),
    ]];
    for r in &c.runs {
        let m = &r.run.metrics;
        rows.push(vec![
            r.label.clone(),
            fmt_tokens(m.total_input_tokens),
            delta(r.relative.total_input_tokens),
            fmt_tokens(m.peak_context),
            fmt_tokens(m.calls_over_window),
            fmt_tokens(m.compactions.values().map(|c| c.count).sum()),
            fmt_tokens(m.lost_tokens),
            usd(m.cost.total_usd),
            delta(r.relative.cost_usd),
            match (m.recall.lower, m.recall.upper) {
                (Some(l), Some(u)) => format!("{:.1}–{:.1} %", l * 100.0, u * 100.0),
                _ => "–".into(),
            },
        ]);
    }
    out.push_str(&aligned(&rows, false));
    for a in &c.budget_assumed {
        out.push_str(&format!("budget: {a}\n"));
    }
    if let Some(n) = &c.cost_notice {
        out.push_str(&format!("note: {n}\n"));
    }
    for f in &c.failed {
        out.push_str(&format!("FAILED: {f}\n"));
    }
    out
}

fn cell(c: &Option<compare::KeptCell>) -> String {
    match c {
        None => "–".into(),
        Some(k) => match k.state {
            KeptState::Verbatim => "kept".into(),
            KeptState::Edited => "edited".into(),
            KeptState::Summary if k.replaces > 0 => format!("summary of {}", k.replaces),
            KeptState::Summary => "summary".into(),
            KeptState::Dropped => "dropped now".into(),
        },
    }
}

fn kept_table(k: &KeptComparison, all_rows: bool) -> String {
    let mut out = format!(
        "\nwhat each run sent at call {} (agent {}); – = no longer in its context\n",
        fmt_tokens(k.call as u64),
        k.agent
    );
    for (i, l) in k.labels.iter().enumerate() {
        out.push_str(&format!("  [{}] {l}\n", i + 1));
    }
    let mut rows = vec![{
        let mut h = vec!["MESSAGE".to_string(), "ROLE".into()];
        h.extend((1..=k.labels.len()).map(|i| format!("[{i}]")));
        h.push("TEXT".into());
        h
    }];
    let mut tokens = vec!["tokens sent".to_string(), String::new()];
    tokens.extend(k.input_tokens.iter().map(|t| fmt_tokens(*t)));
    tokens.push(String::new());
    rows.push(tokens);
    let mut hidden = 0;
    for r in &k.rows {
        let cells: Vec<String> = r.cells.iter().map(cell).collect();
        if !all_rows && cells.windows(2).all(|w| w[0] == w[1]) {
            hidden += 1;
            continue;
        }
        let mut row = vec![
            r.message.map_or("—".into(), |m| format!("#{m}")),
            r.role.as_str().to_string(),
        ];
        row.extend(cells);
        row.push(r.preview.chars().take(60).collect());
        rows.push(row);
    }
    out.push_str(&aligned(&rows, true));
    if hidden > 0 {
        out.push_str(&format!(
            "({} messages every run treated alike not shown; --all-rows shows them)\n",
            fmt_tokens(hidden)
        ));
    }
    out
}
