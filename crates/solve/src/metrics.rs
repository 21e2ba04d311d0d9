//! Regression and classification metrics, with mergeable streaming
//! accumulators so that evaluation never holds all rows.

use crate::classify::Classes;
use crate::error::{Result, SolveError, check_dim, check_finite};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

/// Regression metrics over `n` rows and `k` targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegressionMetrics {
    /// Number of rows.
    pub n_samples: f64,
    /// `sqrt(Σ (y − ŷ)² / (n k))`, over all targets.
    pub rmse: f64,
    /// `‖Y − Ŷ‖_F / ‖Y‖_F` (0 for a perfect fit of all-zero targets, ∞ for
    /// an imperfect one).
    pub relative_rmse: f64,
    /// `Σ |y − ŷ| / (n k)`.
    pub mae: f64,
    /// Coefficient of determination, mean over targets (scikit-learn's
    /// `uniform_average`). A constant target scores 1 if predicted exactly
    /// and 0 otherwise (scikit-learn's `force_finite`).
    pub r2: f64,
    /// RMSE of each target.
    pub rmse_per_target: Vec<f64>,
    /// R² of each target.
    pub r2_per_target: Vec<f64>,
}

/// Mergeable accumulator of regression errors: per target `Σ(y − ŷ)²`,
/// `Σ|y − ŷ|`, `Σy²`, and the mean and centred sum of squares of `y`
/// (merged with Chan's formula, so R² does not suffer the cancellation of
/// `Σy² − (Σy)²/n`).
///
/// Memory: `5 k` doubles.
///
/// # Example
///
/// ```
/// use kapprox_solve::RegressionAccumulator;
/// use ndarray::array;
///
/// let mut acc = RegressionAccumulator::new(1);
/// acc.update(array![[1.0], [2.0]].view(), array![[1.0], [2.5]].view())?;
/// let mut other = RegressionAccumulator::new(1);
/// other.update(array![[3.0]].view(), array![[3.0]].view())?;
/// acc.merge(&other)?;
/// let m = acc.metrics()?;
/// assert!((m.rmse - (0.25f64 / 3.0).sqrt()).abs() < 1e-15);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegressionAccumulator {
    n: f64,
    sse: Array1<f64>,
    sae: Array1<f64>,
    syy: Array1<f64>,
    mean: Array1<f64>,
    m2: Array1<f64>,
}

impl RegressionAccumulator {
    /// An empty accumulator for `n_targets` target columns.
    pub fn new(n_targets: usize) -> Self {
        let z = || Array1::zeros(n_targets);
        RegressionAccumulator { n: 0.0, sse: z(), sae: z(), syy: z(), mean: z(), m2: z() }
    }

    /// Number of target columns.
    pub fn n_targets(&self) -> usize {
        self.sse.len()
    }

    /// Number of rows seen.
    pub fn n_samples(&self) -> f64 {
        self.n
    }

    /// Adds a chunk: true targets `y (n_rows, k)` and predictions
    /// `y_hat (n_rows, k)`.
    ///
    /// Cost: `O(n_rows k)`.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`], [`SolveError::NonFinite`].
    pub fn update(&mut self, y: ArrayView2<'_, f64>, y_hat: ArrayView2<'_, f64>) -> Result<()> {
        let k = self.n_targets();
        check_dim("target columns of y", k, y.ncols())?;
        check_dim("target columns of the predictions", k, y_hat.ncols())?;
        check_dim("rows of the predictions", y.nrows(), y_hat.nrows())?;
        check_finite("the targets", y.iter())?;
        check_finite("the predictions", y_hat.iter())?;
        let nb = y.nrows() as f64;
        if y.nrows() == 0 {
            return Ok(());
        }
        let mean_b = y.mean_axis(Axis(0)).expect("rows > 0");
        let mut chunk = RegressionAccumulator::new(k);
        chunk.n = nb;
        for t in 0..k {
            let (yt, pt) = (y.column(t), y_hat.column(t));
            let mu = mean_b[t];
            chunk.sse[t] = yt.iter().zip(pt.iter()).map(|(a, b)| (a - b) * (a - b)).sum();
            chunk.sae[t] = yt.iter().zip(pt.iter()).map(|(a, b)| (a - b).abs()).sum();
            chunk.syy[t] = yt.iter().map(|a| a * a).sum();
            chunk.m2[t] = yt.iter().map(|a| (a - mu) * (a - mu)).sum();
        }
        chunk.mean = mean_b;
        self.merge(&chunk)
    }

    /// Adds `other`'s rows.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] if the target counts differ.
    pub fn merge(&mut self, other: &RegressionAccumulator) -> Result<()> {
        check_dim("target columns of the merged accumulator", self.n_targets(), other.n_targets())?;
        if other.n == 0.0 {
            return Ok(());
        }
        let (na, nb) = (self.n, other.n);
        let n = na + nb;
        for t in 0..self.n_targets() {
            let delta = other.mean[t] - self.mean[t];
            self.mean[t] += delta * nb / n;
            self.m2[t] += other.m2[t] + delta * delta * na * nb / n;
        }
        self.sse += &other.sse;
        self.sae += &other.sae;
        self.syy += &other.syy;
        self.n = n;
        Ok(())
    }

    /// The metrics of everything added so far.
    ///
    /// # Errors
    /// [`SolveError::NoRows`] if no row was added.
    pub fn metrics(&self) -> Result<RegressionMetrics> {
        if self.n == 0.0 {
            return Err(SolveError::NoRows);
        }
        let k = self.n_targets().max(1) as f64;
        let sse = self.sse.sum();
        let syy = self.syy.sum();
        let r2_per_target: Vec<f64> = self
            .sse
            .iter()
            .zip(self.m2.iter())
            .map(|(&e, &tss)| {
                if tss > 0.0 {
                    1.0 - e / tss
                } else if e == 0.0 {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let r2 = if r2_per_target.is_empty() { 0.0 } else { r2_per_target.iter().sum::<f64>() / k };
        Ok(RegressionMetrics {
            n_samples: self.n,
            rmse: (sse / (self.n * k)).sqrt(),
            relative_rmse: if syy > 0.0 {
                (sse / syy).sqrt()
            } else if sse == 0.0 {
                0.0
            } else {
                f64::INFINITY
            },
            mae: self.sae.sum() / (self.n * k),
            r2,
            rmse_per_target: self.sse.iter().map(|e| (e / self.n).sqrt()).collect(),
            r2_per_target,
        })
    }
}

/// Classification metrics over `n` rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassificationMetrics {
    /// Number of rows.
    pub n_samples: u64,
    /// Fraction of rows predicted correctly.
    pub accuracy: f64,
    /// Mean F1 over the classes that occur as a true or predicted label
    /// (scikit-learn's `average="macro"` with its default labels).
    pub macro_f1: f64,
    /// F1 of each class (0 for a class with no true and no predicted row).
    pub f1_per_class: Vec<f64>,
    /// The class labels, in the order of the confusion matrix.
    pub classes: Vec<f64>,
    /// Counts, rows = true class, columns = predicted class.
    pub confusion: Array2<u64>,
}

/// Mergeable accumulator of a confusion matrix over known classes.
///
/// Memory: `n_classes²` counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassificationAccumulator {
    classes: Classes,
    confusion: Array2<u64>,
}

impl ClassificationAccumulator {
    /// An empty confusion matrix over `classes`.
    pub fn new(classes: &Classes) -> Self {
        ClassificationAccumulator { classes: classes.clone(), confusion: Array2::zeros((classes.len(), classes.len())) }
    }

    /// The classes, in confusion-matrix order.
    pub fn classes(&self) -> &Classes {
        &self.classes
    }

    /// Adds a chunk of true and predicted labels.
    ///
    /// Cost: `O(n_rows log n_classes)`.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] for different lengths,
    /// [`SolveError::UnknownLabel`] for a label outside the classes (the
    /// chunk is then not added).
    pub fn update(&mut self, y_true: ArrayView1<'_, f64>, y_pred: ArrayView1<'_, f64>) -> Result<()> {
        check_dim("length of the predicted labels", y_true.len(), y_pred.len())?;
        let pairs: Vec<(usize, usize)> = y_true
            .iter()
            .zip(y_pred.iter())
            .map(|(&t, &p)| Ok((self.classes.index_of(t)?, self.classes.index_of(p)?)))
            .collect::<Result<_>>()?;
        for (t, p) in pairs {
            self.confusion[[t, p]] += 1;
        }
        Ok(())
    }

    /// Adds `other`'s counts.
    ///
    /// # Errors
    /// [`SolveError::ClassesMismatch`] unless both use the same classes.
    pub fn merge(&mut self, other: &ClassificationAccumulator) -> Result<()> {
        if self.classes != other.classes {
            return Err(SolveError::ClassesMismatch { left: self.classes.len(), right: other.classes.len() });
        }
        self.confusion += &other.confusion;
        Ok(())
    }

    /// The metrics of everything added so far.
    ///
    /// # Errors
    /// [`SolveError::NoRows`] if no row was added.
    pub fn metrics(&self) -> Result<ClassificationMetrics> {
        let c = &self.confusion;
        let n: u64 = c.sum();
        if n == 0 {
            return Err(SolveError::NoRows);
        }
        let correct: u64 = c.diag().sum();
        let m = self.classes.len();
        let mut f1 = Vec::with_capacity(m);
        let (mut f1_sum, mut present) = (0.0, 0usize);
        for j in 0..m {
            let tp = c[[j, j]] as f64;
            let actual = c.row(j).sum() as f64;
            let predicted = c.column(j).sum() as f64;
            let denom = actual + predicted;
            let f = if denom > 0.0 { 2.0 * tp / denom } else { 0.0 };
            if denom > 0.0 {
                f1_sum += f;
                present += 1;
            }
            f1.push(f);
        }
        Ok(ClassificationMetrics {
            n_samples: n,
            accuracy: correct as f64 / n as f64,
            macro_f1: f1_sum / present as f64,
            f1_per_class: f1,
            classes: self.classes.values().to_vec(),
            confusion: c.clone(),
        })
    }
}

fn single_target(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<RegressionMetrics> {
    check_dim("length of the predictions", y.len(), y_hat.len())?;
    let mut acc = RegressionAccumulator::new(1);
    acc.update(y.insert_axis(Axis(1)), y_hat.insert_axis(Axis(1)))?;
    acc.metrics()
}

/// All regression metrics of `y (n, k)` against `y_hat (n, k)`.
///
/// # Errors
/// [`SolveError::NoRows`], [`SolveError::DimensionMismatch`],
/// [`SolveError::NonFinite`].
pub fn regression_metrics(y: ArrayView2<'_, f64>, y_hat: ArrayView2<'_, f64>) -> Result<RegressionMetrics> {
    let mut acc = RegressionAccumulator::new(y.ncols());
    acc.update(y, y_hat)?;
    acc.metrics()
}

/// Root mean squared error `sqrt(Σ(y − ŷ)²/n)`.
///
/// # Errors
/// [`SolveError::NoRows`], [`SolveError::DimensionMismatch`],
/// [`SolveError::NonFinite`].
pub fn rmse(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    Ok(single_target(y, y_hat)?.rmse)
}

/// Relative RMSE `‖y − ŷ‖ / ‖y‖`.
///
/// # Errors
/// As [`rmse`].
pub fn relative_rmse(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    Ok(single_target(y, y_hat)?.relative_rmse)
}

/// Mean absolute error `Σ|y − ŷ|/n`.
///
/// # Errors
/// As [`rmse`].
pub fn mae(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    Ok(single_target(y, y_hat)?.mae)
}

/// Coefficient of determination `1 − SSE/TSS` (see [`RegressionMetrics::r2`]).
///
/// # Errors
/// As [`rmse`].
pub fn r2(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    Ok(single_target(y, y_hat)?.r2)
}

/// Fraction of equal labels.
///
/// # Errors
/// [`SolveError::NoRows`], [`SolveError::DimensionMismatch`].
pub fn accuracy(y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    check_dim("length of the predicted labels", y.len(), y_hat.len())?;
    if y.is_empty() {
        return Err(SolveError::NoRows);
    }
    let correct = y.iter().zip(y_hat.iter()).filter(|(a, b)| a == b).count();
    Ok(correct as f64 / y.len() as f64)
}

/// All classification metrics of `y` against `y_hat` over `classes`.
///
/// # Errors
/// As [`ClassificationAccumulator::update`] and
/// [`ClassificationAccumulator::metrics`].
pub fn classification_metrics(
    classes: &Classes,
    y: ArrayView1<'_, f64>,
    y_hat: ArrayView1<'_, f64>,
) -> Result<ClassificationMetrics> {
    let mut acc = ClassificationAccumulator::new(classes);
    acc.update(y, y_hat)?;
    acc.metrics()
}

/// Macro-averaged F1 (see [`ClassificationMetrics::macro_f1`]).
///
/// # Errors
/// As [`classification_metrics`].
pub fn macro_f1(classes: &Classes, y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<f64> {
    Ok(classification_metrics(classes, y, y_hat)?.macro_f1)
}

/// The confusion matrix `(n_classes, n_classes)`, rows = true class,
/// columns = predicted class, both in the order of `classes`.
///
/// # Errors
/// As [`ClassificationAccumulator::update`].
pub fn confusion_matrix(classes: &Classes, y: ArrayView1<'_, f64>, y_hat: ArrayView1<'_, f64>) -> Result<Array2<u64>> {
    let mut acc = ClassificationAccumulator::new(classes);
    acc.update(y, y_hat)?;
    Ok(acc.confusion)
}
