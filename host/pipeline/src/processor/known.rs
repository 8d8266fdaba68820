//! The chunk ids a processor already knows, kept small.

/// The chunk ids already recorded, kept as 128-bit hashes: ~20 bytes an id
/// where a set of the strings would take ~100 (the manifest lists every id
/// twice already; a third copy would be a third of what an import holds
/// per chunk). Two ids share a hash with odds of ~10⁻²⁷ among a million.
#[derive(Default)]
pub(super) struct Known(pub(super) rustc_hash::FxHashSet<u128>);

impl Known {
    pub(super) fn hash(id: &str) -> u128 {
        use std::hash::{DefaultHasher, Hasher};
        let half = |seed: u8| {
            let mut h = DefaultHasher::new();
            h.write_u8(seed);
            h.write(id.as_bytes());
            h.finish()
        };
        (u128::from(half(0)) << 64) | u128::from(half(1))
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.0.contains(&Self::hash(id))
    }

    /// Whether `id` was new.
    pub(super) fn insert(&mut self, id: &str) -> bool {
        self.0.insert(Self::hash(id))
    }
}

impl<'s> FromIterator<&'s str> for Known {
    fn from_iter<I: IntoIterator<Item = &'s str>>(ids: I) -> Self {
        Self(ids.into_iter().map(Self::hash).collect())
    }
}
