//! An embedder loaded when something first embeds with it. Its id and
//! width are known up front (a store checks them before every write, and a
//! write that defers its vectors needs nothing else), so a command that
//! embeds nothing — `chatmill hook claude-code`, which runs after every
//! Claude Code turn — never pays for reading the weights.

use std::sync::{Mutex, OnceLock};

use crate::{Embedder, IndexError};

/// Makes the embedder (reads its weights).
pub type Loader = Box<dyn Fn() -> Result<Box<dyn Embedder>, IndexError> + Send + Sync>;

pub struct Lazy {
    id: String,
    dim: usize,
    load: Loader,
    loaded: OnceLock<Box<dyn Embedder>>,
    /// Held while loading: two threads that embed at once load once.
    loading: Mutex<()>,
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("id", &self.id)
            .field("dim", &self.dim)
            .field("loaded", &self.loaded.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Lazy {
    /// An embedder `load` makes at its first use, which must then have
    /// this `id` and `dim`.
    pub fn new(id: String, dim: usize, load: Loader) -> Self {
        Self {
            id,
            dim,
            load,
            loaded: OnceLock::new(),
            loading: Mutex::new(()),
        }
    }

    /// Whether the embedder was loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    /// The embedder, loaded now if it was not. A failed load is tried
    /// again by the next call.
    fn get(&self) -> Result<&dyn Embedder, IndexError> {
        if let Some(e) = self.loaded.get() {
            return Ok(e.as_ref());
        }
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = self.loaded.get() {
            return Ok(e.as_ref());
        }
        let started = std::time::Instant::now();
        tracing::info!(model = %self.id, "loading the embedding model");
        let e = (self.load)()?;
        // Vectors are stored under the id given up front: one that changed
        // meanwhile (the weights replaced) would label them wrongly.
        if e.id() != self.id || e.dim() != self.dim {
            return Err(IndexError::Embed {
                model: self.id.clone(),
                message: format!(
                    "the model changed while chatmill ran: it is now `{}` ({} dimensions)",
                    e.id(),
                    e.dim()
                ),
                hint: Some("run the command again".into()),
            });
        }
        tracing::debug!(model = %self.id, seconds = started.elapsed().as_secs_f64(), "loaded the embedding model");
        Ok(self.loaded.get_or_init(|| e).as_ref())
    }
}

impl Embedder for Lazy {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.get()?.embed(texts)
    }

    fn warm_up(&self) -> Result<(), IndexError> {
        self.get()?.warm_up()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::Lexical;

    fn counted(loads: &Arc<AtomicUsize>) -> Lazy {
        let stand_in = Lexical::default();
        let (id, dim) = (stand_in.id().to_string(), stand_in.dim());
        let n = Arc::clone(loads);
        Lazy::new(
            id,
            dim,
            Box::new(move || {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(Box::new(Lexical::default()) as Box<dyn Embedder>)
            }),
        )
    }

    #[test]
    fn loads_at_the_first_embedding_and_only_once() {
        let loads = Arc::new(AtomicUsize::new(0));
        let lazy = counted(&loads);
        assert_eq!(lazy.id(), Lexical::default().id());
        assert_eq!(lazy.dim(), Lexical::default().dim());
        assert!(lazy.embed(&[]).unwrap().is_empty());
        assert_eq!(loads.load(Ordering::SeqCst), 0);
        assert!(!lazy.is_loaded());
        let v = lazy.embed(&["nginx upload timeout"]).unwrap();
        assert_eq!(
            v,
            Lexical::default().embed(&["nginx upload timeout"]).unwrap()
        );
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| lazy.embed(&["again"]).unwrap());
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(lazy.is_loaded());
    }

    #[test]
    fn a_model_other_than_the_one_announced_is_refused() {
        let lazy = Lazy::new(
            "local:other@00000000".into(),
            Lexical::default().dim(),
            Box::new(|| Ok(Box::new(Lexical::default()) as Box<dyn Embedder>)),
        );
        let e = lazy.embed(&["x"]).unwrap_err().to_string();
        assert!(e.contains("the model changed"), "{e}");
        assert!(!lazy.is_loaded());
    }
}
