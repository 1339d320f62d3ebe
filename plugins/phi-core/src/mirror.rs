//! Per-agent mirror of the working context: one slot per message with what phi-core derives from
//! it (its estimate, whether it is a tool result, level 1's cut of it), kept in step with the host's
//! view so no call re-reads a message it has already read.
//!
//! - New messages are read once, when they arrive (O(new) per call).
//! - A compaction knows the layout the host will hold after its ops: messages it kept stay in their
//!   slots (moved to their new positions), messages it rewrote (truncated outputs, the summaries
//!   and markers it wrote) are marked dirty and re-read from the view at the next call.
//! - Level 1's head/tail cut of a tool output is worked out the first time a compaction looks at
//!   it, then kept until the host rewrites that message.
//!
//! If the view does not continue the mirrored layout (length or the ids at both ends differ), the
//! mirror is rebuilt from the view: the strategy then decides exactly as it would from scratch.

use crate::estimate::{units, Shape, Unit, UnitKind};
use crate::tiers::level1;
use ctxlab_plugin_api::{Call, Msg};

/// What level 1 does with a message.
#[derive(Debug, Clone, PartialEq)]
pub enum L1 {
    /// Not worked out yet.
    Unknown,
    /// Not a tool result, or level 1 gives back the same text.
    Keep,
    /// The text level 1 leaves, and the estimate of each of the message's phi-core messages
    /// after it.
    Cut {
        text: String,
        /// The parts of a message of several phi-core messages, NUL-separated (`OP_MASK`).
        parts: Option<String>,
        units: Vec<u64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub id: u64,
    /// phi-core's estimate of the message (the sum over its phi-core messages).
    pub est: u64,
    pub shape: Shape,
    /// Its phi-core messages (none for a system message).
    pub units: Vec<Unit>,
    pub l1: L1,
}

impl Slot {
    fn of(m: &Msg<'_>) -> Slot {
        let mut us = Vec::with_capacity(1);
        let shape = units(m, &mut us);
        let l1 = if us.iter().any(|u| u.kind == UnitKind::ToolResult) {
            L1::Unknown
        } else {
            L1::Keep
        };
        Slot {
            id: m.id(),
            est: us.iter().map(|u| u.est).sum(),
            shape,
            units: us,
            l1,
        }
    }

    /// A slot the host will rewrite: re-read at the next call.
    pub fn rewritten(est: u64) -> Slot {
        Slot {
            id: 0,
            est,
            shape: Shape::User,
            units: Vec::new(),
            l1: L1::Unknown,
        }
    }
}

#[derive(Default)]
pub struct Mirror {
    pub slots: Vec<Slot>,
    /// Sum of the slots' estimates.
    pub sum: u64,
    valid: bool,
    /// Positions (in the mirrored layout) whose messages the host rewrote.
    dirty: Vec<usize>,
}

impl Mirror {
    /// Brings the mirror in step with the call's view and returns phi-core's estimate of it:
    /// O(new messages + rewritten messages), or O(messages) when the view does not continue it.
    pub fn sync(&mut self, call: &Call<'_>) -> u64 {
        let len = call.len();
        let new = (call.new_messages() as usize).min(len);
        let old = len - new;
        let mut ok = self.valid && self.slots.len() == old && self.dirty.iter().all(|&p| p < old);
        if ok {
            for &p in &self.dirty {
                let s = Slot::of(&call.msg(p));
                self.sum = self.sum - self.slots[p].est + s.est;
                self.slots[p] = s;
            }
            ok = old == 0
                || (self.slots[0].id == call.msg(0).id()
                    && self.slots[old - 1].id == call.msg(old - 1).id());
        }
        self.dirty.clear();
        let from = if ok {
            old
        } else {
            self.slots.clear();
            self.sum = 0;
            0
        };
        self.slots.reserve(len - from);
        for m in call.messages().skip(from) {
            let s = Slot::of(&m);
            self.sum += s.est;
            self.slots.push(s);
        }
        self.valid = true;
        self.sum
    }

    /// Level 1's cut of the message at `i`, worked out once per message version.
    pub fn l1(&mut self, call: &Call<'_>, i: usize, max_lines: usize) -> &L1 {
        let slot = &mut self.slots[i];
        if slot.l1 == L1::Unknown {
            let m = call.msg(i);
            slot.l1 = match level1(&m, &slot.shape, max_lines) {
                None => L1::Keep,
                Some((text, parts, units)) => L1::Cut { text, parts, units },
            };
        }
        &self.slots[i].l1
    }

    /// The slot at `i`, leaving a placeholder (a compaction moves the slots it keeps).
    pub fn take(&mut self, i: usize) -> Slot {
        std::mem::replace(&mut self.slots[i], Slot::rewritten(0))
    }

    /// The layout the host holds after this call's compaction; `dirty` are the positions it
    /// rewrote.
    pub fn compacted(&mut self, layout: Vec<Slot>, dirty: Vec<usize>) {
        self.sum = layout.iter().map(|s| s.est).sum();
        self.slots = layout;
        self.dirty = dirty;
    }

    /// Forget everything: the next call rebuilds from its view.
    #[cfg(test)]
    pub fn reset(&mut self) {
        *self = Mirror::default();
    }

    /// Whether the mirror (after `sync`) is what a rebuild from this view would give, level 1
    /// cuts included where known.
    #[cfg(test)]
    pub fn check(&self, call: &Call<'_>, max_lines: usize) -> Result<(), String> {
        let mut fresh = Mirror::default();
        let len = call.len();
        for m in call.messages() {
            let s = Slot::of(&m);
            fresh.sum += s.est;
            fresh.slots.push(s);
        }
        if fresh.sum != self.sum || self.slots.len() != len {
            return Err(format!(
                "mirror sum {} over {} slots, view {} over {len}",
                self.sum,
                self.slots.len(),
                fresh.sum
            ));
        }
        for i in 0..len {
            let a = &self.slots[i];
            let b = &fresh.slots[i];
            if (a.id, a.est, &a.shape, &a.units) != (b.id, b.est, &b.shape, &b.units) {
                return Err(format!("slot {i}: mirror {a:?}, view {b:?}"));
            }
            if a.l1 != L1::Unknown && b.l1 != L1::Keep {
                let want = fresh.l1(call, i, max_lines).clone();
                if a.l1 != want {
                    return Err(format!("slot {i}: level 1 {:?}, view {want:?}", a.l1));
                }
            }
        }
        Ok(())
    }
}
