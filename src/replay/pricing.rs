//! The model table (`data/models.toml`): context windows, maximum output and prices, editable by
//! the user. The replay takes a run's budget from it and prices every call with it.
//!
//! A model in a log is priced only by an entry that names it: its exact id, an alias, or its id
//! with a date or version suffix stripped (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`).
//! Nothing else matches: `claude-opus-4-6` is not `claude-opus-4`, `gpt-5.4` is not `gpt-5`. A
//! model the table does not name is *unpriced*: its calls are left out of the cost, and every
//! cost ctxlab shows says so (`Cost::notice`).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const BUILTIN: &str = include_str!("../../data/models.toml");

/// One model: its limits and its prices in USD per million tokens. Any of them may be unknown:
/// a model without `input` and `output` prices is unpriced, one without `context_window` gets an
/// assumed window (`replay::resolve_budget`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// Price of input tokens read from the prompt cache; `None`: reads cost `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Price of a cache write with a 5-minute lifetime; `None`: writes cost `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    /// Where the figures come from (a provider's page, `litellm import`), for `models list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
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

/// The prices of a priced model, USD per million tokens, every fallback resolved.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
}

impl Price {
    pub fn cache_write(&self, ttl: CacheTtl) -> f64 {
        match ttl {
            CacheTtl::FiveMinutes => self.cache_write_5m,
            CacheTtl::OneHour => self.cache_write_1h,
        }
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

    /// USD of a call's recorded usage: its uncached input, cache reads, 5-minute and 1-hour
    /// cache writes and output, each at its own price.
    pub fn usage_cost(&self, u: &crate::model::Usage) -> f64 {
        self.cost(
            u.input,
            u.cache_read,
            u.cache_write_5m,
            u.output,
            CacheTtl::FiveMinutes,
        ) + self.cost(0, 0, u.cache_write_1h, 0, CacheTtl::OneHour)
    }
}

impl ModelInfo {
    /// A model with only an id (every figure unknown).
    pub fn named(id: impl Into<String>) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            aliases: Vec::new(),
            provider: String::new(),
            context_window: None,
            max_output: None,
            input: None,
            output: None,
            cache_read: None,
            cache_write_5m: None,
            cache_write_1h: None,
            source: None,
        }
    }

    /// Its prices, when the table gives both the input and the output price. A missing cache
    /// price falls back to `input` (the provider does not discount or surcharge it); a missing
    /// 1-hour write price to the 5-minute one.
    pub fn price(&self) -> Option<Price> {
        let (input, output) = (self.input?, self.output?);
        let w5 = self.cache_write_5m.unwrap_or(input);
        Some(Price {
            input,
            output,
            cache_read: self.cache_read.unwrap_or(input),
            cache_write_5m: w5,
            cache_write_1h: self.cache_write_1h.unwrap_or(w5),
        })
    }
}

/// How a log's model name found its entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "name")]
pub enum MatchKind {
    Id,
    Alias,
    /// The name with a date or version suffix stripped (the stripped name).
    Suffix(String),
}

/// A log's model name resolved in the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup<'t> {
    pub model: &'t ModelInfo,
    pub by: MatchKind,
}

/// The models ctxlab knows, and where the table was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTable {
    /// The entries of the file at `path` first (`from_file` of them), then those of the built-in
    /// table that it does not name: a lookup finds the file's entry before the built-in one.
    pub models: Vec<ModelInfo>,
    /// The file read (`--pricing`, or the user's own `models.toml`); `None`: the built-in table.
    pub path: Option<PathBuf>,
    /// When the figures were last checked (`date` in the file at `path`, else the built-in one's).
    pub date: Option<String>,
    /// How many of `models` come from the file at `path`.
    pub from_file: usize,
    /// The built-in table's date, when its entries are laid under the user's file.
    pub builtin_date: Option<String>,
}

/// A model table file: its date and its entries.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(default)]
    pub model: Vec<ModelInfo>,
}

/// Drops one trailing date or version marker: `-20250929`, `-2025-08-07`, `-0613`, `-05-20`,
/// `@20250929`, `-v1`, `-v1:0`, `:0`. `None` when the name ends in none of them.
fn strip_suffix(name: &str) -> Option<&str> {
    if let Some(i) = name.rfind('@') {
        return (i > 0).then(|| &name[..i]);
    }
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let month_day = |m: &str, d: &str| {
        let (m, d): (u32, u32) = (m.parse().unwrap_or(0), d.parse().unwrap_or(0));
        (1..=12).contains(&m) && (1..=31).contains(&d)
    };
    // `:0` (Bedrock's version tail) after a `-vN`.
    if let Some((head, tail)) = name.rsplit_once(':') {
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            return Some(head);
        }
    }
    let parts: Vec<&str> = name.split('-').collect();
    let n = parts.len();
    let cut = |k: usize| -> Option<&str> {
        // The byte index where the last k parts start (with their leading dash).
        let keep: usize = parts[..n - k].iter().map(|p| p.len() + 1).sum::<usize>() - 1;
        (keep > 0).then(|| &name[..keep])
    };
    if n >= 4
        && digits(parts[n - 3], 4)
        && digits(parts[n - 2], 2)
        && digits(parts[n - 1], 2)
        && month_day(parts[n - 2], parts[n - 1])
    {
        return cut(3);
    }
    let last = parts[n - 1];
    if n >= 2 && digits(last, 8) && month_day(&last[4..6], &last[6..8]) {
        return cut(1);
    }
    if n >= 2 && digits(last, 4) && month_day(&last[..2], &last[2..]) {
        return cut(1);
    }
    if n >= 3 && digits(parts[n - 2], 2) && digits(last, 2) && month_day(parts[n - 2], last) {
        return cut(2);
    }
    if n >= 2
        && last.len() >= 2
        && last.starts_with('v')
        && last[1..].bytes().all(|b| b.is_ascii_digit())
    {
        return cut(1);
    }
    None
}

impl ModelTable {
    /// The table shipped with ctxlab.
    pub fn builtin() -> ModelTable {
        // The built-in file is tested to parse; an error here is a build defect.
        ModelTable::parse(BUILTIN, None).expect("data/models.toml parses")
    }

    /// A table that knows no model (everything unpriced, every window assumed).
    pub fn empty() -> ModelTable {
        ModelTable {
            models: Vec::new(),
            path: None,
            date: None,
            from_file: 0,
            builtin_date: None,
        }
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
            from_file: if path.is_some() { f.model.len() } else { 0 },
            models: f.model,
            path: path.map(Path::to_path_buf),
            date: f.date,
            builtin_date: None,
        })
    }

    /// Reads a model table file.
    pub fn read(path: &Path) -> Result<ModelTable> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ModelTable::parse(&text, Some(path))
    }

    /// This table (a user's file) over the built-in one: its entries first, then the built-in
    /// entries whose id none of them names.
    pub fn over_builtin(self) -> ModelTable {
        let base = ModelTable::builtin();
        let named = |n: &str| {
            self.models.iter().any(|m| {
                m.id.eq_ignore_ascii_case(n) || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
            })
        };
        let rest: Vec<ModelInfo> = base.models.into_iter().filter(|m| !named(&m.id)).collect();
        let mut models = self.models;
        let from_file = models.len();
        models.extend(rest);
        ModelTable {
            models,
            path: self.path,
            date: self.date,
            from_file,
            builtin_date: base.date,
        }
    }

    /// `<user data folder>/ctxlab/models.toml`, whether it exists or not.
    pub fn user_path() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("ctxlab").join("models.toml"))
    }

    /// The table given with `--pricing`, alone; else the user's own file (where `ctxlab models
    /// import` writes) over the built-in table; else the built-in table.
    pub fn load(explicit: Option<&Path>) -> Result<ModelTable> {
        if let Some(p) = explicit {
            return ModelTable::read(p);
        }
        match ModelTable::user_path().filter(|p| p.is_file()) {
            Some(p) => Ok(ModelTable::read(&p)?.over_builtin()),
            None => Ok(ModelTable::builtin()),
        }
    }

    /// The entry a log's model name resolves to: its exact id or an alias (case and a provider
    /// path such as `anthropic/` or `openrouter/x-ai/` ignored), else the same with one date or
    /// version suffix stripped at a time. Never another model's entry.
    pub fn lookup(&self, name: &str) -> Option<Lookup<'_>> {
        let lower = name.trim().to_ascii_lowercase();
        let exact = |n: &str| -> Option<Lookup<'_>> {
            self.models.iter().find_map(|m| {
                if m.id.eq_ignore_ascii_case(n) {
                    Some(Lookup {
                        model: m,
                        by: MatchKind::Id,
                    })
                } else if m.aliases.iter().any(|a| a.eq_ignore_ascii_case(n)) {
                    Some(Lookup {
                        model: m,
                        by: MatchKind::Alias,
                    })
                } else {
                    None
                }
            })
        };
        // The whole name first (a user entry may carry the provider path), then without it.
        let bare = lower.rsplit('/').next().unwrap_or(&lower);
        for candidate in [lower.as_str(), bare] {
            if let Some(l) = exact(candidate) {
                return Some(l);
            }
        }
        let mut cur = bare;
        while let Some(stripped) = strip_suffix(cur) {
            if let Some(l) = exact(stripped) {
                return Some(Lookup {
                    model: l.model,
                    by: MatchKind::Suffix(stripped.to_string()),
                });
            }
            cur = stripped;
        }
        None
    }

    /// The entry a log's model name resolves to (`lookup`).
    pub fn find(&self, name: &str) -> Option<&ModelInfo> {
        self.lookup(name).map(|l| l.model)
    }

    /// The prices of a log's model name; `None` when the table does not name it or gives it no
    /// price.
    pub fn price(&self, name: &str) -> Option<Price> {
        self.find(name).and_then(ModelInfo::price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ModelTable {
        ModelTable::parse(
            r#"
date = "2026-11-26"
[[model]]
id = "claude-sonnet-4-5"
aliases = ["claude-sonnet-4-5-latest"]
context_window = 200000
max_output = 64000
input = 3.0
output = 15.0
cache_read = 0.3
cache_write_5m = 3.75
cache_write_1h = 6.0

[[model]]
id = "claude-opus-4-1"
aliases = ["claude-opus-4"]
input = 15.0
output = 75.0

[[model]]
id = "gpt-5"
input = 1.25
output = 10.0
cache_read = 0.125

[[model]]
id = "gpt-4o"
input = 2.5
output = 10.0

[[model]]
id = "gpt-4o-mini"
input = 0.15
output = 0.6

[[model]]
id = "gpt-5.3-codex-spark"
context_window = 128000
"#,
            None,
        )
        .unwrap()
    }

    #[test]
    fn exact_id_and_alias_match_ignoring_case_and_provider_path() {
        let t = table();
        let l = t.lookup("claude-sonnet-4-5").unwrap();
        assert_eq!(
            (l.model.id.as_str(), l.by),
            ("claude-sonnet-4-5", MatchKind::Id)
        );
        let l = t.lookup("Claude-Sonnet-4-5-Latest").unwrap();
        assert_eq!(l.by, MatchKind::Alias);
        assert_eq!(
            t.find("anthropic/claude-sonnet-4-5").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(t.find("openrouter/openai/gpt-4o").unwrap().id, "gpt-4o");
        assert_eq!(t.find("claude-opus-4").unwrap().id, "claude-opus-4-1");
    }

    #[test]
    fn a_date_or_version_suffix_is_stripped() {
        let t = table();
        let l = t.lookup("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(l.model.id, "claude-sonnet-4-5");
        assert_eq!(l.by, MatchKind::Suffix("claude-sonnet-4-5".into()));
        // An alias with its date: Anthropic's `claude-opus-4-20250514`.
        assert_eq!(
            t.find("claude-opus-4-20250514").unwrap().id,
            "claude-opus-4-1"
        );
        assert_eq!(t.find("gpt-5-2025-08-07").unwrap().id, "gpt-5");
        assert_eq!(t.find("gpt-4o-mini-2024-07-18").unwrap().id, "gpt-4o-mini");
        assert_eq!(t.find("gpt-4o-0613").unwrap().id, "gpt-4o");
        assert_eq!(
            t.find("claude-sonnet-4-5@20250929").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            t.find("claude-sonnet-4-5-20250929-v1:0").unwrap().id,
            "claude-sonnet-4-5"
        );
    }

    #[test]
    fn an_unknown_model_is_never_matched_by_another_models_entry() {
        let t = table();
        // The family fallbacks this table used to make: Opus 4.6 priced as Opus 4.1 (3×), GPT-5.4
        // as GPT-5.
        for name in [
            "claude-opus-4-6",
            "claude-opus-4-6-20260205",
            "claude-sonnet-4-6",
            "claude-sonnet-4",
            "gpt-5.4",
            "gpt-5-mini",
            "gpt-5.3-codex",
            "gpt-50",
            "gpt-4o-audio",
            "openai/gpt-oss-20b:fireworks-ai",
            "llama-3-70b",
            "",
        ] {
            assert!(t.find(name).is_none(), "{name} must be unknown");
        }
    }

    #[test]
    fn a_model_without_prices_is_known_but_unpriced() {
        let t = table();
        let spark = t.find("gpt-5.3-codex-spark").unwrap();
        assert_eq!(spark.context_window, Some(128_000));
        assert!(spark.price().is_none());
        assert!(t.price("gpt-5.3-codex-spark").is_none());
        assert!(t.price("claude-opus-4-6").is_none());
    }

    #[test]
    fn cost_uses_cache_prices_and_falls_back_to_input() {
        let t = table();
        let sonnet = t.price("claude-sonnet-4-5").unwrap();
        // 1M cache read + 1M 5m write + 1M output = 0.30 + 3.75 + 15.
        let c = sonnet.cost(0, 1_000_000, 1_000_000, 1_000_000, CacheTtl::FiveMinutes);
        assert!((c - 19.05).abs() < 1e-9, "{c}");
        let c = sonnet.cost(0, 0, 1_000_000, 0, CacheTtl::OneHour);
        assert!((c - 6.0).abs() < 1e-9);
        let gpt = t.price("gpt-5").unwrap();
        // No write price: writes cost input; reads their own price.
        assert!((gpt.cost(0, 0, 1_000_000, 0, CacheTtl::OneHour) - 1.25).abs() < 1e-9);
        assert!((gpt.cost(0, 1_000_000, 0, 0, CacheTtl::OneHour) - 0.125).abs() < 1e-9);
        // No read price either: reads cost input.
        let o = t.price("gpt-4o").unwrap();
        assert!((o.cost(0, 1_000_000, 0, 0, CacheTtl::FiveMinutes) - 2.5).abs() < 1e-9);
    }

    #[test]
    fn the_builtin_table_parses_is_dated_and_has_no_duplicate_names() {
        let t = ModelTable::builtin();
        assert!(
            t.date.as_deref().is_some_and(|d| d.len() == 10),
            "{:?}",
            t.date
        );
        let mut seen = std::collections::BTreeSet::new();
        for m in &t.models {
            for n in std::iter::once(&m.id).chain(&m.aliases) {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} named twice");
            }
            if let Some(p) = m.price() {
                assert!(p.input > 0.0 && p.output > 0.0, "{}", m.id);
            }
            assert!(
                m.source.is_some(),
                "{}: say where its figures come from",
                m.id
            );
        }
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
