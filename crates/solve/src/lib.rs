//! Ridge regression and classification from sufficient statistics: solves whose size depends on the number of features, never on the number of rows.
//!
//! # Overview
//!
//! Everything here starts from [`kapprox_core::Moments`] (`ZᵀZ`, `ZᵀY`,
//! `Σz`, `Σy`, `YᵀY`, `n`, accumulated chunk by chunk elsewhere) and does no
//! I/O and never prints.
//!
//! - [`Ridge::params`] → [`RidgeParams`] → [`RidgeValidParams::fit`]:
//!   ridge `‖Zw + b − y‖² + α‖w‖²` (scikit-learn's `alpha`, intercept not
//!   penalised) for all target columns at once, by Cholesky on `A + αI` with
//!   a reported [`Fallback`] for singular systems. Returns a
//!   [`RidgeSolution`]: the [`RidgeModel`] (`predict`, `predict_sparse`,
//!   `predict_into`) and its [`SolveInfo`].
//! - [`AlphaPath`]: one orthogonal reduction of `A` to band form serves
//!   every α (a band Cholesky per α), and scores
//!   held-out statistics ([`AlphaPath::validation_sse`]).
//! - [`holdout`] and [`cross_validate`]: α selection from statistics alone
//!   (fold training statistics = total − fold), reported as a
//!   [`SelectionReport`]; α grids by [`log_grid`] and [`parse_alpha_grid`].
//! - [`Classes`] and [`RidgeClassifier`]: one-vs-rest ridge on ±1 targets.
//! - [`RegressionAccumulator`] and [`ClassificationAccumulator`]: mergeable
//!   streaming metrics ([`RegressionMetrics`], [`ClassificationMetrics`]),
//!   plus one-shot functions ([`rmse`], [`relative_rmse`], [`r2`],
//!   [`accuracy`], [`macro_f1`], [`confusion_matrix`], ...).
//! - [`ExactKrr::params`] → [`ExactKrrValidParams::fit`] /
//!   [`ExactKrrValidParams::path`]: exact kernel ridge for `n` up to about
//!   20 000, the reference that approximations chase (memory `O(n²)`,
//!   checked against `max_rows`).
//! - [`spectral_norm_sym`] and [`spectral_norm_sym_block`]: `‖A‖₂` of a
//!   symmetric operator given only products (Lanczos with full
//!   reorthogonalisation), for `‖K − ZZᵀ‖₂ / ‖K‖₂`.
//!
//! Costs, in flops, for `l` features and `k` targets (independent of the
//! number of rows; `b` the band width, 64 to 256 as `l` grows): a Cholesky fit `l³/3 + 2l²k`;
//! an α path `4/3 l³` once (all matrix–matrix products) and
//! `l b² + 4 l b k + 8 l² k` per α; hold-out selection one path; k-fold CV
//! one path per fold. The table of alternatives (an eigendecomposition,
//! `≈ 9 l³`; a Cholesky per α; a tridiagonal reduction; CG) and why the
//! band reduction wins is in the [`AlphaPath`] docs;
//! `cargo bench -p kapprox-solve --bench ridge_solve` measures them.
//!
//! # Example
//!
//! ```
//! use kapprox_core::Moments;
//! use kapprox_solve::{Ridge, log_grid};
//! use ndarray::{Array2, s};
//!
//! // y = 2 z₀ − z₁ + 3, accumulated in two chunks.
//! let z = Array2::from_shape_fn((100, 2), |(i, j)| ((i * 7 + j * 5) % 13) as f64 / 13.0);
//! let y = Array2::from_shape_fn((100, 1), |(i, _)| 2.0 * z[[i, 0]] - z[[i, 1]] + 3.0);
//! let mut m = Moments::new(2, 1);
//! m.update(z.slice(s![..60, ..]), y.slice(s![..60, ..]));
//! m.update(z.slice(s![60.., ..]), y.slice(s![60.., ..]));
//! m.flush();
//!
//! let fit = Ridge::params().with_alpha(1e-8).check()?.fit(&m)?;
//! assert!((fit.model.coef[[0, 0]] - 2.0).abs() < 1e-6);
//! assert!((fit.model.intercept[0] - 3.0).abs() < 1e-6);
//! let y_hat = fit.model.predict(z.view())?;
//! assert!((y_hat[[5, 0]] - y[[5, 0]]).abs() < 1e-6);
//!
//! // One band reduction scores a whole α grid on held-out statistics.
//! let path = Ridge::params().check()?.path(&m)?;
//! let sse = path.validation_sse(0.5, &m)?;
//! assert_eq!(sse.len(), 1);
//! let grid = log_grid(1e-4, 1e1, 8)?;
//! assert_eq!(grid.len(), 8);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod band;
mod band_cholesky;
mod classify;
mod error;
mod krr;
mod metrics;
mod path;
mod ridge;
mod select;
mod solver;
mod spectral;
#[cfg(test)]
mod test_util;

pub use classify::{Classes, MAX_CLASSES, RidgeClassifier};
pub use error::{Result, SolveError};
pub use krr::{DEFAULT_MAX_ROWS, ExactKrr, ExactKrrParams, ExactKrrPath, ExactKrrValidParams, KrrModel, KrrSolution};
pub use metrics::{
    ClassificationAccumulator, ClassificationMetrics, RegressionAccumulator, RegressionMetrics, accuracy,
    classification_metrics, confusion_matrix, macro_f1, mae, r2, regression_metrics, relative_rmse, rmse,
};
pub use path::{AlphaPath, HeldOut};
pub use ridge::{
    DEFAULT_ALPHA, DEFAULT_FIT_INTERCEPT, Ridge, RidgeModel, RidgeParams, RidgeSolution, RidgeValidParams,
};
pub use select::{
    DEFAULT_GRID_POINTS, MAX_FOLDS, MAX_GRID_POINTS, SelectionReport, TIE_RTOL, check_folds, cross_validate, holdout,
    log_grid, parse_alpha_grid,
};
pub use solver::{Fallback, SolveInfo, SolveMethod};
pub use spectral::{SpectralEstimate, spectral_norm_sym, spectral_norm_sym_block};
