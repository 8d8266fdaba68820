//! `chatmill verify`: the spec's final check. Every chunk file's frontmatter
//! parses with all required fields, chunk ids are unique, and the manifest,
//! the chunk files and the index agree. `repair` re-derives the manifest's
//! chunk records and the index from the chunk files, which are the source of
//! truth.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chatmill_index::Indexer;
use chatmill_redact::Redactor;
use chrono::DateTime;
use serde::Serialize;

pub use chatmill_root::chunk_store::Scanned;
use chatmill_root::chunk_store::{ChunkStore, reindex_from_files};
use chatmill_root::manifest::{MANIFEST_FILE, Manifest, conversation_key};

pub use chatmill_root::problem::Problem;

/// The kind of the problem of an index whose metadata predates a field
/// (`Indexer::metadata_outdated`): `--repair` (or the next import)
/// refreshes it from the chunk files.
pub const INDEX_OUTDATED: &str = "index-outdated";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub chunk_files: u32,
    pub manifest_chunks: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_chunks: Option<u64>,
    /// Indexed chunks still waiting for their vectors (`chatmill embed`
    /// makes them): found by keywords, not yet by meaning. Not a problem.
    #[serde(skip_serializing_if = "is_zero")]
    pub vectors_pending: u64,
    pub problems: Vec<Problem>,
    /// What `--repair` changed (empty without it).
    pub repaired: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

fn push(problems: &mut Vec<Problem>, kind: &'static str, subject: &str, message: String) {
    problems.push(Problem {
        kind,
        subject: subject.to_string(),
        message,
    });
}

fn check_fields(s: &Scanned, problems: &mut Vec<Problem>) {
    let fm = &s.doc.frontmatter;
    for (name, value) in [
        ("source_file", &fm.source_file),
        ("source_platform", &fm.source_platform),
        ("model_used", &fm.model_used),
        ("timestamp", &fm.timestamp),
        ("turn_range", &fm.turn_range),
        ("chunk_id", &fm.chunk_id),
        ("agent_id", &fm.agent_id),
        ("conversation_id", &fm.conversation_id),
    ] {
        if value.trim().is_empty() {
            push(
                problems,
                "invalid-field",
                &s.rel,
                format!("`{name}` is empty"),
            );
        }
    }
    if DateTime::parse_from_rfc3339(&fm.timestamp).is_err() {
        push(
            problems,
            "invalid-field",
            &s.rel,
            format!("`timestamp` is not ISO 8601: `{}`", fm.timestamp),
        );
    }
    let range_ok = fm
        .turn_range
        .split('-')
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && fm.turn_range.split('-').count() <= 2;
    if !range_ok {
        push(
            problems,
            "invalid-field",
            &s.rel,
            format!("`turn_range` is not `N` or `N-M`: `{}`", fm.turn_range),
        );
    }
    if s.doc.context.trim().is_empty() {
        push(
            problems,
            "invalid-field",
            &s.rel,
            "the `## Context` header is empty".into(),
        );
    }
}

fn last_pair(turn_range: &str) -> u32 {
    turn_range
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The kind of the problem of a chunk file that holds a secret.
pub const SECRET: &str = "secret";

/// Each chunk not redacted with `r`'s rule set (written before redaction,
/// with it off, or with older rules) that holds a secret `r` finds. Chunks
/// redacted with the current rules are not read again.
fn check_secrets(chunks: &[Scanned], r: &Redactor, problems: &mut Vec<Problem>) {
    let stale = |s: &&Scanned| {
        s.doc
            .frontmatter
            .redaction
            .is_none_or(|v| v < chatmill_redact::RULESET_VERSION)
    };
    for s in chunks.iter().filter(stale) {
        let found = r.find(&s.text);
        if found.is_empty() {
            continue;
        }
        let shown: Vec<String> = found
            .iter()
            .take(3)
            .map(|f| format!("{} `{}`", f.rule, f.preview))
            .collect();
        let more = found.len().saturating_sub(3);
        let more = if more > 0 {
            format!(", {more} more")
        } else {
            String::new()
        };
        push(
            problems,
            SECRET,
            &s.rel,
            format!(
                "holds {} secrets redaction would replace ({}{more}); `chatmill import --reprocess` rewrites it from its input",
                found.len(),
                shown.join(", ")
            ),
        );
    }
}

/// `--repair` with redaction on: each chunk file not redacted with `r`'s
/// rules that holds a secret is rewritten with it replaced (its
/// frontmatter saying so). For chunks whose input is gone, which `import
/// --reprocess` cannot reach. The indices of the chunks rewritten.
fn redact_files(
    root: &Path,
    chunks: &mut [Scanned],
    r: &Redactor,
    report: &mut Report,
) -> std::io::Result<Vec<usize>> {
    let mut rewritten = Vec::new();
    for (i, s) in chunks.iter_mut().enumerate() {
        if s.doc.frontmatter.redaction >= Some(chatmill_redact::RULESET_VERSION) {
            continue;
        }
        let mut doc = s.doc.clone();
        let n: u32 = crate::redaction::chunk(r, &mut doc).values().sum();
        if n == 0 {
            continue;
        }
        doc.frontmatter.redaction = Some(chatmill_redact::RULESET_VERSION);
        let Ok(markdown) = doc.to_markdown() else {
            continue;
        };
        chatmill_root::atomic::write_durable(&root.join(&s.rel), markdown.as_bytes())?;
        report
            .repaired
            .push(format!("replaced {n} secrets in `{}`", s.rel));
        s.doc = doc;
        s.text = markdown;
        rewritten.push(i);
    }
    // The notes list the chunks' titles: the same secrets, replaced alike.
    let notes = chatmill_root::root::Root::new(root).notes();
    for entry in fs_err::read_dir(&notes).into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(text) = fs_err::read_to_string(&path) else {
            continue;
        };
        if let std::borrow::Cow::Owned(clean) = r.redact(&text).text {
            chatmill_root::atomic::write_durable(&path, clean.as_bytes())?;
            report
                .repaired
                .push(format!("replaced secrets in the note `{}`", path.display()));
        }
    }
    Ok(rewritten)
}

/// Checks the root; with `repair`, re-derives the manifest's chunk records
/// and the index from the chunk files. With `secrets`, chunks not redacted
/// with its rules are checked for secrets (with `repair`, rewritten without
/// them, and their index entries with them).
pub fn run(
    root: &Path,
    indexer: Option<&dyn Indexer>,
    repair: bool,
    secrets: Option<&Redactor>,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let mut chunks = ChunkStore::new(root).scan(&mut report.problems)?;
    report.chunk_files = chunks.len() as u32;
    let redacted = match secrets {
        Some(r) if repair => redact_files(root, &mut chunks, r, &mut report)?,
        _ => Vec::new(),
    };
    if let Some(r) = secrets {
        check_secrets(&chunks, r, &mut report.problems);
    }
    let by_id = unique(&chunks, &mut report.problems);
    let on_disk: BTreeSet<&str> = by_id.keys().copied().collect();
    let manifest_path = chatmill_root::root::Root::new(root).manifest();
    let manifest = check_manifest(&manifest_path, &by_id, &on_disk, &mut report);
    if let Some(m) = &manifest {
        let texts = chunks.iter().map(|s| (s.rel.as_str(), s.text.as_str()));
        for (kind, subject, message) in chatmill_root::assets::check(root, m, texts) {
            push(&mut report.problems, kind, &subject, message);
        }
        let root = chatmill_root::root::Root::new(root);
        for (kind, subject, message) in chatmill_root::notes::check(&root, m, &by_id) {
            push(&mut report.problems, kind, &subject, message);
        }
    }
    let in_index = indexer.and_then(|ix| check_index(ix, &on_disk, &mut report));
    if !repair {
        return Ok(report);
    }
    let problems_before = std::mem::take(&mut report.problems);
    let mut m = repair_manifest(&manifest_path, manifest, &by_id, &on_disk, &mut report)?;
    repair_notes(root, &manifest_path, &mut m, &by_id, &mut report)?;
    if let (Some(ix), Some(ids)) = (indexer, in_index) {
        repair_index(ix, ids, &by_id, &on_disk, &mut report)?;
    }
    let reindexed = match indexer.filter(|_| !redacted.is_empty()) {
        Some(ix) => reindex_from_files(ix, redacted.iter().map(|&i| &chunks[i]))
            .and_then(|_| ix.purge())
            .err(),
        None => None,
    };
    // What repair cannot fix: broken or duplicated chunk files need a human;
    // an asset's bytes come back only from its export (checked again below,
    // against the repaired manifest).
    report.problems = problems_before
        .into_iter()
        .filter(|p| {
            matches!(
                p.kind,
                "unparsable" | "invalid-field" | "duplicate-id" | SECRET
            )
        })
        .collect();
    if let Some(e) = reindexed {
        push(&mut report.problems, "index", "index", e.to_string());
    }
    let texts = chunks.iter().map(|s| (s.rel.as_str(), s.text.as_str()));
    for (kind, subject, message) in chatmill_root::assets::check(root, &m, texts) {
        push(&mut report.problems, kind, &subject, message);
    }
    for (kind, subject, message) in
        chatmill_root::notes::check(&chatmill_root::root::Root::new(root), &m, &by_id)
    {
        push(&mut report.problems, kind, &subject, message);
    }
    report.manifest_chunks = m.chunk_count() as u32;
    Ok(report)
}

/// The chunks by id, each checked; a second file with an id is a problem.
fn unique<'s>(
    chunks: &'s [Scanned],
    problems: &mut Vec<Problem>,
) -> BTreeMap<&'s str, &'s Scanned> {
    let mut by_id: BTreeMap<&str, &Scanned> = BTreeMap::new();
    for s in chunks {
        check_fields(s, problems);
        let id = s.doc.frontmatter.chunk_id.as_str();
        if let Some(first) = by_id.insert(id, s) {
            push(
                problems,
                "duplicate-id",
                id,
                format!("in both `{}` and `{}`", first.rel, s.rel),
            );
        }
    }
    by_id
}

/// The manifest (`None` when it cannot be read, a problem), compared with
/// the chunk files.
fn check_manifest(
    path: &Path,
    by_id: &BTreeMap<&str, &Scanned>,
    on_disk: &BTreeSet<&str>,
    report: &mut Report,
) -> Option<Manifest> {
    let problems = &mut report.problems;
    let m = match Manifest::load(path) {
        Ok(m) => m,
        Err(e) => {
            push(problems, "manifest", MANIFEST_FILE, e.to_string());
            return None;
        }
    };
    let known = m.chunk_ids();
    report.manifest_chunks = known.len() as u32;
    for id in known.difference(on_disk) {
        push(
            problems,
            "missing-file",
            id,
            "the manifest lists this chunk but no chunk file has it".into(),
        );
    }
    for id in on_disk.difference(&known) {
        push(
            problems,
            "not-in-manifest",
            id,
            format!("`{}` is not recorded in the manifest", by_id[id].rel),
        );
    }
    Some(m)
}

/// The index's chunk ids (`None` when it cannot say, a problem), compared
/// with the chunk files.
fn check_index(
    ix: &dyn Indexer,
    on_disk: &BTreeSet<&str>,
    report: &mut Report,
) -> Option<BTreeSet<String>> {
    let problems = &mut report.problems;
    let ids = match ix.ids() {
        Ok(ids) => ids,
        Err(e) => {
            push(problems, "index", "index", e.to_string());
            return None;
        }
    };
    report.index_chunks = Some(ids.len() as u64);
    match ix.pending_count() {
        Ok(n) => report.vectors_pending = n,
        Err(e) => push(problems, "index", "index", e.to_string()),
    }
    match ix.metadata_outdated() {
        Ok(false) => {}
        Ok(true) => push(
            problems,
            INDEX_OUTDATED,
            "index",
            "the index predates `project`: searches scoped to a project miss its chunks until their metadata is refreshed from the chunk files".into(),
        ),
        Err(e) => push(problems, "index", "index", e.to_string()),
    }
    for id in on_disk.iter().filter(|id| !ids.contains(**id)) {
        push(
            problems,
            "not-indexed",
            id,
            "the index lacks this chunk".into(),
        );
    }
    for id in ids.iter().filter(|id| !on_disk.contains(id.as_str())) {
        push(
            problems,
            "orphan-in-index",
            id,
            "the index has this chunk but no chunk file does".into(),
        );
    }
    Some(ids)
}

/// The manifest's chunk records brought in line with the chunk files (a
/// new one when it could not be read). File records keep their hashes (so
/// unchanged inputs stay unchanged) but lose chunks whose files are gone.
fn repair_manifest(
    path: &Path,
    manifest: Option<Manifest>,
    by_id: &BTreeMap<&str, &Scanned>,
    on_disk: &BTreeSet<&str>,
    report: &mut Report,
) -> std::io::Result<Manifest> {
    let rebuilt = manifest.is_none();
    let mut m = manifest.unwrap_or_default();
    let mut changed = rebuilt;
    for ids in m
        .conversations
        .values_mut()
        .map(|c| &mut c.chunk_ids)
        .chain(m.files.values_mut().map(|f| &mut f.chunk_ids))
    {
        let before = ids.len();
        ids.retain(|id| on_disk.contains(id.as_str()));
        changed |= ids.len() != before;
    }
    let known: BTreeSet<String> = m.chunk_ids().into_iter().map(str::to_string).collect();
    for (id, s) in by_id {
        let fm = &s.doc.frontmatter;
        let conv = m
            .conversations
            .entry(conversation_key(&fm.source_platform, &fm.conversation_id))
            .or_default();
        let last = last_pair(&fm.turn_range);
        if last > conv.last_pair {
            conv.last_pair = last;
            changed = true;
        }
        if !known.contains(*id) {
            conv.chunk_ids.push((*id).to_string());
            changed = true;
        }
    }
    let root = path.parent().unwrap_or(Path::new("."));
    changed |= chatmill_root::assets::recover_records(root, &mut m)? > 0;
    if changed {
        m.save(path).map_err(std::io::Error::other)?;
        report.repaired.push(if rebuilt {
            format!(
                "rebuilt the manifest from {} chunk files",
                report.chunk_files
            )
        } else {
            "brought the manifest's chunk records in line with the chunk files".into()
        });
    }
    Ok(m)
}

/// The conversation notes written again from the chunk files where they
/// are missing or out of date (named in the manifest, saved), and notes no
/// conversation claims removed.
fn repair_notes(
    root: &Path,
    manifest_path: &Path,
    m: &mut Manifest,
    by_id: &BTreeMap<&str, &Scanned>,
    report: &mut Report,
) -> std::io::Result<()> {
    let before = m.clone();
    let (written, removed) =
        chatmill_root::notes::repair(&chatmill_root::root::Root::new(root), m, by_id)
            .map_err(std::io::Error::other)?;
    if *m != before {
        m.save(manifest_path).map_err(std::io::Error::other)?;
    }
    if written > 0 || removed > 0 {
        report.repaired.push(format!(
            "wrote {written} conversation notes again, removed {removed} no conversation claims"
        ));
    }
    Ok(())
}

/// The index brought in line with the chunk files: what it lacks indexed,
/// what has no file removed.
fn repair_index(
    ix: &dyn Indexer,
    ids: BTreeSet<String>,
    by_id: &BTreeMap<&str, &Scanned>,
    on_disk: &BTreeSet<&str>,
    report: &mut Report,
) -> std::io::Result<()> {
    let missing = by_id
        .iter()
        .filter(|(id, _)| !ids.contains(**id))
        .map(|(_, s)| *s);
    let indexed = reindex_from_files(ix, missing).map_err(std::io::Error::other)?;
    let orphans: Vec<String> = ids
        .into_iter()
        .filter(|id| !on_disk.contains(id.as_str()))
        .collect();
    if !orphans.is_empty() {
        ix.remove(&orphans).map_err(std::io::Error::other)?;
    }
    if indexed > 0 || !orphans.is_empty() {
        report.repaired.push(format!(
            "indexed {indexed} chunks the index lacked, removed {} it had without a file",
            orphans.len()
        ));
    }
    report.index_chunks = ix.count().ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatmill_index::ChunkRecord;
    use std::sync::Mutex;

    /// An in-memory index for the unit test (the real stores are tested in
    /// chatmill-index).
    #[derive(Default)]
    struct MemIndex(Mutex<BTreeSet<String>>);
    impl Indexer for MemIndex {
        fn index(&self, r: &[ChunkRecord]) -> Result<(), chatmill_index::IndexError> {
            let mut s = self.0.lock().unwrap();
            s.extend(r.iter().map(|r| r.chunk_id.clone()));
            Ok(())
        }
        fn remove(&self, ids: &[String]) -> Result<(), chatmill_index::IndexError> {
            let mut s = self.0.lock().unwrap();
            for id in ids {
                s.remove(id);
            }
            Ok(())
        }
        fn ids(&self) -> Result<BTreeSet<String>, chatmill_index::IndexError> {
            Ok(self.0.lock().unwrap().clone())
        }
        fn count(&self) -> Result<u64, chatmill_index::IndexError> {
            Ok(self.0.lock().unwrap().len() as u64)
        }
    }

    fn chunk(id: &str, conv: &str, range: &str) -> String {
        format!(
            "---\nsource_file: c.json\nsource_platform: chatgpt\nmodel_used: gpt-4o\ntimestamp: 2024-05-01T10:00:00Z\nturn_range: '{range}'\ntopics:\n- bread\nchunk_id: {id}\nagent_id: external\nconversation_id: {conv}\n---\n\n## Context\n\nAbout bread.\n\n## Exchange\n\n**User:**\n\nHow?\n\n**Assistant:**\n\nLike this.\n"
        )
    }

    #[test]
    fn verify_finds_disagreements_and_repair_rederives_from_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.md"), chunk("a", "c1", "1")).unwrap();
        std::fs::write(root.join("b.md"), chunk("b", "c1", "2-3")).unwrap();
        std::fs::write(root.join("notes.md"), "# my own notes\n").unwrap();
        std::fs::write(
            root.join("broken.md"),
            "---\nchunk_id: x\n---\n\n## Context\n",
        )
        .unwrap();
        // The manifest knows `a` and a chunk whose file is gone.
        let mut m = Manifest::new();
        m.conversations.insert(
            conversation_key("chatgpt", "c1"),
            chatmill_root::manifest::ConversationRecord {
                last_pair: 1,
                chunk_ids: vec!["a".into(), "gone".into()],
                note: None,
            },
        );
        m.save(&root.join(MANIFEST_FILE)).unwrap();
        let ix = MemIndex::default();
        ix.0.lock()
            .unwrap()
            .extend(["a".to_string(), "ghost".to_string()]);

        let r = run(root, Some(&ix), false, None).unwrap();
        let kinds: BTreeSet<(&str, &str)> = r
            .problems
            .iter()
            .map(|p| (p.kind, p.subject.as_str()))
            .collect();
        assert_eq!(
            kinds,
            BTreeSet::from([
                ("unparsable", "broken.md"),
                ("missing-file", "gone"),
                ("not-in-manifest", "b"),
                ("not-indexed", "b"),
                ("orphan-in-index", "ghost"),
                ("note-missing", "chatgpt:c1"),
            ]),
            "{r:#?}"
        );
        assert_eq!(
            (r.chunk_files, r.manifest_chunks, r.index_chunks),
            (2, 2, Some(2))
        );

        let r = run(root, Some(&ix), true, None).unwrap();
        assert_eq!(r.repaired.len(), 3, "{r:#?}");
        assert!(
            r.repaired[1].starts_with("wrote 1 conversation notes"),
            "{r:#?}"
        );
        let after = run(root, Some(&ix), false, None).unwrap();
        assert_eq!(
            after.problems.iter().map(|p| p.kind).collect::<Vec<_>>(),
            ["unparsable"],
            "only what needs a human is left: {after:#?}"
        );
        let m = Manifest::load(&root.join(MANIFEST_FILE)).unwrap();
        let conv = &m.conversations[&conversation_key("chatgpt", "c1")];
        assert_eq!(conv.last_pair, 3);
        assert_eq!(conv.chunk_ids, ["a", "b"]);
        assert_eq!(
            *ix.0.lock().unwrap(),
            BTreeSet::from(["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn a_corrupt_manifest_is_rebuilt_from_the_chunk_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.md"), chunk("a", "c1", "4")).unwrap();
        std::fs::write(root.join(MANIFEST_FILE), "{ truncated").unwrap();
        let r = run(root, None, false, None).unwrap();
        assert_eq!(r.problems[0].kind, "manifest");
        let r = run(root, None, true, None).unwrap();
        assert!(r.ok(), "{r:#?}");
        assert!(r.repaired[0].contains("rebuilt"));
        let m = Manifest::load(&root.join(MANIFEST_FILE)).unwrap();
        assert_eq!(
            m.conversations[&conversation_key("chatgpt", "c1")].last_pair,
            4
        );
    }
}
