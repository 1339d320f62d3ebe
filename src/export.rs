//! A strategy's parameters as its target system's config file, through the plugin's own
//! exporter, checked by importing the text back before anyone writes it anywhere.

use crate::error::{Error, Result};
use crate::plugin_host::StrategyEntry;
use ctxlab_plugin_api::sdk::{same_value, Params};
use serde_json::Value;
use serde_yaml_ng::{Mapping, Value as Y};

/// The config text of `params` in `format` (one of the strategy's `export_formats`; `None`: the
/// first). Fails, naming each parameter that differs, when the text does not import back to the
/// same parameters: a file that would configure the target system differently is never handed out.
pub fn config(entry: &StrategyEntry, params: &Value, format: Option<&str>) -> Result<String> {
    let meta = &entry.meta;
    let params = &crate::compare::dotted(params.clone(), &meta.params);
    let format = match format {
        Some(f) if meta.export_formats.iter().any(|x| x == f) => f,
        Some(f) => {
            return Err(Error::Invalid(format!(
                "strategy {} cannot export {f}; its formats: {}",
                meta.id,
                meta.export_formats.join(", ")
            )))
        }
        None => meta
            .export_formats
            .first()
            .map(String::as_str)
            .ok_or_else(|| {
                Error::Invalid(format!("strategy {} exports no config format", meta.id))
            })?,
    };
    let text = entry.create(params)?.export(format)?;
    let back = entry.import(format, &text)?;
    let plugin_err = |message: String| Error::Plugin {
        plugin: format!("{} ({})", meta.plugin, meta.id),
        message,
    };
    let want = Params::resolve(&meta.params, params).map_err(|e| Error::Invalid(e))?;
    let got = Params::resolve(&meta.params, &back).map_err(|e| {
        plugin_err(format!(
            "its {format} export imports back to invalid parameters: {e}"
        ))
    })?;
    let differ: Vec<String> = meta
        .params
        .iter()
        .filter(|s| !same_param(want.get(&s.name), got.get(&s.name)))
        .map(|s| {
            format!(
                "{}: {} exported, {} read back",
                s.name,
                want.get(&s.name),
                got.get(&s.name)
            )
        })
        .collect();
    if !differ.is_empty() {
        return Err(plugin_err(format!(
            "its {format} export does not import back to the same parameters, so it was not written ({})",
            differ.join("; ")
        )));
    }
    Ok(text)
}

/// Two values of a parameter are the same setting: [`same_value`], or two strings that hold the
/// same structured value in JSON or YAML (a parameter such as fuseraft's `Agents` map, which a user
/// writes in any layout and a plugin reads back as compact JSON).
fn same_param(a: &Value, b: &Value) -> bool {
    if same_value(a, b) {
        return true;
    }
    let parse = |v: &Value| -> Option<Value> {
        let v: Value = serde_yaml_ng::from_str(v.as_str()?).ok()?;
        (v.is_object() || v.is_array()).then_some(v)
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => same_value(&x, &y),
        _ => false,
    }
}

/// The format `ctxlab export --into` writes when none is given: the strategy's every-value
/// variant (`<first>-full`) when it has one, so each setting the export owns overrides the file's.
pub fn merge_format(entry: &StrategyEntry) -> Option<&str> {
    let formats = &entry.meta.export_formats;
    let first = formats.first()?;
    let full = format!("{first}-full");
    Some(
        formats
            .iter()
            .find(|f| **f == full)
            .unwrap_or(first)
            .as_str(),
    )
}

/// A config merged into the user's file.
#[derive(Debug)]
pub struct Merged {
    pub text: String,
    /// Parameters the merged file still sets differently from the export (values only the user's
    /// file holds, e.g. a section the export leaves out or settings of agents it does not name).
    pub kept_from_file: Vec<String>,
}

/// Merges the exported config of `params` into `existing` (a YAML document, e.g. a whole
/// fuseraft config): mappings merge key by key, lists of mappings that carry a `Name` merge by
/// name, every other value of the export replaces the file's. Keys the export does not write
/// stay as they are. The merged text must import; comments of the file are not kept.
pub fn merge_into(
    entry: &StrategyEntry,
    params: &Value,
    format: Option<&str>,
    existing: &str,
) -> Result<Merged> {
    let format = format.or_else(|| merge_format(entry));
    let exported = config(entry, params, format)?;
    let format = format.unwrap_or_default();
    let parse = |text: &str, what: &str| -> Result<Y> {
        match serde_yaml_ng::from_str::<Y>(text) {
            Ok(Y::Mapping(m)) => Ok(Y::Mapping(m)),
            Ok(Y::Null) => Ok(Y::Mapping(Mapping::new())),
            Ok(_) => Err(Error::Invalid(format!(
                "{what} is not a YAML mapping: --into merges YAML config files only"
            ))),
            Err(e) => Err(Error::Invalid(format!("{what} is not valid YAML: {e}"))),
        }
    };
    let mut doc = parse(existing, "the file to merge into")?;
    let fragment = parse(&exported, &format!("the {format} export"))?;
    merge_yaml(&mut doc, fragment);
    let text = serde_yaml_ng::to_string(&doc)
        .map_err(|e| Error::Invalid(format!("writing the merged YAML: {e}")))?;
    let meta = &entry.meta;
    let back = entry.import(format, &text).map_err(|e| Error::Plugin {
        plugin: format!("{} ({})", meta.plugin, meta.id),
        message: format!("the merged file does not import: {e}"),
    })?;
    let want = Params::resolve(&meta.params, params).map_err(Error::Invalid)?;
    let got = Params::resolve(&meta.params, &back).map_err(|e| Error::Plugin {
        plugin: format!("{} ({})", meta.plugin, meta.id),
        message: format!("the merged file imports to invalid parameters: {e}"),
    })?;
    let kept_from_file = meta
        .params
        .iter()
        .filter(|s| !same_param(want.get(&s.name), got.get(&s.name)))
        .map(|s| format!("{}: {} in the file", s.name, got.get(&s.name)))
        .collect();
    Ok(Merged {
        text,
        kept_from_file,
    })
}

/// `over` into `base`: see [`merge_into`].
fn merge_yaml(base: &mut Y, over: Y) {
    match (base, over) {
        (Y::Mapping(b), Y::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge_yaml(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (Y::Sequence(b), Y::Sequence(o)) if named(&o) && named(b) => {
            for item in o {
                let name = item.get("Name").cloned();
                match b.iter_mut().find(|x| x.get("Name") == name.as_ref()) {
                    Some(slot) => merge_yaml(slot, item),
                    None => b.push(item),
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// A list whose items are all mappings with a `Name` (fuseraft's `Agents:`).
fn named(items: &[Y]) -> bool {
    items
        .iter()
        .all(|x| x.as_mapping().is_some_and(|m| m.contains_key("Name")))
}
