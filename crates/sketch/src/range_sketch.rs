//! The interface every range sketch implements, below the sketches and
//! the run-time choice among them.

use crate::error::Result;
use ndarray::{Array2, ArrayView2};

/// A mergeable streaming accumulator of the range sketch `FᵀΘ (d, l)` of
/// rows `F (n, d)`, for a random `Θ (n, l)` that is never stored: row `i`
/// of `Θ` is a pure function of `(seed, i)` for the global row id `i`.
///
/// All kinds are scaled so that `E[ΘΘᵀ] = I` (a Gaussian `Θ` has entries
/// `N(0, 1/l)`), so `(FᵀΘ)(GᵀΘ)ᵀ` estimates `FᵀG` without rescaling.
///
/// # Determinism
/// For the same seed, rows and row ids, fed in increasing id order, the
/// result is bitwise identical whatever the chunk sizes. Splitting the rows
/// between accumulators and merging changes only the summation order
/// (equal to ~1e-15 relative).
///
/// # Row ids
/// Ids within one update must be strictly increasing (the order of a
/// stream); across updates any order is allowed, and each id must be added
/// once per pass (repeats within the pending block are refused with
/// [`SketchError::DuplicateRow`](crate::SketchError::DuplicateRow); repeats across blocks cannot be detected
/// in bounded memory and would count the row twice).
pub trait RangeSketch {
    /// Columns of the rows, `d`.
    fn n_features(&self) -> usize;

    /// Columns of the sketch, `l`.
    fn n_components(&self) -> usize;

    /// Seed of `Θ`.
    fn seed(&self) -> u64;

    /// Adds rows `(n_rows, d)` with global ids `first_row_id ..
    /// first_row_id + n_rows`.
    ///
    /// # Errors
    /// Wrong column count, id overflow, or a row already buffered.
    fn update(&mut self, rows: ArrayView2<'_, f64>, first_row_id: u64) -> Result<()>;

    /// Adds rows `(n_rows, d)` with explicit, strictly increasing global ids
    /// (e.g. the training rows of a split).
    ///
    /// # Errors
    /// Wrong column count, `ids.len() != n_rows`, ids not increasing, or a
    /// row already buffered.
    fn update_ids(&mut self, rows: ArrayView2<'_, f64>, ids: &[u64]) -> Result<()>;

    /// Adds `other`'s rows to `self`.
    ///
    /// # Errors
    /// Different `d`, `l`, seed or block size; or both hold the same row of
    /// a pending block.
    fn merge(&mut self, other: &Self) -> Result<()>;

    /// Adds the rows of a partial block now instead of waiting for the rest
    /// of the block. By linearity the missing rows may still arrive later,
    /// here or in another accumulator; the sum is the same to rounding.
    /// Updates flush complete blocks, and [`finish`](RangeSketch::finish)
    /// flushes, so this is needed only to read or store a final state.
    fn flush(&mut self);

    /// The sketch `FᵀΘ`, shape `(d, l)`.
    fn finish(self) -> Array2<f64>
    where
        Self: Sized;
}
