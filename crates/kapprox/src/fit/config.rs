//! A validated fit: what to fit, on what, and how to select.

use crate::method::MethodSpec;
use crate::model::Task;
use crate::read::ReadConfig;
use crate::sigma::SigmaSpec;
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::ScalerKind;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Precision of the fit pass's per-block products (`--precision`).
///
/// With [`Precision::F32`] the dense features of a chunk are rounded to
/// `f32` once and each 512-row block's Gram products run in single
/// precision (twice the SIMD lanes, about twice the rate of the pass's
/// dominant `n·l²` product); the block sums are added to the same `f64`
/// statistics, so merging, the solve and selection are unchanged.
///
/// Accuracy bound: an entry of `ZᵀZ` (and `Zᵀy`) carries a relative error of
/// at most `γ₅₁₄ = 514·2⁻²⁴ ≈ 3·10⁻⁵` of `Σ|z_i z_j|` per block (rounding of
/// the inputs included; typically `√512·2⁻²⁴ ≈ 1.3·10⁻⁶`), so the ridge
/// weights move by at most about `κ·3·10⁻⁵` relative, with
/// `κ ≤ (λ_max(ZᵀZ) + α)/α` the condition number of the regularised system.
/// Sparse maps (random binning) and the TEFM sketch stay in `f64`; regression
/// targets are rounded to `f32` with the features.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Double precision throughout (the default).
    #[default]
    F64,
    /// Single-precision block products, `f64` block sums.
    F32,
}

/// How rows are split for selection, by a seeded hash of the row id.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Split {
    /// Part 0 trains, part 1 (this fraction of rows) validates.
    Holdout(f64),
    /// k folds; each is held out in turn.
    Folds(usize),
}

impl Split {
    /// Number of parts.
    pub fn n_parts(self) -> usize {
        match self {
            Split::Holdout(_) => 2,
            Split::Folds(k) => k,
        }
    }

    /// The parts that are held out in turn.
    pub fn held_out_parts(self) -> Vec<usize> {
        match self {
            Split::Holdout(_) => vec![1],
            Split::Folds(k) => (0..k).collect(),
        }
    }

    /// The part of global row `id`.
    #[inline]
    pub fn part_of(self, seed: u64, id: u64) -> usize {
        let u = rng::unit(seed, Domain::SPLIT, id);
        match self {
            Split::Holdout(f) => usize::from(u < f),
            Split::Folds(k) => ((u * k as f64) as usize).min(k - 1),
        }
    }

    /// Refuses a hold-out fraction outside `(0, 1)` and fewer than 2 folds.
    pub fn check(self) -> Result<()> {
        match self {
            Split::Holdout(f) if !(f > 0.0 && f < 1.0) => bail!("--validation: {f} is not a fraction in (0, 1)"),
            Split::Folds(k) if k < 2 => bail!("--folds: {k} folds; use at least 2"),
            _ => Ok(()),
        }
    }
}

/// A validated fit configuration: everything a fit depends on.
///
/// Part and pass-result files record it (with the reading options
/// flattened beside the other fields), so every process of a distributed
/// fit runs the same configuration.
///
/// | Name | Default (command line) | Purpose |
/// |---|---|---|
/// | `train` | — | training data: a Parquet file or directory of shards |
/// | `method` | rff, 1024 features | the map family and its parameters (all but σ) |
/// | `sigmas` | `auto*0.5, auto, auto*2, auto*4` | bandwidth candidates, chosen on validation |
/// | `alphas` | `n · 10^(−9..−1)`, 17 values | ridge penalties, chosen on validation |
/// | `task` | regression | regression or one-vs-rest classification |
/// | `scale` | standard (EOF: min-max) | input scaling, stored in the model |
/// | `read` | [`ReadConfig::default`] | label, chunk size, NaN policy |
/// | `split` | hold out 20 % | hold-out fraction or k folds |
/// | `seed` | 0 | seed of the maps, samples and split |
/// | `max_memory` | none | refuse statistics larger than this many bytes |
/// | `precision` | f64 | precision of the fit pass's block products ([`Precision`]) |
/// | `extend_grid` | off | extend the α and σ grids past the edge holding the choice |
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitConfig {
    /// Training data.
    pub train: PathBuf,
    /// The map family and its parameters (all but σ).
    pub method: MethodSpec,
    /// Bandwidth candidates.
    pub sigmas: Vec<SigmaSpec>,
    /// Ridge penalties; `None` = the default grid scaled by n.
    pub alphas: Option<Vec<f64>>,
    /// Regression or classification.
    pub task: Task,
    /// Input scaling.
    pub scale: ScalerKind,
    /// Reading options.
    #[serde(flatten)]
    pub read: ReadConfig,
    /// Hold-out or k-fold selection.
    pub split: Split,
    /// Seed of the maps, samples and split.
    pub seed: u64,
    /// Refuse when the statistics need more bytes than this.
    pub max_memory: Option<u64>,
    /// Precision of the fit pass's block products (absent in files written
    /// before it existed: f64).
    #[serde(default)]
    pub precision: Precision,
    /// Extend the α grid (from the same statistics) and, in [`crate::fit()`],
    /// the σ candidates (one more fit) past the edge that holds the choice
    /// (`--extend-grid`, see [`super::extend`]). Absent in files written
    /// before it existed: off.
    #[serde(default)]
    pub extend_grid: bool,
}

impl FitConfig {
    /// A regression fit of `method` on `train` with the command line's
    /// defaults for everything else (see the table above).
    pub fn new(train: impl Into<PathBuf>, method: MethodSpec) -> FitConfig {
        let scale = if method.needs_unit_cube() { ScalerKind::MinMax } else { ScalerKind::Standard };
        FitConfig {
            train: train.into(),
            method,
            sigmas: vec![SigmaSpec::Auto(0.5), SigmaSpec::Auto(1.0), SigmaSpec::Auto(2.0), SigmaSpec::Auto(4.0)],
            alphas: None,
            task: Task::Regression,
            scale,
            read: ReadConfig::default(),
            split: Split::Holdout(0.2),
            seed: 0,
            max_memory: None,
            precision: Precision::F64,
            extend_grid: false,
        }
    }

    /// Whether any bandwidth candidate needs the median rule.
    pub fn needs_median(&self) -> bool {
        self.sigmas.iter().any(|s| s.is_auto())
    }
}
