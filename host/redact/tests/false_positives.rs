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

/// Random-looking text that is not a secret, and code that talks about
/// passwords without holding one.
#[test]
fn hashes_ids_data_uris_paths_counts_and_code_are_kept() {
    let mut rng = support::planted::Rng::new(99);
    let hex = support::planted::HEX;
    let b64 = support::planted::B64;
    let sha1 = rng.from(hex, 40);
    let sha256 = rng.from(hex, 64);
    let uuid = format!(
        "{}-{}-4{}-a{}-{}",
        rng.from(hex, 8),
        rng.from(hex, 4),
        rng.from(hex, 3),
        rng.from(hex, 3),
        rng.from(hex, 12)
    );
    let image = rng.from(b64, 2000);
    let integrity = rng.from(b64, 86);
    let texts = [
        format!("commit {sha1}\nAuthor: Dev <dev@example.com>\n\n    fix: token refresh"),
        format!("git checkout {sha1} && git log --oneline -3"),
        format!("\"uuid\": \"{uuid}\", \"parentUuid\": \"{uuid}\""),
        format!("sha256:{sha256}  chatmill-x86_64.tar.gz"),
        format!("{sha256}  /home/user/downloads/file.iso"),
        format!("![shot](data:image/png;base64,{image}==)"),
        format!("\"integrity\": \"sha512-{integrity}==\","),
        "/home/user/projects/secret-service/src/auth/token_refresh/handlers/mod.rs".to_owned(),
        "C:\\Users\\me\\AppData\\Roaming\\Code\\User\\globalStorage\\tokens.json".to_owned(),
        "token_count = 1523\ntokens_used: 812\nmax_tokens: 4096\n".to_owned(),
        "{\"usage\": {\"input_tokens\": 4096, \"output_tokens\": 512, \"cache_read_input_tokens\": 0}}"
            .to_owned(),
        "password: \"\"\ntoken = None\nsecret = os.environ[\"X\"]\napi_key=${API_KEY}\n".to_owned(),
        "password: <your password>\nauth: true\nsecretary: Jane\npasswordless: enabled\n".to_owned(),
        "fn login(user: &str, password: &str) -> Result<Token, Error> {\n    let hash = hash_password(password)?;\n    verify(&hash, &user.password_hash)\n}".to_owned(),
        "def connect(password=None, token=os.getenv(\"TOKEN\")):\n    self.password = password\n    auth_token = get_token(user)\n".to_owned(),
        "const apiKey = process.env.OPENAI_API_KEY;\nif (password === confirmPassword) { submit(); }".to_owned(),
        "export GITHUB_TOKEN=$(gh auth token)\ncurl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com".to_owned(),
        "DATABASE_URL=postgres://${DB_USER}:${DB_PASS}@localhost:5432/app".to_owned(),
        "The key insight: token-based auth means the secret never leaves the server.".to_owned(),
        "API_KEY=[REDACTED:openai-api-key:3f9a1c2e]\nurl = postgres://u:[REDACTED:url-password:0011aabb]@h/db".to_owned(),
    ];
    let r = redactor();
    for text in &texts {
        let found = r.find(text);
        assert!(found.is_empty(), "{text:?}: {found:?}");
        assert!(
            matches!(r.redact(text).text, std::borrow::Cow::Borrowed(_)),
            "{text:?}"
        );
    }
}
