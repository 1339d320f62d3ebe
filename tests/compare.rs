//! compare: baselines always there, figures relative to `none`, deterministic, the same strategy
//! twice, and what each run kept at a call.

mod compare_support;
use compare_support::*;

use ctxlab::compare::{self, StrategyRun};
use ctxlab::replay::KeptState;
use serde_json::json;

#[test]
fn baselines_are_always_compared_and_figures_are_relative_to_none() {
    let reg = registry();
    let s = session(VR_FOREST);
    let opts = options(&s);
    let runs = [
        StrategyRun::new(plugin(
            &reg,
            "fuseraft.compaction",
            json!({"TriggerTurnCount": 12}),
        )),
        StrategyRun::new(plugin(
            &reg,
            "fuseraft.compaction",
            json!({"TriggerTurnCount": 20}),
        )),
    ];
    let c = compare::run(&s, &runs, &opts, None).unwrap();
    let labels: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "none",
            "recorded",
            "fuseraft.compaction TriggerTurnCount=12",
            "fuseraft.compaction TriggerTurnCount=20"
        ]
    );
    assert_eq!(c.baseline, "none");
    let none = &c.runs[0];
    assert_eq!(none.relative.total_input_tokens, Some(0.0));
    let f30 = &c.runs[2];
    let f60 = &c.runs[3];
    // Compacting every 12 turns sends fewer tokens than every 20, and both fewer than nothing
    // (the log holds 27 agent turns: fuseraft counts one per turn, tool calls folded in).
    let rel = |r: &compare::ComparedRun| r.relative.total_input_tokens.unwrap();
    assert!(
        rel(f30) < rel(f60) && rel(f60) < 0.0,
        "{} {}",
        rel(f30),
        rel(f60)
    );
    let expected = (f30.run.metrics.total_input_tokens as f64
        - none.run.metrics.total_input_tokens as f64)
        / none.run.metrics.total_input_tokens as f64;
    assert!((rel(f30) - expected).abs() < 1e-12);
    assert!(
        f30.run
            .metrics
            .compactions
            .values()
            .map(|c| c.count)
            .sum::<u64>()
            > 0
    );
    let fid = c
        .fidelity
        .expect("the log records usage, so the session is calibrated");
    assert!(fid.samples > 100 && fid.mean_ape < 10.0, "{fid:?}");

    // Determinism: the same comparison twice is the same, whatever thread finished first.
    let again = compare::run(&s, &runs, &opts, None).unwrap();
    assert_eq!(again, c);
}

#[test]
fn the_same_strategy_with_the_same_parameters_gets_distinct_labels() {
    let reg = registry();
    let s = session(FUNDWISE);
    let r = StrategyRun::new(plugin(
        &reg,
        "example.keep-last-results",
        json!({"keep_last": 2}),
    ));
    let c = compare::run(&s, &[r.clone(), r], &options(&s), None).unwrap();
    assert_eq!(c.runs[2].label, "example.keep-last-results keep_last=2");
    assert_eq!(c.runs[3].label, "example.keep-last-results keep_last=2 #2");
    assert_eq!(c.runs[2].run.metrics, c.runs[3].run.metrics);
}

#[test]
fn kept_at_answers_what_one_strategy_forgot_that_another_kept() {
    let reg = registry();
    let s = session(VR_FOREST);
    let opts = options(&s);
    let runs = [StrategyRun::new(plugin(
        &reg,
        "fuseraft.compaction",
        json!({"TriggerTurnCount": 12}),
    ))];
    let k = compare::kept_at(&s, &runs, 120, &opts).unwrap();
    assert_eq!(k.call, 120);
    assert_eq!(
        k.labels,
        [
            "none",
            "recorded",
            "fuseraft.compaction TriggerTurnCount=12"
        ]
    );
    assert!(k.rows.iter().all(|r| r.cells.len() == 3));
    // `none` keeps the whole history verbatim.
    let none_kept = k
        .rows
        .iter()
        .filter(|r| r.cells[0].is_some_and(|c| c.state == KeptState::Verbatim))
        .count();
    let call = &s.calls[120];
    let history = s.messages[..call.context_end]
        .iter()
        .filter(|m| m.agent == call.agent)
        .count();
    assert_eq!(none_kept, history);
    // fuseraft compacted the early turns into summaries: it forgot messages `none` kept.
    let forgot = k
        .forgotten("none", "fuseraft.compaction TriggerTurnCount=12")
        .unwrap();
    assert!(!forgot.is_empty());
    assert!(forgot.iter().all(|r| r.cells[2].is_none()));
    assert!(k
        .rows
        .iter()
        .any(|r| r.message.is_none() && r.cells[2].is_some_and(|c| c.state == KeptState::Summary)));
    // Nothing the compacted run sent is missing from the full history.
    assert!(k
        .forgotten("fuseraft.compaction TriggerTurnCount=12", "none")
        .unwrap()
        .is_empty());
    // The tokens each sent at that call match the full runs' samples.
    let c = compare::run(&s, &runs, &opts, None).unwrap();
    for (i, r) in c.runs.iter().enumerate() {
        let at = r.run.samples.iter().find(|x| x.call == 120).unwrap();
        assert_eq!(k.input_tokens[i], at.input_tokens, "{}", r.label);
    }
    let e = k.forgotten("none", "nobody").unwrap_err().to_string();
    assert!(e.contains("no strategy nobody"), "{e}");
    let e = compare::kept_at(&s, &runs, s.calls.len(), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not in session"), "{e}");
}

#[test]
fn compare_cli_pairs_each_param_with_the_strategy_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(["compare"])
        .arg(real_log(VR_FOREST))
        .args([
            "-s",
            "fuseraft.compaction",
            "--param",
            "TriggerTurnCount=12",
            "--strategy",
            "example.keep-last-results",
            "--param=keep_last=3",
            "--json",
        ])
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .env("CTXLAB_DB", dir.path().join("db.sqlite"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let labels: Vec<&str> = v["comparison"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "none",
            "recorded",
            "fuseraft.compaction TriggerTurnCount=12",
            "example.keep-last-results keep_last=3"
        ]
    );
}

/// Issue #21 point 7: progress is drawn on a terminal only. Run for a person (no `--json`) with
/// stderr a pipe, the `\rreplayed N of M` redraws must not pile up in the captured stderr.
#[test]
fn compare_cli_writes_no_progress_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(["compare"])
        .arg(real_log(VR_FOREST))
        .args(["-s", "example.keep-last-results", "--param=keep_last=3"])
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .env("CTXLAB_DB", dir.path().join("db.sqlite"))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !out.stdout.is_empty(),
        "the comparison table is still printed"
    );
    assert!(!err.contains("replayed"), "progress on a pipe: {err:?}");
}
