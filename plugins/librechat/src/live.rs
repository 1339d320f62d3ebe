//! Incremental state of the pipeline for one agent: what each message is cut to and how many
//! tokens it keeps at each stage, kept up to date between calls from what changed (appended
//! messages, the consumed boundary, the tool-result count when a recency cap can bind, the
//! contextPruning boundaries), so that a call costs O(changed + ops emitted) instead of
//! re-evaluating every message that fits in the budget.
//!
//! Values are exact for positions `>= h` (the *live* region, just below the last cut); below `h`
//! they are left as they were (stale) and recomputed when a cut reaches down there. Sums over a
//! range `[i, n)` with `i >= h` only involve live values, so the Fenwick tree over all positions
//! answers `getMessagesWithinTokenLimit` for the live region exactly.
//!
//! `engine::LibreChat::reference` runs the from-scratch pipeline; tests check that both give the
//! same decisions over random sessions.

use crate::engine::{is_tool_result, Pipeline, CONTEXT_PRUNING, EMERGENCY, MASKING, PREFLIGHT};
use crate::trim::{self, Cut};
use ctxlab_plugin_api::Role;
use std::collections::BTreeMap;

/// Prefix sums with point updates (1-based inside).
#[derive(Debug)]
pub(crate) struct Fenwick {
    tree: Vec<u64>,
}

impl Default for Fenwick {
    fn default() -> Self {
        Fenwick { tree: vec![0] }
    }
}

impl Fenwick {
    pub(crate) fn len(&self) -> usize {
        self.tree.len() - 1
    }
    /// Appends a value at position `len()`.
    pub(crate) fn push(&mut self, v: u64) {
        let p = self.tree.len();
        let low = p & p.wrapping_neg();
        let node = v
            .wrapping_add(self.prefix(p - 1))
            .wrapping_sub(self.prefix(p - low));
        self.tree.push(node);
    }
    /// Adds `delta` (two's complement) at position `i`.
    pub(crate) fn add(&mut self, i: usize, delta: u64) {
        let mut p = i + 1;
        while p < self.tree.len() {
            self.tree[p] = self.tree[p].wrapping_add(delta);
            p += p & p.wrapping_neg();
        }
    }
    /// Sum of the first `i` values.
    pub(crate) fn prefix(&self, i: usize) -> u64 {
        let mut p = i;
        let mut s = 0u64;
        while p > 0 {
            s = s.wrapping_add(self.tree[p]);
            p &= p - 1;
        }
        s
    }
    /// Largest `i` in `0..=len()` with `prefix(i) <= t` (values are non-negative).
    pub(crate) fn last_le(&self, t: u64) -> usize {
        let n = self.len();
        let mut pos = 0;
        let mut rem = t;
        let mut step = if n == 0 {
            0
        } else {
            1usize << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next] <= rem {
                pos = next;
                rem -= self.tree[next];
            }
            step >>= 1;
        }
        pos
    }
}

/// What one message keeps at each stage (`t[k - 1]` = tokens after stage k) and its final cut.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub t0: u64,
    pub t: [u64; 4],
    pub cut: Option<Cut>,
    /// `(next cut position, longest message strictly between, a pinned message between)`:
    /// whether a range may run on to the next cut message, cached while that one is the next.
    gap: Option<(usize, u64, bool)>,
}

/// The parameters values depend on that change only at rare points (pressure crossing 80 % or a
/// fading band, a new calibration): when they change every value is stale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Key {
    pub masking: bool,
    pub preflight_base: Option<u64>,
    pub pruning: bool,
}

/// The per-call parameters the values were last brought up to date with.
#[derive(Debug, Clone, Copy, Default)]
struct Applied {
    n: usize,
    count: u64,
    consumed_end: usize,
    pruning: Option<(usize, usize)>,
}

#[derive(Debug, Default)]
pub(crate) struct Live {
    key: Option<Key>,
    /// Values at positions `>= h` are exact.
    h: usize,
    /// Final-stage tokens of each message (what the Fenwick tree sums).
    v: Vec<u64>,
    fen: Fenwick,
    /// Messages some stage shortens (or that have a cut), by position.
    entries: BTreeMap<usize, Entry>,
    /// Tool results longer than the smallest recency cap of the key, from `long_from` on: the
    /// only ones whose value can follow the tool-result count.
    long: Vec<usize>,
    long_from: usize,
    /// Smallest recency cap of the key's pre-flight base (`u64::MAX`: no pre-flight stage).
    capmin: u64,
    applied: Applied,
    /// Position below which `entries` and `long` were last trimmed.
    trimmed_to: usize,
}

/// Largest position `i` in `0..n` whose age `(n - i) / n` (as the pipeline computes it) is at
/// least `ratio`, or -1.
fn aged_until(n: usize, ratio: f64) -> i64 {
    if n == 0 {
        return -1;
    }
    let nf = n as f64;
    let aged = |i: i64| (nf - i as f64) / nf >= ratio;
    let mut i = ((nf * (1.0 - ratio)).floor() as i64).clamp(-1, n as i64 - 1);
    while i + 1 < n as i64 && aged(i + 1) {
        i += 1;
    }
    while i >= 0 && !aged(i) {
        i -= 1;
    }
    i
}

fn span(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

impl Live {
    fn eval(pipe: &Pipeline<'_, '_>, i: usize) -> Option<Entry> {
        let m = pipe.call.msg(i);
        let candidate = !m.is_pinned()
            && (is_tool_result(&m) || (m.role() == Role::Assistant && m.has_tool_calls()));
        if !candidate {
            return None;
        }
        let t0 = m.tokens();
        let t = [MASKING, PREFLIGHT, CONTEXT_PRUNING, EMERGENCY].map(|s| pipe.tokens(i, s));
        let cut = pipe.cut(i, EMERGENCY).map(|c| c.0);
        (cut.is_some() || t.iter().any(|&x| x != t0)).then_some(Entry {
            t0,
            t,
            cut,
            gap: None,
        })
    }

    /// Brings position `i` (already in `v`) up to date.
    fn refresh(&mut self, pipe: &Pipeline<'_, '_>, i: usize) {
        let e = Live::eval(pipe, i);
        let value = e
            .as_ref()
            .map_or_else(|| pipe.call.msg(i).tokens(), |e| e.t[3]);
        let old = self.v[i];
        if value != old {
            self.fen.add(i, value.wrapping_sub(old));
            self.v[i] = value;
        }
        match e {
            Some(mut e) => {
                if let Some(prev) = self.entries.get_mut(&i) {
                    if prev.cut == e.cut {
                        e.gap = prev.gap;
                    }
                    *prev = e;
                } else {
                    self.entries.insert(i, e);
                }
            }
            None => {
                self.entries.remove(&i);
            }
        }
    }

    fn refresh_range(&mut self, pipe: &Pipeline<'_, '_>, from: usize, to: usize) {
        for i in from.max(self.h)..to.min(self.v.len()) {
            self.refresh(pipe, i);
        }
    }

    fn is_long(&self, pipe: &Pipeline<'_, '_>, i: usize) -> bool {
        let m = pipe.call.msg(i);
        !m.is_pinned() && is_tool_result(&m) && m.chars() > self.capmin
    }

    /// Brings every live value up to date with this call's stages (emergency truncation is not
    /// modelled here: calls that need it run the from-scratch pipeline).
    pub(crate) fn update(&mut self, pipe: &Pipeline<'_, '_>) {
        let s = &pipe.stages;
        let n = pipe.call.len();
        let key = Key {
            masking: s.consumed_end > 0 || s.preflight_base.is_some() || s.pruning.is_some(),
            preflight_base: s.preflight_base,
            pruning: s.pruning.is_some(),
        };
        let now = Applied {
            n,
            count: pipe.index.tool_count(),
            consumed_end: s.consumed_end,
            pruning: s.pruning,
        };
        let old_n = self.v.len().min(n);
        if self.v.len() > n {
            // The history shrank without the index noticing: start over.
            *self = Live::default();
        }
        if self.key != Some(key) {
            self.key = Some(key);
            self.capmin = match s.preflight_base {
                Some(base) => trim::recency_cap(trim::max_result_chars(base), 0, 2),
                None => u64::MAX,
            };
            // Everything already there is stale; the cut's search brings it back as needed.
            self.h = self.v.len();
            self.long.clear();
            self.long_from = self.h;
        } else {
            let was = self.applied;
            let (a, b) = span(was.consumed_end, now.consumed_end);
            self.refresh_range(pipe, a, b);
            if let (Some((lo0, hi0)), Some((lo1, hi1))) = (was.pruning, now.pruning) {
                let (a, b) = span(lo0, lo1);
                self.refresh_range(pipe, a, b);
                let (a, b) = span(hi0, hi1);
                self.refresh_range(pipe, a, b);
                let p = &pipe.cfg.pruning;
                for ratio in [p.hard_clear_ratio, p.soft_trim_ratio] {
                    let before = aged_until(was.n, ratio);
                    let after = aged_until(n, ratio);
                    let (a, b) = (before.min(after), before.max(after));
                    self.refresh_range(pipe, (a + 1).max(0) as usize, (b + 1).max(0) as usize);
                }
            }
            if was.count != now.count && self.capmin != u64::MAX {
                let from = if self.capmin < trim::MASKED_RESULT_MAX_CHARS {
                    self.h
                } else {
                    self.h.max(now.consumed_end)
                };
                let k = self.long.partition_point(|&p| p < from);
                for j in k..self.long.len() {
                    let i = self.long[j];
                    if i < old_n {
                        self.refresh(pipe, i);
                    }
                }
            }
        }
        for i in self.v.len()..n {
            let t0 = pipe.call.msg(i).tokens();
            self.v.push(t0);
            self.fen.push(t0);
            self.refresh(pipe, i);
            if self.is_long(pipe, i) {
                self.long.push(i);
            }
        }
        self.applied = now;
    }

    /// Makes positions from `h` on live.
    fn lower(&mut self, pipe: &Pipeline<'_, '_>, h: usize) {
        if h >= self.h {
            return;
        }
        let old = self.h;
        self.h = h;
        self.refresh_range(pipe, h, old);
        if h < self.long_from {
            let mut front: Vec<usize> = (h..self.long_from)
                .filter(|&i| self.is_long(pipe, i))
                .collect();
            front.extend_from_slice(&self.long);
            self.long = front;
            self.long_from = h;
        }
    }

    /// `Pipeline::fit` over the live values: the first kept position.
    pub(crate) fn fit(&mut self, pipe: &Pipeline<'_, '_>, floor: usize, available: u64) -> usize {
        let n = self.v.len();
        let mut i = loop {
            let total = self.fen.prefix(n) as i128;
            // used(i) = 3 + P(n) - P(i). The walk stops at the largest i where used(i) reached
            // `available`, or where the next message would not fit, or at the floor.
            let t = total + 3 - available as i128;
            let reached = (t >= 0).then(|| self.fen.last_le(t.min(u64::MAX as i128) as u64));
            let next_over = (t >= 1).then(|| self.fen.last_le((t - 1) as u64) + 1);
            let r = floor
                .max(reached.unwrap_or(0))
                .max(next_over.unwrap_or(0))
                .min(n);
            if self.h == 0 || r > self.h {
                break r;
            }
            let step = (n - self.h).max(64);
            self.lower(pipe, self.h.saturating_sub(step));
        };
        if i < n && is_tool_result(&pipe.call.msg(i)) {
            if let Some(j) =
                (i..n).find(|&j| matches!(pipe.call.msg(j).role(), Role::Assistant | Role::User))
            {
                i = j;
            }
        }
        i
    }

    /// After a call cut at `cut`: positions well below it stop being kept up to date.
    pub(crate) fn settle(&mut self, cut: usize) {
        let n = self.v.len();
        let slack = 64 + n.saturating_sub(cut) / 4;
        self.h = self.h.max(cut.saturating_sub(slack)).min(n);
        if self.h >= self.trimmed_to + 8192 {
            self.entries = self.entries.split_off(&self.h);
            let k = self.long.partition_point(|&p| p < self.h);
            self.long.drain(..k);
            self.long_from = self.long_from.max(self.h);
            self.trimmed_to = self.h;
        }
    }

    /// Per-stage token totals of `[cut, n)` and how many messages each stage shortened, from the
    /// raw total of the range and the shortened messages only.
    pub(crate) fn stage_totals(&self, cut: usize, raw: u64) -> ([u64; 5], [usize; 5]) {
        let mut totals = [raw; 5];
        let mut counts = [0usize; 5];
        for e in self.entries.range(cut..).map(|(_, e)| e) {
            let mut prev = e.t0;
            for k in 1..5 {
                let t = e.t[k - 1];
                totals[k] = totals[k] - e.t0 + t;
                if t < prev {
                    counts[k] += 1;
                }
                prev = t;
            }
        }
        (totals, counts)
    }

    /// The edit ranges of `[cut, n)` from the newest back, at most `want` of them (the pipeline's
    /// `edit_ranges` in reverse order: whether two cuts share a range depends only on the two
    /// and the messages between them). Returns the ranges and whether there are more.
    pub(crate) fn edit_ranges_back(
        &mut self,
        pipe: &Pipeline<'_, '_>,
        cut: usize,
        want: usize,
    ) -> (Vec<(usize, usize, Cut)>, bool) {
        let mut out: Vec<(usize, usize, Cut)> = Vec::new();
        let mut open: Option<(usize, usize, Cut)> = None;
        let call = pipe.call;
        for (&i, e) in self.entries.range_mut(cut..).rev() {
            let Some(c) = e.cut else { continue };
            if let Some((s, end, oc)) = open {
                // Runs on from `i` to `s` when both are the same result cut and what lies
                // between is short enough to be left as it is.
                let merge = oc == c && matches!(c, Cut::Result { .. }) && {
                    let ht = c.result_head_tail().unwrap_or(0);
                    let (longest, pinned) = match e.gap {
                        Some((next, longest, pinned)) if next == s => (longest, pinned),
                        _ => {
                            let mut longest = 0;
                            let mut pinned = false;
                            for j in i + 1..s {
                                let m = call.msg(j);
                                longest = longest.max(m.chars());
                                pinned |= m.is_pinned();
                            }
                            e.gap = Some((s, longest, pinned));
                            (longest, pinned)
                        }
                    };
                    !pinned && longest <= ht
                };
                if merge {
                    open = Some((i, end, oc));
                    continue;
                }
                out.push((s, end, oc));
                if out.len() >= want {
                    return (out, true);
                }
            }
            open = Some((i, i + 1, c));
        }
        if let Some(r) = open {
            out.push(r);
        }
        (out, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenwick_matches_plain_prefix_sums() {
        let mut f = Fenwick::default();
        let mut plain: Vec<u64> = Vec::new();
        let mut x = 12345u64;
        for step in 0..3_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 33) % 50;
            if step % 3 == 0 && !plain.is_empty() {
                let i = (x >> 20) as usize % plain.len();
                let new = (x >> 40) % 50;
                f.add(i, new.wrapping_sub(plain[i]));
                plain[i] = new;
            } else {
                f.push(v);
                plain.push(v);
            }
            let mut sums = vec![0u64];
            for &p in &plain {
                sums.push(sums.last().unwrap() + p);
            }
            let probe = (x >> 7) as usize % (plain.len() + 1);
            assert_eq!(f.prefix(probe), sums[probe]);
            let t = (x >> 11) % (sums.last().unwrap() + 20);
            let want = sums.iter().rposition(|&s| s <= t).unwrap();
            assert_eq!(f.last_le(t), want, "t {t} sums {sums:?}");
        }
    }

    #[test]
    fn aged_until_is_the_last_position_old_enough() {
        for n in [0usize, 1, 2, 3, 7, 10, 99, 100, 1_001] {
            for ratio in [0.0, 0.1, 0.3, 0.5, 0.51, 0.99, 1.0, 1.5] {
                let nf = n as f64;
                let want = (0..n)
                    .rev()
                    .find(|&i| (nf - i as f64) / nf >= ratio)
                    .map_or(-1, |i| i as i64);
                assert_eq!(aged_until(n, ratio), want, "n {n} ratio {ratio}");
            }
        }
    }
}
