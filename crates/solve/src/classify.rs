//! One-vs-rest classification by ridge regression on ±1 targets.

use crate::error::{Result, SolveError, check_dim};
use crate::ridge::RidgeModel;
use kapprox_core::SparseRowsView;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use serde::{Deserialize, Serialize};

/// The sorted distinct label values of a classification problem.
///
/// Class `j` is the `j`-th smallest label; it owns column `j` of the ±1
/// target matrix and of the score matrix. Labels are `f64` values compared
/// exactly (`-0.0` and `0.0` are the same class). Mergeable, so the class
/// list can be collected in the same pass as anything else.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Classes {
    values: Vec<f64>,
}

/// Most distinct labels of a classification: 10,000. One-vs-rest keeps a
/// target column per class in every statistic (`(l + 1 + k)²` doubles), so
/// more classes are a continuous target read as classes, not a task.
pub const MAX_CLASSES: usize = 10_000;

/// `-0.0` becomes `0.0`; NaN and infinities are refused.
fn normalize_label(v: f64) -> Result<f64> {
    if v.is_finite() { Ok(v + 0.0) } else { Err(SolveError::InvalidLabel { value: v }) }
}

impl Classes {
    /// No classes yet.
    pub fn new() -> Self {
        Classes { values: Vec::new() }
    }

    /// The classes of a stream of labels.
    ///
    /// # Errors
    /// [`SolveError::InvalidLabel`] for a NaN or infinite label.
    ///
    /// # Example
    ///
    /// ```
    /// let c = kapprox_solve::Classes::from_labels([3.0, 1.0, 3.0, 2.0])?;
    /// assert_eq!(c.values(), &[1.0, 2.0, 3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_labels(labels: impl IntoIterator<Item = f64>) -> Result<Self> {
        let mut c = Classes::new();
        for v in labels {
            c.insert(v)?;
        }
        Ok(c)
    }

    /// Adds one label.
    ///
    /// # Errors
    /// [`SolveError::InvalidLabel`] for a NaN or infinite label;
    /// [`SolveError::InvalidParameter`] past [`MAX_CLASSES`] labels.
    pub fn insert(&mut self, label: f64) -> Result<()> {
        let v = normalize_label(label)?;
        if let Err(pos) = self.search(v) {
            if self.values.len() == MAX_CLASSES {
                return Err(SolveError::InvalidParameter {
                    name: "number of classes",
                    value: (MAX_CLASSES + 1) as f64,
                    expected: "at most 10000 distinct labels (a continuous target is a regression)",
                });
            }
            self.values.insert(pos, v);
        }
        Ok(())
    }

    /// Adds the labels of a chunk of rows.
    ///
    /// # Errors
    /// [`SolveError::InvalidLabel`] for a NaN or infinite label.
    pub fn update(&mut self, labels: ArrayView1<'_, f64>) -> Result<()> {
        labels.iter().try_for_each(|&v| self.insert(v))
    }

    /// Adds the classes of `other`.
    pub fn merge(&mut self, other: &Classes) {
        for &v in &other.values {
            if let Err(pos) = self.search(v) {
                self.values.insert(pos, v);
            }
        }
    }

    fn search(&self, v: f64) -> std::result::Result<usize, usize> {
        self.values.binary_search_by(|x| x.total_cmp(&v))
    }

    /// The label values, ascending.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no classes.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The column of `label`, or an error for an unknown or invalid label.
    ///
    /// Cost: `O(log n_classes)`.
    ///
    /// # Errors
    /// [`SolveError::UnknownLabel`], [`SolveError::InvalidLabel`].
    pub fn index_of(&self, label: f64) -> Result<usize> {
        let v = normalize_label(label)?;
        self.search(v).map_err(|_| SolveError::UnknownLabel { value: label, n_classes: self.len() })
    }

    /// The ±1 one-vs-rest targets of `y`: shape `(n, n_classes)`, `+1` in the
    /// column of each row's class and `−1` elsewhere. Binary problems get two
    /// columns as well, so that every problem decodes the same way.
    ///
    /// # Errors
    /// [`SolveError::UnknownLabel`] for a label outside the classes.
    ///
    /// # Example
    ///
    /// ```
    /// use ndarray::array;
    /// let c = kapprox_solve::Classes::from_labels([0.0, 1.0])?;
    /// let t = c.encode_pm1(array![1.0, 0.0].view())?;
    /// assert_eq!(t, array![[-1.0, 1.0], [1.0, -1.0]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encode_pm1(&self, y: ArrayView1<'_, f64>) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((y.len(), self.len()));
        self.encode_pm1_into(y, out.view_mut())?;
        Ok(out)
    }

    /// [`Classes::encode_pm1`] into a caller buffer `out (n, n_classes)`.
    ///
    /// # Errors
    /// As [`Classes::encode_pm1`], plus a mismatched `out`.
    pub fn encode_pm1_into(&self, y: ArrayView1<'_, f64>, mut out: ArrayViewMut2<'_, f64>) -> Result<()> {
        check_dim("rows of the target buffer", y.len(), out.nrows())?;
        check_dim("columns of the target buffer", self.len(), out.ncols())?;
        out.fill(-1.0);
        for (i, &v) in y.iter().enumerate() {
            out[[i, self.index_of(v)?]] = 1.0;
        }
        Ok(())
    }

    /// The column of the largest score in each row (the first on ties).
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] unless `scores` has `n_classes`
    /// columns; [`SolveError::NonFinite`] for a NaN score.
    pub fn argmax_indices(&self, scores: ArrayView2<'_, f64>) -> Result<Array1<usize>> {
        check_dim("columns of the scores", self.len(), scores.ncols())?;
        if self.is_empty() {
            return Err(SolveError::DimensionMismatch { what: "number of classes", expected: 1, found: 0 });
        }
        let mut out = Array1::zeros(scores.nrows());
        for (o, row) in out.iter_mut().zip(scores.rows()) {
            let mut best = 0;
            for (j, &s) in row.iter().enumerate() {
                if s.is_nan() {
                    return Err(SolveError::NonFinite { what: "the scores" });
                }
                if s > row[best] {
                    best = j;
                }
            }
            *o = best;
        }
        Ok(out)
    }

    /// The predicted label of each row: the class of the largest score.
    ///
    /// # Errors
    /// As [`Classes::argmax_indices`].
    pub fn decode_argmax(&self, scores: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        Ok(self.argmax_indices(scores)?.mapv(|j| self.values[j]))
    }
}

/// A one-vs-rest ridge classifier: a [`RidgeModel`] with one target column
/// per class, fitted on [`Classes::encode_pm1`] targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RidgeClassifier {
    /// The regression model, `n_targets == classes.len()`.
    pub model: RidgeModel,
    /// The classes, in column order.
    pub classes: Classes,
}

impl RidgeClassifier {
    /// Pairs a model with its classes.
    ///
    /// # Errors
    /// [`SolveError::DimensionMismatch`] unless the model has one target per
    /// class.
    pub fn new(model: RidgeModel, classes: Classes) -> Result<Self> {
        check_dim("targets of the model (one per class)", classes.len(), model.n_targets())?;
        Ok(RidgeClassifier { model, classes })
    }

    /// The scores `(n_rows, n_classes)` of dense rows `z (n_rows, l)`.
    ///
    /// # Errors
    /// As [`RidgeModel::predict`].
    pub fn decision_function(&self, z: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.model.predict(z)
    }

    /// The predicted labels of dense rows `z (n_rows, l)`.
    ///
    /// Cost: `2 n_rows l n_classes` flops.
    ///
    /// # Errors
    /// As [`RidgeModel::predict`].
    pub fn predict(&self, z: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        self.classes.decode_argmax(self.model.predict(z)?.view())
    }

    /// The predicted labels of sparse rows.
    ///
    /// # Errors
    /// As [`RidgeModel::predict_sparse`].
    pub fn predict_sparse(&self, z: SparseRowsView<'_>) -> Result<Array1<f64>> {
        self.classes.decode_argmax(self.model.predict_sparse(z)?.view())
    }
}
