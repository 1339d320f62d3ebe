//! `ctxlab convert <log> -o out.jsonl`: any log ctxlab reads, written in the ctxlab native format.

use std::path::PathBuf;

use ctxlab::formats::{self, native};
use ctxlab::Error;

#[derive(clap::Args)]
pub struct Args {
    /// A session log in any supported format (or a folder of them).
    log: PathBuf,
    /// Output file; for a folder holding several sessions, an output folder (one `<id>.jsonl` each).
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(args: Args) -> ctxlab::Result<()> {
    let sessions = formats::load(&args.log)?;
    let write = |s: &ctxlab::model::Session, path: &PathBuf| -> ctxlab::Result<()> {
        let f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        native::write(s, f).map_err(|e| Error::io(path, e))?;
        eprintln!(
            "{}: {} ({} calls, {} messages, {} agents)",
            path.display(),
            s.source.format,
            s.calls.len(),
            s.messages.len(),
            s.agents.len()
        );
        Ok(())
    };
    if let [one] = sessions.as_slice() {
        return write(one, &args.output);
    }
    std::fs::create_dir_all(&args.output).map_err(|e| Error::io(&args.output, e))?;
    for s in &sessions {
        let name: String =
            s.id.chars()
                .map(|c| {
                    if c.is_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
        write(s, &args.output.join(format!("{name}.jsonl")))?;
    }
    Ok(())
}
