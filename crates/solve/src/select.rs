//! Model selection from statistics: hold-out and k-fold cross-validation
//! over an α grid without another pass over the data, and α grids.

use crate::error::{Result, SolveError, check_alpha, no_rows};
use crate::path::HeldOut;
use crate::ridge::{Normal, RidgeParams, RidgeValidParams};
use kapprox_core::Moments;
use ndarray::{Array1, Array2, Axis};
use serde::{Deserialize, Serialize};

/// Number of points of an α range string without an explicit count.
pub const DEFAULT_GRID_POINTS: usize = 8;

/// Most points of an α grid: 10,000. Selection from statistics makes each
/// point cheap, but not free (one solve each), and no search needs more.
pub const MAX_GRID_POINTS: usize = 10_000;

/// Most cross-validation folds: 1,000. Each fold holds a copy of the
/// statistics, and folds of under a few rows estimate nothing.
pub const MAX_FOLDS: usize = 1_000;

/// Checks a fold count before any fold's statistics are allocated.
///
/// # Errors
/// [`SolveError::InvalidParameter`] for fewer than 2 or more than
/// [`MAX_FOLDS`] folds.
pub fn check_folds(k: usize) -> Result<()> {
    if !(2..=MAX_FOLDS).contains(&k) {
        return Err(SolveError::InvalidParameter {
            name: "folds",
            value: k as f64,
            expected: "between 2 and 1000 folds",
        });
    }
    Ok(())
}

/// Validation errors within `TIE_RTOL` times the mean square of the
/// validation targets (the error of the zero predictor) of the smallest
/// one count as tied, and the larger α wins. Differences that small are
/// below what the expansion of the SSE in statistics can resolve.
pub const TIE_RTOL: f64 = 1e-10;

/// The validation curve of an α grid and the α it selects.
///
/// Every error is a mean squared error (the SSE of a fold divided by its
/// rows). For several targets the per-fold value is the mean over targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionReport {
    /// The grid, in the order given.
    pub alphas: Vec<f64>,
    /// Mean over folds of the fold MSE (scikit-learn's `GridSearchCV`
    /// convention), per α; selection minimises this.
    pub mean_mse: Array1<f64>,
    /// Total SSE over all folds and targets divided by `n_rows · k`, per α.
    pub pooled_mse: Array1<f64>,
    /// MSE of each fold, shape `(n_alphas, n_folds)`, mean over targets.
    pub fold_mse: Array2<f64>,
    /// MSE of each target, mean over folds, shape `(n_alphas, n_targets)`.
    pub target_mse: Array2<f64>,
    /// Rows of each validation fold.
    pub fold_sizes: Vec<f64>,
    /// Index of the selected α in [`alphas`](SelectionReport::alphas).
    pub best_index: usize,
    /// The selected α: the smallest `mean_mse`; among errors within
    /// [`tie_tolerance`](SelectionReport::tie_tolerance) of it, the largest α.
    pub best_alpha: f64,
    /// Absolute tolerance of ties: [`TIE_RTOL`] times the mean over folds of
    /// the mean square of the validation targets.
    pub tie_tolerance: f64,
}

impl SelectionReport {
    /// The mean validation MSE of the selected α.
    pub fn best_mse(&self) -> f64 {
        self.mean_mse[self.best_index]
    }

    /// Builds the report from per-fold SSE tables `(n_alphas, k)`, the fold
    /// sizes and the per-fold `Σ_t yᵀy` of the validation targets.
    pub(crate) fn from_sse(
        alphas: &[f64],
        sse: Vec<Array2<f64>>,
        fold_sizes: Vec<f64>,
        y_sq_sums: Vec<f64>,
    ) -> Result<Self> {
        let (n_alphas, n_folds) = (alphas.len(), sse.len());
        let k = sse.first().map_or(0, |s| s.ncols());
        let mut fold_mse = Array2::zeros((n_alphas, n_folds));
        let mut target_mse = Array2::zeros((n_alphas, k));
        let mut pooled_mse = Array1::zeros(n_alphas);
        let n_total: f64 = fold_sizes.iter().sum();
        for (f, (s, &n)) in sse.iter().zip(&fold_sizes).enumerate() {
            let mse = s / n;
            if k > 0 {
                fold_mse.column_mut(f).assign(&mse.mean_axis(Axis(1)).expect("k > 0"));
            }
            target_mse += &(&mse / n_folds as f64);
            pooled_mse += &(s.sum_axis(Axis(1)) / (n_total * k.max(1) as f64));
        }
        let mean_mse = if n_folds > 0 { fold_mse.mean_axis(Axis(1)).expect("folds > 0") } else { Array1::zeros(0) };
        let mean_square: f64 =
            y_sq_sums.iter().zip(&fold_sizes).map(|(&yy, &n)| yy / (n * k.max(1) as f64)).sum::<f64>()
                / n_folds.max(1) as f64;
        let tie_tolerance = TIE_RTOL * mean_square;
        let best_index = best_index(alphas, &mean_mse, tie_tolerance).ok_or(SolveError::EmptyGrid)?;
        Ok(SelectionReport {
            alphas: alphas.to_vec(),
            mean_mse,
            pooled_mse,
            fold_mse,
            target_mse,
            fold_sizes,
            best_index,
            best_alpha: alphas[best_index],
            tie_tolerance,
        })
    }
}

/// The index of the smallest error; among errors within `tol` of it, the
/// one with the largest α. NaN counts as +∞.
fn best_index(alphas: &[f64], mse: &Array1<f64>, tol: f64) -> Option<usize> {
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
    let min = mse.iter().map(|&v| key(v)).fold(f64::INFINITY, f64::min);
    (0..alphas.len()).filter(|&i| key(mse[i]) <= min + tol || min.is_infinite()).max_by(|&i, &j| {
        alphas[i].total_cmp(&alphas[j]).then(j.cmp(&i)) // equal α: the first one
    })
}

fn check_grid(alphas: &[f64]) -> Result<()> {
    if alphas.is_empty() {
        return Err(SolveError::EmptyGrid);
    }
    for &a in alphas {
        check_alpha(a)?;
    }
    Ok(())
}

/// Hold-out selection with the default parameters (intercept fitted):
/// train on `train`, score each α on `val`.
///
/// Cost: one band reduction (`4/3 l³`) plus `|alphas| · (l b² + 8 l² k)`
/// flops (`b` the band width, see [`AlphaPath`](crate::AlphaPath)); no
/// pass over the data.
///
/// # Errors
/// See [`RidgeValidParams::holdout`].
///
/// # Panics
/// Both statistics must be flushed.
///
/// # Example
///
/// ```
/// use kapprox_core::Moments;
/// use ndarray::Array2;
///
/// let z = Array2::from_shape_fn((200, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64);
/// let y = Array2::from_shape_fn((200, 1), |(i, _)| z[[i, 0]] - 2.0 * z[[i, 2]] + (i % 3) as f64);
/// let (mut train, mut val) = (Moments::new(3, 1), Moments::new(3, 1));
/// train.update(z.slice(ndarray::s![..150, ..]), y.slice(ndarray::s![..150, ..]));
/// val.update(z.slice(ndarray::s![150.., ..]), y.slice(ndarray::s![150.., ..]));
/// train.flush();
/// val.flush();
/// let report = kapprox_solve::holdout(&train, &val, &kapprox_solve::log_grid(1e-3, 1e3, 7)?)?;
/// assert_eq!(report.mean_mse.len(), 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn holdout(train: &Moments, val: &Moments, alphas: &[f64]) -> Result<SelectionReport> {
    RidgeParams::new().check()?.holdout(train, val, alphas)
}

/// k-fold cross-validation with the default parameters (intercept fitted)
/// from per-fold statistics.
///
/// Cost: see [`RidgeValidParams::cross_validate`].
///
/// # Errors
/// See [`RidgeValidParams::cross_validate`].
///
/// # Panics
/// Every fold must be flushed.
#[track_caller]
pub fn cross_validate(folds: &[Moments], alphas: &[f64]) -> Result<SelectionReport> {
    RidgeParams::new().check()?.cross_validate(folds, alphas)
}

fn check_same_shape(a: &Moments, b: &Moments) -> Result<()> {
    crate::error::check_dim("feature columns of the validation statistics", a.n_features(), b.n_features())?;
    crate::error::check_dim("target columns of the validation statistics", a.n_targets(), b.n_targets())
}

impl RidgeValidParams {
    /// Held-out SSE of every α (rows) and target (columns) for the normal
    /// equations `nrm` of the training rows. A grid shares one band
    /// reduction (`4/3 l³` flops, see [`AlphaPath`](crate::AlphaPath)); a
    /// single α is one Cholesky
    /// solve (`l³/3`), which matters at `l` in the thousands.
    fn sse_curve(&self, train: &Moments, h: &HeldOut<'_>, alphas: &[f64]) -> Result<Array2<f64>> {
        if let [alpha] = *alphas {
            let model = self.at_alpha(alpha).solve(Normal::from_moments(train, self.fit_intercept())?)?.model;
            return Ok(h.sse(&model)?.insert_axis(Axis(0)));
        }
        let rcond = Some(self.rcond(train.n_features()));
        crate::path::AlphaPath::from_moments_rcond(train, self.fit_intercept(), rcond)?.sse_curve(h, alphas)
    }
    /// Hold-out selection: one band reduction of the training
    /// statistics, every α scored on the validation statistics (uses
    /// `fit_intercept` and `rcond`; `alpha` and `fallback` are ignored).
    ///
    /// Cost: `4/3 l³ + |alphas| · (l b² + 8 l² k)` flops (`b` the band
    /// width, see [`AlphaPath`](crate::AlphaPath)); no
    /// pass over the data.
    ///
    /// # Errors
    /// [`SolveError::EmptyGrid`], [`SolveError::InvalidAlpha`],
    /// [`SolveError::NoRows`] for an empty training part,
    /// [`SolveError::EmptyFold`] (fold 0) for an empty validation part,
    /// [`SolveError::DimensionMismatch`] if the shapes differ.
    ///
    /// # Panics
    /// Both statistics must be flushed.
    #[track_caller]
    pub fn holdout(&self, train: &Moments, val: &Moments, alphas: &[f64]) -> Result<SelectionReport> {
        check_grid(alphas)?;
        check_same_shape(train, val)?;
        let h = HeldOut::new(val)?;
        if no_rows(h.n_samples()) {
            return Err(SolveError::EmptyFold { fold: 0 });
        }
        let sse = self.sse_curve(train, &h, alphas)?;
        SelectionReport::from_sse(alphas, vec![sse], vec![h.n_samples()], vec![h.y_square_sum()])
    }

    /// k-fold cross-validation from the statistics of each fold: fold `j`
    /// is scored by the model trained on `total − fold j`
    /// ([`Moments::minus`]), and one band reduction per fold serves
    /// every α (uses `fit_intercept` and `rcond`).
    ///
    /// Cost: `k_folds · (4/3 l³ + |alphas| · (l b² + 8 l² k))` flops; no pass over
    /// the data.
    ///
    /// # Errors
    /// [`SolveError::TooFewFolds`] for fewer than 2 folds,
    /// [`SolveError::EmptyFold`], [`SolveError::EmptyGrid`],
    /// [`SolveError::InvalidAlpha`], [`SolveError::DimensionMismatch`].
    ///
    /// # Panics
    /// Every fold must be flushed.
    #[track_caller]
    pub fn cross_validate(&self, folds: &[Moments], alphas: &[f64]) -> Result<SelectionReport> {
        check_grid(alphas)?;
        if folds.len() < 2 {
            return Err(SolveError::TooFewFolds { n_folds: folds.len() });
        }
        for f in &folds[1..] {
            check_same_shape(&folds[0], f)?;
        }
        let mut total = folds[0].clone();
        for f in &folds[1..] {
            total.merge(f);
        }
        total.flush();
        let held: Vec<HeldOut> = folds.iter().map(HeldOut::new).collect::<Result<_>>()?;
        if let Some(j) = held.iter().position(|h| no_rows(h.n_samples())) {
            return Err(SolveError::EmptyFold { fold: j });
        }
        let mut sse = Vec::with_capacity(folds.len());
        let mut sizes = Vec::with_capacity(folds.len());
        let mut y_sq = Vec::with_capacity(folds.len());
        for (fold, h) in folds.iter().zip(&held) {
            let train = total.minus(fold);
            sse.push(self.sse_curve(&train, h, alphas)?);
            sizes.push(h.n_samples());
            y_sq.push(h.y_square_sum());
        }
        SelectionReport::from_sse(alphas, sse, sizes, y_sq)
    }
}

/// `n` log-spaced values from `lo` to `hi`, both included exactly.
///
/// # Errors
/// [`SolveError::InvalidParameter`] unless `0 < lo ≤ hi` are finite and
/// `n ≥ 1` (`n = 1` needs `lo == hi`).
///
/// # Example
///
/// ```
/// let g = kapprox_solve::log_grid(1e-2, 1e2, 5)?;
/// assert_eq!(g.len(), 5);
/// assert!((g[2] - 1.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn log_grid(lo: f64, hi: f64, n: usize) -> Result<Vec<f64>> {
    if !(lo.is_finite() && lo > 0.0) {
        return Err(SolveError::InvalidParameter { name: "grid start", value: lo, expected: "a finite number > 0" });
    }
    if !(hi.is_finite() && hi >= lo) {
        return Err(SolveError::InvalidParameter {
            name: "grid end",
            value: hi,
            expected: "a finite number >= the grid start",
        });
    }
    if n == 0 || (n == 1 && lo != hi) {
        return Err(SolveError::InvalidParameter {
            name: "number of grid points",
            value: n as f64,
            expected: "at least 2 (or 1 when start == end)",
        });
    }
    if n > MAX_GRID_POINTS {
        return Err(SolveError::InvalidParameter {
            name: "number of grid points",
            value: n as f64,
            expected: "at most 10000",
        });
    }
    if n == 1 {
        return Ok(vec![lo]);
    }
    let (a, b) = (lo.ln(), hi.ln());
    let mut g: Vec<f64> = (0..n).map(|i| (a + (b - a) * i as f64 / (n - 1) as f64).exp()).collect();
    g[0] = lo;
    g[n - 1] = hi;
    Ok(g)
}

/// Parses an α grid: a range `lo..hi` (log-spaced, [`DEFAULT_GRID_POINTS`]
/// points), a range with a count `lo..hi:n`, or a comma list `a,b,c` (a
/// single number is a list of one). Spaces are ignored.
///
/// # Errors
/// [`SolveError::InvalidAlphaGrid`] naming the input and the problem, or
/// [`SolveError::InvalidAlpha`] for a negative or non-finite list value.
///
/// # Example
///
/// ```
/// use kapprox_solve::parse_alpha_grid;
///
/// assert_eq!(parse_alpha_grid("1e-4..1e1")?.len(), 8);
/// let g = parse_alpha_grid("0.1..10:3")?;
/// assert_eq!((g.len(), g[0], g[2]), (3, 0.1, 10.0));
/// assert_eq!(parse_alpha_grid("0, 0.5,2")?, vec![0.0, 0.5, 2.0]);
/// assert!(parse_alpha_grid("1..0").is_err());
/// assert!(parse_alpha_grid("1e-5..1:100000000").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_alpha_grid(input: &str) -> Result<Vec<f64>> {
    let err = |reason| SolveError::InvalidAlphaGrid { input: input.to_string(), reason };
    let s: String = input.chars().filter(|c| !c.is_whitespace()).collect();
    if s.is_empty() {
        return Err(err("expected lo..hi, lo..hi:n or a comma list"));
    }
    if let Some((lo, rest)) = s.split_once("..") {
        let (hi, n) = match rest.split_once(':') {
            Some((hi, n)) => (hi, n.parse::<usize>().map_err(|_| err("the point count after ':' is not an integer"))?),
            None => (rest, DEFAULT_GRID_POINTS),
        };
        let lo: f64 = lo.parse().map_err(|_| err("the range start is not a number"))?;
        let hi: f64 = hi.parse().map_err(|_| err("the range end is not a number"))?;
        if !(lo.is_finite() && lo > 0.0) {
            return Err(err("a log-spaced range needs a start > 0"));
        }
        if !(hi.is_finite() && hi >= lo) {
            return Err(err("the range end must be >= its start"));
        }
        if n == 0 || (n == 1 && lo != hi) {
            return Err(err("a range needs at least 2 points"));
        }
        if n > MAX_GRID_POINTS {
            return Err(err("a range of at most 10000 points is expected"));
        }
        return log_grid(lo, hi, n);
    }
    let mut out = Vec::new();
    if s.split(',').count() > MAX_GRID_POINTS {
        return Err(err("a list of at most 10000 values is expected"));
    }
    for part in s.split(',') {
        let v: f64 = part.parse().map_err(|_| err("a list entry is not a number"))?;
        out.push(check_alpha(v)?);
    }
    Ok(out)
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn absurd_grids_and_fold_counts_are_refused_without_allocating() {
        let e = parse_alpha_grid("1e-5..1:100000000").unwrap_err().to_string();
        assert_eq!(e, "invalid alpha grid \"1e-5..1:100000000\": a range of at most 10000 points is expected");
        assert_eq!(parse_alpha_grid("1e-5..1:10000").unwrap().len(), 10_000);
        let long = vec!["1"; 10_001].join(",");
        assert!(parse_alpha_grid(&long).is_err());
        assert!(log_grid(1.0, 2.0, usize::MAX).is_err());
        assert!(check_folds(1_000_000).unwrap_err().to_string().contains("between 2 and 1000 folds"));
        assert!(check_folds(1).is_err());
        check_folds(10).unwrap();
    }

    #[test]
    fn a_continuous_target_is_not_fifty_thousand_classes() {
        let e = crate::Classes::from_labels((0..50_000).map(|i| i as f64 * 0.5)).unwrap_err().to_string();
        assert!(e.contains("at most 10000 distinct labels"), "{e}");
        assert_eq!(crate::Classes::from_labels((0..10_000).map(f64::from)).unwrap().len(), 10_000);
    }
}
