//! Where a root's inline server listens by default.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::context::Context;

/// The default socket for a root: one per root, in the runtime dir when
/// there is one.
pub fn default_socket(ctx: &Context) -> PathBuf {
    let root = std::fs::canonicalize(&ctx.root).unwrap_or_else(|_| ctx.root.clone());
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let hash = hex::encode(Sha256::digest(root.to_string_lossy().as_bytes()));
            PathBuf::from(dir)
                .join("chatmill")
                .join(format!("{}.sock", &hash[..12]))
        }
        None => chatmill_root::root::Root::new(root).socket(),
    }
}
