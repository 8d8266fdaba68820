//! Multi-head self-attention over sequences packed end to end: each
//! sequence's tokens attend only to each other, one sequence per task.

use gemm::{Parallelism, gemm};
use rayon::prelude::*;

use super::elementwise::softmax_rows;

/// `ctx` gets softmax(QKᵀ/√d)·V per head, heads side by side, for every
/// sequence (of `lens`) over its own tokens; `qkv` holds each token's
/// query, key and value (`hidden` wide each, in `heads` heads).
pub(super) fn attention(qkv: &[f32], lens: &[usize], ctx: &mut [f32], hidden: usize, heads: usize) {
    let h = hidden;
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
        sequence(qkv_b, ctx_b, len, h, heads);
    });
}

/// The attention of one sequence of `len` tokens: `qkv_b` its rows of the
/// stacked queries, keys and values, `ctx_b` its rows of the context.
fn sequence(qkv_b: &[f32], ctx_b: &mut [f32], len: usize, h: usize, heads: usize) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let mut scores = vec![0f32; len * len];
    for head in 0..heads {
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
}
