//! Writes a synthetic input for the benchmark scripts:
//! `cargo run --release -p chatmill-synth --example synth -- chatgpt FILE PAIRS`
//! or `… -- claude-code DIR SESSIONS`.

#![allow(clippy::print_stdout, reason = "an example prints what it wrote")]

use std::path::Path;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, path, n) = match args.as_slice() {
        [kind, path, n] => (kind.as_str(), Path::new(path), n.parse().unwrap_or(0)),
        _ => {
            println!("usage: synth chatgpt FILE PAIRS | synth claude-code DIR SESSIONS");
            std::process::exit(2);
        }
    };
    let made = match kind {
        "chatgpt" => chatmill_synth::chatgpt_export(path, chatmill_synth::Limit::Pairs(n))?,
        "claude-code" => chatmill_synth::claude_code_sessions(path, n)?,
        other => {
            println!("unknown kind `{other}`");
            std::process::exit(2);
        }
    };
    println!("{made:?}");
    Ok(())
}
