//! How a fit runs: in this process, as one part of a pass, in worker
//! processes, or as one MPI rank. A front end resolves the mode once, when
//! it validates its arguments.

use super::ShardSelection;
use std::path::PathBuf;

/// How a fit runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FitMode {
    /// Every pass in this process (`fit`).
    Local,
    /// Only the plan of passes, without reading data (`fit --plan`).
    Plan,
    /// Every pass in this many worker processes over disjoint shard sets,
    /// reduced by this process (`fit --workers P`).
    Workers(usize),
    /// The next pass over some shards, written as a part file for `reduce`
    /// (`fit --part I/N` or `--shards LIST`), from the start or after a
    /// pass result (`--after RESULT`).
    Part {
        /// The shards of this part.
        shards: ShardSelection,
        /// The pass result the pass continues from.
        after: Option<PathBuf>,
    },
    /// The remaining passes in this process, after a pass result
    /// (`fit --after RESULT` without `--part`).
    After(PathBuf),
    /// One rank of an MPI launch; rank 0 writes the model.
    Mpi,
}

impl FitMode {
    /// Whether the fit runs beyond one process or pass (every mode but
    /// [`FitMode::Local`]): exact kernel ridge runs only locally.
    pub fn is_distributed(&self) -> bool {
        *self != FitMode::Local
    }
}

/// Whether this process is one of several ranks started by an MPI
/// launcher: `OMPI_COMM_WORLD_SIZE` (Open MPI) or `PMI_SIZE` (MPICH, Intel
/// MPI, Slurm's PMI) above 1, or `PMIX_RANK` with `SLURM_NTASKS` above 1
/// (Slurm with PMIx). A single rank runs as an ordinary process.
pub fn launched_by_mpi() -> bool {
    let above_one = |v: &str| std::env::var(v).ok().and_then(|s| s.trim().parse::<u64>().ok()).is_some_and(|n| n > 1);
    above_one("OMPI_COMM_WORLD_SIZE")
        || above_one("PMI_SIZE")
        || (std::env::var_os("PMIX_RANK").is_some() && above_one("SLURM_NTASKS"))
}
