//! The SQLite library: round trips, migrations from an old schema, refusal of databases it must
//! not touch, moved and changed logs.

use ctxlab::replay::{self, ReplayOptions, StrategySpec};
use ctxlab::store::{Imported, Library, SourceStatus, SCHEMA_VERSION};
use ctxlab::tokens;
use std::path::{Path, PathBuf};

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/real-logs/claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl"
);

fn real_log() -> &'static Path {
    let p = Path::new(LOG);
    assert!(
        p.is_file(),
        "missing real log {LOG}: ../shared/real-logs must sit beside the checkout"
    );
    p
}

/// A copy of the real log in `dir`, so a test can move or change it.
fn copy_log(dir: &Path) -> PathBuf {
    let to = dir.join("session.jsonl");
    std::fs::copy(real_log(), &to).unwrap();
    to
}

/// Equality of runs, reporting the first field that differs instead of both runs whole.
fn assert_same_run(a: &replay::Run, b: &replay::Run) {
    if a == b {
        return;
    }
    let (va, vb) = (
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap(),
    );
    for (k, x) in va.as_object().unwrap() {
        let y = &vb[k];
        if x != y {
            let (xs, ys) = (x.to_string(), y.to_string());
            let at = xs
                .bytes()
                .zip(ys.bytes())
                .position(|(p, q)| p != q)
                .unwrap_or(0);
            let from = at.saturating_sub(80);
            panic!(
                "runs differ in {k}: {} … vs … {}",
                &xs[from..(at + 80).min(xs.len())],
                &ys[from..(at + 80).min(ys.len())]
            );
        }
    }
    panic!("runs differ outside their JSON form (float bits?)");
}

fn replay_none(session: &ctxlab::model::Session) -> replay::Run {
    let counter = tokens::counter("heuristic").unwrap();
    let mut opts = ReplayOptions::new(counter.clone());
    opts.calibration = tokens::calibrate_session(session, counter.as_ref());
    replay::run(session, StrategySpec::None, &opts).unwrap()
}

#[test]
fn sessions_runs_profiles_and_settings_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let log = copy_log(dir.path());
    let db = dir.path().join("lib").join("library.sqlite");
    let session = ctxlab::formats::load_file(&log).unwrap();
    let run = replay_none(&session);
    let (sid, rid) = {
        let mut lib = Library::open(&db).unwrap();
        assert_eq!(lib.schema_version().unwrap(), SCHEMA_VERSION);
        let (sid, how) = lib.import(&session).unwrap();
        assert_eq!(how, Imported::New);
        assert_eq!(lib.import(&session).unwrap(), (sid, Imported::Unchanged));
        let rid = lib.save_run(sid, "baseline", &run).unwrap();
        lib.save_profile(
            "fuseraft.compaction",
            "tight",
            &serde_json::json!({"TriggerTurnCount": 20}),
            "tuned",
        )
        .unwrap();
        lib.set_setting("counter", &serde_json::json!("o200k"))
            .unwrap();
        (sid, rid)
    };
    // A fresh connection sees everything committed.
    let lib = Library::open(&db).unwrap();
    lib.integrity_check().unwrap();
    let rec = lib.session(sid).unwrap();
    assert_eq!(rec.session_key, session.id);
    assert_eq!(rec.stats.calls, session.calls.len() as u64);
    assert_eq!(rec.runs, 1);
    assert_eq!(rec.files[0], std::path::absolute(&log).unwrap());
    let back = lib.load_run(rid).unwrap();
    assert_same_run(&back, &run);
    let listed = lib.runs(Some(sid)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].label, "baseline");
    assert_eq!(listed[0].metrics, run.metrics);
    let p = lib.profile("fuseraft.compaction", "tight").unwrap();
    assert_eq!(p.params["TriggerTurnCount"], 20);
    let e = lib
        .profile("fuseraft.compaction", "loose")
        .unwrap_err()
        .to_string();
    assert!(e.contains("its profiles: tight"), "{e}");
    assert_eq!(
        lib.setting("counter").unwrap(),
        Some(serde_json::json!("o200k"))
    );
    assert_eq!(lib.setting("nothing").unwrap(), None);
    let reread = lib.load_session(sid).unwrap();
    assert_eq!(reread.calls.len(), session.calls.len());
}

#[test]
fn removing_a_session_removes_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = copy_log(dir.path());
    let session = ctxlab::formats::load_file(&log).unwrap();
    let run = replay_none(&session);
    let mut lib = Library::open(&dir.path().join("l.sqlite")).unwrap();
    let (sid, _) = lib.import(&session).unwrap();
    let rid = lib.save_run(sid, "", &run).unwrap();
    lib.remove_session(sid).unwrap();
    assert!(lib.runs(None).unwrap().is_empty());
    assert!(lib
        .load_run(rid)
        .unwrap_err()
        .to_string()
        .contains("no run"));
    assert!(lib.remove_session(sid).is_err());
}

#[test]
fn moved_and_changed_logs_are_reported_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = copy_log(dir.path());
    let session = ctxlab::formats::load_file(&log).unwrap();
    let mut lib = Library::open(&dir.path().join("l.sqlite")).unwrap();
    let (sid, _) = lib.import(&session).unwrap();
    assert_eq!(lib.check_source(sid).unwrap(), SourceStatus::Unchanged);

    let moved = dir.path().join("moved.jsonl");
    std::fs::rename(&log, &moved).unwrap();
    assert!(
        matches!(lib.check_source(sid).unwrap(), SourceStatus::Missing { file } if file.ends_with("session.jsonl"))
    );
    let e = lib.load_session(sid).unwrap_err().to_string();
    assert!(e.contains("no longer there"), "{e}");

    std::fs::rename(&moved, &log).unwrap();
    let mut text = std::fs::read(&log).unwrap();
    text.extend_from_slice(b"\n");
    std::fs::write(&log, text).unwrap();
    assert!(matches!(
        lib.check_source(sid).unwrap(),
        SourceStatus::Changed { .. }
    ));
    let e = lib.load_session(sid).unwrap_err().to_string();
    assert!(e.contains("changed since it was imported"), "{e}");
    // Importing it again refreshes the reference.
    let again = ctxlab::formats::load_file(&log).unwrap();
    assert_eq!(lib.import(&again).unwrap(), (sid, Imported::Updated));
    assert_eq!(lib.check_source(sid).unwrap(), SourceStatus::Unchanged);
}

/// The schema as version 1 shipped it: the upgrade must keep its rows.
const SCHEMA_V1: &str = "CREATE TABLE sessions (
        id INTEGER PRIMARY KEY, session_key TEXT NOT NULL, title TEXT, format TEXT NOT NULL,
        files TEXT NOT NULL, source_hash TEXT NOT NULL, file_hash TEXT NOT NULL,
        bytes INTEGER NOT NULL, stats TEXT NOT NULL, imported_at INTEGER NOT NULL,
        UNIQUE (files, session_key));
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL, strategy TEXT NOT NULL, plugin TEXT, params TEXT NOT NULL,
        budget TEXT NOT NULL, counter TEXT NOT NULL, metrics TEXT NOT NULL, run TEXT NOT NULL,
        series BLOB NOT NULL, series_format TEXT NOT NULL);
    CREATE INDEX runs_by_session ON runs(session);
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    PRAGMA application_id = 1668574306;
    PRAGMA user_version = 1;";

#[test]
fn an_old_database_is_upgraded_in_place_keeping_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.sqlite");
    let log = copy_log(dir.path());
    let session = ctxlab::formats::load_file(&log).unwrap();
    let run = replay_none(&session);
    // Write a v1 library with this build (sessions and runs did not change since), then put the
    // file back to version 1 as an old ctxlab left it.
    let (sid, rid) = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(SCHEMA_V1).unwrap();
        drop(c);
        let mut lib = Library::open(&db).unwrap();
        let (sid, _) = lib.import(&session).unwrap();
        (sid, lib.save_run(sid, "", &run).unwrap())
    };
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "DROP TABLE profiles; ALTER TABLE runs DROP COLUMN label; PRAGMA user_version = 1;",
        )
        .unwrap();
        let v: u32 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 1);
    }
    let mut lib = Library::open(&db).unwrap();
    assert_eq!(lib.schema_version().unwrap(), SCHEMA_VERSION);
    assert_same_run(&lib.load_run(rid).unwrap(), &run);
    assert_eq!(lib.runs(Some(sid)).unwrap()[0].label, "");
    lib.save_profile("x", "p", &serde_json::json!({}), "")
        .unwrap();
    lib.integrity_check().unwrap();
}

#[test]
fn newer_corrupt_and_foreign_databases_get_a_clear_error_and_stay_untouched() {
    let dir = tempfile::tempdir().unwrap();

    let newer = dir.path().join("newer.sqlite");
    Library::open(&newer).unwrap();
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {};", SCHEMA_VERSION + 7))
        .unwrap();
    let e = Library::open(&newer).unwrap_err();
    assert_eq!(e.code(), "library");
    assert!(e.to_string().contains("newer ctxlab"), "{e}");

    let garbage = dir.path().join("garbage.sqlite");
    let bytes: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let e = Library::open(&garbage).unwrap_err();
    assert_eq!(e.code(), "library");
    assert!(e.to_string().contains("not an SQLite database"), "{e}");
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes, "never reset");

    let foreign = dir.path().join("foreign.sqlite");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    let e = Library::open(&foreign).unwrap_err().to_string();
    assert!(e.contains("another program"), "{e}");
    let kept: String = rusqlite::Connection::open(&foreign)
        .unwrap()
        .query_row("SELECT body FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, "mine");
}
