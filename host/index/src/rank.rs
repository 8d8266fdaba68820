//! The ranking policy, whatever the store: how ranked lists are fused
//! (weighted reciprocal rank), the share neighbouring exchanges take of
//! each other's score, how a time phrase's window joins the fusion, and how
//! a keyword search within a small scope weighs its words. A store answers
//! the primitive queries ([`crate::Store`]); what to make of their answers
//! is decided here. The constants are tuned on LoCoMo
//! (`host/pipeline/benches/locomo.rs`).

use std::collections::HashMap;

use crate::bm25::{self, Terms};
use crate::time_hint::TimeWindow;
use crate::{Filter, Hit};

/// BM25 reads the whole chunk, the reply included, while the dense vector
/// holds only header + prompt (the spec's "Embedding Dilution"), so the
/// keyword list carries more of what a question asks for: in a hybrid
/// search it is fused at this weight against the dense list's 1.
pub const KEYWORD_WEIGHT: f32 = 2.0;

/// A question's answer is often in the exchange next to the one whose
/// words match it (a question in one pair, its answer in the next), so a
/// score spills over to the neighbours by this share: a fused hit gains it
/// of the better fused score of the exchanges right before and after it
/// (R@5 0.685 → 0.692, R@10 0.754 → 0.771), and within a keyword scope a
/// chunk gains it of its neighbours' keyword scores, a chunk next to a
/// match becoming a candidate (hybrid R@5 0.657 → 0.682; with b = 0.3:
/// 0.686 at 0.3 and 0.4, 0.684 at 0.5).
pub const NEIGHBOUR_SHARE: f32 = SHARE as f32;

/// [`NEIGHBOUR_SHARE`] for the scoped keyword scores' f64 arithmetic:
/// exactly 0.3 there (the f32 widened would be 0.30000001).
const SHARE: f64 = 0.3;

/// A time phrase adds the same search again within its window, as one more
/// ranked list per query and ranking, fused at this share of the weight:
/// a chunk both relevant and in the window rises, nothing outside it is
/// dropped (the phrase may mean something else, or the talk about an event
/// may come later). R@5 (questions asked at the end of their conversation)
/// 0.705 → 0.711 / 0.712 / 0.711 at shares 0.5 / 1 / 2, and 0.710 with
/// [`TIME_RELEVANCE`].
pub const TIME_WEIGHT: f32 = 1.0;

/// A window is searched a little past its end: what happened in June is
/// often talked about in July. Its own length, at most this many days.
/// (LoCoMo cannot tell: 0.712 with it, 0.713 without.)
const TIME_SLACK_DAYS: i64 = 31;

/// A window's ranking keeps only the hits scoring at least this share of
/// the best hit of the unwindowed ranking: in a window holding a few chunks
/// a vector search still ranks them all, and "the nginx 502s last year"
/// must not bring up last year's only chat, about sourdough.
const TIME_RELEVANCE: f32 = 0.5;

/// The reciprocal-rank-fusion constant. The textbook 60 fuses many long
/// lists; with two lists of 40 where one is clearly better, a small constant
/// lets each list's top ranks decide (R@5: 0.49 at 60 with equal weights,
/// 0.61 at 3 with BM25 weighted 2).
const RRF_K: f32 = 3.0;

/// A ranked list of hits and the weight it is fused with.
pub(crate) type Weighted = (f32, Vec<Hit>);

/// `filter` narrowed to `window` (extended by its slack); `None` when
/// nothing of the filter's own time range is left.
pub(crate) fn within(filter: &Filter, window: &TimeWindow) -> Option<Filter> {
    let len = window.until - window.since + 1;
    let until = window.until + len.min(TIME_SLACK_DAYS * 86_400);
    let since = filter.since.map_or(window.since, |s| s.max(window.since));
    let until = filter.until.map_or(until, |u| u.min(until));
    (since <= until).then(|| Filter {
        since: Some(since),
        until: Some(until),
        ..filter.clone()
    })
}

/// The lists one query's ranking contributes at `weight`: `all` (the
/// ranking over the whole filter) and, when there is a time window,
/// `dated` (the same ranking within it) without the hits far less relevant
/// than the best of `all`, at [`TIME_WEIGHT`]. The window's list comes
/// first: fused scores are summed in list order.
pub(crate) fn with_window(weight: f32, all: Vec<Hit>, dated: Option<Vec<Hit>>) -> Vec<Weighted> {
    let mut lists = Vec::with_capacity(2);
    if let Some(mut dated) = dated {
        let best = all.iter().map(|h| h.score).fold(f32::MIN, f32::max);
        if best > 0.0 {
            dated.retain(|h| h.score >= TIME_RELEVANCE * best);
        }
        lists.push((weight * TIME_WEIGHT, dated));
    }
    lists.push((weight, all));
    lists
}

/// One hit per chunk from weighted ranked `lists`: with `rrf`, each list
/// adds `weight / (RRF_K + rank)` to a chunk's score; without (a single
/// list), a chunk keeps its best `score × weight`.
pub(crate) fn fuse(lists: Vec<Weighted>, rrf: bool) -> Vec<Hit> {
    let mut best: HashMap<String, Hit> = HashMap::new();
    for (weight, hits) in lists {
        for (rank, mut h) in hits.into_iter().enumerate() {
            let s = if rrf {
                weight / (RRF_K + rank as f32 + 1.0)
            } else {
                h.score * weight
            };
            match best.get_mut(&h.chunk_id) {
                Some(e) if rrf => e.score += s,
                Some(e) => e.score = e.score.max(s),
                None => {
                    h.score = s;
                    best.insert(h.chunk_id.clone(), h);
                }
            }
        }
    }
    best.into_values().collect()
}

/// Each hit gains `share` of the better score of the hits right before and
/// after it in the same conversation (by turn range).
pub(crate) fn neighbours_share(hits: &mut [Hit], share: f32) {
    let ranges: Vec<Option<(u32, u32)>> = hits
        .iter()
        .map(|h| crate::turn_pairs(&h.meta.turn_range))
        .collect();
    let mut at: HashMap<(&str, u32), f32> = HashMap::new();
    for (h, range) in hits.iter().zip(&ranges) {
        if let Some((a, b)) = *range {
            for key in [
                (h.meta.conversation_id.as_str(), a),
                (h.meta.conversation_id.as_str(), b),
            ] {
                let e = at.entry(key).or_insert(0.0);
                *e = e.max(h.score);
            }
        }
    }
    let gains: Vec<f32> = hits
        .iter()
        .zip(&ranges)
        .map(|(h, range)| {
            let Some((a, b)) = *range else {
                return 0.0;
            };
            let conv = h.meta.conversation_id.as_str();
            let before = a.checked_sub(1).and_then(|p| at.get(&(conv, p))).copied();
            let after = at.get(&(conv, b + 1)).copied();
            share * before.unwrap_or(0.0).max(after.unwrap_or(0.0))
        })
        .collect();
    for (h, g) in hits.iter_mut().zip(gains) {
        h.score += g;
    }
}

/// Newer hits gain up to `boost` × the best score, halved every
/// `half_life_days` of age behind the newest hit.
pub(crate) fn recency_boost(hits: &mut [Hit], boost: f32, half_life_days: f32) {
    let newest = hits.iter().map(|h| h.meta.timestamp).max().unwrap_or(0);
    let half = (half_life_days.max(0.01) * 86_400.0) as f64;
    let top = hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
    for h in hits {
        let age = (newest - h.meta.timestamp).max(0) as f64;
        let decay = 0.5f64.powf(age / half) as f32;
        h.score += boost * top * decay;
    }
}

/// The `k` best hits, best first (ties by chunk id).
pub(crate) fn best(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
    hits.truncate(k);
    hits
}

/// A keyword search scoped to one agent's or one conversation's memory
/// (the scopes whose vocabulary differs from the index's: the other
/// speaker's name, a project's jargon) of at most this many chunks ranks by
/// the scope's own statistics ([`ScopeWeights`]). A platform or time window
/// samples the index's own mix and is left alone; counting there cost more
/// than the search (hybrid with a platform filter over 100k chunks: 20 →
/// 140 ms).
pub(crate) const SCOPE_SMALL: i64 = 5_000;

/// Whether a keyword search with `filter` is one of a scope's (when the
/// scope holds at most [`SCOPE_SMALL`] chunks).
pub(crate) fn scoped_keyword(filter: &Filter) -> bool {
    filter.agent_id.is_some() || filter.conversation_id.is_some()
}

/// A scoped search drops the words found in more than this share of the
/// scope's chunks.
const SCOPE_COMMON: f64 = 0.25;

/// BM25's length normalization within a scope: FTS5's 0.75 punishes the
/// long exchanges that hold the answers (hybrid R@5, with the neighbour
/// share: 0.682 at 0.75, 0.685 at 0.5, 0.686 at 0.3).
const SCOPE_B: f64 = 0.5;

/// How a scoped keyword search weighs the query's words. FTS5 weighs a
/// word by its rarity in the whole index, so a name rare overall but in
/// most chunks of one agent's memory (the other speaker's name in a
/// companion's history) outweighs the words that matter, and the best BM25
/// hits become "Awesome, Melanie!". Here the words in more than
/// [`SCOPE_COMMON`] of the scope are dropped (keeping the rarest if all
/// would go), the rest weighed by their rarity in the scope (IDF over its
/// chunks: hybrid R@5 0.647 → 0.657) with [`SCOPE_B`]'s length
/// normalization.
pub(crate) struct ScopeWeights {
    kept: Vec<bool>,
    idf: Vec<f64>,
}

impl ScopeWeights {
    /// The weights of a query of `phrases` words in a scope of `total`
    /// chunks, given the terms of each chunk that matches any of them.
    pub(crate) fn new<'a>(
        total: i64,
        phrases: usize,
        matches: impl Iterator<Item = &'a Terms>,
    ) -> Self {
        let mut df = vec![0i64; phrases];
        for t in matches {
            for (d, f) in df.iter_mut().zip(&t.freq) {
                *d += i64::from(*f > 0.0);
            }
        }
        let common = (SCOPE_COMMON * total as f64) as i64;
        let mut kept: Vec<bool> = df.iter().map(|d| phrases < 2 || *d <= common).collect();
        if !kept.contains(&true)
            && let Some(rarest) = (0..phrases).min_by_key(|&p| df[p])
        {
            kept[rarest] = true;
        }
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| {
                (((total - d) as f64 + 0.5) / (d as f64 + 0.5))
                    .ln()
                    .max(1e-6)
            })
            .collect();
        Self { kept, idf }
    }

    fn kept(&self, phrase: usize) -> bool {
        self.kept.get(phrase) == Some(&true)
    }

    /// A chunk's score, `None` when it matches none of the kept words.
    pub(crate) fn score(&self, t: &Terms) -> Option<f64> {
        t.freq
            .iter()
            .enumerate()
            .any(|(p, f)| *f > 0.0 && self.kept(p))
            .then(|| {
                bm25::score(
                    SCOPE_B,
                    &self.idf,
                    &t.freq,
                    |p| self.kept(p),
                    t.len,
                    t.avgdl,
                )
            })
    }
}

/// Scores along a scope's conversations: `order` lists (conversation,
/// chunk) in turn order, `scored` the chunks' own scores; each chunk gains
/// [`NEIGHBOUR_SHARE`] of the better score of the chunks before and after
/// it in its conversation. Every chunk with a score or a scored neighbour,
/// as (chunk, score).
pub(crate) fn spill_to_neighbours(
    order: &[(usize, i64)],
    scored: &HashMap<i64, f64>,
) -> Vec<(usize, f32)> {
    let at = |i: usize| scored.get(&order[i].1).copied().unwrap_or(0.0);
    (0..order.len())
        .filter_map(|i| {
            let conv = order[i].0;
            let prev = (i > 0 && order[i - 1].0 == conv).then(|| at(i - 1));
            let next = order.get(i + 1).filter(|n| n.0 == conv).map(|_| at(i + 1));
            let near = prev.unwrap_or(0.0).max(next.unwrap_or(0.0));
            let own = at(i);
            (own > 0.0 || near > 0.0).then(|| (order[i].1 as usize, (own + SHARE * near) as f32))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChunkMeta;

    fn hit(id: &str, conv: &str, range: &str, score: f32) -> Hit {
        Hit {
            chunk_id: id.into(),
            score,
            meta: ChunkMeta {
                timestamp: 0,
                platform: "local".into(),
                agent_id: "u".into(),
                conversation_id: conv.into(),
                project: None,
                title: None,
                topics: Vec::new(),
                model: "m".into(),
                turn_range: range.into(),
                source_file: "f".into(),
                path: format!("{id}.md"),
            },
            document: String::new(),
        }
    }

    #[test]
    fn hits_gain_a_share_of_their_better_neighbour_in_the_same_conversation() {
        let mut hits = vec![
            hit("a2", "a", "2", 1.0),
            hit("a3", "a", "3-4", 0.5),
            hit("a5", "a", "5", 0.2),
            hit("a9", "a", "9", 0.4),
            hit("b3", "b", "3", 0.8),
            hit("odd", "a", "x", 0.3),
        ];
        neighbours_share(&mut hits, 0.5);
        let score = |id: &str| hits.iter().find(|h| h.chunk_id == id).unwrap().score;
        // a3 sits between a2 (1.0) and a5 (0.2): half of the better.
        assert_eq!(score("a3"), 0.5 + 0.5);
        // a2's neighbour a3 covers pairs 3-4; a5 follows pair 4.
        assert_eq!(score("a2"), 1.0 + 0.25);
        assert_eq!(score("a5"), 0.2 + 0.25);
        // No neighbour listed; another conversation's pair 3 is no neighbour.
        assert_eq!(score("a9"), 0.4);
        assert_eq!(score("b3"), 0.8);
        assert_eq!(score("odd"), 0.3);
    }

    fn ids(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.chunk_id.as_str()).collect()
    }

    #[test]
    fn lists_fuse_by_weighted_reciprocal_rank_and_a_single_list_keeps_its_scores() {
        let a = vec![hit("x", "c", "1", 0.9), hit("y", "c", "5", 0.8)];
        let b = vec![hit("y", "c", "5", 0.1), hit("z", "c", "9", 0.05)];
        let fused = best(fuse(vec![(1.0, a.clone()), (2.0, b.clone())], true), 10);
        let score = |id: &str| fused.iter().find(|h| h.chunk_id == id).unwrap().score;
        // y: rank 2 at weight 1, rank 1 at weight 2.
        assert_eq!(score("y"), 1.0 / (RRF_K + 2.0) + 2.0 / (RRF_K + 1.0));
        assert_eq!(score("x"), 1.0 / (RRF_K + 1.0));
        assert_eq!(score("z"), 2.0 / (RRF_K + 2.0));
        assert_eq!(ids(&fused), ["y", "z", "x"]);
        // One list: its own scores times its weight, the best per chunk.
        let one = best(fuse(vec![(2.0, a)], false), 10);
        assert_eq!(one.iter().map(|h| h.score).collect::<Vec<_>>(), [1.8, 1.6]);
    }

    #[test]
    fn a_time_window_is_searched_a_little_past_its_end_within_the_filter() {
        let june = TimeWindow {
            phrase: "June".into(),
            since: 1_685_577_600, // 2023-06-01
            until: 1_688_169_599, // 2023-06-30 23:59:59
        };
        let w = within(&Filter::default(), &june).unwrap();
        assert_eq!(w.since, Some(june.since));
        // 30 days long: searched 30 days past its end (at most 31).
        assert_eq!(w.until, Some(june.until + 30 * 86_400));
        let year = TimeWindow {
            since: 1_672_531_200,
            until: 1_704_067_199,
            ..june.clone()
        };
        assert_eq!(
            within(&Filter::default(), &year).unwrap().until,
            Some(year.until + 31 * 86_400)
        );
        // The filter's own range narrows it; nothing left: no window.
        let f = Filter {
            platform: Some("claude".into()),
            since: Some(1_686_000_000),
            ..Filter::default()
        };
        let w = within(&f, &june).unwrap();
        assert_eq!(
            (w.since, w.platform.as_deref()),
            (Some(1_686_000_000), Some("claude"))
        );
        let before = Filter {
            until: Some(june.since - 1),
            ..Filter::default()
        };
        assert_eq!(within(&before, &june), None);
    }

    #[test]
    fn a_windowed_ranking_joins_first_without_the_far_less_relevant() {
        let all = vec![hit("a", "c", "1", 0.8), hit("b", "c", "2", 0.5)];
        let dated = vec![hit("b", "c", "2", 0.5), hit("d", "c", "4", 0.39)];
        let lists = with_window(2.0, all, Some(dated));
        assert_eq!(lists.len(), 2);
        // The window's list first, at TIME_WEIGHT; d is under half of the
        // best unwindowed score.
        assert_eq!(lists[0].0, 2.0 * TIME_WEIGHT);
        assert_eq!(ids(&lists[0].1), ["b"]);
        assert_eq!((lists[1].0, ids(&lists[1].1)), (2.0, vec!["a", "b"]));
        assert_eq!(with_window(1.0, Vec::new(), None).len(), 1);
    }

    #[test]
    fn newer_hits_gain_a_boost_halved_per_half_life() {
        let mut hits = vec![hit("new", "c", "1", 1.0), hit("old", "c", "2", 1.0)];
        hits[1].meta.timestamp = -30 * 86_400;
        recency_boost(&mut hits, 0.5, 30.0);
        assert_eq!(hits[0].score, 1.5);
        assert_eq!(hits[1].score, 1.25);
    }

    fn terms(len: f64, freq: &[f64]) -> Terms {
        Terms {
            avgdl: 10.0,
            len,
            idf: vec![1.0; freq.len()],
            freq: freq.to_vec(),
        }
    }

    #[test]
    fn a_scope_drops_its_common_words_and_weighs_the_rest_by_their_rarity_in_it() {
        // 10 chunks; word 0 in 4 of them (over a quarter), word 1 in 1.
        let matches = [
            terms(10.0, &[1.0, 0.0]),
            terms(10.0, &[1.0, 0.0]),
            terms(10.0, &[1.0, 0.0]),
            terms(10.0, &[1.0, 1.0]),
        ];
        let w = ScopeWeights::new(10, 2, matches.iter());
        assert_eq!(w.kept, [false, true]);
        assert_eq!(w.score(&matches[0]), None, "only a dropped word");
        let idf = ((10.0 - 1.0 + 0.5) / 1.5f64).ln();
        let expected = bm25::score(SCOPE_B, &[0.0, idf], &[1.0, 1.0], |p| p == 1, 10.0, 10.0);
        assert_eq!(w.score(&matches[3]), Some(expected));
        // Every word common: the rarest stays. One word always stays.
        let all = ScopeWeights::new(4, 2, matches.iter());
        assert_eq!(all.kept, [false, true]);
        assert_eq!(ScopeWeights::new(2, 1, matches.iter()).kept, [true]);
        // b = 0.5: a long chunk loses less than FTS5's 0.75 would take.
        let long = terms(40.0, &[0.0, 1.0]);
        let half = w.score(&long).unwrap();
        let fts5 = bm25::score(bm25::B, &w.idf, &long.freq, |p| p == 1, 40.0, 10.0);
        assert!(half > fts5, "{half} > {fts5}");
        assert!(scoped_keyword(&Filter {
            agent_id: Some("a".into()),
            ..Filter::default()
        }));
        assert!(!scoped_keyword(&Filter {
            platform: Some("claude".into()),
            ..Filter::default()
        }));
    }

    #[test]
    fn within_a_scope_a_score_spills_to_the_chunks_beside_it_in_its_conversation() {
        // Conversation 0: chunks 1, 2, 3; conversation 1: chunk 4.
        let order = [(0, 1), (0, 2), (0, 3), (1, 4)];
        let scored: HashMap<i64, f64> = [(2, 1.0), (4, 0.5)].into();
        let mut got = spill_to_neighbours(&order, &scored);
        got.sort_by_key(|g| g.0);
        assert_eq!(
            got,
            [(1, 0.3), (2, 1.0), (3, 0.3), (4, 0.5)],
            "4 is no neighbour of 3"
        );
        assert_eq!(f64::from(NEIGHBOUR_SHARE) as f32, 0.3);
        assert_eq!(SHARE as f32, NEIGHBOUR_SHARE);
    }
}
