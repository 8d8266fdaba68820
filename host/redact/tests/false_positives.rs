//! The redactor must leave ordinary chat text alone: zero findings on the
//! shared corpus (real exports and agent sessions, and LoCoMo), and none
//! on the shapes that look random but are not secrets.

mod support;

use support::corpus;

use chatmill_redact::{Config, Key, Redactor};

/// Findings in the corpus that are genuinely secret-shaped, each with why.
/// (file, rule, reason)
const ALLOWED: &[(&str, &str, &str)] = &[
    // Three image URLs in LoCoMo's conversations (shared photos) carry a
    // signed HS256 JWT as `?token=`: a real bearer credential for those
    // images (header `{"typ":"JWT","alg":"HS256"}`), so the jwt rule is
    // right to flag it; it is public data of the benchmark, not ours.
    (
        "locomo/locomo10.json",
        "jwt",
        "signed image-URL tokens (real HS256 JWTs)",
    ),
    // A pasted `.mcp.json`/env listing with two `SUPABASE_ANON_KEY` values:
    // real JWTs (one is Supabase's well-known local-demo anon key, `iss:
    // supabase-demo`; the other a project's anon key). Anon keys are meant
    // to ship to browsers, but their shape is exactly a secret's (and the
    // same slot holds the service-role key), so flagging them is correct.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-07-02_15-28-22Z.md",
        "jwt",
        "Supabase anon keys (public-by-design JWTs)",
    ),
];

fn redactor() -> Redactor {
    Redactor::new(Key::from_bytes([7; 32]), &Config::default()).expect("built-in rules compile")
}

#[test]
fn the_shared_corpus_has_no_findings() {
    let dir = corpus::corpus_dir();
    let files = corpus::text_files(&dir);
    assert!(
        files.len() > 50,
        "only {} text files under {}",
        files.len(),
        dir.display()
    );
    assert!(
        files.iter().any(|(p, _)| p.starts_with("locomo/")),
        "LoCoMo is missing"
    );
    let r = redactor();
    let mut unexpected = Vec::new();
    for (path, text) in &files {
        for f in r.find(text) {
            let allowed = ALLOWED
                .iter()
                .any(|(p, rule, _)| p == path && *rule == f.rule);
            if !allowed {
                let lo = text.floor_char_boundary(f.range.start.saturating_sub(40));
                let hi = text.ceil_char_boundary((f.range.end + 20).min(text.len()));
                unexpected.push(format!(
                    "{path}: {} {:?} in {:?}",
                    f.rule,
                    f.range,
                    &text[lo..hi]
                ));
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "{} findings:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
