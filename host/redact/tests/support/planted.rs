//! Fake secrets of every kind the redactor knows, made from random
//! characters at run time (nothing secret-shaped is committed: the
//! literals below are vendors' public prefixes), and the contexts chat
//! text puts them in.

#![allow(dead_code, reason = "each test binary uses part of the support module")]

/// A small xorshift generator; the seed is printed by the tests so a
/// failure can be replayed with `REDACT_SEED`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// From `REDACT_SEED`, else from the clock.
    pub fn from_env() -> (Rng, u64) {
        let seed = std::env::var("REDACT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                now.map(|d| d.as_nanos() as u64).unwrap_or(1)
            });
        (Rng::new(seed), seed)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `n` characters drawn from `set`.
    pub fn from(&mut self, set: &str, n: usize) -> String {
        let set = set.as_bytes();
        (0..n)
            .map(|_| char::from(set[self.below(set.len())]))
            .collect()
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

pub const DIGITS: &str = "0123456789";
pub const HEX: &str = "0123456789abcdef";
pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub const B62: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const UPPER36: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const BECH32: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// How a secret appears.
#[derive(Debug, Clone)]
pub enum Form {
    /// Recognisable on its own (`ghp_…`).
    Bare,
    /// Needs a name beside it (`AWS_SECRET_ACCESS_KEY=…`).
    Keyed(&'static str),
    /// Only inside this exact line (`…;AccountKey=…;`), which holds it.
    Line(String),
    /// A private key block; the line holds it with real newlines.
    Pem(String),
}

/// One planted secret and the rule that must find it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub rule: &'static str,
    pub secret: String,
    pub form: Form,
}

fn bare(rule: &'static str, secret: String) -> Sample {
    Sample {
        rule,
        secret,
        form: Form::Bare,
    }
}

fn keyed(rule: &'static str, name: &'static str, secret: String) -> Sample {
    Sample {
        rule,
        secret,
        form: Form::Keyed(name),
    }
}

fn line(rule: &'static str, secret: String, before: &str, after: &str) -> Sample {
    let text = format!("{before}{secret}{after}");
    Sample {
        rule,
        secret,
        form: Form::Line(text),
    }
}

/// One fresh sample of every specific (vendor) format.
pub fn specific(r: &mut Rng) -> Vec<Sample> {
    let mut s = ai_and_cloud(r);
    s.extend(hosting_and_saas(r));
    s
}

fn ai_and_cloud(r: &mut Rng) -> Vec<Sample> {
    let openai = if r.below(2) == 0 {
        format!("sk-proj-{}", r.from(B64URL, 120))
    } else {
        format!("sk-{}T3BlbkFJ{}", r.from(B62, 20), r.from(B62, 20))
    };
    vec![
        bare(
            "anthropic-api-key",
            format!("sk-ant-api03-{}AA", r.from(B64URL, 93)),
        ),
        bare(
            "openrouter-api-key",
            format!("sk-or-v1-{}", r.from(HEX, 64)),
        ),
        bare("openai-api-key", openai),
        bare("google-api-key", format!("AIza{}", r.from(B64URL, 35))),
        bare(
            "google-oauth-client-secret",
            format!("GOCSPX-{}", r.from(B64URL, 28)),
        ),
        bare(
            "google-oauth-access-token",
            format!("ya29.{}", r.from(B64URL, 120)),
        ),
        bare("groq-api-key", format!("gsk_{}", r.from(B62, 52))),
        bare("replicate-api-token", format!("r8_{}", r.from(B62, 37))),
        bare("perplexity-api-key", format!("pplx-{}", r.from(B62, 48))),
        bare("xai-api-key", format!("xai-{}", r.from(B62, 80))),
        bare("huggingface-token", format!("hf_{}", r.from(LETTERS, 34))),
        bare(
            "langsmith-api-key",
            format!("lsv2_pt_{}_{}", r.from(HEX, 32), r.from(HEX, 10)),
        ),
        bare("tavily-api-key", format!("tvly-{}", r.from(B62, 32))),
        bare(
            "pinecone-api-key",
            format!("pcsk_{}_{}", r.from(B62, 5), r.from(B62, 60)),
        ),
        keyed("mistral-api-key", "MISTRAL_API_KEY", r.from(B62, 32)),
        bare(
            "aws-access-key-id",
            format!("{}{}", r.pick(&["AKIA", "ASIA"]), r.from(BASE32, 16)),
        ),
        keyed(
            "aws-secret-access-key",
            "AWS_SECRET_ACCESS_KEY",
            r.from(B64, 40),
        ),
        line(
            "azure-storage-key",
            format!("{}==", r.from(B64, 86)),
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
            ";EndpointSuffix=core.windows.net",
        ),
        bare(
            "azure-client-secret",
            format!(
                "{}{}Q~{}",
                r.from(B62, 3),
                r.from(DIGITS, 1),
                r.from(B64URL, 34)
            ),
        ),
        gcp_key(r),
        line(
            "gcp-private-key-id",
            r.from(HEX, 40),
            "{\"type\": \"service_account\", \"private_key_id\": \"",
            "\", \"client_email\": \"svc@proj.iam.gserviceaccount.com\"}",
        ),
        bare("digitalocean-token", format!("dop_v1_{}", r.from(HEX, 64))),
        bare("heroku-api-key", format!("HRKU-AA{}", r.from(B64URL, 58))),
        keyed("heroku-api-key-legacy", "HEROKU_API_KEY", uuid(r)),
        bare("vercel-token", format!("vcp_{}", r.from(B62, 40))),
        keyed("vercel-token-legacy", "VERCEL_TOKEN", r.from(B62, 24)),
        bare("supabase-token", format!("sbp_{}", r.from(HEX, 40))),
        keyed(
            "cloudflare-api-token",
            "CLOUDFLARE_API_TOKEN",
            r.from(B64URL, 40),
        ),
        bare("netlify-token", format!("nfp_{}", r.from(B62, 36))),
        bare("flyio-token", format!("fm2_{}", r.from(B64, 120))),
        bare("render-api-key", format!("rnd_{}", r.from(B62, 32))),
        bare("pulumi-token", format!("pul-{}", r.from(HEX, 40))),
        bare(
            "terraform-cloud-token",
            format!("{}.atlasv1.{}", r.from(B62, 14), r.from(B64URL, 67)),
        ),
        bare("vault-token", format!("hvs.{}", r.from(B64URL, 91))),
        bare("doppler-token", format!("dp.pt.{}", r.from(B62, 43))),
        bare("databricks-token", format!("dapi{}", r.from(HEX, 32))),
    ]
}

fn hosting_and_saas(r: &mut Rng) -> Vec<Sample> {
    vec![
        bare("github-token", format!("ghp_{}", r.from(B62, 36))),
        bare(
            "github-fine-grained-token",
            format!("github_pat_{}_{}", r.from(B62, 22), r.from(B62, 59)),
        ),
        bare("github-oauth-token", format!("gho_{}", r.from(B62, 36))),
        bare(
            "github-app-token",
            format!("{}_{}", r.pick(&["ghs", "ghu"]), r.from(B62, 36)),
        ),
        bare("github-refresh-token", format!("ghr_{}", r.from(B62, 76))),
        bare("gitlab-token", format!("glpat-{}", r.from(B64URL, 20))),
        bare(
            "gitlab-other-token",
            format!(
                "{}-{}",
                r.pick(&["glrt", "gldt", "glptt"]),
                r.from(B64URL, 24)
            ),
        ),
        bare("npm-token", format!("npm_{}", r.from(B62, 36))),
        bare(
            "pypi-token",
            format!("pypi-AgEIcHlwaS5vcmc{}", r.from(B64URL, 70)),
        ),
        bare(
            "dockerhub-token",
            format!("dckr_pat_{}", r.from(B64URL, 27)),
        ),
        bare(
            "postman-api-key",
            format!("PMAK-{}-{}", r.from(HEX, 24), r.from(HEX, 34)),
        ),
        bare("sentry-auth-token", format!("sntrys_{}", r.from(B64, 80))),
        line(
            "sentry-dsn",
            r.from(HEX, 32),
            "https://",
            &format!(
                "@o{}.ingest.us.sentry.io/{}",
                r.from(DIGITS, 6),
                r.from(DIGITS, 7)
            ),
        ),
        bare(
            "grafana-token",
            format!("glsa_{}_{}", r.from(B62, 32), r.from(HEX, 8)),
        ),
        bare("new-relic-key", format!("NRAK-{}", r.from(UPPER36, 27))),
        bare("figma-token", format!("figd_{}", r.from(B64URL, 40))),
        bare(
            "airtable-token",
            format!("pat{}.{}", r.from(B62, 14), r.from(HEX, 64)),
        ),
        bare(
            "slack-bot-token",
            format!(
                "xoxb-{}-{}-{}",
                r.from(DIGITS, 12),
                r.from(DIGITS, 13),
                r.from(B62, 24)
            ),
        ),
        bare(
            "slack-user-token",
            format!(
                "xoxp-{}-{}-{}-{}",
                r.from(DIGITS, 12),
                r.from(DIGITS, 12),
                r.from(DIGITS, 13),
                r.from(HEX, 32)
            ),
        ),
        bare(
            "slack-app-token",
            format!(
                "xapp-1-A{}-{}-{}",
                r.from(UPPER36, 10),
                r.from(DIGITS, 13),
                r.from(HEX, 64)
            ),
        ),
        bare("slack-token", format!("xoxe.xoxp-1-{}", r.from(B62, 140))),
        line(
            "slack-webhook-url",
            format!(
                "T{}/B{}/{}",
                r.from(UPPER36, 8),
                r.from(UPPER36, 10),
                r.from(B62, 24)
            ),
            "https://hooks.slack.com/services/",
            "",
        ),
        bare(
            "discord-bot-token",
            format!(
                "MT{}.{}.{}",
                r.from(B62, 22),
                r.from(B64URL, 6),
                r.from(B62, 38)
            ),
        ),
        line(
            "discord-webhook-url",
            r.from(B64URL, 68),
            &format!("https://discord.com/api/webhooks/{}/", r.from(DIGITS, 18)),
            "",
        ),
        bare(
            "telegram-bot-token",
            format!("{}:AA{}", r.from(DIGITS, 10), r.from(B64URL, 33)),
        ),
        bare(
            "stripe-key",
            format!("{}_live_{}", r.pick(&["sk", "rk"]), r.from(B62, 99)),
        ),
        bare(
            "stripe-webhook-secret",
            format!("whsec_{}", r.from(B62, 32)),
        ),
        bare("twilio-api-key", format!("SK{}", r.from(HEX, 32))),
        keyed("twilio-auth-token", "TWILIO_AUTH_TOKEN", r.from(HEX, 32)),
        bare(
            "sendgrid-api-key",
            format!("SG.{}.{}", r.from(B64URL, 22), r.from(B64URL, 43)),
        ),
        bare("mailgun-api-key", format!("key-{}", r.from(HEX, 32))),
        bare(
            "shopify-token",
            format!(
                "{}_{}",
                r.pick(&["shpat", "shpss", "shpca", "shppa"]),
                r.from(HEX, 32)
            ),
        ),
        bare(
            "atlassian-api-token",
            format!("ATATT3xFfGF0{}", r.from(B64URL, 170)),
        ),
        bare("linear-api-key", format!("lin_api_{}", r.from(B62, 40))),
        bare(
            "notion-token",
            format!("ntn_{}{}", r.from(DIGITS, 11), r.from(B62, 35)),
        ),
        keyed("datadog-key", "DD_API_KEY", r.from(HEX, 32)),
        bare("square-token", format!("sq0atp-{}", r.from(B64URL, 22))),
        bare("facebook-access-token", format!("EAAB{}", r.from(B62, 150))),
        bare(
            "age-secret-key",
            format!("AGE-SECRET-KEY-1{}", r.from(BECH32, 58)),
        ),
        bare(
            "planetscale-token",
            format!("pscale_tkn_{}", r.from(B64URL, 43)),
        ),
        bare(
            "mapbox-secret-token",
            format!("sk.eyJ{}.{}", r.from(B64URL, 60), r.from(B64URL, 22)),
        ),
    ]
}

fn uuid(r: &mut Rng) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        r.from(HEX, 8),
        r.from(HEX, 4),
        r.from(HEX, 4),
        r.from(HEX, 4),
        r.from(HEX, 12)
    )
}

/// Base64 lines of a key body, joined by `sep`.
fn key_body(r: &mut Rng, lines: usize, sep: &str) -> String {
    let mut body: Vec<String> = (0..lines).map(|_| r.from(B64, 64)).collect();
    body.push(format!("{}==", r.from(B64, 30)));
    body.join(sep)
}

fn gcp_key(r: &mut Rng) -> Sample {
    let body = key_body(r, 8, "\\n");
    let text = format!(
        "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n\", \"client_id\": \"1234\"}}"
    );
    Sample {
        rule: "gcp-service-account-key",
        secret: body,
        form: Form::Line(text),
    }
}

/// Structured secrets: JWTs, private key blocks (real and `\n`-escaped
/// newlines), URL and connection-string passwords, auth headers.
pub fn structured(r: &mut Rng) -> Vec<Sample> {
    let pw = url_encoded(&password(r));
    let kind = r.pick(&["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED "]);
    let body = key_body(r, 12, "\n");
    let pem = format!("-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----");
    let escaped_body = key_body(r, 6, "\\n");
    let escaped = format!(
        "-----BEGIN {kind}PRIVATE KEY-----\\n{escaped_body}\\n-----END {kind}PRIVATE KEY-----\\n"
    );
    let host = r.pick(&[
        "db.example.com:5432/app",
        "10.0.0.5/prod",
        "localhost:5432/dev",
    ]);
    vec![
        bare(
            "jwt",
            format!(
                "eyJ{}.eyJ{}.{}",
                r.from(B64URL, 30),
                r.from(B64URL, 90),
                r.from(B64URL, 43)
            ),
        ),
        Sample {
            rule: "private-key",
            secret: body,
            form: Form::Pem(pem),
        },
        Sample {
            rule: "private-key",
            secret: escaped_body,
            form: Form::Line(escaped),
        },
        line(
            "url-password",
            pw.clone(),
            "postgres://app_user:",
            &format!("@{host}"),
        ),
        line(
            "url-password",
            url_encoded(&password(r)),
            "mongodb+srv://admin:",
            "@cluster0.abcde.mongodb.net/test?retryWrites=true",
        ),
        line(
            "url-password",
            url_encoded(&password(r)),
            "redis://:",
            "@cache.internal:6379/0",
        ),
        line(
            "connection-string-password",
            password(r),
            "Server=tcp:db.example.com,1433;Database=app;User ID=app;Password=",
            ";Encrypt=True;",
        ),
        line(
            "authorization-header",
            r.from(B64URL, 40),
            "Authorization: Bearer ",
            "",
        ),
        line(
            "authorization-header",
            format!("{}==", r.from(B64, 30)),
            "Authorization: Basic ",
            "",
        ),
        line("api-key-header", r.from(B62, 32), "X-API-Key: ", ""),
    ]
}

/// A password as people and generators make them: starts with a letter,
/// has a digit, may have symbols that need no quoting.
pub fn password(r: &mut Rng) -> String {
    match r.below(4) {
        3 => format!(
            "{}{}{}",
            r.from(LETTERS, 1),
            r.from(DIGITS, 1),
            r.from(
                "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789$@%&:/?!#",
                15
            )
        ),
        0 => format!(
            "{}{}{}",
            r.from(LETTERS, 1),
            r.from(DIGITS, 1),
            r.from(
                "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#^*_-+=.~",
                14
            )
        ),
        1 => {
            let words = [
                "hunter", "dragon", "sunshine", "marvel", "pepper", "orange", "winter", "falcon",
            ];
            format!(
                "{}{}-{}{}",
                r.pick(&words),
                r.from(DIGITS, 2),
                r.pick(&words),
                r.from("!#*+", 1)
            )
        }
        _ => r.from(B62, 24),
    }
}

/// `pw` as a URL's user info must carry it: `/ ? # [ ] %` percent-encoded.
/// `@` and `:` stay raw, as pasted URLs often have them (the rule takes
/// the password to the last `@` before the host).
fn url_encoded(pw: &str) -> String {
    pw.chars()
        .map(|c| match c {
            '/' | '?' | '#' | '[' | ']' | '%' => format!("%{:02X}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// Names of generic secret assignments.
pub const GENERIC_NAMES: &[&str] = &[
    "DB_PASSWORD",
    "password",
    "api_key",
    "apiKey",
    "client_secret",
    "AUTH_TOKEN",
    "SECRET_KEY",
    "access_token",
    "passwd",
    "MYSQL_ROOT_PASSWORD",
    "refreshToken",
    "privateKey",
    "app_secret",
    "SESSION_SECRET",
    "smtp_password",
    "credentials",
    "REDIS_PASS",
    "x_auth_token",
    "signing_key",
    "JWT_SECRET",
];

/// A generic assignment: a secret name and a password-like value. With
/// random letters-and-digits values a few land without a digit; those the
/// generic rule deliberately keeps (see `generic.rs`), which is what the
/// ≥ 95 % bar measures.
pub fn generic(r: &mut Rng) -> Sample {
    let name = r.pick(GENERIC_NAMES);
    keyed("secret-assignment", name, password(r))
}

/// `text` as a JSON string value inside a chat message object.
pub fn in_json(text: &str) -> String {
    let mut esc = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '"' => esc.push_str("\\\""),
            '\\' => esc.push_str("\\\\"),
            '\n' => esc.push_str("\\n"),
            c => esc.push(c),
        }
    }
    format!("{{\"role\": \"user\", \"content\": \"{esc}\"}}")
}

/// The sample placed in every context chat text puts such things in:
/// (context name, text).
pub fn contexts(s: &Sample) -> Vec<(&'static str, String)> {
    match &s.form {
        Form::Bare => bare_contexts(&s.secret),
        Form::Keyed(name) => keyed_contexts(name, &s.secret),
        Form::Line(text) => line_contexts(text),
        Form::Pem(pem) => pem_contexts(pem),
    }
}

fn bare_contexts(v: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "prose",
            format!("I pasted my key {v} into the config and it still fails, why?"),
        ),
        (
            "shell",
            format!("$ cat ~/.config/tool/credentials\n{v}\n$ echo $?\n0\n"),
        ),
        (
            "fence",
            format!("Try this:\n\n```python\nclient = Client(\"{v}\")\n```\n"),
        ),
        ("json", in_json(&format!("{{\"value\": \"{v}\"}}"))),
        ("env", format!("DEBUG=true\nSERVICE_VALUE={v}\nPORT=8080\n")),
        (
            "url",
            format!("https://example.com/callback?state=abc&value={v}&page=2"),
        ),
        ("yaml", format!("service:\n  value: {v}\n  retries: 3\n")),
        (
            "curl",
            format!("curl -sS https://api.example.com/v1/items -H \"Authorization: Bearer {v}\""),
        ),
    ]
}

fn keyed_contexts(name: &str, v: &str) -> Vec<(&'static str, String)> {
    let lower = name.to_ascii_lowercase();
    vec![
        (
            "prose",
            format!("I set {name}={v} but the client still says unauthorized."),
        ),
        (
            "shell",
            format!("$ printenv | sort\nHOME=/home/me\n{name}={v}\nPATH=/usr/bin\n"),
        ),
        (
            "fence",
            format!("```bash\nexport {name}=\"{v}\"\n./run.sh\n```\n"),
        ),
        (
            "code",
            format!("```python\nsettings = Settings({name}=\"{v}\")\n```\n"),
        ),
        (
            "json",
            in_json(&format!(
                "{{\"{name}\": \"{v}\", \"region\": \"eu-west-1\"}}"
            )),
        ),
        ("env", format!("DEBUG=true\n{name}={v}\nPORT=8080\n")),
        ("url", format!("https://example.com/api?{lower}={v}&page=2")),
        ("yaml", format!("config:\n  {lower}: {v}\n  retries: 3\n")),
        (
            "curl",
            format!("curl -sS https://api.example.com/login -d '{name}={v}'"),
        ),
    ]
}

fn line_contexts(text: &str) -> Vec<(&'static str, String)> {
    let curl = if text.contains("://") {
        format!("curl -sS '{text}'")
    } else {
        format!("curl -sS -H \"{text}\" https://api.example.com/v1")
    };
    vec![
        (
            "prose",
            format!("Here is the line: {text} what is wrong with it?"),
        ),
        ("shell", format!("$ cat config.txt\n{text}\n$ ")),
        ("fence", format!("```\n{text}\n```\n")),
        ("json", in_json(text)),
        ("env", format!("DEBUG=true\nCONNECTION={text}\n")),
        ("yaml", format!("config:\n  connection: {text}\n")),
        ("curl", curl),
    ]
}

fn pem_contexts(pem: &str) -> Vec<(&'static str, String)> {
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    vec![
        (
            "prose",
            format!("here's my key:\n{pem}\nwhy does ssh reject it?"),
        ),
        ("shell", format!("$ cat ~/.ssh/id_rsa\n{pem}\n$ ")),
        ("fence", format!("```\n{pem}\n```\n")),
        ("json", in_json(pem)),
        ("env", format!("PRIVATE_KEY=\"{pem}\"\n")),
        ("yaml", format!("tls:\n  key: |\n{indented}")),
    ]
}

/// Parts of `secret` (split at newlines, `\n` escapes and spaces) whose
/// 8-byte windows still occur in `out`: a leak, however partial.
pub fn leaks(secret: &str, out: &str) -> Vec<String> {
    let mut leaked = Vec::new();
    for piece in secret.split("\\n").flat_map(|p| p.split_whitespace()) {
        let bytes = piece.as_bytes();
        if bytes.len() < 8 {
            if !piece.is_empty() && out.contains(piece) && bytes.len() >= 6 {
                leaked.push(piece.to_owned());
            }
            continue;
        }
        for w in bytes.windows(8) {
            let w = std::str::from_utf8(w).expect("ASCII secrets");
            if out.contains(w) {
                leaked.push(w.to_owned());
                break;
            }
        }
    }
    leaked
}
