//! Choosing among candidates whose secrets overlap: the more specific rule
//! wins (a vendor format over a structured secret over a generic
//! assignment), then the longer range, then the earlier start, then the
//! earlier rule in the table. The winners never overlap, so each byte of
//! the text is replaced at most once.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::rules::Group;

/// A rule's match before overlaps are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Index of the rule in the redactor's rule list.
    pub rule: usize,
    pub group: Group,
    /// The secret's byte range in the text.
    pub range: Range<usize>,
}

/// The winners among `candidates`, sorted by start.
pub fn resolve(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        a.group
            .cmp(&b.group)
            .then_with(|| b.range.len().cmp(&a.range.len()))
            .then_with(|| a.range.start.cmp(&b.range.start))
            .then_with(|| a.rule.cmp(&b.rule))
    });
    // Accepted ranges by start; they never overlap, so only the nearest
    // one starting before `end` can overlap a new range.
    let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
    let mut winners = Vec::with_capacity(candidates.len());
    for c in candidates {
        let clash = taken
            .range(..c.range.end)
            .next_back()
            .is_some_and(|(_, &end)| end > c.range.start);
        if !clash {
            taken.insert(c.range.start, c.range.end);
            winners.push(c);
        }
    }
    winners.sort_by_key(|c| c.range.start);
    winners
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rule: usize, group: Group, range: Range<usize>) -> Candidate {
        Candidate { rule, group, range }
    }

    #[test]
    fn specific_beats_structured_beats_generic() {
        let won = resolve(vec![
            c(9, Group::Generic, 0..30),
            c(5, Group::Structured, 2..20),
            c(1, Group::Specific, 10..25),
        ]);
        assert_eq!(won, vec![c(1, Group::Specific, 10..25)]);
    }

    #[test]
    fn within_a_group_the_longer_range_wins() {
        let won = resolve(vec![
            c(1, Group::Specific, 0..10),
            c(2, Group::Specific, 5..40),
        ]);
        assert_eq!(won, vec![c(2, Group::Specific, 5..40)]);
    }

    #[test]
    fn ties_go_to_the_earlier_rule_and_disjoint_ranges_all_win() {
        let won = resolve(vec![
            c(3, Group::Structured, 0..10),
            c(2, Group::Structured, 0..10),
            c(7, Group::Generic, 10..20),
            c(8, Group::Generic, 30..31),
        ]);
        assert_eq!(
            won,
            vec![
                c(2, Group::Structured, 0..10),
                c(7, Group::Generic, 10..20),
                c(8, Group::Generic, 30..31),
            ]
        );
    }

    #[test]
    fn a_range_inside_a_winner_or_covering_one_loses() {
        let won = resolve(vec![
            c(1, Group::Specific, 10..20),
            c(2, Group::Generic, 12..14),
            c(3, Group::Generic, 0..50),
            c(4, Group::Generic, 19..21),
            c(5, Group::Generic, 5..11),
        ]);
        assert_eq!(won, vec![c(1, Group::Specific, 10..20)]);
    }
}
