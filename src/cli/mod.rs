//! One module per subcommand.
pub mod inspect;
pub mod plugins;
pub mod replay;
