//! What a secret is replaced with: `[REDACTED:<rule-id>:<8 hex>]`, the hex
//! being the first 4 bytes of HMAC-SHA256(key, secret). Keyed, so equal
//! secrets get equal placeholders (a reader can follow one key through a
//! conversation) yet a placeholder cannot be checked against a guessed
//! secret without the key. The form holds no quote, backtick, backslash or
//! newline, so it can stand inside a JSON string, a Markdown code fence or
//! a YAML scalar without changing their structure; and no rule matches it
//! (the redactor also skips any candidate that overlaps one), so redacting
//! twice changes nothing.

use std::ops::Range;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::Key;

/// The literal start of every placeholder.
pub const PREFIX: &str = "[REDACTED:";

/// The placeholder for `secret` found by rule `rule`.
pub fn placeholder(key: &Key, rule: &str, secret: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(secret.as_bytes());
    let tag = mac.finalize().into_bytes();
    format!("{PREFIX}{rule}:{}]", hex::encode(&tag[..4]))
}

/// The byte ranges of the placeholders already in `text` (a rule id is
/// kebab-case letters and digits, then `:` and 8 lowercase hex digits).
pub fn existing(text: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(PREFIX) {
        let start = from + at;
        let rest = &text[start + PREFIX.len()..];
        match placeholder_len(rest) {
            Some(len) => {
                let end = start + PREFIX.len() + len;
                found.push(start..end);
                from = end;
            }
            None => from = start + PREFIX.len(),
        }
    }
    found
}

/// Length of `<id>:<8 hex>]` at the start of `rest`, if it is one.
fn placeholder_len(rest: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    let id_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-' || **b == b'_')
        .count();
    let tail = bytes.get(id_len..id_len + 10)?;
    let hex_ok = tail[1..9]
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    (id_len > 0 && tail[0] == b':' && hex_ok && tail[9] == b']').then_some(id_len + 10)
}

/// A masked view of a secret for reports: its first characters, `…`, and
/// its length in characters. At most 4 characters are shown, and never more
/// than a quarter of the secret, so a short secret shows fewer (or none).
pub fn preview(secret: &str) -> String {
    let chars = secret.chars().count();
    let shown: String = secret.chars().take((chars / 4).min(4)).collect();
    format!("{shown}…({chars} chars)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::from_bytes([b; 32])
    }

    #[test]
    fn placeholder_has_the_documented_form_and_is_keyed() {
        let p = placeholder(&key(1), "github-token", "abc");
        assert!(p.starts_with("[REDACTED:github-token:"), "{p}");
        assert_eq!(p.len(), "[REDACTED:github-token:".len() + 9);
        assert_eq!(p, placeholder(&key(1), "github-token", "abc"));
        assert_ne!(p, placeholder(&key(2), "github-token", "abc"));
        assert_ne!(p, placeholder(&key(1), "github-token", "abd"));
        assert_eq!(existing(&format!("x {p} y")), vec![2..2 + p.len()]);
    }

    #[test]
    fn placeholder_matches_rfc4231_hmac_sha256() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for
        // nothing?" -> 5bdcc146... Our keys are 32 bytes, so check the MAC
        // construction with the crate directly and our truncation by hand.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"Jefe").expect("any length");
        mac.update(b"what do ya want for nothing?");
        let tag = mac.finalize().into_bytes();
        assert_eq!(hex::encode(&tag[..4]), "5bdcc146");
    }

    #[test]
    fn existing_ignores_look_alikes() {
        assert!(existing("[REDACTED:x:1234567]").is_empty());
        assert!(existing("[REDACTED::12345678]").is_empty());
        assert!(existing("[REDACTED:x:1234567g]").is_empty());
        assert!(existing("[REDACTED:x:12345678").is_empty());
        assert_eq!(existing("[REDACTED:[REDACTED:a:0000000f]").len(), 1);
    }

    #[test]
    fn preview_never_shows_more_than_a_quarter() {
        assert_eq!(preview("ghp_abcdefghijklmnop"), "ghp_…(20 chars)");
        assert_eq!(preview("hunter2"), "h…(7 chars)");
        assert_eq!(preview("abc"), "…(3 chars)");
    }
}
