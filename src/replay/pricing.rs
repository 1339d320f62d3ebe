//! The model table (`data/models.toml`): context windows, maximum output and prices, editable by
//! the user. The replay takes a run's budget from it and prices every call with it.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const BUILTIN: &str = include_str!("../../data/models.toml");

/// One model: its limits and its prices in USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    pub id: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub provider: String,
    pub context_window: u64,
    pub max_output: u64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    /// Price of a cache write with a 5-minute lifetime; `None`: writes cost `input`.
    #[serde(default)]
    pub cache_write_5m: Option<f64>,
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
}

/// How long the provider keeps a cached prompt prefix after its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CacheTtl {
    #[default]
    FiveMinutes,
    OneHour,
}

impl CacheTtl {
    pub fn millis(self) -> i64 {
        match self {
            CacheTtl::FiveMinutes => 5 * 60 * 1000,
            CacheTtl::OneHour => 60 * 60 * 1000,
        }
    }
}

impl ModelInfo {
    pub fn cache_write(&self, ttl: CacheTtl) -> f64 {
        match ttl {
            CacheTtl::FiveMinutes => self.cache_write_5m,
            CacheTtl::OneHour => self.cache_write_1h.or(self.cache_write_5m),
        }
        .unwrap_or(self.input)
    }

    /// USD of a call that read `cache_read` tokens from the cache, wrote `cache_write`, sent
    /// `uncached` more without caching and got `output` back.
    pub fn cost(
        &self,
        uncached: u64,
        cache_read: u64,
        cache_write: u64,
        output: u64,
        ttl: CacheTtl,
    ) -> f64 {
        (uncached as f64 * self.input
            + cache_read as f64 * self.cache_read
            + cache_write as f64 * self.cache_write(ttl)
            + output as f64 * self.output)
            / 1e6
    }
}

/// The models ctxlab knows, and where the table was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTable {
    pub models: Vec<ModelInfo>,
    /// `None` for the built-in table.
    pub path: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    model: Vec<ModelInfo>,
}

impl ModelTable {
    /// The table shipped with ctxlab.
    pub fn builtin() -> ModelTable {
        // The built-in file is tested to parse; an error here is a build defect.
        ModelTable::parse(BUILTIN, None).expect("data/models.toml parses")
    }

    pub fn parse(text: &str, path: Option<&Path>) -> Result<ModelTable> {
        let f: File = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1) as u32)
                .unwrap_or(0);
            Error::Parse {
                path: path
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| "data/models.toml".into()),
                line,
                message: format!("model table: {}", e.message()),
            }
        })?;
        Ok(ModelTable {
            models: f.model,
            path: path.map(Path::to_path_buf),
        })
    }

    /// `<user data folder>/ctxlab/models.toml`, whether it exists or not.
    pub fn user_path() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("ctxlab").join("models.toml"))
    }

    /// The table given by the user (`--pricing`), else the user's own file, else the built-in one.
    pub fn load(explicit: Option<&Path>) -> Result<ModelTable> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => ModelTable::user_path().filter(|p| p.is_file()),
        };
        match path {
            Some(p) => {
                let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
                ModelTable::parse(&text, Some(&p))
            }
            None => Ok(ModelTable::builtin()),
        }
    }

    /// The model a log names: exact id or alias, else the longest id or alias its name starts
    /// with at a word boundary (a dated or point release falls back to its family:
    /// `gpt-5.4` → `gpt-5`). Provider prefixes (`anthropic/`, `openai:`) and case are ignored.
    pub fn find(&self, name: &str) -> Option<&ModelInfo> {
        let lower = name.trim().to_ascii_lowercase();
        let bare = lower.rsplit(['/', ':']).next().unwrap_or(&lower);
        let names = |m: &'_ ModelInfo| -> Vec<String> {
            std::iter::once(m.id.to_ascii_lowercase())
                .chain(m.aliases.iter().map(|a| a.to_ascii_lowercase()))
                .collect()
        };
        if let Some(m) = self
            .models
            .iter()
            .find(|m| names(m).iter().any(|n| n == bare))
        {
            return Some(m);
        }
        self.models
            .iter()
            .flat_map(|m| names(m).into_iter().map(move |n| (n, m)))
            .filter(|(n, _)| {
                bare.starts_with(n.as_str())
                    && !bare[n.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
            })
            .max_by_key(|(n, _)| n.len())
            .map(|(_, m)| m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_matches_log_model_names() {
        let t = ModelTable::builtin();
        assert!(t.models.len() >= 15);
        assert_eq!(
            t.find("claude-sonnet-4-5-20250929").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            t.find("claude-opus-4-20250514").unwrap().id,
            "claude-opus-4-1"
        );
        assert_eq!(
            t.find("anthropic/claude-haiku-4-5").unwrap().id,
            "claude-haiku-4-5"
        );
        assert_eq!(t.find("gpt-5-codex").unwrap().id, "gpt-5");
        assert_eq!(t.find("gpt-5-mini-2025-08-07").unwrap().id, "gpt-5-mini");
        assert_eq!(t.find("gpt-4.1-mini").unwrap().id, "gpt-4.1-mini");
        assert_eq!(t.find("gpt-5.4").unwrap().id, "gpt-5");
        assert!(t.find("gpt-50").is_none());
        assert_eq!(
            t.find("gemini-2.5-flash-lite").unwrap().id,
            "gemini-2.5-flash-lite"
        );
        assert!(t.find("llama-3-70b").is_none());
        // gpt-4o must not swallow gpt-4o-mini, nor gpt-4 match gpt-4.1.
        assert_eq!(t.find("gpt-4o-mini-2024-07-18").unwrap().id, "gpt-4o-mini");
    }

    #[test]
    fn cost_uses_cache_prices_and_falls_back_to_input_for_writes() {
        let t = ModelTable::builtin();
        let sonnet = t.find("claude-sonnet-4-5").unwrap();
        // 1M cache read + 1M 5m write + 1M output = 0.30 + 3.75 + 15.
        let c = sonnet.cost(0, 1_000_000, 1_000_000, 1_000_000, CacheTtl::FiveMinutes);
        assert!((c - 19.05).abs() < 1e-9, "{c}");
        let c = sonnet.cost(0, 0, 1_000_000, 0, CacheTtl::OneHour);
        assert!((c - 6.0).abs() < 1e-9);
        let gpt = t.find("gpt-5").unwrap();
        assert!((gpt.cost(0, 0, 1_000_000, 0, CacheTtl::FiveMinutes) - 1.25).abs() < 1e-9);
    }

    #[test]
    fn a_broken_user_table_names_file_and_line() {
        let e = ModelTable::parse(
            "[[model]]\nid = \"x\"\ncontext_window = \"big\"\n",
            Some(Path::new("/tmp/m.toml")),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/tmp/m.toml:3"), "{e}");
    }
}
