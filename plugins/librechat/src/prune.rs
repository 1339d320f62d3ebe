//! `createPruneMessages` of `@librechat/agents` 3.1.63 (`src/messages/prune.ts`), re-implemented:
//! one [`Pruner`] is the closure LibreChat creates per run (and again after each summary), and
//! [`Pruner::prune`] is one call of the `pruneMessages` it returns. Within a run the closure
//! mutates the graph's messages (masking, pre-flight truncation, contextPruning) and keeps their
//! new token counts; so does this one, in `content` and `map`.

use crate::config::ContextPruning;
use crate::truncation::{
    cut_result_of, js_len, max_tool_input_chars, max_tool_result_chars, soft_trim, truncate_input,
    truncate_result, truncate_result_of, Cut, Cuts, HeadTail, Indicator,
};

/// A text the run made (masked, truncated, pruned), shared: whole, or a cut of the message's
/// original (a head and a tail of it around an indicator) whose text is made only when read
/// (ABI 1.8: the host counts such a cut and takes it as a `Cut` op without the text).
#[derive(Debug, Clone)]
pub struct Text(std::sync::Arc<Repr>);

#[derive(Debug)]
enum Repr {
    Whole(Box<str>),
    Cut {
        kept: HeadTail,
        // Inline, in this allocation (an allocation of its own was one more malloc and free
        // for every cut).
        marker: Indicator,
        whole: std::sync::OnceLock<Box<str>>,
    },
}

impl Text {
    /// A cut of the original: its first `kept.head` bytes, `marker`, its last `kept.tail`.
    pub fn cut(kept: HeadTail, marker: Indicator) -> Text {
        Text(std::sync::Arc::new(Repr::Cut {
            kept,
            marker,
            whole: std::sync::OnceLock::new(),
        }))
    }

    /// The text; `original` is the message's original text (what a cut keeps pieces of).
    pub fn get<'a>(&'a self, original: &str) -> &'a str {
        match &*self.0 {
            Repr::Whole(t) => t,
            Repr::Cut {
                kept,
                marker,
                whole,
            } => whole.get_or_init(|| {
                let (h, t) = (kept.head as usize, original.len() - kept.tail as usize);
                [&original[..h], &**marker, &original[t..]]
                    .concat()
                    .into_boxed_str()
            }),
        }
    }

    /// The bytes a cut keeps of the original and its marker, when the text is one.
    pub fn as_cut(&self) -> Option<(HeadTail, &str)> {
        match &*self.0 {
            Repr::Cut { kept, marker, .. } => Some((*kept, marker)),
            Repr::Whole(_) => None,
        }
    }
}

impl From<String> for Text {
    fn from(t: String) -> Text {
        Text(std::sync::Arc::new(Repr::Whole(t.into_boxed_str())))
    }
}

/// The text a message sends in the run: its run text, else its original.
fn run_or<'a>(run: &'a Option<Text>, original: &'a str) -> &'a str {
    match run {
        Some(t) => t.get(original),
        None => original,
    }
}

/// A version no text has had before (in this process): what a message's text is known by from
/// call to call ([`Pruner::run_text_version`]).
pub fn new_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Prefix sums of the closure's token counts (a Fenwick tree, `None` counting 0), kept with
/// `Pruner::map`: `getMessagesWithinTokenLimit` finds where the kept part starts by one search
/// instead of a walk back over the ~3,000 messages a 200K window sends.
#[derive(Debug, Clone, Default)]
pub struct Sums {
    /// Node k (0-based) holds the sum of the counts in (k + 1 − lowbit(k + 1), k].
    t: Vec<u64>,
}

impl Sums {
    fn len(&self) -> usize {
        self.t.len()
    }
    /// Appends a count. Node k covers (k − lowbit(k), k]: the count and the nodes k − 1,
    /// k − 2, k − 4, … below lowbit(k), which tile the rest of it (amortized two steps a count:
    /// a new run appends its whole history again).
    fn push(&mut self, v: u64) {
        let k = self.t.len() + 1;
        let low = k & k.wrapping_neg();
        let mut s = v;
        let mut step = 1;
        while step < low {
            s += self.t[k - step - 1];
            step <<= 1;
        }
        self.t.push(s);
    }
    /// Keeps the first `n` counts (a node covers only counts at or before it).
    fn truncate(&mut self, n: usize) {
        self.t.truncate(n);
    }
    /// The count at `i` goes from `old` to `new`.
    fn set(&mut self, i: usize, old: u64, new: u64) {
        if old == new {
            return;
        }
        let mut k = i + 1;
        while k <= self.t.len() {
            self.t[k - 1] = self.t[k - 1].wrapping_sub(old).wrapping_add(new);
            k += k & k.wrapping_neg();
        }
    }
    /// Σ counts of [0, p).
    fn prefix(&self, p: usize) -> u64 {
        let mut k = p;
        let mut s = 0u64;
        while k > 0 {
            s += self.t[k - 1];
            k -= k & k.wrapping_neg();
        }
        s
    }
    /// The least p with `prefix(p) ≥ need` (`need` ≥ 1), `None` past the end.
    fn lower_bound(&self, need: u64) -> Option<usize> {
        let n = self.t.len();
        let mut pos = 0;
        let mut rem = need;
        let mut step = if n == 0 {
            0
        } else {
            1usize << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            if pos + step <= n && self.t[pos + step - 1] < rem {
                pos += step;
                rem -= self.t[pos - 1];
            }
            step >>= 1;
        }
        (pos < n).then_some(pos + 1)
    }
}

/// `PRESSURE_THRESHOLD_MASKING`.
pub const PRESSURE_MASKING: f64 = 0.8;
/// `PRESSURE_BANDS`: pressure → budget factor of context fading.
pub const PRESSURE_BANDS: [(f64, f64); 4] = [(0.99, 0.05), (0.9, 0.2), (0.85, 0.5), (0.8, 1.0)];
/// `MASKED_RESULT_MAX_CHARS`.
pub const MASKED_RESULT_MAX_CHARS: u64 = 300;
/// `DEFAULT_RESERVE_RATIO`.
pub const DEFAULT_RESERVE_RATIO: f64 = 0.05;
const CALIBRATION_RATIO_MIN: f64 = 0.5;
const CALIBRATION_RATIO_MAX: f64 = 5.0;

/// JavaScript's `Math.round` (halves round up).
pub fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// A message as LangChain types it (`getType()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    System,
    Human,
    Ai,
    Tool,
}

/// One message of the graph's `messages`, as the host holds it (the originals), worked out once
/// when it arrives and kept between calls: its text is read only when it is cut ([`Texts`]).
#[derive(Debug, Clone)]
pub struct Lc {
    pub kind: Kind,
    pub id: u64,
    /// The host's token count of the original.
    pub tokens: u64,
    /// Length of the original text in UTF-16 code units (`content.length`), measured once.
    pub len: u64,
    /// Tool messages before this one: its rank among the results (masking and pre-flight
    /// weights).
    pub tools_before: usize,
    /// AI: ids of its tool calls, and their arguments (JSON text) in order.
    pub calls: Vec<(Box<str>, Box<str>)>,
    /// AI: length of its longest tool-call arguments (UTF-16 code units, as JavaScript counts).
    pub max_arg: u64,
    /// AI: it has text of its own (`maskConsumedToolResults`' `hasText`).
    pub has_text: bool,
    /// Tool: the id of the call it answers (`tool_call_id`).
    pub result_of: Option<Box<str>>,
    /// A host notion: the message is sent whatever LibreChat does.
    pub pinned: bool,
    /// The counter's count of the original text, once a cut needed it ([`Recount`]).
    pub text_tokens: std::cell::Cell<Option<u64>>,
    /// Where the last cuts of the original text fell (the next run cuts it near there).
    pub cuts: Cuts,
    /// In a context of the messages from position f on (the system message aside), this one is
    /// an orphan (a result whose call is not there, an AI message one of whose calls has no
    /// result there) when f ≥ `orphan_from` ([`link`]; `usize::MAX`: never).
    pub orphan_from: usize,
}

/// Where a tool-call id occurs: the positions of the AI messages that carry it and of the
/// results that answer it, ascending (an id is seldom used twice).
#[derive(Debug, Default, Clone)]
pub struct IdAt {
    pub calls: Vec<usize>,
    pub results: Vec<usize>,
}

/// The history's non-empty tool-call ids ([`link`]), and the least `orphan_from` of each block
/// of [`BLOCK`] messages: the orphans of a context from f on are found in the few blocks whose
/// least is at most f (in a history of answered calls, those around f), not by a test of every
/// message sent.
#[derive(Debug, Default, Clone)]
pub struct Ids {
    map: ctxlab_plugin_api::hash::FnvMap<Box<str>, IdAt>,
    mins: Vec<usize>,
}

/// Messages per block of [`Ids`]' least `orphan_from`.
const BLOCK: usize = 64;

impl std::ops::Deref for Ids {
    type Target = ctxlab_plugin_api::hash::FnvMap<Box<str>, IdAt>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Ids {
    /// Forgets every message.
    pub fn clear(&mut self) {
        self.map.clear();
        self.mins.clear();
    }

    /// The `orphan_from` of the message at `t` changed (or it arrived): its block's least again.
    fn touch(&mut self, msgs: &[Lc], t: usize) {
        let b = t / BLOCK;
        if self.mins.len() <= b {
            self.mins.resize(b + 1, usize::MAX);
        }
        let s = b * BLOCK;
        self.mins[b] = msgs[s..msgs.len().min(s + BLOCK)]
            .iter()
            .map(|m| m.orphan_from)
            .min()
            .unwrap_or(usize::MAX);
    }

    /// The positions in [f, n) of the messages that are orphans in a context from f on, in
    /// order.
    fn orphans<'a>(
        &'a self,
        msgs: &'a [Lc],
        f: usize,
        n: usize,
    ) -> impl Iterator<Item = usize> + 'a {
        let blocks = if f < n {
            f / BLOCK..(n - 1) / BLOCK + 1
        } else {
            0..0
        };
        blocks
            .filter(move |&b| self.mins.get(b).is_none_or(|&m| m <= f))
            .flat_map(move |b| f.max(b * BLOCK)..n.min(b * BLOCK + BLOCK))
            .filter(move |&i| msgs[i].orphan_from <= f)
    }
}

/// `orphan_from` of the AI message at `q`: the least f at which a context from f on holds no
/// result for one of its calls with an id.
fn ai_orphan_from(msgs: &[Lc], ids: &Ids, q: usize) -> usize {
    msgs[q]
        .calls
        .iter()
        .filter(|(id, _)| !id.is_empty())
        .map(|(id, _)| {
            ids.get(id)
                .and_then(|e| e.results.last())
                .map_or(0, |&r| r + 1)
        })
        .min()
        .unwrap_or(usize::MAX)
}

/// Adds the message at `q` (the last one) to `ids` and works out its `orphan_from` and that of
/// the messages whose calls or results share an id with it: `repairOrphanedToolMessages`' sets
/// of the context's call and result ids, kept per message so that a call tests each message by
/// one comparison instead of building the sets.
pub fn link(msgs: &mut [Lc], ids: &mut Ids, q: usize) {
    let mut touched: Vec<usize> = Vec::new();
    match msgs[q].kind {
        Kind::Ai => {
            for k in 0..msgs[q].calls.len() {
                if msgs[q].calls[k].0.is_empty() {
                    continue;
                }
                let e = ids.map.entry(msgs[q].calls[k].0.clone()).or_default();
                e.calls.push(q);
                for &r in &e.results {
                    msgs[r].orphan_from = q + 1;
                    touched.push(r);
                }
            }
            msgs[q].orphan_from = ai_orphan_from(msgs, ids, q);
        }
        Kind::Tool => match msgs[q].result_of.clone().filter(|r| !r.is_empty()) {
            Some(id) => {
                let e = ids.map.entry(id).or_default();
                e.results.push(q);
                msgs[q].orphan_from = e.calls.last().map_or(0, |&c| c + 1);
                let calls = e.calls.clone();
                for c in calls {
                    msgs[c].orphan_from = ai_orphan_from(msgs, ids, c);
                    touched.push(c);
                }
            }
            None => msgs[q].orphan_from = 0,
        },
        _ => msgs[q].orphan_from = usize::MAX,
    }
    ids.touch(msgs, q);
    for t in touched {
        if t / BLOCK != q / BLOCK {
            ids.touch(msgs, t);
        }
    }
}

/// Whether a context from position `f` on holds a result answering `id`.
fn has_result(ids: &Ids, id: &str, f: usize) -> bool {
    ids.get(id)
        .and_then(|e| e.results.last())
        .is_some_and(|&r| r >= f)
}

/// The original texts of the messages (the host's flattened text: text parts, tool arguments,
/// results), by position: read only for the messages a call cuts or strips.
pub trait Texts {
    fn text(&self, i: usize) -> &str;
}

impl Texts for Vec<&str> {
    fn text(&self, i: usize) -> &str {
        self[i]
    }
}

/// Tool results before position `e`.
pub fn tools_upto(msgs: &[Lc], e: usize) -> usize {
    match e.checked_sub(1).map(|l| &msgs[l]) {
        Some(m) => m.tools_before + usize::from(m.kind == Kind::Tool),
        None => 0,
    }
}

/// Recounts an edited message as the host will: `tokens − count(original) + count(new)`.
pub trait Recount {
    fn recount(&self, m: &Lc, original: &str, new_text: &str) -> u64;
    /// Whether the host counts a cut of message `i`'s original without its text and takes it
    /// as a `Cut` (ABI 1.8).
    fn can_cut(&self, _i: usize) -> bool {
        false
    }
    /// [`Recount::recount`] of message `i` cut to `kept` of its original around `marker`,
    /// counted by the host without the text; `None` when it cannot.
    fn recount_cut(&self, _m: &Lc, _i: usize, _kept: HeadTail, _marker: &str) -> Option<u64> {
        None
    }
}

/// A cut of message `i` as a run text, with its tokens: made whole only when the host cannot
/// count it as a cut (or it is not one).
fn cut_text(rc: &dyn Recount, m: &Lc, i: usize, original: &str, cut: Cut) -> (Text, u64) {
    match cut {
        Cut::Kept(k, marker) => match rc.recount_cut(m, i, k, &marker) {
            Some(tokens) => (Text::cut(k, marker), tokens),
            None => {
                let t = Text::cut(k, marker);
                let tokens = rc.recount(m, original, t.get(original));
                let whole = t.get(original).to_string();
                (whole.into(), tokens)
            }
        },
        Cut::Text(t) => {
            let tokens = rc.recount(m, original, &t);
            (t.into(), tokens)
        }
    }
}

/// What a kept message sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// Its text as the run holds it ([`Pruner::run_text_version`]: masked, truncated or pruned
    /// within the run, else the original): nothing is copied per call.
    Run,
    /// A text of this call only (orphan repair, fallback fading, emergency truncation).
    Own(String),
}

/// The messages a call keeps, in order, and what each sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// The system message at 0 (when `system`), then every message of `from..end` sending its
    /// run text ([`Sent::Run`]) except those in `except` (ascending): dropped (`None`) or
    /// sending a text of this call. A call's context is this shape (`getMessagesWithinTokenLimit`
    /// keeps the newest messages), so it costs its exceptions, not the ~3,000 messages a 200K
    /// window sends.
    Window {
        system: bool,
        from: usize,
        end: usize,
        except: Vec<(usize, Option<String>)>,
    },
    /// Any list (fallback fading and emergency truncation send copies of every text).
    List(Vec<(usize, Sent)>),
}

impl Default for Kept {
    fn default() -> Kept {
        Kept::List(Vec::new())
    }
}

impl Kept {
    /// Messages kept.
    pub fn len(&self) -> usize {
        match self {
            Kept::Window {
                system,
                from,
                end,
                except,
            } => {
                usize::from(*system) + (end - from)
                    - except.iter().filter(|e| e.1.is_none()).count()
            }
            Kept::List(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first position kept.
    pub fn first(&self) -> Option<usize> {
        self.iter().next().map(|k| k.0)
    }

    /// The kept positions in order, with their own text when they send one.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (usize, Option<&str>)> + '_> {
        match self {
            Kept::Window {
                system,
                from,
                end,
                except,
            } => {
                let mut ex = except.iter().peekable();
                Box::new((0..usize::from(*system)).map(|i| (i, None)).chain(
                    (*from..*end).filter_map(move |i| match ex.next_if(|e| e.0 == i) {
                        Some((_, None)) => None,
                        Some((_, Some(t))) => Some((i, Some(t.as_str()))),
                        None => Some((i, None)),
                    }),
                ))
            }
            Kept::List(v) => Box::new(v.iter().map(|(i, s)| {
                (
                    *i,
                    match s {
                        Sent::Run => None,
                        Sent::Own(t) => Some(t.as_str()),
                    },
                )
            })),
        }
    }

    /// As a list.
    pub fn to_list(&self) -> Vec<(usize, Sent)> {
        self.iter()
            .map(|(i, t)| (i, t.map_or(Sent::Run, |t| Sent::Own(t.to_string()))))
            .collect()
    }
}

/// The closure's settings (`PruneMessagesFactoryParams`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `maxTokens` (the agent's `maxContextTokens`).
    pub max_tokens: i64,
    pub summarization: bool,
    pub reserve_ratio: f64,
    pub pruning: ContextPruning,
}

/// What one call of `pruneMessages` returns.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Positions kept, in order, and what each sends.
    pub context: Kept,
    /// `messagesToRefine.length`.
    pub refine: usize,
    /// `prePruneContextTokens` (calibrated, after masking and pre-flight truncation).
    pub pre_prune: f64,
    pub remaining: f64,
    pub pressure: f64,
    pub calibration_ratio: f64,
    pub resolved_overhead: Option<f64>,
    /// Diagnostics for events: masked, pre-flight-truncated, context-pruned results; orphans;
    /// whether fallback fading / emergency truncation ran; the instruction tokens used.
    pub masked: usize,
    pub preflight: usize,
    pub context_pruned: usize,
    pub orphans: usize,
    pub fallback: bool,
    pub emergency: Option<u64>,
    pub instructions: f64,
    pub pruning_budget: f64,
    /// The pre-flight looked only at what its last pass left over the caps (`Tall`).
    pub listed: bool,
}

/// The messages at the start of the history that every run leaves alike, so that a run (a new
/// closure, which LibreChat builds from the stored originals) need not work them out again.
///
/// In a long conversation the consumed tool results far back all get the masking floor: a new
/// closure's first call masks each of them from its original to `MASKED_RESULT_MAX_CHARS`
/// (recency weights over 0.6 × count shares of the budget fall below it), and nothing after that
/// touches them while the pre-flight caps stay at or above their length, their tool inputs fit
/// the input cap and contextPruning's minimum is above their length. Those conditions are
/// checked at every call; when one fails, the prefix is worked out again from the originals, as
/// the closure does. So every call costs what changed since the last run, not the history.
#[derive(Debug, Clone, Default)]
struct Frozen {
    /// Positions before this hold their steady state (in `map`, `content`, `lens`).
    len: usize,
    /// Σ original tokens of the prefix (what a new closure counts before it masks).
    orig_tokens: u64,
    /// Σ tokens of the prefix as masked.
    tokens: u64,
    /// Tool results of the prefix a new closure masks (longer than the floor).
    masked: usize,
    /// Longest tool result of the prefix as masked (UTF-16 units).
    max_result: u64,
    /// Longest tool-call input of the prefix's AI messages (they keep their originals).
    max_arg: u64,
    /// Rank of the prefix's last tool result (its masking cap is the prefix's largest).
    last_rank: Option<usize>,
    /// A new run has not masked the prefix yet: it stands for the originals until its first call
    /// masks it.
    pending: bool,
}

/// The state of one `createPruneMessages` closure, kept from run to run for the frozen prefix.
#[derive(Debug, Clone)]
pub struct Pruner {
    /// Messages seen (a history that no longer extends them is another run's).
    seen: usize,
    /// The last AI message with text of its own: tool results before it are consumed.
    last_text: Option<usize>,
    /// The first human message: contextPruning protects what comes before it.
    first_human: Option<usize>,
    map: Vec<Option<u64>>,
    /// Prefix sums of `map`.
    sums: Sums,
    /// The mutated content of a message (masked, truncated, pruned) within the run.
    content: Vec<Option<Text>>,
    /// A number no other text of any run has, given to each text `content` takes
    /// ([`new_version`]): the plugin knows a text it sent at the last call by it, without
    /// touching the text.
    vers: Vec<u64>,
    /// The current tool-call inputs of an AI message whose inputs were truncated.
    inputs: Inputs,
    /// Length of each message as it is now, in UTF-16 code units (`content.length`).
    lens: Vec<u64>,
    total: u64,
    last_turn_start: usize,
    last_cut: usize,
    cum_raw: f64,
    cum_provider: f64,
    ratio: f64,
    best_overhead: Option<f64>,
    best_variance: f64,
    best_estimate: Option<f64>,
    frozen: Frozen,
    /// Keeps a frozen prefix from run to run (off: every run starts from scratch, as LibreChat's
    /// closure does; the tests compare the two).
    incremental: bool,
    /// Calls so far in this run: the graph has usage for a call only after one.
    pub calls: u64,
    /// The least position whose run text (`content`, `vers`) may have changed since the plugin
    /// last took its texts ([`Pruner::take_dirty`]): the messages before it send what they
    /// sent then, so `emit` need not look at them one by one.
    dirty_from: usize,
    /// The messages the pre-flight can cut, kept from call to call.
    tall: Tall,
}

/// What the last pre-flight pass left over its least caps, so that the next pass (caps at
/// least as high, no length grown since) looks at those messages and the new ones only: every
/// other message of the run was at or under the least caps then and has only been cut since.
/// New runs, and a frozen prefix worked out again, put lengths back to the originals: the list
/// is dropped then, and the next pass walks the whole run.
#[derive(Debug, Clone, Default)]
struct Tall {
    valid: bool,
    /// The pass started here: an earlier start walks again.
    from: usize,
    /// Messages then: the later ones are looked at one by one.
    upto: usize,
    /// The least result cap of that pass, and its tool results still longer.
    result_cap: u64,
    results: Vec<usize>,
    /// Its tool-input cap, and its AI messages with a longer input still.
    input_cap: u64,
    inputs: Vec<usize>,
    /// That pass took the lists of the one before.
    took: bool,
}

/// `maskConsumedToolResults`' cap of the consumed result of rank `c` among `count`.
fn mask_cap(c: usize, count: usize, total_chars: f64) -> u64 {
    if total_chars <= 0.0 {
        return MASKED_RESULT_MAX_CHARS;
    }
    let position = if count > 1 {
        c as f64 / (count - 1) as f64
    } else {
        1.0
    };
    let weight = 0.2 + 0.8 * position;
    let total_weight = if count > 1 { 0.6 * count as f64 } else { 1.0 };
    let share = weight / total_weight * total_chars;
    // `Math.max(300, Math.floor(share))`: a float-to-integer cast truncates toward zero and
    // saturates, which is the floor for every share at or above the 300 it is compared with
    // (baseline x86-64 has no rounding instruction: `floor` is a call).
    MASKED_RESULT_MAX_CHARS.max(share as u64)
}

/// The pre-flight cap of the tool result of rank `t` among `tools`.
fn result_cap(base_chars: f64, t: usize, tools: usize) -> u64 {
    let position = if tools > 1 {
        t as f64 / (tools - 1) as f64
    } else {
        1.0
    };
    // `Math.max(200, Math.floor(…))`, the floor as a truncating cast (see `mask_cap`).
    200u64.max((base_chars * (0.2 + 0.8 * position)) as u64)
}

/// The smallest pre-flight cap of any tool result with `base` tokens.
fn least_result_cap(base: i64) -> u64 {
    result_cap(max_tool_result_chars(base) as f64, 0, 2)
}

impl Pruner {
    /// `createPruneMessages` with an empty token map, seeded with `calibrationRatio`.
    pub fn new(seed_ratio: f64) -> Pruner {
        Pruner {
            seen: 0,
            last_text: None,
            first_human: None,
            map: Vec::new(),
            sums: Sums::default(),
            content: Vec::new(),
            vers: Vec::new(),
            inputs: Inputs::new(),
            lens: Vec::new(),
            total: 0,
            last_turn_start: 0,
            last_cut: 0,
            cum_raw: 0.0,
            cum_provider: 0.0,
            ratio: if seed_ratio > 0.0 { seed_ratio } else { 1.0 },
            best_overhead: None,
            best_variance: f64::INFINITY,
            best_estimate: None,
            frozen: Frozen::default(),
            incremental: true,
            calls: 0,
            dirty_from: 0,
            tall: Tall::default(),
        }
    }

    /// The same closure without the frozen prefix: every run works out the whole history.
    pub fn from_scratch(mut self) -> Pruner {
        self.incremental = false;
        self
    }

    /// `createPruneMessages` again on the same history (a new run): the closure starts from the
    /// originals, seeded with `calibrationRatio`. The frozen prefix stays, standing for its
    /// originals until the run's first call masks it.
    pub fn new_run(&mut self, seed_ratio: f64) {
        if !self.incremental {
            *self = Pruner::new(seed_ratio).from_scratch();
            return;
        }
        let s = self.frozen.len;
        self.dirty_from = self.dirty_from.min(s);
        self.tall.valid = false;
        self.map.truncate(s);
        self.sums.truncate(s);
        self.content.truncate(s);
        self.vers.truncate(s);
        self.lens.truncate(s);
        self.inputs.retain(|&i, _| i < s);
        self.total = self.frozen.orig_tokens;
        self.frozen.pending = s > 0;
        self.last_turn_start = s;
        self.last_cut = 0;
        self.cum_raw = 0.0;
        self.cum_provider = 0.0;
        self.ratio = if seed_ratio > 0.0 { seed_ratio } else { 1.0 };
        self.best_overhead = None;
        self.best_variance = f64::INFINITY;
        self.best_estimate = None;
        self.calls = 0;
    }

    /// Messages in the frozen prefix.
    pub fn frozen_len(&self) -> usize {
        self.frozen.len
    }

    /// The frozen prefix no longer holds (a count in it changed): the next run works out the
    /// whole history.
    pub fn forget_frozen(&mut self) {
        self.frozen = Frozen::default();
        self.tall.valid = false;
    }

    /// Messages this closure has seen: a history shorter than this (or changed within it) is
    /// another run's.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The first AI message this call counts anew (the previous call's reply).
    pub fn first_new_ai(&self, msgs: &[Lc]) -> Option<usize> {
        (self.last_turn_start..msgs.len())
            .find(|&i| self.map.get(i).is_none_or(|t| t.is_none()) && msgs[i].kind == Kind::Ai)
    }

    /// A message's count changes: the running total with it.
    fn set_count(&mut self, i: usize, tokens: u64) {
        let old = self.map[i].unwrap_or(0);
        self.total = self.total - old + tokens;
        self.map[i] = Some(tokens);
        self.sums.set(i, old, tokens);
    }

    /// The text of message `i` as the run holds it, when not the original, with its version
    /// ([`new_version`]): the same while the run leaves the text alone.
    pub fn run_text_version(&self, i: usize) -> Option<(&Text, u64)> {
        self.content
            .get(i)
            .and_then(|t| t.as_ref())
            .map(|t| (t, self.vers[i]))
    }

    /// The least position whose run text may have changed since the last call of this, which
    /// starts the count again: every message before it has the text and version it had then.
    pub fn take_dirty(&mut self) -> usize {
        std::mem::replace(&mut self.dirty_from, usize::MAX)
    }

    /// Every message's run text (`None`: the original) and its version.
    pub fn run_texts(&self) -> (&[Option<Text>], &[u64]) {
        (&self.content, &self.vers)
    }

    fn text<'m>(&'m self, tx: &'m dyn Texts, i: usize) -> &'m str {
        run_or(&self.content[i], tx.text(i))
    }

    /// The frozen prefix against this call's passes: kept (and, at a run's first call, masked
    /// as the closure masks it) when none of them would touch it, else worked out again.
    #[allow(clippy::too_many_arguments)]
    fn check_frozen(
        &mut self,
        msgs: &[Lc],
        masks: bool,
        count: usize,
        total_chars: f64,
        preflights: &[i64],
        pruning: Option<&ContextPruning>,
    ) -> usize {
        let f = &self.frozen;
        if f.len == 0 {
            self.frozen = Frozen::default();
            return 0;
        }
        let mut ok = preflights.iter().all(|&base| {
            least_result_cap(base) >= f.max_result && max_tool_input_chars(base) >= f.max_arg
        }) && pruning.is_none_or(|p| f.max_result < p.min_prunable_tool_chars);
        if f.pending {
            ok &= masks
                && f.last_rank
                    .is_none_or(|c| mask_cap(c, count, total_chars) == MASKED_RESULT_MAX_CHARS);
        }
        if ok {
            if !f.pending {
                return 0;
            }
            let masked = f.masked;
            self.total = self.total - f.orig_tokens + f.tokens;
            self.frozen.pending = false;
            return masked;
        }
        self.tall.valid = false;
        if f.pending {
            // The run starts from the originals.
            self.dirty_from = 0;
            for (i, m) in msgs.iter().enumerate().take(f.len) {
                self.sums.set(i, self.map[i].unwrap_or(0), m.tokens);
                self.map[i] = Some(m.tokens);
                self.content[i] = None;
                self.vers[i] = 0;
                self.lens[i] = m.len;
            }
        }
        self.frozen = Frozen::default();
        0
    }

    /// After a run's first call, the consumed messages that call left in their steady state
    /// join the frozen prefix.
    fn extend_frozen(&mut self, msgs: &[Lc], count: usize, total_chars: f64, least_input_cap: u64) {
        let end = self.last_text.unwrap_or(0);
        let mut i = self.frozen.len;
        while i < end {
            let m = &msgs[i];
            let f = &mut self.frozen;
            match m.kind {
                Kind::Tool => {
                    if mask_cap(m.tools_before, count, total_chars) != MASKED_RESULT_MAX_CHARS {
                        break;
                    }
                    f.masked += usize::from(m.len > MASKED_RESULT_MAX_CHARS);
                    f.max_result = f.max_result.max(self.lens[i]);
                    f.last_rank = Some(m.tools_before);
                }
                Kind::Ai => {
                    if m.max_arg > least_input_cap || self.inputs.contains_key(&i) {
                        break;
                    }
                    f.max_arg = f.max_arg.max(m.max_arg);
                }
                _ => {}
            }
            f.orig_tokens += m.tokens;
            f.tokens += self.map[i].unwrap_or(0);
            i += 1;
        }
        self.frozen.len = i;
    }

    /// One call of `pruneMessages`. `usage`: (input tokens, output tokens) of the previous LLM
    /// call when the graph has it; `instructions`: `getInstructionTokens()`.
    pub fn prune(
        &mut self,
        s: &Settings,
        msgs: &[Lc],
        ids: &Ids,
        tx: &dyn Texts,
        usage: Option<(u64, u64)>,
        instructions: f64,
        rc: &dyn Recount,
    ) -> Pruned {
        self.calls += 1;
        let n = msgs.len();
        let mut out = Pruned {
            calibration_ratio: self.ratio,
            ..Pruned::default()
        };
        if n == 0 {
            out.remaining = s.max_tokens as f64;
            out.resolved_overhead = self.best_overhead;
            return out;
        }
        for (i, m) in msgs.iter().enumerate().skip(self.seen) {
            if m.kind == Kind::Ai && m.has_text {
                self.last_text = Some(i);
            }
            if m.kind == Kind::Human && self.first_human.is_none() {
                self.first_human = Some(i);
            }
        }
        self.seen = self.seen.max(n);
        self.dirty_from = self.dirty_from.min(self.map.len());
        for m in &msgs[self.map.len()..] {
            self.map.push(None);
            self.content.push(None);
            self.vers.push(0);
            self.lens.push(m.len);
        }
        // Counts from here on are appended to the sums once known (below).
        let summed = self.sums.len();

        // New messages: raw counts; with usage, the first new AI message is the reply and counts
        // the provider's output tokens.
        let new_from = self.last_turn_start;
        let mut new_outputs = vec![false; n.saturating_sub(new_from)];
        let mut assigned = false;
        for i in new_from..n {
            if self.map[i].is_some() {
                continue;
            }
            match usage {
                Some((_, output)) if !assigned && msgs[i].kind == Kind::Ai => {
                    self.map[i] = Some(output);
                    assigned = true;
                }
                _ => self.map[i] = Some(msgs[i].tokens),
            }
            if i < summed {
                self.sums.set(i, 0, self.map[i].unwrap_or(0));
            }
            if usage.is_some() {
                new_outputs[i - new_from] = true;
            }
            self.total += self.map[i].unwrap_or(0);
        }
        for i in summed..n {
            self.sums.push(self.map[i].unwrap_or(0));
        }

        // Cumulative calibration (prune.ts "Cumulative calibration").
        if let Some((provider_input, _)) = usage {
            let first_is_system = msgs[0].kind == Kind::System;
            let mut raw_sent = 0u64;
            if first_is_system {
                raw_sent += self.map[0].unwrap_or(0);
            }
            for i in self.last_cut..n {
                if (i == 0 && first_is_system) || (i >= new_from && new_outputs[i - new_from]) {
                    continue;
                }
                raw_sent += self.map[i].unwrap_or(0);
            }
            let raw_sent = raw_sent as f64;
            let provider_messages = (provider_input as f64 - instructions).max(0.0);
            if raw_sent > 0.0 && provider_messages > 0.0 {
                self.cum_raw += raw_sent;
                self.cum_provider += provider_messages;
                self.ratio = (self.cum_provider / self.cum_raw)
                    .clamp(CALIBRATION_RATIO_MIN, CALIBRATION_RATIO_MAX);
            }
            let ours = instructions + raw_sent * self.ratio;
            let overall = if ours > 0.0 {
                provider_input as f64 / ours
            } else {
                0.0
            };
            let variance = (overall - 1.0).abs();
            if variance < self.best_variance && raw_sent > 0.0 {
                self.best_variance = variance;
                self.best_overhead =
                    Some(js_round(provider_input as f64 - raw_sent * self.ratio).max(0.0));
                self.best_estimate = Some(instructions);
            }
        }

        let estimated = instructions;
        let stable = self
            .best_estimate
            .is_some_and(|b| b > 0.0 && (estimated - b).abs() / b < 0.1);
        let current_instructions = match self.best_overhead {
            Some(best) if best <= estimated && stable => best,
            _ => estimated,
        };
        let max_tokens = s.max_tokens as f64;
        let reserve = if s.reserve_ratio > 0.0 && s.reserve_ratio < 1.0 {
            js_round(max_tokens * s.reserve_ratio)
        } else {
            0.0
        };
        let pruning_budget = max_tokens - reserve;
        let effective = (pruning_budget - current_instructions).max(0.0);
        out.instructions = current_instructions;
        out.pruning_budget = pruning_budget;
        out.calibration_ratio = self.ratio;
        out.resolved_overhead = self.best_overhead;

        // `sumTokenCounts` over the map: kept as a running total (every count that changes
        // changes it), so a call costs what changed, not the whole run.
        let calibrated = js_round(self.total as f64 * self.ratio);
        let pressure = if pruning_budget > 0.0 {
            calibrated / pruning_budget
        } else {
            0.0
        };
        let early = effective == 0.0 && s.summarization;

        // This call's passes, worked out before any of them runs (the frozen prefix is checked
        // against them).
        let masks = !early && pressure >= PRESSURE_MASKING;
        let mask_budget = {
            let raw_budget = if self.ratio > 0.0 {
                (effective / self.ratio).floor()
            } else {
                effective
            };
            let headroom = if s.summarization {
                (raw_budget * s.reserve_ratio * 0.5).floor()
            } else {
                0.0
            };
            raw_budget + headroom
        };
        let total_chars = if mask_budget > 0.0 {
            mask_budget * 4.0
        } else {
            0.0
        };
        let consumed = tools_upto(msgs, self.last_text.unwrap_or(0));
        let fading = (!early && pressure >= PRESSURE_MASKING && !s.summarization).then(|| {
            let factor = PRESSURE_BANDS
                .iter()
                .find(|(t, _)| pressure >= *t)
                .map_or(1.0, |b| b.1);
            1024f64.max((effective * factor).floor()) as i64
        });
        let pruning = (!early && s.pruning.enabled && !s.summarization).then_some(&s.pruning);
        let raw_effective = if self.ratio > 0.0 {
            js_round(effective / self.ratio)
        } else {
            effective
        };
        let fit =
            (!early && s.summarization && raw_effective > 0.0).then_some(raw_effective as i64);
        let preflights: Vec<i64> = fading.into_iter().chain(fit).collect();
        let first_of_run = self.calls == 1;
        let prefix_masked =
            self.check_frozen(msgs, masks, consumed, total_chars, &preflights, pruning);
        let from = self.frozen.len;

        if early {
            // Instructions fill the budget: every message goes to the summarizer.
            self.last_turn_start = n;
            out.refine = n;
            out.pre_prune = calibrated;
            out.pressure = pressure;
            return out;
        }
        out.pressure = pressure;

        if masks {
            out.masked = prefix_masked + self.mask(msgs, tx, consumed, total_chars, from, rc);
            if out.masked > 0 {
                self.cum_raw = 0.0;
                self.cum_provider = 0.0;
            }
        }
        if let Some(base) = fading {
            out.preflight = self.preflight(msgs, tx, base, from, rc);
            out.listed = self.tall.took;
        }
        if let Some(p) = pruning {
            out.context_pruned = self.context_pruning(msgs, tx, p, from, rc);
        }
        if let Some(base) = fit {
            out.preflight = self.preflight(msgs, tx, base, from, rc);
            out.listed = self.tall.took;
        }
        if first_of_run
            && self.incremental
            && masks
            && preflights
                .iter()
                .all(|&b| least_result_cap(b) >= MASKED_RESULT_MAX_CHARS)
            && pruning.is_none_or(|p| MASKED_RESULT_MAX_CHARS < p.min_prunable_tool_chars)
        {
            let least_input_cap = preflights
                .iter()
                .map(|&b| max_tool_input_chars(b))
                .min()
                .unwrap_or(u64::MAX);
            self.extend_frozen(msgs, consumed, total_chars, least_input_cap);
        }

        let calibrated = js_round(self.total as f64 * self.ratio);
        out.pre_prune = calibrated;
        self.last_turn_start = n;
        if self.last_cut == 0 && calibrated + current_instructions <= pruning_budget {
            out.context = Kept::Window {
                system: false,
                from: 0,
                end: n,
                except: Vec::new(),
            };
            out.remaining = pruning_budget - calibrated - current_instructions;
            return out;
        }

        let raw_budget = if self.ratio > 0.0 {
            js_round(pruning_budget / self.ratio)
        } else {
            pruning_budget
        };
        let raw_instructions = if self.ratio > 0.0 {
            js_round(current_instructions / self.ratio)
        } else {
            current_instructions
        };
        let counts = &self.map[..n];
        let texts = &self.content[..n];
        debug_assert_eq!(self.sums.len(), n);
        let fit = within_limit_by_sums(msgs, counts, &self.sums, raw_budget, raw_instructions);
        debug_assert_eq!(
            fit,
            within_limit(msgs, counts, raw_budget, raw_instructions),
            "the search and the walk keep the same part"
        );
        let (mut context, mut reclaimed, dropped) =
            repair_orphans(msgs, ids, tx, counts, texts, &self.inputs, &fit, rc);
        out.orphans = dropped;
        let mut refine = fit.refine + dropped;
        let remaining_initial = fit.remaining;

        if context.is_empty() && effective > 0.0 && s.summarization {
            // Fallback fading on a copy, retried against the (calibrated-space) pruning budget.
            let budget = 1024f64.max(effective) as i64;
            let (counts2, texts2, inputs2) = self.faded(msgs, tx, budget, rc);
            let retry = within_limit(msgs, &counts2, pruning_budget, current_instructions);
            let (c, r, d) = repair_orphans(msgs, ids, tx, &counts2, &texts2, &inputs2, &retry, rc);
            if !c.is_empty() {
                context = own(c, &texts2, tx);
                reclaimed = r;
                refine += retry.refine + d;
                out.fallback = true;
            }
        }
        if context.is_empty() && effective > 0.0 {
            let per_message = (effective / n.max(1) as f64).floor();
            let cap = 200f64.max(per_message * 4.0) as u64;
            out.emergency = Some(cap);
            let mut counts2 = self.map[..n].to_vec();
            let mut texts2 = self.content[..n].to_vec();
            let mut inputs = self.inputs.clone();
            for i in 0..n {
                let m = &msgs[i];
                let text = run_or(&texts2[i], tx.text(i));
                match m.kind {
                    Kind::Tool => {
                        if let Some(t) = truncate_result(text, cap) {
                            counts2[i] = Some(rc.recount(m, tx.text(i), &t));
                            texts2[i] = Some(t.into());
                        }
                    }
                    Kind::Ai => {
                        if let Some((t, now)) = truncate_inputs(m, tx.text(i), inputs.get(&i), cap)
                        {
                            counts2[i] = Some(rc.recount(m, tx.text(i), &t));
                            texts2[i] = Some(t.into());
                            inputs.insert(i, now);
                        }
                    }
                    _ => {}
                }
            }
            let retry = within_limit(msgs, &counts2, pruning_budget, current_instructions);
            let (c, r, d) = repair_orphans(msgs, ids, tx, &counts2, &texts2, &inputs, &retry, rc);
            context = own(c, &texts2, tx);
            reclaimed = r;
            refine += retry.refine + d;
        }
        out.remaining = 0f64.max(pruning_budget.min(remaining_initial + reclaimed));
        out.refine = refine;
        self.last_cut = n.saturating_sub(
            context.len()
                - usize::from(
                    context
                        .first()
                        .is_some_and(|c| msgs[c].kind == Kind::System),
                ),
        );
        out.context = context;
        out
    }

    /// `maskConsumedToolResults` with a recency-weighted share of the budget (`total_chars`):
    /// the consumed results are the tool results before the last AI message with text, ranked
    /// among `count`; the frozen prefix before `from` is at or under every cap.
    fn mask(
        &mut self,
        msgs: &[Lc],
        tx: &dyn Texts,
        count: usize,
        total_chars: f64,
        from: usize,
        rc: &dyn Recount,
    ) -> usize {
        let end = self.last_text.unwrap_or(0);
        let mut masked = 0;
        for i in from..end {
            // No cap is under the floor: a result at or under it is never cut.
            if msgs[i].kind != Kind::Tool || self.lens[i] <= MASKED_RESULT_MAX_CHARS {
                continue;
            }
            let max = mask_cap(msgs[i].tools_before, count, total_chars);
            if self.lens[i] <= max {
                continue;
            }
            let original = tx.text(i);
            let cut = match &self.content[i] {
                // A cut of the original, kept as one when the host counts and takes it.
                None if rc.can_cut(i) => {
                    cut_result_of(original, self.lens[i], max, Some(&msgs[i].cuts))
                }
                None => truncate_result_of(original, self.lens[i], max, Some(&msgs[i].cuts))
                    .map(|(t, units, _)| (Cut::Text(t), units)),
                Some(t) => truncate_result_of(t.get(original), self.lens[i], max, None)
                    .map(|(t, units, _)| (Cut::Text(t), units)),
            };
            if let Some((cut, units)) = cut {
                let (text, tokens) = cut_text(rc, &msgs[i], i, original, cut);
                self.set_count(i, tokens);
                self.lens[i] = units;
                self.content[i] = Some(text);
                self.vers[i] = new_version();
                self.dirty_from = self.dirty_from.min(i);
                masked += 1;
            }
        }
        masked
    }

    /// `preFlightTruncateToolResults` + `preFlightTruncateToolCallInputs` with `base` tokens.
    fn preflight(
        &mut self,
        msgs: &[Lc],
        tx: &dyn Texts,
        base: i64,
        from: usize,
        rc: &dyn Recount,
    ) -> usize {
        let mut w = Work {
            counts: &mut self.map,
            sums: Some(&mut self.sums),
            total: &mut self.total,
            content: &mut self.content,
            vers: &mut self.vers,
            lens: &mut self.lens,
            inputs: &mut self.inputs,
            // A closure that works out every run from the originals walks every pass too.
            tall: self.incremental.then_some(&mut self.tall),
            dirty_from: &mut self.dirty_from,
        };
        preflight_on(msgs, tx, &mut w, base, from, rc)
    }

    /// Fallback fading: the pre-flight truncation on a copy (the closure keeps its counts).
    fn faded(
        &self,
        msgs: &[Lc],
        tx: &dyn Texts,
        base: i64,
        rc: &dyn Recount,
    ) -> (Vec<Option<u64>>, Vec<Option<Text>>, Inputs) {
        let (mut counts, mut content, mut lens, mut inputs) = (
            self.map.clone(),
            self.content.clone(),
            self.lens.clone(),
            self.inputs.clone(),
        );
        let mut vers = self.vers.clone();
        let mut total = self.total;
        // A copy's writes are not the closure's.
        let mut dirty = usize::MAX;
        let mut w = Work {
            counts: &mut counts,
            sums: None,
            total: &mut total,
            content: &mut content,
            vers: &mut vers,
            lens: &mut lens,
            inputs: &mut inputs,
            tall: None,
            dirty_from: &mut dirty,
        };
        preflight_on(msgs, tx, &mut w, base, 0, rc);
        (counts, content, inputs)
    }

    /// `applyContextPruning` (contextPruning.ts); the frozen prefix before `from` is under its
    /// minimum length.
    fn context_pruning(
        &mut self,
        msgs: &[Lc],
        tx: &dyn Texts,
        p: &ContextPruning,
        from: usize,
        rc: &dyn Recount,
    ) -> usize {
        let n = msgs.len();
        if !p.enabled || n == 0 {
            return 0;
        }
        // Protected: everything before the first human message (the system message too), and
        // the last `keepLastAssistants` turns, walked back from the end.
        let head = self.first_human.unwrap_or(n);
        let mut tail = vec![false; 0];
        let mut stop = 0;
        let mut turns = 0u64;
        let mut in_turn = false;
        for i in (0..n).rev() {
            if matches!(msgs[i].kind, Kind::Ai | Kind::Tool) {
                tail.push(true);
                in_turn = true;
            } else {
                if in_turn {
                    turns += 1;
                    in_turn = false;
                    if turns >= p.keep_last_assistants {
                        stop = i + 1;
                        break;
                    }
                }
                tail.push(turns < p.keep_last_assistants);
            }
        }
        // `tail[k]`: position n - 1 - k, for positions at or after `stop`.
        let protected = |i: usize| i < head || (i >= stop && tail[n - 1 - i]);
        let mut changed = 0;
        for i in from..n {
            if msgs[i].kind != Kind::Tool || protected(i) {
                continue;
            }
            let len = self.lens[i];
            if len < p.min_prunable_tool_chars {
                continue;
            }
            let text = self.text(tx, i);
            let age = (n - i) as f64 / n as f64;
            let new = if age >= p.hard_clear_ratio && p.hard_clear_enabled {
                Some(p.hard_clear_placeholder.clone())
            } else if age >= p.soft_trim_ratio && len > p.soft_trim_max_chars {
                Some(soft_trim(
                    text,
                    p.soft_trim_head_chars,
                    p.soft_trim_tail_chars,
                ))
            } else {
                None
            };
            if let Some(t) = new {
                self.set_count(i, rc.recount(&msgs[i], tx.text(i), &t));
                let now = js_len(&t);
                // A placeholder longer than the result it clears (a tiny `minPrunableToolChars`)
                // grows a length: the pre-flight's list no longer holds.
                if now > self.lens[i] {
                    self.tall.valid = false;
                }
                self.lens[i] = now;
                self.content[i] = Some(t.into());
                self.vers[i] = new_version();
                self.dirty_from = self.dirty_from.min(i);
                changed += 1;
            }
        }
        changed
    }
}

/// Current tool-call inputs of AI messages by position (the originals when absent).
type Inputs = std::collections::HashMap<usize, Vec<String>>;

/// `truncateToolInput`'s result as the input becomes it: `{ _truncated, _originalChars }`,
/// serialized as `JSON.stringify` writes it (the key order of the object literal).
fn input_wrapper(truncated: &str, original_chars: u64) -> String {
    format!(
        "{{\"_truncated\":{},\"_originalChars\":{original_chars}}}",
        serde_json::Value::String(truncated.to_string())
    )
}

/// The AI message's text with its tool calls' inputs as they are now (`inputs[k]` in place of
/// the original arguments of call k).
pub fn ai_text(m: &Lc, text: &str, inputs: &[String]) -> String {
    let mut out = text.to_string();
    for ((_, args), now) in m.calls.iter().zip(inputs) {
        if !args.is_empty() && **args != **now {
            out = out.replacen(&**args, now, 1);
        }
    }
    out
}

/// `preFlightTruncateToolCallInputs` / the emergency pass on one AI message: each input longer
/// than `cap` (serialized) is replaced by its `truncateToolInput` wrapper — an input truncated
/// before is measured as its wrapper, as LibreChat re-serializes the object. Returns the new
/// text and inputs, `None` when nothing changes.
fn truncate_inputs(
    m: &Lc,
    text: &str,
    current: Option<&Vec<String>>,
    cap: u64,
) -> Option<(String, Vec<String>)> {
    let mut inputs: Vec<String> = match current {
        Some(v) => v.clone(),
        None => m.calls.iter().map(|(_, a)| a.to_string()).collect(),
    };
    let mut changed = false;
    for input in inputs.iter_mut() {
        if let Some(t) = truncate_input(input, cap) {
            *input = input_wrapper(&t, js_len(input));
            changed = true;
        }
    }
    changed.then(|| (ai_text(m, text, &inputs), inputs))
}

/// Token counts, texts, lengths and tool inputs as a pre-flight pass changes them: the closure's
/// own, or a copy (fallback fading).
struct Work<'w> {
    counts: &'w mut Vec<Option<u64>>,
    /// Prefix sums of `counts`, kept with them (the closure's own counts only).
    sums: Option<&'w mut Sums>,
    /// The sum of `counts`, kept with them.
    total: &'w mut u64,
    content: &'w mut Vec<Option<Text>>,
    vers: &'w mut Vec<u64>,
    lens: &'w mut Vec<u64>,
    inputs: &'w mut Inputs,
    /// The closure's list of what its last pass left over the caps (a copy has none).
    tall: Option<&'w mut Tall>,
    /// The least position whose run text a pass wrote (`Pruner::take_dirty`).
    dirty_from: &'w mut usize,
}

impl Work<'_> {
    fn set_count(&mut self, i: usize, tokens: u64) {
        let old = self.counts[i].unwrap_or(0);
        *self.total = *self.total - old + tokens;
        self.counts[i] = Some(tokens);
        if let Some(s) = self.sums.as_deref_mut() {
            s.set(i, old, tokens);
        }
    }
}

/// The pre-flight truncation of results (recency-weighted caps) and tool inputs, from position
/// `from` on; returns how many messages it changed.
fn preflight_on(
    msgs: &[Lc],
    tx: &dyn Texts,
    w: &mut Work<'_>,
    base: i64,
    from: usize,
    rc: &dyn Recount,
) -> usize {
    let mut changed = 0;
    let n = msgs.len();
    let base_chars = max_tool_result_chars(base) as f64;
    let tools = tools_upto(msgs, n);
    // The least cap (rank 0): a result at or under it is never cut.
    let least = result_cap(base_chars, 0, tools.max(2));
    let input_cap = max_tool_input_chars(base);
    // The last pass's lists serve when its caps were at most these and it started at or before
    // this one: every message they leave out was at or under these caps then, and no length
    // has grown since (`Tall`). Else every message from `from` on is looked at. (Both caps grow
    // with the base, so the two conditions hold together.)
    let mut took = true;
    let (old_results, old_inputs, new_from) = match w.tall.as_deref_mut() {
        Some(t)
            if t.valid
                && t.from <= from
                && t.upto <= n
                && t.result_cap <= least
                && t.input_cap <= input_cap =>
        {
            let upto = t.upto.max(from);
            (
                std::mem::take(&mut t.results),
                std::mem::take(&mut t.inputs),
                upto,
            )
        }
        _ => {
            took = false;
            (Vec::new(), Vec::new(), from)
        }
    };
    let mut results = Vec::new();
    for i in listed_then_new(&old_results, from, new_from..n) {
        let m = &msgs[i];
        if m.kind != Kind::Tool || w.lens[i] <= least {
            continue;
        }
        let max = result_cap(base_chars, m.tools_before, tools);
        if w.lens[i] > max {
            let original = tx.text(i);
            let cut = match &w.content[i] {
                // A cut of the original, kept as one when the host counts and takes it.
                None if rc.can_cut(i) => cut_result_of(original, w.lens[i], max, Some(&m.cuts)),
                None => truncate_result_of(original, w.lens[i], max, Some(&m.cuts))
                    .map(|(t, units, _)| (Cut::Text(t), units)),
                Some(t) => truncate_result_of(t.get(original), w.lens[i], max, None)
                    .map(|(t, units, _)| (Cut::Text(t), units)),
            };
            if let Some((cut, units)) = cut {
                let (text, tokens) = cut_text(rc, m, i, original, cut);
                w.set_count(i, tokens);
                w.lens[i] = units;
                w.content[i] = Some(text);
                w.vers[i] = new_version();
                *w.dirty_from = (*w.dirty_from).min(i);
                changed += 1;
            }
        }
        if w.lens[i] > least {
            results.push(i);
        }
    }
    let longest_input = |w: &Work<'_>, i: usize, m: &Lc| match (!w.inputs.is_empty())
        .then(|| w.inputs.get(&i))
        .flatten()
    {
        Some(v) => v.iter().map(|x| js_len(x)).max().unwrap_or(0),
        None => m.max_arg,
    };
    let mut inputs = Vec::new();
    for i in listed_then_new(&old_inputs, from, new_from..n) {
        let m = &msgs[i];
        if m.kind != Kind::Ai || m.calls.is_empty() {
            continue;
        }
        if longest_input(w, i, m) <= input_cap {
            continue;
        }
        if let Some((new, now)) = truncate_inputs(m, tx.text(i), w.inputs.get(&i), input_cap) {
            w.set_count(i, rc.recount(m, tx.text(i), &new));
            w.lens[i] = js_len(&new);
            w.content[i] = Some(new.into());
            w.vers[i] = new_version();
            *w.dirty_from = (*w.dirty_from).min(i);
            w.inputs.insert(i, now);
            changed += 1;
        }
        // A truncated input is measured as its wrapper, which may still be over the cap.
        if longest_input(w, i, m) > input_cap {
            inputs.push(i);
        }
    }
    if let Some(t) = w.tall.as_deref_mut() {
        *t = Tall {
            valid: true,
            from,
            upto: n,
            result_cap: least,
            results,
            input_cap,
            inputs,
            took,
        };
    }
    changed
}

/// A pre-flight list's positions from `from` on, then the messages that came since it was made.
fn listed_then_new(
    list: &[usize],
    from: usize,
    new: std::ops::Range<usize>,
) -> impl Iterator<Item = usize> + '_ {
    list.iter().copied().filter(move |&p| p >= from).chain(new)
}

/// What `getMessagesWithinTokenLimit` keeps (positions, in order), how many it leaves to refine,
/// and the tokens left.
#[derive(Debug, PartialEq)]
struct Fit {
    /// The system message at 0 is kept.
    system: bool,
    /// Then every message from here on.
    first: usize,
    refine: usize,
    remaining: f64,
}

/// `getMessagesWithinTokenLimit` (without LibreChat's thinking-block handling: the host's
/// messages carry no signed thinking blocks to re-attach).
fn within_limit(
    msgs: &[Lc],
    counts: &[Option<u64>],
    max_context: f64,
    instruction_tokens: f64,
) -> Fit {
    let n = msgs.len();
    let system = n > 0 && msgs[0].kind == Kind::System;
    let instructions = if system {
        counts[0].unwrap_or(0) as f64
    } else {
        instruction_tokens
    };
    let initial = max_context - instructions;
    let mut used = 3f64;
    let end = usize::from(system);
    // `messages` still holds `left`; `kept` were pushed to the context (newest first: position
    // n - 1 - k); `failed`: the one popped that did not fit (it leads messagesToRefine).
    let mut left = n;
    let mut kept = 0usize;
    let mut failed = 0usize;
    if used < initial {
        let mut i = n;
        while left > 0 && used < initial && i > end {
            i -= 1;
            if left == 1 && system {
                break;
            }
            left -= 1;
            let t = counts[i].unwrap_or(0) as f64;
            if used + t <= initial {
                kept += 1;
                used += t;
            } else {
                failed = 1;
                break;
            }
        }
        // A kept part starting with a tool result starts at its first AI or human message; the
        // results skipped are neither kept nor refined.
        if kept > 0 && msgs[n - kept].kind == Kind::Tool {
            let mut skipped = 0f64;
            for k in (0..kept).rev() {
                let pos = n - 1 - k;
                if matches!(msgs[pos].kind, Kind::Ai | Kind::Human) {
                    used -= skipped;
                    kept = k + 1;
                    break;
                }
                skipped += counts[pos].unwrap_or(0) as f64;
            }
        }
    }
    let first_kept = n - kept;
    let refine = left - usize::from(system && left > 0) + failed;
    Fit {
        system,
        first: first_kept,
        refine,
        remaining: initial - used,
    }
}

/// [`within_limit`] on the closure's own counts, with their prefix sums: the walk back from the
/// newest message keeps the longest tail whose counts (plus 3) fit, so where it stops is found
/// by one search of the sums. Counts are whole numbers, so the sums are exact where the walk
/// adds them as floats.
fn within_limit_by_sums(
    msgs: &[Lc],
    counts: &[Option<u64>],
    sums: &Sums,
    max_context: f64,
    instruction_tokens: f64,
) -> Fit {
    let n = msgs.len();
    let system = n > 0 && msgs[0].kind == Kind::System;
    let instructions = if system {
        counts[0].unwrap_or(0) as f64
    } else {
        instruction_tokens
    };
    let initial = max_context - instructions;
    let end = usize::from(system);
    let count = |i: usize| counts[i].unwrap_or(0);
    let total = sums.prefix(n);
    // The walk pops messages while `used < initial`, keeping each that fits (`used + t ≤
    // initial`); kept = the messages from `first` on.
    let (mut first, failed) = if 3.0 < initial {
        let head = sums.prefix(end);
        // The tail from p on fits when 3 + total − prefix(p) ≤ initial.
        let need = total as f64 + 3.0 - initial;
        let p = if need <= head as f64 {
            end
        } else {
            // The least p whose prefix reaches `need` (a whole number of tokens).
            sums.lower_bound(need.ceil() as u64).unwrap_or(n)
        };
        let p = p.max(end);
        let used = 3.0 + (total - sums.prefix(p)) as f64;
        if used == initial {
            // Full: the walk stopped at the message that filled it, before any count of 0
            // below it.
            let mut q = p;
            while q < n && count(q) == 0 {
                q += 1;
            }
            (q, 0)
        } else {
            (p, usize::from(p > end))
        }
    } else {
        (n, 0)
    };
    let left = first - failed;
    // A kept part starting with a tool result starts at its first AI or human message.
    if first < n && msgs[first].kind == Kind::Tool {
        if let Some(q) = (first..n).find(|&q| matches!(msgs[q].kind, Kind::Ai | Kind::Human)) {
            first = q;
        }
    }
    let used = 3.0 + (total - sums.prefix(first)) as f64;
    let refine = left - usize::from(system && left > 0) + failed;
    Fit {
        system,
        first,
        refine,
        remaining: initial - used,
    }
}

/// `repairOrphanedToolMessages`: a tool result whose call is not in the context is dropped (its
/// tokens reclaimed, it joins messagesToRefine); an AI message whose calls lost their results
/// is stripped of them, or dropped when nothing else is left. Returns the context (position,
/// text sent when not the original), the tokens reclaimed and how many were dropped.
///
/// The context is the system message (if any) and every message from some position f on
/// (`getMessagesWithinTokenLimit`), so the sets of its call and result ids are those of the
/// history from f on: each message is tested by its `orphan_from` ([`link`]).
#[allow(clippy::too_many_arguments)]
fn repair_orphans(
    msgs: &[Lc],
    ids: &Ids,
    tx: &dyn Texts,
    counts: &[Option<u64>],
    texts: &[Option<Text>],
    inputs: &Inputs,
    fit: &Fit,
    rc: &dyn Recount,
) -> (Kept, f64, usize) {
    let n = msgs.len();
    let f = fit.first;
    let mut except = Vec::new();
    let mut reclaimed = 0f64;
    let mut dropped = 0;
    for i in ids.orphans(msgs, f, n) {
        let m = &msgs[i];
        match m.kind {
            Kind::Tool => {
                dropped += 1;
                reclaimed += counts[i].unwrap_or(0) as f64;
                except.push((i, None));
            }
            Kind::Ai if !m.calls.is_empty() => {
                // Strip the unanswered calls: what is left is the text and the answered
                // calls' arguments.
                let cur = run_or(&texts[i], tx.text(i));
                let mut stripped = cur.to_string();
                // Each unanswered call's input as it is now (truncated inputs are wrappers).
                // `stripOrphanToolUseBlocks` keeps a tool_use block only when a kept result
                // answers its id, so a call without an id goes too (no result has an empty
                // id: `getToolResultId`), though only a call with one makes the message an
                // orphan (`getToolCallIds`).
                let now = inputs.get(&i);
                for (k, (id, args)) in m.calls.iter().enumerate() {
                    let input = now.and_then(|v| v.get(k)).map_or(&**args, |x| x.as_str());
                    if !has_result(ids, id, f) && !input.is_empty() {
                        stripped = stripped.replacen(input, "", 1);
                    }
                }
                let left = m.has_text || m.calls.iter().any(|(id, _)| has_result(ids, id, f));
                if !left {
                    dropped += 1;
                    reclaimed += counts[i].unwrap_or(0) as f64;
                    except.push((i, None));
                    continue;
                }
                let t = rc.recount(m, tx.text(i), stripped.trim_end_matches('\n'));
                reclaimed += counts[i].unwrap_or(0) as f64 - t as f64;
                except.push((i, Some(stripped.trim_end_matches('\n').to_string())));
            }
            _ => {}
        }
    }
    let kept = Kept::Window {
        system: fit.system,
        from: f,
        end: n,
        except,
    };
    (kept, reclaimed, dropped)
}

/// A context repaired on copies of the run's texts (fallback, emergency): each kept message
/// sends its copy.
fn own(context: Kept, texts: &[Option<Text>], tx: &dyn Texts) -> Kept {
    Kept::List(
        context
            .to_list()
            .into_iter()
            .map(|(i, sent)| match (sent, &texts[i]) {
                (Sent::Run, Some(t)) => (i, Sent::Own(t.get(tx.text(i)).to_string())),
                (sent, _) => (i, sent),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Chars;
    impl Recount for Chars {
        fn recount(&self, _m: &Lc, _old: &str, new_text: &str) -> u64 {
            js_len(new_text)
        }
    }

    /// The messages' ids, linked in order as they arrive.
    fn linked(msgs: &mut [Lc]) -> Ids {
        let mut ids = Ids::default();
        for q in 0..msgs.len() {
            link(msgs, &mut ids, q);
        }
        ids
    }

    fn lc(kind: Kind, id: u64, text: &str, calls: &[(Box<str>, Box<str>)]) -> Lc {
        Lc {
            kind,
            id,
            tokens: js_len(text),
            len: js_len(text),
            tools_before: 0,
            calls: calls.to_vec(),
            max_arg: 0,
            has_text: kind == Kind::Ai,
            result_of: None,
            pinned: false,
            text_tokens: Default::default(),
            cuts: Default::default(),
            orphan_from: usize::MAX,
        }
    }

    /// The pre-flight's lists (`Tall`: a pass looks only at what the last one left over its
    /// caps, and at the new messages) cut as a pass that walks every message: one run growing
    /// pass by pass, its base moving down and up (the fading's bands), through both; the counts,
    /// lengths, texts and inputs are the same after every pass, and the lists serve.
    #[test]
    fn pre_flight_lists_cut_as_a_walk_of_every_message() {
        let mut r = ctxlab_plugin_api::testing::Rng(5);
        let mut texts: Vec<String> = Vec::new();
        let mut msgs: Vec<Lc> = Vec::new();
        let mut tools = 0;
        for k in 0..400u64 {
            if r.below(2) == 0 {
                let args = format!("{{\"patch\":\"{}\"}}", "y→".repeat(r.below(3_000) as usize));
                let calls = [(
                    format!("c{k}").into_boxed_str(),
                    args.clone().into_boxed_str(),
                )];
                let mut m = lc(Kind::Ai, k, &args, &calls);
                m.max_arg = js_len(&args);
                m.tools_before = tools;
                msgs.push(m);
                texts.push(args);
            } else {
                let mut body = String::new();
                let chars = [300, 2_500, 9_000][r.below(3) as usize] + r.below(2_000);
                while (body.len() as u64) < chars {
                    body.push_str(&format!("{:>4}→ v = f(ctx); 😀\n", body.len()));
                }
                let mut m = lc(Kind::Tool, k, &body, &[]);
                m.tools_before = tools;
                tools += 1;
                msgs.push(m);
                texts.push(body);
            }
        }
        let tx: Vec<&str> = texts.iter().map(|t| t.as_str()).collect();
        struct State {
            counts: Vec<Option<u64>>,
            total: u64,
            content: Vec<Option<Text>>,
            vers: Vec<u64>,
            lens: Vec<u64>,
            inputs: Inputs,
            tall: Tall,
        }
        let new_state = || State {
            counts: Vec::new(),
            total: 0,
            content: Vec::new(),
            vers: Vec::new(),
            lens: Vec::new(),
            inputs: Inputs::new(),
            tall: Tall::default(),
        };
        let (mut a, mut b) = (new_state(), new_state());
        let mut n = 0;
        let mut took = 0;
        while n < msgs.len() {
            n = (n + r.below(12) as usize).min(msgs.len());
            let base = [2_000, 6_000, 15_000, 30_000, 60_000][r.below(5) as usize];
            let ms = &msgs[..n];
            for (st, listed) in [(&mut a, true), (&mut b, false)] {
                for m in &ms[st.lens.len()..] {
                    st.counts.push(Some(m.tokens));
                    st.total += m.tokens;
                    st.content.push(None);
                    st.vers.push(0);
                    st.lens.push(m.len);
                }
                let mut w = Work {
                    counts: &mut st.counts,
                    sums: None,
                    total: &mut st.total,
                    content: &mut st.content,
                    vers: &mut st.vers,
                    lens: &mut st.lens,
                    inputs: &mut st.inputs,
                    tall: listed.then_some(&mut st.tall),
                    dirty_from: &mut 0,
                };
                preflight_on(ms, &tx, &mut w, base, 0, &Chars);
            }
            took += usize::from(a.tall.took);
            assert_eq!(a.counts, b.counts, "after {n} messages at base {base}");
            assert_eq!(a.lens, b.lens, "after {n} messages at base {base}");
            assert_eq!(a.inputs, b.inputs, "after {n} messages at base {base}");
            for i in 0..n {
                let got = a.content[i].as_ref().map(|t| t.get(tx[i]).to_string());
                let want = b.content[i].as_ref().map(|t| t.get(tx[i]).to_string());
                assert_eq!(got, want, "message {i} after {n} messages at base {base}");
            }
        }
        assert!(took > 10, "the lists served {took} passes");
    }

    /// The prefix sums as a new run uses them: counts appended (whole histories again after a
    /// truncation), changed in place and searched, against plain sums of the same counts.
    #[test]
    fn sums_follow_their_counts_through_appends_changes_and_truncations() {
        let mut r = ctxlab_plugin_api::testing::Rng(7);
        let mut sums = Sums::default();
        let mut plain: Vec<u64> = Vec::new();
        for _ in 0..400 {
            match r.below(4) {
                0 | 1 => {
                    for _ in 0..r.below(40) {
                        let v = r.below(1000);
                        sums.push(v);
                        plain.push(v);
                    }
                }
                2 if !plain.is_empty() => {
                    let i = r.below(plain.len() as u64) as usize;
                    let v = r.below(1000);
                    sums.set(i, plain[i], v);
                    plain[i] = v;
                }
                _ => {
                    let n = r.below(plain.len() as u64 + 1) as usize;
                    sums.truncate(n);
                    plain.truncate(n);
                }
            }
            assert_eq!(sums.len(), plain.len());
            let mut acc = 0;
            for p in 0..=plain.len() {
                assert_eq!(sums.prefix(p), acc, "prefix {p} of {plain:?}");
                if p < plain.len() {
                    acc += plain[p];
                }
            }
            if acc > 0 {
                let need = r.below(acc) + 1;
                let want = (1..=plain.len()).find(|&p| plain[..p].iter().sum::<u64>() >= need);
                assert_eq!(sums.lower_bound(need), want, "{need} in {plain:?}");
            }
        }
    }

    /// prune.ts `repairOrphanedToolMessages` / `stripOrphanToolUseBlocks`: an AI message is an
    /// orphan only through a call with an id whose result is not kept (`getToolCallIds` skips
    /// empty ids), but once stripped it loses every block no kept result answers, the calls
    /// without an id too (seen on codex-cli_gildore-arena: web_search calls carry no id).
    #[test]
    fn stripping_an_orphan_also_strips_calls_without_an_id() {
        let calls: Vec<(Box<str>, Box<str>)> = vec![
            ("".into(), "{\"q\":\"search\"}".into()),
            ("c1".into(), "{\"cmd\":\"ls\"}".into()),
            ("c2".into(), "{\"cmd\":\"pwd\"}".into()),
        ];
        let text = "Looking.\n{\"q\":\"search\"}\n{\"cmd\":\"ls\"}\n{\"cmd\":\"pwd\"}";
        let mut result = lc(Kind::Tool, 2, "file.txt", &[]);
        result.result_of = Some("c2".into());
        let mut msgs = [lc(Kind::Ai, 1, text, &calls), result];
        let ids = linked(&mut msgs);
        let texts: Vec<&str> = vec![text, "file.txt"];
        let counts: Vec<Option<u64>> = msgs.iter().map(|m| Some(m.tokens)).collect();
        let (out, reclaimed, dropped) = repair_orphans(
            &msgs,
            &ids,
            &texts,
            &counts,
            &[None, None],
            &Inputs::new(),
            &Fit {
                system: false,
                first: 0,
                refine: 0,
                remaining: 0.0,
            },
            &Chars,
        );
        let out = out.to_list();
        assert_eq!(dropped, 0);
        assert_eq!(
            out[0],
            (0, Sent::Own("Looking.\n\n\n{\"cmd\":\"pwd\"}".into()))
        );
        assert_eq!(out[1], (1, Sent::Run));
        assert_eq!(
            reclaimed,
            (js_len(text) - js_len("Looking.\n\n\n{\"cmd\":\"pwd\"}")) as f64
        );
        // Answered calls and id-less ones alone: no orphan, nothing stripped.
        let answered = &calls[..1];
        let mut msgs = [lc(Kind::Ai, 1, text, answered), msgs[1].clone()];
        let ids = linked(&mut msgs);
        let (out, _, _) = repair_orphans(
            &msgs,
            &ids,
            &texts,
            &counts,
            &[None, None],
            &Inputs::new(),
            &Fit {
                system: false,
                first: 0,
                refine: 0,
                remaining: 0.0,
            },
            &Chars,
        );
        let out = out.to_list();
        assert_eq!(out[0], (0, Sent::Run));
    }
}
