//! Which files of a directory (or object prefix) are shards, in which
//! order, and the Hive partition values their paths carry.
//!
//! Rules, the same for local directories and object stores:
//! - the directory is searched recursively;
//! - a file or directory whose name starts with `_` or `.` is ignored with
//!   everything below it (Spark's `_SUCCESS`, `_committed_*`,
//!   `_temporary/`, `_metadata`, `.part-0.parquet.crc`, kapprox's own
//!   `.name.tmp` temporaries);
//! - a shard is a file whose name ends in `.parquet`, `.parq` or `.pq`;
//!   other files (READMEs, checksums) are ignored;
//! - shards are ordered by their path relative to the dataset root,
//!   compared component by component as bytes, so
//!   `region=north/part-1.parquet` comes before `region=south/part-0.parquet`
//!   and numbered files need zero padding (`part-00002` before `part-00010`);
//! - a directory named `key=value` is a Hive partition: every shard below
//!   it has the column `key` with that value (percent-decoded;
//!   `__HIVE_DEFAULT_PARTITION__` is null). Every shard must have the same
//!   partition keys in the same order.

use crate::error::{IoError, Result};
use crate::store::{self, Root, Store};
use object_store::path::Path as ObjectPath;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The value Hive and Spark write for a null partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Where a shard's bytes are.
#[derive(Clone, Debug)]
pub(crate) enum Location {
    /// A local file.
    Local(PathBuf),
    /// An object of `size` bytes.
    Remote { store: Arc<Store>, path: ObjectPath, size: u64 },
}

/// A shard found by discovery.
#[derive(Debug)]
pub(crate) struct Found {
    pub(crate) location: Location,
    /// The path shown in messages: the local path or the object's URL.
    pub(crate) display: PathBuf,
    /// Path relative to the dataset root (the file name for a single file).
    pub(crate) relative: PathBuf,
    /// `(key, value)` of the Hive directories above the file, outermost first.
    pub(crate) partitions: Vec<(String, Option<String>)>,
}

/// Lists the shards of a dataset path in global row order.
///
/// # Errors
/// A missing path or prefix, an unreadable directory, a store error, no
/// shard at all, or shards with different partition keys.
pub(crate) fn discover(path: &Path) -> Result<Vec<Found>> {
    let mut found = match store::resolve(path)? {
        Root::Local(p) => discover_local(&p)?,
        Root::Remote(store, prefix) => discover_remote(store, &prefix)?,
    };
    if found.is_empty() {
        return Err(IoError::NoParquetFiles { path: path.to_path_buf() });
    }
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    check_partition_keys(&found)?;
    Ok(found)
}

/// Whether a file or directory name is hidden from discovery.
pub(crate) fn is_ignored(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

/// Whether a file name is a Parquet shard's.
pub(crate) fn is_shard_name(name: &str) -> bool {
    !is_ignored(name) && [".parquet", ".parq", ".pq"].iter().any(|ext| name.ends_with(ext))
}

/// `key=value` of a Hive partition directory name, value percent-decoded.
fn partition_of(name: &str) -> Option<(String, Option<String>)> {
    let (key, value) = name.split_once('=')?;
    if key.is_empty() {
        return None;
    }
    let value = percent_decode(value);
    Some((key.to_string(), (value != HIVE_NULL).then_some(value)))
}

/// Decodes `%XX` escapes (Spark and Hive escape special characters in
/// partition values this way); malformed escapes are kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn partitions_of<'a>(dirs: impl Iterator<Item = &'a str>) -> Vec<(String, Option<String>)> {
    dirs.filter_map(partition_of).collect()
}

fn discover_local(path: &Path) -> Result<Vec<Found>> {
    let md = std::fs::metadata(path).map_err(|e| IoError::os(path, "cannot read", e))?;
    if !md.is_dir() {
        let name = path.file_name().map(PathBuf::from).unwrap_or_else(|| path.to_path_buf());
        return Ok(vec![Found {
            location: Location::Local(path.to_path_buf()),
            display: path.to_path_buf(),
            relative: name,
            partitions: Vec::new(),
        }]);
    }
    let mut out = Vec::new();
    walk(path, Path::new(""), &mut out)?;
    Ok(out)
}

/// Collects the shards below `root/rel`. Symbolic links to files are
/// followed; links to directories are not (they could form cycles).
fn walk(root: &Path, rel: &Path, out: &mut Vec<Found>) -> Result<()> {
    let dir = root.join(rel);
    let rd = std::fs::read_dir(&dir).map_err(|e| IoError::os(&dir, "cannot list directory", e))?;
    for entry in rd {
        let entry = entry.map_err(|e| IoError::os(&dir, "cannot list directory", e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_ignored(name) {
            continue;
        }
        let ft = entry.file_type().map_err(|e| IoError::os(entry.path(), "cannot stat", e))?;
        let child = rel.join(name);
        if ft.is_dir() {
            walk(root, &child, out)?;
        } else if is_shard_name(name) && (ft.is_file() || (ft.is_symlink() && entry.path().is_file())) {
            let partitions = partitions_of(rel.iter().filter_map(|c| c.to_str()));
            out.push(Found {
                location: Location::Local(entry.path()),
                display: entry.path(),
                relative: child,
                partitions,
            });
        }
    }
    Ok(())
}

fn discover_remote(store: Arc<Store>, prefix: &ObjectPath) -> Result<Vec<Found>> {
    let objects = store::list(&store, prefix)?;
    let single = objects.len() == 1 && objects[0].path == *prefix;
    let mut out = Vec::new();
    for o in objects {
        let parts: Vec<String> = if single {
            o.path.filename().into_iter().map(str::to_string).collect()
        } else {
            match o.path.prefix_match(prefix) {
                Some(p) => p.map(|part| part.as_ref().to_string()).collect(),
                None => continue,
            }
        };
        let Some((file, dirs)) = parts.split_last() else { continue };
        if !single && (dirs.iter().any(|d| is_ignored(d)) || !is_shard_name(file)) {
            continue;
        }
        out.push(Found {
            display: store.url(&o.path),
            relative: parts.iter().collect(),
            partitions: partitions_of(dirs.iter().map(String::as_str)),
            location: Location::Remote { store: store.clone(), path: o.path, size: o.size },
        });
    }
    Ok(out)
}

/// Every shard must carry the same partition keys, in the same order.
fn check_partition_keys(found: &[Found]) -> Result<()> {
    let keys = |f: &Found| f.partitions.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let first = keys(&found[0]);
    for f in &found[1..] {
        let k = keys(f);
        if k != first {
            return Err(IoError::PartitionKeys {
                path: f.display.clone(),
                reference: found[0].display.clone(),
                expected: first,
                found: k,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_names_and_escapes() {
        assert_eq!(partition_of("region=north"), Some(("region".into(), Some("north".into()))));
        assert_eq!(partition_of("d=2024-01-01%2012%3A00"), Some(("d".into(), Some("2024-01-01 12:00".into()))));
        assert_eq!(partition_of(&format!("k={HIVE_NULL}")), Some(("k".into(), None)));
        assert_eq!(partition_of("k="), Some(("k".into(), Some(String::new()))));
        assert_eq!(partition_of("=v"), None);
        assert_eq!(partition_of("plain"), None);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("a%zzb"), "a%zzb");
    }

    #[test]
    fn ignored_and_shard_names() {
        for n in ["_SUCCESS", "_committed_123", ".part-0.parquet.crc", "_metadata", ".x.parquet.tmp", "_temporary"] {
            assert!(is_ignored(n) && !is_shard_name(n), "{n}");
        }
        for n in ["part-0.parquet", "part-00000-abc.c000.snappy.parquet", "x.pq", "y.parq"] {
            assert!(is_shard_name(n), "{n}");
        }
        assert!(!is_shard_name("README.md"));
    }

    #[test]
    fn walks_recursively_in_path_order_and_skips_hidden_trees() {
        let dir = tempfile::tempdir().unwrap();
        let touch = |rel: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        };
        for rel in [
            "region=south/part-0.parquet",
            "region=north/part-1.parquet",
            "region=north/part-0.parquet",
            "region=north/.part-0.parquet.crc",
            "_SUCCESS",
            "_temporary/0/region=east/part-9.parquet",
            ".hidden/region=west/part-0.parquet",
            "region=north/notes.txt",
        ] {
            touch(rel);
        }
        let found = discover(dir.path()).unwrap();
        let rel: Vec<String> = found.iter().map(|f| f.relative.display().to_string()).collect();
        assert_eq!(rel, ["region=north/part-0.parquet", "region=north/part-1.parquet", "region=south/part-0.parquet"]);
        assert_eq!(found[2].partitions, [("region".to_string(), Some("south".to_string()))]);
        touch("part-loose.parquet");
        let e = discover(dir.path()).unwrap_err().to_string();
        assert!(e.contains("part-loose.parquet") && e.contains("region"), "{e}");
    }
}
