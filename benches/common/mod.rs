//! Shared by the bench binaries: where results go, peak memory, the Claude Code corpus generator.
//!
//! Every bench is a plain `harness = false` binary that prints its figures and writes a Markdown
//! fragment to `target/bench-results/<bench>.md`; `scripts/bench.sh` runs them all and joins the
//! fragments into docs/benchmarks.md.

// Each bench binary compiles this module and uses a different part of it.
#![allow(dead_code)]

pub mod corpus;
pub mod session;

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Loads the release shared library `<prefix><lib><suffix>` (e.g. `ctxlab_plugin_fuseraft`)
/// from the cargo target folder the bench binary runs from, through the plugin registry (the
/// real plugin path). Panics with what to run when it is not built.
pub fn load_plugin(reg: &mut ctxlab::plugin_host::Registry, lib: &str) {
    let exe = std::env::current_exe().expect("bench binary path");
    let dir =
        ctxlab::plugin_host::checkout_dir(&exe).expect("bench binary inside a cargo target folder");
    let path = dir.join(format!(
        "{}{lib}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --release --workspace` first (`make bench` does it)",
        path.display()
    );
    reg.load_path(&path).unwrap_or_else(|r| panic!("{r}"));
}

/// `target/` of the workspace (benches run with the package root as working directory).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Writes this bench's Markdown fragment for docs/benchmarks.md.
pub fn write_fragment(bench: &str, markdown: &str) {
    let dir = target_dir().join("bench-results");
    std::fs::create_dir_all(&dir).expect("create target/bench-results");
    let path = dir.join(format!("{bench}.md"));
    std::fs::write(&path, markdown).expect("write the bench fragment");
    eprintln!("wrote {}", path.display());
}

/// Peak resident memory of this process so far (Linux `VmHWM`), in bytes.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs `f` `runs` times and returns the fastest run with its result: the least disturbed by
/// the other processes on the shared machine.
pub fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best: Option<(Duration, T)> = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        if best.as_ref().map_or(true, |(b, _)| took < *b) {
            best = Some((took, out));
        }
    }
    best.expect("at least one run")
}

/// CPU time the calling thread has run so far, in seconds (Linux schedstat), or `None` where the
/// kernel does not say: on the shared machine, wall time also counts other processes.
pub fn thread_cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Machine facts printed with every result, since figures mean little without them.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}
