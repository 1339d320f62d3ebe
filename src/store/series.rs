//! The per-call series of a run as stored: postcard (serde, varint integers), about an eighth of
//! its JSON (docs/library.md has the measurement). Postcard is not self-describing, so the stored
//! format names the layout and a row of another layout is refused with a clear message.

use crate::replay::Sample;

pub fn encode(samples: &[Sample]) -> Result<Vec<u8>, String> {
    postcard::to_stdvec(samples).map_err(|e| e.to_string())
}

pub fn decode(bytes: &[u8]) -> Result<Vec<Sample>, String> {
    postcard::from_bytes(bytes).map_err(|e| e.to_string())
}
