//! End-to-end tests of the `kapprox` command line.
//!
//! Every test runs the built binary in a fresh temporary directory on small
//! fixtures made in the test (CSV text, `kapprox generate`, or the CPU data
//! shipped in `data/`), and checks exit codes, error messages, the files left
//! behind and the numbers in `--json` reports. One module per area:
//!
//! - `happy`: demo, convert -> fit -> predict -> eval round trips, split.
//! - `bad_input`: each kind of bad input gets a message naming the file, the
//!   row, the column and what was expected, exit code 2, and no output.
//! - `invariance`: the model does not depend on chunk size or shard layout;
//!   same seed and layout give a bitwise-equal file.
//! - `distributed`: `fit --workers`, `fit --part` + `reduce` (pass by pass)
//!   and `mpirun` (feature `mpi`) give the model of one process; bad,
//!   missing or duplicate parts and dead workers are refused, no model is
//!   written, and rerunning the missing part completes the fit.
//! - `crash`: a `featurize` killed half-way leaves nothing at its output,
//!   and a rerun completes and removes what the killed run left.
//! - `faults`: SIGKILLs at random moments of every writing command (nothing
//!   or the whole output, no orphan workers, no leftovers after a rerun),
//!   concurrent runs on one output, a full disk (when a tmpfs can be
//!   mounted).
//! - `hostile`: the examples of issue 11: outputs that would destroy
//!   inputs, absurd sizes, damaged or degenerate models, closed or full
//!   stdout: one error line and exit 2 (or the right result), never a panic.
//! - `experiments`: `kapprox experiment` writes its CSV and PNG and refuses
//!   bad flags.
//! - `columns`: tables as pipelines write them (text ids, categorical
//!   columns, nulls, timestamps, Hive directories): column selection,
//!   one-hot encoding, imputation, kept columns, output codecs.
//! - `s3`: every command reads `s3://` from a local moto server as it
//!   reads the local directory (skipped when moto cannot be installed).
//! - `readback`: features and predictions read back through arrow (Rust)
//!   and pyarrow (when installed) and agree with the model.
//! - `first_hour`: featurize and kernel-error on their defaults, a map
//!   saved by featurize and reused, grid-edge and Nyström warnings,
//!   featurize memory bounded by the chunk size.
//! - `numpy_predict`: plain numpy reproduces predict from the model file.
//! - `readme`: every ```sh block of README.md runs verbatim in a scratch
//!   directory, and every subcommand's `--help` examples run.
//! - `memory`: peak RSS of an out-of-core fit does not grow with the rows
//!   (ignored by default: `cargo test --release -p kapprox-cli --test cli -- --ignored`).

#[macro_use]
mod macros;
mod util;

mod bad_input;
mod columns;
mod crash;
mod distributed;
mod experiments;
mod faults;
mod first_hour;
mod happy;
mod hostile;
mod invariance;
mod memory;
mod numpy_predict;
mod readback;
mod readme;
mod s3;

// The io crate's Python finder and moto server, shared rather than copied.
#[allow(dead_code)]
#[path = "../../../io/tests/integration/python.rs"]
mod python;
#[allow(dead_code)]
#[path = "../../../io/tests/integration/s3_server.rs"]
mod s3_server;
