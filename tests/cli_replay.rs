//! `ctxlab replay` as a user runs it: baselines, a plugin strategy with parameters, JSON output,
//! the per-call series, and errors that say what to do.

use std::process::Command;

fn ctxlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run ctxlab")
}

const PI_SAMPLE: &str =
    "samples/pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl";

fn runs(out: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "ctxlab failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    v["runs"].as_array().expect("runs array").clone()
}

#[test]
fn a_plugin_strategy_with_a_parameter_compacts_more_than_its_default() {
    // The fuseraft plugin must be built (make test does `cargo build --workspace` first).
    let default = runs(&ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "fuseraft.compaction",
        "--json",
    ]));
    let eager = runs(&ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "fuseraft.compaction",
        // fuseraft counts agent turns (a tool loop is one turn): the sample holds a handful.
        "--param",
        "TriggerTurnCount=3",
        "--param",
        "KeepRecentTurns=1",
        "--json",
    ]));
    let compactions = |r: &serde_json::Value| -> u64 {
        r["compactions"]
            .as_array()
            .map(|a| a.len() as u64)
            .unwrap_or(0)
    };
    assert_eq!(eager[0]["params"]["TriggerTurnCount"], 3);
    assert!(
        compactions(&eager[0]) > compactions(&default[0]),
        "a lower TriggerTurnCount must compact more often: {} vs {}",
        compactions(&eager[0]),
        compactions(&default[0])
    );
    assert!(
        eager[0]["metrics"]["total_input_tokens"].as_u64()
            < default[0]["metrics"]["total_input_tokens"].as_u64()
    );
}

#[test]
fn the_series_csv_has_one_row_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("series.csv");
    let out = ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "none",
        "--series",
        csv.to_str().unwrap(),
        "--json",
    ]);
    let run = &runs(&out)[0];
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = text.lines().count() - 1;
    assert_eq!(rows as u64, run["metrics"]["calls"].as_u64().unwrap());
}

#[test]
fn mistakes_are_explained() {
    let out = ctxlab(&["replay", PI_SAMPLE, "-s", "no.such-strategy"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no.such-strategy") && err.contains("fuseraft.compaction"),
        "{err}"
    );

    let out = ctxlab(&["replay", PI_SAMPLE, "-s", "none", "--param", "x=1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("takes no parameters"));

    let out = ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "fuseraft.compaction",
        "--param",
        "Nope=1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown parameter Nope"), "{err}");

    let out = ctxlab(&["replay", "Cargo.toml", "-s", "none"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Cargo.toml") && err.contains("formats tried"),
        "{err}"
    );
}
