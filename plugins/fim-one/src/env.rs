//! FIM One reads its settings from environment variables, usually a `.env` file: exported as
//! `KEY=value` lines. The replay-only choices (is a compaction LLM configured, the hint, the
//! simulated failures) have no variable; they travel as `# ctxlab:` comments, which FIM One's
//! dotenv loader ignores, so the file loads as it is and still parses back to every parameter.

use crate::params::{schema, ENV_KEYS};
use ctxlab_plugin_api::{ParamSpec, ParamType, Params};
use serde_json::{Map, Value};

pub const FORMATS: &[&str] = &["env", "env-full"];
const CTXLAB_PREFIX: &str = "# ctxlab:";

/// Which setting governs which entry point (chat.py, deps.py, context_guard.py, db.py).
const ENTRY_POINTS: &str = "\
# note: the web app's ReAct chat (chat.py) budgets DbMemory and ContextGuard with
#   max(LLM_CONTEXT_SIZE - LLM_MAX_OUTPUT_TOKENS, 4000) (deps.get_context_budget), unless the
#   general ModelConfig in Settings > Models sets context_size (its max_output_tokens, else
#   LLM_MAX_OUTPUT_TOKENS); DAG steps use FAST_LLM_CONTEXT_SIZE / FAST_LLM_MAX_OUTPUT_TOKENS.
#   CONTEXT_GUARD_DEFAULT_BUDGET is unused there (ContextGuard gets default_budget=<that
#   budget>); it applies to a ContextGuard built without one (FIM One's core used as a library).
#   CONTEXT_GUARD_MAX_MSG_CHARS and CONTEXT_GUARD_KEEP_RECENT apply to every ContextGuard;
#   DbMemory always keeps 4 recent messages.
";

fn check_format(format: &str) -> Result<bool, String> {
    match format {
        "env" => Ok(false),
        "env-full" => Ok(true),
        other => Err(format!(
            "unknown format {other:?}; fim-one writes env (non-default values) or env-full (all)"
        )),
    }
}

fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// `env`: only values that differ from FIM One's defaults; `env-full`: every value.
pub fn export(params: &Params, format: &str) -> Result<String, String> {
    let full = check_format(format)?;
    let specs = schema();
    let mut out = String::from("# FIM One context management (written by ctxlab)\n");
    for spec in &specs {
        let v = params.get(&spec.name);
        if !full && v == &spec.default {
            continue;
        }
        if ENV_KEYS.contains(&spec.name.as_str()) {
            out.push_str(&format!("{}={}\n", spec.name, render(v)));
        } else {
            out.push_str(&format!("{CTXLAB_PREFIX} {}={}\n", spec.name, render(v)));
        }
    }
    let usable = crate::params::input_budget(
        params.uint(crate::params::CONTEXT_SIZE),
        params.uint(crate::params::MAX_OUTPUT),
    );
    if usable < crate::params::BUDGET_FLOOR as i64 {
        out.push_str(&format!(
            "# note: LLM_CONTEXT_SIZE - LLM_MAX_OUTPUT_TOKENS = {usable}; FIM One clamps the \
             input budget to 4000\n"
        ));
    }
    out.push_str(ENTRY_POINTS);
    Ok(out)
}

/// Python's `int()` as FIM One applies it to the variable: surrounding blanks, a sign and digit
/// separators are accepted, anything else is its ValueError.
fn python_int(key: &str, raw: &str, line: usize) -> Result<i64, String> {
    let t = raw.trim();
    let digits = t.trim_start_matches(['+', '-']);
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
        && t.len() - digits.len() <= 1;
    let parsed = ok.then(|| t.replace('_', "").parse::<i64>().ok()).flatten();
    parsed.ok_or_else(|| {
        format!("line {line}: {key}: invalid literal for int() with base 10: '{raw}'")
    })
}

fn parse_ctxlab(spec: &ParamSpec, raw: &str, line: usize) -> Result<Value, String> {
    let raw = raw.trim();
    let bad = |what: &str| format!("line {line}: {}: expected {what}, got {raw:?}", spec.name);
    Ok(match spec.ty {
        ParamType::Int => Value::from(raw.parse::<i64>().map_err(|_| bad("an integer"))?),
        ParamType::Float => Value::from(raw.parse::<f64>().map_err(|_| bad("a number"))?),
        ParamType::Bool => Value::from(raw.parse::<bool>().map_err(|_| bad("true or false"))?),
        ParamType::IntList => Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| bad("integers"))
                })
                .collect::<Result<_, _>>()?,
        ),
        _ => Value::from(raw),
    })
}

/// A dotenv value: quotes removed; for an unquoted value, a ` #` comment cut off.
fn dotenv_value(raw: &str) -> &str {
    let v = raw.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) {
            if let Some(end) = v[1..].find(q) {
                return &v[1..1 + end];
            }
        }
    }
    match v.find(" #") {
        Some(i) => v[..i].trim_end(),
        None => v,
    }
}

/// Parses a `.env` back into parameter values. Variables FIM One does not read for context
/// management (API keys, model names…) are ignored: a real `.env` holds many of them.
pub fn import(format: &str, text: &str) -> Result<Value, String> {
    check_format(format)?;
    let specs = schema();
    let mut out = Map::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(CTXLAB_PREFIX) {
            let (name, raw) = rest
                .split_once('=')
                .ok_or_else(|| format!("line {n}: expected `{CTXLAB_PREFIX} name=value`"))?;
            let name = name.trim();
            let spec = specs
                .iter()
                .find(|s| s.name == name && !ENV_KEYS.contains(&name))
                .ok_or_else(|| format!("line {n}: unknown ctxlab parameter {name:?}"))?;
            out.insert(name.to_string(), parse_ctxlab(spec, raw, n)?);
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let t = t.strip_prefix("export ").unwrap_or(t);
        let Some((key, raw)) = t.split_once('=') else {
            return Err(format!("line {n}: expected KEY=value, got {t:?}"));
        };
        let key = key.trim();
        if ENV_KEYS.contains(&key) {
            out.insert(
                key.to_string(),
                Value::from(python_int(key, dotenv_value(raw), n)?),
            );
        }
    }
    let v = Value::Object(out);
    Params::resolve(&specs, &v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotenv_details() {
        let v = import(
            "env",
            "OPENAI_API_KEY=sk-x\nexport LLM_CONTEXT_SIZE=\"200000\"\nLLM_MAX_OUTPUT_TOKENS=8_000 # out\n\
             CONTEXT_GUARD_KEEP_RECENT= 6\n# a comment\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"LLM_CONTEXT_SIZE": 200000, "LLM_MAX_OUTPUT_TOKENS": 8000, "CONTEXT_GUARD_KEEP_RECENT": 6})
        );
    }

    #[test]
    fn refuses_what_python_int_refuses() {
        let e = import("env", "LLM_CONTEXT_SIZE=128k\n").unwrap_err();
        assert_eq!(
            e,
            "line 1: LLM_CONTEXT_SIZE: invalid literal for int() with base 10: '128k'"
        );
        let e = import("env", "\nCONTEXT_GUARD_MAX_MSG_CHARS=5.5\n").unwrap_err();
        assert!(e.starts_with("line 2: CONTEXT_GUARD_MAX_MSG_CHARS"), "{e}");
        assert_eq!(
            import("env", "CONTEXT_GUARD_KEEP_RECENT=0\n").unwrap(),
            json!({"CONTEXT_GUARD_KEEP_RECENT": 0}),
            "FIM One's int() accepts 0"
        );
        let e = import("env", "CONTEXT_GUARD_KEEP_RECENT=-1\n").unwrap_err();
        assert!(
            e.contains("CONTEXT_GUARD_KEEP_RECENT") && e.contains("minimum"),
            "{e}"
        );
        let e = import("yaml", "").unwrap_err();
        assert!(e.contains("env-full"), "{e}");
    }
}
