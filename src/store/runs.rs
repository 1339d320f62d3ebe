//! Replay runs in the library: what was run (strategy, plugin, parameters, budget, counter), its
//! metrics for listing, the rest of the run as JSON and the per-call series as postcard.

use super::rows::{collect, json_column, Listing};
use super::sessions::col;
use super::{now_ms, series, Library};
use crate::error::{Error, Result};
use crate::replay::{Budget, Metrics, Run};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};

/// The layout of `runs.series`: postcard of `Vec<replay::Sample>` as of this schema.
pub const SERIES_FORMAT: &str = "postcard-samples-1";

/// A stored run without its series (what a list shows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub session: i64,
    /// What the user calls it (`fuseraft.compaction TriggerTurnCount=30`); may be empty.
    pub label: String,
    pub created_at: i64,
    pub strategy: String,
    pub plugin: Option<String>,
    pub params: serde_json::Value,
    pub budget: Budget,
    pub counter: String,
    pub metrics: Metrics,
}

fn json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Invalid(format!("cannot store the run: {e}")))
}

const COLUMNS: &str =
    "id, session, label, created_at, strategy, plugin, params, budget, counter, metrics";

fn record(r: &rusqlite::Row<'_>) -> Result<RunRecord, String> {
    Ok(RunRecord {
        id: col(r, 0, "id")?,
        session: col(r, 1, "session")?,
        label: col(r, 2, "label")?,
        created_at: col(r, 3, "created_at")?,
        strategy: col(r, 4, "strategy")?,
        plugin: col(r, 5, "plugin")?,
        params: json_column("params", &col::<String>(r, 6, "params")?)?,
        budget: json_column("budget", &col::<String>(r, 7, "budget")?)?,
        counter: col(r, 8, "counter")?,
        metrics: json_column("metrics", &col::<String>(r, 9, "metrics")?)?,
    })
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Result<RunRecord, String>)> {
    Ok((r.get::<_, i64>(0)?.to_string(), record(r)))
}

impl Library {
    /// Stores a run of the library's session `session`, in one transaction.
    pub fn save_run(&mut self, session: i64, label: &str, run: &Run) -> Result<i64> {
        let series = series::encode(&run.samples)
            .map_err(|e| Error::Invalid(format!("cannot store the run's series: {e}")))?;
        let mut rest = run.clone();
        rest.samples = Vec::new();
        let (params, budget, metrics, rest) = (
            json(&run.params)?,
            json(&run.budget)?,
            json(&run.metrics)?,
            json(&rest)?,
        );
        self.write(|tx| {
            tx.execute(
                "INSERT INTO runs (session, label, created_at, strategy, plugin, params, budget,
                 counter, metrics, run, series, series_format)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                rusqlite::params![
                    session,
                    label,
                    now_ms(),
                    run.strategy,
                    run.plugin,
                    params,
                    budget,
                    run.counter,
                    metrics,
                    rest,
                    series,
                    SERIES_FORMAT
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Stored runs that read back, of one session or of all, oldest first, and the rows that do
    /// not (named, with why).
    pub fn run_list(&self, session: Option<i64>) -> Result<Listing<RunRecord>> {
        let mut st = self
            .conn()
            .prepare(&format!(
                "SELECT {COLUMNS} FROM runs WHERE ?1 IS NULL OR session = ?1 ORDER BY id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([session], row).map_err(|e| self.err(e))?;
        collect("runs", rows).map_err(|e| self.err(e))
    }

    /// The runs of [`Library::run_list`]; rows that do not read back are left out.
    pub fn runs(&self, session: Option<i64>) -> Result<Vec<RunRecord>> {
        Ok(self.run_list(session)?.rows)
    }

    /// A whole run, its series included.
    pub fn load_run(&self, id: i64) -> Result<Run> {
        let found: Option<(String, Vec<u8>, String)> = self
            .conn()
            .query_row(
                "SELECT run, series, series_format FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let (text, blob, format) = found.ok_or_else(|| {
            Error::Invalid(format!(
                "no run {id} in the library ({})",
                self.path().display()
            ))
        })?;
        let broken = |what: String| Error::Library {
            path: self.path().to_path_buf(),
            message: format!("run {id}: {what}; replay the session again to get it back"),
        };
        if format != SERIES_FORMAT {
            return Err(broken(format!(
                "its series is stored as {format}, which this ctxlab does not read (it reads {SERIES_FORMAT})"
            )));
        }
        let mut run: Run = serde_json::from_str(&text)
            .map_err(|e| broken(format!("the stored run does not read back ({e})")))?;
        run.samples = series::decode(&blob)
            .map_err(|e| broken(format!("the stored series does not read back ({e})")))?;
        Ok(run)
    }

    pub fn remove_run(&mut self, id: i64) -> Result<()> {
        let n = self.write(|tx| tx.execute("DELETE FROM runs WHERE id = ?1", [id]))?;
        if n == 0 {
            return Err(Error::Invalid(format!("no run {id} in the library")));
        }
        Ok(())
    }
}
