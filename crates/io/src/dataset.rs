//! A dataset of Parquet shards, opened from the footers alone.

use crate::error::{IoError, Result};
use crate::reader::{ChunkReader, ReadOptions};
use crate::stats::ColumnStats;
use arrow::datatypes::{DataType, SchemaRef};
use bytes::Bytes;
use memmap2::Mmap;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Footer key-value metadata key under which [`convert`](crate::convert())
/// records the label column name.
pub const LABEL_KEY: &str = "kapprox.label";
/// Footer key-value metadata key under which [`convert`](crate::convert())
/// records the shard's [`ColumnStats`] as JSON.
pub const STATS_KEY: &str = "kapprox.stats";

/// Which column is the label (target).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LabelSpec {
    /// The column with this name.
    Name(String),
    /// The last column.
    Last,
    /// The column recorded by [`convert`](crate::convert()) in the footer
    /// metadata (key [`LABEL_KEY`]); an error if none is recorded.
    Hint,
    /// No label: every column is a feature.
    #[default]
    None,
}

/// One Parquet file of a [`Dataset`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardInfo {
    /// The file.
    pub path: PathBuf,
    /// Rows in the file.
    pub n_rows: u64,
    /// Global row id of the file's first row: rows are numbered from 0 in
    /// the order of the shards' file names.
    pub first_row: u64,
    /// Row groups in the file.
    pub n_row_groups: usize,
}

/// What the reader needs of a shard besides [`ShardInfo`].
#[derive(Debug)]
pub(crate) struct ShardMeta {
    pub(crate) info: ShardInfo,
    pub(crate) file_len: u64,
    pub(crate) arrow: ArrowReaderMetadata,
    /// Row offset of each row group within the file, plus the total at the end.
    pub(crate) row_group_starts: Vec<u64>,
}

/// A dataset of Parquet shards: one `.parquet` file, or a directory of them.
///
/// [`Dataset::open`] reads only the footers (row counts, row groups, schema);
/// data is read by [`Dataset::reader`]. Shards are ordered by file name
/// (byte-wise, so number them with zero padding as `part-00000.parquet`),
/// and a row's global id is its position in that order.
///
/// The shards must not be modified while a dataset is open: they are
/// memory-mapped when read (a size change is detected and refused).
#[derive(Debug, Clone)]
pub struct Dataset {
    path: PathBuf,
    shards: Vec<ShardInfo>,
    meta: Vec<Arc<ShardMeta>>,
    schema: SchemaRef,
    columns: Vec<String>,
    label_hint: Option<String>,
    stored_stats: Option<ColumnStats>,
}

impl Dataset {
    /// Opens a `.parquet` file or a directory of `*.parquet` shards.
    ///
    /// In a directory, files whose name starts with `.` or ends with `.tmp`
    /// (temporaries of interrupted writes) and subdirectories are ignored.
    ///
    /// Cost: one footer read per shard; no data is read.
    ///
    /// # Errors
    /// The path does not exist ([`IoError::NotFound`]); a directory has no
    /// parquet file ([`IoError::NoParquetFiles`]); a footer is unreadable
    /// ([`IoError::Footer`]); shards disagree on the schema
    /// ([`IoError::SchemaMismatch`]); a column name repeats
    /// ([`IoError::DuplicateColumn`]); kapprox footer metadata is malformed
    /// ([`IoError::BadMetadata`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Dataset> {
        let path = path.as_ref().to_path_buf();
        let md = std::fs::metadata(&path).map_err(|e| IoError::os(&path, "cannot read", e))?;
        let files = if md.is_dir() { list_shards(&path)? } else { vec![path.clone()] };
        if files.is_empty() {
            return Err(IoError::NoParquetFiles { path });
        }
        let mut shards = Vec::with_capacity(files.len());
        let mut meta = Vec::with_capacity(files.len());
        let mut first_row = 0u64;
        for file in files {
            let m = read_footer(&file, first_row)?;
            first_row += m.info.n_rows;
            shards.push(m.info.clone());
            meta.push(Arc::new(m));
        }
        let schema = meta[0].arrow.schema().clone();
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        check_unique(&shards[0].path, &columns)?;
        for m in &meta[1..] {
            check_same_schema(&shards[0].path, &schema, &m.info.path, m.arrow.schema())?;
        }
        let label_hint = common_label(&meta);
        let stored_stats = merged_stats(&meta)?;
        Ok(Dataset { path, shards, meta, schema, columns, label_hint, stored_stats })
    }

    /// The path given to [`Dataset::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shards, in global row order.
    pub fn shards(&self) -> &[ShardInfo] {
        &self.shards
    }

    /// Total number of rows.
    pub fn n_rows(&self) -> u64 {
        self.shards.iter().map(|s| s.n_rows).sum()
    }

    /// All column names, in schema order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The Arrow schema shared by all shards.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The label column recorded by [`convert`](crate::convert()) (footer key
    /// [`LABEL_KEY`]), if every shard records the same one.
    pub fn label_hint(&self) -> Option<&str> {
        self.label_hint.as_deref()
    }

    /// Column statistics recorded by [`convert`](crate::convert()) (footer key
    /// [`STATS_KEY`]), merged over shards, if every shard records them for
    /// the same columns. Select columns with [`ColumnStats::select`].
    pub fn stored_stats(&self) -> Option<&ColumnStats> {
        self.stored_stats.as_ref()
    }

    /// Splits the columns into features and label.
    ///
    /// Features are all columns except the label, in schema order.
    ///
    /// # Errors
    /// [`IoError::ColumnNotFound`] for a missing named label (listing the
    /// available columns); [`IoError::NoLabelHint`] for
    /// [`LabelSpec::Hint`] without a recorded label; [`IoError::EmptyInput`]
    /// for [`LabelSpec::Last`] on a schema without columns.
    pub fn resolve_columns(&self, label: &LabelSpec) -> Result<(Vec<String>, Option<String>)> {
        let label = match label {
            LabelSpec::None => None,
            LabelSpec::Last => {
                Some(self.columns.last().cloned().ok_or_else(|| IoError::EmptyInput { path: self.path.clone() })?)
            }
            LabelSpec::Hint => {
                Some(self.label_hint.clone().ok_or_else(|| IoError::NoLabelHint { path: self.path.clone() })?)
            }
            LabelSpec::Name(n) => {
                if !self.columns.contains(n) {
                    return Err(self.not_found(n));
                }
                Some(n.clone())
            }
        };
        let features = self.columns.iter().filter(|c| Some(*c) != label.as_ref()).cloned().collect();
        Ok((features, label))
    }

    /// Column minima and maxima from the Parquet row-group statistics, without
    /// reading data; `None` if some row group of some shard lacks statistics
    /// for one of the columns (files written by kapprox always have them).
    ///
    /// # Errors
    /// [`IoError::ColumnNotFound`] for an unknown column.
    pub fn footer_min_max<S: AsRef<str>>(&self, columns: &[S]) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
        let mut lo = vec![f64::INFINITY; columns.len()];
        let mut hi = vec![f64::NEG_INFINITY; columns.len()];
        for (k, c) in columns.iter().enumerate() {
            let c = c.as_ref();
            let j = self.columns.iter().position(|n| n == c).ok_or_else(|| self.not_found(c))?;
            let dt = self.schema.field(j).data_type();
            for m in &self.meta {
                let md = m.arrow.metadata();
                // Arrow root j is parquet leaf j: the schemas are flat (nested
                // columns are rejected as non-numeric before they get here).
                if md.file_metadata().schema_descr().num_columns() != self.columns.len() {
                    return Ok(None);
                }
                for rg in md.row_groups() {
                    if rg.num_rows() == 0 {
                        continue;
                    }
                    let Some((a, b)) = rg.column(j).statistics().and_then(|s| stat_bounds(s, dt)) else {
                        return Ok(None);
                    };
                    lo[k] = lo[k].min(a);
                    hi[k] = hi[k].max(b);
                }
            }
        }
        Ok(Some((lo, hi)))
    }

    /// A streaming reader over the rows; see [`ReadOptions`] and
    /// [`ChunkReader`].
    ///
    /// # Errors
    /// Unknown or non-numeric columns, an out-of-range shard index or an
    /// invalid option.
    pub fn reader(&self, opts: ReadOptions) -> Result<ChunkReader> {
        ChunkReader::new(self, opts)
    }

    pub(crate) fn meta(&self) -> &[Arc<ShardMeta>] {
        &self.meta
    }

    pub(crate) fn not_found(&self, column: &str) -> IoError {
        IoError::ColumnNotFound { path: self.path.clone(), column: column.to_string(), available: self.columns.clone() }
    }
}

/// `*.parquet` files of a directory, sorted by name, without hidden or
/// temporary files.
fn list_shards(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| IoError::os(dir, "cannot list directory", e))?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| IoError::os(dir, "cannot list directory", e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') || name.ends_with(".tmp") || !name.ends_with(".parquet") {
            continue;
        }
        let ft = entry.file_type().map_err(|e| IoError::os(entry.path(), "cannot stat", e))?;
        // Follow symlinks: a directory of links to shards elsewhere is fine.
        let is_file = ft.is_file() || (ft.is_symlink() && entry.path().is_file());
        if is_file {
            files.push(entry.path());
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// Memory-maps a file and wraps the map in `Bytes` without copying.
pub(crate) fn map_file(path: &Path) -> Result<(Arc<Mmap>, Bytes, u64)> {
    let file = std::fs::File::open(path).map_err(|e| IoError::os(path, "cannot open", e))?;
    let len = file.metadata().map_err(|e| IoError::os(path, "cannot stat", e))?.len();
    // SAFETY: the map is read-only; the documented contract of `Dataset` is
    // that shards are not modified while open, and a size change is checked
    // before reading.
    let mmap = unsafe { Mmap::map(&file) }.map_err(|e| IoError::os(path, "cannot memory-map", e))?;
    let mmap = Arc::new(mmap);
    let bytes = Bytes::from_owner(MapOwner(mmap.clone()));
    Ok((mmap, bytes, len))
}

/// Lets `Bytes` own a shared map while the reader keeps a handle for
/// `madvise`.
struct MapOwner(Arc<Mmap>);

impl AsRef<[u8]> for MapOwner {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn read_footer(path: &Path, first_row: u64) -> Result<ShardMeta> {
    let (_map, bytes, file_len) = map_file(path)?;
    let arrow = ArrowReaderMetadata::load(&bytes, ArrowReaderOptions::new())
        .map_err(|error| IoError::Footer { path: path.to_path_buf(), error })?;
    let md = arrow.metadata();
    check_layout(path, md, file_len)?;
    let mut row_group_starts = Vec::with_capacity(md.num_row_groups() + 1);
    let mut n = 0u64;
    for rg in md.row_groups() {
        row_group_starts.push(n);
        // Non-negative and summing without overflow: checked above.
        n += rg.num_rows() as u64;
    }
    row_group_starts.push(n);
    let info = ShardInfo { path: path.to_path_buf(), n_rows: n, first_row, n_row_groups: md.num_row_groups() };
    Ok(ShardMeta { info, file_len, arrow, row_group_starts })
}

/// Refuses a footer whose row counts or column chunk positions cannot be
/// true of this file: the parquet crate trusts them (and panics on some,
/// e.g. a negative offset), so a damaged footer is caught here, before any
/// reader uses it.
fn check_layout(path: &Path, md: &ParquetMetaData, file_len: u64) -> Result<()> {
    let corrupt = |what: String| IoError::Footer { path: path.to_path_buf(), error: ParquetError::General(what) };
    let mut rows = 0u64;
    for (r, rg) in md.row_groups().iter().enumerate() {
        let n = u64::try_from(rg.num_rows())
            .map_err(|_| corrupt(format!("row group {r}: expected a row count, found {}", rg.num_rows())))?;
        rows = rows
            .checked_add(n)
            .filter(|&t| t <= i64::MAX as u64)
            .ok_or_else(|| corrupt(format!("row group {r}: row counts add up past 2^63")))?;
        for (c, col) in rg.columns().iter().enumerate() {
            let start = col.dictionary_page_offset().unwrap_or(col.data_page_offset());
            let len = col.compressed_size();
            let fits = start >= 0
                && len >= 0
                && col.data_page_offset() >= 0
                && (start as u64).checked_add(len as u64).is_some_and(|end| end <= file_len);
            if !fits {
                return Err(corrupt(format!(
                    "row group {r}, column {c}: expected a column chunk inside the file of {file_len} bytes, found {len} bytes at offset {start}"
                )));
            }
        }
    }
    Ok(())
}

pub(crate) fn check_unique(path: &Path, columns: &[String]) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, c) in columns.iter().enumerate() {
        if let Some(&first) = seen.get(c.as_str()) {
            return Err(IoError::DuplicateColumn {
                path: path.to_path_buf(),
                column: c.clone(),
                first: first + 1,
                second: i + 1,
            });
        }
        seen.insert(c, i);
    }
    Ok(())
}

fn check_same_schema(reference: &Path, expected: &SchemaRef, path: &Path, found: &SchemaRef) -> Result<()> {
    let mismatch = |column: &str, e: Option<&DataType>, f: Option<&DataType>| IoError::SchemaMismatch {
        path: path.to_path_buf(),
        reference: reference.to_path_buf(),
        column: column.to_string(),
        expected: e.cloned(),
        found: f.cloned(),
    };
    // Compare names and types in order; nullability and field metadata may
    // legitimately differ between writers.
    for (i, fe) in expected.fields().iter().enumerate() {
        match found.fields().get(i) {
            Some(ff) if ff.name() == fe.name() && ff.data_type() == fe.data_type() => {}
            Some(ff) if ff.name() == fe.name() => {
                return Err(mismatch(fe.name(), Some(fe.data_type()), Some(ff.data_type())));
            }
            _ => {
                return Err(match found.fields().iter().position(|f| f.name() == fe.name()) {
                    Some(at) => IoError::ColumnOrder {
                        path: path.to_path_buf(),
                        reference: reference.to_path_buf(),
                        column: fe.name().clone(),
                        expected: i + 1,
                        found: at + 1,
                    },
                    None => mismatch(fe.name(), Some(fe.data_type()), None),
                });
            }
        }
    }
    if let Some(extra) = found.fields().get(expected.fields().len()) {
        return Err(mismatch(extra.name(), None, Some(extra.data_type())));
    }
    Ok(())
}

fn footer_value<'a>(m: &'a ShardMeta, key: &str) -> Option<&'a str> {
    m.arrow.metadata().file_metadata().key_value_metadata()?.iter().find(|kv| kv.key == key)?.value.as_deref()
}

fn common_label(meta: &[Arc<ShardMeta>]) -> Option<String> {
    let first = footer_value(&meta[0], LABEL_KEY)?;
    meta.iter().all(|m| footer_value(m, LABEL_KEY) == Some(first)).then(|| first.to_string())
}

fn merged_stats(meta: &[Arc<ShardMeta>]) -> Result<Option<ColumnStats>> {
    let mut total: Option<ColumnStats> = None;
    for m in meta {
        let Some(json) = footer_value(m, STATS_KEY) else { return Ok(None) };
        let st: ColumnStats = serde_json::from_str(json).map_err(|error| IoError::BadMetadata {
            path: m.info.path.clone(),
            key: STATS_KEY,
            expected: "JSON column statistics",
            error,
        })?;
        match &mut total {
            None => total = Some(st),
            Some(t) if t.names() == st.names() => t.merge(&st),
            Some(_) => return Ok(None),
        }
    }
    Ok(total)
}

/// `(min, max)` of a column chunk's statistics as `f64`.
fn stat_bounds(s: &Statistics, dt: &DataType) -> Option<(f64, f64)> {
    let unsigned = matches!(dt, DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64);
    match s {
        Statistics::Boolean(v) => Some((*v.min_opt()? as u8 as f64, *v.max_opt()? as u8 as f64)),
        Statistics::Int32(v) if unsigned => Some((*v.min_opt()? as u32 as f64, *v.max_opt()? as u32 as f64)),
        Statistics::Int32(v) => Some((*v.min_opt()? as f64, *v.max_opt()? as f64)),
        Statistics::Int64(v) if unsigned => Some((*v.min_opt()? as u64 as f64, *v.max_opt()? as u64 as f64)),
        Statistics::Int64(v) => Some((*v.min_opt()? as f64, *v.max_opt()? as f64)),
        Statistics::Float(v) => Some((*v.min_opt()? as f64, *v.max_opt()? as f64)),
        Statistics::Double(v) => Some((*v.min_opt()?, *v.max_opt()?)),
        _ => None,
    }
}
