//! The third-party logs the tests read: ../shared/real-logs beside the checkout (SOURCES.md
//! there says where each comes from). A test that needs one fails loudly when it is missing; it
//! never skips.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/real-logs`, beside the checkout.
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-logs"))
}

/// The real log (file or folder) at `rel` below [`root`]; panics, naming it, when it is missing.
pub fn real(rel: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(
        p.exists(),
        "real log {} is missing: the tests need ../shared/real-logs beside the checkout",
        p.display()
    );
    p
}
