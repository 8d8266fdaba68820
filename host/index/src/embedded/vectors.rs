//! The in-memory int8 matrix vector search scans: one row of codes and a
//! scale per chunk, as of one store generation; its approximate scores,
//! and the dot products and ranking the exact rescoring uses (see
//! `nearest`).

use rusqlite::Connection;

use super::schema::{Row, generation};
use crate::Filter;

/// The in-memory matrix: row `i` of `codes` (`dim` bytes) times
/// `scales[i]` approximates the vector of `rows[i]`; rows in id order, as
/// of the store's `generation`.
#[derive(Clone, Default)]
pub(super) struct Vectors {
    pub(super) generation: i64,
    pub(super) dim: usize,
    pub(super) rows: Vec<Row>,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Vectors {
    /// Applies an upsert of `(row, vector)`s to the matrix; `false` if it
    /// cannot be applied in place (a new id below the last one: reload).
    pub(super) fn apply(&mut self, written: Vec<(Row, &[f32])>) -> bool {
        for (row, vector) in written {
            if vector.is_empty() {
                // Waiting for its vector: not searched by meaning yet.
                continue;
            }
            if self.rows.is_empty() && self.dim == 0 {
                self.dim = vector.len();
            }
            if vector.len() != self.dim {
                // A load skips such a row too.
                continue;
            }
            let mut codes = Vec::with_capacity(self.dim);
            let scale = quantize(vector, &mut codes);
            match self.rows.binary_search_by_key(&row.id, |r| r.id) {
                Ok(i) => {
                    self.codes[i * self.dim..(i + 1) * self.dim].copy_from_slice(&codes);
                    self.scales[i] = scale;
                    self.rows[i] = row;
                }
                Err(i) if i == self.rows.len() => {
                    self.codes.extend_from_slice(&codes);
                    self.scales.push(scale);
                    self.rows.push(row);
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// The matrix of every chunk's vector of width `dim` (the store's), in
    /// the read transaction `tx`.
    pub(super) fn load(tx: &Connection, dim: usize) -> rusqlite::Result<Self> {
        let mut v = Self {
            generation: generation(tx)?,
            dim,
            ..Self::default()
        };
        let mut stmt = tx.prepare(
            "SELECT id, timestamp, platform, agent_id, conversation_id, embedding, project FROM chunks ORDER BY id",
        )?;
        let mut rows = stmt.query([])?;
        let mut f = Vec::with_capacity(dim);
        while let Some(r) = rows.next()? {
            let rusqlite::types::ValueRef::Blob(blob) = r.get_ref(5)? else {
                continue;
            };
            // An empty vector: a chunk waiting for its vector.
            if blob.is_empty() || blob.len() != dim * 4 {
                continue;
            }
            f.clear();
            from_blob(blob, &mut f);
            v.rows.push(Row {
                id: r.get(0)?,
                timestamp: r.get(1)?,
                platform: r.get(2)?,
                agent_id: r.get(3)?,
                conversation_id: r.get(4)?,
                project: r.get(6)?,
            });
            let scale = quantize(&f, &mut v.codes);
            v.scales.push(scale);
        }
        Ok(v)
    }

    /// Approximate scores (int8 dot products) of the rows `filter` lets
    /// through against `vector`, as (row index, score).
    pub(super) fn approximate(&self, vector: &[f32], filter: &Filter) -> Vec<(usize, f32)> {
        let dim = self.dim;
        let unfiltered = *filter == Filter::default();
        let mut q_codes = Vec::with_capacity(dim);
        let q_scale = quantize(vector, &mut q_codes);
        let score_range = |lo: usize, hi: usize| -> Vec<(usize, f32)> {
            (lo..hi)
                .filter(|&i| unfiltered || self.rows[i].matches(filter))
                .map(|i| {
                    let d = dot_i8(&self.codes[i * dim..(i + 1) * dim], &q_codes);
                    (i, d as f32 * self.scales[i] * q_scale)
                })
                .collect()
        };
        let n = self.rows.len();
        if n >= 20_000 {
            // Two halves on two threads (this machine has 2 cores).
            let mid = n / 2;
            let (mut a, b) = std::thread::scope(|s| {
                let h = s.spawn(|| score_range(mid, n));
                (score_range(0, mid), h.join().unwrap_or_default())
            });
            a.extend(b);
            a
        } else {
            score_range(0, n)
        }
    }
}

/// Symmetric int8 codes for `v` and their scale (`v[j] ≈ codes[j] * scale`).
fn quantize(v: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let scale = max / 127.0;
    codes.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Sixteen lanes of i16 products (|127²| fits) summed into i32: the
    // shape the compiler vectorizes best on plain x86-64 (2.7× the f32 scan
    // here; the straightforward iterator sum is half as fast).
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// A vector as a blob: its f32s, little-endian (the store's `embedding`
/// column, the embedding cache's rows, Chroma's base64).
pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Appends the f32s of a [`to_blob`] blob to `out`.
pub(crate) fn from_blob(b: &[u8], out: &mut Vec<f32>) {
    out.extend(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes the compiler vectorizes.
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// The `k` best (index, score) pairs.
pub(super) fn top_k(mut scored: Vec<(usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    if scored.len() > k {
        scored.select_nth_unstable_by(k, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}
