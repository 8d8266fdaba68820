//! One transformer layer's weights: as loaded (f32), and its products
//! quantized to int8 once calibrated.

use super::calibration::{Stats, outliers};
use super::norm::Norm;
use super::weights::{LoadError, Tensors};
use crate::quantized::QuantMatrix;

/// One transformer layer; weight matrices as on disk (`out × in`,
/// row-major), which `gemm` reads as the transposed right operand without
/// repacking (measured 10–40 % faster than pre-transposed at these sizes).
pub(super) struct Layer {
    /// Query, key and value stacked: `3·hidden × hidden`.
    pub(super) qkv: Vec<f32>,
    pub(super) qkv_bias: Vec<f32>,
    pub(super) out: Vec<f32>,
    pub(super) out_bias: Vec<f32>,
    pub(super) attn_norm: Norm,
    pub(super) up: Vec<f32>,
    pub(super) up_bias: Vec<f32>,
    pub(super) down: Vec<f32>,
    pub(super) down_bias: Vec<f32>,
    pub(super) ffn_norm: Norm,
}

/// A layer's products quantized for the VNNI kernel.
pub(super) struct Int8Layer {
    pub(super) qkv: QuantMatrix,
    pub(super) out: QuantMatrix,
    pub(super) up: QuantMatrix,
    pub(super) down: QuantMatrix,
}

impl Layer {
    /// Layer `i` of the encoder: `hidden` wide, its feed-forward `inter`.
    pub(super) fn load(
        w: &Tensors,
        i: usize,
        hidden: usize,
        inter: usize,
    ) -> Result<Self, LoadError> {
        let p = format!("encoder.layer.{i}");
        let q = w.linear(&format!("{p}.attention.self.query"), hidden, hidden)?;
        let k = w.linear(&format!("{p}.attention.self.key"), hidden, hidden)?;
        let v = w.linear(&format!("{p}.attention.self.value"), hidden, hidden)?;
        let qkv = [q.0, k.0, v.0].concat();
        let qkv_bias = [q.1, k.1, v.1].concat();
        let (out, out_bias) = w.linear(&format!("{p}.attention.output.dense"), hidden, hidden)?;
        let (up, up_bias) = w.linear(&format!("{p}.intermediate.dense"), hidden, inter)?;
        let (down, down_bias) = w.linear(&format!("{p}.output.dense"), inter, hidden)?;
        Ok(Layer {
            qkv,
            qkv_bias,
            out,
            out_bias,
            attn_norm: Norm::load(w, &format!("{p}.attention.output.LayerNorm"), hidden)?,
            up,
            up_bias,
            down,
            down_bias,
            ffn_norm: Norm::load(w, &format!("{p}.output.LayerNorm"), hidden)?,
        })
    }
}

impl Int8Layer {
    /// `layer`'s products in int8, the outlier channels `stats` found left
    /// in f32 (`h` wide, its feed-forward `inter`).
    pub(super) fn new(layer: &Layer, stats: &Stats, h: usize, inter: usize) -> Self {
        Int8Layer {
            qkv: QuantMatrix::new(&layer.qkv, 3 * h, h, &outliers(&stats.qkv)),
            out: QuantMatrix::new(&layer.out, h, h, &outliers(&stats.out)),
            up: QuantMatrix::new(&layer.up, inter, h, &outliers(&stats.up)),
            down: QuantMatrix::new(&layer.down, h, inter, &outliers(&stats.down)),
        }
    }
}
