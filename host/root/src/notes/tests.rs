//! The notes' names, rendering, updates, checks and repairs on small
//! hand-written roots (the e2e tests import real exports).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::*;
use crate::chunk::ChunkDoc;
use crate::chunk_store::{ChunkStore, Scanned};
use crate::manifest::{ConversationRecord, Manifest, conversation_key};
use crate::notes::name::TITLE_MAX;
use crate::notes::render::inert;
use crate::root::Root;

#[test]
fn hostile_titles_make_plain_bounded_names() {
    let t = "2024-05-01T10:00:00Z";
    for (title, want) in [
        ("../../etc/passwd", "2024-05-01 etc passwd.md"),
        ("a\0b\nc\td", "2024-05-01 a b c d.md"),
        // Bidi overrides and isolates, zero-width joiner: gone.
        (
            "abc\u{202E}gpj.exe\u{2066}x\u{200D}y",
            "2024-05-01 abc gpj.exe x y.md",
        ),
        ("CON", "2024-05-01 CON.md"),
        ("nul.txt", "2024-05-01 nul.txt.md"),
        ("What? <b>|*\"x\"*|</b>", "2024-05-01 What b x b.md"),
        ("[[link]] #tag ^block", "2024-05-01 link tag block.md"),
        ("...hidden. ", "2024-05-01 hidden.md"),
        ("", "2024-05-01 untitled.md"),
        ("\u{202E}\u{2066}", "2024-05-01 untitled.md"),
        (
            "Süßes Brot — 日本語のレシピ",
            "2024-05-01 Süßes Brot 日本語のレシピ.md",
        ),
    ] {
        let name = file_name(t, Some(title));
        assert_eq!(name, want, "{title:?}");
        assert!(crate::atomic::plain_name(&name).is_ok(), "{name:?}");
    }
    assert_eq!(file_name(t, None), "2024-05-01 untitled.md");
    assert_eq!(file_name("yesterday", Some("x")), "undated x.md");
    // Very long titles are cut on a character boundary.
    for long in ["a".repeat(10_000), "é".repeat(10_000), "日".repeat(999)] {
        let name = file_name(t, Some(&long));
        assert!(name.len() <= 11 + TITLE_MAX + 3, "{}", name.len());
        assert!(
            crate::atomic::plain_name(&unique_name(&name, &BTreeSet::from([name.to_lowercase()])))
                .is_ok()
        );
    }
}

#[test]
fn untrusted_text_is_inert_in_a_note() {
    assert_eq!(
        inert("see [[x]] <b>a\\b</b> \u{202E}gpj"),
        "see \\[\\[x\\]\\] \\<b\\>a\\\\b\\</b\\> \\\\u{202e}gpj"
    );
}

#[test]
fn names_are_unique_ignoring_case() {
    let taken = BTreeSet::from([
        "2024-05-01 bread.md".to_string(),
        "2024-05-01 bread (2).md".to_string(),
    ]);
    assert_eq!(
        unique_name("2024-05-01 Bread.md", &taken),
        "2024-05-01 Bread (3).md"
    );
    assert_eq!(
        unique_name("2024-05-01 Soup.md", &taken),
        "2024-05-01 Soup.md"
    );
}

fn chunk(id: &str, conv: &str, range: &str, title: &str, header: &str) -> String {
    format!(
        "---\nsource_file: c.json\nsource_platform: chatgpt\nmodel_used: gpt-4o\ntimestamp: 2024-05-0{}T10:00:00Z\nconversation_title: '{title}'\nturn_range: '{range}'\ntopics:\n- bread\nchunk_id: {id}\nagent_id: external\nconversation_id: {conv}\n---\n\n## Context\n\n{header}\n\n## Exchange\n\n**User:**\n\nHow?\n\n**Assistant:**\n\nLike this.\n",
        &range[..1]
    )
}

fn record(ids: &[&str], last_pair: u32) -> ConversationRecord {
    ConversationRecord {
        last_pair,
        chunk_ids: ids.iter().map(|s| s.to_string()).collect(),
        note: None,
    }
}

#[test]
fn notes_list_chunks_in_order_keep_their_names_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    std::fs::write(
        dir.path().join("b.md"),
        chunk("b", "c1", "1", "Bread", "Starter first."),
    )
    .unwrap();
    // An inline-style name: not `<id>.md`.
    std::fs::write(
        dir.path().join("2024-05-02_x.md"),
        chunk("a", "c1", "2-3", "Bread", "Then the dough.\n\nTwo lines."),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.md"),
        chunk("c", "c2", "1", "Bread", "Another bread."),
    )
    .unwrap();
    let mut m = Manifest::new();
    let (k1, k2) = (
        conversation_key("chatgpt", "c1"),
        conversation_key("chatgpt", "c2"),
    );
    // The manifest lists them out of pair order.
    m.conversations.insert(k1.clone(), record(&["a", "b"], 3));
    m.conversations.insert(k2.clone(), record(&["c"], 1));
    let mut notes = Notes::new(&m);
    assert_eq!(
        notes.update(&root, &mut m),
        2,
        "conversations without a note"
    );
    let n1 = m.conversations[&k1].note.clone().unwrap();
    let n2 = m.conversations[&k2].note.clone().unwrap();
    assert_eq!(n1, "2024-05-01 Bread.md");
    assert_eq!(
        n2, "2024-05-01 Bread (2).md",
        "same date and title: a second name"
    );
    let text = std::fs::read_to_string(root.notes().join(&n1)).unwrap();
    let b = text.find("[[b|Turn 1]]").expect(&text);
    let a = text.find("[[2024-05-02_x|Turns 2-3]]").expect(&text);
    assert!(b < a, "{text}");
    assert!(
        text.contains("> Then the dough.\n>\n> Two lines.\n"),
        "{text}"
    );
    assert!(text.contains("[chunk file](../2024-05-02_x.md)"), "{text}");
    assert!(text.contains("chunk_count: 2\n"), "{text}");
    assert!(
        !text.contains("\nchunk_id:"),
        "a note is never read as a chunk"
    );
    assert!(
        check(
            &root,
            &m,
            &by_id(dir.path())
                .iter()
                .map(|(k, v)| (k.as_str(), v))
                .collect()
        )
        .is_empty()
    );
    // Nothing changed: nothing written.
    assert_eq!(notes.update(&root, &mut m), 0);

    // The conversation grows and its title changes: same note name,
    // the new chunk listed; the other note untouched.
    std::fs::write(
        dir.path().join("d.md"),
        chunk("d", "c1", "4", "Rye bread", "Rye now."),
    )
    .unwrap();
    let c1 = m.conversations.get_mut(&k1).unwrap();
    c1.chunk_ids.push("d".into());
    c1.last_pair = 4;
    notes.touched(&k1);
    assert_eq!(notes.update(&root, &mut m), 1);
    assert_eq!(m.conversations[&k1].note.as_deref(), Some(n1.as_str()));
    let text = std::fs::read_to_string(root.notes().join(&n1)).unwrap();
    assert!(
        text.contains("[[d|Turn 4]]") && text.contains("# Rye bread\n"),
        "{text}"
    );

    // verify's view: an edited note, a deleted one, an orphan.
    std::fs::write(root.notes().join(&n1), "edited").unwrap();
    std::fs::remove_file(root.notes().join(&n2)).unwrap();
    let orphan = root.notes().join("2020-01-01 Old.md");
    std::fs::write(&orphan, "---\nchatmill_note: 1\n---\n").unwrap();
    std::fs::write(root.notes().join("mine.md"), "my own note\n").unwrap();
    let scanned = by_id(dir.path());
    let by: BTreeMap<&str, &Scanned> = scanned.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let kinds: Vec<_> = check(&root, &m, &by)
        .into_iter()
        .map(|f| (f.0, f.1))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("note-outdated", n1.clone()),
            ("note-missing", n2.clone()),
            ("note-orphan", "2020-01-01 Old.md".to_string())
        ]
    );
    assert_eq!(repair(&root, &mut m, &by).unwrap(), (2, 1));
    assert!(check(&root, &m, &by).is_empty());
    assert!(
        !orphan.exists() && root.notes().join("mine.md").exists(),
        "only chatmill's notes are removed"
    );
}

#[test]
fn an_inline_session_s_note_grows_turn_by_turn_as_a_whole_rendering_would_write_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    let key = conversation_key("chatgpt", "s1");
    let mut m = Manifest::new();
    m.conversations.insert(key.clone(), record(&[], 0));
    for turn in 1..=5u32 {
        let (id, rel) = (format!("id{turn}"), format!("2024-05-0{turn}_t{turn}.md"));
        let text = chunk(
            &id,
            "s1",
            &turn.to_string(),
            &format!("Title {turn}"),
            "About [[x]].",
        );
        std::fs::write(dir.path().join(&rel), text).unwrap();
        let c = m.conversations.get_mut(&key).unwrap();
        c.chunk_ids.push(id);
        c.last_pair = turn;
        assert!(refresh(&root, &mut m, &key, &[rel]).unwrap());
        let name = m.conversations[&key].note.clone().unwrap();
        assert_eq!(name, "2024-05-01 Title 1.md", "the first title names it");
        let note = std::fs::read_to_string(root.notes().join(&name)).unwrap();
        let scanned = by_id(dir.path());
        let chunks: Vec<&Scanned> = scanned.iter().map(|(_, s)| s).collect();
        assert_eq!(
            Some(note.clone()),
            render(&key, &chunks).unwrap(),
            "turn {turn}"
        );
        assert!(
            note.contains(
                "\n# Title {turn}\n"
                    .replace("{turn}", &turn.to_string())
                    .as_str()
            ),
            "{note}"
        );
    }
    // The note grows without reading the chunks it lists: one gone
    // since stays listed until a whole rendering (verify) sees it.
    std::fs::remove_file(dir.path().join("2024-05-01_t1.md")).unwrap();
    let rel = "2024-05-06_t6.md".to_string();
    std::fs::write(
        dir.path().join(&rel),
        chunk("id6", "s1", "6", "Title 6", "Six."),
    )
    .unwrap();
    m.conversations
        .get_mut(&key)
        .unwrap()
        .chunk_ids
        .push("id6".into());
    refresh(&root, &mut m, &key, &[rel]).unwrap();
    let note = std::fs::read_to_string(root.notes().join("2024-05-01 Title 1.md")).unwrap();
    assert!(
        note.contains("[[2024-05-01_t1|Turn 1]]")
            && note.contains("\n## 6. [[2024-05-06_t6|Turn 6]]"),
        "{note}"
    );
}

#[test]
fn a_forgotten_conversation_gets_its_own_note_s_name_back_and_no_file_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    std::fs::write(
        dir.path().join("a.md"),
        chunk("a", "c1", "1", "Bread", "A."),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.md"),
        chunk("b", "c2", "1", "Bread", "B."),
    )
    .unwrap();
    std::fs::write(dir.path().join("c.md"), chunk("c", "c3", "1", "Soup", "C.")).unwrap();
    let mut m = Manifest::new();
    let keys = ["c1", "c2", "c3"].map(|c| conversation_key("chatgpt", c));
    for (k, id) in keys.iter().zip(["a", "b", "c"]) {
        m.conversations.insert(k.clone(), record(&[id], 1));
    }
    // A file of the user's where the third note would go.
    std::fs::create_dir_all(root.notes()).unwrap();
    std::fs::write(root.notes().join("2024-05-01 Soup.md"), "mine\n").unwrap();
    Notes::new(&m).update(&root, &mut m);
    let names = |m: &Manifest| {
        keys.iter()
            .map(|k| m.conversations[k].note.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let before = names(&m);
    assert_eq!(
        before,
        [
            "2024-05-01 Bread.md",
            "2024-05-01 Bread (2).md",
            "2024-05-01 Soup (2).md"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.notes().join("2024-05-01 Soup.md")).unwrap(),
        "mine\n"
    );
    // Forgotten (as a reprocess does) and named again, the second first.
    for k in &keys {
        m.conversations.get_mut(k).unwrap().note = None;
    }
    refresh(&root, &mut m, &keys[1], &[]).unwrap();
    refresh(&root, &mut m, &keys[0], &[]).unwrap();
    refresh(&root, &mut m, &keys[2], &[]).unwrap();
    assert_eq!(names(&m), before);
}

#[test]
fn a_recorded_name_that_is_not_a_plain_name_is_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("root");
    std::fs::create_dir(&inner).unwrap();
    let root = Root::new(&inner);
    std::fs::write(inner.join("a.md"), chunk("a", "c1", "1", "Bread", "A.")).unwrap();
    let key = conversation_key("chatgpt", "c1");
    let mut m = Manifest::new();
    let mut rec = record(&["a"], 1);
    rec.note = Some("../../escaped.md".into());
    m.conversations.insert(key.clone(), rec);
    assert!(refresh(&root, &mut m, &key, &[]).unwrap());
    assert_eq!(
        m.conversations[&key].note.as_deref(),
        Some("2024-05-01 Bread.md")
    );
    assert!(!dir.path().join("escaped.md").exists());
}

#[test]
fn the_note_of_a_conversation_taken_out_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    std::fs::write(
        dir.path().join("a.md"),
        chunk("a", "c1", "1", "Bread", "A."),
    )
    .unwrap();
    std::fs::write(dir.path().join("b.md"), chunk("b", "c2", "1", "Soup", "B.")).unwrap();
    let mut m = Manifest::new();
    let (k1, k2) = (
        conversation_key("chatgpt", "c1"),
        conversation_key("chatgpt", "c2"),
    );
    m.conversations.insert(k1.clone(), record(&["a"], 1));
    m.conversations.insert(k2.clone(), record(&["b"], 1));
    let mut notes = Notes::new(&m);
    assert_eq!(notes.update(&root, &mut m), 2);
    // The import takes c2's chunks out (late batch results): its note
    // goes at the next update; c1's stays.
    m.conversations.remove(&k2);
    notes.touched_all();
    notes.update(&root, &mut m);
    assert!(!root.notes().join("2024-05-01 Soup.md").exists());
    assert!(root.notes().join("2024-05-01 Bread.md").exists());
    // A gone conversation's name that a file of the user's has now is
    // left alone.
    m.conversations.remove(&k1);
    std::fs::write(root.notes().join("2024-05-01 Bread.md"), "mine\n").unwrap();
    notes.touched(&k1);
    notes.update(&root, &mut m);
    assert!(root.notes().join("2024-05-01 Bread.md").exists());
}

/// A root in `dir` with one conversation of one chunk (`b.md`, "Soup")
/// and no note yet: its manifest, its key, and notes in line with it.
fn one_soup(dir: &Path) -> (Manifest, String, Notes) {
    std::fs::write(dir.join("b.md"), chunk("b", "c2", "1", "Soup", "B.")).unwrap();
    let mut m = Manifest::new();
    let key = conversation_key("chatgpt", "c2");
    m.conversations.insert(key.clone(), record(&["b"], 1));
    let notes = Notes::new(&m);
    (m, key, notes)
}

#[test]
fn a_conversation_written_again_keeps_its_note_s_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    let (mut m, key, mut notes) = one_soup(dir.path());
    notes.update(&root, &mut m);
    assert_eq!(
        m.conversations[&key].note.as_deref(),
        Some("2024-05-01 Soup.md")
    );
    // Its chunks taken out and written again, dated otherwise (the
    // answers of a batch that came later): a new record, the old name.
    std::fs::remove_file(dir.path().join("b.md")).unwrap();
    let again = chunk("b2", "c2", "2", "Soup", "Answered.");
    std::fs::write(dir.path().join("b2.md"), again).unwrap();
    m.conversations.insert(key.clone(), record(&["b2"], 2));
    notes.touched_all();
    notes.update(&root, &mut m);
    let name = m.conversations[&key].note.clone().unwrap();
    assert_eq!(name, "2024-05-01 Soup.md");
    let note = std::fs::read_to_string(root.notes().join(&name)).unwrap();
    assert!(
        note.contains("[[b2|Turn 2]]") && !note.contains("[[b|"),
        "{note}"
    );
    assert_eq!(std::fs::read_dir(root.notes()).unwrap().count(), 1);
}

fn by_id(dir: &Path) -> Vec<(String, Scanned)> {
    ChunkStore::new(dir)
        .scan(&mut Vec::new())
        .unwrap()
        .into_iter()
        .map(|s| (s.doc.frontmatter.chunk_id.clone(), s))
        .collect()
}

#[test]
fn a_root_s_notes_folder_is_known_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("conversations");
    std::fs::create_dir(&notes).unwrap();
    assert!(!is_notes_folder(&notes), "not a root");
    std::fs::create_dir(dir.path().join(".chatmill")).unwrap();
    assert!(is_notes_folder(&notes));
    assert!(!is_notes_folder(dir.path()));
}

/// `scanned` as the processor hands it to [`Ready::new`]: no text, no
/// exchanges.
fn as_written(s: &Scanned) -> Scanned {
    Scanned {
        rel: s.rel.clone(),
        text: String::new(),
        doc: ChunkDoc {
            frontmatter: s.doc.frontmatter.clone(),
            context: s.doc.context.clone(),
            exchanges: Vec::new(),
        },
    }
}

#[test]
fn a_new_conversation_s_note_is_written_at_its_commit_as_its_files_make_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    for (file, id, range, header) in [
        ("b.md", "b", "1", "Starter first."),
        ("a.md", "a", "2-3", "Then the dough."),
    ] {
        let text = chunk(id, "c1", range, "Bread", header);
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let scanned: BTreeMap<String, Scanned> = by_id(dir.path()).into_iter().collect();
    let written: Vec<Scanned> = ["b", "a"]
        .iter()
        .map(|id| as_written(&scanned[*id]))
        .collect();
    let key = conversation_key("chatgpt", "c1");
    // A conversation the import began with goes to the update, not here.
    let mut m = Manifest::new();
    m.conversations.insert(key.clone(), record(&["b", "a"], 3));
    let mut known = Notes::new(&m);
    let ready = Ready::new(&key, &written).unwrap();
    assert!(!known.write_ready(dir.path(), &mut m, ready));
    // Nor one whose record lists other chunks than the note was made of.
    let mut notes = Notes::new(&Manifest::new());
    let ready = Ready::new(&key, &written[..1]).unwrap();
    assert!(!notes.write_ready(dir.path(), &mut m, ready));
    assert!(m.conversations[&key].note.is_none());
    assert!(!root.notes().exists());
    // A new one is named and written at once: the note its files make.
    let ready = Ready::new(&key, &written).unwrap();
    assert!(notes.write_ready(dir.path(), &mut m, ready));
    assert_eq!(
        m.conversations[&key].note.as_deref(),
        Some("2024-05-01 Bread.md")
    );
    let refs: BTreeMap<&str, &Scanned> = scanned.iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(check(&root, &m, &refs), Vec::new());
    // The update after the input has nothing left to do for it.
    assert_eq!(notes.update(&root, &mut m), 0);
}

#[test]
fn a_note_that_could_not_be_written_is_tried_again_at_the_next_update() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    let (mut m, key, mut notes) = one_soup(dir.path());
    // A file where the notes folder goes: no note can be written.
    std::fs::write(root.notes(), "in the way").unwrap();
    assert_eq!(notes.update(&root, &mut m), 0);
    assert_eq!(m.conversations[&key].note, None);
    std::fs::remove_file(root.notes()).unwrap();
    // Nothing touched it since, and it is written now.
    assert_eq!(notes.update(&root, &mut m), 1);
    let name = m.conversations[&key].note.clone().unwrap();
    assert!(root.notes().join(name).exists());
    assert_eq!(notes.update(&root, &mut m), 0, "and then left alone");
}
