//! Turning one normalized conversation into chunk files: only the pairs the
//! manifest has not seen, chunked, given headers, deduplicated by chunk id,
//! written atomically, and recorded in the manifest. Shared by batch import
//! and inline mode.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use chatmill_chunking::chunker::{ChunkerConfig, PairText, Plan, PlannedChunk, plan};
use chatmill_chunking::header::{HeaderInput, HeaderWriter, Previous};
use chatmill_chunking::render::{RenderOptions, plain_text, render_parts};
use chatmill_model::{Conversation, Pair};
use chatmill_root::atomic::Folder;
use chatmill_root::chunk::{ChunkDoc, Exchange, Frontmatter, chunk_id, turn_range};
use chatmill_root::chunk_store::Scanned;
use chatmill_root::manifest::{Excluded, InputPairs, Manifest, conversation_key};
use chatmill_root::record::index_record;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::processor::prepared::TempFiles;

mod config;
mod error;
mod known;
mod prepared;

use known::Known;

pub use config::{Naming, ProcessorConfig, slug};
pub use error::ProcessError;
pub use prepared::{HEADER_STATUS, Outcome, Prepared, Written};

/// Frontmatter keys adapters' metadata may not override. The runtime drops
/// and reports them already; kept here too, as the last line before YAML.
const RESERVED: &[&str] = chatmill_model::RESERVED_KEYS;

pub struct Processor<'a> {
    cfg: ProcessorConfig,
    header: &'a dyn HeaderWriter,
    // Behind a lock so that conversations are prepared while earlier ones
    // are committed (`prepare` reads it, `commit` adds to it).
    existing: Mutex<Known>,
    /// The first request of a conversation that arrives a pair at a time
    /// (inline mode), for its derived title.
    first_request: Option<String>,
    /// When this processor (an import run) started.
    started: DateTime<Utc>,
    /// Per conversation committed since the last [`Processor::take_tally`]:
    /// its pairs and those left out (what an input's record keeps).
    tally: Mutex<BTreeMap<String, InputPairs>>,
    /// Chunk files are written as temp files, left to the caller to place
    /// ([`Processor::ahead`]).
    temp_files: bool,
}

/// Where one conversation's chunk files go: the output folder (opened at
/// the first), what its note lists (a first chunking), and the temp files
/// of a processor working ahead.
#[derive(Default)]
struct Out {
    folder: Option<Folder>,
    entries: Option<Vec<Scanned>>,
    temp: Vec<(String, String)>,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// The last pair of `conv` that `manifest` records as chunked (0: none).
pub fn chunked_to(manifest: &Manifest, conv: &Conversation) -> u32 {
    manifest
        .conversations
        .get(&conversation_key(&conv.platform, &conv.id))
        .map_or(0, |r| r.last_pair)
}

/// The last pair that [`Processor::commit`] records as chunked once `conv`
/// is prepared from `seen`.
pub fn chunked_after(conv: &Conversation, seen: u32) -> u32 {
    conv.pairs
        .iter()
        .rfind(|p| p.index > seen)
        .map_or(seen, |p| p.index)
}

impl<'a> Processor<'a> {
    pub fn new(cfg: ProcessorConfig, header: &'a dyn HeaderWriter, manifest: &Manifest) -> Self {
        let existing = manifest.each_chunk_id().collect();
        Self {
            cfg,
            header,
            existing: Mutex::new(existing),
            first_request: None,
            started: Utc::now(),
            tally: Mutex::default(),
            temp_files: false,
        }
    }

    /// A processor whose [`Processor::prepare`] writes each chunk file as a
    /// temp file ([`Prepared::place`] puts them in place), and knows no
    /// chunk ids: for preparing a conversation before it is certain how
    /// far it is chunked, which the caller checks before placing.
    pub fn ahead(cfg: ProcessorConfig, header: &'a dyn HeaderWriter) -> Self {
        Self {
            temp_files: true,
            ..Self::new(cfg, header, &Manifest::new())
        }
    }

    /// Whether any of `written` has an id already recorded.
    pub fn knows_any(&self, written: &[Written]) -> bool {
        let known = self.existing.lock().unwrap_or_else(PoisonError::into_inner);
        written.iter().any(|w| known.contains(&w.chunk_id))
    }

    /// A processor that deduplicates against one conversation's chunks only
    /// (inline mode: chunk ids embed the conversation, so no other
    /// conversation can hold one; this avoids reading every id per turn).
    pub fn for_ids(
        cfg: ProcessorConfig,
        header: &'a dyn HeaderWriter,
        manifest: &Manifest,
        conversation_key: &str,
    ) -> Self {
        let existing = manifest
            .conversations
            .get(conversation_key)
            .map(|r| r.chunk_ids.iter().map(String::as_str).collect())
            .unwrap_or_default();
        Self {
            cfg,
            header,
            existing: Mutex::new(existing),
            first_request: None,
            started: Utc::now(),
            tally: Mutex::default(),
            temp_files: false,
        }
    }

    /// When this processor was made: an import run's start.
    pub fn started(&self) -> DateTime<Utc> {
        self.started
    }

    /// The conversations committed since the last call: the pairs each
    /// holds and the pairs left out of its chunks (an input's share).
    pub fn take_tally(&self) -> BTreeMap<String, InputPairs> {
        std::mem::take(&mut *self.tally.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The request a title is derived from when the conversation has none
    /// (inline mode: the session's first turn; otherwise its first pair's).
    pub fn set_first_request(&mut self, request: Option<String>) {
        self.first_request = request;
    }

    /// The agent the next chunks are written for (inline mode: per turn).
    pub fn set_agent(&mut self, agent_id: &str) {
        agent_id.clone_into(&mut self.cfg.agent_id);
    }

    /// The chunk file's name, relative to the output folder.
    fn file_name(
        &self,
        chunk_id: &str,
        conv: &Conversation,
        first: u32,
        time: DateTime<Utc>,
        topics: &[String],
    ) -> String {
        match self.cfg.naming {
            Naming::ChunkId => format!("{chunk_id}.md"),
            Naming::Inline => {
                let short: String = slug(&conv.id, 12);
                let topic = topics
                    .first()
                    .map_or_else(|| "exchange".to_string(), |t| slug(t, 40));
                let part = chunk_id
                    .rsplit_once("-part-")
                    .map_or_else(String::new, |(_, n)| format!("_part-{n}"));
                format!(
                    "{}_session-{short}_pair-{first:03}{part}_{topic}.md",
                    time.format("%Y-%m-%d_%H-%M")
                )
            }
        }
    }

    /// Chunks the pairs of `conv` the manifest has not seen, writes them, and
    /// records them in `manifest` (the caller saves it once the file is done).
    /// `fallback_time` dates pairs whose source has no time (the file's).
    pub fn process(
        &mut self,
        conv: &Conversation,
        source_file: &str,
        fallback_time: DateTime<Utc>,
        manifest: &mut Manifest,
    ) -> Result<Outcome, ProcessError> {
        let seen = chunked_to(manifest, conv);
        let prepared = self.prepare(conv, source_file, fallback_time, seen, None)?;
        Ok(self.commit(prepared, manifest))
    }

    /// Records what [`Processor::prepare`] wrote: the chunk ids, and how far
    /// the conversation is chunked. Chunks already recorded (another
    /// conversation's) count as duplicates.
    pub fn commit(&self, prepared: Prepared, manifest: &mut Manifest) -> Outcome {
        let Prepared {
            key,
            last_pair,
            mut outcome,
            parsed,
            exclusions,
            ..
        } = prepared;
        {
            let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
            let counts = tally.entry(key.clone()).or_default();
            counts.parsed = counts.parsed.max(parsed);
            counts.excluded.extend(exclusions);
        }
        let Some(last_pair) = last_pair else {
            return outcome;
        };
        let record = manifest.conversations.entry(key).or_default();
        let mut written = Vec::with_capacity(outcome.written.len());
        let mut existing = self.existing.lock().unwrap_or_else(PoisonError::into_inner);
        for w in outcome.written {
            if existing.insert(&w.chunk_id) {
                record.chunk_ids.push(w.chunk_id.clone());
                written.push(w);
            } else {
                outcome.duplicates += 1;
            }
        }
        outcome.written = written;
        record.last_pair = record.last_pair.max(last_pair);
        outcome
    }

    /// The first half of [`Processor::process`], safe to run for several
    /// conversations at once: chunks, headers, and the chunk files written
    /// (atomically); nothing recorded yet.
    /// `seen` is the last pair already chunked ([`chunked_to`]); `previous`
    /// is the exchange before the first new pair, when the caller knows it
    /// (inline mode keeps it per session).
    pub fn prepare(
        &self,
        conv: &Conversation,
        source_file: &str,
        fallback_time: DateTime<Utc>,
        seen: u32,
        previous: Option<Previous>,
    ) -> Result<Prepared, ProcessError> {
        let key = conversation_key(&conv.platform, &conv.id);
        let fresh: Vec<&Pair> = conv.pairs.iter().filter(|p| p.index > seen).collect();
        let mut out = Outcome {
            new_pairs: fresh.len() as u32,
            ..Outcome::default()
        };
        let last_pair = fresh.last().map(|p| p.index);
        let parsed = conv.pairs.len() as u32;
        if fresh.is_empty() {
            return Ok(Prepared {
                key,
                last_pair,
                outcome: out,
                previous,
                parsed,
                exclusions: Vec::new(),
                note: None,
                temp: None,
            });
        }
        let (c, plan) = self.chunking(conv, source_file, fallback_time, fresh);
        plan.check(c.texts.len())?;
        out.excluded = plan.excluded.len() as u32;
        let exclusions = exclusions(&c, &plan);
        let mut previous = previous.or_else(|| self.previous_before(&c, seen));
        let mut to = Out {
            // A conversation chunked for the first time: what its note lists.
            entries: (seen == 0).then(Vec::new),
            ..Out::default()
        };
        for planned in &plan.chunks {
            match self.write_chunk(&c, planned, &previous, &mut to)? {
                None => {
                    out.duplicates += 1;
                    to.entries = None;
                }
                Some((written, next)) => {
                    previous = Some(next);
                    out.written.push(written);
                }
            }
        }
        let note = to
            .entries
            .and_then(|e| chatmill_root::notes::Ready::new(&key, &e));
        let temp = match to.folder {
            Some(folder) if self.temp_files => Some(TempFiles {
                folder,
                files: to.temp,
            }),
            _ => None,
        };
        Ok(Prepared {
            key,
            last_pair,
            outcome: out,
            previous,
            parsed,
            exclusions,
            note,
            temp,
        })
    }

    /// What every chunk of `conv` is written with, and the plan of its new
    /// pairs (`fresh`).
    fn chunking<'c>(
        &self,
        conv: &'c Conversation,
        source_file: &'c str,
        fallback_time: DateTime<Utc>,
        fresh: Vec<&'c Pair>,
    ) -> (Chunking<'c>, Plan) {
        let texts: Vec<PairText> = fresh
            .iter()
            .map(|p| PairText {
                index: p.index,
                user: render_parts(&p.user, self.cfg.render),
                assistant: render_parts(&p.assistant, self.cfg.render),
            })
            .collect();
        // Separate calls (an API batch) are neither merged nor read as each
        // other's context.
        let independent = conv
            .metadata
            .get("pairs")
            .is_some_and(|v| v == "independent");
        let chunker = ChunkerConfig {
            max_follow_up_words: if independent {
                0
            } else {
                self.cfg.chunker.max_follow_up_words
            },
            ..self.cfg.chunker
        };
        let plan = plan(&texts, &chunker);
        // What most of its separate calls share (a batch's instruction).
        let common = if independent {
            let prompts: Vec<String> = fresh.iter().map(|p| plain_text(&p.user)).collect();
            let prompts: Vec<&str> = prompts.iter().map(String::as_str).collect();
            chatmill_chunking::header::common_terms(&prompts)
        } else {
            Vec::new()
        };
        let extras = conv
            .metadata
            .iter()
            .filter(|(k, _)| !RESERVED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let c = Chunking {
            conv,
            source_file,
            fallback_time,
            fresh,
            texts,
            render: self.cfg.render,
            independent,
            common,
            extras,
            total_pairs: conv.pairs.last().map_or(0, |p| p.index),
        };
        (c, plan)
    }

    /// The exchange before the first new pair of a conversation that grew:
    /// the export holds it, so the first new chunk's header says what it
    /// follows, as it would in one import of the whole.
    fn previous_before(&self, c: &Chunking<'_>, seen: u32) -> Option<Previous> {
        if c.independent {
            return None;
        }
        let before = c.conv.pairs.iter().rfind(|p| p.index <= seen)?;
        let request = plain_text(&before.user);
        Some(Previous {
            topics: chatmill_chunking::header::topics(
                c.conv.title.as_deref(),
                &request,
                &render_parts(&before.assistant, self.cfg.render),
            ),
            request,
        })
    }

    /// Writes one planned chunk, unless its id is already recorded (`None`,
    /// a duplicate); with what the next chunk's header follows.
    fn write_chunk(
        &self,
        c: &Chunking<'_>,
        planned: &PlannedChunk,
        previous: &Option<Previous>,
        to: &mut Out,
    ) -> Result<Option<(Written, Previous)>, ProcessError> {
        let conv = c.conv;
        let first = c.fresh[planned.pairs[0]];
        let last = c.fresh[*planned.pairs.last().expect("a chunk has pairs")];
        let time = first.timestamp.or(conv.created).unwrap_or(c.fallback_time);
        let mut id = chunk_id(&conv.platform, &conv.id, first.index, last.index, time);
        if let Some((n, _, _)) = &planned.part {
            id.push_str(&format!("-part-{n}"));
        }
        let known = self
            .existing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&id);
        if known {
            return Ok(None);
        }
        let exchanges = c.exchanges(planned);
        let user: Vec<String> = planned
            .pairs
            .iter()
            .map(|&i| plain_text(&c.fresh[i].user))
            .collect();
        let user = user.join("\n");
        let range = turn_range(first.index, last.index);
        let header = self.header_of(c, &id, time, &user, &exchanges, &range, previous)?;
        let model = last
            .model
            .clone()
            .or_else(|| first.model.clone())
            .or_else(|| conv.model.clone())
            .unwrap_or_else(|| "unknown".into());
        let mut extra = c.extras.clone();
        if let Some((n, of, _)) = &planned.part {
            extra.insert("part".into(), format!("{n}/{of}"));
        }
        if header.backfill {
            // Rewritten (and this key dropped) when the real header comes.
            extra.insert(HEADER_STATUS.into(), "pending".into());
        }
        let (title, title_derived) = self.title(c, first);
        let doc = ChunkDoc {
            frontmatter: Frontmatter {
                source_file: c.source_file.to_string(),
                source_platform: conv.platform.clone(),
                model_used: model,
                timestamp: iso(time),
                conversation_title: title,
                title_derived,
                turn_range: range,
                topics: header.topics.clone(),
                chunk_id: id.clone(),
                agent_id: self.cfg.agent_id.clone(),
                conversation_id: conv.id.clone(),
                redaction: self.cfg.redaction,
                extra,
            },
            context: header.context,
            exchanges,
        };
        let rel = self.file_name(&id, conv, first.index, time, &doc.frontmatter.topics);
        let written = self.write_file(doc, id, rel, header.backfill, to)?;
        let next = Previous {
            topics: header.topics,
            request: user,
        };
        Ok(Some((written, next)))
    }

    /// A chunk's title, and whether it is derived ([`chatmill_chunking::title`]): the
    /// source's, else a phrase from the conversation's first request (of
    /// independent pairs, the chunk's own first request).
    fn title(&self, c: &Chunking<'_>, first: &Pair) -> (Option<String>, bool) {
        if let Some(t) = &c.conv.title {
            return (Some(t.clone()), false);
        }
        use chatmill_chunking::title::derived;
        let title = match (&self.first_request, c.independent) {
            (_, true) => derived(&plain_text(&first.user)),
            (Some(r), false) => derived(r),
            // The first request that is more than a greeting and has words.
            (None, false) => chatmill_chunking::title::of_requests(
                c.conv.pairs.iter().map(|p| plain_text(&p.user)),
            ),
        };
        let is_derived = title.is_some();
        (title, is_derived)
    }

    /// The header of one chunk (`user` its requests, `exchanges` its text).
    #[allow(clippy::too_many_arguments, reason = "one chunk's parts, named")]
    fn header_of(
        &self,
        c: &Chunking<'_>,
        id: &str,
        time: DateTime<Utc>,
        user: &str,
        exchanges: &[Exchange],
        range: &str,
        previous: &Option<Previous>,
    ) -> Result<chatmill_chunking::header::Header, ProcessError> {
        let assistant: Vec<&str> = exchanges.iter().map(|e| e.assistant.as_str()).collect();
        self.header
            .write(&HeaderInput {
                platform: &c.conv.platform,
                title: c.conv.title.as_deref(),
                date: Some(time),
                user,
                assistant: &assistant.join("\n"),
                turn_range: range,
                total_pairs: c.total_pairs,
                previous: previous.as_ref().filter(|_| !c.independent),
                common: &c.common,
                independent: c.independent,
            })
            .map_err(|source| ProcessError::Header {
                chunk_id: id.to_string(),
                source,
            })
    }

    /// Writes `doc` as the file `rel` in the output folder (opened once per
    /// conversation), or writes it there as a temp file.
    fn write_file(
        &self,
        doc: ChunkDoc,
        id: String,
        rel: String,
        header_pending: bool,
        to: &mut Out,
    ) -> Result<Written, ProcessError> {
        let text = doc.to_markdown().map_err(|source| ProcessError::Render {
            chunk_id: id.clone(),
            source,
        })?;
        let folder = match &mut to.folder {
            Some(f) => Ok(&*f),
            None => Folder::open(&self.cfg.out_dir).map(|f| &*to.folder.insert(f)),
        };
        let written = folder.and_then(|f| match self.temp_files {
            false => f.write(&rel, text.as_bytes()),
            true => {
                let tmp = f.stage(text.as_bytes())?;
                to.temp.push((tmp, rel.clone()));
                Ok(())
            }
        });
        written.map_err(|source| ProcessError::Write {
            chunk_id: id.clone(),
            source,
        })?;
        let record = index_record(&doc, &text, &rel);
        let path = self.cfg.out_dir.join(&rel);
        if let Some(entries) = &mut to.entries {
            // What a note reads of a chunk: its name, frontmatter, header.
            let ChunkDoc {
                frontmatter,
                context,
                ..
            } = doc;
            let doc = ChunkDoc {
                frontmatter,
                context,
                exchanges: Vec::new(),
            };
            entries.push(Scanned {
                rel,
                text: String::new(),
                doc,
            });
        }
        Ok(Written {
            chunk_id: id,
            path,
            record,
            header_pending,
        })
    }
}

/// The new pairs `plan` leaves out, as the manifest records them.
fn exclusions(c: &Chunking<'_>, plan: &Plan) -> Vec<Excluded> {
    plan.excluded
        .iter()
        .map(|&(pos, why)| Excluded {
            pair: c.fresh[pos].index,
            reason: match why {
                chatmill_chunking::chunker::Exclusion::Mechanical => "mechanical".into(),
            },
            request: c.texts[pos].user.chars().take(80).collect(),
        })
        .collect()
}

/// What every chunk of one conversation is written with.
struct Chunking<'c> {
    conv: &'c Conversation,
    source_file: &'c str,
    /// The time of pairs whose source has none (the file's).
    fallback_time: DateTime<Utc>,
    /// The pairs not chunked before, and their rendered text.
    fresh: Vec<&'c Pair>,
    texts: Vec<PairText>,
    /// How they were rendered (answers that share a chunk are rendered
    /// again when their footnotes must be numbered on).
    render: RenderOptions,
    /// Separate requests (`pairs: independent`), not one dialogue.
    independent: bool,
    /// What most of its requests share (independent pairs only).
    common: Vec<String>,
    /// Its metadata that becomes frontmatter keys.
    extras: BTreeMap<String, String>,
    total_pairs: u32,
}

impl Chunking<'_> {
    /// The exchanges of one planned chunk: its pairs, or one part of a
    /// long answer with its request.
    fn exchanges(&self, planned: &PlannedChunk) -> Vec<Exchange> {
        match &planned.part {
            Some((_, _, text)) => vec![Exchange {
                user: self.texts[planned.pairs[0]].user.clone(),
                assistant: chatmill_chunking::render::part_with_footnotes(
                    text,
                    &self.texts[planned.pairs[0]].assistant,
                ),
            }],
            None => {
                // Footnote labels stay unique when answers share the file.
                let answers: Vec<(&[chatmill_model::Part], &str)> = planned
                    .pairs
                    .iter()
                    .map(|&i| {
                        (
                            &self.fresh[i].assistant[..],
                            self.texts[i].assistant.as_str(),
                        )
                    })
                    .collect();
                let answers = chatmill_chunking::render::answers_numbered_on(&answers, self.render);
                planned
                    .pairs
                    .iter()
                    .zip(answers)
                    .map(|(&i, assistant)| Exchange {
                        user: self.texts[i].user.clone(),
                        assistant,
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::processor::known::Known;
    use chatmill_chunking::header::ExtractiveWriter;
    use chatmill_model::{Pair, Part};
    use chatmill_root::manifest::ConversationRecord;
    use std::path::Path;

    fn pair(index: u32, user: &str, assistant: &str) -> Pair {
        Pair {
            index,
            timestamp: DateTime::from_timestamp(1_714_557_600 + i64::from(index) * 60, 0),
            model: Some("gpt-4o".into()),
            user: vec![Part::Text { text: user.into() }],
            assistant: vec![Part::Text {
                text: assistant.into(),
            }],
            metadata: BTreeMap::new(),
        }
    }

    fn conv(pairs: Vec<Pair>) -> Conversation {
        Conversation {
            id: "conv-1".into(),
            title: Some("Reviving a sourdough starter: tips".into()),
            created: None,
            updated: None,
            platform: "chatgpt".into(),
            model: None,
            metadata: BTreeMap::from([
                ("project".into(), "bakery".into()),
                ("chunk_id".into(), "evil".into()),
            ]),
            pairs,
            skipped: BTreeMap::new(),
        }
    }

    fn cfg(dir: &Path) -> ProcessorConfig {
        ProcessorConfig {
            naming: Default::default(),
            out_dir: dir.to_path_buf(),
            agent_id: "external".into(),
            render: RenderOptions::default(),
            chunker: ChunkerConfig::default(),
            redaction: None,
        }
    }

    #[test]
    fn a_conversation_becomes_chunk_files_once_and_growth_adds_only_new_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = Manifest::new();
        let t0 = DateTime::from_timestamp(0, 0).unwrap();
        let c = conv(vec![
            pair(
                1,
                "My sourdough starter smells like acetone. Is it dead?",
                "No, it is hungry.",
            ),
            pair(2, "Why?", "It ran out of food."),
            pair(3, "thanks", "You're welcome!"),
        ]);
        let writer = ExtractiveWriter;
        let mut p = Processor::new(cfg(dir.path()), &writer, &manifest);
        let out = p
            .process(&c, "conversations.json", t0, &mut manifest)
            .unwrap();
        assert_eq!(
            out.written.len(),
            1,
            "pair 2 is a follow-up of pair 1: {out:?}"
        );
        assert_eq!(out.excluded, 1, "pair 3 is mechanical");
        let text = std::fs::read_to_string(&out.written[0].path).unwrap();
        let doc = ChunkDoc::parse(&text).unwrap();
        assert_eq!(doc.frontmatter.turn_range, "1-2");
        assert_eq!(doc.frontmatter.model_used, "gpt-4o");
        assert_eq!(doc.frontmatter.timestamp, "2024-05-01T10:01:00Z");
        assert_eq!(
            doc.frontmatter.extra.get("project").map(String::as_str),
            Some("bakery")
        );
        assert_ne!(
            doc.frontmatter.chunk_id, "evil",
            "metadata cannot override frontmatter fields"
        );
        assert_eq!(doc.exchanges.len(), 2);
        assert!(
            doc.context.contains("Reviving a sourdough starter: tips"),
            "{}",
            doc.context
        );

        // The same conversation again: nothing new.
        let mut p = Processor::new(cfg(dir.path()), &writer, &manifest);
        let again = p
            .process(&c, "conversations.json", t0, &mut manifest)
            .unwrap();
        assert_eq!(again, Outcome::default());

        // It grew: only pair 4 is chunked; earlier chunks are untouched.
        let mut grown = c.clone();
        grown.pairs.push(pair(
            4,
            "How warm should the kitchen be for the starter to rise?",
            "About 24 °C.",
        ));
        let mut p = Processor::new(cfg(dir.path()), &writer, &manifest);
        let out = p
            .process(&grown, "conversations-001.json", t0, &mut manifest)
            .unwrap();
        assert_eq!(out.new_pairs, 1);
        assert_eq!(out.written.len(), 1);
        let doc = ChunkDoc::parse(&std::fs::read_to_string(&out.written[0].path).unwrap()).unwrap();
        assert_eq!(doc.frontmatter.turn_range, "4");
        assert_eq!(
            manifest.conversations[&conversation_key("chatgpt", "conv-1")].last_pair,
            4
        );
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 2, "no duplicates, no temp files");
    }

    #[test]
    fn independent_pairs_are_neither_merged_nor_each_others_context() {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = Manifest::new();
        let t0 = DateTime::from_timestamp(0, 0).unwrap();
        let mut c = conv(vec![
            pair(
                1,
                "My sourdough starter smells like acetone. Is it dead?",
                "No, it is hungry.",
            ),
            pair(2, "Why?", "It ran out of food."),
        ]);
        let writer = ExtractiveWriter;
        let chunks = |c: &Conversation, manifest: &mut Manifest| {
            let mut p = Processor::new(cfg(dir.path()), &writer, manifest);
            p.process(c, "calls.jsonl", t0, manifest)
                .unwrap()
                .written
                .iter()
                .map(|w| ChunkDoc::parse(&std::fs::read_to_string(&w.path).unwrap()).unwrap())
                .collect::<Vec<_>>()
        };
        // As one dialogue, "Why?" follows up on the starter.
        assert_eq!(chunks(&c, &mut Manifest::new()).len(), 1);
        c.id = "calls".into();
        c.metadata.insert("pairs".into(), "independent".into());
        let docs = chunks(&c, &mut manifest);
        assert_eq!(docs.len(), 2, "{docs:?}");
        assert_eq!(docs[1].frontmatter.turn_range, "2");
        assert!(
            !docs[1].context.contains("following"),
            "{}",
            docs[1].context
        );
        assert_eq!(
            docs[1].frontmatter.extra.get("pairs").map(String::as_str),
            Some("independent")
        );
    }

    #[test]
    fn known_ids_are_told_apart_and_found_again() {
        // Ids as alike as real ones: one conversation hash, numbered pairs
        // and parts, over many conversations.
        let ids: Vec<String> = (0..2_000)
            .flat_map(|c| (1..=60).map(move |p| format!("chatgpt-{c:012x}-{p:03}-2024-05-01")))
            .chain((1..=9).map(|n| format!("chatgpt-000000000000-001-2024-05-01-part-{n}")))
            .collect();
        let mut known = Known::default();
        for id in &ids {
            assert!(known.insert(id), "{id} taken for another id");
        }
        assert_eq!(known.0.len(), ids.len());
        for id in &ids {
            assert!(known.contains(id) && !known.insert(id));
        }
        assert!(!known.contains("chatgpt-000000000000-001-2024-05-02"));
        let again: Known = ids.iter().map(String::as_str).collect();
        assert_eq!(again.0, known.0);
    }

    #[test]
    fn an_existing_chunk_id_is_never_written_twice() {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = Manifest::new();
        let t0 = DateTime::from_timestamp(0, 0).unwrap();
        let c = conv(vec![pair(
            1,
            "Explain how sourdough fermentation works.",
            "Yeast and bacteria…",
        )]);
        let writer = ExtractiveWriter;
        let mut p = Processor::new(cfg(dir.path()), &writer, &manifest);
        let first = p.process(&c, "a.json", t0, &mut manifest).unwrap();
        // A manifest that forgot the conversation but still knows the chunk.
        let mut forgetful = Manifest::new();
        forgetful.conversations.insert(
            "other:x".into(),
            ConversationRecord {
                last_pair: 1,
                chunk_ids: vec![first.written[0].chunk_id.clone()],
                note: None,
            },
        );
        let mut p = Processor::new(cfg(dir.path()), &writer, &forgetful);
        let out = p.process(&c, "a.json", t0, &mut forgetful).unwrap();
        assert_eq!((out.written.len(), out.duplicates), (0, 1));
    }
}
