//! The names of assets copied into a root: a SHA-256 prefix and an
//! extension, and the `chatmill-asset:` uri the host gives an attachment it
//! copied. The copying is the root's (`chatmill_root::assets`); rendering
//! ([`crate::render::markdown_link`]) and the root read these rules here.

use chatmill_model::ASSET_URI_SCHEME;

/// The root's folder of assets, beside the chunk files that link them.
pub const ASSETS_DIR: &str = "assets";
/// Hex digits of the SHA-256 in an asset's name.
pub const HASH_DIGITS: usize = 16;
/// Longest extension an asset keeps (else `bin`).
pub const EXT_MAX: usize = 8;

/// Whether `name` is an asset's name: [`HASH_DIGITS`] lowercase hex
/// digits, `.`, and an extension of lowercase letters and digits, at most
/// [`EXT_MAX`].
pub fn is_asset_name(name: &str) -> bool {
    let Some((hash, ext)) = name.split_once('.') else {
        return false;
    };
    hash.len() == HASH_DIGITS
        && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && (1..=EXT_MAX).contains(&ext.len())
        && ext
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The asset an attachment's uri links, when the host linked one.
pub fn linked(uri: &str) -> Option<&str> {
    uri.strip_prefix(ASSET_URI_SCHEME)
        .filter(|name| is_asset_name(name))
}
