//! Writes a Claude Code projects folder of N sessions, for measuring an
//! import of many small files: `cargo run --release -p chatmill-synth
//! --example claude_code_sessions -- DIR [N=300]`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool: its output is the terminal"
)]
fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: claude_code_sessions DIR [SESSIONS]");
        std::process::exit(2);
    };
    let sessions = args
        .next()
        .map_or(Ok(300), |n| n.parse())
        .unwrap_or_else(|e| {
            eprintln!("SESSIONS must be a number: {e}");
            std::process::exit(2);
        });
    let made = chatmill_synth::claude_code_sessions(std::path::Path::new(&dir), sessions)?;
    println!(
        "{} conversations, {} pairs, {} bytes in {dir}",
        made.conversations, made.pairs, made.bytes
    );
    Ok(())
}
