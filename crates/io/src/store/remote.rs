//! Parquet's byte-source trait over object storage: the footer of a remote
//! shard, and the fetched column chunks of one row group.

use super::{Store, block_on};
use crate::error::{IoError, Result};
use bytes::{Buf, Bytes};
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};
use std::ops::Range;
use std::sync::Arc;

/// Bytes fetched with the footer: enough for the footers of files with a
/// few hundred columns in one request.
const FOOTER_PREFETCH: u64 = 64 * 1024;

/// A remote object read by ranged requests.
///
/// Used for the footer only: the last 64 KiB are fetched once, up front, and
/// serve every read that falls inside them; other reads issue one ranged
/// GET each. [`ChunkReader::get_read`] reads from its offset to the end of
/// the object, which the footer parser asks for only at the start of the
/// footer. Row groups are read through [`RowGroupBytes`].
#[derive(Debug)]
pub(crate) struct RemoteFile {
    store: Arc<Store>,
    path: ObjectPath,
    size: u64,
    tail: Bytes,
}

impl RemoteFile {
    /// Opens an object of `size` bytes and fetches its tail.
    pub(crate) fn open(store: Arc<Store>, path: ObjectPath, size: u64) -> Result<RemoteFile> {
        let start = size.saturating_sub(FOOTER_PREFETCH);
        let tail = fetch(&store, &path, std::slice::from_ref(&(start..size)))?.pop().unwrap_or_default();
        Ok(RemoteFile { store, path, size, tail })
    }

    /// The store and path, for [`RowGroupBytes::fetch`].
    pub(crate) fn location(&self) -> (&Arc<Store>, &ObjectPath) {
        (&self.store, &self.path)
    }
}

impl Length for RemoteFile {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for RemoteFile {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let length = self.size.checked_sub(start).ok_or_else(|| ParquetError::EOF("read past the end".into()))?;
        Ok(self.get_bytes(start, length as usize)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let tail_start = self.size - self.tail.len() as u64;
        if start >= tail_start {
            let at = (start - tail_start) as usize;
            if at + length <= self.tail.len() {
                return Ok(self.tail.slice(at..at + length));
            }
        }
        let end = start + length as u64;
        fetch(&self.store, &self.path, std::slice::from_ref(&(start..end)))
            .map(|mut v| v.pop().unwrap_or_default())
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

/// Fetches byte ranges of an object; every range must come back whole.
fn fetch(store: &Store, path: &ObjectPath, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
    let url = store.url(path);
    let got = if ranges.len() == 1 {
        block_on(&url, store.store.get_range(path, ranges[0].clone()))?.map(|b| vec![b])
    } else {
        block_on(&url, store.store.get_ranges(path, ranges))?
    };
    let got = got.map_err(|error| IoError::Store { path: url.clone(), what: "cannot read", error })?;
    for (r, b) in ranges.iter().zip(&got) {
        if b.len() as u64 != r.end - r.start {
            return Err(IoError::Truncated { path: url, expected: r.end, found: r.start + b.len() as u64 });
        }
    }
    Ok(got)
}

/// The requested column chunks of one row group of a remote shard, held in
/// memory while the row group is decoded.
///
/// Reads outside the fetched ranges fail: the decoder asks only for the
/// column chunks of its projection.
#[derive(Clone, Debug)]
pub(crate) struct RowGroupBytes {
    /// `(offset in the file, bytes)`, sorted by offset, disjoint.
    ranges: Arc<Vec<(u64, Bytes)>>,
    size: u64,
}

impl RowGroupBytes {
    /// Fetches `ranges` (sorted, disjoint byte ranges of the file).
    pub(crate) fn fetch(file: &RemoteFile, ranges: Vec<Range<u64>>) -> Result<RowGroupBytes> {
        let (store, path) = file.location();
        let got = fetch(store, path, &ranges)?;
        let ranges = ranges.iter().map(|r| r.start).zip(got).collect();
        Ok(RowGroupBytes { ranges: Arc::new(ranges), size: file.size })
    }

    /// The fetched range holding `start..start + length`: its file offset
    /// and bytes.
    fn find(&self, start: u64, length: u64) -> parquet::errors::Result<(u64, &Bytes)> {
        let i = self.ranges.partition_point(|(s, _)| *s <= start);
        if i > 0 {
            let (s, b) = &self.ranges[i - 1];
            if start + length <= s + b.len() as u64 {
                return Ok((*s, b));
            }
        }
        Err(ParquetError::General(format!("byte range {start}..{} was not fetched", start + length)))
    }
}

impl Length for RowGroupBytes {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for RowGroupBytes {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let (s, b) = self.find(start, 0)?;
        Ok(b.slice((start - s) as usize..).reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let (s, b) = self.find(start, length as u64)?;
        let at = (start - s) as usize;
        Ok(b.slice(at..at + length))
    }
}
