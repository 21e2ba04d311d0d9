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
use crate::outputs::{PerShard, output_path, refuse_non_finite, stage_dir};
use crate::pipeline::{Features, Pass};
use crate::predict::kept_columns;
use crate::read::{ReadConfig, resolve_optional_label};
use crate::sigma::{SIGMA_SAMPLE_ROWS, SigmaSpec, median_distance};
use anyhow::Result;
use kapprox_features::FeatureMap;
use kapprox_io::{
    ColumnStats, Compression, Dataset, DenseFeatureWriter, FeatureDtype, FeatureFileOptions, NanPolicy, OutputOptions,
    ReadOptions, Scaler, ScalerKind, SparseFeatureWriter, StagedOutput,
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

/// Default compression of feature files: none. Random features are
/// incompressible doubles: zstd saves about 5 % of the file (measured on RFF
/// features of generated data) at about 20 % more time, and the Parquet writer
/// holds one compressor context per column (about 88 KiB for zstd), which at
/// `l = 4096` is more memory than the rows being written.
pub const DEFAULT_FEATURE_COMPRESSION: Compression = Compression::None;

/// What feature files hold besides the features.
#[derive(Clone, Debug)]
pub struct FeatureOutput {
    /// Input columns copied unchanged into each feature row (`--keep`,
    /// names or globs), e.g. an identifier to join on. None by default.
    pub keep: Vec<String>,
    /// Compression of the written files (default [`DEFAULT_FEATURE_COMPRESSION`]).
    pub compression: Compression,
    /// Whether the map file of [`FeaturizeConfig::save_map`] stores the
    /// map's random parameters (default [`StoreMap::Auto`]).
    pub store_map: StoreMap,
    /// Replace an existing output directory (and map file) whole. Off by
    /// default: an existing non-empty output is refused.
    pub overwrite: bool,
}

impl Default for FeatureOutput {
    fn default() -> Self {
        FeatureOutput {
            keep: Vec::new(),
            compression: DEFAULT_FEATURE_COMPRESSION,
            store_map: StoreMap::default(),
            overwrite: false,
        }
    }
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

/// Featurizes `cfg.data` into `cfg.out`. The output directory (and the
/// map file) are staged before any data is read and renamed into place
/// when complete, the map after the features: on error or a kill nothing
/// is left at either path.
///
/// # Errors
/// A method learned from data without a model (before reading any data);
/// an output that is, contains or lies inside an input (or the other
/// output), or exists without [`FeatureOutput::overwrite`]; a non-finite
/// feature; bad input data, or an output that cannot be written.
pub fn featurize(cfg: &FeaturizeConfig, observer: &dyn Observer) -> Result<FeaturizeReport> {
    let start = Instant::now();
    cfg.source.check()?;
    if cfg.save_map.is_some() && matches!(cfg.source, FeatureSource::Model(_)) {
        anyhow::bail!("--save-map: the map is taken from --model, which already stores it");
    }
    let staged = stage_features(cfg)?;
    let staged_map = match &cfg.save_map {
        Some(path) => {
            // A second output: apart from the inputs and from the features.
            let apart = read_paths(cfg).into_iter().chain([cfg.out.as_path()]);
            let opts = OutputOptions::new().with_overwrite(cfg.output.overwrite).with_inputs(apart);
            Some(StagedOutput::file(path, &opts)?)
        }
        None => None,
    };
    let ds = Dataset::open(&cfg.data)?;
    let (inputs, scaler, map) = match &cfg.source {
        FeatureSource::Model(path) => from_model(path)?,
        FeatureSource::Method { method, sigma, scale, seed } => {
            let mut inputs = method_inputs(cfg, &ds)?;
            let features = inputs.columns.numeric.clone();
            let all: Vec<usize> = (0..ds.shards().len()).collect();
            let read = prepare_read(cfg, &inputs).with_shards(all);
            let (stats, sample) = stats_and_sample(&ds, &features, *sigma, |need_stats, rows| {
                Ok(crate::fit::passes::prepare_pass(&ds, read, need_stats, rows, *seed, observer, None)?.0)
            })?;
            let sample = learn_means(cfg, &mut inputs, &stats, sample)?;
            let (scaler, map) = method_map(method, *sigma, *scale, *seed, &stats, sample, features.len())?;
            (inputs, scaler, map)
        }
    };
    let label = resolve_optional_label(&ds, &cfg.read.label)?.1;
    let read = model_read(cfg, &ds, &inputs, label.clone())?;
    let output = file_options(cfg, &ds)?;
    let (rows, files) = write_features(&ds, staged.path(), read, &scaler, map.as_ref(), output, observer)?;
    let n_features = map.n_output();
    // The map file is streamed from the map's own arrays after the features
    // are in place, as its bytes were written before (encoding it cannot
    // fail on a map this run built).
    let map_model = staged_map.is_some().then(|| map_file(inputs, label, scaler, map));
    staged.commit()?;
    if let (Some(out), Some(model)) = (staged_map, map_model) {
        model.write_staged(out, cfg.output.store_map)?;
    }
    Ok(FeaturizeReport { rows, files, n_features, seconds: start.elapsed().as_secs_f64() })
}

/// The paths `cfg` reads: the data and the model, if any.
fn read_paths(cfg: &FeaturizeConfig) -> Vec<&Path> {
    let mut paths = vec![cfg.data.as_path()];
    if let FeatureSource::Model(model) = &cfg.source {
        paths.push(model);
    }
    paths
}

/// The staged output directory of `cfg`, apart from what it reads.
pub(crate) fn stage_features(cfg: &FeaturizeConfig) -> Result<StagedOutput> {
    stage_dir(&cfg.out, cfg.output.overwrite, read_paths(cfg))
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
/// `--exclude` apply. Categorical columns need a vocabulary, which only a
/// fit learns (its one-hot columns also change the scaling and the σ rule);
/// `--nan impute` means come from the statistics pass ([`learn_means`]).
pub(crate) fn method_inputs(cfg: &FeaturizeConfig, ds: &Dataset) -> Result<Inputs> {
    cfg.read.select.refuse_categorical("featurize --map")?;
    let columns = cfg.read.select.select(ds, &cfg.read.label, false)?;
    Ok(Inputs { columns, ..Inputs::default() })
}

/// The reading options of the statistics pass of a method: under
/// `--nan impute` missing values are kept (the statistics leave them out),
/// since the means are what the pass learns.
pub(crate) fn prepare_read(cfg: &FeaturizeConfig, inputs: &Inputs) -> ReadOptions {
    let read = cfg.read.options(inputs.columns.numeric.clone(), inputs.columns.label.clone());
    if cfg.read.nan == NanPolicy::Impute { read.with_nan_policy(NanPolicy::Keep) } else { read }
}

/// Under `--nan impute`, the means of the numeric columns (`stats` leave
/// missing values out) become the fill values of `inputs`, as in a fit, and
/// so of the map file; the bandwidth sample's missing values take them too.
/// Returns the sample.
///
/// # Errors
/// A column without any value.
pub(crate) fn learn_means(
    cfg: &FeaturizeConfig,
    inputs: &mut Inputs,
    stats: &ColumnStats,
    sample: Option<Array2<f64>>,
) -> Result<Option<Array2<f64>>> {
    if cfg.read.nan != NanPolicy::Impute {
        return Ok(sample);
    }
    if let Some(j) = stats.present().iter().position(|&n| n == 0) {
        anyhow::bail!("--nan impute: column {:?} has no value to take a mean of", stats.names()[j]);
    }
    let means = stats.mean().to_vec();
    let sample = sample.map(|mut rows| {
        for mut row in rows.rows_mut() {
            row.iter_mut().zip(&means).filter(|(v, _)| v.is_nan()).for_each(|(v, m)| *v = *m);
        }
        rows
    });
    inputs.impute = Some(means);
    Ok(sample)
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
/// rows, and never more than the default row group. The writer then holds
/// at most `max(chunk_rows · l, ROW_GROUP_BUFFER_BYTES / value_bytes)`
/// values twice (the open pages' values and their encoded copy), whatever
/// the row count; the full bound is in ARCHITECTURE.md ("Memory").
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
    let pass = Pass { dataset: ds, read, scaler, maps: vec![map], label: "featurize", observer, store: None };
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
