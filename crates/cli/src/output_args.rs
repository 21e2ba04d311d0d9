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

/// `--compression` of `convert` (`featurize` and `predict` take it with
/// `--keep`): the same values and default.
#[derive(Debug, Args, Clone)]
pub(crate) struct CompressionArg {
    /// Compression of the written Parquet files: none, snappy, lz4, gzip, zstd or brotli, the
    /// last three with an optional level, as in zstd:3.
    #[arg(long, default_value = "zstd:1", value_name = "CODEC")]
    pub(crate) compression: String,
}

/// Most threads `--threads` accepts: far above any machine's cores, far
/// below what exhausts memory for thread stacks.
pub(crate) const MAX_THREADS: usize = 1024;
