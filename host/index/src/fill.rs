//! The embedding stage: the vectors of the chunks an import stored without
//! them ([`Index::deferring_vectors`]), made in batches and written batch
//! by batch, each batch with the removal of its chunks from the waiting
//! list, so that a stage stopped at any moment resumes where it stopped.

use crate::{Index, IndexError};

/// Chunks read, embedded and written at once: large enough for the model's
/// batches, small enough that a kill loses seconds of work.
pub const FILL_BATCH: usize = 128;

impl Index {
    /// Embeds every chunk waiting for its vector; `progress` gets the
    /// number done so far after each batch. Returns how many it filled.
    pub fn fill_pending(&self, progress: &mut dyn FnMut(u64)) -> Result<u64, IndexError> {
        let mut done = 0u64;
        loop {
            let waiting = self.store.pending(FILL_BATCH)?;
            if waiting.is_empty() {
                return Ok(done);
            }
            let texts: Vec<&str> = waiting.iter().map(|p| p.text.as_str()).collect();
            let vectors = self.embedder.embed(&texts)?;
            self.check_model(vectors.first().map_or(0, Vec::len))?;
            let filled: Vec<_> = waiting.into_iter().zip(vectors).collect();
            let n = self.store.fill(&filled, self.embedder.id())?;
            if n == 0 {
                // Every one was replaced or deleted meanwhile (read again),
                // unless the store answers the same chunks again without
                // taking them: a broken store, which would loop.
                let again = self.store.pending(FILL_BATCH)?;
                if again.iter().eq(filled.iter().map(|f| &f.0)) {
                    return Err(IndexError::Store {
                        store: self.store.name().to_string(),
                        message: format!(
                            "chunk `{}` waits for its vector but the store does not take it",
                            filled[0].0.chunk_id
                        ),
                        hint: Some(
                            "run `chatmill reindex` to rebuild the index from the chunk files"
                                .into(),
                        ),
                        retryable: false,
                    });
                }
            }
            done += n as u64;
            progress(done);
        }
    }

    /// How many chunks wait for their vectors.
    pub fn pending_count(&self) -> Result<u64, IndexError> {
        self.store.pending_count()
    }
}

/// Fills waiting chunks on a thread of its own for as long as the process
/// runs (a server's background work), looking again every `every`; a
/// failure is logged once until a fill succeeds again.
pub fn spawn_filler(index: std::sync::Arc<Index>, every: std::time::Duration) {
    let spawned = std::thread::Builder::new()
        .name("chatmill-fill".into())
        .spawn(move || {
            let mut failing = false;
            loop {
                match index.fill_pending(&mut |_| {}) {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!("made the vectors of {n} waiting chunks");
                        failing = false;
                    }
                    Err(e) if !failing => {
                        tracing::warn!("the waiting chunks' vectors: {e}");
                        failing = true;
                    }
                    Err(_) => {}
                }
                std::thread::sleep(every);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("no thread to make the waiting chunks' vectors: {e}");
    }
}
