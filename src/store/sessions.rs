//! Sessions in the library: where the log is, what it hashed to, what it holds.

use super::rows::{collect, json_column, Listing};
use super::{now_ms, Library};
use crate::error::{Error, Result};
use crate::model::Session;
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a session holds, kept so the library lists it without re-reading the log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    pub agents: u64,
    pub messages: u64,
    pub calls: u64,
    pub recorded_compactions: u64,
    pub usage_only: bool,
    pub model: Option<String>,
}

impl SessionStats {
    pub fn of(s: &Session) -> SessionStats {
        SessionStats {
            agents: s.agents.len() as u64,
            messages: s.messages.len() as u64,
            calls: s.calls.len() as u64,
            recorded_compactions: s.compactions.len() as u64,
            usage_only: s.usage_only,
            model: crate::replay::session_model(s).map(String::from),
        }
    }
}

/// A session of the library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: i64,
    /// The session's own id (from the log).
    pub session_key: String,
    /// The name the session is shown by (`naming::display_name`: its title, else its first
    /// prompt and project folder); `None` in rows written before names were derived.
    pub title: Option<String>,
    pub format: String,
    /// The files it was read from, absolute, the main one first.
    pub files: Vec<PathBuf>,
    /// The reader's content hash (`Source::hash`).
    pub source_hash: String,
    /// BLAKE3 of the files' bytes in order: checked before the log is re-read.
    pub file_hash: String,
    pub bytes: u64,
    pub stats: SessionStats,
    pub imported_at: i64,
    /// Runs stored for it.
    pub runs: u64,
}

/// Whether the log behind a session is still what was imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SourceStatus {
    Unchanged,
    /// A file is no longer at its path (moved or deleted).
    Missing {
        file: PathBuf,
    },
    /// The files are there but their content differs from what was imported.
    Changed {
        expected: String,
        found: String,
    },
}

/// BLAKE3 of the files' bytes, in order.
pub fn file_hash(files: &[PathBuf]) -> Result<String> {
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    for f in files {
        let mut file = std::fs::File::open(f).map_err(|e| Error::io(f, e))?;
        loop {
            let n = file.read(&mut buf).map_err(|e| Error::io(f, e))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
    }
    Ok(h.finalize().to_hex().to_string())
}

/// Whether `import` added the session, found it as it was, or updated it for a changed log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Imported {
    New,
    Unchanged,
    Updated,
}

const COLUMNS: &str = "s.id, s.session_key, s.title, s.format, s.files, s.source_hash, s.file_hash,
    s.bytes, s.stats, s.imported_at, (SELECT count(*) FROM runs r WHERE r.session = s.id)";

/// A column by name, or why it does not read as `T`.
pub(crate) fn col<T: rusqlite::types::FromSql>(
    r: &rusqlite::Row<'_>,
    i: usize,
    name: &str,
) -> Result<T, String> {
    r.get(i)
        .map_err(|e| format!("its {name} column does not read ({e})"))
}

fn record(r: &rusqlite::Row<'_>) -> Result<SessionRecord, String> {
    Ok(SessionRecord {
        id: col(r, 0, "id")?,
        session_key: col(r, 1, "session_key")?,
        title: col(r, 2, "title")?,
        format: col(r, 3, "format")?,
        files: json_column("files", &col::<String>(r, 4, "files")?)?,
        source_hash: col(r, 5, "source_hash")?,
        file_hash: col(r, 6, "file_hash")?,
        bytes: col::<i64>(r, 7, "bytes")? as u64,
        stats: json_column("stats", &col::<String>(r, 8, "stats")?)?,
        imported_at: col(r, 9, "imported_at")?,
        runs: col::<i64>(r, 10, "runs")? as u64,
    })
}

/// The row's id and its record, or what did not read.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Result<SessionRecord, String>)> {
    Ok((r.get::<_, i64>(0)?.to_string(), record(r)))
}

impl Library {
    /// Adds a session read from a log (or refreshes it when the log changed since). Its files are
    /// made absolute so the library works from any folder.
    pub fn import(&mut self, session: &Session) -> Result<(i64, Imported)> {
        let files: Vec<PathBuf> = session
            .source
            .files
            .iter()
            .map(|f| std::path::absolute(Path::new(f)).unwrap_or_else(|_| PathBuf::from(f)))
            .collect();
        if files.is_empty() {
            return Err(Error::Invalid(format!(
                "session {} was not read from a file, so the library cannot reference it",
                session.id
            )));
        }
        let fhash = file_hash(&files)?;
        let files_json = serde_json::to_string(&files)
            .map_err(|e| Error::Invalid(format!("file names not storable: {e}")))?;
        let stats = serde_json::to_string(&SessionStats::of(session))
            .map_err(|e| Error::Invalid(format!("session stats not storable: {e}")))?;
        let name = crate::naming::display_name(session);
        self.write(|tx| {
            let existing: Option<(i64, String)> = tx
                .query_row(
                    "SELECT id, file_hash FROM sessions WHERE files = ?1 AND session_key = ?2",
                    (&files_json, &session.id),
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            match existing {
                Some((id, h)) if h == fhash => {
                    // Rows written before names were derived get theirs.
                    tx.execute(
                        "UPDATE sessions SET title = ?2 WHERE id = ?1 AND title IS NOT ?2",
                        (id, &name),
                    )?;
                    Ok((id, Imported::Unchanged))
                }
                Some((id, _)) => {
                    tx.execute(
                        "UPDATE sessions SET title = ?2, format = ?3, source_hash = ?4,
                         file_hash = ?5, bytes = ?6, stats = ?7, imported_at = ?8 WHERE id = ?1",
                        (
                            id,
                            &name,
                            &session.source.format,
                            &session.source.hash,
                            &fhash,
                            session.source.bytes as i64,
                            &stats,
                            now_ms(),
                        ),
                    )?;
                    Ok((id, Imported::Updated))
                }
                None => {
                    tx.execute(
                        "INSERT INTO sessions (session_key, title, format, files, source_hash,
                         file_hash, bytes, stats, imported_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        (
                            &session.id,
                            &name,
                            &session.source.format,
                            &files_json,
                            &session.source.hash,
                            &fhash,
                            session.source.bytes as i64,
                            &stats,
                            now_ms(),
                        ),
                    )?;
                    Ok((tx.last_insert_rowid(), Imported::New))
                }
            }
        })
    }

    /// Every session that reads back, most recently imported first, and the rows that do not
    /// (named, with why).
    pub fn session_list(&self) -> Result<Listing<SessionRecord>> {
        let mut st = self
            .conn()
            .prepare(&format!(
                "SELECT {COLUMNS} FROM sessions s ORDER BY s.imported_at DESC, s.id DESC"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], row).map_err(|e| self.err(e))?;
        collect("sessions", rows).map_err(|e| self.err(e))
    }

    /// The sessions of [`Library::session_list`]; rows that do not read back are left out.
    pub fn sessions(&self) -> Result<Vec<SessionRecord>> {
        Ok(self.session_list()?.rows)
    }

    /// One session; a row that does not read back is an error naming it and its bad column.
    pub fn session(&self, id: i64) -> Result<SessionRecord> {
        let found = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM sessions s WHERE s.id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(|e| self.err(e))?;
        match found {
            Some((_, Ok(rec))) => Ok(rec),
            Some((_, Err(reason))) => Err(Error::Library {
                path: self.path().to_path_buf(),
                message: format!(
                    "session {id}: {reason}; `ctxlab library rm {id}` and import its log again"
                ),
            }),
            None => Err(Error::Invalid(format!(
                "no session {id} in the library ({})",
                self.path().display()
            ))),
        }
    }

    /// The library's session read from `files` with this session key, if imported.
    pub fn find_session(&self, session: &Session) -> Result<Option<i64>> {
        let files: Vec<PathBuf> = session
            .source
            .files
            .iter()
            .map(|f| std::path::absolute(Path::new(f)).unwrap_or_else(|_| PathBuf::from(f)))
            .collect();
        let files_json = serde_json::to_string(&files).unwrap_or_default();
        self.conn()
            .query_row(
                "SELECT id FROM sessions WHERE files = ?1 AND session_key = ?2",
                (&files_json, &session.id),
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Whether the session's log is still where it was and unchanged.
    pub fn check_source(&self, id: i64) -> Result<SourceStatus> {
        let rec = self.session(id)?;
        if let Some(f) = rec.files.iter().find(|f| !f.is_file()) {
            return Ok(SourceStatus::Missing { file: f.clone() });
        }
        let found = file_hash(&rec.files)?;
        Ok(if found == rec.file_hash {
            SourceStatus::Unchanged
        } else {
            SourceStatus::Changed {
                expected: rec.file_hash,
                found,
            }
        })
    }

    /// Re-reads the session from its log, after checking the log is the one imported.
    pub fn load_session(&self, id: i64) -> Result<Session> {
        let rec = self.session(id)?;
        match self.check_source(id)? {
            SourceStatus::Unchanged => {}
            SourceStatus::Missing { file } => {
                return Err(Error::Invalid(format!(
                    "session {id} ({}): its log {} is no longer there (moved or deleted); import it again from where it is now",
                    rec.session_key,
                    file.display()
                )))
            }
            SourceStatus::Changed { .. } => {
                return Err(Error::Invalid(format!(
                    "session {id} ({}): its log {} changed since it was imported; run `ctxlab library import` on it again to refresh",
                    rec.session_key,
                    rec.files[0].display()
                )))
            }
        }
        crate::formats::load_as(&rec.files[0], &rec.format)
    }

    /// Removes a session and its runs.
    pub fn remove_session(&mut self, id: i64) -> Result<()> {
        let n = self.write(|tx| tx.execute("DELETE FROM sessions WHERE id = ?1", [id]))?;
        if n == 0 {
            return Err(Error::Invalid(format!("no session {id} in the library")));
        }
        Ok(())
    }
}
