//! One way to write an output, file or directory, for every command.
//!
//! [`StagedOutput`] is where a command obtains its output location:
//!
//! - **Inputs are safe.** An output that is, lies inside or contains one
//!   of [`OutputOptions::inputs`] is refused before anything is written
//!   ([`IoError::OutputIsInput`]), after resolving symlinks, `..` and hard
//!   links; inputs that do not exist yet (a second output of the same
//!   command) are resolved through their existing parent.
//! - **Existing outputs are kept** unless [`OutputOptions::overwrite`]
//!   ([`IoError::OutputExists`], which names `--overwrite`). An empty
//!   directory counts as absent for a directory output.
//! - **All or nothing.** The output is written under a unique hidden name
//!   next to the target, inside a staging area
//!   `.<name>.kapprox-<pid>-<n>.tmp/`, and renamed into place by
//!   [`StagedOutput::commit`] only when complete. Readers of the target see
//!   nothing, or the old output, or the whole new one; never a part.
//!   Replacing uses `renameat2(RENAME_EXCHANGE)` on Linux, so the old output
//!   is swapped out in one step (fallback: see the private module `place`). Dropping a
//!   staged output without committing (an error, a panic) removes the
//!   staging area.
//! - **Concurrent runs** on one target each write their own staging area:
//!   without `overwrite` the first to commit wins whole and the others fail
//!   with [`IoError::OutputRaced`]; with `overwrite` each commit replaces
//!   the output whole, so the last one wins.
//! - **Crashes clean up after themselves.** A killed run leaves only its
//!   staging area, whose lock file records the run (see the private module `owner`); the next
//!   run on the same target removes the areas of runs that are provably
//!   dead, the fixed-name temporaries of earlier versions (`.<name>.tmp`),
//!   and `.<name>.XXXXXX.tmp` files older than
//!   [`OutputOptions::stale_after`].
//! - **Durable.** Before the rename every staged file and directory is
//!   fsync'd; after it, the parent directory.
//! - **The user's umask.** Directories (and the files the caller creates
//!   with [`std::fs::File::create`]) get the usual `0777`/`0666` masked by
//!   the umask, unlike `tempfile`'s `0600`.
//!
//! ```
//! use kapprox_io::{OutputOptions, StagedOutput};
//!
//! let tmp = std::env::temp_dir().join(format!("kapprox-output-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&tmp)?;
//! let input = tmp.join("train.csv");
//! std::fs::write(&input, "a,b\n1,2\n")?;
//! let opts = OutputOptions::new().with_inputs([&input]);
//!
//! // Writing over the input is refused.
//! assert!(StagedOutput::file(&input, &opts).is_err());
//!
//! let out = StagedOutput::directory(tmp.join("out"), &opts)?;
//! std::fs::write(out.path().join("part-00000.txt"), "done")?;
//! assert!(!tmp.join("out").exists());
//! out.commit()?;
//! assert!(tmp.join("out/part-00000.txt").exists());
//! std::fs::remove_dir_all(&tmp)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod alias;
mod owner;
mod place;

use crate::error::{IoError, Result};
use place::Renamed;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Default of [`OutputOptions::stale_after`]: one day.
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// How long a staging area without a complete lock record may sit before
/// it counts as abandoned: a live run writes its record microseconds after
/// creating the area, so a minute is ample.
const INCOMPLETE_GRACE: Duration = Duration::from_secs(60);

/// The marker of staging areas in their names.
const AREA_TAG: &str = "kapprox-";

/// How often placing is retried when other runs create or remove the
/// target at the same moment.
const PLACE_ATTEMPTS: usize = 8;

/// Longest part of the target's name that goes into a staging area's name,
/// in bytes, so that the area's name stays under the usual 255-byte limit.
const MAX_NAME_IN_AREA: usize = 200;

/// What an output may not touch and whether it may replace one, built with
/// `with_*` setters.
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `overwrite` | `false` | replace an existing output |
/// | `inputs` | none | paths the output must be apart from |
/// | `stale_after` | [`DEFAULT_STALE_AFTER`] | age after which a temporary whose owner cannot be checked is removed |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OutputOptions {
    /// Replace an existing output.
    pub overwrite: bool,
    /// Paths the output must neither be, lie inside, nor contain.
    pub inputs: Vec<PathBuf>,
    /// Age after which a leftover temporary whose owner cannot be checked
    /// is removed.
    pub stale_after: Duration,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions { overwrite: false, inputs: Vec::new(), stale_after: DEFAULT_STALE_AFTER }
    }
}

impl OutputOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replace an existing output. Disabled by default.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Adds paths the output must be apart from: the command's inputs and
    /// its other outputs. None by default.
    pub fn with_inputs<P: AsRef<Path>>(mut self, inputs: impl IntoIterator<Item = P>) -> Self {
        self.inputs.extend(inputs.into_iter().map(|p| p.as_ref().to_path_buf()));
        self
    }

    /// Age after which an ownerless temporary is removed. Default
    /// [`DEFAULT_STALE_AFTER`].
    pub fn with_stale_after(mut self, age: Duration) -> Self {
        self.stale_after = age;
        self
    }
}

/// Whether an output is a file or a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// One file; the caller creates it at [`StagedOutput::path`].
    File,
    /// A directory, created empty at [`StagedOutput::path`].
    Directory,
}

/// An output being written under a staging name; see the
/// [module docs](self).
#[derive(Debug)]
pub struct StagedOutput {
    target: PathBuf,
    area: PathBuf,
    staged: PathBuf,
    kind: OutputKind,
    overwrite: bool,
    lock: Option<owner::OwnerLock>,
    armed: bool,
}

impl StagedOutput {
    /// Stages a file output at `target`: the caller writes the file at
    /// [`path`](Self::path), then calls [`commit`](Self::commit).
    ///
    /// # Errors
    /// See [`StagedOutput::directory`].
    pub fn file(target: impl AsRef<Path>, opts: &OutputOptions) -> Result<StagedOutput> {
        Self::stage(target.as_ref(), OutputKind::File, opts)
    }

    /// Stages a directory output at `target`: an empty directory at
    /// [`path`](Self::path) to fill, then [`commit`](Self::commit).
    /// Creates the target's parent directories.
    ///
    /// # Errors
    /// [`IoError::BadOutputPath`] for a path without a final name;
    /// [`IoError::OutputIsInput`]; [`IoError::OutputExists`] without
    /// `overwrite`; [`IoError::OutputKind`] when overwriting would replace a
    /// file with a directory or the reverse; the staging area cannot be
    /// created.
    pub fn directory(target: impl AsRef<Path>, opts: &OutputOptions) -> Result<StagedOutput> {
        Self::stage(target.as_ref(), OutputKind::Directory, opts)
    }

    fn stage(target: &Path, kind: OutputKind, opts: &OutputOptions) -> Result<StagedOutput> {
        let name = target.file_name().ok_or_else(|| IoError::BadOutputPath { path: target.to_path_buf() })?;
        let name = name.to_string_lossy().into_owned();
        alias::check(target, &opts.inputs)?;
        if opts.overwrite {
            refuse_other_kind(target, kind)?;
        } else {
            refuse_existing(target, kind)?;
        }
        let parent = parent_dir(target);
        std::fs::create_dir_all(parent).map_err(|e| IoError::os(parent, "cannot create directory", e))?;
        remove_stale(parent, &name, opts.stale_after);
        let area = create_area(parent, &name)?;
        let mut out = StagedOutput {
            target: target.to_path_buf(),
            staged: area.join(&name),
            area,
            kind,
            overwrite: opts.overwrite,
            lock: None,
            armed: true,
        };
        out.lock = Some(owner::take(&out.area).map_err(|e| IoError::os(&out.area, "cannot create a lock file", e))?);
        if kind == OutputKind::Directory {
            std::fs::create_dir(&out.staged).map_err(|e| IoError::os(&out.staged, "cannot create directory", e))?;
        }
        Ok(out)
    }

    /// Where to write: the staged file's path, or the staged directory.
    pub fn path(&self) -> &Path {
        &self.staged
    }

    /// The final path, as given.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// File or directory.
    pub fn kind(&self) -> OutputKind {
        self.kind
    }

    /// Flushes the staged output to disk and renames it into place (see the
    /// [module docs](self)), then removes the staging area with whatever
    /// output it replaced.
    ///
    /// # Errors
    /// Nothing was written at [`path`](Self::path); another run placed an
    /// output meanwhile ([`IoError::OutputRaced`], without `overwrite`); a
    /// failed fsync or rename. The target is unchanged then.
    pub fn commit(mut self) -> Result<()> {
        place::sync_tree(&self.staged).map_err(|e| IoError::os(&self.staged, "cannot flush", e))?;
        self.place()?;
        let parent = parent_dir(&self.target);
        place::sync_dir(parent).map_err(|e| IoError::os(parent, "cannot flush directory", e))?;
        self.armed = false;
        let _ = std::fs::remove_dir_all(&self.area);
        self.lock = None;
        Ok(())
    }

    fn place(&self) -> Result<()> {
        let (from, to) = (&self.staged, &self.target);
        let fail = |e| IoError::os(to, "cannot rename into place", e);
        for _ in 0..PLACE_ATTEMPTS {
            let present = to.symlink_metadata().is_ok();
            if !present {
                match place::rename_noreplace(from, to, self.kind == OutputKind::Directory).map_err(fail)? {
                    Renamed::Placed => return Ok(()),
                    // Another run was quicker: look again.
                    _ => continue,
                }
            }
            if self.overwrite {
                match place::exchange(from, to).map_err(fail)? {
                    Renamed::Placed => return Ok(()),
                    Renamed::Unsupported => {
                        return place::replace_without_exchange(from, to, &self.area.join("replaced")).map_err(fail);
                    }
                    _ => continue,
                }
            }
            if self.kind == OutputKind::Directory && is_empty_dir(to) {
                // rmdir refuses a directory that another run just filled.
                match std::fs::remove_dir(to) {
                    Ok(()) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(_) => break,
                }
            }
            break;
        }
        Err(IoError::OutputRaced { path: to.clone() })
    }
}

impl Drop for StagedOutput {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_dir_all(&self.area);
        }
    }
}

/// Refuses `target` when it is, lies inside or contains one of `inputs`
/// (as [`StagedOutput`] does, symlinks and hard links resolved), without
/// staging anything: for an output directory that collects files across
/// runs rather than being written whole.
///
/// # Errors
/// [`IoError::OutputIsInput`].
pub fn check_apart<P: AsRef<Path>>(target: impl AsRef<Path>, inputs: impl IntoIterator<Item = P>) -> Result<()> {
    let inputs: Vec<PathBuf> = inputs.into_iter().map(|p| p.as_ref().to_path_buf()).collect();
    alias::check(target.as_ref(), &inputs)
}

/// The directory that holds `target` (`.` for a bare name).
fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

/// Refuses an existing target, except an empty directory for a directory
/// output.
fn refuse_existing(target: &Path, kind: OutputKind) -> Result<()> {
    match target.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(IoError::os(target, "cannot stat", e)),
        Ok(md) if kind == OutputKind::Directory && md.is_dir() && is_empty_dir(target) => Ok(()),
        Ok(_) => Err(IoError::OutputExists { path: target.to_path_buf() }),
    }
}

/// Refuses to replace a directory with a file or a file with a directory.
fn refuse_other_kind(target: &Path, kind: OutputKind) -> Result<()> {
    let Ok(md) = std::fs::metadata(target) else { return Ok(()) };
    let name = |dir: bool| if dir { "a directory" } else { "a file" };
    let wanted = kind == OutputKind::Directory;
    if md.is_dir() != wanted {
        return Err(IoError::OutputKind {
            path: target.to_path_buf(),
            existing: name(md.is_dir()),
            wanted: name(wanted),
        });
    }
    Ok(())
}

/// The name of staging areas for `name` start with `.<short name>.`.
fn area_prefix(name: &str) -> String {
    let mut end = name.len().min(MAX_NAME_IN_AREA);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.", &name[..end])
}

/// Creates a staging area with a name no other run uses.
fn create_area(parent: &Path, name: &str) -> Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = area_prefix(name);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let area = parent.join(format!("{prefix}{AREA_TAG}{}-{n}.tmp", std::process::id()));
        match std::fs::create_dir(&area) {
            Ok(()) => return Ok(area),
            // Left by an earlier process with this pid: take the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(IoError::os(&area, "cannot create a staging directory", e)),
        }
    }
}

/// Removes, next to an output `name` in `parent`, the staging areas of runs
/// that are provably gone and the temporaries of earlier versions (see the
/// [module docs](self)). Best effort: what cannot be removed stays.
fn remove_stale(parent: &Path, name: &str, stale_after: Duration) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let prefix = area_prefix(name);
    let legacy_prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else { continue };
        let path = entry.path();
        if let Some(rest) = n.strip_prefix(&prefix)
            && rest.starts_with(AREA_TAG)
            && rest.ends_with(".tmp")
        {
            if owner::is_stale(&path, stale_after, INCOMPLETE_GRACE) {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        }
        let Some(rest) = n.strip_prefix(&legacy_prefix) else { continue };
        if rest == "tmp" {
            // Earlier versions' fixed temporary, meant to be replaced by
            // the next run.
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        } else if is_random_suffix(rest) && older_than(&path, stale_after) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `XXXXXX.tmp` with six alphanumeric characters: a `tempfile` name.
fn is_random_suffix(rest: &str) -> bool {
    rest.strip_suffix(".tmp").is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn older_than(path: &Path, age: Duration) -> bool {
    path.symlink_metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|a| a >= age)
}
