//! Fits beyond one process: partial-statistics files, `reduce`, local
//! worker processes and MPI — all the same [`FitJob`](crate::fit::FitJob) passes.
//!
//! Every pass of a fit produces a state that is a sum over rows (see
//! `fit::passes`), so a pass can run on disjoint shard sets anywhere and
//! the states merge into the state of one pass over all shards. This module
//! moves states between processes:
//!
//! - [`files`]: the part file (one pass's state over some shards, with the
//!   run's configuration, the dataset's fingerprint, the shard list and row
//!   ranges, and a checksum) and the pass-result file (what a reduced pass
//!   established, which the next pass starts from);
//! - [`reduce`](mod@reduce): checks that parts belong to the same run and pass and
//!   cover every shard exactly once, merges them in shard order and
//!   advances the job;
//! - [`part`]: one part of one pass (`fit --part`, a worker, an MPI rank);
//! - [`workers`]: `fit --workers P`, the same through child processes;
//! - `mpi` (cargo feature `mpi`): the same through MPI ranks;
//! - [`mode`]: which of these a fit runs as ([`FitMode`]);
//! - [`run`] and [`shards`]: what identifies a run, and which shards a
//!   process takes.
//!
//! # Determinism
//!
//! Inside a part every accumulator sums rows in a fixed order (blocks of
//! consecutive rows, `kapprox_core::moments`), and parts are merged in
//! shard order. The result is a function of the data, the seed and the
//! partition into parts only: the same partition gives bitwise the same
//! model whether the parts ran as files, workers or MPI ranks; another
//! partition changes only the association of the sums at part boundaries
//! (~1e-16 relative).

pub mod codec;
pub mod files;
pub mod mode;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod part;
pub mod reduce;
pub mod run;
pub mod shards;
pub mod workers;

pub use mode::{FitMode, launched_by_mpi};
pub use run::{Difference, RunDoc};
pub use shards::{ShardSelection, format_shards, part_shards, row_ranges};
