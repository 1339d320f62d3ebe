//! One module per subcommand.
pub mod compare;
pub mod convert;
pub mod export;
pub mod inspect;
pub mod library;
pub mod models;
pub mod plugins;
pub mod replay;
pub mod tune;
pub mod watch;
