//! fuseraft's YAML config: `Compaction:`, `ContextBudget:` and `Agents[].ContextWindow:` with
//! PascalCase keys, as fuseraft reads them. Export refuses what `fuseraft validate` rejects.

use crate::settings::*;
use ctxlab_plugin_api::sdk::Params;
use serde_json::{json, Map, Value};
use serde_yaml_ng::{Mapping, Value as Y};
use std::collections::BTreeMap;

/// Only the values that differ from fuseraft's defaults.
pub const FORMAT: &str = "fuseraft";
/// Every value, defaults included.
pub const FORMAT_FULL: &str = "fuseraft-full";

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
    s.runtime_errors()?;
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
        let m = section(
            COMPACTION_KEYS,
            all,
            |k| params[k].clone(),
            |k| d_params[k].clone(),
        );
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
        "# fuseraft context management, exported by ctxlab.\n# Merge into your fuseraft config; Agents entries carry only Name and the context settings.\n",
    );
    if root.is_empty() {
        text.push_str("{}\n");
    } else {
        text.push_str(
            &serde_yaml_ng::to_string(&Y::Mapping(root))
                .map_err(|e| format!("writing YAML: {e}"))?,
        );
    }
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
        Value::Null => return Ok(true),
        Value::Object(m) => m,
        other => return Err(format!("{name}: expected a mapping, got {other}")),
    };
    for (k, v) in m {
        if keys.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if not_modelled.contains(&k.as_str()) {
            return Err(format!(
                "{name}.{k} is a fuseraft setting ctxlab does not model (its seed does not \
                 describe it); remove it to import this file"
            ));
        } else if k != "Model" {
            // Compaction.Model picks the summarizer model, which the replay's summarizer stands for.
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
    let root = match to_json(&y, "config")? {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "expected a YAML mapping at the top level, got {other}"
            ))
        }
    };
    let mut out = Map::new();
    let has_compaction = take_section(&root, "Compaction", COMPACTION_KEYS, &[], &mut out)?;
    out.insert("Compaction".into(), json!(has_compaction));
    take_section(
        &root,
        "ContextBudget",
        BUDGET_KEYS,
        &["MaxToolResultTokens", "InTurnToolWindow"],
        &mut out,
    )?;
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
