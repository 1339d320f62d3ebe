//! Parameter sweeps: every combination of the swept values replayed on one or more sessions (in
//! parallel over the cores), the Pareto front of cost against needed-fact recall, the best set
//! under the user's constraints, and why each compaction of the best set fired where it did.
//!
//! Results are deterministic: candidates are numbered in grid order (the last sweep varies
//! fastest), every figure is a sum over sessions in the order given, and ties go to the lower
//! candidate number.

use crate::error::{Error, Result};
use crate::fmt::fmt_tokens;
use crate::model::Session;
use crate::plugin_host::StrategyEntry;
use crate::replay::{
    self, default_threads, parallel, CompactionKind, Metrics, ReplayOptions, Run, StrategySpec,
};
use ctxlab_plugin_api::{EventKind, ThresholdKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};

/// One swept parameter and its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub param: String,
    pub values: Vec<Value>,
}

/// Splits on commas outside brackets and quotes, so list values (`[16,8]`) stay whole.
fn split_values(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

impl Sweep {
    /// `Param=v1,v2,...`.
    pub fn parse(text: &str) -> Result<Sweep> {
        let (k, vs) = text.split_once('=').ok_or_else(|| {
            Error::Invalid(format!("--sweep {text}: expected PARAM=VALUE,VALUE,..."))
        })?;
        let values: Vec<Value> = split_values(vs)
            .into_iter()
            .filter(|v| !v.trim().is_empty())
            .map(replay::parse_value)
            .collect();
        if k.trim().is_empty() || values.is_empty() {
            return Err(Error::Invalid(format!(
                "--sweep {text}: expected PARAM=VALUE,VALUE,..."
            )));
        }
        Ok(Sweep {
            param: k.trim().to_string(),
            values,
        })
    }
}

/// What "best" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Lowest cost in USD (recall breaks ties).
    #[default]
    Cost,
    /// Fewest input tokens.
    Tokens,
    /// Highest needed-fact recall (lower bound; cost breaks ties).
    Recall,
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Objective::Cost => "cost",
            Objective::Tokens => "tokens",
            Objective::Recall => "recall",
        })
    }
}

impl std::str::FromStr for Objective {
    type Err = Error;
    fn from_str(s: &str) -> Result<Objective> {
        match s {
            "cost" => Ok(Objective::Cost),
            "tokens" => Ok(Objective::Tokens),
            "recall" => Ok(Objective::Recall),
            _ => Err(Error::Invalid(format!(
                "objective {s}: expected cost, tokens or recall"
            ))),
        }
    }
}

/// The figures of a candidate over all the sessions it ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub cost_usd: f64,
    pub total_input_tokens: u64,
    pub peak_context: u64,
    pub calls_over_window: u64,
    pub compactions: u64,
    pub lost_tokens: u64,
    pub needed_facts: u64,
    /// Needed-fact recall over every session (lower and upper bound); 1.0 when nothing was needed.
    pub recall_lower: f64,
    pub recall_upper: f64,
    pub pinned_violations: u64,
    pub split_tool_pairs: u64,
}

impl Totals {
    fn of(metrics: &[Metrics]) -> Totals {
        let mut t = Totals::default();
        let (mut lower, mut upper) = (0.0, 0.0);
        for m in metrics {
            t.cost_usd += m.cost.total_usd;
            t.total_input_tokens += m.total_input_tokens;
            t.peak_context = t.peak_context.max(m.peak_context);
            t.calls_over_window += m.calls_over_window;
            t.compactions += m.compactions.values().map(|c| c.count).sum::<u64>();
            t.lost_tokens += m.lost_tokens;
            t.needed_facts += m.recall.needed;
            lower += m.recall.lower.unwrap_or(1.0) * m.recall.needed as f64;
            upper += m.recall.upper.unwrap_or(1.0) * m.recall.needed as f64;
            t.pinned_violations += m.pinned_violations;
            t.split_tool_pairs += m.split_tool_pairs;
        }
        let n = t.needed_facts as f64;
        (t.recall_lower, t.recall_upper) = if n > 0.0 {
            (lower / n, upper / n)
        } else {
            (1.0, 1.0)
        };
        t
    }

    /// The figure a constraint names.
    pub fn get(&self, metric: &str) -> Option<f64> {
        Some(match metric {
            "cost" => self.cost_usd,
            "tokens" => self.total_input_tokens as f64,
            "peak" => self.peak_context as f64,
            "overflow" => self.calls_over_window as f64,
            "compactions" => self.compactions as f64,
            "lost" => self.lost_tokens as f64,
            "recall" => self.recall_lower,
            "recall_upper" => self.recall_upper,
            "pinned" => self.pinned_violations as f64,
            "split" => self.split_tool_pairs as f64,
            _ => return None,
        })
    }
}

/// Names a constraint may use.
pub const CONSTRAINT_METRICS: &[&str] = &[
    "cost",
    "tokens",
    "peak",
    "overflow",
    "compactions",
    "lost",
    "recall",
    "recall_upper",
    "pinned",
    "split",
];

/// `metric OP value`, OP one of `=`, `<=`, `>=`, `<`, `>` (`overflow=0`, `recall>=0.9`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    pub metric: String,
    pub op: String,
    pub value: f64,
}

impl Constraint {
    pub fn parse(text: &str) -> Result<Constraint> {
        let bad = || {
            Error::Invalid(format!(
                "--constraint {text}: expected METRIC OP VALUE with OP one of = <= >= < > and METRIC one of {}",
                CONSTRAINT_METRICS.join(", ")
            ))
        };
        let at = text.find(['=', '<', '>']).ok_or_else(bad)?;
        let metric = text[..at].trim();
        let rest = &text[at..];
        let op = ["<=", ">=", "=", "<", ">"]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .ok_or_else(bad)?;
        let value: f64 = rest[op.len()..]
            .trim()
            .replace(['_', ','], "")
            .parse()
            .map_err(|_| bad())?;
        if !CONSTRAINT_METRICS.contains(&metric) {
            return Err(bad());
        }
        Ok(Constraint {
            metric: metric.to_string(),
            op: op.to_string(),
            value,
        })
    }

    pub fn holds(&self, t: &Totals) -> bool {
        let Some(x) = t.get(&self.metric) else {
            return false;
        };
        let eps = 1e-9 * self.value.abs().max(1.0);
        match self.op.as_str() {
            "=" => (x - self.value).abs() <= eps,
            "<=" => x <= self.value + eps,
            ">=" => x >= self.value - eps,
            "<" => x < self.value,
            ">" => x > self.value,
            _ => false,
        }
    }
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}{}", self.metric, self.op, self.value)
    }
}

/// One parameter set of the grid and how it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Position in the grid.
    pub index: usize,
    /// The swept values only.
    pub swept: serde_json::Map<String, Value>,
    /// The full parameters given to the strategy (base + swept).
    pub params: Value,
    pub totals: Totals,
    /// Metrics per session, in the order the sessions were given.
    pub per_session: Vec<Metrics>,
    /// Every constraint holds (and the run did not fail).
    pub feasible: bool,
    /// Why the strategy refused the set or failed, if it did.
    pub error: Option<String>,
}

/// A compaction of the best set, with the reason the strategy gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionPoint {
    pub session: String,
    pub call: usize,
    pub agent: String,
    pub kind: CompactionKind,
    pub messages: u32,
    pub context_before: u64,
    pub context_after: u64,
    /// "fired at call 87: cumulative 120,431 ≥ CutoverAt 120,000".
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneResult {
    pub strategy: String,
    pub sessions: Vec<String>,
    pub objective: Objective,
    pub constraints: Vec<Constraint>,
    pub candidates: Vec<Candidate>,
    /// Candidates on the front of cost (lower is better) vs recall (higher is better), by cost.
    pub pareto: Vec<usize>,
    /// The best feasible candidate for the objective; `None` when none meets the constraints.
    pub best: Option<usize>,
    /// Every compaction of the best candidate, in call order per session.
    pub explanation: Vec<CompactionPoint>,
}

/// A session to tune on, with how to replay it (its calibration, budget, prices).
pub struct TuneSession<'a> {
    pub session: &'a Session,
    pub opts: ReplayOptions<'a>,
}

/// Called with (candidate index, session index, the run) as each replay finishes (e.g. to store it).
pub type OnRun<'a> = &'a (dyn Fn(usize, usize, &Run) + Sync);

#[derive(Default)]
pub struct TuneOptions<'a> {
    pub objective: Objective,
    pub constraints: Vec<Constraint>,
    /// Worker threads; 0: one per core.
    pub threads: usize,
    /// When set, the sweep stops with `Error::Cancelled`.
    pub cancel: Option<&'a AtomicBool>,
    /// (replays done, replays in all).
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    pub on_run: Option<OnRun<'a>>,
    /// The most parameter sets to run; `None`: [`MAX_CANDIDATES`]. A larger grid is refused
    /// before anything runs, with its size.
    pub max_candidates: Option<usize>,
}

/// Parameter sets `tune` runs without being asked for more (`TuneOptions::max_candidates`).
pub const MAX_CANDIDATES: usize = 10_000;

/// Every combination of the sweeps over a base, the last sweep varying fastest: a set is built
/// from its index when it is run, so the grid itself takes no memory whatever its size.
#[derive(Debug, Clone)]
pub struct Grid {
    base: serde_json::Map<String, Value>,
    sweeps: Vec<Sweep>,
    len: usize,
}

impl Grid {
    pub fn new(base: &Value, sweeps: &[Sweep]) -> Result<Grid> {
        let base = match base {
            Value::Null => serde_json::Map::new(),
            Value::Object(o) => o.clone(),
            other => {
                return Err(Error::Invalid(format!(
                    "parameters must be an object, got {other}"
                )))
            }
        };
        let len = sweeps
            .iter()
            .try_fold(1usize, |n, s| n.checked_mul(s.values.len()))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "the sweeps make more than {} parameter sets ({}); narrow them",
                    usize::MAX,
                    sizes(sweeps)
                ))
            })?;
        Ok(Grid {
            base,
            sweeps: sweeps.to_vec(),
            len,
        })
    }

    /// How many parameter sets.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Refuses a grid of more than `max` sets (`None`: [`MAX_CANDIDATES`]), saying how many.
    pub fn check_size(&self, max: Option<usize>) -> Result<()> {
        let limit = max.unwrap_or(MAX_CANDIDATES);
        if self.len <= limit {
            return Ok(());
        }
        Err(Error::Invalid(format!(
            "the sweeps make {} parameter sets ({}), more than the {} tune runs unless asked: narrow the sweeps, or raise the limit to run them all (--max-candidates {})",
            fmt_tokens(self.len as u64),
            sizes(&self.sweeps),
            fmt_tokens(limit as u64),
            self.len
        )))
    }

    /// Set `index`: the swept values alone, and the full parameters (base + swept).
    pub fn get(&self, index: usize) -> (serde_json::Map<String, Value>, Value) {
        let mut picks = vec![0; self.sweeps.len()];
        let mut rest = index;
        for (k, s) in self.sweeps.iter().enumerate().rev() {
            picks[k] = rest % s.values.len();
            rest /= s.values.len();
        }
        let (mut swept, mut params) = (serde_json::Map::new(), self.base.clone());
        for (s, &i) in self.sweeps.iter().zip(&picks) {
            swept.insert(s.param.clone(), s.values[i].clone());
            params.insert(s.param.clone(), s.values[i].clone());
        }
        (swept, Value::Object(params))
    }
}

/// `3 × 1,000 × 20` for a message.
fn sizes(sweeps: &[Sweep]) -> String {
    sweeps
        .iter()
        .map(|s| format!("{} {}", fmt_tokens(s.values.len() as u64), s.param))
        .collect::<Vec<_>>()
        .join(" × ")
}

/// Every combination of the sweeps over `base`, the last sweep varying fastest, built whole
/// (for small grids; `run` builds each set from its index instead, see [`Grid`]).
pub fn grid(
    base: &Value,
    sweeps: &[Sweep],
) -> Result<Vec<(serde_json::Map<String, Value>, Value)>> {
    let g = Grid::new(base, sweeps)?;
    Ok((0..g.len()).map(|i| g.get(i)).collect())
}

/// Indexes of the points no other point beats on both cost (lower) and recall (higher), sorted by
/// cost; of identical points only the first is kept.
pub fn pareto_front(points: &[(usize, f64, f64)]) -> Vec<usize> {
    let mut sorted: Vec<&(usize, f64, f64)> = points.iter().collect();
    // By cost, then best recall first, then index: one pass keeps each strictly better recall.
    sorted.sort_by(|a, b| {
        a.1.total_cmp(&b.1)
            .then(b.2.total_cmp(&a.2))
            .then(a.0.cmp(&b.0))
    });
    let mut front = Vec::new();
    let mut best_recall = f64::NEG_INFINITY;
    for p in sorted {
        if p.2 > best_recall {
            front.push(p.0);
            best_recall = p.2;
        }
    }
    front
}

fn better(objective: Objective, a: &Totals, b: &Totals) -> std::cmp::Ordering {
    match objective {
        Objective::Cost => a
            .cost_usd
            .total_cmp(&b.cost_usd)
            .then(b.recall_lower.total_cmp(&a.recall_lower)),
        Objective::Tokens => a
            .total_input_tokens
            .cmp(&b.total_input_tokens)
            .then(a.cost_usd.total_cmp(&b.cost_usd)),
        Objective::Recall => b
            .recall_lower
            .total_cmp(&a.recall_lower)
            .then(a.cost_usd.total_cmp(&b.cost_usd)),
    }
}

/// Sweeps `entry` over the grid on every session.
pub fn run(
    sessions: &[TuneSession<'_>],
    entry: &StrategyEntry,
    base: &Value,
    sweeps: &[Sweep],
    opts: &TuneOptions<'_>,
) -> Result<TuneResult> {
    if sessions.is_empty() {
        return Err(Error::Invalid("tune needs at least one session".into()));
    }
    for s in sweeps {
        if !entry.meta.params.iter().any(|p| p.name == s.param) {
            let known: Vec<&str> = entry.meta.params.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::Invalid(format!(
                "strategy {} has no parameter {}; its parameters: {}",
                entry.meta.id,
                s.param,
                known.join(", ")
            )));
        }
    }
    let grid = Grid::new(base, sweeps)?;
    grid.check_size(opts.max_candidates)?;
    // Every candidate replays the same sessions: count and scan each once.
    let prepared: Vec<replay::Prepared> = sessions
        .iter()
        .map(|t| replay::Prepared::new(t.session, &*t.opts.counter))
        .collect();
    let threads = if opts.threads == 0 {
        default_threads()
    } else {
        opts.threads
    };
    // The grid runs in chunks: the jobs and results in flight stay bounded by the chunk, each set
    // is built from its index when its chunk starts, and only each candidate's figures are kept.
    let total_jobs = grid.len().saturating_mul(sessions.len());
    let chunk = (threads * 32).max(1);
    let mut candidates: Vec<Candidate> = Vec::with_capacity(grid.len().min(chunk));
    for first in (0..grid.len()).step_by(chunk) {
        let sets: Vec<(serde_json::Map<String, Value>, Value)> = (first
            ..grid.len().min(first + chunk))
            .map(|i| grid.get(i))
            .collect();
        let jobs: Vec<(usize, usize)> = (0..sets.len())
            .flat_map(|c| (0..sessions.len()).map(move |s| (c, s)))
            .collect();
        let done_before = first * sessions.len();
        let progress = |done: usize, _: usize| {
            if let Some(f) = opts.progress {
                f(done_before + done, total_jobs);
            }
        };
        let results = parallel(
            jobs,
            threads,
            |(c, s)| {
                if opts.cancel.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    return Err(Error::Cancelled);
                }
                let t = &sessions[s];
                let spec = StrategySpec::Plugin {
                    entry: entry.clone(),
                    params: sets[c].1.clone(),
                };
                let mut o = t.opts.side_by_side();
                o.cancel = opts.cancel.or(t.opts.cancel);
                let run = replay::run_prepared(t.session, &prepared[s], spec, &o)?;
                if let Some(f) = opts.on_run {
                    f(first + c, s, &run);
                }
                Ok(run.metrics)
            },
            Some(&progress),
        );
        let mut results = results.into_iter();
        for (k, (swept, params)) in sets.into_iter().enumerate() {
            let mut per_session = Vec::with_capacity(sessions.len());
            let mut error = None;
            for _ in 0..sessions.len() {
                match results.next() {
                    Some(Ok(m)) => per_session.push(m),
                    Some(Err(Error::Cancelled)) => return Err(Error::Cancelled),
                    Some(Err(e)) => error = error.or(Some(e.to_string())),
                    None => error = error.or(Some("the replay did not finish".into())),
                }
            }
            let totals = Totals::of(&per_session);
            let feasible = error.is_none() && opts.constraints.iter().all(|c| c.holds(&totals));
            candidates.push(Candidate {
                index: first + k,
                swept,
                params,
                totals,
                per_session,
                feasible,
                error,
            });
        }
    }
    let points: Vec<(usize, f64, f64)> = candidates
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| (c.index, c.totals.cost_usd, c.totals.recall_lower))
        .collect();
    let pareto = pareto_front(&points);
    let best = candidates
        .iter()
        .filter(|c| c.feasible)
        .min_by(|a, b| better(opts.objective, &a.totals, &b.totals).then(a.index.cmp(&b.index)))
        .map(|c| c.index);
    let explanation = match best {
        Some(b) => explain(sessions, &prepared, entry, &candidates[b].params)?,
        None => Vec::new(),
    };
    Ok(TuneResult {
        strategy: entry.meta.id.clone(),
        sessions: sessions.iter().map(|s| s.session.id.clone()).collect(),
        objective: opts.objective,
        constraints: opts.constraints.clone(),
        candidates,
        pareto,
        best,
        explanation,
    })
}

/// Replays the chosen set again (the sweep keeps only metrics) and says why each compaction fired.
fn explain(
    sessions: &[TuneSession<'_>],
    prepared: &[replay::Prepared],
    entry: &StrategyEntry,
    params: &Value,
) -> Result<Vec<CompactionPoint>> {
    let mut out = Vec::new();
    for (t, p) in sessions.iter().zip(prepared) {
        let spec = StrategySpec::Plugin {
            entry: entry.clone(),
            params: params.clone(),
        };
        let run = replay::run_prepared(t.session, p, spec, &t.opts.side_by_side())?;
        out.extend(compaction_points(&run));
    }
    Ok(out)
}

fn kind_name(kind: CompactionKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Each compaction of a run with its reason: the strategy's own events at that call, else the
/// threshold the context had crossed.
pub fn compaction_points(run: &Run) -> Vec<CompactionPoint> {
    // Several edits of one decision (mask 3 results, then summarize) are one compaction point.
    let mut points: Vec<CompactionPoint> = Vec::new();
    for c in &run.compactions {
        if let Some(p) = points
            .last_mut()
            .filter(|p| p.call == c.call && run.agents.get(c.agent).is_some_and(|a| *a == p.agent))
        {
            p.messages += c.messages;
            p.context_after = c.context_after;
            if p.kind != c.kind {
                p.why = p.why.replacen(
                    &format!(": {} ", kind_name(p.kind)),
                    &format!(": {} + {} ", kind_name(p.kind), kind_name(c.kind)),
                    1,
                );
            }
            continue;
        }
        let reasons: Vec<&str> = run
            .events
            .iter()
            .filter(|e| e.call == c.call && e.agent == c.agent && e.kind != EventKind::Note)
            .map(|e| e.message.as_str())
            .filter(|m| !m.is_empty())
            .collect();
        let reason = if reasons.is_empty() {
            threshold_reason(run, c.context_before)
        } else {
            reasons.join("; ")
        };
        points.push(CompactionPoint {
            session: run.session.clone(),
            call: c.call,
            agent: run.agents.get(c.agent).cloned().unwrap_or_default(),
            kind: c.kind,
            messages: c.messages,
            context_before: c.context_before,
            context_after: c.context_after,
            why: format!(
                "fired at call {}: {} {} message{}, context {} → {} tokens{}",
                fmt_tokens(c.call as u64),
                kind_name(c.kind),
                fmt_tokens(c.messages as u64),
                if c.messages == 1 { "" } else { "s" },
                fmt_tokens(c.context_before),
                fmt_tokens(c.context_after),
                if reason.is_empty() {
                    String::new()
                } else {
                    format!(" — {reason}")
                }
            ),
        });
    }
    points
}

/// The highest occupancy threshold the context had reached, in words.
fn threshold_reason(run: &Run, context: u64) -> String {
    run.thresholds
        .iter()
        .filter(|t| t.line == ctxlab_plugin_api::Line::Occupancy && context >= t.tokens)
        .filter(|t| matches!(t.kind, ThresholdKind::Trigger | ThresholdKind::Cutover))
        .max_by_key(|t| t.tokens)
        .map(|t| {
            format!(
                "context {} ≥ {} {}",
                fmt_tokens(context),
                t.label,
                fmt_tokens(t.tokens)
            )
        })
        .unwrap_or_default()
}
