//! Writing Parquet files atomically, and the file layouts kapprox writes.
//!
//! # Layouts
//!
//! - **Dense features** ([`DenseFeatureWriter`]): columns `z0 .. z{l-1}`
//!   (`Float64`, or `Float32` with [`FeatureDtype::F32`]), then the carried
//!   columns: `row_id` (`UInt64`) if enabled, then each carried `Float64`
//!   column (e.g. the label, under its input name).
//! - **Sparse features** ([`SparseFeatureWriter`]): `indices`
//!   (`List<UInt32>`) and `values` (`List<Float64>`), one list per row and
//!   the same length `k` in every row (ELLPACK, as
//!   [`kapprox_core::SparseRows`]; duplicate indices within a row add up),
//!   then the carried columns as above. The footer records the number of
//!   dense columns under [`N_COLS_KEY`].
//! - **Predictions** ([`PredictionWriter`]): `row_id` (`UInt64`),
//!   `prediction` (`Float64`), `target` (`Float64`) if enabled, and one
//!   `score_<class>` (`Float64`) per class if classes are given.
//!
//! Feature and prediction files may also carry input columns unchanged
//! ("keep" columns, e.g. an identifier to join predictions back on), after
//! all other columns, under their input names and types.
//!
//! Files are compressed with [`DEFAULT_COMPRESSION`] (zstd) unless the
//! options say otherwise ([`Compression`]), with row groups of at most
//! [`DEFAULT_ROW_GROUP_ROWS`] rows and column statistics (min/max) enabled.

use crate::compression::{Compression, DEFAULT_COMPRESSION};
use crate::error::{IoError, Result};
use crate::output::{OutputOptions, StagedOutput};
use crate::reader::RowIds;
use arrow::array::{ArrayRef, Float32Array, Float64Array, ListArray, RecordBatch, UInt32Array, UInt64Array};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use kapprox_core::SparseRowsView;
use ndarray::{ArrayView1, ArrayView2};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default maximum rows per row group of written files.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 65536;
/// Name of the global row id column.
pub const ROW_ID_COLUMN: &str = "row_id";
/// Name of the prediction column.
pub const PREDICTION_COLUMN: &str = "prediction";
/// Name of the optional target column of prediction files.
pub const TARGET_COLUMN: &str = "target";
/// Prefix of per-class score columns of prediction files.
pub const SCORE_PREFIX: &str = "score_";
/// Name of the index list column of sparse feature files.
pub const INDICES_COLUMN: &str = "indices";
/// Name of the value list column of sparse feature files.
pub const VALUES_COLUMN: &str = "values";
/// Footer key recording the number of dense columns of a sparse feature file.
pub const N_COLS_KEY: &str = "kapprox.n_cols";

/// Writes one Parquet file under a staging name and renames it into place
/// on [`finish`](AtomicParquetWriter::finish), through [`StagedOutput`]:
/// an existing file at the path is replaced whole, and nothing appears at
/// the path before the file is complete.
///
/// Dropped without `finish` (an error, a panic), it removes its staging
/// area. A killed process leaves only the hidden staging area, which
/// readers ignore and the next write to the same path removes. Missing
/// parent directories are created. To refuse an existing file or an
/// input's path, use [`create_checked`](AtomicParquetWriter::create_checked).
///
/// Memory: the encoded (compressed) pages of the current row group, plus
/// the batch being written.
pub struct AtomicParquetWriter {
    path: PathBuf,
    schema: SchemaRef,
    // Dropped before the staging area it writes into.
    writer: Option<ArrowWriter<File>>,
    staged: Option<StagedOutput>,
    rows: u64,
}

impl std::fmt::Debug for AtomicParquetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicParquetWriter").field("path", &self.path).field("rows", &self.rows).finish()
    }
}

/// The writer properties kapprox uses: `compression` (the commands default
/// to [`DEFAULT_COMPRESSION`]), row groups of at most `row_group_rows` rows,
/// page-level statistics, and the given footer key-value metadata.
/// Dictionary encoding pays off for input data with repeated values (binary
/// or categorical columns) but never for continuous features, where the
/// writer would build and discard a 1 MiB dictionary per column chunk.
pub(crate) fn writer_properties_with(
    row_group_rows: usize,
    kv: Vec<KeyValue>,
    dictionary: bool,
    compression: Compression,
) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(compression.to_parquet())
        .set_dictionary_enabled(dictionary)
        .set_max_row_group_row_count(Some(row_group_rows))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_key_value_metadata((!kv.is_empty()).then_some(kv))
        .set_created_by(format!("kapprox-io {}", env!("CARGO_PKG_VERSION")))
        .build()
}

impl AtomicParquetWriter {
    /// Starts writing `path` with the given schema, default row groups
    /// ([`DEFAULT_ROW_GROUP_ROWS`]) and no footer metadata.
    pub fn create(path: impl AsRef<Path>, schema: SchemaRef) -> Result<Self> {
        Self::create_with(path, schema, DEFAULT_ROW_GROUP_ROWS, Vec::new())
    }

    /// Like [`create_with`](Self::create_with), without dictionary encoding
    /// (for continuous values such as features and predictions).
    pub(crate) fn create_plain(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
        compression: Compression,
    ) -> Result<Self> {
        Self::open(path.as_ref(), schema, row_group_rows, kv, false, compression)
    }

    /// Starts writing `path` with row groups of at most `row_group_rows`
    /// rows and footer key-value metadata `kv` (`(key, value)` pairs).
    ///
    /// # Errors
    /// `row_group_rows == 0`; the temporary cannot be created.
    pub fn create_with(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
    ) -> Result<Self> {
        Self::create_compressed(path, schema, row_group_rows, kv, DEFAULT_COMPRESSION)
    }

    /// [`create_with`](Self::create_with) with another compression than
    /// [`DEFAULT_COMPRESSION`].
    ///
    /// # Errors
    /// As [`create_with`](Self::create_with).
    pub fn create_compressed(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
        compression: Compression,
    ) -> Result<Self> {
        Self::open(path.as_ref(), schema, row_group_rows, kv, true, compression)
    }

    /// Like [`create_with`](Self::create_with), with the output checks of
    /// `output` (refuse an existing file unless overwriting, refuse an
    /// input's path).
    ///
    /// # Errors
    /// As [`StagedOutput::file`], and as [`create_with`](Self::create_with).
    pub fn create_checked(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
        output: &OutputOptions,
    ) -> Result<Self> {
        Self::open_staged(path.as_ref(), schema, row_group_rows, kv, true, DEFAULT_COMPRESSION, output)
    }

    fn open(
        path: &Path,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
        dictionary: bool,
        compression: Compression,
    ) -> Result<Self> {
        let output = OutputOptions::new().with_overwrite(true);
        Self::open_staged(path, schema, row_group_rows, kv, dictionary, compression, &output)
    }

    fn open_staged(
        path: &Path,
        schema: SchemaRef,
        row_group_rows: usize,
        kv: Vec<(String, String)>,
        dictionary: bool,
        compression: Compression,
        output: &OutputOptions,
    ) -> Result<Self> {
        if row_group_rows == 0 {
            return Err(IoError::InvalidOption {
                option: "row_group_rows",
                value: "0".into(),
                expected: "a positive number of rows",
            });
        }
        let path = path.to_path_buf();
        let staged = StagedOutput::file(&path, output)?;
        let file = File::create(staged.path()).map_err(|e| IoError::os(staged.path(), "cannot create", e))?;
        let kv = kv.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect();
        let props = writer_properties_with(row_group_rows, kv, dictionary, compression);
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|error| IoError::Write { path: path.clone(), error })?;
        Ok(AtomicParquetWriter { path, staged: Some(staged), schema, writer: Some(writer), rows: 0 })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Appends a batch.
    ///
    /// # Errors
    /// The batch's columns differ in number, name or type from the
    /// writer's schema ([`IoError::BatchShape`], [`IoError::BatchColumn`]);
    /// the write fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        // The parquet writer does not check this itself: a batch with extra
        // columns would be written silently truncated.
        let (want, got) = (self.schema.fields(), batch.schema_ref().fields());
        check_len(&self.path, "columns of the batch", want.len(), got.len())?;
        for (index, (w, g)) in want.iter().zip(got.iter()).enumerate() {
            if w.name() != g.name() || w.data_type() != g.data_type() {
                return Err(IoError::BatchColumn {
                    path: self.path.clone(),
                    index,
                    expected: w.clone(),
                    found: g.clone(),
                });
            }
        }
        let w = self.writer.as_mut().expect("writer is open until finish");
        w.write(batch).map_err(|error| IoError::Write { path: self.path.clone(), error })?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Adds a footer key-value pair (written at [`finish`](Self::finish)).
    pub fn add_metadata(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let w = self.writer.as_mut().expect("writer is open until finish");
        w.append_key_value_metadata(KeyValue::new(key.into(), value.into()));
    }

    /// Writes the footer, flushes the file to disk and renames it into
    /// place. Returns the number of rows written.
    pub fn finish(mut self) -> Result<u64> {
        let w = self.writer.take().expect("writer is open until finish");
        let file = w.into_inner().map_err(|error| IoError::Write { path: self.path.clone(), error })?;
        drop(file);
        self.staged.take().expect("staged until finish").commit()?;
        Ok(self.rows)
    }
}

/// Storage type of dense feature columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeatureDtype {
    /// `Float64`.
    #[default]
    F64,
    /// `Float32` (half the size; features are approximations anyway).
    F32,
}

/// Columns carried along in feature files, built with `with_*` setters.
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `dtype` | `F64` | storage type of dense `z` columns (ignored for sparse) |
/// | `row_id` | `true` | write the `row_id` column |
/// | `carried` | none | extra `Float64` columns, e.g. the label |
/// | `row_group_rows` | [`DEFAULT_ROW_GROUP_ROWS`] | rows per row group |
/// | `compression` | [`DEFAULT_COMPRESSION`] | codec of the file |
/// | `keep` | none | input columns carried unchanged (fields from the input schema) |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FeatureFileOptions {
    /// Storage type of dense feature columns.
    pub dtype: FeatureDtype,
    /// Whether to write a `row_id` column.
    pub row_id: bool,
    /// Names of carried `Float64` columns.
    pub carried: Vec<String>,
    /// Maximum rows per row group.
    pub row_group_rows: usize,
    /// Codec.
    pub compression: Compression,
    /// Kept input columns, written last.
    pub keep: Vec<FieldRef>,
}

impl Default for FeatureFileOptions {
    fn default() -> Self {
        FeatureFileOptions {
            dtype: FeatureDtype::F64,
            row_id: true,
            carried: Vec::new(),
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            compression: DEFAULT_COMPRESSION,
            keep: Vec::new(),
        }
    }
}

impl FeatureFileOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Storage type of dense columns. Default `F64`.
    pub fn with_dtype(mut self, dtype: FeatureDtype) -> Self {
        self.dtype = dtype;
        self
    }

    /// Whether to write `row_id`. Enabled by default.
    pub fn with_row_id(mut self, row_id: bool) -> Self {
        self.row_id = row_id;
        self
    }

    /// Carried `Float64` columns, in order. None by default.
    pub fn with_carried<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.carried = names.into_iter().map(Into::into).collect();
        self
    }

    /// Rows per row group. Default [`DEFAULT_ROW_GROUP_ROWS`].
    pub fn with_row_group_rows(mut self, rows: usize) -> Self {
        self.row_group_rows = rows;
        self
    }

    /// Codec of the file. Default [`DEFAULT_COMPRESSION`].
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Input columns carried unchanged, e.g. the fields of
    /// [`Dataset::schema`](crate::Dataset::schema) named by
    /// [`ReadOptions::keep`](crate::ReadOptions::keep); their arrays are
    /// given to `write_with_kept`. None by default.
    pub fn with_keep(mut self, fields: impl IntoIterator<Item = FieldRef>) -> Self {
        self.keep = fields.into_iter().collect();
        self
    }

    fn carried_fields(&self) -> Vec<FieldRef> {
        let mut f = Vec::new();
        if self.row_id {
            f.push(Arc::new(Field::new(ROW_ID_COLUMN, DataType::UInt64, false)));
        }
        f.extend(self.carried.iter().map(|c| Arc::new(Field::new(c, DataType::Float64, false))));
        f.extend(kept_fields(&self.keep));
        f
    }

    /// Appends the carried arrays after checking their lengths.
    fn carried_arrays(
        &self,
        path: &Path,
        n: usize,
        row_ids: Option<&RowIds>,
        carried: &[ArrayView1<'_, f64>],
        out: &mut Vec<ArrayRef>,
    ) -> Result<()> {
        if self.row_id {
            let ids = row_ids.ok_or(IoError::BatchShape {
                path: path.to_path_buf(),
                what: "row ids (the file has a row_id column)",
                expected: n,
                found: 0,
            })?;
            check_len(path, "row ids", n, ids.len())?;
            out.push(Arc::new(UInt64Array::from_iter_values(ids.iter())));
        }
        check_len(path, "carried columns", self.carried.len(), carried.len())?;
        for c in carried {
            check_len(path, "rows of a carried column", n, c.len())?;
            out.push(Arc::new(Float64Array::from_iter_values(c.iter().copied())));
        }
        Ok(())
    }
}

/// Kept fields as written: nullable, since a skipped row never reaches the
/// file but a null in an identifier may.
fn kept_fields(keep: &[FieldRef]) -> impl Iterator<Item = FieldRef> + '_ {
    keep.iter().map(|f| Arc::new(f.as_ref().clone().with_nullable(true)))
}

/// Appends the kept arrays after checking their count and lengths (types
/// are checked against the schema when the batch is written).
fn push_kept(path: &Path, fields: &[FieldRef], n: usize, kept: &[ArrayRef], out: &mut Vec<ArrayRef>) -> Result<()> {
    check_len(path, "kept columns", fields.len(), kept.len())?;
    for a in kept {
        check_len(path, "rows of a kept column", n, a.len())?;
        out.push(a.clone());
    }
    Ok(())
}

/// A schema, refusing a kept column whose name another column has.
fn schema_of(path: &Path, fields: Vec<FieldRef>) -> Result<SchemaRef> {
    let names: Vec<String> = fields.iter().map(|f| f.name().clone()).collect();
    crate::dataset::check_unique(path, &names)?;
    Ok(Arc::new(Schema::new(fields)))
}

fn check_len(path: &Path, what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected != found {
        return Err(IoError::BatchShape { path: path.to_path_buf(), what, expected, found });
    }
    Ok(())
}

fn batch(path: &Path, schema: &SchemaRef, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| IoError::Write { path: path.to_path_buf(), error: parquet::errors::ParquetError::from(e) })
}

/// Writes dense feature batches; see the [module docs](self) for the layout.
#[derive(Debug)]
pub struct DenseFeatureWriter {
    inner: AtomicParquetWriter,
    schema: SchemaRef,
    n_features: usize,
    opts: FeatureFileOptions,
}

impl DenseFeatureWriter {
    /// Starts writing `l = n_features` columns `z0..z{l-1}` plus the carried
    /// columns to `path`.
    pub fn create(path: impl AsRef<Path>, n_features: usize, opts: FeatureFileOptions) -> Result<Self> {
        let dt = match opts.dtype {
            FeatureDtype::F64 => DataType::Float64,
            FeatureDtype::F32 => DataType::Float32,
        };
        let mut fields: Vec<FieldRef> =
            (0..n_features).map(|j| Arc::new(Field::new(format!("z{j}"), dt.clone(), false))).collect();
        fields.extend(opts.carried_fields());
        let schema = schema_of(path.as_ref(), fields)?;
        let inner =
            AtomicParquetWriter::create_plain(path, schema.clone(), opts.row_group_rows, Vec::new(), opts.compression)?;
        Ok(DenseFeatureWriter { inner, schema, n_features, opts })
    }

    /// Appends rows: `z` of shape `(n_rows, l)`, `row_ids` (required when the
    /// file has a `row_id` column) and one `(n_rows,)` view per carried
    /// column. For a file with kept columns use
    /// [`write_with_kept`](Self::write_with_kept).
    pub fn write(
        &mut self,
        z: ArrayView2<'_, f64>,
        row_ids: Option<&RowIds>,
        carried: &[ArrayView1<'_, f64>],
    ) -> Result<()> {
        self.write_with_kept(z, row_ids, carried, &[])
    }

    /// [`write`](Self::write) plus one array per kept column
    /// ([`Chunk::keep`](crate::Chunk::keep)).
    pub fn write_with_kept(
        &mut self,
        z: ArrayView2<'_, f64>,
        row_ids: Option<&RowIds>,
        carried: &[ArrayView1<'_, f64>],
        kept: &[ArrayRef],
    ) -> Result<()> {
        let path = self.inner.path().to_path_buf();
        check_len(&path, "feature columns", self.n_features, z.ncols())?;
        let n = z.nrows();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for col in z.columns() {
            cols.push(match self.opts.dtype {
                FeatureDtype::F64 => Arc::new(Float64Array::from_iter_values(col.iter().copied())),
                FeatureDtype::F32 => Arc::new(Float32Array::from_iter_values(col.iter().map(|&v| v as f32))),
            });
        }
        self.opts.carried_arrays(&path, n, row_ids, carried, &mut cols)?;
        push_kept(&path, &self.opts.keep, n, kept, &mut cols)?;
        let b = batch(&path, &self.schema, cols)?;
        self.inner.write(&b)
    }

    /// The final path (the file is written under a staging name until
    /// [`finish`](Self::finish)).
    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Finishes the file; returns the number of rows.
    pub fn finish(self) -> Result<u64> {
        self.inner.finish()
    }
}

/// Writes sparse feature batches; see the [module docs](self) for the layout.
#[derive(Debug)]
pub struct SparseFeatureWriter {
    inner: AtomicParquetWriter,
    schema: SchemaRef,
    n_cols: usize,
    opts: FeatureFileOptions,
}

impl SparseFeatureWriter {
    /// Starts writing sparse rows over `n_cols` dense columns to `path`.
    pub fn create(path: impl AsRef<Path>, n_cols: usize, opts: FeatureFileOptions) -> Result<Self> {
        let item_u32 = Arc::new(Field::new("item", DataType::UInt32, false));
        let item_f64 = Arc::new(Field::new("item", DataType::Float64, false));
        let mut fields: Vec<FieldRef> = vec![
            Arc::new(Field::new(INDICES_COLUMN, DataType::List(item_u32), false)),
            Arc::new(Field::new(VALUES_COLUMN, DataType::List(item_f64), false)),
        ];
        fields.extend(opts.carried_fields());
        let schema = schema_of(path.as_ref(), fields)?;
        let kv = vec![(N_COLS_KEY.to_string(), n_cols.to_string())];
        let inner = AtomicParquetWriter::create_plain(path, schema.clone(), opts.row_group_rows, kv, opts.compression)?;
        Ok(SparseFeatureWriter { inner, schema, n_cols, opts })
    }

    /// Appends rows (`z.n_cols` must be the file's), with row ids and
    /// carried columns as for [`DenseFeatureWriter::write`].
    pub fn write(
        &mut self,
        z: SparseRowsView<'_>,
        row_ids: Option<&RowIds>,
        carried: &[ArrayView1<'_, f64>],
    ) -> Result<()> {
        self.write_with_kept(z, row_ids, carried, &[])
    }

    /// [`write`](Self::write) plus one array per kept column.
    pub fn write_with_kept(
        &mut self,
        z: SparseRowsView<'_>,
        row_ids: Option<&RowIds>,
        carried: &[ArrayView1<'_, f64>],
        kept: &[ArrayRef],
    ) -> Result<()> {
        let path = self.inner.path().to_path_buf();
        check_len(&path, "dense columns of the sparse rows", self.n_cols, z.n_cols)?;
        let (n, k) = z.indices.dim();
        check_len(&path, "rows of values", n, z.values.nrows())?;
        check_len(&path, "entries per row of values", k, z.values.ncols())?;
        let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(k, n));
        let idx = UInt32Array::from_iter_values(z.indices.iter().copied());
        let val = Float64Array::from_iter_values(z.values.iter().copied());
        let field = |i: usize| match self.schema.field(i).data_type() {
            DataType::List(f) => f.clone(),
            _ => unreachable!("list columns by construction"),
        };
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(ListArray::new(field(0), offsets.clone(), Arc::new(idx), None)),
            Arc::new(ListArray::new(field(1), offsets, Arc::new(val), None)),
        ];
        self.opts.carried_arrays(&path, n, row_ids, carried, &mut cols)?;
        push_kept(&path, &self.opts.keep, n, kept, &mut cols)?;
        let b = batch(&path, &self.schema, cols)?;
        self.inner.write(&b)
    }

    /// The final path (the file is written under a staging name until
    /// [`finish`](Self::finish)).
    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Finishes the file; returns the number of rows.
    pub fn finish(self) -> Result<u64> {
        self.inner.finish()
    }
}

/// Columns of a prediction file, built with `with_*` setters.
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `target` | `false` | write the true target next to the prediction |
/// | `classes` | none | class names, one `score_<class>` column each |
/// | `compression` | [`DEFAULT_COMPRESSION`] | codec of the file |
/// | `keep` | none | input columns carried unchanged, written last |
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct PredictionFileOptions {
    /// Whether to write a `target` column.
    pub target: bool,
    /// Class names for `score_<class>` columns.
    pub classes: Vec<String>,
    /// Codec.
    pub compression: Compression,
    /// Kept input columns.
    pub keep: Vec<FieldRef>,
}

impl PredictionFileOptions {
    /// The defaults (prediction and row id only).
    pub fn new() -> Self {
        Self::default()
    }

    /// Codec of the file. Default [`DEFAULT_COMPRESSION`].
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Input columns carried unchanged (see
    /// [`FeatureFileOptions::with_keep`]); their arrays are given to
    /// [`PredictionWriter::write_with_kept`]. None by default.
    pub fn with_keep(mut self, fields: impl IntoIterator<Item = FieldRef>) -> Self {
        self.keep = fields.into_iter().collect();
        self
    }

    /// Whether to write `target`. Disabled by default.
    pub fn with_target(mut self, target: bool) -> Self {
        self.target = target;
        self
    }

    /// Writes one score column per class. None by default.
    pub fn with_classes<S: Into<String>>(mut self, classes: impl IntoIterator<Item = S>) -> Self {
        self.classes = classes.into_iter().map(Into::into).collect();
        self
    }
}

/// Writes prediction batches; see the [module docs](self) for the layout.
#[derive(Debug)]
pub struct PredictionWriter {
    inner: AtomicParquetWriter,
    schema: SchemaRef,
    opts: PredictionFileOptions,
}

impl PredictionWriter {
    /// Starts writing predictions to `path`.
    pub fn create(path: impl AsRef<Path>, opts: PredictionFileOptions) -> Result<Self> {
        let float = |name: String| Arc::new(Field::new(name, DataType::Float64, false));
        let mut fields: Vec<FieldRef> =
            vec![Arc::new(Field::new(ROW_ID_COLUMN, DataType::UInt64, false)), float(PREDICTION_COLUMN.into())];
        if opts.target {
            fields.push(float(TARGET_COLUMN.into()));
        }
        for c in &opts.classes {
            fields.push(float(format!("{SCORE_PREFIX}{c}")));
        }
        fields.extend(kept_fields(&opts.keep));
        let schema = schema_of(path.as_ref(), fields)?;
        let inner = AtomicParquetWriter::create_plain(
            path,
            schema.clone(),
            DEFAULT_ROW_GROUP_ROWS,
            Vec::new(),
            opts.compression,
        )?;
        Ok(PredictionWriter { inner, schema, opts })
    }

    /// Appends rows: ids, predictions `(n,)`, targets `(n,)` (when the file
    /// has them) and scores `(n, n_classes)` (when classes were given).
    pub fn write(
        &mut self,
        row_ids: &RowIds,
        prediction: ArrayView1<'_, f64>,
        target: Option<ArrayView1<'_, f64>>,
        scores: Option<ArrayView2<'_, f64>>,
    ) -> Result<()> {
        self.write_with_kept(row_ids, prediction, target, scores, &[])
    }

    /// [`write`](Self::write) plus one array per kept column
    /// ([`Chunk::keep`](crate::Chunk::keep)).
    pub fn write_with_kept(
        &mut self,
        row_ids: &RowIds,
        prediction: ArrayView1<'_, f64>,
        target: Option<ArrayView1<'_, f64>>,
        scores: Option<ArrayView2<'_, f64>>,
        kept: &[ArrayRef],
    ) -> Result<()> {
        let path = self.inner.path().to_path_buf();
        let n = row_ids.len();
        check_len(&path, "predictions", n, prediction.len())?;
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(row_ids.iter())),
            Arc::new(Float64Array::from_iter_values(prediction.iter().copied())),
        ];
        if self.opts.target {
            let t = target.ok_or(IoError::BatchShape { path: path.clone(), what: "targets", expected: n, found: 0 })?;
            check_len(&path, "targets", n, t.len())?;
            cols.push(Arc::new(Float64Array::from_iter_values(t.iter().copied())));
        }
        let k = self.opts.classes.len();
        if k > 0 {
            let s = scores.ok_or(IoError::BatchShape {
                path: path.clone(),
                what: "score columns",
                expected: k,
                found: 0,
            })?;
            check_len(&path, "score columns", k, s.ncols())?;
            check_len(&path, "rows of scores", n, s.nrows())?;
            for col in s.columns() {
                cols.push(Arc::new(Float64Array::from_iter_values(col.iter().copied())));
            }
        }
        push_kept(&path, &self.opts.keep, n, kept, &mut cols)?;
        let b = batch(&path, &self.schema, cols)?;
        self.inner.write(&b)
    }

    /// The final path (the file is written under a staging name until
    /// [`finish`](Self::finish)).
    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Finishes the file; returns the number of rows.
    pub fn finish(self) -> Result<u64> {
        self.inner.finish()
    }
}
