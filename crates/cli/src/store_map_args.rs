//! Flags about what `fit` writes and how it selects, kept apart from `args`:
//! `--store-map` (whether a model or map file stores its map's realised
//! random parameters) and `--extend-grid`.

use clap::{Args, ValueEnum};
use kapprox::StoreMap;

/// `--store-map never|auto|always`.
#[derive(Debug, Args, Clone, Copy)]
pub(crate) struct StoreMapArgs {
    /// Store the map's random parameters (RFF/ORF/QMC frequencies and phases, SORF's and
    /// Fastfood's diagonals and permutations, Comp's projection) in the model file, so that
    /// any language can compute the features (FORMAT.md). auto: when they take at most 64 MiB;
    /// never: the seed alone (kapprox regenerates them).
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    pub(crate) store_map: StoreMapArg,
}

/// The values of `--store-map` (see [`StoreMap`]).
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub(crate) enum StoreMapArg {
    /// Only the seed.
    Never,
    /// When they take at most 64 MiB.
    #[default]
    Auto,
    /// Always.
    Always,
}

impl StoreMapArgs {
    /// The library's policy.
    pub(crate) fn policy(self) -> StoreMap {
        match self.store_map {
            StoreMapArg::Never => StoreMap::Never,
            StoreMapArg::Auto => StoreMap::Auto,
            StoreMapArg::Always => StoreMap::Always,
        }
    }
}

/// `fit --extend-grid`.
#[derive(Debug, Args, Clone, Copy)]
pub(crate) struct ExtendGridArg {
    /// When the chosen alpha or sigma is at the edge of its grid, extend the grid that way:
    /// alpha from the same statistics (up to 4 × 8 more values, no extra pass), sigma by one
    /// more fit over 3 candidates beyond the edge (one more pass over the data). In one
    /// process only.
    #[arg(long)]
    pub(crate) extend_grid: bool,
}
