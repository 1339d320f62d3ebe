//! Export → import gives back the same parameters, over many parameter sets drawn
//! deterministically from the schema.

use ctxlab_plugin_api::{ParamType, Params, StrategyFactory};
use ctxlab_plugin_fim_one::ContextGuardFactory;
use serde_json::{json, Map, Value};

/// A small deterministic generator (xorshift), so a failure names a reproducible case.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn draw(g: &mut Gen) -> Value {
    let mut out = Map::new();
    for spec in ContextGuardFactory.info().params {
        // Half of the values stay at their default, so `env` (non-defaults only) is exercised.
        if g.next() % 2 == 0 {
            continue;
        }
        let v = match spec.ty {
            ParamType::Int => {
                let min = spec.min.unwrap_or(0.0) as u64;
                json!(min + g.next() % 300_000)
            }
            ParamType::Bool => json!(g.next() % 2 == 0),
            ParamType::Enum => json!(spec.choices[(g.next() % spec.choices.len() as u64) as usize]),
            ParamType::IntList => {
                let n = g.next() % 4;
                json!((0..n).map(|_| g.next() % 10_000).collect::<Vec<_>>())
            }
            other => panic!("the generator does not cover {other:?}"),
        };
        out.insert(spec.name.clone(), v);
    }
    Value::Object(out)
}

#[test]
fn export_then_import_gives_the_same_parameters() {
    let f = ContextGuardFactory;
    let schema = f.info().params;
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for case in 0..400 {
        let given = draw(&mut g);
        let params = Params::resolve(&schema, &given).expect("drawn values are valid");
        let s = f.create(params.clone()).unwrap();
        for format in ["env", "env-full"] {
            let text = s.export(format).unwrap();
            let back = f
                .import(format, &text)
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
            let back = Params::resolve(&schema, &back).unwrap();
            assert_eq!(back, params, "case {case} ({format}):\n{text}");
        }
    }
}

#[test]
fn env_writes_only_changed_variables_and_env_full_writes_all() {
    let f = ContextGuardFactory;
    let schema = f.info().params;
    let p = Params::resolve(
        &schema,
        &json!({"LLM_CONTEXT_SIZE": 200000, "hint": "general"}),
    )
    .unwrap();
    let s = f.create(p).unwrap();
    let env = s.export("env").unwrap();
    assert!(
        env.starts_with(
            "# FIM One context management (written by ctxlab)\nLLM_CONTEXT_SIZE=200000\n# ctxlab: hint=general\n# note: the web app's ReAct chat"
        ),
        "{env}"
    );
    assert_eq!(env.lines().filter(|l| !l.starts_with('#')).count(), 1);
    assert!(
        env.contains("CONTEXT_GUARD_DEFAULT_BUDGET is unused there"),
        "{env}"
    );
    let full = s.export("env-full").unwrap();
    for key in [
        "LLM_CONTEXT_SIZE=200000",
        "LLM_MAX_OUTPUT_TOKENS=64000",
        "CONTEXT_GUARD_DEFAULT_BUDGET=32000",
        "CONTEXT_GUARD_MAX_MSG_CHARS=50000",
        "CONTEXT_GUARD_KEEP_RECENT=4",
    ] {
        assert!(full.lines().any(|l| l == key), "{key} missing:\n{full}");
    }
    let e = s.export("yaml").unwrap_err();
    assert!(e.contains("env-full"), "{e}");
}

#[test]
fn a_budget_below_the_floor_is_exported_with_fim_ones_clamp_noted() {
    let f = ContextGuardFactory;
    let p = Params::resolve(
        &f.info().params,
        &json!({"LLM_CONTEXT_SIZE": 8000, "LLM_MAX_OUTPUT_TOKENS": 8000}),
    )
    .unwrap();
    let text = f.create(p).unwrap().export("env").unwrap();
    assert!(
        text.contains(
            "LLM_CONTEXT_SIZE - LLM_MAX_OUTPUT_TOKENS = 0; FIM One clamps the input budget to 4000"
        ),
        "{text}"
    );
    // deps._compute_input_budget: 8000 − 4000 is the floor itself, 70000 − 64000 = 6000.
    for (ctx, out) in [(8000, 4000), (70000, 64000)] {
        let p = Params::resolve(
            &f.info().params,
            &json!({"LLM_CONTEXT_SIZE": ctx, "LLM_MAX_OUTPUT_TOKENS": out}),
        )
        .unwrap();
        let text = f.create(p).unwrap().export("env").unwrap();
        assert!(!text.contains("clamps"), "{text}");
    }
}
