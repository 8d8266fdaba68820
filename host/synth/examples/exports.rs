//! Writes the generated exports the e2e tests import (a ChatGPT export zip
//! with its companion files and images, a Claude.ai export folder, a Gemini
//! Takeout zip, a Claude Code projects folder of three sessions) under DIR,
//! to run chatmill on by hand: `cargo run --release -p chatmill-synth
//! --example exports -- DIR`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool: its output is the terminal"
)]

use chatmill_synth::exports;
use chatmill_synth::files::{write_folder, write_zip};

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: exports DIR");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(&dir);
    write_zip(&dir.join("chatgpt-export.zip"), &exports::chatgpt_export())?;
    write_folder(&dir.join("claude-export"), &exports::claude_export())?;
    write_zip(&dir.join("takeout.zip"), &exports::gemini_takeout())?;
    chatmill_synth::claude_code_sessions(&dir.join("claude-projects"), 3)?;
    println!("exports written under {}", dir.display());
    Ok(())
}
