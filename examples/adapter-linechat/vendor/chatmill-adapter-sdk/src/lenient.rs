//! Lenient serde building blocks: exports drift between vintages, so a field
//! of an unexpected JSON type must not fail the whole conversation. Each
//! wrapper accepts what it expects and quietly drains anything else (to
//! `None` / empty / `false`). Strings borrow from the input when they have no
//! escapes.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use crate::model::Timestamp;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A string that borrows from the input when it can (keys, ids).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct CowStr<'a>(pub Cow<'a, str>);

impl std::ops::Deref for CowStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for CowStr<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

struct CowStrVisitor;

impl<'de> Visitor<'de> for CowStrVisitor {
    type Value = CowStr<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(CowStrVisitor)
    }
}

/// An optional string; numbers become their decimal text, every other type
/// `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    /// The string, `None` when absent or blank.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.trim().is_empty())
    }

    /// The string or `""`.
    pub fn or_empty(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
}

struct LStrVisitor;

impl<'de> Visitor<'de> for LStrVisitor {
    type Value = LStr<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(LStr(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map)?;
        Ok(LStr(None))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LStrVisitor)
    }
}

/// An optional time: Unix seconds (float or integer, as ChatGPT writes
/// them) or a date-time string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LTime(pub Option<Timestamp>);

struct LTimeVisitor;

impl<'de> Visitor<'de> for LTimeVisitor {
    type Value = LTime;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(LTime(Timestamp::from_unix_f64(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(LTime(Timestamp::from_unix_f64(v as f64)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(LTime(Timestamp::from_unix_f64(v as f64)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if let Some(t) = Timestamp::parse(v) {
            return Ok(LTime(Some(t)));
        }
        Ok(LTime(
            v.trim()
                .parse::<f64>()
                .ok()
                .and_then(Timestamp::from_unix_f64),
        ))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LTime(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LTime(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LTime(None))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(LTime(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map)?;
        Ok(LTime(None))
    }
}

impl<'de> Deserialize<'de> for LTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LTimeVisitor)
    }
}

/// A boolean; anything that is not `true` is `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LBool(pub bool);

struct LBoolVisitor;

impl<'de> Visitor<'de> for LBoolVisitor {
    type Value = LBool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(LBool(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LBool(false))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(LBool(false))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map)?;
        Ok(LBool(false))
    }
}

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LBoolVisitor)
    }
}

/// An optional object: a JSON object deserialized as `T`, any other type
/// `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct LObj<T>(pub Option<T>);

impl<T> Default for LObj<T> {
    fn default() -> Self {
        Self(None)
    }
}

struct LObjVisitor<T>(PhantomData<T>);

macro_rules! none_for {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: de::Error>(self, _: $t) -> Result<Self::Value, E> {
            Ok(Default::default())
        })*
    };
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for LObjVisitor<T> {
    type Value = LObj<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    none_for!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LObj(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LObj(None))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(LObj(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| LObj(Some(t)))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LObj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LObjVisitor(PhantomData))
    }
}

/// A list: a JSON array of `T`, any other type empty.
#[derive(Debug, Clone, PartialEq)]
pub struct LVec<T>(pub Vec<T>);

impl<T> Default for LVec<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

struct LVecVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for LVecVisitor<T> {
    type Value = LVec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    none_for!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LVec::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LVec::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(x) = seq.next_element::<T>()? {
            out.push(x);
        }
        Ok(LVec(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map)?;
        Ok(LVec::default())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LVec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LVecVisitor(PhantomData))
    }
}

/// FNV-1a, 64-bit: a deterministic fallback identity for records without an
/// id (same bytes, same id, whatever the read size).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(borrow)]
        s: LStr<'a>,
        t: LTime,
        b: LBool,
        o: LObj<Inner>,
        v: LVec<u32>,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        x: u32,
    }

    #[test]
    fn wrong_types_degrade_instead_of_failing() {
        let p: Probe = serde_json::from_str(
            r#"{"s": {"a": [1]}, "t": [1, 2], "b": "yes", "o": "str", "v": {"k": 1}}"#,
        )
        .unwrap();
        assert_eq!(p.s.0, None);
        assert_eq!(p.t.0, None);
        assert!(!p.b.0);
        assert_eq!(p.o.0, None);
        assert!(p.v.0.is_empty());
    }

    #[test]
    fn right_types_are_read() {
        let p: Probe = serde_json::from_str(
            r#"{"s": "abc", "t": 1700000000.5, "b": true, "o": {"x": 3}, "v": [1, 2], "z": null}"#,
        )
        .unwrap();
        assert!(matches!(p.s.0, Some(Cow::Borrowed("abc"))));
        assert_eq!(p.t.0.unwrap().seconds, 1_700_000_000);
        assert!(p.b.0);
        assert_eq!(p.o.0, Some(Inner { x: 3 }));
        assert_eq!(p.v.0, [1, 2]);
        let p: Probe = serde_json::from_str(r#"{"s": 12, "t": "2024-01-02T03:04:05Z"}"#).unwrap();
        assert_eq!(p.s.get(), Some("12"));
        assert_eq!(p.t.0.unwrap().to_rfc3339(), "2024-01-02T03:04:05Z");
        let p: Probe = serde_json::from_str(r#"{"s": "a\nb", "t": null}"#).unwrap();
        assert_eq!(p.s.get(), Some("a\nb"));
        assert_eq!(p.t.0, None);
    }
}
