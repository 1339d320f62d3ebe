//! fuseraft YAML export, fuseraft validate's rules, import, and the round trip.

mod common;
use common::*;
use ctxlab_plugin_api::sdk::*;
use ctxlab_plugin_fuseraft::settings::{schema, AgentWindow, Settings};
use ctxlab_plugin_fuseraft::FuseraftCompaction;
use serde_json::{json, Value};

fn export(p: Value, format: &str) -> Result<String, String> {
    make(p).export(format)
}

/// Parses an export the way fuseraft's YamlConfigLoader sees it (YAML → JSON value), so tests
/// compare values, not text.
fn parsed(y: &str) -> Value {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(y).expect("export is YAML");
    serde_json::to_value(v).expect("JSON-compatible")
}

/// YamlConfigLoader: everything binds under `Orchestration:`; only non-default values are written.
#[test]
fn export_writes_only_non_default_values_under_orchestration() {
    let y = export(
        json!({"TriggerTurnCount": 40, "KeepRecentTurns": 8, "Mode": "intent", "WarnAt": 80000, "CutoverAt": 120000,
               "Model": "gpt-4o-mini",
               "Agents": "{\"Reviewer\": {\"TextOnly\": true, \"MaxTurnAge\": 3, \"ToolResultCharOverrides\": {\"grep_file\": 20000}}, \"Developer\": {\"MaxInTurnToolPairs\": 12}}"}),
        "fuseraft",
    )
    .unwrap();
    assert_eq!(
        parsed(&y),
        json!({"Orchestration": {
        "Compaction": {"TriggerTurnCount": 40, "KeepRecentTurns": 8, "Mode": "intent",
                       "Model": {"ModelId": "gpt-4o-mini"}},
        "ContextBudget": {"WarnAt": 80000, "CutoverAt": 120000},
        "Agents": [
            {"Name": "Developer", "MaxInTurnToolPairs": 12},
            {"Name": "Reviewer", "ContextWindow": {"TextOnly": true, "MaxTurnAge": 3,
                "ToolResultCharOverrides": {"grep_file": 20000}}}
        ]}})
    );
    let y = export(json!({"Compaction": false}), "fuseraft").unwrap();
    assert_eq!(parsed(&y), json!({"Orchestration": {}}));
}

/// JsonConfigurationFileParser turns `Compaction: {}` into a null value, which binds
/// `Compaction = null` (compaction off): the default export names TriggerTurnCount instead, and
/// import reads an empty section as absent.
#[test]
fn default_export_never_writes_an_empty_compaction_section() {
    let y = export(json!({}), "fuseraft").unwrap();
    assert_eq!(
        parsed(&y),
        json!({"Orchestration": {"Compaction": {"TriggerTurnCount": 50}}})
    );
    let v = FuseraftCompaction.import("fuseraft", &y).unwrap();
    assert_eq!(v["Compaction"], json!(true));
    for empty in [
        "Orchestration:\n  Compaction: {}\n",
        "Orchestration:\n  Compaction:\n",
    ] {
        let v = FuseraftCompaction.import("fuseraft", empty).unwrap();
        assert_eq!(v["Compaction"], json!(false), "{empty}");
    }
}

#[test]
fn full_export_writes_every_value() {
    let y = export(json!({}), "fuseraft-full").unwrap();
    let v = parsed(&y);
    let c = &v["Orchestration"]["Compaction"];
    assert_eq!(c["TriggerTurnCount"], json!(50));
    assert_eq!(c["KeepRecentTurns"], json!(10));
    assert_eq!(c["Mode"], json!("llm"));
    assert_eq!(c["TokenBudget"], json!(80000));
    assert_eq!(c["IncludeReasoning"], json!(false));
    assert_eq!(c["IncludeSymbolGraph"], json!(true));
    assert_eq!(c["IncludeExploration"], json!(true));
    assert_eq!(c["PinLastRoutingSignal"], json!(true));
    assert_eq!(c["MaxCharsPerHistoryMessage"], json!(8000));
    assert_eq!(c["AntiThrashMinSavingsRatio"].as_f64(), Some(0.1));
    assert_eq!(c["AntiThrashWindow"], json!(10));
    assert!(
        c.get("Model").is_none() && c.get("SummaryTemplate").is_none(),
        "null when unset"
    );
    let b = &v["Orchestration"]["ContextBudget"];
    assert_eq!(
        b,
        &json!({"WarnAt": 0, "CutoverAt": 0, "MaxSingleTurnInputTokens": 0,
                "MaxToolResultTokens": 0, "InTurnToolWindow": 20})
    );
    assert!(export(json!({}), "toml")
        .unwrap_err()
        .contains("fuseraft-full"));
}

/// ValidateConfigCommand.ValidateCompactionConfig / ValidateAgents, in fuseraft's words. The
/// context-budget errors are also OrchestratorBuilder startup errors: such a strategy is refused.
#[test]
fn validate_config_command_errors_in_fuseraft_wording() {
    let e = make_err(json!({"Compaction": false, "CutoverAt": 1000}));
    assert_eq!(e, "ContextBudget.CutoverAt and ContextBudget.MaxSingleTurnInputTokens require a Compaction section. Add Compaction to enable automatic context trimming.");
    let e = make_err(json!({"Compaction": false, "MaxSingleTurnInputTokens": 1000}));
    assert!(e.contains("require a Compaction section"), "{e}");
    let e = make_err(json!({"WarnAt": 120000, "CutoverAt": 120000}));
    assert_eq!(
        e,
        "ContextBudget.WarnAt (120,000) must be less than CutoverAt (120,000)."
    );
    let e = export(json!({"AntiThrashMinSavingsRatio": 1.5}), "fuseraft").unwrap_err();
    assert!(
        e.contains("Compaction.AntiThrashMinSavingsRatio must be 0.0–1.0 (got 1.5)."),
        "{e}"
    );
    let e = export(
        json!({"Agents": "{\"A\": {\"ContextCapFraction\": 2}}"}),
        "fuseraft",
    )
    .unwrap_err();
    assert!(
        e.contains("Agent 'A': ContextCapFraction must be 0.0–1.0 (got 2)."),
        "{e}"
    );
    // WarnAt alone without Compaction is fine.
    export(json!({"Compaction": false, "WarnAt": 1000}), "fuseraft").unwrap();
}

#[test]
fn a_replay_of_an_invalid_config_says_what_validate_would_reject() {
    let mut sim = Sim::new(json!({"AntiThrashMinSavingsRatio": 1.5}));
    let d = sim.call("main", vec![ctxlab_plugin_api::testing::TestMsg::user("x")]);
    assert!(has(&d, "fuseraft_validate"));
}

#[test]
fn flat_context_window_needs_agent_names_to_export() {
    let e = export(json!({"TextOnly": true}), "fuseraft").unwrap_err();
    assert!(e.contains("per agent"), "{e}");
    // After a replay the agents it saw get the flat settings.
    let mut sim = Sim::new(json!({"TextOnly": true}));
    sim.call(
        "Reviewer",
        vec![ctxlab_plugin_api::testing::TestMsg::user("x")],
    );
    let y = sim.strategy.export("fuseraft").unwrap();
    assert_eq!(
        parsed(&y)["Orchestration"]["Agents"],
        json!([{"Name": "Reviewer", "ContextWindow": {"TextOnly": true}}])
    );
}

#[test]
fn import_reads_a_whole_fuseraft_config() {
    let text = "Models:\n  Default: gpt-4o\nCompaction:\n  TriggerTurnCount: 20\n  KeepRecentTurns: 5\n  Mode: window\n  TokenBudget: 60000\n  Model:\n    ModelId: gpt-4o-mini\nContextBudget:\n  WarnAt: 80000\n  CutoverAt: 120000\nAgents:\n  - Name: Reviewer\n    Model: x\n    Instructions: review\n    ContextWindow:\n      TextOnly: true\n      ExcludeAgents: [Tester]\n      ContextCapFraction: 0.8\n      MaxTailMessages: 40\n  - Name: Planner\n    Instructions: plan\n";
    let v = FuseraftCompaction.import("fuseraft", text).unwrap();
    let p = Params::resolve(&schema(), &v).unwrap();
    assert!(p.bool("Compaction"));
    assert_eq!(p.int("TriggerTurnCount"), 20);
    assert_eq!(p.str("Mode"), "window");
    assert_eq!(p.int("CutoverAt"), 120000);
    let s = Settings::from_params(&p).unwrap();
    let w = s.window_for("Reviewer");
    assert!(
        w.text_only && w.exclude_agents == vec!["Tester".to_string()] && w.max_tail_messages == 40
    );
    assert_eq!(w.context_cap_fraction, 0.8);
    assert!(
        !s.agents.contains_key("Planner"),
        "agents without context settings are not parameters"
    );
    // Without a Compaction section, compaction is off.
    let v = FuseraftCompaction
        .import("fuseraft", "ContextBudget:\n  WarnAt: 5\n")
        .unwrap();
    assert_eq!(v["Compaction"], json!(false));
    // Clear errors.
    let e = FuseraftCompaction
        .import("fuseraft", "Compaction:\n  Trigger: 5\n")
        .unwrap_err();
    assert!(
        e.contains("unknown key Trigger") && e.contains("TriggerTurnCount"),
        "{e}"
    );
    assert_eq!(p.str("Model"), "gpt-4o-mini");
    // The same config under its Orchestration: root, with the tool-result window.
    let indented: String = text.lines().map(|l| format!("  {l}\n")).collect();
    let v = FuseraftCompaction
        .import("fuseraft", &format!("Orchestration:\n{indented}"))
        .unwrap();
    assert_eq!(v["TriggerTurnCount"], json!(20));
    let v = FuseraftCompaction
        .import("fuseraft", "Orchestration:\n  ContextBudget:\n    MaxToolResultTokens: 5\n    InTurnToolWindow: 4\n")
        .unwrap();
    assert_eq!(
        (
            v["MaxToolResultTokens"].clone(),
            v["InTurnToolWindow"].clone()
        ),
        (json!(5), json!(4))
    );
    let e = FuseraftCompaction
        .import("fuseraft", "Agents:\n  - ContextWindow: {TextOnly: true}\n")
        .unwrap_err();
    assert!(e.contains("Name is missing"), "{e}");
    let e = FuseraftCompaction
        .import(
            "fuseraft",
            "Agents:\n  - Name: A\n    ContextWindow: {MaxTurnAge: many}\n",
        )
        .unwrap_err();
    assert!(e.contains("MaxTurnAge") && e.contains("integer"), "{e}");
}

/// A deterministic generator over the schema: a small LCG picks each parameter's value.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize].clone()
    }
}

fn window_fields(g: &mut Gen) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let choices: Vec<(&str, Vec<Value>)> = vec![
        ("TextOnly", vec![json!(true), json!(false)]),
        (
            "ExcludeAgents",
            vec![json!([]), json!(["Tester"]), json!(["Tester", "Planner"])],
        ),
        ("MaxTurnAge", vec![json!(0), json!(3), json!(7)]),
        ("MaxTailMessages", vec![json!(0), json!(20), json!(40)]),
        (
            "ContextCapFraction",
            vec![json!(0.0), json!(0.8), json!(0.25), json!(1.0)],
        ),
        ("MaxToolResultChars", vec![json!(0), json!(8000)]),
        (
            "ToolResultCharOverrides",
            vec![json!({}), json!({"grep_file": 20000, "search_content": 0})],
        ),
        ("MaxReplayChars", vec![json!(0), json!(4000)]),
        ("MaxInTurnToolPairs", vec![json!(0), json!(12)]),
        ("MaxInTurnContextTokens", vec![json!(0), json!(30000)]),
    ];
    for (k, vs) in choices {
        if g.next() % 3 == 0 {
            m.insert(k.into(), g.pick(&vs));
        }
    }
    m
}

fn generate(g: &mut Gen) -> Value {
    let mut p = serde_json::Map::new();
    let compaction = g.next() % 5 != 0;
    p.insert("Compaction".into(), json!(compaction));
    let trigger = g.pick(&[20u64, 40, 50, 77]);
    p.insert("TriggerTurnCount".into(), json!(trigger));
    p.insert(
        "KeepRecentTurns".into(),
        json!(1 + g.next() % (trigger - 1)),
    );
    p.insert(
        "Mode".into(),
        json!(g.pick(&["llm", "intent", "hybrid", "window"])),
    );
    p.insert(
        "TokenBudget".into(),
        json!(g.pick(&[80000u64, 60000, 12345])),
    );
    p.insert("IncludeReasoning".into(), json!(g.next() % 2 == 0));
    p.insert("IncludeSymbolGraph".into(), json!(g.next() % 2 == 0));
    p.insert(
        "MaxCharsPerHistoryMessage".into(),
        json!(g.pick(&[8000u64, 0, 4000])),
    );
    p.insert(
        "AntiThrashMinSavingsRatio".into(),
        json!(g.pick(&[0.1, 0.15, 0.0, 1.0, 0.333])),
    );
    p.insert("AntiThrashWindow".into(), json!(g.pick(&[10u64, 4, 0])));
    p.insert("IncludeExploration".into(), json!(g.next() % 2 == 0));
    p.insert("PinLastRoutingSignal".into(), json!(g.next() % 2 == 0));
    p.insert(
        "SummaryTemplate".into(),
        json!(g.pick(&["", "Summarize {{$history}} for {{$task}}: keep paths."])),
    );
    p.insert(
        "Model".into(),
        json!(g.pick(&["", "gpt-4o-mini", "claude-haiku-4-5"])),
    );
    p.insert("MaxToolResultTokens".into(), json!(g.pick(&[0u64, 30000])));
    p.insert("InTurnToolWindow".into(), json!(g.pick(&[20u64, 5])));
    let warn = g.pick(&[0u64, 80000, 50000]);
    p.insert("WarnAt".into(), json!(warn));
    if compaction {
        p.insert("CutoverAt".into(), json!(g.pick(&[0u64, 120000, 200000])));
        p.insert(
            "MaxSingleTurnInputTokens".into(),
            json!(g.pick(&[0u64, 40000])),
        );
    }
    let mut agents = serde_json::Map::new();
    for name in ["Developer", "Reviewer", "Tester"] {
        if g.next() % 2 == 0 {
            agents.insert(name.into(), Value::Object(window_fields(g)));
        }
    }
    p.insert("Agents".into(), json!(Value::Object(agents).to_string()));
    // Half of the sets also set the flat (all-agents) ContextWindow.
    if g.next() % 2 == 0 {
        for (k, v) in window_fields(g) {
            p.insert(k, v);
        }
    }
    Value::Object(p)
}

/// An instance that has seen two agents: the flat ContextWindow reaches fuseraft through names.
fn replayed(params: Params) -> Box<dyn Strategy> {
    let mut s = FuseraftCompaction.create(params).unwrap();
    for agent in ["Developer", "Planner"] {
        let mut tc = ctxlab_plugin_api::testing::TestCall::new(vec![
            ctxlab_plugin_api::testing::TestMsg::user("x"),
        ]);
        tc.agent = agent.into();
        tc.decide(s.as_mut()).unwrap();
    }
    s
}

#[test]
fn export_then_import_gives_the_same_parameters_over_many_sets() {
    let mut g = Gen(42);
    let mut checked = 0;
    for _ in 0..500 {
        let p = generate(&mut g);
        let params = params(p.clone());
        let before = Settings::from_params(&params).unwrap();
        let s = replayed(params);
        for format in ["fuseraft", "fuseraft-full"] {
            let y = s.export(format).unwrap_or_else(|e| panic!("{p}: {e}"));
            let back = FuseraftCompaction
                .import(format, &y)
                .unwrap_or_else(|e| panic!("{y}: {e}"));
            let after = Settings::from_params(&Params::resolve(&schema(), &back).unwrap()).unwrap();
            assert_eq!(after.compaction, before.compaction, "{y}");
            assert_eq!(after.budget, before.budget, "{y}");
            for agent in ["Developer", "Reviewer", "Tester", "Planner"] {
                let named =
                    before.agents.contains_key(agent) || agent == "Developer" || agent == "Planner";
                if named {
                    assert_eq!(
                        after.window_for(agent),
                        before.window_for(agent),
                        "{agent} in\n{y}"
                    );
                }
            }
            if before.defaults == Default::default() {
                // Exact, once overrides that restate fuseraft's defaults (no-ops here) are left out.
                let mut canonical = before.clone();
                for fields in canonical.agents.values_mut() {
                    fields.retain(|k, v| !AgentWindow::is_default_field(k, v));
                }
                canonical.agents.retain(|_, f| !f.is_empty());
                assert_eq!(
                    after, canonical,
                    "exact when the flat ContextWindow is default:\n{y}"
                );
            }
            // Exporting the imported parameters writes the same file (the full format also lists
            // agents whose settings are all defaults, which import leaves out).
            let again = replayed(Params::resolve(&schema(), &back).unwrap()).export(format);
            if before.defaults == Default::default() && format == "fuseraft" {
                assert_eq!(again.unwrap(), y);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 1000);
}
