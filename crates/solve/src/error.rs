use thiserror::Error;

/// Errors from the solvers, model selection, classification and metrics.
///
/// Messages are lower-case, quote the offending value and say what was
/// expected. Variants carry data, never pre-formatted strings.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SolveError {
    /// A ridge penalty must be finite and `≥ 0`.
    #[error("invalid alpha {value}: expected a finite number >= 0")]
    InvalidAlpha {
        /// The offending value.
        value: f64,
    },
    /// A numeric parameter is out of its range.
    #[error("invalid {name} {value}: expected {expected}")]
    InvalidParameter {
        /// Parameter name as the user spells it.
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
    /// An α grid string could not be parsed.
    #[error("invalid alpha grid {input:?}: {reason}")]
    InvalidAlphaGrid {
        /// The input as given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A model-selection grid has no α.
    #[error("the alpha grid is empty")]
    EmptyGrid,
    /// The statistics were accumulated over zero rows.
    #[error("no rows: the statistics were accumulated over zero rows")]
    NoRows,
    /// A cross-validation fold holds no rows.
    #[error("fold {fold} has no rows")]
    EmptyFold {
        /// Index of the fold.
        fold: usize,
    },
    /// Cross-validation needs at least two folds.
    #[error("cross-validation needs at least 2 folds, found {n_folds}")]
    TooFewFolds {
        /// Number of folds given.
        n_folds: usize,
    },
    /// The Cholesky factorisation of `A + αI` met a non-positive pivot.
    #[error(
        "the system matrix with alpha {alpha} is not positive definite (pivot {pivot}); use alpha > 0 or the eigen fallback"
    )]
    NotPositiveDefinite {
        /// Index of the first non-positive pivot.
        pivot: usize,
        /// The penalty of the failed solve.
        alpha: f64,
    },
    /// `A + αI` is positive definite but too ill-conditioned to solve
    /// reliably (its condition estimate exceeds `1/rcond`).
    #[error(
        "the system matrix with alpha {alpha} is ill-conditioned (condition estimate {condition_estimate:e} > {limit:e}); use a larger alpha or the eigen fallback"
    )]
    IllConditioned {
        /// The penalty of the failed solve.
        alpha: f64,
        /// Estimated 2-norm condition number.
        condition_estimate: f64,
        /// The largest accepted condition number, `1/rcond`.
        limit: f64,
    },
    /// The exact kernel ridge intercept is undefined: `1ᵀ(K + αI)⁺1 ≤ 0`.
    #[error("the intercept is undefined for alpha {alpha}: 1'(K + alpha I)^+ 1 = {denominator:e} is not positive")]
    SingularIntercept {
        /// The penalty of the failed solve.
        alpha: f64,
        /// The value of `1ᵀ(K + αI)⁺1`.
        denominator: f64,
    },
    /// An iterative dense algorithm (the symmetric eigensolver) did not
    /// converge.
    #[error("{what} did not converge")]
    NoConvergence {
        /// Which algorithm.
        what: &'static str,
    },
    /// An input holds NaN or an infinity.
    #[error("{what} contains a non-finite value")]
    NonFinite {
        /// Which input.
        what: &'static str,
    },
    /// A dimension does not match.
    #[error("{what}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// Which dimension, e.g. "feature columns of z".
        what: &'static str,
        /// The expected size.
        expected: usize,
        /// The size found.
        found: usize,
    },
    /// The exact kernel ridge row limit is exceeded.
    #[error("{n_rows} rows exceed max_rows {max_rows}: exact kernel ridge holds n^2 doubles ({gib:.1} GiB for the kernel matrix alone)", gib = (*n_rows as f64).powi(2) * 8.0 / f64::from(1u32 << 30))]
    TooManyRows {
        /// Number of rows requested.
        n_rows: usize,
        /// The configured limit.
        max_rows: usize,
    },
    /// A label is NaN or infinite.
    #[error("invalid label {value}: expected a finite number")]
    InvalidLabel {
        /// The offending label.
        value: f64,
    },
    /// A label is not one of the known classes.
    #[error("unknown label {value}: not one of the {n_classes} training classes")]
    UnknownLabel {
        /// The offending label.
        value: f64,
        /// Number of known classes.
        n_classes: usize,
    },
    /// Two class lists (or accumulators over them) differ.
    #[error("class lists differ: {left} classes against {right}")]
    ClassesMismatch {
        /// Number of classes on the left.
        left: usize,
        /// Number of classes on the right.
        right: usize,
    },
    /// A sparse column index is out of range.
    #[error("sparse column index {index} is out of range for {n_cols} columns")]
    IndexOutOfRange {
        /// The offending index.
        index: usize,
        /// Number of columns.
        n_cols: usize,
    },
}

/// Result alias of this crate.
pub type Result<T, E = SolveError> = std::result::Result<T, E>;

/// `Err(InvalidAlpha)` unless `alpha` is finite and `≥ 0`.
pub(crate) fn check_alpha(alpha: f64) -> Result<f64> {
    if alpha.is_finite() && alpha >= 0.0 { Ok(alpha) } else { Err(SolveError::InvalidAlpha { value: alpha }) }
}

/// `Err(DimensionMismatch)` unless `found == expected`.
pub(crate) fn check_dim(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found { Ok(()) } else { Err(SolveError::DimensionMismatch { what, expected, found }) }
}

/// `Err(NonFinite)` if any element is NaN or infinite.
pub(crate) fn check_finite<'a>(what: &'static str, values: impl IntoIterator<Item = &'a f64>) -> Result<()> {
    if values.into_iter().all(|v| v.is_finite()) { Ok(()) } else { Err(SolveError::NonFinite { what }) }
}

/// Whether every value of `v` is finite, in one branch-free pass (the
/// statistics are checked element by element at `l²` scale).
pub(crate) fn all_finite(v: &[f64]) -> bool {
    v.iter().fold(true, |ok, x| ok & x.is_finite())
}

/// [`all_finite`] over the lower triangle of the square `a`.
pub(crate) fn lower_is_finite(a: ndarray::ArrayView2<'_, f64>) -> bool {
    (0..a.nrows()).all(|j| {
        let col = a.slice(ndarray::s![j.., j]);
        col.as_slice().map_or_else(|| col.iter().all(|v| v.is_finite()), all_finite)
    })
}

/// Whether a row count (a float in the statistics) means "no rows".
pub(crate) fn no_rows(n: f64) -> bool {
    n.is_nan() || n < 0.5
}
