//! What CodeTether reads, and what it compiles in. Its only compression *setting* is the RLM model
//! (`RlmConfig.root_model`, overridden by the `CODETETHER_RLM_MODEL` environment variable); every
//! number of the cascade is a `const` in src/session/helper/compression/*.rs. The export writes the
//! setting as an env line and the tuned constants as a clearly labelled block of Rust `const`
//! lines to paste into the named files; import reads both back.

use ctxlab_plugin_api::{ParamSpec, ParamType, Params};
use serde_json::{json, Map, Value};

pub const RLM_MODEL: &str = "rlm_model";
pub const ENV_RLM_MODEL: &str = "CODETETHER_RLM_MODEL";

/// (parameter, source file, const name, Rust type).
pub const CONSTANTS: &[(&str, &str, &str, &str)] = &[
    (
        "keep_last_candidates",
        "enforce_cascade.rs",
        "KEEP_LAST_CANDIDATES",
        "[usize; N]",
    ),
    (
        "truncate_keep_last",
        "enforce_terminal.rs",
        "TRUNCATE_KEEP_LAST",
        "usize",
    ),
    (
        "safety_budget_ratio",
        "enforce_budget.rs",
        "SAFETY_BUDGET_RATIO",
        "f64",
    ),
    (
        "reserve_overhead_tokens",
        "enforce_budget.rs",
        "RESERVE_OVERHEAD_TOKENS",
        "usize",
    ),
    (
        "fallback_chunk_ratio",
        "../compression_defer.rs",
        "FALLBACK_CHUNK_RATIO",
        "f64",
    ),
    (
        "terminal_payload_caps",
        "shrink.rs",
        "TERMINAL_PAYLOAD_CAPS",
        "[usize; N]",
    ),
    (
        "terminal_emergency_cap_bytes",
        "shrink.rs",
        "TERMINAL_EMERGENCY_CAP_BYTES",
        "usize",
    ),
];

pub const FORMATS: &[&str] = &["env", "env-full"];

pub fn schema() -> Vec<ParamSpec> {
    use ParamType::*;
    let p = ParamSpec::new;
    vec![
        p(RLM_MODEL, String, Value::Null, "Model of the RLM summarizer (setting; empty: the session's model).")
            .key("RlmConfig.root_model / CODETETHER_RLM_MODEL"),
        p("keep_last_candidates", IntList, json!([16, 12, 8, 6]), "keep_last values tried in order (the module doc's 16/12/8/6; the source also tries 3 and 1).")
            .key("const KEEP_LAST_CANDIDATES (source: [16, 12, 8, 6, 3, 1])"),
        p("truncate_keep_last", Int, json!(4), "Messages terminal truncation keeps.")
            .min(1.0).key("const TRUNCATE_KEEP_LAST"),
        p("safety_budget_ratio", Float, json!(0.90), "Share of the usable budget the request must fit.")
            .range(0.01, 1.0).key("const SAFETY_BUDGET_RATIO"),
        p("reserve_overhead_tokens", Int, json!(2048), "Tokens reserved on top of the max output for tool schemas and framing.")
            .min(0.0).key("const RESERVE_OVERHEAD_TOKENS"),
        p("fallback_chunk_ratio", Float, json!(0.25), "Chunk compression target as a share of the context window (RlmChunker::compress(ctx, window / 4)).")
            .range(0.01, 1.0).key("ctx_window / 4 in compression_defer.rs"),
        p("terminal_payload_caps", IntList, json!([262_144, 131_072, 65_536, 32_768, 16_384, 8_192, 4_096, 2_048]), "Byte caps terminal truncation shrinks retained payloads to, in order.")
            .key("const TERMINAL_PAYLOAD_CAPS"),
        p("terminal_emergency_cap_bytes", Int, json!(1024), "Last cap, applied to the newest user message too.")
            .min(1.0).key("const TERMINAL_EMERGENCY_CAP_BYTES"),
        p("rlm_summary_tokens", Int, json!(4096), "ctxlab simulation: size cap of an RLM summary (the host's summarizer model sizes it).")
            .min(1.0).key(""),
        p("rlm_fail_above_tokens", Int, json!(0), "ctxlab simulation: the RLM summarizer errors on prefixes larger than this (0: never), forcing chunk compression.")
            .min(0.0).key(""),
    ]
}

/// CodeTether's own constraints on its constants (array lengths and values a `const` can hold).
pub fn validate(p: &Params) -> Result<(), String> {
    let c = p.int_list("keep_last_candidates");
    if c.is_empty() || c.iter().any(|&k| k < 1) {
        return Err("KEEP_LAST_CANDIDATES must list at least one keep_last of 1 or more".into());
    }
    let caps = p.int_list("terminal_payload_caps");
    if caps.is_empty() || caps.iter().any(|&k| k < 1) {
        return Err("TERMINAL_PAYLOAD_CAPS must list at least one cap of 1 byte or more".into());
    }
    Ok(())
}

fn rust_value(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 {
                format!("{f:.1}")
            } else {
                format!("{f}")
            }
        }
        other => other.to_string(),
    }
}

pub fn export(p: &Params, format: &str) -> Result<String, String> {
    let full = match format {
        "env" => false,
        "env-full" => true,
        _ => {
            return Err(format!(
                "unknown export format {format}; CodeTether settings export as {}",
                FORMATS.join(", ")
            ))
        }
    };
    let schema = schema();
    let mut out = String::from("# CodeTether compression settings (ctxlab export)\n");
    match p.get(RLM_MODEL).as_str() {
        Some(m) if !m.is_empty() => out.push_str(&format!("{ENV_RLM_MODEL}={m}\n")),
        _ => out.push_str(&format!(
            "# {ENV_RLM_MODEL} unset: the RLM router uses the session's model\n"
        )),
    }
    let mut block = String::new();
    for (name, file, konst, ty) in CONSTANTS {
        let v = p.get(name);
        let default = schema.iter().find(|s| s.name == *name).map(|s| &s.default);
        if !full && default == Some(v) {
            continue;
        }
        let ty = match v.as_array() {
            Some(a) => ty.replace('N', &a.len().to_string()),
            None => ty.to_string(),
        };
        block.push_str(&format!(
            "# src/session/helper/compression/{file}\n# const {konst}: {ty} = {};\n",
            rust_value(v)
        ));
    }
    if !block.is_empty() {
        out.push_str(
            "#\n# ── Tuned source constants ──────────────────────────────────────────────────\n\
             # NOT settings: CodeTether compiles these in. Apply them by editing the named\n\
             # files (uncomment the const line). ctxlab reads them back from this block.\n",
        );
        out.push_str(&block);
    }
    Ok(out)
}

pub fn import(format: &str, text: &str) -> Result<Value, String> {
    if !FORMATS.contains(&format) {
        return Err(format!(
            "unknown import format {format}; CodeTether settings import from {}",
            FORMATS.join(", ")
        ));
    }
    let schema = schema();
    let mut out = Map::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let at = || format!("line {}", n + 1);
        if let Some(v) = line.strip_prefix(&format!("{ENV_RLM_MODEL}=")) {
            let v = v.trim().trim_matches('"');
            out.insert(RLM_MODEL.into(), json!(v));
            continue;
        }
        let Some(decl) = line.trim_start_matches('#').trim().strip_prefix("const ") else {
            continue;
        };
        let (konst, rest) = decl
            .split_once(':')
            .ok_or_else(|| format!("{}: expected `const NAME: TYPE = VALUE;`", at()))?;
        let value = rest
            .split_once('=')
            .map(|(_, v)| v.trim().trim_end_matches(';').trim())
            .ok_or_else(|| format!("{}: expected `= VALUE;` after const {konst}", at()))?;
        let Some((name, ..)) = CONSTANTS.iter().find(|c| c.2 == konst.trim()) else {
            return Err(format!("{}: unknown constant {}", at(), konst.trim()));
        };
        let v: Value = serde_json::from_str(&value.replace('_', ""))
            .map_err(|e| format!("{}: {konst} = {value}: {e}", at()))?;
        let spec = schema
            .iter()
            .find(|s| s.name == *name)
            .ok_or_else(|| format!("{}: no parameter for {konst}", at()))?;
        spec.check(&v).map_err(|e| format!("{}: {e}", at()))?;
        out.insert(name.to_string(), v);
    }
    Ok(Value::Object(out))
}
