//! One handler per subcommand: validate the flags, call the library, print
//! the report (stderr for people, stdout for `--json` and metrics) and
//! return the error that becomes exit code 2.

mod apply;
mod data;
mod demo;
mod fit;
mod measure;
mod output;

use crate::args::{Cli, Command};
use crate::bars::Bars;
use crate::output_args::MAX_THREADS;
use anyhow::{Result, bail};

/// Runs a parsed command line.
pub(crate) fn run(cli: Cli) -> Result<()> {
    if let Some(t) = cli.threads {
        if t == 0 || t > MAX_THREADS {
            bail!("--threads: {t} is not between 1 and {MAX_THREADS}");
        }
        // The library's passes, the reader's decode threads and worker
        // processes all follow the global pool.
        rayon::ThreadPoolBuilder::new().num_threads(t).build_global()?;
    }
    let json = match &cli.command {
        Command::Fit(a) => a.json,
        Command::Eval(a) => a.json,
        Command::Demo(a) => a.json,
        Command::Convert(a) => a.json,
        Command::KernelError(a) => a.json,
        Command::Experiment(a) => a.json,
        Command::Reduce(a) => a.json,
        Command::Featurize(a) => a.map_output.json,
        _ => false,
    };
    let bars = Bars::new(cli.quiet || json);
    match &cli.command {
        Command::Convert(a) => data::convert(a, &bars),
        Command::Split(a) => data::split(a, &bars),
        Command::Generate(a) => data::generate(a, &bars),
        Command::Featurize(a) => apply::featurize(a, &bars),
        Command::Predict(a) => apply::predict(a, &bars),
        Command::Eval(a) => apply::eval(a, &bars),
        Command::Fit(a) => fit::fit(a, &bars),
        Command::Reduce(a) => fit::reduce(a),
        Command::Worker(a) => fit::worker(a, &bars),
        Command::Demo(a) => demo::demo(a, &bars),
        Command::KernelError(a) => measure::kernel_error(a, &bars),
        Command::Experiment(a) => measure::experiment(a, &bars),
    }
}

/// Prints one JSON document on stdout.
fn print_json(v: &impl serde::Serialize) -> Result<()> {
    output::line(&serde_json::to_string(v)?)
}
