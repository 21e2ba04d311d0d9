//! Exact kernel ridge regression for small `n`: the reference that the
//! approximations chase.
//!
//! Memory is quadratic in the number of training rows: the caller's kernel
//! matrix is `8 n²` bytes (3.2 GB at the default limit of 20 000 rows), a
//! Cholesky fit allocates another `n²` doubles and a path about `3 n²` (the
//! eigenvectors plus faer's workspace). [`ExactKrrParams::with_max_rows`]
//! turns larger problems into [`SolveError::TooManyRows`] before anything is
//! allocated.

use crate::error::{Result, SolveError, check_alpha, check_dim, check_finite};
use crate::ridge::{check_rcond, default_rcond};
use crate::select::SelectionReport;
use crate::solver::{Eigh, Fallback, SolveInfo, SolveMethod, eigh, mul, pinv_weights, solve_shifted};
use kapprox_core::dense::as_faer;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, s};
use serde::{Deserialize, Serialize};

/// Default of [`ExactKrrParams::with_max_rows`].
pub const DEFAULT_MAX_ROWS: usize = 20_000;

/// Entry point of exact kernel ridge regression: [`ExactKrr::params`].
#[derive(Clone, Copy, Debug)]
pub struct ExactKrr;

impl ExactKrr {
    /// Default parameters, to be adjusted and [checked](ExactKrrParams::check).
    pub fn params() -> ExactKrrParams {
        ExactKrrParams::new()
    }
}

/// Unchecked exact kernel ridge parameters.
///
/// With training kernel matrix `K (n, n)` and targets `y (n, k)`, the model
/// is `f(x) = Σᵢ cᵢ k(x, xᵢ) + b` with an unpenalised intercept:
///
/// `b = 1ᵀ(K + αI)⁻¹y / 1ᵀ(K + αI)⁻¹1`, `c = (K + αI)⁻¹(y − b·1)`.
///
/// For `K = ZZᵀ` this is exactly feature-space ridge
/// `‖Zw + b·1 − y‖² + α‖w‖²` with `w = Zᵀc` (the optimality conditions are
/// `(K + αI)c + b·1 = y` and `1ᵀc = 0`).
///
/// # Parameters
///
/// | Name | Default | Purpose | Range |
/// | --- | --- | --- | --- |
/// | `alpha` | `1.0` | penalty `α` | finite, `≥ 0` |
/// | `fit_intercept` | `true` | fit the unpenalised intercept `b` | `true`, `false` |
/// | `max_rows` | `20_000` ([`DEFAULT_MAX_ROWS`]) | refuse larger `n` (memory is `O(n²)`) | `≥ 1` |
/// | `fallback` | [`Fallback::Eigen`] | when Cholesky of `K + αI` fails or is ill-conditioned | [`Fallback`] |
/// | `rcond` | `n · ε` | relative eigenvalue cut-off; condition limit `1/rcond` | `(0, 1)` |
///
/// # Errors
///
/// [`check`](ExactKrrParams::check) returns [`SolveError::InvalidAlpha`] or
/// [`SolveError::InvalidParameter`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExactKrrParams(ExactKrrValidParams);

/// Checked exact kernel ridge parameters; see [`ExactKrrParams`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactKrrValidParams {
    alpha: f64,
    fit_intercept: bool,
    max_rows: usize,
    fallback: Fallback,
    rcond: Option<f64>,
}

impl Default for ExactKrrParams {
    fn default() -> Self {
        Self::new()
    }
}

impl ExactKrrParams {
    /// The defaults listed in the table of [`ExactKrrParams`].
    pub fn new() -> Self {
        ExactKrrParams(ExactKrrValidParams {
            alpha: 1.0,
            fit_intercept: true,
            max_rows: DEFAULT_MAX_ROWS,
            fallback: Fallback::Eigen,
            rcond: None,
        })
    }

    /// Sets the penalty `α`. Default: 1.0.
    pub fn with_alpha(mut self, alpha: f64) -> Self {
        self.0.alpha = alpha;
        self
    }

    /// Whether to fit an unpenalised intercept. Default: `true`.
    pub fn with_fit_intercept(mut self, fit_intercept: bool) -> Self {
        self.0.fit_intercept = fit_intercept;
        self
    }

    /// Sets the largest accepted number of training rows. Default:
    /// [`DEFAULT_MAX_ROWS`] (20 000, i.e. 3.2 GB per `n × n` matrix).
    pub fn with_max_rows(mut self, max_rows: usize) -> Self {
        self.0.max_rows = max_rows;
        self
    }

    /// Sets the fallback for a singular or ill-conditioned `K + αI`.
    /// Default: [`Fallback::Eigen`].
    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.0.fallback = fallback;
        self
    }

    /// Sets the relative eigenvalue cut-off. Default: `n · f64::EPSILON`.
    pub fn with_rcond(mut self, rcond: f64) -> Self {
        self.0.rcond = Some(rcond);
        self
    }

    /// Checks the parameters without consuming them.
    pub fn check_ref(&self) -> Result<&ExactKrrValidParams> {
        check_alpha(self.0.alpha)?;
        if let Some(r) = self.0.rcond {
            check_rcond(r)?;
        }
        if self.0.max_rows == 0 {
            return Err(SolveError::InvalidParameter { name: "max_rows", value: 0.0, expected: "at least 1" });
        }
        Ok(&self.0)
    }

    /// Checks the parameters.
    pub fn check(self) -> Result<ExactKrrValidParams> {
        self.check_ref()?;
        Ok(self.0)
    }
}

impl ExactKrrValidParams {
    /// The penalty `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether an intercept is fitted.
    pub fn fit_intercept(&self) -> bool {
        self.fit_intercept
    }

    /// The largest accepted number of training rows.
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    fn check_inputs(&self, k: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Result<()> {
        let n = k.nrows();
        if n > self.max_rows {
            return Err(SolveError::TooManyRows { n_rows: n, max_rows: self.max_rows });
        }
        check_dim("columns of the kernel matrix", n, k.ncols())?;
        check_dim("rows of y", n, y.nrows())?;
        if n == 0 {
            return Err(SolveError::NoRows);
        }
        check_finite("the kernel matrix", k.iter())?;
        check_finite("the targets", y.iter())
    }

    /// Fits at this parameter set's `α`: one Cholesky factorisation of
    /// `K + αI` solves for `y` and `1` together.
    ///
    /// `k` is the symmetric training kernel matrix `(n, n)`, `y` the
    /// targets `(n, k)`.
    ///
    /// Cost: `n³/3 + 2 n² (k + 1)` flops (about `9 n³` if the eigen
    /// fallback is taken); memory `n²` doubles besides `k`.
    ///
    /// # Errors
    /// [`SolveError::TooManyRows`], [`SolveError::NoRows`],
    /// [`SolveError::DimensionMismatch`], [`SolveError::NonFinite`],
    /// [`SolveError::SingularIntercept`], and the fallback's errors.
    pub fn fit(&self, k: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Result<KrrSolution> {
        self.check_inputs(k, y)?;
        let (n, t) = (y.nrows(), y.ncols());
        let rcond = self.rcond.unwrap_or_else(|| default_rcond(n));
        if !self.fit_intercept {
            let (c, info) = solve_shifted(k, y, self.alpha, self.fallback, rcond)?;
            return Ok(KrrSolution { model: KrrModel { dual_coef: c, intercept: Array1::zeros(t) }, info });
        }
        let mut rhs = Array2::ones((n, t + 1));
        rhs.slice_mut(s![.., 0..t]).assign(&y);
        let (x, info) = solve_shifted(k, rhs.view(), self.alpha, self.fallback, rcond)?;
        let x1 = x.column(t);
        let den = x1.sum();
        if den.is_nan() || den <= 0.0 {
            return Err(SolveError::SingularIntercept { alpha: self.alpha, denominator: den });
        }
        let xy = x.slice(s![.., 0..t]);
        let intercept = xy.sum_axis(Axis(0)) / den;
        let mut c = xy.to_owned();
        for (mut col, &b) in c.columns_mut().into_iter().zip(intercept.iter()) {
            col.scaled_add(-b, &x1);
        }
        Ok(KrrSolution { model: KrrModel { dual_coef: c, intercept }, info })
    }

    /// The α path: one eigendecomposition `K = U Λ Uᵀ` serves every α.
    ///
    /// Cost: about `9 n³` flops; memory about `3 n²` doubles besides `k`.
    ///
    /// # Errors
    /// As [`ExactKrrValidParams::fit`] (before any α is chosen), plus
    /// [`SolveError::NoConvergence`].
    pub fn path(&self, k: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Result<ExactKrrPath> {
        self.check_inputs(k, y)?;
        let n = k.nrows();
        let rcond = self.rcond.unwrap_or_else(|| default_rcond(n));
        let eig = eigh(k)?;
        let ut = eig.u.as_ref().transpose();
        let uty = mul(ut, as_faer(y));
        let ones = Array2::ones((n, 1));
        let ut1 = mul(ut, as_faer(ones.view())).column(0).to_owned();
        Ok(ExactKrrPath { eig, uty, ut1, fit_intercept: self.fit_intercept, rcond })
    }
}

/// A fitted exact kernel ridge model and its solve diagnostics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KrrSolution {
    /// The model.
    pub model: KrrModel,
    /// How `K + αI` was solved.
    pub info: SolveInfo,
}

/// An exact kernel ridge model `f(x) = Σᵢ cᵢ k(x, xᵢ) + b`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KrrModel {
    /// Dual coefficients `c`, shape `(n_train, k)`.
    pub dual_coef: Array2<f64>,
    /// Intercepts `b`, length `k`.
    pub intercept: Array1<f64>,
}

impl KrrModel {
    /// Number of training rows.
    pub fn n_train(&self) -> usize {
        self.dual_coef.nrows()
    }

    /// Number of targets.
    pub fn n_targets(&self) -> usize {
        self.dual_coef.ncols()
    }

    /// Predictions `K_test c + b` for `k_test (m, n_train)`, the kernel
    /// between test rows and training rows; shape `(m, k)`.
    ///
    /// Cost: `2 m n k` flops.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] if `k_test` does not have
    /// `n_train` columns.
    pub fn predict(&self, k_test: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check_dim("columns of the test kernel (training rows)", self.n_train(), k_test.ncols())?;
        check_dim("intercepts of the model", self.n_targets(), self.intercept.len())?;
        let mut p = mul(as_faer(k_test), as_faer(self.dual_coef.view()));
        p += &self.intercept.view().insert_axis(Axis(0));
        Ok(p)
    }
}

/// Exact kernel ridge solutions for many α from one eigendecomposition of
/// `K`; see [`ExactKrrValidParams::path`].
///
/// With `d = 1/(λ + α)` (dropping `λᵢ + α ≤ rcond · (λ_max + α)`),
/// `p = d ⊙ Uᵀ1`, `q = d ⊙ Uᵀy`: `b = (Uᵀ1)ᵀq / (Uᵀ1)ᵀp`,
/// `c = U (q − p bᵀ)`.
#[derive(Clone, Debug)]
pub struct ExactKrrPath {
    eig: Eigh,
    uty: Array2<f64>,
    ut1: Array1<f64>,
    fit_intercept: bool,
    rcond: f64,
}

impl ExactKrrPath {
    /// Number of training rows.
    pub fn n_rows(&self) -> usize {
        self.ut1.len()
    }

    /// Eigenvalues of `K`, ascending.
    pub fn eigenvalues(&self) -> ArrayView1<'_, f64> {
        self.eig.lambda.view()
    }

    /// The model at `α` and its diagnostics.
    ///
    /// Cost: `2 n² k` flops.
    ///
    /// # Errors
    /// [`SolveError::InvalidAlpha`], [`SolveError::SingularIntercept`].
    pub fn solution(&self, alpha: f64) -> Result<KrrSolution> {
        check_alpha(alpha)?;
        let (d, rank, cond) = pinv_weights(&self.eig.lambda, alpha, self.rcond);
        let mut v = self.uty.clone();
        for (mut row, &di) in v.rows_mut().into_iter().zip(d.iter()) {
            row *= di;
        }
        let t = v.ncols();
        let mut intercept = Array1::zeros(t);
        if self.fit_intercept {
            let p = &d * &self.ut1;
            let den = self.ut1.dot(&p);
            if den.is_nan() || den <= 0.0 {
                return Err(SolveError::SingularIntercept { alpha, denominator: den });
            }
            intercept = self.ut1.dot(&v) / den;
            for (mut col, &b) in v.columns_mut().into_iter().zip(intercept.iter()) {
                col.scaled_add(-b, &p);
            }
        }
        let dual_coef = mul(self.eig.u.as_ref(), as_faer(v.view()));
        let info = SolveInfo { method: SolveMethod::Eigen, jitter_added: 0.0, condition_estimate: cond, rank };
        Ok(KrrSolution { model: KrrModel { dual_coef, intercept }, info })
    }

    /// The model at `α`.
    ///
    /// # Errors
    /// As [`ExactKrrPath::solution`].
    pub fn model(&self, alpha: f64) -> Result<KrrModel> {
        Ok(self.solution(alpha)?.model)
    }

    /// The validation MSE per target at `α`, given the kernel between
    /// validation and training rows `k_val (m, n)` and `y_val (m, k)`.
    ///
    /// Cost: `2 n² k + 2 m n k` flops.
    ///
    /// # Errors
    /// As [`ExactKrrPath::solution`], plus shape mismatches and
    /// [`SolveError::NoRows`] for `m = 0`.
    pub fn validation_mse(
        &self,
        alpha: f64,
        k_val: ArrayView2<'_, f64>,
        y_val: ArrayView2<'_, f64>,
    ) -> Result<Array1<f64>> {
        Ok(self.validation_sse(alpha, k_val, y_val)? / k_val.nrows() as f64)
    }

    fn validation_sse(
        &self,
        alpha: f64,
        k_val: ArrayView2<'_, f64>,
        y_val: ArrayView2<'_, f64>,
    ) -> Result<Array1<f64>> {
        check_dim("rows of y_val", k_val.nrows(), y_val.nrows())?;
        check_dim("target columns of y_val", self.uty.ncols(), y_val.ncols())?;
        if k_val.nrows() == 0 {
            return Err(SolveError::NoRows);
        }
        let pred = self.model(alpha)?.predict(k_val)?;
        let r = pred - y_val;
        Ok(r.mapv(|v| v * v).sum_axis(Axis(0)))
    }

    /// Scores every α on a validation set (one fold).
    ///
    /// Cost: `|alphas| · (2 n² k + 2 m n k)` flops.
    ///
    /// # Errors
    /// As [`ExactKrrPath::validation_mse`], plus [`SolveError::EmptyGrid`].
    pub fn select(
        &self,
        k_val: ArrayView2<'_, f64>,
        y_val: ArrayView2<'_, f64>,
        alphas: &[f64],
    ) -> Result<SelectionReport> {
        if alphas.is_empty() {
            return Err(SolveError::EmptyGrid);
        }
        let mut sse = Array2::zeros((alphas.len(), self.uty.ncols()));
        for (i, &a) in alphas.iter().enumerate() {
            sse.row_mut(i).assign(&self.validation_sse(a, k_val, y_val)?);
        }
        let y_sq = y_val.iter().map(|v| v * v).sum();
        SelectionReport::from_sse(alphas, vec![sse], vec![k_val.nrows() as f64], vec![y_sq])
    }
}
