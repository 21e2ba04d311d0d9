//! Writing a whole dataset directory: the output side of `convert`, open
//! to any row producer (dataset generators, train/test splits).
//!
//! The layout is `convert`'s: shards `part-00000.parquet, ...` of
//! `rows_per_shard` rows, row groups of at most `row_group_rows` rows,
//! Float64 columns, and footer metadata recording the label column
//! ([`LABEL_KEY`](crate::LABEL_KEY)) and the shard's column statistics
//! ([`STATS_KEY`](crate::STATS_KEY)), so that readers get scaling
//! statistics without a pass. The directory appears atomically through
//! [`StagedOutput`]: shards are written into a hidden staging directory that
//! is renamed into place by [`DatasetWriter::finish`]; dropping the writer
//! (an error, a panic) removes it, and a killed process leaves only the
//! staging directory, which the next write to the same output removes.

use crate::convert::ShardSink;
use crate::error::{IoError, Result};
use crate::output::{OutputOptions, StagedOutput};
use crate::stats::ColumnStats;
use arrow::datatypes::DataType;
use ndarray::{ArrayView1, ArrayView2};
use std::path::{Path, PathBuf};

/// What a [`DatasetWriter`] wrote.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DatasetReport {
    /// Rows written.
    pub rows_written: u64,
    /// Shard files, in order.
    pub shards: Vec<PathBuf>,
    /// Statistics of every column over all rows.
    pub stats: ColumnStats,
}

/// Writes rows of named `f64` columns (features, then an optional label)
/// into a new dataset directory; see the [module docs](self).
pub struct DatasetWriter {
    out_dir: PathBuf,
    // Dropped before the staging directory it writes into.
    sink: ShardSink,
    staging: StagedOutput,
    n_features: usize,
    has_label: bool,
    row: Vec<f64>,
}

impl DatasetWriter {
    /// Starts a dataset at `out_dir` with feature columns `features` and,
    /// if given, a label column (written last).
    ///
    /// # Errors
    /// `out_dir` exists and is not empty (unless `overwrite`), or cannot be
    /// created; `rows_per_shard == 0`.
    pub fn create(
        out_dir: impl AsRef<Path>,
        features: &[String],
        label: Option<&str>,
        rows_per_shard: u64,
        overwrite: bool,
    ) -> Result<DatasetWriter> {
        let output = OutputOptions::new().with_overwrite(overwrite);
        Self::create_with(out_dir, features, label, rows_per_shard, &output)
    }

    /// Like [`create`](Self::create), with the output checks of `output`:
    /// overwriting, and the inputs (and other outputs) that `out_dir` must
    /// be apart from.
    ///
    /// # Errors
    /// As [`StagedOutput::directory`]; `rows_per_shard == 0`.
    pub fn create_with(
        out_dir: impl AsRef<Path>,
        features: &[String],
        label: Option<&str>,
        rows_per_shard: u64,
        output: &OutputOptions,
    ) -> Result<DatasetWriter> {
        let out_dir = out_dir.as_ref().to_path_buf();
        if rows_per_shard == 0 {
            return Err(IoError::InvalidOption {
                option: "rows_per_shard",
                value: "0".into(),
                expected: "a positive number of rows",
            });
        }
        let staging = StagedOutput::directory(&out_dir, output)?;
        let mut names = features.to_vec();
        names.extend(label.map(str::to_string));
        let types = vec![DataType::Float64; names.len()];
        let sink = ShardSink::with_layout(
            staging.path().to_path_buf(),
            &names,
            types,
            label,
            rows_per_shard,
            crate::writer::DEFAULT_ROW_GROUP_ROWS,
        );
        Ok(DatasetWriter {
            out_dir,
            sink,
            staging,
            n_features: features.len(),
            has_label: label.is_some(),
            row: vec![0.0; names.len()],
        })
    }

    /// Appends rows `x (n, n_features)` with labels `y (n)` (required iff
    /// the dataset has a label column).
    ///
    /// # Errors
    /// Shape mismatch, or a failed write.
    pub fn push_rows(&mut self, x: ArrayView2<'_, f64>, y: Option<ArrayView1<'_, f64>>) -> Result<()> {
        let path = self.out_dir.clone();
        if x.ncols() != self.n_features {
            return Err(IoError::BatchShape {
                path,
                what: "feature columns",
                expected: self.n_features,
                found: x.ncols(),
            });
        }
        match (self.has_label, y) {
            (true, Some(y)) if y.len() == x.nrows() => {}
            (false, None) => {}
            (true, y) => {
                let found = y.map_or(0, |y| y.len());
                return Err(IoError::BatchShape { path, what: "labels", expected: x.nrows(), found });
            }
            (false, Some(y)) => return Err(IoError::BatchShape { path, what: "labels", expected: 0, found: y.len() }),
        }
        for (i, xr) in x.rows().into_iter().enumerate() {
            for (dst, &v) in self.row.iter_mut().zip(xr.iter()) {
                *dst = v;
            }
            if let Some(y) = y {
                self.row[self.n_features] = y[i];
            }
            self.sink.push(&self.row)?;
        }
        Ok(())
    }

    /// Writes the last shard and moves the directory into place.
    ///
    /// # Errors
    /// A failed write or rename; nothing is left at the output then.
    pub fn finish(self) -> Result<DatasetReport> {
        let (names, stats, rows_written) = self.sink.finish()?;
        self.staging.commit()?;
        let shards = names.iter().map(|n| self.out_dir.join(n)).collect();
        Ok(DatasetReport { rows_written, shards, stats })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dataset, LabelSpec, ReadOptions};
    use ndarray::{Array1, Array2};

    #[test]
    fn writes_a_readable_dataset_with_stats_and_label() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ds");
        let names: Vec<String> = vec!["a".into(), "b".into()];
        let mut w = DatasetWriter::create(&out, &names, Some("y"), 700, false).unwrap();
        let x = Array2::from_shape_fn((1000, 2), |(i, j)| (i * 2 + j) as f64);
        let y = Array1::from_shape_fn(1000, |i| (i % 3) as f64);
        w.push_rows(x.view(), Some(y.view())).unwrap();
        let r = w.finish().unwrap();
        assert_eq!(r.rows_written, 1000);
        assert_eq!(r.shards.len(), 2);
        let ds = Dataset::open(&out).unwrap();
        assert_eq!(ds.label_hint(), Some("y"));
        assert_eq!(ds.stored_stats().unwrap().count(), 1000);
        let (f, l) = ds.resolve_columns(&LabelSpec::Hint).unwrap();
        let chunks: Vec<_> = ds.reader(ReadOptions::new(f).with_label(l)).unwrap().map(|c| c.unwrap()).collect();
        assert_eq!(chunks[1].x[[0, 1]], 1401.0);
        assert_eq!(chunks[1].y.as_ref().unwrap()[0], (700 % 3) as f64);
    }

    #[test]
    fn dropped_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ds");
        let names: Vec<String> = vec!["a".into()];
        let mut w = DatasetWriter::create(&out, &names, None, 10, false).unwrap();
        w.push_rows(Array2::zeros((25, 1)).view(), None).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
