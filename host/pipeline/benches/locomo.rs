//! Retrieval quality on LoCoMo (Maharana et al. 2024): every conversation is
//! imported through the real pipeline (speaker A as the user, B as the
//! assistant, one session = one conversation dated by the session's date),
//! then every question of categories 1–4 is searched within its
//! conversation and we count whether the evidence dialog turns are in the
//! top k chunks (the paper's recall: the share of a question's evidence
//! turns found, averaged over questions).
//!
//! Variants: hybrid (the default search), dense only, BM25 only, dense over
//! full-chunk embeddings (what embedding the assistant reply does), and the
//! lexical stand-in (no model installed).
//!
//! `cargo bench -p chatmill-pipeline --bench locomo`
//! (`CHATMILL_LOCOMO=path/to/locomo10.json`; default: the shared corpus.)
//! Embeddings are cached in `target/locomo-embeddings.sqlite3`.
//! For tuning: `CHATMILL_LOCOMO_KW=W` sets hybrid's BM25 weight,
//! `CHATMILL_LOCOMO_ONLY=text` runs only the variants whose name has it,
//! `CHATMILL_LOCOMO_SHOW=N` prints the first N questions hybrid misses.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use chatmill_index::{
    Cached, ChunkRecord, Embedder, Filter, Index, Indexer, Lexical, MiniLm, Mode, SearchRequest,
    SqliteStore, minilm,
};
use chatmill_model::{Conversation, Pair, Part};
use chatmill_pipeline::header::ExtractiveWriter;
use chatmill_pipeline::manifest::Manifest;
use chatmill_pipeline::processor::{Naming, Processor, ProcessorConfig};
use chrono::{NaiveDateTime, TimeZone, Utc};
use serde_json::Value;

const KS: [usize; 3] = [1, 5, 10];

struct Question {
    sample: String,
    /// When it is asked: the end of its conversation's last session day.
    asked: Option<i64>,
    text: String,
    evidence: Vec<String>,
    category: u64,
}

fn session_time(s: &str) -> Option<chrono::DateTime<Utc>> {
    // "1:56 pm on 8 May, 2023"
    let s = s.trim().to_uppercase();
    NaiveDateTime::parse_from_str(&s, "%I:%M %p ON %d %B, %Y")
        .ok()
        .map(|t| Utc.from_utc_datetime(&t))
}

fn turn_text(t: &Value) -> String {
    let mut text = t["text"].as_str().unwrap_or_default().to_string();
    if let Some(c) = t["blip_caption"].as_str() {
        text.push_str(&format!(" [shares a photo: {c}]"));
    }
    text
}

/// One sample's sessions as conversations, and for each conversation the
/// dialog ids behind every pair index.
fn conversations(sample: &Value) -> Vec<(Conversation, HashMap<u32, Vec<String>>)> {
    let conv = &sample["conversation"];
    let id = sample["sample_id"].as_str().unwrap_or("conv");
    let a = conv["speaker_a"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    for n in 1.. {
        let Some(turns) = conv[format!("session_{n}")].as_array() else {
            if n > 50 {
                break;
            }
            continue;
        };
        let time = conv[format!("session_{n}_date_time")]
            .as_str()
            .and_then(session_time);
        let mut pairs: Vec<Pair> = Vec::new();
        let mut dia: HashMap<u32, Vec<String>> = HashMap::new();
        let mut user: Vec<String> = Vec::new();
        let mut assistant: Vec<String> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let mut flush = |user: &mut Vec<String>,
                         assistant: &mut Vec<String>,
                         ids: &mut Vec<String>,
                         pairs: &mut Vec<Pair>| {
            if user.is_empty() && assistant.is_empty() {
                return;
            }
            let index = pairs.len() as u32 + 1;
            dia.insert(index, std::mem::take(ids));
            pairs.push(Pair {
                index,
                timestamp: time,
                model: None,
                user: vec![Part::Text {
                    text: std::mem::take(user).join("\n\n"),
                }],
                assistant: vec![Part::Text {
                    text: std::mem::take(assistant).join("\n\n"),
                }],
                metadata: BTreeMap::new(),
            });
        };
        for t in turns {
            let from_a = t["speaker"].as_str() == Some(a);
            // A new user turn after an answer closes the pair.
            if from_a && !assistant.is_empty() {
                flush(&mut user, &mut assistant, &mut ids, &mut pairs);
            }
            if from_a {
                user.push(turn_text(t));
            } else {
                assistant.push(turn_text(t));
            }
            ids.push(t["dia_id"].as_str().unwrap_or_default().to_string());
        }
        flush(&mut user, &mut assistant, &mut ids, &mut pairs);
        out.push((
            Conversation {
                id: format!("{id}-session-{n}"),
                title: None,
                created: time,
                updated: time,
                platform: "local".into(),
                model: None,
                metadata: BTreeMap::new(),
                pairs,
                skipped: BTreeMap::new(),
            },
            dia,
        ));
    }
    out
}

fn evidence_ids(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .flat_map(|s| s.split([';', ' ']))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn pair_range(turn_range: &str) -> (u32, u32) {
    let (a, b) = turn_range
        .split_once('-')
        .unwrap_or((turn_range, turn_range));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

struct Variant {
    name: &'static str,
    mode: Mode,
    index: Arc<Index>,
}

fn main() {
    let path = std::env::var_os("CHATMILL_LOCOMO").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/corpus/locomo/locomo10.json")
        },
        PathBuf::from,
    );
    let data: Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| {
            panic!("cannot read {}: {e} (set CHATMILL_LOCOMO)", path.display())
        }))
        .expect("locomo10.json is JSON");
    let Some(model_dir) = minilm::resolve(None) else {
        eprintln!("error: no embedding model found\nhint: run scripts/setup-model.sh");
        std::process::exit(1);
    };
    let t0 = Instant::now();
    let model = MiniLm::load(&model_dir).expect("model loads");
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let embedder: Arc<dyn Embedder> = Arc::new(
        Cached::open(model, &target.join("locomo-embeddings.sqlite3")).expect("cache opens"),
    );
    let work = tempfile::tempdir().expect("tempdir");

    // Import: chunk + header every session through the pipeline.
    let header = ExtractiveWriter;
    let mut records: Vec<ChunkRecord> = Vec::new();
    // chunk id → the dialog ids it holds.
    let mut holds: HashMap<String, Vec<String>> = HashMap::new();
    // chunk id → the sample (conversation pair) it belongs to.
    let mut owner: HashMap<String, String> = HashMap::new();
    let mut questions = Vec::new();
    for sample in data.as_array().expect("a list of samples") {
        let sid = sample["sample_id"].as_str().unwrap_or("conv").to_string();
        let cfg = ProcessorConfig {
            naming: Naming::ChunkId,
            out_dir: work.path().join(&sid),
            agent_id: sid.clone(),
            render: Default::default(),
            chunker: Default::default(),
        };
        std::fs::create_dir_all(&cfg.out_dir).expect("out dir");
        let mut manifest = Manifest::new();
        let mut processor = Processor::new(cfg, &header, &manifest);
        let mut last: Option<i64> = None;
        for (conv, dia) in conversations(sample) {
            last = last.max(conv.created.map(|t| t.timestamp()));
            let outcome = processor
                .process(&conv, "locomo10.json", Utc::now(), &mut manifest)
                .expect("the pipeline takes every session");
            for w in outcome.written {
                let (a, b) = pair_range(&w.record.meta.turn_range);
                let ids = (a..=b)
                    .flat_map(|i| dia.get(&i).cloned().unwrap_or_default())
                    .collect();
                holds.insert(w.chunk_id.clone(), ids);
                owner.insert(w.chunk_id.clone(), sid.clone());
                records.push(w.record);
            }
        }
        for q in sample["qa"].as_array().into_iter().flatten() {
            let category = q["category"].as_u64().unwrap_or(0);
            let evidence = evidence_ids(&q["evidence"]);
            if !(1..=4).contains(&category) || evidence.is_empty() {
                continue;
            }
            questions.push(Question {
                sample: sid.clone(),
                asked: last.map(|t| t - t.rem_euclid(86_400) + 86_399),
                text: q["question"].as_str().unwrap_or_default().to_string(),
                evidence,
                category,
            });
        }
    }
    let turns: usize = holds.values().map(Vec::len).sum();
    println!(
        "LoCoMo: {} chunks holding {turns} dialog turns, {} questions (categories 1-4), imported in {:.1} s",
        records.len(),
        questions.len(),
        t0.elapsed().as_secs_f64()
    );

    #[derive(Clone, Copy)]
    enum Text {
        HeaderPrompt,
        Full,
        PromptOnly,
    }
    let build = |name: &str, embedder: Arc<dyn Embedder>, text: Text| -> Arc<Index> {
        let t = Instant::now();
        let store = SqliteStore::open(&work.path().join(format!("{name}.sqlite3"))).expect("store");
        let index = Index::new(Arc::new(store), embedder);
        let recs: Vec<ChunkRecord> = records
            .iter()
            .map(|r| {
                let mut r = r.clone();
                match text {
                    Text::HeaderPrompt => {}
                    Text::Full => r.embed_text = r.document.clone(),
                    // What follows the header in the embedding text.
                    Text::PromptOnly => {
                        r.embed_text = r
                            .embed_text
                            .split_once("\n\n")
                            .map_or(String::new(), |(_, p)| p.to_string());
                    }
                }
                r
            })
            .collect();
        for batch in recs.chunks(256) {
            index.index(batch).expect("index");
        }
        println!("  index `{name}`: {:.1} s", t.elapsed().as_secs_f64());
        Arc::new(index)
    };
    let main = build("header+prompt", embedder.clone(), Text::HeaderPrompt);
    let full = build("full-text", embedder.clone(), Text::Full);
    let prompt = build("prompt-only", embedder.clone(), Text::PromptOnly);
    let lexical = build("lexical", Arc::new(Lexical::default()), Text::HeaderPrompt);
    let variants = [
        Variant {
            name: "hybrid (default)",
            mode: Mode::Hybrid,
            index: main.clone(),
        },
        Variant {
            name: "dense (header + prompt)",
            mode: Mode::Semantic,
            index: main.clone(),
        },
        Variant {
            name: "BM25",
            mode: Mode::Keyword,
            index: main.clone(),
        },
        Variant {
            name: "dense (full text)",
            mode: Mode::Semantic,
            index: full.clone(),
        },
        Variant {
            name: "hybrid (full text)",
            mode: Mode::Hybrid,
            index: full,
        },
        Variant {
            name: "dense (user prompt, no header)",
            mode: Mode::Semantic,
            index: prompt,
        },
        Variant {
            name: "hybrid, lexical stand-in",
            mode: Mode::Hybrid,
            index: lexical,
        },
    ];

    println!();
    println!("| variant | R@1 | R@5 | R@10 | ms/query |");
    println!("|---|---|---|---|---|");
    let mut by_category: BTreeMap<u64, [f64; 4]> = BTreeMap::new();
    // CHATMILL_LOCOMO_SHOW=N prints the first N questions hybrid misses at k = 5.
    let mut show: usize = std::env::var("CHATMILL_LOCOMO_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let embed_text: HashMap<&str, &str> = records
        .iter()
        .map(|r| (r.chunk_id.as_str(), r.embed_text.as_str()))
        .collect();
    // CHATMILL_LOCOMO_ONLY=text runs only the variants whose name has it.
    let only = std::env::var("CHATMILL_LOCOMO_ONLY").unwrap_or_default();
    for v in variants.iter().filter(|v| v.name.contains(only.as_str())) {
        let t = Instant::now();
        let mut sums = [0.0f64; 3];
        for q in &questions {
            let mut req = SearchRequest::new(&q.text);
            req.mode = v.mode;
            req.k = 10;
            if let Some(w) = std::env::var("CHATMILL_LOCOMO_KW")
                .ok()
                .and_then(|w| w.parse().ok())
            {
                req.keyword_weight = w;
            }
            req.filter = Filter {
                agent_id: Some(q.sample.clone()),
                ..Filter::default()
            };
            // Relative time phrases ("last year", "in June") count back
            // from the end of the conversation, when the question is asked.
            req.now = q.asked;
            req.time_hints = std::env::var_os("CHATMILL_LOCOMO_NO_TIME").is_none();
            let hits = v.index.search(&req).expect("search").hits;
            for (slot, &k) in sums.iter_mut().zip(&KS) {
                let found: std::collections::HashSet<&str> = hits
                    .iter()
                    .take(k)
                    .flat_map(|h| holds.get(&h.chunk_id).into_iter().flatten())
                    .map(String::as_str)
                    .collect();
                let hit = q
                    .evidence
                    .iter()
                    .filter(|e| found.contains(e.as_str()))
                    .count();
                let r = hit as f64 / q.evidence.len() as f64;
                *slot += r;
                if v.name == "hybrid (default)" && k == 5 && r < 1.0 && show > 0 {
                    show -= 1;
                    println!(
                        "\nMISS [{}] {} evidence {:?}",
                        q.category, q.text, q.evidence
                    );
                    for h in hits.iter().take(3) {
                        println!(
                            "  got {:?}: {}",
                            holds.get(&h.chunk_id),
                            embed_text
                                .get(h.chunk_id.as_str())
                                .unwrap_or(&"")
                                .replace('\n', " / ")
                        );
                    }
                    for (id, ids) in &holds {
                        // Dialog ids repeat across samples: only this one's.
                        if owner.get(id) == Some(&q.sample)
                            && ids.iter().any(|d| q.evidence.contains(d))
                        {
                            println!(
                                "  WANT {ids:?}: {}",
                                embed_text
                                    .get(id.as_str())
                                    .unwrap_or(&"")
                                    .replace('\n', " / ")
                            );
                        }
                    }
                }
                if v.name == "hybrid (default)" && k == 5 {
                    let c = by_category.entry(q.category).or_default();
                    c[0] += r;
                    c[3] += 1.0;
                }
            }
        }
        let n = questions.len() as f64;
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.1} |",
            v.name,
            sums[0] / n,
            sums[1] / n,
            sums[2] / n,
            t.elapsed().as_secs_f64() * 1000.0 / n
        );
    }
    println!();
    println!("hybrid (default) R@5 by category:");
    for (c, v) in &by_category {
        let name = match c {
            1 => "multi-hop",
            2 => "temporal",
            3 => "open-domain",
            4 => "single-hop",
            _ => "?",
        };
        println!("  {c} {name:<12} {:.3}  (n = {})", v[0] / v[3], v[3]);
    }
    println!(
        "\nunits are chunks (usually one user/assistant pair = 2+ dialog turns); DRAGON's anchors (0.567 / 0.662 at k = 5 / 10) rank single turns"
    );
}
