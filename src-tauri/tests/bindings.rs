//! The TypeScript in ui/src/bindings is generated from the command types. This test regenerates
//! it into a temporary folder and fails when the committed files differ: run
//! `UPDATE_BINDINGS=1 cargo test --test bindings` after changing a type, and commit the result.

use ctxlab_app::error::AppError;
use ctxlab_app::view::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use ts_rs::{Config, TS};

fn export<T: TS + 'static>(cfg: &Config) {
    T::export_all(cfg).unwrap_or_else(|e| panic!("exporting {}: {e}", T::name(cfg)));
}

fn files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ts") {
                let text = std::fs::read_to_string(&p).expect("read a binding");
                out.insert(p.strip_prefix(dir).expect("under dir").to_path_buf(), text);
            }
        }
    }
    out
}

#[test]
fn committed_bindings_match_the_rust_types() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Token counts stay below 2^53: numbers, not bigints, on the TypeScript side.
    let cfg = Config::new()
        .with_large_int("number")
        .with_out_dir(tmp.path());
    export::<AppError>(&cfg);
    export::<Strategies>(&cfg);
    export::<LogFile>(&cfg);
    export::<OpenResult>(&cfg);
    export::<StoredSession>(&cfg);
    export::<StoredList>(&cfg);
    export::<SessionDetail>(&cfg);
    export::<ContextView>(&cfg);
    export::<CompositionView>(&cfg);
    export::<ReplayRequest>(&cfg);
    export::<Progress>(&cfg);
    export::<RunView>(&cfg);
    export::<PricingView>(&cfg);
    export::<ImportView>(&cfg);
    export::<LiveUpdate>(&cfg);
    export::<TuneRequest>(&cfg);
    export::<TuneProgress>(&cfg);
    export::<TuneView>(&cfg);
    export::<ExportRequest>(&cfg);
    export::<ExportResult>(&cfg);

    let generated = files(tmp.path());
    let committed_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings");
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        let _ = std::fs::remove_dir_all(&committed_dir);
        for (rel, text) in &generated {
            let p = committed_dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("create bindings dir");
            std::fs::write(&p, text).expect("write binding");
        }
        return;
    }
    let committed = files(&committed_dir);
    let mut problems = Vec::new();
    for (rel, text) in &generated {
        match committed.get(rel) {
            None => problems.push(format!("missing: {}", rel.display())),
            Some(c) if c != text => problems.push(format!("differs: {}", rel.display())),
            _ => {}
        }
    }
    for rel in committed.keys().filter(|r| !generated.contains_key(*r)) {
        problems.push(format!("stale (no Rust type): {}", rel.display()));
    }
    assert!(
        problems.is_empty(),
        "ui/src/bindings drifted from the Rust types:\n  {}\nrun `UPDATE_BINDINGS=1 cargo test --test bindings` in src-tauri and commit the result",
        problems.join("\n  ")
    );
}
