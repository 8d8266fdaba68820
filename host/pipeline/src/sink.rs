//! Where chunks go once their files are written and committed in input
//! order. Batch import and inline mode both hand their chunks to a
//! [`ChunkSink`]; the pipeline's own types carry no index concerns.
//!
//! [`IndexSink`] is the index as a sink: committed chunks are indexed in
//! batches of [`INDEX_BATCH`], on a thread of their own when started in a
//! scope (the store's inserts, or the embedding model, then overlap the
//! chunking of the conversations that follow). An import has one for all
//! its inputs: a folder of small sessions is indexed in full batches, not
//! one transaction per session on the committing thread. With an instant embedder
//! (the lexical stand-in) the vectors are made on the worker threads that
//! wrote the chunks, so that the index thread only writes.

use std::collections::HashMap;
use std::sync::mpsc::SyncSender;
use std::sync::{Mutex, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

use chatmill_index::{ChunkRecord, IndexError, Indexer};

use crate::processor::Written;

/// Chunks handed to the index at once.
pub const INDEX_BATCH: usize = 256;

/// Workers past which they outrun the index thread (see
/// [`IndexSink::threaded`]).
const MANY_WORKERS: usize = 2;

/// Receives the chunks a run writes.
pub trait ChunkSink: Sync {
    /// On the worker thread that wrote one conversation's chunks, before
    /// they are committed: work that can run beside the other workers.
    fn prepared(&self, _written: &[Written]) {}

    /// Chunks prepared on a thread that had no sink (parsing ahead, see
    /// [`made_ahead`]), with the vectors made there, once they are taken.
    fn made(&self, _written: &[Written], _vectors: Option<Vec<Vec<f32>>>) {}

    /// One chunk, committed, in input order.
    fn committed(&self, written: Written);
}

/// What [`ChunkSink::prepared`] does for the index, on a thread with no
/// sink at hand: the documents tokenized ahead when the workers would
/// outrun the index thread, and the vectors of an instant embedder, for
/// [`ChunkSink::made`].
pub fn made_ahead(indexer: &dyn Indexer, written: &[Written]) -> Option<Vec<Vec<f32>>> {
    if written.is_empty() {
        return None;
    }
    if rayon::current_num_threads() > MANY_WORKERS {
        let records: Vec<&ChunkRecord> = written.iter().map(|w| &w.record).collect();
        indexer.prepare_here(&records);
    }
    let texts: Vec<&str> = written
        .iter()
        .map(|w| w.record.embed_text.as_str())
        .collect();
    indexer
        .embed_here(&texts)
        .filter(|v| v.len() == written.len())
}

/// What the index took: the chunks indexed, and how many it left out with
/// the last error.
#[derive(Debug, Default)]
pub struct Indexed {
    pub chunks: u32,
    pub failure: Option<(u32, IndexError)>,
}

impl Indexed {
    fn add(&mut self, indexer: &dyn Indexer, batch: &Batch) {
        let done = if batch.vectors.len() == batch.records.len() {
            indexer.index_with(&batch.records, &batch.vectors)
        } else {
            indexer.index(&batch.records)
        };
        match done {
            Ok(()) => self.chunks += batch.records.len() as u32,
            Err(e) => self.left_out(batch.records.len() as u32, e),
        }
    }

    /// `n` more chunks not indexed, for `e`.
    pub fn left_out(&mut self, n: u32, e: IndexError) {
        let before = self.failure.as_ref().map_or(0, |f| f.0);
        self.failure = Some((before + n, e));
    }

    /// Adds `other`'s counts; its error, when it has one, is the last.
    pub fn merge(&mut self, other: Indexed) {
        self.chunks += other.chunks;
        if let Some((n, e)) = other.failure {
            self.left_out(n, e);
        }
    }
}

/// What the index thread is handed: a batch to index, or a flush to
/// answer once everything before it is indexed.
enum Message {
    Batch(Batch),
    Flush(SyncSender<()>),
}

/// Chunks on their way to the index, with the vectors made beside their
/// chunking when every one of them has one.
#[derive(Default)]
struct Batch {
    records: Vec<ChunkRecord>,
    vectors: Vec<Vec<f32>>,
}

impl Batch {
    fn push(&mut self, record: ChunkRecord, vector: Option<Vec<f32>>) {
        match vector {
            Some(v) if self.vectors.len() == self.records.len() => self.vectors.push(v),
            // One without: the index embeds them all.
            _ => self.vectors.clear(),
        }
        self.records.push(record);
    }
}

/// The index as a [`ChunkSink`].
pub struct IndexSink<'s> {
    indexer: &'s dyn Indexer,
    /// Vectors made on the worker threads, by chunk id, until committed.
    vectors: Mutex<HashMap<String, Vec<f32>>>,
    pending: Mutex<Batch>,
    /// The index thread and its queue, when there is one.
    thread: Option<(SyncSender<Message>, ScopedJoinHandle<'s, Indexed>)>,
    /// What full batches indexed on the committing thread did (no thread).
    here: Mutex<Indexed>,
    /// Whether the workers prepare the documents for the index thread
    /// ([`Indexer::prepare_here`]): only where they are not already what the
    /// import waits for (see [`IndexSink::threaded`]).
    prepare: bool,
}

impl<'s> IndexSink<'s> {
    /// A sink that indexes on the thread that finishes it.
    pub fn new(indexer: &'s dyn Indexer) -> Self {
        Self {
            indexer,
            vectors: Mutex::new(HashMap::new()),
            pending: Mutex::new(Batch::default()),
            thread: None,
            here: Mutex::new(Indexed::default()),
            prepare: false,
        }
    }

    /// A sink that indexes full batches on a thread of `scope`, one at a
    /// time and in order.
    pub fn threaded<'e>(scope: &'s Scope<'s, 'e>, indexer: &'s dyn Indexer) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Message>(2);
        let index = move || {
            let mut done = Indexed::default();
            for message in rx {
                match message {
                    Message::Batch(batch) => done.add(indexer, &batch),
                    Message::Flush(answer) => {
                        let _ = answer.send(());
                    }
                }
            }
            done
        };
        let handle = std::thread::Builder::new()
            .name("chatmill-index".into())
            .spawn_scoped(scope, index)
            .expect("a thread for the index");
        Self {
            thread: Some((tx, handle)),
            // Preparing moves work from the store's keyword writer to the
            // workers (tokenizing: 0.07-0.09 s of a 30k-pair import's 0.4 s
            // there) and adds some (copies: the workers' CPU +10 %). With 2
            // workers they are the import's cap and it ran 8 % slower; with
            // more, the keyword writer is, and it bounds the speed-up.
            prepare: rayon::current_num_threads() > MANY_WORKERS,
            ..Self::new(indexer)
        }
    }

    /// Returns once every chunk committed so far is indexed (or has
    /// failed to be): before something else changes the same index, such
    /// as taking chunks out of it.
    pub fn flush(&self) {
        let last =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        if !last.records.is_empty() {
            self.hand_over(last);
        }
        if let Some((tx, _)) = &self.thread {
            let (answer, answered) = std::sync::mpsc::sync_channel(1);
            // The thread runs until `finish` drops the sender.
            if tx.send(Message::Flush(answer)).is_ok() {
                let _ = answered.recv();
            }
        }
    }

    /// Indexes `batch` on the index thread, or here when there is none.
    fn hand_over(&self, batch: Batch) {
        match &self.thread {
            // The thread ends only when the sender is dropped (in
            // `finish`), so the send cannot fail.
            Some((tx, _)) => {
                let _ = tx.send(Message::Batch(batch));
            }
            None => {
                let mut here = self.here.lock().unwrap_or_else(PoisonError::into_inner);
                here.add(self.indexer, &batch);
            }
        }
    }

    /// Indexes what is left and waits for the index thread: what the
    /// index took.
    pub fn finish(self) -> Indexed {
        let mut done = match self.thread {
            Some((tx, handle)) => {
                drop(tx);
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
            None => Indexed::default(),
        };
        done.merge(
            self.here
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let last = self
            .pending
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if !last.records.is_empty() {
            done.add(self.indexer, &last);
        }
        done
    }
}

impl ChunkSink for IndexSink<'_> {
    fn prepared(&self, written: &[Written]) {
        if written.is_empty() {
            return;
        }
        if self.prepare {
            let records: Vec<&ChunkRecord> = written.iter().map(|w| &w.record).collect();
            self.indexer.prepare_here(&records);
        }
        let texts: Vec<&str> = written
            .iter()
            .map(|w| w.record.embed_text.as_str())
            .collect();
        let vectors = self
            .indexer
            .embed_here(&texts)
            .filter(|v| v.len() == written.len());
        self.made(written, vectors);
    }

    fn made(&self, written: &[Written], vectors: Option<Vec<Vec<f32>>>) {
        let Some(vectors) = vectors else {
            return;
        };
        let mut map = self.vectors.lock().unwrap_or_else(PoisonError::into_inner);
        for (w, v) in written.iter().zip(vectors) {
            map.insert(w.chunk_id.clone(), v);
        }
    }

    fn committed(&self, written: Written) {
        let vector = self
            .vectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&written.chunk_id);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.push(written.record, vector);
        if pending.records.len() < INDEX_BATCH {
            return;
        }
        let full = std::mem::take(&mut *pending);
        drop(pending);
        self.hand_over(full);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use chatmill_index::{ChunkMeta, ChunkRecord, IndexError, Indexer};

    use super::*;

    /// An index that keeps the ids it was given, slowly (so that a batch
    /// is still on its way when the test looks).
    #[derive(Default)]
    struct Slow(Mutex<BTreeSet<String>>);

    impl Indexer for Slow {
        fn index(&self, r: &[ChunkRecord]) -> Result<(), IndexError> {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut s = self.0.lock().unwrap();
            s.extend(r.iter().map(|r| r.chunk_id.clone()));
            Ok(())
        }
        fn remove(&self, ids: &[String]) -> Result<(), IndexError> {
            let mut s = self.0.lock().unwrap();
            for id in ids {
                s.remove(id);
            }
            Ok(())
        }
        fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
            Ok(self.0.lock().unwrap().clone())
        }
        fn count(&self) -> Result<u64, IndexError> {
            Ok(self.0.lock().unwrap().len() as u64)
        }
    }

    fn written(id: &str) -> Written {
        Written {
            chunk_id: id.into(),
            path: id.into(),
            header_pending: false,
            record: ChunkRecord {
                chunk_id: id.into(),
                embed_text: "t".into(),
                document: "d".into(),
                meta: ChunkMeta {
                    timestamp: 0,
                    platform: "p".into(),
                    agent_id: "a".into(),
                    conversation_id: "c".into(),
                    project: None,
                    title: None,
                    topics: Vec::new(),
                    model: "m".into(),
                    turn_range: "1".into(),
                    source_file: "f".into(),
                    path: id.into(),
                },
            },
        }
    }

    #[test]
    fn a_flush_returns_once_everything_committed_is_indexed() {
        let index = Slow::default();
        let n = INDEX_BATCH * 2 + 7;
        let done = std::thread::scope(|scope| {
            let sink = IndexSink::threaded(scope, &index);
            for i in 0..n {
                sink.committed(written(&format!("c{i}")));
            }
            sink.flush();
            // Two full batches and the partial one, none still queued.
            assert_eq!(index.count().unwrap(), n as u64);
            // The sink goes on taking chunks after a flush.
            sink.committed(written("after"));
            sink.finish()
        });
        assert_eq!(done.chunks, n as u32 + 1);
        assert!(done.failure.is_none());
        assert!(index.ids().unwrap().contains("after"));
    }
}
