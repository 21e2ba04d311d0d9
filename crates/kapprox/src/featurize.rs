//! `featurize`: a dataset through a feature map into Parquet feature
//! shards, one per input shard.
//!
//! The map and scaling come from a fitted model, or from a data-independent
//! method at one bandwidth: then the column statistics come from the
//! footers (or a statistics pass), and `auto` bandwidths from the median
//! rule on the prepare pass's sample, as in `fit`. Maps learned from data
//! (Nyström, TEFM, EOF) need a model.

use crate::fit::passes::PrepareState;
use crate::inputs::Inputs;
use crate::method::MethodSpec;
use crate::model::{MODEL_FORMAT, MODEL_VERSION, Model, ModelDoc, StoreMap, Task};
use crate::observer::Observer;
use crate::outputs::{PerShard, output_path, prepare_output_dir, refuse_non_finite};
use crate::pipeline::{Features, Pass};
use crate::predict::kept_columns;
use crate::read::{ReadConfig, resolve_optional_label};
use crate::sigma::{SIGMA_SAMPLE_ROWS, SigmaSpec, median_distance};
use anyhow::Result;
use kapprox_features::FeatureMap;
use kapprox_io::{
    ColumnStats, Compression, Dataset, DenseFeatureWriter, FeatureDtype, FeatureFileOptions, NanPolicy, ReadOptions,
    Scaler, ScalerKind, SparseFeatureWriter,
};
use ndarray::Array2;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where `featurize` takes its map and scaling from.
#[derive(Clone, Debug)]
pub enum FeatureSource {
    /// A fitted model's input columns, scaler and map.
    Model(PathBuf),
    /// A data-independent method at one bandwidth.
    Method {
        /// The method (maps learned from data are refused).
        method: MethodSpec,
        /// The bandwidth.
        sigma: SigmaSpec,
        /// Input scaling.
        scale: ScalerKind,
        /// Seed of the map (and of the bandwidth sample).
        seed: u64,
    },
}

impl FeatureSource {
    /// Refuses a method learned from data (Nyström, TEFM, EOF): its map
    /// comes from a fit, so featurize needs the model.
    pub fn check(&self) -> Result<()> {
        match self {
            FeatureSource::Method { method, .. } if !method.is_data_independent() => Err(learned_from_data(method)),
            _ => Ok(()),
        }
    }
}

/// What to featurize, and where to.
#[derive(Clone, Debug)]
pub struct FeaturizeConfig {
    /// Input Parquet file or directory.
    pub data: PathBuf,
    /// Output directory: one feature shard per input shard.
    pub out: PathBuf,
    /// The map.
    pub source: FeatureSource,
    /// Label (carried into the output, never an input), chunk size, NaN policy.
    pub read: ReadConfig,
    /// Write features as float32.
    pub f32: bool,
    /// With a [`FeatureSource::Method`]: also write the map fitted here
    /// (input columns, scaling statistics, σ, map spec) as a map file, which
    /// `FeatureSource::Model` applies unchanged to other data.
    pub save_map: Option<PathBuf>,
    /// Kept columns and compression of the written files.
    pub output: FeatureOutput,
}

/// What feature files hold besides the features.
#[derive(Clone, Debug, Default)]
pub struct FeatureOutput {
    /// Input columns copied unchanged into each feature row (`--keep`,
    /// names or globs), e.g. an identifier to join on. None by default.
    pub keep: Vec<String>,
    /// Compression of the written files (default [`kapprox_io::DEFAULT_COMPRESSION`]).
    pub compression: Compression,
    /// Whether the map file of [`FeaturizeConfig::save_map`] stores the
    /// map's random parameters (default [`StoreMap::Auto`]).
    pub store_map: StoreMap,
}

/// What `featurize` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct FeaturizeReport {
    /// Rows written.
    pub rows: u64,
    /// Feature files written.
    pub files: usize,
    /// Features per row.
    pub n_features: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Featurizes `cfg.data` into `cfg.out`. On error, an output directory
/// this call created is removed.
///
/// # Errors
/// A method learned from data without a model (before reading any data),
/// bad input data, or an output that cannot be written.
pub fn featurize(cfg: &FeaturizeConfig, observer: &dyn Observer) -> Result<FeaturizeReport> {
    let start = Instant::now();
    cfg.source.check()?;
    if cfg.save_map.is_some() && matches!(cfg.source, FeatureSource::Model(_)) {
        anyhow::bail!("--save-map: the map is taken from --model, which already stores it");
    }
    let ds = Dataset::open(&cfg.data)?;
    let (inputs, scaler, map) = match &cfg.source {
        FeatureSource::Model(path) => from_model(path)?,
        FeatureSource::Method { method, sigma, scale, seed } => {
            let inputs = method_inputs(cfg, &ds)?;
            let features = inputs.columns.numeric.clone();
            let all: Vec<usize> = (0..ds.shards().len()).collect();
            let read = cfg.read.options(features.clone(), inputs.columns.label.clone()).with_shards(all);
            let (stats, sample) = stats_and_sample(&ds, &features, *sigma, |need_stats, rows| {
                Ok(crate::fit::passes::prepare_pass(&ds, read, need_stats, rows, *seed, observer)?.0)
            })?;
            let (scaler, map) = method_map(method, *sigma, *scale, *seed, &stats, sample, features.len())?;
            (inputs, scaler, map)
        }
    };
    let label = resolve_optional_label(&ds, &cfg.read.label)?.1;
    let read = model_read(cfg, &ds, &inputs, label.clone())?;
    let output = file_options(cfg, &ds)?;
    let existed = cfg.out.exists();
    prepare_output_dir(&cfg.out)?;
    let result = write_features(&ds, &cfg.out, read, &scaler, map.as_ref(), output, observer);
    if result.is_err() && !existed {
        // An output directory this run created holds nothing whole: remove it.
        let _ = std::fs::remove_dir_all(&cfg.out);
    }
    let (rows, files) = result?;
    let n_features = map.n_output();
    if let Some(path) = &cfg.save_map {
        map_file(inputs, label, scaler, map).save_with(path, cfg.output.store_map)?;
    }
    Ok(FeaturizeReport { rows, files, n_features, seconds: start.elapsed().as_secs_f64() })
}

/// A map file: a model document with the map and scaling, and no ridge
/// weights (`coef` is `(l, 0)`), marked `"map_only": true` in `training`.
fn map_file(inputs: Inputs, label: Option<String>, scaler: Scaler, map: Box<dyn FeatureMap>) -> Model {
    let doc = ModelDoc {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        task: Task::Regression,
        feature_columns: inputs.x_columns(),
        label_column: label,
        inputs: Some(inputs),
        scaler,
        map: map.spec(),
        classes: None,
        alpha: 0.0,
        training: serde_json::json!({ "map_only": true }),
        kapprox_version: env!("CARGO_PKG_VERSION").into(),
    };
    Model { doc, coef: Array2::zeros((map.n_output(), 0)), intercept: ndarray::Array1::zeros(0), map }
}

/// A model's inputs, scaler and map.
pub(crate) fn from_model(path: &Path) -> Result<(Inputs, Scaler, Box<dyn FeatureMap>)> {
    let m = Model::load(path)?;
    Ok((m.inputs(), m.doc.scaler.clone(), m.map))
}

/// The input columns of a data-independent method: `--columns` and
/// `--exclude` apply; categorical columns and imputation need what only a
/// fit learns.
pub(crate) fn method_inputs(cfg: &FeaturizeConfig, ds: &Dataset) -> Result<Inputs> {
    cfg.read.select.refuse_categorical("featurize --map")?;
    if cfg.read.nan == NanPolicy::Impute {
        anyhow::bail!("--nan impute: featurize --map learns no means; fit with --nan impute and use --model MODEL");
    }
    let columns = cfg.read.select.select(ds, &cfg.read.label, false)?;
    Ok(Inputs { columns, ..Inputs::default() })
}

/// The reading options of the featurize pass: `inputs` encoded, the label
/// carried, `--keep` columns read, `--nan` as given.
pub(crate) fn model_read(
    cfg: &FeaturizeConfig,
    ds: &Dataset,
    inputs: &Inputs,
    label: Option<String>,
) -> Result<ReadOptions> {
    inputs.check_dataset(ds)?;
    let keep: Vec<String> = kept_columns(ds, &cfg.output.keep)?.iter().map(|f| f.name().clone()).collect();
    let read = cfg.read.options(inputs.columns.numeric.clone(), label).with_keep(keep);
    let read = inputs.encode(read);
    if cfg.read.nan == NanPolicy::Impute && inputs.impute.is_none() {
        anyhow::bail!("--nan impute: the model has no training means; it was fitted without --nan impute");
    }
    Ok(read)
}

/// The options of the feature files of `cfg` (before the label is known).
pub(crate) fn file_options(cfg: &FeaturizeConfig, ds: &Dataset) -> Result<FeatureFileOptions> {
    Ok(FeatureFileOptions::new()
        .with_dtype(if cfg.f32 { FeatureDtype::F32 } else { FeatureDtype::F64 })
        .with_compression(cfg.output.compression)
        .with_keep(kept_columns(ds, &cfg.output.keep)?))
}

/// The column statistics of `features` and, for an `auto` bandwidth, the
/// unscaled bandwidth sample: from the footers when they hold the
/// statistics and σ is given, else from the prepare pass that `prepare`
/// runs (`prepare(need_stats, sample_rows)`).
pub(crate) fn stats_and_sample(
    ds: &Dataset,
    features: &[String],
    sigma: SigmaSpec,
    prepare: impl FnOnce(bool, usize) -> Result<PrepareState>,
) -> Result<(ColumnStats, Option<Array2<f64>>)> {
    let needs_sample = sigma.is_auto();
    let stored = ds.stored_stats().and_then(|s| s.select(features, ds.path()).ok());
    Ok(match stored {
        Some(stats) if !needs_sample => (stats, None),
        stored => {
            let rows = if needs_sample { SIGMA_SAMPLE_ROWS } else { 0 };
            let st = prepare(stored.is_none(), rows)?;
            (stored.or(st.stats).expect("statistics stored or computed"), st.sample.map(|r| r.finish().1))
        }
    })
}

/// The scaler and the data-independent map of `method`, once the column
/// statistics (and, for an `auto` bandwidth, its sample) are known.
pub(crate) fn method_map(
    method: &MethodSpec,
    sigma: SigmaSpec,
    scale: ScalerKind,
    seed: u64,
    stats: &ColumnStats,
    sample: Option<Array2<f64>>,
    n_input: usize,
) -> Result<(Scaler, Box<dyn FeatureMap>)> {
    let scaler = Scaler::fit(scale, stats);
    let median = sample.map(|mut s| {
        scaler.apply_in_place(s.view_mut());
        median_distance(&s.view())
    });
    match method.independent_map(sigma.resolve(median), n_input, seed)? {
        Some(map) => Ok((scaler, map)),
        None => Err(learned_from_data(method)),
    }
}

/// The refusal of a method whose map is learned from data.
fn learned_from_data(method: &MethodSpec) -> anyhow::Error {
    anyhow::anyhow!("--map {method}: this map is learned from data; fit a model first and run featurize --model MODEL")
}

/// The bytes of feature values a row group may buffer beyond one chunk.
pub const ROW_GROUP_BUFFER_BYTES: usize = 64 << 20;

/// Rows per row group of a feature file: the parquet writer holds a whole
/// row group in memory until it is flushed, so a row group is at most one
/// chunk or [`ROW_GROUP_BUFFER_BYTES`] of values, whichever holds more
/// rows, and never more than the default row group. The writer then buffers
/// at most `max(chunk_rows · l, ROW_GROUP_BUFFER_BYTES / value_bytes)`
/// values, whatever the row count.
pub fn row_group_rows(chunk_rows: usize, l: usize, value_bytes: usize) -> usize {
    let by_bytes = ROW_GROUP_BUFFER_BYTES / (l.max(1) * value_bytes);
    chunk_rows.max(by_bytes).clamp(1, kapprox_io::DEFAULT_ROW_GROUP_ROWS)
}

/// Why features are not finite: the scaler, else the map.
fn non_finite_cause(scaler: &Scaler) -> String {
    match crate::model::scaler_problem(scaler) {
        Some(p) => format!("the input scaling is degenerate: {p}"),
        None => "the feature map overflowed: an extreme bandwidth (sigma), or input values far outside the range of \
                 the data the scaling was computed on"
            .into(),
    }
}

/// The featurize pass: one feature shard per input shard of `read`, with
/// `opts` (the label of `read` is carried).
pub(crate) fn write_features(
    ds: &Dataset,
    out: &Path,
    read: ReadOptions,
    scaler: &Scaler,
    map: &dyn FeatureMap,
    opts: FeatureFileOptions,
    observer: &dyn Observer,
) -> Result<(u64, usize)> {
    let l = map.n_output();
    // Sized for f64 values: f32 files then buffer at most half the bound.
    let opts = opts.with_carried(read.label.clone()).with_row_group_rows(row_group_rows(read.chunk_rows, l, 8));
    let mut dense = PerShard::new(|w: DenseFeatureWriter| Ok(w.finish()?));
    let mut sparse = PerShard::new(|w: SparseFeatureWriter| Ok(w.finish()?));
    let pass = Pass { dataset: ds, read, scaler, maps: vec![map], label: "featurize", observer };
    let report = pass.run(&mut |chunk, _, z| {
        let values = match z {
            Features::Dense(z) => z.view(),
            Features::Sparse(z) => z.values.view(),
        };
        refuse_non_finite(ds, chunk, values, "feature vector", || non_finite_cause(scaler))?;
        let carried: Vec<_> = chunk.y.iter().map(|y| y.view()).collect();
        let path = || output_path(ds, chunk.shard, out);
        match z {
            Features::Dense(z) => dense
                .writer(chunk.shard, || Ok(DenseFeatureWriter::create(path()?, l, opts.clone())?))?
                .write_with_kept(z.view(), Some(&chunk.row_ids), &carried, &chunk.keep)?,
            Features::Sparse(z) => sparse
                .writer(chunk.shard, || Ok(SparseFeatureWriter::create(path()?, l, opts.clone())?))?
                .write_with_kept(z.view(), Some(&chunk.row_ids), &carried, &chunk.keep)?,
        }
        Ok(())
    })?;
    dense.close()?;
    sparse.close()?;
    Ok((report.rows, dense.files() + sparse.files()))
}
