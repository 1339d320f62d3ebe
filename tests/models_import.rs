//! `ctxlab models import` reads LiteLLM's `model_prices_and_context_window.json` format (the price
//! list LiteLLM and ccusage keep) into the user's models.toml: every field mapped, user entries
//! win, entries of an earlier import are refreshed; `ctxlab models list` shows the table and its
//! date, `--unknown` the models of logs the table does not price.
//! The price list here is written by this project in that format (field names as in LiteLLM's
//! `sample_spec`), with made-up model names where the figures are made up.

use ctxlab::models;
use ctxlab::replay::{ModelInfo, ModelTable};
use std::path::{Path, PathBuf};
use std::process::Command;

fn ctxlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run ctxlab")
}

const PRICE_LIST: &str = r#"{
  "sample_spec": {
    "max_input_tokens": "max input tokens, if the provider specifies it",
    "input_cost_per_token": 0.0000,
    "mode": "one of: chat, embedding, completion, image_generation, audio_transcription"
  },
  "acme-large-2": {
    "max_input_tokens": 400000,
    "max_output_tokens": 32000,
    "max_tokens": 16000,
    "input_cost_per_token": 0.000003,
    "output_cost_per_token": 0.000015,
    "cache_read_input_token_cost": 3e-7,
    "cache_creation_input_token_cost": 0.00000375,
    "cache_creation_input_token_cost_above_1hr": 0.000006,
    "litellm_provider": "acme",
    "mode": "chat"
  },
  "acme-small": {
    "max_input_tokens": 128000,
    "max_tokens": 8192,
    "input_cost_per_token": 1.25e-7,
    "output_cost_per_token": 0.000001,
    "litellm_provider": "acme",
    "mode": "responses"
  },
  "mine-tuned": {
    "input_cost_per_token": 0.00001,
    "output_cost_per_token": 0.00003,
    "litellm_provider": "acme",
    "mode": "chat"
  },
  "old-import": {
    "input_cost_per_token": 0.000002,
    "output_cost_per_token": 0.000008,
    "mode": "chat"
  },
  "acme-embed": {
    "input_cost_per_token": 2e-8,
    "mode": "embedding"
  },
  "acme-broken": {
    "input_cost_per_token": "cheap",
    "mode": "chat"
  }
}
"#;

fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let list = dir.join("model_prices_and_context_window.json");
    std::fs::write(&list, PRICE_LIST).unwrap();
    // The user's file: one entry of their own (it must win), one from an earlier import (it must
    // be refreshed).
    let mine = dir.join("models.toml");
    std::fs::write(
        &mine,
        format!(
            "date = \"2026-01-01\"\n\n[[model]]\nid = \"mine-tuned\"\naliases = [\"mine\"]\ninput = 1.0\noutput = 2.0\n\n[[model]]\nid = \"old-import\"\naliases = [\"old\"]\ninput = 1.0\noutput = 4.0\nsource = \"{} (an-older-copy.json)\"\n",
            models::IMPORTED
        ),
    )
    .unwrap();
    (list, mine)
}

fn get<'a>(t: &'a ModelTable, id: &str) -> &'a ModelInfo {
    t.models
        .iter()
        .find(|m| m.id == id)
        .unwrap_or_else(|| panic!("{id} missing"))
}

#[test]
fn every_litellm_field_is_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let (list, _) = setup(dir.path());
    let (read, skipped, warnings) =
        models::read_litellm(&std::fs::read_to_string(&list).unwrap(), &list).unwrap();
    let large = read.iter().find(|m| m.id == "acme-large-2").unwrap();
    assert_eq!(large.provider, "acme");
    assert_eq!(large.context_window, Some(400_000)); // max_input_tokens
    assert_eq!(large.max_output, Some(32_000)); // max_output_tokens before max_tokens
    assert_eq!(large.input, Some(3.0)); // per token → per million
    assert_eq!(large.output, Some(15.0));
    assert_eq!(large.cache_read, Some(0.3));
    assert_eq!(large.cache_write_5m, Some(3.75));
    assert_eq!(large.cache_write_1h, Some(6.0));
    assert!(large
        .source
        .as_deref()
        .unwrap()
        .starts_with(models::IMPORTED));
    let small = read.iter().find(|m| m.id == "acme-small").unwrap();
    assert_eq!(small.max_output, Some(8_192)); // max_tokens when max_output_tokens is absent
    assert_eq!(small.input, Some(0.125));
    assert_eq!((small.cache_read, small.cache_write_5m), (None, None));
    // sample_spec is LiteLLM's documentation, embeddings are not chat models.
    assert!(read
        .iter()
        .all(|m| m.id != "sample_spec" && m.id != "acme-embed"));
    assert_eq!(skipped, 1);
    // A wrong value names the file, the line and what was expected; the rest still imports.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("model_prices_and_context_window.json:42: acme-broken: input_cost_per_token is \"cheap\", expected a number"),
        "{}",
        warnings[0]
    );
    assert_eq!(read.len(), 4);
}

#[test]
fn import_merges_into_the_users_table_and_their_entries_win() {
    let dir = tempfile::tempdir().unwrap();
    let (list, mine) = setup(dir.path());
    let before = std::fs::read_to_string(&mine).unwrap();
    let dry = models::import_litellm(&list, &mine, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        before,
        "--dry-run wrote"
    );
    let r = models::import_litellm(&list, &mine, false).unwrap();
    assert_eq!(r.added, dry.added);
    assert_eq!(r.added, vec!["acme-large-2", "acme-small"]);
    assert_eq!(r.kept.len(), 1);
    assert_eq!(r.kept[0].0, "mine-tuned");
    assert_eq!(r.kept[0].1, vec!["input 1 → 10", "output 2 → 30"]);
    assert_eq!(r.updated.len(), 1);
    assert_eq!(r.updated[0].0, "old-import");
    assert_eq!(r.updated[0].1, vec!["input 1 → 2", "output 4 → 8"]);

    let t = ModelTable::read(&mine).unwrap();
    assert_eq!(t.date.as_deref().map(str::len), Some(10));
    assert_ne!(
        t.date.as_deref(),
        Some("2026-01-01"),
        "the date of the import"
    );
    let m = get(&t, "mine-tuned");
    assert_eq!(
        (m.input, m.output),
        (Some(1.0), Some(2.0)),
        "the user's entry wins"
    );
    assert_eq!(m.aliases, vec!["mine"]);
    let o = get(&t, "old-import");
    assert_eq!(
        (o.input, o.output),
        (Some(2.0), Some(8.0)),
        "an earlier import is refreshed"
    );
    assert_eq!(
        o.aliases,
        vec!["old"],
        "aliases the user gave survive the refresh"
    );
    assert_eq!(get(&t, "acme-large-2").cache_write_1h, Some(6.0));
    // The user's entries keep their place, new ones follow.
    let ids: Vec<&str> = t.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        ["mine-tuned", "old-import", "acme-large-2", "acme-small"]
    );

    // A second import of the same list changes nothing.
    let again = models::import_litellm(&list, &mine, false).unwrap();
    assert!(
        again.added.is_empty() && again.updated.is_empty(),
        "{again:?}"
    );
    assert_eq!(again.unchanged, 3);
}

#[test]
fn the_users_table_lies_over_the_builtin_one() {
    let dir = tempfile::tempdir().unwrap();
    let (list, mine) = setup(dir.path());
    models::import_litellm(&list, &mine, false).unwrap();
    let t = ModelTable::read(&mine).unwrap().over_builtin();
    assert_eq!(t.from_file, 4);
    assert!(t.builtin_date.is_some());
    // Its own models, and the built-in ones it does not name.
    assert_eq!(t.price("acme-large-2-20260101").unwrap().input, 3.0);
    assert_eq!(t.price("claude-opus-4-6").unwrap().input, 5.0);
    // An entry of the user's file for a built-in model wins.
    std::fs::write(
        &mine,
        "[[model]]\nid = \"claude-opus-4-6\"\ninput = 4.0\noutput = 20.0\n",
    )
    .unwrap();
    let t = ModelTable::read(&mine).unwrap().over_builtin();
    assert_eq!(t.price("claude-opus-4-6").unwrap().input, 4.0);
    assert_eq!(
        t.models
            .iter()
            .filter(|m| m.id == "claude-opus-4-6")
            .count(),
        1
    );
}

#[test]
fn a_file_that_is_not_a_price_list_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("prices.json");
    std::fs::write(
        &p,
        "{\n  \"a\": {\n    \"input_cost_per_token\": 1e-6,\n  }\n}\n",
    )
    .unwrap();
    let e = models::import_litellm(&p, &dir.path().join("m.toml"), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("prices.json:4"), "{e}");
    std::fs::write(&p, "[1, 2]").unwrap();
    let e = models::import_litellm(&p, &dir.path().join("m.toml"), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("expected one JSON object of models by name"),
        "{e}"
    );
    assert!(!dir.path().join("m.toml").exists());
}

#[test]
fn the_cli_imports_lists_and_finds_the_unpriced_models_of_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (list, mine) = setup(dir.path());
    let out = ctxlab(&[
        "models",
        "import",
        list.to_str().unwrap(),
        "--into",
        mine.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 added, 1 updated, 1 of yours kept"),
        "{text}"
    );
    assert!(text.contains("mine-tuned: input 1 → 10"), "{text}");

    // The built-in table, with its date.
    let out = ctxlab(&["models", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let date = ModelTable::builtin().date.unwrap();
    assert!(text.contains(&format!("checked {date}")), "{text}");
    assert!(text.contains("claude-opus-4-6"), "{text}");

    // The models of a real log the table does not price.
    let log = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-logs"))
        .join("codex-cli_agentv/00/34f597b72d/1/full.jsonl");
    assert!(
        log.exists(),
        "../shared/real-logs is missing beside the checkout"
    );
    let out = ctxlab(&["models", "list", "--unknown", log.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("unpriced: gpt-5.3-codex-spark"), "{text}");
    let out = ctxlab(&[
        "models",
        "list",
        "--unknown",
        log.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["models"][0]["name"], "gpt-5.3-codex-spark");
    assert_eq!(v["models"][0]["priced"], false);
    assert_eq!(v["models"][0]["window_known"], true);
}
