//! `chatmill scan PATH…`: what an import would redact, without importing.
//! An input an adapter reads is scanned field by field (the same fields
//! the import redacts); any other text file (an `.env`, a log) line by
//! line. Secrets are shown masked. Exit 1 when anything is found, so it
//! can guard a commit.

use std::path::Path;
use std::process::ExitCode;

use chatmill_pipeline::redaction::{At, each_text};
use chatmill_redact::Redactor;
use chatmill_runtime::model::visible::visible;
use chatmill_runtime::{AdapterSet, Input, Runtime};
use serde::Serialize;

use crate::cli::ScanArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

/// One secret found.
#[derive(Debug, Serialize)]
struct Found {
    file: String,
    /// Where in the file: `conversation 2, pair 3, user text` or `line 7`.
    location: String,
    rule: String,
    /// The secret masked: its first characters and its length.
    preview: String,
}

/// What scanning one file gave.
#[derive(Default)]
struct Scanned {
    found: Vec<Found>,
    /// Not a chat export and not text: nothing to scan.
    unread: bool,
    /// An adapter took the file and failed partway (what it read is scanned).
    error: Option<String>,
}

pub fn run(ctx: &Context, args: ScanArgs) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    let files = crate::inputs::expand_inputs(&args.inputs)?;
    let r = crate::redaction::finder(ctx, None)?;
    let (mut found, mut unread, mut failed) = (Vec::new(), 0, false);
    for path in &files {
        let s = scan_file(&ctx.runtime, &set, &r, path);
        if let Some(e) = &s.error {
            failed = true;
            crate::render::warning(&format!("`{}`: {e}", path.display()));
        }
        unread += usize::from(s.unread);
        found.extend(s.found);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        for f in &found {
            outln!(
                "{}: {}: {} `{}`",
                visible(&f.file),
                visible(&f.location),
                f.rule,
                visible(&f.preview)
            );
        }
        let in_files = found
            .iter()
            .map(|f| f.file.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let mut line = format!(
            "{} secrets in {in_files} of {} files",
            found.len(),
            files.len()
        );
        if unread > 0 {
            line.push_str(&format!(
                " ({unread} neither chat exports nor text: not scanned)"
            ));
        }
        outln!("{line}");
    }
    Ok(if found.is_empty() && !failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Scans one file: by its adapter's fields, else as text.
fn scan_file(runtime: &Runtime, set: &AdapterSet, r: &Redactor, path: &Path) -> Scanned {
    let input = Input::from_path(path);
    let name = input.display().to_string();
    let parsed = set
        .candidates(runtime, &input, None)
        .ok()
        .and_then(|c| runtime.parse_first(&c, &input).ok());
    let Some((mut stream, _)) = parsed else {
        return scan_text(r, path, &name);
    };
    let mut out = Scanned::default();
    let mut n = 0;
    loop {
        match stream.next_conversation() {
            Ok(Some(mut conv)) => {
                n += 1;
                each_text(&mut conv, &mut |at, text| {
                    for f in r.find(text) {
                        out.found.push(Found {
                            file: name.clone(),
                            location: location(n, at),
                            rule: f.rule,
                            preview: f.preview,
                        });
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    out
}

fn location(conversation: usize, at: At) -> String {
    match at.pair {
        None => format!("conversation {conversation}, {}", at.field),
        Some(p) => format!("conversation {conversation}, pair {p}, {}", at.field),
    }
}

/// A file no adapter reads, scanned as text when it is UTF-8 without NUL
/// bytes; each secret located by its line.
fn scan_text(r: &Redactor, path: &Path, name: &str) -> Scanned {
    let Ok(bytes) = fs_err::read(path) else {
        return Scanned {
            unread: true,
            ..Scanned::default()
        };
    };
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) if !bytes.contains(&0) => t,
        _ => {
            return Scanned {
                unread: true,
                ..Scanned::default()
            };
        }
    };
    let found = r
        .find(text)
        .into_iter()
        .map(|f| Found {
            file: name.to_string(),
            location: format!("line {}", 1 + newlines(&text[..f.range.start])),
            rule: f.rule,
            preview: f.preview,
        })
        .collect();
    Scanned {
        found,
        ..Scanned::default()
    }
}

fn newlines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}
