//! `chatmill import` on real exports: chunk files with the spec's
//! frontmatter, every bad input reported with a reason while the rest is
//! processed, and a re-run that writes nothing new.

use std::collections::BTreeSet;

use crate::support::*;

fn chunk_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    v.sort();
    v
}

#[test]
fn import_writes_chunks_reports_bad_inputs_and_never_duplicates() {
    let env = Env::new();
    let root = env.path("root");
    let raw = root.join("raw");
    std::fs::create_dir_all(raw.join("claude-code/project-a")).unwrap();
    for (rel, dest) in [
        ("chatgpt/librechat-chatgpt-tree.json", "conversations.json"),
        (
            "claude/osteele-claude-api-single-conversation-bakery.json",
            "bakery.json",
        ),
        (
            "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            "claude-code/project-a/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        ),
        (
            "markdown/not-a-transcript-minsky-2025-05-21_improve-mcp-error-handling.md",
            "notes.md",
        ),
    ] {
        std::fs::copy(corpus(rel), raw.join(dest)).unwrap();
    }
    let tree = std::fs::read(corpus("chatgpt/librechat-chatgpt-export.json")).unwrap();
    std::fs::write(raw.join("truncated.json"), &tree[..tree.len() / 2]).unwrap();
    std::fs::write(raw.join("empty.json"), b"").unwrap();
    std::fs::write(
        raw.join("image.png"),
        [0x89u8, b'P', b'N', b'G', 0, 1, 2, 3, 0xff, 0xfe],
    )
    .unwrap();
    std::fs::create_dir_all(raw.join("__MACOSX")).unwrap();
    std::fs::write(raw.join("__MACOSX/._conversations.json"), b"junk").unwrap();

    let root_s = root.to_str().unwrap();
    let run = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(run.code, 1, "bad inputs make the exit code 1: {run:?}");
    let s = run.json();
    assert_eq!(s["files_processed"], 3, "{s:#}");
    let written = s["chunks_written"].as_u64().unwrap();
    assert!(written >= 6, "{s:#}");
    let skipped: BTreeSet<String> = s["files_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        skipped,
        BTreeSet::from(["notes.md".to_string(), "empty.json".into()]),
        "{s:#}"
    );
    // An image holds no conversation: ignored, said so, no adapter asked.
    let ignored = s["files_ignored"].as_array().unwrap();
    assert_eq!(ignored.len(), 1, "{s:#}");
    assert!(ignored[0]["file"].as_str().unwrap().ends_with("image.png"));
    assert!(
        ignored[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("image or uploaded file of the export")
    );
    let errors = s["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{s:#}");
    assert!(
        errors[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("truncated.json")
    );
    assert!(errors[0]["hint"].is_string());
    for f in s["files_skipped"].as_array().unwrap() {
        assert!(!f["reason"].as_str().unwrap().is_empty());
    }

    // The chunk files: the spec's frontmatter, unique ids, a context header.
    let files = chunk_files(&root);
    assert_eq!(files.len() as u64, s["chunks_total"].as_u64().unwrap());
    let mut ids = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for field in [
            "source_file:",
            "source_platform:",
            "model_used:",
            "timestamp:",
            "turn_range:",
            "topics:",
            "chunk_id:",
            "agent_id: external",
            "conversation_id:",
        ] {
            assert!(
                text.contains(&format!("\n{field}")),
                "{} lacks {field}:\n{text}",
                f.display()
            );
        }
        assert!(text.contains("\n## Context\n\nFrom a "), "{text}");
        assert!(text.contains("\n## Exchange\n\n**User:**\n"), "{text}");
        let id = f.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(text.contains(&format!("\nchunk_id: {id}\n")), "{text}");
        assert!(ids.insert(id), "duplicate chunk id");
    }
    let code_chunks: Vec<_> = files
        .iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("claude-code-")
        })
        .collect();
    assert!(!code_chunks.is_empty());
    let text = std::fs::read_to_string(code_chunks[0]).unwrap();
    assert!(text.contains("\nproject: "), "per-format extras: {text}");
    assert!(root.join(".processing-manifest.json").exists());

    // Again: nothing new, nothing duplicated.
    let again = env.run(&["--root", root_s, "import", "--json"]);
    let s2 = again.json();
    assert_eq!(s2["chunks_written"], 0, "{s2:#}");
    // The 3 processed and 2 skipped files are unchanged, the image is
    // ignored again; the failed one is tried (and reported) again.
    assert_eq!(s2["files_unchanged"], 5, "{s2:#}");
    assert_eq!(s2["files_ignored"].as_array().unwrap().len(), 1, "{s2:#}");
    assert_eq!(s2["errors"].as_array().unwrap().len(), 1, "{s2:#}");
    assert_eq!(chunk_files(&root).len(), files.len());
}

fn write_zip(path: &std::path::Path, entries: &[(&str, Vec<u8>)]) {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        z.start_file(*name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn a_zip_is_imported_in_place_like_the_files_inside_it() {
    let env = Env::new();
    let chatgpt = std::fs::read(corpus("chatgpt/librechat-chatgpt-tree.json")).unwrap();
    let session = std::fs::read(corpus(
        "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    ))
    .unwrap();
    let session_name = "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";

    // The same exports, once as plain files and once zipped (with the junk
    // macOS adds).
    let plain = env.path("plain");
    std::fs::create_dir_all(plain.join("raw/proj")).unwrap();
    std::fs::write(plain.join("raw/conversations.json"), &chatgpt).unwrap();
    std::fs::write(plain.join("raw/proj").join(session_name), &session).unwrap();
    let zipped = env.path("zipped");
    std::fs::create_dir_all(zipped.join("raw")).unwrap();
    write_zip(
        &zipped.join("raw/export.zip"),
        &[
            ("export/conversations.json", chatgpt.clone()),
            ("__MACOSX/export/._conversations.json", b"junk".to_vec()),
            (&format!("export/proj/{session_name}"), session.clone()),
        ],
    );

    let a = env.run(&["--root", plain.to_str().unwrap(), "import", "--json"]);
    let b = env.run(&["--root", zipped.to_str().unwrap(), "import", "--json"]);
    assert_eq!((a.code, b.code), (0, 0), "{a:?}\n{b:?}");
    let (sa, sb) = (a.json(), b.json());
    assert_eq!(sb["files_processed"], 2, "{sb:#}");
    assert_eq!(sa["chunks_written"], sb["chunks_written"], "{sa:#}\n{sb:#}");
    let names = |root: &std::path::Path| -> Vec<String> {
        chunk_files(root)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&plain), names(&zipped), "same chunk ids either way");
    // The adapters saw the entries' own names (the session id comes from it).
    for f in chunk_files(&zipped) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.contains("source_file: conversations.json")
                || text.contains(&format!("source_file: {session_name}")),
            "{text}"
        );
    }
    let manifest = std::fs::read_to_string(zipped.join(".processing-manifest.json")).unwrap();
    assert!(
        manifest.contains("export.zip!export/conversations.json"),
        "{manifest}"
    );
    assert!(!manifest.contains("__MACOSX"), "{manifest}");
    // Each input's record holds its content's hash and size, however they
    // were read: beside the parse (a new file) or as the entry was copied
    // out of the zip.
    use sha2::Digest as _;
    let want = hex::encode(sha2::Sha256::digest(&chatgpt));
    for (root, key) in [
        (&plain, "raw/conversations.json"),
        (&zipped, "export.zip!export/conversations.json"),
    ] {
        let m: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(".processing-manifest.json")).unwrap(),
        )
        .unwrap();
        let files = m["files"].as_object().unwrap();
        let (_, rec) = files
            .iter()
            .find(|(k, _)| k.ends_with(key))
            .unwrap_or_else(|| panic!("{key} in {m:#}"));
        assert_eq!(rec["sha256"], want.as_str(), "{key}: {rec:#}");
        assert_eq!(rec["size"], chatgpt.len(), "{key}: {rec:#}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&zipped)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".chatmill-tmp-")
        })
        .collect();
    assert!(leftovers.is_empty(), "temporary copies are removed");

    // Unchanged zip: nothing to do.
    let again = env.run(&["--root", zipped.to_str().unwrap(), "import", "--json"]);
    assert_eq!(again.json()["files_unchanged"], 2);
    assert_eq!(again.json()["chunks_written"], 0);
}

/// The `**Assistant:**` side of a chunk file.
fn answer(chunk: &std::path::Path) -> String {
    let text = std::fs::read_to_string(chunk).unwrap();
    text.split_once("**Assistant:**")
        .map(|(_, a)| a.trim().to_string())
        .unwrap_or_default()
}

/// A root whose `raw/` holds the corpus files `files` (corpus path, name
/// under `raw/`).
fn root_with(env: &Env, files: &[(&str, &str)]) -> std::path::PathBuf {
    let root = env.path("root");
    for (rel, dest) in files {
        let to = root.join("raw").join(dest);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(corpus(rel), to).unwrap();
    }
    root
}

/// A batch's requests and results files, dropped side by side, are read
/// together: every chunk holds its answer (the results file's order, a
/// BOM at its start and the missing last newline of the requests file do
/// not matter), and a re-run writes nothing.
#[test]
fn batch_requests_and_results_files_are_joined() {
    let env = Env::new();
    let root = root_with(
        &env,
        &[
            (
                "api-log/genai_navirag-openai-batch_input.jsonl",
                "navirag_input.jsonl",
            ),
            (
                "api-log/genai_navirag-openai-batch_output.jsonl",
                "navirag_output.jsonl",
            ),
            (
                "api-log/groq-batch-processing-batch_input.jsonl",
                "groq/batch_input.jsonl",
            ),
        ],
    );
    let raw = root.join("raw");
    let mut out = b"\xEF\xBB\xBF".to_vec();
    out.extend(std::fs::read(corpus("api-log/groq-batch-processing-batch_output.jsonl")).unwrap());
    std::fs::write(raw.join("groq/batch_output.jsonl"), out).unwrap();

    let root_s = root.to_str().unwrap();
    let run = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let s = run.json();
    assert_eq!(s["files_processed"], 4, "{s:#}");
    assert_eq!(s["chunks_written"], 68, "{s:#}");
    let chunks = chunk_files(&root);
    assert_eq!(chunks.len(), 68);
    for c in &chunks {
        assert!(!answer(c).is_empty(), "{} has no answer", c.display());
        // Separate requests: none is written as following another.
        let text = std::fs::read_to_string(c).unwrap();
        assert!(text.contains("\npairs: independent\n"), "{text}");
        let context = text.split("## Exchange").next().unwrap();
        assert!(!context.contains("following"), "{context}");
    }
    // The 65 navirag requests repeat one instruction; their topics name
    // each request's own scene, not the shared words.
    let topics: BTreeSet<String> = chunks
        .iter()
        .map(|c| {
            let text = std::fs::read_to_string(c).unwrap();
            text.lines()
                .skip_while(|l| !l.starts_with("topics:"))
                .take_while(|l| l.starts_with("topics:") || l.starts_with("- "))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    assert!(topics.len() >= 60, "{} distinct: {topics:?}", topics.len());
    // Groq: no request times, so each chunk is dated by its response.
    let hola = chunks
        .iter()
        .find(|c| {
            std::fs::read_to_string(c)
                .unwrap()
                .contains("Hello, how are you today?")
        })
        .expect("the request-2 chunk");
    let text = std::fs::read_to_string(hola).unwrap();
    assert!(
        answer(hola).starts_with("\"Hola, ¿cómo estás hoy?\""),
        "{text}"
    );
    assert!(text.contains("timestamp: \"2025-03-20T"), "{text}");

    let again = env.run(&["--root", root_s, "import", "--json"]).json();
    assert_eq!(again["chunks_written"], 0, "{again:#}");
    assert_eq!(again["files_unchanged"], 4, "{again:#}");
}

/// A batch's requests imported with the first `early` of its three results
/// (none: the results file is not there yet), then with all of them: the
/// unanswered chunks are replaced — no chunk without its answer, no orphan,
/// the index and manifest agree (`verify`), and a re-run writes nothing.
fn batch_results_in_two_steps(early: Option<usize>) {
    let env = Env::new();
    let root = root_with(
        &env,
        &[(
            "api-log/groq-batch-processing-batch_input.jsonl",
            "batch_input.jsonl",
        )],
    );
    let raw = root.join("raw");
    let root_s = root.to_str().unwrap();
    let results =
        std::fs::read_to_string(corpus("api-log/groq-batch-processing-batch_output.jsonl"))
            .unwrap();
    let lines: Vec<&str> = results.lines().collect();
    assert_eq!(lines.len(), 3);
    if let Some(n) = early {
        let part: String = lines[..n].iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(raw.join("batch_output.jsonl"), part).unwrap();
    }
    let answered =
        |files: &[std::path::PathBuf]| files.iter().filter(|c| !answer(c).is_empty()).count();
    let first = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(first.code, 0, "{first:?}");
    let before = chunk_files(&root);
    assert_eq!(before.len(), 3);
    assert_eq!(answered(&before), early.unwrap_or(0), "{before:?}");

    std::fs::write(raw.join("batch_output.jsonl"), &results).unwrap();
    let second = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(second.code, 0, "{second:?}");
    let after = chunk_files(&root);
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(answered(&after), 3, "{after:?}");
    assert_eq!(second.json()["index_total"], 3);
    let verify = env.run(&["--root", root_s, "verify"]);
    assert_eq!(verify.code, 0, "{verify:?}");

    let third = env.run(&["--root", root_s, "import", "--json"]).json();
    assert_eq!(third["chunks_written"], 0, "{third:#}");
    assert_eq!(third["files_unchanged"], 2, "{third:#}");
}

/// Results that arrive after their requests were imported.
#[test]
fn batch_results_arriving_later_replace_the_unanswered_chunks() {
    batch_results_in_two_steps(None);
}

/// A results file that grows (downloaded while the batch still ran, then
/// again once it ended) answers the requests it left unanswered.
#[test]
fn batch_results_that_grow_answer_the_rest() {
    batch_results_in_two_steps(Some(1));
}

/// Files named like a batch's two halves that two different adapters read
/// are imported each on its own, and a re-run leaves both alone.
#[test]
fn look_alike_names_of_different_formats_are_imported_separately() {
    let env = Env::new();
    let root = root_with(
        &env,
        &[
            ("chatgpt/librechat-chatgpt-tree.json", "export_input.json"),
            (
                "claude/osteele-claude-api-single-conversation-bakery.json",
                "export_output.json",
            ),
        ],
    );
    let root_s = root.to_str().unwrap();
    let run = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let s = run.json();
    assert_eq!(s["files_processed"], 2, "{s:#}");
    let platforms: BTreeSet<String> = chunk_files(&root)
        .iter()
        .filter_map(|c| {
            let text = std::fs::read_to_string(c).unwrap();
            text.lines()
                .find_map(|l| l.strip_prefix("source_platform: "))
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        platforms,
        BTreeSet::from(["chatgpt".into(), "claude".into()])
    );
    let again = env.run(&["--root", root_s, "import", "--json"]).json();
    assert_eq!(again["files_unchanged"], 2, "{again:#}");
    assert_eq!(again["files_processed"], 0, "{again:#}");
}

/// Importing the root itself (a folder that holds `raw/`, the chunk files,
/// the manifest and `.chatmill/`) reads only the exports in it: the root's
/// own files are not inputs, so nothing is listed as unrecognized.
#[test]
fn importing_the_root_itself_leaves_its_own_files_alone() {
    let env = Env::new();
    let root = root_with(
        &env,
        &[("chatgpt/librechat-chatgpt-tree.json", "conversations.json")],
    );
    let root_s = root.to_str().unwrap();
    let first = env.run(&["--root", root_s, "import", "--json"]);
    assert_eq!(first.code, 0, "{first:?}");
    assert!(first.json()["chunks_written"].as_u64().unwrap() > 0);
    // A Markdown file of the user's beside the chunk files is still looked
    // at (this one is not a transcript, so it is listed).
    std::fs::copy(
        corpus("markdown/not-a-transcript-minsky-2025-05-21_improve-mcp-error-handling.md"),
        root.join("notes.md"),
    )
    .unwrap();
    let again = env.run(&["--root", root_s, "import", root_s, "--json"]);
    let s = again.json();
    assert_eq!(s["chunks_written"], 0, "{s:#}");
    assert_eq!(s["files_unchanged"], 1, "{s:#}");
    let skipped: Vec<String> = s["files_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skipped.len(), 1, "only the notes: {skipped:?}");
    assert!(skipped[0].ends_with("notes.md"), "{skipped:?}");
}

/// The chunk files of a root: name → content.
fn chunk_texts(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    chunk_files(root)
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// A conversation that grew, whether the grown export comes in a later
/// import or both copies sit in one file (an export and its later copy),
/// gains only its new pairs, none twice; the new chunks are what one import
/// of the whole writes for them (their headers still say what they
/// follow). The earlier chunks stay as written ("exchange 2 of 4").
#[test]
fn a_grown_conversation_ends_as_one_import_of_the_whole() {
    let env = Env::new();
    let full: serde_json::Value = serde_json::from_slice(
        &std::fs::read(corpus("claude/claude-to-sqlite-artifacts.json")).unwrap(),
    )
    .unwrap();
    let mut short = full.clone();
    // The conversation up to its fourth answer.
    let messages = short[0]["chat_messages"].as_array_mut().unwrap();
    let answers: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i]["sender"] == "assistant")
        .collect();
    messages.truncate(answers[3] + 1);
    let import = |root: &std::path::Path, export: &serde_json::Value| -> serde_json::Value {
        std::fs::create_dir_all(root.join("raw")).unwrap();
        std::fs::write(
            root.join("raw/conversations.json"),
            serde_json::to_vec(export).unwrap(),
        )
        .unwrap();
        let run = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
        assert_eq!(run.code, 0, "{run:?}");
        run.json()
    };

    let whole = env.path("whole");
    let once = import(&whole, &full);
    let expected = chunk_texts(&whole);
    assert!(expected.len() >= 6, "{once:#}");

    // The short export, then the grown one in its place.
    let later = env.path("later");
    let first = import(&later, &short);
    let before = chunk_texts(&later);
    assert!(before.len() >= 3, "{first:#}");
    let second = import(&later, &full);
    let after = chunk_texts(&later);
    assert_eq!(second["duplicates_skipped"], 0, "{second:#}");
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (name, text) in &after {
        match before.get(name) {
            Some(earlier) => assert_eq!(text, earlier, "{name} was rewritten"),
            None => assert_eq!(text, &expected[name], "{name}"),
        }
    }
    // A new chunk's header says what it follows.
    let first_new = after.keys().find(|n| !before.contains_key(*n)).unwrap();
    assert!(after[first_new].contains("following an exchange about"));

    // Both copies in one file: the same chunks.
    let both = env.path("both");
    let mut two = short.clone();
    two.as_array_mut().unwrap().push(full[0].clone());
    let s = import(&both, &two);
    assert_eq!(
        s["chunks_written"].as_u64().unwrap(),
        after.len() as u64,
        "{s:#}"
    );
    assert_eq!(s["duplicates_skipped"], 0, "{s:#}");
    assert_eq!(chunk_texts(&both), after);
    let verify = env.run(&["--root", both.to_str().unwrap(), "verify"]);
    assert_eq!(verify.code, 0, "{verify:?}");
}
