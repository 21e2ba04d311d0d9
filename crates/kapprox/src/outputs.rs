//! One output file per input shard, each written atomically.
//!
//! Commands that write data (`featurize`, `predict`, `split`) keep the
//! input's shard layout: shard `part-00003.parquet` of the input becomes
//! `part-00003.parquet` of the output, rows in input order. Each output file
//! is written under a temporary name and renamed when complete, so a killed
//! run leaves no file under a final name that is not whole, and a rerun
//! replaces everything. A run that fails (bad input in shard 5, say) removes
//! the files it completed, so an error leaves no output behind.

use anyhow::{Context, Result};
use kapprox_io::{Chunk, Dataset, DenseFeatureWriter, PredictionWriter, SparseFeatureWriter};
use ndarray::ArrayView2;
use std::path::{Path, PathBuf};

/// Refuses to write `values (n, k)` computed from `chunk` of `ds` when one
/// is NaN or infinite: names the input file, the first such row (its
/// global row id) and `cause` (called only then), the likely reason.
pub fn refuse_non_finite(
    ds: &Dataset,
    chunk: &Chunk,
    values: ArrayView2<'_, f64>,
    what: &str,
    cause: impl FnOnce() -> String,
) -> Result<()> {
    let Some((i, v)) =
        values.rows().into_iter().enumerate().find_map(|(i, r)| r.iter().find(|v| !v.is_finite()).map(|&v| (i, v)))
    else {
        return Ok(());
    };
    anyhow::bail!(
        "{}: row {}: the {what} is {v}; nothing was written: {}",
        ds.shards()[chunk.shard].path.display(),
        chunk.row_id(i),
        cause()
    )
}

/// Creates `dir` (and parents) and removes temporaries left by a killed run.
pub fn prepare_output_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the output directory", dir.display()))?;
    for entry in std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// The output path of input shard `shard` of `ds` under `out_dir`: its
/// path relative to the dataset root, since file names alone repeat across
/// Hive directories (`region=a/part-0.parquet`, `region=b/part-0.parquet`).
/// Creates the directories it needs.
pub fn output_path(ds: &Dataset, shard: usize, out_dir: &Path) -> Result<PathBuf> {
    let path = out_dir.join(&ds.shards()[shard].relative_path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the directory", dir.display()))?;
    }
    Ok(path)
}

/// A writer of one output file, for [`PerShard`].
pub trait OutputFile {
    /// The file's final path.
    fn path(&self) -> &Path;
}

impl OutputFile for DenseFeatureWriter {
    fn path(&self) -> &Path {
        DenseFeatureWriter::path(self)
    }
}

impl OutputFile for SparseFeatureWriter {
    fn path(&self) -> &Path {
        SparseFeatureWriter::path(self)
    }
}

impl OutputFile for PredictionWriter {
    fn path(&self) -> &Path {
        PredictionWriter::path(self)
    }
}

/// Opens a writer per shard as the pass reaches it and finishes the
/// previous one; the pass delivers chunks in shard order.
///
/// Dropped without a successful [`close`](PerShard::close) (the pass
/// failed), it abandons the open writer (whose temporary goes with it),
/// removes the files it completed, and removes their directory if that
/// leaves it empty.
pub struct PerShard<W: OutputFile> {
    current: Option<(usize, W)>,
    finish: fn(W) -> Result<u64>,
    files: usize,
    /// Files completed by this run, to remove if the run fails.
    written: Vec<PathBuf>,
    /// The directory of the files, once one was opened.
    dir: Option<PathBuf>,
    closed: bool,
}

impl<W: OutputFile> PerShard<W> {
    /// `finish` closes and renames one writer.
    pub fn new(finish: fn(W) -> Result<u64>) -> Self {
        PerShard { current: None, finish, files: 0, written: Vec::new(), dir: None, closed: false }
    }

    /// The writer for `shard`, opened with `open` when the pass moves on to it.
    pub fn writer(&mut self, shard: usize, open: impl FnOnce() -> Result<W>) -> Result<&mut W> {
        if self.current.as_ref().map(|(s, _)| *s) != Some(shard) {
            self.finish_current()?;
            let w = open()?;
            if self.dir.is_none() {
                self.dir = w.path().parent().map(Path::to_path_buf);
            }
            self.current = Some((shard, w));
            self.files += 1;
            self.closed = false;
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some((_, w)) = self.current.take() {
            let path = w.path().to_path_buf();
            (self.finish)(w)?;
            self.written.push(path);
        }
        Ok(())
    }

    /// Finishes the open writer, if any: the run is complete.
    pub fn close(&mut self) -> Result<()> {
        self.finish_current()?;
        self.closed = true;
        Ok(())
    }

    /// Files opened so far.
    pub fn files(&self) -> usize {
        self.files
    }
}

impl<W: OutputFile> Drop for PerShard<W> {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        // Dropping an unfinished writer removes its temporary.
        self.current = None;
        for p in &self.written {
            let _ = std::fs::remove_file(p);
        }
        if let Some(dir) = &self.dir {
            // Fails, as it should, when the directory holds anything else.
            let _ = std::fs::remove_dir(dir);
        }
    }
}
