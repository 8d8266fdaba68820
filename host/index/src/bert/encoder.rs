//! The loaded [`Encoder`]: its weights, and the forward pass from token
//! ids to mean-pooled sentence vectors, in f32 or with its products in
//! int8 once quantized.

use std::path::Path;
use std::sync::OnceLock;

use rayon::prelude::*;

use super::attention::attention;
use super::calibration::{Stats, observe};
use super::config::Config;
use super::elementwise::{ROWS_PER_TASK, bias_gelu};
use super::layer::{Int8Layer, Layer};
use super::matmul::{linear, matmul};
use super::norm::{Norm, residual_norm};
use super::weights::{LoadError, Tensors};
use crate::quantized::QuantMatrix;

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

/// The activations one forward pass reuses from layer to layer, for `rows`
/// tokens.
struct Scratch {
    rows: usize,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    y: Vec<f32>,
    up: Vec<f32>,
}

impl Scratch {
    fn new(rows: usize, h: usize, inter: usize) -> Self {
        Self {
            rows,
            qkv: vec![0f32; rows * 3 * h],
            ctx: vec![0f32; rows * h],
            y: vec![0f32; rows * h],
            up: vec![0f32; rows * inter],
        }
    }
}

impl Encoder {
    /// Loads `model.safetensors` for `config`. Accepts tensor names with or
    /// without the `bert.` prefix and the old `gamma`/`beta` layer-norm names.
    pub fn load(weights: &Path, config: &Config) -> Result<Self, LoadError> {
        config.supported()?;
        let hidden = config.hidden_size;
        let w = Tensors::open(weights)?;
        let word = w.matrix("embeddings.word_embeddings.weight", None, hidden)?;
        let position = w.matrix("embeddings.position_embeddings.weight", None, hidden)?;
        let token_type = w.matrix("embeddings.token_type_embeddings.weight", None, hidden)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(&w, i, hidden, config.intermediate_size))
            .collect::<Result<Vec<_>, _>>()?;
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
            embed_norm: Norm::load(&w, "embeddings.LayerNorm", hidden)?,
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
                .map(|(l, st)| Int8Layer::new(l, st, h, inter))
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
        let mut x = self.embeddings(ids, lens);
        let mut s = Scratch::new(rows, self.hidden, self.inter);
        for (i, layer) in self.layers.iter().enumerate() {
            let mut st = stats.as_deref_mut().map(|s| &mut s[i]);
            // Calibration runs in f32 (before the int8 layers exist).
            let int8 = self.int8.get().map(|q| &q[i]);
            self.attend(layer, int8, st.as_deref_mut(), &mut x, lens, &mut s);
            self.feed_forward(layer, int8, st, &mut x, &mut s);
        }
        pool(&x, lens, self.hidden)
    }

    /// Each token's row: its word, position and token-type embeddings
    /// summed and layer-normed.
    fn embeddings(&self, ids: &[u32], lens: &[usize]) -> Vec<f32> {
        let h = self.hidden;
        // Position of each row within its sequence.
        let positions: Vec<usize> = lens.iter().flat_map(|&l| 0..l).collect();
        let mut x = vec![0f32; ids.len() * h];
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
        x
    }

    /// A layer's attention half: `x = norm(x + attention(x)·Wₒ)`.
    fn attend(
        &self,
        layer: &Layer,
        int8: Option<&Int8Layer>,
        mut st: Option<&mut Stats>,
        x: &mut [f32],
        lens: &[usize],
        s: &mut Scratch,
    ) {
        let (h, rows) = (self.hidden, s.rows);
        if let Some(st) = st.as_deref_mut() {
            observe(&mut st.qkv, x, h);
        }
        match int8 {
            Some(q) => q.qkv.matmul(&mut s.qkv, x, rows, &layer.qkv_bias),
            None => {
                for row in s.qkv.chunks_mut(3 * h) {
                    row.copy_from_slice(&layer.qkv_bias);
                }
                matmul(&mut s.qkv, x, &layer.qkv, rows, h, 3 * h, true);
            }
        }
        attention(&s.qkv, lens, &mut s.ctx, h, self.heads);
        if let Some(st) = st {
            observe(&mut st.out, &s.ctx, h);
        }
        let out = int8.map(|q| &q.out);
        let bias = linear(
            out,
            &mut s.y,
            &s.ctx,
            &layer.out,
            &layer.out_bias,
            (rows, h, h),
        );
        residual_norm(x, &s.y, bias, &layer.attn_norm, h, self.eps);
    }

    /// A layer's feed-forward half: `x = norm(x + gelu(x·Wᵤ)·W_d)`.
    fn feed_forward(
        &self,
        layer: &Layer,
        int8: Option<&Int8Layer>,
        mut st: Option<&mut Stats>,
        x: &mut [f32],
        s: &mut Scratch,
    ) {
        let (h, rows, inter) = (self.hidden, s.rows, self.inter);
        if let Some(st) = st.as_deref_mut() {
            observe(&mut st.up, x, h);
        }
        let q = int8.map(|q| &q.up);
        let bias = linear(q, &mut s.up, x, &layer.up, &layer.up_bias, (rows, h, inter));
        s.up.par_chunks_mut(inter * ROWS_PER_TASK)
            .for_each(|block| bias_gelu(block, bias, inter));
        if let Some(st) = st {
            observe(&mut st.down, &s.up, inter);
        }
        let q = int8.map(|q| &q.down);
        let bias = linear(
            q,
            &mut s.y,
            &s.up,
            &layer.down,
            &layer.down_bias,
            (rows, inter, h),
        );
        residual_norm(x, &s.y, bias, &layer.ffn_norm, h, self.eps);
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
