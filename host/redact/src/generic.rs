//! The code half of the generic rule: does a `name = value` assignment hold
//! a secret? The regex finds names with a secret-ish part and any value;
//! here the name must have a whole word part that means a secret
//! (`db_password`, `apiKey`, `CLIENT_SECRET`; not `tokens_used`,
//! `secretary`, `passwordless`, `token_count`), and the value must look
//! like a literal rather than code, a placeholder or a number
//! (`hunter2-changeme`; not `1523`, `None`, `os.environ["X"]`,
//! `${API_KEY}`, `<your password>`, `true`).
//!
//! The value checks err towards keeping text: a value with no digit is
//! kept unless it is long and random-looking, because in chat text and
//! code such values are overwhelmingly identifiers and words
//! (`password: String`, `token = accessToken`, `secret: something`).

/// Word parts that name a secret on their own.
#[rustfmt::skip]
const SECRET_WORDS: &[&str] = &[
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "token", "auth", "credential",
    "credentials", "apikey", "accesskey", "secretkey", "privatekey", "clientsecret",
    "authtoken", "accesstoken", "refreshtoken", "sessiontoken",
];

/// Parts that, before `key`, make it a secret's name (`api_key`).
#[rustfmt::skip]
const KEY_QUALIFIERS: &[&str] = &[
    "api", "access", "secret", "private", "signing", "encryption", "master", "client", "app",
    "account", "auth", "subscription", "service", "session", "admin",
];

/// A last part that says the name is about a secret, not the secret
/// (`token_count`, `password_url`, `auth_type`).
#[rustfmt::skip]
const META_WORDS: &[&str] = &[
    "count", "counts", "used", "limit", "limits", "max", "min", "size", "len", "length", "type",
    "types", "name", "names", "id", "ids", "url", "uri", "endpoint", "file", "path", "dir",
    "env", "var", "header", "prefix", "suffix", "expiry", "expires", "expiration", "ttl",
    "timeout", "format", "mode", "method", "provider", "policy", "field", "label", "hint",
    "version", "required", "enabled", "usage", "index", "kind", "input", "placeholder",
    "pattern", "regex", "strength", "reset", "budget", "estimate", "cost", "rate", "total",
    "window", "ref", "location", "source",
    // File extensions: `auth.go:582:` in grep output names a file.
    "go", "ts", "tsx", "js", "jsx", "mjs", "py", "rs", "rb", "java", "kt", "swift", "cs",
    "php", "c", "h", "cpp", "sh", "json", "yaml", "yml", "toml", "md", "txt", "html",
    "css", "lock", "log", "pem", "crt", "der",
];

/// Parts that make the whole name a measure (`input_cost_per_token`,
/// `max_token_len`, `num_tokens`).
const MEASURES: &[&str] = &["per", "num", "max", "min", "cost", "count", "total"];

/// Value words that are not secrets whatever the name.
#[rustfmt::skip]
const NON_SECRET_VALUES: &[&str] = &[
    "true", "false", "yes", "no", "on", "off", "null", "nil", "none", "undefined", "required",
    "optional", "string", "boolean", "integer", "number", "object",
];

/// Substrings that mark a placeholder or example value.
#[rustfmt::skip]
const PLACEHOLDER_MARKS: &[&str] = &[
    "your_", "your-", "yourpass", "example", "placeholder", "xxxx", "****", "...", "redacted",
    "<", ">", "${", "{{", "(", "[", "://",
];

/// The lowercase word parts of a name: split at `_ - .` and at camelCase
/// humps (`apiKey` → `api`, `key`).
pub fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            push_part(&mut parts, &mut cur);
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            push_part(&mut parts, &mut cur);
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    push_part(&mut parts, &mut cur);
    parts
}

fn push_part(parts: &mut Vec<String>, cur: &mut String) {
    if !cur.is_empty() {
        parts.push(std::mem::take(cur));
    }
}

/// Whether `name` names a secret.
pub fn secret_name(name: &str) -> bool {
    let parts = name_parts(name);
    let Some(last) = parts.last() else {
        return false;
    };
    if META_WORDS.contains(&last.as_str()) || parts.iter().any(|p| MEASURES.contains(&p.as_str())) {
        return false;
    }
    parts.iter().enumerate().any(|(i, p)| {
        SECRET_WORDS.contains(&p.as_str())
            || (p == "key" && i > 0 && KEY_QUALIFIERS.contains(&parts[i - 1].as_str()))
    })
}

/// The part of a generic value to redact, or `None` if it is not a literal
/// secret. Trailing closing brackets and a sentence's full stop are not
/// part of the value (`{token: abc123}` → `abc123`).
pub fn literal_value(value: &str) -> Option<usize> {
    let v = value.trim_end_matches(['}', ')', ']', '.', ':']);
    if v.chars().count() < 6 || placeholder_like(value) || code_like(v) || line_ref(v) {
        return None;
    }
    if v.parse::<f64>().is_ok() {
        // 2.5e-06, 1e9, inf.
        return None;
    }
    if v.chars().all(|c| !c.is_alphabetic()) && v.chars().any(|c| c.is_ascii_digit()) {
        // A number, date, time or version: 1523, 2024-01-01, 1.2.3.
        let numeric = v
            .chars()
            .all(|c| c.is_ascii_digit() || "._-:+/ ".contains(c));
        if numeric {
            return None;
        }
    }
    if !v.chars().any(|c| c.is_ascii_digit()) && !random_looking(v) {
        return None;
    }
    Some(v.len())
}

/// The part of a URL or connection-string password to redact, or `None`
/// for a placeholder or variable (`${DB_PASS}`, `<password>`, `****`).
pub fn password_value(value: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let word = matches!(
        lower.as_str(),
        "password" | "pass" | "passwd" | "pwd" | "secret"
    );
    if value.is_empty() || word || placeholder_like(value) || variable(value) {
        return None;
    }
    if value.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.')) {
        return None;
    }
    Some(value.len())
}

fn placeholder_like(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    NON_SECRET_VALUES.contains(&lower.as_str())
        || PLACEHOLDER_MARKS.iter().any(|m| lower.contains(m))
        || variable(v)
}

/// `$NAME`, `${NAME}`, `$(cmd)`, `%NAME%`, `%s`, `{name}`.
fn variable(v: &str) -> bool {
    let mut chars = v.chars();
    let first = chars.next();
    let second = chars.next();
    match (first, second) {
        (Some('$'), Some(c)) => c.is_ascii_alphabetic() || "{(_".contains(c),
        (Some('%'), Some(_)) => true,
        (Some('{'), _) => true,
        _ => false,
    }
}

/// A member access, reference, comparison or path: `self.token`,
/// `&str`, `==x`, `./secrets/key.pem`.
fn code_like(v: &str) -> bool {
    let starts = ["=", "&", "*", "/", "./", "../", "~/", "!", "?", "|", "#"];
    if starts.iter().any(|s| v.starts_with(s)) {
        return true;
    }
    let ident = |s: &str| {
        let mut cs = s.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    // Random values can have dots too (`k0wKNudWMA.RZ4rp`); member
    // access in code rarely has digits.
    v.contains('.') && v.split('.').all(ident) && !v.bytes().any(|b| b.is_ascii_digit())
}

/// `582:func…`: the line number and text of a `file:line:` grep hit.
fn line_ref(v: &str) -> bool {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && v.as_bytes().get(digits) == Some(&b':')
}

/// Long enough and varied enough to be a random key even without digits.
fn random_looking(v: &str) -> bool {
    v.len() >= 16
        && crate::entropy::shannon(v) >= 3.5
        && v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_lowercase_parts() {
        assert_eq!(name_parts("apiKey"), ["api", "key"]);
        assert_eq!(name_parts("DB_PASSWORD"), ["db", "password"]);
        assert_eq!(name_parts("x-auth.token"), ["x", "auth", "token"]);
        assert_eq!(name_parts("OAuth2Token"), ["oauth2", "token"]);
    }

    #[test]
    fn secret_names_are_recognised_by_whole_parts() {
        for yes in [
            "PASSWORD",
            "db_password",
            "apiKey",
            "API_KEY",
            "apikey",
            "client_secret",
            "AUTH_TOKEN",
            "aws_secret_access_key",
            "privateKey",
            "passwd",
            "DB_PASS",
            "credentials",
            "x-auth-token",
            "secret_key_base",
            "password_hash",
        ] {
            assert!(secret_name(yes), "{yes}");
        }
        for no in [
            "tokens_used",
            "token_count",
            "secretary",
            "passwordless",
            "max_tokens",
            "input_tokens",
            "key",
            "keyboard",
            "author",
            "auth_type",
            "token_limit",
            "password_url",
            "monkey",
            "passport",
            "authentication",
            "keys",
            "input_cost_per_token",
            "auth.go",
            "device_auth.ts",
        ] {
            assert!(!secret_name(no), "{no}");
        }
    }

    #[test]
    fn literal_values_are_accepted() {
        for yes in [
            "hunter2-changeme",
            "s3cr3tP@ss",
            "abc123XYZ",
            "9f8e7d6c5b4a",
        ] {
            assert_eq!(literal_value(yes), Some(yes.len()), "{yes}");
        }
        assert_eq!(literal_value("abc123XYZ}"), Some(9));
        assert_eq!(literal_value("qWeRtYuIoPaSdFgHjK"), Some(18));
    }

    #[test]
    fn code_numbers_and_placeholders_are_not_values() {
        for no in [
            "1523",
            "4096",
            "None",
            "true",
            "os.environ[",
            "${API_KEY}",
            "$API_KEY",
            "<your",
            "process.env.TOKEN",
            "self._token",
            "&str",
            "String",
            "accessToken",
            "getenv(",
            "2024-01-01",
            "1.2.3",
            "12:30:00",
            "xxxxxxxx",
            "your_api_key_here",
            "changeme",
            "%(password)s",
            "{{ secrets.TOKEN }}",
            "./secrets/key.pem",
            "==confirm",
            "abc12",
            "https://example.com/x",
            "undefined",
            "2.5e-06",
            "582:func",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...",
        ] {
            assert_eq!(literal_value(no), None, "{no}");
        }
    }

    #[test]
    fn password_values_reject_only_placeholders() {
        assert_eq!(password_value("s3cret"), Some(6));
        assert_eq!(password_value("postgres"), Some(8));
        for no in [
            "",
            "password",
            "${DB_PASS}",
            "<password>",
            "****",
            "xxx",
            "$PGPASSWORD",
        ] {
            assert_eq!(password_value(no), None, "{no}");
        }
    }
}
