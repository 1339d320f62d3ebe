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
    // Never overwrite a file this run read, nor one it wrote already.
    let real = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let inputs: std::collections::HashSet<PathBuf> = sessions
        .iter()
        .flat_map(|s| &s.source.files)
        .filter_map(|f| real(std::path::Path::new(f)))
        .collect();
    if let [one] = sessions.as_slice() {
        if real(&args.output).is_some_and(|o| inputs.contains(&o)) {
            return Err(Error::Invalid(format!(
                "{}: is the log being converted; choose another output file",
                args.output.display()
            )));
        }
        return write(one, &args.output);
    }
    let mut written = std::collections::HashSet::new();
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
        // Two sessions with one id, or an input already named `<id>.jsonl` in the output
        // folder: the next free `<id>-N.jsonl`.
        let mut path = args.output.join(format!("{name}.jsonl"));
        let mut n = 1;
        while written.contains(&path) || real(&path).is_some_and(|p| inputs.contains(&p)) {
            n += 1;
            path = args.output.join(format!("{name}-{n}.jsonl"));
        }
        write(s, &path)?;
        written.insert(path);
    }
    Ok(())
}
