//! Sparse feature rows with a fixed number of stored entries per row.
//!
//! Random binning stores exactly one entry per grid and EOF exactly one per
//! level and dimension, so every row of a sparse map has the same number of
//! stored entries `k`. That makes an ELLPACK layout (two dense `(n, k)`
//! arrays) the natural format: no row pointers, chunk-friendly, and a row is
//! two contiguous slices. Duplicate column indices within a row are allowed
//! and mean the values add up.

use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// Owned sparse rows: `indices` and `values` both have shape `(n_rows, k)`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseRows {
    /// Number of columns of the (conceptual) dense matrix.
    pub n_cols: usize,
    /// Column index of each stored entry, `< n_cols`.
    pub indices: Array2<u32>,
    /// Value of each stored entry.
    pub values: Array2<f64>,
}

impl SparseRows {
    /// All-zero storage for `n_rows` rows with `k` entries each.
    pub fn zeros(n_rows: usize, k: usize, n_cols: usize) -> Self {
        SparseRows { n_cols, indices: Array2::zeros((n_rows, k)), values: Array2::zeros((n_rows, k)) }
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.indices.nrows()
    }

    /// Stored entries per row.
    pub fn nnz_per_row(&self) -> usize {
        self.indices.ncols()
    }

    /// A borrowed view.
    pub fn view(&self) -> SparseRowsView<'_> {
        SparseRowsView { n_cols: self.n_cols, indices: self.indices.view(), values: self.values.view() }
    }

    /// A mutable borrowed view, for feature maps writing into caller buffers.
    pub fn view_mut(&mut self) -> SparseRowsViewMut<'_> {
        SparseRowsViewMut { n_cols: self.n_cols, indices: self.indices.view_mut(), values: self.values.view_mut() }
    }

    /// The dense `(n_rows, n_cols)` matrix (for tests and small inputs).
    pub fn to_dense(&self) -> Array2<f64> {
        self.view().to_dense()
    }
}

/// Borrowed sparse rows; see [`SparseRows`].
#[derive(Clone, Copy, Debug)]
pub struct SparseRowsView<'a> {
    /// Number of columns of the (conceptual) dense matrix.
    pub n_cols: usize,
    /// Column indices, shape `(n_rows, k)`.
    pub indices: ArrayView2<'a, u32>,
    /// Values, shape `(n_rows, k)`.
    pub values: ArrayView2<'a, f64>,
}

impl SparseRowsView<'_> {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.indices.nrows()
    }

    /// The dense `(n_rows, n_cols)` matrix.
    pub fn to_dense(&self) -> Array2<f64> {
        let mut out = Array2::zeros((self.n_rows(), self.n_cols));
        for (r, (idx, val)) in self.indices.rows().into_iter().zip(self.values.rows()).enumerate() {
            for (&j, &v) in idx.iter().zip(val.iter()) {
                out[[r, j as usize]] += v;
            }
        }
        out
    }
}

/// Mutable borrowed sparse rows, the output buffer of sparse feature maps.
#[derive(Debug)]
pub struct SparseRowsViewMut<'a> {
    /// Number of columns of the (conceptual) dense matrix.
    pub n_cols: usize,
    /// Column indices, shape `(n_rows, k)`.
    pub indices: ArrayViewMut2<'a, u32>,
    /// Values, shape `(n_rows, k)`.
    pub values: ArrayViewMut2<'a, f64>,
}
