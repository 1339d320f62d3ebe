//! `ctxlab plugins [list|info <id>] [--json]`: what discovery found, what it refused and why,
//! and one strategy's parameters.

use ctxlab::fmt::fmt_tokens;
use ctxlab::plugin_host::{Origin, Registry, StrategyMeta};
use ctxlab_plugin_api::ParamSpec;
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Print JSON for scripts instead of tables.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// List every strategy found, the libraries refused and the places searched (the default).
    List,
    /// Show one strategy: its parameters (type, default, range, choices, config key) and export
    /// formats.
    Info {
        /// Strategy id, e.g. `example.keep-last-results`.
        id: String,
    },
}

pub fn run(args: Args) -> ctxlab::Result<()> {
    let reg = Registry::discover();
    match args.cmd.unwrap_or(Cmd::List) {
        Cmd::List => list(&reg, args.json),
        Cmd::Info { id } => info(reg.require(&id)?.meta.clone(), args.json),
    }
    Ok(())
}

fn origin(o: Origin) -> &'static str {
    match o {
        Origin::EnvVar => "CTXLAB_PLUGIN_PATH",
        Origin::BesideExecutable => "beside the executable",
        Origin::UserData => "user data folder",
        Origin::System => "system folder",
        Origin::Checkout => "build folder of this checkout",
    }
}

fn list(reg: &Registry, as_json: bool) {
    if as_json {
        let strategies: Vec<_> = reg
            .strategies()
            .iter()
            .map(|s| {
                json!({
                    "id": s.meta.id,
                    "title": s.meta.title,
                    "system": s.meta.system,
                    "plugin": s.meta.plugin,
                    "version": s.meta.plugin_version,
                    "path": s.meta.path,
                })
            })
            .collect();
        let out = json!({
            "strategies": strategies,
            "refused": reg.refused(),
            "searched": reg.searched(),
        });
        println!("{out:#}");
        return;
    }
    if reg.strategies().is_empty() {
        println!(
            "No strategies found. Install the built-in ones: the ctxlab .deb puts them in \
             /usr/lib/ctxlab/plugins; from a checkout, `make plugins-install` copies the built \
             plugins to your user folder; or point CTXLAB_PLUGIN_PATH at a folder of \
             libctxlab_plugin_*.so files."
        );
    } else {
        let rows: Vec<[String; 5]> = reg
            .strategies()
            .iter()
            .map(|s| {
                [
                    s.meta.id.clone(),
                    s.meta.system.clone(),
                    s.meta.plugin.clone(),
                    s.meta.plugin_version.clone(),
                    s.meta.path.display().to_string(),
                ]
            })
            .collect();
        print_table(&["STRATEGY", "SYSTEM", "PLUGIN", "VERSION", "PATH"], &rows);
    }
    if !reg.refused().is_empty() {
        println!("\nRefused:");
        for r in reg.refused() {
            println!("  {}\n    {}", r.path.display(), r.reason);
        }
    }
    println!("\nSearched, in order:");
    for d in reg.searched() {
        let note = if d.path.exists() { "" } else { " (missing)" };
        println!("  {:<30} {}{note}", origin(d.origin), d.path.display());
    }
}

fn print_table(head: &[&str], rows: &[[String; 5]]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let s: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", s.join("  ").trim_end());
    };
    line(head.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// A bound as a user reads it: whole numbers with thousands separators.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        let s = fmt_tokens(x.abs() as u64);
        if x < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else {
        x.to_string()
    }
}

fn range(p: &ParamSpec) -> Option<String> {
    match (p.min, p.max) {
        (Some(a), Some(b)) => Some(format!("{} to {}", number(a), number(b))),
        (Some(a), None) => Some(format!("at least {}", number(a))),
        (None, Some(b)) => Some(format!("at most {}", number(b))),
        (None, None) => None,
    }
}

fn info(meta: StrategyMeta, as_json: bool) {
    if as_json {
        println!("{:#}", json!(meta));
        return;
    }
    println!("{} — {}", meta.id, meta.title);
    println!(
        "system {} · plugin {} {} · {}",
        meta.system,
        meta.plugin,
        meta.plugin_version,
        meta.path.display()
    );
    if !meta.description.is_empty() {
        println!("\n{}", meta.description);
    }
    if meta.params.is_empty() {
        println!("\nNo parameters.");
    } else {
        println!("\nParameters:");
        for p in &meta.params {
            let ty = serde_json::to_value(p.ty)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let default = match &p.default {
                serde_json::Value::Number(n) => n.as_f64().map(number).unwrap_or(n.to_string()),
                other => other.to_string(),
            };
            let mut facts = vec![ty, format!("default {default}")];
            facts.extend(range(p));
            if !p.choices.is_empty() {
                facts.push(format!("one of {}", p.choices.join(", ")));
            }
            println!("  {}  ({})", p.name, facts.join(", "));
            if !p.description.is_empty() {
                println!("      {}", p.description);
            }
            if !p.key.is_empty() {
                println!("      config key: {}", p.key);
            }
        }
    }
    println!(
        "\nExport formats: {}",
        if meta.export_formats.is_empty() {
            "none".to_string()
        } else {
            meta.export_formats.join(", ")
        }
    );
}
