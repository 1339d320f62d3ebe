//! The example plugin of docs/plugins.md.
