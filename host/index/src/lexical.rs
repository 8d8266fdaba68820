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
    /// compiler turns into a multiplication (a division per trigram was a
    /// third of the embedder's time).
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
        let lower = if text.is_ascii() {
            text.to_ascii_lowercase()
        } else {
            text.to_lowercase()
        };
        let mut padded = String::new();
        let mut starts: Vec<usize> = Vec::new();
        if lower.is_ascii() {
            // The same words as the split on chars below, found by a byte
            // scan (an ASCII char is alphanumeric as its byte is).
            for word in lower
                .as_bytes()
                .split(|b| !b.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                // ASCII bytes: always a `str`.
                let word = std::str::from_utf8(word).unwrap_or_default();
                self.add_word(&mut v, word, &mut padded, &mut starts);
            }
        } else {
            for word in lower
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                self.add_word(&mut v, word, &mut padded, &mut starts);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
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
        ] {
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
