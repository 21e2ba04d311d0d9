//! `split`: a train/test split by a seeded hash of the global row id.
//!
//! One pass; each row goes to the test part with probability
//! `test_fraction`, independently of chunking and sharding. Both outputs
//! are complete datasets (statistics and label recorded), written
//! atomically.

use crate::observer::Observer;
use crate::pipeline::Pass;
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::{Dataset, DatasetWriter, LabelSpec, OutputOptions, ReadOptions, Scaler};
use ndarray::Axis;
use std::path::PathBuf;

/// Rows written to each part.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitReport {
    /// Training rows.
    pub train_rows: u64,
    /// Test rows.
    pub test_rows: u64,
}

/// Whether global row `id` belongs to the test part.
pub fn is_test(seed: u64, id: u64, fraction: f64) -> bool {
    rng::unit(seed, Domain::TEST_SPLIT, id) < fraction
}

/// What to split, and where to.
#[derive(Clone, Debug)]
pub struct SplitConfig {
    /// Input Parquet file or directory.
    pub input: PathBuf,
    /// Output directory of the training rows.
    pub train: PathBuf,
    /// Output directory of the test rows.
    pub test: PathBuf,
    /// Label column (kept as the label of both outputs); with the label
    /// hint and no recorded label, every column is a feature.
    pub label: LabelSpec,
    /// Fraction of rows in the test part, in `(0, 1)`.
    pub test_fraction: f64,
    /// Seed of the row hash.
    pub seed: u64,
    /// Rows per read chunk (does not change the result).
    pub chunk_rows: usize,
    /// Rows per output shard.
    pub rows_per_shard: u64,
    /// Replace existing output directories.
    pub overwrite: bool,
}

/// Splits `cfg.input` into `cfg.train` and `cfg.test`.
pub fn split(cfg: &SplitConfig, observer: &dyn Observer) -> Result<SplitReport> {
    let SplitConfig { input, train, test, label, test_fraction, seed, chunk_rows, rows_per_shard, overwrite } = cfg;
    let (test_fraction, seed) = (*test_fraction, *seed);
    if !(test_fraction > 0.0 && test_fraction < 1.0) {
        bail!("--test-fraction: {test_fraction} is not a fraction in (0, 1)");
    }
    let ds = Dataset::open(input)?;
    let (features, label) = crate::read::resolve_optional_label(&ds, label)?;
    let (train_out, test_out) = (train, test);
    // Each output is staged, and kept apart from the input and from the other output.
    let apart = |other: &PathBuf| OutputOptions::new().with_overwrite(*overwrite).with_inputs([input, other]);
    let mut train =
        DatasetWriter::create_with(train_out, &features, label.as_deref(), *rows_per_shard, &apart(test_out))?;
    let mut test =
        DatasetWriter::create_with(test_out, &features, label.as_deref(), *rows_per_shard, &apart(train_out))?;
    let read = ReadOptions::new(features.clone()).with_label(label.clone()).with_chunk_rows(*chunk_rows);
    let identity = Scaler::None;
    let mut rows_test = Vec::new();
    let mut rows_train = Vec::new();
    Pass { dataset: &ds, read, scaler: &identity, maps: vec![], label: "split", observer, store: None }.run_chunks(
        &mut |chunk| {
            rows_test.clear();
            rows_train.clear();
            for i in 0..chunk.n_rows() {
                if is_test(seed, chunk.row_id(i), test_fraction) { rows_test.push(i) } else { rows_train.push(i) }
            }
            for (w, rows) in [(&mut train, &rows_train), (&mut test, &rows_test)] {
                let x = chunk.x.select(Axis(0), rows);
                let y = chunk.y.as_ref().map(|y| y.select(Axis(0), rows));
                w.push_rows(x.view(), y.as_ref().map(|y| y.view()))?;
            }
            Ok(())
        },
    )?;
    let train_rows = train.finish()?.rows_written;
    let test_rows = test.finish()?.rows_written;
    Ok(SplitReport { train_rows, test_rows })
}
