//! Reading whole small Parquet files back into memory (for evaluation and
//! tests; the streaming path is [`Dataset::reader`]).

use crate::dataset::Dataset;
use crate::error::Result;
use crate::reader::{NanPolicy, ReadOptions};
use ndarray::{Array1, Array2, Axis};
use std::path::Path;

/// Reads columns of a `.parquet` file or shard directory into an array of
/// shape `(n_rows, columns.len())`, in global row order. Non-finite values
/// and nulls (as NaN) are passed through.
///
/// Memory: the whole result, `8 · n_rows · columns.len()` bytes.
///
/// # Errors
/// As [`Dataset::open`] and [`Dataset::reader`].
pub fn read_columns<S: AsRef<str>>(path: impl AsRef<Path>, columns: &[S]) -> Result<Array2<f64>> {
    let ds = Dataset::open(path)?;
    let names: Vec<String> = columns.iter().map(|c| c.as_ref().to_string()).collect();
    let d = names.len();
    let reader = ds.reader(ReadOptions::new(names).with_nan_policy(NanPolicy::Keep).with_chunk_rows(65536))?;
    let mut parts = Vec::new();
    for chunk in reader {
        parts.push(chunk?.x);
    }
    if parts.is_empty() {
        return Ok(Array2::zeros((0, d)));
    }
    let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
    Ok(ndarray::concatenate(Axis(0), &views).expect("chunks share the column count"))
}

/// Reads one column of a `.parquet` file or shard directory; see
/// [`read_columns`].
pub fn read_column(path: impl AsRef<Path>, column: &str) -> Result<Array1<f64>> {
    let x = read_columns(path, &[column])?;
    Ok(x.index_axis_move(Axis(1), 0))
}

/// Reads one column as a `Vec<f64>`; see [`read_columns`].
pub fn read_column_vec(path: impl AsRef<Path>, column: &str) -> Result<Vec<f64>> {
    Ok(read_column(path, column)?.to_vec())
}
