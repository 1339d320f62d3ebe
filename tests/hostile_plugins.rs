//! Issue #25, "a hostile world", the plugin side: what the host checks of a plugin's description
//! and of the parameters it hands to one (findings 16, 20), a failing strategy among others in
//! `compare` (19), a grid too large for `tune` (10), the out-of-process runner (7). Built from the
//! project's own plugins (the example plugin's table, edited; the fixture plugins of
//! plugins/testing) and samples; each test failed before its fix.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxlab::plugin_host::{checkout_dir, Registry};
use ctxlab_plugin_api::abi::{EntryFn, PluginTable, StrRef, StrategyDesc, ENTRY_SYMBOL};
use serde_json::json;

fn sample(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel)
}

const CLAUDE: &str =
    "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";

/// A library `cargo build --workspace` made (`ctxlab_plugin_example`, `ctxlab_fixture_panics`…).
fn built(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = checkout_dir(&exe).expect("inside a cargo target folder");
    let p = dir.join(format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        p.is_file(),
        "{} missing: run cargo build --workspace",
        p.display()
    );
    p
}

fn build_dir() -> PathBuf {
    built("ctxlab_plugin_example")
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The example plugin's table (the library stays loaded for the process).
fn example_table() -> &'static PluginTable {
    let lib = unsafe { libloading::Library::new(built("ctxlab_plugin_example")) }.unwrap();
    let entry: EntryFn = unsafe { *lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()).unwrap() };
    std::mem::forget(lib);
    unsafe { &*entry() }
}

fn leak_str(bytes: &[u8]) -> StrRef {
    let b: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
    StrRef {
        ptr: b.as_ptr(),
        len: b.len(),
    }
}

/// A copy of the example plugin's table whose one strategy is edited by `edit` (its entry points
/// stay the example's), registered in a fresh registry: the number of strategies, or the refusal.
fn register_edited(
    edit: &dyn Fn(&mut StrategyDesc),
    len: Option<usize>,
) -> (Registry, Result<usize, String>) {
    let good = example_table();
    let mut desc: StrategyDesc = unsafe { std::ptr::read(good.strategies) };
    edit(&mut desc);
    let descs: &'static StrategyDesc = Box::leak(Box::new(desc));
    let mut t: PluginTable = unsafe { std::ptr::read(good) };
    t.strategies = descs;
    if let Some(n) = len {
        t.strategies_len = n;
    }
    let t: &'static PluginTable = Box::leak(Box::new(t));
    let mut reg = Registry::new();
    let r = reg
        .add_in_process(t, "edited example")
        .map_err(|r| r.reason);
    (reg, r)
}

fn refused(edit: &dyn Fn(&mut StrategyDesc)) -> String {
    register_edited(edit, None).1.expect_err("refused")
}

fn schema(json: &str) -> impl Fn(&mut StrategyDesc) + '_ {
    move |d: &mut StrategyDesc| d.params_schema = leak_str(json.as_bytes())
}

/// Finding 20: a strategy named `none` (hidden by the baseline), an id that is not UTF-8, a
/// schema whose default has the wrong type or whose minimum exceeds its maximum, a plugin with no
/// strategies: all were accepted. Each is refused, saying why; the unedited table still loads.
#[test]
fn discovery_refuses_what_no_user_could_run() {
    assert_eq!(register_edited(&|_| {}, None).1, Ok(1));
    for id in ["none", "recorded"] {
        let e = refused(&|d| d.id = leak_str(id.as_bytes()));
        assert!(e.contains(&format!("strategy id {id} is reserved")), "{e}");
    }
    let e = refused(&|d| d.id = leak_str(b"example.keep\xffresults"));
    assert!(
        e.contains("has an id that is not UTF-8") && e.contains("keep\\xffresults"),
        "{e}"
    );
    let spec =
        |extra: &str| format!(r#"[{{"name":"keep_last","type":"int","description":"d",{extra}}}]"#);
    let wrong_type = spec(r#""default":"five""#);
    let e = refused(&schema(&wrong_type));
    assert!(
        e.contains("keep_last") && e.contains("default") && e.contains("expected an integer"),
        "{e}"
    );
    let inverted = spec(r#""default":5,"min":10,"max":1"#);
    let e = refused(&schema(&inverted));
    assert!(e.contains("minimum 10 exceeds its maximum 1"), "{e}");
    let outside = spec(r#""default":50,"min":0,"max":10"#);
    let e = refused(&schema(&outside));
    assert!(e.contains("above the maximum 10"), "{e}");
    let e = register_edited(&|_| {}, Some(0)).1.unwrap_err();
    assert!(e.contains("exports no strategies"), "{e}");
}

/// Finding 20: a dangling symbolic link and a folder named like a plugin library were skipped in
/// silence by discovery; they are listed as refused, with why, beside the plugin that loads.
#[cfg(unix)]
#[test]
fn discovery_lists_dangling_links_and_folders_as_refused() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("libctxlab_plugin_example.so");
    std::fs::copy(built("ctxlab_plugin_example"), &real).unwrap();
    let dangling = d.path().join("libctxlab_plugin_gone.so");
    std::os::unix::fs::symlink(d.path().join("nowhere.so"), &dangling).unwrap();
    let folder = d.path().join("libctxlab_plugin_folder.so");
    std::fs::create_dir(&folder).unwrap();
    let reg = Registry::discover_in(&[ctxlab::plugin_host::SearchDir {
        path: d.path().to_path_buf(),
        origin: ctxlab::plugin_host::Origin::EnvVar,
    }]);
    assert!(reg.find("example.keep-last-results").is_some());
    let why = |p: &Path| {
        reg.refused()
            .iter()
            .find(|r| r.path == p)
            .map(|r| r.reason.clone())
            .unwrap_or_else(|| panic!("{} not listed: {:?}", p.display(), reg.refused()))
    };
    assert!(
        why(&dangling).contains("does not exist"),
        "{}",
        why(&dangling)
    );
    assert!(why(&folder).contains("a folder"), "{}", why(&folder));
    // And `ctxlab plugins` says so.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("plugins")
        .env("CTXLAB_PLUGIN_PATH", d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("libctxlab_plugin_gone.so") && text.contains("libctxlab_plugin_folder.so"),
        "{text}"
    );
}

/// Finding 16: CodeTether's `reserve_overhead_tokens` of 2^64-1 passed the schema check (an
/// integer, as u64) and reached the strategy as 0. The host checks every parameter against the
/// schema before `create`, integers within i64; 1e20 no longer saturates silently either.
#[test]
fn integer_parameters_out_of_range_never_reach_a_plugin() {
    let mut reg = Registry::new();
    reg.load_path(&built("ctxlab_plugin_codetether"))
        .unwrap_or_else(|r| panic!("{r}"));
    let s = reg.find("codetether.compression").unwrap();
    for big in [json!(18446744073709551615u64), json!(1e20), json!(-1e20)] {
        let e = s
            .create(&json!({ "reserve_overhead_tokens": big }))
            .err()
            .unwrap_or_else(|| panic!("{big} accepted"))
            .to_string();
        assert!(
            e.contains("reserve_overhead_tokens") && e.contains("out of range"),
            "{big}: {e}"
        );
    }
    assert!(s
        .create(&json!({ "reserve_overhead_tokens": 4096 }))
        .is_ok());
    // The host's own check, not the plugin's: the example plugin accepts keep_last up to 10,000;
    // a schema that says 3 is held by the host even though the plugin would take 7.
    let tight =
        r#"[{"name":"keep_last","type":"int","default":2,"min":0,"max":3,"description":"d"}]"#;
    let (reg, n) = register_edited(&schema(tight), None);
    assert_eq!(n, Ok(1));
    let s = &reg.strategies()[0];
    let e = s
        .create(&json!({ "keep_last": 7 }))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("keep_last: 7 is above the maximum 3"), "{e}");
    assert!(s.create(&json!({ "keep_last": 3 })).is_ok());
    // From the command line too.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("replay")
        .arg(sample(CLAUDE))
        .args(["-s", "codetether.compression", "--param"])
        .arg("reserve_overhead_tokens=18446744073709551615")
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reserve_overhead_tokens: 18446744073709551615 is out of range"),
        "{err}"
    );
}

/// Finding 19: with a panicking plugin among three strategies, `compare` printed nothing, wrote
/// no `--html`, saved nothing and exited 1. Now the others are shown, written and saved, the
/// failure is named in each, and the exit code says one failed (as `tune` reports per candidate).
#[test]
fn one_failing_strategy_does_not_wipe_out_compare() {
    let d = tempfile::tempdir().unwrap();
    let (html, db) = (d.path().join("r.html"), d.path().join("lib.sqlite"));
    let path = std::env::join_paths([build_dir(), built("ctxlab_fixture_panics")]).unwrap();
    let compare = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ctxlab"));
        c.arg("compare")
            .arg(sample(CLAUDE))
            .args(["-s", "fuseraft.compaction", "-s", "fixture.panics"])
            .args(["--param", "at_call=2", "-s", "example.keep-last-results"])
            .arg("--html")
            .arg(&html)
            .arg("--save")
            .arg("--db")
            .arg(&db)
            .env("CTXLAB_PLUGIN_PATH", &path);
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let out = compare(false);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for label in [
        "none",
        "recorded",
        "fuseraft.compaction",
        "example.keep-last-results",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(label)),
            "{label} missing: {stdout}"
        );
    }
    assert!(
        stdout.contains("FAILED: fixture.panics at_call=2 failed:")
            && stdout.contains("fixture panic at call 2"),
        "{stdout}"
    );
    assert!(
        stderr.contains("1 of 5 strategies failed: fixture.panics at_call=2"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(&html).expect("--html written");
    assert!(report.contains("Not compared: fixture.panics at_call=2 failed"));
    assert!(report.contains("example.keep-last-results"));
    assert!(stdout.contains("saved 4 runs of session"), "{stdout}");
    let lib = ctxlab::store::Library::open(&db).unwrap();
    let labels: Vec<String> = lib
        .runs(None)
        .unwrap()
        .into_iter()
        .map(|r| r.label)
        .collect();
    assert_eq!(labels.len(), 4, "{labels:?}");
    assert!(!labels.iter().any(|l| l.contains("fixture.panics")));
    drop(lib);
    // --json: the document with the failure in it, and the same exit code.
    let out = compare(true);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["comparison"]["runs"].as_array().unwrap().len(), 4);
    assert_eq!(
        doc["comparison"]["failed"][0]["label"],
        "fixture.panics at_call=2"
    );
}

/// Finding 10: `tune` built its whole grid before starting and had no bound (1M sets took 3.3
/// GB; 10M aborted). The grid is built set by set from its index, run in bounded chunks, and a
/// grid above the limit is refused at once with its size unless the limit is raised; `--json`
/// reports progress too (JSON lines on stderr).
#[test]
fn tune_streams_a_bounded_grid_and_reports_progress_in_json() {
    use ctxlab::tune::{self, Grid, Sweep, TuneOptions, TuneSession, MAX_CANDIDATES};
    let sweep = |name: &str, n: usize, from: usize| {
        let v: Vec<String> = (from..from + n).map(|i| i.to_string()).collect();
        Sweep::parse(&format!("{name}={}", v.join(","))).unwrap()
    };
    // The set built from its index is the one the whole grid holds there.
    let small = [sweep("A", 3, 0), sweep("B", 4, 0), sweep("C", 2, 0)];
    let g = Grid::new(&json!({"Mode": "x"}), &small).unwrap();
    let whole = tune::grid(&json!({"Mode": "x"}), &small).unwrap();
    assert_eq!(g.len(), 24);
    for (i, w) in whole.iter().enumerate() {
        assert_eq!(&g.get(i), w);
    }
    // 10^12 sets cost nothing to describe, and are refused with their size.
    let huge = [sweep("A", 1_000_000, 0), sweep("B", 1_000_000, 0)];
    let g = Grid::new(&json!({}), &huge).unwrap();
    assert_eq!(g.len(), 1_000_000_000_000);
    let e = g.check_size(None).unwrap_err().to_string();
    assert!(
        e.contains("1,000,000,000,000 parameter sets")
            && e.contains(&format!("more than the {}", "10,000"))
            && e.contains("--max-candidates 1000000000000"),
        "{e}"
    );
    assert_eq!(MAX_CANDIDATES, 10_000);
    // Past usize: refused, not wrapped.
    let many: Vec<Sweep> = (0..70).map(|i| sweep(&format!("P{i}"), 2, 0)).collect();
    assert!(Grid::new(&json!({}), &many).is_err());

    // A run over chunk boundaries (one thread: chunks of 32) keeps grid order and progress.
    let mut reg = Registry::new();
    reg.load_path(&built("ctxlab_plugin_fuseraft")).unwrap();
    let entry = reg.find("fuseraft.compaction").unwrap();
    let session = ctxlab::formats::load_file(&sample(CLAUDE)).unwrap();
    let opts = ctxlab::compare::Settings::default()
        .options(&session)
        .unwrap();
    let sessions = [TuneSession {
        session: &session,
        opts,
    }];
    let sweeps = [sweep("TriggerTurnCount", 70, 11)];
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |d: usize, t: usize| seen.lock().unwrap().push((d, t));
    let mut o = TuneOptions {
        threads: 1,
        progress: Some(&progress),
        max_candidates: Some(69),
        ..Default::default()
    };
    let e = tune::run(&sessions, entry, &json!({}), &sweeps, &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("70 parameter sets") && e.contains("--max-candidates 70"),
        "{e}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "refused before anything ran"
    );
    o.max_candidates = Some(70);
    let r = tune::run(&sessions, entry, &json!({}), &sweeps, &o).unwrap();
    assert_eq!(r.candidates.len(), 70);
    for (i, c) in r.candidates.iter().enumerate() {
        assert_eq!(c.index, i);
        assert_eq!(c.swept["TriggerTurnCount"], json!(11 + i));
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 70);
    assert_eq!(*seen.last().unwrap(), (70, 70));
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0));

    // The command line: refused at once (it used to build the grid, then run it all)…
    let big = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("tune")
        .arg(sample(CLAUDE))
        .args(["-s", "fuseraft.compaction", "--sweep"])
        .arg(format!("TriggerTurnCount={}", big(1000)))
        .arg("--sweep")
        .arg(format!("KeepRecentTurns={}", big(1000)))
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("tune of 1,000,000 sets was not refused: it ran");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(err.contains("1,000,000 parameter sets"), "{err}");
    // …and --json reports progress on stderr, one JSON line each, ending at the total.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("tune")
        .arg(sample(CLAUDE))
        .args(["-s", "fuseraft.compaction", "--json", "--sweep"])
        .arg("TriggerTurnCount=11,12,13,14")
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["tune"]["candidates"].as_array().map(Vec::len),
        Some(4),
        "{doc}"
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("{\"progress\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    assert_eq!(
        lines.last().unwrap()["progress"],
        json!({"done": 4, "total": 4})
    );
}

const PI: &str = "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl";

/// Finding 7: an in-process plugin that aborts, exits or loops takes ctxlab down with it (or
/// hangs it). With `--isolate` each strategy runs in a child process speaking the same ABI over a
/// pipe: the same decisions as in-process; a plugin that aborts, exits, loops past the time limit
/// or eats memory past the memory limit fails its own run with what happened, and the comparison
/// goes on around it.
#[cfg(unix)]
#[test]
fn isolated_strategies_decide_alike_and_fail_alone() {
    use ctxlab::plugin_host::Isolation;
    use ctxlab::replay::{self, ReplayOptions, StrategySpec};
    // The same run in a child process as in this one.
    let session = ctxlab::formats::load_file(&sample(PI)).unwrap();
    let mut reg = Registry::new();
    reg.load_path(&built("ctxlab_plugin_example")).unwrap();
    let entry = reg.find("example.keep-last-results").unwrap().clone();
    let iso = Isolation::new(PathBuf::from(env!("CARGO_BIN_EXE_ctxlab")));
    let opts = ReplayOptions::new(ctxlab::tokens::counter("heuristic").unwrap());
    let params = json!({"keep_last": 2});
    let here = replay::run(
        &session,
        StrategySpec::Plugin {
            entry: entry.clone(),
            params: params.clone(),
        },
        &opts,
    )
    .unwrap();
    let isolated = entry.isolated(iso.clone());
    assert!(isolated.is_isolated());
    let there = replay::run(
        &session,
        StrategySpec::Plugin {
            entry: isolated.clone(),
            params: params.clone(),
        },
        &opts,
    )
    .unwrap();
    assert!(
        here.metrics
            .compactions
            .values()
            .map(|c| c.count)
            .sum::<u64>()
            > 0
    );
    assert_eq!(here.metrics, there.metrics);
    assert_eq!(here.samples, there.samples);
    assert_eq!(here.events, there.events);
    // The host's schema check still comes first; the plugin's own refusal comes back in words.
    let e = isolated
        .create(&json!({"keep_last": -1}))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("keep_last: -1 is below the minimum 0"), "{e}");

    // Each way a plugin can end or hang its process, each failing alone in one comparison.
    let path = std::env::join_paths([build_dir(), built("ctxlab_fixture_panics")]).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxlab"));
    cmd.arg("compare")
        .arg(sample(PI))
        .args([
            "--isolate",
            "--isolate-timeout",
            "10",
            "--isolate-memory",
            "512",
        ])
        .args(["-s", "example.keep-last-results"]);
    for how in ["abort", "exit", "loop", "memory"] {
        cmd.args(["-s", "fixture.panics", "--param", "at_call=3", "--param"])
            .arg(format!("how={how}"));
    }
    let out = cmd.env("CTXLAB_PLUGIN_PATH", &path).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("example.keep-last-results")),
        "{stdout}"
    );
    let failed = |how: &str, what: &str| {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("FAILED: fixture.panics at_call=3 how={how}")))
            .unwrap_or_else(|| panic!("{how} not reported: {stdout}\n{stderr}"));
        assert!(
            line.contains("failed at call 3") && line.contains(what),
            "{how}: {line}"
        );
    };
    failed("abort", "ended by signal 6 (SIGABRT)");
    failed("exit", "exited with code 3");
    failed("loop", "no answer within 10 s");
    // Past the address-space limit the allocator fails and Rust aborts.
    failed("memory", "ended by signal 6");
    assert!(stderr.contains("4 of 7 strategies failed"), "{stderr}");
}
