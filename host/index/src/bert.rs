//! A BERT encoder's forward pass (the sentence-transformers MiniLM / BGE /
//! E5 family) on plain f32 matrices, for the local embedder.
//!
//! The matrix products go to the `gemm` crate — the kernels candle's CPU
//! backend calls — while everything between them is fused into single passes
//! over rows split across threads: bias + GELU, residual + bias + layer norm,
//! masked softmax. Running the same model through candle's generic tensor
//! ops spent two thirds of its time outside the matrix products (one
//! allocation and one pass per op, a scalar `erf`, a spinning worker pool
//! beside rayon's); the tests hold this pass to candle's `BertModel` on the
//! real weights.

use std::path::Path;
use std::sync::OnceLock;

use candle_core::safetensors::{Load as _, MmapedSafetensors};
use candle_core::{DType, Device};
use gemm::{Parallelism, gemm};
use rayon::prelude::*;

use crate::quantized::QuantMatrix;

/// What goes wrong loading a model: the file or tensor, and why.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Weights(String),
    #[error("unsupported model: {0}")]
    Unsupported(String),
}

/// The hyper-parameters the forward pass needs, from `config.json`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_pos")]
    pub position_embedding_type: String,
}

fn default_eps() -> f64 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

fn default_pos() -> String {
    "absolute".into()
}

/// Layer-norm scale and shift.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// One transformer layer; weight matrices as on disk (`out × in`,
/// row-major), which `gemm` reads as the transposed right operand without
/// repacking (measured 10–40 % faster than pre-transposed at these sizes).
struct Layer {
    /// Query, key and value stacked: `3·hidden × hidden`.
    qkv: Vec<f32>,
    qkv_bias: Vec<f32>,
    out: Vec<f32>,
    out_bias: Vec<f32>,
    attn_norm: Norm,
    up: Vec<f32>,
    up_bias: Vec<f32>,
    down: Vec<f32>,
    down_bias: Vec<f32>,
    ffn_norm: Norm,
}

/// A layer's products quantized for the VNNI kernel.
struct Int8Layer {
    qkv: QuantMatrix,
    out: QuantMatrix,
    up: QuantMatrix,
    down: QuantMatrix,
}

/// A loaded encoder.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    vocab: usize,
    max_positions: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token-type 0 (sentence embedders never use another).
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    /// The layers' products in int8, once [`Encoder::quantize`]d.
    int8: OnceLock<Vec<Int8Layer>>,
}

/// Rows handed to one thread in the element-wise passes.
const ROWS_PER_TASK: usize = 32;

impl Encoder {
    /// Loads `model.safetensors` for `config`. Accepts tensor names with or
    /// without the `bert.` prefix and the old `gamma`/`beta` layer-norm names.
    pub fn load(weights: &Path, config: &Config) -> Result<Self, LoadError> {
        if config.hidden_act != "gelu" {
            return Err(LoadError::Unsupported(format!(
                "activation `{}` (only BERT's exact `gelu` is implemented)",
                config.hidden_act
            )));
        }
        if config.position_embedding_type != "absolute" {
            return Err(LoadError::Unsupported(format!(
                "position embeddings `{}` (only `absolute`)",
                config.position_embedding_type
            )));
        }
        let hidden = config.hidden_size;
        if config.num_attention_heads == 0 || !hidden.is_multiple_of(config.num_attention_heads) {
            return Err(LoadError::Unsupported(format!(
                "{} heads do not divide hidden size {hidden}",
                config.num_attention_heads
            )));
        }
        // SAFETY: a read-only mapping, copied out below and dropped before
        // this returns; chatmill never writes model files.
        let file = unsafe { MmapedSafetensors::new(weights) }
            .map_err(|e| LoadError::Weights(e.to_string()))?;
        let w = Tensors(file);
        let norm = |p: &str| -> Result<Norm, LoadError> {
            Ok(Norm {
                gamma: w.vector(&[&format!("{p}.weight"), &format!("{p}.gamma")], hidden)?,
                beta: w.vector(&[&format!("{p}.bias"), &format!("{p}.beta")], hidden)?,
            })
        };
        let word = w.matrix("embeddings.word_embeddings.weight", None, hidden)?;
        let position = w.matrix("embeddings.position_embeddings.weight", None, hidden)?;
        let token_type = w.matrix("embeddings.token_type_embeddings.weight", None, hidden)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let q = w.linear(&format!("{p}.attention.self.query"), hidden, hidden)?;
            let k = w.linear(&format!("{p}.attention.self.key"), hidden, hidden)?;
            let v = w.linear(&format!("{p}.attention.self.value"), hidden, hidden)?;
            let qkv = [q.0, k.0, v.0].concat();
            let qkv_bias = [q.1, k.1, v.1].concat();
            let (out, out_bias) =
                w.linear(&format!("{p}.attention.output.dense"), hidden, hidden)?;
            let (up, up_bias) = w.linear(
                &format!("{p}.intermediate.dense"),
                hidden,
                config.intermediate_size,
            )?;
            let (down, down_bias) = w.linear(
                &format!("{p}.output.dense"),
                config.intermediate_size,
                hidden,
            )?;
            layers.push(Layer {
                qkv,
                qkv_bias,
                out,
                out_bias,
                attn_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up,
                up_bias,
                down,
                down_bias,
                ffn_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(Self {
            hidden,
            heads: config.num_attention_heads,
            inter: config.intermediate_size,
            eps: config.layer_norm_eps as f32,
            vocab: word.len() / hidden,
            max_positions: position.len() / hidden,
            token_type: token_type[..hidden].to_vec(),
            word,
            position,
            embed_norm: norm("embeddings.LayerNorm")?,
            layers,
            int8: OnceLock::new(),
        })
    }

    /// Rows in the word-embedding table: token ids must stay below it.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// The longest input the position table allows.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// Quantizes the linear layers to int8 for [`QuantMatrix`]'s VNNI
    /// kernel when this CPU has it; returns whether it did. Without it the
    /// encoder stays exact f32. The calibration sequences (packed, as for
    /// [`Self::embed`]) run through the f32 pass first to find each
    /// product's outlier input channels (BERT's hidden states carry a few
    /// channels some 30× the others), which stay f32.
    pub fn quantize(&self, calibration: &[u32], lens: &[usize]) -> bool {
        if !QuantMatrix::available() {
            return false;
        }
        self.int8.get_or_init(|| {
            let mut stats = vec![Stats::default(); self.layers.len()];
            self.forward(calibration, lens, Some(&mut stats));
            let (h, inter) = (self.hidden, self.inter);
            self.layers
                .iter()
                .zip(&stats)
                .map(|(l, st)| Int8Layer {
                    qkv: QuantMatrix::new(&l.qkv, 3 * h, h, &outliers(&st.qkv)),
                    out: QuantMatrix::new(&l.out, h, h, &outliers(&st.out)),
                    up: QuantMatrix::new(&l.up, inter, h, &outliers(&st.up)),
                    down: QuantMatrix::new(&l.down, h, inter, &outliers(&st.down)),
                })
                .collect()
        });
        true
    }

    /// Whether the linear layers run in int8 ([`Self::quantize`]).
    pub fn is_quantized(&self) -> bool {
        self.int8.get().is_some()
    }

    /// Mean-pooled, L2-normalized sentence vectors for sequences packed end
    /// to end without padding: `ids` holds them one after another, `lens`
    /// their lengths. Each token attends only within its own sequence, so
    /// no work goes to padding.
    pub fn embed(&self, ids: &[u32], lens: &[usize]) -> Vec<Vec<f32>> {
        self.forward(ids, lens, None)
    }

    /// [`Self::embed`], noting each product's largest input per channel in
    /// `stats` when given.
    fn forward(
        &self,
        ids: &[u32],
        lens: &[usize],
        mut stats: Option<&mut [Stats]>,
    ) -> Vec<Vec<f32>> {
        let rows: usize = lens.iter().sum();
        assert_eq!(ids.len(), rows, "ids are the sequences end to end");
        assert!(
            lens.iter().all(|&l| l <= self.max_positions),
            "sequence longer than the position table"
        );
        let h = self.hidden;
        // Position of each row within its sequence.
        let positions: Vec<usize> = lens.iter().flat_map(|&l| 0..l).collect();
        let mut x = vec![0f32; rows * h];
        x.par_chunks_mut(h * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(t, block)| {
                for (r, row) in block.chunks_mut(h).enumerate() {
                    let at = t * ROWS_PER_TASK + r;
                    // Checked at load against the tokenizer's vocabulary.
                    let id = (ids[at] as usize).min(self.vocab - 1);
                    let pos = positions[at];
                    let word = &self.word[id * h..(id + 1) * h];
                    let position = &self.position[pos * h..(pos + 1) * h];
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = word[j] + position[j] + self.token_type[j];
                    }
                    self.embed_norm.apply(row, self.eps);
                }
            });
        let mut qkv = vec![0f32; rows * 3 * h];
        let mut ctx = vec![0f32; rows * h];
        let mut y = vec![0f32; rows * h];
        let mut up = vec![0f32; rows * self.inter];
        for (i, layer) in self.layers.iter().enumerate() {
            let mut st = stats.as_deref_mut().map(|s| &mut s[i]);
            // Calibration runs in f32 (before the int8 layers exist).
            let int8 = self.int8.get().map(|q| &q[i]);
            if let Some(st) = st.as_deref_mut() {
                observe(&mut st.qkv, &x, h);
            }
            match int8 {
                Some(q) => q.qkv.matmul(&mut qkv, &x, rows, &layer.qkv_bias),
                None => {
                    for row in qkv.chunks_mut(3 * h) {
                        row.copy_from_slice(&layer.qkv_bias);
                    }
                    matmul(&mut qkv, &x, &layer.qkv, rows, h, 3 * h, true);
                }
            }
            self.attention(&qkv, lens, &mut ctx);
            if let Some(st) = st.as_deref_mut() {
                observe(&mut st.out, &ctx, h);
            }
            let out = int8.map(|q| &q.out);
            let bias = linear(out, &mut y, &ctx, &layer.out, &layer.out_bias, (rows, h, h));
            residual_norm(&mut x, &y, bias, &layer.attn_norm, h, self.eps);
            if let Some(st) = st.as_deref_mut() {
                observe(&mut st.up, &x, h);
            }
            let inter = self.inter;
            let q = int8.map(|q| &q.up);
            let bias = linear(q, &mut up, &x, &layer.up, &layer.up_bias, (rows, h, inter));
            up.par_chunks_mut(inter * ROWS_PER_TASK)
                .for_each(|block| bias_gelu(block, bias, inter));
            if let Some(st) = st {
                observe(&mut st.down, &up, inter);
            }
            let q = int8.map(|q| &q.down);
            let bias = linear(
                q,
                &mut y,
                &up,
                &layer.down,
                &layer.down_bias,
                (rows, inter, h),
            );
            residual_norm(&mut x, &y, bias, &layer.ffn_norm, h, self.eps);
        }
        pool(&x, lens, h)
    }

    /// Multi-head self-attention of every sequence over its own tokens:
    /// `ctx` gets softmax(QKᵀ/√d)·V per head, heads side by side.
    fn attention(&self, qkv: &[f32], lens: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        // Each sequence's rows of ctx, with its first row.
        let mut parts = Vec::with_capacity(lens.len());
        let mut rest = ctx;
        let mut start = 0;
        for &len in lens {
            let (part, tail) = rest.split_at_mut(len * h);
            parts.push((start, len, part));
            rest = tail;
            start += len;
        }
        parts.into_par_iter().for_each(|(start, len, ctx_b)| {
            if len == 0 {
                return;
            }
            let qkv_b = &qkv[start * 3 * h..(start + len) * 3 * h];
            let mut scores = vec![0f32; len * len];
            for head in 0..self.heads {
                let q = &qkv_b[head * d..];
                let k = &qkv_b[h + head * d..];
                let v = &qkv_b[2 * h + head * d..];
                // Each view spans (len - 1) rows of 3h plus d values.
                debug_assert!(v.len() >= (len - 1) * 3 * h + d);
                // SAFETY: the strides stay inside `qkv_b` (the views
                // start at most 3h - d into it and step 3h per row for
                // `len` rows) and inside `scores` (len × len); `ctx_b`
                // is len × h and the head writes columns head·d..+d.
                unsafe {
                    gemm(
                        len,
                        len,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        len as isize,
                        false,
                        q.as_ptr(),
                        1,
                        3 * h as isize,
                        k.as_ptr(),
                        3 * h as isize,
                        1,
                        0.0,
                        scale,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                softmax_rows(&mut scores, len);
                unsafe {
                    gemm(
                        len,
                        d,
                        len,
                        ctx_b[head * d..].as_mut_ptr(),
                        1,
                        h as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        len as isize,
                        v.as_ptr(),
                        1,
                        3 * h as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
            }
        });
    }
}

/// The mean of each sequence's rows of `x`, L2-normalized.
fn pool(x: &[f32], lens: &[usize], h: usize) -> Vec<Vec<f32>> {
    let mut start = 0;
    lens.iter()
        .map(|&len| {
            let mut sum = vec![0f32; h];
            for row in x[start * h..(start + len) * h].chunks_exact(h) {
                for (s, v) in sum.iter_mut().zip(row) {
                    *s += v;
                }
            }
            start += len;
            let count = (len as f32).max(1e-9);
            for s in &mut sum {
                *s /= count;
            }
            let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            for s in &mut sum {
                *s /= norm;
            }
            sum
        })
        .collect()
}

impl Norm {
    fn apply(&self, row: &mut [f32], eps: f32) {
        let n = row.len() as f32;
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// `dst (m × n) = a (m × k) · wᵀ`, in int8 when `q` is given (which adds
/// the bias too); returns the bias still to add.
fn linear<'b>(
    q: Option<&QuantMatrix>,
    dst: &mut [f32],
    a: &[f32],
    w: &[f32],
    bias: &'b [f32],
    (m, k, n): (usize, usize, usize),
) -> Option<&'b [f32]> {
    match q {
        Some(q) => {
            q.matmul(dst, a, m, bias);
            None
        }
        None => {
            matmul(dst, a, w, m, k, n, false);
            Some(bias)
        }
    }
}

/// The largest magnitude seen per input channel of each of a layer's
/// products, while calibrating.
#[derive(Clone, Default)]
struct Stats {
    qkv: Vec<f32>,
    out: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
}

fn observe(max: &mut Vec<f32>, a: &[f32], width: usize) {
    max.resize(width, 0.0);
    for row in a.chunks_exact(width) {
        for (m, v) in max.iter_mut().zip(row) {
            *m = m.max(v.abs());
        }
    }
}

/// Channels kept f32: those above 4× the median channel's largest value,
/// at most [`MAX_OUTLIERS`] of them, largest first.
fn outliers(max: &[f32]) -> Vec<usize> {
    let mut sorted = max.to_vec();
    sorted.sort_by(f32::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let mut out: Vec<usize> = (0..max.len()).filter(|&j| max[j] > 4.0 * median).collect();
    out.sort_by(|&a, &b| max[b].total_cmp(&max[a]));
    out.truncate(MAX_OUTLIERS);
    out
}

/// At most this many f32 channels per product (each costs about 1 % of the
/// product's time).
const MAX_OUTLIERS: usize = 16;

/// `x = norm(x + y + bias)`, row by row (`bias` is `None` where the
/// product that made `y` added it already).
fn residual_norm(x: &mut [f32], y: &[f32], bias: Option<&[f32]>, norm: &Norm, h: usize, eps: f32) {
    let zeros = vec![0f32; h];
    let bias = bias.unwrap_or(&zeros);
    x.par_chunks_mut(h * ROWS_PER_TASK)
        .zip(y.par_chunks(h * ROWS_PER_TASK))
        .for_each(|(xb, yb)| {
            for (row, add) in xb.chunks_mut(h).zip(yb.chunks(h)) {
                for ((v, a), b) in row.iter_mut().zip(add).zip(bias) {
                    *v += a + b;
                }
                norm.apply(row, eps);
            }
        });
}

/// `dst (m × n) = a (m × k) · wᵀ` for `w` stored `n × k`, plus `dst` when
/// `accumulate`; all row-major and dense.
fn matmul(dst: &mut [f32], a: &[f32], w: &[f32], m: usize, k: usize, n: usize, accumulate: bool) {
    assert!(dst.len() >= m * n && a.len() >= m * k && w.len() >= n * k);
    // SAFETY: the asserts above keep every read and write in bounds for the
    // dense row-major strides passed.
    unsafe {
        gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::Rayon(0),
        );
    }
}

/// Defines a function whose body is compiled twice: for AVX2 — twice the
/// lanes of the x86-64 baseline the crate is built for — taken at run time
/// when the CPU has it, and for the baseline. (A function taking a closure
/// does not do: the closure is not inlined into the `#[target_feature]`
/// copy and runs at baseline width.)
macro_rules! vectorized_fn {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$doc])*
        fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) {
                    body($($arg),*);
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU was just found to support AVX2.
                    unsafe { avx2($($arg),*) };
                    return;
                }
            }
            body($($arg),*);
        }
    };
}

vectorized_fn! {
    /// [`softmax`] over each row of `scores` (rows of `len`).
    fn softmax_rows(scores: &mut [f32], len: usize) {
        for row in scores.chunks_mut(len) {
            softmax(row);
        }
    }
}

/// Softmax of one score row; every loop is branch-free and vectorizes (the
/// reductions keep eight lanes).
#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = lanes(row, f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        row.fill(0.0);
        return;
    }
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let sum = lanes(row, 0.0, |a, b| a + b);
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Folds `xs` with `f` in eight independent lanes, then across them — a
/// shape the compiler vectorizes, where a single running value does not.
#[inline(always)]
fn lanes(xs: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [init; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a = f(*a, *x);
        }
    }
    let mut out = chunks.remainder().iter().fold(init, |a, x| f(a, *x));
    for a in acc {
        out = f(out, a);
    }
    out
}

/// `e^x` to within 2 ulp above -87 (below, where f32 turns subnormal, it
/// returns 0; above 88 it returns e^88). Written without calls or
/// branches so the loops that use it vectorize — a libm call would be 8 % of
/// an embedding's time.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding 1.5·2^23 rounds to an integer held in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let tiny = x < -87.0;
    let x = x.clamp(-87.0, 88.0);
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor to degree 6 on |r| ≤ ln2/2: truncation error < 1.2e-7.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let k = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let e = p * f32::from_bits(((k + 127) << 23) as u32);
    if tiny { 0.0 } else { e }
}

vectorized_fn! {
    /// `v = gelu(v + bias)` over rows of `width` (a tenth of an embedding's
    /// time at baseline width); no bias where the product added it.
    fn bias_gelu(block: &mut [f32], bias: Option<&[f32]>, width: usize) {
        match bias {
            Some(bias) => {
                for row in block.chunks_mut(width) {
                    for (v, b) in row.iter_mut().zip(bias) {
                        *v = gelu(*v + b);
                    }
                }
            }
            None => {
                for v in block.iter_mut() {
                    *v = gelu(*v);
                }
            }
        }
    }
}

/// BERT's exact GELU, `x·Φ(x)`, with an `erf` good to 1.5e-7 (Abramowitz &
/// Stegun 7.1.26) — below f32's resolution near 1, and branch-free.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    #[allow(
        clippy::excessive_precision,
        reason = "the published coefficients, digit for digit"
    )]
    const A: [f32; 5] = [
        0.254_829_592,
        -0.284_496_736,
        1.421_413_741,
        -1.453_152_027,
        1.061_405_429,
    ];
    let ax = x.abs();
    let t = 1.0 / (1.0 + P * ax);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * exp(-ax * ax);
    y.copysign(x)
}

/// The tensors of one checkpoint, by name with the optional `bert.` prefix
/// some checkpoints carry.
struct Tensors(MmapedSafetensors);

impl Tensors {
    /// The first of `names` present, as f32 values (copied straight from the
    /// mapping when stored as f32, converted by candle otherwise) and dims.
    fn values(&self, names: &[&str]) -> Result<(Vec<f32>, Vec<usize>), LoadError> {
        let view = names
            .iter()
            .flat_map(|n| [n.to_string(), format!("bert.{n}")])
            .find_map(|n| self.0.get(&n).ok())
            .ok_or_else(|| LoadError::Weights(format!("tensor `{}` is missing", names[0])))?;
        let dims = view.shape().to_vec();
        let values = if view.dtype() == safetensors::Dtype::F32 {
            view.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        } else {
            view.load(&Device::Cpu)
                .and_then(|t| t.to_dtype(DType::F32))
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| LoadError::Weights(format!("tensor `{}`: {e}", names[0])))?
        };
        Ok((values, dims))
    }

    fn vector(&self, names: &[&str], len: usize) -> Result<Vec<f32>, LoadError> {
        let (v, dims) = self.values(names)?;
        if dims != [len] {
            return Err(shape_err(names[0], &dims, &[len]));
        }
        Ok(v)
    }

    /// A `rows × cols` table (rows unchecked when `None`).
    fn matrix(&self, name: &str, rows: Option<usize>, cols: usize) -> Result<Vec<f32>, LoadError> {
        let (v, dims) = self.values(&[name])?;
        if dims.len() != 2 || dims[1] != cols || rows.is_some_and(|r| r != dims[0]) {
            return Err(shape_err(name, &dims, &[rows.unwrap_or(0), cols]));
        }
        Ok(v)
    }

    /// A linear layer's weight (`out × in`) and bias.
    fn linear(&self, p: &str, inp: usize, out: usize) -> Result<(Vec<f32>, Vec<f32>), LoadError> {
        let w = self.matrix(&format!("{p}.weight"), Some(out), inp)?;
        Ok((w, self.vector(&[&format!("{p}.bias")], out)?))
    }
}

fn shape_err(name: &str, got: &[usize], want: &[usize]) -> LoadError {
    LoadError::Weights(format!(
        "tensor `{name}` has shape {got:?}, expected {want:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_within_f32_resolution_of_the_exact_function() {
        // Reference values of erf (exact to the digits given).
        let table = [
            (0.0f32, 0.0f64),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (1.5, 0.966_105_146_475_310_7),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (-0.7, -0.677_801_193_837_418_5),
        ];
        for (x, want) in table {
            let got = f64::from(erf(x));
            assert!((got - want).abs() < 5e-7, "erf({x}) = {got}, want {want}");
        }
        assert_eq!(erf(10.0), 1.0);
        assert_eq!(erf(-10.0), -1.0);
    }

    #[test]
    fn exp_is_within_two_ulp() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = f64::from(x).exp();
            let got = f64::from(exp(x));
            assert!(
                ((got - want) / want).abs() < 2.5e-7,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.0137;
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn softmax_sums_to_one_in_order() {
        let mut row = [1.0f32, 2.0, 50.0, 3.0];
        softmax(&mut row);
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6);
        assert!(row[2] > row[3] && row[3] > row[1] && row[1] > row[0]);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let norm = Norm {
            gamma: vec![2.0; 4],
            beta: vec![1.0; 4],
        };
        let mut row = [1.0f32, 2.0, 3.0, 4.0];
        norm.apply(&mut row, 1e-12);
        let mean: f32 = row.iter().sum::<f32>() / 4.0;
        assert!((mean - 1.0).abs() < 1e-6, "shift is beta: {row:?}");
        assert!(row[0] < row[1] && row[2] < row[3]);
        assert!((row[3] - row[0] - 2.0 * 3.0 / 1.25f32.sqrt()).abs() < 1e-5);
    }

    #[test]
    fn matmul_matches_a_naive_product() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut dst = vec![1.0f32; m * n];
        matmul(&mut dst, &a, &w, m, k, n, true);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|t| a[i * k + t] * w[j * k + t]).sum::<f32>();
                assert!((dst[i * n + j] - want).abs() < 1e-5);
            }
        }
    }
}
