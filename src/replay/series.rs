//! The per-call series of a run as CSV (`ctxlab replay --series`), one row per call.

use super::Run;
use std::io::Write;

pub const SERIES_COLUMNS: &[&str] = &[
    "call",
    "agent",
    "timestamp_ms",
    "input_tokens",
    "raw_tokens",
    "output_tokens",
    "messages",
    "cumulative_input",
    "cumulative_since_compaction",
    "cache_read",
    "cache_write",
    "cost_usd",
    "over_window",
    "recorded_input_tokens",
    "needed_facts",
    "recalled_lower",
    "recalled_upper",
];

/// Writes the series; `agent` keeps one agent's calls only. Gauges follow as extra columns.
pub fn write_series_csv(
    run: &Run,
    agent: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let gauges: Vec<(&String, std::collections::HashMap<usize, f64>)> = run
        .gauges
        .iter()
        .map(|(name, pts)| (name, pts.iter().map(|p| (p.call, p.value)).collect()))
        .collect();
    let mut header = SERIES_COLUMNS.join(",");
    for (name, _) in &gauges {
        header.push_str(",gauge:");
        header.push_str(&name.replace([',', '"', '\n'], "_"));
    }
    writeln!(out, "{header}")?;
    for s in run
        .samples
        .iter()
        .filter(|s| agent.map_or(true, |a| s.agent == a))
    {
        let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
        write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{:.6},{},{},{},{},{}",
            s.call,
            run.agents[s.agent].replace([',', '"', '\n'], "_"),
            s.timestamp.map(|t| t.to_string()).unwrap_or_default(),
            s.input_tokens,
            s.raw_tokens,
            s.output_tokens,
            s.messages,
            s.cumulative_input,
            s.cumulative_since_compaction,
            s.cache_read,
            s.cache_write,
            s.cost_usd,
            s.over_window as u8,
            opt(s.recorded.map(|u| u.context_tokens())),
            s.needed_facts,
            s.recalled_lower,
            s.recalled_upper,
        )?;
        for (_, values) in &gauges {
            match values.get(&s.call) {
                Some(v) => write!(out, ",{v}")?,
                None => write!(out, ",")?,
            }
        }
        writeln!(out)?;
    }
    Ok(())
}
