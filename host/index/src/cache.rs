//! [`Cached`]: an [`Embedder`] that remembers vectors by (model id, text
//! hash) in a SQLite file, so re-imports, reindexing and migrations between
//! stores never recompute an embedding the model already made.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension as _, params};
use sha2::Digest as _;

use crate::embedded::{from_blob, to_blob};
use crate::{Embedder, IndexError};

pub struct Cached<E> {
    inner: E,
    conn: Mutex<Connection>,
    path: String,
}

fn store_err(path: &str, e: impl std::fmt::Display) -> IndexError {
    IndexError::Store {
        store: "embedding cache".into(),
        message: format!("{path}: {e}"),
        hint: Some(format!(
            "the cache is disposable: delete `{path}` and embeddings are recomputed"
        )),
        retryable: false,
    }
}

fn key(text: &str) -> [u8; 16] {
    let digest = sha2::Sha256::digest(text.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&digest[..16]);
    k
}

impl<E: Embedder> Cached<E> {
    /// Opens (or creates) the cache file at `path` in front of `inner`.
    pub fn open(inner: E, path: &Path) -> Result<Self, IndexError> {
        let shown = path.display().to_string();
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(|e| store_err(&shown, e))?;
        }
        let conn = Connection::open(path).map_err(|e| store_err(&shown, e))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;
             CREATE TABLE IF NOT EXISTS embeddings (
                 model TEXT NOT NULL, hash BLOB NOT NULL, vector BLOB NOT NULL,
                 PRIMARY KEY (model, hash)) WITHOUT ROWID;",
        )
        .map_err(|e| store_err(&shown, e))?;
        Ok(Self {
            inner,
            conn: Mutex::new(conn),
            path: shown,
        })
    }

    /// How many vectors the cache holds for this model.
    pub fn len(&self) -> Result<u64, IndexError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.query_row(
            "SELECT count(*) FROM embeddings WHERE model = ?1",
            [self.inner.id()],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n as u64)
        .map_err(|e| store_err(&self.path, e))
    }

    pub fn is_empty(&self) -> Result<bool, IndexError> {
        Ok(self.len()? == 0)
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }
}

impl<E: Embedder> Embedder for Cached<E> {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn is_fallback(&self) -> bool {
        self.inner.is_fallback()
    }
    fn is_instant(&self) -> bool {
        self.inner.is_instant()
    }
    fn warm_up(&self) -> Result<(), IndexError> {
        self.inner.warm_up()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let model = self.inner.id();
        let dim = self.inner.dim();
        let keys: Vec<[u8; 16]> = texts.iter().map(|t| key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        {
            let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            let mut stmt = conn
                .prepare_cached("SELECT vector FROM embeddings WHERE model = ?1 AND hash = ?2")
                .map_err(|e| store_err(&self.path, e))?;
            for (slot, k) in out.iter_mut().zip(&keys) {
                let found: Option<Vec<u8>> = stmt
                    .query_row(params![model, &k[..]], |r| r.get(0))
                    .optional()
                    .map_err(|e| store_err(&self.path, e))?;
                *slot = found
                    .map(|b| {
                        let mut v = Vec::with_capacity(b.len() / 4);
                        from_blob(&b, &mut v);
                        v
                    })
                    .filter(|v| v.len() == dim);
            }
        }
        // Compute what is missing, each distinct text once.
        let mut missing: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, slot) in out.iter().enumerate() {
            if slot.is_none() && seen.insert(keys[i]) {
                missing.push(i);
            }
        }
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&batch)?;
            let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn.transaction().map_err(|e| store_err(&self.path, e))?;
            {
                let mut ins = tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO embeddings (model, hash, vector) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(|e| store_err(&self.path, e))?;
                for (&i, v) in missing.iter().zip(&vectors) {
                    ins.execute(params![model, &keys[i][..], to_blob(v)])
                        .map_err(|e| store_err(&self.path, e))?;
                }
            }
            tx.commit().map_err(|e| store_err(&self.path, e))?;
            let by_key: std::collections::HashMap<[u8; 16], &Vec<f32>> = missing
                .iter()
                .zip(&vectors)
                .map(|(&i, v)| (keys[i], v))
                .collect();
            for (slot, k) in out.iter_mut().zip(&keys) {
                if slot.is_none() {
                    *slot = by_key.get(k).map(|v| (*v).clone());
                }
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts how many texts it was asked to embed.
    struct Counting {
        calls: AtomicUsize,
        id: &'static str,
    }

    impl Embedder for Counting {
        fn id(&self) -> &str {
            self.id
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
            self.calls.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[test]
    fn computes_each_text_once_per_model_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite3");
        let c = Cached::open(
            Counting {
                calls: 0.into(),
                id: "m1",
            },
            &path,
        )
        .unwrap();
        let v = c.embed(&["a", "bb", "a"]).unwrap();
        assert_eq!(v, vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![1.0, 1.0]]);
        assert_eq!(
            c.inner().calls.load(Ordering::SeqCst),
            2,
            "duplicate computed twice"
        );
        c.embed(&["bb", "ccc"]).unwrap();
        assert_eq!(c.inner().calls.load(Ordering::SeqCst), 3);
        assert_eq!(c.len().unwrap(), 3);
        drop(c);

        let again = Cached::open(
            Counting {
                calls: 0.into(),
                id: "m1",
            },
            &path,
        )
        .unwrap();
        assert_eq!(
            again.embed(&["ccc", "a"]).unwrap(),
            vec![vec![3.0, 1.0], vec![1.0, 1.0]]
        );
        assert_eq!(
            again.inner().calls.load(Ordering::SeqCst),
            0,
            "reopened cache missed"
        );

        // Another model never sees this model's vectors.
        let other = Cached::open(
            Counting {
                calls: 0.into(),
                id: "m2",
            },
            &path,
        )
        .unwrap();
        other.embed(&["a"]).unwrap();
        assert_eq!(other.inner().calls.load(Ordering::SeqCst), 1);
    }
}
