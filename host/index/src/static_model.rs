//! A static embedder distilled from the local MiniLM (the model2vec
//! method): every vocabulary token goes through the model once, as the
//! sentence `[CLS] token [SEP]`; the table of those vectors, centred (the
//! direction all tokens share carries no meaning) and weighted by a Zipf
//! estimate of each token's frequency (common tokens weigh less, as SIF
//! weighting does), then embeds a text as the normalized mean of its
//! tokens' rows. No transformer runs per text: thousands of texts a second,
//! at the cost of word order and context.
//!
//! model2vec also runs PCA over the table. Keeping all 384 components
//! would only rotate the centred table, leaving every cosine as it is, so
//! the step is left out; reducing to fewer components (model2vec's 256)
//! would change the width the stores and caches hold. `cargo bench -p
//! chatmill-pipeline --bench locomo` checks the static model's hybrid R@5
//! against MiniLM's.
//!
//! The table is made once per model (~20 s on 2 cores) and cached beside
//! it: `static-<fingerprint>.f32` in the model directory, or under
//! chatmill's cache when that directory is read-only.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

use crate::minilm::{MiniLm, Precision};
use crate::{Embedder, IndexError};

/// SIF's coefficient: a token of probability p weighs `a / (a + p)`.
const SIF: f32 = 1e-4;

/// The cache file's first bytes (format and version).
const MAGIC: &[u8; 8] = b"cmstat01";

/// Tokens per distillation pass (sentences of three tokens).
const TOKENS_PER_CALL: usize = 1024 * 3;

pub struct StaticModel {
    tokenizer: Tokenizer,
    /// `vocab × dim`, row-major.
    table: Vec<f32>,
    dim: usize,
    id: String,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("id", &self.id)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

fn err(id: &str, message: impl std::fmt::Display) -> IndexError {
    IndexError::Embed {
        model: id.to_string(),
        message: message.to_string(),
        hint: None,
    }
}

impl StaticModel {
    /// The static model of the MiniLM in `dir`: read from its cache, or
    /// distilled (and cached) when there is none.
    pub fn load(dir: &Path) -> Result<Self, IndexError> {
        let model = MiniLm::load_with(dir, Precision::Fast)?;
        let fingerprint = model
            .id()
            .rsplit('@')
            .next()
            .unwrap_or_default()
            .to_string();
        let id = static_id(model.id());
        let tokenizer = model.tokenizer().clone();
        let vocab = tokenizer.get_vocab_size(true);
        let dim = model.dim();
        let places = cache_places(dir, &fingerprint);
        let table = match places.iter().find_map(|p| read_table(p, vocab, dim)) {
            Some(t) => t,
            None => {
                let t = distil(&model, vocab)?;
                // A table that cannot be cached is made again next time.
                if let Some(p) = places
                    .iter()
                    .find(|p| write_table(p, &t, vocab, dim).is_ok())
                {
                    tracing::info!(path = %p.display(), "cached the static embedding table");
                }
                t
            }
        };
        Ok(Self {
            tokenizer,
            table,
            dim,
            id,
        })
    }

    /// The id and vector width of the static model of the MiniLM in
    /// `dir`, known without loading or distilling anything
    /// ([`crate::minilm::identity`]).
    pub fn identity(dir: &Path) -> Result<(String, usize), IndexError> {
        let (id, dim) = crate::minilm::identity(dir)?;
        Ok((static_id(&id), dim))
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, IndexError> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| err(&self.id, e))?;
        let mut sum = vec![0f32; self.dim];
        for &t in enc.get_ids() {
            let row = &self.table[t as usize * self.dim..(t as usize + 1) * self.dim];
            for (s, v) in sum.iter_mut().zip(row) {
                *s += v;
            }
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            for s in &mut sum {
                *s /= norm;
            }
        }
        Ok(sum)
    }
}

/// The static model's id from its MiniLM's (`local:<name>@<fingerprint>`).
fn static_id(minilm: &str) -> String {
    format!("static:{}", minilm.trim_start_matches("local:"))
}

/// Where the table may be cached: beside the model, then chatmill's cache.
fn cache_places(dir: &Path, fingerprint: &str) -> Vec<PathBuf> {
    let file = format!("static-{fingerprint}.f32");
    let mut out = vec![dir.join(&file)];
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        out.push(c.join("chatmill/models").join(file));
    }
    out
}

fn read_table(path: &Path, vocab: usize, dim: usize) -> Option<Vec<f32>> {
    let bytes = std::fs::read(path).ok()?;
    let body = bytes.strip_prefix(MAGIC.as_slice())?;
    let (head, data) = body.split_at_checked(16)?;
    let rows = u64::from_le_bytes(head[..8].try_into().ok()?) as usize;
    let cols = u64::from_le_bytes(head[8..].try_into().ok()?) as usize;
    if rows != vocab || cols != dim || data.len() != rows * cols * 4 {
        return None;
    }
    Some(
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// Writes the table through a temporary file renamed into place.
fn write_table(path: &Path, table: &[f32], vocab: usize, dim: usize) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut out = Vec::with_capacity(24 + table.len() * 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(vocab as u64).to_le_bytes());
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    for v in table {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let result = (|| {
        let mut f = fs_err::File::create(&tmp)?;
        f.write_all(&out)?;
        f.sync_all()?;
        fs_err::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Every token through the model, centred and Zipf-weighted.
fn distil(model: &MiniLm, vocab: usize) -> Result<Vec<f32>, IndexError> {
    let dim = model.dim();
    let mut table = Vec::with_capacity(vocab * dim);
    let ids: Vec<u32> = (0..vocab as u32).collect();
    for group in ids.chunks(TOKENS_PER_CALL / 3) {
        for v in model.embed_token_sentences(group)? {
            table.extend(v);
        }
    }
    let mut mean = vec![0f32; dim];
    for row in table.chunks_exact(dim) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v / vocab as f32;
        }
    }
    // Zipf: the token of rank r (its id: WordPiece vocabularies list
    // frequent tokens first) has probability 1 / (r · H).
    let harmonic = (vocab as f32).ln() + 0.577;
    for (r, row) in table.chunks_exact_mut(dim).enumerate() {
        let p = 1.0 / ((r + 1) as f32 * harmonic);
        let w = SIF / (SIF + p);
        for (v, m) in row.iter_mut().zip(&mean) {
            *v = (*v - m) * w;
        }
    }
    Ok(table)
}

impl Embedder for StaticModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        texts.iter().map(|t| self.embed_one(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_round_trips_through_its_cache_file_and_a_wrong_shape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("static-x.f32");
        let table: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
        write_table(&p, &table, 4, 3).unwrap();
        assert_eq!(read_table(&p, 4, 3).unwrap(), table);
        assert!(read_table(&p, 3, 4).is_none());
        assert!(read_table(&dir.path().join("none"), 4, 3).is_none());
    }

    /// The real model, when installed: paraphrases land closer than
    /// unrelated texts, and a second load reads the cached table.
    #[test]
    fn distilled_vectors_keep_meaning_and_the_table_is_cached() {
        let Some(dir) = crate::minilm::resolve(None) else {
            assert!(std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none());
            return;
        };
        let m = StaticModel::load(&dir).unwrap();
        assert_eq!(m.dim(), 384);
        assert!(m.id().starts_with("static:all-MiniLM-L6-v2@"));
        let v = m
            .embed(&[
                "How do I configure nginx as a reverse proxy for my Node app?",
                "Setting up nginx to forward requests to a Node.js server",
                "My grandmother's banana bread recipe uses three ripe bananas.",
            ])
            .unwrap();
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!((cos(&v[0], &v[0]) - 1.0).abs() < 1e-4);
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2);
        let again = StaticModel::load(&dir).unwrap();
        assert_eq!(
            again.embed(&["nginx"]).unwrap(),
            m.embed(&["nginx"]).unwrap()
        );
    }
}
