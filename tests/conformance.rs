//! Conformance: every strategy of every plugin the workspace builds replays every sample with its
//! default parameters — no rejected decision, no plugin error, no pinned violation, no split tool
//! pair — at the model's own window and at a window tight enough to force compactions.
//! The `.so` files come from `cargo build --workspace` (`make test` runs it first).

use ctxlab::plugin_host::{checkout_dir, Registry};
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use serde_json::json;
use std::path::PathBuf;

/// The workspace's strategy plugins: `ctxlab_plugin_*` crates under plugins/.
fn plugin_libs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("test binary path");
    let dir = checkout_dir(&exe).expect("test binary inside a cargo target folder");
    let mut libs = Vec::new();
    for entry in std::fs::read_dir(root.join("plugins")).expect("plugins/ folder") {
        let manifest = entry.expect("plugins/ entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let Some(name) = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \"ctxlab_plugin_"))
            .and_then(|r| r.strip_suffix('"'))
        else {
            continue;
        };
        let lib = dir.join(format!(
            "{}ctxlab_plugin_{name}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        assert!(
            lib.is_file(),
            "{} is missing (plugin crate {}): run `cargo build --workspace` first (`make test` does it)",
            lib.display(),
            manifest.display()
        );
        libs.push(lib);
    }
    assert!(
        !libs.is_empty(),
        "no strategy plugin crates found under plugins/"
    );
    libs
}

/// Every session of every log under samples/ (one folder per format).
fn samples() -> Vec<(String, ctxlab::model::Session)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"));
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        let loaded = ctxlab::formats::load_all(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            loaded.failed.is_empty(),
            "{}: {:?}",
            p.display(),
            loaded.failed
        );
        for s in loaded.sessions {
            let name = format!(
                "{} ({})",
                s.source.files.first().cloned().unwrap_or_default(),
                s.id
            );
            out.push((name, s));
        }
    }
    assert!(!out.is_empty(), "samples/ holds no session logs to replay");
    out
}

/// Strategies whose modelled system separates tool calls from their results (docs/strategies).
const SPLITS_AS_MODELLED: &[&str] = &["phi-core.context", "fim-one.context-guard"];

#[test]
fn every_built_strategy_replays_every_sample_cleanly() {
    let mut reg = Registry::new();
    for lib in plugin_libs() {
        if let Err(r) = reg.load_path(&lib) {
            panic!("a workspace plugin was refused: {r}");
        }
    }
    assert!(
        !reg.strategies().is_empty(),
        "the workspace plugins export no strategy"
    );
    let counter = tokens::counter("heuristic").unwrap();
    let mut failures = Vec::new();
    let mut replays = 0;
    // Strategy → replays in which it compacted: a strategy the tight windows never make act
    // would pass this test without being tested.
    let mut compacted: std::collections::BTreeMap<String, usize> = Default::default();
    for (name, s) in samples() {
        let s = &s;
        if s.usage_only {
            continue;
        }
        {
            let mut base = ReplayOptions::new(counter.clone());
            base.calibration = tokens::calibrate_session(s, counter.as_ref());
            let model = replay::resolve_budget(s, None, &base.models).unwrap_or(Budget {
                context_window: 200_000,
                max_output: 8_192,
                reserve: 0,
            });
            base.budget = Some(model);
            let peak = replay::run(s, StrategySpec::None, &base)
                .unwrap_or_else(|e| panic!("{name}: none: {e}"))
                .metrics
                .peak_context;
            let tight = Budget {
                context_window: (peak / 3).max(2_000),
                max_output: (peak / 30).max(200),
                reserve: 0,
            };
            for entry in reg.strategies() {
                for budget in [model, tight] {
                    let mut o = ReplayOptions::new(counter.clone());
                    o.calibration = base.calibration.clone();
                    o.budget = Some(budget);
                    replays += 1;
                    let what = format!(
                        "{} on {name} (window {})",
                        entry.meta.id, budget.context_window
                    );
                    // fuseraft compacts on a turn count (50 by default), not on tokens: at the
                    // tight window it gets a count the samples reach, so that it acts too.
                    let params = if budget == tight && entry.meta.id == "fuseraft.compaction" {
                        json!({"TriggerTurnCount": 6, "KeepRecentTurns": 2})
                    } else {
                        json!({})
                    };
                    let spec = StrategySpec::Plugin {
                        entry: entry.clone(),
                        params,
                    };
                    match replay::run(s, spec, &o) {
                        Err(e) => failures.push(format!("{what}: {e}")),
                        Ok(run) => {
                            *compacted.entry(entry.meta.id.clone()).or_default() +=
                                !run.compactions.is_empty() as usize;
                            let m = &run.metrics;
                            // FIM One keeps tool results whose call its compaction removed
                            // (compact.py smart_truncate, context_guard.py's plain
                            // compactable[:-keep_recent] slice); phi-core 0.15.2's
                            // compact_messages cuts at `len − keep_recent` and `keep_first`
                            // messages wherever they fall (src/context/compact_messages.rs). The
                            // plugins announce those splits (AllowSplit) and the metric counts them.
                            let keeps_orphans =
                                SPLITS_AS_MODELLED.contains(&entry.meta.id.as_str());
                            if m.pinned_violations != 0
                                || (m.split_tool_pairs != 0 && !keeps_orphans)
                            {
                                failures.push(format!(
                                    "{what}: {} pinned violations, {} split tool pairs",
                                    m.pinned_violations, m.split_tool_pairs
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        replays > 0,
        "no replayable (non usage-only) session in samples/"
    );
    let idle: Vec<&String> = compacted
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| id)
        .collect();
    assert!(
        idle.is_empty(),
        "never compacted on any sample, even at the tight window: {idle:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {replays} replays failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
