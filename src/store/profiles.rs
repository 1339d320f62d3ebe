//! Profiles: named parameter sets of one strategy (what `tune` found, what `export` writes).

use super::rows::{collect, json_column, Listing};
use super::sessions::col;
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

fn record(r: &rusqlite::Row<'_>) -> Result<Profile, String> {
    let params: serde_json::Value = json_column("params", &col::<String>(r, 2, "params")?)?;
    // A profile is a set of named values: anything else would export the strategy's defaults
    // in its place.
    if !params.is_object() {
        return Err(format!(
            "its params column is {params}, not an object of parameter values"
        ));
    }
    Ok(Profile {
        strategy: col(r, 0, "strategy")?,
        name: col(r, 1, "name")?,
        params,
        note: col(r, 3, "note")?,
        created_at: col(r, 4, "created_at")?,
    })
}

/// The profile's `strategy/name` and its record, or what did not read.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Result<Profile, String>)> {
    let key = format!(
        "{}/{}",
        r.get::<_, String>(0).unwrap_or_default(),
        r.get::<_, String>(1).unwrap_or_default()
    );
    Ok((key, record(r)))
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
        if !params.is_object() {
            return Err(Error::Invalid(format!(
                "profile {name}: parameters must be an object of NAME: VALUE, got {params}"
            )));
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

    /// Profiles that read back, of one strategy or of all, by strategy and name, and the rows
    /// that do not (named, with why).
    pub fn profile_list(&self, strategy: Option<&str>) -> Result<Listing<Profile>> {
        let mut st = self
            .conn()
            .prepare(
                "SELECT strategy, name, params, note, created_at FROM profiles
                 WHERE ?1 IS NULL OR strategy = ?1 ORDER BY strategy, name",
            )
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([strategy], row).map_err(|e| self.err(e))?;
        collect("profiles", rows).map_err(|e| self.err(e))
    }

    /// The profiles of [`Library::profile_list`]; rows that do not read back are left out.
    pub fn profiles(&self, strategy: Option<&str>) -> Result<Vec<Profile>> {
        Ok(self.profile_list(strategy)?.rows)
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
            Some((_, Ok(p))) => Ok(p),
            Some((_, Err(reason))) => Err(Error::Library {
                path: self.path().to_path_buf(),
                message: format!(
                    "profile {name} of {strategy}: {reason}; save it again (`ctxlab tune --save-profile {name}`)"
                ),
            }),
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
