//! The HNSW graph a new collection gets, and how wide a search of a
//! collection built otherwise asks for candidates.

use serde_json::{Value, json};

/// The HNSW index a new collection gets: cosine space, and a denser graph
/// built and searched wider than Chroma's defaults (16 neighbours, ef
/// 100/100). Measured with `benches/chroma_recall.rs` on Chroma 1.5.9
/// against exact kNN, 100,000 records of the lexical stand-in's vectors:
/// recall@10 0.74 unfiltered with 16/100/200, 0.93–0.96 with 32/200/500,
/// 0.991 with 64/400/500 and 1.000 with these (`ef_search` 1000 for a
/// margin: builds vary). What the sparser graphs miss are whole groups of
/// identical vectors (the same text stored again): HNSW's neighbour
/// selection lets a node link to only one member of such a group, so the
/// group is reached through few edges, and a denser graph built with a
/// wider search keeps enough of them (64 neighbours alone or
/// ef_construction 400 alone: 0.97–0.98). The price is build time: 56% of
/// 32/200's upsert rate at 100,000 records. Fixed at creation: an existing
/// collection keeps its graph, and Chroma 1.5.9 applies a changed
/// `ef_search` only after the server restarts.
pub(super) fn hnsw() -> Value {
    json!({
        "space": "cosine",
        "max_neighbors": 64,
        "ef_construction": 400,
        "ef_search": 1000,
    })
}

/// Candidates per search on a collection built sparser than [`hnsw`]:
/// on 100,000 lexical records in a 32/200 graph, recall@10 0.96 asking
/// for 500 (HNSW searches max(ef_search, n) wide), 0.99 for 1,500, 1.00 for
/// 2,000; chatmill's search then runs at half the rate (57 against 123
/// queries/s, the documents fetched for the best k in a second request).
pub(super) const WIDE: usize = 2000;

/// Candidates per search for a collection whose HNSW configuration is
/// `graph` (`configuration_json.hnsw`): for chatmill's graph or a denser
/// one, 0 (just `k`) or its `ef_search` where the collection's is lower;
/// 0 when the collection has no HNSW index (SPANN on a distributed
/// Chroma); [`WIDE`] for a sparser graph.
pub(super) fn candidates(graph: &Value) -> usize {
    let ours = hnsw();
    let at_least = |key: &str| graph[key].as_u64() >= ours[key].as_u64();
    if graph.is_null() || graph["max_neighbors"].is_null() {
        0
    } else if !(at_least("max_neighbors") && at_least("ef_construction")) {
        WIDE
    } else if at_least("ef_search") {
        0
    } else {
        ours["ef_search"].as_u64().map_or(0, |ef| ef as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparser_graphs_are_searched_wider() {
        assert_eq!(candidates(&Value::Null), 0, "no HNSW index");
        assert_eq!(candidates(&hnsw()), 0, "chatmill's graph");
        let graph = |m: u64, efc: u64, efs: u64| json!({"space": "cosine", "max_neighbors": m, "ef_construction": efc, "ef_search": efs});
        assert_eq!(candidates(&graph(96, 800, 2000)), 0, "denser");
        assert_eq!(candidates(&graph(32, 200, 500)), WIDE, "chatmill's before");
        assert_eq!(candidates(&graph(16, 100, 100)), WIDE, "Chroma's defaults");
        assert_eq!(candidates(&graph(64, 200, 500)), WIDE, "built narrower");
        assert_eq!(candidates(&graph(64, 400, 100)), 1000, "searched narrower");
    }
}
