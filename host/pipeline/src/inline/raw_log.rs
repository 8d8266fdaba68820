//! The raw session logs a batch appended to, made durable together.

use std::collections::HashMap;
use std::path::PathBuf;

/// Makes the raw logs appended to durable: one fsync for one log, one
/// `syncfs` for several (a sync is a journal commit either way). The
/// sessions whose log may not be on disk, with why.
pub(super) fn sync_logs<'s>(
    appended: &HashMap<&'s str, (PathBuf, fs_err::File)>,
) -> HashMap<&'s str, std::io::Error> {
    let failed = |e: std::io::Error| {
        appended
            .keys()
            .map(|&s| (s, std::io::Error::new(e.kind(), e.to_string())))
            .collect()
    };
    match appended.len() {
        0 => HashMap::new(),
        1 => {
            let (_, file) = appended.values().next().expect("one");
            file.sync_data().map_or_else(failed, |()| HashMap::new())
        }
        _ => {
            let (_, file) = appended.values().next().expect("several");
            rustix::fs::syncfs(file.file()).map_or_else(|e| failed(e.into()), |()| HashMap::new())
        }
    }
}
