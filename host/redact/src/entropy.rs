//! Shannon entropy of a string, in bits per byte.
//!
//! Random key material scores high (base62 ≈ 5.95 bits for long strings,
//! hex ≈ 4), words and repeated characters score low (`aaaaaaaa` is 0,
//! `password` is 2.75), which lets a rule drop look-alikes such as
//! `sk-xxxxxxxxxxxxxxxxxxxx` or `AKIAAAAAAAAAAAAAAAAA`.

/// Entropy of `s`'s bytes: −Σ p·log2(p) over the byte frequencies.
/// 0.0 for the empty string.
pub fn shannon(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let len = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::shannon;

    #[test]
    fn empty_and_uniform_strings_have_no_entropy() {
        assert_eq!(shannon(""), 0.0);
        assert_eq!(shannon("aaaaaaaa"), 0.0);
    }

    #[test]
    fn distinct_symbols_give_log2_of_their_count() {
        assert!((shannon("ab") - 1.0).abs() < 1e-12);
        assert!((shannon("abcd") - 2.0).abs() < 1e-12);
        assert!((shannon("0123456789abcdef") - 4.0).abs() < 1e-12);
    }

    #[test]
    fn words_score_lower_than_random_keys() {
        let word = shannon("password");
        assert!((word - 2.75).abs() < 1e-12, "{word}");
        assert!(shannon("q8Zr2LmX0vTa9KcW4nBy") > 4.0);
    }
}
