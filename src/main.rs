//! The `ctxlab` command line: a thin layer over the library. Each subcommand lives in
//! `src/cli/<name>.rs` and only parses arguments, calls the library and prints.

mod cli;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ctxlab",
    version,
    about = "Replay LLM agent sessions through context-compaction strategies"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show what a session log holds: agents, calls, recorded usage, compactions, estimates.
    Inspect(cli::inspect::Args),
    /// Replay a session through one strategy and print its metrics.
    Replay(cli::replay::Args),
    /// List the strategy plugins found, and why any were refused.
    Plugins(cli::plugins::Args),
    /// Replay one session through several strategies side by side, with the baselines.
    Compare(cli::compare::Args),
    /// Sweep a strategy's parameters over logs: Pareto front of cost vs recall, best set.
    Tune(cli::tune::Args),
    /// Write a strategy's parameters as its target system's config file.
    Export(cli::export::Args),
    /// The library of sessions, runs and profiles (SQLite).
    Library(cli::library::Args),
    /// Write a session log, in any format ctxlab reads, as ctxlab native JSONL.
    Convert(cli::convert::Args),
    /// Follow a log while its agent writes it: the summary, then each new call as it is appended.
    Watch(cli::watch::Args),
    /// The model table (windows, prices): list it, find the models of logs it does not price,
    /// import a LiteLLM price list into your own models.toml.
    Models(cli::models::Args),
    /// Record what an agent sends: a local proxy between the agent and its provider that writes
    /// every request and response as an HTTP capture (docs/capture.md).
    Capture(cli::capture::Args),
}

/// `println!` panics when standard output fails. A reader that closed the pipe
/// (`ctxlab inspect DIR | head -1`) ends the command quietly; any other failure (a full disk)
/// is a one-line error and exit 1, never a panic message.
fn stdout_errors_are_not_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(err) = info
            .payload_as_str()
            .and_then(|m| m.strip_prefix("failed printing to stdout: "))
        {
            if err.contains("(os error 32)") {
                std::process::exit(0);
            }
            eprintln!("ctxlab: cannot write to standard output: {err}");
            std::process::exit(1);
        }
        default(info)
    }));
}

fn main() {
    // `--isolate`: this executable is also the runner that hosts an untrusted plugin.
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if argv.get(1).map(String::as_str) == Some(ctxlab::plugin_host::isolate::RUNNER_ARG) {
        std::process::exit(ctxlab::plugin_host::isolate::serve(&argv[2..]));
    }
    stdout_errors_are_not_panics();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Inspect(a) => cli::inspect::run(a),
        Cmd::Replay(a) => cli::replay::run(a),
        Cmd::Plugins(a) => cli::plugins::run(a),
        Cmd::Compare(a) => cli::compare::run(a),
        Cmd::Tune(a) => cli::tune::run(a),
        Cmd::Export(a) => cli::export::run(a),
        Cmd::Library(a) => cli::library::run(a),
        Cmd::Convert(a) => cli::convert::run(a),
        Cmd::Watch(a) => cli::watch::run(a),
        Cmd::Models(a) => cli::models::run(a),
        Cmd::Capture(a) => cli::capture::run(a),
    };
    if let Err(e) = result {
        eprintln!("ctxlab: {e}");
        std::process::exit(1);
    }
}
