//! `ctxlab export`: a strategy's parameters as its target system's config file, through the
//! plugin's exporter, checked by importing it back before it is written.

use ctxlab::compare;
use ctxlab::plugin_host::Registry;
use ctxlab::store::Library;
use ctxlab::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The strategy id (`ctxlab plugins`).
    #[arg(long, short)]
    strategy: String,
    /// A parameter, `name=value`; repeatable, wins over --params and --profile.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Parameters from a TOML file of `name = value` lines.
    #[arg(long = "params", value_name = "FILE")]
    params_file: Option<PathBuf>,
    /// Parameters from a profile in the library (`ctxlab tune --save-profile`).
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// The config format (default: the strategy's first; `ctxlab plugins info ID` lists them).
    #[arg(long)]
    format: Option<String>,
    /// Write here instead of printing.
    #[arg(long, short, conflicts_with = "into")]
    output: Option<PathBuf>,
    /// Merge into this existing config file (YAML), keeping its other keys; the file's old
    /// content is saved beside it as FILE.bak. Default format: the strategy's every-value one.
    #[arg(long, value_name = "FILE")]
    into: Option<PathBuf>,
    /// The library file (default: $CTXLAB_DB, else the user data folder).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let registry = Registry::discover();
    let entry = registry.require(&args.strategy)?;
    let mut params = serde_json::Map::new();
    if let Some(name) = &args.profile {
        let lib = Library::open_default(args.db.as_deref())?;
        // The library refuses a profile whose params are not an object: never the defaults
        // in its place.
        if let serde_json::Value::Object(o) = lib.profile(&args.strategy, name)?.params {
            params.extend(o);
        }
    }
    if let serde_json::Value::Object(o) =
        compare::parse_params(&args.param, args.params_file.as_deref())?
    {
        params.extend(o);
    }
    let params = serde_json::Value::Object(params);
    if let Some(path) = &args.into {
        let existing = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let merged = ctxlab::export::merge_into(entry, &params, args.format.as_deref(), &existing)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        let backup = path.with_extension(match path.extension() {
            Some(x) => format!("{}.bak", x.to_string_lossy()),
            None => "bak".into(),
        });
        std::fs::write(&backup, &existing).map_err(|e| Error::io(&backup, e))?;
        std::fs::write(path, &merged.text).map_err(|e| Error::io(path, e))?;
        eprintln!(
            "merged into {} (its other keys kept; comments are not; the old file is {})",
            path.display(),
            backup.display()
        );
        for k in &merged.kept_from_file {
            eprintln!("  still set by the file, not by the export: {k}");
        }
        return Ok(());
    }
    let text = ctxlab::export::config(entry, &params, args.format.as_deref())?;
    match &args.output {
        Some(p) => {
            std::fs::write(p, &text).map_err(|e| Error::io(p, e))?;
            eprintln!(
                "wrote {} (checked: it imports back to the same parameters)",
                p.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}
