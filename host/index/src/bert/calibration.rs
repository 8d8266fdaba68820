//! Calibration for int8: the largest input seen per channel of each of a
//! layer's products, and the outlier channels that stay f32.

/// The largest magnitude seen per input channel of each of a layer's
/// products, while calibrating.
#[derive(Clone, Default)]
pub(super) struct Stats {
    pub(super) qkv: Vec<f32>,
    pub(super) out: Vec<f32>,
    pub(super) up: Vec<f32>,
    pub(super) down: Vec<f32>,
}

pub(super) fn observe(max: &mut Vec<f32>, a: &[f32], width: usize) {
    max.resize(width, 0.0);
    for row in a.chunks_exact(width) {
        for (m, v) in max.iter_mut().zip(row) {
            *m = m.max(v.abs());
        }
    }
}

/// Channels kept f32: those above 4× the median channel's largest value,
/// at most [`MAX_OUTLIERS`] of them, largest first.
pub(super) fn outliers(max: &[f32]) -> Vec<usize> {
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
