//! The run pool compare and tune share: independent replays of one prepared session spread over
//! the cores, results in job order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `jobs` on up to `threads` threads; results in job order whatever finished first.
/// `done` is called after each job with (jobs done, jobs in all).
pub(crate) fn parallel<T: Send, R: Send>(
    jobs: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
    done: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Vec<R> {
    let n = jobs.len();
    let queue: Vec<Mutex<Option<T>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let (next, finished) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let Some(job) = queue[i].lock().ok().and_then(|mut j| j.take()) else {
                    continue;
                };
                let r = work(job);
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(r);
                }
                let k = finished.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(f) = done {
                    f(k, n);
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// Threads worth using: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
