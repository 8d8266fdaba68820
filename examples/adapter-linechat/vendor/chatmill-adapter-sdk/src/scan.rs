//! A structural scan of a (possibly cut) JSON head for sniffing: which keys
//! the first record has, which keys occur deeper, and whether the input is
//! one JSON document or a stream of them (JSONL).

use std::collections::BTreeSet;

/// What the head of a JSON input looks like.
#[derive(Debug, Default)]
pub struct HeadScan {
    /// First non-whitespace byte (after a BOM).
    pub first: Option<u8>,
    /// Keys of the record objects: the top-level object, the elements of a
    /// top-level array, or the elements of an array held by a top-level
    /// object (a wrapper such as `{"conversations": [...]}`).
    pub record_keys: BTreeSet<String>,
    /// Every key seen, at any depth.
    pub all_keys: BTreeSet<String>,
    /// A second top-level value followed the first (JSONL / concatenated).
    pub multiple_values: bool,
    /// Bytes that cannot be JSON structure were found outside strings.
    pub garbage: bool,
}

impl HeadScan {
    pub fn has_record(&self, key: &str) -> bool {
        self.record_keys.contains(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.all_keys.contains(key)
    }
}

const MAX_KEY: usize = 64;

/// Scans `head` (any prefix of a JSON document).
pub fn scan(head: &[u8]) -> HeadScan {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut out = HeadScan {
        first: head.iter().copied().find(|b| !b.is_ascii_whitespace()),
        ..HeadScan::default()
    };
    // Container stack: b'{' or b'['.
    let mut stack: Vec<u8> = Vec::new();
    // Per object level: whether the next string is a key.
    let mut expect_key: Vec<bool> = Vec::new();
    // The key whose value the top-level object is reading.
    let mut top_key: Option<String> = None;
    let mut in_string = false;
    let mut escaped = false;
    let mut string_is_key = false;
    let mut key = Vec::new();
    let mut closed_top = false;
    for &b in head {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if string_is_key && key.len() <= MAX_KEY {
                    let k = String::from_utf8_lossy(&key).into_owned();
                    if stack.len() == 1 {
                        top_key = Some(k.clone());
                    }
                    if is_record_level(&stack, top_key.as_deref()) {
                        out.record_keys.insert(k.clone());
                    }
                    out.all_keys.insert(k);
                }
                continue;
            }
            if string_is_key && key.len() <= MAX_KEY {
                key.push(b);
            }
            continue;
        }
        match b {
            b'"' => {
                if stack.is_empty() && closed_top {
                    out.multiple_values = true;
                    break;
                }
                in_string = true;
                string_is_key = stack.last() == Some(&b'{') && expect_key.last() == Some(&true);
                key.clear();
            }
            b'{' | b'[' => {
                if stack.is_empty() && closed_top {
                    out.multiple_values = true;
                    break;
                }
                stack.push(b);
                expect_key.push(b == b'{');
            }
            b'}' | b']' => {
                stack.pop();
                expect_key.pop();
                if stack.is_empty() {
                    closed_top = true;
                }
            }
            b':' => {
                if let Some(e) = expect_key.last_mut() {
                    *e = false;
                }
            }
            b',' => {
                if stack.last() == Some(&b'{')
                    && let Some(e) = expect_key.last_mut()
                {
                    *e = true;
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' => {
                if stack.is_empty() {
                    out.garbage = true;
                }
            }
            _ => out.garbage = true,
        }
    }
    out
}

/// Object keys whose array value holds the records.
const WRAPPER_KEYS: &[&str] = &["conversations"];

/// Whether a key read with this container stack belongs to a record.
fn is_record_level(stack: &[u8], top_key: Option<&str>) -> bool {
    match stack {
        [b'{'] | [b'[', b'{'] => true,
        [b'{', b'[', b'{'] => top_key.is_some_and(|k| WRAPPER_KEYS.contains(&k)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_of_arrays_objects_and_wrappers() {
        let s = scan(br#"[{"title": "x", "mapping": {"a": {"parent": null, "children": []}}}, {"#);
        assert!(s.has_record("mapping") && s.has_record("title"));
        assert!(!s.has_record("parent") && s.has("parent") && s.has("children"));
        assert!(!s.multiple_values);
        let s = scan(br#"{"conversations": [{"mapping": {}}]}"#);
        assert!(s.has_record("mapping") && s.has_record("conversations"));
        let s = scan(br#"{"uuid": "u", "chat_messages": [{"sender": "human"}]}"#);
        assert!(s.has_record("chat_messages") && s.has("sender"));
        assert!(!s.has_record("sender"));
    }

    #[test]
    fn values_are_not_keys_and_jsonl_is_noticed() {
        let s = scan(br#"{"a": "mapping", "b": ["chat_messages"]}"#);
        assert!(!s.has("mapping") && !s.has("chat_messages"));
        let s = scan(b"{\"type\": \"user\"}\n{\"type\": \"assistant\"}\n");
        assert!(s.multiple_values);
        let s = scan(b"# Title\n\nSome {\"mapping\": 1} text");
        assert!(s.garbage);
        assert_eq!(scan(b"\xEF\xBB\xBF [").first, Some(b'['));
    }
}
