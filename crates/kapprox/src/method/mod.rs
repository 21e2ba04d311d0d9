//! What a fit learns features with: [`MethodSpec`], the one typed
//! description of a method (map family, kernel, form, sizes, TEFM's base
//! and strategy, EOF's options, or exact kernel ridge), with every
//! parameter but the bandwidth.
//!
//! - [`MethodParams`]: a method as a front end collects it (names as
//!   text, the command line's defaults); [`MethodParams::check`] validates
//!   it into a [`MethodSpec`].
//! - [`MethodSpec`]: serialised into part and pass-result files; its
//!   [`Display`](std::fmt::Display) is the short name of reports and
//!   model files (`rff`, `nystrom`, `tefm-g`, `eof`, `exact`), and
//!   [`FromStr`](std::str::FromStr) reads such a name with every other
//!   parameter at its default.
//! - `maps`: how a method and a bandwidth (plus what earlier passes
//!   learned) become a feature map.

mod maps;
mod params;

pub use params::{DEFAULT_TEFM_BUDGET, MethodParams};

use anyhow::{Result, bail};
use kapprox_features::eof::{EofBasis, EofKernel, EofSize, EofSubset};
use kapprox_features::tefm::{Strategy, TefmKind};
use kapprox_features::{Form, Kernel, MapKind};
use serde::{Deserialize, Serialize};

/// A kernel family; the bandwidth comes from the σ candidates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelFamily {
    /// `exp(−‖x−y‖²/(2σ²))`.
    Gaussian,
    /// `exp(−‖x−y‖₁/σ)`.
    Laplacian,
    /// `Π 1/(1 + (x_j−y_j)²/σ²)`.
    Cauchy,
    /// Matérn with smoothness ν and length scale σ.
    Matern {
        /// Smoothness ν.
        nu: f64,
    },
}

impl KernelFamily {
    /// Parses a kernel name (`--kernel`: gaussian, rbf, laplacian, laplace,
    /// cauchy, matern), with `nu` for Matérn.
    pub fn parse(name: &str, nu: f64) -> Result<Self> {
        Ok(match name {
            "gaussian" | "rbf" => KernelFamily::Gaussian,
            "laplacian" | "laplace" => KernelFamily::Laplacian,
            "cauchy" => KernelFamily::Cauchy,
            "matern" => {
                if !(nu.is_finite() && nu > 0.0) {
                    bail!("--nu: {nu} is not a positive number");
                }
                KernelFamily::Matern { nu }
            }
            other => bail!("--kernel: unknown kernel {other:?} (expected gaussian, laplacian, cauchy or matern)"),
        })
    }

    /// The kernel at bandwidth `sigma`.
    pub fn at(self, sigma: f64) -> Kernel {
        match self {
            KernelFamily::Gaussian => Kernel::Gaussian { sigma },
            KernelFamily::Laplacian => Kernel::Laplacian { sigma },
            KernelFamily::Cauchy => Kernel::Cauchy { sigma },
            KernelFamily::Matern { nu } => Kernel::Matern { nu, sigma },
        }
    }
}

/// TEFM's base map `F`: a data-independent map, or Nyström over landmarks
/// sampled by the prepare pass. Stored as its name (`rff`, ..., `nystrom`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TefmBase {
    /// A data-independent map (not binning: TEFM needs dense features).
    Map(MapKind),
    /// Nyström with `d` landmarks.
    Nystrom,
}

impl TefmBase {
    /// The name: the map kind's, or `nystrom`.
    pub fn name(self) -> &'static str {
        match self {
            TefmBase::Map(kind) => kind.name(),
            TefmBase::Nystrom => "nystrom",
        }
    }
}

impl std::str::FromStr for TefmBase {
    type Err = anyhow::Error;

    /// `nystrom` (or `nystroem`), or a dense data-independent map's name.
    fn from_str(s: &str) -> Result<TefmBase> {
        match s {
            "nystrom" | "nystroem" => Ok(TefmBase::Nystrom),
            other => {
                let kind: MapKind = other.parse()?;
                if matches!(kind, MapKind::Binning) {
                    bail!("--base: TEFM needs a dense base map, not binning");
                }
                Ok(TefmBase::Map(kind))
            }
        }
    }
}

impl Serialize for TefmBase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TefmBase {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<TefmBase, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A map kind stored as its name.
mod map_kind_name {
    use kapprox_features::MapKind;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(kind: &MapKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MapKind, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// What a fit learns features with, every parameter but the bandwidth.
///
/// Serialised with a `method` tag (`independent`, `nystrom`, `tefm`,
/// `eof`, `exact`), as recorded in part and pass-result files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum MethodSpec {
    /// A data-independent map: rff, orf, sorf, qmc, fastfood, binning, comp.
    Independent {
        /// The map family.
        #[serde(with = "map_kind_name")]
        kind: MapKind,
        /// Kernel family.
        kernel: KernelFamily,
        /// RFF form where it applies (`None`: the map's default, pairs).
        form: Option<Form>,
        /// Output features `l`.
        n_components: usize,
        /// Random binning: number of grids (`None`: the map's default).
        grids: Option<usize>,
        /// Comp: inner RFF dimension (`None`: the map's default).
        inner: Option<usize>,
    },
    /// Nyström with `n_landmarks` rows sampled by the reservoir.
    Nystrom {
        /// Kernel family.
        kernel: KernelFamily,
        /// Landmarks m (the output has at most m features).
        n_landmarks: usize,
        /// Relative eigenvalue cut-off.
        rel_tol: f64,
    },
    /// TEFM over a base map with `sketch_features` outputs: a data-independent
    /// map, or Nyström with `sketch_features` landmarks (sampled by the
    /// prepare pass, like Nyström's own).
    Tefm {
        /// Sketch Θ: Gaussian, block SRHT or CountSketch.
        sketch: TefmKind,
        /// The base map.
        base: TefmBase,
        /// Kernel family of the base map.
        kernel: KernelFamily,
        /// RFF form of the base map.
        form: Option<Form>,
        /// Output features `l`.
        n_components: usize,
        /// Base map features `d` (default 4l).
        sketch_features: usize,
        /// Power iterations q.
        power: usize,
        /// One pass with FᵀF in memory, or 1 + q product passes.
        strategy: Strategy,
    },
    /// Entropic optimal features on `[0, 1]^D` (inputs min-max scaled).
    Eof {
        /// Laplace or Sobolev kernel.
        kernel: EofKernel,
        /// Level or feature budget.
        size: EofSize,
        /// The centred basis (the default), the boundary basis, or the
        /// paper's hats only. A method recorded before the field existed
        /// used the boundary basis.
        #[serde(default = "legacy_eof_basis")]
        basis: EofBasis,
        /// Which functions a budget keeps: nested (the default) or the
        /// paper's uniform draw from the whole level (sparser).
        #[serde(default)]
        subset: EofSubset,
    },
    /// Exact kernel ridge on all training rows: the reference the maps
    /// approximate (one process only; `n²` memory).
    Exact {
        /// Kernel family.
        kernel: KernelFamily,
        /// Refuse more training rows than this.
        max_rows: usize,
    },
}

/// What a recorded EOF method without a `basis` field used: the boundary
/// basis, then the only complete one.
fn legacy_eof_basis() -> EofBasis {
    EofBasis::Boundary
}

impl MethodSpec {
    /// A data-independent map of `kind` with `l` features and every option
    /// at the map's default.
    pub fn independent(kind: MapKind, kernel: KernelFamily, l: usize) -> MethodSpec {
        MethodSpec::Independent { kind, kernel, form: None, n_components: l, grids: None, inner: None }
    }

    /// Exact kernel ridge with [`kapprox_solve::DEFAULT_MAX_ROWS`].
    pub fn exact(kernel: KernelFamily) -> MethodSpec {
        MethodSpec::Exact { kernel, max_rows: kapprox_solve::DEFAULT_MAX_ROWS }
    }

    /// Short name for reports: `rff`, ..., `nystrom`, `tefm-g`, `tefm-s`,
    /// `tefm-c`, `eof` or `exact`.
    pub fn name(&self) -> &'static str {
        match self {
            MethodSpec::Independent { kind, .. } => kind.name(),
            MethodSpec::Nystrom { .. } => "nystrom",
            MethodSpec::Tefm { sketch, .. } => match sketch {
                TefmKind::Gaussian => "tefm-g",
                TefmKind::Srht => "tefm-s",
                TefmKind::CountSketch => "tefm-c",
            },
            MethodSpec::Eof { .. } => "eof",
            MethodSpec::Exact { .. } => "exact",
        }
    }

    /// Whether this is exact kernel ridge (no feature map).
    pub fn is_exact(&self) -> bool {
        matches!(self, MethodSpec::Exact { .. })
    }

    /// Whether the map is data-independent: built from its parameters and
    /// the bandwidth alone, without learning from the data.
    pub fn is_data_independent(&self) -> bool {
        matches!(self, MethodSpec::Independent { .. })
    }

    /// Whether the map's inputs must be min-max scaled (EOF lives on
    /// `[0, 1]^D`).
    pub fn needs_unit_cube(&self) -> bool {
        matches!(self, MethodSpec::Eof { .. })
    }

    /// Rows the prepare pass must sample for this method (Nyström's
    /// landmarks), beyond the bandwidth sample.
    pub fn sample_rows(&self) -> usize {
        match self {
            MethodSpec::Nystrom { n_landmarks, .. } => *n_landmarks,
            MethodSpec::Tefm { sketch_features, base: TefmBase::Nystrom, .. } => *sketch_features,
            _ => 0,
        }
    }

    /// Sketch passes before the fit pass (TEFM multi-pass: 1 + q).
    pub fn sketch_passes(&self) -> usize {
        match self {
            MethodSpec::Tefm { strategy: Strategy::MultiPass, power, .. } => 1 + power,
            _ => 0,
        }
    }

    /// Features the fit pass accumulates per row: the map's output, or the
    /// base map's for one-pass TEFM.
    pub fn accumulated_features(&self) -> usize {
        match self {
            MethodSpec::Independent { n_components, .. } => *n_components,
            MethodSpec::Nystrom { n_landmarks, .. } => *n_landmarks,
            MethodSpec::Tefm { strategy: Strategy::OnePass, sketch_features, .. } => *sketch_features,
            MethodSpec::Tefm { n_components, .. } => *n_components,
            MethodSpec::Eof { size: EofSize::Budget(m), .. } => *m,
            MethodSpec::Eof { .. } | MethodSpec::Exact { .. } => 0,
        }
    }

    /// TEFM over a Nyström base (which needs landmarks from the data).
    pub fn has_nystrom_base(&self) -> bool {
        matches!(self, MethodSpec::Tefm { base: TefmBase::Nystrom, .. })
    }

    /// The kernel the method approximates at bandwidth `sigma` (EOF: the
    /// Laplacian kernel of its `ω = 1/σ`, for either EOF kernel).
    pub fn kernel_at(&self, sigma: f64) -> Kernel {
        match self {
            MethodSpec::Independent { kernel, .. }
            | MethodSpec::Nystrom { kernel, .. }
            | MethodSpec::Tefm { kernel, .. }
            | MethodSpec::Exact { kernel, .. } => kernel.at(sigma),
            MethodSpec::Eof { .. } => Kernel::Laplacian { sigma },
        }
    }
}

impl std::fmt::Display for MethodSpec {
    /// The short name ([`MethodSpec::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MethodSpec {
    type Err = anyhow::Error;

    /// A method by name (`rff`, `fastfood`, `nystrom`, `tefm-g`, `eof`,
    /// `exact`, ...) with every other parameter at the command line's
    /// default ([`MethodParams::default`]): 1024 features, the Gaussian
    /// kernel (EOF: Laplace), TEFM's `d = 4l` over RFF with its strategy
    /// for the default memory budget.
    fn from_str(name: &str) -> Result<MethodSpec> {
        let params = MethodParams { map: name.to_string(), ..MethodParams::default() };
        if params.names_exact() { params.check_exact() } else { params.check(1, None) }
    }
}

#[cfg(test)]
mod tests;
