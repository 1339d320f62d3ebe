//! Serde helpers the readers share: fields whose JSON type varies between tool versions are read
//! leniently, so that one odd field never costs the whole entry.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string when the JSON value is a string; nothing (not an error) for any other value.
#[derive(Debug, Default)]
pub(crate) struct LenientStr(pub Option<String>);

impl<'de> Deserialize<'de> for LenientStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LenientStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LenientStr, E> {
                Ok(LenientStr(Some(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<LenientStr, E> {
                Ok(LenientStr(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<LenientStr, E> {
                Ok(LenientStr(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LenientStr, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<LenientStr, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<LenientStr, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer token count; anything else reads as None. A number that is not a count
/// (negative, fractional, beyond u64) is also kept in `.1`, so that a usage holding one is
/// reported and dropped (`bad_usage`) rather than read as a false 0.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Count(pub Option<u64>, pub Option<NotACount>);

/// A number where a token count was expected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NotACount(pub f64);

impl fmt::Display for NotACount {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        if v.abs() >= 1e16 || !v.is_finite() {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token count")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(Some(v), None))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(match u64::try_from(v) {
                    Ok(n) => Count(Some(n), None),
                    Err(_) => Count(None, Some(NotACount(v as f64))),
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                // 2^64 and above do not fit; a float below it with no fraction is a count.
                Ok(
                    if v.is_finite()
                        && v >= 0.0
                        && v.fract() == 0.0
                        && v < 18_446_744_073_709_551_616.0
                    {
                        Count(Some(v as u64), None)
                    } else {
                        Count(None, Some(NotACount(v)))
                    },
                )
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Count, E> {
                Ok(Count::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Count, E> {
                Ok(Count::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Count, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Count::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Count, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count::default())
            }
        }
        d.deserialize_any(V)
    }
}

impl Count {
    pub(crate) fn get(self) -> u64 {
        self.0.unwrap_or(0)
    }

    /// The count of a JSON value (readers that walk `serde_json::Value`s).
    pub(crate) fn of(v: &serde_json::Value) -> Count {
        Count::deserialize(v).unwrap_or_default()
    }
}

/// `bad_usage` for fields read as JSON values.
pub(crate) fn bad_usage_values<'a>(
    fields: impl IntoIterator<Item = (&'a str, &'a serde_json::Value)>,
) -> Option<String> {
    bad_usage(fields.into_iter().map(|(k, v)| (k, Count::of(v).1)))
}

/// The first of a usage's fields whose number is not a token count, as the warning that
/// reports it: the call is then left without recorded usage (a false 0 would distort every
/// figure computed from it).
pub(crate) fn bad_usage<'a>(
    fields: impl IntoIterator<Item = (&'a str, Option<NotACount>)>,
) -> Option<String> {
    fields.into_iter().find_map(|(name, c)| {
        c.map(|bad| {
            format!(
                "usage `{name}` of {bad} is not a token count (negative, fractional or out of range); \
                 the call is left without recorded usage"
            )
        })
    })
}

/// Message content as chat APIs write it: a plain string, or a list of typed blocks.
#[derive(Debug)]
pub(crate) enum StrOrBlocks<B> {
    Str(String),
    Blocks(Vec<B>),
    None,
}

impl<B> Default for StrOrBlocks<B> {
    fn default() -> Self {
        StrOrBlocks::None
    }
}

impl<'de, B: Deserialize<'de>> Deserialize<'de> for StrOrBlocks<B> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<B>(PhantomData<B>);
        impl<'de, B: Deserialize<'de>> Visitor<'de> for V<B> {
            type Value = StrOrBlocks<B>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrBlocks::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrOrBlocks::Str(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrOrBlocks::None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrOrBlocks::None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(a.size_hint().unwrap_or(2).min(64));
                while let Some(b) = a.next_element::<Option<B>>()? {
                    v.extend(b);
                }
                Ok(StrOrBlocks::Blocks(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                // A single block where a list was expected.
                let b = B::deserialize(de::value::MapAccessDeserializer::new(a))?;
                Ok(StrOrBlocks::Blocks(vec![b]))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Decoded size of base64 data, from its length alone.
pub(crate) fn base64_len(data: &str) -> u64 {
    let s = data.trim_end();
    let pad = s.bytes().rev().take_while(|&b| b == b'=').count() as u64;
    (s.len() as u64 / 4 * 3).saturating_sub(pad)
}

/// Size of an image given as a data URL (`data:image/png;base64,...`), or 0 for a remote URL.
pub(crate) fn data_url_image(url: &str) -> (String, u64) {
    match url.strip_prefix("data:").and_then(|r| r.split_once(',')) {
        Some((meta, data)) => {
            let media = meta.split(';').next().unwrap_or("").to_string();
            (media, base64_len(data))
        }
        None => (String::new(), 0),
    }
}
