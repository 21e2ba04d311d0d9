use crate::binning;
use crate::comp;
use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::spec::{Form, MapSpec};

/// The data-independent map families, by the name the CLI uses
/// (`--map NAME`).
///
/// | name | aliases | kernels | form |
/// |---|---|---|---|
/// | `rff` | `rff-gaussian`, `rks` | all | pairs / phase |
/// | `orf` | | gaussian, matern | pairs / phase |
/// | `sorf` | | gaussian, matern | pairs / phase |
/// | `qmc` | `quasi` | all | pairs / phase |
/// | `fastfood` | `ffood` | gaussian, matern | pairs / phase |
/// | `binning` | `random-binning` | laplacian | — (sparse) |
/// | `comp` | `compact` | all | pairs / phase (inner RFF) |
///
/// ```
/// use kapprox_features::MapKind;
///
/// assert_eq!("rff-gaussian".parse::<MapKind>()?, MapKind::Rff);
/// assert_eq!("Fastfood".parse::<MapKind>()?, MapKind::Fastfood);
/// assert!("nope".parse::<MapKind>().is_err());
/// # Ok::<(), kapprox_features::FeatureError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MapKind {
    /// Random Fourier features ([`crate::Rff`]).
    Rff,
    /// Orthogonal random features ([`crate::Orf`]).
    Orf,
    /// Structured orthogonal random features ([`crate::Sorf`]).
    Sorf,
    /// Quasi-Monte Carlo features ([`crate::Qmc`]).
    Qmc,
    /// Fastfood ([`crate::Fastfood`]).
    Fastfood,
    /// Random binning ([`crate::RandomBinning`]).
    Binning,
    /// Compact random features ([`crate::Comp`]).
    Comp,
}

impl MapKind {
    /// Every kind, in the order of the table above.
    pub const ALL: [MapKind; 7] =
        [MapKind::Rff, MapKind::Orf, MapKind::Sorf, MapKind::Qmc, MapKind::Fastfood, MapKind::Binning, MapKind::Comp];

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Rff => "rff",
            MapKind::Orf => "orf",
            MapKind::Sorf => "sorf",
            MapKind::Qmc => "qmc",
            MapKind::Fastfood => "fastfood",
            MapKind::Binning => "binning",
            MapKind::Comp => "comp",
        }
    }

    /// Whether this kind can approximate `kernel`.
    pub fn supports(self, kernel: &Kernel) -> bool {
        match self {
            MapKind::Rff | MapKind::Qmc | MapKind::Comp => true,
            MapKind::Orf | MapKind::Sorf | MapKind::Fastfood => kernel.is_isotropic(),
            MapKind::Binning => matches!(kernel, Kernel::Laplacian { .. }),
        }
    }

    /// The kernels this kind supports, as an error message lists them.
    pub fn supported_kernels(self) -> &'static str {
        match self {
            MapKind::Rff | MapKind::Qmc | MapKind::Comp => "gaussian, laplacian, cauchy and matern",
            MapKind::Orf | MapKind::Sorf | MapKind::Fastfood => "gaussian and matern",
            MapKind::Binning => "laplacian",
        }
    }

    /// Whether the kind has a pairs / phase form.
    pub fn has_form(self) -> bool {
        self != MapKind::Binning
    }
}

impl std::fmt::Display for MapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MapKind {
    type Err = FeatureError;

    fn from_str(s: &str) -> Result<MapKind> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "rff" | "rff-gaussian" | "rks" => MapKind::Rff,
            "orf" => MapKind::Orf,
            "sorf" => MapKind::Sorf,
            "qmc" | "quasi" => MapKind::Qmc,
            "fastfood" | "ffood" => MapKind::Fastfood,
            "binning" | "random-binning" => MapKind::Binning,
            "comp" | "compact" => MapKind::Comp,
            _ => return Err(FeatureError::UnknownMap { name: s.to_string() }),
        })
    }
}

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
