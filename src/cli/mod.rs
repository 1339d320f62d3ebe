//! One module per subcommand.
pub mod capture;
pub mod compare;
pub mod convert;
pub mod export;
pub mod inspect;
pub mod library;
pub mod models;
pub mod plugins;
pub mod replay;
pub mod tune;
pub mod watch;

/// The "replayed N of M" progress line, drawn in place on stderr — only when stderr is a terminal
/// and the output is for a person (`enabled`). On a pipe or a file the `\r` redraws would pile up
/// on one line (`replayed 1 of 8replayed 2 of 8…`), so nothing is written there. The std
/// `IsTerminal` check is all this needs: the line is one counter, no bar, rate or ETA, so a
/// progress crate would add a dependency without adding behaviour.
pub fn progress(enabled: bool) -> impl Fn(usize, usize) + Sync {
    use std::io::IsTerminal;
    let on = enabled && std::io::stderr().is_terminal();
    move |done: usize, total: usize| {
        if on {
            eprint!("\rreplayed {done} of {total}");
            if done == total {
                eprintln!();
            }
        }
    }
}

/// Progress for scripts (`--json`): one JSON line on stderr, `{"progress":{"done":N,"total":M}}`,
/// at each new whole percent (100 at the end), whatever stderr is (stdout keeps the one document).
pub fn json_progress() -> impl Fn(usize, usize) + Sync {
    let last = std::sync::Mutex::new(None::<usize>);
    move |done: usize, total: usize| {
        let pct = if total == 0 { 100 } else { done * 100 / total };
        let Ok(mut last) = last.lock() else { return };
        // Threads report out of order: only a higher percent is written.
        if last.is_some_and(|l| pct <= l) {
            return;
        }
        *last = Some(pct);
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{{\"progress\":{{\"done\":{done},\"total\":{total}}}}}"
        );
    }
}
