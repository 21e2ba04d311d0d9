//! The ridge α path: one orthogonal reduction to band form serves every α.

use crate::band::{BandReduction, band_matvec};
use crate::band_cholesky::BandCholesky;
use crate::error::{Result, SolveError, check_alpha, check_dim, check_finite, lower_is_finite, no_rows};
use crate::ridge::{Normal, PackedNormal, RidgeModel, RidgeSolution, RidgeValidParams, check_rcond, default_rcond};
use crate::select::SelectionReport;
use crate::solver::{
    COND_ITERS, Eigh, SolveInfo, SolveMethod, eigh, mul, normalize, par, pinv_weights, start_vector, symmetric_mul,
};
use kapprox_core::dense::as_faer;
use kapprox_core::gram::PackedSymmetric;
use kapprox_core::{CenteredMoments, Moments};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ShapeBuilder, s};
use rayon::prelude::*;
use std::sync::OnceLock;

/// Ridge solutions for many penalties from one orthogonal reduction.
///
/// With `A = Q B Qᵀ` (the centred `A` when an intercept is fitted; `Q`
/// orthogonal, `B` banded, see below), `W(α) = Q (B + αI)⁻¹ Qᵀ B_y` for
/// every `α`, and `B + αI` is factored by a band Cholesky in `l·b²` flops
/// ([`SolveMethod::BandCholesky`]). Where that fails or a condition
/// estimate exceeds `1/rcond`, the α falls back to the pseudo-inverse of
/// the eigendecomposition of `B` (computed once, on first need):
/// directions with `λᵢ + α ≤ rcond · (λ_max + α)` are dropped, so `α = 0`
/// on a singular `A` gives the minimum-norm least-squares solution.
///
/// # Cost, and why a band reduction
///
/// For `l` features, `k` targets and a grid of `g` penalties (`b` the
/// half-bandwidth: 64 up to `l = 4095`, then growing to 256 at `l = 8192`,
/// see `band::band_width`), in flops:
///
/// | method | once | per α | `l = 8192, k = 1, g = 17` |
/// | --- | --- | --- | --- |
/// | eigendecomposition (faer; this path until issue 15) | `≈ 9 l³`, a third of it matrix–vector bound | `4 l² k` | `≈ 4.9e12` |
/// | one Cholesky per α | — | `l³/3 + 2 l² k` | `≈ 3.1e12` |
/// | tridiagonal reduction (one stage) | `4/3 l³`, half of it matrix–vector bound | `O(l k) + 4 l² k` | `≈ 0.75e12`, memory bound |
/// | Cholesky at a few α, CG for the rest | `c · l³/3` | `iters · 2 l² g k`, memory bound | `≥ 0.55e12` for `c = 3`, to a tolerance only |
/// | **band reduction (this)** | `4/3 l³`, all matrix–matrix | `l b² + 4 l b k + 8 l² k` | `≈ 0.75e12` |
///
/// The band reduction (the first stage of two-stage symmetric
/// eigensolvers, LAPACK's `sytrd_sy2sb`) has the tridiagonal reduction's
/// flops, but as a panel QR plus a symmetric rank-`2b` update per panel,
/// which run in the Gram kernel (`kapprox_core::gram`) on every core where
/// the one-stage reduction waits on memory: the working matrix is kept
/// symmetric in the kernel's packed layout (`PackedSymmetric`), so `A₂₂V`
/// is one kernel product and the update computes the lower triangle and
/// writes both. It is exact, as backward stable as a Cholesky per α, needs no
/// iteration tolerance, and is deterministic. Measured on one core (in CPU
/// time, so other load does not count): the reduction costs 4.8–5.0
/// Choleskys at `l = 2048..3072`, so a 17-point grid costs about 5
/// Choleskys instead of 17 (or ≈ 18 for the eigendecomposition at
/// `l = 2048`, more at larger `l`); the per-α band Cholesky is 1–4 % of
/// one dense Cholesky.
///
/// Where the time goes (hold-out selection over 17 α plus the refit on
/// all rows, `l = 4096`, one target, 2-core AVX2 machine with other load;
/// scratch timings of one run): the reduction 1.9 s — the rank-`2b`
/// updates 0.73 s (≈ 63 GFLOP/s), `A₂₂V` 0.62 s (≈ 74 GFLOP/s), the panel
/// QRs 0.09 s, packing the working matrix and the panels' operands
/// ≈ 0.2 s, the panels' small products ≈ 0.1 s; all 17 band Choleskys and
/// solves 0.05 s; `Q` applied to the grid's coefficients 0.03 s; the
/// held-out products 0.03 s. The refit 0.63 s: its Cholesky 0.34 s, the
/// condition estimate 0.13 s (memory bound), copies 0.11 s. The condition
/// estimate of every α comes from one approximate eigenvector of `B`'s
/// smallest eigenvalue (no work per α). Since then (scratch timers in a
/// `kapprox fit`, RFF `l = 4096` on 30 000 rows): the working matrix is
/// packed straight from the moments (`Normal::packed_from_moments`; the
/// dense centred `A` in between took 0.11–0.15 s, a fresh 134 MB), the
/// held-out Gram is borrowed ([`HeldOut`]; its copy took 0.11–0.15 s), and
/// `kapprox fit`'s refit skips the condition estimate where the trace
/// bound proves the system well conditioned
/// ([`RidgeValidParams::fit_model`](crate::RidgeValidParams::fit_model);
/// 0.15–0.2 s). Later (scratch timers around `holdout` and the refit,
/// statistics of `2l + 500` RFF rows): the update's write-back prefetches
/// its tiles' lines, which lie a panel apart (rank-`2b` updates
/// 0.83–1.00 → 0.73–0.75 s at `l = 4096`, 7.41 → 6.14 s at 8192); each
/// panel's QR runs beside the previous panel's update (look-ahead; the
/// selection's medians 2.50 → 2.27 s at 4096 over six runs each, within
/// noise at 8192, where the update is bound by memory traffic); the
/// refit factors `A` in place (0.62–0.66 → 0.45–0.55 s at 4096). At
/// `l = 8192`: `A₂₂V` 5.8–6.6 s and the updates 6.1–7.0 s (60–65
/// GFLOP/s), QRs 0.95 s, the panels' small products 0.8 s, the rest
/// (packing, the 17 α, `Q`) about 0.9 s; the refit 3.7–4.1 s (its trailing
/// updates 2.4–2.6 s).
///
/// Per call: construction `4/3 l³ + 4 l² k`; [`coef`](AlphaPath::coef)
/// `l b² + 4 l b k + 4 l² k`; a whole grid in [`select`](AlphaPath::select)
/// `g (l b² + 4 l b k) + 4 l² g k` plus `2 l² g k` for the held-out Gram;
/// the eigen fallback `≈ 9 l³` once. Memory `l² + l (b + 1) + 2 l k`
/// doubles (`3 l²` more if the fallback runs).
#[derive(Clone, Debug)]
pub struct AlphaPath {
    reduction: BandReduction,
    /// `Qᵀ B_y`, `(l, k)`.
    qtb: Array2<f64>,
    /// A lower bound on `λ_max(A)` (power iteration on `B`).
    lambda_max: f64,
    /// An upper bound on `λ_min(A)`: the Rayleigh quotient of an
    /// approximate eigenvector of it (see [`smallest_rayleigh`]).
    lambda_min: f64,
    /// The eigendecomposition of `B`, on first need.
    eig: OnceLock<std::result::Result<Eigh, SolveError>>,
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
        Self::from_moments_rcond(m, fit_intercept, None)
    }

    /// [`AlphaPath::from_moments`] with `rcond` (default `l · ε`): the
    /// working matrix of the reduction is packed straight from `m`'s Gram.
    #[track_caller]
    pub(crate) fn from_moments_rcond(m: &Moments, fit_intercept: bool, rcond: Option<f64>) -> Result<Self> {
        Self::from_packed(Normal::packed_from_moments(m, fit_intercept)?, rcond)
    }

    fn from_normal(nrm: Normal, rcond: Option<f64>) -> Result<Self> {
        let Normal { a, b, z_shift, y_shift } = nrm;
        let a = PackedSymmetric::from_lower(a.view());
        Self::from_packed(PackedNormal { a, b, z_shift, y_shift }, rcond)
    }

    fn from_packed(nrm: PackedNormal, rcond: Option<f64>) -> Result<Self> {
        let rcond = match rcond {
            Some(r) => check_rcond(r)?,
            None => default_rcond(nrm.a.dim()),
        };
        let reduction = BandReduction::new(nrm.a, par());
        let mut qtb = Array2::zeros(nrm.b.raw_dim().f());
        qtb.assign(&nrm.b);
        reduction.apply_qt(qtb.view_mut(), par());
        let lambda_max = power_iteration(reduction.band());
        let lambda_min = smallest_rayleigh(reduction.band(), lambda_max);
        Ok(AlphaPath {
            reduction,
            qtb,
            lambda_max,
            lambda_min,
            eig: OnceLock::new(),
            z_shift: nrm.z_shift,
            y_shift: nrm.y_shift,
            rcond,
        })
    }

    /// Number of features `l`.
    pub fn n_features(&self) -> usize {
        self.qtb.nrows()
    }

    /// Number of targets `k`.
    pub fn n_targets(&self) -> usize {
        self.qtb.ncols()
    }

    /// The half-bandwidth `b` of the reduced matrix: each α's band
    /// Cholesky costs `l b²` flops.
    pub fn half_bandwidth(&self) -> usize {
        self.reduction.band().ncols() - 1
    }

    /// The eigenvalues of `A`, ascending.
    ///
    /// Cost: an eigendecomposition of the band matrix (`≈ 9 l³` flops) on
    /// the first call (or after an α fell back to it); free afterwards.
    ///
    /// # Errors
    /// [`SolveError::NoConvergence`] from the eigensolver.
    pub fn eigenvalues(&self) -> Result<ArrayView1<'_, f64>> {
        Ok(self.eig()?.lambda.view())
    }

    fn eig(&self) -> Result<&Eigh> {
        self.eig.get_or_init(|| eigh(self.reduction.dense_band().view())).as_ref().map_err(Clone::clone)
    }

    /// The relative eigenvalue cut-off in use.
    pub fn rcond(&self) -> f64 {
        self.rcond
    }

    /// The coefficients `W(α)`, shape `(l, k)`.
    ///
    /// Cost: `l b² + 4 l b k + 4 l² k` flops (`b` the half-bandwidth).
    ///
    /// # Errors
    /// [`SolveError::InvalidAlpha`] for a negative or non-finite `α`;
    /// [`SolveError::NoConvergence`] if the eigen fallback is needed and
    /// fails.
    pub fn coef(&self, alpha: f64) -> Result<Array2<f64>> {
        Ok(self.coef_info(alpha)?.0)
    }

    fn coef_info(&self, alpha: f64) -> Result<(Array2<f64>, SolveInfo)> {
        let (mut y, info) = self.reduced_solve(alpha)?;
        self.reduction.apply_q(y.view_mut(), par());
        Ok((y, info))
    }

    /// `(B + αI)⁻¹ Qᵀ B_y` (the coefficients in the reduced basis) by the
    /// band Cholesky, or by the pseudo-inverse when the band Cholesky fails
    /// or its condition estimate exceeds `1/rcond`.
    fn reduced_solve(&self, alpha: f64) -> Result<(Array2<f64>, SolveInfo)> {
        check_alpha(alpha)?;
        match self.band_solve(alpha) {
            Some(solved) => Ok(solved),
            None => self.eigen_solve(alpha),
        }
    }

    /// [`AlphaPath::reduced_solve`] by the band Cholesky, or `None` where
    /// it fails or is too ill-conditioned (`alpha` already checked).
    fn band_solve(&self, alpha: f64) -> Option<(Array2<f64>, SolveInfo)> {
        let l = self.n_features();
        if let Ok(ch) = BandCholesky::new(self.reduction.band(), alpha) {
            // λ_max(B) + α over an upper bound of λ_min(B) + α: a lower
            // bound of cond(B + αI), with no work per α.
            let denom = self.lambda_min + alpha;
            let cond = match l {
                0 => 1.0,
                _ if denom > 0.0 => ((self.lambda_max.max(0.0) + alpha) / denom).max(1.0),
                _ => f64::INFINITY,
            };
            if cond <= 1.0 / self.rcond {
                let mut y = Array2::zeros(self.qtb.raw_dim().f());
                y.assign(&self.qtb);
                ch.solve_in_place(y.view_mut());
                let info = SolveInfo {
                    method: SolveMethod::BandCholesky,
                    jitter_added: 0.0,
                    condition_estimate: cond,
                    rank: l,
                };
                return Some((y, info));
            }
        }
        None
    }

    /// [`AlphaPath::reduced_solve`] by the pseudo-inverse of `B`'s
    /// eigendecomposition (computed on first need).
    fn eigen_solve(&self, alpha: f64) -> Result<(Array2<f64>, SolveInfo)> {
        let e = self.eig()?;
        let (d, rank, cond) = pinv_weights(&e.lambda, alpha, self.rcond);
        let mut utb = mul(e.u.as_ref().transpose(), as_faer(self.qtb.view()));
        for (mut row, &di) in utb.rows_mut().into_iter().zip(d.iter()) {
            row *= di;
        }
        let y = mul(e.u.as_ref(), as_faer(utb.view()));
        Ok((y, SolveInfo { method: SolveMethod::Eigen, jitter_added: 0.0, condition_estimate: cond, rank }))
    }

    /// The coefficients of every α of `alphas`, side by side: columns
    /// `i·k .. (i+1)·k` belong to `alphas[i]`. One application of `Q` for
    /// the whole grid.
    fn coef_grid(&self, alphas: &[f64]) -> Result<Array2<f64>> {
        let (l, k) = (self.n_features(), self.n_targets());
        let mut all = Array2::zeros((l, alphas.len() * k).f());
        for &alpha in alphas {
            check_alpha(alpha)?;
        }
        // The band solves of different α are independent (each on one
        // thread, so the bits do not depend on the thread count). The eigen
        // fallback runs afterwards, on the calling thread: its first use
        // computes the decomposition, on the whole pool.
        let banded: Vec<_> = alphas.par_iter().map(|&alpha| self.band_solve(alpha)).collect();
        for (i, (solved, &alpha)) in banded.into_iter().zip(alphas).enumerate() {
            let (y, _) = match solved {
                Some(solved) => solved,
                None => self.eigen_solve(alpha)?,
            };
            all.slice_mut(s![.., i * k..(i + 1) * k]).assign(&y);
        }
        self.reduction.apply_q(all.view_mut(), par());
        Ok(all)
    }

    fn model_from_coef(&self, coef: Array2<f64>) -> RidgeModel {
        let intercept = &self.y_shift - &coef.t().dot(&self.z_shift);
        RidgeModel { coef, intercept }
    }

    /// The model at `α`, with its intercept.
    ///
    /// # Errors
    /// As [`AlphaPath::coef`].
    pub fn model(&self, alpha: f64) -> Result<RidgeModel> {
        Ok(self.solution(alpha)?.model)
    }

    /// The model at `α` and the diagnostics (the method, a condition
    /// estimate of `A + αI`, and for the eigen fallback the rank kept and
    /// the exact condition number of the kept part).
    ///
    /// # Errors
    /// As [`AlphaPath::coef`].
    pub fn solution(&self, alpha: f64) -> Result<RidgeSolution> {
        let (coef, info) = self.coef_info(alpha)?;
        Ok(RidgeSolution { model: self.model_from_coef(coef), info })
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
    ///
    /// Cost: one band solve per α, one application of `Q` and one product
    /// with the held-out Gram for the whole grid.
    pub(crate) fn sse_curve(&self, h: &HeldOut<'_>, alphas: &[f64]) -> Result<Array2<f64>> {
        let k = self.n_targets();
        let all = self.coef_grid(alphas)?;
        let g_all = h.gram_times(all.view())?;
        let mut out = Array2::zeros((alphas.len(), k));
        for i in 0..alphas.len() {
            let cols = s![.., i * k..(i + 1) * k];
            let model = self.model_from_coef(all.slice(cols).to_owned());
            out.row_mut(i).assign(&h.sse_given(&model, g_all.slice(cols))?);
        }
        Ok(out)
    }
}

/// A lower bound on the largest eigenvalue of the band matrix (power
/// iteration from a fixed start).
fn power_iteration(band: ArrayView2<'_, f64>) -> f64 {
    let n = band.nrows();
    if n == 0 {
        return 0.0;
    }
    let mut v = start_vector(n);
    let mut w = Array2::zeros((n, 1));
    let mut lambda: f64 = 0.0;
    for _ in 0..COND_ITERS {
        band_matvec(band, v.view(), w.view_mut());
        lambda = lambda.max((&w * &v).sum());
        if normalize(&mut w) == 0.0 {
            break;
        }
        std::mem::swap(&mut v, &mut w);
    }
    lambda
}

/// The Rayleigh quotient `vᵀBv ≥ λ_min(B)` of a unit vector `v` close to
/// the eigenvector of `B`'s smallest eigenvalue: inverse iteration with
/// the band Cholesky of `B + sI` at the smallest shift
/// `s = λ_max · 10^(2j − 12)`, `j = 0..6`, that factors (the start vector
/// itself if none does). `B + αI` has the same eigenvectors for every α,
/// so this one vector serves the condition estimate of the whole path;
/// the convergence ratio `(λ₁ + s)/(λ₂ + s)` is best at the smallest shift.
///
/// Cost: `COND_ITERS · 4 l b` flops plus at most seven band Choleskys.
fn smallest_rayleigh(band: ArrayView2<'_, f64>, lambda_max: f64) -> f64 {
    let n = band.nrows();
    if n == 0 {
        return 0.0;
    }
    let scale = if lambda_max > 0.0 { lambda_max } else { 1.0 };
    let mut v = start_vector(n);
    if let Some(ch) = (0..7).find_map(|j| BandCholesky::new(band, scale * 10f64.powi(2 * j - 12)).ok()) {
        for _ in 0..COND_ITERS {
            let mut w = v.clone();
            ch.solve_in_place(w.view_mut());
            if !(normalize(&mut w) > 0.0 && w.iter().all(|x| x.is_finite())) {
                break;
            }
            v = w;
        }
    }
    let mut bv = Array2::zeros((n, 1));
    band_matvec(band, v.view(), bv.view_mut());
    (&bv * &v).sum()
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
        AlphaPath::from_moments_rcond(m, self.fit_intercept(), Some(self.rcond(m.n_features())))
    }
}

/// Uncentred statistics of a held-out part: `G = ZᵀZ`, `s = Σz`,
/// `ZᵀY`, `Σy`, the diagonal of `YᵀY` and `n`.
///
/// `G` is borrowed from the part's [`Moments`]: an `l × l` copy would cost
/// more than every product with it (at `l = 4096`, a fresh 134 MB).
#[derive(Clone, Debug)]
pub struct HeldOut<'a> {
    /// `G`: the lower triangle of the part's column-major Gram (products
    /// with it read that only).
    g: ArrayView2<'a, f64>,
    s: Array1<f64>,
    zy: Array2<f64>,
    y_sum: Array1<f64>,
    yy_diag: Array1<f64>,
    n: f64,
}

impl<'a> HeldOut<'a> {
    /// The statistics of `m`: its Gram borrowed, the small ones copied.
    ///
    /// # Errors
    /// [`SolveError::NonFinite`] if they hold NaN or infinities.
    ///
    /// # Panics
    /// `m` must be flushed.
    #[track_caller]
    pub fn new(m: &'a Moments) -> Result<Self> {
        let l = m.n_features();
        let g = m.augmented_gram().slice_move(s![..l, ..l]);
        if !lower_is_finite(g) {
            return Err(SolveError::NonFinite { what: "the held-out statistics" });
        }
        let yy = m.yy();
        let h =
            HeldOut { g, s: m.z_sum(), zy: m.zy(), y_sum: m.y_sum(), yy_diag: yy.diag().to_owned(), n: m.n_samples() };
        check_finite(
            "the held-out statistics",
            h.s.iter().chain(h.zy.iter()).chain(h.y_sum.iter()).chain(h.yy_diag.iter()),
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
        check_dim("features of the model", self.g.nrows(), model.n_features())?;
        let gw = symmetric_mul(self.g, model.coef.view());
        self.sse_given(model, gw.view())
    }

    /// `(ZᵀZ) W` for coefficient columns `w (l, c)`: one product for a
    /// whole α grid.
    pub(crate) fn gram_times(&self, w: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check_dim("features of the coefficients", self.g.nrows(), w.nrows())?;
        Ok(symmetric_mul(self.g, w))
    }

    /// [`HeldOut::sse`] given `gw = (ZᵀZ) W`.
    fn sse_given(&self, model: &RidgeModel, gw: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        let (l, k) = (self.g.nrows(), self.zy.ncols());
        check_dim("features of the model", l, model.n_features())?;
        check_dim("targets of the model", k, model.n_targets())?;
        check_dim("intercepts of the model", k, model.intercept.len())?;
        let w = &model.coef;
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
