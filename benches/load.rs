//! Load + count throughput on a generated Claude Code corpus, and peak memory per file size,
//! beside ccusage reading the same files.
//!
//! Each measurement runs in a fresh child process (this binary with `--child`) so that its peak
//! resident memory (`VmHWM`) belongs to that file alone. One thread, release build.
//!
//! Sizes: `CTXLAB_BENCH_SIZES_MB` (default `100,500`). ccusage: `CCUSAGE` names its binary;
//! otherwise `target/bench-tools/node_modules/.bin/ccusage` (scripts/bench.sh installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{best_of, machine, mb, peak_rss, target_dir, write_fragment};
use ctxlab::fmt::fmt_tokens;
use ctxlab::tokens::TokenCounter;
use serde::{Deserialize, Serialize};

/// What one child measured on one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Measured {
    bytes: u64,
    load_secs: f64,
    count_secs: f64,
    sessions: usize,
    messages: usize,
    calls: usize,
    /// Heuristic tokens of every message.
    tokens: u64,
    /// Bytes of text the counter read.
    text_bytes: u64,
    usage: Totals,
    peak_rss: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Totals {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

fn child(path: &Path) {
    let bytes = std::fs::metadata(path).expect("corpus file").len();
    let start = Instant::now();
    let sessions = ctxlab::formats::load(path).unwrap_or_else(|e| panic!("load failed: {e}"));
    let load_secs = start.elapsed().as_secs_f64();

    let counter = ctxlab::tokens::Heuristic;
    let start = Instant::now();
    let mut tokens = 0;
    let mut text_bytes = 0;
    for m in sessions.iter().flat_map(|s| &s.messages) {
        tokens += counter.count_message(m);
        text_bytes += part_bytes(&m.parts);
    }
    let count_secs = start.elapsed().as_secs_f64();

    let mut usage = Totals::default();
    for u in sessions
        .iter()
        .flat_map(|s| &s.calls)
        .filter_map(|c| c.usage)
    {
        usage.input += u.input;
        usage.output += u.output;
        usage.cache_read += u.cache_read;
        usage.cache_write += u.cache_write();
    }
    let m = Measured {
        bytes,
        load_secs,
        count_secs,
        sessions: sessions.len(),
        messages: sessions.iter().map(|s| s.messages.len()).sum(),
        calls: sessions.iter().map(|s| s.calls.len()).sum(),
        tokens,
        text_bytes,
        usage,
        peak_rss: peak_rss().unwrap_or(0),
    };
    println!("{}", serde_json::to_string(&m).expect("serializable"));
}

fn part_bytes(parts: &[ctxlab::model::Part]) -> u64 {
    use ctxlab::model::Part;
    parts
        .iter()
        .map(|p| match p {
            Part::Text { text } | Part::Thinking { text } => text.len(),
            Part::ToolCall { name, args, .. } => name.len() + args.len(),
            Part::ToolResult { content, .. } => content.len(),
            Part::Image { .. } => 0,
        } as u64)
        .sum()
}

fn run_child(path: &Path) -> Measured {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .arg("--child")
        .arg(path)
        .output()
        .expect("run the child");
    assert!(
        out.status.success(),
        "child failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("child prints one JSON line")
}

struct Peer {
    secs: f64,
    peak_rss: Option<u64>,
    usage: Option<Totals>,
}

fn ccusage_bin() -> Option<PathBuf> {
    let path = std::env::var_os("CCUSAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("bench-tools/node_modules/.bin/ccusage"));
    path.exists().then_some(path)
}

/// ccusage's daily report over the corpus dir, single-threaded and offline (no pricing fetch),
/// under /usr/bin/time for its peak memory.
fn run_ccusage(bin: &Path, config_dir: &Path) -> Result<Peer, String> {
    let start = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "ctxlab-maxrss-kb %M"])
        .arg(bin)
        .args([
            "claude",
            "daily",
            "--json",
            "--offline",
            "--single-thread",
            "--timezone",
            "UTC",
        ])
        .env("CLAUDE_CONFIG_DIR", config_dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("ccusage failed: {stderr}"));
    }
    let peak_rss = stderr
        .lines()
        .find_map(|l| l.strip_prefix("ctxlab-maxrss-kb "))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024);
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("ccusage output: {e}"))?;
    let totals = &json["totals"];
    let get = |k: &str| totals[k].as_u64();
    let usage = (|| {
        Some(Totals {
            input: get("inputTokens")?,
            output: get("outputTokens")?,
            cache_read: get("cacheReadTokens")?,
            cache_write: get("cacheCreationTokens")?,
        })
    })();
    Ok(Peer {
        secs,
        peak_rss,
        usage,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(Path::new(&args[i + 1]));
        return;
    }
    let sizes: Vec<u64> = std::env::var("CTXLAB_BENCH_SIZES_MB")
        .unwrap_or_else(|_| "100,500".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("CTXLAB_BENCH_SIZES_MB: sizes in MB, comma-separated")
        })
        .collect();
    let ccusage = ccusage_bin();
    let ccusage_version = ccusage.as_ref().and_then(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });

    let mut rows = Vec::new();
    for size in sizes {
        let dir = target_dir().join(format!("bench-corpus/claude-{size}mb"));
        let path = common::corpus::ensure(&dir, size * 1_000_000).expect("generate the corpus");
        // Warm the page cache so both tools read from memory, not disk.
        let _ = std::fs::read(&path);
        let (_, m) = best_of(2, || run_child(&path));
        let secs = m.load_secs + m.count_secs;
        println!(
            "load+count {:>5.0} MB: ctxlab {:.2} s = {:.0} MB/s (load {:.2} s, count {:.3} s = {:.0} MB/s of text), peak RSS {:.0} MB; {} calls, {} messages, {} heuristic tokens",
            mb(m.bytes),
            secs,
            mb(m.bytes) / secs,
            m.load_secs,
            m.count_secs,
            mb(m.text_bytes) / m.count_secs,
            mb(m.peak_rss),
            m.calls,
            m.messages,
            m.tokens
        );
        let peer = ccusage.as_ref().map(|bin| {
            let (_, p) = best_of(2, || run_ccusage(bin, &dir));
            p
        });
        match &peer {
            Some(Ok(p)) => println!(
                "           ccusage {:.2} s = {:.0} MB/s, peak RSS {}; usage totals {}",
                p.secs,
                mb(m.bytes) / p.secs,
                p.peak_rss
                    .map_or("?".into(), |b| format!("{:.0} MB", mb(b))),
                agreement(&m.usage, p.usage.as_ref())
            ),
            Some(Err(e)) => println!("           ccusage: {e}"),
            None => {
                println!("           ccusage: not installed (run scripts/bench.sh, or set CCUSAGE)")
            }
        }
        rows.push((m, peer));
    }
    write_fragment("load", &markdown(&rows, ccusage_version.as_deref()));
}

fn agreement(ours: &Totals, theirs: Option<&Totals>) -> &'static str {
    match theirs {
        Some(t) if t == ours => "identical",
        Some(_) => "DIFFER",
        None => "not reported",
    }
}

fn markdown(
    rows: &[(Measured, Option<Result<Peer, String>>)],
    ccusage_version: Option<&str>,
) -> String {
    let mut s = String::new();
    s.push_str("## Load + count (heuristic) on a Claude Code corpus\n\n");
    s.push_str(&format!(
        "Generated transcript (benches/common/corpus.rs), page cache warm, best of 2 runs, one thread, \
         release build; {}. ctxlab = `formats::load` (parse every line into the session model) + \
         heuristic count of every message, in a fresh process per file so peak RSS (`VmHWM`) is \
         that file's. Peer: {} `claude daily --json --offline --single-thread` on the same \
         file (`CLAUDE_CONFIG_DIR`), which only sums usage and keeps no message text. Target \
         (DESIGN.md §9): ≥ 500 MB/s, peak memory independent of file size.\n\n",
        machine(),
        ccusage_version.unwrap_or("ccusage (not installed)")
    ));
    s.push_str("| file | ctxlab load + count | MB/s | of which count (MB/s of text) | peak RSS | ccusage | MB/s | peak RSS | usage totals |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (m, peer) in rows {
        let secs = m.load_secs + m.count_secs;
        let (p_secs, p_mbs, p_rss, agree) = match peer {
            Some(Ok(p)) => (
                format!("{:.2} s", p.secs),
                format!("{:.0}", mb(m.bytes) / p.secs),
                p.peak_rss
                    .map_or("?".into(), |b| format!("{:.0} MB", mb(b))),
                agreement(&m.usage, p.usage.as_ref()).to_string(),
            ),
            Some(Err(e)) => (
                "failed".into(),
                "-".into(),
                "-".into(),
                e.lines().next().unwrap_or("").to_string(),
            ),
            None => ("not installed".into(), "-".into(), "-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| {:.0} MB | {:.2} s | **{:.0}** | {:.3} s ({:.0}) | {:.0} MB | {} | {} | {} | {} |\n",
            mb(m.bytes),
            secs,
            mb(m.bytes) / secs,
            m.count_secs,
            mb(m.text_bytes) / m.count_secs,
            mb(m.peak_rss),
            p_secs,
            p_mbs,
            p_rss,
            agree
        ));
    }
    if let Some((m, _)) = rows.last() {
        s.push_str(&format!(
            "\nLargest file: {} calls, {} messages, {} heuristic tokens.\n",
            fmt_tokens(m.calls as u64),
            fmt_tokens(m.messages as u64),
            fmt_tokens(m.tokens)
        ));
    }
    s
}
