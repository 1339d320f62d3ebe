//! A fast hash for maps keyed by short strings the host hands over (tool ids, tool names): FNV-1a.
//! Not keyed, so only for maps a strategy looks things up in (never iterated for output: the
//! order is unspecified), where std's SipHash is a visible share of a call's cost.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bits.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` hashed with [`Fnv`].
pub type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_1a_matches_the_reference_values() {
        let h = |s: &[u8]| {
            let mut f = Fnv::default();
            f.write(s);
            f.finish()
        };
        // Published FNV-1a 64-bit test vectors.
        assert_eq!(h(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(h(b"foobar"), 0x8594_4171_f739_67e8);
        let mut m: FnvMap<&str, u32> = FnvMap::default();
        m.insert("toolu_01", 1);
        m.insert("toolu_02", 2);
        assert_eq!(m.get("toolu_02"), Some(&2));
    }
}
