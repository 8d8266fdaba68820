//! The per-value math between the matrix products, written to vectorize:
//! softmax over score rows, bias + GELU over rows, and the branch-free
//! `exp` and `erf` they rest on.

/// Rows handed to one thread in the element-wise passes.
pub(super) const ROWS_PER_TASK: usize = 32;

/// Defines a function whose body is compiled twice: for AVX2 — twice the
/// lanes of the x86-64 baseline the crate is built for — taken at run time
/// when the CPU has it, and for the baseline. (A function taking a closure
/// does not do: the closure is not inlined into the `#[target_feature]`
/// copy and runs at baseline width.)
macro_rules! vectorized_fn {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) {
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
    pub(super) fn softmax_rows(scores: &mut [f32], len: usize) {
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
    pub(super) fn bias_gelu(block: &mut [f32], bias: Option<&[f32]>, width: usize) {
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
}
