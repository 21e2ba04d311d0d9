//! Flags about outputs and resource bounds shared by several commands,
//! kept apart from `args` (flattened into the commands that take them).

use clap::Args;

/// `--overwrite` for commands whose output may already exist.
#[derive(Debug, Args, Clone, Copy)]
pub(crate) struct OverwriteArg {
    /// Replace an existing output (atomically: readers see the old output or the whole new one).
    /// Without it, an existing output (other than an empty directory) is refused.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// Most threads `--threads` accepts: far above any machine's cores, far
/// below what exhausts memory for thread stacks.
pub(crate) const MAX_THREADS: usize = 1024;
