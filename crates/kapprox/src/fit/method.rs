//! The map family `fit` builds, with every parameter but the bandwidth,
//! and how each family turns a bandwidth (plus what earlier passes learned)
//! into a feature map.

use anyhow::{Context, Result, bail};
use kapprox_features::eof::{EofBasis, EofKernel, EofSize, EofSpec, EofSubset};
use kapprox_features::nystrom::Nystrom;
use kapprox_features::tefm::{Strategy, Tefm, TefmKind, TefmParams};
use kapprox_features::{FeatureMap, Form, Kernel, MapKind, MapParams};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// `--base nystrom`: TEFM over Nyström features (not a [`MapKind`]: it is
/// learned from the data).
pub const NYSTROM_BASE: &str = "nystrom";

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
    /// Parses `--kernel` (with `--nu` for Matérn).
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

/// What `fit` learns features with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum Method {
    /// A data-independent map: rff, orf, sorf, qmc, fastfood, binning, comp.
    Independent {
        /// Map kind name (a [`MapKind`]).
        kind: String,
        /// Kernel family.
        kernel: KernelFamily,
        /// RFF form where it applies.
        form: Option<Form>,
        /// Output features `l`.
        n_components: usize,
        /// Random binning: number of grids.
        grids: Option<usize>,
        /// Comp: inner RFF dimension.
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
        /// Base map kind name (a [`MapKind`] name, or `nystrom`).
        base: String,
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
        /// One pass with FᵀF in memory, or 1 + q sketch passes.
        strategy: Strategy,
    },
    /// Entropic optimal features on [0,1]^D (inputs min-max scaled).
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
}

/// What a recorded EOF method without a `basis` field used: the boundary
/// basis, then the only complete one.
fn legacy_eof_basis() -> EofBasis {
    EofBasis::Boundary
}

impl Method {
    /// Short name for reports.
    pub fn name(&self) -> String {
        match self {
            Method::Independent { kind, .. } => kind.clone(),
            Method::Nystrom { .. } => "nystrom".into(),
            Method::Tefm { sketch, .. } => match sketch {
                TefmKind::Gaussian => "tefm-g".into(),
                TefmKind::Srht => "tefm-s".into(),
                TefmKind::CountSketch => "tefm-c".into(),
            },
            Method::Eof { .. } => "eof".into(),
        }
    }

    /// Rows the prepare pass must sample for this method (Nyström's
    /// landmarks), beyond the bandwidth sample.
    pub fn sample_rows(&self) -> usize {
        match self {
            Method::Nystrom { n_landmarks, .. } => *n_landmarks,
            Method::Tefm { sketch_features, .. } if self.has_nystrom_base() => *sketch_features,
            _ => 0,
        }
    }

    /// Sketch passes before the fit pass (TEFM multi-pass: 1 + q).
    pub fn sketch_passes(&self) -> usize {
        match self {
            Method::Tefm { strategy: Strategy::MultiPass, power, .. } => 1 + power,
            _ => 0,
        }
    }

    /// Whether the fit pass accumulates the base map's statistics and a
    /// sketch, and projects them afterwards (TEFM one-pass).
    pub fn is_one_pass_tefm(&self) -> bool {
        matches!(self, Method::Tefm { strategy: Strategy::OnePass, .. })
    }

    /// Features the fit pass accumulates per row: the map's output, or the
    /// base map's for one-pass TEFM.
    pub fn accumulated_features(&self) -> usize {
        match self {
            Method::Independent { n_components, .. } => *n_components,
            Method::Nystrom { n_landmarks, .. } => *n_landmarks,
            Method::Tefm { strategy: Strategy::OnePass, sketch_features, .. } => *sketch_features,
            Method::Tefm { n_components, .. } => *n_components,
            Method::Eof { size: EofSize::Budget(m), .. } => *m,
            Method::Eof { .. } => 0,
        }
    }

    /// TEFM over a Nyström base (which needs landmarks from the data).
    pub fn has_nystrom_base(&self) -> bool {
        matches!(self, Method::Tefm { base, .. } if base == NYSTROM_BASE)
    }

    /// The data-independent map at bandwidth `sigma` (for TEFM: its base
    /// map, when that is data-independent); `None` for data-dependent
    /// families.
    pub fn independent_map(&self, sigma: f64, n_input: usize, seed: u64) -> Result<Option<Box<dyn FeatureMap>>> {
        let (kind, kernel, form, l, grids, inner) = match self {
            Method::Independent { kind, kernel, form, n_components, grids, inner } => {
                (kind, kernel, *form, *n_components, *grids, *inner)
            }
            Method::Tefm { .. } if self.has_nystrom_base() => return Ok(None),
            Method::Tefm { base, kernel, form, sketch_features, .. } => {
                (base, kernel, *form, *sketch_features, None, None)
            }
            _ => return Ok(None),
        };
        let kind: MapKind = kind.parse()?;
        let mut p = MapParams::new(kind, kernel.at(sigma), n_input, l).with_seed(seed);
        if let Some(f) = form {
            p = p.with_form(f);
        }
        if let Some(g) = grids {
            p = p.with_grids(g);
        }
        if let Some(i) = inner {
            p = p.with_inner(i);
        }
        Ok(Some(p.check()?.build(&Default::default())?))
    }

    /// The final feature map of the fit pass at bandwidth `sigma`, given
    /// what earlier passes learned (`landmarks` for Nyström, `q` for
    /// multi-pass TEFM). For one-pass TEFM this is the base map.
    pub fn fit_pass_map(
        &self,
        sigma: f64,
        n_input: usize,
        seed: u64,
        landmarks: Option<&Array2<f64>>,
        q: Option<&Array2<f64>>,
    ) -> Result<Box<dyn FeatureMap>> {
        match self {
            Method::Independent { .. } => Ok(self.independent_map(sigma, n_input, seed)?.expect("independent")),
            Method::Nystrom { kernel, rel_tol, .. } => {
                let l = landmarks.context("Nyström needs the landmark sample")?;
                Ok(Box::new(Nystrom::fit(kernel.at(sigma), l.clone(), *rel_tol)?))
            }
            Method::Tefm { strategy: Strategy::OnePass, .. } => self.tefm_base(sigma, n_input, seed, landmarks),
            Method::Tefm { .. } => {
                let q = q.context("multi-pass TEFM needs Q from its sketch passes")?;
                self.tefm_map(self.tefm_base(sigma, n_input, seed, landmarks)?, seed, q.clone())
            }
            Method::Eof { kernel, size, basis, subset } => {
                let spec = match *size {
                    EofSize::Level(n) => EofSpec::level(*kernel, 1.0 / sigma, n_input, n).with_seed(seed),
                    EofSize::Budget(m) => EofSpec::budget(*kernel, 1.0 / sigma, n_input, m, seed).with_subset(*subset),
                };
                Ok(Box::new(spec.with_basis(*basis).build()?))
            }
        }
    }

    /// TEFM's base map `F` at bandwidth `sigma`: the data-independent map,
    /// or Nyström over `landmarks` (the prepare pass's sample, scaled).
    pub fn tefm_base(
        &self,
        sigma: f64,
        n_input: usize,
        seed: u64,
        landmarks: Option<&Array2<f64>>,
    ) -> Result<Box<dyn FeatureMap>> {
        let Method::Tefm { kernel, .. } = self else { bail!("not a TEFM method") };
        if self.has_nystrom_base() {
            let l = landmarks.context("TEFM over Nyström needs the landmark sample")?;
            return Ok(Box::new(Nystrom::fit(
                kernel.at(sigma),
                l.clone(),
                kapprox_features::nystrom::DEFAULT_REL_TOL,
            )?));
        }
        Ok(self.independent_map(sigma, n_input, seed)?.expect("a data-independent TEFM base"))
    }

    /// The fitted TEFM map `x ↦ F(x)Q` over `base` (from [`Method::tefm_base`]).
    /// `seed` is the sketch's (the fit's seed).
    pub fn tefm_map(&self, base: Box<dyn FeatureMap>, seed: u64, q: Array2<f64>) -> Result<Box<dyn FeatureMap>> {
        let Method::Tefm { sketch, n_components, power, .. } = self else { bail!("not a TEFM method") };
        let params = TefmParams::new(*sketch, *n_components, seed).with_power_iterations(*power);
        Ok(Box::new(Tefm::new(base, q)?.with_params(params)?))
    }
}
