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
mod featurize_args;
mod help;
mod output_args;
mod precision;
mod store_map_args;
mod validate;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_dependency_panics();
    let cli = args::Cli::parse();
    let outcome = match std::panic::catch_unwind(|| commands::run(cli)) {
        Ok(outcome) => outcome,
        Err(payload) => {
            eprintln!("kapprox: internal error (a bug; please report it): {}", panic_message(payload.as_ref()));
            return ExitCode::from(101);
        }
    };
    match outcome {
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

/// Keeps the default panic message for panics in kapprox, but not for
/// panics inside the Parquet/Arrow decoders: the reader turns those into
/// errors that name the file (a damaged page is bad input), and the raw
/// message printed first would only confuse. Such a panic that nobody
/// catches still ends in `main`'s "internal error" message.
fn quiet_dependency_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_decoder = info.location().is_some_and(|l| ["/parquet-", "/arrow-"].iter().any(|c| l.file().contains(c)));
        if !in_decoder {
            default(info);
        }
    }));
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
