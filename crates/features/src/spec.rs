use crate::binning::RandomBinning;
use crate::comp::Comp;
use crate::eof::EofSpec;
use crate::error::{FeatureError, Result};
use crate::exact::KernelColumns;
use crate::fastfood::Fastfood;
use crate::kernel::Kernel;
use crate::kind::MapKind;
use crate::map::FeatureMap;
use crate::nystrom::{Nystrom, NystromParams};
use crate::orf::Orf;
use crate::qmc::Qmc;
use crate::rff::Rff;
use crate::sorf::Sorf;
use crate::tefm::{Tefm, TefmParams};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Learned tensors of a data-dependent map, by name (stored in the model
/// file beside the spec).
pub type Tensors = BTreeMap<String, Array2<f64>>;

/// Most output features of a dense map, inner features of Comp, landmarks
/// of Nyström and points of kernel columns: 2^24. A ridge over more
/// features needs a Gram matrix of over 2 PB; the count can only be a
/// mistake (or a damaged model file).
pub const MAX_COMPONENTS: usize = 1 << 24;

/// Most input columns of a map: 2^24.
pub const MAX_INPUT: usize = 1 << 24;

/// Most grids of random binning: 2^16 (each row stores one entry per grid).
pub const MAX_GRIDS: usize = 1 << 16;

fn at_most(name: &'static str, value: usize, max: usize, expected: &'static str) -> Result<()> {
    if value > max {
        return Err(FeatureError::InvalidParameter { name, value: value.to_string(), expected });
    }
    Ok(())
}

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
    /// Random Fourier features ([`Rff`]).
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
    /// Orthogonal random features ([`Orf`]).
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
    /// Structured orthogonal random features ([`Sorf`]).
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
    /// Quasi-Monte Carlo features ([`Qmc`]).
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
    /// Fastfood ([`Fastfood`]).
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
    /// Random binning ([`RandomBinning`]), sparse output.
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
    /// Compact random features ([`Comp`]): RFF to `n_inner`, projected to `l`.
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
    /// Nyström ([`Nystrom`]); tensors `landmarks (m, d)` and `normalization (m, r)`.
    Nystrom(NystromParams),
    /// TEFM ([`Tefm`]): `x ↦ F(x)Q` over any base map; tensor `q (d, l)`, plus
    /// the base map's tensors prefixed `base.`.
    Tefm {
        /// The base map `F`.
        base: Box<MapSpec>,
        /// How `Q` was built (provenance) and `l`.
        params: TefmParams,
    },
    /// Entropic optimal features ([`crate::eof::Eof`]), sparse output.
    Eof(EofSpec),
    /// Exact kernel columns ([`KernelColumns`]) `z(x) = k(x, P)`; tensor `points (n, d)`.
    KernelColumns {
        /// The kernel.
        kernel: Kernel,
        /// Input dimension.
        n_input: usize,
        /// Number of points (output dimension).
        n_points: usize,
    },
}

impl MapSpec {
    /// Random Fourier features for `kernel`.
    pub fn rff(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Self {
        MapSpec::Rff { kernel, form, n_input, n_components, seed }
    }

    /// The map's kind, for data-independent maps (`None` for maps learned
    /// from data: Nyström, TEFM, EOF, kernel columns).
    pub fn kind(&self) -> Option<MapKind> {
        Some(match self {
            MapSpec::Rff { .. } => MapKind::Rff,
            MapSpec::Orf { .. } => MapKind::Orf,
            MapSpec::Sorf { .. } => MapKind::Sorf,
            MapSpec::Qmc { .. } => MapKind::Qmc,
            MapSpec::Fastfood { .. } => MapKind::Fastfood,
            MapSpec::Binning { .. } => MapKind::Binning,
            MapSpec::Comp { .. } => MapKind::Comp,
            MapSpec::Nystrom(_) | MapSpec::Tefm { .. } | MapSpec::Eof(_) | MapSpec::KernelColumns { .. } => {
                return None;
            }
        })
    }

    /// A short name: the map kind, or `nystrom`, `tefm`, `eof`, `kernel-columns`.
    pub fn name(&self) -> &'static str {
        match self {
            MapSpec::Nystrom(_) => "nystrom",
            MapSpec::Tefm { .. } => "tefm",
            MapSpec::Eof(_) => "eof",
            MapSpec::KernelColumns { .. } => "kernel-columns",
            _ => self.kind().expect("data-independent").name(),
        }
    }

    /// The kernel the map approximates (EOF: the Laplacian kernel of its ω;
    /// its Sobolev kernel has no [`Kernel`] counterpart).
    pub fn kernel(&self) -> Kernel {
        match *self {
            MapSpec::Nystrom(ref p) => p.kernel,
            MapSpec::Tefm { ref base, .. } => base.kernel(),
            MapSpec::Eof(ref e) => Kernel::Laplacian { sigma: 1.0 / e.omega },
            MapSpec::KernelColumns { kernel, .. } => kernel,
            MapSpec::Rff { kernel, .. }
            | MapSpec::Orf { kernel, .. }
            | MapSpec::Sorf { kernel, .. }
            | MapSpec::Qmc { kernel, .. }
            | MapSpec::Fastfood { kernel, .. }
            | MapSpec::Binning { kernel, .. }
            | MapSpec::Comp { kernel, .. } => kernel,
        }
    }

    /// The seed of the map's random parameters.
    pub fn seed(&self) -> u64 {
        match *self {
            MapSpec::Nystrom(_) | MapSpec::KernelColumns { .. } => 0,
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
            MapSpec::KernelColumns { n_input, .. } => n_input,
            MapSpec::Rff { n_input, .. }
            | MapSpec::Orf { n_input, .. }
            | MapSpec::Sorf { n_input, .. }
            | MapSpec::Qmc { n_input, .. }
            | MapSpec::Fastfood { n_input, .. }
            | MapSpec::Binning { n_input, .. }
            | MapSpec::Comp { n_input, .. } => n_input,
        }
    }

    /// Output dimension.
    pub fn n_output(&self) -> usize {
        match *self {
            MapSpec::Nystrom(ref p) => p.n_components,
            MapSpec::Tefm { ref params, .. } => params.n_components,
            MapSpec::Eof(ref e) => crate::eof::Eof::new(e.clone()).map_or(0, |m| m.n_output()),
            MapSpec::KernelColumns { n_points, .. } => n_points,
            MapSpec::Rff { n_components, .. }
            | MapSpec::Orf { n_components, .. }
            | MapSpec::Sorf { n_components, .. }
            | MapSpec::Qmc { n_components, .. }
            | MapSpec::Fastfood { n_components, .. }
            | MapSpec::Binning { n_components, .. }
            | MapSpec::Comp { n_components, .. } => n_components,
        }
    }

    /// Builds the map. `tensors` holds learned parts for data-dependent maps
    /// (ignored by data-independent ones).
    ///
    /// # Errors
    /// Invalid parameters (see each map's constructor), counts past the
    /// limits of [`MapSpec::validate`], or missing / mis-shaped tensors.
    pub fn build(&self, tensors: &Tensors) -> Result<Box<dyn FeatureMap>> {
        self.check_counts()?;
        Ok(match *self {
            MapSpec::Nystrom(ref p) => Box::new(Nystrom::from_tensors(p, tensors)?),
            MapSpec::Tefm { ref base, params } => {
                let base_tensors: Tensors = tensors
                    .iter()
                    .filter_map(|(k, v)| k.strip_prefix("base.").map(|b| (b.to_string(), v.clone())))
                    .collect();
                Box::new(Tefm::from_tensors(base.build(&base_tensors)?, params, tensors)?)
            }
            MapSpec::Eof(ref e) => Box::new(e.build()?),
            MapSpec::KernelColumns { kernel, n_input, n_points } => {
                Box::new(KernelColumns::from_tensors(kernel, n_input, n_points, tensors)?)
            }
            MapSpec::Rff { kernel, form, n_input, n_components, seed } => {
                Box::new(Rff::new(kernel, form, n_input, n_components, seed)?)
            }
            MapSpec::Orf { kernel, form, n_input, n_components, seed } => {
                Box::new(Orf::new(kernel, form, n_input, n_components, seed)?)
            }
            MapSpec::Sorf { kernel, form, n_input, n_components, seed } => {
                Box::new(Sorf::new(kernel, form, n_input, n_components, seed)?)
            }
            MapSpec::Qmc { kernel, form, n_input, n_components, seed } => {
                Box::new(Qmc::new(kernel, form, n_input, n_components, seed)?)
            }
            MapSpec::Fastfood { kernel, form, n_input, n_components, seed } => {
                Box::new(Fastfood::new(kernel, form, n_input, n_components, seed)?)
            }
            MapSpec::Binning { kernel, n_input, n_components, n_grids, seed } => {
                Box::new(RandomBinning::new(kernel, n_input, n_components, n_grids, seed)?)
            }
            MapSpec::Comp { kernel, form, n_input, n_components, n_inner, seed } => {
                Box::new(Comp::new(kernel, form, n_input, n_components, n_inner, seed)?)
            }
        })
    }

    /// The memory of the map's parameters in bytes, from the spec alone
    /// (before building), as each map documents it: frequency matrices
    /// (with their single-precision copy), diagonals, grids, projections,
    /// and the learned tensors of data-dependent maps. Saturates at
    /// `u64::MAX`; an EOF spec that cannot be built counts as `u64::MAX`.
    pub fn parameter_bytes(&self) -> u64 {
        let d = self.n_input() as u64;
        let l = self.n_output() as u64;
        let mul = |a: u64, b: u64| a.saturating_mul(b);
        let freq = |form: Form, l: u64| if form == Form::Pairs { l / 2 } else { l };
        // w (d, m) in f64 plus its f32 copy, and the phases.
        let dense = |form: Form, l: u64| mul(mul(12, d), freq(form, l)).saturating_add(mul(8, l));
        // Four length-D vectors per block of D frequencies, f64 and f32.
        let structured = |form: Form| {
            let d_pad = d.max(1).checked_next_power_of_two().unwrap_or(u64::MAX);
            mul(48, mul(freq(form, l).div_ceil(d_pad).max(1), d_pad))
        };
        match *self {
            MapSpec::Rff { form, .. } | MapSpec::Orf { form, .. } | MapSpec::Qmc { form, .. } => dense(form, l),
            MapSpec::Sorf { form, .. } | MapSpec::Fastfood { form, .. } => structured(form),
            MapSpec::Binning { n_grids, .. } => mul(mul(16, n_grids as u64), d).saturating_add(mul(8, n_grids as u64)),
            MapSpec::Comp { form, n_inner, .. } => {
                dense(form, n_inner as u64).saturating_add(mul(mul(8, n_inner as u64), l))
            }
            MapSpec::Nystrom(ref p) => mul(mul(8, p.n_landmarks as u64), d.saturating_add(l)),
            MapSpec::Tefm { ref base, ref params } => {
                base.parameter_bytes().saturating_add(mul(mul(8, base.n_output() as u64), params.n_components as u64))
            }
            MapSpec::Eof(ref e) => e.parameter_bytes().unwrap_or(u64::MAX),
            MapSpec::KernelColumns { n_points, .. } => mul(mul(8, n_points as u64), d.saturating_add(1)),
        }
    }

    /// Refuses a map whose [`parameter_bytes`](Self::parameter_bytes)
    /// exceed `budget_bytes`, before anything is allocated.
    ///
    /// # Errors
    /// [`FeatureError::TooLarge`].
    pub fn check_memory(&self, budget_bytes: u64) -> Result<()> {
        let needed = self.parameter_bytes();
        if needed > budget_bytes {
            return Err(FeatureError::TooLarge { map: self.name(), needed, budget: budget_bytes });
        }
        Ok(())
    }

    /// Refuses counts that cannot be meaningful ([`MAX_COMPONENTS`],
    /// [`MAX_INPUT`], [`MAX_GRIDS`], TEFM's power iterations), for every map,
    /// learned ones included: a damaged model file must not make the loader
    /// allocate terabytes.
    fn check_counts(&self) -> Result<()> {
        const FEATURES: &str = "at most 2^24 = 16777216 features";
        at_most("n_input", self.n_input(), MAX_INPUT, "at most 2^24 = 16777216 input columns")?;
        match *self {
            // Buckets of a hash, checked against u32 in `validate`.
            MapSpec::Binning { n_grids, .. } => {
                at_most("grids", n_grids, MAX_GRIDS, "at most 2^16 = 65536 grids (each row stores one entry per grid)")
            }
            MapSpec::Comp { n_components, n_inner, .. } => {
                at_most("features", n_components, MAX_COMPONENTS, FEATURES)?;
                at_most("inner", n_inner, MAX_COMPONENTS, "at most 2^24 = 16777216 inner features")
            }
            MapSpec::Nystrom(ref p) => {
                at_most("landmarks", p.n_landmarks, MAX_COMPONENTS, "at most 2^24 = 16777216 landmarks")?;
                at_most("features", p.n_components, p.n_landmarks, "at most the number of landmarks")
            }
            MapSpec::Tefm { ref base, ref params } => {
                base.check_counts()?;
                params.check(base.n_output())
            }
            MapSpec::Eof(_) => Ok(()),
            MapSpec::KernelColumns { n_points, .. } => {
                at_most("points", n_points, MAX_COMPONENTS, "at most 2^24 = 16777216 kernel columns")
            }
            MapSpec::Rff { n_components, .. }
            | MapSpec::Orf { n_components, .. }
            | MapSpec::Sorf { n_components, .. }
            | MapSpec::Qmc { n_components, .. }
            | MapSpec::Fastfood { n_components, .. } => at_most("features", n_components, MAX_COMPONENTS, FEATURES),
        }
    }

    /// Checks the parameters without drawing anything (the same checks as
    /// [`MapSpec::build`], at no cost), and refuses counts that cannot be
    /// meaningful (see [`MAX_COMPONENTS`], [`MAX_INPUT`], [`MAX_GRIDS`]).
    ///
    /// # Errors
    /// As [`MapSpec::build`].
    pub fn validate(&self) -> Result<()> {
        let kernel = self.kernel();
        kernel.check()?;
        self.check_counts()?;
        let Some(kind) = self.kind() else {
            // Maps learned from data are checked when their tensors are.
            return Ok(());
        };
        if !kind.supports(&kernel) {
            return Err(FeatureError::UnsupportedKernel {
                map: kind.name(),
                kernel: kernel.name(),
                supported: kind.supported_kernels(),
            });
        }
        if self.n_input() == 0 {
            return Err(FeatureError::InvalidParameter {
                name: "n_input",
                value: "0".into(),
                expected: "at least one input column",
            });
        }
        let l = self.n_output();
        match *self {
            MapSpec::Binning { n_grids, .. } => {
                if l == 0 || l > u32::MAX as usize {
                    return Err(FeatureError::InvalidParameter {
                        name: "features",
                        value: l.to_string(),
                        expected: "a number of buckets between 1 and 2^32 - 1",
                    });
                }
                if n_grids == 0 {
                    return Err(FeatureError::InvalidParameter {
                        name: "grids",
                        value: "0".into(),
                        expected: "a positive number of grids",
                    });
                }
            }
            MapSpec::Comp { form, n_inner, .. } => {
                if l == 0 {
                    return Err(FeatureError::InvalidParameter {
                        name: "features",
                        value: "0".into(),
                        expected: "a positive number",
                    });
                }
                if n_inner == 0 || (form == Form::Pairs && n_inner % 2 == 1) {
                    return Err(FeatureError::InvalidParameter {
                        name: "inner",
                        value: n_inner.to_string(),
                        expected: "a positive inner dimension (even for the pairs form)",
                    });
                }
            }
            MapSpec::Nystrom(_) | MapSpec::Tefm { .. } | MapSpec::Eof(_) | MapSpec::KernelColumns { .. } => {}
            MapSpec::Rff { form, .. }
            | MapSpec::Orf { form, .. }
            | MapSpec::Sorf { form, .. }
            | MapSpec::Qmc { form, .. }
            | MapSpec::Fastfood { form, .. } => {
                if l == 0 || (form == Form::Pairs && l % 2 == 1) {
                    return Err(FeatureError::InvalidParameter {
                        name: "features",
                        value: l.to_string(),
                        expected: "a positive number (even for the pairs form)",
                    });
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn check_sigma(sigma: f64) -> Result<()> {
    if sigma.is_finite() && sigma > 0.0 { Ok(()) } else { Err(FeatureError::InvalidBandwidth { value: sigma }) }
}
