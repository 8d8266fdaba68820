//! The redactor a command runs with: `[redact]` in the config, `--no-redact`
//! for one run, and the root's placeholder key. With redaction off, text
//! may reach a remote header or embedding endpoint only when a second
//! setting says so.

use std::path::Path;

use chatmill_redact::{Key, Redactor};

use crate::command_error::CliError;
use crate::context::Context;

/// The redactor for commands that write or send what inputs hold, keyed by
/// the root's key (made on first use); `None` when redaction is off, which
/// `--no-redact` says in a warning line. Off with a remote endpoint and
/// without `send_unredacted` is a usage error.
pub fn redactor(ctx: &Context) -> Result<Option<Redactor>, CliError> {
    let cfg = &ctx.redact;
    if cfg.enabled && !ctx.no_redact {
        return keyed(ctx, &ctx.root).map(Some);
    }
    let remote = remote_endpoints(ctx)?;
    if !remote.is_empty() && !cfg.send_unredacted {
        return Err(CliError::usage(anyhow::anyhow!(
            "redaction is off, and text would go unredacted to {}",
            remote.join(" and ")
        ))
        .hint("keep redaction on, or set `send_unredacted = true` under `[redact]` as well"));
    }
    if ctx.no_redact {
        crate::render::warning(
            "--no-redact: secrets in these inputs are written, indexed and sent as they are",
        );
    }
    Ok(None)
}

/// The redactor for answers (search results), while redaction is on: the
/// root's placeholders when it has a key.
pub fn answers(ctx: &Context) -> Result<Option<Redactor>, CliError> {
    if !ctx.redact.enabled || ctx.no_redact {
        return Ok(None);
    }
    finder(ctx, Some(&ctx.root)).map(Some)
}

/// A redactor that only finds (`verify`, `scan`, answers): the root's key
/// when it has one, else a throwaway key (placeholders are never written).
pub fn finder(ctx: &Context, root: Option<&Path>) -> Result<Redactor, CliError> {
    match root {
        Some(root)
            if chatmill_root::root::Root::new(root)
                .redaction_key()
                .exists() =>
        {
            keyed(ctx, root)
        }
        _ => Redactor::new(Key::from_bytes([0; 32]), &ctx.redact.rules()).map_err(config_error),
    }
}

/// A redactor keyed by `root`'s key (made on first use).
pub fn keyed(ctx: &Context, root: &Path) -> Result<Redactor, CliError> {
    let paths = chatmill_root::root::Root::new(root);
    fs_err::create_dir_all(paths.state()).map_err(CliError::failed)?;
    let key = Key::load_or_create(&paths.redaction_key()).map_err(|e| {
        CliError::failed(e).hint(
            "the key names every placeholder of this root; restore it from a backup, or move it aside to start a new one",
        )
    })?;
    Redactor::new(key, &ctx.redact.rules()).map_err(config_error)
}

fn config_error(e: chatmill_redact::Error) -> CliError {
    CliError::usage(e).hint("check `[redact]` in the config file (see README.md, \"Secrets\")")
}

/// The header and embedding endpoints configured that are not on this
/// machine.
fn remote_endpoints(ctx: &Context) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    if let Some(h) = &ctx.header
        && !is_loopback(&h.url)
    {
        out.push(format!("the header model at `{}`", h.url));
    }
    let openai = crate::backend::provider(&ctx.embedding)? == crate::backend::Provider::Openai;
    if openai
        && let Some(url) = &ctx.embedding.url
        && !is_loopback(url)
    {
        out.push(format!("the embedding model at `{url}`"));
    }
    Ok(out)
}

/// Whether `url`'s host is this machine (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn only_this_machine_is_loopback() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost/v1",
            "http://[::1]:9/v1",
            "https://user:pw@127.0.0.2/v1",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8080",
            "http://127.0.0.1.evil.example/v1",
            "http://localhost.example/v1",
            "http://[2001:db8::1]/v1",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
