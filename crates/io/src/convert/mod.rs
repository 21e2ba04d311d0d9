//! Converting CSV/TSV, LIBSVM and IDX input to a directory of Parquet shards.
//!
//! Inputs may be gzip- or bzip2-compressed (detected from the first bytes).
//! The format comes from [`ConvertOptions::format`], else the file name
//! (after stripping `.gz`/`.bz2`: `.csv`, `.tsv`/`.tab`,
//! `.svm`/`.libsvm`, `.idx` or `*-idx?-ubyte`), else the content (IDX magic;
//! `number index:value ...` lines are LIBSVM; anything else is delimited
//! text).
//!
//! - **CSV/TSV**: delimiter given, or tab for `.tsv`, else detected from the
//!   first line (tab, comma, semicolon, else runs of whitespace). A header is
//!   detected when a field of the first line is not a number. Columns keep
//!   their header names, or are `x1..xD` without a header (with
//!   [`LabelSpec::Last`] and no header, the last column is named `label`).
//!   All columns are stored as `Float64`, in input order.
//! - **LIBSVM**: `label index:value ...` with 1-based, strictly increasing
//!   indices, expanded to zero-filled `Float64` columns `f1..fD` followed by
//!   `label`. `D` is [`ConvertOptions::n_features`], or the largest index
//!   in the file (an extra pass over the input). Give `D` explicitly so that
//!   a train and a test file get the same columns.
//! - **IDX**: the images file is the input, the idx1 labels file is
//!   [`ConvertOptions::labels_path`]. Columns `px0..` keep the file's
//!   element type (`UInt8` for MNIST), followed by `label` (`Float64`).
//!
//! The output is `part-00000.parquet, part-00001.parquet, ...` with
//! [`ConvertOptions::rows_per_shard`] rows each (the last may be shorter),
//! row groups of at most [`ConvertOptions::row_group_rows`], and in each
//! footer the label name ([`LABEL_KEY`]) and the shard's [`ColumnStats`]
//! over all columns ([`STATS_KEY`], JSON).
//!
//! The output appears atomically through [`StagedOutput`]: shards are
//! written into a hidden staging directory next to `out_dir` which is
//! renamed into place at the end. On any error the staging directory is
//! removed and `out_dir` is untouched; after a crash only the staging
//! directory remains, and the next run removes it. An `out_dir` that is, lies
//! inside or contains the input (or the IDX labels file) is refused.
//!
//! Values: text values must be at most [`MAX_MAGNITUDE`] in magnitude, so
//! that the squares summed by the column statistics stay finite; larger
//! ones are refused with their line and column. A shard's statistics are
//! recorded only when they are finite (NaN cells kept with
//! [`NanPolicy::Keep`] leave a shard without them).
//!
//! Memory: one batch of at most 8192 rows (and about 4 MiB) of `f64`, plus
//! the encoded pages of one row group in the Parquet writer, plus
//! [`COLUMN_OVERHEAD_BYTES`] per column. Before allocating anything sized by
//! the input (the columns of a CSV header, a LIBSVM file's largest index,
//! an IDX header's dimensions) the estimate
//! `columns × (COLUMN_OVERHEAD_BYTES + 8 × rows per row group)` is checked
//! against the memory budget ([`ConvertOptions::max_memory`], by default
//! [`MemoryBudget::from_machine`]), and a line of text may be at most
//! [`MAX_LINE_BYTES`] long (or a quarter of the budget, if less).

mod delimited;
mod detect;
mod idx;
mod input;
mod libsvm;

use crate::budget::MemoryBudget;
use crate::compression::{Compression, DEFAULT_COMPRESSION};
use crate::dataset::{LABEL_KEY, LabelSpec, STATS_KEY};
use crate::error::{IoError, Result};
use crate::output::{OutputOptions, StagedOutput};
use crate::reader::NanPolicy;
use crate::stats::ColumnStats;
use crate::writer::{DEFAULT_ROW_GROUP_ROWS, writer_properties_with};
use arrow::array::{ArrayRef, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, RecordBatch, UInt8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ndarray::{ArrayView2, ShapeBuilder};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// Default rows per output shard.
pub const DEFAULT_ROWS_PER_SHARD: u64 = 1_000_000;

/// Largest magnitude of a value read from text or IDX: `1e100`. Its square,
/// summed over any number of rows a machine can hold, stays far from
/// overflowing the column statistics.
pub const MAX_MAGNITUDE: f64 = 1e100;

/// Memory that converting holds per output column besides the values of a
/// row group: the column's name, statistics and Arrow field, and the
/// Parquet column writer's encoders, page buffers and metadata. Measured
/// at 31 KiB per column (peak RSS of `kapprox convert` on CSV files of
/// 50,000, 100,000 and 200,000 columns and three rows: 1.5, 3.0 and
/// 6.1 GB), plus a margin.
pub const COLUMN_OVERHEAD_BYTES: u64 = 40 * 1024;

/// Longest line of text input: 1 GiB (or a quarter of the memory budget,
/// if less). A longer line is refused rather than buffered.
pub const MAX_LINE_BYTES: u64 = 1 << 30;

/// Input formats of [`convert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputFormat {
    /// Delimited text; the delimiter is detected unless given.
    Csv,
    /// Tab-separated text (unless another delimiter is given).
    Tsv,
    /// LIBSVM / svmlight sparse text.
    Libsvm,
    /// IDX binary arrays (MNIST).
    Idx,
}

impl FromStr for InputFormat {
    type Err = IoError;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(InputFormat::Csv),
            "tsv" => Ok(InputFormat::Tsv),
            "libsvm" | "svm" | "svmlight" => Ok(InputFormat::Libsvm),
            "idx" => Ok(InputFormat::Idx),
            _ => Err(IoError::InvalidOption {
                option: "format",
                value: s.to_string(),
                expected: "one of csv, tsv, libsvm, idx",
            }),
        }
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Libsvm => "libsvm",
            InputFormat::Idx => "idx",
        })
    }
}

/// Field separator of delimited text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// One byte, e.g. `b','` (quoted fields are understood).
    Byte(u8),
    /// Runs of spaces and tabs (no quoting).
    Whitespace,
}

impl FromStr for Delimiter {
    type Err = IoError;

    /// Parses `tab`/`\t`, `comma`/`,`, `semicolon`/`;`, `space`/`whitespace`,
    /// or any other single ASCII character.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "tab" | "\\t" | "\t" => Ok(Delimiter::Byte(b'\t')),
            "comma" => Ok(Delimiter::Byte(b',')),
            "semicolon" => Ok(Delimiter::Byte(b';')),
            "space" | "whitespace" | " " => Ok(Delimiter::Whitespace),
            _ if s.len() == 1 && s.is_ascii() => Ok(Delimiter::Byte(s.as_bytes()[0])),
            _ => Err(IoError::InvalidOption {
                option: "delimiter",
                value: s.to_string(),
                expected: "tab, comma, semicolon, whitespace or a single ASCII character",
            }),
        }
    }
}

/// Options of [`convert`], built with `with_*` setters.
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `format` | detected | input format |
/// | `delimiter` | detected | field separator of delimited text |
/// | `header` | detected | whether delimited text has a header line |
/// | `label` | [`LabelSpec::None`] | label column of delimited text (LIBSVM/IDX always have `label`) |
/// | `labels_path` | none | IDX labels file (idx1) |
/// | `n_features` | max index | LIBSVM: number of feature columns `D` |
/// | `rows_per_shard` | [`DEFAULT_ROWS_PER_SHARD`] | rows per output file, ≥ 1 |
/// | `row_group_rows` | [`DEFAULT_ROW_GROUP_ROWS`] | rows per row group, ≥ 1 |
/// | `nan_policy` | [`NanPolicy::Refuse`] | NaN/±Inf cells: refuse, skip the row, or keep |
/// | `overwrite` | `false` | replace a non-empty `out_dir` |
/// | `max_memory` | [`MemoryBudget::from_machine`] | memory budget in bytes for sizes read from the input |
/// | `compression` | [`DEFAULT_COMPRESSION`] | compression of the written shards |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConvertOptions {
    /// Input format (`None`: detect).
    pub format: Option<InputFormat>,
    /// Field separator (`None`: detect).
    pub delimiter: Option<Delimiter>,
    /// Header line present (`None`: detect).
    pub header: Option<bool>,
    /// Label column of delimited text.
    pub label: LabelSpec,
    /// IDX labels file.
    pub labels_path: Option<PathBuf>,
    /// LIBSVM feature count.
    pub n_features: Option<usize>,
    /// Rows per output shard.
    pub rows_per_shard: u64,
    /// Rows per row group.
    pub row_group_rows: usize,
    /// NaN/±Inf handling.
    pub nan_policy: NanPolicy,
    /// Replace a non-empty output directory.
    pub overwrite: bool,
    /// Memory budget in bytes (`None`: [`MemoryBudget::from_machine`]).
    pub max_memory: Option<u64>,
    /// Compression of the shards.
    pub compression: Compression,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            format: None,
            delimiter: None,
            header: None,
            label: LabelSpec::None,
            labels_path: None,
            n_features: None,
            rows_per_shard: DEFAULT_ROWS_PER_SHARD,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            nan_policy: NanPolicy::Refuse,
            overwrite: false,
            max_memory: None,
            compression: DEFAULT_COMPRESSION,
        }
    }
}

impl ConvertOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compression of the written shards. Default [`DEFAULT_COMPRESSION`].
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Input format. Detected by default.
    pub fn with_format(mut self, format: Option<InputFormat>) -> Self {
        self.format = format;
        self
    }

    /// Field separator. Detected by default.
    pub fn with_delimiter(mut self, delimiter: Option<Delimiter>) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// Whether a header line is present. Detected by default.
    pub fn with_header(mut self, header: Option<bool>) -> Self {
        self.header = header;
        self
    }

    /// Label column of delimited text. [`LabelSpec::None`] by default.
    pub fn with_label(mut self, label: LabelSpec) -> Self {
        self.label = label;
        self
    }

    /// IDX labels file. None by default.
    pub fn with_labels_path(mut self, path: Option<impl Into<PathBuf>>) -> Self {
        self.labels_path = path.map(Into::into);
        self
    }

    /// LIBSVM feature count. By default the largest index in the file.
    pub fn with_n_features(mut self, n_features: Option<usize>) -> Self {
        self.n_features = n_features;
        self
    }

    /// Rows per output shard. Default [`DEFAULT_ROWS_PER_SHARD`].
    pub fn with_rows_per_shard(mut self, rows: u64) -> Self {
        self.rows_per_shard = rows;
        self
    }

    /// Rows per row group. Default [`DEFAULT_ROW_GROUP_ROWS`].
    pub fn with_row_group_rows(mut self, rows: usize) -> Self {
        self.row_group_rows = rows;
        self
    }

    /// NaN/±Inf handling. Default [`NanPolicy::Refuse`].
    pub fn with_nan_policy(mut self, policy: NanPolicy) -> Self {
        self.nan_policy = policy;
        self
    }

    /// Replace a non-empty output directory. Disabled by default.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Memory budget in bytes. Default: [`MemoryBudget::from_machine`].
    pub fn with_max_memory(mut self, bytes: Option<u64>) -> Self {
        self.max_memory = bytes;
        self
    }

    fn budget(&self) -> MemoryBudget {
        MemoryBudget::or_machine(self.max_memory)
    }

    /// The longest line of text input allowed.
    pub(crate) fn max_line_bytes(&self) -> u64 {
        MAX_LINE_BYTES.min(self.budget().bytes() / 4).max(1 << 20)
    }

    /// Refuses `n_columns` columns (read at `line` of `path`, described by
    /// `what`) whose conversion would not fit in the memory budget; a row
    /// group holds at most `row_bound` rows when the input says so.
    pub(crate) fn check_columns(
        &self,
        path: &Path,
        line: Option<u64>,
        what: impl FnOnce() -> String,
        n_columns: u64,
        row_bound: Option<u64>,
        advice: &'static str,
    ) -> Result<()> {
        let rows = (self.row_group_rows as u64).min(self.rows_per_shard).min(row_bound.unwrap_or(u64::MAX)).max(1);
        let needed = n_columns.saturating_mul(COLUMN_OVERHEAD_BYTES.saturating_add(rows.saturating_mul(8)));
        let budget = self.budget();
        if budget.allows(needed) {
            return Ok(());
        }
        Err(IoError::MemoryBudget {
            path: path.to_path_buf(),
            line,
            what: what(),
            needed,
            budget: budget.bytes(),
            advice,
        })
    }
}

/// Whether a finite value is small enough for the column statistics (see
/// [`MAX_MAGNITUDE`]).
#[inline]
pub(crate) fn within_magnitude(v: f64) -> bool {
    !v.is_finite() || v.abs() <= MAX_MAGNITUDE
}

/// What [`convert`] did (serialisable, e.g. for `--json` output).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ConvertReport {
    /// The detected or given input format.
    pub format: InputFormat,
    /// Rows written.
    pub rows_written: u64,
    /// Rows dropped under [`NanPolicy::Skip`].
    pub rows_skipped: u64,
    /// The shards written, in order (paths under `out_dir`).
    pub shards: Vec<PathBuf>,
    /// All columns, in order.
    pub columns: Vec<String>,
    /// The label column, if any.
    pub label: Option<String>,
    /// Statistics of all columns over all written rows.
    pub stats: ColumnStats,
}

/// A stream of rows of `f64` in a fixed column layout.
pub(crate) trait RowSource {
    fn columns(&self) -> &[String];
    /// Arrow storage type of each column (values must be exact in it).
    fn column_types(&self) -> &[DataType];
    fn label(&self) -> Option<&str>;
    /// Fills `row` (one value per column) with the next row to write;
    /// false at the end. Rows skipped under `NanPolicy::Skip` are counted.
    fn next_row(&mut self, row: &mut [f64]) -> Result<bool>;
    fn skipped(&self) -> u64;
}

/// Converts `input` into a directory of Parquet shards at `out_dir`; see
/// the [module docs](self) for formats, layout and atomicity.
///
/// `progress` is called with the number of rows written so far after every
/// batch (a few thousand rows).
///
/// # Errors
/// Unreadable or malformed input (each error names the file, the line or
/// item, the column and what was expected), empty input, an `out_dir` that
/// exists and is not empty without [`ConvertOptions::overwrite`], invalid
/// options, or a failed write.
pub fn convert(
    input: &Path,
    out_dir: &Path,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ConvertReport> {
    if opts.rows_per_shard == 0 {
        return Err(IoError::InvalidOption {
            option: "rows_per_shard",
            value: "0".into(),
            expected: "a positive number of rows",
        });
    }
    if opts.row_group_rows == 0 {
        return Err(IoError::InvalidOption {
            option: "row_group_rows",
            value: "0".into(),
            expected: "a positive number of rows",
        });
    }
    if !input.exists() {
        return Err(IoError::NotFound { path: input.to_path_buf() });
    }
    let output = OutputOptions::new()
        .with_overwrite(opts.overwrite)
        .with_inputs(std::iter::once(input).chain(opts.labels_path.as_deref()));
    let staging = StagedOutput::directory(out_dir, &output)?;
    let format = match opts.format {
        Some(f) => f,
        None => detect::detect_format(input)?,
    };
    let mut source: Box<dyn RowSource> = match format {
        InputFormat::Csv | InputFormat::Tsv => Box::new(delimited::Delimited::open(input, format, opts)?),
        InputFormat::Libsvm => Box::new(libsvm::Libsvm::open(input, opts)?),
        InputFormat::Idx => Box::new(idx::Idx::open(input, opts)?),
    };
    let mut sink = ShardSink::new(staging.path().to_path_buf(), source.as_ref(), opts)?;
    let mut row = vec![0.0; source.columns().len()];
    while source.next_row(&mut row)? {
        if sink.push(&row)? {
            progress(sink.rows_written);
        }
    }
    let rows_skipped = source.skipped();
    if sink.rows_written + sink.n_buffered as u64 == 0 {
        return Err(IoError::EmptyInput { path: input.to_path_buf() });
    }
    let (names, stats, rows_written) = sink.finish()?;
    progress(rows_written);
    staging.commit()?;
    let shards = names.iter().map(|n| out_dir.join(n)).collect();
    Ok(ConvertReport {
        format,
        rows_written,
        rows_skipped,
        shards,
        columns: source.columns().to_vec(),
        label: source.label().map(str::to_string),
        stats,
    })
}

/// Buffers rows column-major and writes them as shards.
pub(crate) struct ShardSink {
    dir: PathBuf,
    schema: SchemaRef,
    types: Vec<DataType>,
    label: Option<String>,
    rows_per_shard: u64,
    row_group_rows: usize,
    /// Column-major `(batch_rows, d)`: column `j` is `buf[j*cap .. j*cap + n]`.
    buf: Vec<f64>,
    cap: usize,
    n_buffered: usize,
    writer: Option<ArrowWriter<File>>,
    shard_rows: u64,
    shard_stats: ColumnStats,
    total_stats: ColumnStats,
    shard_names: Vec<String>,
    rows_written: u64,
    compression: Compression,
}

impl ShardSink {
    fn new(dir: PathBuf, source: &dyn RowSource, opts: &ConvertOptions) -> Result<ShardSink> {
        Ok(ShardSink::with_layout(
            dir,
            source.columns(),
            source.column_types().to_vec(),
            source.label(),
            opts.rows_per_shard,
            opts.row_group_rows,
        )
        .with_compression(opts.compression))
    }

    /// Writes shards with `compression` (default [`DEFAULT_COMPRESSION`]).
    pub(crate) fn with_compression(mut self, compression: Compression) -> ShardSink {
        self.compression = compression;
        self
    }

    pub(crate) fn with_layout(
        dir: PathBuf,
        names: &[String],
        types: Vec<DataType>,
        label: Option<&str>,
        rows_per_shard: u64,
        row_group_rows: usize,
    ) -> ShardSink {
        let d = names.len().max(1);
        // About 4 MiB of f64 per batch, at most 8192 rows.
        let cap = (4 * 1024 * 1024 / (8 * d)).clamp(1, 8192).min(row_group_rows);
        let fields: Vec<Field> = names.iter().zip(&types).map(|(n, t)| Field::new(n, t.clone(), false)).collect();
        ShardSink {
            dir,
            schema: Arc::new(Schema::new(fields)),
            types,
            label: label.map(str::to_string),
            rows_per_shard,
            row_group_rows,
            buf: vec![0.0; cap * names.len()],
            cap,
            n_buffered: 0,
            writer: None,
            shard_rows: 0,
            shard_stats: ColumnStats::new(names.iter().cloned()),
            total_stats: ColumnStats::new(names.iter().cloned()),
            shard_names: Vec::new(),
            rows_written: 0,
            compression: DEFAULT_COMPRESSION,
        }
    }

    /// Adds a row; returns true when a batch was written.
    pub(crate) fn push(&mut self, row: &[f64]) -> Result<bool> {
        let (n, cap) = (self.n_buffered, self.cap);
        for (j, &v) in row.iter().enumerate() {
            self.buf[j * cap + n] = v;
        }
        self.n_buffered += 1;
        let shard_full = self.shard_rows + self.n_buffered as u64 == self.rows_per_shard;
        if self.n_buffered == cap || shard_full {
            self.flush_batch()?;
            if shard_full {
                self.finish_shard()?;
            }
            return Ok(true);
        }
        Ok(false)
    }

    fn current_path(&self) -> PathBuf {
        self.dir.join(self.shard_names.last().expect("a shard is open"))
    }

    fn flush_batch(&mut self) -> Result<()> {
        let n = self.n_buffered;
        if n == 0 {
            return Ok(());
        }
        if self.writer.is_none() {
            let index = self.shard_names.len();
            if index > 99_999 {
                return Err(IoError::InvalidOption {
                    option: "rows_per_shard",
                    value: self.rows_per_shard.to_string(),
                    expected: "at most 100000 shards (raise rows_per_shard)",
                });
            }
            self.shard_names.push(format!("part-{index:05}.parquet"));
            let path = self.current_path();
            let file = File::create(&path).map_err(|e| IoError::os(&path, "cannot create", e))?;
            let props = writer_properties_with(self.row_group_rows, Vec::new(), true, self.compression);
            let w = ArrowWriter::try_new(file, self.schema.clone(), Some(props))
                .map_err(|error| IoError::Write { path: path.clone(), error })?;
            self.writer = Some(w);
        }
        let cap = self.cap;
        let columns: Vec<ArrayRef> =
            self.types.iter().enumerate().map(|(j, t)| to_array(&self.buf[j * cap..j * cap + n], t)).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| IoError::Write { path: self.current_path(), error: parquet::errors::ParquetError::from(e) })?;
        let path = self.current_path();
        let w = self.writer.as_mut().expect("opened above");
        w.write(&batch).map_err(|error| IoError::Write { path, error })?;
        let d = self.types.len();
        let view = ArrayView2::from_shape((n, d).strides((1, cap)), &self.buf[..]).expect("buffer holds n rows");
        self.shard_stats.update(view);
        self.shard_rows += n as u64;
        self.rows_written += n as u64;
        self.n_buffered = 0;
        Ok(())
    }

    fn finish_shard(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let path = self.current_path();
        if let Some(l) = &self.label {
            w.append_key_value_metadata(KeyValue::new(LABEL_KEY.to_string(), l.clone()));
        }
        // Non-finite statistics (NaN cells kept, or values whose squares
        // overflow) would read back as nulls that no reader accepts: a
        // shard without statistics is recomputed instead.
        if self.shard_stats.is_finite() {
            let json = serde_json::to_string(&self.shard_stats).expect("statistics serialise");
            w.append_key_value_metadata(KeyValue::new(STATS_KEY.to_string(), json));
        }
        let file = w.into_inner().map_err(|error| IoError::Write { path: path.clone(), error })?;
        file.sync_all().map_err(|e| IoError::os(&path, "cannot flush", e))?;
        self.total_stats.merge(&self.shard_stats);
        self.shard_stats = ColumnStats::new(self.shard_stats.names().to_vec());
        self.shard_rows = 0;
        Ok(())
    }

    /// Flushes everything; returns shard file names, total statistics and
    /// rows written.
    pub(crate) fn finish(mut self) -> Result<(Vec<String>, ColumnStats, u64)> {
        self.flush_batch()?;
        self.finish_shard()?;
        Ok((self.shard_names, self.total_stats, self.rows_written))
    }
}

/// Builds an Arrow array of type `t` from `f64` values that are exact in it.
fn to_array(v: &[f64], t: &DataType) -> ArrayRef {
    match t {
        DataType::UInt8 => Arc::new(UInt8Array::from_iter_values(v.iter().map(|&x| x as u8))),
        DataType::Int8 => Arc::new(Int8Array::from_iter_values(v.iter().map(|&x| x as i8))),
        DataType::Int16 => Arc::new(Int16Array::from_iter_values(v.iter().map(|&x| x as i16))),
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(v.iter().map(|&x| x as i32))),
        DataType::Float32 => Arc::new(Float32Array::from_iter_values(v.iter().map(|&x| x as f32))),
        _ => Arc::new(Float64Array::from_iter_values(v.iter().copied())),
    }
}
