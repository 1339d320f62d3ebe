//! One module per subcommand.
pub mod convert;
pub mod inspect;
pub mod plugins;
pub mod replay;
