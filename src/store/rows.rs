//! Reading rows back: one row that does not read (a JSON column edited by hand, a damaged page of
//! a text column) is skipped and named, never the reason a whole list fails.

use serde::{Deserialize, Serialize};

/// A row a list left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedRow {
    /// `sessions`, `runs` or `profiles`.
    pub table: String,
    /// The row's id (`strategy/name` for a profile).
    pub id: String,
    /// The column that did not read back, and what was wrong with it.
    pub reason: String,
}

impl std::fmt::Display for SkippedRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} row {} skipped: {}",
            self.table.trim_end_matches('s'),
            self.id,
            self.reason
        )
    }
}

/// The rows of a list that read back, and the ones that did not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing<T> {
    pub rows: Vec<T>,
    pub skipped: Vec<SkippedRow>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            rows: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// A JSON column that does not parse as `T`: names the column.
pub(crate) fn json_column<T: serde::de::DeserializeOwned>(
    column: &str,
    text: &str,
) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("its {column} column is not what ctxlab wrote ({e})"))
}

/// Runs a row query, keeping each row that reads (`read` gives the row's id and its record, or
/// the id and what did not read) and naming each that does not.
pub(crate) fn collect<T>(
    table: &str,
    rows: rusqlite::MappedRows<
        '_,
        impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<(String, Result<T, String>)>,
    >,
) -> rusqlite::Result<Listing<T>> {
    let mut out = Listing::default();
    for r in rows {
        match r? {
            (_, Ok(t)) => out.rows.push(t),
            (id, Err(reason)) => out.skipped.push(SkippedRow {
                table: table.to_string(),
                id,
                reason,
            }),
        }
    }
    Ok(out)
}
