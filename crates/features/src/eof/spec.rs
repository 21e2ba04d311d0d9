//! What an EOF map is, as data: the kernel, `ω`, the dimension, the basis,
//! the level or budget, the subset rule and the seed (see the module docs
//! of [`crate::eof`]).

use ndarray::ArrayView1;
use serde::{Deserialize, Serialize};

/// The finest admissible level: `|S_n| ≥ 2^{n−1} + 1` must fit `u32` column
/// indices, which already fails at `n = 33`.
pub const MAX_LEVEL: u32 = 32;

/// The most stored entries per row (blocks) a map may have. The sparse
/// accumulation costs `nnz²` per row, so this bound is far beyond useful
/// and only guards the block table's memory.
pub const MAX_NNZ_PER_ROW: usize = 1 << 20;

/// The kernels EOF expands (the paper's two examples of Condition 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofKernel {
    /// `exp(−ω‖x − y‖₁)`: kapprox's Laplacian kernel with `σ = 1/ω`.
    #[serde(alias = "laplacian")]
    Laplace,
    /// `Π_d (1 + ω·min(x_d, y_d))`, the weighted Sobolev kernel of mixed
    /// first derivatives.
    Sobolev,
}

impl EofKernel {
    /// The kernel's name as the CLI spells it.
    pub fn name(&self) -> &'static str {
        match self {
            EofKernel::Laplace => "laplace",
            EofKernel::Sobolev => "sobolev",
        }
    }

    /// `k(x, y)` with parameter `omega`, for inputs clamped to `[0, 1]`
    /// (the kernel the map approximates, see the module docs, "Inputs").
    ///
    /// # Panics
    /// `x.len() == y.len()`.
    #[track_caller]
    pub fn eval(&self, omega: f64, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
        assert_eq!(x.len(), y.len(), "eval: x has {} entries, y has {}", x.len(), y.len());
        let pairs = x.iter().zip(y.iter()).map(|(a, b)| (a.clamp(0.0, 1.0), b.clamp(0.0, 1.0)));
        match self {
            EofKernel::Laplace => (-omega * pairs.map(|(a, b)| (a - b).abs()).sum::<f64>()).exp(),
            EofKernel::Sobolev => pairs.map(|(a, b)| 1.0 + omega * a.min(b)).product(),
        }
    }
}

/// Which 1-D functions the tensor products are built from (module docs,
/// "Bases").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofBasis {
    /// Rooted at the centre: `k(·, ½)`, then the two boundary half-hats on
    /// `[0, ½]` and `[½, 1]`, then the hats. A complete orthonormal basis,
    /// exact on the faces of the cube, with the paper's sparsity:
    /// `C(n + D, D)` entries per row at level `n`, blocks of `2^{j−1}`
    /// functions from level 1 on. The default.
    #[default]
    Centred,
    /// Rooted at the boundary: the two functions that solve the kernel's
    /// equation on all of `[0, 1]` (levels 0 and 1, one each), then the
    /// hats. Complete and orthonormal like [`EofBasis::Centred`], but in
    /// many dimensions nearly dense: the first `C(n + D, D)` features are
    /// blocks of one function each. Serialised as `boundary` (read also as
    /// `complete`, its earlier name); a spec without a `basis` field means
    /// this basis, the only one before the others existed.
    #[serde(alias = "complete")]
    Boundary,
    /// The paper's hats only, `S_n^* = {|l|₁ ≤ n + D − 1, l ≥ 1}`, level
    /// `n ≥ 1`: `C(n + D − 1, D)` entries per row, far sparser in many
    /// dimensions, but every feature vanishes on the faces of the cube and
    /// the expansion converges to the boundary-pinned kernel `Π_d k_0`.
    Paper,
}

impl EofBasis {
    /// The basis's name (as serialised).
    pub fn name(&self) -> &'static str {
        match self {
            EofBasis::Centred => "centred",
            EofBasis::Boundary => "boundary",
            EofBasis::Paper => "paper",
        }
    }

    /// The smallest valid level: 0 (centred, boundary), 1 (paper; `S_0^*`
    /// is empty).
    pub fn min_level(&self) -> u32 {
        match self {
            EofBasis::Centred | EofBasis::Boundary => 0,
            EofBasis::Paper => 1,
        }
    }

    /// What a spec without a `basis` field means: the boundary basis, the
    /// only one when such specs were written.
    fn legacy() -> Self {
        EofBasis::Boundary
    }

    fn is_legacy(&self) -> bool {
        *self == EofBasis::legacy()
    }
}

/// Which `M` functions a budget keeps of its level `n`, where
/// `|S_{n−1}| < M ≤ |S_n|` (module docs, "Feature budget").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofSubset {
    /// All of `S_{n−1}` plus a seeded uniform subset of the last shell: the
    /// largest-weight functions first, the knapsack optimum of the paper's
    /// entropy criterion. The default for both bases.
    #[default]
    Nested,
    /// A seeded uniform subset of all of `S_n`: the paper's experiment.
    /// Fewer true non-zeros per row (`≈ M·blocks/|S_n|`), a worse kernel
    /// approximation.
    Uniform,
}

impl EofSubset {
    /// The rule's name (as serialised).
    pub fn name(&self) -> &'static str {
        match self {
            EofSubset::Nested => "nested",
            EofSubset::Uniform => "uniform",
        }
    }

    fn is_default(&self) -> bool {
        *self == EofSubset::default()
    }
}

/// How many features: a sparse-grid level `n`, or a budget `M` met exactly
/// by a random subset (module docs, "Feature budget").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofSize {
    /// All of `S_n`: [`EofBasis::n_features`] features,
    /// [`EofBasis::nnz`] non-zeros per row.
    Level(u32),
    /// Exactly this many features `M ≥ 1`.
    Budget(usize),
}

/// The serialisable description of an [`super::Eof`] map.
///
/// # Parameters
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `kernel` | — | [`EofKernel::Laplace`] or [`EofKernel::Sobolev`] | |
/// | `omega` | — | `ω`, in units of the `[0, 1]`-scaled inputs | finite, `> 0` |
/// | `n_input` | — | input dimension `D` | `≥ 1` |
/// | `size` | — | level `n` or budget `M` | below 2^32 features and 2^20 non-zeros per row; paper level `≥ 1` |
/// | `seed` | 0 | the budget's random subset (unused by a level) | any |
/// | `basis` | [`EofBasis::Centred`] | centre-rooted, boundary-rooted, or the paper's hats only | |
/// | `subset` | [`EofSubset::Nested`] | which `M` functions a budget keeps (unused by a level) | |
///
/// `subset` is left out of the JSON at its default and a missing field
/// reads as the default. `basis` is left out only when it is
/// [`EofBasis::Boundary`], and a missing `basis` reads as that: specs
/// written before the field existed meant the boundary basis, and still
/// do, although new specs default to [`EofBasis::Centred`].
///
/// ```
/// use kapprox_features::eof::{EofBasis, EofKernel, EofSpec, EofSubset};
///
/// let spec = EofSpec::level(EofKernel::Laplace, 2.0, 3, 5);
/// let json = serde_json::to_string(&spec)?;
/// assert_eq!(json, r#"{"kernel":"laplace","omega":2.0,"n_input":3,"size":{"level":5},"seed":0,"basis":"centred"}"#);
/// assert_eq!(serde_json::from_str::<EofSpec>(&json)?, spec);
///
/// // Written before `basis` existed: the boundary basis.
/// let old = r#"{"kernel":"laplace","omega":2.0,"n_input":3,"size":{"level":5},"seed":0}"#;
/// assert_eq!(serde_json::from_str::<EofSpec>(old)?.basis, EofBasis::Boundary);
///
/// let paper = EofSpec::budget(EofKernel::Laplace, 2.0, 3, 100, 7)
///     .with_basis(EofBasis::Paper)
///     .with_subset(EofSubset::Uniform);
/// let json = serde_json::to_string(&paper)?;
/// assert!(json.ends_with(r#""seed":7,"basis":"paper","subset":"uniform"}"#));
/// assert_eq!(paper.build()?.n_output(), 100);
/// # use kapprox_features::FeatureMap;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EofSpec {
    /// The kernel expanded.
    pub kernel: EofKernel,
    /// `ω > 0`: the Laplace rate, or the Sobolev weight.
    pub omega: f64,
    /// Input dimension `D`.
    pub n_input: usize,
    /// Level or budget.
    pub size: EofSize,
    /// Seed of the budget's subset.
    pub seed: u64,
    /// The 1-D functions and index set.
    #[serde(default = "EofBasis::legacy", skip_serializing_if = "EofBasis::is_legacy")]
    pub basis: EofBasis,
    /// The budget's subset rule.
    #[serde(default, skip_serializing_if = "EofSubset::is_default")]
    pub subset: EofSubset,
}

impl EofSpec {
    /// All features of level `n` of the centred basis (seed 0, which a
    /// level does not use).
    pub fn level(kernel: EofKernel, omega: f64, n_input: usize, level: u32) -> Self {
        EofSpec {
            kernel,
            omega,
            n_input,
            size: EofSize::Level(level),
            seed: 0,
            basis: EofBasis::default(),
            subset: EofSubset::default(),
        }
    }

    /// Exactly `n_components` features of the centred basis, nested
    /// subset.
    pub fn budget(kernel: EofKernel, omega: f64, n_input: usize, n_components: usize, seed: u64) -> Self {
        EofSpec { size: EofSize::Budget(n_components), seed, ..EofSpec::level(kernel, omega, n_input, 0) }
    }

    /// Sets the seed. The default is 0.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the basis. The default is [`EofBasis::Centred`].
    pub fn with_basis(mut self, basis: EofBasis) -> Self {
        self.basis = basis;
        self
    }

    /// Sets the budget's subset rule. The default is [`EofSubset::Nested`].
    pub fn with_subset(mut self, subset: EofSubset) -> Self {
        self.subset = subset;
        self
    }
}
