//! What CodeTether reads, and what it compiles in (codetether-agent 4.7.4).
//!
//! Settings: the config file is TOML (`codetether.toml` or `.codetether/config.toml` in the
//! project, and the user's global `config.toml`; `src/config/load.rs:37-51`, parsed with
//! `toml::from_str::<Config>`): `default_model` at the top (`src/config/core.rs:16`) picks the
//! model, hence the window; `[rlm]` is `codetether_rlm::RlmConfig` (codetether-rlm 0.1.1
//! `src/config.rs:17-40`) with `root_model` and `history_trigger_messages`. Environment:
//! `CODETETHER_SESSION_MAX_TOKENS` (helper/token.rs:11-17), `CODETETHER_CONTEXT_POLICY`
//! (context/policy.rs:36-63), `CODETETHER_RLM_MODEL` (codetether-rlm `model_select/defaults.rs`).
//! Every other number is a `const` in the source: the export writes those as a labelled block of
//! `const` lines to paste into the named files; import reads everything back.

use ctxlab_plugin_api::{ParamSpec, ParamType, Params};
use serde_json::{json, Map, Value};

pub const MODEL: &str = "model";
pub const RLM_MODEL: &str = "rlm_model";
pub const HISTORY_TRIGGER: &str = "history_trigger_messages";
pub const SESSION_MAX_TOKENS: &str = "session_max_tokens";
pub const CONTEXT_POLICY: &str = "context_policy";
pub const ENV_SESSION_MAX_TOKENS: &str = "CODETETHER_SESSION_MAX_TOKENS";
pub const ENV_CONTEXT_POLICY: &str = "CODETETHER_CONTEXT_POLICY";
pub const ENV_RLM_MODEL: &str = "CODETETHER_RLM_MODEL";

/// (parameter, source file under src/session/helper/, const name, Rust type).
pub const CONSTANTS: &[(&str, &str, &str, &str)] = &[
    (
        "keep_last_candidates",
        "compression/enforce_cascade.rs",
        "KEEP_LAST_CANDIDATES",
        "[usize; N]",
    ),
    (
        "truncate_keep_last",
        "compression/enforce_terminal.rs",
        "TRUNCATE_KEEP_LAST",
        "usize",
    ),
    (
        "safety_budget_ratio",
        "compression/enforce_budget.rs",
        "SAFETY_BUDGET_RATIO",
        "f64",
    ),
    (
        "reserve_overhead_tokens",
        "compression/enforce_budget.rs",
        "RESERVE_OVERHEAD_TOKENS",
        "usize",
    ),
    (
        "oversized_last_message_ratio",
        "compression/oversized.rs",
        "OVERSIZED_LAST_MESSAGE_RATIO",
        "f64",
    ),
    (
        "terminal_payload_caps",
        "compression/shrink.rs",
        "TERMINAL_PAYLOAD_CAPS",
        "[usize; N]",
    ),
    (
        "terminal_emergency_cap_bytes",
        "compression/shrink.rs",
        "TERMINAL_EMERGENCY_CAP_BYTES",
        "usize",
    ),
];

/// `fallback_chunk_ratio` is the literal `0.25` in compression_defer.rs:26, not a `const`.
const FALLBACK_LINE: &str =
    "compression_defer.rs:26 RlmChunker::compress(context, (ctx_window as f64 * ";

pub const FORMATS: &[&str] = &["toml", "env"];

pub fn schema() -> Vec<ParamSpec> {
    use ParamType::*;
    let p = ParamSpec::new;
    vec![
        p(MODEL, String, Value::Null, "CodeTether's model: its window comes from CodeTether's own table (provider/limits.rs); empty: the run's window.")
            .key("default_model"),
        p(SESSION_MAX_TOKENS, Int, json!(8192), "Completion budget every request reserves (not the model's max output).")
            .min(1.0).key("env CODETETHER_SESSION_MAX_TOKENS"),
        p(HISTORY_TRIGGER, Int, json!(0), "Compact when the history holds this many messages, whatever its size (0: off).")
            .min(0.0).key("[rlm] history_trigger_messages"),
        p(RLM_MODEL, String, Value::Null, "Model of the RLM summarizer (empty: the session's model). Does not change the simulation.")
            .key("[rlm] root_model (wins over env CODETETHER_RLM_MODEL)"),
        p(CONTEXT_POLICY, Enum, json!("legacy"), "Derivation policy; only legacy (the default) is modelled.")
            .choices(&["legacy"]).key("env CODETETHER_CONTEXT_POLICY"),
        p("keep_last_candidates", IntList, json!([16, 12, 8, 6, 3, 1]), "keep_last values the cascade tries in order.")
            .key("const KEEP_LAST_CANDIDATES"),
        p("truncate_keep_last", Int, json!(4), "Messages terminal truncation keeps (before the active tail anchor moves it).")
            .min(1.0).key("const TRUNCATE_KEEP_LAST"),
        p("safety_budget_ratio", Float, json!(0.90), "Share of the usable budget the request must fit.")
            .range(0.01, 1.0).key("const SAFETY_BUDGET_RATIO"),
        p("reserve_overhead_tokens", Int, json!(2048), "Tokens reserved on top of CODETETHER_SESSION_MAX_TOKENS.")
            .min(0.0).key("const RESERVE_OVERHEAD_TOKENS"),
        p("fallback_chunk_ratio", Float, json!(0.25), "Chunker target as a share of the window (RlmChunker::compress(context, window × 0.25)).")
            .range(0.01, 1.0).key("literal 0.25 in compression_defer.rs"),
        p("oversized_last_message_ratio", Float, json!(0.35), "The last message's text over this share of the window is compressed to it.")
            .range(0.01, 1.0).key("const OVERSIZED_LAST_MESSAGE_RATIO"),
        p("terminal_payload_caps", IntList, json!([262_144, 131_072, 65_536, 32_768, 16_384, 8_192, 4_096, 2_048]), "Byte caps terminal truncation shrinks retained payloads to, in order.")
            .key("const TERMINAL_PAYLOAD_CAPS"),
        p("terminal_emergency_cap_bytes", Int, json!(1024), "Last cap, applied to the newest user message too.")
            .min(1.0).key("const TERMINAL_EMERGENCY_CAP_BYTES"),
        p("rlm_summary_tokens", Int, json!(4096), "ctxlab simulation: size cap of a background RLM summary (the host's summarizer model sizes it).")
            .min(1.0).key(""),
        p("rlm_background_cache", Bool, json!(true), "ctxlab simulation: a prefix compressed at an earlier step has its background RLM summary ready (else the chunker runs every time).")
            .key(""),
        p("system_prompt_tokens", Int, json!(-1), "ctxlab simulation: CodeTether's estimate of its system prompt + tool schemas (logs hold neither); -1: the host's calibrated overhead.")
            .min(-1.0).key(""),
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

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn env_lines(p: &Params, prefix: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{prefix}{ENV_SESSION_MAX_TOKENS}={}\n{prefix}{ENV_CONTEXT_POLICY}={}\n",
        p.uint(SESSION_MAX_TOKENS),
        p.str(CONTEXT_POLICY)
    ));
    let m = p.str(RLM_MODEL);
    if !m.is_empty() {
        // config.rs `[rlm]` is dropped by Config::merge in 4.7.4: the env variable is what
        // reaches the RLM model selection there (root_model unset → env wins over the caller).
        out.push_str(&format!("{prefix}{ENV_RLM_MODEL}={m}\n"));
    }
    out
}

fn constants_block(p: &Params, full: bool) -> String {
    let schema = schema();
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
            "# src/session/helper/{file}\n# const {konst}: {ty} = {};\n",
            rust_value(v)
        ));
    }
    let r = p.float("fallback_chunk_ratio");
    if full || r != 0.25 {
        block.push_str(&format!(
            "# src/session/helper/{FALLBACK_LINE}{}) as usize, None)\n",
            rust_value(&json!(r))
        ));
    }
    if block.is_empty() {
        return block;
    }
    format!(
        "#\n# ── Tuned source constants ──────────────────────────────────────────────────\n\
         # NOT settings: CodeTether compiles these in. Apply them by editing the named\n\
         # files (uncomment the const line). ctxlab reads them back from this block.\n{block}"
    )
}

pub fn export(p: &Params, format: &str) -> Result<String, String> {
    match format {
        "toml" => {
            let mut out = String::from(
                "# CodeTether settings (ctxlab export): save as codetether.toml or\n\
                 # .codetether/config.toml in the project (src/config/load.rs).\n",
            );
            let model = p.str(MODEL);
            if !model.is_empty() {
                out.push_str(&format!("default_model = {}\n", toml_str(model)));
            }
            out.push_str("\n[rlm]\n");
            let m = p.str(RLM_MODEL);
            if !m.is_empty() {
                out.push_str(&format!("root_model = {}\n", toml_str(m)));
            }
            out.push_str(&format!(
                "history_trigger_messages = {}\n",
                p.uint(HISTORY_TRIGGER)
            ));
            out.push_str(
                "\n# Environment: CodeTether reads these from the environment of the process that\n\
                 # runs it, not from this file:\n",
            );
            out.push_str(&env_lines(p, "#   export "));
            out.push_str(&constants_block(p, false));
            Ok(out)
        }
        "env" => {
            let mut out = String::from("# CodeTether environment (ctxlab export)\n");
            out.push_str(&env_lines(p, "export "));
            Ok(out)
        }
        _ => Err(format!(
            "unknown export format {format}; CodeTether settings export as {}",
            FORMATS.join(", ")
        )),
    }
}

fn set(out: &mut Map<String, Value>, name: &str, v: Value, at: &str) -> Result<(), String> {
    let schema = schema();
    let spec = schema
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("{at}: no parameter {name}"))?;
    spec.check(&v).map_err(|e| format!("{at}: {e}"))?;
    out.insert(name.to_string(), v);
    Ok(())
}

/// An environment line (`export NAME=VALUE` or `NAME=VALUE`, possibly commented in the TOML).
fn env_line(out: &mut Map<String, Value>, line: &str, at: &str) -> Result<bool, String> {
    let line = line.trim_start_matches('#').trim();
    let line = line.strip_prefix("export ").unwrap_or(line).trim();
    let Some((k, v)) = line.split_once('=') else {
        return Ok(false);
    };
    let v = v.trim().trim_matches('"');
    match k.trim() {
        ENV_SESSION_MAX_TOKENS => {
            let n: i64 = v
                .parse()
                .map_err(|_| format!("{at}: {ENV_SESSION_MAX_TOKENS}={v} is not a number"))?;
            set(out, SESSION_MAX_TOKENS, json!(n), at)?;
        }
        ENV_CONTEXT_POLICY => set(out, CONTEXT_POLICY, json!(v.to_ascii_lowercase()), at)?,
        ENV_RLM_MODEL => {
            out.entry(RLM_MODEL).or_insert(json!(v));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A `const` line of the constants block.
fn const_line(out: &mut Map<String, Value>, line: &str, at: &str) -> Result<(), String> {
    let body = line.trim_start_matches('#').trim();
    if let Some(rest) = body.strip_prefix("src/session/helper/") {
        if let Some(ratio) = rest.strip_prefix(FALLBACK_LINE) {
            let v = ratio
                .split(')')
                .next()
                .and_then(|x| x.trim().parse::<f64>().ok())
                .ok_or_else(|| {
                    format!("{at}: expected the chunker ratio after `ctx_window as f64 *`")
                })?;
            set(out, "fallback_chunk_ratio", json!(v), at)?;
        }
        return Ok(());
    }
    let Some(decl) = body.strip_prefix("const ") else {
        return Ok(());
    };
    let (konst, rest) = decl
        .split_once(':')
        .ok_or_else(|| format!("{at}: expected `const NAME: TYPE = VALUE;`"))?;
    let value = rest
        .split_once('=')
        .map(|(_, v)| v.trim().trim_end_matches(';').trim())
        .ok_or_else(|| format!("{at}: expected `= VALUE;` after const {konst}"))?;
    let Some((name, ..)) = CONSTANTS.iter().find(|c| c.2 == konst.trim()) else {
        return Err(format!("{at}: unknown constant {}", konst.trim()));
    };
    let v: Value = serde_json::from_str(&value.replace('_', ""))
        .map_err(|e| format!("{at}: {konst} = {value}: {e}"))?;
    set(out, name, v, at)
}

pub fn import(format: &str, text: &str) -> Result<Value, String> {
    if !FORMATS.contains(&format) {
        return Err(format!(
            "unknown import format {format}; CodeTether settings import from {}",
            FORMATS.join(", ")
        ));
    }
    let mut out = Map::new();
    if format == "toml" {
        let doc: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("not a CodeTether TOML config: {e}"))?;
        if let Some(m) = doc.get("default_model") {
            let m = m
                .as_str()
                .ok_or("default_model: expected a string (a model id)")?;
            set(&mut out, MODEL, json!(m), "default_model")?;
        }
        if let Some(rlm) = doc.get("rlm") {
            let rlm = rlm
                .as_table()
                .ok_or("[rlm]: expected a table (RlmConfig)")?;
            if let Some(m) = rlm.get("root_model") {
                let m = m.as_str().ok_or("[rlm] root_model: expected a string")?;
                set(&mut out, RLM_MODEL, json!(m), "[rlm] root_model")?;
            }
            if let Some(n) = rlm.get("history_trigger_messages") {
                let n = n
                    .as_integer()
                    .ok_or("[rlm] history_trigger_messages: expected a non-negative integer")?;
                set(
                    &mut out,
                    HISTORY_TRIGGER,
                    json!(n),
                    "[rlm] history_trigger_messages",
                )?;
            }
        }
    }
    for (n, raw) in text.lines().enumerate() {
        let at = format!("line {}", n + 1);
        let line = raw.trim();
        if format == "toml" && !line.starts_with('#') {
            continue;
        }
        if env_line(&mut out, line, &at)? {
            continue;
        }
        const_line(&mut out, line, &at)?;
    }
    Ok(Value::Object(out))
}
