//! `fit`: prepare, (sketch,) fit, select — the passes and what they need.
//!
//! # Passes
//!
//! 1. **prepare** (only when needed): column statistics when the footers
//!    written by `convert` hold none, and a reservoir sample of rows for
//!    `--sigma auto` (median rule) and for Nyström's landmarks.
//! 2. **sketch** (multi-pass TEFM only): `FᵀΘ`, then one `Fᵀ(FQ)` per power
//!    iteration, for every bandwidth candidate at once.
//! 3. **fit**: every candidate's map transforms every chunk; each row's
//!    statistics go to its split part (by a seeded hash of its global row
//!    id: hold-out or k folds). Then every (σ, α) pair is scored from the
//!    statistics ([`select`]) and the winner is refitted on all rows — no
//!    further pass.
//!
//! With statistics in the footers and explicit bandwidths, a data-
//! independent map, Nyström-free and one-pass TEFM fits read the data once.
//!
//! # Memory
//!
//! The fit pass holds, per candidate and split part, one ridge accumulator
//! of `(l' + 1 + k)² + 512·(l' + 1 + k)` doubles (`l'` = features
//! accumulated: `l`, or TEFM's base `d` in one-pass mode; `k` = targets or
//! classes), plus the pipeline's chunk buffers. [`estimate_memory`] states
//! it and `--max-memory` refuses configurations that exceed it.

pub mod acc;
pub mod job;
pub mod method;
pub mod passes;
pub mod select;

use crate::config::{ReadConfig, SigmaSpec};
use crate::model::{Model, Task};
use anyhow::{Result, bail};
pub use job::{FitJob, PassKind, PassState};
use kapprox_core::{Domain, rng};
use kapprox_features::tefm::TefmKind;
use kapprox_io::{ColumnStats, Scaler, ScalerKind};
use kapprox_sketch::SketchKind;
use method::Method;
use ndarray::{Array2, ArrayView2, Axis};
use passes::SIGMA_SAMPLE_ROWS;
use select::CandidateReport;
use serde::Serialize;
use std::path::PathBuf;

/// How rows are split for selection, by a seeded hash of the row id.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub enum Split {
    /// Part 0 trains, part 1 (this fraction of rows) validates.
    Holdout(f64),
    /// k folds; each is held out in turn.
    Folds(usize),
}

impl Split {
    /// Number of parts.
    pub fn n_parts(self) -> usize {
        match self {
            Split::Holdout(_) => 2,
            Split::Folds(k) => k,
        }
    }

    /// The parts that are held out in turn.
    pub fn held_out_parts(self) -> Vec<usize> {
        match self {
            Split::Holdout(_) => vec![1],
            Split::Folds(k) => (0..k).collect(),
        }
    }

    /// The part of global row `id`.
    #[inline]
    pub fn part_of(self, seed: u64, id: u64) -> usize {
        let u = rng::unit(seed, Domain::SPLIT, id);
        match self {
            Split::Holdout(f) => usize::from(u < f),
            Split::Folds(k) => ((u * k as f64) as usize).min(k - 1),
        }
    }

    fn check(self) -> Result<()> {
        match self {
            Split::Holdout(f) if !(f > 0.0 && f < 1.0) => bail!("--validation: {f} is not a fraction in (0, 1)"),
            Split::Folds(k) if k < 2 => bail!("--folds: {k} folds; use at least 2"),
            _ => Ok(()),
        }
    }
}

/// A validated `fit` configuration.
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Training data.
    pub train: PathBuf,
    /// The map family and its parameters (all but σ).
    pub method: Method,
    /// Bandwidth candidates.
    pub sigmas: Vec<SigmaSpec>,
    /// Ridge penalties; `None` = the default grid scaled by n.
    pub alphas: Option<Vec<f64>>,
    /// Regression or classification.
    pub task: Task,
    /// Input scaling.
    pub scale: ScalerKind,
    /// Reading options.
    pub read: ReadConfig,
    /// Hold-out or k-fold selection.
    pub split: Split,
    /// Seed of the maps, samples and split.
    pub seed: u64,
    /// Refuse when the statistics need more bytes than this.
    pub max_memory: Option<u64>,
}

/// What `fit` did.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// The method, e.g. `rff`, `nystrom`, `tefm-g`.
    pub method: String,
    /// Rows used.
    pub rows: u64,
    /// Rows dropped under `--nan skip`.
    pub skipped: u64,
    /// Rows held out for selection (validation part, or all rows with folds).
    pub validation_rows: f64,
    /// Full passes over the data.
    pub passes: u64,
    /// The median distance of the σ rule, if used.
    pub median_distance: Option<f64>,
    /// Chosen bandwidth.
    pub sigma: f64,
    /// Chosen ridge penalty.
    pub alpha: f64,
    /// Output features of the chosen map.
    pub n_features: usize,
    /// Per-candidate selection.
    pub candidates: Vec<CandidateReport>,
    /// Bytes of statistics held by the fit pass.
    pub statistics_bytes: u64,
    /// Seconds per stage.
    pub seconds: Timings,
}

/// Wall-clock seconds per stage.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Statistics / sampling pass.
    pub prepare: f64,
    /// Sketch passes.
    pub sketch: f64,
    /// The fit pass (read, map, accumulate).
    pub pass: f64,
    /// Selection and the final solve.
    pub solve: f64,
    /// Everything.
    pub total: f64,
}

/// The default α grid: `n · 10^(−9..−1)`, 17 values. Features of every map
/// have `‖z‖² ≈ 1`, so ZᵀZ grows like n and useful penalties scale with it.
pub fn default_alphas(n: f64) -> Vec<f64> {
    (0..17).map(|i| n * 10f64.powf(-9.0 + 0.5 * i as f64)).collect()
}

/// Bytes of statistics the fit pass holds for `s` candidates accumulating
/// `l` features with `k` targets over `parts` split parts, plus one-pass
/// TEFM sketches of `(l, sketch_l)`.
pub fn estimate_memory(s: usize, l: usize, k: usize, parts: usize, sketch_l: usize) -> u64 {
    let w = (l + 1 + k) as u64;
    let per = w * w * 8 + (kapprox_core::moments::BLOCK_ROWS as u64) * w * 8;
    s as u64 * (parts as u64 * per + (l * sketch_l * 8) as u64)
}

/// What the passes before the fit pass established.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// Feature columns.
    pub features: Vec<String>,
    /// Label column.
    pub label: String,
    /// Input scaling.
    pub scaler: Scaler,
    /// Median distance (σ rule), if computed.
    pub median: Option<f64>,
    /// Resolved bandwidths.
    pub sigmas: Vec<f64>,
    /// Scaled landmark rows (Nyström).
    pub landmarks: Option<Array2<f64>>,
}

/// Runs `fit` in this process; returns the model (not yet saved) and the report.
///
/// The passes of the [`FitJob`] run one after the other over all shards;
/// a distributed fit (`crate::distributed`) runs the same passes on shard
/// subsets and merges their states in shard order instead.
pub fn fit(cfg: &FitConfig) -> Result<(Model, FitReport)> {
    let mut job = FitJob::new(cfg)?;
    let all: Vec<usize> = (0..job.n_shards()).collect();
    loop {
        let state = job.run_pass(&all)?;
        if let Some(done) = job.advance(state)? {
            return Ok(done);
        }
    }
}

pub(crate) fn sketch_kind(k: TefmKind) -> SketchKind {
    match k {
        TefmKind::Gaussian => SketchKind::Gaussian,
        TefmKind::Srht => SketchKind::Srht,
        TefmKind::CountSketch => SketchKind::CountSketch,
    }
}

pub(crate) fn check_memory(cfg: &FitConfig, bytes: u64, n_candidates: usize, l: usize) -> Result<()> {
    if let Some(limit) = cfg.max_memory
        && bytes > limit
    {
        bail!(
            "the statistics of {n_candidates} bandwidth candidate(s) with {l} accumulated features and {} split \
             parts need {} (candidates x parts x (l+1+k)² doubles), more than --max-memory {}; use fewer --sigma \
             values, fewer --features or folds, or raise --max-memory",
            cfg.split.n_parts(),
            human_bytes(bytes),
            human_bytes(limit)
        );
    }
    Ok(())
}

/// Scaler, bandwidths and landmarks from the prepare pass's results.
pub fn finish_prepare(
    cfg: &FitConfig,
    features: Vec<String>,
    label: String,
    stats: &ColumnStats,
    sample: Option<kapprox_sketch::Reservoir>,
) -> Result<Prepared> {
    let scaler = Scaler::fit(cfg.scale, stats);
    // Sampled rows in priority order: the first SIGMA_SAMPLE_ROWS of them
    // are exactly the σ sample a smaller reservoir would have kept.
    let (ids, mut rows) = match sample {
        Some(r) => {
            let seed = cfg.seed;
            let (ids, rows) = r.finish();
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&i| rng::hash64(seed, Domain::RESERVOIR, ids[i]));
            (order.iter().map(|&i| ids[i]).collect::<Vec<_>>(), rows.select(Axis(0), &order))
        }
        None => (Vec::new(), Array2::zeros((0, features.len()))),
    };
    scaler.apply_in_place(rows.view_mut());
    let median = cfg
        .sigmas
        .iter()
        .any(|s| matches!(s, SigmaSpec::Auto(_)))
        .then(|| median_distance(&rows.slice(ndarray::s![0..SIGMA_SAMPLE_ROWS.min(rows.nrows()), ..])));
    let mut sigmas: Vec<f64> = cfg.sigmas.iter().map(|s| s.resolve(median)).collect();
    sigmas.dedup();
    let m = cfg.method.sample_rows();
    let landmarks = (m > 0).then(|| {
        // Landmarks in row-id order (deterministic whatever the layout).
        let mut take: Vec<usize> = (0..m.min(ids.len())).collect();
        take.sort_by_key(|&i| ids[i]);
        rows.select(Axis(0), &take)
    });
    if let Some(l) = &landmarks
        && l.nrows() < m
    {
        bail!("Nyström needs {m} landmarks but the training data has only {} rows", l.nrows());
    }
    Ok(Prepared { features, label, scaler, median, sigmas, landmarks })
}

/// The part of the report stored in the model: everything but timings, so
/// that the same data, seed and layout give a bitwise-equal model file.
pub(crate) fn training_record(report: &FitReport) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if let Some(o) = v.as_object_mut() {
        o.remove("seconds");
    }
    Ok(v)
}

/// Median Euclidean distance over all pairs of rows of `x` (1 when there
/// are fewer than two distinct rows).
pub fn median_distance(x: &ArrayView2<'_, f64>) -> f64 {
    let n = x.nrows();
    let mut d = Vec::with_capacity(n * n.saturating_sub(1) / 2);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_parts_have_the_right_sizes() {
        let n = 100_000u64;
        let mut counts = [0usize; 5];
        for id in 0..n {
            counts[Split::Folds(5).part_of(3, id)] += 1;
        }
        // Binomial(1e5, 0.2): sd ~ 126; allow 5 sd.
        assert!(counts.iter().all(|&c| (c as f64 - 20_000.0).abs() < 630.0), "{counts:?}");
        let val = (0..n).filter(|&id| Split::Holdout(0.2).part_of(3, id) == 1).count();
        assert!((val as f64 - 20_000.0).abs() < 630.0);
    }
}
