//! Moving a staged output into place: renames that never replace by
//! accident, an atomic exchange to replace, and the fsyncs that make the
//! result survive a power cut.
//!
//! On Linux, `renameat2` with `RENAME_NOREPLACE` places an output only if
//! nothing is at the target, and with `RENAME_EXCHANGE` swaps a new output
//! with the old one in one step (readers see the old or the new, never
//! neither). Filesystems without them (some network and FUSE filesystems,
//! other systems) get the fallbacks described at each function.

use std::io;
use std::path::Path;

/// What a rename did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Renamed {
    /// Done.
    Placed,
    /// Something is at the target (placing without replacing).
    TargetExists,
    /// The target is gone (exchanging).
    TargetMissing,
    /// Unsupported by this system or filesystem: use a fallback.
    Unsupported,
}

#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: rustix::fs::RenameFlags) -> io::Result<Renamed> {
    use rustix::io::Errno;
    match rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, flags) {
        Ok(()) => Ok(Renamed::Placed),
        Err(Errno::EXIST) => Ok(Renamed::TargetExists),
        Err(Errno::NOENT) if to.symlink_metadata().is_err() && from.symlink_metadata().is_ok() => {
            Ok(Renamed::TargetMissing)
        }
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => Ok(Renamed::Unsupported),
        Err(e) => Err(e.into()),
    }
}

/// Renames `from` to `to` unless something is at `to`.
///
/// Fallback without `RENAME_NOREPLACE`: a file is hard-linked to `to`
/// (which fails if `to` exists) and then unlinked; a directory is renamed
/// with `rename(2)`, which refuses a non-empty directory or a file at `to`
/// but replaces an empty directory (an empty output directory may be
/// replaced anyway).
pub(super) fn rename_noreplace(from: &Path, to: &Path, is_dir: bool) -> io::Result<Renamed> {
    #[cfg(target_os = "linux")]
    match renameat2(from, to, rustix::fs::RenameFlags::NOREPLACE)? {
        Renamed::Unsupported => {}
        done => return Ok(done),
    }
    if is_dir {
        return match std::fs::rename(from, to) {
            Ok(()) => Ok(Renamed::Placed),
            Err(_) if to.symlink_metadata().is_ok() && from.symlink_metadata().is_ok() => Ok(Renamed::TargetExists),
            Err(e) => Err(e),
        };
    }
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            std::fs::remove_file(from)?;
            Ok(Renamed::Placed)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Renamed::TargetExists),
        // No hard links here (FAT, some FUSE filesystems): check, then
        // rename. A run that creates `to` between the two is replaced.
        Err(_) if to.symlink_metadata().is_ok() => Ok(Renamed::TargetExists),
        Err(_) => std::fs::rename(from, to).map(|()| Renamed::Placed),
    }
}

/// Swaps `from` and `to` atomically: afterwards the old `to` is at `from`.
/// [`Renamed::Unsupported`] where the system cannot exchange.
pub(super) fn exchange(from: &Path, to: &Path) -> io::Result<Renamed> {
    #[cfg(target_os = "linux")]
    return renameat2(from, to, rustix::fs::RenameFlags::EXCHANGE);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to);
        Ok(Renamed::Unsupported)
    }
}

/// Replaces `to` with `from` without an exchange: a file over a file is
/// one `rename(2)` (atomic); otherwise the old `to` is first moved to
/// `aside` (which then holds it), leaving a moment where `to` is absent.
pub(super) fn replace_without_exchange(from: &Path, to: &Path, aside: &Path) -> io::Result<()> {
    let to_is_dir = to.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false);
    let from_is_dir = from.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false);
    if !to_is_dir && !from_is_dir {
        return std::fs::rename(from, to);
    }
    std::fs::rename(to, aside)?;
    if let Err(e) = std::fs::rename(from, to) {
        let _ = std::fs::rename(aside, to);
        return Err(e);
    }
    Ok(())
}

/// Flushes `path` to disk: a file's data, or a directory's entries and,
/// recursively, every file and directory below it.
pub(super) fn sync_tree(path: &Path) -> io::Result<()> {
    let md = path.symlink_metadata()?;
    if md.is_dir() {
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if !entry.file_type()?.is_symlink() {
                sync_tree(&entry.path())?;
            }
        }
        sync_dir(path)
    } else if md.is_file() {
        std::fs::File::open(path)?.sync_all()
    } else {
        Ok(())
    }
}

/// Flushes a directory's entries (which names point where) to disk.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    match std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        // Some filesystems cannot fsync a directory; their renames are as
        // durable as they get.
        Err(e) if matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noreplace_refuses_an_existing_target_and_places_otherwise() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::write(&a, b"new").unwrap();
        std::fs::write(&b, b"old").unwrap();
        assert_eq!(rename_noreplace(&a, &b, false).unwrap(), Renamed::TargetExists);
        assert_eq!(std::fs::read(&b).unwrap(), b"old");
        std::fs::remove_file(&b).unwrap();
        assert_eq!(rename_noreplace(&a, &b, false).unwrap(), Renamed::Placed);
        assert_eq!(std::fs::read(&b).unwrap(), b"new");
        assert!(!a.exists());
        let (d, e) = (tmp.path().join("d"), tmp.path().join("e"));
        std::fs::create_dir(&d).unwrap();
        std::fs::create_dir(&e).unwrap();
        std::fs::write(e.join("x"), b"").unwrap();
        assert_eq!(rename_noreplace(&d, &e, true).unwrap(), Renamed::TargetExists);
        assert!(e.join("x").exists());
    }

    #[test]
    fn exchange_swaps_or_says_it_cannot() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::write(&b, b"old file").unwrap();
        match exchange(&a, &b).unwrap() {
            Renamed::Placed => {
                assert!(b.is_dir());
                assert_eq!(std::fs::read(&a).unwrap(), b"old file");
            }
            Renamed::Unsupported => {
                replace_without_exchange(&a, &b, &tmp.path().join("aside")).unwrap();
                assert!(b.is_dir());
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(&a).ok();
        std::fs::create_dir(&a).ok();
        assert!(matches!(
            exchange(&a, &tmp.path().join("missing")).unwrap(),
            Renamed::TargetMissing | Renamed::Unsupported
        ));
    }

    #[test]
    fn replacing_without_exchange_keeps_the_old_output_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let (new, old, aside) = (tmp.path().join("new"), tmp.path().join("old"), tmp.path().join("aside"));
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("n"), b"").unwrap();
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("o"), b"").unwrap();
        replace_without_exchange(&new, &old, &aside).unwrap();
        assert!(old.join("n").exists() && aside.join("o").exists() && !new.exists());
        sync_tree(tmp.path()).unwrap();
    }
}
