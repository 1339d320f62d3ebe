//! The boundaries docs/architecture.md states as "never", checked in the sources: which ctxlab
//! modules each part imports, and which crates the manifests depend on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (line comments, doc comments and block comments), so that a
/// module named in prose is not taken for an import.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        if in_str {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if b[i] == b'"' {
            in_str = true;
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Every top-level ctxlab module a file names through `crate::` (also inside `crate::{a, b::c}`).
fn crate_modules(text: &str) -> BTreeSet<String> {
    let code = code(text);
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: split at commas of depth 0.
            let (mut depth, mut start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(ident(group[start..i].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(group[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// Files under `dir` that import any of `forbidden`, with what they import.
fn offenders(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root().join(dir), &mut files);
    assert!(!files.is_empty(), "no sources under {dir}");
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let used = crate_modules(&text);
        let hits: Vec<_> = forbidden.iter().filter(|m| used.contains(**m)).collect();
        if !hits.is_empty() {
            bad.push(format!("{} imports {hits:?}", f.display()));
        }
    }
    bad
}

#[test]
fn the_import_scanner_sees_groups_paths_and_ignores_comments() {
    let m = crate_modules(
        "use crate::model::Session;\nuse crate::{Error, replay::{a, b}, tokens};\n\
         // crate::store in a comment\nlet s = \"crate::chart\"; fn f() { crate::tune::x() }",
    );
    let want: BTreeSet<String> = ["model", "Error", "replay", "tokens", "tune"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(m, want);
}

#[test]
fn readers_know_nothing_of_replays() {
    let bad = offenders(
        "src/formats",
        &[
            "replay",
            "tokens",
            "plugin_host",
            "store",
            "chart",
            "report",
            "compare",
            "tune",
            "export",
            "inspect",
            "discover",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_model_is_plain_data() {
    let text = std::fs::read_to_string(root().join("src/model.rs")).unwrap();
    let used = crate_modules(&text);
    assert!(
        used.iter()
            .all(|m| m == "Error" || m == "Result" || m == "error"),
        "src/model.rs imports {used:?}"
    );
}

#[test]
fn the_engine_persists_and_draws_nothing() {
    let bad = offenders(
        "src/replay",
        &["store", "chart", "report", "compare", "tune", "export"],
    );
    assert!(bad.is_empty(), "{bad:#?}");
    let mut files = Vec::new();
    rust_files(&root().join("src/replay"), &mut files);
    for f in files {
        let text = code(&std::fs::read_to_string(&f).unwrap());
        for krate in ["rusqlite::", "plotters::"] {
            assert!(!text.contains(krate), "{} uses {krate}", f.display());
        }
    }
}

#[test]
fn the_proxy_records_and_interprets_nothing() {
    let bad = offenders(
        "src/capture.rs",
        &[
            "replay",
            "tokens",
            "plugin_host",
            "store",
            "chart",
            "report",
            "compare",
            "tune",
            "export",
            "inspect",
            "discover",
            "model",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn compare_and_tune_do_not_import_each_other() {
    assert!(offenders("src/compare.rs", &["tune"]).is_empty());
    assert!(offenders("src/tune.rs", &["compare"]).is_empty());
}

/// The names of a manifest's `[dependencies]` (not dev- or build-dependencies).
fn dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn the_library_knows_no_window() {
    let deps = dependencies(&root().join("Cargo.toml"));
    assert!(
        deps.iter().all(|d| !d.starts_with("tauri")),
        "the root crate depends on {deps:?}"
    );
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for f in files {
        let text = code(&std::fs::read_to_string(&f).unwrap());
        assert!(!text.contains("tauri::"), "{} uses tauri", f.display());
    }
}

#[test]
fn plugins_see_only_the_abi() {
    let mut manifests = Vec::new();
    for e in std::fs::read_dir(root().join("plugins")).unwrap() {
        let dir = e.unwrap().path();
        for m in [dir.join("Cargo.toml")] {
            if m.is_file() {
                manifests.push(m);
            }
        }
        if dir.ends_with("testing") {
            for t in std::fs::read_dir(&dir).unwrap() {
                let m = t.unwrap().path().join("Cargo.toml");
                if m.is_file() {
                    manifests.push(m);
                }
            }
        }
    }
    assert!(manifests.len() >= 8, "{manifests:?}");
    for m in manifests {
        let deps = dependencies(&m);
        assert!(
            !deps.iter().any(|d| d == "ctxlab"),
            "{} depends on the host crate",
            m.display()
        );
    }
}

#[test]
fn number_formatting_is_the_hosts_not_the_abis() {
    // The SDK keeps a formatter for plugins' own event texts; the host writes numbers with its
    // own `ctxlab::fmt`, so presentation never rides on the plugin ABI crate.
    for dir in ["src", "src-tauri/src", "benches"] {
        let mut files = Vec::new();
        rust_files(&root().join(dir), &mut files);
        for f in files {
            let text = code(&std::fs::read_to_string(&f).unwrap());
            let uses_sdk_fmt = text.lines().any(|l| {
                l.contains("ctxlab_plugin_api") && l.contains("fmt_tokens")
                    || l.contains("sdk::fmt_tokens")
            });
            assert!(
                !uses_sdk_fmt,
                "{} formats with the SDK's fmt_tokens",
                f.display()
            );
        }
    }
}
