//! Entropic optimal features (EOF; Ding, Tuo & Shahrampour, NeurIPS 2020,
//! paper 002): deterministic, sparse, orthonormal features with compact
//! and nested supports for two product kernels on the unit cube `[0, 1]^D`.
//!
//! | kernel | `k(x, y)` | 1-D RKHS norm `‖f‖²_k` |
//! |---|---|---|
//! | [`EofKernel::Laplace`] | `exp(−ω‖x − y‖₁)` | `(1/(2ω))·∫₀¹ (f'² + ω² f²) + (f(0)² + f(1)²)/2` |
//! | [`EofKernel::Sobolev`] | `Π_d (1 + ω·min(x_d, y_d))` | `f(0)² + (1/ω)·∫₀¹ f'²` |
//!
//! The map is [`Eof`], built from an [`EofSpec`] (kernel, `ω`, `D`, level or
//! feature budget, seed). Its output is sparse ([`OutputKind::Sparse`]):
//! exactly one stored entry per level multi-index, the same ELL layout and
//! accumulation path as random binning.
//!
//! # Derivation
//!
//! **RKHS norms.** Both 1-D kernels have the form `p(min(x, y))·q(max(x, y))`
//! (the paper's Condition 1), the Green's function of a Sturm–Liouville
//! operator: `k_y = k(·, y)` solves `k_y'' = ω² k_y` (Laplace) or
//! `k_y'' = 0` (Sobolev) on both sides of `y`, and its slope jumps by
//! `−2ω` (Laplace) or `−ω` (Sobolev) at `y`. The norms of the table are
//! checked by the reproducing property. For Laplace, integrating by parts on
//! `[0, y]` and `[y, 1]`,
//! `∫(f'k_y' + ω² f k_y) = [f k_y']₀^{y⁻} + [f k_y']_{y⁺}^1 = 2ω f(y) − ω f(0) k_y(0) − ω f(1) k_y(1)`
//! (as `k_y'(0) = ω k_y(0)` and `k_y'(1) = −ω k_y(1)`), so the boundary term
//! `(f(0) k_y(0) + f(1) k_y(1))/2` completes `⟨f, k_y⟩ = f(y)`. For Sobolev,
//! `⟨f, k_y⟩ = f(0)·1 + (1/ω)∫₀^y f'·ω = f(y)`.
//!
//! **The hat identity.** Let `φ` be supported on `[a, b] = [c − h, c + h]`
//! inside `[0, 1]`, `φ(c) = 1`, and solve the homogeneous equation on each
//! half (`φ'' = ω²φ`, resp. `φ'' = 0`): the Laplace "exponential hat"
//! `φ(x) = sinh(ω(h − |x − c|))/sinh(ωh)` (the paper's eq. (4)), the
//! Sobolev hat `φ(x) = 1 − |x − c|/h`. Integrating by parts on both halves
//! (the boundary terms of the norm vanish since `φ(0) = φ(1) = 0`) gives,
//! for every `f` of the RKHS,
//!
//! `⟨f, φ⟩_k = α_h·f(c) − β_h·(f(a) + f(b))`,
//! Laplace: `α_h = coth(ωh)`, `β_h = 1/(2 sinh(ωh))`;
//! Sobolev: `α_h = 2/(ωh)`, `β_h = 1/(ωh)`.
//!
//! Hence (1) `‖φ‖²_k = α_h`: **`coth(ωh)`** for Laplace (the paper's
//! constant `C = sinh(ω2^{−l}) = 1/‖φ‖²` approximates the exact
//! `tanh(ω2^{−l})` to first order only; they differ by `O((ωh)³)`), `2/(ωh)`
//! for Sobolev. (2) `φ ⟂ g` for every `g` that solves the homogeneous
//! equation on `[a, b]`: then `g(c) = (g(a) + g(b))/(2 cosh(ωh))`, resp.
//! `(g(a) + g(b))/2`, and `α_h g(c) = β_h (g(a) + g(b))`. A hat of a coarser
//! level is such a `g` (its kinks lie on the coarser grid, never at `c`), and
//! so are the boundary functions below; hats of one level have disjoint
//! supports. So the whole basis is orthogonal: the paper's Theorem 1, with
//! the constants worked out.
//!
//! **1-D levels.** Level `j` holds:
//! - `j = 0`, one function that is positive everywhere. Laplace: the even
//!   `ψ_0 = cosh(ω(x − ½))/√(cosh(ω/2)·e^{ω/2})`. Sobolev: `ψ_0 = 1 = k(·, 0)`.
//! - `j = 1`, one function. Laplace: the odd
//!   `ψ_1 = sinh(ω(x − ½))/√(sinh(ω/2)·e^{ω/2})`. Sobolev: `ψ_1 = √ω·x`.
//!   Levels 0 and 1 span `{k(·, 0), k(·, 1)}`, the functions that solve the
//!   homogeneous equation on all of `[0, 1]`: these are the boundary
//!   functions without which a row on a face of the cube (a binary column at
//!   0 or 1) maps to zero. For such `g`, `‖g‖² = (g(1)g'(1) − g(0)g'(0))/(2ω)
//!   + (g(0)² + g(1)²)/2` (Laplace), which gives the two norms; the even and
//!   odd functions are orthogonal by the reflection `x ↦ 1 − x`. For
//!   Sobolev, `⟨1, x⟩ = 0` and `‖x‖² = 1/ω`.
//! - `j ≥ 2`, the `2^{j−2}` hats of half-width `h = 2^{−(j−1)}` centred at
//!   `(2i + 1)h`, `i = 0..2^{j−2}`, divided by their norm:
//!   Laplace `√tanh(ωh)·sinh(ω(h − |x − c|))/sinh(ωh)`, Sobolev
//!   `√(ωh/2)·(1 − |x − c|/h)`. Level `j` is the paper's level `j − 1`.
//!
//! Levels `≤ j` (for `j ≥ 1`) span the functions that solve the
//! homogeneous equation between the points of the dyadic grid
//! `G_j = {i·2^{−(j−1)}}`, i.e. `span{k(·, z) : z ∈ G_j}`. So the level-`j`
//! truncation `k_j(x, y) = Σ ψ(x)ψ(y)` is the orthogonal projection onto
//! that span: kernel interpolation on `G_j` (Nyström with landmarks `G_j`).
//! It is exact when `x` or `y` lies on `G_j`, and `k − k_j` is the
//! covariance of the Gaussian process with covariance `k` conditioned on
//! `G_j`: an Ornstein–Uhlenbeck bridge (Laplace) or `ω` times a Brownian
//! bridge (Sobolev) on each cell. Its maximum, at cell midpoints, is
//! `tanh(ω·2^{−j})` (Laplace) and `ω·2^{−(j+1)}` (Sobolev). For Sobolev
//! this is the Lévy–Ciesielski construction of Brownian motion.
//!
//! **D dimensions.** `k` is a product of 1-D kernels, so its RKHS is the
//! tensor product and the products `ψ_{j,i}(x) = Π_d ψ_{j_d,i_d}(x_d)` are
//! an orthonormal basis. The map keeps the sparse grid
//! `S_n = {(j, i) : j ∈ ℕ₀^D, |j|₁ ≤ n}` and sets `z(x) = (ψ_{j,i}(x))`, so
//! `z(x)ᵀz(y) = Σ_{|j|₁ ≤ n} Π_d Δ_{j_d}(x_d, y_d)` with
//! `Δ_j = k_j − k_{j−1}` the 1-D level increments: a truncated orthonormal
//! expansion of `k`, exact when `x` is a sparse-grid point (every
//! coordinate on `G_{L_d}` with `Σ_d L_d ≤ n`).
//!
//! **Why levels 0 and 1 hold one function each.** At any `x` exactly one
//! function of each 1-D level is non-zero, so a row has exactly one entry
//! per level multi-index `j`, and the coarsest block `j = 0` is a single
//! feature. (Both boundary functions at one level would put `2^D` features
//! in that block.) Blocks with few non-zero coordinates come first, like an
//! ANOVA decomposition. The paper's set `S_n^*` (hats only, `l ≥ 1`,
//! `|l|₁ ≤ n + D − 1`) is the part of `{|j|₁ ≤ n + 2D − 1}` with every
//! `j_d ≥ 2`. Its features all vanish on the faces of the cube.
//!
//! **Counts.** With `w(0) = w(1) = 1` and `w(j) = 2^{j−2}` functions per
//! level:
//! - non-zeros per row: `nnz = #{j ∈ ℕ₀^D : |j|₁ ≤ n} = C(n + D, D)`;
//! - features: `|S_n| = Σ_{|j|₁ ≤ n} Π_d w(j_d)`, the sum of the
//!   coefficients of `t^0..t^n` in `W(t)^D` with
//!   `W(t) = (1 − t − t²)/(1 − 2t)`. In one dimension that is `2^{n−1} + 1`
//!   for `n ≥ 1`, the points of `G_n`.
//!
//! | D | n = 2 | n = 4 | n = 6 | n = 7 | n = 8 |
//! |---|---|---|---|---|---|
//! | 1 | 3 / 3 | 9 / 5 | 33 / 7 | 65 / 8 | 129 / 9 |
//! | 2 | 6 / 6 | 25 / 15 | 113 / 28 | 241 / 36 | 513 / 45 |
//! | 3 | 10 / 10 | 53 / 35 | 279 / 84 | 633 / 120 | 1425 / 165 |
//! | 8 | 45 / 45 | 583 / 495 | 5423 / 3003 | 15543 / 6435 | 43258 / 12870 |
//!
//! (features / non-zeros per row). The ratio grows like `2^n/n`.
//! Because the boundary functions and the first hat are non-zero almost
//! everywhere, low levels in many dimensions are barely sparse.
//!
//! # Columns
//!
//! Blocks `j` are ordered by `|j|₁`, then lexicographically by the list
//! `((d₁, j_{d₁}), (d₂, j_{d₂}), …)` of their non-zero coordinates
//! (`d₁ < d₂ < …`; pairs compare by dimension, then level). Within a block,
//! the feature with hat indices `i_d` has the column
//! `offset(j) + Σ_d i_d·Π_{d' > d} w(j_{d'})`. All block sizes are powers of
//! two, so this sum is a concatenation of bit fields. The columns of level
//! `n − 1` are a prefix of those of level `n`.
//!
//! # Feature budget
//!
//! [`EofSize::Budget`]`(M)` takes the smallest level `n` with `|S_n| ≥ M`.
//! It keeps all of `S_{n−1}` (columns `0..|S_{n−1}|`, as above) and a
//! uniformly random subset of `M − |S_{n−1}|` functions of the last shell
//! `S_n \ S_{n−1}`. The paper draws the `M` functions from all of `S_n`
//! instead. Keeping `S_{n−1}` whole keeps the coarse functions, whose
//! weights `1/‖·‖²` are the largest. So the error is never worse than at
//! level `n − 1`, and the shell functions, of near-equal weight, are the
//! only ones left to chance. The kept shell functions take the columns
//! `|S_{n−1}|, |S_{n−1}| + 1, …` in the order of their level-`n` columns.
//! The subset is a pure function of the seed: Floyd's algorithm, drawing
//! from `rng::stream(seed, Domain::FEATURE_MAP, 0xE0F << 48)` (EOF's range
//! of the feature-map streams).
//! Shell blocks with no kept function are dropped. Rows whose active
//! function in a kept block was not drawn store `(0, 0.0)` there, which
//! is harmless in `Moments::update_sparse`. So
//! `nnz = C(n − 1 + D, D) + #{shell blocks with a kept function}`.
//!
//! # Inputs
//!
//! The map assumes inputs in `[0, 1]`. The pipeline min–max scales each
//! column with stored training statistics, so new rows can fall slightly
//! outside. Coordinates are clamped to `[0, 1]`, which evaluates the
//! features (and the approximated kernel) at the nearest point of the cube.
//! A NaN coordinate gives NaN values, with valid column indices.
//!
//! Cost per row: `D·(n + 1)` 1-D evaluations (for Laplace two exponentials
//! each), then one multiplication, shift and OR per block (`nnz` of them),
//! and one rank lookup per last-shell block of a budget map. There is no
//! search and no allocation per row; scratch is per call.
//!
//! # Numerics
//!
//! A block's value is its parent's times one 1-D ratio `ψ_{j_d}/ψ_0`, since
//! `ψ_0 > 0`. For Laplace every `|ψ| ≤ 1`, so each partial product is itself
//! a feature value and cannot overflow. When `Π_d ψ_0(x_d) < 10^{−150}`,
//! which needs `ω·D` in the hundreds, that product could underflow while
//! finer blocks stay `O(1)`. Such rows take direct products over all `D`
//! coordinates (`O(D)` per block) instead.

mod basis;
mod grid;

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::map::{FeatureMap, OutputKind};
use crate::spec::MapSpec;
use basis::Basis1d;
use grid::{Block, Subset};
use kapprox_core::sparse::SparseRowsViewMut;
use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use serde::{Deserialize, Serialize};

/// The finest admissible level: `|S_n| ≥ 2^{n−1} + 1` must fit `u32` column
/// indices, which already fails at `n = 33`.
pub const MAX_LEVEL: u32 = 32;

/// The most stored entries per row (blocks) a map may have. The sparse
/// accumulation costs `nnz²` per row, so this bound is far beyond useful
/// and only guards the block table's memory.
pub const MAX_NNZ_PER_ROW: usize = 1 << 20;

/// Below this `Π_d ψ_0(x_d)`, a row takes the direct-product path (see the
/// module docs, "Numerics").
const TINY: f64 = 1e-150;

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

/// How many features: a sparse-grid level `n`, or a budget `M` met exactly
/// by a random subset of the last shell (module docs, "Feature budget").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofSize {
    /// All of `S_n`: `|S_n|` features, `C(n + D, D)` non-zeros per row.
    Level(u32),
    /// Exactly this many features `M ≥ 1`.
    Budget(usize),
}

/// The serialisable description of an [`Eof`] map.
///
/// # Parameters
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `kernel` | — | [`EofKernel::Laplace`] or [`EofKernel::Sobolev`] | |
/// | `omega` | — | `ω`, in units of the `[0, 1]`-scaled inputs | finite, `> 0` |
/// | `n_input` | — | input dimension `D` | `≥ 1` |
/// | `size` | — | level `n` or budget `M` | below 2^32 features and 2^20 non-zeros per row |
/// | `seed` | 0 | the budget's random subset (unused by a level) | any |
///
/// ```
/// use kapprox_features::eof::{EofKernel, EofSpec};
///
/// let spec = EofSpec::level(EofKernel::Laplace, 2.0, 3, 5);
/// let json = serde_json::to_string(&spec)?;
/// assert_eq!(json, r#"{"kernel":"laplace","omega":2.0,"n_input":3,"size":{"level":5},"seed":0}"#);
/// assert_eq!(serde_json::from_str::<EofSpec>(&json)?, spec);
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
}

impl EofSpec {
    /// All features of level `n` (seed 0, which a level does not use).
    pub fn level(kernel: EofKernel, omega: f64, n_input: usize, level: u32) -> Self {
        EofSpec { kernel, omega, n_input, size: EofSize::Level(level), seed: 0 }
    }

    /// Exactly `n_components` features.
    pub fn budget(kernel: EofKernel, omega: f64, n_input: usize, n_components: usize, seed: u64) -> Self {
        EofSpec { kernel, omega, n_input, size: EofSize::Budget(n_components), seed }
    }

    /// The spec for kapprox's Laplacian kernel `exp(−‖x − y‖₁/σ)`, i.e.
    /// `ω = 1/σ`, with `σ` in units of the `[0, 1]`-scaled inputs.
    ///
    /// # Errors
    /// A kernel other than Laplacian, or an invalid σ.
    pub fn from_kernel(kernel: Kernel, n_input: usize, size: EofSize, seed: u64) -> Result<Self> {
        kernel.check()?;
        match kernel {
            Kernel::Laplacian { sigma } => {
                Ok(EofSpec { kernel: EofKernel::Laplace, omega: 1.0 / sigma, n_input, size, seed })
            }
            _ => Err(FeatureError::UnsupportedKernel {
                map: "eof",
                kernel: kernel.name(),
                supported: "laplacian (and the sobolev kernel through EofKernel::Sobolev)",
            }),
        }
    }

    /// Sets the seed. The default is 0.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Builds the map.
    ///
    /// # Errors
    /// See [`Eof::new`].
    pub fn build(&self) -> Result<Eof> {
        Eof::new(self.clone())
    }
}

/// `|S_n|`: the number of features of level `n` in `n_input` dimensions
/// (saturating).
pub fn n_features_at_level(n_input: usize, level: u32) -> u128 {
    grid::count_features(n_input, level)
}

/// `C(n + D, D)`: stored entries per row at level `n` in `n_input`
/// dimensions (saturating).
pub fn nnz_at_level(n_input: usize, level: u32) -> u128 {
    grid::count_blocks(n_input, level)
}

/// The EOF feature map (see the [module docs](self)): sparse output with a
/// fixed number of entries per row.
///
/// Parameter memory: the block table, 24 bytes per non-zero per row, plus
/// `0.19` bytes per last-shell function for a budget's subset.
#[derive(Clone)]
pub struct Eof {
    spec: EofSpec,
    level: u32,
    n_output: usize,
    basis: Basis1d,
    blocks: Vec<Block>,
    /// `|S_{n−1}|` and the kept part of the last shell (budget maps only).
    subset: Option<(u64, Subset)>,
}

impl std::fmt::Debug for Eof {
    // The block table can hold a million entries: show the shape only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eof")
            .field("spec", &self.spec)
            .field("level", &self.level)
            .field("n_output", &self.n_output)
            .field("nnz_per_row", &self.blocks.len())
            .finish()
    }
}

fn invalid(name: &'static str, value: impl ToString, expected: &'static str) -> FeatureError {
    FeatureError::InvalidParameter { name, value: value.to_string(), expected }
}

impl Eof {
    /// Builds the map of `spec`.
    ///
    /// # Errors
    /// [`FeatureError::InvalidParameter`] for `ω` not finite and positive
    /// (`omega`), `D = 0` (`n_input`), a level with `|S_n| ≥ 2^32` or more
    /// than [`MAX_NNZ_PER_ROW`] non-zeros (`level`), and a budget of 0 or
    /// larger than `|S_n|` of every admissible level (`features`).
    pub fn new(spec: EofSpec) -> Result<Self> {
        if !(spec.omega.is_finite() && spec.omega > 0.0) {
            return Err(invalid("omega", spec.omega, "a finite ω > 0"));
        }
        let d = spec.n_input;
        if d == 0 {
            return Err(invalid("n_input", 0, "at least one input column"));
        }
        let admissible = |n: u32| {
            n <= MAX_LEVEL
                && grid::count_features(d, n) <= u32::MAX as u128
                && grid::count_blocks(d, n) <= MAX_NNZ_PER_ROW as u128
        };
        let (level, budget) = match spec.size {
            EofSize::Level(n) => {
                if !admissible(n) {
                    return Err(invalid(
                        "level",
                        n,
                        "a level with fewer than 2^32 features and at most 2^20 non-zeros per row",
                    ));
                }
                (n, None)
            }
            EofSize::Budget(m) => {
                let too_large =
                    || invalid("features", m, "a budget between 1 and |S_n| of a level with fewer than 2^32 features");
                if m == 0 {
                    return Err(too_large());
                }
                let n = (0..=MAX_LEVEL).find(|&n| grid::count_features(d, n) >= m as u128).ok_or_else(too_large)?;
                if !admissible(n) {
                    return Err(too_large());
                }
                (n, Some(m as u64))
            }
        };
        let full = grid::count_features(d, level) as u64;
        let mut blocks = grid::enumerate(d, level);
        let mut subset = None;
        let mut n_output = full;
        if let Some(m) = budget.filter(|&m| m < full) {
            // m > |S_0| = 1, so the level is at least 1.
            let start = grid::count_features(d, level - 1) as u64;
            let sub = Subset::sample(full - start, m - start, spec.seed);
            // Blocks tile the columns in order: a block ends where the next
            // begins.
            let keep: Vec<bool> = (0..blocks.len())
                .map(|i| {
                    let (b, end) = (blocks[i], blocks.get(i + 1).map_or(full, |o| o.offset));
                    b.shell < level as u8 || sub.any_in(b.offset - start, end - b.offset)
                })
                .collect();
            let mut it = keep.iter();
            blocks.retain(|_| *it.next().expect("one flag per block"));
            subset = Some((start, sub));
            n_output = m;
        }
        let basis = Basis1d::new(spec.kernel, spec.omega, level);
        Ok(Eof { spec, level, n_output: n_output as usize, basis, blocks, subset })
    }

    /// The description this map was built from.
    pub fn eof_spec(&self) -> &EofSpec {
        &self.spec
    }

    /// The sparse-grid level `n` in use (chosen from the budget, if any).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Stored entries per row.
    pub fn nnz_per_row(&self) -> usize {
        self.blocks.len()
    }

    /// Writes the `nnz` entries of one row into `cols` and `vals`.
    fn row_into(&self, x: ArrayView1<'_, f64>, s: &mut Scratch, cols: &mut [u32], vals: &mut [f64]) {
        let n1 = self.level as usize + 1;
        for (d, &xd) in x.iter().enumerate() {
            self.basis.eval(xd, &mut s.vals[d * n1..(d + 1) * n1], &mut s.idx[d * n1..(d + 1) * n1]);
        }
        let blocks = &self.blocks;
        s.loc[0] = 0;
        for b in 1..blocks.len() {
            let blk = blocks[b];
            s.loc[b] = (s.loc[blk.parent as usize] << blk.shift) | s.idx[blk.slot as usize] as u64;
        }
        let p0: f64 = (0..x.len()).map(|d| s.vals[d * n1]).product();
        if p0 >= TINY {
            if self.spec.kernel == EofKernel::Laplace {
                for chunk in s.vals.chunks_exact_mut(n1) {
                    let v0 = chunk[0];
                    chunk[1..].iter_mut().for_each(|v| *v /= v0);
                }
            }
            s.val[0] = p0;
            for b in 1..blocks.len() {
                let blk = blocks[b];
                s.val[b] = s.val[blk.parent as usize] * s.vals[blk.slot as usize];
            }
        } else {
            // Every |ψ| ≤ 1 here (Laplace), so multiplying all D factors
            // only shrinks the partial product: it underflows only if the
            // value does.
            for b in 0..blocks.len() {
                s.chain.clear();
                let mut at = b;
                while at != 0 {
                    s.chain.push(blocks[at].slot as usize);
                    at = blocks[at].parent as usize;
                }
                // `chain` lists the block's non-zero coordinates by
                // decreasing dimension.
                let mut next = s.chain.iter().copied().peekable();
                let mut prod = 1.0;
                for d in (0..x.len()).rev() {
                    match next.peek() {
                        Some(&slot) if slot / n1 == d => {
                            prod *= s.vals[slot];
                            next.next();
                        }
                        _ => prod *= s.vals[d * n1],
                    }
                }
                s.val[b] = prod;
            }
        }
        for (b, (c, v)) in cols.iter_mut().zip(vals.iter_mut()).enumerate() {
            let col = blocks[b].offset + s.loc[b];
            (*c, *v) = match &self.subset {
                Some((start, sub)) if col >= *start => match sub.rank(col - start) {
                    Some(r) => ((*start as u32) + r, s.val[b]),
                    None => (0, 0.0),
                },
                _ => (col as u32, s.val[b]),
            };
        }
    }

    fn scratch(&self) -> Scratch {
        let n = self.spec.n_input * (self.level as usize + 1);
        let nb = self.blocks.len();
        Scratch {
            vals: vec![0.0; n],
            idx: vec![0; n],
            val: vec![0.0; nb],
            loc: vec![0; nb],
            chain: Vec::with_capacity(self.level as usize),
        }
    }

    /// Calls `emit(row, cols, vals)` for every row of `x`.
    fn for_each_row(&self, x: ArrayView2<'_, f64>, mut emit: impl FnMut(usize, &[u32], &[f64])) {
        let mut s = self.scratch();
        let nb = self.blocks.len();
        let (mut cols, mut vals) = (vec![0u32; nb], vec![0.0; nb]);
        for (r, row) in x.axis_iter(Axis(0)).enumerate() {
            self.row_into(row, &mut s, &mut cols, &mut vals);
            emit(r, &cols, &vals);
        }
    }

    fn registered_spec(spec: &EofSpec) -> MapSpec {
        MapSpec::Eof(spec.clone())
    }
}

/// Per-call buffers of the transform.
struct Scratch {
    /// 1-D values (then ratios to level 0), `(D, n + 1)` row-major.
    vals: Vec<f64>,
    /// 1-D hat indices, `(D, n + 1)`.
    idx: Vec<u32>,
    /// Value of each block's active function.
    val: Vec<f64>,
    /// Local index of each block's active function.
    loc: Vec<u64>,
    /// Slots of one block (direct-product path).
    chain: Vec<usize>,
}

impl FeatureMap for Eof {
    fn n_input(&self) -> usize {
        self.spec.n_input
    }

    fn n_output(&self) -> usize {
        self.n_output
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::Sparse { nnz_per_row: self.blocks.len() }
    }

    /// Writes the dense rows, `(n, n_output)`: meant for tests and small
    /// outputs. Prefer [`FeatureMap::transform_sparse_into`].
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()` and
    /// `out.dim() == (x.nrows(), self.n_output())`.
    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        let (d, l) = (self.spec.n_input, self.n_output);
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(
            out.dim(),
            (x.nrows(), l),
            "transform: out has shape {:?}, expected ({}, {l})",
            out.dim(),
            x.nrows()
        );
        out.fill(0.0);
        self.for_each_row(x, |r, cols, vals| {
            let mut o = out.row_mut(r);
            for (&c, &v) in cols.iter().zip(vals) {
                o[c as usize] += v;
            }
        });
    }

    /// # Panics
    /// `x.ncols() == self.n_input()`, `out.n_cols == self.n_output()`, and
    /// both buffers of shape `(x.nrows(), nnz_per_row)`.
    fn transform_sparse_into(&self, x: ArrayView2<'_, f64>, mut out: SparseRowsViewMut<'_>) {
        let d = self.spec.n_input;
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(out.n_cols, self.n_output, "transform: sparse rows have {} columns", out.n_cols);
        let shape = (x.nrows(), self.blocks.len());
        assert_eq!(out.indices.dim(), shape, "transform: sparse indices have the wrong shape");
        assert_eq!(out.values.dim(), shape, "transform: sparse values have the wrong shape");
        self.for_each_row(x, |r, cols, vals| {
            out.indices.row_mut(r).iter_mut().zip(cols).for_each(|(o, &c)| *o = c);
            out.values.row_mut(r).iter_mut().zip(vals).for_each(|(o, &v)| *o = v);
        });
    }

    fn spec(&self) -> MapSpec {
        Self::registered_spec(&self.spec)
    }

    fn parameter_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>() + self.subset.as_ref().map_or(0, |(_, s)| s.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        Array2::from_shape_fn((n, d), |(i, j)| {
            kapprox_core::rng::unit(seed, kapprox_core::Domain(0xEE), (i * d + j) as u64)
        })
    }

    /// The direct-product path must agree with the ratio path wherever both
    /// are valid; forcing it by hand checks the walk over parents.
    #[test]
    fn direct_products_match_the_ratio_chain() {
        for (d, n) in [(1, 5), (3, 4), (5, 3)] {
            let map = EofSpec::level(EofKernel::Laplace, 3.0, d, n).build().unwrap();
            let x = points(20, d, 1);
            let mut s = map.scratch();
            let nb = map.nnz_per_row();
            let (mut c1, mut v1) = (vec![0u32; nb], vec![0.0; nb]);
            for row in x.rows() {
                map.row_into(row, &mut s, &mut c1, &mut v1);
                let n1 = n as usize + 1;
                for (dd, &xd) in row.iter().enumerate() {
                    map.basis.eval(xd, &mut s.vals[dd * n1..(dd + 1) * n1], &mut s.idx[dd * n1..(dd + 1) * n1]);
                }
                for b in 0..nb {
                    let mut prod = 1.0;
                    let mut j = vec![0usize; d];
                    let mut at = b;
                    while at != 0 {
                        let slot = map.blocks[at].slot as usize;
                        j[slot / n1] = slot % n1;
                        at = map.blocks[at].parent as usize;
                    }
                    for dd in 0..d {
                        prod *= s.vals[dd * n1 + j[dd]];
                    }
                    assert!((prod - v1[b]).abs() < 1e-14, "block {b}: {prod} vs {}", v1[b]);
                }
            }
        }
    }

    #[test]
    fn budget_keeps_the_previous_level_whole() {
        let full = EofSpec::level(EofKernel::Sobolev, 1.0, 3, 4).build().unwrap();
        let prev = n_features_at_level(3, 3) as usize;
        let map = EofSpec::budget(EofKernel::Sobolev, 1.0, 3, prev + 7, 5).build().unwrap();
        assert_eq!((map.level(), map.n_output()), (4, prev + 7));
        assert_eq!(&map.blocks[..nnz_at_level(3, 3) as usize], &full.blocks[..nnz_at_level(3, 3) as usize]);
        assert!(map.nnz_per_row() <= nnz_at_level(3, 3) as usize + 7);
    }
}
