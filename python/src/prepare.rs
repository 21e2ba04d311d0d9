//! What a fit learns from the rows before its statistics, chosen as the
//! CLI's prepare pass chooses it: column scaling from column statistics,
//! and row samples by the smallest `hash(seed, row id)` (the same rows
//! whatever the chunking), for the bandwidth rule and Nyström's landmarks.
//! The median rule and its sample size are the engine's
//! (`kapprox::sigma`).

use crate::value_error;
use kapprox::sigma::SIGMA_SAMPLE_ROWS;
use kapprox_io::{ColumnStats, Scaler, ScalerKind};
use kapprox_sketch::Reservoir;
use ndarray::{Array2, ArrayView2};
use numpy::PyReadonlyArray2;
use pyo3::prelude::*;

/// The `k` rows of `x` (row ids `0..n`) with the smallest priority
/// `hash(seed, id)`, in row order: the CLI's landmark sample. All rows when
/// `n ≤ k`.
pub(crate) fn landmarks(x: ArrayView2<'_, f64>, k: usize, seed: u64) -> Result<(Vec<u64>, Array2<f64>), String> {
    if k == 0 {
        return Err("the number of landmarks must be at least 1".into());
    }
    let mut r = Reservoir::new(k, x.ncols(), seed);
    r.update(x, 0).map_err(|e| e.to_string())?;
    Ok(r.finish())
}

/// The scaling `kapprox fit --scale KIND` would fit on these rows, as the
/// model file stores it (JSON: `{"kind": "standard", "mean": [...],
/// "scale": [...]}`, `{"kind": "min_max", "min": [...], "range": [...]}` or
/// `{"kind": "none"}`).
#[pyfunction]
pub(crate) fn fit_scaler(py: Python<'_>, kind: &str, x: PyReadonlyArray2<'_, f64>) -> PyResult<String> {
    let kind: ScalerKind = kind.parse().map_err(value_error)?;
    let x = x.as_array();
    let scaler = py.detach(|| {
        let mut stats = ColumnStats::unnamed(x.ncols());
        stats.update(x);
        Scaler::fit(kind, &stats)
    });
    serde_json::to_string(&scaler).map_err(value_error)
}

/// The median rule of `--sigma auto`: the median Euclidean distance over all
/// pairs of the 1000 rows of `x` with the smallest `hash(seed, row id)` (1
/// when there are fewer than two distinct rows).
#[pyfunction]
pub(crate) fn median_distance(py: Python<'_>, x: PyReadonlyArray2<'_, f64>, seed: u64) -> PyResult<f64> {
    let x = x.as_array();
    py.detach(|| {
        let (_, rows) = landmarks(x, SIGMA_SAMPLE_ROWS, seed)?;
        Ok(kapprox::sigma::median_distance(&rows.view()))
    })
    .map_err(|e: String| value_error(e))
}
