//! The exported `.env` read by the real python-dotenv (the loader FIM One depends on, installed
//! by scripts/setup.sh into target/pydeps) gives every tuned value, and FIM One's own arithmetic
//! on those values gives the budget the plugin reports:
//! `deps._compute_input_budget` = `max(int(LLM_CONTEXT_SIZE) - int(LLM_MAX_OUTPUT_TOKENS), 4_000)`
//! with the defaults of `deps.get_context_budget` / `_main_max_output`, and ContextGuard's
//! `int(os.getenv(...))` class attributes (fim-one @ 8bfe86d2).

use ctxlab_plugin_api::{Params, StrategyFactory, ThresholdKind};
use ctxlab_plugin_fim_one::ContextGuardFactory;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// Loads each file with `dotenv_values` and applies FIM One's reads of the five variables.
const READER: &str = r#"
import json, sys
from dotenv import dotenv_values
out = []
for path in sys.argv[1:]:
    env = {k: v for k, v in dotenv_values(path).items() if v is not None}
    get = lambda k, d: int(env.get(k, d))
    context_size = get("LLM_CONTEXT_SIZE", "128000")
    max_output = get("LLM_MAX_OUTPUT_TOKENS", "64000")
    out.append({
        "env": env,
        "budget": max(context_size - max_output, 4_000),
        "CONTEXT_GUARD_DEFAULT_BUDGET": get("CONTEXT_GUARD_DEFAULT_BUDGET", "32000"),
        "CONTEXT_GUARD_MAX_MSG_CHARS": get("CONTEXT_GUARD_MAX_MSG_CHARS", "50000"),
        "CONTEXT_GUARD_KEEP_RECENT": get("CONTEXT_GUARD_KEEP_RECENT", "4"),
        "LLM_CONTEXT_SIZE": context_size,
        "LLM_MAX_OUTPUT_TOKENS": max_output,
    })
print(json.dumps(out))
"#;

fn pydeps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pydeps")
}

fn python_read(files: &[PathBuf]) -> Vec<Value> {
    let out = Command::new("python3")
        .env("PYTHONPATH", pydeps())
        .arg("-c")
        .arg(READER)
        .args(files)
        .output()
        .expect("python3 runs (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "python-dotenv could not read the export (run scripts/setup.sh, which installs \
         python-dotenv into target/pydeps): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}

#[test]
fn python_dotenv_reads_every_tuned_value_and_fim_ones_budget_equals_the_plugins() {
    let f = ContextGuardFactory;
    let schema = f.info().params;
    let cases = [
        json!({}),
        json!({"LLM_CONTEXT_SIZE": 8000, "LLM_MAX_OUTPUT_TOKENS": 4000}),
        json!({"LLM_CONTEXT_SIZE": 70000, "LLM_MAX_OUTPUT_TOKENS": 64000}),
        json!({"LLM_CONTEXT_SIZE": 60000, "LLM_MAX_OUTPUT_TOKENS": 64000}),
        json!({"LLM_CONTEXT_SIZE": 200000, "LLM_MAX_OUTPUT_TOKENS": 8192,
               "CONTEXT_GUARD_KEEP_RECENT": 0, "CONTEXT_GUARD_MAX_MSG_CHARS": 12000,
               "CONTEXT_GUARD_DEFAULT_BUDGET": 16000, "hint": "general", "compact_llm": false}),
        json!({"LLM_MAX_OUTPUT_TOKENS": 0, "CONTEXT_GUARD_KEEP_RECENT": 9,
               "compact_llm_fails_at_calls": [3, 5]}),
    ];
    let dir = std::env::temp_dir().join(format!("ctxlab-fim-one-dotenv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut expected = Vec::new();
    for (i, given) in cases.iter().enumerate() {
        let params = Params::resolve(&schema, given).unwrap();
        let s = f.create(params.clone()).unwrap();
        let budget = s
            .thresholds()
            .into_iter()
            .find(|t| t.kind == ThresholdKind::Trigger)
            .expect("the budget line")
            .tokens;
        for format in ["env", "env-full"] {
            let path = dir.join(format!("{i}-{format}.env"));
            std::fs::write(&path, s.export(format).unwrap()).unwrap();
            files.push(path);
            expected.push((i, format, params.clone(), budget));
        }
    }
    let read = python_read(&files);
    assert_eq!(read.len(), expected.len());
    for (got, (i, format, params, budget)) in read.iter().zip(&expected) {
        for key in ctxlab_plugin_fim_one::params::ENV_KEYS {
            assert_eq!(
                got[key].as_i64(),
                Some(params.int(key)),
                "case {i} ({format}) {key}: {got}"
            );
        }
        assert_eq!(got["budget"].as_u64(), Some(*budget), "case {i} ({format})");
        // Only FIM One's variables are set: replay-only choices are comments.
        for k in got["env"].as_object().unwrap().keys() {
            assert!(
                ctxlab_plugin_fim_one::params::ENV_KEYS.contains(&k.as_str()),
                "case {i} ({format}) sets {k}"
            );
        }
    }
    // The numbers of deps.get_context_budget the issue names.
    let budgets: Vec<u64> = expected.iter().step_by(2).map(|e| e.3).collect();
    assert_eq!(&budgets[..4], &[64_000, 4_000, 6_000, 4_000]);
    std::fs::remove_dir_all(&dir).ok();
}
