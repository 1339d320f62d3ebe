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
