//! Data in and out of kapprox: Parquet shards streamed as chunks of rows,
//! conversion of CSV/TSV/LIBSVM/IDX to Parquet, column statistics and
//! scaling, atomic Parquet writes.
//!
//! # Overview
//!
//! - [`Dataset`] opens a `.parquet` file, a directory of shards (recursive,
//!   Hive partitions, Spark's `_SUCCESS`/`.crc` ignored; see
//!   [`dataset::discover`]) or an object-store prefix such as
//!   `s3://bucket/prefix` (see [`store`]) from the footers alone (row
//!   counts, row groups, schema) and numbers rows globally in path order
//!   ([`ShardInfo::first_row`]). Shards may differ in column order and
//!   integer/float widths.
//! - [`Dataset::select_columns`] turns a [`ColumnSelection`] (names or
//!   globs to include, exclude, treat as categorical or keep, and the
//!   label) into [`SelectedColumns`], refusing text or date columns with a
//!   message that names the option to use. [`Dataset::resolve_columns`]
//!   is the simple form: every column but the label.
//! - [`Dataset::reader`] with [`ReadOptions`] gives a [`ChunkReader`], an
//!   iterator of [`Chunk`]s (row-major `f64` features, optional label,
//!   global [`RowIds`]) in global row order. Local shards are
//!   memory-mapped, remote ones read by ranged requests, and row groups
//!   decoded in parallel with a memory bound that does not depend on the
//!   number of rows (see the [`reader`] module). Every codec of the format
//!   is read. Missing values (NaN, ±Inf, null) are refused, skipped or
//!   imputed ([`NanPolicy`]).
//! - Categorical columns: chunks carry mergeable [`CategoryCounts`]; the
//!   [`Vocabulary`] learned from them one-hot encodes the column into `x`.
//!   Kept columns ([`Chunk::keep`]) come through as Arrow arrays, for the
//!   writers to carry into outputs.
//! - [`ColumnStats`] are mergeable column statistics; [`Scaler`] is the
//!   standard or min-max scaling fitted from them.
//! - [`AtomicParquetWriter`] writes a file under a temporary name and
//!   renames it when complete; [`DenseFeatureWriter`],
//!   [`SparseFeatureWriter`] and [`PredictionWriter`] write kapprox's file
//!   layouts (documented in the [`writer`] module), compressed with
//!   [`DEFAULT_COMPRESSION`] (zstd) or another [`Compression`].
//!   [`read_column`] reads a small file back.
//! - [`StagedOutput`] is how every output is written: refused when it would
//!   touch an input ([`OutputOptions::inputs`]) or replace an output without
//!   [`OutputOptions::overwrite`], staged under a unique hidden name, renamed
//!   into place whole on commit, and cleaned up after a crash.
//! - [`MemoryBudget`] bounds what may be allocated for sizes read from
//!   input or options (default: half of the machine's memory).
//! - [`convert()`] turns CSV/TSV, LIBSVM or IDX input (optionally gzip or
//!   bzip2 compressed) into a directory of shards, atomically, recording the
//!   label and per-shard [`ColumnStats`] in the footers.
//!
//! Only this crate knows about Parquet and Arrow. It never prints:
//! progress is reported through callbacks.
//!
//! # Example
//!
//! ```
//! use kapprox_io::{ConvertOptions, Dataset, LabelSpec, ReadOptions, convert};
//!
//! let dir = std::env::temp_dir().join(format!("kapprox-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let csv = dir.join("train.csv");
//! std::fs::write(&csv, "a,b,y\n1,2,3\n4,5,6\n7,8,9\n")?;
//!
//! let out = dir.join("train");
//! let opts = ConvertOptions::new().with_label(LabelSpec::Last).with_overwrite(true);
//! let report = convert(&csv, &out, &opts, &mut |_rows| {})?;
//! assert_eq!(report.rows_written, 3);
//!
//! let ds = Dataset::open(&out)?;
//! let (features, label) = ds.resolve_columns(&LabelSpec::Hint)?;
//! assert_eq!(features, ["a", "b"]);
//! let mut rows = 0;
//! for chunk in ds.reader(ReadOptions::new(features).with_label(label).with_chunk_rows(2))? {
//!     let chunk = chunk?;
//!     assert_eq!(chunk.x[[0, 1]] + 1.0, chunk.y.as_ref().unwrap()[0]);
//!     rows += chunk.n_rows();
//! }
//! assert_eq!(rows, 3);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod budget;
pub mod categorical;
pub mod compression;
pub mod convert;
pub mod dataset;
pub mod dataset_writer;
mod error;
pub mod output;
pub mod readback;
pub mod reader;
pub mod scale;
pub mod stats;
pub mod store;
pub mod writer;

pub use budget::MemoryBudget;
pub use categorical::{CategoryCounts, DEFAULT_MAX_CATEGORIES, Vocabulary, value_code, value_codes};
pub use compression::{Compression, DEFAULT_COMPRESSION};
pub use convert::{ConvertOptions, ConvertReport, DEFAULT_ROWS_PER_SHARD, Delimiter, InputFormat, convert};
pub use dataset::{ColumnSelection, Dataset, LABEL_KEY, LabelSpec, STATS_KEY, SelectedColumns, ShardInfo};
pub use dataset_writer::{DatasetReport, DatasetWriter};
pub use error::{BadValue, IdxProblem, IoError, LibsvmProblem, Overlap, Result};
pub use output::{OutputKind, OutputOptions, StagedOutput, check_apart};
pub use readback::{read_column, read_column_vec, read_columns};
pub use reader::{
    Chunk, ChunkReader, DEFAULT_CHUNK_ROWS, DEFAULT_NAN_POLICY, DEFAULT_PREFETCH, DEFAULT_RELEASE_PAGES,
    DEFAULT_THREADS, NanPolicy, ReadOptions, RowIds,
};
pub use scale::{Scaler, ScalerKind};
pub use stats::ColumnStats;
pub use writer::{
    AtomicParquetWriter, DEFAULT_ROW_GROUP_ROWS, DenseFeatureWriter, FeatureDtype, FeatureFileOptions,
    PredictionFileOptions, PredictionWriter, SparseFeatureWriter,
};

#[cfg(test)]
mod tests {
    /// The pipeline moves readers to worker threads and anyhow needs
    /// `Send + Sync + 'static` errors.
    #[test]
    fn types_cross_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync + 'static>() {}
        send::<crate::ChunkReader>();
        send::<crate::Chunk>();
        send_sync::<crate::Dataset>();
        send_sync::<crate::IoError>();
        send_sync::<crate::ColumnStats>();
        send_sync::<crate::Scaler>();
        send::<crate::AtomicParquetWriter>();
    }
}
