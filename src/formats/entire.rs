//! Entire checkpoints (entireio/cli, the `entire/checkpoints/v1` branch): `<xx>/<id>/<n>/full.jsonl`
//! is the agent's own transcript (sniffed by content like any log) and `metadata.json` beside it
//! holds the checkpoint's totals, `token_usage{input_tokens, cache_creation_tokens,
//! cache_read_tokens, output_tokens, api_call_count}`. The metadata is never a log; its totals are
//! checked against the usage the transcript recorded, and a disagreement is a warning.

use std::path::Path;

use serde::Deserialize;

use crate::model::{Session, Warning};

pub(crate) const METADATA: &str = "metadata.json";

#[derive(Deserialize)]
struct Metadata {
    #[allow(dead_code)]
    checkpoint_id: String,
    #[serde(default)]
    token_usage: Option<Totals>,
}

#[derive(Deserialize, Default)]
struct Totals {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_creation_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    api_call_count: u64,
}

/// The start of an Entire `metadata.json`: an object with `checkpoint_id`.
pub(crate) fn sniff_head(head: &str) -> bool {
    let h = head.trim_start();
    h.starts_with('{')
        && h.contains("\"checkpoint_id\"")
        && (h.contains("\"session_id\"") || h.contains("\"strategy\""))
}

/// A `metadata.json` with a transcript beside it: part of that checkpoint, not a log.
pub(crate) fn is_metadata_beside_log(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == METADATA) && path.with_file_name("full.jsonl").is_file()
}

/// Compares the totals of the `metadata.json` beside `log` (when there is one, with totals)
/// with the session's recorded usage; each total that differs is named in one warning.
pub(crate) fn check(log: &Path, s: &mut Session) {
    let meta_path = log.with_file_name(METADATA);
    if log.file_name().is_some_and(|n| n == METADATA) || !meta_path.is_file() {
        return;
    }
    let Ok(bytes) = std::fs::read(&meta_path) else {
        return;
    };
    let Ok(meta) = serde_json::from_slice::<Metadata>(&bytes) else {
        return;
    };
    let Some(t) = meta.token_usage else { return };
    let with_usage: Vec<_> = s.calls.iter().filter_map(|c| c.usage).collect();
    let sum = |f: fn(&crate::model::Usage) -> u64| with_usage.iter().map(f).sum::<u64>();
    let ours = [
        ("API calls", s.calls.len() as u64, t.api_call_count),
        ("uncached input", sum(|u| u.input), t.input_tokens),
        (
            "cache writes",
            sum(|u| u.cache_write()),
            t.cache_creation_tokens,
        ),
        ("cache reads", sum(|u| u.cache_read), t.cache_read_tokens),
        ("output", sum(|u| u.output), t.output_tokens),
    ];
    let differ: Vec<String> = ours
        .iter()
        .filter(|(_, mine, theirs)| mine != theirs)
        .map(|(what, mine, theirs)| format!("{what} {theirs} (log: {mine})"))
        .collect();
    if !differ.is_empty() {
        s.warnings.push(Warning {
            file: meta_path.display().to_string(),
            line: 0,
            message: format!(
                "Entire's checkpoint totals disagree with the usage this log recorded: {}",
                differ.join(", ")
            ),
        });
    }
}
