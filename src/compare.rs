//! Several strategies (or one strategy with several parameter sets) replayed on one session, side
//! by side with the baselines, and what each kept at a given call.
//!
//! The baselines `none` and `recorded` are always part of a comparison: `none` is what every
//! figure is relative to (what the session costs with no compaction at all), `recorded` is what
//! the agent really did.

use crate::error::{Error, Result};
use crate::model::{MsgIdx, Part, Role, Session};
use crate::replay::{self, default_threads, parallel, KeptState, ReplayOptions, Run, StrategySpec};
use serde::{Deserialize, Serialize};

/// One column of a comparison: a strategy with its parameters, and the name it is shown under.
#[derive(Debug, Clone)]
pub struct StrategyRun {
    pub label: String,
    pub spec: StrategySpec,
}

impl StrategyRun {
    /// Labelled `id` followed by the parameters given (`fuseraft.compaction TriggerTurnCount=30`).
    pub fn new(spec: StrategySpec) -> StrategyRun {
        let mut label = spec.id().to_string();
        if let StrategySpec::Plugin { params, .. } = &spec {
            if let Some(o) = params.as_object() {
                for (k, v) in o {
                    let v = v
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| v.to_string());
                    label.push_str(&format!(" {k}={v}"));
                }
            }
        }
        StrategyRun { label, spec }
    }
}

/// How far the token reconstruction of the session can be trusted (`tokens::calibrate_session`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// Calls with recorded usage the calibration was fitted on.
    pub samples: usize,
    /// Absolute percentage error of the estimate per call: mean and 95th percentile.
    pub mean_ape: f64,
    pub p95_ape: f64,
}

/// A run's figures relative to the `none` baseline: `(run - baseline) / baseline`, `None` when
/// the baseline figure is 0. Recall is a difference in share points (0.0–1.0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Relative {
    pub total_input_tokens: Option<f64>,
    pub peak_context: Option<f64>,
    pub p95_context: Option<f64>,
    pub cost_usd: Option<f64>,
    pub recall_lower: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedRun {
    pub label: String,
    pub run: Run,
    pub relative: Relative,
}

/// The result of [`run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub session: String,
    /// The name the session is shown by (`naming::display_name`).
    #[serde(default)]
    pub name: String,
    /// `None` when the log records no usage to calibrate on (counts are then uncalibrated).
    pub fidelity: Option<Fidelity>,
    /// The label of the run every `relative` figure is against (`none`).
    pub baseline: String,
    /// Baselines first, then the strategies in the order given.
    pub runs: Vec<ComparedRun>,
    /// What every run's cost leaves out (`Cost::notice`; the same calls in every run), shown
    /// beside the cost column wherever a comparison is shown.
    #[serde(default)]
    pub cost_notice: Option<String>,
    /// Budget figures the model table did not give: what was assumed, and from where.
    #[serde(default)]
    pub budget_assumed: Vec<String>,
    /// Strategies whose replay failed (a plugin error, a panic turned into one, a refused
    /// decision), in the order given: the others are compared all the same.
    #[serde(default)]
    pub failed: Vec<FailedRun>,
}

/// A strategy of a comparison that did not finish, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    pub label: String,
    pub error: String,
}

impl std::fmt::Display for FailedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.label, self.error)
    }
}

impl Comparison {
    pub fn get(&self, label: &str) -> Option<&ComparedRun> {
        self.runs.iter().find(|r| r.label == label)
    }
}

fn ratio(x: f64, base: f64) -> Option<f64> {
    (base != 0.0).then(|| (x - base) / base)
}

fn relative(run: &Run, base: &Run) -> Relative {
    let (m, b) = (&run.metrics, &base.metrics);
    Relative {
        total_input_tokens: ratio(m.total_input_tokens as f64, b.total_input_tokens as f64),
        peak_context: ratio(m.peak_context as f64, b.peak_context as f64),
        p95_context: ratio(m.p95_context as f64, b.p95_context as f64),
        cost_usd: ratio(m.cost.total_usd, b.cost.total_usd),
        recall_lower: match (m.recall.lower, b.recall.lower) {
            (Some(x), Some(y)) => Some(x - y),
            _ => None,
        },
    }
}

/// The given strategies with the baselines in front (unless already given).
fn with_baselines(strategies: &[StrategyRun]) -> Vec<StrategyRun> {
    let mut all = Vec::new();
    for (id, spec) in [
        ("none", StrategySpec::None),
        ("recorded", StrategySpec::Recorded),
    ] {
        if !strategies.iter().any(|s| s.spec.id() == id) {
            all.push(StrategyRun::new(spec));
        }
    }
    all.extend(strategies.iter().cloned());
    // The same strategy twice with the same label would be indistinguishable in the table.
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for s in &mut all {
        let n = seen.entry(s.label.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            s.label = format!("{} #{n}", s.label);
        }
    }
    all
}

/// Replays `session` through the baselines and every strategy (in parallel over the cores).
/// `progress` gets (replays done, replays in all).
pub fn run(
    session: &Session,
    strategies: &[StrategyRun],
    opts: &ReplayOptions<'_>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Comparison> {
    let all = with_baselines(strategies);
    // Every strategy replays the same session: count and scan it once.
    let prepared = replay::Prepared::new(session, &*opts.counter);
    let results = parallel(
        all.iter().collect(),
        default_threads(),
        |s| replay::run_prepared(session, &prepared, s.spec.clone(), &opts.side_by_side()),
        progress,
    );
    // One strategy failing never takes the others down (as `tune` reports per candidate); only
    // the `none` baseline, which every figure is relative to, must run.
    let mut runs = Vec::with_capacity(all.len());
    let mut failed = Vec::new();
    for (s, r) in all.iter().zip(results) {
        match r {
            Ok(run) => runs.push((s.label.clone(), run)),
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) if matches!(s.spec, StrategySpec::None) => return Err(e),
            Err(e) => failed.push(FailedRun {
                label: s.label.clone(),
                error: e.to_string(),
            }),
        }
    }
    let base = runs
        .iter()
        .find(|(_, r)| r.strategy == "none")
        .map(|(l, r)| (l.clone(), r.clone()))
        .ok_or_else(|| Error::Invalid("the none baseline did not run".into()))?;
    let fidelity = opts.calibration.as_ref().map(|c| Fidelity {
        samples: c.samples,
        mean_ape: c.mean_ape,
        p95_ape: c.p95_ape,
    });
    Ok(Comparison {
        session: session.id.clone(),
        name: crate::naming::display_name(session),
        fidelity,
        cost_notice: base.1.metrics.cost.notice(),
        budget_assumed: base.1.budget_assumed.clone(),
        failed,
        baseline: base.0,
        runs: runs
            .into_iter()
            .map(|(label, run)| ComparedRun {
                relative: relative(&run, &base.1),
                label,
                run,
            })
            .collect(),
    })
}

/// What one strategy had of one message at the call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KeptCell {
    pub state: KeptState,
    pub tokens: u64,
    /// For a summary: how many messages it replaced when it was written.
    pub replaces: u32,
}

/// One message of the agent's history at the call (or a summary a strategy wrote), and what each
/// strategy had of it: `None` when it was gone from that strategy's context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptRow {
    /// The session's message; `None` for a summary written by the replay.
    pub message: Option<MsgIdx>,
    pub role: Role,
    /// The start of the message's text, for a user to recognise it.
    pub preview: String,
    /// One entry per strategy, in `KeptComparison::labels` order.
    pub cells: Vec<Option<KeptCell>>,
}

/// What each strategy's context held at one call (`ctxlab compare --kept-at N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptComparison {
    pub call: usize,
    pub agent: String,
    pub labels: Vec<String>,
    /// Context tokens each strategy sent at the call.
    pub input_tokens: Vec<u64>,
    pub rows: Vec<KeptRow>,
}

impl KeptComparison {
    fn column(&self, label: &str) -> Result<usize> {
        self.labels.iter().position(|l| l == label).ok_or_else(|| {
            Error::Invalid(format!(
                "no strategy {label} in this comparison; labels: {}",
                self.labels.join(", ")
            ))
        })
    }

    /// Messages of the log that `kept_by` sent at the call (verbatim or edited) and `forgot_by`
    /// did not send at all: "what did B forget that A kept".
    pub fn forgotten(&self, kept_by: &str, forgot_by: &str) -> Result<Vec<&KeptRow>> {
        let (a, b) = (self.column(kept_by)?, self.column(forgot_by)?);
        let sent = |c: &Option<KeptCell>| {
            c.is_some_and(|c| matches!(c.state, KeptState::Verbatim | KeptState::Edited))
        };
        let gone = |c: &Option<KeptCell>| c.map_or(true, |c| c.state == KeptState::Dropped);
        Ok(self
            .rows
            .iter()
            .filter(|r| r.message.is_some() && sent(&r.cells[a]) && gone(&r.cells[b]))
            .collect())
    }
}

/// The first characters of a message's text, on one line.
pub fn preview(session: &Session, m: MsgIdx, max_chars: usize) -> String {
    let msg = &session.messages[m];
    let mut out = String::new();
    for p in &msg.parts {
        let piece = match p {
            Part::Text { text } | Part::Thinking { text } => text.as_str(),
            Part::ToolCall { name, .. } => name.as_str(),
            Part::ToolResult { content, .. } => content.as_str(),
            Part::Image { .. } => "[image]",
        };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(piece);
        if out.chars().count() >= max_chars {
            break;
        }
    }
    let flat: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max_chars {
        let cut: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Replays every strategy (baselines included) up to `call` and lines up what each sent then.
pub fn kept_at(
    session: &Session,
    strategies: &[StrategyRun],
    call: usize,
    opts: &ReplayOptions<'_>,
) -> Result<KeptComparison> {
    let Some(c) = session.calls.get(call) else {
        return Err(Error::Invalid(format!(
            "call {call} is not in session {} (it has {} calls, numbered from 0)",
            session.id,
            session.calls.len()
        )));
    };
    let all = with_baselines(strategies);
    let prepared = replay::Prepared::new(session, &*opts.counter);
    let results = parallel(
        all.iter().collect(),
        default_threads(),
        |s| {
            let mut o = opts.side_by_side();
            o.stop_at_call = Some(call);
            replay::run_prepared(session, &prepared, s.spec.clone(), &o)
        },
        None,
    );
    // A strategy that fails has no column (`run` reports why); the others are lined up.
    let mut runs = Vec::new();
    let mut labels = Vec::new();
    for (s, r) in all.iter().zip(results) {
        match r {
            Ok(run) => {
                runs.push(run);
                labels.push(s.label.clone());
            }
            Err(e) if matches!(s.spec, StrategySpec::None) || matches!(e, Error::Cancelled) => {
                return Err(e)
            }
            Err(_) => {}
        }
    }
    // Rows keyed by (the log message at or before which they sit, summaries after it, column, n).
    let mut rows: std::collections::BTreeMap<(usize, usize, usize, usize), KeptRow> =
        Default::default();
    let n = runs.len();
    for (col, run) in runs.iter().enumerate() {
        let mut last = 0usize;
        for (k, km) in run.kept.iter().enumerate() {
            let cell = Some(KeptCell {
                state: km.state,
                tokens: km.tokens,
                replaces: km.replaces,
            });
            match km.message {
                Some(m) => {
                    last = m;
                    let row = rows.entry((m, 0, 0, 0)).or_insert_with(|| KeptRow {
                        message: Some(m),
                        role: km.role,
                        preview: preview(session, m, 80),
                        cells: vec![None; n],
                    });
                    row.cells[col] = cell;
                }
                None => {
                    let mut cells = vec![None; n];
                    cells[col] = cell;
                    rows.insert(
                        (last, 1, col, k),
                        KeptRow {
                            message: None,
                            role: km.role,
                            preview: "[summary written by the replay]".into(),
                            cells,
                        },
                    );
                }
            }
        }
    }
    let at = |r: &Run| {
        r.samples
            .iter()
            .find(|s| s.call == call)
            .map_or(0, |s| s.input_tokens)
    };
    Ok(KeptComparison {
        call,
        agent: session
            .agents
            .get(c.agent)
            .map_or_else(String::new, |a| a.id.clone()),
        labels,
        input_tokens: runs.iter().map(at).collect(),
        rows: rows.into_values().collect(),
    })
}

/// How to replay a session, as a user states it (CLI flags, the app's form): turned into
/// `ReplayOptions` for one session by [`Settings::options`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// heuristic, chars4, o200k, cl100k.
    pub counter: String,
    /// Context window; `None`: the session model's, from the model table.
    pub window: Option<u64>,
    /// Maximum output; `None`: the model's (0 with a window alone).
    pub max_output: Option<u64>,
    pub reserve: u64,
    /// Model table file instead of the user's or the built-in one.
    pub pricing: Option<std::path::PathBuf>,
    pub cache_ttl: replay::CacheTtl,
    /// Calibrate counts on the log's recorded usage.
    pub calibrate: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            counter: crate::tokens::AUTO_COUNTER.to_string(),
            window: None,
            max_output: None,
            reserve: 0,
            pricing: None,
            cache_ttl: replay::CacheTtl::default(),
            calibrate: true,
        }
    }
}

impl Settings {
    /// The replay options for `session`.
    pub fn options(&self, session: &Session) -> Result<ReplayOptions<'static>> {
        let counter = crate::tokens::counter_for(&self.counter, session)?;
        let models = replay::ModelTable::load(self.pricing.as_deref())?;
        let mut opts = ReplayOptions::new(counter.clone());
        opts.budget = match (self.window, self.max_output) {
            (Some(w), m) => Some(replay::Budget {
                context_window: w,
                max_output: m.unwrap_or(0),
                reserve: self.reserve,
            }),
            (None, m) => {
                let l = replay::resolve_limits(session, &models)?;
                // A figure the user gave is not assumed.
                opts.budget_assumed = l
                    .assumed
                    .into_iter()
                    .filter(|a| m.is_none() || !a.starts_with("max output"))
                    .collect();
                Some(replay::Budget {
                    max_output: m.unwrap_or(l.budget.max_output),
                    reserve: self.reserve,
                    ..l.budget
                })
            }
        };
        opts.models = models;
        opts.cache_ttl = self.cache_ttl;
        if self.calibrate {
            opts.calibration = crate::tokens::calibrate_session(session, counter.as_ref());
        }
        Ok(opts)
    }
}

/// Parameters from `name=value` pairs (value as JSON, else text) over a TOML file of
/// `name = value` lines; the pairs win.
pub fn parse_params(pairs: &[String], file: Option<&std::path::Path>) -> Result<serde_json::Value> {
    let mut map = serde_json::Map::new();
    if let Some(f) = file {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?;
        let bad = |line: u32, message: String| Error::Parse {
            path: f.to_path_buf(),
            line,
            message: format!("parameters: {message}"),
        };
        let v: toml::Value = toml::from_str(&text).map_err(|e| {
            // TOML names the first of two equal keys; say which key, and where it comes again.
            if let Some((key, first, again)) = repeated_key(&text) {
                return bad(
                    again,
                    format!("key `{key}` given twice (first at line {first})"),
                );
            }
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1) as u32)
                .unwrap_or(0);
            bad(line, e.message().to_string())
        })?;
        // JSON, which parameters are, holds no nan or inf: refused by name, not read as null.
        if let Some(key) = non_finite(&v, "") {
            let line = key_line(&text, key.rsplit('.').next().unwrap_or(&key)).unwrap_or(0);
            return Err(bad(
                line,
                format!("`{key}` is not a finite number (nan and inf are not parameter values)"),
            ));
        }
        if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(v) {
            map.extend(o);
        }
    }
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| Error::Invalid(format!("--param {p}: expected NAME=VALUE")))?;
        if k.trim().is_empty() {
            return Err(Error::Invalid(format!(
                "--param {p}: the parameter name is empty; expected NAME=VALUE"
            )));
        }
        map.insert(k.trim().to_string(), replay::parse_value(v));
    }
    Ok(serde_json::Value::Object(map))
}

/// The first key of a `name = value` file given twice in one table: (key, first line, line again).
fn repeated_key(text: &str) -> Option<(String, u32, u32)> {
    let mut seen: std::collections::HashMap<(String, String), u32> = Default::default();
    let mut table = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            table = l.to_string();
            continue;
        }
        let Some((k, _)) = l.split_once('=').filter(|_| !l.starts_with('#')) else {
            continue;
        };
        let k = k.trim().trim_matches('"').to_string();
        let n = i as u32 + 1;
        if let Some(&first) = seen.get(&(table.clone(), k.clone())) {
            return Some((k, first, n));
        }
        seen.insert((table.clone(), k), n);
    }
    None
}

/// The dotted name of the first float in `v` that is nan or infinite.
fn non_finite(v: &toml::Value, at: &str) -> Option<String> {
    let name = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        toml::Value::Float(x) if !x.is_finite() => Some(at.to_string()),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| non_finite(v, &name(k))),
        toml::Value::Array(a) => a.iter().find_map(|v| non_finite(v, at)),
        _ => None,
    }
}

/// The line of the first `key = …` in `text`.
fn key_line(text: &str, key: &str) -> Option<u32> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i as u32 + 1)
}

/// A baseline or a plugin strategy by id, with its parameters.
pub fn strategy(
    registry: &crate::plugin_host::Registry,
    id: &str,
    params: serde_json::Value,
) -> Result<StrategySpec> {
    let given = params.as_object().is_some_and(|m| !m.is_empty());
    match id {
        "none" | "recorded" if given => Err(Error::Invalid(format!(
            "the {id} baseline takes no parameters"
        ))),
        "none" => Ok(StrategySpec::None),
        "recorded" => Ok(StrategySpec::Recorded),
        _ => {
            let entry = registry.require(id)?.clone();
            let params = dotted(params, &entry.meta.params);
            Ok(StrategySpec::Plugin { entry, params })
        }
    }
}

/// TOML's dotted keys (`trigger.type = "token_ratio"`) arrive as nested tables
/// (`{"trigger": {"type": …}}`); parameter names are flat (`trigger.type`). A table whose name is
/// not itself a parameter (a map-valued one keeps its table) becomes its dotted names.
pub fn dotted(
    params: serde_json::Value,
    schema: &[ctxlab_plugin_api::ParamSpec],
) -> serde_json::Value {
    fn flatten(
        prefix: &str,
        v: serde_json::Value,
        schema: &[ctxlab_plugin_api::ParamSpec],
        out: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        match v {
            serde_json::Value::Object(o) if !schema.iter().any(|s| s.name == prefix) => {
                for (k, v) in o {
                    flatten(&format!("{prefix}.{k}"), v, schema, out);
                }
            }
            v => {
                out.insert(prefix.to_string(), v);
            }
        }
    }
    match params {
        serde_json::Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, v) in o {
                flatten(&k, v, schema, &mut out);
            }
            serde_json::Value::Object(out)
        }
        other => other,
    }
}
