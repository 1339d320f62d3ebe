//! `ctxlab inspect` run as a user runs it: on every sample and on the real third-party logs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

mod real_logs;
use real_logs::real as real_log;

fn inspect(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("inspect")
        .args(args)
        .current_dir(root())
        .output()
        .expect("run ctxlab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn inspect_json(path: &Path, counter: &str) -> Value {
    let p = path.to_str().expect("utf-8 path");
    let (ok, stdout, stderr) = inspect(&[p, "--json", "--counter", counter]);
    assert!(ok, "inspect {p} failed: {stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{p}: not JSON: {e}"));
    assert_eq!(doc["version"], 1);
    assert!(
        !doc["sessions"].as_array().unwrap().is_empty(),
        "{p}: no session"
    );
    doc
}

fn sample_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(root().join("samples")).expect("samples/") {
        let dir = dir.unwrap().path();
        if dir.file_name().unwrap() == "claude-code" {
            // A project folder: inspect loads every session in it, subagents included.
            for project in std::fs::read_dir(&dir).unwrap() {
                files.push(project.unwrap().path());
            }
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    files.sort();
    assert!(
        files.len() >= 6,
        "expected samples in every format, found {files:?}"
    );
    files
}

#[test]
fn every_sample_inspects_with_consistent_totals() {
    for path in sample_files() {
        let doc = inspect_json(&path, "heuristic");
        for s in doc["sessions"].as_array().unwrap() {
            let t = &s["totals"];
            let agents = s["agents"].as_array().unwrap();
            let sum = |k: &str| {
                agents
                    .iter()
                    .map(|a| a["stats"][k].as_u64().unwrap())
                    .sum::<u64>()
            };
            for k in [
                "calls",
                "messages",
                "input",
                "output",
                "cache_read",
                "cache_write",
                "compactions",
            ] {
                assert_eq!(
                    t[k].as_u64().unwrap(),
                    sum(k),
                    "{}: total {k}",
                    path.display()
                );
            }
            let peak = agents
                .iter()
                .map(|a| a["stats"]["peak_context"].as_u64().unwrap())
                .max()
                .unwrap_or(0);
            assert_eq!(
                t["peak_context"].as_u64().unwrap(),
                peak,
                "{}",
                path.display()
            );
            assert_eq!(
                s["compactions"].as_array().unwrap().len() as u64,
                t["compactions"].as_u64().unwrap()
            );
            if s["usage_only"] == true {
                assert!(
                    s["calibration"].is_null(),
                    "{}: a usage-only session has nothing to calibrate",
                    path.display()
                );
                assert_eq!(t["estimated_tokens"], 0);
            } else {
                assert!(
                    t["estimated_tokens"].as_u64().unwrap() > 0,
                    "{}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn claude_code_sample_shows_the_subagent_compaction_and_calibration() {
    let doc = inspect_json(
        &root().join("samples/claude-code/-home-maren-src-tidewater"),
        "heuristic",
    );
    let s = &doc["sessions"][0];
    let agents = s["agents"].as_array().unwrap();
    assert!(agents.len() >= 2, "main agent and a subagent: {agents:?}");
    assert!(
        agents.iter().any(|a| !a["parent"].is_null()),
        "a subagent names its parent"
    );
    assert!(
        s["totals"]["calls"].as_u64().unwrap() >= 100,
        "hundreds of calls"
    );
    let compactions = s["compactions"].as_array().unwrap();
    assert!(compactions
        .iter()
        .any(|c| c["trigger"] == "auto" && c["pre_tokens"].as_u64().is_some()));
    let cal = &s["calibration"];
    assert!(cal["samples"].as_u64().unwrap() > 0);
    // Both agents made calls with recorded usage: each has an entry in the calibration.
    assert!(cal["agents"].as_array().unwrap().len() >= 2, "{cal}");
    assert!(cal["mean_ape"].as_f64().unwrap().is_finite());
}

/// Distinct `message.id`s of assistant entries with usage, and the compact_boundary preTokens,
/// straight from the JSONL: what inspect must report.
fn claude_code_facts(path: &Path) -> (usize, Vec<Option<u64>>) {
    let mut ids = BTreeSet::new();
    let mut pre = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["type"] == "assistant" && v["message"]["usage"].is_object() {
            if let Some(id) = v["message"]["id"].as_str() {
                ids.insert(id.to_string());
            }
        }
        if v["type"] == "system" && v["subtype"] == "compact_boundary" {
            pre.push(v["compactMetadata"]["preTokens"].as_u64());
        }
    }
    (ids.len(), pre)
}

#[test]
fn real_claude_code_logs_match_the_raw_entries() {
    for rel in [
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        "claude-code_fundwise/claude-session.jsonl",
    ] {
        let path = real_log(rel);
        let (calls, pre) = claude_code_facts(&path);
        let doc = inspect_json(&path, "heuristic");
        let s = &doc["sessions"][0];
        assert_eq!(s["format"], "claude-code");
        assert_eq!(
            s["totals"]["calls"].as_u64().unwrap() as usize,
            calls,
            "{rel}"
        );
        let got: Vec<Option<u64>> = s["compactions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["inferred"] == false)
            .map(|c| c["pre_tokens"].as_u64())
            .collect();
        assert_eq!(got, pre, "{rel}: recorded compactions and their preTokens");
        let cal = &s["calibration"];
        assert!(
            cal["samples"].as_u64().unwrap() as usize >= calls * 9 / 10,
            "{rel}: {cal}"
        );
        // The heuristic, once calibrated, predicts these sessions' recorded contexts closely.
        assert!(cal["mean_ape"].as_f64().unwrap() < 10.0, "{rel}: {cal}");
    }
}

#[test]
fn real_logs_print_tables_with_the_calibrated_error() {
    let logs = [
        (
            "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
            "claude-code",
        ),
        ("claude-code_fundwise/claude-session.jsonl", "claude-code"),
        ("codex-cli_gildore-arena/codex-session.jsonl", "codex"),
        ("pi-agent_pi-mono/session.jsonl", "pi"),
    ];
    for (rel, format) in logs {
        let path = real_log(rel);
        let (ok, out, err) = inspect(&[path.to_str().unwrap()]);
        assert!(ok, "{rel}: {err}");
        assert!(out.contains(&format!("({format}, 1 file")), "{rel}:\n{out}");
        // Logs of OpenAI models are counted with the exact o200k counter by default.
        let counter = if format == "codex" {
            "o200k"
        } else {
            "heuristic"
        };
        assert!(
            out.contains("recorded usage") && out.contains(&format!("estimated with {counter}")),
            "{rel}:\n{out}"
        );
        let line = out
            .lines()
            .find(|l| l.starts_with("calibration: mean error"))
            .unwrap_or_else(|| panic!("{rel}: no calibration line:\n{out}"));
        assert!(line.contains('%') && line.contains("p95"), "{line}");
    }
    // Thousands separators, and the compaction of the vr-forest log with its preTokens.
    let (_, out, _) = inspect(&[real_log(logs[0].0).to_str().unwrap()]);
    assert!(out.contains("167,825"), "{out}");
    // The pi log holds one line with two objects run together: recovered or warned, never fatal.
    let doc = inspect_json(&real_log(logs[3].0), "heuristic");
    assert_eq!(doc["sessions"][0]["compactions"][0]["pre_tokens"], 186_045);
}

#[test]
fn every_counter_is_selectable_and_exact_counts_differ_from_estimates() {
    let path = real_log("claude-code_fundwise/claude-session.jsonl");
    let mut history = BTreeMap::new();
    for counter in ctxlab::tokens::COUNTERS {
        let doc = inspect_json(&path, counter);
        let s = &doc["sessions"][0];
        assert_eq!(s["counter"], *counter);
        history.insert(*counter, s["totals"]["estimated_tokens"].as_u64().unwrap());
    }
    let distinct: BTreeSet<_> = history.values().collect();
    assert_eq!(
        distinct.len(),
        history.len(),
        "each counter counts differently: {history:?}"
    );
}

#[test]
fn bad_input_gives_an_error_naming_it() {
    let (ok, _, err) = inspect(&["samples", "--counter", "gpt2"]);
    assert!(!ok);
    assert!(err.contains("gpt2") && err.contains("heuristic"), "{err}");
    let (ok, _, err) = inspect(&["no/such/file.jsonl"]);
    assert!(!ok);
    assert!(err.contains("no/such/file.jsonl"), "{err}");
}

/// A log that records output tokens only (Copilot CLI) shows "-" where it recorded nothing
/// (input, cache, peak context), never a 0 a reader would take for a measurement.
#[test]
fn estimate_only_log_shows_no_false_zero_in_recorded_usage() {
    let p = real_log("copilot-cli_agentv/26/9e1b9e5502/0/full.jsonl");
    let (ok, out, err) = inspect(&[p.to_str().unwrap()]);
    assert!(ok, "inspect failed: {err}");
    let table = out
        .split("recorded usage\n")
        .nth(1)
        .expect("a recorded usage section");
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.trim_start().starts_with("main "))
        .expect("the main agent's row")
        .split_whitespace()
        .collect();
    // agent parent model calls messages input output cache-read cache-write peak compactions
    assert_eq!(row.len(), 11, "{row:?}");
    assert_eq!(&row[5..], ["-", "19,254", "-", "-", "-", "0"], "{row:?}");
    assert!(out.contains("estimate-only"), "{out}");
}
