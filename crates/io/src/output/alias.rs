//! Whether an output path would be written over, into or around an input.
//!
//! Paths are compared after resolution: symlinks and `..` are resolved for
//! the longest prefix that exists (the rest cannot hold links and is
//! normalised lexically), and existing files and directories are also
//! compared by identity (device and inode), which catches a hard link to
//! an input and a directory mounted twice.

use crate::error::{IoError, Overlap, Result};
use std::path::{Component, Path, PathBuf};

/// Refuses `output` when it is, lies inside or contains any of `inputs`.
pub(super) fn check(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    let out = Resolved::of(output)?;
    for input in inputs {
        if let Some(relation) = out.overlap(&Resolved::of(input)?) {
            return Err(IoError::OutputIsInput { output: output.to_path_buf(), input: input.clone(), relation });
        }
    }
    Ok(())
}

/// A path resolved as far as it exists, with the identities of its existing
/// part: `ids[0]` is the path itself when it exists, then its ancestors.
struct Resolved {
    path: PathBuf,
    exists: bool,
    ids: Vec<FileId>,
}

type FileId = (u64, u64);

impl Resolved {
    fn of(path: &Path) -> Result<Resolved> {
        let path = resolve(path).map_err(|e| IoError::os(path, "cannot resolve", e))?;
        let exists = std::fs::metadata(&path).is_ok();
        let ids = path.ancestors().filter_map(file_id).collect();
        Ok(Resolved { path, exists, ids })
    }

    fn own_id(&self) -> Option<FileId> {
        if self.exists { self.ids.first().copied() } else { None }
    }

    /// The ids of existing strict ancestors.
    fn ancestor_ids(&self) -> &[FileId] {
        if self.exists { &self.ids[1..] } else { &self.ids }
    }

    fn overlap(&self, input: &Resolved) -> Option<Overlap> {
        let (out_id, in_id) = (self.own_id(), input.own_id());
        if self.path == input.path || (out_id.is_some() && out_id == in_id) {
            return Some(Overlap::Same);
        }
        if self.path.starts_with(&input.path) || in_id.is_some_and(|id| self.ancestor_ids().contains(&id)) {
            return Some(Overlap::Inside);
        }
        if input.path.starts_with(&self.path) || out_id.is_some_and(|id| input.ancestor_ids().contains(&id)) {
            return Some(Overlap::Contains);
        }
        None
    }
}

#[cfg(unix)]
fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_path: &Path) -> Option<FileId> {
    None
}

/// The absolute path with symlinks and `..` resolved as far as the path
/// exists, and the components past that appended lexically.
pub(super) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
    let parts: Vec<Component<'_>> = abs.components().collect();
    for k in (0..=parts.len()).rev() {
        let prefix: PathBuf = parts[..k].iter().collect();
        let Ok(mut out) = prefix.canonicalize() else { continue };
        for part in &parts[k..] {
            match part {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(name) => out.push(name),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return Ok(out);
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(out: &Path, input: &Path) -> Option<Overlap> {
        match check(out, &[input.to_path_buf()]) {
            Err(IoError::OutputIsInput { relation, .. }) => Some(relation),
            Err(e) => panic!("unexpected error {e}"),
            Ok(()) => None,
        }
    }

    #[test]
    fn same_inside_and_containing_paths_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let data = t.join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("part-00000.parquet"), b"x").unwrap();
        assert_eq!(refused(&data, &data), Some(Overlap::Same));
        assert_eq!(refused(&t.join("data/../data/."), &data), Some(Overlap::Same));
        assert_eq!(refused(&data.join("part-00000.parquet"), &data), Some(Overlap::Inside));
        assert_eq!(refused(&data.join("new/deeper"), &data), Some(Overlap::Inside));
        assert_eq!(refused(t, &data), Some(Overlap::Contains));
        assert_eq!(refused(&t.join("preds"), &data), None);
        assert_eq!(refused(&t.join("data2"), &data), None, "a shared name prefix is not containment");
        // Inputs that do not exist yet (another output of the same command).
        assert_eq!(refused(&t.join("a/b"), &t.join("a/b/../b")), Some(Overlap::Same));
        assert_eq!(refused(&t.join("a"), &t.join("a/b")), Some(Overlap::Contains));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_and_hard_links_are_seen_through() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let data = t.join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("a.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(&data, t.join("link")).unwrap();
        assert_eq!(refused(&t.join("link"), &data), Some(Overlap::Same));
        assert_eq!(refused(&t.join("link/out"), &data), Some(Overlap::Inside));
        assert_eq!(refused(&t.join("link/a.parquet"), &t.join("data/a.parquet")), Some(Overlap::Same));
        std::fs::hard_link(data.join("a.parquet"), t.join("b.parquet")).unwrap();
        assert_eq!(refused(&t.join("b.parquet"), &data.join("a.parquet")), Some(Overlap::Same));
        assert_eq!(refused(&t.join("b.parquet"), &data), None);
    }
}
