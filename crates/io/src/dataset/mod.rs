//! A dataset of Parquet shards, opened from the footers alone.
//!
//! A dataset is a `.parquet` file, a directory of shards (searched
//! recursively, Hive partitions understood, `_`/`.` names ignored; see
//! [`discover`]), or the same in object storage (`s3://bucket/prefix`; see
//! [`store`](crate::store)). Shards may have their columns in different
//! orders and of different widths of the same kind (see the private module `schema`).

pub mod discover;
pub(crate) mod footer;
pub(crate) mod schema;
mod select;

pub use select::{ColumnSelection, SelectedColumns};

use crate::error::{IoError, Result};
use crate::reader::{ChunkReader, ReadOptions};
use crate::stats::ColumnStats;
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use footer::{ShardMeta, common_label, merged_stats, read_footer, stat_bounds};
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
    /// The file's path relative to the dataset root (its name for a
    /// single-file dataset), e.g. `region=north/part-0.parquet`. Outputs
    /// written per input shard should use it, since file names alone may
    /// repeat across partition directories.
    pub relative_path: PathBuf,
    /// The Hive partition `(key, value)` pairs of its directories,
    /// outermost first; `None` is a null value.
    pub partitions: Vec<(String, Option<String>)>,
}

/// A dataset of Parquet shards: one `.parquet` file, a directory of them,
/// or an object-store prefix.
///
/// [`Dataset::open`] reads only the footers (row counts, row groups, schema);
/// data is read by [`Dataset::reader`]. Shards are ordered by their path
/// relative to the root (byte-wise, so number them with zero padding as
/// `part-00000.parquet`), and a row's global id is its position in that
/// order.
///
/// The columns are the first shard's, in its order, followed by the Hive
/// partition keys ([`Dataset::partition_columns`]). Other shards may hold
/// the same columns in another order and with other types of the same kind
/// (`int32`/`int64`, `float`/`double`, strings/dictionaries); columns are
/// always read by name.
///
/// Local shards must not be modified while a dataset is open: they are
/// memory-mapped when read (a size change is detected and refused).
#[derive(Debug, Clone)]
pub struct Dataset {
    path: PathBuf,
    shards: Vec<ShardInfo>,
    meta: Vec<Arc<ShardMeta>>,
    schema: SchemaRef,
    columns: Vec<String>,
    partition_columns: Vec<String>,
    label_hint: Option<String>,
    stored_stats: Option<ColumnStats>,
    notes: Vec<String>,
}

impl Dataset {
    /// Opens a `.parquet` file, a directory of shards or an object-store
    /// URL (`s3://bucket/prefix`, see [`store`](crate::store)).
    ///
    /// Discovery rules (recursion, Hive partitions, ignored `_`/`.` names,
    /// order) are those of [`discover`].
    ///
    /// Cost: a listing and one footer read per shard; no data is read.
    ///
    /// # Errors
    /// The path does not exist ([`IoError::NotFound`]); a directory has no
    /// parquet file ([`IoError::NoParquetFiles`]); a footer is unreadable
    /// ([`IoError::Footer`]); shards disagree on the columns or their kinds
    /// ([`IoError::SchemaMismatch`]) or partition keys
    /// ([`IoError::PartitionKeys`]); a column name repeats
    /// ([`IoError::DuplicateColumn`]); the store refuses access
    /// ([`IoError::Store`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Dataset> {
        let path = path.as_ref().to_path_buf();
        let found = discover::discover(&path)?;
        let mut shards = Vec::with_capacity(found.len());
        let mut meta = Vec::with_capacity(found.len());
        let mut first_row = 0u64;
        for f in found {
            let m = read_footer(f, first_row)?;
            first_row += m.info.n_rows;
            shards.push(m.info.clone());
            meta.push(Arc::new(m));
        }
        let file_schema = meta[0].arrow.schema().clone();
        for m in &meta[1..] {
            schema::reconcile(&shards[0].path, &file_schema, &m.info.path, m.arrow.schema())?;
        }
        let partition_fields = partition_fields(&shards);
        let mut fields: Vec<FieldRef> = file_schema.fields().iter().cloned().collect();
        fields.extend(partition_fields.into_iter().map(Arc::new));
        let schema = Arc::new(Schema::new_with_metadata(fields, file_schema.metadata().clone()));
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        check_unique(&shards[0].path, &columns)?;
        let partition_columns = shards[0].partitions.iter().map(|(k, _)| k.clone()).collect();
        let label_hint = common_label(&meta);
        let mut notes = Vec::new();
        let stored_stats = merged_stats(&meta, &mut notes);
        Ok(Dataset { path, shards, meta, schema, columns, partition_columns, label_hint, stored_stats, notes })
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

    /// All column names: the first shard's columns in its order, then the
    /// Hive partition keys.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The Hive partition keys (also the last entries of
    /// [`columns`](Self::columns)). Partition values are typed `Int64` when
    /// every value is an integer, `Float64` when every value is a number,
    /// and `Utf8` otherwise.
    pub fn partition_columns(&self) -> &[String] {
        &self.partition_columns
    }

    /// The dataset's Arrow schema: the first shard's fields, then the
    /// partition keys.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The label column recorded by [`convert`](crate::convert()) (footer key
    /// [`LABEL_KEY`]), if every shard records the same one.
    pub fn label_hint(&self) -> Option<&str> {
        self.label_hint.as_deref()
    }

    /// Column statistics recorded by [`convert`](crate::convert()) (footer key
    /// [`STATS_KEY`]), merged over shards, if every shard records valid
    /// ones: statistics whose row count or columns do not match their shard
    /// are ignored (see [`notes`](Self::notes)). Select columns with
    /// [`ColumnStats::select`].
    pub fn stored_stats(&self) -> Option<&ColumnStats> {
        self.stored_stats.as_ref()
    }

    /// Things worth telling the user that are not errors, one line each,
    /// e.g. footer statistics that were ignored because they do not match
    /// their shard.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Splits the columns into features and label.
    ///
    /// Features are all columns except the label and the partition keys,
    /// in schema order. For type checks, globs, exclusions and categorical
    /// columns, see [`select_columns`](Self::select_columns).
    ///
    /// # Errors
    /// [`IoError::ColumnNotFound`] for a missing named label (listing the
    /// available columns); [`IoError::NoLabelHint`] for
    /// [`LabelSpec::Hint`] without a recorded label; [`IoError::EmptyInput`]
    /// for [`LabelSpec::Last`] on a schema without columns.
    pub fn resolve_columns(&self, label: &LabelSpec) -> Result<(Vec<String>, Option<String>)> {
        let label = self.resolve_label(label)?;
        let features = self
            .columns
            .iter()
            .filter(|c| Some(*c) != label.as_ref() && !self.partition_columns.contains(c))
            .cloned()
            .collect();
        Ok((features, label))
    }

    pub(crate) fn resolve_label(&self, label: &LabelSpec) -> Result<Option<String>> {
        Ok(match label {
            LabelSpec::None => None,
            LabelSpec::Last => {
                let file_columns = &self.columns[..self.columns.len() - self.partition_columns.len()];
                Some(file_columns.last().cloned().ok_or_else(|| IoError::EmptyInput { path: self.path.clone() })?)
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
        })
    }

    /// Column minima and maxima from the Parquet row-group statistics (and
    /// the partition values), without reading data; `None` if some row group
    /// of some shard lacks statistics for one of the columns (files written
    /// by kapprox always have them).
    ///
    /// # Errors
    /// [`IoError::ColumnNotFound`] for an unknown column.
    pub fn footer_min_max<S: AsRef<str>>(&self, columns: &[S]) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
        let mut lo = vec![f64::INFINITY; columns.len()];
        let mut hi = vec![f64::NEG_INFINITY; columns.len()];
        for (k, c) in columns.iter().enumerate() {
            let c = c.as_ref();
            if !self.columns.iter().any(|n| n == c) {
                return Err(self.not_found(c));
            }
            if let Some(p) = self.partition_columns.iter().position(|n| n == c) {
                for s in &self.shards {
                    let Some(v) = s.partitions[p].1.as_deref().and_then(|v| v.parse::<f64>().ok()) else {
                        return Ok(None);
                    };
                    lo[k] = lo[k].min(v);
                    hi[k] = hi[k].max(v);
                }
                continue;
            }
            for m in &self.meta {
                let schema = m.arrow.schema();
                let (Ok(field), Some(leaf)) = (schema.field_with_name(c), m.leaf_of(c)) else { return Ok(None) };
                for rg in m.arrow.metadata().row_groups() {
                    if rg.num_rows() == 0 {
                        continue;
                    }
                    let Some((a, b)) = rg.column(leaf).statistics().and_then(|s| stat_bounds(s, field.data_type()))
                    else {
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
    /// Unknown or unreadable columns, an out-of-range shard index or an
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

/// The partition keys as fields, typed from their values over all shards.
fn partition_fields(shards: &[ShardInfo]) -> Vec<Field> {
    let n_keys = shards[0].partitions.len();
    (0..n_keys)
        .map(|k| {
            let values = || shards.iter().filter_map(|s| s.partitions[k].1.as_deref());
            let dt = if values().all(|v| v.parse::<i64>().is_ok()) {
                DataType::Int64
            } else if values().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite)) {
                DataType::Float64
            } else {
                DataType::Utf8
            };
            Field::new(&shards[0].partitions[k].0, dt, true)
        })
        .collect()
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
