//! What the app holds while it runs: the plugin registry (discovered once at start), the sessions
//! the user opened, and the cancel flags of running jobs.
//!
//! Sessions live in memory for now: the SQLite library (`ctxlab::store`, issue 9) is not in the
//! library yet; when it lands, `open` records each session there and `library` lists it from there.

use crate::error::{AppError, AppResult};
use crate::view::{OpenResult, SessionSummary};
use ctxlab::inspect::{summarize, SessionReport};
use ctxlab::model::Session;
use ctxlab::plugin_host::Registry;
use ctxlab::tokens::{self, DEFAULT_COUNTER};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub struct OpenSession {
    pub session: Arc<Session>,
    pub report: Arc<SessionReport>,
}

pub struct AppState {
    pub registry: Registry,
    sessions: Mutex<BTreeMap<u32, OpenSession>>,
    /// Files that failed to load, newest last, so the Library can say why.
    failed: Mutex<Vec<AppError>>,
    next_key: AtomicU32,
    jobs: Mutex<HashMap<u32, Arc<AtomicBool>>>,
}

/// A poisoned lock only means another command panicked mid-update of a map of handles; the map
/// itself is still consistent, so keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AppState {
    pub fn new(registry: Registry) -> AppState {
        AppState {
            registry,
            sessions: Mutex::new(BTreeMap::new()),
            failed: Mutex::new(Vec::new()),
            next_key: AtomicU32::new(1),
            jobs: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a file or every log of a folder and keeps what loaded. Heavy: call off the UI thread.
    pub fn open(&self, path: &Path) -> AppResult<OpenResult> {
        let loaded = ctxlab::formats::load_all(path)?;
        let counter = tokens::counter(DEFAULT_COUNTER)?;
        let mut sessions = Vec::new();
        for s in loaded.sessions {
            let report = summarize(&s, counter.as_ref());
            let key = self.next_key.fetch_add(1, Ordering::Relaxed);
            sessions.push(SessionSummary::of(key, &s, &report));
            lock(&self.sessions).insert(
                key,
                OpenSession {
                    session: Arc::new(s),
                    report: Arc::new(report),
                },
            );
        }
        let failed: Vec<AppError> = loaded.failed.into_iter().map(AppError::from).collect();
        lock(&self.failed).extend(failed.iter().cloned());
        Ok(OpenResult { sessions, failed })
    }

    /// Opens `path` and keeps the error for the Library when it fails as a whole.
    pub fn open_or_note(&self, path: &Path) {
        if let Err(e) = self.open(path) {
            lock(&self.failed).push(e);
        }
    }

    pub fn library(&self) -> OpenResult {
        OpenResult {
            sessions: lock(&self.sessions)
                .iter()
                .map(|(k, o)| SessionSummary::of(*k, &o.session, &o.report))
                .collect(),
            failed: lock(&self.failed).clone(),
        }
    }

    pub fn close(&self, key: u32) -> bool {
        lock(&self.sessions).remove(&key).is_some()
    }

    pub fn get(&self, key: u32) -> AppResult<(Arc<Session>, Arc<SessionReport>)> {
        lock(&self.sessions)
            .get(&key)
            .map(|o| (o.session.clone(), o.report.clone()))
            .ok_or_else(|| AppError::no_session(key))
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
