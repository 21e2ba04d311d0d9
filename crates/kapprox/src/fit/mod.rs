//! `fit`: statistics, bandwidth candidates, one pass, selection, model.
//!
//! # Passes
//!
//! 1. Column statistics for scaling come from the footers written by
//!    `convert`; otherwise one statistics pass (which also draws the row
//!    sample for `--sigma auto`).
//! 2. `--sigma auto` needs a row sample; when the statistics were stored, it
//!    costs one sampling pass (no features are computed in it).
//! 3. The fit pass: every bandwidth candidate's map transforms every chunk;
//!    rows go to the training or validation statistics of that candidate by
//!    a seeded hash of their global row id. Then every (σ, α) pair is scored
//!    on the validation statistics (no pass), and the winner is refitted on
//!    training + validation statistics (no pass).
//!
//! # Memory
//!
//! Two [`Moments`] per bandwidth candidate: `2·s·(l + 1 + k)²` doubles for
//! `s` candidates and `k` targets (classes), plus the pipeline's chunk
//! buffers. Checked against `--max-memory` before the pass starts.

use crate::class_moments::ClassMoments;
use crate::config::{MapConfig, ReadConfig, SigmaSpec};
use crate::model::{MODEL_FORMAT, MODEL_VERSION, Model, ModelDoc, Task};
use crate::pipeline::{Features, Pass, PassReport};
use anyhow::{Context, Result, bail};
use kapprox_core::{Domain, Moments, rng};
use kapprox_features::FeatureMap;
use kapprox_io::{ColumnStats, Dataset, ReadOptions, Scaler};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// Rows sampled for the median rule of `--sigma auto`.
pub const SIGMA_SAMPLE_ROWS: usize = 1000;

/// How input columns are scaled before the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleKind {
    /// Standardise.
    Standard,
    /// Min-max to [0, 1].
    MinMax,
    /// Leave as is.
    None,
}

/// A validated `fit` configuration.
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Training data.
    pub train: PathBuf,
    /// The feature map (all but σ).
    pub map: MapConfig,
    /// Bandwidth candidates.
    pub sigmas: Vec<SigmaSpec>,
    /// Ridge penalties; `None` = the default grid scaled by n.
    pub alphas: Option<Vec<f64>>,
    /// Regression or classification.
    pub task: Task,
    /// Input scaling.
    pub scale: ScaleKind,
    /// Reading options.
    pub read: ReadConfig,
    /// Validation fraction in (0, 1).
    pub validation: f64,
    /// Refuse when the statistics need more bytes than this.
    pub max_memory: Option<u64>,
}

/// One bandwidth candidate's selection result.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    /// Bandwidth.
    pub sigma: f64,
    /// Best α for this σ.
    pub best_alpha: f64,
    /// Validation MSE at the best α (mean over targets).
    pub validation_mse: f64,
    /// Validation MSE for every α, in grid order.
    pub curve: Vec<(f64, f64)>,
}

/// What `fit` did.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// Rows used (training + validation).
    pub rows: u64,
    /// Rows dropped under `--nan skip`.
    pub skipped: u64,
    /// Rows in the validation part.
    pub validation_rows: f64,
    /// Passes over the data.
    pub passes: u64,
    /// The median distance of the σ rule, if used.
    pub median_distance: Option<f64>,
    /// Chosen bandwidth.
    pub sigma: f64,
    /// Chosen ridge penalty.
    pub alpha: f64,
    /// Per-candidate selection.
    pub candidates: Vec<CandidateReport>,
    /// Bytes of statistics held during the pass.
    pub statistics_bytes: u64,
    /// Seconds per stage.
    pub seconds: Timings,
}

/// Wall-clock seconds per stage.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Statistics / sampling passes.
    pub prepare: f64,
    /// The fit pass (read, map, accumulate).
    pub pass: f64,
    /// Selection and the final solve.
    pub solve: f64,
    /// Everything.
    pub total: f64,
}

/// Per-candidate accumulators: regression keeps target moments directly,
/// classification keeps class sums (classes unknown until the pass ends).
enum Acc {
    Regression { train: Moments, val: Moments },
    Classification { train: ClassMoments, val: ClassMoments },
}

impl Acc {
    fn new(task: Task, l: usize) -> Acc {
        match task {
            Task::Regression => Acc::Regression { train: Moments::new(l, 1), val: Moments::new(l, 1) },
            Task::Classification => Acc::Classification { train: ClassMoments::new(l), val: ClassMoments::new(l) },
        }
    }

    /// Adds the chunk rows `rows` (ascending) to the `part` statistics.
    fn update(&mut self, part: Part, z: &Features, y: ArrayView1<'_, f64>, rows: &[usize]) {
        match self {
            Acc::Regression { train, val } => {
                let m = if part == Part::Train { train } else { val };
                let y2 = y.insert_axis(Axis(1));
                match z {
                    Features::Dense(z) => m.update_selected(z.view(), y2, rows),
                    Features::Sparse(z) => m.update_sparse_selected(z.view(), y2, rows),
                }
            }
            Acc::Classification { train, val } => {
                let m = if part == Part::Train { train } else { val };
                match z {
                    Features::Dense(z) => m.update_selected(z.view(), y, rows),
                    Features::Sparse(z) => m.update_sparse_selected(z.view(), y, rows),
                }
            }
        }
    }

    /// Training and validation moments with targets, and the class list.
    fn finish(self) -> (Moments, Moments, Option<Vec<f64>>) {
        match self {
            Acc::Regression { mut train, mut val } => {
                train.flush();
                val.flush();
                (train, val, None)
            }
            Acc::Classification { mut train, mut val } => {
                let mut classes = train.classes();
                classes.extend(val.classes());
                classes.sort_by(f64::total_cmp);
                classes.dedup();
                (train.to_moments(&classes), val.to_moments(&classes), Some(classes))
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Train,
    Validation,
}

/// Whether global row `id` is in the validation part.
pub fn is_validation(seed: u64, id: u64, fraction: f64) -> bool {
    rng::unit(seed, Domain::SPLIT, id) < fraction
}

/// Bytes of statistics `fit` holds for `s` candidates of `l` features and
/// `k` targets.
pub fn statistics_bytes(s: usize, l: usize, k: usize) -> u64 {
    let w = (l + 1 + k) as u64;
    let per_moments = w * w * 8 + (kapprox_core::moments::BLOCK_ROWS as u64) * w * 8;
    2 * s as u64 * per_moments
}

/// The default α grid: `n · 10^(−9..−1)`, 17 values. Features of every map
/// have `‖z‖² ≈ 1`, so ZᵀZ grows like n and useful penalties scale with it.
pub fn default_alphas(n: f64) -> Vec<f64> {
    (0..17).map(|i| n * 10f64.powf(-9.0 + 0.5 * i as f64)).collect()
}

/// Runs `fit`; returns the model (not yet saved) and the report.
pub fn fit(cfg: &FitConfig) -> Result<(Model, FitReport)> {
    let t0 = Instant::now();
    if !(cfg.validation > 0.0 && cfg.validation < 1.0) {
        bail!("--validation: {} is not a fraction in (0, 1)", cfg.validation);
    }
    let passes_before = crate::pipeline::passes_made();
    let ds = Dataset::open(&cfg.train)?;
    let (features, label) = ds.resolve_columns(&cfg.read.label)?;
    let label =
        label.with_context(|| format!("{}: a label column is needed to fit (use --label)", cfg.train.display()))?;
    let n_input = features.len();
    let read = ReadOptions::new(features.clone())
        .with_label(Some(label.clone()))
        .with_chunk_rows(cfg.read.chunk_rows)
        .with_nan_policy(cfg.read.nan);

    // Statistics and the bandwidth sample.
    let needs_sample = cfg.sigmas.iter().any(|s| matches!(s, SigmaSpec::Auto(_)));
    let stored = ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok());
    let (stats, sample) = match stored {
        Some(stats) if !needs_sample => (stats, None),
        stored => prepare_pass(&ds, &read, stored, needs_sample, cfg.map.seed)?,
    };
    let scaler = make_scaler(cfg.scale, &stats);
    let median = sample.map(|s| median_distance(&scaler_applied(&scaler, s).view()));
    let t_prepare = t0.elapsed().as_secs_f64();

    // Candidate maps.
    let mut sigmas: Vec<f64> = cfg.sigmas.iter().map(|s| s.resolve(median)).collect();
    sigmas.dedup();
    let maps: Vec<Box<dyn FeatureMap>> =
        sigmas.iter().map(|&s| Ok(cfg.map.spec(s, n_input)?.build(&Default::default())?)).collect::<Result<_>>()?;
    let l = maps[0].n_output();
    let k_guess = if cfg.task == Task::Regression { 1 } else { 2 };
    let stat_bytes = statistics_bytes(maps.len(), l, k_guess);
    if let Some(limit) = cfg.max_memory {
        if stat_bytes > limit {
            bail!(
                "the statistics of {} bandwidth candidate(s) with l = {l} need {} ({}·2·(l+1+k)² doubles), more \
                 than --max-memory {}; use fewer --sigma values or --features, or raise --max-memory",
                maps.len(),
                human_bytes(stat_bytes),
                maps.len(),
                human_bytes(limit)
            );
        }
    }

    // The fit pass.
    let t1 = Instant::now();
    let mut accs: Vec<Acc> = maps.iter().map(|_| Acc::new(cfg.task, l)).collect();
    let seed = cfg.map.seed;
    let validation = cfg.validation;
    let map_refs: Vec<&dyn FeatureMap> = maps.iter().map(|m| m.as_ref()).collect();
    let pass = Pass { dataset: &ds, read: read.clone(), scaler: &scaler, maps: map_refs, label: "fit" };
    let mut train_rows = Vec::new();
    let mut val_rows = Vec::new();
    let mut split_of = u64::MAX;
    let pass_report: PassReport = pass.run(&mut |chunk, m, z| {
        let y = chunk.y.as_ref().expect("label column requested");
        if split_of != chunk.first_row {
            // The split of a chunk is computed once and shared by every map.
            split_of = chunk.first_row;
            train_rows.clear();
            val_rows.clear();
            for i in 0..chunk.x.nrows() {
                if is_validation(seed, chunk.row_id(i), validation) { val_rows.push(i) } else { train_rows.push(i) }
            }
        }
        accs[m].update(Part::Train, z, y.view(), &train_rows);
        accs[m].update(Part::Validation, z, y.view(), &val_rows);
        Ok(())
    })?;
    let t_pass = t1.elapsed().as_secs_f64();

    // Selection from statistics, then the final solve on all rows.
    let t2 = Instant::now();
    let mut candidates = Vec::new();
    let mut finished = Vec::new();
    for (acc, &sigma) in accs.into_iter().zip(&sigmas) {
        let (train, val, classes) = acc.finish();
        if train.n_samples() == 0.0 || val.n_samples() == 0.0 {
            bail!(
                "{}: {} training and {} validation rows: too few rows to fit and validate",
                cfg.train.display(),
                train.n_samples(),
                val.n_samples()
            );
        }
        let alphas = cfg.alphas.clone().unwrap_or_else(|| default_alphas(train.n_samples() + val.n_samples()));
        let sel = kapprox_solve::holdout(&train, &val, &alphas)?;
        candidates.push(CandidateReport {
            sigma,
            best_alpha: sel.best_alpha,
            validation_mse: sel.best_mse(),
            curve: sel.alphas.iter().copied().zip(sel.mean_mse.iter().copied()).collect(),
        });
        finished.push((train, val, classes));
    }
    let best = (0..candidates.len())
        .min_by(|&a, &b| candidates[a].validation_mse.total_cmp(&candidates[b].validation_mse))
        .expect("at least one candidate");
    let (mut all, val, classes) = finished.swap_remove(best);
    all.merge(&val);
    all.flush();
    let alpha = candidates[best].best_alpha;
    let ridge = kapprox_solve::Ridge::params().with_alpha(alpha).check()?.fit(&all)?.model;
    let t_solve = t2.elapsed().as_secs_f64();

    let report = FitReport {
        rows: pass_report.rows,
        skipped: pass_report.skipped,
        validation_rows: val.n_samples(),
        passes: crate::pipeline::passes_made() - passes_before,
        median_distance: median,
        sigma: sigmas[best],
        alpha,
        candidates,
        statistics_bytes: stat_bytes,
        seconds: Timings { prepare: t_prepare, pass: t_pass, solve: t_solve, total: t0.elapsed().as_secs_f64() },
    };
    let map = maps.into_iter().nth(best).expect("best candidate exists");
    let doc = ModelDoc {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        task: cfg.task,
        feature_columns: features,
        label_column: Some(label),
        scaler,
        map: map.spec(),
        classes,
        alpha,
        training: training_record(&report)?,
        kapprox_version: env!("CARGO_PKG_VERSION").into(),
    };
    Ok((Model { doc, map, coef: ridge.coef, intercept: ridge.intercept }, report))
}

/// The part of the report stored in the model: everything but timings, so
/// that the same data, seed and layout give a bitwise-equal model file.
fn training_record(report: &FitReport) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if let Some(o) = v.as_object_mut() {
        o.remove("seconds");
    }
    Ok(v)
}

/// The statistics pass (when the footers hold no statistics) and/or the
/// bandwidth sample.
pub fn prepare_pass(
    ds: &Dataset,
    read: &ReadOptions,
    stored: Option<ColumnStats>,
    needs_sample: bool,
    seed: u64,
) -> Result<(ColumnStats, Option<Array2<f64>>)> {
    let mut stats = stored.is_none().then(|| ColumnStats::new(read.columns.clone()));
    let mut sample = needs_sample.then(|| kapprox_sketch::Reservoir::new(SIGMA_SAMPLE_ROWS, read.columns.len(), seed));
    let label = if stats.is_some() { "statistics" } else { "sample" };
    let identity = Scaler::None;
    Pass { dataset: ds, read: read.clone(), scaler: &identity, maps: vec![], label }.run_chunks(&mut |chunk| {
        if let Some(s) = stats.as_mut() {
            s.update(chunk.x.view());
        }
        if let Some(r) = sample.as_mut() {
            r.update_ids(chunk.x.view(), &chunk.row_ids.to_vec())?;
        }
        Ok(())
    })?;
    let stats = match (stats, stored) {
        (Some(s), _) => s,
        (None, Some(s)) => s,
        (None, None) => unreachable!("statistics are either stored or computed"),
    };
    Ok((stats, sample.map(|r| r.finish().1)))
}

/// The scaler of `kind` from column statistics.
pub fn make_scaler(kind: ScaleKind, stats: &ColumnStats) -> Scaler {
    match kind {
        ScaleKind::Standard => Scaler::standard(stats),
        ScaleKind::MinMax => Scaler::min_max(stats),
        ScaleKind::None => Scaler::None,
    }
}

fn scaler_applied(scaler: &Scaler, mut x: Array2<f64>) -> Array2<f64> {
    scaler.apply_in_place(x.view_mut());
    x
}

/// Median Euclidean distance over all pairs of rows of `x`.
pub fn median_distance(x: &ArrayView2<'_, f64>) -> f64 {
    let n = x.nrows();
    let mut d = Vec::with_capacity(n * (n.saturating_sub(1)) / 2);
    for i in 0..n {
        for j in 0..i {
            let s: f64 = x.row(i).iter().zip(x.row(j)).map(|(a, b)| (a - b) * (a - b)).sum();
            d.push(s.sqrt());
        }
    }
    if d.is_empty() {
        return 1.0;
    }
    let mid = d.len() / 2;
    let (_, m, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if *m > 0.0 { *m } else { 1.0 }
}

/// `1234567` -> `"1.2 MiB"`.
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", units[u]) }
}
