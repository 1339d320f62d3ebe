//! The `summarization:` block of `librechat.yaml`: the parameter schema (LibreChat's own key
//! paths), the checks of LibreChat's zod schema (`packages/data-provider/src/config.ts`), and the
//! YAML export/import.

use ctxlab_plugin_api::{ParamSpec, ParamType, Params};
use serde_json::{json, Map, Value};
use serde_yaml_ng::{Mapping, Value as Yaml};

/// `trigger:` of the summarization block; `None` fires whenever pruning drops any message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    TokenRatio(f64),
    RemainingTokens(u64),
    MessagesToRefine(u64),
}

/// `contextPruning:` (summarization-disabled path only) plus the soft-trim / hard-clear settings
/// LibreChat resolves internally (not settable in `librechat.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPruning {
    pub enabled: bool,
    pub keep_last_assistants: u64,
    pub soft_trim_ratio: f64,
    pub hard_clear_ratio: f64,
    pub min_prunable_tool_chars: u64,
    pub soft_trim_max_chars: u64,
    pub soft_trim_head_chars: u64,
    pub soft_trim_tail_chars: u64,
    pub hard_clear_enabled: bool,
    pub hard_clear_placeholder: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub enabled: bool,
    pub trigger: Option<Trigger>,
    pub reserve_ratio: f64,
    pub max_summary_tokens: u64,
    pub pruning: ContextPruning,
}

pub const DEFAULT_RESERVE_RATIO: f64 = 0.05;
/// No cap of LibreChat's own: the summarizer's output limit is its model's (`summarization/node.ts`
/// sets one only when `maxSummaryTokens` is given); 0 here, and the host's default summary cap.
pub const DEFAULT_MAX_SUMMARY_TOKENS: u64 = 0;
pub const TRIGGER_TYPES: [&str; 4] = [
    "unset",
    "token_ratio",
    "remaining_tokens",
    "messages_to_refine",
];

/// Parameters that live in `librechat.yaml` (in this order in the exported block).
const YAML_STRINGS: [&str; 4] = ["provider", "model", "prompt", "updatePrompt"];
const PRUNING_KEYS: [&str; 5] = [
    "enabled",
    "keepLastAssistants",
    "softTrimRatio",
    "hardClearRatio",
    "minPrunableToolChars",
];
/// Parameters with no `librechat.yaml` key (LibreChat's resolved contextPruning defaults).
const INTERNAL: [&str; 5] = [
    "contextPruning.softTrim.maxChars",
    "contextPruning.softTrim.headChars",
    "contextPruning.softTrim.tailChars",
    "contextPruning.hardClear.enabled",
    "contextPruning.hardClear.placeholder",
];

pub fn schema() -> Vec<ParamSpec> {
    let s = |name: &str, desc: &str| {
        ParamSpec::new(name, ParamType::String, json!(""), desc)
            .key(&format!("summarization.{name}"))
    };
    vec![
        ParamSpec::new(
            "enabled",
            ParamType::Bool,
            json!(true),
            "Summarization on (full compaction when pruning drops messages) or off (fading and \
             pruning only: pruned messages are lost).",
        )
        .key("summarization.enabled"),
        s("provider", "LLM provider of the summarizer (the agent's own when empty). Not used by the replay: the summarizer is simulated."),
        s("model", "Summarizer model (the agent's own when empty). Not used by the replay."),
        s("prompt", "Custom summarization prompt. Not used by the replay."),
        s("updatePrompt", "Custom re-compaction prompt. Not used by the replay."),
        ParamSpec::new(
            "trigger.type",
            ParamType::Enum,
            json!("unset"),
            "When summarization fires once pruning has dropped messages: unset = always; \
             token_ratio = used share of maxContextTokens ≥ value; remaining_tokens = remaining ≤ \
             value; messages_to_refine = pruned messages ≥ value.",
        )
        .choices(&TRIGGER_TYPES)
        .key("summarization.trigger.type"),
        ParamSpec::new(
            "trigger.value",
            ParamType::Float,
            json!(0.0),
            "Value of the trigger (0..1 for token_ratio, a positive integer otherwise; 0 when unset).",
        )
        .min(0.0)
        .key("summarization.trigger.value"),
        ParamSpec::new(
            "reserveRatio",
            ParamType::Float,
            json!(DEFAULT_RESERVE_RATIO),
            "Share of maxContextTokens kept as headroom: pruningBudget = maxContextTokens × (1 − r).",
        )
        .range(0.0, 1.0)
        .key("summarization.reserveRatio"),
        ParamSpec::new(
            "maxSummaryTokens",
            ParamType::Int,
            json!(DEFAULT_MAX_SUMMARY_TOKENS),
            "Max output tokens of the summary (caps the simulated summary); 0: no cap of \
             LibreChat's own (the summarizer model's limit; the replay's default summary cap).",
        )
        .min(0.0)
        .key("summarization.maxSummaryTokens"),
        ParamSpec::new(
            "contextPruning.enabled",
            ParamType::Bool,
            json!(false),
            "Position-based degradation of old tool results (summarization-disabled path only).",
        )
        .key("summarization.contextPruning.enabled"),
        ParamSpec::new(
            "contextPruning.keepLastAssistants",
            ParamType::Int,
            json!(3),
            "Recent assistant turns protected from context pruning.",
        )
        .range(0.0, 10.0)
        .key("summarization.contextPruning.keepLastAssistants"),
        ParamSpec::new(
            "contextPruning.softTrimRatio",
            ParamType::Float,
            json!(0.3),
            "Age (distance from the end / message count) from which a tool result is soft-trimmed.",
        )
        .range(0.0, 1.0)
        .key("summarization.contextPruning.softTrimRatio"),
        ParamSpec::new(
            "contextPruning.hardClearRatio",
            ParamType::Float,
            json!(0.5),
            "Age from which a tool result is replaced by the hard-clear placeholder.",
        )
        .range(0.0, 1.0)
        .key("summarization.contextPruning.hardClearRatio"),
        ParamSpec::new(
            "contextPruning.minPrunableToolChars",
            ParamType::Int,
            json!(50_000),
            "Tool results shorter than this (chars) are never context-pruned.",
        )
        .min(0.0)
        .key("summarization.contextPruning.minPrunableToolChars"),
        ParamSpec::new(
            "contextPruning.softTrim.maxChars",
            ParamType::Int,
            json!(4_000),
            "Soft-trim applies to results longer than this. LibreChat's resolved default; not a \
             librechat.yaml setting (export refuses other values).",
        )
        .min(0.0),
        ParamSpec::new(
            "contextPruning.softTrim.headChars",
            ParamType::Int,
            json!(1_500),
            "Chars kept from the start of a soft-trimmed result (resolved default; not in librechat.yaml).",
        )
        .min(0.0),
        ParamSpec::new(
            "contextPruning.softTrim.tailChars",
            ParamType::Int,
            json!(1_500),
            "Chars kept from the end of a soft-trimmed result (resolved default; not in librechat.yaml).",
        )
        .min(0.0),
        ParamSpec::new(
            "contextPruning.hardClear.enabled",
            ParamType::Bool,
            json!(true),
            "Hard-clear old results (resolved default; not in librechat.yaml).",
        ),
        ParamSpec::new(
            "contextPruning.hardClear.placeholder",
            ParamType::String,
            json!("[Old tool result content cleared]"),
            "Text that replaces a hard-cleared result (resolved default; not in librechat.yaml).",
        ),
    ]
}

/// Checks a trigger as LibreChat's `summarizationTriggerSchema` does.
fn check_trigger(ty: &str, value: f64) -> Result<Option<Trigger>, String> {
    let positive_int = |what: &str| -> Result<u64, String> {
        if value.is_finite() && value > 0.0 && value.fract() == 0.0 {
            Ok(value as u64)
        } else {
            Err(format!(
                "summarization.trigger.value: {what} needs a positive integer, got {value}"
            ))
        }
    };
    match ty {
        "unset" => {
            if value != 0.0 {
                Err(format!(
                    "summarization.trigger.value is {value} but trigger.type is unset; set a \
                     trigger type ({}) or leave the value at 0",
                    TRIGGER_TYPES[1..].join(", ")
                ))
            } else {
                Ok(None)
            }
        }
        "token_ratio" => {
            if value.is_finite() && (0.0..=1.0).contains(&value) {
                Ok(Some(Trigger::TokenRatio(value)))
            } else {
                Err(format!(
                    "summarization.trigger.value: token_ratio needs a number from 0 to 1, got {value}"
                ))
            }
        }
        "remaining_tokens" => Ok(Some(Trigger::RemainingTokens(positive_int(ty)?))),
        "messages_to_refine" => Ok(Some(Trigger::MessagesToRefine(positive_int(ty)?))),
        "token_count" => Err(legacy_token_count()),
        other => Err(format!(
            "summarization.trigger.type: unknown type {other}; expected one of {}",
            TRIGGER_TYPES[1..].join(", ")
        )),
    }
}

fn legacy_token_count() -> String {
    "summarization.trigger.type `token_count` is no longer supported: migrate to \
     `remaining_tokens` (fire when the remaining context is at most `value` tokens) or \
     `token_ratio` (fire when the used share of the context is at least `value`, 0-1)"
        .to_string()
}

impl Config {
    /// Whether the summarization path runs (`shapeSummarizationConfig`'s `enabled`).
    pub fn summarization_enabled(&self) -> bool {
        self.enabled
    }

    pub fn from_params(p: &Params) -> Result<Config, String> {
        let trigger = check_trigger(p.str("trigger.type"), p.float("trigger.value"))?;
        Ok(Config {
            enabled: p.bool("enabled"),
            trigger,
            reserve_ratio: p.float("reserveRatio"),
            max_summary_tokens: p.uint("maxSummaryTokens"),
            pruning: ContextPruning {
                enabled: p.bool("contextPruning.enabled"),
                keep_last_assistants: p.uint("contextPruning.keepLastAssistants"),
                soft_trim_ratio: p.float("contextPruning.softTrimRatio"),
                hard_clear_ratio: p.float("contextPruning.hardClearRatio"),
                min_prunable_tool_chars: p.uint("contextPruning.minPrunableToolChars"),
                soft_trim_max_chars: p.uint("contextPruning.softTrim.maxChars"),
                soft_trim_head_chars: p.uint("contextPruning.softTrim.headChars"),
                soft_trim_tail_chars: p.uint("contextPruning.softTrim.tailChars"),
                hard_clear_enabled: p.bool("contextPruning.hardClear.enabled"),
                hard_clear_placeholder: p.str("contextPruning.hardClear.placeholder").to_string(),
            },
        })
    }
}

fn to_yaml(v: &Value) -> Yaml {
    match v {
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Yaml::Number(u.into()),
            (_, Some(i)) => Yaml::Number(i.into()),
            _ => Yaml::Number(n.as_f64().unwrap_or(0.0).into()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        _ => Yaml::Null,
    }
}

/// The `summarization:` block. `full`: every key with its value; otherwise only what differs from
/// LibreChat's defaults. Refuses parameters that `librechat.yaml` cannot express.
pub fn export(p: &Params, full: bool) -> Result<String, String> {
    Config::from_params(p)?;
    let specs = schema();
    let default = |name: &str| {
        specs
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.default.clone())
            .unwrap_or(Value::Null)
    };
    for name in INTERNAL {
        if p.get(name) != &default(name) {
            return Err(format!(
                "{name} = {} cannot be exported: librechat.yaml's contextPruning accepts only {}; \
                 LibreChat always uses {}",
                p.get(name),
                PRUNING_KEYS.join(", "),
                default(name)
            ));
        }
    }
    let wanted = |name: &str| full || p.get(name) != &default(name);
    let mut block = Mapping::new();
    if wanted("enabled") {
        block.insert("enabled".into(), to_yaml(p.get("enabled")));
    }
    for name in YAML_STRINGS {
        if !p.str(name).is_empty() {
            block.insert(name.into(), Yaml::String(p.str(name).to_string()));
        }
    }
    if p.str("trigger.type") != "unset" {
        let mut t = Mapping::new();
        t.insert(
            "type".into(),
            Yaml::String(p.str("trigger.type").to_string()),
        );
        let v = p.float("trigger.value");
        let value = if p.str("trigger.type") == "token_ratio" {
            Yaml::Number(v.into())
        } else {
            Yaml::Number((v as u64).into())
        };
        t.insert("value".into(), value);
        block.insert("trigger".into(), Yaml::Mapping(t));
    }
    for name in ["reserveRatio", "maxSummaryTokens"] {
        // maxSummaryTokens 0 is "no cap": the key is left out (LibreChat needs a positive one).
        if wanted(name) && !(name == "maxSummaryTokens" && p.uint(name) == 0) {
            block.insert(name.into(), to_yaml(p.get(name)));
        }
    }
    let mut pruning = Mapping::new();
    for key in PRUNING_KEYS {
        let name = format!("contextPruning.{key}");
        if wanted(&name) {
            pruning.insert(key.into(), to_yaml(p.get(&name)));
        }
    }
    if !pruning.is_empty() {
        block.insert("contextPruning".into(), Yaml::Mapping(pruning));
    }
    let mut root = Mapping::new();
    root.insert("summarization".into(), Yaml::Mapping(block));
    serde_yaml_ng::to_string(&Yaml::Mapping(root)).map_err(|e| format!("writing YAML: {e}"))
}

fn key_str(k: &Yaml, at: &str) -> Result<String, String> {
    k.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{at}: keys must be strings, got {k:?}"))
}

fn num(v: &Yaml, at: &str) -> Result<f64, String> {
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("{at}: expected a number, got {}", show(v)))
}

fn show(v: &Yaml) -> String {
    serde_yaml_ng::to_string(v)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| format!("{v:?}"))
}

fn range(v: &Yaml, at: &str, min: f64, max: f64) -> Result<Value, String> {
    let x = num(v, at)?;
    if x < min || x > max {
        return Err(format!("{at}: {x} is outside {min}..{max}"));
    }
    Ok(json!(x))
}

fn non_negative_int(v: &Yaml, at: &str, max: Option<f64>) -> Result<Value, String> {
    let x = num(v, at)?;
    if x < 0.0 || max.is_some_and(|m| x > m) {
        let bound = max.map(|m| format!(" and at most {m}")).unwrap_or_default();
        return Err(format!("{at}: {x} must be at least 0{bound}"));
    }
    if x.fract() != 0.0 {
        return Err(format!(
            "{at}: ctxlab models this count as an integer, got {x}"
        ));
    }
    Ok(json!(x as i64))
}

fn boolean(v: &Yaml, at: &str) -> Result<Value, String> {
    v.as_bool()
        .map(Value::Bool)
        .ok_or_else(|| format!("{at}: expected true or false, got {}", show(v)))
}

/// Parses `librechat.yaml` (or just its `summarization:` block) back into parameters.
pub fn import(text: &str) -> Result<Value, String> {
    let doc: Yaml = serde_yaml_ng::from_str(text)
        .map_err(|e| format!("librechat.yaml is not valid YAML: {e}"))?;
    let block = match doc.get("summarization") {
        Some(Yaml::Mapping(m)) => m.clone(),
        Some(Yaml::Null) => {
            return Err(
                "summarization: is empty; LibreChat's schema needs a mapping (write \
                        `summarization: {}` for its defaults, or remove the key)"
                    .to_string(),
            )
        }
        Some(other) => {
            return Err(format!(
                "summarization: expected a mapping, got {}",
                show(other)
            ))
        }
        None => return Err("librechat.yaml has no `summarization:` block".to_string()),
    };
    let mut out = Map::new();
    let mut parameters_max_summary: Option<Value> = None;
    let mut empty_model = false;
    for (k, v) in &block {
        let key = key_str(k, "summarization")?;
        let at = format!("summarization.{key}");
        match key.as_str() {
            "enabled" => {
                out.insert("enabled".into(), boolean(v, &at)?);
            }
            "provider" | "model" | "prompt" | "updatePrompt" => {
                let s = v
                    .as_str()
                    .ok_or_else(|| format!("{at}: expected a string, got {}", show(v)))?;
                // shapeSummarizationConfig: an empty provider or model (not the agent's own, which
                // an absent key means) turns summarization off.
                if s.is_empty() && (key == "provider" || key == "model") {
                    empty_model = true;
                } else {
                    out.insert(key.clone(), json!(s));
                }
            }
            "reserveRatio" => {
                out.insert(key.clone(), range(v, &at, 0.0, 1.0)?);
            }
            "maxSummaryTokens" => {
                let x = num(v, &at)?;
                if x <= 0.0 || x.fract() != 0.0 {
                    return Err(format!("{at}: expected a positive integer, got {x}"));
                }
                out.insert(key.clone(), json!(x as i64));
            }
            "parameters" => {
                let m = v
                    .as_mapping()
                    .ok_or_else(|| format!("{at}: expected a mapping, got {}", show(v)))?;
                for (pk, pv) in m {
                    let pkey = key_str(pk, &at)?;
                    if pkey == "maxSummaryTokens" {
                        let x = num(pv, &format!("{at}.maxSummaryTokens"))?;
                        if x <= 0.0 || x.fract() != 0.0 {
                            return Err(format!(
                                "{at}.maxSummaryTokens: expected a positive integer, got {x}"
                            ));
                        }
                        parameters_max_summary = Some(json!(x as i64));
                    } else {
                        return Err(format!(
                            "{at}.{pkey}: summarizer LLM parameters are not modelled (ctxlab \
                             simulates the summarizer); only parameters.maxSummaryTokens is read"
                        ));
                    }
                }
            }
            "trigger" => {
                let ty = v
                    .get("type")
                    .ok_or_else(|| format!("{at}.type: missing"))?
                    .as_str()
                    .ok_or_else(|| format!("{at}.type: expected a string"))?;
                if ty == "token_count" {
                    return Err(legacy_token_count());
                }
                let value = num(
                    v.get("value")
                        .ok_or_else(|| format!("{at}.value: missing"))?,
                    &format!("{at}.value"),
                )?;
                if ty == "unset" {
                    return Err(format!(
                        "{at}.type: expected one of {}",
                        TRIGGER_TYPES[1..].join(", ")
                    ));
                }
                check_trigger(ty, value)?;
                for tk in v.as_mapping().into_iter().flat_map(|m| m.keys()) {
                    let tk = key_str(tk, &at)?;
                    if tk != "type" && tk != "value" {
                        return Err(format!("{at}.{tk}: unknown key (expected type, value)"));
                    }
                }
                out.insert("trigger.type".into(), json!(ty));
                out.insert("trigger.value".into(), json!(value));
            }
            "contextPruning" => {
                let m = v
                    .as_mapping()
                    .ok_or_else(|| format!("{at}: expected a mapping, got {}", show(v)))?;
                for (pk, pv) in m {
                    let pkey = key_str(pk, &at)?;
                    let pat = format!("{at}.{pkey}");
                    let value = match pkey.as_str() {
                        "enabled" => boolean(pv, &pat)?,
                        "keepLastAssistants" => non_negative_int(pv, &pat, Some(10.0))?,
                        "softTrimRatio" | "hardClearRatio" => range(pv, &pat, 0.0, 1.0)?,
                        "minPrunableToolChars" => non_negative_int(pv, &pat, None)?,
                        _ => {
                            return Err(format!(
                                "{pat}: unknown key (expected one of {})",
                                PRUNING_KEYS.join(", ")
                            ))
                        }
                    };
                    out.insert(format!("contextPruning.{pkey}"), value);
                }
            }
            "retainRecent" => {
                return Err(format!(
                    "{at}: not modelled — the LibreChat summarization behaviour ctxlab follows \
                     does not describe retainRecent; remove it to import"
                ))
            }
            _ => {
                return Err(format!(
                    "{at}: unknown key (expected enabled, provider, model, parameters, trigger, \
                     prompt, updatePrompt, reserveRatio, maxSummaryTokens, contextPruning)"
                ))
            }
        }
    }
    // summarization/node.ts: `parameters.maxSummaryTokens ?? maxSummaryTokens`.
    if let Some(v) = parameters_max_summary {
        out.insert("maxSummaryTokens".into(), v);
    }
    if empty_model {
        out.insert("enabled".into(), json!(false));
    }
    let value = Value::Object(out);
    let params = Params::resolve(&schema(), &value)?;
    Config::from_params(&params)?;
    Ok(value)
}
