//! The matrix products: dense f32 through `gemm`, and a linear layer's
//! product in f32 or, once quantized, in int8.

use gemm::{Parallelism, gemm};

use crate::quantized::QuantMatrix;

/// `dst (m × n) = a (m × k) · wᵀ`, in int8 when `q` is given (which adds
/// the bias too); returns the bias still to add.
pub(super) fn linear<'b>(
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

/// `dst (m × n) = a (m × k) · wᵀ` for `w` stored `n × k`, plus `dst` when
/// `accumulate`; all row-major and dense.
pub(super) fn matmul(
    dst: &mut [f32],
    a: &[f32],
    w: &[f32],
    m: usize,
    k: usize,
    n: usize,
    accumulate: bool,
) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
