//! Facts for needed-fact recall: the concrete things an agent may need again later — file paths,
//! URLs, identifiers, numbers of 3+ digits, error codes, quoted names. A hand-written byte scanner
//! (no regex) keeps extraction at memory speed: every message is scanned exactly once per run.

use rustc_hash::FxHashMap;

/// Interned fact id, local to one run.
pub(crate) type FactId = u32;

/// Gives each distinct fact text one id for the whole run.
#[derive(Default)]
pub(crate) struct Facts {
    ids: FxHashMap<Box<str>, FactId>,
    /// Reused by `extract` so that a message costs no allocation besides its result.
    scratch: Vec<FactId>,
}

impl Facts {
    /// True when `text` holds fact `f`.
    pub(crate) fn contains(&self, text: &str, f: FactId) -> bool {
        let mut found = false;
        scan(text, |fact| found |= self.ids.get(fact) == Some(&f));
        found
    }

    /// The distinct facts of a text, sorted by id.
    pub(crate) fn extract(&mut self, text: &str) -> Box<[FactId]> {
        let Facts { ids, scratch: out } = self;
        out.clear();
        scan(text, |fact| {
            let next = ids.len() as FactId;
            let id = match ids.get(fact) {
                Some(&id) => id,
                None => {
                    ids.insert(fact.into(), next);
                    next
                }
            };
            out.push(id);
        });
        out.sort_unstable();
        out.dedup();
        out.as_slice().into()
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Characters that may appear inside a path, URL or qualified identifier token.
fn is_token(b: u8) -> bool {
    is_word(b)
        || matches!(
            b,
            b'/' | b'.' | b'-' | b':' | b'~' | b'%' | b'?' | b'=' | b'&' | b'#' | b'+' | b'@'
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
        if !is_token(c) {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && is_token(b[i]) {
            i += 1;
        }
        let tok = text[start..i].trim_end_matches(['.', ':', '?', '=', '&', '#', '-', '+', '@']);
        if !tok.is_empty() {
            classify(tok, &mut emit);
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

fn classify(tok: &str, emit: &mut impl FnMut(&str)) {
    let b = tok.as_bytes();
    if tok.starts_with("http://") || tok.starts_with("https://") {
        emit(tok);
        return;
    }
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    // Paths: a slash between name characters, or a name with a short extension (main.rs).
    if letters > 0 && (tok.contains('/') && tok.len() > 2 || has_extension(tok)) {
        emit(tok);
        return;
    }
    if tok.contains("::") && letters > 0 {
        emit(tok);
        return;
    }
    // What remains is split into words: identifiers, numbers, error codes.
    for w in tok.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let wb = w.as_bytes();
        if wb.is_empty() {
            continue;
        }
        let wl = wb.iter().filter(|c| c.is_ascii_alphabetic()).count();
        let wd = wb.iter().filter(|c| c.is_ascii_digit()).count();
        if wl == 0 {
            if wd >= 3 {
                emit(w);
            }
            continue;
        }
        let upper = wb.iter().any(|c| c.is_ascii_uppercase());
        let lower = wb.iter().any(|c| c.is_ascii_lowercase());
        let snake = w.contains('_') && w.len() >= 3;
        let camel = wb
            .windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
        let error_code = !lower && upper && wd >= 2 && w.len() >= 3; // E0308, TS2345, HTTP404
        let errno = !lower && w.len() >= 5 && w.len() <= 12 && wb[0] == b'E' && wd == 0; // ENOENT
        if snake || camel || error_code || errno || (wd >= 3 && wl > 0) {
            emit(w);
        }
    }
}

fn has_extension(tok: &str) -> bool {
    match tok.rfind('.') {
        Some(dot) if dot > 0 && dot + 1 < tok.len() => {
            let ext = &tok[dot + 1..];
            let stem = &tok[..dot];
            ext.len() <= 5
                && ext.bytes().all(|c| c.is_ascii_alphanumeric())
                && ext.bytes().any(|c| c.is_ascii_alphabetic())
                && stem.bytes().last().is_some_and(is_word)
                && !stem.bytes().all(|c| c.is_ascii_digit())
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
    fn interning_gives_one_id_per_fact() {
        let mut facts = Facts::default();
        let a = facts.extract("main.rs main.rs 12345");
        let b = facts.extract("12345 other.rs");
        assert_eq!(a.len(), 2);
        assert!(b.iter().any(|x| a.contains(x)));
    }
}
