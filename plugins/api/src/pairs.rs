//! Where a strategy may cut the working context without splitting a tool call from its result.
//!
//! The host rejects a Drop or Summarize whose range holds a tool-call message but not the
//! result(s) answering it, or the other way round. A range `[s, e)` is safe exactly when both of its
//! ends are safe cuts: no call before the cut is answered at or after it.

use crate::hash::FnvMap;
use crate::sdk::Call;

/// The safe cut points of one call's view: cut `c` lies between positions `c - 1` and `c`
/// (`0..=len`). Built in O(messages + tools); build it only when a compaction fires.
pub struct Cuts {
    /// First position considered: cuts before it are not checked.
    lo: usize,
    /// `safe[c - lo]` for cuts `lo..=len`.
    safe: Vec<bool>,
}

impl Cuts {
    pub fn of(call: &Call<'_>) -> Cuts {
        Cuts::from_position(call, 0)
    }

    /// The cuts of positions `lo..` only, in O(len - lo): for a strategy that only ever cuts inside
    /// a recent stretch and knows no call before `lo` is answered at or after it.
    pub fn from_position(call: &Call<'_>, lo: usize) -> Cuts {
        let len = call.len();
        let lo = lo.min(len);
        let mut open = vec![0i64; len - lo + 2];
        let mut calls: FnvMap<&[u8], usize> = FnvMap::default();
        for p in lo..len {
            let m = call.msg(p);
            for t in m.tools() {
                if !t.is_result() {
                    calls.insert(t.id_bytes(), p);
                } else if let Some(&q) = calls.get(t.id_bytes()) {
                    if q < p {
                        open[q + 1 - lo] += 1;
                        open[p + 1 - lo] -= 1;
                    }
                }
            }
        }
        let mut safe = Vec::with_capacity(len - lo + 1);
        let mut depth = 0i64;
        for d in open.iter().take(len - lo + 1) {
            depth += d;
            safe.push(depth == 0);
        }
        Cuts { lo, safe }
    }

    /// Cuts before the first considered position count as safe.
    pub fn is_safe(&self, cut: usize) -> bool {
        if cut < self.lo {
            return true;
        }
        self.safe.get(cut - self.lo).copied().unwrap_or(false)
    }

    /// The nearest safe cut at or before `cut` (0, or the first considered position, is always safe).
    pub fn at_or_before(&self, cut: usize) -> usize {
        if cut < self.lo {
            return cut;
        }
        let mut c = (cut - self.lo).min(self.safe.len().saturating_sub(1));
        while c > 0 && !self.safe[c] {
            c -= 1;
        }
        c + self.lo
    }

    /// The nearest safe cut at or after `cut` (the end of the view is always safe).
    pub fn at_or_after(&self, cut: usize) -> usize {
        if cut < self.lo {
            return cut;
        }
        let last = self.safe.len().saturating_sub(1);
        let mut c = (cut - self.lo).min(last);
        while c < last && !self.safe[c] {
            c += 1;
        }
        c + self.lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{TestCall, TestMsg};
    use crate::{Decision, Strategy};

    struct Probe(Vec<bool>);
    impl Strategy for Probe {
        fn decide(&mut self, call: &Call<'_>, _: &mut Decision) -> Result<(), String> {
            let c = Cuts::of(call);
            self.0 = (0..=call.len()).map(|i| c.is_safe(i)).collect();
            assert_eq!(c.at_or_before(2), 1);
            assert_eq!(c.at_or_after(2), 4);
            Ok(())
        }
        fn export(&self, _: &str) -> Result<String, String> {
            Ok(String::new())
        }
    }

    #[test]
    fn a_call_and_its_late_result_make_the_cuts_between_them_unsafe() {
        let call = TestCall::new(vec![
            TestMsg::user("go"),
            TestMsg::tool_call("a", "read", "{}"),
            TestMsg::user("injected"),
            TestMsg::tool_result("a", "read", "text"),
            TestMsg::assistant("done"),
        ]);
        let mut p = Probe(Vec::new());
        call.decide(&mut p).unwrap();
        assert_eq!(p.0, vec![true, true, false, false, true, true]);
    }

    struct Tail(Vec<bool>);
    impl Strategy for Tail {
        fn decide(&mut self, call: &Call<'_>, _: &mut Decision) -> Result<(), String> {
            let c = Cuts::from_position(call, 2);
            self.0 = (0..=call.len()).map(|i| c.is_safe(i)).collect();
            assert_eq!(c.at_or_before(4), 2);
            assert_eq!(c.at_or_after(3), 5);
            Ok(())
        }
        fn export(&self, _: &str) -> Result<String, String> {
            Ok(String::new())
        }
    }

    #[test]
    fn cuts_from_a_position_check_only_the_tail() {
        let call = TestCall::new(vec![
            TestMsg::tool_call("a", "read", "{}"),
            TestMsg::tool_result("a", "read", "text"),
            TestMsg::tool_call("b", "read", "{}"),
            TestMsg::user("injected"),
            TestMsg::tool_result("b", "read", "text"),
        ]);
        let mut p = Tail(Vec::new());
        call.decide(&mut p).unwrap();
        assert_eq!(p.0, vec![true, true, true, false, false, true]);
    }
}
