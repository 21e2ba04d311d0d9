//! Mergeable ridge statistics over numpy rows, and the selection of σ and
//! α from them.
//!
//! For every bandwidth candidate (one fitted feature map each) and every
//! part of the validation split, a [`Moments`] accumulates `[z, 1, y]ᵀ[z,
//! 1, y]`. A row's part is a hash of its global row id and the seed, so
//! statistics of disjoint row ranges, computed anywhere, merge into the
//! statistics of their union: bitwise equal to one pass for the same
//! partition, equal to rounding otherwise (`Moments` sums rows in blocks of
//! 512 consecutive rows of each part's stream).
//!
//! The split rule, the default α grid and the sparse/dense choice are the
//! engine's (`kapprox::fit::{Split, default_alphas}`,
//! `kapprox::fit::passes::sparse_pays`), so a numpy fit splits and chooses
//! as `kapprox fit` does. Classification candidates are chosen here by the
//! validation MSE of the ±1 targets; the engine (`fit_parquet`) chooses by
//! the accuracy on sampled held-out rows.

use crate::blocks::{transform_dense, transform_sparse};
use crate::map::PyFeatureMap;
use crate::value_error;
use kapprox::fit::passes::sparse_pays;
use kapprox::fit::{Split, default_alphas};
use kapprox_core::Moments;
use kapprox_features::OutputKind;
use kapprox_solve::{Classes, Ridge, SelectionReport};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis, s};
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde::{Deserialize, Serialize};

/// Rows transformed at a time: bounds the feature buffer to `CHUNK_ROWS · l`
/// doubles per candidate. Does not change the statistics.
const CHUNK_ROWS: usize = 8192;

/// The split as the Python layer writes it (`{"holdout": f}` or
/// `{"folds": k}`); the rule itself is the engine's [`Split`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SplitDoc {
    Holdout(f64),
    Folds(usize),
}

impl From<SplitDoc> for Split {
    fn from(doc: SplitDoc) -> Split {
        match doc {
            SplitDoc::Holdout(f) => Split::Holdout(f),
            SplitDoc::Folds(k) => Split::Folds(k),
        }
    }
}

/// The engine's split check, with the Python parameter names.
fn check_split(split: Split) -> PyResult<()> {
    split.check().map_err(|e| value_error(e.to_string().replace("--", "")))
}

/// Everything but the maps that two statistics must share to merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Config {
    split: SplitDoc,
    seed: u64,
    /// Classification: the class codes, targets encoded ±1 one-vs-rest.
    classes: Option<Vec<f64>>,
}

impl Config {
    fn split(&self) -> Split {
        self.split.into()
    }

    fn n_targets(&self) -> usize {
        self.classes.as_ref().map_or(1, Vec::len)
    }
}

/// The validation part of each of the rows `first_row..first_row + n`
/// under the split `split_json` (`{"holdout": f}` or `{"folds": k}`) and
/// `seed`: hold-out part 1 validates; fold `j` is held out in turn.
#[pyfunction]
pub(crate) fn split_parts(split_json: &str, seed: u64, first_row: u64, n: u64) -> PyResult<Vec<usize>> {
    let split: SplitDoc = serde_json::from_str(split_json).map_err(|e| value_error(format!("invalid split: {e}")))?;
    let split = Split::from(split);
    check_split(split)?;
    Ok((first_row..first_row.saturating_add(n)).map(|id| split.part_of(seed, id)).collect())
}

/// Ridge statistics per bandwidth candidate and split part, over a set of
/// row-id ranges.
#[pyclass(module = "kapprox._native", name = "Statistics")]
pub struct PyStatistics {
    config: Config,
    maps: Vec<PyFeatureMap>,
    /// `parts[candidate][part]`.
    parts: Vec<Vec<Moments>>,
    /// Disjoint, sorted `[start, end)` row-id ranges accumulated so far.
    rows: Vec<(u64, u64)>,
}

impl PyStatistics {
    fn add_range(&mut self, start: u64, end: u64) -> Result<(), String> {
        if let Some(&(a, b)) = self.rows.iter().find(|&&(a, b)| start < b && a < end) {
            return Err(format!("rows {start}..{end} overlap rows {a}..{b} already in these statistics"));
        }
        self.rows.push((start, end));
        self.rows.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.rows.len());
        for &(a, b) in &self.rows {
            match merged.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ => merged.push((a, b)),
            }
        }
        self.rows = merged;
        Ok(())
    }

    fn accumulate(&mut self, x: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>, first_id: u64) {
        let (split, seed) = (self.config.split(), self.config.seed);
        let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); split.n_parts()];
        for start in (0..x.nrows()).step_by(CHUNK_ROWS) {
            let end = (start + CHUNK_ROWS).min(x.nrows());
            let (xc, yc) = (x.slice(s![start..end, ..]), y.slice(s![start..end, ..]));
            rows_of.iter_mut().for_each(Vec::clear);
            for i in 0..end - start {
                rows_of[split.part_of(seed, first_id + (start + i) as u64)].push(i);
            }
            for (map, parts) in self.maps.iter().zip(&mut self.parts) {
                let map = map.map.as_ref();
                match map.output_kind() {
                    OutputKind::Sparse { nnz_per_row } if sparse_pays(nnz_per_row, map.n_output()) => {
                        let z = transform_sparse(map, xc);
                        for (m, rows) in parts.iter_mut().zip(&rows_of) {
                            m.update_sparse_selected(z.view(), yc, rows);
                        }
                    }
                    OutputKind::Sparse { .. } => {
                        let z = transform_sparse(map, xc).to_dense();
                        for (m, rows) in parts.iter_mut().zip(&rows_of) {
                            m.update_selected(z.view(), yc, rows);
                        }
                    }
                    OutputKind::Dense => {
                        let mut z = Array2::zeros((end - start, map.n_output()));
                        transform_dense(map, xc, z.view_mut());
                        for (m, rows) in parts.iter_mut().zip(&rows_of) {
                            m.update_selected(z.view(), yc, rows);
                        }
                    }
                }
            }
        }
    }

    fn targets(&self, y: ArrayView1<'_, f64>) -> Result<Array2<f64>, String> {
        match &self.config.classes {
            None => Ok(y.insert_axis(Axis(1)).to_owned()),
            Some(c) => {
                let classes = Classes::from_labels(c.iter().copied()).map_err(|e| e.to_string())?;
                classes.encode_pm1(y).map_err(|e| e.to_string())
            }
        }
    }

    fn n_rows(&self) -> u64 {
        self.rows.iter().map(|&(a, b)| b - a).sum()
    }

    fn select(&self, alphas: Option<Vec<f64>>) -> Result<Solution, String> {
        let n = self.n_rows();
        if n == 0 {
            return Err("the statistics hold no rows".into());
        }
        let alphas = alphas.unwrap_or_else(|| default_alphas(n as f64));
        // One σ and one α leave nothing to choose: no validation rows needed.
        let choose = self.maps.len() > 1 || alphas.len() > 1;
        let mut candidates = Vec::with_capacity(self.maps.len());
        let mut best: Option<(usize, f64, f64)> = None;
        for (c, parts) in self.parts.iter().enumerate() {
            let parts: Vec<Moments> = parts.iter().map(flushed).collect();
            let report = if choose { Some(self.validate(&parts, &alphas, n)?) } else { None };
            let (alpha, mse) = report.as_ref().map_or((alphas[0], f64::NAN), |r| (r.best_alpha, r.best_mse()));
            // Strictly better replaces: ties keep the earlier candidate.
            if best.is_none_or(|(_, _, m)| mse < m) {
                best = Some((c, alpha, mse));
            }
            candidates.push(report);
        }
        let (best, alpha, _) = best.expect("at least one candidate");
        let mut total = flushed(&self.parts[best][0]);
        for p in &self.parts[best][1..] {
            total.merge(p);
        }
        total.flush();
        let params = Ridge::params().with_alpha(alpha).check().map_err(|e| e.to_string())?;
        let fit = params.fit(&total).map_err(|e| e.to_string())?;
        Ok(Solution { best, alpha, coef: fit.model.coef, intercept: fit.model.intercept.to_vec(), candidates })
    }

    fn validate(&self, parts: &[Moments], alphas: &[f64], n: u64) -> Result<SelectionReport, String> {
        for p in self.config.split().held_out_parts() {
            if parts[p].n_samples() == 0.0 {
                return Err(format!(
                    "held-out part {p} of the validation split has no rows: {n} rows are too few to choose sigma \
                     and alpha; use more rows, a larger validation fraction, or one sigma and one alpha"
                ));
            }
        }
        let report = match self.config.split() {
            Split::Holdout(_) => kapprox_solve::holdout(&parts[0], &parts[1], alphas),
            Split::Folds(_) => kapprox_solve::cross_validate(parts, alphas),
        };
        report.map_err(|e| e.to_string())
    }
}

fn flushed(m: &Moments) -> Moments {
    let mut m = m.clone();
    m.flush();
    m
}

/// What pickling stores: config JSON, maps, Grams, row ranges.
type StatisticsArgs<'py> = (String, Vec<PyFeatureMap>, Bound<'py, PyList>, Vec<(u64, u64)>);

/// The outcome of selection and the final solve.
struct Solution {
    best: usize,
    alpha: f64,
    coef: Array2<f64>,
    intercept: Vec<f64>,
    candidates: Vec<Option<SelectionReport>>,
}

#[pymethods]
impl PyStatistics {
    /// Empty statistics for these candidate maps, or (as pickling calls
    /// it) statistics restored from their Grams and row ranges.
    ///
    /// `config_json` holds `split` (`{"holdout": f}` or `{"folds": k}`),
    /// `seed` and `classes` (class codes, or null for regression).
    #[new]
    #[pyo3(signature = (config_json, maps, grams=None, rows=None))]
    fn py_new(
        config_json: &str,
        maps: Vec<PyFeatureMap>,
        grams: Option<Vec<Vec<PyReadonlyArray2<'_, f64>>>>,
        rows: Option<Vec<(u64, u64)>>,
    ) -> PyResult<Self> {
        let config: Config =
            serde_json::from_str(config_json).map_err(|e| value_error(format!("invalid statistics config: {e}")))?;
        check_split(config.split())?;
        if maps.is_empty() {
            return Err(value_error("statistics need at least one candidate map"));
        }
        if let Some(c) = &config.classes {
            Classes::from_labels(c.iter().copied()).map_err(value_error)?;
            if c.len() < 2 {
                return Err(value_error(format!("classification needs at least 2 classes, found {}", c.len())));
            }
        }
        let d = maps[0].map.n_input();
        if let Some(m) = maps.iter().find(|m| m.map.n_input() != d) {
            return Err(value_error(format!("candidate maps take {d} and {} inputs", m.map.n_input())));
        }
        let k = config.n_targets();
        let n_parts = config.split().n_parts();
        let parts: Vec<Vec<Moments>> = match grams {
            None => maps.iter().map(|m| (0..n_parts).map(|_| Moments::new(m.map.n_output(), k)).collect()).collect(),
            Some(grams) => {
                if grams.len() != maps.len() || grams.iter().any(|g| g.len() != n_parts) {
                    return Err(value_error("stored Grams do not match the candidates and split parts"));
                }
                let mut parts = Vec::with_capacity(maps.len());
                for (m, gs) in maps.iter().zip(grams) {
                    let l = m.map.n_output();
                    let w = l + 1 + k;
                    let mut ps = Vec::with_capacity(n_parts);
                    for g in gs {
                        let g = g.as_array();
                        if g.dim() != (w, w) {
                            return Err(value_error(format!("a stored Gram is {:?}, expected ({w}, {w})", g.dim())));
                        }
                        ps.push(Moments::from_augmented_gram(l, k, g));
                    }
                    parts.push(ps);
                }
                parts
            }
        };
        let mut out = PyStatistics { config, maps, parts, rows: Vec::new() };
        for (a, b) in rows.unwrap_or_default() {
            if a > b {
                return Err(value_error(format!("invalid row range {a}..{b}")));
            }
            out.add_range(a, b).map_err(value_error)?;
        }
        Ok(out)
    }

    /// Pickling: the config, the maps, the flushed Grams and the row ranges.
    fn __getnewargs__<'py>(&self, py: Python<'py>) -> PyResult<StatisticsArgs<'py>> {
        let grams = PyList::empty(py);
        for parts in &self.parts {
            let list = PyList::empty(py);
            for m in parts {
                list.append(flushed(m).augmented_gram().to_owned().into_pyarray(py))?;
            }
            grams.append(list)?;
        }
        let config = serde_json::to_string(&self.config).map_err(value_error)?;
        Ok((config, self.maps.clone(), grams, self.rows.clone()))
    }

    /// Rows accumulated.
    #[getter(n_rows)]
    fn n_rows_py(&self) -> u64 {
        self.n_rows()
    }

    /// The row-id ranges `[start, end)` accumulated, sorted and coalesced.
    #[getter]
    fn row_ranges(&self) -> Vec<(u64, u64)> {
        self.rows.clone()
    }

    /// The first row id after every range (where the next batch starts).
    #[getter]
    fn next_row(&self) -> u64 {
        self.rows.last().map_or(0, |r| r.1)
    }

    /// The candidate maps.
    #[getter]
    fn maps(&self) -> Vec<PyFeatureMap> {
        self.maps.clone()
    }

    /// Bytes held by the statistics (the augmented Grams).
    #[getter]
    fn statistics_bytes(&self) -> u64 {
        let k = self.config.n_targets();
        let per_part: u64 = self.maps.iter().map(|m| ((m.map.n_output() + 1 + k) as u64).pow(2) * 8).sum();
        per_part * self.config.split().n_parts() as u64
    }

    /// Adds rows `x (n, d)` (already scaled) with targets `y (n,)` (class
    /// codes for classification) as global rows `row_offset..row_offset + n`.
    fn update(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
        row_offset: u64,
    ) -> PyResult<()> {
        let (x, y) = (x.as_array(), y.as_array());
        let d = self.maps[0].map.n_input();
        if x.ncols() != d {
            return Err(value_error(format!("X has {} features, but the statistics take {d}", x.ncols())));
        }
        if y.len() != x.nrows() {
            return Err(value_error(format!("X has {} rows but y has {}", x.nrows(), y.len())));
        }
        if x.nrows() == 0 {
            return Ok(());
        }
        let end = row_offset
            .checked_add(x.nrows() as u64)
            .ok_or_else(|| value_error(format!("row_offset {row_offset} + {} rows overflows", x.nrows())))?;
        let targets = self.targets(y).map_err(value_error)?;
        self.add_range(row_offset, end).map_err(value_error)?;
        py.detach(|| self.accumulate(x, targets.view(), row_offset));
        Ok(())
    }

    /// `self + other`: the statistics of both row sets. Both must come from
    /// the same configuration and maps and cover disjoint rows.
    fn merged(&self, py: Python<'_>, other: &PyStatistics) -> PyResult<PyStatistics> {
        if self.config != other.config {
            return Err(value_error(format!(
                "cannot merge statistics of different configurations: {} vs {}",
                serde_json::to_string(&self.config).unwrap_or_default(),
                serde_json::to_string(&other.config).unwrap_or_default()
            )));
        }
        if self.maps.len() != other.maps.len() {
            return Err(value_error(format!(
                "cannot merge statistics of {} and {} candidate maps",
                self.maps.len(),
                other.maps.len()
            )));
        }
        for (i, (a, b)) in self.maps.iter().zip(&other.maps).enumerate() {
            let (sa, sb) = (a.spec_json_string(), b.spec_json_string());
            if sa != sb || a.map.tensors() != b.map.tensors() {
                return Err(value_error(format!(
                    "cannot merge statistics of different maps (candidate {i}): {sa} vs {sb}"
                )));
            }
        }
        let mut out = PyStatistics {
            config: self.config.clone(),
            maps: self.maps.clone(),
            parts: self.parts.clone(),
            rows: self.rows.clone(),
        };
        for &(a, b) in &other.rows {
            out.add_range(a, b).map_err(value_error)?;
        }
        py.detach(|| {
            for (mine, theirs) in out.parts.iter_mut().zip(&other.parts) {
                for (m, t) in mine.iter_mut().zip(theirs) {
                    m.merge(t);
                }
            }
        });
        Ok(out)
    }

    /// Chooses the candidate and α (validation MSE from the statistics of
    /// the held-out parts) and solves ridge on all rows. `alphas=None` is
    /// the default grid `n · 10^(−9..−1)`.
    ///
    /// Returns a dict: `best` (candidate index), `alpha`, `coef (l, k)`,
    /// `intercept (k,)`, and `candidates`, per candidate `None` (nothing to
    /// choose) or a dict with `best_alpha`, `validation_mse`, `alphas` and
    /// `mse` (mean validation MSE per α).
    #[pyo3(signature = (alphas=None))]
    fn solve<'py>(&self, py: Python<'py>, alphas: Option<Vec<f64>>) -> PyResult<Bound<'py, PyDict>> {
        let sol = py.detach(|| self.select(alphas)).map_err(value_error)?;
        let out = PyDict::new(py);
        out.set_item("best", sol.best)?;
        out.set_item("alpha", sol.alpha)?;
        out.set_item("coef", sol.coef.into_pyarray(py))?;
        out.set_item("intercept", sol.intercept.into_pyarray(py))?;
        let candidates = PyList::empty(py);
        for report in sol.candidates {
            match report {
                None => candidates.append(py.None())?,
                Some(r) => {
                    let c = PyDict::new(py);
                    c.set_item("best_alpha", r.best_alpha)?;
                    c.set_item("validation_mse", r.best_mse())?;
                    c.set_item("alphas", r.alphas.clone())?;
                    c.set_item("mse", r.mean_mse.to_vec())?;
                    candidates.append(c)?;
                }
            }
        }
        out.set_item("candidates", candidates)?;
        Ok(out)
    }
}
