//! What the app does between its start and the first chart: the logs named on the command line
//! are read on a thread of their own while the window and the web view start (the two overlap;
//! the UI asks for them with `startup` and shows the first one's Session), and, with
//! `CTXLAB_BENCH_STARTUP=1`, the time each step took since the process started, for the startup
//! bench (benches/app_startup.rs): the UI reports its first paint and the first drawn chart with
//! `startup_mark`, the app prints one line per step on stderr and exits after the last.

use crate::error::AppResult;
use crate::view::OpenResult;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

static STARTED: OnceLock<Instant> = OnceLock::new();

/// Call first thing in `main`: the bench's clock starts here.
pub fn begin() {
    STARTED.get_or_init(Instant::now);
}

/// True when the startup bench asked for the steps' times (`CTXLAB_BENCH_STARTUP=1`).
pub fn benching() -> bool {
    std::env::var_os("CTXLAB_BENCH_STARTUP").is_some_and(|v| v == "1")
}

/// Milliseconds since `begin` (or since the first call, when `begin` was not called).
pub fn elapsed_ms() -> f64 {
    STARTED.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// Prints `startup <step> <ms>` on stderr when benching.
pub fn mark(step: &str) {
    if benching() {
        eprintln!("startup {step} {:.1}", elapsed_ms());
    }
}

/// The logs named on the command line and, once read, what reading them gave.
#[derive(Default)]
pub struct Startup {
    pub paths: Vec<PathBuf>,
    opened: Mutex<Option<OpenResult>>,
    done: Condvar,
}

impl Startup {
    /// With no paths, there is nothing to wait for.
    pub fn new(paths: Vec<PathBuf>) -> Startup {
        Startup {
            opened: Mutex::new(paths.is_empty().then(OpenResult::default)),
            paths,
            done: Condvar::new(),
        }
    }

    /// What reading the command line's logs gave (called once, by the thread that read them).
    pub fn finish(&self, opened: OpenResult) {
        *self.opened.lock().unwrap_or_else(|e| e.into_inner()) = Some(opened);
        self.done.notify_all();
    }

    /// Waits until the command line's logs are read. Blocks: call off the UI thread.
    pub fn wait(&self) -> AppResult<OpenResult> {
        let mut g = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        while g.is_none() {
            g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        Ok(g.clone().unwrap_or_default())
    }
}
