//! Output directories of the commands that write data, one file per input
//! shard.
//!
//! Commands that write data (`featurize`, `predict`, `split`) keep the
//! input's shard layout: shard `part-00003.parquet` of the input becomes
//! `part-00003.parquet` of the output, rows in input order, Hive
//! `key=value/` directories included. The whole directory is staged
//! ([`stage_dir`], a [`StagedOutput`]) and renamed into place only when
//! every shard is written, so a failed or killed run leaves nothing at the
//! final path (not even empty `key=value/` directories: they live in the
//! staging area, which goes as a whole), and an output that would
//! overwrite or contain an input is refused before any work.

use anyhow::{Context, Result};
use kapprox_io::{Chunk, Dataset, OutputOptions, StagedOutput};
use ndarray::ArrayView2;
use std::path::{Path, PathBuf};

/// Stages the output directory `out` of a command that reads `inputs`:
/// refused when it is, contains or lies inside one of them, or exists
/// (unless `overwrite`; an empty directory counts as absent). Write into
/// [`StagedOutput::path`], then [`StagedOutput::commit`]; dropped
/// uncommitted, it leaves nothing behind.
///
/// # Errors
/// See [`StagedOutput::directory`].
pub fn stage_dir<P: AsRef<Path>>(
    out: &Path,
    overwrite: bool,
    inputs: impl IntoIterator<Item = P>,
) -> Result<StagedOutput> {
    let opts = OutputOptions::new().with_overwrite(overwrite).with_inputs(inputs);
    Ok(StagedOutput::directory(out, &opts)?)
}

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

/// Opens a writer per shard as the pass reaches it and finishes the
/// previous one; the pass delivers chunks in shard order. Write into a
/// staged directory ([`stage_dir`]): a failed pass leaves its files to the
/// staging area, which is removed whole.
pub struct PerShard<W> {
    current: Option<(usize, W)>,
    finish: fn(W) -> Result<u64>,
    files: usize,
}

impl<W> PerShard<W> {
    /// `finish` closes and renames one writer.
    pub fn new(finish: fn(W) -> Result<u64>) -> Self {
        PerShard { current: None, finish, files: 0 }
    }

    /// The writer for `shard`, opened with `open` when the pass moves on to it.
    pub fn writer(&mut self, shard: usize, open: impl FnOnce() -> Result<W>) -> Result<&mut W> {
        if self.current.as_ref().map(|(s, _)| *s) != Some(shard) {
            self.finish_current()?;
            self.current = Some((shard, open()?));
            self.files += 1;
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some((_, w)) = self.current.take() {
            (self.finish)(w)?;
        }
        Ok(())
    }

    /// Finishes the open writer, if any: the run is complete.
    pub fn close(&mut self) -> Result<()> {
        self.finish_current()
    }

    /// Files opened so far.
    pub fn files(&self) -> usize {
        self.files
    }
}
