//! The parameters under phi-core's own names, and the config file phi-core reads
//! (src/config/schema.rs): `[compaction]` (CompactionSection), `[execution]` (ExecutionSection)
//! and `[provider.cost]` (CostSection), as TOML, YAML or JSON. Every section and field is optional
//! there (`#[serde(default)]`), so the export writes only what differs from phi-core's defaults
//! unless a `-full` format is asked for. phi-core validates no ranges; wrong types are refused.

use ctxlab_plugin_api::sdk::same_value;
use ctxlab_plugin_api::{ParamSpec, ParamType, Params};
use serde_json::{json, Map, Value};

/// (parameter, section path in the file, field). The parameter names are phi-core's field names.
pub const FILE_KEYS: &[(&str, &[&str], &str)] = &[
    ("max_context_tokens", &["compaction"], "max_context_tokens"),
    (
        "system_prompt_tokens",
        &["compaction"],
        "system_prompt_tokens",
    ),
    ("compact_at_pct", &["compaction"], "compact_at_pct"),
    (
        "compact_budget_threshold_pct",
        &["compaction"],
        "compact_budget_threshold_pct",
    ),
    ("keep_first_turns", &["compaction"], "keep_first_turns"),
    ("keep_recent_turns", &["compaction"], "keep_recent_turns"),
    ("max_summary_tokens", &["compaction"], "max_summary_tokens"),
    (
        "tool_output_max_lines",
        &["compaction"],
        "tool_output_max_lines",
    ),
    ("focus_message", &["compaction"], "focus_message"),
    ("max_turns", &["execution"], "max_turns"),
    ("max_total_tokens", &["execution"], "max_total_tokens"),
    ("max_duration_secs", &["execution"], "max_duration_secs"),
    ("max_cost", &["execution"], "max_cost"),
    (
        "input_per_million",
        &["provider", "cost"],
        "input_per_million",
    ),
    (
        "output_per_million",
        &["provider", "cost"],
        "output_per_million",
    ),
];

/// `ContextConfig`'s legacy fields: the tiered `compact_messages` reads these, but the config file
/// has no key for them — they are set in code.
pub const LEGACY: &[(&str, &str)] = &[
    ("keep_recent", "keep_recent"),
    ("keep_first", "keep_first"),
    ("legacy_tool_output_max_lines", "tool_output_max_lines"),
];

pub const END_AGENT_AT_LIMIT: &str = "end_agent_at_limit";

/// The section holding what phi-core's file has no key for (the legacy fields and
/// `end_agent_at_limit`). phi-core's `AgentConfig` ignores sections it does not know, so the file
/// still loads; ctxlab reads them back.
pub const CTXLAB_SECTION: &str = "ctxlab";

/// (parameter, field in the `[ctxlab]` section).
pub const CTXLAB_KEYS: &[(&str, &str)] = &[
    ("keep_recent", "keep_recent"),
    ("keep_first", "keep_first"),
    ("legacy_tool_output_max_lines", "tool_output_max_lines"),
    (END_AGENT_AT_LIMIT, END_AGENT_AT_LIMIT),
];

pub const FORMATS: &[&str] = &[
    "toml",
    "yaml",
    "json",
    "toml-full",
    "yaml-full",
    "json-full",
];

pub fn schema() -> Vec<ParamSpec> {
    use ParamType::*;
    let p = ParamSpec::new;
    vec![
        p("max_context_tokens", Int, json!(100_000), "Context window phi-core budgets against (its own setting, not the model's window).")
            .min(1.0).key("compaction.max_context_tokens"),
        p("system_prompt_tokens", Int, json!(4_000), "Tokens phi-core reserves for the system prompt.")
            .min(0.0).key("compaction.system_prompt_tokens"),
        p("compact_at_pct", Float, json!(0.90), "Fraction of max_context_tokens headroom is measured from.")
            .range(0.0, 1.0).key("compaction.compact_at_pct"),
        p("compact_budget_threshold_pct", Float, json!(0.05), "Compact when headroom falls below this fraction.")
            .range(0.0, 1.0).key("compaction.compact_budget_threshold_pct"),
        p("keep_first_turns", Int, json!(2), "CompactionConfig: turns kept from the start by the session (block) compaction path; the tiered path reads keep_first.")
            .min(0.0).key("compaction.keep_first_turns"),
        p("keep_recent_turns", Int, json!(10), "CompactionConfig: turns kept from the end by the session (block) compaction path; the tiered path reads keep_recent.")
            .min(0.0).key("compaction.keep_recent_turns"),
        p("max_summary_tokens", Int, json!(2_000), "CompactionConfig: summary budget of the session (block) path; the tiered path writes no LLM summary.")
            .min(0.0).key("compaction.max_summary_tokens"),
        p("tool_output_max_lines", Int, json!(50), "CompactionConfig: tool-output line cap of the session (block) path; level 1 reads legacy_tool_output_max_lines.")
            .min(0.0).key("compaction.tool_output_max_lines"),
        p("focus_message", String, Value::Null, "Focus message for the session path's LLM summary (not used by the tiered path).")
            .key("compaction.focus_message"),
        p("keep_recent", Int, json!(10), "Legacy ContextConfig.keep_recent: messages kept verbatim by levels 2 and 3.")
            .min(0.0).key("ContextConfig.keep_recent (legacy, set in code)"),
        p("keep_first", Int, json!(2), "Legacy ContextConfig.keep_first: messages kept from the start by level 3.")
            .min(0.0).key("ContextConfig.keep_first (legacy, set in code)"),
        p("legacy_tool_output_max_lines", Int, json!(50), "Legacy ContextConfig.tool_output_max_lines: level 1 keeps the first N/2 and last N/2 lines of longer tool outputs.")
            .min(0.0).key("ContextConfig.tool_output_max_lines (legacy, set in code)"),
        p("max_turns", Int, json!(50), "ExecutionLimits: model calls per run (user request) before phi-core stops the agent.")
            .min(0.0).key("execution.max_turns"),
        p("max_total_tokens", Int, json!(1_000_000), "ExecutionLimits: input + output tokens per run.")
            .min(0.0).key("execution.max_total_tokens"),
        p("max_duration_secs", Int, json!(600), "ExecutionLimits: wall-clock seconds per run (needs timestamps in the log).")
            .min(0.0).key("execution.max_duration_secs"),
        p("max_cost", Float, json!(0.0), "ExecutionLimits: dollar cap per run; 0 = none (phi-core's None). Needs cost rates.")
            .min(0.0).key("execution.max_cost"),
        p("input_per_million", Float, json!(0.0), "Provider cost rate, $ per million input tokens (for max_cost).")
            .min(0.0).key("provider.cost.input_per_million"),
        p("output_per_million", Float, json!(0.0), "Provider cost rate, $ per million output tokens (for max_cost).")
            .min(0.0).key("provider.cost.output_per_million"),
        p(END_AGENT_AT_LIMIT, Bool, json!(false), "ctxlab: end the agent's replay where phi-core would stop it (else the stop is only reported).")
            .key(""),
    ]
}

/// The file as a JSON tree (the three formats share it). `[compaction].max_context_tokens` is
/// always written: phi-core builds a `ContextConfig` (and so compacts at all, with any of the
/// other `[compaction]` keys) only when it is present (config/builder.rs, `build_basic_agent`).
/// Floats are written as floats, so a whole number reads back as the same value.
fn tree(params: &Params, full: bool) -> Value {
    let schema = schema();
    let mut root = Map::new();
    let mut put = |path: &[&str], field: &str, v: Value| {
        let mut node = &mut root;
        for seg in path.iter() {
            let entry = node
                .entry(seg.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            node = match entry {
                Value::Object(o) => o,
                _ => unreachable!("sections are only ever objects"),
            };
        }
        node.insert(field.to_string(), v);
    };
    let is_default = |name: &str, v: &Value| {
        schema
            .iter()
            .any(|s| s.name == name && same_value(&s.default, v))
    };
    let as_written = |name: &str, v: &Value| match schema.iter().find(|s| s.name == name) {
        Some(s) if s.ty == ParamType::Float => v.as_f64().map_or(v.clone(), |f| json!(f)),
        _ => v.clone(),
    };
    for (name, path, field) in FILE_KEYS {
        let v = params.get(name);
        if v.is_null() || (*name == "max_cost" && v.as_f64() == Some(0.0)) {
            continue;
        }
        if is_default(name, v) && !full && *name != "max_context_tokens" {
            continue;
        }
        put(path, field, as_written(name, v));
    }
    for (name, field) in CTXLAB_KEYS {
        let v = params.get(name);
        if is_default(name, v) && !full {
            continue;
        }
        put(&[CTXLAB_SECTION], field, v.clone());
    }
    Value::Object(root)
}

fn legacy_note(params: &Params, comment: &str) -> String {
    let schema = schema();
    let mut lines = Vec::new();
    for (name, field) in LEGACY {
        let v = params.get(name);
        if schema
            .iter()
            .any(|s| s.name == *name && !same_value(&s.default, v))
        {
            lines.push(format!("{comment}   {field}: {v},"));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "{comment} The tiered compact_messages reads ContextConfig's legacy fields, which phi-core's file cannot set\n\
         {comment} (the [{CTXLAB_SECTION}] section keeps them for ctxlab; phi-core ignores it). Set them in code:\n\
         {comment} ContextConfig {{\n{}\n{comment}   ..ContextConfig::default() }}\n",
        lines.join("\n")
    )
}

/// Values phi-core's loader would refuse or change: `${NAME}` in a string is replaced by the
/// environment variable before parsing, and refused when it is not set (config/parser.rs,
/// `substitute_env_vars`); TOML integers are signed 64-bit, so a larger one is "number too large".
fn check_writable(params: &Params, toml: bool) -> Result<(), String> {
    let focus = params.str("focus_message");
    if let Some(at) = focus.find("${") {
        let rest = &focus[at + 2..];
        if let Some(close) = rest.find('}') {
            if close > 0 {
                return Err(format!(
                    "focus_message contains \"${{{}}}\": phi-core substitutes ${{NAME}} anywhere in its config file with the environment variable NAME (and refuses the file when it is not set), so this text cannot be written",
                    &rest[..close]
                ));
            }
        }
    }
    if toml {
        for s in schema() {
            if s.ty == ParamType::Int {
                if let Some(n) = params.get(&s.name).as_u64() {
                    if n > i64::MAX as u64 {
                        return Err(format!(
                            "{} = {n} cannot be written to TOML: its integers are signed 64-bit, and phi-core's TOML parser refuses it (number too large); at most {}, or export yaml or json",
                            s.name,
                            i64::MAX
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

pub fn export(params: &Params, format: &str) -> Result<String, String> {
    let full = format.ends_with("-full");
    check_writable(params, format.starts_with("toml"))?;
    let t = tree(params, full);
    match format.trim_end_matches("-full") {
        "toml" => {
            let body = toml::to_string(&t).map_err(|e| format!("cannot write TOML: {e}"))?;
            Ok(format!(
                "# phi-core agent config (ctxlab export)\n{}{body}",
                legacy_note(params, "#")
            ))
        }
        "yaml" => {
            let body =
                serde_yaml_ng::to_string(&t).map_err(|e| format!("cannot write YAML: {e}"))?;
            Ok(format!(
                "# phi-core agent config (ctxlab export)\n{}{body}",
                legacy_note(params, "#")
            ))
        }
        "json" => {
            // JSON has no comments: the legacy fields cannot travel with it.
            serde_json::to_string_pretty(&t).map_err(|e| format!("cannot write JSON: {e}"))
        }
        _ => Err(format!(
            "unknown export format {format}; phi-core reads {}",
            FORMATS.join(", ")
        )),
    }
}

pub fn import(format: &str, text: &str) -> Result<Value, String> {
    let t: Value = match format.trim_end_matches("-full") {
        "toml" => toml::from_str(text).map_err(|e| format!("phi-core config (TOML): {e}"))?,
        "yaml" => {
            serde_yaml_ng::from_str(text).map_err(|e| format!("phi-core config (YAML): {e}"))?
        }
        "json" => serde_json::from_str(text).map_err(|e| format!("phi-core config (JSON): {e}"))?,
        _ => {
            return Err(format!(
                "unknown import format {format}; phi-core reads {}",
                FORMATS.join(", ")
            ))
        }
    };
    let schema = schema();
    let mut out = Map::new();
    for (name, path, field) in FILE_KEYS {
        let mut node = Some(&t);
        for seg in path.iter() {
            node = node.and_then(|n| n.get(*seg));
        }
        let Some(v) = node.and_then(|n| n.get(*field)) else {
            continue;
        };
        let where_ = format!("{}.{field}", path.join("."));
        if v.is_null() {
            continue;
        }
        let spec = schema
            .iter()
            .find(|s| s.name == *name)
            .ok_or_else(|| format!("{where_}: no such parameter"))?;
        // phi-core deserializes usize/f64/String: refuse what serde would refuse, in its terms.
        let ok = match spec.ty {
            ParamType::Int => v.as_u64().is_some(),
            ParamType::Float => v.as_f64().is_some(),
            ParamType::String => v.is_string(),
            _ => true,
        };
        if !ok {
            let expected = match spec.ty {
                ParamType::Int => "a non-negative integer (usize)",
                ParamType::Float => "a number (f64)",
                _ => "a string",
            };
            return Err(format!(
                "{where_}: invalid type: expected {expected}, got {v}"
            ));
        }
        let v = match spec.ty {
            ParamType::Float => json!(v.as_f64().unwrap_or(0.0)),
            _ => v.clone(),
        };
        out.insert(name.to_string(), v);
    }
    if let Some(sec) = t.get(CTXLAB_SECTION) {
        for (name, field) in CTXLAB_KEYS {
            let Some(v) = sec.get(*field) else {
                continue;
            };
            let ok = if *name == END_AGENT_AT_LIMIT {
                v.is_boolean()
            } else {
                v.as_u64().is_some()
            };
            if !ok {
                return Err(format!(
                    "{CTXLAB_SECTION}.{field}: invalid type: expected {}, got {v}",
                    if *name == END_AGENT_AT_LIMIT {
                        "true or false"
                    } else {
                        "a non-negative integer"
                    }
                ));
            }
            out.insert(name.to_string(), v.clone());
        }
    }
    Ok(Value::Object(out))
}
