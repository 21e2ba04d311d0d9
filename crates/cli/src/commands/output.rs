//! Where every command's outputs come from, and how it writes to stdout.
//!
//! Every file or directory a command writes goes through
//! [`kapprox::io::StagedOutput`] (here for files; the engine stages the
//! directories of `featurize` and `predict` itself, for the library's
//! users too): refused when it is, lies inside or
//! contains one of the command's inputs (or its other outputs); refused
//! when it exists, unless `--overwrite`; written under a hidden staging
//! name beside the target and renamed into place only when complete, so a
//! killed or failed run leaves nothing at the final path (and the next run
//! removes what it left). Commands obtain the staged location before any
//! work, so a refused output costs nothing.
//!
//! Writes to stdout go through [`line()`]: a closed pipe ends the command
//! quietly with exit 0 (see `main`), any other failure (a full disk) is an
//! error instead of a panic.

use anyhow::{Context, Result};
use kapprox::Model;
use kapprox::io::{OutputOptions, StagedOutput};
use kapprox::model::Integrity;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What an output must respect: `--overwrite`, and the paths it must be
/// apart from.
pub(crate) fn options<P: AsRef<Path>>(overwrite: bool, inputs: impl IntoIterator<Item = P>) -> OutputOptions {
    OutputOptions::new().with_overwrite(overwrite).with_inputs(inputs)
}

/// A file output at `target`, staged; [`commit_file`] writes and places it.
pub(crate) fn file<P: AsRef<Path>>(
    target: &Path,
    overwrite: bool,
    inputs: impl IntoIterator<Item = P>,
) -> Result<StagedOutput> {
    Ok(StagedOutput::file(target, &options(overwrite, inputs))?)
}

/// Writes `bytes` as the staged file `out` and renames it into place.
pub(crate) fn commit_file(out: StagedOutput, bytes: &[u8]) -> Result<()> {
    kapprox::tensorfile::write_staged(out, bytes)
}

/// The inputs of a command that reads `paths` (those given).
pub(crate) fn inputs<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) -> Vec<PathBuf> {
    paths.into_iter().flatten().map(Path::to_path_buf).collect()
}

/// Loads a model, verifying its checksum; a model written before checksums
/// existed still loads, with a note.
pub(crate) fn load_model(path: &Path) -> Result<Model> {
    let (model, integrity) = Model::load_verified(path)?;
    if integrity == Integrity::Unchecked {
        eprintln!(
            "kapprox: note: {} has no checksum (written by kapprox {}); it cannot be checked for damage. Fit again \
             (or load and save it) to add one.",
            path.display(),
            model.doc.kapprox_version
        );
    }
    Ok(model)
}

/// Writes one line to stdout.
pub(crate) fn line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).context("cannot write to stdout")
}

/// Writes text to stdout as it is.
pub(crate) fn text(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("cannot write to stdout")
}
