//! Lenient typed fields, timestamps and argument summaries shared by the
//! record mappers.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chatmill_adapter_sdk::Timestamp;
use chatmill_adapter_sdk::text::summarize;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Longest tool-call argument summary.
pub const CALL_SUMMARY: usize = 120;
/// Longest tool-result / error / system-prompt summary.
pub const RESULT_SUMMARY: usize = 200;

/// A string field that tolerates other JSON types: a number becomes its
/// text; `null`, booleans, arrays and objects become `None`. Borrows from
/// the input when the string has no escapes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The value, `None` when absent or blank.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.trim().is_empty())
    }

    pub fn owned(&self) -> Option<String> {
        self.get().map(str::to_owned)
    }

    pub fn is(&self, want: &str) -> bool {
        self.0.as_deref() == Some(want)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
                Str::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Str(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Str(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// The first non-whitespace byte of a raw JSON value.
pub fn lead(raw: &RawValue) -> u8 {
    raw.get()
        .bytes()
        .find(|b| !b.is_ascii_whitespace())
        .unwrap_or(b'n')
}

pub fn is_object(raw: Option<&RawValue>) -> bool {
    raw.is_some_and(|r| lead(r) == b'{')
}

/// A raw value as a string (lenient, see [`Str`]).
pub fn raw_str(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<Str<'_>>(raw.get())
        .ok()
        .and_then(|s| s.owned())
}

/// The elements of a raw JSON array (`None` when it is not an array).
pub fn raw_array(raw: &RawValue) -> Option<Vec<&RawValue>> {
    if lead(raw) != b'[' {
        return None;
    }
    serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok()
}

/// A timestamp in any spelling API logs use: RFC 3339 / naive date-time
/// strings (naive ones taken as UTC), epoch seconds or epoch milliseconds
/// (numbers or numeric strings).
pub fn raw_time(raw: Option<&RawValue>) -> Option<Timestamp> {
    let raw = raw?;
    match lead(raw) {
        b'"' => {
            let s = raw_str(raw)?;
            if let Some(t) = Timestamp::parse(&s) {
                return Some(t);
            }
            s.trim().parse::<f64>().ok().and_then(epoch)
        }
        b'-' | b'0'..=b'9' => raw.get().trim().parse::<f64>().ok().and_then(epoch),
        _ => None,
    }
}

fn epoch(n: f64) -> Option<Timestamp> {
    if !n.is_finite() || n <= 0.0 {
        return None;
    }
    if n > 1e11 {
        Timestamp::from_unix_f64(n / 1000.0)
    } else {
        Timestamp::from_unix_f64(n)
    }
}

/// Keys whose value best describes a tool call, most telling first.
const ARG_KEYS: &[&str] = &[
    "file_path",
    "path",
    "filename",
    "command",
    "cmd",
    "code",
    "query",
    "q",
    "url",
    "pattern",
    "location",
    "city",
    "prompt",
    "description",
    "name",
    "id",
];

/// A short summary of tool-call arguments given as JSON text (an object,
/// or a string holding JSON, as OpenAI sends `arguments`).
pub fn summarize_args(json: &str) -> String {
    let value: serde_json::Value = match serde_json::from_str(json) {
        Ok(v) => v,
        Err(_) => return summarize(json, CALL_SUMMARY),
    };
    summarize_value(&value)
}

fn summarize_value(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            // OpenAI `arguments` is JSON inside a string.
            let t = s.trim_start();
            if (t.starts_with('{') || t.starts_with('['))
                && let Ok(inner) = serde_json::from_str::<Value>(s)
            {
                return summarize_value(&inner);
            }
            summarize(s, CALL_SUMMARY)
        }
        Value::Object(map) => {
            for key in ARG_KEYS {
                if let Some(v) = map.get(*key)
                    && let Some(s) = scalar_text(v)
                    && !s.trim().is_empty()
                {
                    return summarize(&s, CALL_SUMMARY);
                }
            }
            let mut out = String::new();
            for (k, v) in map {
                let Some(s) = scalar_text(v) else { continue };
                if !out.is_empty() {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                out.push_str(&s);
                if out.len() > CALL_SUMMARY * 4 {
                    break;
                }
            }
            if out.is_empty() {
                out = value.to_string();
            }
            summarize(&out, CALL_SUMMARY)
        }
        Value::Null => String::new(),
        other => summarize(&other.to_string(), CALL_SUMMARY),
    }
}

fn scalar_text(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T<'a> {
        #[serde(default, borrow)]
        a: Str<'a>,
    }

    #[test]
    fn lenient_strings() {
        let t: T<'_> = serde_json::from_str(r#"{"a": "x"}"#).unwrap();
        assert!(matches!(t.a.0, Some(Cow::Borrowed("x"))));
        let t: T<'_> = serde_json::from_str(r#"{"a": 12}"#).unwrap();
        assert_eq!(t.a.get(), Some("12"));
        for doc in [
            r#"{"a": null}"#,
            r#"{"a": [1, {"b": 2}]}"#,
            r#"{"a": {"x": [1]}}"#,
            "{}",
        ] {
            let t: T<'_> = serde_json::from_str(doc).unwrap();
            assert_eq!(t.a.get(), None, "{doc}");
        }
        let t: T<'_> = serde_json::from_str(r#"{"a": "q\"uote"}"#).unwrap();
        assert_eq!(t.a.get(), Some("q\"uote"));
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn times_in_every_spelling() {
        let want = Timestamp::parse("2024-10-24T00:35:56Z").unwrap();
        assert_eq!(raw_time(Some(&raw("1729730156"))), Some(want));
        assert_eq!(raw_time(Some(&raw("1729730156000"))), Some(want));
        assert_eq!(raw_time(Some(&raw("\"2024-10-24T00:35:56Z\""))), Some(want));
        assert_eq!(
            raw_time(Some(&raw("\"2024-10-23T17:35:56-07:00\""))),
            Some(want)
        );
        assert_eq!(raw_time(Some(&raw("\"2024-10-24 00:35:56\""))), Some(want));
        assert_eq!(raw_time(Some(&raw("null"))), None);
        assert_eq!(raw_time(Some(&raw("\"soon\""))), None);
        assert_eq!(raw_time(Some(&raw("-5"))), None);
        assert_eq!(raw_time(None), None);
    }

    #[test]
    fn argument_summaries_pick_the_telling_field() {
        assert_eq!(
            summarize_args(r#""{\"location\": \"Paris\", \"unit\": \"c\"}""#),
            "Paris"
        );
        assert_eq!(
            summarize_args(r#"{"file_path": "src/totals.rs"}"#),
            "src/totals.rs"
        );
        assert_eq!(
            summarize_args(r#"{"a": 1, "b": true, "c": [1]}"#),
            "a=1, b=true"
        );
        assert_eq!(summarize_args("not json at all"), "not json at all");
        assert_eq!(
            summarize_args(r#"{"nested": {"x": 1}}"#),
            r#"{"nested":{"x":1}}"#
        );
        let long = format!(r#"{{"command": "{}"}}"#, "x".repeat(500));
        assert!(summarize_args(&long).chars().count() <= CALL_SUMMARY + 1);
    }
}
