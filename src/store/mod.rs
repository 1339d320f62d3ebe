//! The library: one SQLite database (rusqlite, SQLite bundled) holding imported sessions, replay
//! runs with their series, tuned profiles and settings. docs/library.md describes the schema.
//!
//! Invariants:
//! - a log is referenced, never copied: a session row keeps its files and their hash, and the
//!   session is re-read on demand after checking the files are still there and unchanged;
//! - every write is one transaction, so a crash loses at most the write in flight (WAL mode);
//! - a database that is corrupt, from a newer ctxlab or not ctxlab's is reported, never reset.

mod profiles;
mod rows;
mod runs;
mod schema;
mod series;
mod sessions;

pub use profiles::Profile;
pub use rows::{Listing, SkippedRow};
pub use runs::{RunRecord, SERIES_FORMAT};
pub use schema::VERSION as SCHEMA_VERSION;
pub use sessions::{file_hash, Imported, SessionRecord, SessionStats, SourceStatus};

use crate::error::{Error, Result};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};

/// The environment variable that names the library file (the CLI's `--db` wins over it).
pub const DB_VAR: &str = "CTXLAB_DB";

/// An open library.
pub struct Library {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("path", &self.path).finish()
    }
}

/// The library file: `explicit`, else `$CTXLAB_DB`, else `library.sqlite` in the user's data folder.
pub fn default_path(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(DB_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    dirs::data_dir()
        .map(|d| d.join("ctxlab").join("library.sqlite"))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "no user data folder is known on this system; pass --db FILE or set {DB_VAR}"
            ))
        })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Library {
    /// Opens (creating it and its folder if needed) and migrates the library at `path`.
    pub fn open(path: &Path) -> Result<Library> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| db_error(path, e))?;
        let mut lib = Library {
            conn,
            path: path.to_path_buf(),
        };
        lib.setup()?;
        Ok(lib)
    }

    /// Opens the library at `default_path(explicit)`.
    pub fn open_default(explicit: Option<&Path>) -> Result<Library> {
        Library::open(&default_path(explicit)?)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database (after migration: [`SCHEMA_VERSION`]).
    pub fn schema_version(&self) -> Result<u32> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> Error {
        db_error(&self.path, e)
    }

    fn setup(&mut self) -> Result<()> {
        // First, before any statement that may meet a lock: another process (the app beside the
        // CLI, a second import) may hold the write lock for a moment, and every later step waits
        // for it instead of failing with "database is locked".
        self.conn
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| self.err(e))?;
        // Up to date and ours: nothing to write (a read transaction sees one consistent state).
        if self.check_header(false)? {
            // Migrating, or creating a new library: the check and every migration are one
            // IMMEDIATE transaction, so two processes opening a new library at once do not both
            // see an empty file and both create its tables, and none sees the other's half-made
            // schema and takes it for another program's database.
            self.check_header(true)?;
        }
        // WAL persists in the file: switch once (it needs a moment alone with the file).
        let mode: String = self
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            self.conn
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| self.err(e))?;
        }
        // NORMAL in WAL mode: a power loss may drop the last commits, a crash of the process never.
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| self.err(e))?;
        self.conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Checks, in one transaction, that the database is a ctxlab library (or empty) of a version
    /// this build reads. With `migrate`, the transaction is IMMEDIATE and also applies the missing
    /// migrations; without, it only reads and answers whether migrations are missing.
    fn check_header(&mut self, migrate: bool) -> Result<bool> {
        let behavior = if migrate {
            rusqlite::TransactionBehavior::Immediate
        } else {
            rusqlite::TransactionBehavior::Deferred
        };
        let path = self.path.clone();
        let fail = |message: String| Error::Library {
            path: path.clone(),
            message,
        };
        let err = |e| db_error(&path, e);
        let tx = self.conn.transaction_with_behavior(behavior).map_err(err)?;
        // The first read of the header: a file that is not a database fails here.
        let version: u32 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        let app_id: i32 = tx
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(err)?;
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(err)?;
        if app_id != schema::APPLICATION_ID && (app_id != 0 || version != 0 || tables != 0) {
            return Err(fail(
                "is an SQLite database of another program, not a ctxlab library; ctxlab leaves it as it is: pass --db or set CTXLAB_DB to another file".into(),
            ));
        }
        if version > schema::VERSION {
            return Err(fail(format!(
                "was written by a newer ctxlab (schema version {version}; this ctxlab knows up to {}): update ctxlab, or pass --db to use another library",
                schema::VERSION
            )));
        }
        let missing = version < schema::VERSION;
        if missing && migrate {
            for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.execute_batch(sql).map_err(|e| {
                    fail(format!("migration to schema version {} failed: {e}", i + 1))
                })?;
            }
            tx.pragma_update(None, "application_id", schema::APPLICATION_ID)
                .map_err(err)?;
            tx.pragma_update(None, "user_version", schema::VERSION)
                .map_err(err)?;
            tx.commit().map_err(err)?;
            return Ok(false);
        }
        Ok(missing)
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Library {
            path: self.path.clone(),
            message: message.into(),
        }
    }

    /// Runs `f` in one transaction: all of its writes land, or none.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let path = self.path.clone();
        // IMMEDIATE: the write lock is taken (waiting up to the busy timeout) before the first
        // read. A deferred transaction that reads and then writes cannot wait for the lock in WAL
        // mode: it fails at once with "database is locked" when another writer came between.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| db_error(&path, e))?;
        let out = f(&tx).map_err(|e| db_error(&path, e))?;
        tx.commit().map_err(|e| db_error(&path, e))?;
        Ok(out)
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// A setting (a JSON value), if set.
    pub fn setting(&self, key: &str) -> Result<Option<serde_json::Value>> {
        use rusqlite::OptionalExtension;
        let text: Option<String> = self
            .conn
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| self.fail(format!("setting {key} is not valid JSON: {e}")))
        })
        .transpose()
    }

    pub fn set_setting(&mut self, key: &str, value: &serde_json::Value) -> Result<()> {
        let text = value.to_string();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, &text),
            )
        })?;
        Ok(())
    }

    /// Checks every page of the database (slow on large libraries; for diagnostics and tests).
    pub fn integrity_check(&self) -> Result<()> {
        let answer: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if answer == "ok" {
            Ok(())
        } else {
            Err(self.fail(format!("integrity check failed: {answer}")))
        }
    }
}

/// Words a user can act on for SQLite's failures.
fn db_error(path: &Path, e: rusqlite::Error) -> Error {
    let message = match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => "is not an SQLite database (or is damaged beyond reading); ctxlab leaves it as it is: move it away, or pass --db or set CTXLAB_DB to use another file".to_string(),
        Some(ErrorCode::DatabaseCorrupt) => format!("is corrupt ({e}); ctxlab leaves it as it is: restore a backup or move it away to start a new library"),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => format!("is locked by another process ({e}); try again when it is done"),
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) | Some(ErrorCode::PermissionDenied) => format!("cannot be opened for writing ({e})"),
        Some(ErrorCode::DiskFull) => format!("cannot be written: the disk is full ({e})"),
        _ => e.to_string(),
    };
    Error::Library {
        path: path.to_path_buf(),
        message,
    }
}
