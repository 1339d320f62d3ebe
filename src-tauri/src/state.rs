//! What the app holds while it runs: the plugin registry (discovered once at start), the SQLite
//! library (`ctxlab::store`: every session opened is recorded there, so the Library lists it on the
//! next start), the sessions open now, and the cancel flags of running jobs.

use crate::error::{AppError, AppResult};
use crate::view::{OpenResult, SessionSummary, StoredList, StoredSession};
use ctxlab::inspect::{summarize_prepared, SessionReport};
use ctxlab::model::Session;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::RawContext;
use ctxlab::store::Library;
use ctxlab::tokens;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub struct OpenSession {
    pub session: Arc<Session>,
    pub report: Arc<SessionReport>,
    /// Each call's context counted with the report's counter, uncalibrated, counted and known
    /// tokens apart (`replay::recorded_contexts`, what calibration fits): counted once when the
    /// session is opened.
    pub raw: Arc<Vec<Option<RawContext>>>,
    /// Its row in the library, when recording it there worked.
    pub stored: Option<i64>,
}

/// An open session with its report and each call's counted context (uncalibrated).
pub type CountedSession = (
    Arc<Session>,
    Arc<SessionReport>,
    Arc<Vec<Option<RawContext>>>,
);

/// A session counted: each call's context and the report built from those counts.
pub struct Counted {
    pub raw: Vec<Option<RawContext>>,
    pub report: SessionReport,
}

impl Counted {
    pub fn of(s: &Session, counter: &dyn tokens::TokenCounter) -> Counted {
        // Counted once: the per-call contexts and the report share the counts.
        let prepared = ctxlab::replay::Prepared::counts(s, counter);
        let raw = ctxlab::replay::recorded_contexts_prepared(s, &prepared, counter)
            .unwrap_or_else(|_| vec![None; s.calls.len()]);
        let report = summarize_prepared(s, &prepared, &raw);
        Counted { raw, report }
    }
}

pub struct AppState {
    pub registry: Registry,
    /// `None` when the library file could not be opened (the reason is in `failed`): the app
    /// still opens logs, it only forgets them on exit.
    library: Option<Mutex<Library>>,
    sessions: Mutex<BTreeMap<u32, OpenSession>>,
    /// Files that failed to load, newest last, so the Library can say why.
    failed: Mutex<Vec<AppError>>,
    next_key: AtomicU32,
    jobs: Mutex<HashMap<u32, Arc<AtomicBool>>>,
    /// The stop flags of the sessions being followed, by session key.
    follows: Mutex<HashMap<u32, Arc<AtomicBool>>>,
}

/// A poisoned lock only means another command panicked mid-update of a map of handles; the map
/// itself is still consistent, so keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn no_library() -> AppError {
    AppError {
        code: "library".into(),
        message: "the library could not be opened when the app started (see Could not load)".into(),
    }
}

impl AppState {
    /// The app's state over the library at `db` (`None`: `$CTXLAB_DB`, else the user's data
    /// folder). A library that cannot be opened is reported in the Library view, not fatal.
    pub fn new(registry: Registry, db: Option<&Path>) -> AppState {
        let (library, failed) = match Library::open_default(db) {
            Ok(l) => (Some(Mutex::new(l)), Vec::new()),
            Err(e) => (None, vec![AppError::from(e)]),
        };
        AppState {
            registry,
            library,
            sessions: Mutex::new(BTreeMap::new()),
            failed: Mutex::new(failed),
            next_key: AtomicU32::new(1),
            jobs: Mutex::new(HashMap::new()),
            follows: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a file or every log of a folder and keeps what loaded. Heavy: call off the UI thread.
    /// Each session is recorded in the library (which hashes its files) on one thread while it
    /// is counted on another.
    pub fn open(&self, path: &Path) -> AppResult<OpenResult> {
        self.keep_loaded(ctxlab::formats::load_all(path)?)
    }

    /// Keeps what `ctxlab::formats::load_all` read (see `open`).
    pub fn keep_loaded(&self, loaded: ctxlab::formats::Loaded) -> AppResult<OpenResult> {
        let mut sessions = Vec::new();
        let mut failed: Vec<AppError> = loaded.failed.into_iter().map(AppError::from).collect();
        for s in loaded.sessions {
            // Each log counted as the CLI counts it when no counter is named (`auto`).
            let counter = tokens::counter(tokens::default_counter_for(&s))?;
            let (stored, counted) = std::thread::scope(|scope| {
                let recording = scope.spawn(|| self.record(&s));
                let counted = Counted::of(&s, counter.as_ref());
                let stored = recording.join().unwrap_or_else(|_| {
                    Err(AppError {
                        code: "internal".into(),
                        message: "recording the session in the library failed unexpectedly".into(),
                    })
                });
                (stored, counted)
            });
            let stored = match stored {
                Ok(id) => id,
                Err(e) => {
                    failed.push(e);
                    None
                }
            };
            sessions.push(self.keep(s, stored, counted));
            crate::startup::mark("counted");
        }
        lock(&self.failed).extend(failed.iter().cloned());
        Ok(OpenResult { sessions, failed })
    }

    /// Records `s` in the library (refreshing its row when the log changed since).
    fn record(&self, s: &Session) -> AppResult<Option<i64>> {
        let Some(lib) = &self.library else {
            return Ok(None);
        };
        Ok(Some(lock(lib).import(s)?.0))
    }

    /// Keeps `s` open; a session of the library already open is replaced, not listed twice.
    fn keep(&self, s: Session, stored: Option<i64>, counted: Counted) -> SessionSummary {
        let mut open = lock(&self.sessions);
        let key = stored
            .and_then(|id| {
                open.iter()
                    .find(|(_, o)| o.stored == Some(id))
                    .map(|(k, _)| *k)
            })
            .unwrap_or_else(|| self.next_key.fetch_add(1, Ordering::Relaxed));
        let summary = SessionSummary::of(key, stored, &s, &counted.report);
        open.insert(
            key,
            OpenSession {
                session: Arc::new(s),
                report: Arc::new(counted.report),
                raw: Arc::new(counted.raw),
                stored,
            },
        );
        summary
    }

    /// Every session of the library, most recently imported first, with whether its log is still
    /// where it was and unchanged, and its key when it is open. Hashes the logs: call off the UI
    /// thread.
    pub fn stored(&self) -> AppResult<StoredList> {
        let Some(lib) = &self.library else {
            return Ok(StoredList {
                sessions: Vec::new(),
                skipped: Vec::new(),
            });
        };
        let lib = lock(lib);
        let open: HashMap<i64, u32> = lock(&self.sessions)
            .iter()
            .filter_map(|(k, o)| o.stored.map(|id| (id, *k)))
            .collect();
        let list = lib.session_list()?;
        let sessions = list
            .rows
            .into_iter()
            .map(|r| {
                let status = lib.check_source(r.id)?;
                Ok(StoredSession::of(&r, &status, open.get(&r.id).copied()))
            })
            .collect::<AppResult<_>>()?;
        Ok(StoredList {
            sessions,
            skipped: list.skipped.iter().map(ToString::to_string).collect(),
        })
    }

    /// Opens a session of the library from its log, after checking the log is the one imported
    /// (a moved or changed log is refused with what to do).
    pub fn open_stored(&self, id: i64) -> AppResult<SessionSummary> {
        let lib = self.library.as_ref().ok_or_else(no_library)?;
        let session = lock(lib).load_session(id)?;
        let counter = tokens::counter(tokens::default_counter_for(&session))?;
        let counted = Counted::of(&session, counter.as_ref());
        Ok(self.keep(session, Some(id), counted))
    }

    pub fn save_profile(
        &self,
        strategy: &str,
        name: &str,
        params: &serde_json::Value,
        note: &str,
    ) -> AppResult<()> {
        let lib = self.library.as_ref().ok_or_else(no_library)?;
        Ok(lock(lib).save_profile(strategy, name, params, note)?)
    }

    /// Keeps the error of a file that failed as a whole, for the Library.
    pub fn note_failed(&self, e: AppError) {
        lock(&self.failed).push(e);
    }

    pub fn library(&self) -> OpenResult {
        OpenResult {
            sessions: lock(&self.sessions)
                .iter()
                .map(|(k, o)| SessionSummary::of(*k, o.stored, &o.session, &o.report))
                .collect(),
            failed: lock(&self.failed).clone(),
        }
    }

    pub fn close(&self, key: u32) -> bool {
        self.unfollow(key);
        lock(&self.sessions).remove(&key).is_some()
    }

    /// Starts following `key` and returns its stop flag; `None` when it is followed already.
    pub fn start_follow(&self, key: u32) -> Option<Arc<AtomicBool>> {
        let mut f = lock(&self.follows);
        if f.contains_key(&key) {
            return None;
        }
        let flag = Arc::new(AtomicBool::new(false));
        f.insert(key, flag.clone());
        Some(flag)
    }

    /// True when `key` was being followed.
    pub fn unfollow(&self, key: u32) -> bool {
        match lock(&self.follows).remove(&key) {
            Some(f) => {
                f.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The open session `key` grew: it is what the follower read now, `counts` its token
    /// counts kept along (only the new messages were counted). Nothing happens when the session
    /// was closed meanwhile.
    pub fn replace(&self, key: u32, s: Session, counts: &tokens::LiveCounts) {
        let Some(report_counter) = lock(&self.sessions)
            .get(&key)
            .map(|o| o.report.counter.clone())
        else {
            return;
        };
        if counts.prepared().counter() != report_counter {
            return;
        }
        let raw = counts.contexts().to_vec();
        let report = summarize_prepared(&s, counts.prepared(), &raw);
        if let Some(o) = lock(&self.sessions).get_mut(&key) {
            o.session = Arc::new(s);
            o.report = Arc::new(report);
            o.raw = Arc::new(raw);
        }
    }

    /// Records the session `key` holds now in the library (its log grew while it was followed).
    pub fn refresh_stored(&self, key: u32) {
        let session = lock(&self.sessions).get(&key).map(|o| o.session.clone());
        if let Some(s) = session {
            if let Err(e) = self.record(&s) {
                lock(&self.failed).push(e);
            }
        }
    }

    /// Session `key` with its report and each call's context counted (uncalibrated).
    pub fn counted(&self, key: u32) -> AppResult<CountedSession> {
        lock(&self.sessions)
            .get(&key)
            .map(|o| (o.session.clone(), o.report.clone(), o.raw.clone()))
            .ok_or_else(|| AppError::no_session(key))
    }

    pub fn get(&self, key: u32) -> AppResult<(Arc<Session>, Arc<SessionReport>)> {
        lock(&self.sessions)
            .get(&key)
            .map(|o| (o.session.clone(), o.report.clone()))
            .ok_or_else(|| AppError::no_session(key))
    }

    /// The library row of open session `key`.
    pub fn stored_id(&self, key: u32) -> Option<i64> {
        lock(&self.sessions).get(&key).and_then(|o| o.stored)
    }

    /// Registers a job and returns its cancel flag.
    pub fn start_job(&self, job: u32) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        lock(&self.jobs).insert(job, flag.clone());
        flag
    }

    pub fn end_job(&self, job: u32) {
        lock(&self.jobs).remove(&job);
    }

    /// True when the job was running.
    pub fn cancel(&self, job: u32) -> bool {
        match lock(&self.jobs).get(&job) {
            Some(f) => {
                f.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }
}
