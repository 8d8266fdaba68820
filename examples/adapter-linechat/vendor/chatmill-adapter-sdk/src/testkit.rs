//! Native helpers for adapter tests: the shared corpus, parsing a file with
//! a given read size and batch size, and counting what came out.

use std::path::{Path, PathBuf};

use crate::{Adapter, Input, Item, ParseError, Trickle, parse_all};

/// The real-export corpus (`shared/corpus` beside the repository), or
/// `$CHATMILL_CORPUS`.
pub fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CHATMILL_CORPUS") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
}

/// Every file in the corpus except its README/SOURCES notes, sorted.
pub fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&corpus_dir(), &mut out);
    out.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name != "SOURCES.md" && name != "README.md"
    });
    out.sort();
    assert!(
        !out.is_empty(),
        "no corpus files under {}; set CHATMILL_CORPUS",
        corpus_dir().display()
    );
    out
}

/// A corpus file by its path relative to the corpus root.
pub fn corpus_file(rel: &str) -> PathBuf {
    corpus_dir().join(rel)
}

/// Parses `path` with `A`, reading `read_size` bytes at a time and asking
/// for `max_items` per batch.
pub fn parse_file<A: Adapter>(
    path: &Path,
    read_size: usize,
    max_items: usize,
) -> Result<Vec<Item>, ParseError> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let len = bytes.len() as u64;
    let input = Input::new(
        name,
        Some(len),
        Box::new(Trickle::new(std::io::Cursor::new(bytes), read_size)),
    );
    parse_all::<A>(input, max_items)
}

/// Sniffs `path` as the host does: the first 64 KiB and the file name.
pub fn sniff_file<A: Adapter>(path: &Path) -> u8 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let head = &bytes[..bytes.len().min(64 * 1024)];
    A::sniff(head, &path.file_name().unwrap().to_string_lossy())
}

/// (conversations, pairs) in `items`, checking that starts and ends balance.
pub fn count(items: &[Item]) -> (usize, usize) {
    let mut open = false;
    let (mut convs, mut pairs) = (0, 0);
    for item in items {
        match item {
            Item::ConversationStart(_) => {
                assert!(!open, "conversation-start inside a conversation");
                open = true;
                convs += 1;
            }
            Item::Pair(_) => {
                assert!(open, "pair outside a conversation");
                pairs += 1;
            }
            Item::ConversationEnd(_) => {
                assert!(open, "conversation-end without a start");
                open = false;
            }
        }
    }
    assert!(!open, "last conversation was not ended");
    (convs, pairs)
}

/// Asserts that `A` gives the same items for `path` whatever the read size
/// and batch size (1 byte / 1 item versus 64 KiB / 1000 items), and returns
/// them.
pub fn assert_chunking_invariant<A: Adapter>(path: &Path) -> Vec<Item> {
    let big = parse_file::<A>(path, 64 * 1024, 1000);
    let small = parse_file::<A>(path, 1, 1);
    assert_eq!(
        big,
        small,
        "{}: output depends on read/batch size",
        path.display()
    );
    big.unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
