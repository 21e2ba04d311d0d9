//! What a shard's footer says: row counts, row groups, schema, kapprox's
//! recorded label and column statistics, and min/max statistics.

use super::discover::{Found, Location};
use super::schema::{Kind, kind};
use super::{LABEL_KEY, STATS_KEY, ShardInfo};
use crate::error::{IoError, Result};
use crate::stats::ColumnStats;
use crate::store::RemoteFile;
use arrow::datatypes::{DataType, Schema};
use bytes::Bytes;
use memmap2::Mmap;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use std::path::Path;
use std::sync::Arc;

/// What the reader needs of a shard besides [`ShardInfo`].
#[derive(Debug)]
pub(crate) struct ShardMeta {
    pub(crate) info: ShardInfo,
    pub(crate) location: Location,
    /// Size of the file when its footer was read.
    pub(crate) file_len: u64,
    pub(crate) arrow: ArrowReaderMetadata,
    /// Row offset of each row group within the file, plus the total at the end.
    pub(crate) row_group_starts: Vec<u64>,
    /// The open remote object (remote shards only), reused for row groups.
    pub(crate) remote: Option<Arc<RemoteFile>>,
}

impl ShardMeta {
    /// The value of a footer key-value metadata key.
    pub(crate) fn footer_value(&self, key: &str) -> Option<&str> {
        self.arrow.metadata().file_metadata().key_value_metadata()?.iter().find(|kv| kv.key == key)?.value.as_deref()
    }

    /// The Parquet leaf index of a top-level column, for flat columns.
    pub(crate) fn leaf_of(&self, column: &str) -> Option<usize> {
        let descr = self.arrow.metadata().file_metadata().schema_descr();
        descr.columns().iter().position(|c| c.path().parts().len() == 1 && c.name() == column)
    }
}

/// Memory-maps a local file and wraps the map in `Bytes` without copying.
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

/// Reads a shard's footer; its rows get global ids from `first_row`.
pub(crate) fn read_footer(found: Found, first_row: u64) -> Result<ShardMeta> {
    let path = found.display.clone();
    let footer_err = |error| IoError::Footer { path: path.clone(), error };
    let (arrow, file_len, remote) = match &found.location {
        Location::Local(p) => {
            let (_map, bytes, len) = map_file(p)?;
            (ArrowReaderMetadata::load(&bytes, ArrowReaderOptions::new()).map_err(footer_err)?, len, None)
        }
        Location::Remote { store, path: key, size } => {
            let file = RemoteFile::open(store.clone(), key.clone(), *size)?;
            let arrow = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(footer_err)?;
            (arrow, *size, Some(Arc::new(file)))
        }
    };
    let md = arrow.metadata();
    check_layout(&path, md, file_len)?;
    let mut row_group_starts = Vec::with_capacity(md.num_row_groups() + 1);
    let mut n = 0u64;
    for rg in md.row_groups() {
        row_group_starts.push(n);
        // Non-negative and summing without overflow: checked above.
        n += rg.num_rows() as u64;
    }
    row_group_starts.push(n);
    let info = ShardInfo {
        path,
        n_rows: n,
        first_row,
        n_row_groups: md.num_row_groups(),
        relative_path: found.relative,
        partitions: found.partitions,
    };
    Ok(ShardMeta { info, location: found.location, file_len, arrow, row_group_starts, remote })
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

/// The label recorded by kapprox, if every shard records the same one.
pub(crate) fn common_label(meta: &[Arc<ShardMeta>]) -> Option<String> {
    let first = meta[0].footer_value(LABEL_KEY)?;
    meta.iter().all(|m| m.footer_value(LABEL_KEY) == Some(first)).then(|| first.to_string())
}

/// Column statistics recorded in the footers, merged over shards.
///
/// Trust but verify: a shard's statistics are used only if they parse,
/// cover exactly the shard's row count, name numeric columns of the shard,
/// and their minimum and maximum per column equal those of the Parquet
/// column-chunk statistics of the shard's row groups (written with the
/// data by the Parquet writer, so statistics copied from other data with
/// the same row count and schema are caught without reading a page).
/// Otherwise all stored statistics are ignored (the caller recomputes
/// them) and a note says why.
pub(crate) fn merged_stats(meta: &[Arc<ShardMeta>], notes: &mut Vec<String>) -> Option<ColumnStats> {
    let mut total: Option<ColumnStats> = None;
    for m in meta {
        let path = m.info.path.display();
        let json = m.footer_value(STATS_KEY)?;
        let st: ColumnStats = match serde_json::from_str(json) {
            Ok(st) => st,
            Err(e) => {
                notes.push(format!("{path}: footer key {STATS_KEY:?} is not valid JSON statistics ({e}); ignored"));
                return None;
            }
        };
        if st.count() != m.info.n_rows {
            notes.push(format!(
                "{path}: footer statistics cover {} rows, the shard has {}; ignored, statistics will be computed",
                st.count(),
                m.info.n_rows
            ));
            return None;
        }
        let schema = m.arrow.schema();
        if let Some(c) = st.names().iter().find(|c| !is_number_column(schema, c)) {
            notes.push(format!(
                "{path}: footer statistics name column {c:?}, which the shard has not as a number; ignored, statistics will be computed"
            ));
            return None;
        }
        if let Some(c) = unbound_column(m, &st) {
            notes.push(format!(
                "{path}: footer statistics of column {c:?} disagree with the shard's Parquet statistics (minimum or \
                 maximum): written for other data; ignored, statistics will be computed"
            ));
            return None;
        }
        match &mut total {
            None => total = Some(st),
            Some(t) if t.names() == st.names() => t.merge(&st),
            Some(_) => {
                notes.push(format!(
                    "{path}: footer statistics name other columns than the first shard's; ignored, statistics will be computed"
                ));
                return None;
            }
        }
    }
    total
}

/// The first column whose stored minimum or maximum differs from the
/// bounds of the shard's column-chunk statistics. A column whose row groups
/// do not all carry statistics cannot be checked and passes.
fn unbound_column(m: &ShardMeta, st: &ColumnStats) -> Option<String> {
    let md = m.arrow.metadata();
    let schema = m.arrow.schema();
    for (j, name) in st.names().iter().enumerate() {
        let (Some(leaf), Ok(field)) = (m.leaf_of(name), schema.field_with_name(name)) else { continue };
        let mut bounds: Option<(f64, f64)> = None;
        for rg in md.row_groups() {
            let Some((lo, hi)) = rg.column(leaf).statistics().and_then(|s| stat_bounds(s, field.data_type())) else {
                bounds = None;
                break;
            };
            bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
        // Equal as numbers: the writer may record a zero bound as -0.0.
        if let Some((lo, hi)) = bounds
            && (lo != st.min()[j] || hi != st.max()[j])
        {
            return Some(name.clone());
        }
    }
    None
}

fn is_number_column(schema: &Schema, column: &str) -> bool {
    schema.field_with_name(column).is_ok_and(|f| kind(f.data_type()) == Kind::Number)
}

/// `(min, max)` of a column chunk's statistics as `f64`, for a column of
/// Arrow type `dt`; `None` when the statistics are missing or of a physical
/// type this does not interpret.
pub(crate) fn stat_bounds(s: &Statistics, dt: &DataType) -> Option<(f64, f64)> {
    let dt = match dt {
        DataType::Dictionary(_, v) => v.as_ref(),
        dt => dt,
    };
    let unsigned = matches!(dt, DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64);
    let scale = match dt {
        DataType::Decimal32(_, s)
        | DataType::Decimal64(_, s)
        | DataType::Decimal128(_, s)
        | DataType::Decimal256(_, s) => 10f64.powi(*s as i32),
        _ => 1.0,
    };
    let (lo, hi) = match s {
        Statistics::Boolean(v) => (*v.min_opt()? as u8 as f64, *v.max_opt()? as u8 as f64),
        Statistics::Int32(v) if unsigned => (*v.min_opt()? as u32 as f64, *v.max_opt()? as u32 as f64),
        Statistics::Int32(v) => (*v.min_opt()? as f64, *v.max_opt()? as f64),
        Statistics::Int64(v) if unsigned => (*v.min_opt()? as u64 as f64, *v.max_opt()? as u64 as f64),
        Statistics::Int64(v) => (*v.min_opt()? as f64, *v.max_opt()? as f64),
        Statistics::Float(v) => (*v.min_opt()? as f64, *v.max_opt()? as f64),
        Statistics::Double(v) => (*v.min_opt()?, *v.max_opt()?),
        _ => return None,
    };
    Some((lo / scale, hi / scale))
}
