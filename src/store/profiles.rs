//! Profiles: named parameter sets of one strategy (what `tune` found, what `export` writes).

use super::{now_ms, Library};
use crate::error::{Error, Result};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub strategy: String,
    pub name: String,
    pub params: serde_json::Value,
    /// Where it came from (`tune over 2 logs, objective cost`), free text.
    pub note: String,
    pub created_at: i64,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Profile> {
    let params: String = r.get(2)?;
    Ok(Profile {
        strategy: r.get(0)?,
        name: r.get(1)?,
        params: serde_json::from_str(&params).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e))
        })?,
        note: r.get(3)?,
        created_at: r.get(4)?,
    })
}

impl Library {
    /// Saves (or replaces) the profile `name` of `strategy`.
    pub fn save_profile(
        &mut self,
        strategy: &str,
        name: &str,
        params: &serde_json::Value,
        note: &str,
    ) -> Result<()> {
        if name.trim().is_empty() {
            return Err(Error::Invalid("a profile needs a name".into()));
        }
        let text = params.to_string();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO profiles (strategy, name, params, note, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (strategy, name) DO UPDATE SET params = excluded.params,
                 note = excluded.note, created_at = excluded.created_at",
                (strategy, name, &text, note, now_ms()),
            )
        })?;
        Ok(())
    }

    /// Profiles, of one strategy or of all, by strategy and name.
    pub fn profiles(&self, strategy: Option<&str>) -> Result<Vec<Profile>> {
        let mut st = self
            .conn()
            .prepare(
                "SELECT strategy, name, params, note, created_at FROM profiles
                 WHERE ?1 IS NULL OR strategy = ?1 ORDER BY strategy, name",
            )
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([strategy], row).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }

    /// The profile `name` of `strategy`; the error lists the strategy's profiles.
    pub fn profile(&self, strategy: &str, name: &str) -> Result<Profile> {
        let found = self
            .conn()
            .query_row(
                "SELECT strategy, name, params, note, created_at FROM profiles
                 WHERE strategy = ?1 AND name = ?2",
                (strategy, name),
                row,
            )
            .optional()
            .map_err(|e| self.err(e))?;
        match found {
            Some(p) => Ok(p),
            None => {
                let known: Vec<String> = self
                    .profiles(Some(strategy))?
                    .into_iter()
                    .map(|p| p.name)
                    .collect();
                Err(Error::Invalid(format!(
                    "no profile {name} for strategy {strategy}; its profiles: {}",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                )))
            }
        }
    }

    pub fn remove_profile(&mut self, strategy: &str, name: &str) -> Result<()> {
        let n = self.write(|tx| {
            tx.execute(
                "DELETE FROM profiles WHERE strategy = ?1 AND name = ?2",
                (strategy, name),
            )
        })?;
        if n == 0 {
            return Err(Error::Invalid(format!(
                "no profile {name} for strategy {strategy}"
            )));
        }
        Ok(())
    }
}
