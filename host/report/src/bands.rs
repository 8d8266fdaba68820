//! The rubric's bands as thresholds: how a measured share of problem
//! chunks (or a count) becomes a score from 1 to 5. The README's
//! "Quality report" section writes the same table down; change both.

/// The highest share of chunks with a problem that still earns 5, 4, 3
/// and 2 (more earns 1), for the criteria judged chunk by chunk
/// (self-containment, boundaries, header quality): 5 "every chunk", 4
/// "rare", 3 "occasional", 2 "multiple", 1 "most".
pub const SHARE: [f64; 4] = [0.02, 0.05, 0.15, 0.40];

/// Metadata: the share of chunks whose topics do not occur in them, for
/// 5, 4 and 3 when no timestamp or provenance is wrong; a wrong one caps
/// the score at 2 ("errors that would affect retrieval"), and more than
/// [`METADATA_HARD`] of chunks with one is 1.
pub const METADATA_TOPICS: [f64; 3] = [0.02, 0.10, 0.25];
pub const METADATA_HARD: f64 = 0.05;

/// Format: files that deviate. 0 is 5; up to [`FORMAT_FEW`] files is 4
/// ("one or two"); up to the shares here is 3 and 2; more is 1.
pub const FORMAT_FEW: usize = 2;
pub const FORMAT_SHARE: [f64; 2] = [0.05, 0.20];

/// Deduplication: duplicate exchange text under other ids up to this share
/// of chunks is still 4 (a request asked twice, answered alike); duplicate
/// chunk ids, or more duplicate text, up to [`DEDUP_SHARE`] is 2, beyond
/// is 1. No duplicates with manifest gaps is 3.
pub const DEDUP_TEXT_OK: f64 = 0.005;
pub const DEDUP_SHARE: f64 = 0.05;

/// Preservation: pairs lost (in the source, in no chunk, not excluded) up
/// to these shares of the pairs is 3 and 2, more is 1. None lost is 5, or
/// 4 when a left-out pair is borderline (a request of more than
/// [`BORDERLINE_WORDS`] words left out as mechanical).
pub const LOST_SHARE: [f64; 2] = [0.02, 0.10];
pub const BORDERLINE_WORDS: usize = 8;

/// The score of `problems` out of `total` by `bands` (5, 4, 3, 2).
pub fn by_share(problems: usize, total: usize, bands: &[f64; 4]) -> u8 {
    let share = share(problems, total);
    match bands.iter().position(|&b| share <= b) {
        Some(i) => 5 - i as u8,
        None => 1,
    }
}

/// `problems / total`, 0 when there is nothing.
pub fn share(problems: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        problems as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_map_to_the_rubric_s_bands() {
        assert_eq!(by_share(0, 100, &SHARE), 5);
        assert_eq!(by_share(2, 100, &SHARE), 5);
        assert_eq!(by_share(3, 100, &SHARE), 4);
        assert_eq!(by_share(15, 100, &SHARE), 3);
        assert_eq!(by_share(16, 100, &SHARE), 2);
        assert_eq!(by_share(41, 100, &SHARE), 1);
        assert_eq!(by_share(0, 0, &SHARE), 5);
    }
}
