//! Flags that choose a dataset's columns and what is written with the
//! outputs (issue 12): kept apart from the other flags so that each
//! command flattens the groups it takes.

use clap::Args;

/// Which columns are inputs (`fit`, `featurize`, `kernel-error`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Columns")]
pub(crate) struct ColumnArgs {
    /// Input columns: names or globs (`x*`), comma-separated or repeated. Default: every column
    /// but the label and Hive partition keys. Date/time columns are read as numbers only when
    /// named here in full (not by a glob).
    #[arg(long, value_delimiter = ',', value_name = "COLS")]
    pub(crate) columns: Vec<String>,
    /// Columns to leave out of the inputs (an id, a timestamp, free text): names or globs.
    #[arg(long, value_delimiter = ',', value_name = "COLS")]
    pub(crate) exclude: Vec<String>,
    /// Categorical columns, one-hot encoded with the most frequent values seen in training
    /// (the rest and nulls go to an "other" column): names or globs. fit only.
    #[arg(long, value_delimiter = ',', value_name = "COLS")]
    pub(crate) categorical: Vec<String>,
    /// Values kept per categorical column, besides "other".
    #[arg(long, default_value_t = kapprox::io::DEFAULT_MAX_CATEGORIES, value_name = "K")]
    pub(crate) max_categories: usize,
}

/// What written files carry besides their results (`featurize`, `predict`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Output files")]
pub(crate) struct OutputArgs {
    /// Input columns copied unchanged into every output row, e.g. an id to join on: names or
    /// globs, comma-separated or repeated.
    #[arg(long, value_delimiter = ',', value_name = "COLS")]
    pub(crate) keep: Vec<String>,
    /// Compression of the written Parquet files: none, snappy, lz4, gzip, zstd or brotli, the
    /// last three with an optional level, as in zstd:3. Default: zstd:1 for predictions, none for features
    /// (random features are incompressible: zstd saves about 5 % of the file and holds
    /// about 88 KiB of writer state per feature column).
    #[arg(long, value_name = "CODEC")]
    pub(crate) compression: Option<String>,
}
