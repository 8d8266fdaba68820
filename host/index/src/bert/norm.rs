//! Layer norm: a layer's scale and shift, applied row by row, and the
//! residual pass that adds a product's output back before it.

use rayon::prelude::*;

use super::elementwise::ROWS_PER_TASK;
use super::weights::{LoadError, Tensors};

/// Layer-norm scale and shift.
pub(super) struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    /// The layer norm `p` (`p.weight`/`p.bias`, or the old `p.gamma`/
    /// `p.beta`) of width `len`.
    pub(super) fn load(w: &Tensors, p: &str, len: usize) -> Result<Self, LoadError> {
        Ok(Norm {
            gamma: w.vector(&[&format!("{p}.weight"), &format!("{p}.gamma")], len)?,
            beta: w.vector(&[&format!("{p}.bias"), &format!("{p}.beta")], len)?,
        })
    }

    pub(super) fn apply(&self, row: &mut [f32], eps: f32) {
        let n = row.len() as f32;
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// `x = norm(x + y + bias)`, row by row (`bias` is `None` where the
/// product that made `y` added it already).
pub(super) fn residual_norm(
    x: &mut [f32],
    y: &[f32],
    bias: Option<&[f32]>,
    norm: &Norm,
    h: usize,
    eps: f32,
) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
