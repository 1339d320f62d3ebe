//! The exported config files load in phi-core 0.15.2 itself (a dev-dependency) with every tuned
//! value arriving: each parameter tuned alone, and all together, in every export format, written
//! through ctxlab's export (which checks the round trip) and read with phi-core's own
//! `config::parse_config_file` + `config::agent_from_config` (src/config/parser.rs,
//! src/config/builder.rs). Values phi-core would refuse are refused by the export, with the reason.

use ctxlab::plugin_host::Registry;
use ctxlab_plugin_api::sdk::{ParamType, Params};
use phi_core::config::{agent_from_config, parse_config_file};
use phi_core::context::ContextConfig;
use serde_json::{json, Value};

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.add_in_process(ctxlab_plugin_phi_core::plugin_table(), "phi-core")
        .unwrap();
    reg
}

/// A value different from the default for every parameter; whole-number floats on purpose.
fn tuned() -> Vec<(&'static str, Value)> {
    vec![
        ("max_context_tokens", json!(64_000)),
        ("system_prompt_tokens", json!(3_000)),
        ("compact_at_pct", json!(1)),
        ("compact_budget_threshold_pct", json!(0.07)),
        ("keep_first_turns", json!(3)),
        ("keep_recent_turns", json!(7)),
        ("max_summary_tokens", json!(1_500)),
        ("tool_output_max_lines", json!(40)),
        (
            "focus_message",
            json!("Focus on API contracts: \"quoted\", $HOME and {braces}"),
        ),
        ("max_turns", json!(20)),
        ("max_total_tokens", json!(500_000)),
        ("max_duration_secs", json!(120)),
        ("max_cost", json!(2.5)),
        ("input_per_million", json!(3)),
        ("output_per_million", json!(15.5)),
        ("keep_recent", json!(6)),
        ("keep_first", json!(1)),
        ("legacy_tool_output_max_lines", json!(30)),
        ("end_agent_at_limit", json!(true)),
    ]
}

/// Loads `text` as phi-core does and checks every parameter of `p` arrived.
fn check_in_phi_core(text: &str, format: &str, p: &Params, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ext = format.trim_end_matches("-full");
    let path = dir.path().join(format!("agent.{ext}"));
    std::fs::write(&path, text).unwrap();
    let cfg = parse_config_file(&path)
        .unwrap_or_else(|e| panic!("{what} ({format}): phi-core refuses the file: {e}\n{text}"));
    let agent = agent_from_config(&cfg)
        .unwrap_or_else(|e| panic!("{what} ({format}): agent_from_config: {e}\n{text}"));
    let ctx = agent
        .context_config()
        .unwrap_or_else(|| panic!("{what} ({format}): phi-core built no ContextConfig\n{text}"));
    let c = &ctx.compaction;
    let f = |name: &str| p.float(name);
    let u = |name: &str| p.uint(name);
    let got_floats = [
        ("compact_at_pct", c.compact_at_pct),
        (
            "compact_budget_threshold_pct",
            c.compact_budget_threshold_pct,
        ),
    ];
    for (name, got) in got_floats {
        assert_eq!(got, f(name), "{what} ({format}): {name}\n{text}");
    }
    let got_ints = [
        ("max_context_tokens", ctx.max_context_tokens as u64),
        ("system_prompt_tokens", ctx.system_prompt_tokens as u64),
        ("keep_first_turns", c.keep_first_turns as u64),
        ("keep_recent_turns", c.keep_recent_turns as u64),
        ("max_summary_tokens", c.max_summary_tokens as u64),
        ("tool_output_max_lines", c.tool_output_max_lines as u64),
    ];
    for (name, got) in got_ints {
        assert_eq!(got, u(name), "{what} ({format}): {name}\n{text}");
    }
    let focus = p.get("focus_message").as_str();
    assert_eq!(
        c.focus_message.as_deref(),
        focus,
        "{what} ({format}): focus_message\n{text}"
    );
    let limits = agent.execution_limits().expect("limits are on by default");
    assert_eq!(
        limits.max_turns as u64,
        u("max_turns"),
        "{what} ({format}): max_turns"
    );
    assert_eq!(
        limits.max_total_tokens as u64,
        u("max_total_tokens"),
        "{what} ({format}): max_total_tokens"
    );
    assert_eq!(
        limits.max_duration.as_secs(),
        u("max_duration_secs"),
        "{what} ({format}): max_duration_secs"
    );
    let cost = f("max_cost");
    assert_eq!(
        limits.max_cost,
        (cost > 0.0).then_some(cost),
        "{what} ({format}): max_cost"
    );
    let model = agent.model_config().expect("a model config");
    assert_eq!(
        model.cost.input_per_million,
        f("input_per_million"),
        "{what} ({format})"
    );
    assert_eq!(
        model.cost.output_per_million,
        f("output_per_million"),
        "{what} ({format})"
    );
    // The legacy fields have no key in phi-core's file: they stay phi-core's defaults there
    // (set in code), and travel in [ctxlab] for ctxlab only.
    let d = ContextConfig::default();
    assert_eq!(
        (ctx.keep_recent, ctx.keep_first, ctx.tool_output_max_lines),
        (d.keep_recent, d.keep_first, d.tool_output_max_lines),
        "{what} ({format})"
    );
}

#[test]
fn every_parameter_alone_and_all_together_arrive_in_phi_core() {
    let reg = registry();
    let e = reg.require("phi-core.context").unwrap();
    let mut cases: Vec<(String, Value)> = vec![("defaults".into(), json!({}))];
    for (name, v) in tuned() {
        let mut one = serde_json::Map::new();
        one.insert(name.to_string(), v);
        cases.push((name.to_string(), Value::Object(one)));
    }
    let all: serde_json::Map<String, Value> = tuned()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    cases.push(("all together".into(), Value::Object(all)));
    // Every schema parameter is tuned here (a new one must be added).
    for s in &e.meta.params {
        assert!(
            tuned().iter().any(|(n, _)| *n == s.name),
            "{} is not tested",
            s.name
        );
    }
    let mut loaded = 0;
    for (what, given) in &cases {
        let p = Params::resolve(&e.meta.params, given).unwrap();
        for format in &e.meta.export_formats {
            let text = ctxlab::export::config(e, given, Some(format))
                .unwrap_or_else(|err| panic!("{what} ({format}): {err}"));
            check_in_phi_core(&text, format, &p, what);
            // ctxlab reads every value back, the ctxlab-only ones from [ctxlab].
            let back = Params::resolve(&e.meta.params, &e.import(format, &text).unwrap()).unwrap();
            for s in &e.meta.params {
                assert!(
                    ctxlab_plugin_api::sdk::same_value(back.get(&s.name), p.get(&s.name)),
                    "{what} ({format}): {} read back as {}",
                    s.name,
                    back.get(&s.name)
                );
                if s.ty == ParamType::Float {
                    assert!(back.get(&s.name).is_f64(), "{what} ({format}): {}", s.name);
                }
            }
            loaded += 1;
        }
    }
    assert_eq!(loaded, cases.len() * 6);
}

#[test]
fn values_phi_core_would_refuse_are_refused_with_the_reason() {
    let reg = registry();
    let e = reg.require("phi-core.context").unwrap();
    // phi-core replaces ${NAME} anywhere in the file (parser.rs substitute_env_vars), and refuses
    // the file when NAME is not set: the text would not arrive as tuned.
    let err = ctxlab::export::config(e, &json!({"focus_message": "see ${CTXLAB_NOT_SET}"}), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("${CTXLAB_NOT_SET}") && err.contains("environment"),
        "{err}"
    );
    // Proof that phi-core refuses it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(
        &path,
        "[compaction]\nmax_context_tokens = 1000\nfocus_message = \"see ${CTXLAB_NOT_SET}\"\n",
    )
    .unwrap();
    assert!(parse_config_file(&path).is_err());
    // TOML integers are i64: phi-core's TOML parser refuses u64::MAX ("number too large").
    std::fs::write(
        &path,
        format!("[execution]\nmax_total_tokens = {}\n", u64::MAX),
    )
    .unwrap();
    assert!(parse_config_file(&path).is_err());
    // ctxlab refuses any integer past i64 before a strategy or an exporter sees it (it used to
    // reach the strategy as 0 while YAML and JSON wrote u64::MAX: issue #25, finding 16), in
    // every format; i64::MAX, the largest it passes on, loads in phi-core from YAML and JSON.
    for f in ["toml", "yaml", "json"] {
        let err = ctxlab::export::config(e, &json!({"max_total_tokens": u64::MAX}), Some(f))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("max_total_tokens") && err.contains("out of range"),
            "{f}: {err}"
        );
    }
    for f in ["yaml", "json"] {
        let text =
            ctxlab::export::config(e, &json!({"max_total_tokens": i64::MAX}), Some(f)).unwrap();
        let path = dir.path().join(format!("big.{f}"));
        std::fs::write(&path, &text).unwrap();
        let agent = agent_from_config(&parse_config_file(&path).unwrap()).unwrap();
        assert_eq!(
            agent.execution_limits().unwrap().max_total_tokens as u64,
            i64::MAX as u64,
            "{f}"
        );
    }
}

#[test]
fn the_schema_defaults_are_phi_cores_own_defaults() {
    // src/context/config.rs `impl Default for ContextConfig` / `CompactionConfig`,
    // src/context/execution.rs `impl Default for ExecutionLimits`: an untuned parameter means
    // what phi-core does without it, including the legacy fields its file cannot set (they stay
    // these defaults in every agent phi-core builds from a file).
    let reg = registry();
    let e = reg.require("phi-core.context").unwrap();
    let p = Params::resolve(&e.meta.params, &json!({})).unwrap();
    let ctx = ContextConfig::default();
    let c = &ctx.compaction;
    let limits = phi_core::context::ExecutionLimits::default();
    let ints = [
        ("max_context_tokens", ctx.max_context_tokens as u64),
        ("system_prompt_tokens", ctx.system_prompt_tokens as u64),
        ("keep_first_turns", c.keep_first_turns as u64),
        ("keep_recent_turns", c.keep_recent_turns as u64),
        ("max_summary_tokens", c.max_summary_tokens as u64),
        ("tool_output_max_lines", c.tool_output_max_lines as u64),
        ("keep_recent", ctx.keep_recent as u64),
        ("keep_first", ctx.keep_first as u64),
        (
            "legacy_tool_output_max_lines",
            ctx.tool_output_max_lines as u64,
        ),
        ("max_turns", limits.max_turns as u64),
        ("max_total_tokens", limits.max_total_tokens as u64),
        ("max_duration_secs", limits.max_duration.as_secs()),
    ];
    for (name, want) in ints {
        assert_eq!(p.uint(name), want, "{name}");
    }
    assert_eq!(p.float("compact_at_pct"), c.compact_at_pct);
    assert_eq!(
        p.float("compact_budget_threshold_pct"),
        c.compact_budget_threshold_pct
    );
    assert_eq!(p.get("focus_message").as_str().unwrap_or(""), "");
    assert!(c.focus_message.is_none());
    // max_cost 0 means none (phi-core's `None`).
    assert_eq!(p.float("max_cost"), 0.0);
    assert!(limits.max_cost.is_none());
}
