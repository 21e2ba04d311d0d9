//! One output file per input shard, each written atomically.
//!
//! Commands that write data (`featurize`, `predict`, `split`) keep the
//! input's shard layout: shard `part-00003.parquet` of the input becomes
//! `part-00003.parquet` of the output, rows in input order. Each output file
//! is written under a temporary name and renamed when complete, so a killed
//! run leaves no file under a final name that is not whole, and a rerun
//! replaces everything.

use anyhow::{Context, Result};
use kapprox_io::Dataset;
use std::path::{Path, PathBuf};

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

/// The output path of input shard `shard` of `ds` under `out_dir`.
pub fn output_path(ds: &Dataset, shard: usize, out_dir: &Path) -> PathBuf {
    let name = ds.shards()[shard].path.file_name().expect("shards are files").to_owned();
    out_dir.join(name)
}

/// Opens a writer per shard as the pass reaches it and finishes the
/// previous one; the pass delivers chunks in shard order.
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
            self.close()?;
            self.current = Some((shard, open()?));
            self.files += 1;
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }

    /// Finishes the open writer, if any.
    pub fn close(&mut self) -> Result<()> {
        if let Some((_, w)) = self.current.take() {
            (self.finish)(w)?;
        }
        Ok(())
    }

    /// Files opened so far.
    pub fn files(&self) -> usize {
        self.files
    }
}
