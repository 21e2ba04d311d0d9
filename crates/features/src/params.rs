//! Generic parameters of the data-independent maps, checked into a
//! [`MapSpec`].

use crate::binning;
use crate::comp;
use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::kind::MapKind;
use crate::spec::{Form, MapSpec};

/// Generic, unchecked parameters of a data-independent map, as a CLI
/// collects them; [`MapParams::check`] turns them into a [`MapSpec`].
///
/// | name | default | purpose | range |
/// |---|---|---|---|
/// | `kind` | — | map family | [`MapKind`] |
/// | `kernel` | — | kernel approximated | supported by `kind` |
/// | `n_input` | — | input dimension `d` | ≥ 1 |
/// | `n_components` | — | output dimension `l` | ≥ 1, even for pairs |
/// | `form` | pairs | Fourier output form | not for binning |
/// | `seed` | 0 | seed of all random parameters | any |
/// | `n_grids` | [`binning::DEFAULT_GRIDS`] | binning: grids `P` | ≥ 1, binning only |
/// | `n_inner` | [`comp::default_inner`]`(l)` | comp: inner RFF dimension | ≥ 1, comp only |
///
/// ```
/// use kapprox_features::{FeatureError, Kernel, MapKind, MapParams, MapSpec};
///
/// let spec = MapParams::new(MapKind::Fastfood, Kernel::Gaussian { sigma: 1.0 }, 784, 8192).with_seed(3).check()?;
/// assert_eq!(spec.n_output(), 8192);
/// let err = MapParams::new(MapKind::Binning, Kernel::Gaussian { sigma: 1.0 }, 10, 1000).check().unwrap_err();
/// assert!(matches!(err, FeatureError::UnsupportedKernel { map: "binning", .. }));
/// # Ok::<(), FeatureError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MapParams {
    /// Map family.
    pub kind: MapKind,
    /// Kernel approximated.
    pub kernel: Kernel,
    /// Input dimension.
    pub n_input: usize,
    /// Output dimension `l`.
    pub n_components: usize,
    /// Fourier output form (`None`: pairs where it applies).
    pub form: Option<Form>,
    /// Seed of the random parameters.
    pub seed: u64,
    /// Binning: number of grids.
    pub n_grids: Option<usize>,
    /// Comp: inner RFF dimension.
    pub n_inner: Option<usize>,
}

impl MapParams {
    /// Parameters with every option at its default.
    pub fn new(kind: MapKind, kernel: Kernel, n_input: usize, n_components: usize) -> Self {
        MapParams { kind, kernel, n_input, n_components, form: None, seed: 0, n_grids: None, n_inner: None }
    }

    /// Sets the Fourier output form. Default: pairs.
    pub fn with_form(mut self, form: Form) -> Self {
        self.form = Some(form);
        self
    }

    /// Sets the seed. Default: 0.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets binning's number of grids. Default: [`binning::DEFAULT_GRIDS`].
    pub fn with_grids(mut self, n_grids: usize) -> Self {
        self.n_grids = Some(n_grids);
        self
    }

    /// Sets Comp's inner dimension. Default: [`comp::default_inner`].
    pub fn with_inner(mut self, n_inner: usize) -> Self {
        self.n_inner = Some(n_inner);
        self
    }

    /// Validates the combination and returns the spec.
    ///
    /// # Errors
    /// An unsupported kernel for the kind, an option the kind does not take,
    /// or an invalid parameter.
    pub fn check(&self) -> Result<MapSpec> {
        let MapParams { kind, kernel, n_input, n_components, form, seed, n_grids, n_inner } = *self;
        let refuse = |option| Err(FeatureError::UnsupportedOption { map: kind.name(), option });
        if kind == MapKind::Binning && form.is_some() {
            return refuse("form");
        }
        if kind != MapKind::Binning && n_grids.is_some() {
            return refuse("grids");
        }
        if kind != MapKind::Comp && n_inner.is_some() {
            return refuse("inner");
        }
        let form = form.unwrap_or_default();
        let spec = match kind {
            MapKind::Rff => MapSpec::Rff { kernel, form, n_input, n_components, seed },
            MapKind::Orf => MapSpec::Orf { kernel, form, n_input, n_components, seed },
            MapKind::Sorf => MapSpec::Sorf { kernel, form, n_input, n_components, seed },
            MapKind::Qmc => MapSpec::Qmc { kernel, form, n_input, n_components, seed },
            MapKind::Fastfood => MapSpec::Fastfood { kernel, form, n_input, n_components, seed },
            MapKind::Binning => MapSpec::Binning {
                kernel,
                n_input,
                n_components,
                n_grids: n_grids.unwrap_or(binning::DEFAULT_GRIDS),
                seed,
            },
            MapKind::Comp => MapSpec::Comp {
                kernel,
                form,
                n_input,
                n_components,
                n_inner: n_inner.unwrap_or_else(|| comp::default_inner(n_components)),
                seed,
            },
        };
        spec.validate()?;
        Ok(spec)
    }
}

impl MapSpec {
    /// Checks the parameters without drawing anything (the same checks as
    /// [`MapSpec::build`], at no cost), and refuses counts that cannot be
    /// meaningful (see [`crate::MAX_COMPONENTS`], [`crate::MAX_INPUT`],
    /// [`crate::MAX_GRIDS`]).
    ///
    /// # Errors
    /// As [`MapSpec::build`].
    pub fn validate(&self) -> Result<()> {
        if let Some(kernel) = self.kernel() {
            kernel.check()?;
        }
        self.check_counts()?;
        let Some(kind) = self.kind() else {
            // Maps learned from data are checked when their tensors are.
            return Ok(());
        };
        let kernel = self.kernel().expect("data-independent maps have a kernel");
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
            MapSpec::Nystrom(_)
            | MapSpec::Tefm { .. }
            | MapSpec::Eof(_)
            | MapSpec::KernelColumns { .. }
            | MapSpec::Custom { .. } => {}
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
