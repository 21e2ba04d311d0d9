//! `fit --precision`: the precision of the fit pass's block products.

use clap::{Args, ValueEnum};
use kapprox::fit::Precision;

/// The precision flag of `fit`, kept apart from the other fit flags.
#[derive(Debug, Args)]
pub(crate) struct PrecisionArgs {
    /// Precision of the fit pass's per-512-row Gram products: f32 rounds the features and runs
    /// the block products in single precision (about twice the rate), adding the block sums in
    /// f64. Each Gram entry then errs by at most 3e-5 (typically 1e-6) of Σ|z_i z_j|; the weights
    /// by about that times the condition number of ZᵀZ + αI. Sparse rows stay f64. With the
    /// default α grid this can pick a worse (σ, α): an α below that error makes a spurious
    /// validation minimum (on the shipped letter set: 6.6 points of accuracy lost, see
    /// docs/PERFORMANCE.md); give --alpha values well above it.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) precision: PrecisionArg,
}

/// `--precision` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum PrecisionArg {
    /// Double precision throughout.
    #[default]
    F64,
    /// Single-precision block products, f64 block sums.
    F32,
}

impl PrecisionArgs {
    /// The library's value.
    pub(crate) fn precision(&self) -> Precision {
        match self.precision {
            PrecisionArg::F64 => Precision::F64,
            PrecisionArg::F32 => Precision::F32,
        }
    }
}
