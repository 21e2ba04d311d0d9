//! The ridge α path: one eigendecomposition serves every α.

use crate::error::{Result, SolveError, check_alpha, check_dim, check_finite, no_rows};
use crate::ridge::{Normal, RidgeModel, RidgeSolution, RidgeValidParams, check_rcond, default_rcond};
use crate::select::SelectionReport;
use crate::solver::{Eigh, SolveInfo, SolveMethod, apply_weights, eigh, mul, pinv_weights};
use kapprox_core::dense::as_faer;
use kapprox_core::{CenteredMoments, Moments};
use ndarray::{Array1, Array2, ArrayView1};

/// Ridge solutions for many penalties from one symmetric eigendecomposition.
///
/// With `A = U Λ Uᵀ` (the centred `A` when an intercept is fitted),
/// `W(α) = U (Λ + αI)⁻¹ Uᵀ B` for every `α`. Directions with
/// `λᵢ + α ≤ rcond · (λ_max + α)` are dropped (a pseudo-inverse), so `α = 0`
/// gives the minimum-norm least-squares solution.
///
/// Cost: construction `≈ 9 l³` flops (the eigendecomposition) and
/// `2 l² k`; each [`coef`](AlphaPath::coef) `2 l² k`; memory `2 l² + 2 l k`
/// doubles.
#[derive(Clone, Debug)]
pub struct AlphaPath {
    eig: Eigh,
    utb: Array2<f64>,
    z_shift: Array1<f64>,
    y_shift: Array1<f64>,
    rcond: f64,
}

impl AlphaPath {
    /// The path of the ridge problem with an intercept, from centred
    /// statistics, with the default `rcond = l · ε`.
    ///
    /// # Errors
    /// [`SolveError::NoRows`], [`SolveError::NonFinite`],
    /// [`SolveError::DimensionMismatch`] for inconsistent parts, and
    /// [`SolveError::NoConvergence`] from the eigensolver.
    pub fn new(c: &CenteredMoments) -> Result<Self> {
        Self::from_normal(Normal::from_centered(c, true)?, None)
    }

    /// The path from uncentred statistics, with or without an intercept,
    /// with the default `rcond = l · ε`.
    ///
    /// # Errors
    /// As [`AlphaPath::new`].
    ///
    /// # Panics
    /// `m` must be flushed ([`Moments::flush`]).
    #[track_caller]
    pub fn from_moments(m: &Moments, fit_intercept: bool) -> Result<Self> {
        Self::from_normal(Normal::from_moments(m, fit_intercept)?, None)
    }

    pub(crate) fn from_normal(nrm: Normal, rcond: Option<f64>) -> Result<Self> {
        let rcond = match rcond {
            Some(r) => check_rcond(r)?,
            None => default_rcond(nrm.a.nrows()),
        };
        let eig = eigh(nrm.a.view())?;
        let utb = mul(eig.u.as_ref().transpose(), as_faer(nrm.b.view()));
        Ok(AlphaPath { eig, utb, z_shift: nrm.z_shift, y_shift: nrm.y_shift, rcond })
    }

    /// Number of features `l`.
    pub fn n_features(&self) -> usize {
        self.utb.nrows()
    }

    /// Number of targets `k`.
    pub fn n_targets(&self) -> usize {
        self.utb.ncols()
    }

    /// The eigenvalues of `A`, ascending.
    pub fn eigenvalues(&self) -> ArrayView1<'_, f64> {
        self.eig.lambda.view()
    }

    /// The relative eigenvalue cut-off in use.
    pub fn rcond(&self) -> f64 {
        self.rcond
    }

    /// The coefficients `W(α)`, shape `(l, k)`.
    ///
    /// Cost: `2 l² k` flops.
    ///
    /// # Errors
    /// [`SolveError::InvalidAlpha`] for a negative or non-finite `α`.
    pub fn coef(&self, alpha: f64) -> Result<Array2<f64>> {
        Ok(self.coef_info(alpha)?.0)
    }

    fn coef_info(&self, alpha: f64) -> Result<(Array2<f64>, SolveInfo)> {
        check_alpha(alpha)?;
        let (d, rank, cond) = pinv_weights(&self.eig.lambda, alpha, self.rcond);
        let w = apply_weights(&self.eig.u, &self.utb, &d);
        let info = SolveInfo { method: SolveMethod::Eigen, jitter_added: 0.0, condition_estimate: cond, rank };
        Ok((w, info))
    }

    /// The model at `α`, with its intercept.
    ///
    /// # Errors
    /// As [`AlphaPath::coef`].
    pub fn model(&self, alpha: f64) -> Result<RidgeModel> {
        Ok(self.solution(alpha)?.model)
    }

    /// The model at `α` and the diagnostics (rank kept and the exact
    /// condition number of the kept part of `A + αI`).
    ///
    /// # Errors
    /// As [`AlphaPath::coef`].
    pub fn solution(&self, alpha: f64) -> Result<RidgeSolution> {
        let (coef, info) = self.coef_info(alpha)?;
        let intercept = &self.y_shift - &coef.t().dot(&self.z_shift);
        Ok(RidgeSolution { model: RidgeModel { coef, intercept }, info })
    }

    /// The validation sum of squared errors per target of the model at `α`
    /// on held-out statistics, without touching the held-out rows.
    ///
    /// See [`HeldOut::sse`] for the formula.
    ///
    /// Cost: `2 l² k` flops, plus copying the held-out statistics.
    ///
    /// # Errors
    /// [`SolveError::InvalidAlpha`]; [`SolveError::DimensionMismatch`] if
    /// `held_out` has other shapes than the training statistics.
    ///
    /// # Panics
    /// `held_out` must be flushed.
    #[track_caller]
    pub fn validation_sse(&self, alpha: f64, held_out: &Moments) -> Result<Array1<f64>> {
        let h = HeldOut::new(held_out)?;
        h.sse(&self.model(alpha)?)
    }

    /// [`AlphaPath::validation_sse`] divided by the number of held-out rows.
    ///
    /// # Errors
    /// As [`AlphaPath::validation_sse`], plus [`SolveError::NoRows`] for an
    /// empty held-out part.
    ///
    /// # Panics
    /// `held_out` must be flushed.
    #[track_caller]
    pub fn validation_mse(&self, alpha: f64, held_out: &Moments) -> Result<Array1<f64>> {
        let h = HeldOut::new(held_out)?;
        if no_rows(h.n) {
            return Err(SolveError::NoRows);
        }
        Ok(h.sse(&self.model(alpha)?)? / h.n)
    }

    /// Scores every `α` on the held-out statistics (a single "fold").
    ///
    /// Cost: `|alphas| · 4 l² k` flops.
    ///
    /// # Errors
    /// [`SolveError::EmptyGrid`], [`SolveError::InvalidAlpha`],
    /// [`SolveError::NoRows`] for an empty held-out part, shape mismatches.
    ///
    /// # Panics
    /// `held_out` must be flushed.
    #[track_caller]
    pub fn select(&self, held_out: &Moments, alphas: &[f64]) -> Result<SelectionReport> {
        let h = HeldOut::new(held_out)?;
        if no_rows(h.n) {
            return Err(SolveError::NoRows);
        }
        let sse = self.sse_curve(&h, alphas)?;
        SelectionReport::from_sse(alphas, vec![sse], vec![h.n], vec![h.y_square_sum()])
    }

    /// SSE of every α on `h`, shape `(n_alphas, k)`.
    pub(crate) fn sse_curve(&self, h: &HeldOut, alphas: &[f64]) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((alphas.len(), self.n_targets()));
        for (i, &alpha) in alphas.iter().enumerate() {
            out.row_mut(i).assign(&h.sse(&self.model(alpha)?)?);
        }
        Ok(out)
    }
}

impl RidgeValidParams {
    /// The α path of `m` with this parameter set's `fit_intercept` and
    /// `rcond` (`alpha` and `fallback` are not used).
    ///
    /// Cost: see [`AlphaPath`].
    ///
    /// # Errors
    /// As [`AlphaPath::new`].
    ///
    /// # Panics
    /// `m` must be flushed.
    #[track_caller]
    pub fn path(&self, m: &Moments) -> Result<AlphaPath> {
        let nrm = Normal::from_moments(m, self.fit_intercept())?;
        let l = nrm.a.nrows();
        AlphaPath::from_normal(nrm, Some(self.rcond(l)))
    }
}

/// Uncentred statistics of a held-out part: `G = ZᵀZ`, `s = Σz`,
/// `ZᵀY`, `Σy`, the diagonal of `YᵀY` and `n`.
#[derive(Clone, Debug)]
pub struct HeldOut {
    g: Array2<f64>,
    s: Array1<f64>,
    zy: Array2<f64>,
    y_sum: Array1<f64>,
    yy_diag: Array1<f64>,
    n: f64,
}

impl HeldOut {
    /// Copies the statistics out of `m`.
    ///
    /// # Errors
    /// [`SolveError::NonFinite`] if they hold NaN or infinities.
    ///
    /// # Panics
    /// `m` must be flushed.
    #[track_caller]
    pub fn new(m: &Moments) -> Result<Self> {
        let yy = m.yy();
        let h = HeldOut {
            g: m.zz(),
            s: m.z_sum(),
            zy: m.zy(),
            y_sum: m.y_sum(),
            yy_diag: yy.diag().to_owned(),
            n: m.n_samples(),
        };
        check_finite(
            "the held-out statistics",
            h.g.iter().chain(h.s.iter()).chain(h.zy.iter()).chain(h.y_sum.iter()).chain(h.yy_diag.iter()),
        )?;
        Ok(h)
    }

    /// Number of held-out rows.
    pub fn n_samples(&self) -> f64 {
        self.n
    }

    /// `Σ_t yₜᵀyₜ`, the squared norm of the held-out targets.
    pub fn y_square_sum(&self) -> f64 {
        self.yy_diag.sum()
    }

    /// The sum of squared errors per target of `model` on these rows.
    ///
    /// With residual `r = Z w + b·1 − y` for target `t`,
    ///
    /// `SSE = wᵀ(ZᵀZ)w + 2b·wᵀΣz − 2wᵀZᵀy − 2b·Σy + n b² + yᵀy`,
    ///
    /// clamped at 0 (rounding can make a perfect fit slightly negative).
    ///
    /// Cost: `2 l² k` flops.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] if the model has other shapes.
    pub fn sse(&self, model: &RidgeModel) -> Result<Array1<f64>> {
        let (l, k) = (self.g.nrows(), self.zy.ncols());
        check_dim("features of the model", l, model.n_features())?;
        check_dim("targets of the model", k, model.n_targets())?;
        check_dim("intercepts of the model", k, model.intercept.len())?;
        let w = &model.coef;
        let gw = mul(as_faer(self.g.view()), as_faer(w.view()));
        let ws = w.t().dot(&self.s);
        Ok(Array1::from_shape_fn(k, |t| {
            let wt = w.column(t);
            let b = model.intercept[t];
            let quad = wt.dot(&gw.column(t));
            let cross = wt.dot(&self.zy.column(t));
            let sse = quad + 2.0 * b * ws[t] - 2.0 * cross - 2.0 * b * self.y_sum[t] + self.n * b * b + self.yy_diag[t];
            sse.max(0.0)
        }))
    }
}
