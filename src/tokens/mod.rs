//! Token counters and calibration against recorded usage.
//!
//! Four counters, chosen by name with [`counter`]; the rules each one applies to text, thinking,
//! tool calls, tool results and images are in `docs/tokens.md`:
//! - `heuristic` (default): FIM One's estimate, ASCII chars/4 + other chars/1.5;
//! - `chars4`: phi-core's estimate, ceil(bytes/4);
//! - `o200k`, `cl100k`: exact BPE counts (cargo feature `exact`, on by default).
//!
//! No counter knows the system prompt and tool schemas a log leaves out; [`calibrate`] fits that
//! overhead, and a ratio, against the usage the log recorded.

pub mod calibrate;
mod chars4;
#[cfg(feature = "exact")]
mod exact;
mod heuristic;
pub mod live;

use std::sync::Arc;

use crate::model::{Message, Part};

pub use calibrate::{
    calibrate, calibrate_session, AgentFit, Calibration, CallSample, Fit, ModelFit,
};
pub use chars4::Chars4;
#[cfg(feature = "exact")]
pub use exact::{Exact, Vocabulary};
pub use heuristic::Heuristic;
pub use live::LiveCounts;

/// Counts tokens of text and messages. Implementations are cheap to call and thread-safe;
/// callers count each message once and cache the result (a replay never re-tokenizes history).
pub trait TokenCounter: Send + Sync {
    /// `heuristic`, `chars4`, `o200k`, `cl100k`.
    fn name(&self) -> &'static str;
    /// Tokens of a bare text.
    fn count_text(&self, text: &str) -> u64;
    /// [`TokenCounter::count_text`] of the pieces joined (ABI 1.8's cuts: a head, a marker, a
    /// tail of a message's text), without joining them where the counter can: one that counts
    /// characters adds up the pieces' characters.
    fn count_pieces(&self, pieces: &[&str]) -> u64 {
        self.count_text(&pieces.concat())
    }
    /// For a counter whose count of a text depends only on tallies that add up when texts are
    /// joined (`heuristic`: ASCII and other characters; `chars4`: bytes), the text's tallies:
    /// a text made of pieces is then counted from its pieces' tallies, and a piece counted once
    /// is not read again (a LibreChat cut keeps the same head and tail of a result call after
    /// call, with a new marker). `None` for a counter that must read the whole text (BPE).
    fn tally(&self, _text: &str) -> Option<TextTally> {
        None
    }
    /// [`TokenCounter::count_text`] of a text whose tallies ([`TokenCounter::tally`], added up
    /// over its pieces) are `t`. Only called with tallies this counter gave.
    fn count_tally(&self, _t: TextTally) -> u64 {
        0
    }
    /// Tokens of a message made of these parts, with the counter's per-message overheads.
    fn count_parts(&self, parts: &[Part]) -> u64;
    fn count_message(&self, m: &Message) -> u64 {
        self.count_parts(&m.parts)
    }
}

/// What a tallying counter ([`TokenCounter::tally`]) knows of a text: two counts that add up
/// when texts are joined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextTally(pub u64, pub u64);

impl std::ops::Add for TextTally {
    type Output = TextTally;
    fn add(self, o: TextTally) -> TextTally {
        TextTally(self.0 + o.0, self.1 + o.1)
    }
}

/// The tokens of one message in the model's context, split by where they come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageTokens {
    /// Estimated by the counter from the message's parts (0 when the log recorded its size).
    pub counted: u64,
    /// Known from the log: the size the provider recorded (`MessageFlags::recorded_tokens`), or
    /// else the hidden content's tokens (`MessageFlags::hidden_tokens`).
    pub known: u64,
    /// Of `known`, what leaves the context at the agent's next human message
    /// (`MessageFlags::hidden_until_user`).
    pub transient: u64,
}

impl MessageTokens {
    pub fn total(&self) -> u64 {
        self.counted + self.known
    }
}

/// The one rule for a message's tokens (docs/tokens.md, "Recorded sizes"): the size the
/// provider recorded where the log has it, else the counter's count of the parts plus the
/// hidden content's tokens.
pub fn message_tokens(counter: &dyn TokenCounter, m: &Message) -> MessageTokens {
    let f = &m.flags;
    let (counted, known) = match f.recorded_tokens {
        Some(r) => (0, r),
        None => (counter.count_message(m), f.hidden_tokens),
    };
    let transient = if f.hidden_until_user {
        f.hidden_tokens.min(known)
    } else {
        0
    };
    MessageTokens {
        counted,
        known,
        transient,
    }
}

/// Names [`counter`] accepts, the default first.
#[cfg(feature = "exact")]
pub const COUNTERS: &[&str] = &["heuristic", "chars4", "o200k", "cl100k"];
/// Names [`counter`] accepts, the default first.
#[cfg(not(feature = "exact"))]
pub const COUNTERS: &[&str] = &["heuristic", "chars4"];

/// The counter used when the user names none and nothing is known of the log.
pub const DEFAULT_COUNTER: &str = "heuristic";

/// The name that asks for the log's own default counter ([`default_counter_for`]).
pub const AUTO_COUNTER: &str = "auto";

/// True for the models OpenAI's o200k vocabulary tokenizes exactly (GPT-4o, GPT-4.1, GPT-5,
/// the o-series and Codex models).
pub fn is_openai_model(model: &str) -> bool {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    m.starts_with("gpt-")
        || m.starts_with("chatgpt")
        || m.starts_with("codex")
        || ["o1", "o3", "o4"]
            .iter()
            .any(|p| m == *p || m.starts_with(&format!("{p}-")))
}

/// True for xAI's Grok models (`x-ai/grok-4-fast`, `grok-code-fast-1`): their tokenizer is not
/// o200k, but o200k follows it within 0.4 % call by call on a real mini-swe-agent run of
/// grok-4-fast (overhead 140, ratio 0.985), where the heuristic, 2.3 characters a token on `ls
/// -la` listings against its 4, was 12.3 % off (docs/tokens.md, "Fidelity on real logs").
pub fn is_grok_model(model: &str) -> bool {
    model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
        .starts_with("grok")
}

/// The counter a log is counted with when the user names none: the exact o200k counter for a
/// log of an OpenAI model (or of a Grok model, [`is_grok_model`]), and for a log of whole requests (an HTTP capture, whatever its
/// models: a BPE vocabulary follows other providers' tokenizers more closely than the heuristic
/// does on the system prompts and tool schemas that fill most of a capture; docs/tokens.md)
/// when ctxlab has the `exact` feature, else [`DEFAULT_COUNTER`].
pub fn default_counter_for(session: &crate::model::Session) -> &'static str {
    let openai = crate::replay::session_model(session)
        .is_some_and(|m| is_openai_model(m) || is_grok_model(m));
    if (openai || session.whole_requests) && COUNTERS.contains(&"o200k") {
        "o200k"
    } else {
        DEFAULT_COUNTER
    }
}

/// [`counter`], with [`AUTO_COUNTER`] resolved for `session` ([`default_counter_for`]).
pub fn counter_for(
    name: &str,
    session: &crate::model::Session,
) -> crate::Result<Arc<dyn TokenCounter>> {
    if name == AUTO_COUNTER {
        counter(default_counter_for(session))
    } else {
        counter(name)
    }
}

/// The counter with this name (see [`COUNTERS`]).
pub fn counter(name: &str) -> crate::Result<Arc<dyn TokenCounter>> {
    match name {
        "heuristic" => Ok(Arc::new(Heuristic)),
        "chars4" => Ok(Arc::new(Chars4)),
        #[cfg(feature = "exact")]
        "o200k" => Ok(Arc::new(Exact::new(Vocabulary::O200k))),
        #[cfg(feature = "exact")]
        "cl100k" => Ok(Arc::new(Exact::new(Vocabulary::Cl100k))),
        #[cfg(not(feature = "exact"))]
        "o200k" | "cl100k" => Err(crate::Error::Invalid(format!(
            "counter `{name}` needs the exact BPE vocabularies: this ctxlab was built without the \
             `exact` feature; available counters: {}",
            COUNTERS.join(", ")
        ))),
        _ => Err(crate::Error::Invalid(format!(
            "unknown token counter `{name}`; available counters: {}",
            COUNTERS.join(", ")
        ))),
    }
}

/// ASCII bytes and non-ASCII characters of a UTF-8 text, in one pass over the bytes.
/// A character is non-ASCII when its lead byte is >= 0xC0; continuation bytes (0x80..0xC0) are
/// not characters. Counting bytes instead of decoding chars lets the loop vectorize: 16 bytes a
/// step in the portable build, 32 where the CPU has AVX2 (checked at run time, once: std caches
/// it). Every text a strategy writes is counted here, a LibreChat replay's 100 MB per 10k messages.
pub(crate) fn ascii_and_other_chars(text: &str) -> (u64, u64) {
    ascii_and_other_bytes(text.as_bytes())
}

/// [`ascii_and_other_chars`] of UTF-8 bytes (texts joined).
pub(crate) fn ascii_and_other_bytes(bytes: &[u8]) -> (u64, u64) {
    if bytes.len() < 64 {
        let (ascii, lead) = ascii_and_lead_words(bytes);
        return (ascii, lead - ascii);
    }
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= 64 && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { ascii_and_lead_avx2(bytes) };
    }
    ascii_and_lead(bytes)
}

/// `ascii_and_lead` compiled for AVX2 (the same code, wider vectors).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ascii_and_lead_avx2(bytes: &[u8]) -> (u64, u64) {
    ascii_and_lead(bytes)
}

#[inline(always)]
fn ascii_and_lead(bytes: &[u8]) -> (u64, u64) {
    // 32 byte-wide lane counters per class, added up every 255 steps (before a lane can
    // overflow): the compiler keeps them in vector registers, one compare and one subtract per
    // class and step. The scalar loop over the last < 32 bytes is the only per-text tail.
    const W: usize = 32;
    let (body, tail) = bytes.split_at(bytes.len() / W * W);
    let mut ascii = 0u64;
    let mut lead = 0u64;
    for block in body.chunks(W * 255) {
        let mut a = [0u8; W];
        let mut l = [0u8; W];
        for v in block.chunks_exact(W) {
            for k in 0..W {
                a[k] += (v[k] < 0x80) as u8;
                l[k] += ((v[k] as i8) >= -0x40) as u8;
            }
        }
        ascii += a.iter().map(|&x| x as u64).sum::<u64>();
        lead += l.iter().map(|&x| x as u64).sum::<u64>();
    }
    let (a, l) = ascii_and_lead_words(tail);
    (ascii + a, lead + l - ascii - a)
}

/// ASCII bytes and character starts (bytes that are not continuation bytes) of a short text
/// (under 256 bytes), a word of 8 bytes at a time: a 0/1 lane per byte and class, summed by one
/// multiply at the end. A LibreChat cut's marker (~57 bytes) is counted at every cut, and the
/// lane counters of `ascii_and_lead` cost more to set up and add up than such a text.
#[inline]
fn ascii_and_lead_words(bytes: &[u8]) -> (u64, u64) {
    const LOW: u64 = 0x0101_0101_0101_0101;
    debug_assert!(bytes.len() < 256, "the lanes' sum must fit a byte");
    let mut words = bytes.chunks_exact(8);
    let (mut high, mut cont) = (0u64, 0u64);
    let mut add = |w: u64| {
        // Bit 7 of each byte; bit 7 set and bit 6 clear (10xxxxxx: a continuation byte).
        high += (w >> 7) & LOW;
        cont += (w >> 7) & !(w >> 6) & LOW;
    };
    for c in &mut words {
        add(u64::from_le_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
        ]));
    }
    // The last bytes as one word padded with NULs, which are in neither class.
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        add(u64::from_le_bytes(last));
    }
    // The lanes add up to at most one per byte, under 256: the multiply's top byte is their sum.
    let (high, cont) = (high.wrapping_mul(LOW) >> 56, cont.wrapping_mul(LOW) >> 56);
    let n = bytes.len() as u64;
    (n - high, n - cont)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_and_other_chars_counts_characters_not_bytes() {
        assert_eq!(ascii_and_other_chars(""), (0, 0));
        assert_eq!(ascii_and_other_chars("hello"), (5, 0));
        // é is 2 bytes, 中 3 bytes, 😀 4 bytes: one character each.
        assert_eq!(ascii_and_other_chars("héllo 中😀"), (5, 3));
        let long = "ab中".repeat(1000);
        assert_eq!(ascii_and_other_chars(&long), (2000, 1000));
    }

    /// The vectorized count (portable and AVX2) equals a count over decoded characters, on
    /// random mixes of 1- to 4-byte characters of every length around the vector and chunk
    /// sizes, and at every offset (unaligned starts).
    #[test]
    fn ascii_and_other_chars_equals_a_char_by_char_count() {
        let simple = |t: &str| {
            let ascii = t.chars().filter(|c| c.is_ascii()).count() as u64;
            (ascii, t.chars().count() as u64 - ascii)
        };
        let pool = [
            'a', ' ', '\n', '\0', '~', 'é', 'ß', '→', '中', '😀', '\u{7f}', '\u{80}',
        ];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for len in (0..300).chain([1000, 4095, 8159, 8160, 8161, 12_000, 20_000]) {
            // Mostly ASCII (as code is), or evenly mixed.
            let ascii_bias = next() % 2 == 0;
            let text: String = (0..len)
                .map(|_| {
                    let r = next();
                    if ascii_bias && r % 8 != 0 {
                        (b'!' + (r >> 8) as u8 % 90) as char
                    } else {
                        pool[(r >> 8) as usize % pool.len()]
                    }
                })
                .collect();
            for start in text.char_indices().map(|(i, _)| i).take(5) {
                let t = &text[start..];
                assert_eq!(
                    ascii_and_other_chars(t),
                    simple(t),
                    "len {len} from {start}"
                );
                assert_eq!(
                    ascii_and_lead(t.as_bytes()),
                    simple(t),
                    "portable, len {len}"
                );
            }
        }
    }

    #[test]
    fn counter_names_resolve_and_unknown_names_list_the_choices() {
        for name in COUNTERS {
            assert_eq!(counter(name).unwrap().name(), *name);
        }
        let err = counter("gpt2").err().unwrap().to_string();
        assert!(
            err.contains("gpt2") && err.contains("heuristic, chars4"),
            "{err}"
        );
        assert_eq!(COUNTERS[0], DEFAULT_COUNTER);
    }
}
