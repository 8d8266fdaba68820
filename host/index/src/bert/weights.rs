//! The tensors of a `model.safetensors` checkpoint, read by name as f32
//! vectors and matrices of the shapes the encoder expects.

use std::path::Path;

use candle_core::safetensors::{Load as _, MmapedSafetensors};
use candle_core::{DType, Device};

/// What goes wrong loading a model: the file or tensor, and why.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Weights(String),
    #[error("unsupported model: {0}")]
    Unsupported(String),
}

/// The tensors of one checkpoint, by name with the optional `bert.` prefix
/// some checkpoints carry.
pub(super) struct Tensors(MmapedSafetensors);

impl Tensors {
    /// Maps the checkpoint at `weights`.
    pub(super) fn open(weights: &Path) -> Result<Self, LoadError> {
        // SAFETY: a read-only mapping, copied out by `Encoder::load` and
        // dropped before it returns; chatmill never writes model files.
        let file = unsafe { MmapedSafetensors::new(weights) }
            .map_err(|e| LoadError::Weights(e.to_string()))?;
        Ok(Self(file))
    }

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

    pub(super) fn vector(&self, names: &[&str], len: usize) -> Result<Vec<f32>, LoadError> {
        let (v, dims) = self.values(names)?;
        if dims != [len] {
            return Err(shape_err(names[0], &dims, &[len]));
        }
        Ok(v)
    }

    /// A `rows × cols` table (rows unchecked when `None`).
    pub(super) fn matrix(
        &self,
        name: &str,
        rows: Option<usize>,
        cols: usize,
    ) -> Result<Vec<f32>, LoadError> {
        let (v, dims) = self.values(&[name])?;
        if dims.len() != 2 || dims[1] != cols || rows.is_some_and(|r| r != dims[0]) {
            return Err(shape_err(name, &dims, &[rows.unwrap_or(0), cols]));
        }
        Ok(v)
    }

    /// A linear layer's weight (`out × in`) and bias.
    pub(super) fn linear(
        &self,
        p: &str,
        inp: usize,
        out: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), LoadError> {
        let w = self.matrix(&format!("{p}.weight"), Some(out), inp)?;
        Ok((w, self.vector(&[&format!("{p}.bias")], out)?))
    }
}

fn shape_err(name: &str, got: &[usize], want: &[usize]) -> LoadError {
    LoadError::Weights(format!(
        "tensor `{name}` has shape {got:?}, expected {want:?}"
    ))
}
