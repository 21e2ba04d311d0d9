//! `split`: a train/test split by a seeded hash of the global row id.
//!
//! One pass; each row goes to the test part with probability
//! `test_fraction`, independently of chunking and sharding. Both outputs
//! are complete datasets (statistics and label recorded), written
//! atomically.

use crate::pipeline::Pass;
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::{Dataset, DatasetWriter, LabelSpec, ReadOptions, Scaler};
use ndarray::Axis;
use std::path::Path;

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

/// Splits `input` into `train_out` and `test_out`.
pub fn split(
    input: &Path,
    train_out: &Path,
    test_out: &Path,
    label: &LabelSpec,
    test_fraction: f64,
    seed: u64,
    chunk_rows: usize,
    rows_per_shard: u64,
    overwrite: bool,
) -> Result<SplitReport> {
    if !(test_fraction > 0.0 && test_fraction < 1.0) {
        bail!("--test-fraction: {test_fraction} is not a fraction in (0, 1)");
    }
    let ds = Dataset::open(input)?;
    let (features, label) = match (label, ds.label_hint()) {
        (LabelSpec::Hint, None) => ds.resolve_columns(&LabelSpec::None)?,
        _ => ds.resolve_columns(label)?,
    };
    let mut train = DatasetWriter::create(train_out, &features, label.as_deref(), rows_per_shard, overwrite)?;
    let mut test = DatasetWriter::create(test_out, &features, label.as_deref(), rows_per_shard, overwrite)?;
    let read = ReadOptions::new(features.clone()).with_label(label.clone()).with_chunk_rows(chunk_rows);
    let identity = Scaler::None;
    let mut rows_test = Vec::new();
    let mut rows_train = Vec::new();
    Pass { dataset: &ds, read, scaler: &identity, maps: vec![], label: "split" }.run_chunks(&mut |chunk| {
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
    })?;
    let train_rows = train.finish()?.rows_written;
    let test_rows = test.finish()?.rows_written;
    Ok(SplitReport { train_rows, test_rows })
}
