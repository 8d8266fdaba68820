//! What preparing a conversation gives: its chunks written (in place, or
//! as temp files a processor working ahead leaves to be placed), not yet
//! recorded; and what recording them did.

use std::path::PathBuf;

use chatmill_chunking::header::Previous;
use chatmill_index::ChunkRecord;
use chatmill_root::atomic::Folder;
use chatmill_root::manifest::Excluded;

#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub chunk_id: String,
    pub path: PathBuf,
    /// What the index gets for it.
    pub record: ChunkRecord,
    /// Its header is a stand-in, queued for backfill.
    pub header_pending: bool,
}

/// The frontmatter key that marks a chunk whose header is a stand-in.
pub const HEADER_STATUS: &str = "header_status";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub written: Vec<Written>,
    /// Chunks that already existed (same chunk id).
    pub duplicates: u32,
    /// Mechanical exchanges left out.
    pub excluded: u32,
    /// Pairs this run looked at (those the manifest had not seen).
    pub new_pairs: u32,
}

/// A conversation chunked and written, not yet recorded.
#[derive(Debug)]
pub struct Prepared {
    pub(super) key: String,
    /// The last pair looked at (`None`: nothing new).
    pub(super) last_pair: Option<u32>,
    pub(super) outcome: Outcome,
    /// The last chunk's topics and request, for the next header.
    pub previous: Option<Previous>,
    /// The pairs the conversation holds, and those of its new pairs left out.
    pub(super) parsed: u32,
    pub(super) exclusions: Vec<Excluded>,
    /// A conversation chunked for the first time: its note, rendered here
    /// from the chunks as written.
    pub(super) note: Option<chatmill_root::notes::Ready>,
    /// The chunk files, when a processor working ahead wrote them as temp
    /// files.
    pub(super) temp: Option<TempFiles>,
}

impl Prepared {
    /// The chunks written, to be committed.
    pub fn written(&self) -> &[Written] {
        &self.outcome.written
    }

    /// The note of a conversation chunked for the first time, taken out to
    /// be named and written at its commit ([`chatmill_root::notes::Notes::write_ready`]).
    pub fn take_note(&mut self) -> Option<chatmill_root::notes::Ready> {
        self.note.take()
    }

    /// The conversation's manifest key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Puts the temp chunk files in place (nothing to do when they were
    /// written in place). On an error the ones not placed are taken out.
    pub fn place(&mut self) -> std::io::Result<()> {
        let Some(temp) = &mut self.temp else {
            return Ok(());
        };
        while let Some((tmp, name)) = temp.files.pop() {
            if let Err(e) = temp.folder.place(&tmp, &name) {
                temp.folder.discard(&tmp);
                return Err(e);
            }
        }
        // The folder's handle goes now, not at the commit.
        self.temp = None;
        Ok(())
    }
}

/// Chunk files written as temp files, each with the name it is to have;
/// the ones still here when it is dropped are taken out.
#[derive(Debug)]
pub(super) struct TempFiles {
    pub(super) folder: Folder,
    pub(super) files: Vec<(String, String)>,
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for (tmp, _) in &self.files {
            self.folder.discard(tmp);
        }
    }
}
