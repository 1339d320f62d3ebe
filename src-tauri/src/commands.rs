//! The commands the UI calls. Each is a few lines over the `ctxlab` library: no figure is
//! computed here. Heavy work runs on a blocking thread so the window never stalls.

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::view::*;
use ctxlab::formats::follow::Follower;
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab::tokens::{self, LiveCounts, AUTO_COUNTER};
use ctxlab::tune;
use ctxlab::Error;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use tauri::ipc::Channel;
use tauri::State;

/// Runs heavy work off the UI thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| AppError {
            code: "internal".into(),
            message: format!("the work stopped unexpectedly: {e}"),
        })?
}

#[tauri::command]
pub fn list_strategies(state: State<'_, AppState>) -> Strategies {
    let r = &state.registry;
    Strategies {
        strategies: replay::BASELINES
            .iter()
            .map(|id| StrategyInfo::baseline(id))
            .chain(r.strategies().iter().map(StrategyInfo::of))
            .collect(),
        refused: r.refused().iter().map(RefusedPlugin::from).collect(),
        searched: r
            .searched()
            .iter()
            .map(|d| d.path.display().to_string())
            .collect(),
        // `auto` first: the log's own default, as the CLI picks it (tokens::default_counter_for).
        counters: std::iter::once(AUTO_COUNTER)
            .chain(tokens::COUNTERS.iter().copied())
            .map(str::to_string)
            .collect(),
    }
}

#[tauri::command]
pub async fn discover_logs() -> AppResult<Vec<LogFile>> {
    blocking(|| {
        Ok(ctxlab::discover::local_logs()
            .iter()
            .map(LogFile::from)
            .collect())
    })
    .await
}

#[tauri::command]
pub fn library(state: State<'_, AppState>) -> OpenResult {
    state.library()
}

/// The sessions of the library, with what moved or changed since they were imported.
#[tauri::command]
pub async fn stored_sessions<R: tauri::Runtime>(app: tauri::AppHandle<R>) -> AppResult<StoredList> {
    blocking(move || {
        use tauri::Manager;
        app.state::<AppState>().stored()
    })
    .await
}

/// Opens a session of the library from its log (checked to be the one imported).
#[tauri::command]
pub async fn open_stored<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    id: i64,
) -> AppResult<SessionSummary> {
    blocking(move || {
        use tauri::Manager;
        app.state::<AppState>().open_stored(id)
    })
    .await
}

#[tauri::command]
pub async fn open_path<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    path: String,
) -> AppResult<OpenResult> {
    blocking(move || {
        use tauri::Manager;
        app.state::<AppState>().open(&PathBuf::from(path))
    })
    .await
}

#[tauri::command]
pub fn close_session(state: State<'_, AppState>, key: u32) -> bool {
    state.close(key)
}

/// The session's agents, calls (recorded beside the calibrated estimate), compactions and
/// fidelity, from the counts made when it was opened.
#[tauri::command]
pub async fn session_detail(state: State<'_, AppState>, key: u32) -> AppResult<SessionDetail> {
    let (session, report, raw) = state.counted(key)?;
    let stored = state.stored_id(key);
    blocking(move || {
        Ok(SessionDetail::of(
            key,
            stored,
            &session,
            &report,
            &raw,
            report.calibration.as_ref(),
        ))
    })
    .await
}

fn spec(state: &AppState, s: &StrategyRequest) -> AppResult<StrategySpec> {
    let has_params = s.params.as_object().is_some_and(|m| !m.is_empty());
    Ok(match s.id.as_str() {
        "none" | "recorded" if has_params => {
            return Err(Error::Invalid(format!("the {} baseline takes no parameters", s.id)).into())
        }
        "none" => StrategySpec::None,
        "recorded" => StrategySpec::Recorded,
        id => StrategySpec::Plugin {
            entry: state.registry.require(id)?.clone(),
            params: s.params.clone(),
        },
    })
}

/// The model table every figure of the app is priced and sized with: the user's own
/// `models.toml` (where *Import a price list* writes) over the built-in table, as the CLI reads
/// it. Read at each use, so an import counts from the next figure on.
fn models() -> AppResult<replay::ModelTable> {
    Ok(replay::ModelTable::load(None)?)
}

/// The budget asked for, the log model's filling what is not given. `None` lets the engine
/// resolve it (and name what is missing, or what it assumed).
fn budget(
    session: &ctxlab::model::Session,
    b: &BudgetRequest,
    table: &replay::ModelTable,
) -> Option<Budget> {
    let model = replay::resolve_budget(session, None, table).ok();
    let window = b.context_window.or(model.map(|m| m.context_window))?;
    Some(Budget {
        context_window: window,
        max_output: b.max_output.or(model.map(|m| m.max_output)).unwrap_or(0),
        reserve: b.reserve.unwrap_or(0),
    })
}

/// How to replay `session`: the counter, the budget asked for (what is not given comes from the
/// model table, or is assumed from the log and said so), the calibration when asked — the
/// CLI's rules (`ctxlab::compare::Settings`), over the user's model table.
fn options<'a>(
    session: &ctxlab::model::Session,
    counter: Option<&str>,
    b: &BudgetRequest,
    calibrate: bool,
) -> AppResult<ReplayOptions<'a>> {
    let settings = ctxlab::compare::Settings {
        counter: counter.unwrap_or(AUTO_COUNTER).to_string(),
        window: b.context_window,
        max_output: b.max_output,
        reserve: b.reserve.unwrap_or(0),
        calibrate,
        ..Default::default()
    };
    Ok(settings.options(session)?)
}

#[tauri::command]
pub async fn replay(
    state: State<'_, AppState>,
    request: ReplayRequest,
    on_progress: Channel<Progress>,
) -> AppResult<Vec<RunView>> {
    let (session, _) = state.get(request.session)?;
    let specs = request
        .strategies
        .iter()
        .map(|s| spec(&state, s))
        .collect::<AppResult<Vec<_>>>()?;
    let cancel = state.start_job(request.job);
    let result = blocking(move || {
        let base = options(
            &session,
            request.counter.as_deref(),
            &request.budget,
            request.calibrate,
        )?;
        let runs = specs.len();
        let mut out = Vec::with_capacity(runs);
        for (i, spec) in specs.into_iter().enumerate() {
            let strategy = spec.id().to_string();
            let progress = |done: usize, total: usize| {
                // A closed window drops the channel; the run itself goes on until cancelled.
                let _ = on_progress.send(Progress::Calls {
                    run: i + 1,
                    runs,
                    strategy: strategy.clone(),
                    done,
                    total,
                });
            };
            let mut opts = base.side_by_side();
            opts.cancel = Some(&*cancel as &AtomicBool);
            opts.progress = Some(&progress);
            out.push(RunView::of(&replay::run(&session, spec, &opts)?));
            let _ = on_progress.send(Progress::Finished {
                run: i + 1,
                strategy,
            });
        }
        Ok(out)
    })
    .await;
    state.end_job(request.job);
    result
}

/// What the model table makes of the open session: its models priced or not, the cost of its
/// recorded usage and what that cost leaves out, the budget assumed and from where
/// (`ctxlab::models::session_pricing`).
#[tauri::command]
pub async fn session_pricing(state: State<'_, AppState>, key: u32) -> AppResult<PricingView> {
    let (session, _) = state.get(key)?;
    blocking(move || {
        let table = models()?;
        Ok(PricingView::of(
            &ctxlab::models::session_pricing(&session, &table),
            &table,
        ))
    })
    .await
}

/// Merges a LiteLLM price list (`model_prices_and_context_window.json`) into the user's
/// `models.toml`, as `ctxlab models import FILE` does (`ctxlab::models::import_litellm`: new
/// models added, entries of an earlier import updated, the user's own entries kept).
#[tauri::command]
pub async fn import_price_list(path: String) -> AppResult<ImportView> {
    blocking(move || {
        let into = replay::ModelTable::user_path().ok_or_else(|| {
            Error::Invalid("this system has no user data folder to keep a models.toml in".into())
        })?;
        let r = ctxlab::models::import_litellm(&PathBuf::from(path), &into, false)?;
        Ok(ImportView::from(&r))
    })
    .await
}

/// Sweeps a strategy's parameters over the grid (`ctxlab::tune`): every set's cost and recall,
/// the Pareto front, the best set and why its compactions fired. Progress per replay on the
/// channel; `cancel(job)` stops it.
#[tauri::command]
pub async fn tune(
    state: State<'_, AppState>,
    request: TuneRequest,
    on_progress: Channel<TuneProgress>,
) -> AppResult<TuneView> {
    let (session, _) = state.get(request.session)?;
    let entry = state.registry.require(&request.strategy)?.clone();
    let objective: tune::Objective = request.objective.parse()?;
    let cancel = state.start_job(request.job);
    let result = blocking(move || {
        let opts = options(
            &session,
            request.counter.as_deref(),
            &request.budget,
            request.calibrate,
        )?;
        let sweeps: Vec<tune::Sweep> = request
            .sweeps
            .into_iter()
            .map(|s| tune::Sweep {
                param: s.param,
                values: s.values,
            })
            .collect();
        let progress = |done: usize, total: usize| {
            let _ = on_progress.send(TuneProgress { done, total });
        };
        let t = tune::TuneOptions {
            objective,
            cancel: Some(&*cancel as &AtomicBool),
            progress: Some(&progress),
            ..Default::default()
        };
        let sessions = [tune::TuneSession {
            session: &session,
            opts,
        }];
        Ok(TuneView::of(&tune::run(
            &sessions,
            &entry,
            &request.params,
            &sweeps,
            &t,
        )?))
    })
    .await;
    state.end_job(request.job);
    result
}

/// Why each compaction of one parameter set fired (a point picked on the Pareto chart).
#[tauri::command]
pub async fn explain(
    state: State<'_, AppState>,
    key: u32,
    strategy: StrategyRequest,
    counter: Option<String>,
    budget_request: BudgetRequest,
    calibrate: bool,
) -> AppResult<Vec<CompactionPointView>> {
    let (session, _) = state.get(key)?;
    let spec = spec(&state, &strategy)?;
    blocking(move || {
        let opts = options(&session, counter.as_deref(), &budget_request, calibrate)?;
        let run = replay::run(&session, spec, &opts)?;
        Ok(tune::compaction_points(&run)
            .iter()
            .map(CompactionPointView::from)
            .collect())
    })
    .await
}

/// Saves a parameter set as a named profile of the strategy in the library (`export --profile`
/// and the CLI's `tune` read the same profiles).
#[tauri::command]
pub fn save_profile(
    state: State<'_, AppState>,
    strategy: String,
    name: String,
    params: serde_json::Value,
    note: String,
) -> AppResult<()> {
    state.registry.require(&strategy)?;
    state.save_profile(&strategy, &name, &params, &note)
}

/// How often a followed log is looked at.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Follows the log of open session `key` while it is written: a thread polls it
/// (`ctxlab::formats::follow::Follower`) every 500 ms, keeps the grown session open and sends the
/// new and changed calls on the channel, until `unfollow`, `close_session` or the window goes.
#[tauri::command]
pub async fn follow<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    key: u32,
    on_update: Channel<LiveUpdate>,
) -> AppResult<()> {
    use tauri::Manager;
    let (held, _) = app.state::<AppState>().get(key)?;
    let path = PathBuf::from(held.source.files.first().cloned().unwrap_or_default());
    let format = held.source.format.clone();
    let mut follower = blocking(move || Ok(Follower::open_as(&path, &format)?)).await?;
    let Some(stop) = app.state::<AppState>().start_follow(key) else {
        return Ok(()); // followed already
    };
    let models = models()?;
    let counter = tokens::counter(&app.state::<AppState>().get(key)?.1.counter)?;
    // Each poll counts only the messages it brought (`LiveCounts`); this first count is the
    // log as the follower read it now.
    let mut counts = {
        let (session, counter) = (follower.session().clone(), counter.clone());
        blocking(move || Ok(LiveCounts::new(&session, counter.as_ref()))).await?
    };
    // What the log gained between opening it and now.
    if follower.session().calls.len() != held.calls.len() {
        let from = held.calls.len().min(follower.session().calls.len());
        let s = follower.session();
        app.state::<AppState>().replace(key, s.clone(), &counts);
        let _ = on_update.send(LiveUpdate::of(s, from, &models, counts.estimates(s)));
    }
    std::thread::spawn(move || {
        let state = app.state::<AppState>();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(FOLLOW_EVERY);
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let update = match follower.poll() {
                Ok(None) => continue,
                Ok(Some(u)) => {
                    let s = follower.session();
                    let from = if u.reloaded.is_some() || u.calls_reordered {
                        0
                    } else {
                        u.calls
                            .iter()
                            .chain(&u.changed_calls)
                            .copied()
                            .min()
                            .unwrap_or(s.calls.len())
                    };
                    if u.reloaded.is_some() {
                        counts = LiveCounts::new(s, counter.as_ref());
                    } else {
                        counts.update(s, counter.as_ref(), &u.changed_messages);
                    }
                    state.replace(key, s.clone(), &counts);
                    LiveUpdate {
                        reloaded: u.reloaded,
                        bytes: u.bytes,
                        ..LiveUpdate::of(s, from, &models, counts.estimates(s))
                    }
                }
                Err(e) => LiveUpdate {
                    from_call: follower.session().calls.len(),
                    total_calls: follower.session().calls.len(),
                    error: Some(e.to_string()),
                    ..Default::default()
                },
            };
            if on_update.send(update).is_err() {
                break; // the window is gone
            }
        }
        state.unfollow(key);
        state.refresh_stored(key);
    });
    Ok(())
}

/// Stops following session `key`; true when it was followed.
#[tauri::command]
pub fn unfollow(state: State<'_, AppState>, key: u32) -> bool {
    state.unfollow(key)
}

#[tauri::command]
pub fn cancel(state: State<'_, AppState>, job: u32) -> bool {
    state.cancel(job)
}

/// What fills every call's context (`ctxlab::replay::composition`), counted with the counter the
/// session was opened with.
#[tauri::command]
pub async fn composition(state: State<'_, AppState>, key: u32) -> AppResult<CompositionView> {
    let (session, report) = state.get(key)?;
    blocking(move || {
        let counter = tokens::counter(&report.counter)?;
        let prepared = replay::Prepared::counts(&session, counter.as_ref());
        let c = replay::composition(&session, &prepared, counter.as_ref())?;
        Ok(CompositionView::of(&session, &c))
    })
    .await
}

/// The context one strategy sent at `call`, and what changed since the agent's previous call.
#[tauri::command]
pub async fn context_at(
    state: State<'_, AppState>,
    key: u32,
    call: usize,
    strategy: StrategyRequest,
    counter: Option<String>,
    budget_request: Option<BudgetRequest>,
) -> AppResult<ContextView> {
    let (session, _) = state.get(key)?;
    let spec = spec(&state, &strategy)?;
    blocking(move || {
        let counter = tokens::counter_for(counter.as_deref().unwrap_or(AUTO_COUNTER), &session)?;
        let agent = session
            .calls
            .get(call)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "call {call} is not in the session ({} calls)",
                    session.calls.len()
                ))
            })?
            .agent;
        let table = models()?;
        let budget = budget(&session, &budget_request.unwrap_or_default(), &table).or(
            // Baselines ask nothing of the budget: let them show a log whose model is unknown.
            matches!(spec, StrategySpec::None | StrategySpec::Recorded).then_some(Budget {
                context_window: u64::MAX,
                max_output: 0,
                reserve: 0,
            }),
        );
        let calibration = tokens::calibrate_session(&session, counter.as_ref());
        let kept_at = |c: usize| -> AppResult<Vec<replay::KeptMessage>> {
            let mut o = ReplayOptions::new(counter.clone());
            o.models = table.clone();
            o.budget = budget;
            o.calibration = calibration.clone();
            o.stop_at_call = Some(c);
            Ok(replay::run(&session, spec.clone(), &o)?.kept)
        };
        let previous = session.calls[..call]
            .iter()
            .rposition(|c| c.agent == agent)
            .map(kept_at)
            .transpose()?
            .unwrap_or_default();
        let kept = kept_at(call)?;
        Ok(ContextView::of(&session, spec.id(), call, &kept, &previous))
    })
    .await
}

/// The strategy's parameters in its system's own config format; written to `path` when given.
/// `ctxlab::export::config` has read the text back to the same parameters first.
#[tauri::command]
pub fn export_config(
    state: State<'_, AppState>,
    request: ExportRequest,
) -> AppResult<ExportResult> {
    let entry = state.registry.require(&request.strategy)?;
    let text = ctxlab::export::config(entry, &request.params, Some(&request.format))?;
    let written = match request.path {
        Some(p) => {
            std::fs::write(&p, &text).map_err(|e| Error::io(&p, e))?;
            Some(p)
        }
        None => None,
    };
    Ok(ExportResult { text, written })
}

/// The logs named on the command line, once read (waits while they are being read; an empty
/// result when none were named). The UI shows the first one.
#[tauri::command]
pub async fn startup<R: tauri::Runtime>(app: tauri::AppHandle<R>) -> AppResult<OpenResult> {
    blocking(move || {
        use tauri::Manager;
        app.state::<crate::startup::Startup>().wait()
    })
    .await
}

/// The UI reached a step of its start (`painted`: its first frame; `chart`: the first chart of
/// the opened session drawn). Only the startup bench (`CTXLAB_BENCH_STARTUP=1`) listens: the
/// app prints the step's time since the process started and, at the last step, exits. Returns
/// whether the bench is listening, so the UI reports the chart only then.
#[tauri::command]
pub fn startup_mark<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    startup: State<'_, crate::startup::Startup>,
    step: String,
) -> bool {
    if !crate::startup::benching() {
        return false;
    }
    crate::startup::mark(&step);
    // Without a log to chart, the first paint is the last step.
    if step == "chart" || (step == "painted" && startup.paths.is_empty()) {
        app.exit(0);
    }
    true
}
