//! Shared by the compare, tune, export, chart and report tests: the built plugins, the real logs.
#![allow(dead_code)]

use ctxlab::compare::Settings;
use ctxlab::model::Session;
use ctxlab::plugin_host::{Registry, StrategyEntry};
use ctxlab::replay::{ReplayOptions, StrategySpec};
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

/// `target/<profile>/`, where cargo puts the workspace's cdylibs.
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "deps"))
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} is not inside a cargo target folder", exe.display()))
        .to_path_buf()
}

pub const PLUGINS: &[&str] = &[
    "ctxlab_plugin_fuseraft",
    "ctxlab_plugin_phi_core",
    "ctxlab_plugin_fim_one",
    "ctxlab_plugin_librechat",
    "ctxlab_plugin_codetether",
    "ctxlab_plugin_example",
];

/// Every strategy plugin of the workspace, loaded from the build folder.
pub fn registry() -> Registry {
    let mut reg = Registry::new();
    for lib in PLUGINS {
        let p = build_dir().join(format!("{DLL_PREFIX}{lib}{DLL_SUFFIX}"));
        assert!(
            p.is_file(),
            "{} is missing: run `cargo build --workspace` first (`make test` does it)",
            p.display()
        );
        reg.load_path(&p)
            .unwrap_or_else(|r| panic!("{lib} refused: {r}"));
    }
    reg
}

pub fn entry(reg: &Registry, id: &str) -> StrategyEntry {
    reg.require(id).unwrap().clone()
}

pub fn plugin(reg: &Registry, id: &str, params: serde_json::Value) -> StrategySpec {
    StrategySpec::Plugin {
        entry: entry(reg, id),
        params,
    }
}

#[path = "../real_logs/mod.rs"]
mod real_logs;
pub use real_logs::real as real_log;

pub const VR_FOREST: &str = "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl";
pub const FUNDWISE: &str = "claude-code_fundwise/claude-session.jsonl";

pub fn session(rel: &str) -> Session {
    ctxlab::formats::load_file(&real_log(rel)).unwrap()
}

pub fn options(s: &Session) -> ReplayOptions<'static> {
    Settings::default().options(s).unwrap()
}
