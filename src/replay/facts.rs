//! Facts for needed-fact recall: the concrete things an agent may need again later — file paths,
//! URLs, identifiers, numbers of 3+ digits, error codes, quoted names. A hand-written byte scanner
//! (no regex) keeps extraction at memory speed: every message is scanned exactly once per run.

use rustc_hash::FxHashMap;

/// Interned fact id, local to one prepared session (and its runs).
pub(crate) type FactId = u32;

/// Fact text → id, for the facts of a session's messages (`Prepared`).
#[derive(Default)]
pub(crate) struct Interner {
    ids: FxHashMap<Box<str>, FactId>,
}

/// Gives each distinct fact text one id: the base interner's, else one of its own numbered after
/// the base's (`extract_distinct`, which builds the prepared session's interner). A run's
/// `Facts` has the prepared session's needed facts as its base and only looks them up
/// (`needed_distinct`, `contains`): its own ids would not be numbered after the whole session's.
pub(crate) struct Facts<'p> {
    base: Option<&'p Interner>,
    own: FxHashMap<Box<str>, FactId>,
    /// Reused by `extract` so that a message costs no allocation besides its result.
    scratch: Vec<FactId>,
}

impl Interner {
    /// The facts `keep` accepts, with the same ids.
    pub(crate) fn restricted(&self, keep: impl Fn(FactId) -> bool) -> Interner {
        Interner {
            ids: self
                .ids
                .iter()
                .filter(|(_, &id)| keep(id))
                .map(|(t, &id)| (t.clone(), id))
                .collect(),
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

impl<'p> Facts<'p> {
    pub(crate) fn new(base: &'p Interner) -> Facts<'p> {
        Facts {
            base: Some(base),
            own: FxHashMap::default(),
            scratch: Vec::new(),
        }
    }

    /// Interns into `interner` itself (to grow it), with no base.
    pub(crate) fn owning(interner: Interner) -> Facts<'static> {
        Facts {
            base: None,
            own: interner.ids,
            scratch: Vec::new(),
        }
    }

    /// The facts interned here, as an interner (for a `Facts` made by `owning`).
    pub(crate) fn into_interner(self) -> Interner {
        debug_assert!(self.base.is_none());
        Interner { ids: self.own }
    }

    fn id(&self, fact: &str) -> Option<FactId> {
        self.base
            .and_then(|b| b.ids.get(fact))
            .or_else(|| self.own.get(fact))
            .copied()
    }

    /// True when `text` holds fact `f`.
    #[cfg(test)]
    pub(crate) fn contains(&self, text: &str, f: FactId) -> bool {
        let mut found = false;
        scan(text, |fact| found |= self.id(fact) == Some(f));
        found
    }

    /// The known facts of `text`, sorted by id: `contains` for many facts at once (one scan of
    /// the text rather than one per fact).
    pub(crate) fn ids_in(&self, text: &str) -> Vec<FactId> {
        let mut v = Vec::new();
        scan(text, |fact| v.extend(self.id(fact)));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The distinct facts of a text, sorted by id (valid until the next call).
    pub(crate) fn extract_distinct(&mut self, text: &str) -> &[FactId] {
        let Facts { base, own, scratch } = self;
        scratch.clear();
        let base_len = base.map_or(0, |b| b.ids.len());
        scan(text, |fact| {
            let id = match base.and_then(|b| b.ids.get(fact)).or_else(|| own.get(fact)) {
                Some(&id) => id,
                None => {
                    let next = (base_len + own.len()) as FactId;
                    own.insert(fact.into(), next);
                    next
                }
            };
            scratch.push(id);
        });
        scratch.sort_unstable();
        scratch.dedup();
        scratch
    }

    /// The distinct facts of a text that `needed` accepts, sorted by id, looked up in the base
    /// interner only and interning nothing: a fact the base does not know is new to the run, so
    /// no reply of the session holds it and no call needs it. With the prepared session's needed
    /// facts as the base (`Prepared::needed_interner`), a text the run writes (a truncation, a
    /// mask, a summary) costs a probe of that small table per candidate, not of every fact of the
    /// session, and no new entry.
    pub(crate) fn needed_distinct(
        &mut self,
        text: &str,
        needed: impl Fn(FactId) -> bool,
    ) -> Vec<FactId> {
        let Some(base) = self.base else {
            return Vec::new();
        };
        let scratch = &mut self.scratch;
        scratch.clear();
        scan(text, |fact| {
            if let Some(&id) = base.ids.get(fact) {
                if needed(id) {
                    scratch.push(id);
                }
            }
        });
        scratch.sort_unstable();
        scratch.dedup();
        scratch.clone()
    }

    /// The distinct facts of a text, sorted by id.
    #[cfg(test)]
    pub(crate) fn extract(&mut self, text: &str) -> Box<[FactId]> {
        self.extract_distinct(text).into()
    }
}

/// The known facts of texts a run writes again and again, line by line (`Facts::ids_in` over
/// each line, remembered across calls). `scan` never carries anything over a newline: a token
/// stops at it, a quoted span that meets one is not a name, and the byte before a quote is a
/// newline (not a word byte) exactly as at a text's start. So a text's facts are the union of
/// its lines' facts. A strategy that sends a long literal at every call of which only a few
/// numbers change (CodeTether's summary: tag, dropped-range index, recovery note, ~1 KB) then
/// costs a hash probe per line instead of a scan; a line is remembered on its second sighting
/// (unique lines, a truncated tool output's, cost one hash and no allocation), and the memo is
/// bounded: two generations of at most `LineFacts::CAP` lines each.
#[derive(Default)]
pub(crate) struct LineFacts {
    cur: FxHashMap<Box<str>, Box<[FactId]>>,
    old: FxHashMap<Box<str>, Box<[FactId]>>,
    /// Hashes of lines seen once (two generations likewise): a collision only makes a line
    /// remembered early, never changes an answer.
    once: rustc_hash::FxHashSet<u64>,
    once_old: rustc_hash::FxHashSet<u64>,
}

impl LineFacts {
    const CAP: usize = 4_096;
    /// Texts shorter than this are scanned whole: a probe per line would cost as much.
    const MIN_TEXT: usize = 256;

    /// `facts.ids_in(text)`: the known facts of `text`, sorted by id, without duplicates.
    pub(crate) fn ids_in(&mut self, facts: &Facts<'_>, text: &str) -> Vec<FactId> {
        if text.len() < Self::MIN_TEXT {
            return facts.ids_in(text);
        }
        let mut v = Vec::new();
        for line in text.split('\n') {
            if line.is_empty() {
                continue;
            }
            if let Some(ids) = self.cur.get(line) {
                v.extend_from_slice(ids);
                continue;
            }
            if let Some((k, ids)) = self.old.remove_entry(line) {
                v.extend_from_slice(&ids);
                self.insert(k, ids);
                continue;
            }
            let ids = facts.ids_in(line);
            v.extend_from_slice(&ids);
            let h = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, line);
            if self.once.contains(&h) || self.once_old.contains(&h) {
                self.insert(line.into(), ids.into());
            } else {
                if self.once.len() >= Self::CAP {
                    self.once_old = std::mem::take(&mut self.once);
                }
                self.once.insert(h);
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    fn insert(&mut self, line: Box<str>, ids: Box<[FactId]>) {
        if self.cur.len() >= Self::CAP {
            self.old = std::mem::take(&mut self.cur);
        }
        self.cur.insert(line, ids);
    }
}

/// A set of facts: a bitset over their dense ids (one bit per fact of the run, up to the
/// largest id in the set), so membership costs one load instead of a hash probe.
#[derive(Default)]
pub(crate) struct FactSet {
    words: Vec<u64>,
}

impl FactSet {
    pub(crate) fn insert(&mut self, f: FactId) {
        let w = f as usize / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (f % 64);
    }

    pub(crate) fn contains(&self, f: FactId) -> bool {
        self.words
            .get(f as usize / 64)
            .is_some_and(|w| w & (1 << (f % 64)) != 0)
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Bytes that may appear inside a path, URL or qualified identifier token.
const TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'_' | b'/'
                    | b'.'
                    | b'-'
                    | b':'
                    | b'~'
                    | b'%'
                    | b'?'
                    | b'='
                    | b'&'
                    | b'#'
                    | b'+'
                    | b'@'
            );
        c += 1;
    }
    t
};

/// Punctuation that ends a sentence or a query string rather than a token.
fn is_trailing(b: u8) -> bool {
    matches!(
        b,
        b'.' | b':' | b'?' | b'=' | b'&' | b'#' | b'-' | b'+' | b'@'
    )
}

/// Calls `emit` for every fact in `text` (possibly repeated).
pub(crate) fn scan(text: &str, mut emit: impl FnMut(&str)) {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    while i < n {
        let c = b[i];
        if c == b'`' || c == b'"' || (c == b'\'' && (i == 0 || !is_word(b[i - 1]))) {
            if let Some(len) = quoted(&b[i + 1..], c) {
                let inner = &text[i + 1..i + 1 + len];
                if is_name(inner) {
                    emit(inner);
                }
            }
            i += 1;
            continue;
        }
        if !TOKEN[c as usize] {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && TOKEN[b[i] as usize] {
            i += 1;
        }
        let mut end = i;
        while end > start && is_trailing(b[end - 1]) {
            end -= 1;
        }
        if end > start {
            // Token bytes are ASCII, so any byte range of the token is a str.
            classify(&text[start..end], &mut emit);
        }
    }
}

/// Length of a quoted span up to the closing quote on the same line (at most 64 bytes).
fn quoted(rest: &[u8], q: u8) -> Option<usize> {
    for (j, &c) in rest.iter().enumerate().take(65) {
        if c == q {
            let closes = q != b'\'' || rest.get(j + 1).map_or(true, |&n| !is_word(n));
            return (closes && j > 0).then_some(j);
        }
        if c == b'\n' {
            return None;
        }
    }
    None
}

/// A quoted span is a name when it is more than a plain lowercase word (JSON keys, prose).
fn is_name(s: &str) -> bool {
    s.len() >= 2
        && s.bytes().any(|c| !c.is_ascii_lowercase())
        && s.bytes().any(|c| c.is_ascii_alphanumeric())
        && !s.starts_with(' ')
        && !s.ends_with(' ')
}

/// Emits the facts of one token (ASCII, from `scan`): the whole token when it is a URL, a path
/// or a qualified name, else its identifiers, numbers and error codes. One pass over the token
/// gathers what the tests need, one more splits it into words.
fn classify(tok: &str, emit: &mut impl FnMut(&str)) {
    let b = tok.as_bytes();
    if b.starts_with(b"http://") || b.starts_with(b"https://") {
        emit(tok);
        return;
    }
    let (mut letters, mut slash, mut path_sep) = (0usize, false, false);
    let mut last_dot = None;
    let mut first_non_digit = b.len();
    for (k, &c) in b.iter().enumerate() {
        letters += c.is_ascii_alphabetic() as usize;
        slash |= c == b'/';
        path_sep |= c == b':' && k > 0 && b[k - 1] == b':';
        if c == b'.' {
            last_dot = Some(k);
        }
        if !c.is_ascii_digit() && first_non_digit == b.len() {
            first_non_digit = k;
        }
    }
    // Paths: a slash between name characters, or a name with a short extension (main.rs).
    if letters > 0 && (slash && b.len() > 2 || has_extension(b, last_dot, first_non_digit)) {
        emit(tok);
        return;
    }
    if path_sep && letters > 0 {
        emit(tok);
        return;
    }
    // What remains is split into words: identifiers, numbers, error codes.
    let mut start = 0;
    while start < b.len() {
        if !is_word(b[start]) {
            start += 1;
            continue;
        }
        let (mut wl, mut wd, mut upper, mut lower, mut under, mut camel) =
            (0usize, 0usize, false, false, false, false);
        let mut prev_lower = false;
        let mut k = start;
        while k < b.len() && is_word(b[k]) {
            let c = b[k];
            let (l, u) = (c.is_ascii_lowercase(), c.is_ascii_uppercase());
            wl += (l || u) as usize;
            wd += c.is_ascii_digit() as usize;
            upper |= u;
            lower |= l;
            under |= c == b'_';
            camel |= prev_lower && u;
            prev_lower = l;
            k += 1;
        }
        let w = &tok[start..k];
        let len = k - start;
        start = k;
        if wl == 0 {
            if wd >= 3 {
                emit(w);
            }
            continue;
        }
        let snake = under && len >= 3;
        let error_code = !lower && upper && wd >= 2 && len >= 3; // E0308, TS2345, HTTP404
        let errno = !lower && (5..=12).contains(&len) && b[k - len] == b'E' && wd == 0; // ENOENT
        if snake || camel || error_code || errno || (wd >= 3 && wl > 0) {
            emit(w);
        }
    }
}

/// `tok` (ASCII) ends in a short extension after a name: `main.rs`, not `1.5` or `v1.`.
fn has_extension(b: &[u8], last_dot: Option<usize>, first_non_digit: usize) -> bool {
    match last_dot {
        Some(dot) if dot > 0 && dot + 1 < b.len() => {
            let ext = &b[dot + 1..];
            ext.len() <= 5
                && ext.iter().all(|c| c.is_ascii_alphanumeric())
                && ext.iter().any(|c| c.is_ascii_alphabetic())
                && is_word(b[dot - 1])
                && first_non_digit < dot
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        scan(text, |f| v.push(f.to_string()));
        v
    }

    #[test]
    fn finds_the_facts_an_agent_needs_again() {
        let f = facts(
            "Edit src/replay/mod.rs and main.rs, see https://docs.rs/toml/latest. \
             Error E0308 in parse_config at line 1234; ENOENT for `Cargo.lock`; \
             call TokenCounter::count_text and maxTokens; user \"Alice Smith\".",
        );
        for want in [
            "src/replay/mod.rs",
            "main.rs",
            "https://docs.rs/toml/latest",
            "E0308",
            "parse_config",
            "1234",
            "ENOENT",
            "Cargo.lock",
            "TokenCounter::count_text",
            "maxTokens",
            "Alice Smith",
        ] {
            assert!(f.iter().any(|x| x == want), "missing {want} in {f:?}");
        }
    }

    #[test]
    fn ignores_prose_json_keys_and_small_numbers() {
        let f = facts(
            "The user didn't say it's 42 or 7. {\"path\": \"x\", \"limit\": 10} Hello World.",
        );
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn fact_set_holds_exactly_what_was_inserted() {
        let mut set = FactSet::default();
        let ids = [0u32, 1, 63, 64, 65, 1000, 4095, 70_000];
        for &f in &ids {
            set.insert(f);
        }
        for f in 0..70_100 {
            assert_eq!(set.contains(f), ids.contains(&f), "fact {f}");
        }
    }

    /// What a run finds in a text it writes, looked up in the needed facts only, is what a full
    /// extraction finds there, restricted to the needed facts, with the same ids.
    #[test]
    fn needed_facts_of_a_written_text_equal_a_full_extraction_restricted() {
        let mut all = Facts::owning(Interner::default());
        all.extract("src/a.rs E0308 parse_config 12345 https://x.io/p `Cargo.lock`");
        all.extract("other.rs 99999 maxTokens ENOENT");
        let interner = all.into_interner();
        let needed = |f: FactId| f % 2 == 0;
        let restricted = interner.restricted(needed);
        let text =
            "cut: src/a.rs and other.rs, 12345 / 99999, maxTokens, E0308, new_name_here, 777";
        let want: Vec<FactId> = Facts::new(&interner)
            .extract_distinct(text)
            .iter()
            .copied()
            .filter(|&f| needed(f) && (f as usize) < interner.len())
            .collect();
        assert!(!want.is_empty(), "some needed fact is in the text");
        assert_eq!(Facts::new(&restricted).needed_distinct(text, needed), want);
        assert_eq!(Facts::new(&interner).needed_distinct(text, needed), want);
        // The restricted base still answers `contains` for a needed fact.
        assert!(Facts::new(&restricted).contains(text, want[0]));
    }

    #[test]
    fn interning_gives_one_id_per_fact() {
        let mut facts = Facts::owning(Interner::default());
        let a = facts.extract("main.rs main.rs 12345");
        let b = facts.extract("12345 other.rs");
        assert_eq!(a.len(), 2);
        assert!(b.iter().any(|x| a.contains(x)));
        // A run's own facts are numbered after its base's and found in either.
        let base = facts.into_interner();
        let mut run = Facts::new(&base);
        let c = run.extract("other.rs new_fact_name");
        assert_eq!(c.len(), 2);
        assert!(b.contains(&c[0]));
        assert!(c[1] as usize >= 3);
        assert!(run.contains("see other.rs", c[0]));
        assert!(run.contains("new_fact_name here", c[1]));
        assert!(!run.contains("main.rs", c[1]));
    }

    /// A text's facts through the line memo are its facts scanned whole, on texts whose lines
    /// repeat and change (quotes, tokens and numbers at line ends, `\r\n`, short and long
    /// texts), however often the memo has seen them.
    #[test]
    fn line_memo_gives_the_facts_of_the_whole_text() {
        let mut all = Facts::owning(Interner::default());
        let pieces = [
            "src/a.rs",
            "E0308",
            "`Cargo.lock`",
            "'it's'",
            "\"Alice Smith\"",
            "12345",
            "https://x.io/p?q=1",
            "parse_config",
            "maxTokens",
            "word",
            "  ",
            "\n",
            "\r\n",
            "\"open",
            "'",
            "`",
            "ENOENT.",
            "turns 0-",
            "x::y",
            "...",
            "\n\n",
            "é",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut texts = Vec::new();
        for _ in 0..400 {
            let mut t = String::new();
            for _ in 0..next(120) {
                t.push_str(pieces[next(pieces.len())]);
                if next(3) == 0 {
                    t.push(' ');
                }
            }
            all.extract(&t);
            texts.push(t);
        }
        let interner = all.into_interner();
        let facts = Facts::new(&interner);
        let mut memo = LineFacts::default();
        for round in 0..3 {
            for (i, t) in texts.iter().enumerate() {
                // Repeat a text with one line changed, as a summary's index does.
                let changed = format!("{t}\nturns 0-{}{round} were compressed\n{t}", i * 7);
                for text in [t.as_str(), changed.as_str()] {
                    assert_eq!(memo.ids_in(&facts, text), facts.ids_in(text), "{text:?}");
                }
            }
        }
        assert!(!memo.cur.is_empty(), "repeated lines are remembered");
    }
}
