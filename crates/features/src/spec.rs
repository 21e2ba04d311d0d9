//! What a map is, as data: [`MapSpec`] (kind, parameters, seed; never a
//! random matrix) and the descriptions of the maps learned from data.
//!
//! This module sits below every map: a map's [`crate::FeatureMap::spec`]
//! returns a [`MapSpec`], and the registry above the maps
//! ([`crate::Registry`]) turns one back into a map.

use crate::eof::spec::{EofKernel, EofSpec};
use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use ndarray::{Array2, CowArray, Ix2};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Learned tensors of a data-dependent map, by name (stored in the model
/// file beside the spec).
pub type Tensors = BTreeMap<String, Array2<f64>>;

/// [`Tensors`] borrowed from the map where it holds them
/// ([`FeatureMap::tensor_views`](crate::FeatureMap::tensor_views)).
pub type TensorViews<'a> = BTreeMap<String, CowArray<'a, f64, Ix2>>;

/// Copies borrowed tensors.
pub(crate) fn owned(views: TensorViews<'_>) -> Tensors {
    views.into_iter().map(|(k, v)| (k, v.into_owned())).collect()
}

/// Most output features of a dense map, inner features of Comp, landmarks
/// of Nyström and points of kernel columns: 2^24. A ridge over more
/// features needs a Gram matrix of over 2 PB; the count can only be a
/// mistake (or a damaged model file).
pub const MAX_COMPONENTS: usize = 1 << 24;

/// Most input columns of a map: 2^24.
pub const MAX_INPUT: usize = 1 << 24;

/// Most grids of random binning: 2^16 (each row stores one entry per grid).
pub const MAX_GRIDS: usize = 1 << 16;

/// Most power iterations `q` of TEFM: 64. Each costs a pass (or a `d × d`
/// product) and the range converges in a handful; more is a mistake.
pub const MAX_POWER_ITERATIONS: usize = 64;

/// The two forms of random Fourier features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// `z = √(2/l)·[cos(Wx), sin(Wx)]` with `l/2` frequencies (lower variance).
    #[default]
    Pairs,
    /// `z = √(2/l)·cos(Wx + b)`, `b ~ U[0, 2π]`, with `l` frequencies.
    Phase,
}

impl std::str::FromStr for Form {
    type Err = FeatureError;

    /// `pairs` (alias `cos-sin`) or `phase` (alias `cos`).
    fn from_str(s: &str) -> Result<Form> {
        match s.to_ascii_lowercase().as_str() {
            "pairs" | "cos-sin" | "cossin" => Ok(Form::Pairs),
            "phase" | "cos" => Ok(Form::Phase),
            _ => Err(FeatureError::InvalidParameter { name: "form", value: s.to_string(), expected: "pairs or phase" }),
        }
    }
}

/// A serialisable feature map description: kind, parameters and seed.
///
/// Holds everything needed to regenerate the map, never the random matrix
/// (the JSON of a map with a million parameters is a few lines).
/// Data-dependent maps also need their [`Tensors`].
///
/// ```
/// use kapprox_features::{Form, Kernel, MapSpec};
///
/// let spec = MapSpec::rff(Kernel::Gaussian { sigma: 2.0 }, Form::Pairs, 10, 100, 7);
/// let json = serde_json::to_string(&spec)?;
/// assert_eq!(
///     json,
///     r#"{"map":"rff","kernel":{"kind":"gaussian","sigma":2.0},"form":"pairs","n_input":10,"n_components":100,"seed":7}"#
/// );
/// assert_eq!(serde_json::from_str::<MapSpec>(&json)?, spec);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "map", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum MapSpec {
    /// Random Fourier features ([`crate::Rff`]).
    Rff {
        /// The kernel approximated.
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the frequencies.
        seed: u64,
    },
    /// Orthogonal random features ([`crate::Orf`]).
    Orf {
        /// The kernel approximated (Gaussian or Matérn).
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the orthogonal blocks.
        seed: u64,
    },
    /// Structured orthogonal random features ([`crate::Sorf`]).
    Sorf {
        /// The kernel approximated (Gaussian or Matérn).
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the sign diagonals.
        seed: u64,
    },
    /// Quasi-Monte Carlo features ([`crate::Qmc`]).
    Qmc {
        /// The kernel approximated.
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the scrambling.
        seed: u64,
    },
    /// Fastfood ([`crate::Fastfood`]).
    Fastfood {
        /// The kernel approximated (Gaussian or Matérn).
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the diagonals and permutations.
        seed: u64,
    },
    /// Random binning ([`crate::RandomBinning`]), sparse output.
    Binning {
        /// The kernel approximated (Laplacian).
        kernel: Kernel,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`: the number of hash buckets.
        n_components: usize,
        /// Number of grids `P` (stored entries per row).
        n_grids: usize,
        /// Seed of the grids.
        seed: u64,
    },
    /// Compact random features ([`crate::Comp`]): RFF to `n_inner`, projected to `l`.
    Comp {
        /// The kernel approximated.
        kernel: Kernel,
        /// Pairs or phase (of the inner RFF).
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Inner RFF dimension.
        n_inner: usize,
        /// Seed of the frequencies and the projection.
        seed: u64,
    },
    /// Nyström ([`crate::nystrom::Nystrom`]); tensors `landmarks (m, d)` and `normalization (m, r)`.
    Nystrom(NystromParams),
    /// TEFM ([`crate::tefm::Tefm`]): `x ↦ F(x)Q` over any base map; tensor `q (d, l)`, plus
    /// the base map's tensors prefixed `base.`.
    Tefm {
        /// The base map `F`.
        base: Box<MapSpec>,
        /// How `Q` was built (provenance) and `l`.
        params: TefmParams,
    },
    /// Entropic optimal features ([`crate::eof::Eof`]), sparse output.
    Eof(EofSpec),
    /// Exact kernel columns ([`crate::KernelColumns`]) `z(x) = k(x, P)`; tensor `points (n, d)`.
    KernelColumns {
        /// The kernel.
        kernel: Kernel,
        /// Input dimension.
        n_input: usize,
        /// Number of points (output dimension).
        n_points: usize,
    },
    /// A map defined in another crate, rebuilt by the builder registered
    /// under `name` in a [`crate::Registry`]; `params` is the map's own
    /// description, which only that builder reads.
    Custom {
        /// The name the builder is registered under.
        name: String,
        /// Input dimension.
        n_input: usize,
        /// Output dimension.
        n_output: usize,
        /// The map's parameters, as its builder reads them.
        params: serde_json::Value,
    },
}
impl MapSpec {
    /// Random Fourier features for `kernel`.
    pub fn rff(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Self {
        MapSpec::Rff { kernel, form, n_input, n_components, seed }
    }

    /// The kernel the map approximates: `None` for EOF's Sobolev kernel,
    /// which has no [`Kernel`] counterpart, and for maps of other crates.
    /// EOF's Laplace kernel is the Laplacian kernel with `σ = 1/ω`.
    pub fn kernel(&self) -> Option<Kernel> {
        Some(match *self {
            MapSpec::Nystrom(ref p) => p.kernel,
            MapSpec::Tefm { ref base, .. } => return base.kernel(),
            MapSpec::Eof(ref e) => match e.kernel {
                EofKernel::Laplace => Kernel::Laplacian { sigma: 1.0 / e.omega },
                EofKernel::Sobolev => return None,
            },
            MapSpec::KernelColumns { kernel, .. } => kernel,
            MapSpec::Custom { .. } => return None,
            MapSpec::Rff { kernel, .. }
            | MapSpec::Orf { kernel, .. }
            | MapSpec::Sorf { kernel, .. }
            | MapSpec::Qmc { kernel, .. }
            | MapSpec::Fastfood { kernel, .. }
            | MapSpec::Binning { kernel, .. }
            | MapSpec::Comp { kernel, .. } => kernel,
        })
    }

    /// The seed of the map's random parameters (0 for maps without any).
    pub fn seed(&self) -> u64 {
        match *self {
            MapSpec::Nystrom(_) | MapSpec::KernelColumns { .. } | MapSpec::Custom { .. } => 0,
            MapSpec::Tefm { ref base, .. } => base.seed(),
            MapSpec::Eof(ref e) => e.seed,
            MapSpec::Rff { seed, .. }
            | MapSpec::Orf { seed, .. }
            | MapSpec::Sorf { seed, .. }
            | MapSpec::Qmc { seed, .. }
            | MapSpec::Fastfood { seed, .. }
            | MapSpec::Binning { seed, .. }
            | MapSpec::Comp { seed, .. } => seed,
        }
    }

    /// Input dimension.
    pub fn n_input(&self) -> usize {
        match *self {
            MapSpec::Nystrom(ref p) => p.n_input,
            MapSpec::Tefm { ref base, .. } => base.n_input(),
            MapSpec::Eof(ref e) => e.n_input,
            MapSpec::KernelColumns { n_input, .. } | MapSpec::Custom { n_input, .. } => n_input,
            MapSpec::Rff { n_input, .. }
            | MapSpec::Orf { n_input, .. }
            | MapSpec::Sorf { n_input, .. }
            | MapSpec::Qmc { n_input, .. }
            | MapSpec::Fastfood { n_input, .. }
            | MapSpec::Binning { n_input, .. }
            | MapSpec::Comp { n_input, .. } => n_input,
        }
    }
}

/// The serialisable description of a fitted Nyström map (everything but
/// its [`Tensors`]).
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `kernel` | — | kernel approximated | any [`Kernel`] with σ > 0 |
/// | `n_input` | — | input dimension `d` | ≥ 1 |
/// | `n_landmarks` | — | landmarks `m` | ≥ 1 |
/// | `n_components` | — | output dimension `r` (eigenvalues kept) | `1..=m` |
/// | `rel_tol` | [`crate::nystrom::DEFAULT_REL_TOL`] | relative eigenvalue cut-off | `[0, 1)` |
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NystromParams {
    /// The kernel approximated.
    pub kernel: Kernel,
    /// Input dimension `d`.
    pub n_input: usize,
    /// Number of landmarks `m`.
    pub n_landmarks: usize,
    /// Output dimension `r ≤ m`.
    pub n_components: usize,
    /// Eigenvalues `λ ≤ rel_tol·λ_max` of `K_mm` were dropped.
    pub rel_tol: f64,
}

/// How `Θ`, and so `Q`, is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TefmKind {
    /// TEFM-G: Gaussian `Θ`.
    #[default]
    Gaussian,
    /// TEFM-S: block subsampled randomised Hadamard transform.
    Srht,
    /// TEFM-C: CountSketch.
    CountSketch,
}

/// Default number of power iterations `q` ([`TefmParams::new`]).
pub const DEFAULT_POWER_ITERATIONS: usize = 1;

/// How a TEFM basis `Q` is (or was) built: the recipe the orchestration
/// follows, stored with the model for provenance.
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `kind` | — | distribution of the test matrix `Ω (d, l)` | [`TefmKind`] |
/// | `n_components` | — | output dimension `l` | `1..=d` |
/// | `power_iterations` | [`DEFAULT_POWER_ITERATIONS`] | `q` in `(FᵀF)^(q+1) Ω` | ≥ 0 (0–2 typical) |
/// | `seed` | — | seed of `Ω` | any |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TefmParams {
    /// Distribution of `Ω`.
    pub kind: TefmKind,
    /// Output dimension `l`.
    pub n_components: usize,
    /// Power iterations `q`.
    pub power_iterations: usize,
    /// Seed of `Θ`.
    pub seed: u64,
}

impl TefmParams {
    /// A recipe with [`DEFAULT_POWER_ITERATIONS`].
    pub fn new(kind: TefmKind, n_components: usize, seed: u64) -> Self {
        TefmParams { kind, n_components, power_iterations: DEFAULT_POWER_ITERATIONS, seed }
    }

    /// Sets `q`. Default: [`DEFAULT_POWER_ITERATIONS`].
    pub fn with_power_iterations(mut self, q: usize) -> Self {
        self.power_iterations = q;
        self
    }

    /// Checks the recipe against a base map of output dimension `d`.
    ///
    /// # Errors
    /// `n_components` outside `1..=d`; more than [`MAX_POWER_ITERATIONS`].
    pub fn check(&self, n_base_features: usize) -> Result<()> {
        if self.power_iterations > MAX_POWER_ITERATIONS {
            return Err(FeatureError::InvalidParameter {
                name: "power",
                value: self.power_iterations.to_string(),
                expected: "at most 64 power iterations (a few suffice)",
            });
        }
        if self.n_components == 0 || self.n_components > n_base_features {
            return Err(FeatureError::InvalidParameter {
                name: "features",
                value: self.n_components.to_string(),
                expected: "between 1 and the base map's number of features",
            });
        }
        Ok(())
    }
}
