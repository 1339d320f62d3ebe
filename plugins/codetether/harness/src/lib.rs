//! Nothing here: this package holds the differential tests of the CodeTether plugin against
//! codetether-agent's own code (`tests/`). Cargo needs a library or binary target to build them.
