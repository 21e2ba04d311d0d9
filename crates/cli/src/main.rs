//! The `kapprox` command line: glue between the arguments and the
//! `kapprox` library.
//!
//! `args` holds the clap definitions, `validate` turns flags into the
//! library's typed configurations (once, up front), `commands` runs them
//! and prints, `bars` draws progress. All numerics and file formats live in
//! the library; this crate only maps the outcome to an exit code.

mod args;
mod bars;
mod commands;
mod precision;
mod validate;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A closed stdout (e.g. piped into `head`) is not a failure.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("kapprox: {err:#}");
            ExitCode::from(2)
        }
    }
}
