//! Ridge regression from sufficient statistics.

use crate::error::{Result, SolveError, all_finite, check_alpha, check_dim, check_finite, no_rows};
use crate::solver::{Fallback, SolveInfo, bound_proves, solve_proved_in_place, solve_shifted, solve_shifted_bounded};
use faer::{Accum, Par};
use kapprox_core::cpu::Simd;
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::gram::PackedSymmetric;
use kapprox_core::{CenteredMoments, Moments, SparseRowsView};
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, Axis, s};
use serde::{Deserialize, Serialize};

/// Default of [`RidgeParams::with_alpha`].
pub const DEFAULT_ALPHA: f64 = 1.0;
/// Default of [`RidgeParams::with_fit_intercept`].
pub const DEFAULT_FIT_INTERCEPT: bool = true;

/// Entry point of ridge regression: [`Ridge::params`].
#[derive(Clone, Copy, Debug)]
pub struct Ridge;

impl Ridge {
    /// Default ridge parameters, to be adjusted with the `with_*` setters
    /// and checked with [`RidgeParams::check`].
    pub fn params() -> RidgeParams {
        RidgeParams::new()
    }
}

/// Unchecked ridge parameters (linfa style): set with the `with_*` setters,
/// then [`check`](RidgeParams::check) into [`RidgeValidParams`].
///
/// Ridge minimises, for each target column `y` separately,
///
/// `‖Z w + b·1 − y‖² + α ‖w‖²`
///
/// over the coefficients `w` and the intercept `b`. The intercept is not
/// penalised (scikit-learn's `alpha` convention).
///
/// # Parameters
///
/// | Name | Default | Purpose | Range |
/// | --- | --- | --- | --- |
/// | `alpha` | `1.0` | penalty on `‖w‖²` | finite, `≥ 0` |
/// | `fit_intercept` | `true` | fit an unpenalised intercept `b` | `true`, `false` |
/// | `fallback` | [`Fallback::Eigen`] | what to do when Cholesky of `A + αI` fails or is too ill-conditioned | [`Fallback`] |
/// | `rcond` | `l · ε` | relative eigenvalue cut-off; condition limit `1/rcond` | `(0, 1)` |
///
/// (`l` is the number of features and `ε` the machine epsilon.)
///
/// # Errors
///
/// [`check`](RidgeParams::check) returns [`SolveError::InvalidAlpha`] for a
/// negative or non-finite `alpha` and [`SolveError::InvalidParameter`] for
/// an `rcond` outside `(0, 1)`.
///
/// # Example
///
/// ```
/// use kapprox_solve::{Fallback, Ridge};
///
/// let params = Ridge::params().with_alpha(0.1).with_fallback(Fallback::Error).check()?;
/// assert_eq!(params.alpha(), 0.1);
/// assert!(Ridge::params().with_alpha(-1.0).check().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RidgeParams(RidgeValidParams);

/// Checked ridge parameters; see [`RidgeParams`] for their meaning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RidgeValidParams {
    alpha: f64,
    fit_intercept: bool,
    fallback: Fallback,
    rcond: Option<f64>,
}

impl Default for RidgeParams {
    fn default() -> Self {
        Self::new()
    }
}

impl RidgeParams {
    /// The defaults listed in the table of [`RidgeParams`].
    pub fn new() -> Self {
        RidgeParams(RidgeValidParams {
            alpha: DEFAULT_ALPHA,
            fit_intercept: DEFAULT_FIT_INTERCEPT,
            fallback: Fallback::Eigen,
            rcond: None,
        })
    }

    /// Sets the penalty `α` on `‖w‖²`. Default: [`DEFAULT_ALPHA`] (1.0).
    pub fn with_alpha(mut self, alpha: f64) -> Self {
        self.0.alpha = alpha;
        self
    }

    /// Whether to fit an unpenalised intercept. Default: `true`.
    pub fn with_fit_intercept(mut self, fit_intercept: bool) -> Self {
        self.0.fit_intercept = fit_intercept;
        self
    }

    /// What to do when `A + αI` is singular or too ill-conditioned for
    /// Cholesky. Default: [`Fallback::Eigen`].
    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.0.fallback = fallback;
        self
    }

    /// Sets the relative eigenvalue cut-off of the pseudo-inverse and the
    /// condition limit `1/rcond` above which Cholesky is not trusted.
    /// Default: `n_features · f64::EPSILON`.
    pub fn with_rcond(mut self, rcond: f64) -> Self {
        self.0.rcond = Some(rcond);
        self
    }

    /// Checks the parameters without consuming them.
    pub fn check_ref(&self) -> Result<&RidgeValidParams> {
        check_alpha(self.0.alpha)?;
        if let Some(r) = self.0.rcond {
            check_rcond(r)?;
        }
        Ok(&self.0)
    }

    /// Checks the parameters.
    pub fn check(self) -> Result<RidgeValidParams> {
        self.check_ref()?;
        Ok(self.0)
    }
}

pub(crate) fn check_rcond(r: f64) -> Result<f64> {
    if r > 0.0 && r < 1.0 {
        Ok(r)
    } else {
        Err(SolveError::InvalidParameter { name: "rcond", value: r, expected: "a number in (0, 1)" })
    }
}

/// The default `rcond` for a system of dimension `n`.
pub(crate) fn default_rcond(n: usize) -> f64 {
    n.max(1) as f64 * f64::EPSILON
}

impl RidgeValidParams {
    /// The penalty `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether an intercept is fitted.
    pub fn fit_intercept(&self) -> bool {
        self.fit_intercept
    }

    /// The fallback for singular or ill-conditioned systems.
    pub fn fallback(&self) -> Fallback {
        self.fallback
    }

    /// The effective `rcond` for `n_features` features.
    pub fn rcond(&self, n_features: usize) -> f64 {
        self.rcond.unwrap_or_else(|| default_rcond(n_features))
    }

    /// Fits all target columns of `m` at once.
    ///
    /// With an intercept the centred system `(A + αI) W = B` is solved
    /// (`A = ZᵀZ − n z̄z̄ᵀ`, `B = ZᵀY − n z̄ȳᵀ`) and `b = ȳ − Wᵀz̄`; without,
    /// `(ZᵀZ + αI) W = ZᵀY` and `b = 0`.
    ///
    /// Cost: `l³/3 + 2 l² k` flops by Cholesky (about `9 l³` if the eigen
    /// fallback is taken), plus a `COND_ITERS · 4 l²` condition estimate;
    /// memory `3 l² + l k` doubles. Independent of the number of rows.
    ///
    /// # Errors
    /// [`SolveError::NoRows`] if `m` saw no rows; [`SolveError::NonFinite`]
    /// if the statistics hold NaN or infinities; the errors of
    /// [`Fallback::Error`] / [`Fallback::Jitter`] when Cholesky fails.
    ///
    /// # Panics
    /// `m` must be flushed ([`Moments::flush`]).
    #[track_caller]
    pub fn fit(&self, m: &Moments) -> Result<RidgeSolution> {
        self.solve(Normal::from_moments(m, self.fit_intercept)?)
    }

    /// The model of [`RidgeValidParams::fit`] (the same bits), without its
    /// diagnostics. Where the trace of `A` proves `κ(A + αI)` small, the
    /// condition estimate, which would only confirm that no fallback is
    /// needed, is skipped: `A` is a Gram matrix, so `0 ≤ λ ≤ tr A` up to
    /// its rounding error `ε`, and `κ ≤ (tr A + 2ε + α)/(α − ε)`; where
    /// that is at most half of `1/rcond`, the estimate (a lower bound of
    /// `κ`) could not have called for the fallback, and `A` is then
    /// factored in place: memory is `m`'s statistics plus one `l²` buffer,
    /// where [`RidgeValidParams::fit`] needs two.
    ///
    /// # Errors
    /// As [`RidgeValidParams::fit`].
    ///
    /// # Panics
    /// `m` must be flushed.
    #[track_caller]
    pub fn fit_model(&self, m: &Moments) -> Result<RidgeModel> {
        let mut nrm = Normal::from_moments(m, self.fit_intercept)?;
        let bound = trace_condition_bound(m, &nrm.a, self.alpha);
        let rcond = self.rcond(nrm.a.nrows());
        if bound_proves(bound, rcond) {
            // Proved well conditioned: no estimate, no fallback, so `A` is
            // not needed after its factor, which can take its place.
            if let Some(coef) = solve_proved_in_place(&mut nrm.a, nrm.b.view(), self.alpha) {
                return Ok(nrm.model(coef));
            }
            // Rounding beat the bound: the statistics again, the whole path.
            nrm = Normal::from_moments(m, self.fit_intercept)?;
        }
        let (coef, _) = solve_shifted_bounded(nrm.a.view(), nrm.b.view(), self.alpha, self.fallback, rcond, bound)?;
        Ok(nrm.model(coef))
    }

    /// Fits from centred statistics (see [`Moments::centered`]). Without an
    /// intercept the uncentred statistics are rebuilt first.
    ///
    /// Cost: as [`RidgeValidParams::fit`].
    ///
    /// # Errors
    /// As [`RidgeValidParams::fit`], plus [`SolveError::DimensionMismatch`]
    /// if the parts of `c` disagree in shape.
    pub fn fit_centered(&self, c: &CenteredMoments) -> Result<RidgeSolution> {
        self.solve(Normal::from_centered(c, self.fit_intercept)?)
    }

    /// The same parameters with penalty `alpha` (already checked by the caller).
    pub(crate) fn at_alpha(&self, alpha: f64) -> RidgeValidParams {
        RidgeValidParams { alpha, ..self.clone() }
    }

    pub(crate) fn solve(&self, nrm: Normal) -> Result<RidgeSolution> {
        let rcond = self.rcond(nrm.a.nrows());
        let (coef, info) = solve_shifted(nrm.a.view(), nrm.b.view(), self.alpha, self.fallback, rcond)?;
        Ok(RidgeSolution { model: nrm.model(coef), info })
    }
}

/// A fitted ridge model and the diagnostics of its solve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RidgeSolution {
    /// The model.
    pub model: RidgeModel,
    /// How the system was solved.
    pub info: SolveInfo,
}

/// A linear model `ŷ = Wᵀz + b` over `l` features and `k` targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RidgeModel {
    /// Coefficients `W`, shape `(l, k)` = `(n_features, n_targets)`.
    pub coef: Array2<f64>,
    /// Intercepts `b`, length `k`.
    pub intercept: Array1<f64>,
}

impl RidgeModel {
    /// A model from its parts.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] unless `intercept.len() == coef.ncols()`.
    pub fn new(coef: Array2<f64>, intercept: Array1<f64>) -> Result<Self> {
        check_dim("intercepts of the model", coef.ncols(), intercept.len())?;
        Ok(RidgeModel { coef, intercept })
    }

    /// Number of features `l`.
    pub fn n_features(&self) -> usize {
        self.coef.nrows()
    }

    /// Number of targets `k`.
    pub fn n_targets(&self) -> usize {
        self.coef.ncols()
    }

    fn check_self(&self) -> Result<()> {
        check_dim("intercepts of the model", self.coef.ncols(), self.intercept.len())
    }

    /// Predictions for dense rows `z (n_rows, l)`, shape `(n_rows, k)`.
    ///
    /// Cost: `2 n_rows l k` flops, single-threaded (the pipeline
    /// parallelises over chunks).
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] if `z` does not have `l` columns.
    pub fn predict(&self, z: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((z.nrows(), self.n_targets()));
        self.predict_into(z, out.view_mut())?;
        Ok(out)
    }

    /// Writes the predictions for `z (n_rows, l)` into `out (n_rows, k)`.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] on any shape mismatch.
    pub fn predict_into(&self, z: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) -> Result<()> {
        self.check_self()?;
        check_dim("feature columns of z", self.n_features(), z.ncols())?;
        check_dim("rows of the output", z.nrows(), out.nrows())?;
        check_dim("columns of the output", self.n_targets(), out.ncols())?;
        faer::linalg::matmul::matmul(
            as_faer_mut(out.view_mut()),
            Accum::Replace,
            as_faer(z),
            as_faer(self.coef.view()),
            1.0,
            Par::Seq,
        );
        out += &self.intercept.view().insert_axis(Axis(0));
        Ok(())
    }

    /// Predictions for sparse rows (see [`SparseRowsView`]), shape
    /// `(n_rows, k)`.
    ///
    /// Cost: `2 n_rows nnz k` flops, independent of `l`.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] if `z.n_cols != l`,
    /// [`SolveError::IndexOutOfRange`] for a stored index `≥ l`.
    pub fn predict_sparse(&self, z: SparseRowsView<'_>) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((z.n_rows(), self.n_targets()));
        self.predict_sparse_into(z, out.view_mut())?;
        Ok(out)
    }

    /// Writes the predictions for sparse rows into `out (n_rows, k)`.
    ///
    /// # Errors
    /// As [`RidgeModel::predict_sparse`], plus a mismatched `out`.
    pub fn predict_sparse_into(&self, z: SparseRowsView<'_>, mut out: ArrayViewMut2<'_, f64>) -> Result<()> {
        self.check_self()?;
        let l = self.n_features();
        check_dim("feature columns of z", l, z.n_cols)?;
        check_dim("rows of the sparse values", z.indices.nrows(), z.values.nrows())?;
        check_dim("entries per row of the sparse values", z.indices.ncols(), z.values.ncols())?;
        check_dim("rows of the output", z.n_rows(), out.nrows())?;
        check_dim("columns of the output", self.n_targets(), out.ncols())?;
        for ((idx, val), mut o) in z.indices.rows().into_iter().zip(z.values.rows()).zip(out.rows_mut()) {
            o.assign(&self.intercept);
            for (&j, &v) in idx.iter().zip(val.iter()) {
                let j = j as usize;
                if j >= l {
                    return Err(SolveError::IndexOutOfRange { index: j, n_cols: l });
                }
                o.scaled_add(v, &self.coef.row(j));
            }
        }
        Ok(())
    }
}

/// The normal equations of one ridge problem: `(A + αI) W = B`, with the
/// shifts that give the intercept `b = ȳ − Wᵀz̄` (zero without intercept).
#[derive(Clone, Debug)]
pub(crate) struct Normal {
    /// Symmetric `(l, l)`, column-major; only its lower triangle is read
    /// (the strict upper one may be zero).
    pub(crate) a: Array2<f64>,
    pub(crate) b: Array2<f64>,
    pub(crate) z_shift: Array1<f64>,
    pub(crate) y_shift: Array1<f64>,
}

/// An upper bound of `κ(A + αI)` for the normal equations' `A` built from
/// `m` (centred or not), or `None` where `α` is not well above `A`'s
/// rounding error.
///
/// `A` is a Gram matrix (of centred rows with an intercept), positive
/// semi-definite in exact arithmetic, so `0 ≤ λ ≤ tr(A)`. The computed `A`
/// differs from it by `E` with `‖E‖₂ ≤ ε = 4 γ (tr G + n‖z̄‖²)`, `G = ZᵀZ`
/// and `γ = n u / (1 − n u)` (each entry is a sum of `n` products, bounded
/// by `√(G_ii G_jj)`, then centred), hence
/// `κ(A + αI) ≤ (tr A + 2ε + α) / (α − ε)`. With RFF at `l = 4096` on 30 000
/// rows, `tr A ≈ 2·10⁴` and `ε ≈ 10⁻⁶`: `κ ≤ 10⁵` at `α = 0.3`, far below
/// `1/rcond ≈ 10¹²`.
pub(crate) fn trace_condition_bound(m: &Moments, a: &Array2<f64>, alpha: f64) -> Option<f64> {
    let n = m.n_samples();
    let u = f64::EPSILON / 2.0;
    let nu = n * u;
    // Also refuses a NaN row count.
    if nu.is_nan() || nu >= 0.5 {
        return None;
    }
    let gamma = nu / (1.0 - nu);
    let g = m.augmented_gram();
    let l = m.n_features();
    let tr_g: f64 = (0..l).map(|i| g[[i, i]]).sum();
    let z_mean_sq: f64 = m.z_sum().iter().map(|s| (s / n) * (s / n)).sum();
    let eps = 4.0 * gamma * (tr_g + n * z_mean_sq);
    let tr_a: f64 = (0..l).map(|i| a[[i, i]]).sum();
    let bound = (tr_a + 2.0 * eps + alpha) / (alpha - eps);
    (alpha > 2.0 * eps && bound.is_finite()).then_some(bound)
}

/// [`Normal`] with `A` in the band reduction's packed layout.
pub(crate) struct PackedNormal {
    pub(crate) a: PackedSymmetric,
    pub(crate) b: Array2<f64>,
    pub(crate) z_shift: Array1<f64>,
    pub(crate) y_shift: Array1<f64>,
}

/// The centring shifts `(z̄, ȳ)` with an intercept, zeros without.
fn shifts(m: &Moments, fit_intercept: bool) -> (Array1<f64>, Array1<f64>) {
    let n = m.n_samples();
    if fit_intercept {
        (m.z_sum() / n, m.y_sum() / n)
    } else {
        (Array1::zeros(m.n_features()), Array1::zeros(m.n_targets()))
    }
}

/// An entry of the centred Gram, `G_ij − n·(z̄ᵢ z̄ⱼ)`, as
/// `Moments::centered` computes it (the same bits), for every layout `A`
/// is written in.
#[inline(always)]
fn centred(g_ij: f64, n: f64, zi: f64, zj: f64) -> f64 {
    g_ij - n * (zi * zj)
}

/// `B = Zᵀy − n z̄ ȳᵀ` from `m`'s Gram, checked finite with `ȳ`.
fn rhs(m: &Moments, z_shift: &Array1<f64>, y_shift: &Array1<f64>) -> Result<Array2<f64>> {
    let (l, k, n) = (m.n_features(), m.n_targets(), m.n_samples());
    let g = m.augmented_gram();
    let b = Array2::from_shape_fn((l, k), |(i, t)| g[[l + 1 + t, i]] - n * (z_shift[i] * y_shift[t]));
    check_finite("the target statistics", b.iter().chain(y_shift.iter()))?;
    Ok(b)
}

impl Normal {
    /// The normal equations straight from `m`'s augmented Gram, in one
    /// pass over its lower triangle: the centring (with an intercept) and
    /// the finiteness check run as `A` is written, and only `A`'s lower
    /// triangle is written (every consumer reads that only), so no
    /// `(l, l)` temporary, symmetrisation or second pass.
    #[track_caller]
    pub(crate) fn from_moments(m: &Moments, fit_intercept: bool) -> Result<Normal> {
        let n = m.n_samples();
        if no_rows(n) {
            return Err(SolveError::NoRows);
        }
        let l = m.n_features();
        let g = m.augmented_gram();
        let (z_shift, y_shift) = shifts(m, fit_intercept);
        let mut a = kapprox_core::buffer::zeros((l, l), true);
        let zm = z_shift.as_slice().expect("contiguous");
        let mut finite = all_finite(zm);
        for j in 0..l {
            let src = g.slice(s![j..l, j]);
            let mut dst = a.slice_mut(s![j..l, j]);
            let (src, dst) = (src.as_slice().expect("column-major Gram"), dst.as_slice_mut().expect("column-major"));
            if fit_intercept {
                let zj = zm[j];
                for ((d, &s), &zi) in dst.iter_mut().zip(src).zip(&zm[j..]) {
                    *d = centred(s, n, zi, zj);
                }
            } else {
                dst.copy_from_slice(src);
            }
            finite &= all_finite(dst);
        }
        if !finite {
            return Err(SolveError::NonFinite { what: "the feature statistics" });
        }
        let b = rhs(m, &z_shift, &y_shift)?;
        Ok(Normal { a, b, z_shift, y_shift })
    }

    /// [`Normal::from_moments`] with `A` packed for the band reduction
    /// straight from `m`'s Gram: the same entries (the same bits), without
    /// the dense `A` in between, a fresh `l²` buffer that cost as much
    /// time as packing (the first write of its pages).
    #[track_caller]
    pub(crate) fn packed_from_moments(m: &Moments, fit_intercept: bool) -> Result<PackedNormal> {
        let n = m.n_samples();
        if no_rows(n) {
            return Err(SolveError::NoRows);
        }
        let g = m.augmented_gram();
        let (z_shift, y_shift) = shifts(m, fit_intercept);
        let zm = z_shift.as_slice().expect("contiguous");
        let a = if fit_intercept {
            PackedSymmetric::from_lower_fn(Simd::detect(), m.n_features(), |i, j| centred(g[[i, j]], n, zm[i], zm[j]))
        } else {
            PackedSymmetric::from_lower_fn(Simd::detect(), m.n_features(), |i, j| g[[i, j]])
        };
        if !(all_finite(zm) && a.is_finite()) {
            return Err(SolveError::NonFinite { what: "the feature statistics" });
        }
        let b = rhs(m, &z_shift, &y_shift)?;
        Ok(PackedNormal { a, b, z_shift, y_shift })
    }

    pub(crate) fn from_centered(c: &CenteredMoments, fit_intercept: bool) -> Result<Normal> {
        let l = c.a.nrows();
        let k = c.b.ncols();
        check_dim("columns of the centred A", l, c.a.ncols())?;
        check_dim("rows of the centred B", l, c.b.nrows())?;
        check_dim("length of the feature means", l, c.z_mean.len())?;
        check_dim("length of the target means", k, c.y_mean.len())?;
        if no_rows(c.n_samples) {
            return Err(SolveError::NoRows);
        }
        check_finite("the feature statistics", c.a.iter().chain(c.z_mean.iter()))?;
        check_finite("the target statistics", c.b.iter().chain(c.y_mean.iter()))?;
        if fit_intercept {
            return Ok(Normal { a: c.a.clone(), b: c.b.clone(), z_shift: c.z_mean.clone(), y_shift: c.y_mean.clone() });
        }
        let n = c.n_samples;
        let zm = c.z_mean.view().insert_axis(Axis(1));
        let ym = c.y_mean.view().insert_axis(Axis(1));
        let mut a = c.a.clone();
        let mut b = c.b.clone();
        a.scaled_add(n, &zm.dot(&zm.t()));
        b.scaled_add(n, &zm.dot(&ym.t()));
        Ok(Normal { a, b, z_shift: Array1::zeros(l), y_shift: Array1::zeros(k) })
    }

    /// The model with coefficients `coef` and the matching intercept.
    pub(crate) fn model(&self, coef: Array2<f64>) -> RidgeModel {
        let intercept = &self.y_shift - &coef.t().dot(&self.z_shift);
        RidgeModel { coef, intercept }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statistics of 40 rows of 7 features shifted by `offset`, 2 targets.
    fn statistics(offset: f64) -> Moments {
        let z = Array2::from_shape_fn((40, 7), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 5.0 - 1.0 + offset);
        let y = Array2::from_shape_fn((40, 2), |(i, t)| (i % 5) as f64 - t as f64);
        let mut m = Moments::new(7, 2);
        m.update(z.view(), y.view());
        m.flush();
        m
    }

    #[test]
    fn the_packed_normal_equations_are_the_dense_ones_bit_for_bit() {
        let m = statistics(2.5);
        for intercept in [true, false] {
            let (dense, packed) =
                (Normal::from_moments(&m, intercept).unwrap(), Normal::packed_from_moments(&m, intercept).unwrap());
            let want = PackedSymmetric::from_lower(dense.a.view());
            let l = m.n_features();
            assert!((0..l).all(|i| (0..l).all(|j| packed.a.get(i, j).to_bits() == want.get(i, j).to_bits())));
            assert_eq!((&packed.b, &packed.z_shift, &packed.y_shift), (&dense.b, &dense.z_shift, &dense.y_shift));
        }
        // Statistics that overflow are refused as the dense path refuses them.
        let huge = statistics(1e160);
        for build in [
            |m: &Moments| Normal::from_moments(m, true).err(),
            |m: &Moments| Normal::packed_from_moments(m, true).err(),
        ] {
            assert!(matches!(build(&huge), Some(SolveError::NonFinite { what: "the feature statistics" })));
        }
    }

    #[test]
    fn the_trace_bound_holds_and_the_model_alone_is_the_fitted_model() {
        let m = statistics(2.5);
        for intercept in [true, false] {
            let a = Normal::from_moments(&m, intercept).unwrap().a;
            let sym = Array2::from_shape_fn(a.raw_dim(), |(i, j)| a[[i.max(j), i.min(j)]]);
            let lambda = crate::solver::eigh(sym.view()).unwrap().lambda;
            let (lo, hi) = (lambda[0], lambda[lambda.len() - 1]);
            for alpha in [1e-6, 0.1, 30.0] {
                let bound = trace_condition_bound(&m, &a, alpha).expect("α well above rounding");
                let kappa = (hi + alpha) / (lo + alpha);
                // Above κ, and no looser than the trace over α (with rounding's margin).
                let trace_over_alpha = (a.diag().sum() + alpha) / alpha;
                assert!(
                    bound >= kappa && bound <= trace_over_alpha * (1.0 + 1e-3),
                    "intercept {intercept}, α {alpha}: {bound} vs κ {kappa}"
                );
                let p = Ridge::params().with_alpha(alpha).with_fit_intercept(intercept).check().unwrap();
                assert_eq!(p.fit_model(&m).unwrap(), p.fit(&m).unwrap().model);
            }
            // No penalty: nothing proved, and the estimate decides as in `fit`.
            assert_eq!(trace_condition_bound(&m, &a, 0.0), None);
        }
        // A singular system at a tiny α is refused alike.
        let p = Ridge::params().with_alpha(1e-300).with_fallback(Fallback::Error).check().unwrap();
        let z = Array2::from_shape_fn((30, 5), |(i, j)| if j >= 3 { i as f64 } else { ((i * (j + 2)) % 7) as f64 });
        let mut dup = Moments::new(5, 1);
        dup.update(z.view(), Array2::from_shape_fn((30, 1), |(i, _)| (i % 4) as f64).view());
        dup.flush();
        assert_eq!(p.fit_model(&dup).unwrap_err(), p.fit(&dup).unwrap_err());
    }
}
