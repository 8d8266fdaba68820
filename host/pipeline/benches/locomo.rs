//! Retrieval quality on LoCoMo (Maharana et al. 2024): every conversation is
//! imported through the real pipeline (speaker A as the user, B as the
//! assistant, one session = one conversation dated by the session's date),
//! then every question of categories 1–4 is searched within its
//! conversation and we count whether the evidence dialog turns are in the
//! top k chunks (the paper's recall: the share of a question's evidence
//! turns found, averaged over questions).
//!
//! Variants: hybrid (the default search), dense only, BM25 only, dense over
//! full-chunk embeddings (what embedding the assistant reply does), the
//! lexical stand-in (no model installed), and MiniLM's int8 fast path
//! against the exact f32 vectors the other MiniLM variants use.
//!
//! It then times each embedder on the same texts and checks #27's quality
//! guards (MiniLM int8 against f32; the static model against MiniLM),
//! exiting non-zero when one fails.
//!
//! `cargo bench -p chatmill-pipeline --bench locomo`
//! (`CHATMILL_LOCOMO=path/to/locomo10.json`; default: the shared corpus.)
//! Embeddings are cached in `target/locomo-embeddings.sqlite3`.
//! For tuning: `CHATMILL_LOCOMO_KW=W` sets hybrid's BM25 weight,
//! `CHATMILL_LOCOMO_ONLY=a,b` runs (and builds indexes for) only the
//! variants whose name has one of the parts,
//! `CHATMILL_LOCOMO_SHOW=N` prints the first N questions hybrid misses.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_index::minilm::Precision;
use chatmill_index::{
    Cached, ChunkRecord, Embedder, Filter, Hit, Index, Indexer, Lexical, MiniLm, Mode,
    SearchRequest, SqliteStore, StaticModel, minilm,
};
use chatmill_model::{Conversation, Pair, Part};
use chatmill_pipeline::processor::{Naming, Processor, ProcessorConfig};
use chatmill_root::manifest::Manifest;
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

/// What the import leaves for the searches: the records, and which dialog
/// turns and which sample each chunk holds.
struct Imported {
    records: Vec<ChunkRecord>,
    /// chunk id → the dialog ids it holds.
    holds: HashMap<String, Vec<String>>,
    /// chunk id → the sample (conversation pair) it belongs to.
    owner: HashMap<String, String>,
    questions: Vec<Question>,
}

/// What a variant's index embeds of each chunk.
#[derive(Clone, Copy)]
enum Text {
    HeaderPrompt,
    Full,
    PromptOnly,
}

fn main() {
    let data = load();
    let Some(model_dir) = minilm::resolve(None) else {
        eprintln!("error: no embedding model found\nhint: run scripts/setup-model.sh");
        std::process::exit(1);
    };
    let t0 = Instant::now();
    let embedders = Embedders::load(&model_dir);
    let work = tempfile::tempdir().expect("tempdir");
    let imported = import(&data, work.path());
    let turns: usize = imported.holds.values().map(Vec::len).sum();
    println!(
        "LoCoMo: {} chunks holding {turns} dialog turns, {} questions (categories 1-4), imported in {:.1} s",
        imported.records.len(),
        imported.questions.len(),
        t0.elapsed().as_secs_f64()
    );
    let variants = variants(work.path(), &imported.records, &embedders);
    let (by_category, r5) = measure(&variants, &imported);
    print_categories(&by_category);
    speeds(&model_dir, &imported.records);
    if !guards(&r5) {
        std::process::exit(1);
    }
}

/// Texts per second of each MiniLM precision and of the static model on
/// the first [`SPEED_TEXTS`] texts the header + prompt indexes embed, in
/// batches of 32, uncached (the variants above read cached vectors).
fn speeds(model_dir: &Path, records: &[ChunkRecord]) {
    let texts: Vec<&str> = records
        .iter()
        .take(SPEED_TEXTS)
        .map(|r| r.embed_text.as_str())
        .collect();
    println!(
        "\nembedding speed on {} of these texts (batches of 32):",
        texts.len()
    );
    let embedders: [(&str, Box<dyn Embedder>); 3] = [
        (
            "MiniLM f32",
            Box::new(MiniLm::load_with(model_dir, Precision::Exact).expect("model")),
        ),
        (
            "MiniLM int8",
            Box::new(MiniLm::load_with(model_dir, Precision::Fast).expect("model")),
        ),
        (
            "static",
            Box::new(StaticModel::load(model_dir).expect("static model")),
        ),
    ];
    for (name, e) in embedders {
        // One batch first: int8 quantizes its weights at its first long pass.
        e.embed(&texts[..32.min(texts.len())]).expect("embeds");
        let t = Instant::now();
        for batch in texts.chunks(32) {
            e.embed(batch).expect("embeds");
        }
        let rate = texts.len() as f64 / t.elapsed().as_secs_f64();
        println!("  {name:<12} {rate:>8.0} texts/s");
    }
}

/// Texts embedded to measure each embedder's speed.
const SPEED_TEXTS: usize = 512;

/// The quality guards (#27), on the R@5 of variants that ran: MiniLM's
/// int8 path keeps dense within 0.01 and hybrid within 0.005 of the exact
/// f32 vectors; the static model, offered for bulk imports, keeps hybrid
/// within 0.01 of MiniLM's. Prints each; whether all hold.
fn guards(r5: &HashMap<&str, f64>) -> bool {
    let checks = [
        ("dense, MiniLM int8", "dense (header + prompt)", 0.01),
        ("hybrid, MiniLM int8", "hybrid (default)", 0.005),
        (
            "hybrid, static (distilled from MiniLM)",
            "hybrid (default)",
            0.01,
        ),
    ];
    let mut held = true;
    println!();
    for (variant, reference, within) in checks {
        let (Some(v), Some(r)) = (r5.get(variant), r5.get(reference)) else {
            continue;
        };
        let ok = (v - r).abs() <= within + 1e-9;
        held &= ok;
        println!(
            "guard: {variant} R@5 {v:.3} against {reference} {r:.3}: {:+.3} ({} ±{within})",
            v - r,
            if ok { "within" } else { "OUTSIDE" }
        );
    }
    held
}

/// The LoCoMo file (`CHATMILL_LOCOMO`, else the shared corpus), parsed.
fn load() -> Value {
    let path = std::env::var_os("CHATMILL_LOCOMO").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/corpus/locomo/locomo10.json")
        },
        PathBuf::from,
    );
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| {
            panic!("cannot read {}: {e} (set CHATMILL_LOCOMO)", path.display())
        }),
    )
    .expect("locomo10.json is JSON")
}

/// Import: chunk + header every session through the pipeline, each sample
/// as its own agent under `work`; and the questions to ask.
fn import(data: &Value, work: &Path) -> Imported {
    let mut imported = Imported {
        records: Vec::new(),
        holds: HashMap::new(),
        owner: HashMap::new(),
        questions: Vec::new(),
    };
    for sample in data.as_array().expect("a list of samples") {
        let sid = sample["sample_id"].as_str().unwrap_or("conv").to_string();
        let last = import_sample(sample, &sid, work, &mut imported);
        imported.questions.extend(questions(sample, &sid, last));
    }
    imported
}

/// One sample's sessions through the pipeline into `imported`: the time
/// of its last session.
fn import_sample(sample: &Value, sid: &str, work: &Path, imported: &mut Imported) -> Option<i64> {
    let header = ExtractiveWriter;
    let cfg = ProcessorConfig {
        naming: Naming::ChunkId,
        out_dir: work.join(sid),
        agent_id: sid.to_string(),
        render: Default::default(),
        chunker: Default::default(),
        redaction: None,
    };
    std::fs::create_dir_all(&cfg.out_dir).expect("out dir");
    let mut manifest = Manifest::new();
    let mut processor = Processor::new(cfg, &header, &manifest);
    let mut last: Option<i64> = None;
    // LOCOMO_REDACT=1: each session through the import's redaction step
    // first, to show it leaves retrieval as it was.
    let redactor = std::env::var_os("LOCOMO_REDACT").map(|_| {
        let key = chatmill_redact::Key::from_bytes([1; 32]);
        chatmill_redact::Redactor::new(key, &Default::default()).expect("rules compile")
    });
    for (mut conv, dia) in conversations(sample) {
        if let Some(r) = &redactor {
            let done = chatmill_pipeline::redaction::conversation(r, &mut conv);
            let n: u32 = done.since(0).values().sum();
            if n > 0 {
                println!("{sid} {}: {n} redacted {:?}", conv.id, done.since(0));
            }
        }
        last = last.max(conv.created.map(|t| t.timestamp()));
        let outcome = processor
            .process(&conv, "locomo10.json", Utc::now(), &mut manifest)
            .expect("the pipeline takes every session");
        for w in outcome.written {
            let (a, b) = pair_range(&w.record.meta.turn_range);
            let ids = (a..=b)
                .flat_map(|i| dia.get(&i).cloned().unwrap_or_default())
                .collect();
            imported.holds.insert(w.chunk_id.clone(), ids);
            imported.owner.insert(w.chunk_id.clone(), sid.to_string());
            imported.records.push(w.record);
        }
    }
    last
}

/// A sample's questions of categories 1–4 that name their evidence, asked
/// at the end of the day of its last session (`last`).
fn questions(sample: &Value, sid: &str, last: Option<i64>) -> Vec<Question> {
    let mut out = Vec::new();
    for q in sample["qa"].as_array().into_iter().flatten() {
        let category = q["category"].as_u64().unwrap_or(0);
        let evidence = evidence_ids(&q["evidence"]);
        if !(1..=4).contains(&category) || evidence.is_empty() {
            continue;
        }
        out.push(Question {
            sample: sid.to_string(),
            asked: last.map(|t| t - t.rem_euclid(86_400) + 86_399),
            text: q["question"].as_str().unwrap_or_default().to_string(),
            evidence,
            category,
        });
    }
    out
}

/// An index named `name` under `work` of `records`, embedding `text` of
/// each with `embedder`.
fn build(
    work: &Path,
    records: &[ChunkRecord],
    name: &str,
    embedder: Arc<dyn Embedder>,
    text: Text,
) -> Arc<Index> {
    let t = Instant::now();
    let store = SqliteStore::open(&work.join(format!("{name}.sqlite3"))).expect("store");
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
}

/// The four indexes, and the search modes measured on each.
/// A variant: its name, mode, index name, embedder and the text embedded.
type Spec<'a> = (&'static str, Mode, &'a str, &'a Arc<dyn Embedder>, Text);

fn variants(work: &Path, records: &[ChunkRecord], embedders: &Embedders) -> Vec<Variant> {
    let specs: [Spec<'_>; 11] = [
        (
            "hybrid (default)",
            Mode::Hybrid,
            "header+prompt",
            &embedders.exact,
            Text::HeaderPrompt,
        ),
        (
            "dense (header + prompt)",
            Mode::Semantic,
            "header+prompt",
            &embedders.exact,
            Text::HeaderPrompt,
        ),
        (
            "BM25",
            Mode::Keyword,
            "header+prompt",
            &embedders.exact,
            Text::HeaderPrompt,
        ),
        (
            "dense (full text)",
            Mode::Semantic,
            "full-text",
            &embedders.exact,
            Text::Full,
        ),
        (
            "hybrid (full text)",
            Mode::Hybrid,
            "full-text",
            &embedders.exact,
            Text::Full,
        ),
        (
            "dense (user prompt, no header)",
            Mode::Semantic,
            "prompt-only",
            &embedders.exact,
            Text::PromptOnly,
        ),
        (
            "hybrid, lexical stand-in",
            Mode::Hybrid,
            "lexical",
            &embedders.lexical,
            Text::HeaderPrompt,
        ),
        (
            "hybrid, MiniLM int8",
            Mode::Hybrid,
            "int8",
            &embedders.int8,
            Text::HeaderPrompt,
        ),
        (
            "hybrid, static (distilled from MiniLM)",
            Mode::Hybrid,
            "static",
            &embedders.static_model,
            Text::HeaderPrompt,
        ),
        (
            "dense, static (distilled from MiniLM)",
            Mode::Semantic,
            "static",
            &embedders.static_model,
            Text::HeaderPrompt,
        ),
        (
            "dense, MiniLM int8",
            Mode::Semantic,
            "int8",
            &embedders.int8,
            Text::HeaderPrompt,
        ),
    ];
    let mut built: HashMap<&str, Arc<Index>> = HashMap::new();
    specs
        .into_iter()
        .filter(|(name, ..)| wanted(name))
        .map(|(name, mode, index, embedder, text)| {
            let index = built
                .entry(index)
                .or_insert_with(|| build(work, records, index, embedder.clone(), text))
                .clone();
            Variant { name, mode, index }
        })
        .collect()
}

/// Whether `CHATMILL_LOCOMO_ONLY` (comma-separated parts of names) lets
/// variant `name` run (all when unset).
fn wanted(name: &str) -> bool {
    let only = std::env::var("CHATMILL_LOCOMO_ONLY").unwrap_or_default();
    only.is_empty() || only.split(',').any(|part| name.contains(part))
}

/// The embedders the variants use: MiniLM exact f32 (the reference) and
/// int8 (the fast path on VNNI CPUs), each behind its own cache, and the
/// lexical stand-in.
struct Embedders {
    exact: Arc<dyn Embedder>,
    int8: Arc<dyn Embedder>,
    static_model: Arc<dyn Embedder>,
    lexical: Arc<dyn Embedder>,
}

impl Embedders {
    fn load(model_dir: &Path) -> Self {
        let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
        // The two precisions share the model's id: separate caches keep
        // their vectors apart.
        let cached = |precision, file: &str| -> Arc<dyn Embedder> {
            let model = MiniLm::load_with(model_dir, precision).expect("model loads");
            Arc::new(Cached::open(model, &target.join(file)).expect("cache opens"))
        };
        Self {
            exact: cached(Precision::Exact, "locomo-embeddings.sqlite3"),
            int8: cached(Precision::Fast, "locomo-embeddings-int8.sqlite3"),
            static_model: Arc::new(StaticModel::load(model_dir).expect("static model")),
            lexical: Arc::new(Lexical::default()),
        }
    }
}

/// Asks every question of every variant (`CHATMILL_LOCOMO_ONLY=text`: only
/// those whose name has it) and prints a table of recall at each of
/// [`KS`]: hybrid (default)'s R@5 per category (sum, count).
/// Also returns each variant's R@5.
fn measure(
    variants: &[Variant],
    imported: &Imported,
) -> (BTreeMap<u64, [f64; 4]>, HashMap<&'static str, f64>) {
    println!();
    println!("| variant | R@1 | R@5 | R@10 | ms/query |");
    println!("|---|---|---|---|---|");
    let mut by_category: BTreeMap<u64, [f64; 4]> = BTreeMap::new();
    // CHATMILL_LOCOMO_SHOW=N prints the first N questions hybrid misses at k = 5.
    let mut show: usize = std::env::var("CHATMILL_LOCOMO_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let questions = &imported.questions;
    let mut r5 = HashMap::new();
    for v in variants {
        let t = Instant::now();
        let mut sums = [0.0f64; 3];
        for q in questions {
            let hits = v.index.search(&request(v, q)).expect("search").hits;
            for (slot, &k) in sums.iter_mut().zip(&KS) {
                let r = recall(&hits, q, k, &imported.holds);
                *slot += r;
                if v.name == "hybrid (default)" && k == 5 && r < 1.0 && show > 0 {
                    show -= 1;
                    print_miss(q, &hits, imported);
                }
                if v.name == "hybrid (default)" && k == 5 {
                    let c = by_category.entry(q.category).or_default();
                    c[0] += r;
                    c[3] += 1.0;
                }
            }
        }
        let n = questions.len() as f64;
        r5.insert(v.name, sums[1] / n);
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.1} |",
            v.name,
            sums[0] / n,
            sums[1] / n,
            sums[2] / n,
            t.elapsed().as_secs_f64() * 1000.0 / n
        );
    }
    (by_category, r5)
}

/// The search for question `q` in variant `v`: its top 10, within its
/// sample.
fn request(v: &Variant, q: &Question) -> SearchRequest {
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
    req
}

/// The share of `q`'s evidence turns held by the top `k` hits.
fn recall(hits: &[Hit], q: &Question, k: usize, holds: &HashMap<String, Vec<String>>) -> f64 {
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
    hit as f64 / q.evidence.len() as f64
}

/// A missed question: its top three hits, and the chunks that hold its
/// evidence.
fn print_miss(q: &Question, hits: &[Hit], imported: &Imported) {
    let holds = &imported.holds;
    let embed_text = |id: &str| {
        imported
            .records
            .iter()
            .find(|r| r.chunk_id == id)
            .map_or(String::new(), |r| r.embed_text.replace('\n', " / "))
    };
    println!(
        "\nMISS [{}] {} evidence {:?}",
        q.category, q.text, q.evidence
    );
    for h in hits.iter().take(3) {
        println!(
            "  got {:?}: {}",
            holds.get(&h.chunk_id),
            embed_text(&h.chunk_id)
        );
    }
    for (id, ids) in holds {
        // Dialog ids repeat across samples: only this one's.
        if imported.owner.get(id) == Some(&q.sample) && ids.iter().any(|d| q.evidence.contains(d)) {
            println!("  WANT {ids:?}: {}", embed_text(id));
        }
    }
}

/// hybrid (default)'s R@5 per question category, and what the units are.
fn print_categories(by_category: &BTreeMap<u64, [f64; 4]>) {
    println!();
    println!("hybrid (default) R@5 by category:");
    for (c, v) in by_category {
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
