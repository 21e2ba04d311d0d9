//! The engine (the `kapprox` library crate) for Python: fits streamed from a
//! Parquet file or directory exactly as `kapprox fit` streams them, model
//! files, and predictions of numpy rows or of Parquet data.
//!
//! A fit's settings come from Python as one JSON document whose fields are
//! the command line's flags ([`FitSettings`]); they are validated into the
//! engine's [`FitConfig`] the way the command line validates its flags, so
//! the same settings give bitwise the same model as `kapprox fit`.

use crate::map::PyFeatureMap;
use crate::value_error;
use kapprox::fit::Split;
use kapprox::io::{LabelSpec, NanPolicy, ScalerKind};
use kapprox::method::MethodParams;
use kapprox::model::{MODEL_FORMAT, MODEL_VERSION, ModelDoc};
use kapprox::pipeline::{Features, transform_parallel};
use kapprox::predict::{PredictOutput, predict_to_dir_with};
use kapprox::sigma::parse_sigmas;
use kapprox::{FitConfig, Model, ReadConfig, Silent, Task};
use kapprox_features::{FeatureMap, OutputKind};
use ndarray::{Array1, Array2, Axis, s};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Deserialize;
use std::path::PathBuf;

/// Rows scaled, mapped and scored at a time by [`PyModel::scores`]: bounds
/// the feature buffer to `PREDICT_CHUNK_ROWS · l` doubles.
const PREDICT_CHUNK_ROWS: usize = 8192;

/// A fit's settings as the command line's `fit` flags name them (JSON from
/// the Python estimators). Every field is required: the Python layer
/// states the defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FitSettings {
    train: PathBuf,
    map: String,
    kernel: String,
    nu: f64,
    form: Option<String>,
    n_components: usize,
    grids: Option<usize>,
    inner: Option<usize>,
    base: String,
    sketch_features: Option<usize>,
    power: usize,
    tefm_strategy: String,
    rel_tol: f64,
    level: Option<u32>,
    eof_basis: Option<String>,
    eof_subset: Option<String>,
    /// `--sigma`: `auto*0.5,auto,2.5`.
    sigma: String,
    /// `--alpha` as a list; `None` = the default grid.
    alpha: Option<Vec<f64>>,
    task: Task,
    /// `standard`, `minmax`, `none`, or `None` for the map's default.
    scale: Option<String>,
    /// `--label`: a column name, `last` or `auto` (the label recorded by
    /// `kapprox convert`).
    label: String,
    chunk_rows: usize,
    /// `refuse` or `skip`.
    nan: String,
    validation: f64,
    folds: Option<usize>,
    seed: u64,
    max_memory: Option<u64>,
}

fn label_spec(text: &str) -> LabelSpec {
    match text {
        "last" => LabelSpec::Last,
        "auto" => LabelSpec::Hint,
        name => LabelSpec::Name(name.to_string()),
    }
}

pub(crate) fn nan_policy(text: &str) -> anyhow::Result<NanPolicy> {
    match text {
        "refuse" => Ok(NanPolicy::Refuse),
        "skip" => Ok(NanPolicy::Skip),
        other => anyhow::bail!("nan: {other:?}, expected \"refuse\" or \"skip\""),
    }
}

/// The engine configuration of `settings`, validated as `kapprox fit`
/// validates its flags.
pub(crate) fn fit_config(settings_json: &str) -> anyhow::Result<FitConfig> {
    let a: FitSettings = serde_json::from_str(settings_json)?;
    if a.chunk_rows == 0 {
        anyhow::bail!("chunk_rows: must be at least 1");
    }
    let params = MethodParams {
        map: a.map,
        kernel: a.kernel,
        nu: a.nu,
        form: a.form,
        n_components: a.n_components,
        grids: a.grids,
        inner: a.inner,
        base: a.base,
        sketch_features: a.sketch_features,
        power: a.power,
        tefm_strategy: a.tefm_strategy,
        rel_tol: a.rel_tol,
        level: a.level,
        eof_basis: a.eof_basis,
        eof_subset: a.eof_subset,
    };
    let exact = params.names_exact();
    let n_targets = if a.task == Task::Regression { 1 } else { 2 };
    let method = if exact { params.check_exact()? } else { params.check(n_targets, a.max_memory)? };
    let scale = match (method.needs_unit_cube(), a.scale.as_deref()) {
        (true, None | Some("minmax")) => ScalerKind::MinMax,
        (true, Some(other)) => {
            anyhow::bail!("scale: eof needs inputs in [0, 1]; use 'minmax' (its default), not {other:?}")
        }
        (false, None) => ScalerKind::Standard,
        (false, Some(kind)) => kind.parse()?,
    };
    let split = match a.folds {
        Some(_) if exact => anyhow::bail!("folds: exact kernel ridge selects on one held-out part (validation)"),
        Some(k) => Split::Folds(k),
        None => Split::Holdout(a.validation),
    };
    split.check()?;
    Ok(FitConfig {
        train: a.train,
        method,
        sigmas: parse_sigmas(&a.sigma)?,
        alphas: a.alpha,
        task: a.task,
        scale,
        read: ReadConfig {
            label: label_spec(&a.label),
            chunk_rows: a.chunk_rows,
            nan: nan_policy(&a.nan)?,
            select: Default::default(),
        },
        split,
        seed: a.seed,
        max_memory: if exact { None } else { a.max_memory },
        precision: Default::default(),
        extend_grid: false,
    })
}

/// Fits the settings (JSON, see the Python estimators) on their Parquet
/// training data, streaming it as `kapprox fit` does; returns the model and
/// the training report (JSON). The GIL is released while the fit runs.
#[pyfunction]
pub(crate) fn fit_parquet(py: Python<'_>, settings_json: &str) -> PyResult<(PyModel, String)> {
    let cfg = fit_config(settings_json).map_err(value_error)?;
    let (model, report) = py.detach(|| kapprox::fit(&cfg, &Silent)).map_err(|e| value_error(format!("{e:#}")))?;
    let report = serde_json::to_string(&report).map_err(value_error)?;
    Ok((PyModel { model }, report))
}

/// A fitted engine model: what `kapprox fit` writes and `kapprox predict`
/// reads (scaling, feature map, ridge weights, task, classes).
#[pyclass(module = "kapprox._native", name = "Model", frozen)]
pub struct PyModel {
    pub(crate) model: Model,
}

/// Rebuilds a map from its spec and tensors (a map is immutable; this is
/// how model files rebuild theirs).
fn rebuild(map: &dyn FeatureMap) -> anyhow::Result<Box<dyn FeatureMap>> {
    Ok(map.spec().build(&map.tensors())?)
}

#[pymethods]
impl PyModel {
    /// Reads and checks a model file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyModel> {
        let model = py.detach(|| Model::load(&path)).map_err(|e| value_error(format!("{e:#}")))?;
        Ok(PyModel { model })
    }

    /// A model from its parts: the document (JSON, [`ModelDoc`] without
    /// `format`, `version` and `kapprox_version`, which are filled in), a
    /// fitted map, weights `(l, k)` and intercepts `(k)`. Checks the shapes
    /// as a model file's are checked.
    #[staticmethod]
    fn from_parts(
        doc_json: &str,
        map: &PyFeatureMap,
        coef: PyReadonlyArray2<'_, f64>,
        intercept: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<PyModel> {
        let mut doc: serde_json::Value = serde_json::from_str(doc_json).map_err(value_error)?;
        let fields = doc.as_object_mut().ok_or_else(|| value_error("the model document must be a JSON object"))?;
        fields.insert("format".into(), MODEL_FORMAT.into());
        fields.insert("version".into(), MODEL_VERSION.into());
        fields.insert("kapprox_version".into(), env!("CARGO_PKG_VERSION").into());
        let doc: ModelDoc = serde_json::from_value(doc).map_err(|e| value_error(format!("model document: {e}")))?;
        let map = rebuild(map.map.as_ref()).map_err(value_error)?;
        let (coef, intercept) = (coef.as_array().to_owned(), intercept.as_array().to_owned());
        check_shapes(&doc, map.as_ref(), &coef, &intercept).map_err(value_error)?;
        Ok(PyModel { model: Model { doc, map, coef, intercept } })
    }

    /// Writes the model file atomically (what `kapprox predict` reads).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.model.save(&path)).map_err(|e| value_error(format!("{e:#}")))
    }

    /// The model file's bytes (for pickling).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let dir = tempfile::tempdir().map_err(value_error)?;
        let path = dir.path().join("model.safetensors");
        self.model.save(&path).map_err(|e| value_error(format!("{e:#}")))?;
        let bytes = std::fs::read(&path).map_err(value_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A model from [`PyModel::to_bytes`].
    #[staticmethod]
    fn from_bytes(bytes: &[u8]) -> PyResult<PyModel> {
        let dir = tempfile::tempdir().map_err(value_error)?;
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, bytes).map_err(value_error)?;
        Ok(PyModel { model: Model::load(&path).map_err(|e| value_error(format!("{e:#}")))? })
    }

    /// The model document as JSON ([`ModelDoc`]).
    fn doc_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.model.doc).map_err(value_error)
    }

    /// The feature map.
    fn map(&self) -> PyResult<PyFeatureMap> {
        Ok(PyFeatureMap::new_boxed(rebuild(self.model.map.as_ref()).map_err(value_error)?))
    }

    /// Weights `(l, k)`.
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.model.coef.clone().into_pyarray(py)
    }

    /// Intercepts `(k)`.
    fn intercept<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.model.intercept.clone().into_pyarray(py)
    }

    /// Scores `(n, k)` of raw rows `x` (columns in the order of the
    /// document's `feature_columns`): scaled, mapped and scored as `kapprox
    /// predict` does, in chunks of 8192 rows, with the GIL released.
    fn scores<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'py, f64>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = x.as_array();
        let d = self.model.doc.feature_columns.len();
        if x.ncols() != d {
            return Err(value_error(format!("X has {} features, but the model takes {d}", x.ncols())));
        }
        let k = self.model.coef.ncols();
        let out = py.detach(|| {
            let mut out = Array2::zeros((x.nrows(), k));
            let mut z = match self.model.map.output_kind() {
                OutputKind::Dense => Features::Dense(Array2::zeros((0, self.model.map.n_output()))),
                OutputKind::Sparse { nnz_per_row } => {
                    Features::Sparse(kapprox::core::SparseRows::zeros(0, nnz_per_row, self.model.map.n_output()))
                }
            };
            for (i, rows) in x.axis_chunks_iter(Axis(0), PREDICT_CHUNK_ROWS).enumerate() {
                let mut scaled = rows.to_owned();
                self.model.doc.scaler.apply_in_place(scaled.view_mut());
                transform_parallel(self.model.map.as_ref(), scaled.view(), &mut z);
                let start = i * PREDICT_CHUNK_ROWS;
                out.slice_mut(s![start..start + rows.nrows(), ..]).assign(&kapprox::predict::scores(&self.model, &z));
            }
            out
        });
        Ok(out.into_pyarray(py))
    }

    /// Writes predictions of the Parquet data `data` into the directory
    /// `out`, one shard per input shard, as `kapprox predict` does: staged
    /// and renamed into place when complete (an error leaves nothing at
    /// `out`), refused when `out` is or holds `data` or exists (unless
    /// `overwrite`), and when a prediction is not finite. Returns the report
    /// (JSON: rows, skipped, files, seconds).
    #[pyo3(signature = (data, out, chunk_rows=kapprox::io::DEFAULT_CHUNK_ROWS, nan="refuse", overwrite=false))]
    fn predict_parquet(
        &self,
        py: Python<'_>,
        data: PathBuf,
        out: PathBuf,
        chunk_rows: usize,
        nan: &str,
        overwrite: bool,
    ) -> PyResult<String> {
        let nan = nan_policy(nan).map_err(value_error)?;
        check_chunk_rows(chunk_rows)?;
        let output = PredictOutput { overwrite, ..PredictOutput::default() };
        let report = py
            .detach(|| predict_to_dir_with(&self.model, &data, &out, chunk_rows, Some(nan), &output, &Silent))
            .map_err(|e| value_error(format!("{e:#}")))?;
        serde_json::to_string(&report).map_err(value_error)
    }

    /// Metrics of the model on labelled Parquet data, as `kapprox eval`
    /// computes them (JSON).
    #[pyo3(signature = (data, chunk_rows=kapprox::io::DEFAULT_CHUNK_ROWS, nan="refuse"))]
    fn evaluate(&self, py: Python<'_>, data: PathBuf, chunk_rows: usize, nan: &str) -> PyResult<String> {
        let nan = nan_policy(nan).map_err(value_error)?;
        check_chunk_rows(chunk_rows)?;
        let metrics = py
            .detach(|| kapprox::predict::evaluate(&self.model, &data, chunk_rows, Some(nan), &Silent))
            .map_err(|e| value_error(format!("{e:#}")))?;
        serde_json::to_string(&metrics).map_err(value_error)
    }
}

fn check_chunk_rows(chunk_rows: usize) -> PyResult<()> {
    if chunk_rows == 0 { Err(value_error("chunk_rows: must be at least 1")) } else { Ok(()) }
}

/// The checks [`Model::load`] makes, for a model assembled from parts.
fn check_shapes(
    doc: &ModelDoc,
    map: &dyn FeatureMap,
    coef: &Array2<f64>,
    intercept: &Array1<f64>,
) -> anyhow::Result<()> {
    if coef.nrows() != map.n_output() || coef.ncols() != intercept.len() {
        anyhow::bail!(
            "coef is {}x{} and intercept has {} entries, but the map has {} outputs",
            coef.nrows(),
            coef.ncols(),
            intercept.len(),
            map.n_output()
        );
    }
    if map.n_input() != doc.feature_columns.len() {
        anyhow::bail!(
            "the map takes {} inputs but {} feature columns are listed",
            map.n_input(),
            doc.feature_columns.len()
        );
    }
    if let Some(n) = doc.scaler.n_columns()
        && n != doc.feature_columns.len()
    {
        anyhow::bail!("the scaler has {n} columns but {} feature columns are listed", doc.feature_columns.len());
    }
    Ok(())
}
