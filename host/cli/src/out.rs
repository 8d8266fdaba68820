//! The CLI's standard output. Every subcommand prints through [`outln!`] and
//! [`out!`], which return an error instead of panicking when the write fails;
//! a reader that went away (`chatmill search … | head -1`) becomes
//! [`CliError::reader_gone`], which ends the command quietly with exit 0, as
//! ripgrep does.

#![allow(clippy::print_stdout, reason = "this module is the CLI's stdout")]

use std::io::Write;

use crate::command_error::CliError;

/// Writes `args` to standard output; a failed write is the command's error.
pub fn write(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    std::io::stdout().lock().write_fmt(args).map_err(written)
}

/// A failed write to standard output: [`CliError::reader_gone`] when the
/// reader closed its end, any other I/O failure as it is.
pub fn written(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::reader_gone()
    } else {
        CliError::from(e)
    }
}

/// `println!` that returns a [`CliError`] instead of panicking.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` that returns a [`CliError`] instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))?
    };
}

pub(crate) use {out, outln};
