//! The replay engine: rebuilds each agent's context call by call and replays it through a
//! strategy (a baseline or a plugin), validating every decision and measuring the run.
//!
//! Code map:
//! - `feed`: the walk over a session's calls that says what reached each agent, and when the log
//!   compacted it; the recorded context and every replay start from it;
//! - `context`: one agent's working context, the host-owned view array and its indexes;
//! - `validate`: host-side checks of a decision and the effect of each edit;
//! - `summarizer`: the simulated summarizer;
//! - `facts`: fact extraction for needed-fact recall;
//! - `pricing`: the model table (windows, prices) from `data/models.toml`;
//! - `metrics`: every figure of a run, and the prompt-cache model;
//! - `series`: the per-call series as CSV;
//! - `engine`: the loop;
//! - `composition`: what fills each call's recorded context, by kind.

pub mod composition;
mod context;
mod engine;
mod facts;
mod feed;
pub mod metrics;
mod pool;
mod prepared;
pub mod pricing;
mod series;
mod summarizer;
mod validate;

pub use composition::{composition, CallComposition, Composition, Kind, Slice};
pub use metrics::{
    unpriced_notice, Compaction, CompactionKind, CompactionStats, Cost, Metrics, Recall,
    RecordedMetrics, Sample, Unpriced,
};
pub use pool::default_threads;
pub(crate) use pool::parallel;
pub use prepared::Prepared;
pub use pricing::{CacheTtl, Lookup, MatchKind, ModelInfo, ModelTable, Price};
pub use series::{write_series_csv, SERIES_COLUMNS};
pub use summarizer::SummarizerModel;
pub use validate::{cut_pieces, MAX_OPS};

use crate::error::{Error, Result};
use crate::fmt::fmt_tokens;
use crate::model::{AgentIdx, MsgIdx, Role, Session};
use crate::plugin_host::StrategyEntry;
use crate::tokens::{Calibration, TokenCounter};
use ctxlab_plugin_api::{EventKind, Threshold};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Ids of the strategies built into the engine.
pub const BASELINES: &[&str] = &["none", "recorded"];

/// The budget of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub context_window: u64,
    pub max_output: u64,
    /// Tokens a strategy keeps free besides the output (its safety margin).
    pub reserve: u64,
}

impl Budget {
    /// The most a call can send: the window less the output the request asks for (the provider
    /// keeps room for `max_output` inside the window). `reserve`, a strategy's own margin, is not
    /// part of it.
    pub fn input_limit(&self) -> u64 {
        self.context_window.saturating_sub(self.max_output)
    }

    /// A call of `input` tokens fits the budget: `input + max_output ≤ context_window`.
    pub fn fits(&self, input: u64) -> bool {
        input <= self.input_limit()
    }

    /// The one definition of "over the window" (`Sample::over_window`, docs/metrics.md): the call
    /// does not fit (`fits`), so it could not have been sent.
    pub fn over_window(&self, input: u64) -> bool {
        !self.fits(input)
    }
}

/// Context windows models are offered with, smallest first: a model whose window neither the log
/// nor the table gives is assumed to run on the smallest that holds the largest context its log
/// recorded. By provider where the name tells it (`standard_windows`).
pub const STANDARD_WINDOWS: &[u64] = &[
    8_192, 16_384, 32_768, 65_536, 128_000, 200_000, 1_000_000, 2_000_000,
];

/// The standard windows of the model's provider, told by its name (`claude-…` Anthropic,
/// `gpt-…`/`o<digit>…` OpenAI, `gemini-…` Google), else `STANDARD_WINDOWS`; with the provider's
/// name for the budget note.
pub fn standard_windows(model: Option<&str>) -> (&'static [u64], &'static str) {
    let bare = model
        .map(|m| m.rsplit('/').next().unwrap_or(m).to_ascii_lowercase())
        .unwrap_or_default();
    if bare.starts_with("claude") {
        (&[200_000, 1_000_000], "Anthropic ")
    } else if bare.starts_with("gpt-")
        || (bare.starts_with('o') && bare[1..].starts_with(|c: char| c.is_ascii_digit()))
    {
        (&[128_000, 200_000, 400_000, 1_050_000], "OpenAI ")
    } else if bare.starts_with("gemini") {
        (&[1_048_576, 2_097_152], "Google ")
    } else {
        (STANDARD_WINDOWS, "")
    }
}

/// Maximum output limits models are offered with, smallest first (`STANDARD_WINDOWS`' twin).
pub const STANDARD_MAX_OUTPUTS: &[u64] = &[4_096, 8_192, 16_384, 32_000, 64_000, 128_000];

/// A run's budget and, for each figure the table did not give, what was assumed and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub budget: Budget,
    /// One sentence per assumed figure; empty when the model table gave both.
    pub assumed: Vec<String>,
}

/// What to replay a session through.
#[derive(Debug, Clone)]
pub enum StrategySpec {
    /// No compaction: the full history at every call (it may overflow the window).
    None,
    /// The log's own compactions, applied where it recorded them.
    Recorded,
    /// A plugin strategy with these parameters (a JSON object; defaults fill the rest).
    Plugin {
        entry: StrategyEntry,
        params: serde_json::Value,
    },
}

impl StrategySpec {
    /// `none`, `recorded`, or the plugin strategy's id.
    pub fn id(&self) -> &str {
        match self {
            StrategySpec::None => "none",
            StrategySpec::Recorded => "recorded",
            StrategySpec::Plugin { entry, .. } => &entry.meta.id,
        }
    }
}

/// How to run a replay. `ReplayOptions::new(counter)` gives the defaults.
pub struct ReplayOptions<'a> {
    pub counter: Arc<dyn TokenCounter>,
    /// `None`: from the model table, by the session's model.
    pub budget: Option<Budget>,
    /// Per-agent overhead and ratio (`tokens::calibrate_session`); `None`: counts taken as they are.
    pub calibration: Option<Calibration>,
    pub summarizer: SummarizerModel,
    /// With `budget`: what it assumed and from where (`Limits::assumed`), reported with the run.
    pub budget_assumed: Vec<String>,
    /// Windows and prices.
    pub models: ModelTable,
    pub cache_ttl: CacheTtl,
    /// Stop after this call (index into `Session::calls`) and report what it kept.
    pub stop_at_call: Option<usize>,
    /// Checked every 1,024 calls; when set the run ends with `Error::Cancelled`.
    pub cancel: Option<&'a AtomicBool>,
    /// Called with (calls done, calls in the session) every 1,024 calls and at the end.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Record every call's decision, message by message (`Run::decisions`): for differential
    /// tests against a modelled system's own code. Costs O(context) per call.
    pub record_decisions: bool,
}

impl<'a> ReplayOptions<'a> {
    /// A copy for one of several replays run side by side (compare, tune): the same counter,
    /// budget, calibration, prices and cancel flag; progress is reported per replay by the caller.
    pub fn side_by_side(&self) -> ReplayOptions<'a> {
        ReplayOptions {
            counter: self.counter.clone(),
            budget: self.budget,
            budget_assumed: self.budget_assumed.clone(),
            calibration: self.calibration.clone(),
            summarizer: self.summarizer,
            models: self.models.clone(),
            cache_ttl: self.cache_ttl,
            stop_at_call: self.stop_at_call,
            cancel: self.cancel,
            progress: None,
            record_decisions: self.record_decisions,
        }
    }

    pub fn new(counter: Arc<dyn TokenCounter>) -> ReplayOptions<'a> {
        ReplayOptions {
            counter,
            budget: None,
            calibration: None,
            summarizer: SummarizerModel::default(),
            budget_assumed: Vec::new(),
            models: ModelTable::builtin(),
            cache_ttl: CacheTtl::default(),
            stop_at_call: None,
            cancel: None,
            progress: None,
            record_decisions: false,
        }
    }
}

/// Something that happened at a call: a strategy's event, or a compaction the engine applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    pub call: usize,
    pub agent: AgentIdx,
    pub kind: EventKind,
    pub code: String,
    pub message: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// One value of a strategy's named series (LibreChat's pressure, phi-core's own estimate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugePoint {
    pub call: usize,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptState {
    Verbatim,
    /// Truncated, masked or offloaded (by this call or earlier).
    Edited,
    /// A summary standing for `replaces` messages (earlier ones: 0).
    Summary,
    /// In the history but not sent: dropped by this call's decision.
    Dropped,
}

/// What a strategy decided at one call, message by message (`ReplayOptions::record_decisions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallDecision {
    pub call: usize,
    pub agent: AgentIdx,
    /// The call's facts as the strategy was given them (`CallView`).
    pub overhead_tokens: u64,
    pub prev_recorded_input_tokens: u64,
    pub new_messages: u64,
    pub new_request: bool,
    /// The agent's working context as the strategy saw it, in order, and what became of each.
    pub context: Vec<DecidedMessage>,
}

/// One message of a recorded decision. `text` and `tools` are given the first time a message
/// (by `id`) appears in the run's decisions, and omitted after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecidedMessage {
    /// The replay's stable id of the message (`MessageView::id`).
    pub id: u64,
    /// The session's message; `None` for a summary the replay wrote.
    pub message: Option<MsgIdx>,
    pub role: Role,
    pub summary: bool,
    /// Tokens and characters as the strategy saw it.
    pub tokens: u64,
    pub chars: u64,
    /// `verbatim`, `edited` (this call's truncation / mask / offload), `dropped`, or `summary`
    /// (replaced by a summary this call).
    pub state: KeptState,
    /// Tokens and characters sent (edited: after the edit; dropped or summarized: 0).
    pub sent_tokens: u64,
    pub sent_chars: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<DecidedTool>>,
}

/// A tool call or result of a [`DecidedMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecidedTool {
    pub id: String,
    pub name: String,
    pub body: String,
    pub result: bool,
}

/// One message of the context a call sent (`Run::kept`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptMessage {
    /// The session's message; `None` for a summary the replay wrote.
    pub message: Option<MsgIdx>,
    pub role: Role,
    pub tokens: u64,
    pub state: KeptState,
    pub replaces: u32,
}

/// A finished replay: everything the CLI, the charts and the library store need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// `none`, `recorded` or the plugin strategy's id.
    pub strategy: String,
    /// `name version` of the plugin.
    pub plugin: Option<String>,
    pub params: serde_json::Value,
    pub session: String,
    pub counter: String,
    pub budget: Budget,
    /// Budget figures the model table did not give: what was assumed, and from where.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_assumed: Vec<String>,
    /// The model the budget and prices were taken from.
    pub model: Option<String>,
    pub calibrated: bool,
    /// The session records output tokens only (`Session::estimate_only`): `recorded` holds no
    /// input figures to compare with.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimate_only: bool,
    pub summarizer: SummarizerModel,
    pub cache_ttl: CacheTtl,
    /// Agent ids, by `AgentIdx`.
    pub agents: Vec<String>,
    pub samples: Vec<Sample>,
    pub compactions: Vec<Compaction>,
    pub events: Vec<RunEvent>,
    pub gauges: BTreeMap<String, Vec<GaugePoint>>,
    pub thresholds: Vec<Threshold>,
    pub metrics: Metrics,
    /// The log's own figures for the calls that recorded usage, beside the replay's.
    pub recorded: Option<RecordedMetrics>,
    /// With `stop_at_call`: the call, and what its context held.
    pub stopped_at: Option<usize>,
    pub kept: Vec<KeptMessage>,
    /// With `record_decisions`: every call's decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<CallDecision>,
}

/// The session's model: the first one a call or agent names.
pub fn session_model(session: &Session) -> Option<&str> {
    session
        .calls
        .iter()
        .find_map(|c| c.model.as_deref())
        .or_else(|| session.agents.iter().find_map(|a| a.model.as_deref()))
}

/// The run's budget: the one given, else the session model's (`resolve_limits`).
pub fn resolve_budget(
    session: &Session,
    given: Option<Budget>,
    models: &ModelTable,
) -> Result<Budget> {
    match given {
        Some(b) if b.context_window == 0 => Err(Error::Invalid(
            "the context window must be more than 0 tokens".into(),
        )),
        Some(b) => Ok(b),
        None => resolve_limits(session, models).map(|l| l.budget),
    }
}

/// The smallest of `standard` that holds `tokens` (the largest when none does).
fn smallest_holding(standard: &[u64], tokens: u64) -> u64 {
    standard
        .iter()
        .copied()
        .find(|&w| w >= tokens)
        .unwrap_or(standard[standard.len() - 1])
}

/// The budget of the session, each figure from the first source that has it:
/// - the context window the log records (`Session::context_window`), else the model table's
///   window for the session's model, else assumed: the smallest standard window of the model's
///   provider (`standard_windows`) that holds the largest context the log recorded plus the output
///   limit its requests asked for; a table window smaller than what the log recorded is replaced
///   the same way (the log proves the larger window);
/// - the maximum output the log's requests asked for (`Session::max_output`), else 0 when the
///   window came from the log (Codex's `model_context_window` is already the input budget: the
///   model's input limit × its effective percent, the output set aside), else the model table's,
///   else assumed: the smallest standard limit (`STANDARD_MAX_OUTPUTS`) that holds the largest
///   recorded output;
/// - then the log is held to the one definition of "over the window" (`Budget::over_window`):
///   every call it recorded was sent, so a maximum output the log did not record is lowered
///   until its largest recorded context fits (`window − context`), and a contradiction that
///   remains is reported (`budget_contradiction`).
/// `Limits::assumed` says which figures were taken from the log, assumed or lowered, and why. An
/// error only when the log records no usage to assume the window from.
pub fn resolve_limits(session: &Session, models: &ModelTable) -> Result<Limits> {
    let name = session_model(session);
    let entry = name.and_then(|m| models.find(m));
    let why = match (name, entry) {
        (None, _) => "the log names no model".to_string(),
        (Some(m), None) => format!(
            "{m} is not in the model table{}",
            models
                .path
                .as_ref()
                .map(|p| format!(" ({})", p.display()))
                .unwrap_or_default()
        ),
        (Some(m), Some(_)) => format!("the model table gives none for {m}"),
    };
    let usage = || session.calls.iter().filter_map(|c| c.usage);
    let peak = usage().map(|u| u.context_tokens()).max().unwrap_or(0);
    let mut assumed = Vec::new();
    let table_window = entry.and_then(|e| e.context_window);
    let table_output = entry.and_then(|e| e.max_output);
    // The output limit the log itself records, or implies.
    let mut output_note = None;
    let log_output = match (session.max_output, session.context_window) {
        (Some(m), _) => {
            output_note = Some(format!(
                "max output {} from the log's requests{}",
                fmt_tokens(m),
                match table_output {
                    Some(t) if t != m => format!(" (the model table gives {})", fmt_tokens(t)),
                    _ => String::new(),
                }
            ));
            Some(m)
        }
        (None, Some(w)) => {
            output_note = Some(format!(
                "max output 0: the log's window, {}, is the input the agent may send (its output already set aside)",
                fmt_tokens(w)
            ));
            Some(0)
        }
        (None, None) => None,
    };
    let assume_window = |what: String, assumed: &mut Vec<String>| -> u64 {
        let need = peak + log_output.unwrap_or(0);
        let (standard, provider) = standard_windows(name);
        let w = smallest_holding(standard, need);
        assumed.push(format!(
            "context window {} assumed: {what}; it is the smallest standard {provider}window that holds the largest recorded context, {} tokens{}",
            fmt_tokens(w),
            fmt_tokens(peak),
            match log_output {
                Some(m) if m > 0 => format!(", with the {} output tokens its requests asked for", fmt_tokens(m)),
                _ => String::new(),
            }
        ));
        w
    };
    let context_window = match (session.context_window, table_window) {
        (Some(w), t) => {
            assumed.push(format!(
                "context window {} from the log{}",
                fmt_tokens(w),
                match t {
                    Some(t) if t != w => format!(" (the model table gives {})", fmt_tokens(t)),
                    _ => String::new(),
                }
            ));
            w
        }
        (None, Some(w)) if w < peak => assume_window(
            format!(
                "the log recorded a context of {} tokens, above the model table's {} for {}",
                fmt_tokens(peak),
                fmt_tokens(w),
                name.unwrap_or("its model")
            ),
            &mut assumed,
        ),
        (None, Some(w)) => match compacted_below(session, name, w) {
            Some((smaller, at)) => {
                assumed.push(format!(
                    "context window {} from the log: its automatic compaction at {} tokens fired below that window, and no agent compacts on its own below half of the model table's {} for {}",
                    fmt_tokens(smaller),
                    fmt_tokens(at),
                    fmt_tokens(w),
                    name.unwrap_or("its model")
                ));
                smaller
            }
            None => w,
        },
        (None, None) => {
            if peak == 0 {
                return Err(Error::Invalid(format!(
                    "the context window is unknown ({why}) and the log records no usage to assume it from; pass the budget (--window N --max-output N) or add the model to models.toml"
                )));
            }
            assume_window(why.clone(), &mut assumed)
        }
    };
    assumed.extend(output_note);
    let max_output = match (log_output, table_output) {
        (Some(m), _) => m,
        (None, Some(m)) => m,
        (None, None) => {
            let peak_out = usage().map(|u| u.output).max().unwrap_or(0);
            let m = smallest_holding(STANDARD_MAX_OUTPUTS, peak_out).min(context_window);
            assumed.push(format!(
                "max output {} assumed: {why}; it is the smallest standard limit that holds the largest recorded output, {} tokens",
                fmt_tokens(m),
                fmt_tokens(peak_out)
            ));
            m
        }
    };
    let mut budget = Budget {
        context_window,
        max_output,
        reserve: 0,
    };
    // The log's calls were sent: a limit it did not record gives way to them.
    if log_output.is_none() && !budget.fits(peak) {
        let lowered = context_window.saturating_sub(peak);
        assumed.push(format!(
            "max output lowered from {} to {}: the log's largest call sent {} tokens of context within the {} window, so it asked for at most {}",
            fmt_tokens(max_output),
            fmt_tokens(lowered),
            fmt_tokens(peak),
            fmt_tokens(context_window),
            fmt_tokens(lowered)
        ));
        budget.max_output = lowered;
    }
    assumed.extend(budget_contradiction(session, &budget));
    Ok(Limits { budget, assumed })
}

/// The window an agent really ran with when its log shows it smaller than the model table's `w`:
/// an automatic compaction the log recorded (not inferred) fires near the window the agent had
/// (Claude Code at window − 33k, Codex at 90 %, pi at window − 16k), so one at under half of `w`
/// means the agent ran a smaller window (Claude Code runs Opus 4.6 / 4.7 on 200,000 unless asked
/// for 1M, which the model table gives). Returns the smallest standard window of the model's
/// provider that holds the largest such compaction and every recorded context, with that
/// compaction's size; `None` when the log shows no such thing.
fn compacted_below(session: &Session, model: Option<&str>, w: u64) -> Option<(u64, u64)> {
    let at = session
        .compactions
        .iter()
        .filter(|c| !c.inferred && c.trigger == "auto")
        .filter_map(|c| c.pre_tokens)
        .max()?;
    if at.saturating_mul(2) >= w {
        return None;
    }
    let peak = session
        .calls
        .iter()
        .filter_map(|c| c.usage.map(|u| u.context_tokens()))
        .max()
        .unwrap_or(0);
    let smaller = smallest_holding(standard_windows(model).0, at.max(peak) + 1);
    (smaller < w).then_some((smaller, at))
}

/// A warning when the log contradicts `budget`: calls it recorded (so they were sent) whose
/// context is over the window by `Budget::over_window`. The `recorded` baseline shows them over
/// the window; `None` when every recorded call fits.
pub fn budget_contradiction(session: &Session, budget: &Budget) -> Option<String> {
    let over: Vec<u64> = session
        .calls
        .iter()
        .filter_map(|c| c.usage.map(|u| u.context_tokens()))
        .filter(|&t| !budget.fits(t))
        .collect();
    let peak = over.iter().copied().max()?;
    Some(format!(
        "warning: the log contradicts this budget: {} recorded call{} sent more than the {} tokens it leaves for input (window {} − max output {}), up to {} tokens; the recorded baseline shows {} over the window",
        over.len(),
        if over.len() == 1 { "" } else { "s" },
        fmt_tokens(budget.input_limit()),
        fmt_tokens(budget.context_window),
        fmt_tokens(budget.max_output),
        fmt_tokens(peak),
        if over.len() == 1 { "it" } else { "them" }
    ))
}

/// Replays `session` through `strategy`. Replaying one session several times (several strategies,
/// a sweep), prepare it once and use `run_prepared`.
pub fn run(session: &Session, strategy: StrategySpec, opts: &ReplayOptions<'_>) -> Result<Run> {
    check_replayable(session)?;
    let prepared = Prepared::new(session, &*opts.counter);
    run_prepared(session, &prepared, strategy, opts)
}

fn check_replayable(session: &Session) -> Result<()> {
    if session.usage_only && !session.calls.is_empty() {
        return Err(Error::Invalid(format!(
            "session {} holds token counts but no message text (a usage-only log): it can be charted but not replayed",
            session.id
        )));
    }
    Ok(())
}

/// Replays `session` through `strategy`, with the session's messages counted and scanned
/// beforehand by `Prepared::new(session, counter)` with the counter of `opts`.
pub fn run_prepared(
    session: &Session,
    prepared: &Prepared,
    strategy: StrategySpec,
    opts: &ReplayOptions<'_>,
) -> Result<Run> {
    check_replayable(session)?;
    prepared.check_for_run(session, &*opts.counter)?;
    let (budget, budget_assumed) = match opts.budget {
        Some(_) => {
            let b = resolve_budget(session, opts.budget, &opts.models)?;
            let mut notes = opts.budget_assumed.clone();
            // A budget given (or adjusted) by the caller: say when the log contradicts it.
            if let Some(w) = budget_contradiction(session, &b) {
                notes.retain(|n| !n.starts_with("warning: the log contradicts"));
                notes.push(w);
            }
            (b, notes)
        }
        None => {
            let l = resolve_limits(session, &opts.models)?;
            (l.budget, l.assumed)
        }
    };
    let (label, plugin, params, mut instance) = match &strategy {
        StrategySpec::None | StrategySpec::Recorded => (
            strategy.id().to_string(),
            None,
            serde_json::Value::Null,
            None,
        ),
        StrategySpec::Plugin { entry, params } => {
            let m = &entry.meta;
            (
                format!("{} ({})", m.id, m.plugin),
                Some(format!("{} {}", m.plugin, m.plugin_version)),
                params.clone(),
                Some(entry.create(params)?),
            )
        }
    };
    let thresholds = instance
        .as_mut()
        .map(|i| i.thresholds())
        .unwrap_or_default();
    let recorded = matches!(strategy, StrategySpec::Recorded);
    let engine = engine::Engine::new(
        session,
        prepared,
        engine::Setup::of(opts),
        label,
        recorded,
        budget,
    );
    let (samples, compactions, events, gauges, metrics, recorded_metrics, kept, decisions, _) =
        engine.run(instance)?;
    Ok(Run {
        strategy: strategy.id().to_string(),
        plugin,
        params,
        session: session.id.clone(),
        counter: opts.counter.name().to_string(),
        budget,
        budget_assumed,
        model: session_model(session).map(String::from),
        calibrated: opts.calibration.is_some(),
        estimate_only: session.estimate_only,
        summarizer: opts.summarizer,
        cache_ttl: opts.cache_ttl,
        agents: session.agents.iter().map(|a| a.id.clone()).collect(),
        samples,
        compactions,
        events,
        gauges,
        thresholds,
        metrics,
        recorded: recorded_metrics,
        stopped_at: opts.stop_at_call.filter(|&c| c < session.calls.len()),
        kept: kept.unwrap_or_default(),
        decisions,
    })
}

/// One call's context as the log recorded it, uncalibrated: the tokens the counter estimated and
/// those known from the log (recorded sizes, hidden content; `tokens::message_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawContext {
    pub counted: u64,
    pub known: u64,
}

impl RawContext {
    pub fn total(&self) -> u64 {
        self.counted + self.known
    }
}

/// A bare count (`recorded_raw_tokens`): all of it counted, nothing known. Callers that kept
/// only totals calibrate as before recorded sizes existed.
impl From<u64> for RawContext {
    fn from(counted: u64) -> RawContext {
        RawContext { counted, known: 0 }
    }
}

/// Raw tokens (no overhead, no calibration) of each call's context as the log recorded it:
/// the agent's messages among `messages[..context_end]`, with the log's own compactions applied
/// (the history before the boundary replaced by the summary and the messages kept verbatim).
/// It is the `raw_tokens` series of the `recorded` baseline, uncalibrated: counted tokens plus
/// those known from the log (`recorded_contexts_prepared` keeps them apart, as calibration needs).
/// `None` for every call of a usage-only session: there is no text to count.
pub fn recorded_raw_tokens(session: &Session, counter: &dyn TokenCounter) -> Vec<Option<u64>> {
    if session.usage_only {
        return vec![None; session.calls.len()];
    }
    recorded_raw_tokens_prepared(session, &Prepared::counts(session, counter), counter)
        .unwrap_or_else(|_| vec![None; session.calls.len()])
}

/// `recorded_raw_tokens` of a session already prepared with `counter` (`Prepared::counts` is
/// enough); refuses a `Prepared` made from another session or with another counter.
pub fn recorded_raw_tokens_prepared(
    session: &Session,
    prepared: &Prepared,
    counter: &dyn TokenCounter,
) -> Result<Vec<Option<u64>>> {
    Ok(recorded_contexts_prepared(session, prepared, counter)?
        .into_iter()
        .map(|c| c.map(|c| c.total()))
        .collect())
}

/// Each call's recorded context, counted and known tokens apart (what calibration fits:
/// `tokens::calibrate::samples`); `None` as in `recorded_raw_tokens`.
pub fn recorded_contexts(session: &Session, counter: &dyn TokenCounter) -> Vec<Option<RawContext>> {
    if session.usage_only {
        return vec![None; session.calls.len()];
    }
    recorded_contexts_prepared(session, &Prepared::counts(session, counter), counter)
        .unwrap_or_else(|_| vec![None; session.calls.len()])
}

/// `recorded_contexts` of a session already prepared with `counter`.
pub fn recorded_contexts_prepared(
    session: &Session,
    prepared: &Prepared,
    counter: &dyn TokenCounter,
) -> Result<Vec<Option<RawContext>>> {
    prepared.check(session, counter)?;
    if session.usage_only {
        return Ok(vec![None; session.calls.len()]);
    }
    // The baseline asks no strategy and cancels nothing: the only failure is a call naming an
    // agent the session lacks, whose context cannot be counted.
    Ok(run_recorded_raw(session, prepared, counter, None)
        .unwrap_or_else(|_| vec![None; session.calls.len()]))
}

/// The recorded baseline run uncalibrated and without a budget (the budget only shapes what a
/// strategy is told; the baseline asks nothing), showing `observe` each call's context: each
/// call's raw context, known tokens weighed at their recorded size.
pub(crate) fn run_recorded_raw<'s>(
    session: &'s Session,
    prepared: &'s Prepared,
    counter: &dyn TokenCounter,
    observe: Option<&mut dyn FnMut(usize, &context::Context<'s>)>,
) -> Result<Vec<Option<RawContext>>> {
    let models = ModelTable::empty();
    let setup = engine::Setup {
        counter,
        calibration: None,
        summarizer: SummarizerModel::default(),
        models: &models,
        cache_ttl: CacheTtl::default(),
        stop_at_call: None,
        cancel: None,
        progress: None,
        record_decisions: false,
    };
    let budget = Budget {
        context_window: u64::MAX,
        max_output: 0,
        reserve: 0,
    };
    let parts = engine::Engine::new(session, prepared, setup, "recorded".into(), true, budget)
        .run_observed(None, observe)?;
    Ok(parts
        .0
        .iter()
        .zip(&parts.8)
        .map(|(s, &known)| {
            Some(RawContext {
                counted: s.raw_tokens.saturating_sub(known),
                known,
            })
        })
        .collect())
}

/// Which messages of the agent's context survive a recorded compaction: the summary and the
/// messages from `kept_from` on (those after the boundary have not reached the agent yet).
fn recorded_keep(session: &Session, compaction: usize) -> impl Fn(MsgIdx) -> bool {
    let c = &session.compactions[compaction];
    let kept_from = c.kept_from.unwrap_or(c.at_message);
    let summary = c.summary;
    move |m| m >= kept_from || Some(m) == summary
}

/// A parameter value as the user typed it (`--param`, `--sweep`): JSON when it parses, else text.
pub fn parse_value(v: &str) -> serde_json::Value {
    let v = v.trim();
    serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn recorded_raw_tokens_follow_each_agents_context() {
        let mut s = SessionBuilder::new();
        let main = s.agent("main");
        let sub = s.agent("sub");
        s.msg(main, Role::System, "x".repeat(40)); // 10 + 4
        s.msg(main, Role::User, "y".repeat(80)); // 20 + 4
        s.msg(sub, Role::User, "z".repeat(400)); // 100 + 4
        s.call(main); // 38
        s.msg(main, Role::Assistant, "a".repeat(8)); // 2 + 4
        s.call(sub); // 104
        s.msg(main, Role::User, "b".repeat(4)); // 1 + 4
        s.call(main); // 38 + 6 + 5
        let t = recorded_raw_tokens(&s.session, &Chars4);
        assert_eq!(t, vec![Some(38), Some(104), Some(49)]);
    }

    #[test]
    fn recorded_compaction_replaces_history_with_summary_and_kept_messages() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.msg(a, Role::User, "q".repeat(400)); // 104
        let kept = s.msg(a, Role::Assistant, "k".repeat(40)); // 14
        s.call(a); // 118
        let boundary = s.session.messages.len();
        let summary = s.msg(a, Role::User, "s".repeat(20)); // 9
        s.msg(a, Role::User, "n".repeat(4)); // 5
        s.compaction(a, boundary, Some(summary), Some(kept));
        s.call(a); // kept 14 + summary 9 + 5
        let t = recorded_raw_tokens(&s.session, &Chars4);
        assert_eq!(t, vec![Some(118), Some(28)]);
    }

    /// A strategy that only records what the host told it about the log's usage.
    mod probe {
        use ctxlab_plugin_api::*;
        use std::sync::Mutex;

        pub static SEEN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

        pub struct Probe;
        struct Instance;

        impl Strategy for Instance {
            fn decide(&mut self, call: &Call<'_>, _: &mut Decision) -> Result<(), String> {
                SEEN.lock()
                    .map_err(|e| e.to_string())?
                    .push(call.prev_recorded_input_tokens());
                Ok(())
            }
            fn export(&self, _: &str) -> Result<String, String> {
                Ok(String::new())
            }
        }

        impl StrategyFactory for Probe {
            fn info(&self) -> StrategyInfo {
                StrategyInfo {
                    id: "test.probe",
                    title: "probe",
                    system: "test",
                    description: "records prev_recorded_input_tokens",
                    params: Vec::new(),
                    export_formats: &[],
                }
            }
            fn create(&self, _: Params) -> Result<Box<dyn Strategy>, String> {
                Ok(Box::new(Instance))
            }
            fn import(&self, _: &str, _: &str) -> Result<serde_json::Value, String> {
                Ok(serde_json::Value::Null)
            }
        }

        export_plugin!(name: "probe", version: "0", strategies: [&Probe]);
    }

    #[test]
    fn strategies_get_the_logs_usage_only_while_the_replay_sends_what_the_log_recorded() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        let usage = |input| crate::model::Usage {
            input,
            ..Default::default()
        };
        s.msg(a, Role::User, "q".repeat(400));
        let c0 = s.call(a);
        s.msg(a, Role::Assistant, "r".repeat(40));
        s.msg(a, Role::User, "q".repeat(40));
        let c1 = s.call(a);
        let boundary = s.session.messages.len();
        let summary = s.msg(a, Role::User, "s".repeat(20));
        s.compaction(a, boundary, Some(summary), None);
        let c2 = s.call(a);
        s.msg(a, Role::User, "n".repeat(4));
        let c3 = s.call(a);
        for (c, u) in [(c0, 150), (c1, 170), (c2, 40), (c3, 45)] {
            s.session.calls[c].usage = Some(usage(u));
        }
        let mut reg = crate::plugin_host::Registry::default();
        reg.add_in_process(probe::plugin_table(), "probe").unwrap();
        let entry = reg.require("test.probe").unwrap().clone();
        let mut opts = ReplayOptions::new(std::sync::Arc::new(Chars4));
        opts.budget = Some(Budget {
            context_window: 100_000,
            max_output: 0,
            reserve: 0,
        });
        let spec = StrategySpec::Plugin {
            entry,
            params: serde_json::Value::Null,
        };
        run(&s.session, spec, &opts).unwrap();
        // Call 1 sees call 0's usage; call 2 sees call 1's (both sent what the log recorded);
        // the log compacted before call 2 and this replay did not, so call 3 gets nothing.
        assert_eq!(*probe::SEEN.lock().unwrap(), vec![0, 150, 170, 0]);
    }

    /// An agent that switches model mid-session is replayed with each call's model's fit: the
    /// calibrated input of every call matches what was recorded, which one line through both
    /// models cannot do.
    #[test]
    fn a_call_is_predicted_with_the_fit_of_its_model() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.msg(a, Role::User, "q".repeat(400));
        let mut calls = Vec::new();
        for i in 0..10u64 {
            s.msg(a, Role::Assistant, "r".repeat(400 + 40 * i as usize));
            s.msg(a, Role::User, "u".repeat(800));
            let c = s.call(a);
            // Calls 4..7 run a skill on another model (another tokenizer, same system prompt).
            let model = if (4..8).contains(&i) { "haiku" } else { "opus" };
            s.session.calls[c].model = Some(model.into());
            calls.push(c);
        }
        let raw: Vec<u64> = recorded_raw_tokens(&s.session, &Chars4)
            .into_iter()
            .map(Option::unwrap)
            .collect();
        for &c in &calls {
            let (overhead, ratio) = if s.session.calls[c].model.as_deref() == Some("haiku") {
                (3_000.0, 0.8)
            } else {
                (3_000.0, 1.5)
            };
            s.session.calls[c].usage = Some(crate::model::Usage {
                input: (overhead + ratio * raw[c] as f64).round() as u64,
                ..Default::default()
            });
        }
        let cal = crate::tokens::calibrate_session(&s.session, &Chars4).unwrap();
        let fits = &cal.agent(a).unwrap().models;
        assert_eq!(fits.len(), 2, "{cal:?}");
        assert!((cal.fit_for_call(&s.session, calls[5]).ratio - 0.8).abs() < 1e-3);
        assert!((cal.fit_for_call(&s.session, calls[9]).ratio - 1.5).abs() < 1e-3);
        let mut opts = ReplayOptions::new(std::sync::Arc::new(Chars4));
        opts.calibration = Some(cal.clone());
        opts.budget = Some(Budget {
            context_window: 10_000_000,
            max_output: 0,
            reserve: 0,
        });
        let run = run(&s.session, StrategySpec::Recorded, &opts).unwrap();
        for x in &run.samples {
            let rec = x.recorded.unwrap().context_tokens();
            assert!(
                x.input_tokens.abs_diff(rec) <= 1,
                "call {}: {} vs {rec}",
                x.call,
                x.input_tokens
            );
        }
        assert!(cal.mean_ape < 0.01, "{}", cal.mean_ape);
        let report = crate::inspect::summarize(&s.session, &Chars4).to_text();
        assert!(
            report.contains("on haiku") && report.contains("on opus"),
            "{report}"
        );
    }

    /// `MessageFlags::replaces`: the earlier message leaves when its replacement arrives, in the
    /// recorded baseline and with no strategy alike; the messages around it stay.
    #[test]
    fn a_replacing_message_takes_the_earlier_ones_place_in_every_run() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.msg(a, Role::User, "q".repeat(40)); // 10 + 4
        let files = s.msg(a, Role::User, "f".repeat(400)); // 100 + 4
        s.msg(a, Role::Assistant, "r".repeat(8)); // 2 + 4
        s.call(a);
        s.msg(a, Role::User, "n".repeat(4)); // 1 + 4
        let newer = s.msg(a, Role::User, "g".repeat(800)); // 200 + 4
        s.session.messages[newer].flags.replaces = Some(files);
        s.call(a);
        let want = 14 + 6 + 5 + 204;
        assert_eq!(
            recorded_raw_tokens(&s.session, &Chars4),
            vec![Some(124), Some(want)]
        );
        let mut opts = ReplayOptions::new(std::sync::Arc::new(Chars4));
        opts.budget = Some(Budget {
            context_window: 100_000,
            max_output: 0,
            reserve: 0,
        });
        let none = run(&s.session, StrategySpec::None, &opts).unwrap();
        assert_eq!(none.samples[1].raw_tokens, want);
    }

    #[test]
    fn usage_only_sessions_have_no_raw_tokens() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.call(a);
        s.session.usage_only = true;
        assert_eq!(recorded_raw_tokens(&s.session, &Chars4), vec![None]);
    }
}
