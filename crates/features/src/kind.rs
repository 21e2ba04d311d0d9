//! The data-independent map families and their names.

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::spec::MapSpec;

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

impl MapSpec {
    /// The map's kind, for data-independent maps (`None` for maps learned
    /// from data: Nyström, TEFM, EOF, kernel columns, and for maps of other
    /// crates).
    pub fn kind(&self) -> Option<MapKind> {
        Some(match self {
            MapSpec::Rff { .. } => MapKind::Rff,
            MapSpec::Orf { .. } => MapKind::Orf,
            MapSpec::Sorf { .. } => MapKind::Sorf,
            MapSpec::Qmc { .. } => MapKind::Qmc,
            MapSpec::Fastfood { .. } => MapKind::Fastfood,
            MapSpec::Binning { .. } => MapKind::Binning,
            MapSpec::Comp { .. } => MapKind::Comp,
            MapSpec::Nystrom(_)
            | MapSpec::Tefm { .. }
            | MapSpec::Eof(_)
            | MapSpec::KernelColumns { .. }
            | MapSpec::Custom { .. } => return None,
        })
    }

    /// A short name: the map kind, or `nystrom`, `tefm`, `eof`,
    /// `kernel-columns`, or the registered name of another crate's map.
    pub fn name(&self) -> &str {
        match self {
            MapSpec::Nystrom(_) => "nystrom",
            MapSpec::Tefm { .. } => "tefm",
            MapSpec::Eof(_) => "eof",
            MapSpec::KernelColumns { .. } => "kernel-columns",
            MapSpec::Custom { name, .. } => name,
            _ => self.kind().expect("data-independent").name(),
        }
    }
}
