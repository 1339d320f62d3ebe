//! What `ctxlab models` does with the model table (`replay::pricing`): which models of some logs it
//! prices, and merging the ecosystem's price list — LiteLLM's
//! `model_prices_and_context_window.json`, which LiteLLM and ccusage keep — into the user's own
//! `models.toml`.
//!
//! The LiteLLM format (BerriAI/litellm, `model_prices_and_context_window.json`; its `sample_spec`
//! entry documents the fields): one JSON object whose keys are model names (`claude-sonnet-4-5`,
//! `openrouter/x-ai/grok-4-fast`) and whose values give prices in USD **per token** and limits.
//! Read: `input_cost_per_token`, `output_cost_per_token`, `cache_read_input_token_cost`,
//! `cache_creation_input_token_cost` (5-minute write), `cache_creation_input_token_cost_above_1hr`
//! (1-hour write), `max_input_tokens` (→ `context_window`), `max_output_tokens` (else
//! `max_tokens`; → `max_output`), `litellm_provider` (→ `provider`), `mode` (only `chat`,
//! `responses` and `completion` models are imported; embeddings, images, audio are skipped).

use crate::error::{Error, Result};
use crate::model::Session;
use crate::replay::pricing::File;
use crate::replay::{unpriced_notice, MatchKind, ModelInfo, ModelTable, Unpriced};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `source` an imported entry carries; a later import updates entries that carry it and keeps
/// every other entry of the user's file as the user wrote it.
pub const IMPORTED: &str = "LiteLLM price list";

/// One model a set of logs names, and what the table makes of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogModel {
    /// As the logs name it.
    pub name: String,
    /// Calls that name it (or whose agent does).
    pub calls: u64,
    /// The entry it resolves to, and how.
    pub entry: Option<String>,
    pub by: Option<MatchKind>,
    pub priced: bool,
    /// The entry gives the context window.
    pub window_known: bool,
}

/// The models `sessions` name, most calls first, each resolved in `table`.
pub fn log_models(sessions: &[Session], table: &ModelTable) -> Vec<LogModel> {
    let mut calls: BTreeMap<&str, u64> = BTreeMap::new();
    for s in sessions {
        for c in &s.calls {
            if let Some(m) = s.call_model(c) {
                *calls.entry(m).or_default() += 1;
            }
        }
        for a in &s.agents {
            if let Some(m) = a.model.as_deref() {
                calls.entry(m).or_default();
            }
        }
    }
    let mut out: Vec<LogModel> = calls
        .into_iter()
        .map(|(name, calls)| {
            let l = table.lookup(name);
            LogModel {
                name: name.to_string(),
                calls,
                entry: l.as_ref().map(|l| l.model.id.clone()),
                by: l.as_ref().map(|l| l.by.clone()),
                priced: l.as_ref().is_some_and(|l| l.model.price().is_some()),
                window_known: l.as_ref().is_some_and(|l| l.model.context_window.is_some()),
            }
        })
        .collect();
    out.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.name.cmp(&b.name)));
    out
}

/// What the model table makes of one session, as a view of the log shows it before any replay:
/// the cost of the usage the log recorded, which calls that cost leaves out (unpriced models),
/// the budget figures that had to be assumed and from where, and the tool's own recorded cost
/// beside ctxlab's price of the same calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionPricing {
    /// The models the session names, most calls first (`log_models`).
    pub models: Vec<LogModel>,
    /// ctxlab's price of the recorded usage of the priced calls, USD.
    pub recorded_usd: f64,
    /// Calls with recorded usage that were priced.
    pub priced_calls: u64,
    /// Calls left out of the cost, by model (`Cost::unpriced`'s twin: the same calls a replay
    /// leaves out).
    pub unpriced: Vec<Unpriced>,
    /// The budget a replay would take (`replay::resolve_limits`): each figure assumed or taken
    /// from the log, with where from; `budget_error` when it cannot be assumed either.
    pub assumed: Vec<String>,
    pub budget_error: Option<String>,
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    /// What the tool recorded as the cost of the priced calls that carry one, and ctxlab's
    /// price of the same calls (`RecordedMetrics::tool_cost_*`).
    pub tool_cost_calls: u64,
    pub tool_cost_usd: f64,
    pub cost_usd_on_tool_calls: f64,
}

impl SessionPricing {
    /// The "cost excludes …" notice (`replay::unpriced_notice`), `None` when every call is priced.
    pub fn notice(&self) -> Option<String> {
        unpriced_notice(&self.unpriced)
    }
}

/// Prices the usage `session` recorded with `table` (each call by its own model, else its
/// agent's: `Session::call_model`; never another model's price), and resolves its budget.
pub fn session_pricing(session: &Session, table: &ModelTable) -> SessionPricing {
    let tool: BTreeMap<usize, f64> = session
        .recorded_costs
        .iter()
        .map(|c| (c.call, c.usd))
        .collect();
    let mut p = SessionPricing {
        models: log_models(std::slice::from_ref(session), table),
        recorded_usd: 0.0,
        priced_calls: 0,
        unpriced: Vec::new(),
        assumed: Vec::new(),
        budget_error: None,
        context_window: None,
        max_output: None,
        tool_cost_calls: 0,
        tool_cost_usd: 0.0,
        cost_usd_on_tool_calls: 0.0,
    };
    let mut unpriced: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, c) in session.calls.iter().enumerate() {
        let model = session.call_model(c);
        match model.and_then(|m| table.price(m)) {
            None => *unpriced.entry(model.unwrap_or("")).or_default() += 1,
            Some(price) => {
                let Some(u) = c.usage else { continue };
                let usd = price.usage_cost(&u);
                p.recorded_usd += usd;
                p.priced_calls += 1;
                if let Some(t) = tool.get(&i) {
                    p.tool_cost_calls += 1;
                    p.tool_cost_usd += t;
                    p.cost_usd_on_tool_calls += usd;
                }
            }
        }
    }
    p.unpriced = unpriced
        .into_iter()
        .map(|(model, calls)| Unpriced {
            model: model.to_string(),
            calls,
        })
        .collect();
    p.unpriced
        .sort_by(|a, b| b.calls.cmp(&a.calls).then(a.model.cmp(&b.model)));
    match crate::replay::resolve_limits(session, table) {
        Ok(l) => {
            p.assumed = l.assumed;
            p.context_window = Some(l.budget.context_window);
            p.max_output = Some(l.budget.max_output);
        }
        Err(e) => p.budget_error = Some(e.to_string()),
    }
    p
}

/// What an import did to the user's file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// The price list read.
    pub from: PathBuf,
    /// The file written (or that would be, with `dry_run`).
    pub into: PathBuf,
    pub dry_run: bool,
    /// Entries of the price list read as models (chat models with a price or a limit).
    pub read: usize,
    /// Entries skipped: not chat models, or with neither a price nor a limit.
    pub skipped: usize,
    /// Models new to the user's file.
    pub added: Vec<String>,
    /// Entries of an earlier import that changed: the id and each change (`input 3 → 2.5`).
    pub updated: Vec<(String, Vec<String>)>,
    /// The user's own entries the price list differs from: kept as they are (the user's win).
    pub kept: Vec<(String, Vec<String>)>,
    pub unchanged: usize,
    /// Entries of the price list that could not be read (name, line and what was wrong).
    pub warnings: Vec<String>,
}

fn per_million(v: f64) -> f64 {
    // Per-token prices (3e-6) become per-million (3.0) without float noise (2.9999999999999996).
    (v * 1e12).round() / 1e6
}

/// The 1-based line of `"key":` in `text` (0 when not found), for messages about an entry.
fn line_of(text: &str, key: &str) -> u32 {
    let needle = format!("{}:", serde_json::to_string(key).unwrap_or_default());
    text.find(&needle)
        .map(|i| text[..i].lines().count().max(1) as u32)
        .or_else(|| {
            let needle = serde_json::to_string(key).unwrap_or_default();
            text.find(&needle)
                .map(|i| text[..i].lines().count().max(1) as u32)
        })
        .unwrap_or(0)
}

/// The models of a LiteLLM price list, the entries skipped, and warnings for entries that could
/// not be read. An error when the text is not a JSON object.
pub fn read_litellm(text: &str, path: &Path) -> Result<(Vec<ModelInfo>, usize, Vec<String>)> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line() as u32,
        message: format!("not a LiteLLM price list (model_prices_and_context_window.json): {e}"),
    })?;
    let Some(map) = doc.as_object() else {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            line: 1,
            message: "not a LiteLLM price list: expected one JSON object of models by name".into(),
        });
    };
    let source = format!(
        "{IMPORTED} ({})",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let (mut models, mut skipped, mut warnings) = (Vec::new(), 0, Vec::new());
    for (key, v) in map {
        if key == "sample_spec" {
            continue;
        }
        let Some(e) = v.as_object() else {
            warnings.push(format!(
                "{}:{}: {key}: expected an object of prices and limits",
                path.display(),
                line_of(text, key)
            ));
            continue;
        };
        let mode = e.get("mode").and_then(|m| m.as_str()).unwrap_or("chat");
        if !matches!(mode, "chat" | "responses" | "completion") {
            skipped += 1;
            continue;
        }
        let mut bad = Vec::new();
        let mut num = |field: &str| -> Option<f64> {
            match e.get(field) {
                None | Some(serde_json::Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(x) if x >= 0.0 && x.is_finite() => Some(x),
                    _ => {
                        bad.push(format!("{field} is {v}, expected a number ≥ 0"));
                        None
                    }
                },
            }
        };
        let price = |v: Option<f64>| v.map(per_million);
        let tokens = |v: Option<f64>| v.filter(|&x| x >= 1.0).map(|x| x as u64);
        let m = ModelInfo {
            id: key.clone(),
            aliases: Vec::new(),
            provider: e
                .get("litellm_provider")
                .and_then(|p| p.as_str())
                .unwrap_or_default()
                .to_string(),
            context_window: tokens(num("max_input_tokens")),
            max_output: tokens(num("max_output_tokens").or_else(|| num("max_tokens"))),
            input: price(num("input_cost_per_token")),
            output: price(num("output_cost_per_token")),
            cache_read: price(num("cache_read_input_token_cost")),
            cache_write_5m: price(num("cache_creation_input_token_cost")),
            cache_write_1h: price(num("cache_creation_input_token_cost_above_1hr")),
            source: Some(source.clone()),
        };
        if !bad.is_empty() {
            warnings.push(format!(
                "{}:{}: {key}: {}; the entry is skipped",
                path.display(),
                line_of(text, key),
                bad.join("; ")
            ));
            continue;
        }
        if m.input.is_none() && m.output.is_none() && m.context_window.is_none() {
            skipped += 1;
            continue;
        }
        models.push(m);
    }
    Ok((models, skipped, warnings))
}

/// The figures of `new` that differ from `old`, as `field old → new` (`–` for unknown).
pub fn differences(old: &ModelInfo, new: &ModelInfo) -> Vec<String> {
    fn f(x: Option<f64>) -> String {
        x.map_or("–".into(), |v| format!("{v}"))
    }
    fn n(x: Option<u64>) -> String {
        x.map_or("–".into(), |v| v.to_string())
    }
    let mut d = Vec::new();
    let mut cmp = |name: &str, a: String, b: String| {
        if a != b {
            d.push(format!("{name} {a} → {b}"));
        }
    };
    cmp(
        "context_window",
        n(old.context_window),
        n(new.context_window),
    );
    cmp("max_output", n(old.max_output), n(new.max_output));
    cmp("input", f(old.input), f(new.input));
    cmp("output", f(old.output), f(new.output));
    cmp("cache_read", f(old.cache_read), f(new.cache_read));
    cmp(
        "cache_write_5m",
        f(old.cache_write_5m),
        f(new.cache_write_5m),
    );
    cmp(
        "cache_write_1h",
        f(old.cache_write_1h),
        f(new.cache_write_1h),
    );
    d
}

/// Merges `imported` into the user's entries: a model new to them is added; an entry of an
/// earlier import (`source` starting with `IMPORTED`) takes the new figures; every other entry
/// is the user's and wins. The user's entries keep their order; new ones follow, by id.
pub fn merge(
    user: Vec<ModelInfo>,
    imported: Vec<ModelInfo>,
    report: &mut ImportReport,
) -> Vec<ModelInfo> {
    let mut out = user;
    let mut added = Vec::new();
    for new in imported {
        let at = out.iter().position(|m| {
            m.id.eq_ignore_ascii_case(&new.id)
                || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(&new.id))
        });
        match at {
            None => {
                report.added.push(new.id.clone());
                added.push(new);
            }
            Some(i) => {
                let old = &out[i];
                let d = differences(old, &new);
                if d.is_empty() {
                    report.unchanged += 1;
                } else if old
                    .source
                    .as_deref()
                    .is_some_and(|s| s.starts_with(IMPORTED))
                {
                    report.updated.push((old.id.clone(), d));
                    let aliases = std::mem::take(&mut out[i].aliases);
                    out[i] = ModelInfo { aliases, ..new };
                } else {
                    report.kept.push((old.id.clone(), d));
                }
            }
        }
    }
    added.sort_by(|a, b| a.id.cmp(&b.id));
    report.added.sort();
    out.extend(added);
    out
}

/// Today, `YYYY-MM-DD` (UTC).
fn today() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    crate::formats::time::format_ms(ms)[..10].to_string()
}

/// Writes a model table file: a header saying what it is, its date and its entries.
pub fn write_table(path: &Path, date: &str, models: &[ModelInfo]) -> Result<()> {
    let body = toml::to_string(&File {
        date: Some(date.to_string()),
        model: models.to_vec(),
    })
    .map_err(|e| Error::Invalid(format!("cannot write the model table: {e}")))?;
    let text = format!(
        "# Your ctxlab model table: laid over the built-in one (its entries win), read by every\n# ctxlab command unless --pricing names another file. Edit freely: `ctxlab models import`\n# updates only the entries whose source is \"{IMPORTED} …\" and keeps every other entry as it is.\n# Fields and matching rules: see the built-in table (`ctxlab models list`) or docs/metrics.md.\n\n{body}"
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    // Write beside and rename, so an interrupted import never leaves half a table.
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// `ctxlab models import`: merges the LiteLLM price list at `from` into the model table file
/// `into` (created when missing; the user's entries win, `merge`), and says what changed.
pub fn import_litellm(from: &Path, into: &Path, dry_run: bool) -> Result<ImportReport> {
    let text = std::fs::read_to_string(from).map_err(|e| Error::io(from, e))?;
    let (imported, skipped, warnings) = read_litellm(&text, from)?;
    let user = if into.is_file() {
        ModelTable::read(into)?.models
    } else {
        Vec::new()
    };
    let mut report = ImportReport {
        from: from.to_path_buf(),
        into: into.to_path_buf(),
        dry_run,
        read: imported.len(),
        skipped,
        warnings,
        ..ImportReport::default()
    };
    let merged = merge(user, imported, &mut report);
    let changed = !report.added.is_empty() || !report.updated.is_empty() || !into.is_file();
    if !dry_run && changed {
        write_table(into, &today(), &merged)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_token_prices_become_per_million_without_noise() {
        assert_eq!(per_million(3e-6), 3.0);
        assert_eq!(per_million(0.000015), 15.0);
        assert_eq!(per_million(3e-7), 0.3);
        assert_eq!(per_million(1.25e-7), 0.125);
    }

    #[test]
    fn line_of_finds_the_entry() {
        let t = "{\n  \"a\": {},\n  \"b\": {\"x\": 1}\n}";
        assert_eq!(line_of(t, "b"), 3);
        assert_eq!(line_of(t, "zzz"), 0);
    }
}
