//! Issue #25, "a hostile world", the library side: concurrent writers and a writer killed
//! mid-write (finding 17), rows that do not read back (finding 18). Built from the project's own
//! samples; each test failed before its fix.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ctxlab::replay::{self, ReplayOptions, StrategySpec};
use ctxlab::store::Library;
use ctxlab::tokens;

fn sample(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel)
}

const CLAUDE: &str =
    "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";
const PI: &str = "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl";
const CODEX: &str = "codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl";

/// Where `cargo build --workspace` put the plugins.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = ctxlab::plugin_host::checkout_dir(&exe).expect("inside a cargo target folder");
    let fuseraft = dir.join(format!(
        "{}ctxlab_plugin_fuseraft{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        fuseraft.is_file(),
        "{} missing: run cargo build --workspace",
        fuseraft.display()
    );
    dir
}

fn ctxlab(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctxlab"));
    c.env("CTXLAB_DB", db)
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// What a finished writer reported: sessions it imported and runs it saved (each printed only
/// once its transaction committed).
#[derive(Default, Debug)]
struct Reported {
    sessions: Vec<i64>,
    runs: Vec<i64>,
}

fn reported(stdout: &str) -> Reported {
    let mut r = Reported::default();
    for line in stdout.lines() {
        if let Some(id) = line.strip_prefix("saved run ") {
            r.runs.push(id.trim().parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("session ") {
            let id = rest.split_whitespace().next().unwrap();
            r.sessions.push(id.parse().unwrap());
        }
    }
    r
}

/// A `tune --save-runs` of fuseraft's compaction over `values` TriggerTurnCount values.
fn sweep(db: &Path, log: &str, values: usize) -> Command {
    let v: Vec<String> = (0..values).map(|i| (11 + i).to_string()).collect();
    let mut c = ctxlab(db);
    c.arg("tune")
        .arg(sample(log))
        .args(["-s", "fuseraft.compaction", "--save-runs", "--threads", "1"])
        .arg("--sweep")
        .arg(format!("TriggerTurnCount={}", v.join(",")));
    c
}

/// One round: writers started together on `db` (new or not), one sweep SIGKILLed once it has
/// saved a run. Every other command succeeds; the database is intact and holds everything any
/// process reported saved, the killed one included.
fn round(db: &Path) {
    let mut cmds = vec![
        {
            let mut c = ctxlab(db);
            c.args(["library", "import"])
                .arg(sample(CLAUDE))
                .arg(sample(PI));
            c
        },
        {
            let mut c = ctxlab(db);
            c.args(["library", "import"])
                .arg(sample(CODEX))
                .arg(sample(CLAUDE));
            c
        },
        sweep(db, PI, 6),
        sweep(db, CLAUDE, 6),
    ];
    let mut victim = sweep(db, CODEX, 400).spawn().unwrap();
    let children: Vec<_> = cmds.iter_mut().map(|c| c.spawn().unwrap()).collect();
    // The victim dies after its first committed run, while the others write.
    let mut victim_saved = Vec::new();
    let mut lines = BufReader::new(victim.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("saved run ") {
            victim_saved.push(id.parse::<i64>().unwrap());
            break;
        }
    }
    victim.kill().unwrap(); // SIGKILL: no destructor, no flush, mid-transaction at worst
    let mut stderr = String::new();
    victim
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    victim.wait().unwrap();
    assert!(
        !victim_saved.is_empty(),
        "the sweep to kill ended before saving a run: {stderr}"
    );
    let mut all = Reported {
        runs: victim_saved,
        ..Default::default()
    };
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "writer {i} failed beside the others: {stderr}\n{stdout}"
        );
        let r = reported(&stdout);
        assert!(
            !r.sessions.is_empty() || !r.runs.is_empty(),
            "writer {i} reported nothing: {stdout}"
        );
        all.sessions.extend(r.sessions);
        all.runs.extend(r.runs);
    }
    let lib = Library::open(db).unwrap();
    lib.integrity_check().unwrap();
    let integrity: String = rusqlite::Connection::open(db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    for id in &all.sessions {
        lib.session(*id)
            .unwrap_or_else(|e| panic!("session {id} reported imported: {e}"));
    }
    for id in &all.runs {
        let run = lib
            .load_run(*id)
            .unwrap_or_else(|e| panic!("run {id} reported saved: {e}"));
        assert_eq!(run.samples.len() as u64, run.metrics.calls);
    }
    // The same log imported by several writers is one session.
    let listed = lib.session_list().unwrap();
    assert!(listed.skipped.is_empty(), "{:?}", listed.skipped);
    let mut keys: Vec<_> = listed
        .rows
        .iter()
        .map(|s| (s.files.clone(), s.session_key.clone()))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n);
    assert_eq!(n, 3, "the three sample logs, each once");
}

/// Finding 17: two `library import` into one library failed one of them in 6 of 6 trials
/// ("database is locked" partway through: a deferred transaction that reads, then writes, cannot
/// wait for the lock in WAL mode), and into a new library with "table sessions already exists" or
/// the false "is an SQLite database of another program" (the version check and the migrations
/// were separate steps). Writers into a new and into an existing library, one of them SIGKILLed.
#[cfg(unix)]
#[test]
fn concurrent_writers_and_a_killed_one_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for round_no in 0..3 {
        // A new library each round (created by whichever writer comes first)…
        let db = dir.path().join(format!("new-{round_no}.sqlite"));
        round(&db);
        // …then the same library again, existing, with rows and a WAL.
        round(&db);
    }
}

fn replay_none(session: &ctxlab::model::Session) -> replay::Run {
    let counter = tokens::counter("heuristic").unwrap();
    let opts = ReplayOptions::new(counter);
    replay::run(session, StrategySpec::None, &opts).unwrap()
}

/// A library with two sessions, a run of each and a profile; returns their ids.
fn library_with_rows(db: &Path) -> (i64, i64, i64, i64) {
    let mut lib = Library::open(db).unwrap();
    let a = ctxlab::formats::load_file(&sample(PI)).unwrap();
    let b = ctxlab::formats::load_file(&sample(CODEX)).unwrap();
    let (sa, _) = lib.import(&a).unwrap();
    let (sb, _) = lib.import(&b).unwrap();
    let ra = lib.save_run(sa, "a", &replay_none(&a)).unwrap();
    let rb = lib.save_run(sa, "b", &replay_none(&a)).unwrap();
    lib.save_profile(
        "fuseraft.compaction",
        "tight",
        &serde_json::json!({"TriggerTurnCount": 17}),
        "",
    )
    .unwrap();
    (sa, sb, ra, rb)
}

fn set(db: &Path, sql: &str, id: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    assert_eq!(conn.execute(sql, [id]).unwrap(), 1, "{sql}");
}

fn run_cli(db: &Path, args: &[&str]) -> (bool, String, String) {
    let out = ctxlab(db).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Finding 18: `stats = '{'` on one session made `library list` fail with a raw conversion error
/// naming no row; a bad `runs.metrics` failed `library show`. The bad row is skipped and named,
/// the others listed.
#[test]
fn a_bad_row_is_skipped_and_named_not_the_end_of_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("library.sqlite");
    let (sa, sb, ra, rb) = library_with_rows(&db);
    set(&db, "UPDATE sessions SET stats = '{' WHERE id = ?1", sb);
    set(&db, "UPDATE runs SET metrics = '[1,2]' WHERE id = ?1", rb);

    let lib = Library::open(&db).unwrap();
    let listed = lib.session_list().unwrap();
    assert_eq!(
        listed.rows.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![sa]
    );
    assert_eq!(listed.skipped.len(), 1);
    assert_eq!(listed.skipped[0].id, sb.to_string());
    assert!(
        listed.skipped[0].reason.contains("stats"),
        "{:?}",
        listed.skipped
    );
    let e = lib.session(sb).unwrap_err().to_string();
    assert!(
        e.contains(&format!("session {sb}")) && e.contains("stats"),
        "{e}"
    );
    let runs = lib.run_list(Some(sa)).unwrap();
    assert_eq!(runs.rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ra]);
    assert_eq!(runs.skipped[0].id, rb.to_string());
    assert!(runs.skipped[0].reason.contains("metrics"));
    drop(lib);

    let (ok, out, err) = run_cli(&db, &["library", "list"]);
    assert!(ok, "library list failed: {err}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with(&sa.to_string())),
        "{out}"
    );
    assert!(
        err.contains(&format!("session row {sb} skipped")) && err.contains("stats"),
        "{err}"
    );
    let (ok, out, err) = run_cli(&db, &["library", "list", "--json"]);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(doc["skipped"][0]["id"], sb.to_string());

    let (ok, out, err) = run_cli(&db, &["library", "show", &sa.to_string()]);
    assert!(ok, "library show failed: {err}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with(&format!("{ra} "))),
        "{out}"
    );
    assert!(err.contains(&format!("run row {rb} skipped")), "{err}");
    // The bad session itself: an error naming it and its column, not a raw conversion error.
    let (ok, _, err) = run_cli(&db, &["library", "show", &sb.to_string()]);
    assert!(!ok);
    assert!(
        err.contains(&format!("session {sb}: its stats column")),
        "{err}"
    );
}

/// Finding 18: a profile whose params were `[1,2]` exported the strategy's defaults as if they
/// were the profile. It is refused, naming the profile; saving one is refused too.
#[test]
fn a_profile_that_is_not_an_object_is_never_exported_as_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("library.sqlite");
    library_with_rows(&db);
    let (ok, good, err) = run_cli(
        &db,
        &["export", "-s", "fuseraft.compaction", "--profile", "tight"],
    );
    assert!(ok, "{err}");
    assert!(good.contains("TriggerTurnCount: 17"), "{good}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE profiles SET params = '[1,2]' WHERE name = 'tight'",
        [],
    )
    .unwrap();
    drop(conn);
    let (ok, out, err) = run_cli(
        &db,
        &["export", "-s", "fuseraft.compaction", "--profile", "tight"],
    );
    assert!(!ok, "exported: {out}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("profile tight of fuseraft.compaction") && err.contains("[1,2]"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&db, &["library", "profiles"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("profile row fuseraft.compaction/tight skipped"),
        "{err}"
    );
    let mut lib = Library::open(&db).unwrap();
    let e = lib
        .save_profile("fuseraft.compaction", "x", &serde_json::json!([1, 2]), "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("must be an object"), "{e}");
}
