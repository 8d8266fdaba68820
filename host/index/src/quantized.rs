//! An int8 matrix product for the encoder's linear layers, on AVX-512 VNNI.
//!
//! Weights are quantized once at load, per output channel and symmetric
//! (`w ≈ sw[n]·q`, q in −127..127); activations per row at each call
//! (`a ≈ sa[m]·p`), shifted by 128 into unsigned bytes because `vpdpbusd`
//! multiplies unsigned by signed bytes: Σ (p+128)·q = Σ p·q + 128·Σq, and
//! the second term is known per output channel. One instruction then does
//! 64 multiply-adds where an f32 FMA does 16. Per-row and per-channel scales
//! (finer than the per-tensor scale of common int8 exports) keep the
//! vectors within the cosine the tests ask of them.
//!
//! [`QuantMatrix::available`] says whether the CPU can run it; the caller
//! keeps the f32 path for every other CPU.

use rayon::prelude::*;

/// Output channels per block: four 16-lane registers.
const NR: usize = 64;
/// Rows per register tile.
const MR: usize = 4;
/// Rows handed to one thread.
const ROWS_PER_TASK: usize = 64;

/// A weight matrix (`n × k`, row-major as on disk) quantized and packed for
/// the kernel: per block of [`NR`] channels, per group of four inputs, the
/// 64 channels' four bytes side by side.
pub struct QuantMatrix {
    n: usize,
    k: usize,
    /// `k` rounded up to a multiple of 4 (zero weights pad it).
    kp: usize,
    packed: Vec<i8>,
    /// Per channel, padded to a multiple of [`NR`].
    scale: Vec<f32>,
    /// 128·Σq per channel (the shift's contribution to remove).
    shift: Vec<i32>,
    /// Input channels computed in f32 (their int8 weights are zero).
    outliers: Vec<usize>,
    /// Their weights, `outliers × n`.
    outlier_w: Vec<f32>,
}

impl QuantMatrix {
    /// Whether this CPU runs the kernel (AVX-512 F/BW with VNNI).
    pub fn available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Quantizes `w` (`n × k`), all but the `outliers` input channels.
    pub fn new(w: &[f32], n: usize, k: usize, outliers: &[usize]) -> Self {
        assert_eq!(w.len(), n * k, "weights are n × k");
        assert!(
            outliers.iter().all(|&j| j < k),
            "outlier channels are inputs"
        );
        let mut outlier_w = Vec::with_capacity(outliers.len() * n);
        for &j in outliers {
            outlier_w.extend((0..n).map(|c| w[c * k + j]));
        }
        let mut w = w.to_vec();
        for c in 0..n {
            for &j in outliers {
                w[c * k + j] = 0.0;
            }
        }
        let kp = k.div_ceil(4) * 4;
        let np = n.div_ceil(NR) * NR;
        let mut packed = vec![0i8; np * kp];
        let mut scale = vec![0f32; np];
        let mut shift = vec![0i32; np];
        for c in 0..n {
            let row = &w[c * k..(c + 1) * k];
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if max > 0.0 { max / 127.0 } else { 1.0 };
            scale[c] = s;
            let (block, lane) = (c / NR, c % NR);
            let mut sum = 0i32;
            for (i, v) in row.iter().enumerate() {
                let q = (v / s).round().clamp(-127.0, 127.0) as i8;
                sum += i32::from(q);
                let at = block * NR * kp + (i / 4) * NR * 4 + lane * 4 + i % 4;
                packed[at] = q;
            }
            shift[c] = 128 * sum;
        }
        Self {
            n,
            k,
            kp,
            packed,
            scale,
            shift,
            outliers: outliers.to_vec(),
            outlier_w,
        }
    }

    /// `dst (m × n) = a (m × k) · wᵀ + bias`, all row-major and dense.
    /// Only call when [`Self::available`].
    pub fn matmul(&self, dst: &mut [f32], a: &[f32], m: usize, bias: &[f32]) {
        assert!(Self::available(), "int8 kernel on a CPU without VNNI");
        assert!(dst.len() >= m * self.n && a.len() >= m * self.k && bias.len() == self.n);
        dst[..m * self.n]
            .par_chunks_mut(ROWS_PER_TASK * self.n)
            .zip(a[..m * self.k].par_chunks(ROWS_PER_TASK * self.k))
            .for_each(|(d, a)| {
                let rows = a.len() / self.k;
                let mut q = vec![0u8; rows.div_ceil(MR) * MR * self.kp];
                let mut sa = vec![0f32; rows.div_ceil(MR) * MR];
                // SAFETY: `available` was checked above; the buffers have
                // the sizes the kernels index (`rows` rounded up to MR rows
                // of `kp` bytes; `d` holds `rows × n`).
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    kernel::quantize_rows(a, self.k, self.kp, &self.outliers, &mut q, &mut sa);
                    kernel::product(self, &q, &sa, rows, d, bias);
                    for (row, out) in a.chunks_exact(self.k).zip(d.chunks_exact_mut(self.n)) {
                        for (&j, w) in self
                            .outliers
                            .iter()
                            .zip(self.outlier_w.chunks_exact(self.n))
                        {
                            kernel::axpy(out, row[j], w);
                        }
                    }
                }
            });
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::*;

    use super::{MR, NR, QuantMatrix};

    /// `out += x·w`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn axpy(out: &mut [f32], x: f32, w: &[f32]) {
        for (o, w) in out.iter_mut().zip(w) {
            *o += x * w;
        }
    }

    /// Each row of `a` (`k` wide) to unsigned bytes `p + 128` with its
    /// scale in `sa`, the `outliers` channels as zero; `q` rows are `kp`
    /// wide, the tail and the padding rows stay 128 (zero after the shift
    /// is removed).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize_rows(
        a: &[f32],
        k: usize,
        kp: usize,
        outliers: &[usize],
        q: &mut [u8],
        sa: &mut [f32],
    ) {
        q.fill(128);
        let mut tmp = vec![0f32; k];
        for (r, row) in a.chunks_exact(k).enumerate() {
            let row = if outliers.is_empty() {
                row
            } else {
                tmp.copy_from_slice(row);
                for &j in outliers {
                    tmp[j] = 0.0;
                }
                &tmp[..]
            };
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if max > 0.0 { max / 127.0 } else { 1.0 };
            sa[r] = s;
            let inv = _mm512_set1_ps(1.0 / s);
            let off = _mm512_set1_epi32(128);
            let out = &mut q[r * kp..r * kp + k];
            let mut i = 0;
            while i + 16 <= k {
                // SAFETY: i + 16 ≤ k bounds both the load and the store.
                unsafe {
                    let v = _mm512_mul_ps(_mm512_loadu_ps(row.as_ptr().add(i)), inv);
                    let p = _mm512_add_epi32(_mm512_cvtps_epi32(v), off);
                    let b = _mm512_cvtusepi32_epi8(p);
                    _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), b);
                }
                i += 16;
            }
            for j in i..k {
                out[j] = ((row[j] / s).round().clamp(-127.0, 127.0) + 128.0) as u8;
            }
        }
    }

    /// `d (rows × n)` from the quantized rows `q` and the packed weights.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn product(
        w: &QuantMatrix,
        q: &[u8],
        sa: &[f32],
        rows: usize,
        d: &mut [f32],
        bias: &[f32],
    ) {
        let blocks = w.n.div_ceil(NR);
        for block in 0..blocks {
            let wb = &w.packed[block * NR * w.kp..(block + 1) * NR * w.kp];
            for r0 in (0..rows).step_by(MR) {
                let acc = unsafe { tile(wb, &q[r0 * w.kp..(r0 + MR) * w.kp], w.kp) };
                for (r, acc) in acc.iter().enumerate().take(rows - r0) {
                    unsafe { store_row(w, block, acc, sa[r0 + r], &mut d[(r0 + r) * w.n..], bias) };
                }
            }
        }
    }

    /// The i32 sums of MR rows of `q` against one block of 64 channels.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile(wb: &[i8], q: &[u8], kp: usize) -> [[__m512i; 4]; MR] {
        let mut acc = [[_mm512_setzero_si512(); 4]; MR];
        let wp = wb.as_ptr();
        let qp = q.as_ptr();
        for g in 0..kp / 4 {
            // SAFETY: g < kp/4: the block holds kp/4 groups of 256 bytes,
            // and each of the MR rows of q holds kp bytes.
            unsafe {
                let w0 = _mm512_loadu_si512(wp.add(g * 256).cast());
                let w1 = _mm512_loadu_si512(wp.add(g * 256 + 64).cast());
                let w2 = _mm512_loadu_si512(wp.add(g * 256 + 128).cast());
                let w3 = _mm512_loadu_si512(wp.add(g * 256 + 192).cast());
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = qp.add(r * kp + g * 4).cast::<i32>().read_unaligned();
                    let b = _mm512_set1_epi32(x);
                    acc[0] = _mm512_dpbusd_epi32(acc[0], b, w0);
                    acc[1] = _mm512_dpbusd_epi32(acc[1], b, w1);
                    acc[2] = _mm512_dpbusd_epi32(acc[2], b, w2);
                    acc[3] = _mm512_dpbusd_epi32(acc[3], b, w3);
                }
            }
        }
        acc
    }

    /// One row of one block out: (sum − shift)·sa·sw + bias, for the
    /// channels that exist.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn store_row(
        w: &QuantMatrix,
        block: usize,
        acc: &[__m512i; 4],
        sa: f32,
        out: &mut [f32],
        bias: &[f32],
    ) {
        let sav = _mm512_set1_ps(sa);
        for (j, acc) in acc.iter().enumerate() {
            let c0 = block * NR + j * 16;
            if c0 + 16 <= w.n {
                // SAFETY: c0 + 16 ≤ n bounds the output row, the bias and
                // the per-channel tables (padded to whole blocks).
                unsafe {
                    let shift = _mm512_loadu_si512(w.shift.as_ptr().add(c0).cast());
                    let v = _mm512_cvtepi32_ps(_mm512_sub_epi32(*acc, shift));
                    let s = _mm512_mul_ps(sav, _mm512_loadu_ps(w.scale.as_ptr().add(c0)));
                    let b = _mm512_loadu_ps(bias.as_ptr().add(c0));
                    _mm512_storeu_ps(out.as_mut_ptr().add(c0), _mm512_fmadd_ps(v, s, b));
                }
            } else {
                let mut lanes = [0i32; 16];
                // SAFETY: a 64-byte store into a 16 × i32 array.
                unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), *acc) };
                for (l, v) in lanes.iter().enumerate() {
                    let c = c0 + l;
                    if c < w.n {
                        let s = sa * w.scale[c];
                        out[c] = (v - w.shift[c]) as f32 * s + bias[c];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_f32_product_within_quantization_error() {
        if !QuantMatrix::available() {
            return;
        }
        // Sizes off every block and tile boundary: 7 rows, 70 channels, 37 inputs.
        for (m, n, k) in [(7, 70, 37), (130, 128, 384)] {
            let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
            let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.11).cos() * 0.1).collect();
            let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.01).collect();
            let qm = QuantMatrix::new(&w, n, k, &[3, 0]);
            let mut dst = vec![f32::NAN; m * n];
            qm.matmul(&mut dst, &a, m, &bias);
            for i in 0..m {
                for j in 0..n {
                    let want = bias[j] + (0..k).map(|t| a[i * k + t] * w[j * k + t]).sum::<f32>();
                    // Each product's error is under half a step of each
                    // factor's scale; the bound sums them over k.
                    let tol = k as f32 * (0.5 / 127.0) * 0.1 * 2.0;
                    let got = dst[i * n + j];
                    assert!((got - want).abs() < tol, "({i},{j}): {got} vs {want}");
                }
            }
        }
    }
}
