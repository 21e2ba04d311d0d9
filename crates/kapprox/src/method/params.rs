//! A method as a front end collects it, validated into a [`MethodSpec`].

use super::{KernelFamily, MethodSpec, TefmBase};
use anyhow::{Result, bail};
use kapprox_features::eof::{EofBasis, EofKernel, EofSize, EofSubset};
use kapprox_features::tefm::{Strategy, TefmKind, choose_strategy};
use kapprox_features::{Form, MapKind};

/// TEFM's one-pass budget when no memory limit is given: 8 GiB.
pub const DEFAULT_TEFM_BUDGET: u64 = 8 << 30;

/// The method's parameters as the command line (or another front end)
/// names them; [`MethodParams::check`] validates them, naming the flag of
/// every refused value.
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `map` | `rff` | rff (rff-gaussian), orf, sorf, qmc, fastfood, binning, comp, nystrom, tefm-g (tefm), tefm-s, tefm-c, eof, exact | |
/// | `kernel` | `gaussian` | gaussian, laplacian, cauchy, matern (eof: laplacian or sobolev) | |
/// | `nu` | 1.5 | Matérn smoothness ν | > 0 |
/// | `form` | pairs | RFF form: pairs or phase (Fourier maps only) | |
/// | `n_components` | 1024 | features `l` (nystrom: landmarks `m`; eof: the budget `M` unless `level`) | ≥ 1 |
/// | `grids` | binning's default | binning: grids `P` | ≥ 1 |
/// | `inner` | comp's default | comp: inner RFF dimension | ≥ 1 |
/// | `base` | `rff` | tefm: base map (a dense data-independent map, or nystrom) | |
/// | `sketch_features` | `4l` | tefm: base features `d` | ≥ `l` |
/// | `power` | 1 | tefm: power iterations `q` | ≥ 0 |
/// | `tefm_strategy` | `auto` | tefm: one-pass, multi-pass, or auto (one-pass when `FᵀF` fits the memory budget) | |
/// | `rel_tol` | [`kapprox_features::nystrom::DEFAULT_REL_TOL`] | nystrom: relative eigenvalue cut-off | `[0, 1)` |
/// | `level` | none | eof: sparse-grid level instead of a budget | |
/// | `eof_basis` | `centred` | eof: centred, boundary or paper | |
/// | `eof_subset` | `nested` | eof: nested or uniform | |
#[derive(Clone, Debug, PartialEq)]
pub struct MethodParams {
    /// The map (or `exact`).
    pub map: String,
    /// The kernel name.
    pub kernel: String,
    /// Matérn smoothness ν.
    pub nu: f64,
    /// RFF form: `pairs` or `phase`.
    pub form: Option<String>,
    /// Output features `l` (Nyström: landmarks; EOF: budget).
    pub n_components: usize,
    /// Binning: number of grids.
    pub grids: Option<usize>,
    /// Comp: inner RFF dimension.
    pub inner: Option<usize>,
    /// TEFM: the base map.
    pub base: String,
    /// TEFM: base features `d`.
    pub sketch_features: Option<usize>,
    /// TEFM: power iterations.
    pub power: usize,
    /// TEFM: `auto`, `one-pass` or `multi-pass`.
    pub tefm_strategy: String,
    /// Nyström: relative eigenvalue cut-off.
    pub rel_tol: f64,
    /// EOF: level instead of a budget.
    pub level: Option<u32>,
    /// EOF: `centred`, `boundary` or `paper`.
    pub eof_basis: Option<String>,
    /// EOF: `nested` or `uniform`.
    pub eof_subset: Option<String>,
}

impl Default for MethodParams {
    fn default() -> Self {
        MethodParams {
            map: "rff".into(),
            kernel: "gaussian".into(),
            nu: 1.5,
            form: None,
            n_components: 1024,
            grids: None,
            inner: None,
            base: "rff".into(),
            sketch_features: None,
            power: 1,
            tefm_strategy: "auto".into(),
            rel_tol: kapprox_features::nystrom::DEFAULT_REL_TOL,
            level: None,
            eof_basis: None,
            eof_subset: None,
        }
    }
}

impl MethodParams {
    /// Whether `map` names exact kernel ridge, `exact` (checked by
    /// [`MethodParams::check_exact`] instead of [`MethodParams::check`],
    /// which refuses it as an unknown map).
    pub fn names_exact(&self) -> bool {
        self.map == "exact"
    }

    /// Exact kernel ridge: only the kernel applies.
    ///
    /// # Errors
    /// An unknown kernel or an invalid ν.
    pub fn check_exact(&self) -> Result<MethodSpec> {
        Ok(MethodSpec::exact(KernelFamily::parse(&self.kernel, self.nu)?))
    }

    /// Validates a feature map method. `n_targets` (1 for regression, 2
    /// for classification) and `max_memory` feed TEFM's choice of
    /// strategy under `auto` (budget [`DEFAULT_TEFM_BUDGET`] when `None`).
    ///
    /// # Errors
    /// The first invalid or inapplicable parameter, naming its flag, e.g.
    /// `--level applies to eof, not to --map rff`.
    pub fn check(&self, n_targets: usize, max_memory: Option<u64>) -> Result<MethodSpec> {
        if self.n_components == 0 {
            bail!("--features: must be at least 1");
        }
        let form = match self.form.as_deref() {
            None => None,
            Some("pairs") => Some(Form::Pairs),
            Some("phase") => Some(Form::Phase),
            Some(other) => bail!("--form: {other:?} is not pairs or phase"),
        };
        let name = self.map.to_ascii_lowercase();
        let only = |flag: &str, set: bool, maps: &str| -> Result<()> {
            if set {
                bail!("--{flag} applies to {maps}, not to --map {name}");
            }
            Ok(())
        };
        let tefm_kind = match name.as_str() {
            "tefm-g" | "tefm" => Some(TefmKind::Gaussian),
            "tefm-s" => Some(TefmKind::Srht),
            "tefm-c" => Some(TefmKind::CountSketch),
            _ => None,
        };
        if tefm_kind.is_none() {
            only("sketch-features", self.sketch_features.is_some(), "tefm-g, tefm-s and tefm-c")?;
        }
        if name != "eof" {
            only("level", self.level.is_some(), "eof")?;
            only("eof-basis", self.eof_basis.is_some(), "eof")?;
            only("eof-subset", self.eof_subset.is_some(), "eof")?;
        }
        if let Some(sketch) = tefm_kind {
            let base: TefmBase = self.base.parse()?;
            let l = self.n_components;
            let d = self.sketch_features.unwrap_or(4 * l);
            if d < l {
                bail!("--sketch-features: {d} is smaller than --features {l}; TEFM compresses d base features to l");
            }
            if self.power > kapprox_features::MAX_POWER_ITERATIONS {
                bail!(
                    "--power: {} power iterations is more than {}; one or two are usual",
                    self.power,
                    kapprox_features::MAX_POWER_ITERATIONS
                );
            }
            let strategy = match self.tefm_strategy.as_str() {
                "one-pass" => Strategy::OnePass,
                "multi-pass" => Strategy::MultiPass,
                "auto" => choose_strategy(d, l, self.power, n_targets, max_memory.unwrap_or(DEFAULT_TEFM_BUDGET)),
                other => bail!("--tefm-strategy: {other:?} is not auto, one-pass or multi-pass"),
            };
            return Ok(MethodSpec::Tefm {
                sketch,
                base,
                kernel: KernelFamily::parse(&self.kernel, self.nu)?,
                form,
                n_components: l,
                sketch_features: d,
                power: self.power,
                strategy,
            });
        }
        match name.as_str() {
            "nystrom" | "nystroem" => {
                only("form", form.is_some(), "the Fourier maps")?;
                if !(self.rel_tol >= 0.0 && self.rel_tol < 1.0) {
                    bail!("--rel-tol: {} is not in [0, 1)", self.rel_tol);
                }
                Ok(MethodSpec::Nystrom {
                    kernel: KernelFamily::parse(&self.kernel, self.nu)?,
                    n_landmarks: self.n_components,
                    rel_tol: self.rel_tol,
                })
            }
            "eof" => {
                only("form", form.is_some(), "the Fourier maps")?;
                let kernel = match self.kernel.as_str() {
                    "laplacian" | "laplace" | "gaussian" => EofKernel::Laplace,
                    "sobolev" => EofKernel::Sobolev,
                    other => bail!("--kernel: eof supports laplacian and sobolev, not {other:?}"),
                };
                let size = match self.level {
                    Some(n) => EofSize::Level(n),
                    None => EofSize::Budget(self.n_components),
                };
                let basis = match self.eof_basis.as_deref() {
                    None | Some("centred") => EofBasis::Centred,
                    Some("boundary") => EofBasis::Boundary,
                    Some("paper") => EofBasis::Paper,
                    Some(other) => bail!("--eof-basis: {other:?} is not centred, boundary or paper"),
                };
                let subset = match self.eof_subset.as_deref() {
                    None | Some("nested") => EofSubset::Nested,
                    Some("uniform") => EofSubset::Uniform,
                    Some(other) => bail!("--eof-subset: {other:?} is not nested or uniform"),
                };
                Ok(MethodSpec::Eof { kernel, size, basis, subset })
            }
            _ => {
                let kind: MapKind = name.parse()?;
                Ok(MethodSpec::Independent {
                    kind,
                    kernel: KernelFamily::parse(&self.kernel, self.nu)?,
                    form,
                    n_components: self.n_components,
                    grids: self.grids,
                    inner: self.inner,
                })
            }
        }
    }
}
