//! fuseraft's YAML config: `Orchestration:` → `Compaction:`, `ContextBudget:` and
//! `Agents[].ContextWindow:` with PascalCase keys, as fuseraft reads them. Export refuses what
//! `fuseraft validate` and fuseraft's startup checks reject.
//!
//! Loader path (`YamlConfigLoader.ConvertYamlToJson`, fuseraft-cli 9f14699): YAML → object graph →
//! JSON → `Microsoft.Extensions.Configuration`'s JSON provider → binder. The JSON provider turns an
//! empty object into a null value (`JsonConfigurationFileParser.SetNullIfElementIsEmpty`), and the
//! binder leaves a section with no value and no children unset: `Compaction: {}` (or
//! `Compaction:`) binds `OrchestrationConfig.Compaction = null`, i.e. compaction off. The export
//! therefore always writes at least `TriggerTurnCount` in a Compaction section, and import reads an
//! empty or null Compaction as absent.

use crate::settings::*;
use ctxlab_plugin_api::sdk::Params;
use serde_json::{json, Map, Value};
use serde_yaml_ng::{Mapping, Value as Y};
use std::collections::BTreeMap;

/// Only the values that differ from fuseraft's defaults.
pub const FORMAT: &str = "fuseraft";
/// Every value, defaults included.
pub const FORMAT_FULL: &str = "fuseraft-full";
/// The key fuseraft binds its whole config under (`YamlConfigLoader`, the init templates).
pub const ROOT: &str = "Orchestration";

fn yaml_of(v: &Value) -> Y {
    serde_yaml_ng::to_value(v).unwrap_or(Y::Null)
}

fn section(
    keys: &[&str],
    all: bool,
    get: impl Fn(&str) -> Value,
    default: impl Fn(&str) -> Value,
) -> Mapping {
    let mut m = Mapping::new();
    for k in keys {
        let v = get(k);
        if all || v != default(k) {
            m.insert(Y::String(k.to_string()), yaml_of(&v));
        }
    }
    m
}

/// Writes the settings as fuseraft YAML. `agents` are the names the flat ContextWindow applies to
/// (the agents seen during a replay); fuseraft sets ContextWindow per agent only.
pub fn export(s: &Settings, format: &str, seen_agents: &[String]) -> Result<String, String> {
    let all = match format {
        FORMAT => false,
        FORMAT_FULL => true,
        other => {
            return Err(format!(
                "unknown export format {other}; this strategy writes {FORMAT} (non-default values) or {FORMAT_FULL} (every value)"
            ))
        }
    };
    s.startup_errors()?;
    let errs = s.validate();
    if !errs.is_empty() {
        return Err(format!(
            "fuseraft validate rejects this config:\n  error: {}",
            errs.join("\n  error: ")
        ));
    }
    let defaults = Settings::from_params(
        &Params::resolve(&schema(), &Value::Null).map_err(|e| format!("schema defaults: {e}"))?,
    )?;
    let d_params = defaults.to_params();
    let params = s.to_params();
    let mut root = Mapping::new();
    if s.compaction.is_some() {
        let mut m = section(
            COMPACTION_KEYS,
            all,
            |k| params[k].clone(),
            |k| d_params[k].clone(),
        );
        // Model is a ModelConfig ({ModelId: …}); SummaryTemplate and Model are null when unset.
        for k in ["Model", "SummaryTemplate"] {
            let key = Y::String(k.into());
            match m.get(&key).and_then(|v| v.as_str()).map(str::to_string) {
                Some(v) if v.is_empty() => {
                    m.remove(&key);
                }
                Some(v) if k == "Model" => {
                    let mut model = Mapping::new();
                    model.insert(Y::String("ModelId".into()), Y::String(v));
                    m.insert(key, Y::Mapping(model));
                }
                _ => {}
            }
        }
        // An empty section binds as null (compaction off): name one value explicitly.
        if m.is_empty() {
            m.insert(
                Y::String("TriggerTurnCount".into()),
                yaml_of(&params["TriggerTurnCount"]),
            );
        }
        root.insert(Y::String("Compaction".into()), Y::Mapping(m));
    }
    let m = section(
        BUDGET_KEYS,
        all,
        |k| params[k].clone(),
        |k| d_params[k].clone(),
    );
    if all || !m.is_empty() {
        root.insert(Y::String("ContextBudget".into()), Y::Mapping(m));
    }

    // Agents: the named overrides, plus the flat ContextWindow under every seen agent's name.
    let flat_set = s.defaults != AgentWindow::default();
    let mut names: Vec<String> = s.agents.keys().cloned().collect();
    if flat_set || all {
        for a in seen_agents {
            if !names.contains(a) {
                names.push(a.clone());
            }
        }
    }
    if flat_set && names.is_empty() {
        return Err(
            "fuseraft sets ContextWindow per agent (Agents[].ContextWindow) and has no \
                    all-agents form: name the agents in the Agents parameter, or export after a \
                    replay so the agents it saw get these settings"
                .into(),
        );
    }
    names.sort();
    let base = AgentWindow::default();
    let mut list = Vec::new();
    for name in &names {
        let w = s.window_for(name);
        let cw = section(WINDOW_KEYS, all, |k| w.get(k), |k| base.get(k));
        let extra = section(AGENT_KEYS, all, |k| w.get(k), |k| base.get(k));
        if cw.is_empty() && extra.is_empty() {
            continue;
        }
        let mut a = Mapping::new();
        a.insert(Y::String("Name".into()), Y::String(name.clone()));
        if !cw.is_empty() {
            a.insert(Y::String("ContextWindow".into()), Y::Mapping(cw));
        }
        for (k, v) in extra {
            a.insert(k, v);
        }
        list.push(Y::Mapping(a));
    }
    if !list.is_empty() {
        root.insert(Y::String("Agents".into()), Y::Sequence(list));
    }
    let mut text = String::from(
        "# fuseraft context management, exported by ctxlab.\n# Merge under Orchestration: of your fuseraft config (ctxlab export --into <file> does it);\n# Agents entries carry only Name and the context settings.\n",
    );
    let mut doc = Mapping::new();
    doc.insert(Y::String(ROOT.into()), Y::Mapping(root));
    text.push_str(
        &serde_yaml_ng::to_string(&Y::Mapping(doc)).map_err(|e| format!("writing YAML: {e}"))?,
    );
    Ok(text)
}

fn to_json(v: &Y, what: &str) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| format!("{what}: {e}"))
}

fn take_section(
    root: &Map<String, Value>,
    name: &str,
    keys: &[&str],
    not_modelled: &[&str],
    out: &mut Map<String, Value>,
) -> Result<bool, String> {
    let Some(v) = root.get(name) else {
        return Ok(false);
    };
    let m = match v {
        // fuseraft's loader binds an empty or null section as absent.
        Value::Null => return Ok(false),
        Value::Object(m) if m.is_empty() => return Ok(false),
        Value::Object(m) => m,
        other => return Err(format!("{name}: expected a mapping, got {other}")),
    };
    for (k, v) in m {
        if k == "Model" {
            // A ModelConfig: ctxlab keeps its ModelId.
            let id = match v {
                Value::Null => String::new(),
                Value::Object(o) => o
                    .get("ModelId")
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string(),
                Value::String(s) => s.clone(),
                other => {
                    return Err(format!(
                        "{name}.Model: expected a mapping with ModelId, got {other}"
                    ))
                }
            };
            out.insert(k.clone(), Value::String(id));
        } else if k == "SummaryTemplate" && v.is_null() {
            out.insert(k.clone(), Value::String(String::new()));
        } else if keys.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if not_modelled.contains(&k.as_str()) {
            return Err(format!(
                "{name}.{k} is a fuseraft setting ctxlab does not model; remove it to import this file"
            ));
        } else {
            return Err(format!(
                "{name}: unknown key {k}; fuseraft reads {}",
                keys.join(", ")
            ));
        }
    }
    Ok(true)
}

/// Parses a fuseraft YAML config (a whole config file or an exported fragment) into parameters.
pub fn import(format: &str, text: &str) -> Result<Value, String> {
    if format != FORMAT && format != FORMAT_FULL {
        return Err(format!(
            "unknown import format {format}; this strategy reads {FORMAT} or {FORMAT_FULL}"
        ));
    }
    let y: Y = serde_yaml_ng::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
    let top = match to_json(&y, "config")? {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "expected a YAML mapping at the top level, got {other}"
            ))
        }
    };
    // fuseraft binds everything under Orchestration:; a bare fragment is read as its content.
    let root = match top.get(ROOT) {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Null) => Map::new(),
        Some(other) => return Err(format!("{ROOT}: expected a mapping, got {other}")),
        None => top,
    };
    let mut out = Map::new();
    let has_compaction = take_section(&root, "Compaction", COMPACTION_KEYS, &[], &mut out)?;
    out.insert("Compaction".into(), json!(has_compaction));
    take_section(&root, "ContextBudget", BUDGET_KEYS, &[], &mut out)?;
    let mut agents: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    match root.get("Agents") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, a) in list.iter().enumerate() {
                let a = a
                    .as_object()
                    .ok_or_else(|| format!("Agents[{i}]: expected a mapping"))?;
                let name = a
                    .get("Name")
                    .and_then(|n| n.as_str())
                    .ok_or_else(|| format!("Agents[{i}]: Name is missing"))?;
                let mut fields = Map::new();
                match a.get("ContextWindow") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(cw)) => {
                        for (k, v) in cw {
                            if !WINDOW_KEYS.contains(&k.as_str()) {
                                return Err(format!(
                                    "Agents[{name}].ContextWindow: unknown key {k}; fuseraft reads {}",
                                    WINDOW_KEYS.join(", ")
                                ));
                            }
                            fields.insert(k.clone(), v.clone());
                        }
                    }
                    Some(other) => {
                        return Err(format!(
                            "Agents[{name}].ContextWindow: expected a mapping, got {other}"
                        ))
                    }
                }
                for k in AGENT_KEYS {
                    if let Some(v) = a.get(*k) {
                        fields.insert(k.to_string(), v.clone());
                    }
                }
                // Other agent keys (Model, Instructions, …) are not context settings.
                if !fields.is_empty() {
                    agents.insert(name.to_string(), fields);
                }
            }
        }
        Some(other) => return Err(format!("Agents: expected a list, got {other}")),
    }
    // Checks the values and drops fields equal to fuseraft's defaults, so a full export and a
    // non-default export import to the same parameters.
    let checked = parse_agents(&agents_text(&agents))?;
    let trimmed: BTreeMap<String, Map<String, Value>> = checked
        .into_iter()
        .map(|(a, f)| {
            let f: Map<String, Value> = f
                .into_iter()
                .filter(|(k, v)| !AgentWindow::is_default_field(k, v))
                .collect();
            (a, f)
        })
        .filter(|(_, f)| !f.is_empty())
        .collect();
    out.insert("Agents".into(), json!(agents_text(&trimmed)));
    Ok(Value::Object(out))
}
