//! One error type for the library, with a stable code the app and `--json` output can match on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not in any format ctxlab reads.
    #[error("{path}: not a session log ctxlab can read ({reason}); formats tried: {tried}")]
    UnknownFormat {
        path: PathBuf,
        reason: String,
        tried: String,
    },
    /// The file is in a known format but cannot be used at all.
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: u32,
        message: String,
    },
    #[error("plugin {plugin}: {message}")]
    Plugin { plugin: String, message: String },
    #[error("replay with {strategy} failed at call {call}: {reason}")]
    Replay {
        strategy: String,
        call: usize,
        reason: String,
    },
    #[error("{0}")]
    Invalid(String),
    /// Long work (a replay) stopped because the user cancelled it.
    #[error("cancelled")]
    Cancelled,
    /// The library database cannot be used as it is (corrupt, newer, not ctxlab's, locked).
    #[error("library {path}: {message}")]
    Library { path: PathBuf, message: String },
}

impl Error {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::UnknownFormat { .. } => "unknown_format",
            Error::Parse { .. } => "parse",
            Error::Plugin { .. } => "plugin",
            Error::Replay { .. } => "replay",
            Error::Invalid(_) => "invalid",
            Error::Cancelled => "cancelled",
            Error::Library { .. } => "library",
        }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
