//! The plan of a fit: what the dataset's footers say, and the passes that
//! follow from it and the configuration.

use super::FitConfig;
use crate::sigma::SIGMA_SAMPLE_ROWS;
use anyhow::{Context, Result, bail};
use kapprox_io::{ColumnStats, Dataset};
use serde::{Deserialize, Serialize};

/// One data pass of a fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PassKind {
    /// Column statistics and/or a reservoir sample of rows.
    Prepare,
    /// Multi-pass TEFM: `Fᵀ(FΩ)` for the test matrix `Ω` (index 0), then
    /// `Fᵀ(FQ)` per power iteration.
    Sketch {
        /// 0 for the product with `Ω`, `i` for the `i`-th power iteration.
        index: usize,
    },
    /// The ridge statistics of every candidate and split part.
    Fit,
}

impl std::fmt::Display for PassKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PassKind::Prepare => f.write_str("prepare"),
            PassKind::Sketch { index } => write!(f, "sketch {}", index + 1),
            PassKind::Fit => f.write_str("fit"),
        }
    }
}

/// One shard as the footers describe it: file name and row count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardFingerprint {
    /// Path relative to the dataset root (file names repeat across Hive
    /// partition directories).
    pub name: String,
    /// Rows in the file.
    pub rows: u64,
}

/// What the dataset's footers say, resolved once: everything a process
/// needs besides the configuration, so a reduce needs no access to the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobBase {
    /// Numeric input columns, in the order the maps see them.
    pub features: Vec<String>,
    /// Categorical input columns; their indicators follow the numeric
    /// columns once the prepare pass has learned their vocabularies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categorical: Vec<String>,
    /// Label column.
    pub label: String,
    /// Column statistics stored in the footers by `convert`, if any.
    pub stored_stats: Option<ColumnStats>,
    /// The shards in global row order.
    pub shards: Vec<ShardFingerprint>,
}

impl JobBase {
    /// Reads the footers of `cfg.train`.
    pub fn open(cfg: &FitConfig) -> Result<(JobBase, Dataset)> {
        let ds = Dataset::open(&cfg.train)?;
        let columns = cfg.read.select.select(&ds, &cfg.read.label, true)?;
        let label = columns
            .label
            .clone()
            .with_context(|| format!("{}: a label column is needed to fit (use --label)", cfg.train.display()))?;
        let features = columns.numeric.clone();
        // With categorical columns the prepare pass computes every
        // statistic, so numeric and indicator statistics count the same rows.
        let stored_stats = match columns.categorical.is_empty() {
            true => ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok()),
            false => None,
        };
        let shards = fingerprint(&ds);
        Ok((JobBase { features, categorical: columns.categorical, label, stored_stats, shards }, ds))
    }

    /// Global row id of the first row of `shard`.
    pub fn first_row(&self, shard: usize) -> u64 {
        self.shards[..shard].iter().map(|s| s.rows).sum()
    }

    /// Total rows.
    pub fn n_rows(&self) -> u64 {
        self.shards.iter().map(|s| s.rows).sum()
    }

    /// Checks that `ds` still has the shards this job was planned on.
    pub fn check_dataset(&self, ds: &Dataset) -> Result<()> {
        let now = fingerprint(ds);
        if now.len() != self.shards.len() {
            bail!(
                "{}: the dataset has {} shards, but this fit was started on {}; the data changed",
                ds.path().display(),
                now.len(),
                self.shards.len()
            );
        }
        for (i, (a, b)) in self.shards.iter().zip(&now).enumerate() {
            if a != b {
                bail!(
                    "{}: shard {i} is {} with {} rows, but this fit was started with {} of {} rows; the data changed",
                    ds.path().display(),
                    b.name,
                    b.rows,
                    a.name,
                    a.rows
                );
            }
        }
        Ok(())
    }
}

fn fingerprint(ds: &Dataset) -> Vec<ShardFingerprint> {
    ds.shards()
        .iter()
        .map(|s| ShardFingerprint { name: s.relative_path.to_string_lossy().into_owned(), rows: s.n_rows })
        .collect()
}

/// Rows the prepare pass samples: Nyström's landmarks and the σ sample.
pub fn sample_rows(cfg: &FitConfig) -> usize {
    cfg.method.sample_rows().max(if cfg.needs_median() { SIGMA_SAMPLE_ROWS } else { 0 })
}

/// The passes of a fit: prepare when the footers hold no statistics, a
/// sample is needed or categorical values must be counted, then TEFM's
/// sketch passes, then the fit pass.
pub fn plan(cfg: &FitConfig, base: &JobBase) -> Vec<PassKind> {
    let mut plan = Vec::new();
    if base.stored_stats.is_none() || sample_rows(cfg) > 0 || !base.categorical.is_empty() {
        plan.push(PassKind::Prepare);
    }
    plan.extend((0..cfg.method.sketch_passes()).map(|index| PassKind::Sketch { index }));
    plan.push(PassKind::Fit);
    plan
}
