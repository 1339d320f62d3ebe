//! What a session log holds, per session and per agent: calls, messages, recorded usage, peak
//! context, recorded compactions, estimated tokens and the calibration of the estimate.
//! `ctxlab inspect` prints it; the JSON schema (`--json`) is documented in docs/cli.md.

use serde::Serialize;

use crate::fmt::fmt_tokens;
use crate::model::{AgentIdx, Session, Warning};
use crate::replay::{
    recorded_contexts_prepared, CallComposition, Composition, Kind, Prepared, RawContext,
};
use crate::tokens::{calibrate, calibrate::samples, Calibration, TokenCounter};

/// How many warnings a report carries verbatim (a corrupt log can have millions).
pub const FIRST_WARNINGS: usize = 5;

#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    pub id: String,
    pub title: Option<String>,
    /// The name it is shown by (`naming::display_name`).
    pub name: String,
    pub format: String,
    pub files: Vec<String>,
    pub bytes: u64,
    /// True when the log has token counts but no message text (nothing to estimate or replay).
    pub usage_only: bool,
    /// True when the log records output tokens only (`Session::estimate_only`).
    pub estimate_only: bool,
    /// The counter behind every estimate in this report.
    pub counter: String,
    /// Over all agents; `peak_context` is the largest of any single call.
    pub totals: Stats,
    pub agents: Vec<AgentReport>,
    pub compactions: Vec<CompactionReport>,
    /// `None` when no call has both recorded usage and recorded messages.
    pub calibration: Option<Calibration>,
    /// Names of the models of the calibration's per-model fits (`ModelFit::model` keys), for
    /// agents whose calls ran on several models.
    #[serde(default)]
    pub model_names: Vec<(u32, String)>,
    pub warning_count: usize,
    /// The first [`FIRST_WARNINGS`] warnings.
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    /// Index in `agents` (the `agent` of calibration fits and compactions).
    pub index: AgentIdx,
    pub id: String,
    pub name: String,
    pub model: Option<String>,
    /// Id of the parent agent, for subagents.
    pub parent: Option<String>,
    pub stats: Stats,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub calls: usize,
    /// Calls whose usage the log recorded.
    pub calls_with_usage: usize,
    /// Messages in the model's context (metadata entries excluded).
    pub messages: usize,
    /// Recorded usage, summed over calls: uncached input, output, cache reads and writes.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Largest recorded context (input + cache read + cache write) of one call.
    pub peak_context: u64,
    /// Index in `Session::calls` of that call.
    pub peak_call: Option<usize>,
    pub compactions: usize,
    /// Every message counted once with the report's counter: the size of the whole history.
    pub estimated_tokens: u64,
    /// Largest counted context of one call as the log recorded it, before calibration.
    pub estimated_peak_context: u64,
    /// The same call predicted with the calibration (overhead + ratio), when there is one.
    pub calibrated_peak_context: Option<u64>,
    /// Of `estimated_tokens`, those known from the log rather than estimated by the counter:
    /// recorded message sizes and hidden content (docs/tokens.md, "Recorded sizes").
    pub known_tokens: u64,
    /// Hidden content in the history: signature-only thinking, encrypted reasoning, web-search
    /// results, tool schemas, reminder text (`MessageFlags::hidden_tokens`).
    pub hidden_tokens: u64,
    /// Tokens of injected messages (attachments, reminders, queued prompts).
    pub injected_tokens: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompactionReport {
    pub agent: AgentIdx,
    /// `auto`, `manual`, … as the log says.
    pub trigger: String,
    /// Tokens in the context before the compaction, as the log recorded them (preTokens).
    pub pre_tokens: Option<u64>,
    /// First message after the compaction boundary.
    pub at_message: usize,
    /// True when ctxlab inferred it from a drop in usage instead of reading it.
    pub inferred: bool,
    pub file: String,
    pub line: u32,
}

/// Summarizes a session, estimating with `counter`. Each message is counted once (the history
/// size and the per-call contexts, which come from the replay engine's reconstruction, share
/// the counts).
pub fn summarize(session: &Session, counter: &dyn TokenCounter) -> SessionReport {
    let prepared = Prepared::counts(session, counter);
    let raw = recorded_contexts_prepared(session, &prepared, counter)
        .expect("prepared from this session with this counter");
    summarize_prepared(session, &prepared, &raw)
}

/// As `summarize`, from a session already counted (`Prepared::counts` or `Prepared::new`, kept
/// by the app and grown by `tokens::LiveCounts` while a log is followed) and its per-call
/// contexts (`raw[i]` for `session.calls[i]`, as `replay::recorded_contexts_prepared` returns
/// them; bare totals from `recorded_raw_tokens_prepared` are taken as all counted).
pub fn summarize_prepared<R: Copy + Into<RawContext>>(
    session: &Session,
    prepared: &Prepared,
    raw: &[Option<R>],
) -> SessionReport {
    let calibration = calibrate(&samples(session, raw));
    let agent_count = session.agents.len();
    let mut stats = vec![Stats::default(); agent_count];

    for (i, m) in session.messages.iter().enumerate() {
        if m.flags.meta {
            continue;
        }
        if let Some(s) = stats.get_mut(m.agent) {
            s.messages += 1;
            if !session.usage_only {
                s.estimated_tokens += prepared.tokens(i);
                s.known_tokens += prepared.known(i);
                s.hidden_tokens += m.flags.hidden_tokens;
                if m.flags.injected {
                    s.injected_tokens += prepared.tokens(i);
                }
            }
        }
    }
    for (i, call) in session.calls.iter().enumerate() {
        let Some(s) = stats.get_mut(call.agent) else {
            continue;
        };
        s.calls += 1;
        if let Some(u) = call.usage {
            s.calls_with_usage += 1;
            s.input += u.input;
            s.output += u.output;
            s.cache_read += u.cache_read;
            s.cache_write += u.cache_write();
            if s.peak_call.is_none() || u.context_tokens() > s.peak_context {
                s.peak_context = u.context_tokens();
                s.peak_call = Some(i);
            }
        }
        if let Some(r) = raw.get(i).copied().flatten() {
            let r: RawContext = r.into();
            s.estimated_peak_context = s.estimated_peak_context.max(r.total());
            if let Some(c) = &calibration {
                let predicted = c.predict_call(session, i, r);
                s.calibrated_peak_context =
                    Some(s.calibrated_peak_context.unwrap_or(0).max(predicted));
            }
        }
    }
    for c in &session.compactions {
        if let Some(s) = stats.get_mut(c.agent) {
            s.compactions += 1;
        }
    }

    let totals = stats.iter().fold(Stats::default(), |mut t, s| {
        t.calls += s.calls;
        t.calls_with_usage += s.calls_with_usage;
        t.messages += s.messages;
        t.input += s.input;
        t.output += s.output;
        t.cache_read += s.cache_read;
        t.cache_write += s.cache_write;
        if s.peak_call.is_some() && (t.peak_call.is_none() || s.peak_context > t.peak_context) {
            t.peak_context = s.peak_context;
            t.peak_call = s.peak_call;
        }
        t.compactions += s.compactions;
        t.estimated_tokens += s.estimated_tokens;
        t.known_tokens += s.known_tokens;
        t.hidden_tokens += s.hidden_tokens;
        t.injected_tokens += s.injected_tokens;
        t.estimated_peak_context = t.estimated_peak_context.max(s.estimated_peak_context);
        t.calibrated_peak_context = t.calibrated_peak_context.max(s.calibrated_peak_context);
        t
    });

    let agents = session
        .agents
        .iter()
        .zip(stats)
        .enumerate()
        .map(|(index, (a, stats))| AgentReport {
            index,
            id: a.id.clone(),
            name: a.name.clone(),
            model: a.model.clone(),
            parent: a
                .parent
                .and_then(|p| session.agents.get(p))
                .map(|p| p.id.clone()),
            stats,
        })
        .collect();
    let compactions = session
        .compactions
        .iter()
        .map(|c| CompactionReport {
            agent: c.agent,
            trigger: c.trigger.clone(),
            pre_tokens: c.pre_tokens,
            at_message: c.at_message,
            inferred: c.inferred,
            file: session
                .source
                .files
                .get(c.source.file as usize)
                .cloned()
                .unwrap_or_default(),
            line: c.source.line,
        })
        .collect();

    let model_names = calibration
        .iter()
        .flat_map(|c| &c.agents)
        .flat_map(|a| &a.models)
        .map(|m| {
            let name = session
                .calls
                .get(m.model as usize)
                .and_then(|c| session.call_model(c))
                .unwrap_or("(no model)");
            (m.model, name.to_string())
        })
        .collect();

    SessionReport {
        id: session.id.clone(),
        title: session.title.clone(),
        name: crate::naming::display_name(session),
        format: session.source.format.clone(),
        files: session.source.files.clone(),
        bytes: session.source.bytes,
        usage_only: session.usage_only,
        estimate_only: session.estimate_only,
        counter: prepared.counter().to_string(),
        totals,
        agents,
        compactions,
        calibration,
        model_names,
        warning_count: session.warnings.len(),
        warnings: session
            .warnings
            .iter()
            .take(FIRST_WARNINGS)
            .cloned()
            .collect(),
    }
}

impl SessionReport {
    /// The report as aligned tables with thousands separators, for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let t = &self.totals;
        let name = &self.name;
        out.push_str(&format!(
            "session {name} ({}, {} file{}, {})\n",
            self.format,
            self.files.len(),
            plural(self.files.len()),
            fmt_bytes(self.bytes)
        ));
        if self.name != self.id {
            out.push_str(&format!("  id {}\n", self.id));
        }
        for f in &self.files {
            out.push_str(&format!("  {f}\n"));
        }
        out.push_str(&format!(
            "  {} calls ({} with usage), {} messages, {} agent{}, {} compaction{}, {} warning{}\n",
            fmt_tokens(t.calls as u64),
            fmt_tokens(t.calls_with_usage as u64),
            fmt_tokens(t.messages as u64),
            self.agents.len(),
            plural(self.agents.len()),
            t.compactions,
            plural(t.compactions),
            fmt_tokens(self.warning_count as u64),
            plural(self.warning_count),
        ));
        if self.usage_only {
            out.push_str("  usage only: the log has token counts but no message text; it cannot be replayed\n");
        }

        out.push_str("\nrecorded usage\n");
        let mut usage = Table::new(&[
            "agent",
            "parent",
            "model",
            "calls",
            "messages",
            "input",
            "output",
            "cache read",
            "cache write",
            "peak context",
            "compactions",
        ]);
        // An estimate-only log records no input or cache: "-", never a false 0.
        let input = |n: u64| {
            if self.estimate_only {
                "-".to_string()
            } else {
                fmt_tokens(n)
            }
        };
        let usage_row = |label: &str, parent: &str, model: &str, s: &Stats| {
            vec![
                label.to_string(),
                parent.to_string(),
                model.to_string(),
                fmt_tokens(s.calls as u64),
                fmt_tokens(s.messages as u64),
                input(s.input),
                fmt_tokens(s.output),
                input(s.cache_read),
                input(s.cache_write),
                input(s.peak_context),
                fmt_tokens(s.compactions as u64),
            ]
        };
        for a in &self.agents {
            usage.row(usage_row(
                &a.name,
                a.parent.as_deref().unwrap_or("-"),
                a.model.as_deref().unwrap_or("-"),
                &a.stats,
            ));
        }
        if self.agents.len() > 1 {
            usage.row(usage_row("total", "", "", t));
        }
        out.push_str(&usage.render());

        if !self.usage_only {
            out.push_str(&format!("\nestimated with {}\n", self.counter));
            let mut est = Table::new(&[
                "agent",
                "history",
                "peak context",
                "calibrated peak",
                "overhead",
                "ratio",
                "fit",
                "calls fitted",
                "mean error",
                "p95 error",
            ]);
            for a in &self.agents {
                let s = &a.stats;
                let fit = self.calibration.as_ref().and_then(|c| c.agent(a.index));
                let mut row = vec![
                    a.name.clone(),
                    fmt_tokens(s.estimated_tokens),
                    fmt_tokens(s.estimated_peak_context),
                    s.calibrated_peak_context.map_or("-".into(), fmt_tokens),
                ];
                match fit {
                    Some(f) => row.extend([
                        fmt_tokens(f.fit.overhead.round() as u64),
                        format!("{:.3}", f.fit.ratio),
                        if f.own_fit { "own" } else { "session" }.to_string(),
                        fmt_tokens(f.samples as u64),
                        format!("{:.1} %", f.mean_ape),
                        format!("{:.1} %", f.p95_ape),
                    ]),
                    None => row.extend(["-", "-", "-", "0", "-", "-"].map(String::from)),
                }
                est.row(row);
                // An agent that ran on several models: one fit per model, under it.
                for m in fit.map_or(&[][..], |f| &f.models[..]) {
                    let name = self
                        .model_names
                        .iter()
                        .find(|(k, _)| *k == m.model)
                        .map_or("?", |(_, n)| n.as_str());
                    est.row(vec![
                        format!("  on {name}"),
                        String::new(),
                        String::new(),
                        String::new(),
                        fmt_tokens(m.fit.overhead.round() as u64),
                        format!("{:.3}", m.fit.ratio),
                        if m.own_fit { "own" } else { "session" }.to_string(),
                        fmt_tokens(m.samples as u64),
                        format!("{:.1} %", m.mean_ape),
                        format!("{:.1} %", m.p95_ape),
                    ]);
                }
            }
            out.push_str(&est.render());
            match &self.calibration {
                Some(c) => out.push_str(&format!(
                    "calibration: mean error {:.1} %, p95 {:.1} % over {} calls (session fit: overhead {} tokens, ratio {:.3})\n",
                    c.mean_ape,
                    c.p95_ape,
                    fmt_tokens(c.samples as u64),
                    fmt_tokens(c.session.overhead.round() as u64),
                    c.session.ratio
                )),
                None if self.estimate_only => out.push_str(&format!(
                    "calibration: none ({})\n",
                    crate::model::ESTIMATE_ONLY_NOTE
                )),
                None => out.push_str("calibration: none (no call has both recorded usage and recorded messages)\n"),
            }
            if self.totals.known_tokens > 0 || self.totals.injected_tokens > 0 {
                out.push_str("\ncontext sources (history)\n");
                let mut src = Table::new(&[
                    "agent",
                    "recorded or known",
                    "estimated",
                    "hidden reasoning etc.",
                    "injected",
                    "fit ratio",
                ]);
                for a in self.agents.iter().filter(|a| a.stats.estimated_tokens > 0) {
                    let st = &a.stats;
                    let share = |t: u64| {
                        format!(
                            "{} ({:.0} %)",
                            fmt_tokens(t),
                            t as f64 * 100.0 / st.estimated_tokens.max(1) as f64
                        )
                    };
                    src.row(vec![
                        a.name.clone(),
                        share(st.known_tokens),
                        share(st.estimated_tokens - st.known_tokens),
                        fmt_tokens(st.hidden_tokens),
                        fmt_tokens(st.injected_tokens),
                        self.calibration
                            .as_ref()
                            .map_or("-".into(), |c| format!("{:.3}", c.fit_for(a.index).ratio)),
                    ]);
                }
                out.push_str(&src.render());
            }
        }

        if !self.compactions.is_empty() {
            out.push_str("\nrecorded compactions\n");
            let mut comp =
                Table::new(&["agent", "trigger", "tokens before", "at message", "source"]);
            for c in &self.compactions {
                let agent = self.agents.get(c.agent).map_or("?", |a| a.name.as_str());
                let trigger = if c.inferred {
                    format!("{} (inferred)", c.trigger)
                } else {
                    c.trigger.clone()
                };
                comp.row(vec![
                    agent.to_string(),
                    trigger,
                    c.pre_tokens.map_or("-".into(), fmt_tokens),
                    fmt_tokens(c.at_message as u64),
                    format!("{}:{}", c.file, c.line),
                ]);
            }
            out.push_str(&comp.render());
        }

        if self.warning_count > 0 {
            out.push_str(&format!(
                "\nwarnings: {} (first {} shown)\n",
                fmt_tokens(self.warning_count as u64),
                self.warnings.len()
            ));
            for w in &self.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        out
    }
}

/// The composition of each agent's context (`replay::composition`) as tables: per agent, its
/// largest reconstructed context and its last call, each kind with its share; or only `call`.
/// Errors when `call` is not a call of the session.
pub fn composition_text(
    session: &Session,
    comp: &Composition,
    call: Option<usize>,
) -> crate::Result<String> {
    let name = session.title.as_deref().unwrap_or(&session.id);
    let mut out = format!(
        "composition of {name} (tokens counted with {}, recorded compactions applied)\n",
        comp.counter
    );
    if session.usage_only {
        out.push_str("  usage only: the log holds no message text to break down\n");
        return Ok(out);
    }
    if comp.whole_requests {
        out.push_str(
            "  whole requests as captured: system prompt and tool schemas are counted like the rest, nothing is calibrated in; the provider's count differs by its tokenizer\n",
        );
    }
    let agent_name = |a: AgentIdx| session.agents.get(a).map_or("?", |x| x.name.as_str());
    let mut columns: Vec<(String, &CallComposition)> = Vec::new();
    let mut groups: Vec<(AgentIdx, Vec<(String, &CallComposition)>)> = Vec::new();
    if let Some(ci) = call {
        let c = comp
            .calls
            .get(ci)
            .ok_or_else(|| {
                crate::Error::Invalid(format!(
                    "--call {ci}: the session has {} calls (0 to {})",
                    session.calls.len(),
                    session.calls.len().saturating_sub(1)
                ))
            })?
            .as_ref()
            .ok_or_else(|| {
                crate::Error::Invalid(format!("call {ci} has no context to break down"))
            })?;
        columns.push((format!("call {}", fmt_tokens(ci as u64)), c));
        groups.push((c.agent, std::mem::take(&mut columns)));
    } else {
        for a in 0..session.agents.len() {
            let mine = comp.calls.iter().flatten().filter(|c| c.agent == a);
            let peak = mine
                .clone()
                .max_by_key(|c| (c.total, std::cmp::Reverse(c.call)));
            let last = mine.last();
            if let Some(p) = peak {
                columns.push((format!("peak (call {})", fmt_tokens(p.call as u64)), p));
            }
            if let Some(l) = last.filter(|l| Some(l.call) != peak.map(|p| p.call)) {
                columns.push((format!("last (call {})", fmt_tokens(l.call as u64)), l));
            }
            if !columns.is_empty() {
                groups.push((a, std::mem::take(&mut columns)));
            }
        }
    }
    for (a, cols) in groups {
        out.push_str(&format!("\nagent {}\n", agent_name(a)));
        let mut header = vec!["kind".to_string(), "tool".to_string()];
        for (label, _) in &cols {
            header.push(label.clone());
            header.push("share".to_string());
        }
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        // Rows: every (kind, tool) any column has, in the first column's order.
        let mut rows: Vec<(Kind, Option<&str>)> = Vec::new();
        for (_, c) in &cols {
            for sl in &c.slices {
                let key = (sl.kind, sl.tool.as_deref());
                if !rows.contains(&key) {
                    rows.push(key);
                }
            }
        }
        rows.sort_by_key(|r| Kind::ALL.iter().position(|k| *k == r.0));
        for (kind, tool) in rows {
            let mut row = vec![kind.label().to_string(), tool.unwrap_or("").to_string()];
            for (_, c) in &cols {
                let t = c
                    .slices
                    .iter()
                    .find(|s| s.kind == kind && s.tool.as_deref() == tool)
                    .map_or(0, |s| s.tokens);
                row.push(fmt_tokens(t));
                row.push(format!("{:.1} %", t as f64 * 100.0 / c.total.max(1) as f64));
            }
            t.row(row);
        }
        let mut total = vec!["total".to_string(), String::new()];
        for (_, c) in &cols {
            total.push(fmt_tokens(c.total));
            total.push("100.0 %".to_string());
        }
        t.row(total);
        if comp.whole_requests {
            // The provider's own count of the same request: what is left is the tokenizer's.
            let mut row = vec!["provider's count".to_string(), String::new()];
            for (_, c) in &cols {
                match session.calls[c.call].usage.map(|u| u.context_tokens()) {
                    Some(r) if r > 0 => {
                        row.push(fmt_tokens(r));
                        row.push(format!(
                            "{:+.1} %",
                            (r as f64 - c.total as f64) * 100.0 / c.total.max(1) as f64
                        ));
                    }
                    _ => row.extend([String::new(), String::new()]),
                }
            }
            t.row(row);
        }
        out.push_str(&t.render());
        if let Some(o) = comp.overhead.get(a).copied().flatten() {
            out.push_str(&format!(
                "  plus about {} tokens per call the log does not hold (system prompt, tool schemas: the calibrated overhead)\n",
                fmt_tokens(o)
            ));
        }
    }
    Ok(out)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn fmt_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} bytes");
    }
    let mut v = n as f64;
    let mut unit = "";
    for u in UNITS {
        v /= 1000.0;
        unit = u;
        if v < 1000.0 {
            break;
        }
    }
    format!("{v:.1} {unit}")
}

/// Columns padded to their widest cell: names left-aligned, numbers right-aligned.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self) -> String {
        let columns = self.rows[0].len();
        let width: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let left: Vec<bool> = self.rows[0].iter().map(|h| is_name_header(h)).collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = width[c] - cell.chars().count();
                line.push_str("  ");
                if left[c] {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

fn is_name_header(h: &str) -> bool {
    matches!(
        h,
        "agent" | "parent" | "model" | "trigger" | "fit" | "source" | "kind" | "tool"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_names_left_and_numbers_right() {
        let mut t = Table::new(&["agent", "calls", "input"]);
        t.row(vec!["main".into(), "12".into(), "1,234,567".into()]);
        t.row(vec!["explorer".into(), "3".into(), "89".into()]);
        assert_eq!(
            t.render(),
            "  agent     calls      input\n  main         12  1,234,567\n  explorer      3         89\n"
        );
    }

    #[test]
    fn bytes_are_shown_in_decimal_units() {
        assert_eq!(fmt_bytes(999), "999 bytes");
        assert_eq!(fmt_bytes(1_500), "1.5 KB");
        assert_eq!(fmt_bytes(523_000_000), "523.0 MB");
    }
}
