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

/// A non-negative integer token count; anything else (null, negative, float, string) reads as None.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Count(pub Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token count")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                Ok(Count(
                    (v.is_finite() && v >= 0.0 && v.fract() == 0.0).then_some(v as u64),
                ))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Count, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Count, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl Count {
    pub(crate) fn get(self) -> u64 {
        self.0.unwrap_or(0)
    }
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
