//! One agent's working context during a replay: the host-owned `MessageView` array handed to the
//! strategy, the entries behind it, and the indexes that keep per-call work independent of the
//! history's length (token prefix sums, pinned prefix counts, tool-pair spans, fact occurrences).
//!
//! Invariants:
//! - `entries[i]` and `views[i]` describe the same message; views point into the session (text
//!   of single-part messages, tool ids), into the `Prepared` session (joined texts), into the
//!   context's tool arena, or into the entry's own boxed text and tools, none of which move;
//! - `entries[i].key` increases with `i`: a session message's key is its index in the session
//!   (an agent receives its messages in log order), a summary takes the key of the first message
//!   it replaces, so a position range maps to a key range;
//! - `prefix`, `pinned` and `pairs` are valid for every position; a persistent edit rebuilds them
//!   from the first position it touched, appends extend them.

use super::facts::{FactId, Facts};
use super::prepared::Prepared;
use super::validate::{EditSig, Plan};
use crate::model::{Message, MsgIdx, Part, Role, Session};
use crate::tokens::{TextTally, TokenCounter};
use ctxlab_plugin_api::abi::*;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

pub(crate) struct Entry<'a> {
    /// Order key, increasing with position.
    pub key: u64,
    /// The session message this entry shows; `None` for a summary the replay created.
    pub msg: Option<MsgIdx>,
    /// Facts the model sees verbatim in this entry (the prepared ones until an edit).
    pub facts: Cow<'a, [FactId]>,
    /// Text owned by the replay (edits, summaries).
    text: Option<Box<str>>,
    /// Tool views owned by the entry once an edit gave them new bodies.
    tools: Option<Box<[ToolView]>>,
    /// Summaries: index in `Coverage`.
    summary: u32,
    /// Keys of the entries holding the other side of this entry's tool calls/results.
    partners: Partners,
    /// Tokens of this entry known from the log (`Prepared::known`), and what they weigh in
    /// the view (`known · Context::scale`); 0 once an edit replaced the message's content.
    known: u64,
    known_view: u64,
    /// The counter's tokens of the entry's text (`TokenCounter::count_text`), once an edit
    /// needed them (`TEXT_TOKENS_UNKNOWN` before): every new text of the entry is measured
    /// against them, and LibreChat cuts a long tool result anew at every call. Kept in the
    /// entry, not in `Context::edits`: a hash lookup per edited message was 3 % of a LibreChat
    /// replay (perf). Reset whenever an edit changes or removes the entry (`Context::apply`).
    text_tokens: Cell<u64>,
    /// Its slot in `Context::cut_slots` once a cut of its text was counted (`NO_CUT_SLOT`
    /// before); freed with `text_tokens`.
    cut_slot: Cell<u32>,
}

const TEXT_TOKENS_UNKNOWN: u64 = u64::MAX;
const NO_CUT_SLOT: u32 = u32::MAX;

/// A few keys, inline while there are at most two (a call and its result, or a message with two
/// tool parts: almost every entry), so appending a tool message allocates nothing.
#[derive(Default)]
enum Partners {
    #[default]
    None,
    One(u64),
    Two(u64, u64),
    Many(Vec<u64>),
}

impl Partners {
    fn push(&mut self, k: u64) {
        *self = match std::mem::take(self) {
            Partners::None => Partners::One(k),
            Partners::One(a) => Partners::Two(a, k),
            Partners::Two(a, b) => Partners::Many(vec![a, b, k]),
            Partners::Many(mut v) => {
                v.push(k);
                Partners::Many(v)
            }
        };
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (a, b, rest): (Option<u64>, Option<u64>, &[u64]) = match self {
            Partners::None => (None, None, &[]),
            Partners::One(a) => (Some(*a), None, &[]),
            Partners::Two(a, b) => (Some(*a), Some(*b), &[]),
            Partners::Many(v) => (None, None, v),
        };
        a.into_iter().chain(b).chain(rest.iter().copied())
    }

    /// Forgets one occurrence of `k` (a message answering several calls of one message holds
    /// its key once per pair).
    fn remove_one(&mut self, k: u64) {
        let mut kept: Vec<u64> = self.iter().collect();
        if let Some(p) = kept.iter().position(|&x| x == k) {
            kept.remove(p);
        }
        *self = Partners::None;
        for p in kept {
            self.push(p);
        }
    }

    fn remove(&mut self, k: u64) {
        let kept: Vec<u64> = self.iter().filter(|&p| p != k).collect();
        *self = Partners::None;
        for p in kept {
            self.push(p);
        }
    }
}

/// One agent's context, borrowing the session and its preparation (`'a`).
pub(crate) struct Context<'a> {
    session: &'a Session,
    prepared: &'a Prepared,
    pub entries: Vec<Entry<'a>>,
    pub views: Vec<MessageView>,
    /// `prefix[i]` = tokens of `views[..i]`.
    prefix: Vec<u64>,
    /// `pinned[i]` = pinned messages among `views[..i]`.
    pinned: Vec<u32>,
    pairs: SpanTree,
    /// Tool views of appended messages. Its capacity is the agent's tool parts in the session,
    /// reserved up front, so it never reallocates and views may point into it.
    tool_arena: Vec<ToolView>,
    /// ABI 1.6: `parts[i]` lists the parts of `views[i]` (empty for a summary or an edited
    /// message, whose view has no FLAG_PARTS). The lists point into the `Prepared`'s parts,
    /// made once per session (`Prepared::part_list`).
    pub parts: Vec<PartList>,
    /// Fact id → keys (ascending) of the entries that hold it verbatim.
    /// (A deque: compactions mostly remove a fact's oldest occurrences.)
    occurrences: Vec<VecDeque<u64>>,
    /// `marks[f] == epoch`: fact `f` was already taken by the current `distinct_facts`.
    marks: Vec<u32>,
    epoch: u32,
    /// What simulated summaries stand for (the upper bound of recall), see `Coverage`.
    pub coverage: Coverage,
    /// Reused for the distinct facts of a removed or summarized range.
    scratch: Vec<FactId>,
    /// Entry key → the text edits worked out for it (validation is `&self`, hence the cell).
    /// Strategies that filter the view send the same edits call after call; an edit that
    /// changes or removes the entry forgets them.
    edits: RefCell<FxHashMap<u64, EntryEdits>>,
    /// What `count_cut` remembers of the entries' cuts (`Entry::cut_slot`).
    cut_slots: RefCell<CutSlots>,
    /// The this-call content edits of the agent's last decision, one per message, by key
    /// (ascending): what an ABI 1.7 `Repeat` op makes again. An edit that changes or removes the
    /// entry forgets its own. `standing_spare` is the previous list, kept for its memory.
    standing: StandingList,
    standing_spare: Vec<Standing>,
    /// Σ over `standing` of each message's tokens now, of its edit's, and of what the edit takes
    /// off (at least 0 each): a decision that repeats most of them is measured from these, less
    /// the few it does not repeat.
    standing_sums: (u64, u64, u64),
    /// The agent's requests so far and whether its last message was from the assistant.
    pub requests: u32,
    awaiting_request: bool,
    pub assistant_turns: u64,
    /// View tokens per known token: the inverse of the calibration's ratio, so that counted
    /// and known tokens add up in the counter's units and `overhead + ratio · total` puts
    /// known tokens back at their recorded size (1 when uncalibrated).
    scale: f64,
    /// Known tokens in the context (recorded units) and their weight in the view.
    known: u64,
    known_view: u64,
    /// Keys of the entries whose transient tokens (`Prepared::transient`) are still there.
    transient: Vec<u64>,
}

/// One message's this-call edit in the agent's last decision (`Context::standing`).
struct Standing {
    key: u64,
    /// Its position (kept up to date by `Context::apply`).
    pos: usize,
    /// Its text; moved (not shared again) into the next list when the next decision repeats
    /// it, so a repeated edit never touches the text's reference count (a cache miss each, a
    /// thousand a call for LibreChat at a 200K window).
    text: Rc<str>,
    tokens: u64,
    /// The message's tokens now (kept up to date by `Context::drop_transient`).
    before: u64,
}

/// The standing edits, in key order: `v[front..]`. The entries before `front` were dropped
/// from the front by a decision that kept the repeated stretches in place (`set_standing`: the
/// usual case, a window that slides), and stay until they outnumber the live ones, so such a
/// decision costs what it adds, changes and drops, not a copy of the list.
#[derive(Default)]
struct StandingList {
    v: Vec<Standing>,
    front: usize,
}

impl std::ops::Deref for StandingList {
    type Target = [Standing];
    fn deref(&self) -> &[Standing] {
        &self.v[self.front..]
    }
}

impl std::ops::DerefMut for StandingList {
    fn deref_mut(&mut self) -> &mut [Standing] {
        &mut self.v[self.front..]
    }
}

impl StandingList {
    fn drain(&mut self, r: std::ops::Range<usize>) -> std::vec::Drain<'_, Standing> {
        self.v.drain(self.front + r.start..self.front + r.end)
    }
}

impl Standing {
    fn sums(&self) -> (u64, u64, u64) {
        (
            self.before,
            self.tokens,
            self.before.saturating_sub(self.tokens),
        )
    }
}

fn add3(a: (u64, u64, u64), b: (u64, u64, u64)) -> (u64, u64, u64) {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2)
}

fn sub3(a: (u64, u64, u64), b: (u64, u64, u64)) -> (u64, u64, u64) {
    (
        a.0.saturating_sub(b.0),
        a.1.saturating_sub(b.1),
        a.2.saturating_sub(b.2),
    )
}

/// Edits remembered per entry (`Context::edited`).
const EDITS_PER_ENTRY: usize = 4;

/// What the context remembers of one entry's edits (`Context::edited`): forgotten whenever an
/// edit changes or removes the entry, so all of it is about the entry's text now.
#[derive(Default)]
struct EntryEdits {
    /// The host's own truncations of the entry's text (`Context::edited`). A mask's text comes
    /// whole from the plugin and is not cached: checking it against earlier ones (memcmp of
    /// texts that share their head) cost more than working it out (a count of the new text).
    list: Vec<CachedEdit>,
}

/// Per entry whose text was cut (`Entry::cut_slot`), the tallies of the pieces its latest cuts
/// keep (`Context::count_cut`). Slots, not a hash map by key: at 1M messages the map's lookup
/// missed the cache at every cut (6 % of a LibreChat replay's time).
#[derive(Default)]
struct CutSlots {
    slots: Vec<Vec<CutPieces>>,
    free: Vec<u32>,
}

/// The two pieces an ABI 1.8 cut keeps of an entry's text, as a tallying counter counts them.
struct CutPieces {
    head: u64,
    tail: u64,
    tally: TextTally,
    /// A piece holds a NUL (ABI 1.4's separators: the cut text must be split to be counted).
    nul: bool,
}

struct CachedEdit {
    sig: OwnedSig,
    text: Rc<str>,
    tokens: u64,
}

#[derive(PartialEq, Eq)]
enum OwnedSig {
    Truncate {
        head: u64,
        tail: u64,
        marker: Box<str>,
    },
}

impl CachedEdit {
    fn is(&self, sig: &EditSig<'_>) -> bool {
        match (&self.sig, sig) {
            (
                OwnedSig::Truncate { head, tail, marker },
                EditSig::Truncate {
                    head: h,
                    tail: t,
                    marker: m,
                },
            ) => head == h && tail == t && &**marker == *m,
        }
    }
}

impl OwnedSig {
    fn of(sig: &EditSig<'_>) -> OwnedSig {
        match *sig {
            EditSig::Truncate { head, tail, marker } => OwnedSig::Truncate {
                head,
                tail,
                marker: marker.into(),
            },
        }
    }
}

/// What replaces a range of positions in a persistent edit.
pub(crate) enum Replacement {
    /// Removed: nothing replaces the range.
    Nothing,
    /// One summary message.
    Summary {
        role: Role,
        text: String,
        tokens: u64,
    },
    /// Each message in the range gets new text (same position, same key).
    Texts(Vec<(Rc<str>, u64)>),
    /// ABI 1.5 `DropResults`: each message in the range loses the tool results `remove` selects
    /// (their pairs with calls still here are separated), then gets new text as `Texts`.
    Results {
        texts: Vec<(Rc<str>, u64)>,
        remove: Vec<bool>,
    },
    /// Only flags change.
    Flags { set: u32, clear: u32 },
}

fn role_abi(r: Role) -> u32 {
    match r {
        Role::System => ROLE_SYSTEM,
        Role::User => ROLE_USER,
        Role::Assistant => ROLE_ASSISTANT,
        Role::Tool => ROLE_TOOL,
    }
}

pub(crate) fn model_role(r: u32) -> Role {
    match r {
        ROLE_SYSTEM => Role::System,
        ROLE_USER => Role::User,
        ROLE_ASSISTANT => Role::Assistant,
        _ => Role::Tool,
    }
}

pub(crate) fn sdk_role(r: ctxlab_plugin_api::Role) -> Role {
    match r {
        ctxlab_plugin_api::Role::System => Role::System,
        ctxlab_plugin_api::Role::User => Role::User,
        ctxlab_plugin_api::Role::Assistant => Role::Assistant,
        ctxlab_plugin_api::Role::Tool => Role::Tool,
    }
}

/// `MessageView::content_ascii/other` of a text the run wrote (an edit, a summary).
fn content_of(text: &str) -> (u32, u32) {
    let (a, o) = ctxlab_plugin_api::ascii_other_chars(text);
    (super::prepared::saturate(a), super::prepared::saturate(o))
}

/// Everything the model sees of a message as one text; borrowed when it is a single part.
pub(crate) fn message_text(m: &Message) -> std::borrow::Cow<'_, str> {
    let texts = m.parts.iter().filter_map(|p| match p {
        Part::Text { text } | Part::Thinking { text } => Some(text.as_str()),
        Part::ToolCall { args, .. } => Some(args.as_str()),
        Part::ToolResult { content, .. } => Some(content.as_str()),
        Part::Image { .. } => None,
    });
    let mut it = texts.clone();
    match (it.next(), it.next()) {
        (None, _) => "".into(),
        (Some(one), None) => one.into(),
        _ => texts.collect::<Vec<_>>().join("\n").into(),
    }
}

impl<'a> Context<'a> {
    /// An empty context for agent `a`. Its arrays reserve room for every message of the agent
    /// (address space only: pages are touched as messages arrive), so a run that keeps the whole
    /// history never copies them to grow.
    pub(crate) fn new(
        session: &'a Session,
        prepared: &'a Prepared,
        a: usize,
        scale: f64,
    ) -> Context<'a> {
        let n = prepared.agent_messages(a);
        let mut prefix = Vec::with_capacity(n + 1);
        prefix.push(0);
        let mut pinned = Vec::with_capacity(n + 1);
        pinned.push(0);
        Context {
            session,
            prepared,
            entries: Vec::with_capacity(n),
            views: Vec::with_capacity(n),
            prefix,
            pinned,
            pairs: SpanTree::with_room(n),
            tool_arena: Vec::with_capacity(prepared.tool_parts(a)),
            parts: Vec::with_capacity(n),
            occurrences: Vec::new(),
            marks: Vec::new(),
            epoch: 0,
            coverage: Coverage::default(),
            scratch: Vec::new(),
            edits: RefCell::default(),
            cut_slots: RefCell::default(),
            standing: StandingList::default(),
            standing_spare: Vec::new(),
            standing_sums: (0, 0, 0),
            requests: 0,
            awaiting_request: true,
            assistant_turns: 0,
            scale: if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            },
            known: 0,
            known_view: 0,
            transient: Vec::new(),
        }
    }

    /// Known tokens in the context, in recorded units and as weighed in the view.
    pub(crate) fn known(&self) -> (u64, u64) {
        (self.known, self.known_view)
    }

    fn view_of(&self, known: u64) -> u64 {
        if self.scale == 1.0 {
            known
        } else {
            (known as f64 * self.scale).round() as u64
        }
    }

    /// A human message arrived: the transient tokens of the entries still holding them leave.
    fn drop_transient(&mut self) {
        let mut first = usize::MAX;
        for key in std::mem::take(&mut self.transient) {
            let Some(p) = self.position(key) else {
                continue;
            };
            let Some(m) = self.entries[p].msg else {
                continue;
            };
            let t = self.prepared.transient(m).min(self.entries[p].known);
            if t == 0 || self.entries[p].text.is_some() {
                continue;
            }
            let known = self.entries[p].known - t;
            let view = self.view_of(known);
            let e = &mut self.entries[p];
            let dv = e.known_view - view;
            self.known -= t;
            self.known_view -= dv;
            e.known = known;
            e.known_view = view;
            self.views[p].tokens -= dv;
            first = first.min(p);
            // A standing edit of it repeats on the message as it is now.
            let key = self.entries[p].key;
            if let Ok(k) = self.standing.binary_search_by_key(&key, |x| x.key) {
                let x = &mut self.standing[k];
                let old = x.sums();
                x.before -= dv;
                self.standing_sums = add3(sub3(self.standing_sums, old), x.sums());
            }
        }
        if first != usize::MAX {
            self.rebuild_from(first);
        }
    }

    /// The entry at `i` no longer shows its message's content as recorded (removed or edited).
    fn forget_known(&mut self, i: usize) {
        let e = &mut self.entries[i];
        self.known -= e.known;
        self.known_view -= e.known_view;
        e.known = 0;
        e.known_view = 0;
    }

    pub(crate) fn len(&self) -> usize {
        self.views.len()
    }

    /// Tokens of the messages in positions `[s, e)`.
    pub(crate) fn tokens_in(&self, s: usize, e: usize) -> u64 {
        self.prefix[e] - self.prefix[s]
    }

    pub(crate) fn total_tokens(&self) -> u64 {
        self.prefix[self.len()]
    }

    pub(crate) fn pinned_in(&self, s: usize, e: usize) -> u32 {
        self.pinned[e] - self.pinned[s]
    }

    /// Brings the tool-pair index up to date; `splits_pair` needs it first.
    pub(crate) fn settle(&mut self) {
        self.pairs.settle();
    }

    /// True when removing or replacing `[s, e)` would separate a tool call from its result.
    /// The context must be settled.
    pub(crate) fn splits_pair(&self, s: usize, e: usize) -> bool {
        let (lo, hi) = self.pairs.query(s, e);
        lo < self.entries[s].key || hi > self.entries[e - 1].key
    }

    /// Tool pairs that removing `[s, e)` separates (recorded compactions are measured, not refused).
    pub(crate) fn split_pairs_in(&self, s: usize, e: usize) -> u64 {
        let (k0, k1) = (self.entries[s].key, self.entries[e - 1].key);
        self.entries[s..e]
            .iter()
            .map(|en| en.partners.iter().filter(|&p| p < k0 || p > k1).count() as u64)
            .sum()
    }

    /// Tool results the message at `i` carries.
    pub(crate) fn results_in(&self, i: usize) -> usize {
        let v = &self.views[i];
        if v.tools_len == 0 {
            return 0;
        }
        // SAFETY: the view's tools point at `tools_len` live ToolViews (arena or the entry's own).
        unsafe { std::slice::from_raw_parts(v.tools, v.tools_len) }
            .iter()
            .filter(|t| t.is_result != 0)
            .count()
    }

    /// Position of the entry with this key. Lookups are mostly of recent entries (a tool
    /// result's call, a fact's latest occurrence): the search gallops back from the end, so its
    /// cost grows with the distance from the end, not with the context's length.
    pub(crate) fn position(&self, key: u64) -> Option<usize> {
        let mut hi = self.entries.len();
        let mut step = 1;
        loop {
            let lo = hi.saturating_sub(step);
            if lo == 0 || self.entries[lo].key <= key {
                return self.entries[lo..hi]
                    .binary_search_by_key(&key, |e| e.key)
                    .ok()
                    .map(|i| lo + i);
            }
            hi = lo;
            step *= 2;
        }
    }

    /// Position of session message `m`, while it is in the context as itself (not summarized).
    pub(crate) fn position_of_message(&self, m: MsgIdx) -> Option<usize> {
        self.position(m as u64)
            .filter(|&p| self.entries[p].msg == Some(m))
    }

    fn index_facts(&mut self, facts: &[FactId], key: u64) {
        if let Some(&max) = facts.last() {
            if max as usize >= self.occurrences.len() {
                self.occurrences
                    .resize_with(max as usize + 1, VecDeque::new);
            }
        }
        for &f in facts {
            insert_sorted(&mut self.occurrences[f as usize], key);
        }
    }

    /// Appends session message `idx`, which reached the agent; `id` is its view id for the run.
    pub(crate) fn append(&mut self, idx: MsgIdx, id: u64) {
        let session = self.session;
        let prepared = self.prepared;
        let m = &session.messages[idx];
        let key = idx as u64;
        if m.is_human_turn() && !self.transient.is_empty() {
            self.drop_transient();
        }
        let known = prepared.known(idx);
        let known_view = self.view_of(known);
        let tokens = prepared.tokens(idx) - known + known_view;
        self.known += known;
        self.known_view += known_view;
        if prepared.transient(idx) > 0 {
            self.transient.push(key);
        }
        let answers = prepared.answers(idx);
        let mut results = 0;
        // The text of a message with one text-bearing part is that part (`message_text`).
        let mut single: &str = "";
        let mut flags = 0u32;
        let mut partners = Partners::None;
        let tools_start = self.tool_arena.len();
        let mut images = 0u32;
        let mut image_bytes = 0u64;
        let mut has_text = false;
        let mut owned_tools: Option<Vec<ToolView>> = None;
        // ABI 1.6: the parts of its text, in order (images have none), made once per session.
        let part_list = prepared.part_list(idx);
        flags |= FLAG_PARTS;
        for p in &m.parts {
            let view = match p {
                Part::ToolCall { id, name, args } => {
                    flags |= FLAG_TOOL_CALL;
                    if single.is_empty() {
                        single = args;
                    }
                    ToolView {
                        id: StrRef::new(id),
                        name: StrRef::new(name),
                        body: StrRef::new(args),
                        is_result: 0,
                        is_error: 0,
                    }
                }
                Part::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => {
                    flags |= FLAG_TOOL_RESULT;
                    if *is_error {
                        flags |= FLAG_ERROR;
                    }
                    if single.is_empty() {
                        single = content;
                    }
                    // The result's tool name is its call's; the pair is tracked while the call is
                    // in this context as itself.
                    let mut name = StrRef::EMPTY;
                    let answered = answers.get(results).filter(|c| c.msg != MsgIdx::MAX);
                    results += 1;
                    if let Some(c) = answered {
                        if let Some(Part::ToolCall { name: n, .. }) =
                            session.messages[c.msg].parts.get(c.part as usize)
                        {
                            name = StrRef::new(n);
                        }
                        if let Some(cp) = self.position_of_message(c.msg) {
                            partners.push(c.msg as u64);
                            let e = &mut self.entries[cp];
                            e.partners.push(key);
                            let (lo, hi) = span(e.key, &e.partners);
                            self.pairs.set(cp, lo, hi);
                        }
                    }
                    ToolView {
                        id: StrRef::new(call_id),
                        name,
                        body: StrRef::new(content),
                        is_result: 1,
                        is_error: *is_error as u8,
                    }
                }
                Part::Image { bytes, .. } => {
                    flags |= FLAG_IMAGE;
                    images += 1;
                    image_bytes += bytes;
                    continue;
                }
                Part::Text { text } => {
                    has_text = true;
                    if single.is_empty() {
                        single = text;
                    }
                    continue;
                }
                Part::Thinking { text } => {
                    if single.is_empty() {
                        single = text;
                    }
                    continue;
                }
            };
            match &mut owned_tools {
                Some(v) => v.push(view),
                None if self.tool_arena.len() < self.tool_arena.capacity() => {
                    self.tool_arena.push(view)
                }
                // More tool parts than the session holds for this agent cannot happen; stay
                // correct anyway with tools of the entry's own.
                None => {
                    let mut v = self.tool_arena.drain(tools_start..).collect::<Vec<_>>();
                    v.push(view);
                    owned_tools = Some(v);
                }
            }
        }
        if m.flags.pinned {
            flags |= FLAG_PINNED;
        }
        if m.flags.is_summary {
            flags |= FLAG_SUMMARY;
        }
        if m.flags.injected {
            flags |= FLAG_INJECTED;
        }
        match m.role {
            Role::Assistant => {
                self.assistant_turns += 1;
                self.awaiting_request = true;
            }
            Role::User if has_text && !m.flags.injected && self.awaiting_request => {
                flags |= FLAG_REQUEST;
                self.requests += 1;
                self.awaiting_request = false;
            }
            _ => {}
        }
        let owned_tools = owned_tools.map(Vec::into_boxed_slice);
        let (tools, tools_len) = match &owned_tools {
            Some(t) => (t.as_ptr(), t.len()),
            None if self.tool_arena.len() > tools_start => (
                self.tool_arena[tools_start..].as_ptr(),
                self.tool_arena.len() - tools_start,
            ),
            None => (std::ptr::null(), 0),
        };
        let facts = prepared.indexed_of(idx);
        self.index_facts(facts, key);
        let (content_ascii, content_other) = prepared.content(idx);
        let view = MessageView {
            id,
            role: role_abi(m.role),
            flags: flags | FLAG_CONTENT | FLAG_CUT,
            agent: StrRef::new(&session.agents[m.agent].id),
            tokens,
            chars: prepared.chars(idx),
            text: StrRef::new(prepared.joined_text(idx).unwrap_or(single)),
            tools,
            tools_len,
            images,
            content_ascii,
            image_bytes,
            request: self.requests.saturating_sub(1),
            content_other,
            timestamp_ms: m.timestamp.unwrap_or(i64::MIN),
        };
        let (lo, hi) = span(key, &partners);
        self.entries.push(Entry {
            key,
            msg: Some(idx),
            facts: Cow::Borrowed(facts),
            text: None,
            tools: owned_tools,
            summary: NO_SUMMARY,
            partners,
            known,
            known_view,
            text_tokens: Cell::new(TEXT_TOKENS_UNKNOWN),
            cut_slot: Cell::new(NO_CUT_SLOT),
        });
        self.views.push(view);
        self.parts.push(part_list);
        let n = self.views.len();
        self.prefix.push(self.prefix[n - 1] + tokens);
        self.pinned
            .push(self.pinned[n - 1] + (flags & FLAG_PINNED != 0) as u32);
        self.pairs.push(lo, hi);
    }

    /// Replaces positions `[s, e)` per `edit` and rebuilds the indexes from `s`. A summary covers
    /// the facts the entries it replaces held or covered (the upper bound of recall).
    pub(crate) fn apply(
        &mut self,
        s: usize,
        e: usize,
        edit: Replacement,
        next_id: &mut u64,
        facts: &mut Facts<'_>,
    ) {
        if !matches!(edit, Replacement::Flags { .. }) {
            let edits = self.edits.get_mut();
            let cut_slots = self.cut_slots.get_mut();
            for en in &self.entries[s..e] {
                en.text_tokens.set(TEXT_TOKENS_UNKNOWN);
                let slot = en.cut_slot.replace(NO_CUT_SLOT);
                if slot != NO_CUT_SLOT {
                    cut_slots.slots[slot as usize].clear();
                    cut_slots.free.push(slot);
                }
                if !edits.is_empty() {
                    edits.remove(&en.key);
                }
            }
            if !self.standing.is_empty() && s < e {
                let (k0, k1) = (self.entries[s].key, self.entries[e - 1].key);
                let a = self.standing.partition_point(|x| x.key < k0);
                let b = self.standing.partition_point(|x| x.key <= k1);
                for x in self.standing.drain(a..b) {
                    self.standing_sums = sub3(self.standing_sums, x.sums());
                }
            }
        }
        let len_before = self.len();
        let k_end = (s < e).then(|| self.entries[e - 1].key);
        self.apply_edit(s, e, edit, next_id, facts);
        // The standing edits after the range move with it.
        if let Some(k1) = k_end {
            if self.len() != len_before && !self.standing.is_empty() {
                let (grown, shrunk) = (
                    self.len().saturating_sub(len_before),
                    len_before.saturating_sub(self.len()),
                );
                let a = self.standing.partition_point(|x| x.key <= k1);
                for x in &mut self.standing[a..] {
                    x.pos = (x.pos + grown).saturating_sub(shrunk);
                }
            }
        }
    }

    fn apply_edit(
        &mut self,
        s: usize,
        e: usize,
        edit: Replacement,
        next_id: &mut u64,
        facts: &mut Facts<'_>,
    ) {
        match edit {
            Replacement::Flags { set, clear } => {
                for v in &mut self.views[s..e] {
                    v.flags = (v.flags | set) & !clear;
                }
                self.rebuild_from(s);
            }
            Replacement::Texts(texts) => self.retext(s, e, texts, facts),
            Replacement::Results { texts, remove } => {
                for i in s..e {
                    self.strip_results(i, &remove);
                }
                self.retext(s, e, texts, facts);
            }
            Replacement::Nothing => {
                self.remove(s, e);
                self.rebuild_from(s);
            }
            Replacement::Summary { role, text, tokens } => {
                let key = self.entries[s].key;
                *next_id += 1;
                let id = *next_id;
                // The new summary stands for the replaced messages' facts and for whatever the
                // summaries it replaces stood for: O(facts of the replaced messages), each
                // message's facts handed over once in a run, never the whole history.
                let absorbed: Vec<u32> = self.entries[s..e]
                    .iter()
                    .filter(|en| en.msg.is_none())
                    .map(|en| en.summary)
                    .collect();
                let sid = self.coverage.summarize(key, &absorbed);
                // Homing a fact in this summary is idempotent: once per distinct fact.
                let homed = self.distinct_facts(s, e);
                for &f in &homed {
                    self.coverage.home(f, sid);
                }
                self.scratch = homed;
                let agent = self.views[s].agent;
                let request = self.views[e - 1].request;
                self.remove(s, e);
                let own = self.needed_facts(facts, &text);
                self.index_facts(&own, key);
                let text: Box<str> = text.into_boxed_str();
                let (content_ascii, content_other) = content_of(&text);
                let view = MessageView {
                    id,
                    role: role_abi(role),
                    flags: FLAG_SUMMARY | FLAG_CONTENT | FLAG_CUT,
                    agent,
                    tokens,
                    chars: text.chars().count() as u64,
                    text: StrRef::new(&text),
                    tools: std::ptr::null(),
                    tools_len: 0,
                    images: 0,
                    content_ascii,
                    image_bytes: 0,
                    request,
                    content_other,
                    timestamp_ms: i64::MIN,
                };
                self.entries.insert(
                    s,
                    Entry {
                        key,
                        msg: None,
                        facts: Cow::Owned(own),
                        text: Some(text),
                        tools: None,
                        summary: sid,
                        partners: Partners::None,
                        known: 0,
                        known_view: 0,
                        text_tokens: Cell::new(TEXT_TOKENS_UNKNOWN),
                        cut_slot: Cell::new(NO_CUT_SLOT),
                    },
                );
                self.views.insert(s, view);
                self.parts.insert(s, PartList::EMPTY);
                self.rebuild_from(s);
            }
        }
    }

    /// New texts for positions `[s, e)` (`Replacement::Texts`).
    fn retext(&mut self, s: usize, e: usize, texts: Vec<(Rc<str>, u64)>, facts: &mut Facts<'_>) {
        for (i, (text, tokens)) in (s..e).zip(texts) {
            self.forget_known(i);
            let split = super::validate::split_results(&text, self.results_in(i));
            let text: Rc<str> = match &split {
                Some((joined, _)) => Rc::from(joined.as_str()),
                None => text,
            };
            let key = self.entries[i].key;
            let new_facts = self.needed_facts(facts, &text);
            self.unindex_facts(i);
            self.index_facts(&new_facts, key);
            let text: Box<str> = Box::from(&*text);
            let v = &mut self.views[i];
            v.text = StrRef::new(&text);
            v.chars = text.chars().count() as u64;
            v.tokens = tokens;
            // An edited message's content is its new text.
            (v.content_ascii, v.content_other) = content_of(&text);
            v.flags |= FLAG_EDITED | FLAG_CONTENT;
            // Its text is no longer its parts.
            v.flags &= !FLAG_PARTS;
            self.parts[i] = PartList::EMPTY;
            // Tool ids stay (pairs are intact); their bodies are now the edited text.
            let mut tools: Box<[ToolView]> = if v.tools_len == 0 {
                Box::default()
            } else {
                // SAFETY: the view's tools point at `tools_len` live ToolViews (arena or
                // the entry's own, both kept while the entry is).
                unsafe { std::slice::from_raw_parts(v.tools, v.tools_len) }.into()
            };
            let mut spans = split.as_ref().map(|(_, s)| s.iter());
            for t in tools.iter_mut() {
                // Each result its own part when the edit gave parts (ABI 1.4).
                t.body = match spans.as_mut().filter(|_| t.is_result != 0) {
                    Some(it) => match it.next() {
                        Some(&(a, b)) => StrRef::new(&text[a..b]),
                        None => StrRef::new(&text),
                    },
                    None => StrRef::new(&text),
                };
            }
            v.tools = if tools.is_empty() {
                std::ptr::null()
            } else {
                tools.as_ptr()
            };
            let entry = &mut self.entries[i];
            entry.facts = Cow::Owned(new_facts);
            entry.tools = Some(tools);
            entry.text = Some(text);
        }
        self.rebuild_from(s);
    }

    /// The tool views of the message at `i`.
    pub(crate) fn tools_of(&self, i: usize) -> &[ToolView] {
        let v = &self.views[i];
        if v.tools.is_null() || v.tools_len == 0 {
            return &[];
        }
        // SAFETY: the view's tools point at `tools_len` live ToolViews (arena or the entry's own).
        unsafe { std::slice::from_raw_parts(v.tools, v.tools_len) }
    }

    /// Position of the message holding the call that the result `id` of the message at `i`
    /// answers, while that call is in the context (the pair is tracked).
    fn call_of(&self, i: usize, id: StrRef) -> Option<usize> {
        // SAFETY: tool ids point into the session or the context's own storage, alive while it is.
        let id = unsafe { id.as_str() };
        self.entries[i]
            .partners
            .iter()
            .filter_map(|k| self.position(k))
            .find(|&p| {
                self.tools_of(p)
                    .iter()
                    .any(|t| t.is_result == 0 && unsafe { t.id.as_str() } == id)
            })
    }

    /// Tool pairs that removing the results `remove` selects from the message at `i` separates:
    /// each such result whose call is in the context.
    pub(crate) fn results_split(&self, i: usize, remove: &[bool]) -> u64 {
        self.tools_of(i)
            .iter()
            .filter(|t| t.is_result != 0)
            .zip(remove)
            .filter(|(t, &r)| r && self.call_of(i, t.id).is_some())
            .count() as u64
    }

    /// Takes the results `remove` selects out of the message at `i`: its tool views lose them,
    /// and each loses its pair with a call still in the context.
    fn strip_results(&mut self, i: usize, remove: &[bool]) {
        let tools: Vec<ToolView> = self.tools_of(i).to_vec();
        let key = self.entries[i].key;
        let mut kept = Vec::with_capacity(tools.len());
        let mut j = 0;
        for t in tools {
            if t.is_result != 0 {
                let gone = remove.get(j) == Some(&true);
                j += 1;
                if gone {
                    if let Some(p) = self.call_of(i, t.id) {
                        let pk = self.entries[p].key;
                        self.entries[i].partners.remove_one(pk);
                        let en = &mut self.entries[p];
                        en.partners.remove_one(key);
                        let (lo, hi) = span(en.key, &en.partners);
                        self.pairs.set(p, lo, hi);
                    }
                    continue;
                }
            }
            kept.push(t);
        }
        let tools: Box<[ToolView]> = kept.into_boxed_slice();
        let v = &mut self.views[i];
        v.flags &= !(FLAG_TOOL_RESULT | FLAG_ERROR);
        for t in tools.iter().filter(|t| t.is_result != 0) {
            v.flags |= FLAG_TOOL_RESULT | if t.is_error != 0 { FLAG_ERROR } else { 0 };
        }
        v.tools = if tools.is_empty() {
            std::ptr::null()
        } else {
            tools.as_ptr()
        };
        v.tools_len = tools.len();
        self.entries[i].tools = Some(tools);
    }

    /// Removes positions `[s, e)` and everything that indexes them; pairs split by the removal
    /// (recorded compactions may do that) lose their partner so they are not reported twice.
    fn remove(&mut self, s: usize, e: usize) {
        let (k0, k1) = (self.entries[s].key, self.entries[e - 1].key);
        // Keys grow with positions, so the range's occurrences of a fact are one run of its
        // list: each fact loses them in one drain, not one shift per occurrence.
        let facts = self.distinct_facts(s, e);
        for &f in &facts {
            let v = &mut self.occurrences[f as usize];
            let a = v.partition_point(|&k| k < k0);
            let b = v.partition_point(|&k| k <= k1);
            v.drain(a..b);
        }
        self.scratch = facts;
        for i in s..e {
            self.forget_known(i);
        }
        for en in &self.entries[s..e] {
            if en.msg.is_none() {
                self.coverage.gone(en.summary);
            }
        }
        let outside: Vec<(u64, u64)> = self.entries[s..e]
            .iter()
            .flat_map(|en| {
                en.partners
                    .iter()
                    .filter(|&p| p < k0 || p > k1)
                    .map(move |p| (p, en.key))
            })
            .collect();
        self.entries.drain(s..e);
        self.views.drain(s..e);
        self.parts.drain(s..e);
        for (partner, gone) in outside {
            if let Some(p) = self.position(partner) {
                let en = &mut self.entries[p];
                en.partners.remove(gone);
                // Its span must forget the removed partner too (positions before the edit are
                // not rebuilt).
                let (lo, hi) = span(en.key, &en.partners);
                self.pairs.set(p, lo, hi);
            }
        }
    }

    /// The facts of a text the run wrote that some call may need (the only ones indexed).
    fn needed_facts(&self, facts: &mut Facts<'_>, text: &str) -> Vec<FactId> {
        let prepared = self.prepared;
        facts.needed_distinct(text, |f| prepared.is_needed(f))
    }

    /// The distinct facts of the entries at `[s, e)` (in `scratch`: hand it back when done).
    fn distinct_facts(&mut self, s: usize, e: usize) -> Vec<FactId> {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        for en in &self.entries[s..e] {
            for &f in en.facts.iter() {
                let f_us = f as usize;
                if f_us >= self.marks.len() {
                    self.marks.resize(f_us + 1, 0);
                }
                if self.marks[f_us] != self.epoch {
                    self.marks[f_us] = self.epoch;
                    out.push(f);
                }
            }
        }
        out
    }

    fn unindex_facts(&mut self, i: usize) {
        let key = self.entries[i].key;
        for &f in self.entries[i].facts.iter() {
            let v = &mut self.occurrences[f as usize];
            if let Ok(p) = v.binary_search(&key) {
                v.remove(p);
            }
        }
    }

    /// Keys (ascending) of the entries holding fact `f` verbatim.
    #[cfg(test)]
    pub(crate) fn occurrences(&self, f: FactId) -> impl DoubleEndedIterator<Item = u64> + '_ {
        self.occurrences
            .get(f as usize)
            .into_iter()
            .flatten()
            .copied()
    }

    /// How many entries hold fact `f` verbatim.
    pub(crate) fn occurrence_count(&self, f: FactId) -> usize {
        self.occurrences.get(f as usize).map_or(0, VecDeque::len)
    }
    /// Key of the `k`-th (ascending) entry holding fact `f`.
    pub(crate) fn occurrence(&self, f: FactId, k: usize) -> u64 {
        self.occurrences[f as usize][k]
    }
    /// How many entries holding fact `f` have a key below `key` (a reader skips the run of
    /// occurrences one edit covers).
    pub(crate) fn occurrences_below(&self, f: FactId, key: u64) -> usize {
        self.occurrences
            .get(f as usize)
            .map_or(0, |v| v.partition_point(|&k| k < key))
    }

    /// Key of the entry at position `p`.
    pub(crate) fn key_at(&self, p: usize) -> u64 {
        self.entries[p].key
    }

    /// Recomputes prefix sums, pinned counts and pair spans for positions `p..`.
    fn rebuild_from(&mut self, p: usize) {
        let n = self.views.len();
        self.prefix.truncate(p + 1);
        self.pinned.truncate(p + 1);
        for i in p..n {
            let v = &self.views[i];
            self.prefix.push(self.prefix[i] + v.tokens);
            self.pinned
                .push(self.pinned[i] + (v.flags & FLAG_PINNED != 0) as u32);
        }
        let entries = &self.entries;
        self.pairs
            .rebuild_from(p, n, |i| span(entries[i].key, &entries[i].partners));
    }

    /// Text of the entry at position `i` as the model sees it now.
    pub(crate) fn text(&self, i: usize) -> &str {
        let t = self.views[i].text;
        if t.len == 0 {
            return "";
        }
        // SAFETY: every view text is made by `StrRef::new` from a `&str` the context keeps alive
        // (the session, the prepared session, or the entry's own box), so it is UTF-8 and live;
        // no need for the check `StrRef::as_str` does for texts of unknown origin.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(t.ptr, t.len)) }
    }

    /// The standing edits (the this-call content edits of the agent's last decision) of
    /// positions `[s, e)`: indexes `lo..hi` of them (ABI 1.7 `Repeat`).
    pub(crate) fn standing_range(&self, s: usize, e: usize) -> (usize, usize) {
        if s >= e || e > self.entries.len() || self.standing.is_empty() {
            return (0, 0);
        }
        let (k0, k1) = (self.entries[s].key, self.entries[e - 1].key);
        let lo = self.standing.partition_point(|x| x.key < k0);
        let hi = lo + self.standing[lo..].partition_point(|x| x.key <= k1);
        (lo, hi)
    }

    /// The standing edits `lo..hi`, in order: (position, text, tokens).
    pub(crate) fn standing_edits(
        &self,
        lo: usize,
        hi: usize,
    ) -> impl Iterator<Item = (usize, &Rc<str>, u64)> + '_ {
        self.standing
            .get(lo..hi)
            .unwrap_or(&[])
            .iter()
            .map(|x| (x.pos, &x.text, x.tokens))
    }

    /// The standing edit of position `pos` among `lo..hi`, if any: its text and tokens.
    pub(crate) fn standing_at(&self, lo: usize, hi: usize, pos: usize) -> Option<(&Rc<str>, u64)> {
        let list = self.standing.get(lo..hi)?;
        let k = list.binary_search_by_key(&pos, |x| x.pos).ok()?;
        Some((&list[k].text, list[k].tokens))
    }

    /// Σ of the standing edits the stretches `runs` repeat (`lo..hi` each, ascending, apart):
    /// (message tokens now, edit tokens, tokens taken off). Worked out as the sums of every
    /// standing edit less those of the ones no run repeats, which the next `set_standing`
    /// forgets: what a call costs is what changed since the last one.
    pub(crate) fn standing_sums(&self, runs: &[super::validate::Repeated]) -> (u64, u64, u64) {
        let mut left = (0, 0, 0);
        let mut at = 0;
        let gaps = runs
            .iter()
            .map(|r| (r.lo, r.hi))
            .chain(std::iter::once((self.standing.len(), self.standing.len())));
        for (lo, hi) in gaps {
            for x in self.standing.get(at..lo).unwrap_or(&[]) {
                left = add3(left, x.sums());
            }
            at = at.max(hi);
        }
        sub3(self.standing_sums, left)
    }

    /// Whether the agent's last decision left this-call content edits to repeat.
    pub(crate) fn has_standing(&self) -> bool {
        !self.standing.is_empty()
    }

    /// The standing entry of a this-call edit of the message at `i` (its text and tokens `t`).
    fn standing_of(&self, i: usize, t: &(Rc<str>, u64)) -> Standing {
        Standing {
            key: self.entries[i].key,
            pos: i,
            text: t.0.clone(),
            tokens: t.1,
            before: self.tokens_in(i, i + 1),
        }
    }

    /// Remembers the this-call content edits of a checked decision (its edits and repeats, by
    /// position) for the next decision's `Repeat` ops; the ones before are forgotten. A repeated
    /// edit moves from the last list to the new one (a copy of its entry, its text untouched),
    /// and each of `plan`'s repeated stretches then names where it is in the new list.
    pub(crate) fn set_standing(&mut self, plan: &mut Plan) {
        let mut sums = (
            plan.repeated_before,
            plan.repeated_after,
            plan.repeated_pruned,
        );
        let content = |p: &super::validate::Planned| {
            matches!(
                p.op.kind,
                ctxlab_plugin_api::OpKind::Truncate { .. }
                    | ctxlab_plugin_api::OpKind::Mask { .. }
                    | ctxlab_plugin_api::OpKind::Cut { .. }
                    | ctxlab_plugin_api::OpKind::Offload { .. }
            ) && p.op.scope == ctxlab_plugin_api::Scope::ThisCall
        };
        // The repeated stretches stay where they are when nothing new comes before the first
        // and the new edits between two of them are as many as the entries the last list had
        // there (a changed edit in place of its message's last one): the entries before the
        // first stretch are left behind `front`, those after the last dropped, the ones between
        // overwritten, and the new edits after the last pushed. The same list as below, where
        // every repeated entry moves to a new list. (The usual LibreChat call: its window slides
        // and a mask or two inside it changes.)
        if !plan.repeated.is_empty() {
            let runs = &plan.repeated;
            let mut between = vec![0usize; runs.len()];
            let mut k = 0;
            let mut fits = true;
            for p in plan.edits.iter().filter(|p| content(p)) {
                while k < runs.len() && runs[k].start < p.op.start {
                    k += 1;
                }
                if k == 0 {
                    fits = false;
                    break;
                }
                between[k - 1] += (p.op.end - p.op.start).min(p.texts.len());
            }
            fits &= runs
                .windows(2)
                .zip(&between)
                .all(|(w, &n)| n == w[1].lo - w[0].hi);
            if fits {
                let (first, last) = (runs[0].lo, runs[runs.len() - 1].hi);
                let base = self.standing.front;
                self.standing.v.truncate(base + last);
                let (mut k, mut slot) = (0, 0);
                for p in plan.edits.iter().filter(|p| content(p)) {
                    while k < runs.len() && runs[k].start < p.op.start {
                        slot = runs[k].hi;
                        k += 1;
                    }
                    for (i, t) in (p.op.start..p.op.end).zip(p.texts.iter()) {
                        let x = self.standing_of(i, t);
                        sums = add3(sums, x.sums());
                        if k < runs.len() {
                            self.standing.v[base + slot] = x;
                            slot += 1;
                        } else {
                            self.standing.v.push(x);
                        }
                    }
                }
                for r in plan.repeated.iter_mut() {
                    (r.lo, r.hi) = (r.lo - first, r.hi - first);
                }
                let list = &mut self.standing;
                list.front = base + first;
                if list.front > 32 && list.front > list.v.len() - list.front {
                    list.v.drain(..list.front);
                    list.front = 0;
                }
                self.standing_sums = sums;
                return;
            }
        }
        let mut next = std::mem::take(&mut self.standing_spare);
        next.clear();
        let StandingList { v: mut old, front } = std::mem::take(&mut self.standing);
        {
            let mut drained = old.drain(front..);
            let mut at = 0;
            let mut runs = plan.repeated.iter_mut().peekable();
            // Moves the old list's entries `lo..hi` to the end of the new one.
            let mut take = |r: &mut super::validate::Repeated, next: &mut Vec<Standing>| {
                if r.lo > at {
                    drained.nth(r.lo - at - 1);
                }
                let from = next.len();
                next.extend(drained.by_ref().take(r.hi - r.lo.max(at)));
                at = r.hi.max(at);
                r.lo = from;
                r.hi = next.len();
            };
            for p in &plan.edits {
                if !content(p) {
                    continue;
                }
                while let Some(r) = runs.next_if(|r| r.start < p.op.start) {
                    take(r, &mut next);
                }
                for (i, t) in (p.op.start..p.op.end).zip(p.texts.iter()) {
                    let x = self.standing_of(i, t);
                    sums = add3(sums, x.sums());
                    next.push(x);
                }
            }
            for r in runs {
                take(r, &mut next);
            }
        }
        // The entries left behind `front` go with the rest of the last list.
        old.clear();
        self.standing_sums = sums;
        self.standing_spare = old;
        self.standing = StandingList { v: next, front: 0 };
    }

    /// `counter.count_text` of the text of the entry at `i` now, counted once per text (an
    /// edit's tokens are the message's less its text's, plus the new text's).
    pub(crate) fn text_tokens(&self, i: usize, counter: &dyn TokenCounter) -> u64 {
        let known = &self.entries[i].text_tokens;
        if known.get() == TEXT_TOKENS_UNKNOWN {
            known.set(counter.count_text(self.text(i)));
        }
        known.get()
    }

    /// Tokens of the text of the entry at `i` cut to its first `head` and last `tail` bytes with
    /// `marker` between them (ABI 1.8: `Sink::count_cut`, and the check of an `OpKind::Cut`),
    /// and whether the two kept pieces hold a NUL (the marker is the caller's to look at; the
    /// plugin's count does not need it); `None` when a cut is off a character boundary or the
    /// two overlap. With a tallying counter (`TokenCounter::tally`) the kept pieces are read
    /// once per cut of the entry's text: LibreChat cuts a long result anew at every call, mostly
    /// at the newlines it cut at before, with a marker that says the new cap.
    pub(crate) fn count_cut(
        &self,
        i: usize,
        head: u64,
        tail: u64,
        marker: &str,
        counter: &dyn TokenCounter,
    ) -> Option<(u64, bool)> {
        let (h, t) = super::validate::cut_pieces(self.text(i), head, tail)?;
        let nul_in = |p: &str| memchr::memchr(0, p.as_bytes()).is_some();
        let Some(m) = counter.tally(marker) else {
            return Some((
                counter.count_pieces(&[h, marker, t]),
                nul_in(h) || nul_in(t),
            ));
        };
        let mut slots = self.cut_slots.borrow_mut();
        let slot = match self.entries[i].cut_slot.get() {
            NO_CUT_SLOT => {
                let slot = match slots.free.pop() {
                    Some(slot) => slot,
                    None => {
                        slots.slots.push(Vec::new());
                        (slots.slots.len() - 1) as u32
                    }
                };
                self.entries[i].cut_slot.set(slot);
                slot
            }
            slot => slot,
        };
        let cuts = &mut slots.slots[slot as usize];
        let kept = match cuts.iter().position(|c| c.head == head && c.tail == tail) {
            Some(k) => &cuts[k],
            None => {
                // Both pieces are in the counter's units already: `tally` is defined on texts,
                // and each piece is one (the cuts fall on character boundaries).
                let (a, b) = (counter.tally(h), counter.tally(t));
                let tally = a.unwrap_or_default() + b.unwrap_or_default();
                if cuts.len() >= EDITS_PER_ENTRY {
                    cuts.remove(0);
                }
                cuts.push(CutPieces {
                    head,
                    tail,
                    tally,
                    nul: nul_in(h) || nul_in(t),
                });
                &cuts[cuts.len() - 1]
            }
        };
        Some((counter.count_tally(kept.tally + m), kept.nul))
    }

    /// The edit `sig` of the entry at `i`: from the cache when the same edit of the same text
    /// was worked out before, else `make(text_tokens)` (new text, tokens), remembered.
    /// `text_tokens()` is `Context::text_tokens`.
    pub(crate) fn edited(
        &self,
        i: usize,
        sig: EditSig<'_>,
        counter: &dyn TokenCounter,
        make: impl FnOnce(&mut dyn FnMut() -> u64) -> (Rc<str>, u64),
    ) -> (Rc<str>, u64) {
        let key = self.entries[i].key;
        let mut edits = self.edits.borrow_mut();
        let slot = edits.entry(key).or_default();
        if let Some(c) = slot.list.iter().find(|c| c.is(&sig)) {
            return (c.text.clone(), c.tokens);
        }
        let (text, tokens) = make(&mut || self.text_tokens(i, counter));
        // A strategy whose edits of a message vary call by call (a cut that follows the budget)
        // would grow the list without end: keep the latest few.
        let list = &mut slot.list;
        if list.len() >= EDITS_PER_ENTRY {
            list.remove(0);
        }
        list.push(CachedEdit {
            sig: OwnedSig::of(&sig),
            text: text.clone(),
            tokens,
        });
        (text, tokens)
    }
}

/// `Entry::summary` of a session message.
const NO_SUMMARY: u32 = u32::MAX;

/// Which facts the simulated summaries in a context stand for, without copying fact sets from
/// summary to summary: a union-find over summaries (dense indexes, by rank, so `find` is
/// O(log n) without mutation), each class answering "which live summary holds this now".
#[derive(Default)]
pub(crate) struct Coverage {
    parent: Vec<u32>,
    rank: Vec<u8>,
    /// Class root → the summary that holds the class now (`NO_SUMMARY` for a non-root).
    holder: Vec<u32>,
    /// Summary → its order key while it is in the context, else `u64::MAX`.
    live: Vec<u64>,
    /// Fact → summaries it went into; compacted to live, distinct holders whenever it has
    /// doubled since the last compaction (so a push costs O(1) amortised, however many
    /// summaries stay live).
    homes: Vec<Vec<u32>>,
    /// Fact → length of its home list after its last compaction.
    compacted: Vec<u32>,
}

impl Coverage {
    fn find(&self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            x = self.parent[x as usize];
        }
        x
    }

    /// The live summary that holds what summary `s` went into, with its key.
    fn holder(&self, s: u32) -> Option<(u32, u64)> {
        let h = self.holder[self.find(s) as usize];
        let key = *self.live.get(h as usize)?;
        (key != u64::MAX).then_some((h, key))
    }

    /// A new live summary at `key` absorbing the summaries `absorbed`; returns its index.
    fn summarize(&mut self, key: u64, absorbed: &[u32]) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        self.rank.push(0);
        self.holder.push(NO_SUMMARY);
        self.live.push(key);
        let mut root = id;
        for &x in absorbed {
            let rx = self.find(x);
            self.live[x as usize] = u64::MAX;
            if rx == root {
                continue;
            }
            let (a, b) = (self.rank[root as usize], self.rank[rx as usize]);
            let (hi, lo) = if a >= b { (root, rx) } else { (rx, root) };
            self.parent[lo as usize] = hi;
            self.holder[lo as usize] = NO_SUMMARY;
            if a == b {
                self.rank[hi as usize] += 1;
            }
            root = hi;
        }
        self.holder[root as usize] = id;
        id
    }

    fn home(&mut self, f: FactId, s: u32) {
        let fi = f as usize;
        if fi >= self.homes.len() {
            self.homes.resize_with(fi + 1, Vec::new);
            self.compacted.resize(fi + 1, 0);
        }
        let mut list = std::mem::take(&mut self.homes[fi]);
        if list.len() >= 2 * self.compacted[fi] as usize + 4 {
            // A summary's live holder stands for it (same class), so the list becomes its
            // distinct live holders.
            list = list
                .iter()
                .filter_map(|&h| self.holder(h).map(|(holder, _)| holder))
                .collect();
            list.sort_unstable();
            list.dedup();
            self.compacted[fi] = list.len() as u32;
        }
        list.push(s);
        self.homes[fi] = list;
    }

    fn gone(&mut self, s: u32) {
        self.live[s as usize] = u64::MAX;
    }

    /// Keys of the live summaries that stand for fact `f`.
    pub(crate) fn keys(&self, f: FactId) -> impl Iterator<Item = u64> + '_ {
        self.homes
            .get(f as usize)
            .into_iter()
            .flatten()
            .filter_map(|&h| self.holder(h).map(|(_, k)| k))
    }
}

fn span(key: u64, partners: &Partners) -> (u64, u64) {
    partners
        .iter()
        .fold((key, key), |(lo, hi), p| (lo.min(p), hi.max(p)))
}

fn insert_sorted(v: &mut VecDeque<u64>, key: u64) {
    match v.back() {
        Some(&last) if last < key => v.push_back(key),
        None => v.push_back(key),
        _ => {
            if let Err(p) = v.binary_search(&key) {
                v.insert(p, key);
            }
        }
    }
}

/// Min of `lo` and max of `hi` over position ranges (an iterative segment tree that grows by
/// doubling, first allocated for the agent's messages), for the tool-pair check of a range in
/// O(log n). Writes go to the leaves only and
/// mark them; `settle` brings their ancestors up to date before a query. Only decisions that drop
/// or summarize query, so a call that appends messages pays no tree walk.
#[derive(Default)]
struct SpanTree {
    /// Leaves: `size..2*size`; `size` is a power of two (0 when empty).
    size: usize,
    len: usize,
    /// `!lo`, so that both arrays are maxima whose empty value is 0: allocated zeroed, their
    /// pages are not written until used.
    nlo: Vec<u64>,
    hi: Vec<u64>,
    /// Leaves the first allocation makes room for (the agent's messages).
    room: usize,
    /// Leaves `[a, b)` whose ancestors are stale.
    stale: Option<(usize, usize)>,
}

impl SpanTree {
    fn mark(&mut self, a: usize, b: usize) {
        self.stale = Some(match self.stale {
            Some((x, y)) => (x.min(a), y.max(b)),
            None => (a, b),
        });
    }

    fn with_room(room: usize) -> SpanTree {
        SpanTree {
            room,
            ..SpanTree::default()
        }
    }

    fn push(&mut self, lo: u64, hi: u64) {
        if self.len == self.size {
            let size = (self.size * 2).max(self.room.next_power_of_two()).max(64);
            let mut l = vec![0; 2 * size];
            let mut h = vec![0; 2 * size];
            l[size..size + self.len].copy_from_slice(&self.nlo[self.size..self.size + self.len]);
            h[size..size + self.len].copy_from_slice(&self.hi[self.size..self.size + self.len]);
            (self.size, self.nlo, self.hi) = (size, l, h);
            self.mark(0, self.len);
        }
        let i = self.len;
        self.len += 1;
        self.set(i, lo, hi);
    }

    fn pull(&mut self, i: usize) {
        self.nlo[i] = self.nlo[2 * i].max(self.nlo[2 * i + 1]);
        self.hi[i] = self.hi[2 * i].max(self.hi[2 * i + 1]);
    }

    fn set(&mut self, i: usize, lo: u64, hi: u64) {
        self.nlo[self.size + i] = !lo;
        self.hi[self.size + i] = hi;
        self.mark(i, i + 1);
    }

    /// Leaves `p..n` from `leaf`, the rest cleared.
    fn rebuild_from(&mut self, p: usize, n: usize, leaf: impl Fn(usize) -> (u64, u64)) {
        if n > self.size {
            // Cannot happen (edits never grow the context by more than they remove), but stay total.
            let all: Vec<(u64, u64)> = (0..n).map(&leaf).collect();
            *self = SpanTree::with_room(self.room);
            for (l, h) in all {
                self.push(l, h);
            }
            return;
        }
        let old = self.len;
        for i in p..old.max(n) {
            let (l, h) = if i < n { leaf(i) } else { (u64::MAX, 0) };
            self.nlo[self.size + i] = !l;
            self.hi[self.size + i] = h;
        }
        self.len = n;
        self.mark(p, old.max(n).max(p + 1));
    }

    /// Recomputes the ancestors of the marked leaves, level by level.
    fn settle(&mut self) {
        let Some((a, b)) = self.stale.take() else {
            return;
        };
        if self.size == 0 || a >= b {
            return;
        }
        let (mut a, mut b) = ((self.size + a) / 2, (self.size + b - 1) / 2);
        loop {
            for i in a..=b {
                self.pull(i);
            }
            if a <= 1 {
                break;
            }
            a /= 2;
            b /= 2;
        }
    }

    fn query(&self, s: usize, e: usize) -> (u64, u64) {
        debug_assert!(self.stale.is_none(), "query of an unsettled span tree");
        let (mut lo, mut hi) = (u64::MAX, 0);
        let (mut l, mut r) = (s + self.size, e + self.size);
        while l < r {
            if l & 1 == 1 {
                lo = lo.min(!self.nlo[l]);
                hi = hi.max(self.hi[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                lo = lo.min(!self.nlo[r]);
                hi = hi.max(self.hi[r]);
            }
            l /= 2;
            r /= 2;
        }
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::test_support::{Chars4, SessionBuilder};
    use std::collections::{BTreeMap, BTreeSet};

    /// What a naive model of the context says: per position, the key, the facts held verbatim,
    /// and (for summaries) the facts the summary stands for.
    struct Naive {
        keys: Vec<u64>,
        facts: Vec<BTreeSet<FactId>>,
        covers: Vec<BTreeSet<FactId>>,
        summary: Vec<bool>,
    }

    /// A cached edit is reused for the same edit of the same text, and forgotten when a
    /// persistent edit changes the message or a summary takes its key.
    #[test]
    fn cached_edits_follow_the_text_they_were_made_from() {
        let mut b = SessionBuilder::new();
        let a = b.agent("main");
        b.msg(a, Role::User, "abcdefghij");
        b.msg(a, Role::User, "klmnopqrst");
        let session = b.session;
        let prepared = Prepared::new(&session, &Chars4);
        let mut facts = Facts::new(prepared.interner());
        let mut ctx = Context::new(&session, &prepared, 0, 1.0);
        let (mut id, mut made) = (0, 0);
        for m in 0..2 {
            id += 1;
            ctx.append(m, id);
        }
        let sig = EditSig::Truncate {
            head: 2,
            tail: 2,
            marker: "~",
        };
        let mut edit = |ctx: &Context<'_>, i: usize| {
            ctx.edited(i, sig, &Chars4, |_| {
                made += 1;
                let t = ctx.text(i);
                (format!("{}~{}", &t[..2], &t[t.len() - 2..]).into(), 1)
            })
            .0
        };
        assert_eq!(&*edit(&ctx, 0), "ab~ij");
        assert_eq!(&*edit(&ctx, 0), "ab~ij");
        ctx.apply(
            0,
            1,
            Replacement::Texts(vec![("0123456789".into(), 3)]),
            &mut id,
            &mut facts,
        );
        assert_eq!(&*edit(&ctx, 0), "01~89");
        ctx.apply(
            0,
            2,
            Replacement::Summary {
                role: Role::User,
                text: "summary text".into(),
                tokens: 3,
            },
            &mut id,
            &mut facts,
        );
        assert_eq!(&*edit(&ctx, 0), "su~xt");
        drop(edit);
        assert_eq!(made, 3, "one cache hit, three texts worked out");
    }

    /// `Context::count_cut` counts what the cut text would count, joined and read whole, and
    /// says whether the kept pieces hold a NUL: for random cuts of random texts, many repeated with a new
    /// marker (the pieces' tallies come from the entry's memory), and after persistent edits
    /// give the messages new texts (a memory of the old text must not answer for the new).
    #[test]
    fn cut_counts_equal_the_joined_text_counted_whole() {
        let words = ["a", "é", "中文", "😀", "\n", "line of text ", "\0"];
        let text = |rng: &mut ctxlab_plugin_api::testing::Rng| -> String {
            let n = rng.below(300);
            (0..n)
                .map(|_| {
                    let kinds = if rng.chance(5) { 7 } else { 6 };
                    words[rng.below(kinds) as usize]
                })
                .collect()
        };
        let heuristic = crate::tokens::Heuristic;
        // Two tallying counters, and one that reads whole texts (the tests' own).
        let counters: [&dyn TokenCounter; 3] = [&heuristic, &crate::tokens::Chars4, &Chars4];
        for (seed, counter) in counters.into_iter().enumerate() {
            let mut rng = ctxlab_plugin_api::testing::Rng(11 + seed as u64);
            let mut b = SessionBuilder::new();
            let a = b.agent("main");
            for _ in 0..4 {
                let t = text(&mut rng);
                b.msg(a, Role::User, &t);
            }
            let session = b.session;
            let prepared = Prepared::new(&session, &Chars4);
            let mut facts = Facts::new(prepared.interner());
            let mut ctx = Context::new(&session, &prepared, 0, 1.0);
            let mut id = 0;
            for m in 0..4 {
                id += 1;
                ctx.append(m, id);
            }
            let (mut cuts, mut refused, mut with_nul) = (0, 0, 0);
            for round in 0..3000 {
                if round % 500 == 499 {
                    let i = rng.below(4) as usize;
                    let t: Rc<str> = text(&mut rng).into();
                    ctx.apply(
                        i,
                        i + 1,
                        Replacement::Texts(vec![(t, 1)]),
                        &mut id,
                        &mut facts,
                    );
                }
                let i = rng.below(4) as usize;
                let len = ctx.text(i).len() as u64;
                // A few cut points per message, so that most cuts repeat one made before.
                let head = (rng.below(3) * 37).min(len);
                let tail = (rng.below(3) * 29).min(len - head);
                let marker = format!("\n… [truncated: {} chars] …\n", rng.below(100_000));
                let got = ctx.count_cut(i, head, tail, &marker, counter);
                let t = ctx.text(i);
                match (t.get(..head as usize), t.get((len - tail) as usize..)) {
                    (Some(h), Some(tl)) => {
                        let joined = format!("{h}{marker}{tl}");
                        let nul = h.contains('\0') || tl.contains('\0');
                        let want = (counter.count_text(&joined), nul);
                        assert_eq!(got, Some(want), "{} {joined:?}", counter.name());
                        cuts += 1;
                        with_nul += usize::from(want.1);
                    }
                    _ => {
                        assert_eq!(got, None, "a cut off a character boundary");
                        refused += 1;
                    }
                }
            }
            assert!(
                cuts > 1000 && refused > 100 && with_nul > 40,
                "{cuts} {refused} {with_nul}"
            );
        }
    }

    /// Random appends, drops, summaries and re-texts of a context: after each, every index the
    /// engine reads (token sums, fact occurrences, summary coverage, tool-pair spans) equals what a
    /// from-scratch scan of a naive model gives.
    #[test]
    fn indexes_equal_a_naive_model_after_random_edits() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m.max(1)
        };
        for round in 0..12 {
            let mut b = SessionBuilder::new();
            let a = b.agent("main");
            let mut open_call: Option<String> = None;
            for i in 0..300 {
                let facts: Vec<String> = (0..next(4))
                    .map(|_| format!("file_{}.rs", next(40)))
                    .collect();
                let text = format!("step {i} {}", facts.join(" "));
                match (next(5), open_call.take()) {
                    (0, None) => {
                        let id = format!("call_{round}_{i}");
                        b.tool_call(a, &id, &text);
                        open_call = Some(id);
                    }
                    (_, Some(id)) if next(3) > 0 => {
                        b.tool_result(a, &id, &text);
                    }
                    (_, keep) => {
                        open_call = keep;
                        b.msg(
                            a,
                            if i % 2 == 0 {
                                Role::User
                            } else {
                                Role::Assistant
                            },
                            text,
                        );
                    }
                }
            }
            // Replies make facts needed (the only ones indexed): every third message is one.
            for r in (2..b.session.messages.len()).step_by(3) {
                let c = b.call(a);
                b.session.calls[c].context_end = r;
                b.session.calls[c].reply = Some(r);
            }
            let session = b.session;
            let prepared = Prepared::new(&session, &Chars4);
            let mut facts = Facts::new(prepared.interner());
            let mut ctx = Context::new(&session, &prepared, 0, 1.0);
            let needed = |fs: &[FactId]| -> BTreeSet<FactId> {
                fs.iter()
                    .copied()
                    .filter(|&f| prepared.is_needed(f))
                    .collect()
            };
            assert!(
                (0..session.messages.len()).any(|m| !prepared.indexed_of(m).is_empty()),
                "some facts are needed"
            );
            let mut naive = Naive {
                keys: Vec::new(),
                facts: Vec::new(),
                covers: Vec::new(),
                summary: Vec::new(),
            };
            let mut next_id = 0u64;
            for m in 0..session.messages.len() {
                next_id += 1;
                ctx.append(m, next_id);
                naive.keys.push(m as u64);
                naive.facts.push(needed(prepared.facts_of(m)));
                naive.covers.push(BTreeSet::new());
                naive.summary.push(false);
                if next(6) == 0 && ctx.len() >= 4 {
                    let s = next(ctx.len() as u64 - 2) as usize;
                    let e = s + 1 + next((ctx.len() - s) as u64 - 1) as usize;
                    match next(3) {
                        0 => {
                            ctx.apply(s, e, Replacement::Nothing, &mut next_id, &mut facts);
                            for v in [&mut naive.facts, &mut naive.covers] {
                                v.drain(s..e);
                            }
                            naive.keys.drain(s..e);
                            naive.summary.drain(s..e);
                        }
                        1 => {
                            let text = format!("summary keeps file_{}.rs", next(40));
                            let own: BTreeSet<FactId> = needed(&facts.extract(&text));
                            let mut covers = BTreeSet::new();
                            for i in s..e {
                                covers.extend(naive.facts[i].iter().copied());
                                covers.extend(naive.covers[i].iter().copied());
                            }
                            let key = naive.keys[s];
                            ctx.apply(
                                s,
                                e,
                                Replacement::Summary {
                                    role: Role::User,
                                    text,
                                    tokens: 7,
                                },
                                &mut next_id,
                                &mut facts,
                            );
                            naive.keys.splice(s..e, [key]);
                            naive.facts.splice(s..e, [own]);
                            naive.covers.splice(s..e, [covers]);
                            naive.summary.splice(s..e, [true]);
                        }
                        _ => {
                            let texts: Vec<(Rc<str>, u64)> = (s..e)
                                .map(|_| (format!("edited file_{}.rs", next(40)).into(), 3))
                                .collect();
                            for (i, (t, _)) in (s..e).zip(&texts) {
                                naive.facts[i] = needed(&facts.extract(t));
                            }
                            ctx.apply(s, e, Replacement::Texts(texts), &mut next_id, &mut facts);
                        }
                    }
                }
                // Compare every index with the naive model.
                assert_eq!(ctx.len(), naive.keys.len());
                let keys: Vec<u64> = ctx.entries.iter().map(|e| e.key).collect();
                assert_eq!(keys, naive.keys, "round {round}, message {m}");
                let total: u64 = ctx.views.iter().map(|v| v.tokens).sum();
                assert_eq!(ctx.total_tokens(), total);
                let mut by_fact: BTreeMap<FactId, Vec<u64>> = BTreeMap::new();
                let mut covered: BTreeMap<FactId, BTreeSet<u64>> = BTreeMap::new();
                for (i, fs) in naive.facts.iter().enumerate() {
                    for &f in fs {
                        by_fact.entry(f).or_default().push(naive.keys[i]);
                    }
                    if naive.summary[i] {
                        for &f in &naive.covers[i] {
                            covered.entry(f).or_default().insert(naive.keys[i]);
                        }
                    }
                }
                for f in 0..(prepared.interner_len() as FactId + 64) {
                    let got: Vec<u64> = ctx.occurrences(f).collect();
                    assert_eq!(
                        got,
                        by_fact.get(&f).cloned().unwrap_or_default(),
                        "occurrences of fact {f}, round {round}, message {m}"
                    );
                    let got: BTreeSet<u64> = ctx.coverage.keys(f).collect();
                    assert_eq!(
                        got,
                        covered.get(&f).cloned().unwrap_or_default(),
                        "coverage of fact {f}, round {round}, message {m}"
                    );
                }
                ctx.settle();
                for _ in 0..4 {
                    let s = next(ctx.len() as u64) as usize;
                    let e = s + 1 + next((ctx.len() - s) as u64) as usize;
                    let (k0, k1) = (naive.keys[s], naive.keys[e - 1]);
                    let split = ctx.entries.iter().any(|en| {
                        let inside = (k0..=k1).contains(&en.key);
                        en.partners.iter().any(|p| inside != (k0..=k1).contains(&p))
                    });
                    assert_eq!(ctx.splits_pair(s, e), split, "pair check {s}..{e}");
                }
            }
        }
    }

    #[test]
    fn span_tree_answers_range_queries_after_pushes_and_rebuilds() {
        let mut t = SpanTree::default();
        let leaves: Vec<(u64, u64)> = (0..200u64).map(|i| (i * 2, i * 2 + 1)).collect();
        for &(l, h) in &leaves {
            t.push(l, h);
        }
        t.settle();
        assert_eq!(t.query(10, 20), (20, 39));
        t.set(15, 3, 500);
        t.settle();
        assert_eq!(t.query(10, 20), (3, 500));
        assert_eq!(t.query(16, 20), (32, 39));
        // Shrink to 100 leaves, the rest rebuilt from position 50.
        t.rebuild_from(50, 100, |i| (i as u64, i as u64));
        t.settle();
        assert_eq!(t.query(50, 100), (50, 99));
        assert_eq!(t.query(0, 100).0, 0);
        assert_eq!(t.query(40, 60), (50, 99));
    }

    /// The lazily settled tree answers every range like a scan of the leaves would, whatever
    /// mix of pushes, leaf updates and partial rebuilds (growing and shrinking) came before.
    #[test]
    fn span_tree_equals_a_scan_after_random_edits() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        let mut t = SpanTree::default();
        let mut naive: Vec<(u64, u64)> = Vec::new();
        for round in 0..3_000 {
            match next(4) {
                0 | 1 => {
                    let v = (next(1_000), next(1_000));
                    t.push(v.0, v.1);
                    naive.push(v);
                }
                2 if !naive.is_empty() => {
                    let i = next(naive.len() as u64) as usize;
                    let v = (next(1_000), next(1_000));
                    t.set(i, v.0, v.1);
                    naive[i] = v;
                }
                _ if !naive.is_empty() => {
                    let p = next(naive.len() as u64) as usize;
                    let n = (p + next(3) as usize).min(naive.len());
                    let fresh: Vec<(u64, u64)> =
                        (0..n).map(|_| (next(1_000), next(1_000))).collect();
                    t.rebuild_from(p, n, |i| fresh[i]);
                    naive.truncate(n);
                    for (i, slot) in naive.iter_mut().enumerate().skip(p) {
                        *slot = fresh[i];
                    }
                }
                _ => {}
            }
            if round % 7 == 0 && !naive.is_empty() {
                t.settle();
                for _ in 0..5 {
                    let s = next(naive.len() as u64) as usize;
                    let e = s + 1 + next((naive.len() - s) as u64) as usize;
                    let want = naive[s..e]
                        .iter()
                        .fold((u64::MAX, 0), |(l, h), v| (l.min(v.0), h.max(v.1)));
                    assert_eq!(t.query(s, e), want, "round {round}, range {s}..{e}");
                }
            }
        }
    }
}
