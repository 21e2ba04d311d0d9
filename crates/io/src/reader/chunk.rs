//! A block of rows as the reader delivers it.

#[allow(unused_imports)] // Referenced by the docs.
use super::options::{NanPolicy, ReadOptions};
use crate::categorical::CategoryCounts;
use arrow::array::ArrayRef;
use ndarray::{Array1, Array2};
use std::ops::Range;

/// Global row ids of the rows of a [`Chunk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowIds {
    /// Consecutive ids (no row was skipped).
    Range(Range<u64>),
    /// Explicit ids, increasing (some rows were skipped).
    List(Vec<u64>),
}

impl RowIds {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            RowIds::Range(r) => (r.end - r.start) as usize,
            RowIds::List(v) => v.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of row `i`.
    ///
    /// # Panics
    /// `i < self.len()`.
    #[track_caller]
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            RowIds::Range(r) => {
                assert!(i < self.len(), "row {i} out of range for {} rows", self.len());
                r.start + i as u64
            }
            RowIds::List(v) => v[i],
        }
    }

    /// The ids in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let (range, list) = match self {
            RowIds::Range(r) => (r.clone(), &[][..]),
            RowIds::List(v) => (0..0, &v[..]),
        };
        RowIdIter { range, list: list.iter() }
    }

    /// The ids as a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            RowIds::Range(r) => r.clone().collect(),
            RowIds::List(v) => v.clone(),
        }
    }

    /// The range, when the ids are consecutive.
    pub fn as_range(&self) -> Option<Range<u64>> {
        match self {
            RowIds::Range(r) => Some(r.clone()),
            RowIds::List(_) => None,
        }
    }
}

struct RowIdIter<'a> {
    range: Range<u64>,
    list: std::slice::Iter<'a, u64>,
}

impl Iterator for RowIdIter<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.range.next().or_else(|| self.list.next().copied())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.range.end - self.range.start) as usize + self.list.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for RowIdIter<'_> {}

/// A block of consecutive rows of one shard.
///
/// A chunk covers one cell of its shard's chunk grid: source rows
/// `first_row .. first_row + n_rows + skipped` (global ids), where cells
/// start every `chunk_rows` rows from the shard's first row and the last
/// cell of a shard may be shorter. Rows dropped under [`NanPolicy::Skip`]
/// are missing from `x`, `y`, `row_ids` and `keep`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Chunk {
    /// Index of the shard in [`Dataset::shards`](crate::Dataset::shards).
    pub shard: usize,
    /// Global row id of the first source row of the cell (which may itself
    /// have been skipped).
    pub first_row: u64,
    /// Global ids of the rows of `x`.
    pub row_ids: RowIds,
    /// Features, row-major (standard layout), shape `(n_rows, n_features)`,
    /// columns as [`ReadOptions::x_column_names`]: the numeric columns, then
    /// each vocabulary's indicator columns.
    pub x: Array2<f64>,
    /// Label, length `n_rows`, if a label column was requested.
    pub y: Option<Array1<f64>>,
    /// Rows of the cell dropped under [`NanPolicy::Skip`] (or, under
    /// [`NanPolicy::Impute`], for a missing label).
    pub skipped: usize,
    /// Missing values replaced under [`NanPolicy::Impute`] in this chunk's
    /// rows (numeric fills and categories sent to "other").
    pub imputed: u64,
    /// Per vocabulary of [`ReadOptions::vocabularies`]: values of this
    /// chunk's rows that went to the "other" slot (outside the vocabulary,
    /// or imputed nulls).
    pub other: Vec<u64>,
    /// Per column of [`ReadOptions::categorical`]: value counts of this
    /// chunk's rows.
    pub category_counts: Vec<CategoryCounts>,
    /// Per column of [`ReadOptions::keep`]: the column's values for the rows
    /// of `x`, unchanged (Arrow arrays of the column's type; partition keys
    /// as `Int64`, `Float64` or `Utf8`).
    pub keep: Vec<ArrayRef>,
}

impl Chunk {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.x.nrows()
    }

    /// Global id of row `i`.
    ///
    /// # Panics
    /// `i < self.n_rows()`.
    #[track_caller]
    #[inline]
    pub fn row_id(&self, i: usize) -> u64 {
        self.row_ids.get(i)
    }

    /// Global ids of the source rows this chunk covers, skipped rows
    /// included.
    pub fn source_rows(&self) -> Range<u64> {
        self.first_row..self.first_row + (self.n_rows() + self.skipped) as u64
    }
}
