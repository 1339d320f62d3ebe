//! Fixture: panics in decide.
