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
//!
//! - `config`: the hyper-parameters, from `config.json`;
//! - `weights`: the checkpoint's tensors, read by name;
//! - `encoder`: the loaded [`Encoder`] and its forward pass;
//! - `layer`: one transformer layer's weights, in f32 and in int8;
//! - `calibration`: the largest inputs seen, which pick the channels int8
//!   leaves in f32;
//! - `attention`: multi-head self-attention within each sequence;
//! - `matmul`: the matrix products;
//! - `norm`: layer norm, and the residual pass that ends in it;
//! - `elementwise`: the vectorized per-value math (softmax, `exp`, GELU).

mod attention;
mod calibration;
mod config;
mod elementwise;
mod encoder;
mod layer;
mod matmul;
mod norm;
mod weights;

pub use config::Config;
pub use encoder::Encoder;
