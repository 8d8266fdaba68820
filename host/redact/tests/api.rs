//! The public API: borrowing, counts, findings, overlaps, idempotence,
//! the allow-list, extra rules, errors, threads and the key file.

mod support;

use std::borrow::Cow;

use chatmill_redact::{Config, Error, Key, Redactor, RuleSpec};
use support::planted::{B62, HEX, Rng};

fn redactor() -> Redactor {
    Redactor::new(Key::from_bytes([3; 32]), &Config::default()).expect("rules compile")
}

fn ghp(rng: &mut Rng) -> String {
    format!("ghp_{}", rng.from(B62, 36))
}

#[test]
fn text_without_secrets_is_borrowed() {
    let text = "Nothing to see: a plain prompt about tokens and passwords.";
    let out = redactor().redact(text);
    assert!(matches!(out.text, Cow::Borrowed(t) if std::ptr::eq(t, text)));
    assert!(out.counts.is_empty());
}

#[test]
fn redact_replaces_only_the_secret_and_counts_per_rule() {
    let mut rng = Rng::new(1);
    let (a, b) = (ghp(&mut rng), ghp(&mut rng));
    let text = format!(
        "{{\"a\": \"{a}\", \"b\": \"{b}\", \"c\": \"{a}\"}}\n```\nDB_PASSWORD=s3cret-Pass9\n```\n"
    );
    let r = redactor();
    let out = r.redact(&text);
    let t = out.text.as_ref();
    assert!(
        !t.contains(&a) && !t.contains(&b) && !t.contains("s3cret-Pass9"),
        "{t}"
    );
    assert_eq!(out.counts.get("github-token"), Some(&3));
    assert_eq!(out.counts.get("secret-assignment"), Some(&1));
    // The text around each secret is kept byte for byte.
    let rebuilt = t.split("[REDACTED:").count();
    assert_eq!(rebuilt, 5);
    assert!(t.starts_with("{\"a\": \"[REDACTED:github-token:"));
    assert!(
        t.ends_with("]\n```\n") && t.contains("\n```\nDB_PASSWORD=[REDACTED:secret-assignment:")
    );
    let p: Vec<&str> = t
        .split('"')
        .filter(|s| s.starts_with("[REDACTED"))
        .collect();
    assert_eq!(p.len(), 3);
    assert_eq!(p[0], p[2], "same secret, same placeholder");
    assert_ne!(p[0], p[1]);
}

#[test]
fn find_reports_rule_range_and_a_masked_preview() {
    let mut rng = Rng::new(2);
    let token = ghp(&mut rng);
    let text = format!("use {token} here; password = \"Pw{}\"", rng.from(HEX, 6));
    let found = redactor().find(&text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].rule, "github-token");
    assert_eq!(&text[found[0].range.clone()], token);
    assert_eq!(found[0].preview, "ghp_…(40 chars)");
    assert_eq!(found[1].rule, "secret-assignment");
    assert_eq!(found[1].preview, "Pw…(8 chars)");
    for f in &found {
        assert!(!f.preview.contains(&text[f.range.clone()]));
    }
}

#[test]
fn the_more_specific_rule_wins_an_overlap() {
    let mut rng = Rng::new(3);
    let key = format!("sk-proj-{}", rng.from(B62, 60));
    let jwt = format!(
        "eyJ{}.eyJ{}.{}",
        rng.from(B62, 20),
        rng.from(B62, 40),
        rng.from(B62, 30)
    );
    let r = redactor();
    let rules = |t: &str| r.find(t).into_iter().map(|f| f.rule).collect::<Vec<_>>();
    assert_eq!(rules(&format!("OPENAI_API_KEY={key}")), ["openai-api-key"]);
    assert_eq!(rules(&format!("Authorization: Bearer {jwt}")), ["jwt"]);
    assert_eq!(rules(&format!("token: {jwt}")), ["jwt"]);
    let url = format!("postgres://app:{key}@db/x");
    assert_eq!(rules(&url), ["openai-api-key"]);
}

#[test]
fn redacting_twice_changes_nothing() {
    let mut rng = Rng::new(4);
    let text = format!(
        "API_KEY={}\npostgres://u:Pa55word-{}@h/db\nAuthorization: Basic {}==\n",
        ghp(&mut rng),
        rng.from(HEX, 8),
        rng.from(B62, 30)
    );
    let r = redactor();
    let once = r.redact(&text).text.into_owned();
    assert_eq!(once.matches("[REDACTED:").count(), 3, "{once}");
    let twice = r.redact(&once);
    assert!(matches!(twice.text, Cow::Borrowed(_)), "{}", twice.text);
    let fixed = "API_KEY=[REDACTED:openai-api-key:3f9a1c2e]";
    assert!(r.find(fixed).is_empty());
}

#[test]
fn allow_listed_secrets_are_kept_whole() {
    let mut rng = Rng::new(5);
    let token = ghp(&mut rng);
    let config = Config {
        allow: vec![format!("^{token}$")],
        ..Config::default()
    };
    let r = Redactor::new(Key::from_bytes([3; 32]), &config).expect("compiles");
    // The generic rule it beat does not take the allowed secret either.
    let text = format!("GITHUB_TOKEN={token}\nother={}", ghp(&mut rng));
    let found = r.find(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(r.redact(&text).text.contains(&token));
}

fn spec(id: &str, pattern: &str, keywords: &[&str]) -> RuleSpec {
    RuleSpec {
        id: id.into(),
        description: "test".into(),
        pattern: pattern.into(),
        keywords: keywords.iter().map(|k| (*k).to_owned()).collect(),
        min_entropy: None,
    }
}

#[test]
fn extra_rules_are_applied_and_gated_by_their_keywords() {
    let config = Config {
        allow: vec![],
        extra: vec![
            spec("acme-key", r"acme_(?P<secret>[a-z0-9]{16})\b", &["ACME_"]),
            spec("whole-match", r"\bINT-[0-9]{6}\b", &[]),
            spec("gated", r"\bgated-[0-9]{4}\b", &["zzz-never"]),
        ],
    };
    let r = Redactor::new(Key::from_bytes([3; 32]), &config).expect("compiles");
    let out = r.redact("id acme_0123456789abcdef and INT-123456 and gated-1234");
    assert!(
        out.text.starts_with("id acme_[REDACTED:acme-key:"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(" and [REDACTED:whole-match:"),
        "{}",
        out.text
    );
    assert!(
        out.text.ends_with(" and gated-1234"),
        "keyword absent: {}",
        out.text
    );
    assert_eq!(r.find("zzz-never gated-1234")[0].rule, "gated");
}

#[test]
fn bad_patterns_are_errors_naming_the_rule() {
    let key = || Key::from_bytes([3; 32]);
    let bad = |spec: RuleSpec| Config {
        allow: vec![],
        extra: vec![spec],
    };
    let err = Redactor::new(key(), &bad(spec("broken", "(unclosed", &[]))).expect_err("bad regex");
    assert!(
        matches!(&err, Error::Rule { id, .. } if id == "broken"),
        "{err}"
    );
    assert!(err.to_string().contains("`broken`"), "{err}");
    let err = Redactor::new(key(), &bad(spec("Bad_Id", "x", &[]))).expect_err("bad id");
    assert!(
        matches!(&err, Error::Rule { id, .. } if id == "Bad_Id"),
        "{err}"
    );
    let err = Redactor::new(key(), &bad(spec("github-token", "x", &[]))).expect_err("taken id");
    assert!(
        matches!(&err, Error::Rule { id, .. } if id == "github-token"),
        "{err}"
    );
    let config = Config {
        allow: vec!["ok".into(), "[".into()],
        extra: vec![],
    };
    let err = Redactor::new(key(), &config).expect_err("bad allow");
    assert!(matches!(err, Error::Allow { index: 1, .. }), "{err}");
}

#[test]
fn one_redactor_serves_many_threads() {
    fn shared<T: Send + Sync>(_: &T) {}
    let r = redactor();
    shared(&r);
    let mut rng = Rng::new(6);
    let tokens: Vec<String> = (0..4).map(|_| ghp(&mut rng)).collect();
    let outs: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = tokens
            .iter()
            .map(|t| {
                let r = &r;
                s.spawn(move || r.redact(&format!("x {t}")).text.into_owned())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    for (t, out) in tokens.iter().zip(&outs) {
        assert_eq!(out, &r.redact(&format!("x {t}")).text);
        assert!(!out.contains(t.as_str()));
    }
}

#[test]
fn the_rule_table_documents_every_rule_without_secrets() {
    let r = redactor();
    let ids: Vec<&str> = chatmill_redact::rules().map(|i| i.id).collect();
    assert_eq!(ids, r.rule_ids().collect::<Vec<_>>());
    for info in chatmill_redact::rules() {
        let found = r.find(info.example);
        assert!(
            found.is_empty(),
            "{}'s example is detected: {found:?}",
            info.id
        );
    }
}

#[test]
fn min_entropy_drops_look_alikes() {
    let r = redactor();
    let fake = format!("sk-proj-{}", "a".repeat(60));
    assert!(r.find(&fake).is_empty());
    assert!(r.find("PASSWORD=aaaa1111").is_empty());
    assert_eq!(r.find("PASSWORD=hunter2-changeme").len(), 1);
}

#[test]
fn fallback_rules_find_a_bare_bearer_token_and_a_cut_off_key() {
    let mut rng = Rng::new(8);
    let r = redactor();
    let token = rng.from(support::planted::B64URL, 40);
    let found = r.find(&format!("then send it as Bearer {token} in the header"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "bearer-token");
    let body: String = (0..3)
        .map(|_| format!("{}\n", rng.from(support::planted::B64, 64)))
        .collect();
    let cut = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}... (truncated)");
    let out = r.redact(&cut).text.into_owned();
    assert!(
        out.starts_with("-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private-key-unterminated:"),
        "{out}"
    );
    assert!(support::planted::leaks(&body, &out).is_empty(), "{out}");
}

/// An adapter's summary may end a long value with `…` inside a secret;
/// the head left is still redacted, under the rule that matches it once
/// completed. Short heads and ordinary shortened text stay.
#[test]
fn a_secret_cut_short_by_an_ellipsis_is_still_redacted() {
    let mut rng = Rng::new(9);
    let r = redactor();
    let token = ghp(&mut rng);
    let head = &token[..20];
    let jwt = format!("eyJ{}.eyJ{}", rng.from(B62, 20), rng.from(B62, 30));
    let url = format!("postgres://app:{}", rng.from(B62, 14));
    for (text, rule) in [
        (
            format!("[Tool: Bash gh auth login --with-token {head}…]"),
            "github-token",
        ),
        (format!("[Tool: Bash echo {jwt}…]"), "jwt"),
        (format!("[Tool: Bash psql {url}…]"), "url-password"),
    ] {
        let out = r.redact(&text);
        assert!(
            out.text.contains(&format!("[REDACTED:{rule}:")),
            "{text} → {}",
            out.text
        );
        assert!(out.text.ends_with("…]"), "{}", out.text);
        for secret in [head, jwt.as_str(), &url[15..]] {
            assert!(!out.text.contains(secret), "{}", out.text);
        }
    }
    for kept in [
        "[Tool: Bash find . -name \"*.json\" -o -name…]",
        "CLERK_SECRET_KEY=sk_tes…(masked)",
        "The reply says \"I'll analyze the codebase and create a CLAUDE.md file…\"",
    ] {
        assert_eq!(r.redact(kept).text, kept);
    }
}

/// A URL cut short after its host keeps its (masked) password and host:
/// the probe's filler is not taken for more of the password.
#[test]
fn a_url_cut_after_its_host_is_not_a_secret_cut_short() {
    let text = "SUPABASE_CONNECTION_URL=postgresql://supabase_admin:***@localhost:54322…";
    assert_eq!(redactor().redact(text).text, text);
}
