//! kapprox: kernel methods at scale through explicit feature maps, streaming
//! Parquet shards and sufficient statistics.
//!
//! # Overview
//!
//! This crate wires the workspace together: [`pipeline`] runs passes over a
//! dataset (read -> scale -> featurize -> accumulate), [`fit`] chooses a
//! bandwidth and a ridge penalty from statistics gathered in one pass,
//! [`model`] reads and writes model files, [`predict`] streams data through
//! a model, and [`commands`] implements the command-line interface.
//!
//! The numerical crates are re-exported under short names: [`core`],
//! [`io`], [`features`], [`sketch`] and [`solve`].

pub mod class_moments;
pub mod cli;
pub mod commands;
pub mod config;
pub mod distributed;
pub mod exact;
pub mod experiment;
pub mod fit;
pub mod generate;
pub mod kernel_error;
pub mod model;
pub mod outputs;
pub mod pipeline;
pub mod predict;
pub mod progress;
pub mod split;
pub mod sysinfo;
pub mod tensorfile;

pub use kapprox_core as core;
pub use kapprox_features as features;
pub use kapprox_io as io;
pub use kapprox_sketch as sketch;
pub use kapprox_solve as solve;

use cli::{Cli, Command};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(t) = cli.threads {
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
        _ => false,
    };
    progress::set_quiet(cli.quiet || json);
    match &cli.command {
        Command::Convert(a) => commands::convert(a),
        Command::Split(a) => commands::split(a),
        Command::Featurize(a) => commands::featurize(a),
        Command::Fit(a) => commands::fit_cmd(a),
        Command::Predict(a) => commands::predict(a),
        Command::Eval(a) => commands::eval(a),
        Command::Demo(a) => commands::demo(a),
        Command::Generate(a) => commands::generate(a),
        Command::KernelError(a) => commands::kernel_error(a),
        Command::Experiment(a) => experiment::run(a),
        Command::Reduce(a) => distributed::cli::reduce(a),
        Command::Worker(a) => distributed::cli::worker(a),
    }
}
