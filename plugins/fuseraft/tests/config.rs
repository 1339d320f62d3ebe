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

#[test]
fn export_writes_only_non_default_values_with_fuseraft_keys() {
    let y = export(
        json!({"TriggerTurnCount": 40, "KeepRecentTurns": 8, "Mode": "intent", "WarnAt": 80000, "CutoverAt": 120000,
               "Agents": "{\"Reviewer\": {\"TextOnly\": true, \"MaxTurnAge\": 3, \"ToolResultCharOverrides\": {\"grep_file\": 20000}}, \"Developer\": {\"MaxInTurnToolPairs\": 12}}"}),
        "fuseraft",
    )
    .unwrap();
    let body: String = y
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        body,
        "Compaction:\n  TriggerTurnCount: 40\n  KeepRecentTurns: 8\n  Mode: intent\nContextBudget:\n  WarnAt: 80000\n  CutoverAt: 120000\nAgents:\n- Name: Developer\n  MaxInTurnToolPairs: 12\n- Name: Reviewer\n  ContextWindow:\n    TextOnly: true\n    MaxTurnAge: 3\n    ToolResultCharOverrides:\n      grep_file: 20000"
    );
    // Defaults only: an empty Compaction section (present, so compaction is on).
    let y = export(json!({}), "fuseraft").unwrap();
    assert!(y.contains("Compaction: {}"), "{y}");
    let y = export(json!({"Compaction": false}), "fuseraft").unwrap();
    assert!(!y.contains("Compaction"), "{y}");
}

#[test]
fn full_export_writes_every_value() {
    let y = export(json!({}), "fuseraft-full").unwrap();
    for k in [
        "TriggerTurnCount: 50",
        "KeepRecentTurns: 10",
        "Mode: llm",
        "TokenBudget: 80000",
        "IncludeReasoning: false",
        "IncludeSymbolGraph: true",
        "MaxCharsPerHistoryMessage: 8000",
        "AntiThrashMinSavingsRatio: 0.1",
        "AntiThrashWindow: 10",
        "WarnAt: 0",
        "CutoverAt: 0",
        "MaxSingleTurnInputTokens: 0",
    ] {
        assert!(y.contains(k), "{k} missing in\n{y}");
    }
    assert!(export(json!({}), "toml")
        .unwrap_err()
        .contains("fuseraft-full"));
}

#[test]
fn export_refuses_what_fuseraft_validate_rejects() {
    let e = export(json!({"Compaction": false, "CutoverAt": 1000}), "fuseraft").unwrap_err();
    assert!(
        e.contains("CutoverAt (1,000) is set but there is no Compaction section"),
        "{e}"
    );
    let e = export(
        json!({"Compaction": false, "MaxSingleTurnInputTokens": 1000}),
        "fuseraft",
    )
    .unwrap_err();
    assert!(e.contains("MaxSingleTurnInputTokens"), "{e}");
    let e = export(json!({"WarnAt": 120000, "CutoverAt": 120000}), "fuseraft").unwrap_err();
    assert!(
        e.contains("WarnAt (120,000) must be less than ContextBudget.CutoverAt (120,000)"),
        "{e}"
    );
    let e = export(json!({"AntiThrashMinSavingsRatio": 1.5}), "fuseraft").unwrap_err();
    assert!(
        e.contains("AntiThrashMinSavingsRatio must be between 0 and 1"),
        "{e}"
    );
    let e = export(
        json!({"ContextCapFraction": -0.1, "Agents": "{\"A\": {}}"}),
        "fuseraft",
    )
    .unwrap_err();
    assert!(
        e.contains("ContextCapFraction must be between 0 and 1"),
        "{e}"
    );
    let e = export(
        json!({"Agents": "{\"A\": {\"ContextCapFraction\": 2}}"}),
        "fuseraft",
    )
    .unwrap_err();
    assert!(
        e.contains("Agents[A].ContextWindow.ContextCapFraction"),
        "{e}"
    );
    // WarnAt alone without Compaction is fine.
    export(json!({"Compaction": false, "WarnAt": 1000}), "fuseraft").unwrap();
}

#[test]
fn a_replay_of_an_invalid_config_says_what_validate_would_reject() {
    let mut sim = Sim::new(json!({"WarnAt": 10, "CutoverAt": 5}));
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
    assert!(
        y.contains("- Name: Reviewer\n  ContextWindow:\n    TextOnly: true"),
        "{y}"
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
    let e = FuseraftCompaction
        .import("fuseraft", "ContextBudget:\n  MaxToolResultTokens: 5\n")
        .unwrap_err();
    assert!(e.contains("does not model"), "{e}");
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
    p.insert("KeepRecentTurns".into(), json!(g.next() % trigger));
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
