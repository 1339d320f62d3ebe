//! A strategy's parameters as its target system's config file, through the plugin's own
//! exporter, checked by importing the text back before anyone writes it anywhere.

use crate::error::{Error, Result};
use crate::plugin_host::StrategyEntry;
use ctxlab_plugin_api::sdk::{same_value, Params};
use serde_json::Value;

/// The config text of `params` in `format` (one of the strategy's `export_formats`; `None`: the
/// first). Fails, naming each parameter that differs, when the text does not import back to the
/// same parameters: a file that would configure the target system differently is never handed out.
pub fn config(entry: &StrategyEntry, params: &Value, format: Option<&str>) -> Result<String> {
    let meta = &entry.meta;
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
        .filter(|s| !same_value(want.get(&s.name), got.get(&s.name)))
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
