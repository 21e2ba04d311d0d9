//! kapprox: kernel methods at scale through explicit feature maps, streaming
//! Parquet shards and sufficient statistics — the engine behind the
//! `kapprox` command line, as a library.
//!
//! # Overview
//!
//! - [`fit()`] fits a [`FitConfig`]: a [`MethodSpec`] (map family and
//!   parameters, or exact kernel ridge), bandwidth candidates
//!   ([`SigmaSpec`]), ridge penalties, task, scaling, reading options
//!   ([`ReadConfig`]) and the selection split. It returns a [`Model`] and a
//!   [`FitReport`]; [`Model::save`] and [`Model::load`] write and read model
//!   files.
//! - [`predict`] streams data through a model (predictions or metrics),
//!   [`featurize`] writes feature shards, [`split`], [`generate`],
//!   [`kernel_error`] and [`demo`] do what their commands do.
//! - [`fit::FitJob`] is a fit as a plan of passes with mergeable states;
//!   [`distributed`] runs those passes as part files, worker processes or
//!   MPI ranks (cargo feature `mpi`) and reduces them.
//! - Progress is reported to an [`Observer`]; [`Silent`] reports nothing.
//!
//! The library does no terminal output; the command line (`kapprox-cli`)
//! and the experiments (`kapprox-experiments`) are front ends over it. The
//! numerical crates are re-exported under short names: [`core`], [`io`],
//! [`features`], [`sketch`] and [`solve`].
//!
//! # Example
//!
//! ```no_run
//! use kapprox::{FitConfig, MethodSpec, Silent, fit, predict};
//!
//! // Gaussian random Fourier features, σ and α chosen on a validation split.
//! let method: MethodSpec = "rff".parse()?;
//! let (model, report) = fit(&FitConfig::new("train-shards/", method), &Silent)?;
//! println!("σ = {:.3}, α = {:.2e}", report.sigma, report.alpha);
//! let metrics = predict::evaluate(&model, "test-shards/".as_ref(), 8192, Default::default(), &Silent)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod demo;
pub mod distributed;
pub mod featurize;
pub mod fit;
pub mod generate;
pub mod inputs;
pub mod kernel_error;
pub mod method;
pub mod model;
pub mod observer;
pub mod outputs;
pub mod pipeline;
pub mod predict;
pub mod read;
pub mod sigma;
pub mod split;
pub mod sysinfo;
pub mod tensorfile;

pub use kapprox_core as core;
pub use kapprox_features as features;
pub use kapprox_io as io;
pub use kapprox_sketch as sketch;
pub use kapprox_solve as solve;

pub use fit::{FitConfig, FitReport, Split, fit};
pub use inputs::{ColumnFlags, Inputs};
pub use method::{KernelFamily, MethodParams, MethodSpec};
pub use model::{Model, StoreMap, Task};
pub use observer::{Observer, Silent};
pub use read::ReadConfig;
pub use sigma::SigmaSpec;
