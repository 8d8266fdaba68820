//! What an import reports: the summary, each input's problems and
//! warnings, and the manifest record of each input with its content hash.

use chatmill_root::manifest::{AdapterRef, FileRecord, FileStatus};

use super::work::Work;
use crate::import::{FileProblem, Summary};

/// What a reprocess will read again, and what it cannot: outdated inputs
/// that are not among the run's are listed, their chunks kept.
pub(super) fn reprocess_planned(summary: &mut Summary, plan: &super::reprocess::Plan) {
    summary.files_reprocessed = plan.due.len() as u32;
    for key in &plan.missing {
        let reason = "an older chatmill read it, and it is not among this run's inputs (no longer in raw/?): its chunks are kept as they are".to_string();
        let hint = "to rewrite them, put the file back (or name it) and run `chatmill import --reprocess` again";
        summary
            .warnings
            .push(problem(key, reason, Some(hint.into()), false));
    }
}

/// An input's content hash and size, as its import gets them.
pub(super) enum Digest<'s> {
    /// Read before: the manifest compared it.
    Known(String, u64),
    /// Being read on another thread.
    Beside(Hashing<'s>),
    /// Read as the input is copied out (a zip entry).
    InCopy,
}

/// A file's hash being read beside its parse, and the file's size and
/// modification time as the import found it.
pub(super) struct Hashing<'s> {
    pub(super) handle: std::thread::ScopedJoinHandle<'s, std::io::Result<(String, u64)>>,
    pub(super) path: &'s std::path::Path,
    pub(super) listed: (u64, Option<std::time::SystemTime>),
}

impl Hashing<'_> {
    /// The file's content hash and size, unless the file changed while it
    /// was read (a session still being written: the hash could cover
    /// bytes the parse did not see), which leaves the hash empty so that
    /// the next import reads the file again.
    pub(super) fn finish(self) -> std::io::Result<(String, u64)> {
        let (sha256, size) = self
            .handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let now = fs_err::metadata(self.path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if size == self.listed.0 && now == Some(self.listed) {
            Ok((sha256, size))
        } else {
            tracing::info!(
                "`{}` changed while it was read: it is read again by the next import",
                self.path.display()
            );
            Ok((String::new(), size))
        }
    }
}

/// Reports that the input `key` cannot be read (`e`); a later run may
/// read it.
pub(super) fn unreadable(w: &mut Work<'_, '_, '_>, key: &str, e: &dyn std::fmt::Display) {
    w.summary.errors.push(FileProblem {
        file: key.to_string(),
        reason: format!("cannot read it: {e}"),
        hint: None,
        retryable: true,
    });
}

/// Records `record` for `key` with its content hash, once that is read
/// (`hashing`). An input whose hash could not be read is recorded without
/// one, so the next import reads it again (its chunks, already written,
/// are not written twice); that it could not be read is reported unless
/// its import reported a failure already.
pub(super) fn record_file(
    w: &mut Work<'_, '_, '_>,
    key: &str,
    mut record: FileRecord,
    hashing: Option<Hashing<'_>>,
) {
    match hashing.map(Hashing::finish) {
        None => {}
        Some(Ok((sha256, size))) => (record.sha256, record.size) = (sha256, size),
        Some(Err(e)) => {
            record.sha256.clear();
            if record.status == FileStatus::Processed {
                unreadable(w, key, &e);
            }
        }
    }
    w.manifest.files.insert(key.to_string(), record);
}

/// A problem with the input `key`.
pub(super) fn problem(
    key: &str,
    reason: String,
    hint: Option<String>,
    retryable: bool,
) -> FileProblem {
    FileProblem {
        file: key.to_string(),
        reason,
        hint,
        retryable,
    }
}

impl<'s> Digest<'s> {
    /// The content hash and size known now (empty while it is read beside
    /// the parse), and the hashing still under way.
    pub(super) fn resolve(
        self,
        local: &mut chatmill_root::inventory::Materialized,
    ) -> (String, u64, Option<Hashing<'s>>) {
        match self {
            Self::Known(sha256, size) => (sha256, size, None),
            Self::Beside(hashing) => (String::new(), hashing.listed.0, Some(hashing)),
            Self::InCopy => {
                let (sha256, size) = local
                    .digest
                    .take()
                    .expect("a copied-out input is hashed as it is copied");
                (sha256, size, None)
            }
        }
    }
}

/// Records what chunking the input `key` did: its adapter, the
/// adapters that declined it and what the trust boundary changed (as
/// warnings), and whether it was processed or failed (with why).
pub(super) fn outcome(
    w: &mut Work<'_, '_, '_>,
    key: &str,
    record: &mut FileRecord,
    chunked: super::input::Chunked<'_>,
) {
    counts(w, key, record);
    let adapter = chunked.adapter;
    let id = &adapter.info.id;
    record.adapter = Some(AdapterRef {
        id: id.clone(),
        version: adapter.info.version.clone(),
        sha256: adapter.sha256.clone(),
        chunk_format: chatmill_root::chunk::CHUNK_FORMAT,
        redaction: w.svc.redaction(),
    });
    for d in &chunked.parsed.declined {
        let reason = format!(
            "adapter {} said it is not its format ({}); read with `{id}` instead",
            d.adapter,
            redacted(w, &d.message)
        );
        let hint = format!("`--adapter-id {id}` picks that adapter without asking the others");
        w.summary
            .warnings
            .push(problem(key, reason, Some(hint), false));
    }
    for line in chunked.parsed.adjustments.lines() {
        let hint = "the adapter breaks a rule of `wit/adapter.wit`: report it to its author";
        let reason = format!("adapter `{id}`: {}", redacted(w, &line));
        w.summary
            .warnings
            .push(problem(key, reason, Some(hint.into()), false));
    }
    let (reason, hint) = match chunked.result {
        Ok(()) if chunked.pairs > 0 => {
            w.summary.files_processed += 1;
            return;
        }
        Err(reason) => {
            let hint = match chunked.parsed.hint {
                Some(h) => format!("{h}; chunks already written from it are kept"),
                None => format!(
                    "chunks already written from it are kept; fix the file or force an adapter with `--adapter-id`, then run again (adapter `{id}`)"
                ),
            };
            (redacted(w, &reason), hint)
        }
        Ok(()) => (
            format!(
                "adapter `{id}` found no turn pairs in a non-empty file ({} items skipped)",
                chunked.skipped
            ),
            no_pairs_hint(id),
        ),
    };
    record.status = FileStatus::Failed;
    record.reason = Some(reason.clone());
    w.summary
        .errors
        .push(problem(key, reason, Some(hint), false));
}

/// `text` an adapter wrote (an error, a decline) with its secrets replaced:
/// it may quote the input, and it goes into the manifest and the summary.
fn redacted(w: &Work<'_, '_, '_>, text: &str) -> String {
    match w.svc.redactor {
        Some(r) => r.redact(text).text.into_owned(),
        None => text.to_owned(),
    }
}

/// Puts on `record` what `chatmill report` checks preservation against:
/// the pairs of each conversation the input holds and those left out (the
/// ones left out by earlier runs of a grown input kept), and which chunks
/// this run added.
fn counts(w: &mut Work<'_, '_, '_>, key: &str, record: &mut FileRecord) {
    let before = w.manifest.files.get(key);
    let mut pairs = before.map(|r| r.pairs.clone()).unwrap_or_default();
    for (conv, now) in w.processor.take_tally() {
        let counts = pairs.entry(conv).or_default();
        counts.parsed = now.parsed;
        for e in now.excluded {
            if !counts.excluded.iter().any(|old| old.pair == e.pair) {
                counts.excluded.push(e);
            }
        }
    }
    record.pairs = pairs;
    record.run = Some(w.processor.started());
    let had = before.map_or(0, |r| r.chunk_ids.len());
    record.run_chunks = record.chunk_ids.len().saturating_sub(had) as u32;
}

/// What to do about a file adapter `id` read without finding a request
/// with its reply: said for the format that adapter reads.
fn no_pairs_hint(id: &str) -> String {
    match id {
        "api-log" => "if this is the results file of a batch, keep it in the folder of its requests file and name the two alike (`x_input.jsonl` and `x_output.jsonl`, or `requests` and `results`): they are then read together; otherwise check the log holds both requests and responses".into(),
        "chatgpt" => "a ChatGPT export's conversations are in `conversations.json` (or `conversations-000.json`, … shards); this file has none with both a prompt and a reply: check it is that file and complete (download the export again if it was cut short)".into(),
        "claude" => "a Claude.ai export's conversations are in `conversations.json`; this file has none with both a prompt and a reply: check it is that file and complete".into(),
        "claude-code" => "the session has no prompt with a reply yet (an empty or aborted session); a session still being written is read again when it changes".into(),
        "gemini" => "Takeout keeps the prompts of Gemini Apps and often drops their answers; export `My Activity › Gemini Apps` again, or check the file is a complete Gemini chat".into(),
        "markdown" => "the log has no user turn followed by an assistant turn (`**User:**` / `**Assistant:**` in a chatmill log, `_**User**_` / `_**Assistant**_` in SpecStory, `####` prompts in aider): check it is the whole log".into(),
        _ => format!("check the file is a complete export in a format adapter `{id}` reads, or pick another with `--adapter-id`"),
    }
}

/// Records the batch results file `c` read with the requests file `key`:
/// as joined to it, with the same outcome; the chunks are listed on the
/// requests file's record.
pub(super) fn record_companion(
    w: &mut Work<'_, '_, '_>,
    key: &str,
    record: &mut FileRecord,
    c: &chatmill_root::inventory::Item,
    (sha256, size): (String, u64),
) {
    record.joined = Some(c.key.clone());
    if record.status == FileStatus::Processed {
        w.summary.files_processed += 1;
    }
    let c_record = FileRecord {
        sha256,
        size,
        adapter: record.adapter.clone(),
        processed_at: record.processed_at,
        status: record.status,
        reason: record.reason.clone(),
        chunk_ids: Vec::new(),
        joined: Some(key.to_string()),
        pairs: Default::default(),
        run: record.run,
        run_chunks: 0,
    };
    w.manifest.files.insert(c.key.clone(), c_record);
}
