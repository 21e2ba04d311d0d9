//! How a method, a bandwidth and what earlier passes learned become a
//! feature map.

use super::{KernelFamily, MethodSpec, TefmBase};
use anyhow::{Context, Result, bail};
use kapprox_features::eof::{EofSize, EofSpec};
use kapprox_features::nystrom::Nystrom;
use kapprox_features::tefm::{Strategy, Tefm, TefmParams};
use kapprox_features::{FeatureMap, Form, MapKind, MapParams};
use ndarray::Array2;

/// The data-independent map of `kind` at bandwidth `sigma`.
#[allow(clippy::too_many_arguments)]
fn kind_map(
    kind: MapKind,
    kernel: KernelFamily,
    form: Option<Form>,
    l: usize,
    grids: Option<usize>,
    inner: Option<usize>,
    sigma: f64,
    n_input: usize,
    seed: u64,
) -> Result<Box<dyn FeatureMap>> {
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
    Ok(p.check()?.build(&Default::default())?)
}

impl MethodSpec {
    /// The data-independent map at bandwidth `sigma`; `None` for the
    /// methods learned from data (Nyström, TEFM, EOF) and exact kernel
    /// ridge.
    pub fn independent_map(&self, sigma: f64, n_input: usize, seed: u64) -> Result<Option<Box<dyn FeatureMap>>> {
        match *self {
            MethodSpec::Independent { kind, kernel, form, n_components, grids, inner } => {
                Ok(Some(kind_map(kind, kernel, form, n_components, grids, inner, sigma, n_input, seed)?))
            }
            _ => Ok(None),
        }
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
            MethodSpec::Independent { .. } => {
                Ok(self.independent_map(sigma, n_input, seed)?.expect("data-independent"))
            }
            MethodSpec::Nystrom { kernel, rel_tol, .. } => {
                let l = landmarks.context("Nyström needs the landmark sample")?;
                Ok(Box::new(Nystrom::fit(kernel.at(sigma), l.clone(), *rel_tol)?))
            }
            MethodSpec::Tefm { strategy: Strategy::OnePass, .. } => self.tefm_base(sigma, n_input, seed, landmarks),
            MethodSpec::Tefm { .. } => {
                let q = q.context("multi-pass TEFM needs Q from its sketch passes")?;
                self.tefm_map(self.tefm_base(sigma, n_input, seed, landmarks)?, seed, q.clone())
            }
            MethodSpec::Eof { kernel, size, basis, subset } => {
                let spec = match *size {
                    EofSize::Level(n) => EofSpec::level(*kernel, 1.0 / sigma, n_input, n).with_seed(seed),
                    EofSize::Budget(m) => EofSpec::budget(*kernel, 1.0 / sigma, n_input, m, seed).with_subset(*subset),
                };
                Ok(Box::new(spec.with_basis(*basis).build()?))
            }
            MethodSpec::Exact { .. } => bail!("exact kernel ridge has no feature map of its own"),
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
        let MethodSpec::Tefm { kernel, base, form, sketch_features, n_components, .. } = *self else {
            bail!("not a TEFM method")
        };
        match base {
            TefmBase::Map(kind) => kind_map(kind, kernel, form, sketch_features, None, None, sigma, n_input, seed),
            TefmBase::Nystrom => {
                let l = landmarks.context("TEFM over Nyström needs the landmark sample")?;
                let rel_tol = kapprox_features::nystrom::DEFAULT_REL_TOL;
                let base = Nystrom::fit(kernel.at(sigma), l.clone(), rel_tol)?;
                // Q needs at least l base features; say why there are fewer
                // rather than fail later in the range finder's orthonormalisation.
                if base.n_output() < n_components {
                    bail!(
                        "tefm over nystrom at sigma {sigma:.4}: the Nyström base kept only {} of its {} landmarks' \
                         features (the other eigenvalues of their kernel matrix are below {rel_tol:e} times the \
                         largest: the data is numerically of low rank at this bandwidth), fewer than the \
                         {n_components} --features asked for; ask for at most {} --features, or use smaller --sigma \
                         candidates",
                        base.n_output(),
                        l.nrows(),
                        base.n_output()
                    );
                }
                Ok(Box::new(base))
            }
        }
    }

    /// The fitted TEFM map `x ↦ F(x)Q` over `base` (from [`MethodSpec::tefm_base`]).
    /// `seed` is the sketch's (the fit's seed).
    pub fn tefm_map(&self, base: Box<dyn FeatureMap>, seed: u64, q: Array2<f64>) -> Result<Box<dyn FeatureMap>> {
        let MethodSpec::Tefm { sketch, n_components, power, .. } = self else { bail!("not a TEFM method") };
        let params = TefmParams::new(*sketch, *n_components, seed).with_power_iterations(*power);
        Ok(Box::new(Tefm::new(base, q)?.with_params(params)?))
    }
}
