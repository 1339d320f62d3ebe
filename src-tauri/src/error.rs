//! The one error type every command returns: a stable code the UI can match on and a message a
//! user can act on. It is built from `ctxlab::Error`, whose `code()` it keeps.

use serde::Serialize;
use ts_rs::TS;

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AppError {
    /// `io`, `unknown_format`, `parse`, `plugin`, `replay`, `invalid`, `cancelled`, or the app's
    /// own `no_session` (the UI asked for a session that was closed).
    pub code: String,
    pub message: String,
}

impl From<ctxlab::Error> for AppError {
    fn from(e: ctxlab::Error) -> AppError {
        AppError {
            code: e.code().to_string(),
            message: e.to_string(),
        }
    }
}

impl AppError {
    pub fn no_session(key: u32) -> AppError {
        AppError {
            code: "no_session".into(),
            message: format!("session #{key} is not open (it was closed); open the log again"),
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;
