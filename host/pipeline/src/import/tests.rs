//! The import driver against a real root.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_index::{ChunkRecord, IndexError, Indexer};
use chatmill_root::manifest::ConversationRecord;
use chatmill_root::root::Root;
use chatmill_runtime::{AdapterSet, Limits, Runtime};

use super::record::Hashing;
use super::*;
use crate::processor::ProcessorConfig;

/// An import of `inputs` into `root`, with the defaults.
fn options(root: &std::path::Path, inputs: Vec<PathBuf>) -> ImportOptions {
    ImportOptions {
        root: root.to_path_buf(),
        inputs,
        adapter_id: None,
        processor: ProcessorConfig {
            naming: Default::default(),
            out_dir: root.to_path_buf(),
            agent_id: "external".into(),
            render: Default::default(),
            chunker: Default::default(),
            redaction: None,
        },
        reprocess: None,
        live: false,
    }
}

/// A runtime caching under `dir`, and the first-party adapters.
fn first_party(dir: &std::path::Path) -> (Runtime, AdapterSet) {
    let rt = Runtime::new(Limits::default(), Some(&dir.join("cache"))).unwrap();
    let adapters = load_first_party(&rt);
    (rt, adapters)
}

fn load_first_party(rt: &Runtime) -> AdapterSet {
    let builtins: Vec<chatmill_runtime::Builtin> = chatmill_builtin::ADAPTERS
        .iter()
        .map(|(name, wasm)| chatmill_runtime::Builtin { name, wasm })
        .collect();
    AdapterSet::load(rt, &builtins, None, &[]).unwrap()
}

#[test]
fn chunks_another_writer_records_during_an_import_are_indexed_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let (rt, adapters) = first_party(dir.path());
    let store = chatmill_index::SqliteStore::open(&root.join(".chatmill/index.sqlite3")).unwrap();
    let index = chatmill_index::Index::new(
        std::sync::Arc::new(store),
        std::sync::Arc::new(chatmill_index::Lexical::default()),
    );
    let svc = Services {
        runtime: &rt,
        adapters: &adapters,
        header: &ExtractiveWriter,
        indexer: Some(&index),
        redactor: None,
    };
    let opts = options(
        &root,
        vec![
            corpus.join("chatgpt/librechat-chatgpt-tree.json"),
            corpus.join("markdown/aider-chat-history-aider-repo-fixture-first-sessions.md"),
        ],
    );
    // Between the two inputs, another writer records a chunk it wrote
    // but did not index (as an inline server whose index was down).
    let other = "local-other-001-2024-05-01";
    let mut progress = |p: Progress<'_>| {
        let Progress::File { index: 1, .. } = p else {
            return;
        };
        let path = Root::new(&root).manifest();
        let mut m = Manifest::load(&path).unwrap();
        let first = m.chunk_ids().into_iter().next().unwrap().to_string();
        let text = std::fs::read_to_string(root.join(format!("{first}.md"))).unwrap();
        std::fs::write(
            root.join(format!("{other}.md")),
            text.replace(&format!("chunk_id: {first}"), &format!("chunk_id: {other}")),
        )
        .unwrap();
        m.conversations.insert(
            "local:other".into(),
            ConversationRecord {
                last_pair: 1,
                chunk_ids: vec![other.into()],
                note: None,
            },
        );
        m.save(&path).unwrap();
    };
    // Each input a group of its own: the other writer comes between them.
    let s = run_grouped(&svc, &opts, &mut progress, (Duration::ZERO, 1)).unwrap();
    assert!(s.errors.is_empty(), "{s:?}");
    let ids = Indexer::ids(&index).unwrap();
    assert!(ids.contains(other), "the other writer's chunk is indexed");
    assert_eq!(ids.len() as u32, s.chunks_total, "{s:?}");
}

#[test]
fn a_file_that_changes_while_it_is_hashed_is_recorded_without_a_hash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, "{\"a\":1}\n").unwrap();
    let items = inventory::collect(std::slice::from_ref(&path)).unwrap().0;
    let item = &items[0];
    let listed = |p: &std::path::Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.len(), m.modified().ok())
    };
    std::thread::scope(|s| {
        let same = Hashing {
            handle: s.spawn(|| item.hash()),
            path: &path,
            listed: listed(&path),
        };
        let (sha, size) = same.finish().unwrap();
        assert_eq!(
            (sha, size),
            item.hash().unwrap(),
            "an unchanged file keeps its hash"
        );

        let growing = Hashing {
            handle: s.spawn(|| item.hash()),
            path: &path,
            listed: listed(&path),
        };
        // Written to (another line) while it is read.
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n").unwrap();
        let (sha, _) = growing.finish().unwrap();
        assert!(sha.is_empty(), "read again by the next import");
    });
}

#[test]
fn temp_files_are_swept_only_while_holding_the_root_lock() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs_err::create_dir_all(&root).unwrap();
    // Another writer's temp file, mid-write under the root lock.
    let tmp = root.join(".chatmill-tmp-inflight");
    fs_err::write(&tmp, b"half a manifest").unwrap();
    let held = RootLock::acquire(&root, Duration::from_secs(5)).unwrap();
    let rt = Runtime::new(Limits::default(), None).unwrap();
    let adapters = AdapterSet::load(&rt, &[], None, &[]).unwrap();
    let svc = Services {
        runtime: &rt,
        adapters: &adapters,
        header: &ExtractiveWriter,
        indexer: None,
        redactor: None,
    };
    let opts = options(&root, Vec::new());
    std::thread::scope(|s| {
        let import = s.spawn(|| run(&svc, &opts, &mut |_| {}));
        std::thread::sleep(Duration::from_millis(300));
        assert!(tmp.exists(), "swept while another writer held the root");
        drop(held);
        import.join().unwrap().unwrap();
    });
    assert!(!tmp.exists(), "a temp file nobody writes is swept");
}

#[test]
fn sniffing_many_inputs_keeps_one_instance_per_adapter_and_scores_alike() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let (rt, adapters) = first_party(dir.path());
    let mut inputs: Vec<PathBuf> = ["claude-code", "chatgpt", "gemini", "markdown"]
        .iter()
        .flat_map(|d| std::fs::read_dir(corpus.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 8, "{inputs:?}");
    let scores = |inputs: &[PathBuf]| -> Vec<Vec<(String, u8)>> {
        inputs
            .iter()
            .map(|p| {
                adapters
                    .scores(&rt, &chatmill_runtime::Input::from_path(p))
                    .unwrap()
            })
            .collect()
    };
    let forward = scores(&inputs);
    for a in adapters.adapters() {
        assert_eq!(a.sniffing_instances(), 1, "{}", a.info.id);
    }
    // What instances that sniffed nothing before say, one set per input.
    let fresh: Vec<Vec<(String, u8)>> = inputs
        .iter()
        .map(|p| {
            load_first_party(&rt)
                .scores(&rt, &chatmill_runtime::Input::from_path(p))
                .unwrap()
        })
        .collect();
    assert_eq!(forward, fresh);
    // The same scores in the other order: nothing a sniff left behind
    // changes the next one's answer.
    let mut reversed = inputs.clone();
    reversed.reverse();
    let mut backward = scores(&reversed);
    backward.reverse();
    assert_eq!(forward, backward);
    // And each input is claimed by the adapter of its folder, but for the
    // corpus's files that are not transcripts.
    for (p, s) in inputs.iter().zip(&forward) {
        let name = p.file_name().unwrap().to_string_lossy();
        if name.starts_with("not-a-") {
            assert_eq!(s[0].1, 0, "{}: {s:?}", p.display());
            continue;
        }
        let folder = p.parent().unwrap().file_name().unwrap().to_string_lossy();
        assert_eq!(s[0].0, folder, "{}: {s:?}", p.display());
        assert!(s[0].1 >= 50, "{}: {s:?}", p.display());
    }
}

/// Every file under `root` but the manifest and `.chatmill/`, by relative
/// path, with its bytes.
fn files_of(root: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            if rel == ".chatmill" || path == Root::new(root).manifest() {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// An index that embeds on the caller's thread, as an instant embedder
/// does (a text's vector is its length), and counts the chunks it is given
/// with their own vectors and without.
#[derive(Default)]
struct Counting {
    with: AtomicUsize,
    without: AtomicUsize,
}

impl Indexer for Counting {
    fn index(&self, r: &[ChunkRecord]) -> Result<(), IndexError> {
        self.without.fetch_add(r.len(), Relaxed);
        Ok(())
    }
    fn embed_here(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        Some(texts.iter().map(|t| vec![t.len() as f32]).collect())
    }
    fn index_with(&self, r: &[ChunkRecord], vectors: &[Vec<f32>]) -> Result<(), IndexError> {
        let own = r
            .iter()
            .zip(vectors)
            .filter(|(r, v)| v[..] == [r.embed_text.len() as f32])
            .count();
        self.with.fetch_add(own, Relaxed);
        self.without.fetch_add(r.len() - own, Relaxed);
        Ok(())
    }
    fn remove(&self, _ids: &[String]) -> Result<(), IndexError> {
        Ok(())
    }
    fn ids(&self) -> Result<std::collections::BTreeSet<String>, IndexError> {
        Ok(Default::default())
    }
    fn count(&self) -> Result<u64, IndexError> {
        Ok(0)
    }
}

/// Eight synthetic sessions in `dir/sessions`, and the first one again,
/// cut after its second request, under a name read before it: its full
/// file then finds it chunked this far by an earlier input of the same
/// run, which the thread that parsed it ahead could not know. The folder,
/// the cut copy and the full file.
fn sessions_with_a_cut_copy(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let sessions = dir.join("sessions");
    chatmill_synth::claude_code_sessions(&sessions, 8).unwrap();
    let project = sessions.join("-home-dev-project-0");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let full = std::fs::read_to_string(&files[0]).unwrap();
    let requests: Vec<usize> = full
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(r#""type":"user""#) && l.contains(r#""content":"Step"#))
        .map(|(i, _)| i)
        .collect();
    assert!(requests.len() >= 3, "{requests:?}");
    let cut: Vec<&str> = full.lines().take(requests[2]).collect();
    let early = project.join("0-early.jsonl");
    std::fs::write(&early, cut.join("\n") + "\n").unwrap();
    // Inputs are read oldest first.
    let then = std::fs::metadata(&files[0]).unwrap().modified().unwrap();
    let older = then - Duration::from_secs(1);
    let f = std::fs::File::options().write(true).open(&early).unwrap();
    f.set_modified(older).unwrap();

    (sessions, early, files[0].clone())
}

/// `sessions` imported into `root` one input per run (nothing is parsed
/// ahead), checking that `early` is read before `full`.
fn import_one_by_one(
    svc: &Services<'_>,
    sessions: &PathBuf,
    root: &std::path::Path,
    (early, full): (&PathBuf, &PathBuf),
) {
    let items = inventory::collect(std::slice::from_ref(sessions))
        .unwrap()
        .0;
    assert!(items.len() > 8, "{}", items.len());
    let at = |p: &std::path::Path| {
        items
            .iter()
            .position(|i| i.source == inventory::Source::File(p.to_path_buf()))
    };
    assert!(at(early) < at(full), "the cut copy is read first");
    for item in &items {
        let inventory::Source::File(path) = &item.source else {
            panic!("{item:?}");
        };
        let opts = options(root, vec![path.clone()]);
        let s = run_grouped(svc, &opts, &mut |_| {}, (group::GROUP_TIME, 0)).unwrap();
        assert!(s.errors.is_empty(), "{s:?}");
    }
}

/// Asserts that each of `roots` holds the files and the manifest records
/// of `one_by_one`, byte for byte.
fn assert_same_as(one_by_one: &std::path::Path, roots: &[&PathBuf]) {
    let expected = files_of(one_by_one);
    assert!(expected.keys().any(|k| k.ends_with(".md")), "{expected:?}");
    let manifest = |root: &std::path::Path| {
        Manifest::load(&Root::new(root).manifest())
            .unwrap()
            .conversations
    };
    for root in roots {
        let got = files_of(root);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{}: the same files, and no temp file left",
            root.display()
        );
        for (name, bytes) in &expected {
            assert!(got[name] == *bytes, "{}: {name} differs", root.display());
        }
        assert_eq!(manifest(root), manifest(one_by_one), "{}", root.display());
    }
}

#[test]
fn conversations_prepared_ahead_are_placed_only_where_their_guess_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, adapters) = first_party(dir.path());
    let svc = Services {
        runtime: &rt,
        adapters: &adapters,
        header: &ExtractiveWriter,
        indexer: None,
        redactor: None,
    };
    let (sessions, early, full) = sessions_with_a_cut_copy(dir.path());
    let one_by_one = dir.path().join("one-by-one");
    import_one_by_one(&svc, &sessions, &one_by_one, (&early, &full));

    let counted = |f: &mut dyn FnMut() -> Summary| {
        prepare::EARLY.with(|c| c.set((0, 0)));
        let s = f();
        assert!(s.errors.is_empty(), "{s:?}");
        prepare::EARLY.with(std::cell::Cell::get)
    };
    // All at once, parsed two ahead, indexed: every chunk reaches the
    // index with the vector made beside it, ahead or on the pool. Each
    // input's turn comes 30 ms after its parse began, so that the thread
    // parsing it has prepared it by then (what it has not prepared when the
    // commit loop takes its parse goes to the pool).
    let mut slow = |p: Progress<'_>| {
        if let Progress::File { .. } = p {
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    let at_once = dir.path().join("at-once");
    let opts = options(&at_once, vec![sessions.clone()]);
    let index = Counting::default();
    let indexed = Services {
        indexer: Some(&index),
        redactor: None,
        ..svc
    };
    let mut chunks = 0;
    let (placed, again) = counted(&mut || {
        let s = run_grouped(&indexed, &opts, &mut slow, (group::GROUP_TIME, 2)).unwrap();
        chunks = s.chunks_written;
        s
    });
    assert!(
        placed >= 8,
        "conversations placed as prepared ahead: {placed}"
    );
    assert_eq!(
        again, 1,
        "the full copy of the cut session is prepared again"
    );
    assert_eq!(index.with.load(Relaxed), chunks as usize);
    assert_eq!(index.without.load(Relaxed), 0);
    // In two runs: the cut session first, then everything, where the full
    // copy's guess (from the manifest the run began with) holds.
    let two_runs = dir.path().join("two-runs");
    let opts = options(&two_runs, vec![early.clone()]);
    run_grouped(&svc, &opts, &mut |_| {}, (group::GROUP_TIME, 2)).unwrap();
    let opts = options(&two_runs, vec![sessions.clone()]);
    let (placed_then, again) =
        counted(&mut || run_grouped(&svc, &opts, &mut slow, (group::GROUP_TIME, 2)).unwrap());
    assert_eq!(again, 0, "every guess holds");
    assert_eq!(placed_then, placed + 1);

    assert_same_as(&one_by_one, &[&at_once, &two_runs]);
}
