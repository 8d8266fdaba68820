//! Recall of a store's kNN against exact kNN on LoCoMo's turns (records) and
//! questions (queries): shared by the Chroma recall test and benchmark
//! (`#[path]`-included).

use chatmill_index::{ChunkMeta, ChunkRecord, Filter, Store};

pub const K: usize = 10;
pub const QUERIES: usize = 100;
const PLATFORMS: [&str; 4] = ["chatgpt", "claude", "gemini", "claude-code"];

/// Mean recall@K of the store's kNN against exact kNN over `vectors`
/// within `filter`, and the store's queries per second.
pub fn recall(
    store: &dyn Store,
    records: &[ChunkRecord],
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    filter: &Filter,
) -> (f64, f64) {
    let mut total = 0.0;
    let mut secs = 0.0;
    for q in queries {
        let mut exact: Vec<(f32, &str)> = records
            .iter()
            .zip(vectors)
            .filter(|(r, _)| matches(filter, &r.meta))
            .map(|(r, v)| (dot(q, v), r.chunk_id.as_str()))
            .collect();
        let scores: std::collections::HashMap<&str, f32> =
            exact.iter().map(|&(s, id)| (id, s)).collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        exact.truncate(K);
        let t = std::time::Instant::now();
        let got = store.knn(q, K, filter).expect("knn");
        secs += t.elapsed().as_secs_f64();
        // A returned record counts when it scores at least the k-th exact
        // score (a tie at the boundary is not a miss).
        let Some(&(kth, _)) = exact.last() else {
            total += 1.0;
            continue;
        };
        let found = got
            .iter()
            .filter(|h| {
                scores
                    .get(h.chunk_id.as_str())
                    .is_some_and(|&s| s >= kth - 1e-6)
            })
            .count()
            .min(exact.len());
        total += found as f64 / exact.len() as f64;
    }
    (total / queries.len() as f64, queries.len() as f64 / secs)
}

/// Whether `m` is in `f`'s scope (the fields the bench's filters use).
fn matches(f: &Filter, m: &ChunkMeta) -> bool {
    f.platform.as_ref().is_none_or(|p| *p == m.platform)
        && f.conversation_id
            .as_ref()
            .is_none_or(|c| *c == m.conversation_id)
        && f.since.is_none_or(|t| m.timestamp >= t)
        && f.until.is_none_or(|t| m.timestamp <= t)
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The scopes searched: none, a platform (a quarter of the records), a
/// conversation (about a hundredth), a time window (a fifth).
pub fn filters(records: &[ChunkRecord]) -> Vec<(&'static str, Filter)> {
    let mid = records[records.len() / 2].meta.timestamp;
    let span = (records.len() as i64 / 10) * 60;
    vec![
        ("no filter", Filter::default()),
        (
            "platform = claude",
            Filter {
                platform: Some("claude".into()),
                ..Filter::default()
            },
        ),
        (
            "one conversation",
            Filter {
                conversation_id: Some(records[records.len() / 3].meta.conversation_id.clone()),
                ..Filter::default()
            },
        ),
        (
            "a fifth of the time",
            Filter {
                since: Some(mid - span),
                until: Some(mid + span),
                ..Filter::default()
            },
        ),
    ]
}

/// Creates collection `name` on the server at `url` with the HNSW graph
/// `graph` (`max_neighbors/ef_construction/ef_search`, cosine space), as an
/// older chatmill or another client may have: chatmill's `get_or_create`
/// then keeps it. (`ef_search` is set here, at creation: Chroma 1.5.9
/// stores a later change, but a running server searches with the old
/// value until it restarts.)
pub fn create_collection(url: &str, name: &str, graph: &str) {
    let p: Vec<u64> = graph
        .split('/')
        .map(|x| {
            x.parse()
                .expect("HNSW graph as M/ef_construction/ef_search")
        })
        .collect();
    let [m, efc, efs] = p[..] else {
        panic!("HNSW graph as M/ef_construction/ef_search: {graph}");
    };
    ureq::Agent::new_with_defaults()
        .post(&format!(
            "{url}/api/v2/tenants/default_tenant/databases/default_database/collections"
        ))
        .send_json(serde_json::json!({
            "name": name,
            "configuration": {"hnsw": {
                "space": "cosine", "max_neighbors": m, "ef_construction": efc, "ef_search": efs,
            }},
        }))
        .expect("create collection");
}

/// LoCoMo's dialogue turns and its questions.
pub fn locomo() -> (Vec<String>, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/locomo/locomo10.json");
    let path = std::env::var_os("CHATMILL_LOCOMO").map_or(path, std::path::PathBuf::from);
    let data: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("LoCoMo corpus")).expect("json");
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    for sample in data.as_array().into_iter().flatten() {
        if let Some(conv) = sample["conversation"].as_object() {
            for (key, session) in conv {
                if key.starts_with("session_") && !key.ends_with("date_time") {
                    for turn in session.as_array().into_iter().flatten() {
                        if let (Some(who), Some(t)) =
                            (turn["speaker"].as_str(), turn["text"].as_str())
                        {
                            turns.push(format!("{who}: {t}"));
                        }
                    }
                }
            }
        }
        for qa in sample["qa"].as_array().into_iter().flatten() {
            if let Some(q) = qa["question"].as_str() {
                questions.push(q.to_string());
            }
        }
    }
    // Spread the questions over the ten conversations.
    let step = (questions.len() / QUERIES).max(1);
    let questions = questions.into_iter().step_by(step).collect();
    (turns, questions)
}

/// `n` records: LoCoMo's turns in order, then pairs of turns; a hundred
/// conversations, four platforms, a minute apart.
pub fn records(turns: &[String], n: usize) -> Vec<ChunkRecord> {
    (0..n)
        .map(|i| {
            let text = if i < turns.len() {
                turns[i].clone()
            } else {
                let j = i * 7919 % turns.len();
                format!("{} {}", turns[i % turns.len()], turns[j])
            };
            ChunkRecord {
                chunk_id: format!("r{i:07}"),
                embed_text: text.clone(),
                document: text,
                meta: ChunkMeta {
                    timestamp: 1_700_000_000 + i as i64 * 60,
                    platform: PLATFORMS[i % PLATFORMS.len()].into(),
                    agent_id: "external".into(),
                    conversation_id: format!("conv-{}", i * 100 / n),
                    project: None,
                    title: None,
                    topics: Vec::new(),
                    model: "gpt-4o".into(),
                    turn_range: "1".into(),
                    source_file: "raw/locomo10.json".into(),
                    path: format!("r{i:07}.md"),
                },
            }
        })
        .collect()
}
