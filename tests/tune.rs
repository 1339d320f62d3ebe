//! tune: the Pareto front on a crafted case, constraints, the grid, determinism over threads,
//! several logs at once, cancellation, explanations; and a sweep killed mid-write leaves every
//! committed run readable.

mod compare_support;
use compare_support::*;

use ctxlab::store::Library;
use ctxlab::tune::{self, Constraint, Objective, Sweep, TuneOptions, TuneSession};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::sync::atomic::AtomicBool;

#[test]
fn pareto_front_of_a_crafted_case() {
    // (index, cost, recall)
    let pts = [
        (0, 10.0, 0.90), // on the front
        (1, 12.0, 0.85), // dominated by 0
        (2, 8.0, 0.70),  // on the front (cheapest)
        (3, 15.0, 0.99), // on the front (best recall)
        (4, 10.0, 0.90), // identical to 0: only the first is kept
        (5, 9.0, 0.70),  // dominated by 2 (same recall, dearer)
        (6, 11.0, 0.95), // on the front
        (7, 16.0, 0.99), // dominated by 3
    ];
    assert_eq!(tune::pareto_front(&pts), vec![2, 0, 6, 3]);
    assert!(tune::pareto_front(&[]).is_empty());
}

#[test]
fn sweeps_constraints_and_objectives_parse() {
    let s = Sweep::parse("keep_last_candidates=[16,8],[4],[2,1]").unwrap();
    assert_eq!(s.param, "keep_last_candidates");
    assert_eq!(s.values, vec![json!([16, 8]), json!([4]), json!([2, 1])]);
    let s = Sweep::parse("Mode=llm,intent").unwrap();
    assert_eq!(s.values, vec![json!("llm"), json!("intent")]);
    assert!(Sweep::parse("Mode").is_err());
    assert!(Sweep::parse("Mode=").is_err());

    let c = Constraint::parse("overflow=0").unwrap();
    assert_eq!(
        (c.metric.as_str(), c.op.as_str(), c.value),
        ("overflow", "=", 0.0)
    );
    let c = Constraint::parse("recall >= 0.9").unwrap();
    assert_eq!((c.metric.as_str(), c.op.as_str()), ("recall", ">="));
    assert_eq!(Constraint::parse("cost<1_000").unwrap().value, 1000.0);
    let e = Constraint::parse("speed>1").unwrap_err().to_string();
    assert!(e.contains("overflow") && e.contains("recall"), "{e}");
    let t = tune::Totals {
        calls_over_window: 0,
        recall_lower: 0.95,
        ..Default::default()
    };
    assert!(Constraint::parse("overflow=0").unwrap().holds(&t));
    assert!(Constraint::parse("recall>=0.95").unwrap().holds(&t));
    assert!(!Constraint::parse("recall>0.95").unwrap().holds(&t));
    assert_eq!("recall".parse::<Objective>().unwrap(), Objective::Recall);
    assert!("speed".parse::<Objective>().is_err());
}

#[test]
fn the_grid_varies_the_last_sweep_fastest_over_the_base() {
    let g = tune::grid(
        &json!({"Mode": "llm"}),
        &[
            Sweep::parse("A=1,2").unwrap(),
            Sweep::parse("B=x,y,z").unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(g.len(), 6);
    assert_eq!(g[0].1, json!({"Mode": "llm", "A": 1, "B": "x"}));
    assert_eq!(g[1].1, json!({"Mode": "llm", "A": 1, "B": "y"}));
    assert_eq!(g[3].1, json!({"Mode": "llm", "A": 2, "B": "x"}));
    assert_eq!(g[5].0.len(), 2, "swept values only");
}

fn sweep_opts(threads: usize) -> TuneOptions<'static> {
    TuneOptions {
        objective: Objective::Cost,
        constraints: vec![Constraint::parse("overflow=0").unwrap()],
        threads,
        ..Default::default()
    }
}

#[test]
fn tune_is_deterministic_explains_its_best_set_and_tunes_several_logs_together() {
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    let (a, b) = (session(VR_FOREST), session(FUNDWISE));
    let sessions = vec![
        TuneSession {
            session: &a,
            opts: options(&a),
        },
        TuneSession {
            session: &b,
            opts: options(&b),
        },
    ];
    let sweeps = [
        Sweep::parse("TriggerTurnCount=20,40,80").unwrap(),
        Sweep::parse("KeepRecentTurns=4,10").unwrap(),
    ];
    let one = tune::run(&sessions, &e, &json!({}), &sweeps, &sweep_opts(1)).unwrap();
    let many = tune::run(&sessions, &e, &json!({}), &sweeps, &sweep_opts(4)).unwrap();
    assert_eq!(one, many, "same result whatever the number of threads");
    assert_eq!(one.candidates.len(), 6);
    assert_eq!(one.sessions, vec![a.id.clone(), b.id.clone()]);
    for c in &one.candidates {
        assert!(c.error.is_none(), "{:?}", c.error);
        assert_eq!(c.per_session.len(), 2);
        let sum: f64 = c.per_session.iter().map(|m| m.cost.total_usd).sum();
        assert!(
            (c.totals.cost_usd - sum).abs() < 1e-9,
            "totals add the sessions up"
        );
    }
    let best = one.best.expect("some set keeps within the window");
    let bc = &one.candidates[best];
    assert!(bc.feasible && bc.totals.calls_over_window == 0);
    assert!(one
        .candidates
        .iter()
        .filter(|c| c.feasible)
        .all(|c| c.totals.cost_usd >= bc.totals.cost_usd));
    // The front: sorted by cost, recall strictly rising, nobody dominates a member.
    let front: Vec<&tune::Candidate> = one.pareto.iter().map(|&i| &one.candidates[i]).collect();
    assert!(!front.is_empty());
    assert!(front
        .windows(2)
        .all(|w| w[0].totals.cost_usd <= w[1].totals.cost_usd
            && w[0].totals.recall_lower < w[1].totals.recall_lower));
    for f in &front {
        assert!(!one
            .candidates
            .iter()
            .any(|c| c.totals.cost_usd < f.totals.cost_usd
                && c.totals.recall_lower > f.totals.recall_lower));
    }
    // Each compaction of the best set is explained with the strategy's own reason.
    assert!(!one.explanation.is_empty());
    let p = &one.explanation[0];
    assert!(
        p.why.starts_with(&format!("fired at call {}", p.call)),
        "{}",
        p.why
    );
    assert!(p.why.contains("TriggerTurnCount"), "{}", p.why);
}

#[test]
fn an_unknown_swept_parameter_and_a_cancelled_sweep_are_errors() {
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    let a = session(FUNDWISE);
    let sessions = vec![TuneSession {
        session: &a,
        opts: options(&a),
    }];
    let err = tune::run(
        &sessions,
        &e,
        &json!({}),
        &[Sweep::parse("Nope=1,2").unwrap()],
        &sweep_opts(1),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("no parameter Nope") && err.contains("TriggerTurnCount"),
        "{err}"
    );
    let cancel = AtomicBool::new(true);
    let opts = TuneOptions {
        cancel: Some(&cancel),
        ..sweep_opts(2)
    };
    let err = tune::run(
        &sessions,
        &e,
        &json!({}),
        &[Sweep::parse("TriggerTurnCount=10,20").unwrap()],
        &opts,
    )
    .unwrap_err();
    assert_eq!(err.code(), "cancelled");
    // A set the strategy refuses is reported on its candidate; the others still run.
    let r = tune::run(
        &sessions,
        &e,
        &json!({}),
        &[Sweep::parse("TriggerTurnCount=-5,20").unwrap()],
        &sweep_opts(2),
    )
    .unwrap();
    assert!(r.candidates[0]
        .error
        .as_deref()
        .is_some_and(|m| m.contains("TriggerTurnCount")));
    assert!(!r.candidates[0].feasible);
    assert!(r.candidates[1].error.is_none());
    assert_eq!(r.best, Some(1));
}

#[test]
fn killing_a_sweep_mid_write_keeps_every_committed_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("library.sqlite");
    let values: Vec<String> = (0..200).map(|i| (5 + i).to_string()).collect();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("tune")
        .arg(real_log(VR_FOREST))
        .args([
            "-s",
            "fuseraft.compaction",
            "--save-runs",
            "--threads",
            "2",
            "--sweep",
        ])
        .arg(format!("TriggerTurnCount={}", values.join(",")))
        .arg("--db")
        .arg(&db)
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut saved = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while saved.len() < 5 {
        let line = lines
            .next()
            .expect("ctxlab tune ended before saving 5 runs")
            .unwrap();
        if let Some(id) = line.strip_prefix("saved run ") {
            saved.push(id.parse::<i64>().unwrap());
        }
    }
    child.kill().unwrap(); // SIGKILL on unix: no destructor, no flush, mid-transaction at worst
    child.wait().unwrap();
    let lib = Library::open(&db).unwrap();
    lib.integrity_check().unwrap();
    for id in &saved {
        let run = lib.load_run(*id).unwrap();
        assert_eq!(run.strategy, "fuseraft.compaction");
        assert_eq!(run.samples.len() as u64, run.metrics.calls);
    }
    let stored = lib.runs(None).unwrap();
    assert!(stored.len() >= saved.len());
    assert!(
        stored.len() < values.len(),
        "the sweep was killed before its end"
    );
}
