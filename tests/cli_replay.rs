//! `ctxlab replay` as a user runs it: baselines, a plugin strategy with parameters, JSON output,
//! the per-call series, and errors that say what to do.

use std::process::Command;

mod real_logs;

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

/// `--decisions` records, per call, the context the strategy saw and what became of each
/// message: the dropped ones send nothing, the kept ones what the sample says, and the sent
/// tokens of each call add up to the replay's own raw tokens for it.
#[test]
fn decisions_say_what_each_call_kept_dropped_and_edited() {
    let out = ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "librechat.agents",
        "--param",
        "enabled=false",
        "--window",
        "12000",
        "--json",
        "--decisions",
        "--series",
        "target/decisions-series.csv",
    ]);
    let run = &runs(&out)[0];
    let decisions = run["decisions"].as_array().expect("decisions");
    let samples = run["samples"].as_array().expect("samples");
    assert_eq!(decisions.len(), samples.len(), "one decision per call");
    let mut described = std::collections::HashSet::new();
    let (mut dropped, mut edited) = (0, 0);
    for (d, s) in decisions.iter().zip(samples) {
        let mut sent = 0;
        for m in d["context"].as_array().unwrap() {
            let id = m["id"].as_u64().unwrap();
            // Text is given the first time a message appears, and only then.
            assert_eq!(
                m.get("text").is_some(),
                described.insert(id),
                "message {id}"
            );
            match m["state"].as_str().unwrap() {
                "dropped" | "summary" => {
                    dropped += 1;
                    assert_eq!(m["sent_tokens"], 0);
                }
                "edited" => {
                    edited += 1;
                    assert!(
                        m["sent_chars"] != m["chars"] || m["sent_tokens"] != m["tokens"],
                        "{m}"
                    );
                }
                state => assert_eq!(state, "verbatim"),
            }
            sent += m["sent_tokens"].as_u64().unwrap();
        }
        if d["context"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["state"] != "summary")
        {
            assert_eq!(
                sent,
                s["raw_tokens"].as_u64().unwrap(),
                "call {}",
                d["call"]
            );
        }
    }
    assert!(
        dropped > 0 && edited > 0,
        "a 12K window makes LibreChat prune and mask"
    );
    // Without --decisions the run has none.
    let plain = runs(&ctxlab(&[
        "replay",
        PI_SAMPLE,
        "-s",
        "librechat.agents",
        "--json",
    ]));
    assert!(plain[0].get("decisions").is_none());
}

/// A `--params` file may write dotted names as TOML dotted keys or tables.
#[test]
fn a_params_file_accepts_dotted_keys_and_tables() {
    let dir = std::env::temp_dir().join(format!("ctxlab-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [
        (
            "dotted.toml",
            "trigger.type = \"token_ratio\"\ntrigger.value = 0.5\n",
        ),
        (
            "table.toml",
            "[trigger]\ntype = \"token_ratio\"\nvalue = 0.5\n",
        ),
        (
            "quoted.toml",
            "\"trigger.type\" = \"token_ratio\"\n\"trigger.value\" = 0.5\n",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let run = &runs(&ctxlab(&[
            "replay",
            PI_SAMPLE,
            "-s",
            "librechat.agents",
            "--params",
            path.to_str().unwrap(),
            "--json",
        ]))[0];
        assert_eq!(run["params"]["trigger.type"], "token_ratio", "{name}");
        assert_eq!(run["params"]["trigger.value"], 0.5, "{name}");
    }
}

/// Issue #21 point 6: the text header names the session as every other view does
/// (`naming::display_name`: its title, else its first prompt and project folder), with the id on
/// its own line for `--session`, as `compare` prints it.
#[test]
fn the_text_header_names_the_session_by_its_display_name() {
    let log =
        real_logs::real("claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl");
    let session = ctxlab::formats::load(&log).unwrap().remove(0);
    let name = ctxlab::naming::display_name(&session);
    assert_ne!(name, session.id, "this log has a name besides its id");
    let out = ctxlab(&["replay", log.to_str().unwrap(), "-s", "none"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "session {name} — strategy none — window 200,000, max output 35,109, counter heuristic"
        )
    );
    assert_eq!(lines.next().unwrap(), format!("id {}", session.id));
}
