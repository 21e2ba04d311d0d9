//! `predict` and `eval`: stream data through a fitted model.
//!
//! Both run one pass with the model's scaler and map; `predict` writes one
//! prediction shard per input shard, `eval` only accumulates metrics, so
//! neither holds more than a chunk of rows.

use crate::model::{Model, Task};
use crate::observer::Observer;
use crate::outputs::{PerShard, output_path, refuse_non_finite, stage_dir};
use crate::pipeline::{Features, Pass};
use anyhow::{Context, Result};
use arrow::datatypes::FieldRef;
use kapprox_core::dense;
use kapprox_io::{Chunk, ColumnSelection, Compression, Dataset, NanPolicy, PredictionFileOptions, PredictionWriter};
use kapprox_solve::{
    Classes, ClassificationAccumulator, ClassificationMetrics, RegressionAccumulator, RegressionMetrics,
};
use ndarray::{Array1, Array2, Axis, s};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Scores `(n, k)` of a chunk's features.
pub fn scores(model: &Model, z: &Features) -> Array2<f64> {
    let mut s = match z {
        Features::Dense(z) => dense::matmul(z.view(), model.coef.view(), kapprox_core::Par::Seq),
        Features::Sparse(z) => {
            let mut s = Array2::zeros((z.n_rows(), model.coef.ncols()));
            for (r, mut out) in s.rows_mut().into_iter().enumerate() {
                for (&j, &v) in z.indices.row(r).iter().zip(z.values.row(r)) {
                    out.scaled_add(v, &model.coef.row(j as usize));
                }
            }
            s
        }
    };
    s += &model.intercept;
    s
}

/// Predictions `(n)` from scores: the score itself (regression) or the
/// class of the largest score.
pub fn decide(model: &Model, classes: Option<&Classes>, scores: &Array2<f64>) -> Result<Array1<f64>> {
    match (model.doc.task, classes) {
        (Task::Classification, Some(c)) => Ok(c.decode_argmax(scores.view())?),
        _ => Ok(scores.column(0).to_owned()),
    }
}

fn classes_of(model: &Model) -> Result<Option<Classes>> {
    model.check_has_weights()?;
    match (&model.doc.task, &model.doc.classes) {
        (Task::Classification, Some(c)) => Ok(Some(Classes::from_labels(c.iter().copied())?)),
        (Task::Classification, None) => anyhow::bail!("classification model without a class list"),
        _ => Ok(None),
    }
}

/// A pass of `ds` through `model`, reading the model's input columns by
/// name (and `keep`); `sink` gets each chunk with its scores.
#[allow(clippy::too_many_arguments)]
fn model_pass(
    model: &Model,
    ds: &Dataset,
    with_label: bool,
    chunk_rows: usize,
    nan: Option<NanPolicy>,
    keep: &[String],
    label: &str,
    observer: &dyn Observer,
    sink: &mut dyn FnMut(&Chunk, Array2<f64>) -> Result<()>,
) -> Result<crate::pipeline::PassReport> {
    let inputs = model.inputs();
    inputs.check_dataset(ds)?;
    let label_col = if with_label { model.doc.label_column.clone() } else { None };
    let read = inputs.read_options(label_col, nan)?.with_chunk_rows(chunk_rows).with_keep(keep.to_vec());
    let pass = Pass {
        dataset: ds,
        read,
        scaler: &model.doc.scaler,
        maps: vec![model.map.as_ref()],
        label,
        observer,
        store: None,
    };
    // The features of a tile (at most 8 MiB), not of a chunk, are held:
    // the chunk's scores (`k` per row) are filled tile by tile.
    let mut chunk_scores = Array2::<f64>::zeros((0, model.coef.ncols()));
    pass.run_tiled(&mut |chunk, rows, _, z| {
        let n = chunk.x.nrows();
        if rows.start == 0 {
            chunk_scores = Array2::zeros((n, model.coef.ncols()));
        }
        chunk_scores.slice_mut(s![rows.clone(), ..]).assign(&scores(model, z));
        if rows.end == n { sink(chunk, std::mem::take(&mut chunk_scores)) } else { Ok(()) }
    })
}

/// What `predict` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct PredictReport {
    /// Rows predicted.
    pub rows: u64,
    /// Rows dropped under `--nan skip` (or for a missing label under `--nan impute`).
    pub skipped: u64,
    /// Missing values imputed with the model's training means or "other".
    pub imputed: u64,
    /// Per categorical column: values outside the model's vocabulary
    /// (unseen or rare in training, or imputed nulls), predicted as "other".
    pub other: Vec<(String, u64)>,
    /// Prediction files written.
    pub files: usize,
    /// Seconds.
    pub seconds: f64,
}

/// What prediction files hold besides the predictions.
#[derive(Clone, Debug, Default)]
pub struct PredictOutput {
    /// Input columns copied unchanged into each prediction row (`--keep`),
    /// e.g. an identifier to join on. None by default.
    pub keep: Vec<String>,
    /// Compression of the written files (default [`kapprox_io::DEFAULT_COMPRESSION`]).
    pub compression: Compression,
    /// Replace an existing output directory (whole, atomically). Off by
    /// default: an existing non-empty `out_dir` is refused.
    pub overwrite: bool,
    /// Paths besides the data that the output must be apart from (neither
    /// be, contain nor lie inside), e.g. the model file. None by default.
    pub apart: Vec<PathBuf>,
}

/// Writes predictions of `model` for `data` into `out_dir`, one file per
/// input shard under the shard's path relative to the input (Hive
/// directories are kept). Missing values: `nan`, or when `None` the
/// model's policy (impute if it was fitted with `--nan impute`, else
/// refuse).
///
/// The directory is staged ([`stage_dir`]) and renamed into place when
/// complete: on error (a non-finite prediction, bad input) or a kill,
/// nothing is left at `out_dir`.
///
/// # Errors
/// `out_dir` is, contains or lies inside `data`; it exists (see
/// [`PredictOutput::overwrite`]); a prediction is not finite (naming the
/// file, the row and the likely cause); bad input data.
pub fn predict_to_dir(
    model: &Model,
    data: &Path,
    out_dir: &Path,
    chunk_rows: usize,
    nan: Option<NanPolicy>,
    observer: &dyn Observer,
) -> Result<PredictReport> {
    predict_to_dir_with(model, data, out_dir, chunk_rows, nan, &PredictOutput::default(), observer)
}

/// [`predict_to_dir`] with kept columns and a compression.
pub fn predict_to_dir_with(
    model: &Model,
    data: &Path,
    out_dir: &Path,
    chunk_rows: usize,
    nan: Option<NanPolicy>,
    output: &PredictOutput,
    observer: &dyn Observer,
) -> Result<PredictReport> {
    let staged =
        stage_dir(out_dir, output.overwrite, std::iter::once(data).chain(output.apart.iter().map(PathBuf::as_path)))?;
    let ds = Dataset::open(data)?;
    let classes = classes_of(model)?;
    let report = predict_into(model, &ds, classes.as_ref(), staged.path(), chunk_rows, nan, output, observer)?;
    staged.commit()?;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn predict_into(
    model: &Model,
    ds: &Dataset,
    classes: Option<&Classes>,
    out_dir: &Path,
    chunk_rows: usize,
    nan: Option<NanPolicy>,
    output: &PredictOutput,
    observer: &dyn Observer,
) -> Result<PredictReport> {
    let has_label = model.doc.label_column.as_ref().is_some_and(|l| ds.columns().iter().any(|c| c == l));
    let keep = kept_columns(ds, &output.keep)?;
    let mut opts = PredictionFileOptions::new()
        .with_target(has_label)
        .with_compression(output.compression)
        .with_keep(keep.iter().cloned());
    if let Some(c) = classes {
        opts = opts.with_classes(c.values().iter().map(|v| format!("{v}")));
    }
    let mut files = PerShard::new(|w: PredictionWriter| Ok(w.finish()?));
    let names: Vec<String> = keep.iter().map(|f| f.name().clone()).collect();
    let report = model_pass(model, ds, has_label, chunk_rows, nan, &names, "predict", observer, &mut |chunk, s| {
        refuse_non_finite(ds, chunk, s.view(), "prediction", || non_finite_cause(model))?;
        let pred = decide(model, classes, &s)?;
        let w = files.writer(chunk.shard, || {
            Ok(PredictionWriter::create(output_path(ds, chunk.shard, out_dir)?, opts.clone())?)
        })?;
        let score_view = classes.map(|_| s.view());
        w.write_with_kept(&chunk.row_ids, pred.view(), chunk.y.as_ref().map(|y| y.view()), score_view, &chunk.keep)?;
        Ok(())
    })?;
    files.close()?;
    Ok(PredictReport {
        rows: report.rows,
        skipped: report.skipped,
        imputed: report.imputed,
        other: other_counts(model, &report.other),
        files: files.files(),
        seconds: report.seconds,
    })
}

/// The fields of the `--keep` columns of `ds` (names or globs), in
/// dataset order.
///
/// # Errors
/// A pattern that matches no column.
pub fn kept_columns(ds: &Dataset, patterns: &[String]) -> Result<Vec<FieldRef>> {
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    // Every column excluded: kept columns are collected before the input
    // type checks, so any type may be kept.
    let sel = ColumnSelection::new().with_exclude(["*"]).with_keep(patterns.to_vec());
    let names = ds.select_columns(&sel)?.keep;
    if let Some(key) = names.iter().find(|n| ds.partition_columns().contains(n)) {
        anyhow::bail!(
            "--keep {key}: a Hive partition key; the outputs keep the input's partition directories ({key}=...), \
             which readers turn back into the column"
        );
    }
    let schema = ds.schema();
    names.iter().map(|n| Ok(Arc::new(schema.field_with_name(n)?.clone()))).collect()
}

/// Values sent to "other" per categorical column of `model`.
fn other_counts(model: &Model, other: &[u64]) -> Vec<(String, u64)> {
    model.inputs().vocabularies.iter().map(|v| v.column.clone()).zip(other.iter().copied()).collect()
}

/// Why a model's output is not finite: a parameter of the model, else the
/// map (which overflows for an extreme bandwidth or smoothness, or huge
/// inputs).
pub fn non_finite_cause(model: &Model) -> String {
    match model.non_finite_parameter() {
        Some(p) => format!("the model is damaged or degenerate: {p}"),
        None => "the feature map overflowed: an extreme bandwidth (sigma) or smoothness (nu) in the model, or input \
                 values far outside the training data's range"
            .into(),
    }
}

/// Metrics of a model on labelled data.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum EvalMetrics {
    /// Regression metrics.
    Regression(RegressionMetrics),
    /// Classification metrics.
    Classification(ClassificationMetrics),
}

/// Evaluates `model` on `data` (which must hold the model's label column).
pub fn evaluate(
    model: &Model,
    data: &Path,
    chunk_rows: usize,
    nan: Option<NanPolicy>,
    observer: &dyn Observer,
) -> Result<EvalMetrics> {
    let ds = Dataset::open(data)?;
    let label = model.doc.label_column.clone().context("the model records no label column")?;
    if !ds.columns().contains(&label) {
        anyhow::bail!("{}: label column {label:?} is missing; eval needs labelled data", ds.path().display());
    }
    let classes = classes_of(model)?;
    match classes {
        Some(classes) => {
            let mut acc = ClassificationAccumulator::new(&classes);
            model_pass(model, &ds, true, chunk_rows, nan, &[], "eval", observer, &mut |chunk, s| {
                let pred = classes.decode_argmax(s.view())?;
                acc.update(chunk.y.as_ref().expect("label requested").view(), pred.view())?;
                Ok(())
            })?;
            Ok(EvalMetrics::Classification(acc.metrics()?))
        }
        None => {
            let mut acc = RegressionAccumulator::new(1);
            model_pass(model, &ds, true, chunk_rows, nan, &[], "eval", observer, &mut |chunk, s| {
                let y = chunk.y.as_ref().expect("label requested").view().insert_axis(Axis(1));
                acc.update(y, s.view())?;
                Ok(())
            })?;
            Ok(EvalMetrics::Regression(acc.metrics()?))
        }
    }
}
