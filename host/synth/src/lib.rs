//! Synthetic exports, deterministic (a fixed xorshift seed), for benchmarks
//! and reliability tests: a ChatGPT `conversations.json` of a chosen size,
//! with 4–40 pairs per conversation, code blocks, non-ASCII text and a
//! hidden system node, as the real export has.

use std::io::{BufWriter, Write};
use std::path::Path;

mod claude_code;
pub mod exports;
pub mod files;
pub use claude_code::claude_code_sessions;

/// When to stop generating.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// At least this many bytes.
    Bytes(usize),
    /// At least this many turn pairs.
    Pairs(usize),
}

impl Limit {
    fn reached(self, bytes: usize, pairs: usize) -> bool {
        match self {
            Self::Bytes(b) => bytes >= b,
            Self::Pairs(p) => pairs >= p,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub conversations: usize,
    pub pairs: usize,
    pub bytes: usize,
}

/// Writes a ChatGPT export (a top-level array of conversations) to `path`.
pub fn chatgpt_export(path: &Path, limit: Limit) -> std::io::Result<Generated> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0usize;
    let (mut convs, mut pairs) = (0usize, 0usize);
    w.write_all(b"[")?;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    while !limit.reached(written, pairs) {
        let n = 4 + (rnd() % 37) as usize;
        let mut mapping = String::new();
        let t0 = 1_600_000_000.0 + (convs as f64) * 3600.0;
        mapping
            .push_str(r#""root":{"id":"root","message":null,"parent":null,"children":["sys"]},"#);
        mapping.push_str(concat!(
            r#""sys":{"id":"sys","message":{"id":"sys","author":{"role":"system","metadata":{}},"#,
            r#""content":{"content_type":"text","parts":[""]},"#,
            r#""metadata":{"is_visually_hidden_from_conversation":true}},"parent":"root","children":["u0"]},"#
        ));
        for i in 0..n {
            let q = format!(
                "Question {i} about résumé parsing, caching and \\\"quoted\\\" things — how would you handle case {}?",
                rnd() % 1000
            );
            let a = format!(
                "Here is a detailed answer {i}.\\n\\n```rust\\nfn main() {{ println!(\\\"{}\\\"); }}\\n```\\n\\n- point one about {}\\n- point two with ✓ and 日本語\\n\\n{}",
                rnd(),
                rnd() % 97,
                "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
                    .repeat(6 + (rnd() % 20) as usize)
            );
            let next = if i + 1 < n {
                format!(r#"["u{}"]"#, i + 1)
            } else {
                "[]".into()
            };
            mapping.push_str(&format!(
                r#""u{i}":{{"id":"u{i}","message":{{"id":"u{i}","author":{{"role":"user","metadata":{{}}}},"create_time":{},"content":{{"content_type":"text","parts":["{q}"]}},"metadata":{{}}}},"parent":"{}","children":["a{i}"]}},"#,
                t0 + i as f64 * 60.0,
                if i == 0 { "sys".to_string() } else { format!("a{}", i - 1) }
            ));
            mapping.push_str(&format!(
                r#""a{i}":{{"id":"a{i}","message":{{"id":"a{i}","author":{{"role":"assistant","metadata":{{}}}},"create_time":{},"content":{{"content_type":"text","parts":["{a}"]}},"metadata":{{"model_slug":"gpt-4o"}}}},"parent":"u{i}","children":{next}}}"#,
                t0 + i as f64 * 60.0 + 5.0
            ));
            if i + 1 < n {
                mapping.push(',');
            }
        }
        let conv = format!(
            r#"{}{{"title":"Synthetic conversation {convs}","create_time":{t0},"update_time":{t0},"mapping":{{{mapping}}},"current_node":"a{}","conversation_id":"conv-{convs}","id":"conv-{convs}","default_model_slug":"gpt-4o"}}"#,
            if convs == 0 { "" } else { "," },
            n - 1
        );
        w.write_all(conv.as_bytes())?;
        written += conv.len();
        convs += 1;
        pairs += n;
    }
    w.write_all(b"]")?;
    w.flush()?;
    Ok(Generated {
        conversations: convs,
        pairs,
        bytes: written + 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_is_deterministic_json_of_the_asked_size() {
        let dir = std::env::temp_dir().join(format!("chatmill-synth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        let g = chatgpt_export(&a, Limit::Pairs(100)).unwrap();
        chatgpt_export(&b, Limit::Pairs(100)).unwrap();
        assert!(g.pairs >= 100 && g.pairs < 140, "{g:?}");
        let bytes = std::fs::read(&a).unwrap();
        assert_eq!(bytes, std::fs::read(&b).unwrap());
        assert_eq!(bytes.len(), g.bytes);
        assert!(bytes.starts_with(b"[{") && bytes.ends_with(b"}]"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
