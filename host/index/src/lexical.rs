//! The lexical stand-in for an embedding model: hashed words and character
//! trigrams, signed, into a fixed number of dimensions, L2-normalized.
//! Deterministic and instant; it finds shared words, not shared meaning, so
//! searches made with it say so, and `chatmill reindex` replaces its vectors
//! once a real model is available. Also what fast tests use.

use crate::{Embedder, IndexError};

pub struct Lexical {
    dim: usize,
    id: String,
}

impl Lexical {
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            id: format!("lexical-hash-v1-{dim}"),
        }
    }
}

impl Default for Lexical {
    fn default() -> Self {
        Self::new(384)
    }
}

/// FNV-1a: stable across runs and platforms (the vectors are stored).
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Lexical {
    /// Where `h` falls: the default width as a constant divisor, which the
    /// compiler turns into a multiplication (a division per trigram would
    /// be a third of the embedder's time).
    fn slot(&self, h: u64) -> usize {
        if self.dim == 384 {
            (h % 384) as usize
        } else {
            (h % self.dim as u64) as usize
        }
    }

    fn add(&self, v: &mut [f32], feature: &[u8], weight: f32) {
        let h = fnv(feature);
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[self.slot(h)] += sign * weight;
    }

    /// A word's features: the word, and the trigrams of it padded with a
    /// space on each side, as byte slices of `padded` (no allocation per
    /// trigram; the same features as hashing each trigram's string). An
    /// ASCII word's chars are its bytes; another's start where `starts`
    /// says.
    fn add_word(&self, v: &mut [f32], word: &str, padded: &mut String, starts: &mut Vec<usize>) {
        self.add(v, word.as_bytes(), 1.0);
        padded.clear();
        padded.push(' ');
        padded.push_str(word);
        padded.push(' ');
        if word.is_ascii() {
            for tri in padded.as_bytes().windows(3) {
                self.add(v, tri, 0.3);
            }
            return;
        }
        starts.clear();
        starts.extend(padded.char_indices().map(|(i, _)| i));
        starts.push(padded.len());
        for w in starts.windows(4) {
            self.add(v, &padded.as_bytes()[w[0]..w[3]], 0.3);
        }
    }

    fn one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let lower = lowercase(text);
        let (mut padded, mut starts) = (String::new(), Vec::new());
        for word in words(&lower) {
            self.add_word(&mut v, word, &mut padded, &mut starts);
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

/// `text.to_lowercase()`, with runs of ASCII lowercased as bytes: std
/// looks every char after the first non-ASCII one up in its case tables
/// (a header's closing `…` sends the rest of the text that way, which
/// would be a fifth of the stand-in's time). Only `Σ` lowercases by its
/// neighbours, so a text with one is left to std.
fn lowercase(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    if text.contains('Σ') {
        return text.to_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        let from = out.len();
        out.push_str(&rest[..ascii]);
        out[from..].make_ascii_lowercase();
        rest = &rest[ascii..];
        if let Some(c) = rest.chars().next() {
            out.extend(c.to_lowercase());
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The words of `text` as `text.split(|c| !c.is_alphanumeric())` finds
/// them (empty ones left out), by a byte scan that decodes only non-ASCII
/// chars.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        let mut start = None;
        let mut i = pos;
        while i < b.len() {
            let (word, width) = if b[i].is_ascii() {
                (b[i].is_ascii_alphanumeric(), 1)
            } else {
                // `i` is on a char boundary: only whole chars are stepped.
                let c = text[i..].chars().next().unwrap_or_default();
                (c.is_alphanumeric(), c.len_utf8())
            };
            match (word, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    pos = i + width;
                    return Some(&text[s..i]);
                }
                _ => {}
            }
            i += width;
        }
        pos = b.len();
        start.map(|s| &text[s..])
    })
}

impl Embedder for Lexical {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        Ok(texts.iter().map(|t| self.one(t)).collect())
    }

    fn is_fallback(&self) -> bool {
        true
    }

    fn is_instant(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// The first version, which allocated a string per trigram: stored
    /// vectors must not change.
    fn reference(l: &Lexical, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; l.dim];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            l.add(&mut v, word.as_bytes(), 1.0);
            let padded: Vec<char> = format!(" {word} ").chars().collect();
            for tri in padded.windows(3) {
                let s: String = tri.iter().collect();
                l.add(&mut v, s.as_bytes(), 0.3);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    #[test]
    fn vectors_equal_the_first_versions() {
        let l = Lexical::default();
        for text in [
            "",
            "a",
            "nginx returns 504 on long uploads",
            "Why does NGINX time out (504)?\tsnake_case, C++ & x-y\n\n\"quoted\" -- A1b2",
            "Größe, naïve café — 東京タワー and emoji 🙂 x",
            "ǅ İstanbul ΣΑΣ ß",
            "From a ChatGPT conversation titled \"Ümlaut\" (exchange 3 of 9): \"why is it…\" ÉCOLE Straße",
            "ΟΔΟΣ'Α σ Σ",
            "…",
            "x…",
            "İİ\u{307}ǈ🙂A",
        ] {
            assert_eq!(lowercase(text), text.to_lowercase(), "{text:?}");
            assert!(
                words(text).eq(text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())),
                "{text:?}"
            );
            assert_eq!(l.one(text), reference(&l, text), "{text:?}");
            // Another width takes the general division.
            let narrow = Lexical::new(100);
            assert_eq!(narrow.one(text), reference(&narrow, text), "{text:?}");
        }
    }

    #[test]
    fn shared_words_score_higher_and_vectors_are_stable_unit_vectors() {
        let l = Lexical::default();
        let v = l
            .embed(&[
                "nginx returns 504 on long uploads",
                "Why does NGINX time out (504) on uploads?",
                "a recipe for banana bread",
            ])
            .unwrap();
        assert!((cos(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2);
        assert_eq!(
            v[0],
            l.embed(&["nginx returns 504 on long uploads"]).unwrap()[0]
        );
        assert!(l.is_fallback());
    }
}
