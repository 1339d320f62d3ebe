//! export: every strategy's config, in every format it offers, imports back to the same
//! parameters; a config that would not is refused; the CLI writes the checked text.

mod compare_support;
use compare_support::*;

use ctxlab::plugin_host::Registry;
use ctxlab_plugin_api::sdk::{
    Call, Decision, ParamSpec, ParamType, Params, Strategy, StrategyFactory, StrategyInfo,
};
use serde_json::{json, Value};

#[test]
fn every_exported_config_reimports_to_the_same_parameters() {
    let reg = registry();
    let mut checked = 0;
    for e in reg.strategies() {
        assert!(
            !e.meta.export_formats.is_empty(),
            "{} exports nothing",
            e.meta.id
        );
        for f in &e.meta.export_formats {
            let text = ctxlab::export::config(e, &json!({}), Some(f))
                .unwrap_or_else(|err| panic!("{} {f}: {err}", e.meta.id));
            assert!(!text.trim().is_empty(), "{} {f}: empty", e.meta.id);
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} formats checked");
}

#[test]
fn tuned_values_survive_the_export() {
    let reg = registry();
    let cases = [
        (
            "fuseraft.compaction",
            json!({"TriggerTurnCount": 33, "KeepRecentTurns": 7, "CutoverAt": 120000}),
            "33",
        ),
        (
            "phi-core.context",
            json!({"compact_at_pct": 0.8, "keep_recent_turns": 6}),
            "0.8",
        ),
        (
            "librechat.agents",
            json!({"reserveRatio": 0.2, "maxSummaryTokens": 1500}),
            "1500",
        ),
        (
            "fim-one.context-guard",
            json!({"CONTEXT_GUARD_KEEP_RECENT": 9}),
            "9",
        ),
        (
            "codetether.compression",
            json!({"truncate_keep_last": 3}),
            "3",
        ),
        ("example.keep-last-results", json!({"keep_last": 11}), "11"),
    ];
    for (id, params, shows) in cases {
        let e = entry(&reg, id);
        let text = ctxlab::export::config(&e, &params, None).unwrap();
        assert!(text.contains(shows), "{id}: {text}");
        let back = e.import(&e.meta.export_formats[0], &text).unwrap();
        let want = Params::resolve(&e.meta.params, &params).unwrap();
        assert_eq!(
            Params::resolve(&e.meta.params, &back).unwrap(),
            want,
            "{id}"
        );
    }
}

#[test]
fn unknown_formats_and_invalid_parameters_are_refused() {
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    let err = ctxlab::export::config(&e, &json!({}), Some("xml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot export xml") && err.contains("fuseraft"),
        "{err}"
    );
    let err = ctxlab::export::config(&e, &json!({"TriggerTurnCount": -1}), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("TriggerTurnCount"), "{err}");
}

/// A strategy whose importer loses `window`: its export must never be handed out.
struct Lossy;
struct LossyInstance;

impl Strategy for LossyInstance {
    fn decide(&mut self, _: &Call<'_>, _: &mut Decision) -> Result<(), String> {
        Ok(())
    }
    fn export(&self, _: &str) -> Result<String, String> {
        Ok("window = 9000\n".into())
    }
}

impl StrategyFactory for Lossy {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "test.lossy",
            title: "lossy",
            system: "test",
            description: "imports back a different value",
            params: vec![ParamSpec::new("window", ParamType::Int, json!(100), "w")],
            export_formats: &["ini"],
        }
    }
    fn create(&self, _: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(LossyInstance))
    }
    fn import(&self, _: &str, _: &str) -> Result<Value, String> {
        Ok(json!({"window": 100}))
    }
}

/// A strategy whose config file writes a whole-number float as TOML and YAML read it back: `3`
/// exported, `3.0` imported. The same number: its export must be handed out.
struct WholeFloat;
struct WholeFloatInstance(f64);

impl Strategy for WholeFloatInstance {
    fn decide(&mut self, _: &Call<'_>, _: &mut Decision) -> Result<(), String> {
        Ok(())
    }
    fn export(&self, _: &str) -> Result<String, String> {
        Ok(format!("rate = {}\n", self.0))
    }
}

impl StrategyFactory for WholeFloat {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "test.whole-float",
            title: "whole float",
            system: "test",
            description: "imports back 3.0 for 3",
            params: vec![ParamSpec::new("rate", ParamType::Float, json!(0.5), "r")],
            export_formats: &["ini"],
        }
    }
    fn create(&self, p: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(WholeFloatInstance(p.float("rate"))))
    }
    fn import(&self, _: &str, text: &str) -> Result<Value, String> {
        let n: f64 = text
            .trim()
            .trim_start_matches("rate = ")
            .parse()
            .map_err(|e| format!("{e}"))?;
        Ok(json!({ "rate": n }))
    }
}

ctxlab_plugin_api::export_plugin!(name: "lossy", version: "0.0.1", strategies: [&Lossy, &WholeFloat]);

#[test]
fn a_whole_number_float_that_reads_back_as_a_float_is_the_same_value() {
    let mut reg = Registry::new();
    reg.add_in_process(plugin_table(), "lossy").unwrap();
    let e = reg.require("test.whole-float").unwrap();
    for (given, shows) in [(json!(3), "rate = 3\n"), (json!(1), "rate = 1\n")] {
        let text = ctxlab::export::config(e, &json!({ "rate": given }), None)
            .unwrap_or_else(|err| panic!("{given}: {err}"));
        assert_eq!(text, shows);
    }
    let err = ctxlab::export::config(e, &json!({"rate": 2.5}), None);
    assert!(err.is_ok(), "{err:?}");
}

#[test]
fn a_config_that_does_not_import_back_is_refused_naming_the_parameter() {
    let mut reg = Registry::new();
    reg.add_in_process(plugin_table(), "lossy").unwrap();
    let e = reg.require("test.lossy").unwrap();
    let err = ctxlab::export::config(e, &json!({"window": 9000}), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not import back")
            && err.contains("window: 9000 exported, 100 read back"),
        "{err}"
    );
}

#[test]
fn the_cli_writes_the_checked_config_from_params_or_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut lib = ctxlab::store::Library::open(&db).unwrap();
    lib.save_profile(
        "fuseraft.compaction",
        "tight",
        &json!({"TriggerTurnCount": 21}),
        "",
    )
    .unwrap();
    drop(lib);
    let out_file = dir.path().join("fuseraft.yaml");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .args(args)
            .env("CTXLAB_PLUGIN_PATH", build_dir())
            .env("CTXLAB_DB", &db)
            .output()
            .unwrap()
    };
    let o = run(&[
        "export",
        "-s",
        "fuseraft.compaction",
        "--profile",
        "tight",
        "--param",
        "KeepRecentTurns=3",
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    let back = Params::resolve(&e.meta.params, &e.import("fuseraft", &text).unwrap()).unwrap();
    assert_eq!(back.int("TriggerTurnCount"), 21);
    assert_eq!(back.int("KeepRecentTurns"), 3);
    let o = run(&["export", "-s", "fuseraft.compaction", "--profile", "loose"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no profile loose"));
}

/// A fuseraft config as `fuseraft init` writes it (InitTemplates.Minimal: everything under
/// `Orchestration:`), with a Compaction section the user set by hand.
const FUSERAFT_FILE: &str = "Orchestration:
  Name: Minimal Agent
  Agents:
    - Name: Agent
      Instructions: |
        Complete the task.
      Model:
        ModelId: gpt-4o
      Plugins:
        - FileSystem
      ContextWindow:
        MaxTailMessages: 40
    - Name: Reviewer
      Instructions: review
      Model:
        ModelId: gpt-4o
  Compaction:
    Mode: intent
    TriggerTurnCount: 80
  Selection:
    Type: sequential
";

/// `ctxlab export --into`: the export merges into the user's fuseraft file under its
/// `Orchestration:` root; the file's other keys stay, every tuned value arrives, and the result
/// reads back (by the plugin's import, which follows fuseraft's binding) to the tuned values.
#[test]
fn export_into_merges_into_a_whole_fuseraft_config_and_keeps_its_other_keys() {
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    let params = json!({"TriggerTurnCount": 33, "KeepRecentTurns": 7, "CutoverAt": 120000,
                        "Agents": "{\"Reviewer\": {\"TextOnly\": true}}"});
    let m = ctxlab::export::merge_into(&e, &params, None, FUSERAFT_FILE).unwrap();
    let doc: Value =
        serde_json::to_value(serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&m.text).unwrap())
            .unwrap();
    let o = &doc["Orchestration"];
    assert_eq!(o["Name"], json!("Minimal Agent"));
    assert_eq!(o["Selection"], json!({"Type": "sequential"}));
    let agent = &o["Agents"][0];
    assert_eq!(agent["Model"], json!({"ModelId": "gpt-4o"}));
    assert_eq!(agent["Plugins"], json!(["FileSystem"]));
    assert_eq!(agent["ContextWindow"]["MaxTailMessages"], json!(40));
    let reviewer = &o["Agents"][1];
    assert_eq!(reviewer["Instructions"], json!("review"));
    assert_eq!(reviewer["ContextWindow"]["TextOnly"], json!(true));
    // The export's every-value format overrides the file's hand-set Mode.
    assert_eq!(o["Compaction"]["Mode"], json!("llm"));
    assert_eq!(o["Compaction"]["TriggerTurnCount"], json!(33));
    assert_eq!(o["ContextBudget"]["CutoverAt"], json!(120000));
    let back = Params::resolve(&e.meta.params, &e.import("fuseraft", &m.text).unwrap()).unwrap();
    assert_eq!(back.int("TriggerTurnCount"), 33);
    assert_eq!(back.int("KeepRecentTurns"), 7);
    assert_eq!(back.str("Mode"), "llm");
    // What only the file sets is reported, not hidden: the Agent's MaxTailMessages.
    assert!(
        m.kept_from_file.iter().any(|k| k.starts_with("Agents:")),
        "{:?}",
        m.kept_from_file
    );
    // Not YAML: a clear error.
    let err = ctxlab::export::merge_into(&e, &params, None, "[a")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not valid YAML"), "{err}");
}

#[test]
fn the_cli_export_into_writes_the_merged_file_and_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fuseraft.yaml");
    std::fs::write(&file, FUSERAFT_FILE).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args([
            "export",
            "-s",
            "fuseraft.compaction",
            "--param",
            "WarnAt=5000",
            "--into",
        ])
        .arg(&file)
        .env("CTXLAB_PLUGIN_PATH", build_dir())
        .env("CTXLAB_DB", dir.path().join("db.sqlite"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("Minimal Agent") && text.contains("WarnAt: 5000"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("fuseraft.yaml.bak")).unwrap(),
        FUSERAFT_FILE
    );
}

/// A structured parameter given as valid but not compact, sorted JSON (or as YAML) is the same
/// setting as the plugin's compact read-back: parsed values are compared, not text.
#[test]
fn a_structured_parameter_in_any_layout_survives_the_round_trip_check() {
    let reg = registry();
    let e = entry(&reg, "fuseraft.compaction");
    for agents in [
        "{\"Reviewer\": {\"TextOnly\": true, \"MaxTurnAge\": 3}}",
        "{ \"Reviewer\" : { \"MaxTurnAge\" : 3 , \"TextOnly\" : true } }",
        "Reviewer:\n  TextOnly: true\n  MaxTurnAge: 3\n",
    ] {
        ctxlab::export::config(&e, &json!({ "Agents": agents }), None)
            .unwrap_or_else(|err| panic!("{agents}: {err}"));
    }
}
