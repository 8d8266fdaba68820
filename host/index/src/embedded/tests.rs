//! The embedded store's tests: its writes, searches and upgrades.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, params};

use super::keyword::{AUTOMERGE, fts_query, tune_merges};
use super::keyword_search::SCOPE_TINY;
use super::to_blob;
use super::vectors::dot;
use super::*;
use crate::{ChunkMeta, Embedder, Index, Indexer, Lexical, Mode, SearchRequest};

pub(crate) fn rec(id: &str, ts: i64, platform: &str, agent: &str, text: &str) -> ChunkRecord {
    ChunkRecord {
        chunk_id: id.into(),
        embed_text: text.into(),
        document: format!("---\nchunk_id: {id}\n---\n\n{text}\n"),
        meta: ChunkMeta {
            timestamp: ts,
            platform: platform.into(),
            agent_id: agent.into(),
            conversation_id: format!("conv-{id}"),
            project: None,
            title: Some(format!("Title {id}")),
            topics: vec!["t".into()],
            model: "m".into(),
            turn_range: "1".into(),
            source_file: "f.json".into(),
            path: format!("{id}.md"),
        },
    }
}

pub(crate) fn index(dir: &Path) -> Index {
    let store = SqliteStore::open(&dir.join("index.sqlite3")).unwrap();
    Index::new(Arc::new(store), Arc::new(Lexical::default()))
}

/// The chunks a keyword search for `text` finds, sorted.
pub(crate) fn keyword_ids(ix: &Index, text: &str) -> Vec<String> {
    let mut q = SearchRequest::new(text);
    q.mode = Mode::Keyword;
    let mut v: Vec<String> = ix
        .search(&q)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.chunk_id)
        .collect();
    v.sort();
    v
}

fn ids(r: &crate::SearchResults) -> Vec<&str> {
    r.hits.iter().map(|h| h.chunk_id.as_str()).collect()
}

#[test]
fn within_a_scope_the_exchanges_next_to_a_match_become_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let ix = index(dir.path());
    let turn = |id: &str, conv: &str, pair: &str, text: &str| {
        let mut r = rec(id, 1, "local", "carol", text);
        r.meta.conversation_id = conv.into();
        r.meta.turn_range = pair.into();
        r
    };
    ix.index(&[
        // Stored out of order: neighbours come from the turn ranges.
        turn("t3", "trip", "3", "I booked the flight for May then."),
        turn("t1", "trip", "1", "Any ideas for a spring holiday?"),
        turn(
            "t2",
            "trip",
            "2",
            "What about Lisbon and its painted tiles?",
        ),
        turn("t4", "trip", "4-5", "Packing list: sandals, charger."),
        // Pair 1 of another conversation: not a neighbour of t2.
        turn("o1", "dentist", "1", "Booked a dentist appointment."),
        turn("o2", "dentist", "2", "Moved it to Friday."),
    ])
    .unwrap();
    let mut q = SearchRequest::new("Lisbon tiles");
    q.mode = Mode::Keyword;
    q.filter.agent_id = Some("carol".into());
    let r = ix.search(&q).unwrap();
    let got = ids(&r);
    assert_eq!(got[0], "t2", "{got:?}");
    let mut rest = got[1..].to_vec();
    rest.sort();
    assert_eq!(rest, ["t1", "t3"], "only t2's neighbours: {got:?}");
    assert!(r.hits[1].score < r.hits[0].score);
}

#[test]
fn a_word_in_most_of_the_searched_scope_does_not_outrank_the_rare_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ix = index(dir.path());
    let mut recs = vec![
        rec("a1", 1, "local", "alice", "Awesome, Melanie!"),
        rec("a2", 2, "local", "alice", "Yep, Melanie!"),
        rec("a3", 3, "local", "alice", "Melanie, hi there!"),
        rec(
            "a4",
            4,
            "local",
            "alice",
            "Melanie, that is great news about the new job offer and the move.",
        ),
        rec(
            "a5",
            5,
            "local",
            "alice",
            "I have been running farther every week to destress; long runs clear my head and help me sleep.",
        ),
    ];
    for i in 0..30 {
        recs.push(rec(
            &format!("b{i}"),
            10 + i,
            "local",
            "bob",
            &format!("notes on gardening tomatoes, week {i}"),
        ));
    }
    ix.index(&recs).unwrap();
    // "melanie" is rare in the index (so FTS5 weighs it high) but in four
    // of alice's five chunks: within her memory it says nothing.
    let mut q = SearchRequest::new("What does Melanie do to destress?");
    q.mode = Mode::Keyword;
    q.filter.agent_id = Some("alice".into());
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a5"]);
    // The word rare in the scope decides.
    let mut q = SearchRequest::new("Melanie news");
    q.mode = Mode::Keyword;
    q.filter.agent_id = Some("alice".into());
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a4"]);

    // The same in a scope past `SCOPE_TINY` (joined, not handed over
    // as rowids).
    let more: Vec<ChunkRecord> = (0..SCOPE_TINY)
        .map(|i| {
            rec(
                &format!("m{i}"),
                100 + i,
                "local",
                "alice",
                "Melanie, see you soon!",
            )
        })
        .collect();
    ix.index(&more).unwrap();
    let mut q = SearchRequest::new("What does Melanie do to destress?");
    q.mode = Mode::Keyword;
    q.filter.agent_id = Some("alice".into());
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a5"]);
    // Every word common in the scope: the rarer one is kept.
    let mut q = SearchRequest::new("Melanie soon");
    q.mode = Mode::Keyword;
    q.filter.agent_id = Some("alice".into());
    q.k = 100;
    let hits = ix.search(&q).unwrap();
    assert_eq!(hits.hits.len(), SCOPE_TINY as usize, "{:?}", ids(&hits));
    assert!(ids(&hits).iter().all(|id| id.starts_with('m')));
}

#[test]
fn own_writes_update_the_vectors_in_place_and_anothers_make_them_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    let mine = Arc::new(SqliteStore::open(&path).unwrap());
    let embedder = Arc::new(Lexical::default());
    let ix = Index::new(Arc::clone(&mine) as Arc<dyn Store>, embedder.clone());
    let semantic = |text: &str| {
        let mut q = SearchRequest::new(text);
        q.mode = Mode::Semantic;
        q.k = 1;
        // The best hit, if it shares anything with the query.
        ix.search(&q)
            .unwrap()
            .hits
            .into_iter()
            .filter(|h| h.score > 0.1)
            .map(|h| h.chunk_id)
            .collect::<Vec<_>>()
    };
    let loads = || mine.loads.load(std::sync::atomic::Ordering::Relaxed);
    ix.index(&[
        rec("a", 1, "local", "u", "nginx returns 504 on long uploads"),
        rec(
            "b",
            2,
            "local",
            "u",
            "sourdough starter smells like acetone",
        ),
    ])
    .unwrap();
    assert_eq!(semantic("sourdough starter"), ["b"]);
    assert_eq!(loads(), 1);

    // This store's writes, new and replacing, reach the loaded vectors
    // without a reload.
    ix.index(&[rec("c", 3, "local", "u", "kubernetes liveness probe flaps")])
        .unwrap();
    assert_eq!(semantic("kubernetes probe"), ["c"]);
    ix.index(&[rec("b", 2, "local", "u", "tomato seedlings in april")])
        .unwrap();
    assert_eq!(semantic("tomato seedlings"), ["b"]);
    assert!(semantic("sourdough starter acetone").is_empty());
    assert_eq!(loads(), 1);

    // Another process writes into the same file: the next search sees it.
    let other = Index::new(Arc::new(SqliteStore::open(&path).unwrap()), embedder);
    other
        .index(&[rec("d", 4, "local", "u", "espresso grinder burr alignment")])
        .unwrap();
    assert_eq!(semantic("espresso grinder"), ["d"]);
    assert_eq!(loads(), 2);
    other.remove(&["d".to_string()]).unwrap();
    assert!(semantic("espresso grinder").is_empty());
    assert_eq!(loads(), 3);
    // Nothing written since: no reload.
    assert_eq!(semantic("kubernetes probe"), ["c"]);
    assert_eq!(loads(), 3);
}

#[test]
fn keyword_scores_stay_fts5s_bm25_through_own_and_anothers_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    let embedder = Arc::new(Lexical::default());
    let ix = Index::new(
        Arc::new(SqliteStore::open(&path).unwrap()),
        embedder.clone(),
    );
    let other = Index::new(Arc::new(SqliteStore::open(&path).unwrap()), embedder);
    let raw = Connection::open(&path).unwrap();
    raw.execute(
        "ATTACH DATABASE ?1 AS kw",
        [keyword_file::path_for(&path).to_string_lossy()],
    )
    .unwrap();
    let check = |when: &str| {
        let mut q = SearchRequest::new("nginx proxy timeout");
        q.mode = Mode::Keyword;
        let ours: Vec<(String, f32)> = ix
            .search(&q)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| (h.chunk_id, h.score))
            .collect();
        let mut st = raw
            .prepare(
                "SELECT c.chunk_id, -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                 WHERE chunks_fts MATCH '\"nginx\" OR \"proxy\" OR \"timeout\"' ORDER BY bm25(chunks_fts)",
            )
            .unwrap();
        let theirs: Vec<(String, f32)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, f64>(1)? as f32)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{when}: {ours:?} {theirs:?}");
        for ((a, x), (b, y)) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{when}");
            assert!((x - y).abs() < 1e-5, "{when}: {a} {x} vs {y}");
        }
    };
    ix.index(&[
        rec("a", 1, "local", "u", "nginx returns 504 behind the proxy"),
        rec("b", 2, "local", "u", "proxy timeout for websockets"),
        rec("c", 3, "local", "u", "sourdough starter"),
    ])
    .unwrap();
    check("first search");
    // This store replaces a document with a much longer one.
    ix.index(&[rec(
        "a",
        1,
        "local",
        "u",
        "nginx returns 504 behind the proxy, and here is a much longer story about it with many more words than before",
    )])
    .unwrap();
    check("after this store's write");
    // Another store replaces one and adds one.
    other
        .index(&[
            rec("b", 2, "local", "u", "timeout"),
            rec("d", 4, "local", "u", "nginx nginx proxy"),
        ])
        .unwrap();
    check("after another store's write");
}

#[test]
fn the_merge_policy_is_set_on_new_and_older_stores_and_rewritten_only_if_it_differs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    let automerge = |c: &Connection| -> i64 {
        c.query_row(
            "SELECT v FROM chunks_fts_config WHERE k = 'automerge'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(automerge(&store.conn()), AUTOMERGE);
        // A store without the policy (as earlier chatmill versions made
        // them): FTS5's default.
        store
            .conn()
            .execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 4)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = store.conn();
    assert_eq!(automerge(&conn), AUTOMERGE);
    let before = conn.total_changes();
    tune_merges(&conn).unwrap();
    assert_eq!(
        conn.total_changes(),
        before,
        "an already tuned store is not written"
    );
}

#[test]
fn the_keyword_index_matches_the_chunks_through_replaces_repeats_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    // An index from a version that kept the keyword index with triggers.
    {
        let old = SqliteStore::open(&path).unwrap();
        old.conn()
            .execute_batch(
                "CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                   INSERT INTO chunks_fts(rowid, document) VALUES (new.id, new.document);
                 END;",
            )
            .unwrap();
    }
    let ix = index(dir.path());
    let integrity = || {
        // FTS5's own check of its structure (a contentless index has no
        // content to hold it against), and its rows are the chunks'.
        let store = SqliteStore::open(&path).unwrap();
        let conn = store.conn();
        conn.execute(
            "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
        let rows = |sql: &str| -> Vec<i64> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            rows("SELECT rowid FROM chunks_fts ORDER BY rowid"),
            rows("SELECT id FROM chunks ORDER BY id")
        );
    };
    let found = |text: &str| keyword_ids(&ix, text);
    ix.index(&[
        rec("a", 1, "local", "u", "alpha nginx"),
        rec("b", 2, "local", "u", "bravo sourdough"),
        rec("c", 3, "local", "u", "charlie kubernetes"),
    ])
    .unwrap();
    integrity();
    // Same text (metadata only), new text, and one id twice in a batch.
    ix.index(&[
        rec("a", 10, "local", "u", "alpha nginx"),
        rec("b", 2, "local", "u", "bravo tomatoes"),
        rec("d", 4, "local", "u", "delta espresso"),
        rec("d", 4, "local", "u", "delta grinder"),
    ])
    .unwrap();
    integrity();
    assert_eq!(found("nginx"), ["a"]);
    assert!(found("sourdough").is_empty());
    assert_eq!(found("tomatoes"), ["b"]);
    assert!(found("espresso").is_empty());
    assert_eq!(found("grinder"), ["d"]);
    ix.remove(&["c".to_string(), "nope".to_string()]).unwrap();
    integrity();
    assert!(found("kubernetes").is_empty());
    assert_eq!(ix.count().unwrap(), 3);
}

#[test]
fn upsert_search_filter_delete_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let ix = index(dir.path());
    // Cold start: nothing, no error.
    assert!(
        ix.search(&SearchRequest::new("anything"))
            .unwrap()
            .hits
            .is_empty()
    );
    ix.index(&[
        rec(
            "a",
            100,
            "chatgpt",
            "external",
            "nginx returns 504 on long uploads",
        ),
        rec(
            "b",
            200,
            "claude",
            "external",
            "sourdough starter smells like acetone",
        ),
        rec(
            "c",
            300,
            "local",
            "user",
            "nginx websocket proxy timeout settings",
        ),
    ])
    .unwrap();
    assert_eq!(ix.count().unwrap(), 3);

    let r = ix.search(&SearchRequest::new("nginx timeout")).unwrap();
    assert_eq!(&ids(&r)[..2], ["c", "a"], "{r:#?}");
    assert!(r.warnings[0].contains("lexical"), "{:?}", r.warnings);

    let mut q = SearchRequest::new("nginx");
    q.filter.platform = Some("chatgpt".into());
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
    q.filter = Filter {
        agent_id: Some("user".into()),
        ..Filter::default()
    };
    q.mode = Mode::Semantic;
    assert_eq!(ids(&ix.search(&q).unwrap()), ["c"]);

    let mut recent = SearchRequest::new("");
    recent.mode = Mode::Recent;
    assert_eq!(ids(&ix.search(&recent).unwrap()), ["c", "b", "a"]);
    recent.filter.until = Some(250);
    recent.filter.since = Some(150);
    assert_eq!(ids(&ix.search(&recent).unwrap()), ["b"]);

    // Replace (same id): FTS and vectors follow.
    ix.index(&[rec("a", 100, "chatgpt", "external", "banana bread recipe")])
        .unwrap();
    let mut kw = SearchRequest::new("nginx");
    kw.mode = Mode::Keyword;
    assert_eq!(ids(&ix.search(&kw).unwrap()), ["c"]);
    kw.queries[0].text = "banana".into();
    assert_eq!(ids(&ix.search(&kw).unwrap()), ["a"]);
    assert_eq!(ix.count().unwrap(), 3);

    ix.remove(&["c".to_string()]).unwrap();
    kw.queries[0].text = "nginx".into();
    assert!(ix.search(&kw).unwrap().hits.is_empty());
    drop(ix);
    let ix = index(dir.path());
    assert_eq!(
        ix.ids().unwrap().into_iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
}

#[test]
fn keyword_search_survives_any_text_and_multi_query_dedups() {
    let dir = tempfile::tempdir().unwrap();
    let ix = index(dir.path());
    ix.index(&[
        rec(
            "a",
            1,
            "chatgpt",
            "x",
            "C++ templates: SFINAE and \"concepts\"",
        ),
        rec("b", 2, "chatgpt", "x", "python asyncio event loop"),
    ])
    .unwrap();
    for nasty in [
        "\"unbalanced",
        "a* OR (b",
        "-x:y",
        "NEAR(",
        "'; DROP TABLE chunks;--",
        "🙂",
    ] {
        let mut q = SearchRequest::new(nasty);
        q.mode = Mode::Keyword;
        ix.search(&q).unwrap();
        q.mode = Mode::Hybrid;
        ix.search(&q).unwrap();
    }
    let mut q = SearchRequest::new("concepts templates");
    q.queries.push(crate::WeightedQuery {
        text: "C++ SFINAE".into(),
        weight: 0.5,
    });
    let r = ix.search(&q).unwrap();
    assert_eq!(ids(&r)[0], "a");
    let unique: BTreeSet<&str> = ids(&r).into_iter().collect();
    assert_eq!(unique.len(), r.hits.len(), "deduplicated by chunk id");
}

#[test]
fn keyword_search_stems_and_drops_function_words() {
    assert_eq!(
        fts_query("When did she go to the park?").as_deref(),
        Some("\"go\" OR \"park\"")
    );
    // Nothing but function words: they are the query.
    assert_eq!(
        fts_query("what is it").as_deref(),
        Some("\"what\" OR \"is\" OR \"it\"")
    );
    assert_eq!(fts_query("  ?! "), None);

    let dir = tempfile::tempdir().unwrap();
    let ix = index(dir.path());
    ix.index(&[
        rec("a", 1, "local", "x", "I painted a sunrise over the lake"),
        rec("b", 2, "local", "x", "the borrow checker rejects my loop"),
    ])
    .unwrap();
    let mut q = SearchRequest::new("what was she painting?");
    q.mode = Mode::Keyword;
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
}

#[test]
fn the_int8_scan_with_rescoring_ranks_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("index.sqlite3")).unwrap();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    let unit = |v: Vec<f32>| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let dim = 48;
    let n = 3000;
    let vectors: Vec<Vec<f32>> = (0..n)
        .map(|_| unit((0..dim).map(|_| rnd()).collect()))
        .collect();
    let records: Vec<ChunkRecord> = (0..n)
        .map(|i| rec(&format!("c{i:04}"), i as i64, "local", "x", "t"))
        .collect();
    store.upsert(&records, &vectors, "test").unwrap();
    for _ in 0..20 {
        let q = unit((0..dim).map(|_| rnd()).collect());
        let mut exact: Vec<(usize, f32)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (i, dot(v, &q)))
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let want: Vec<String> = exact[..10]
            .iter()
            .map(|(i, _)| format!("c{i:04}"))
            .collect();
        let got: Vec<String> = store
            .knn(&q, 10, &Filter::default())
            .unwrap()
            .into_iter()
            .map(|h| h.chunk_id)
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn a_store_that_kept_its_documents_is_made_contentless_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    // What a store made by an earlier chatmill looks like: the documents
    // in the chunks table, a keyword index that reads them (and did not
    // stem words), kept by a trigger.
    let old = rec("a", 1, "local", "x", "painting sunrises by the lake");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('generation', '3'), ('dim', '384'), ('model', 'lexical-hash-v1-384');
             CREATE TABLE chunks (id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, timestamp INTEGER NOT NULL,
               platform TEXT NOT NULL, agent_id TEXT NOT NULL, conversation_id TEXT NOT NULL, title TEXT,
               topics TEXT NOT NULL, model TEXT NOT NULL, turn_range TEXT NOT NULL, source_file TEXT NOT NULL,
               path TEXT NOT NULL, document TEXT NOT NULL, embedding BLOB NOT NULL);
             CREATE INDEX chunks_timestamp ON chunks(timestamp);
             CREATE VIRTUAL TABLE chunks_fts USING fts5(document, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
             CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
               INSERT INTO chunks_fts(rowid, document) VALUES (new.id, new.document);
             END;",
        )
        .unwrap();
        let v = Lexical::default()
            .embed(&[old.embed_text.as_str()])
            .unwrap();
        let m = &old.meta;
        conn.execute(
            "INSERT INTO chunks (chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, document, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, '[]', ?7, ?8, ?9, ?10, ?11, ?12)",
            params![old.chunk_id, m.timestamp, m.platform, m.agent_id, m.conversation_id, m.title, m.model, m.turn_range, m.source_file, m.path, old.document, to_blob(&v[0])],
        )
        .unwrap();
    }
    let ix = index(dir.path());
    let columns: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT name FROM pragma_table_info('chunks')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!columns.iter().any(|c| c == "document"), "{columns:?}");
    let free: i64 = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0, "the documents' pages are given back");
    // The old document is found, stemmed, and by meaning.
    let mut q = SearchRequest::new("painted sunrise");
    q.mode = Mode::Keyword;
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
    q.mode = Mode::Semantic;
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
    // New writes and replaces reach the keyword index; opening again
    // changes nothing.
    drop(ix);
    let ix = index(dir.path());
    ix.index(&[
        rec("b", 2, "local", "x", "baking bread"),
        rec("a", 1, "local", "x", "rowing at dawn"),
    ])
    .unwrap();
    q.mode = Mode::Keyword;
    q.queries[0].text = "baked".into();
    assert_eq!(ids(&ix.search(&q).unwrap()), ["b"]);
    q.queries[0].text = "painted".into();
    assert!(ids(&ix.search(&q).unwrap()).is_empty());
    q.queries[0].text = "rowed".into();
    assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
}

#[test]
fn hits_take_their_text_from_their_chunk_files_and_a_missing_one_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let file = "---\nchunk_id: a\n---\n\n## Context\n\nnginx returns 504\n";
    std::fs::write(dir.path().join("a.md"), file).unwrap();
    let mut a = rec("a", 1, "local", "x", "nginx returns 504");
    a.document = crate::document::compose(a.meta.title.as_deref(), &a.meta.topics, file);
    index(dir.path())
        .index(&[a.clone(), rec("b", 2, "local", "x", "nginx proxy settings")])
        .unwrap();
    let ix = index(dir.path()).with_documents(dir.path());
    for mode in [Mode::Keyword, Mode::Semantic, Mode::Hybrid, Mode::Recent] {
        let mut q = SearchRequest::new("nginx 504");
        q.mode = mode;
        let r = ix.search(&q).unwrap();
        let hit = r.hits.iter().find(|h| h.chunk_id == "a").unwrap();
        assert_eq!(hit.document, a.document, "{mode:?}");
        assert!(
            hit.document
                .starts_with("# Title a\nTopics: t\n\n## Context")
        );
        // `b.md` was never written: its hit has no text, and says why.
        let b = r.hits.iter().find(|h| h.chunk_id == "b").unwrap();
        assert!(b.document.is_empty(), "{mode:?}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("`b.md`") && w.contains("verify --repair")),
            "{mode:?}: {:?}",
            r.warnings
        );
    }
    // Without a root, the store's hits carry no text.
    let r = index(dir.path())
        .search(&SearchRequest::new("nginx"))
        .unwrap();
    assert!(r.hits.iter().all(|h| h.document.is_empty()));
}

#[test]
fn a_store_another_process_holds_is_busy_not_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    let holder = Connection::open(&path).unwrap();
    holder
        .execute_batch("PRAGMA journal_mode = WAL; BEGIN EXCLUSIVE; CREATE TABLE held (x);")
        .unwrap();
    let Err(e) = SqliteStore::open(&path) else {
        panic!("opened a store another connection holds for writing");
    };
    let IndexError::Store {
        message,
        hint,
        retryable,
        ..
    } = &e
    else {
        panic!("{e}");
    };
    assert!(message.contains("busy"), "{message}");
    assert!(!message.contains("not a usable"), "{message}");
    assert!(hint.as_deref().unwrap().contains("again in a moment"));
    assert!(retryable);
    holder.execute_batch("ROLLBACK;").unwrap();
    SqliteStore::open(&path).unwrap();
}

#[test]
fn new_stores_take_8_kib_pages_and_older_ones_keep_theirs() {
    let page_size = |path: &Path| -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    index(dir.path())
        .index(&[rec("a", 1, "local", "x", "nginx timeout")])
        .unwrap();
    assert_eq!(page_size(&path), 8192);

    // A store an earlier chatmill made, with SQLite's 4 KiB pages.
    let old = tempfile::tempdir().unwrap();
    let old_path = old.path().join("index.sqlite3");
    Connection::open(&old_path)
        .unwrap()
        .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        .unwrap();
    assert_eq!(page_size(&old_path), 4096);
    let ix = index(old.path());
    ix.index(&[rec("b", 2, "local", "x", "sourdough starter")])
        .unwrap();
    assert_eq!(page_size(&old_path), 4096);
    let mut q = SearchRequest::new("sourdough");
    q.mode = Mode::Keyword;
    assert_eq!(ids(&ix.search(&q).unwrap()), ["b"]);
}

#[test]
fn a_different_dimension_is_refused_and_a_broken_file_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("i.sqlite3")).unwrap());
    let ix = Index::new(store.clone(), Arc::new(Lexical::new(64)));
    ix.index(&[rec("a", 1, "p", "x", "hello world")]).unwrap();
    let other = Index::new(store, Arc::new(Lexical::new(32)));
    let e = other.index(&[rec("b", 1, "p", "x", "hi")]).unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::DimensionMismatch {
                found: 64,
                dim: 32,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.hint().unwrap().contains("reindex"));

    let bad = dir.path().join("bad.sqlite3");
    std::fs::write(&bad, b"this is not a database, just some text").unwrap();
    let e = SqliteStore::open(&bad).err().unwrap();
    assert!(e.hint().unwrap().contains("reindex"), "{e}");

    // A broken keyword file beside a good store: said, and what to do.
    let good = dir.path().join("good.sqlite3");
    drop(SqliteStore::open(&good).unwrap());
    let keywords = keyword_file::path_for(&good);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", keywords.display()));
    }
    std::fs::write(&keywords, b"this is not a database either").unwrap();
    let e = SqliteStore::open(&good).err().unwrap();
    assert!(e.to_string().contains("keyword index"), "{e}");
    assert!(e.hint().unwrap().contains("move"), "{e}");
}

#[test]
fn reads_while_writing_from_other_threads() {
    let dir = tempfile::tempdir().unwrap();
    let ix = Arc::new(index(dir.path()));
    ix.index(&[rec("seed", 0, "p", "x", "seed text")]).unwrap();
    std::thread::scope(|s| {
        let w = Arc::clone(&ix);
        s.spawn(move || {
            for i in 0..200 {
                w.index(&[rec(
                    &format!("r{i}"),
                    i,
                    "p",
                    "x",
                    &format!("record number {i}"),
                )])
                .unwrap();
            }
        });
        for _ in 0..2 {
            let r = Arc::clone(&ix);
            s.spawn(move || {
                for _ in 0..100 {
                    let hits = r.search(&SearchRequest::new("record number")).unwrap();
                    assert!(hits.hits.len() <= 10);
                }
            });
        }
    });
    assert_eq!(ix.count().unwrap(), 201);
    let e: &dyn Embedder = ix.embedder.as_ref();
    assert_eq!(e.dim(), 384);
}

#[test]
fn project_scopes_every_search_and_an_older_store_learns_it_from_a_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite3");
    let in_project = |id: &str, project: Option<&str>, text: &str| {
        let mut r = rec(id, 1, "claude-code", "external", text);
        r.meta.project = project.map(str::to_string);
        r
    };
    let records = [
        in_project("a", Some("bakery"), "tuning the oven timer code"),
        in_project("b", Some("garden"), "tuning the sprinkler timer code"),
        in_project("c", None, "tuning a guitar"),
    ];
    let scoped = |ix: &Index, mode: Mode| {
        let mut q = SearchRequest::new("tuning timer code");
        q.mode = mode;
        q.filter.project = Some("bakery".into());
        ids(&ix.search(&q).unwrap())
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    {
        let ix = index(dir.path());
        ix.index(&records).unwrap();
        for mode in [Mode::Keyword, Mode::Semantic, Mode::Hybrid, Mode::Recent] {
            assert_eq!(scoped(&ix, mode), ["a"], "{mode:?}");
        }
        assert!(!ix.metadata_outdated().unwrap(), "a new store is current");
    }
    // What a store written before `project` was kept looks like.
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP INDEX chunks_project; ALTER TABLE chunks DROP COLUMN project;")
        .unwrap();
    let ix = index(dir.path());
    assert!(ix.metadata_outdated().unwrap());
    for mode in [Mode::Keyword, Mode::Semantic, Mode::Recent] {
        assert!(
            scoped(&ix, mode).is_empty(),
            "{mode:?}: projects unknown yet"
        );
    }
    ix.refresh_metadata(&records).unwrap();
    ix.metadata_refreshed().unwrap();
    for mode in [Mode::Keyword, Mode::Semantic, Mode::Hybrid, Mode::Recent] {
        assert_eq!(scoped(&ix, mode), ["a"], "{mode:?} after the refresh");
    }
    drop(ix);
    assert!(!index(dir.path()).metadata_outdated().unwrap());
    let hit = index(dir.path())
        .search(&SearchRequest::new("oven"))
        .unwrap();
    assert_eq!(hit.hits[0].meta.project.as_deref(), Some("bakery"));
}

#[test]
fn column_count_counts_the_hit_columns() {
    assert_eq!(qualified_columns().split(", ").count(), hits::COLUMN_COUNT);
}

/// The lexical stand-in, claiming to take real time: what makes an index
/// that defers vectors leave them to the embedding stage.
struct Slow(Lexical);

impl Embedder for Slow {
    fn id(&self) -> &str {
        self.0.id()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        self.0.embed(texts)
    }
}

fn deferring(dir: &Path) -> Index {
    let store = SqliteStore::open(&dir.join("index.sqlite3")).unwrap();
    Index::new(Arc::new(store), Arc::new(Slow(Lexical::default()))).deferring_vectors()
}

#[test]
fn chunks_stored_before_their_vectors_are_found_by_keywords_then_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let ix = deferring(dir.path());
    assert!(ix.defers());
    ix.index(&[
        rec("a", 1, "local", "x", "kneading sourdough bread"),
        rec("b", 2, "local", "x", "rowing a kayak at dawn"),
        rec("c", 3, "local", "x", "tuning a violin"),
    ])
    .unwrap();
    assert_eq!(ix.pending_count().unwrap(), 3);
    assert_eq!(ix.store.stored().unwrap(), None, "no vectors yet");
    let mut q = SearchRequest::new("sourdough");
    q.mode = Mode::Semantic;
    let r = ix.search(&q).unwrap();
    assert!(r.hits.is_empty() && r.pending == 3, "{r:?}");
    q.mode = Mode::Hybrid;
    let r = ix.search(&q).unwrap();
    assert_eq!(ids(&r), ["a"], "keywords rank the waiting chunks");
    assert!(
        r.warnings.iter().any(|w| w.contains("3 chunk(s) wait")),
        "{r:?}"
    );

    // Replaced while waiting: its new text is the one embedded; a vector
    // made from the text read before the replacement is not taken.
    let before = ix.store.pending(10).unwrap();
    ix.index(&[rec("c", 3, "local", "x", "sailing a catamaran")])
        .unwrap();
    let stale: Vec<_> = before
        .into_iter()
        .filter(|p| p.chunk_id == "c")
        .map(|p| (p, vec![0.0; 384]))
        .collect();
    assert_eq!(ix.store.fill(&stale, ix.embedder.id()).unwrap(), 0);
    // Deleted while waiting: off the list.
    ix.remove(&["b".into()]).unwrap();
    assert_eq!(ix.pending_count().unwrap(), 2);

    let mut seen = Vec::new();
    assert_eq!(ix.fill_pending(&mut |n| seen.push(n)).unwrap(), 2);
    assert_eq!(seen.last(), Some(&2));
    assert_eq!(ix.pending_count().unwrap(), 0);
    q.mode = Mode::Semantic;
    q.queries[0].text = "catamaran".into();
    let r = ix.search(&q).unwrap();
    assert_eq!(ids(&r)[0], "c");
    assert_eq!(r.pending, 0);
    assert!(r.warnings.is_empty(), "{r:?}");
}

#[test]
fn a_fill_stopped_part_way_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let texts = ["bread", "kayak", "violin", "tulip", "glacier"];
    {
        let ix = deferring(dir.path());
        let records: Vec<_> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| rec(t, i as i64, "local", "x", &format!("all about the {t}")))
            .collect();
        ix.index(&records).unwrap();
        // Two of them filled, then the process dies.
        let two = ix.store.pending(2).unwrap();
        let texts: Vec<&str> = two.iter().map(|p| p.text.as_str()).collect();
        let vectors = ix.embedder.embed(&texts).unwrap();
        let filled: Vec<_> = two.into_iter().zip(vectors).collect();
        assert_eq!(ix.store.fill(&filled, ix.embedder.id()).unwrap(), 2);
    }
    let ix = deferring(dir.path());
    assert_eq!(ix.pending_count().unwrap(), 3);
    assert_eq!(ix.fill_pending(&mut |_| {}).unwrap(), 3);
    let mut q = SearchRequest::new("");
    q.mode = Mode::Semantic;
    for t in texts {
        q.queries[0].text = format!("the {t}");
        assert_eq!(ids(&ix.search(&q).unwrap())[0], t);
    }
    // Vectors written directly take a chunk off the list too.
    ix.index(&[rec("late", 9, "local", "x", "late")]).unwrap();
    assert_eq!(ix.pending_count().unwrap(), 1);
    let plain = index(dir.path());
    plain
        .index(&[rec("late", 9, "local", "x", "late")])
        .unwrap();
    assert_eq!(ix.pending_count().unwrap(), 0);
}
