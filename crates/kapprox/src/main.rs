//! The `kapprox` command-line tool. All logic lives in the library; this
//! file only parses arguments, runs, and maps the outcome to an exit code.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = kapprox::cli::Cli::parse();
    match kapprox::run(cli) {
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
