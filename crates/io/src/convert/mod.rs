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
//! The output appears atomically: shards are written into a hidden sibling
//! directory `.<name>.tmp` which is renamed to `out_dir` at the end. On any
//! error the temporary is removed and `out_dir` is untouched; after a crash
//! only the hidden temporary remains, and the next run replaces it.
//!
//! Memory: one batch of at most 8192 rows (and about 4 MiB) of `f64`, plus
//! the encoded pages of one row group in the Parquet writer.

mod delimited;
mod idx;
mod input;
mod libsvm;

use crate::dataset::{LABEL_KEY, LabelSpec, STATS_KEY};
use crate::error::{IoError, Result};
use crate::reader::NanPolicy;
use crate::stats::ColumnStats;
use crate::writer::{DEFAULT_ROW_GROUP_ROWS, writer_properties};
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
        }
    }
}

impl ConvertOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
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
    check_output(out_dir, opts.overwrite)?;
    let format = match opts.format {
        Some(f) => f,
        None => input::detect_format(input)?,
    };
    let mut source: Box<dyn RowSource> = match format {
        InputFormat::Csv | InputFormat::Tsv => Box::new(delimited::Delimited::open(input, format, opts)?),
        InputFormat::Libsvm => Box::new(libsvm::Libsvm::open(input, opts)?),
        InputFormat::Idx => Box::new(idx::Idx::open(input, opts)?),
    };
    let staging = Staging::create(out_dir)?;
    let mut sink = ShardSink::new(staging.dir.clone(), source.as_ref(), opts)?;
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
    staging.commit(out_dir)?;
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

/// Refuses an existing, non-empty output unless overwriting.
pub(crate) fn check_output(out_dir: &Path, overwrite: bool) -> Result<()> {
    match std::fs::metadata(out_dir) {
        Err(_) => Ok(()),
        Ok(md) if !md.is_dir() => Err(IoError::OutputExists { path: out_dir.to_path_buf() }),
        Ok(_) => {
            let empty = std::fs::read_dir(out_dir)
                .map_err(|e| IoError::os(out_dir, "cannot list directory", e))?
                .next()
                .is_none();
            if empty || overwrite { Ok(()) } else { Err(IoError::OutputExists { path: out_dir.to_path_buf() }) }
        }
    }
}

/// A hidden sibling directory that becomes the output on `commit` and is
/// removed otherwise.
pub(crate) struct Staging {
    pub(crate) dir: PathBuf,
    armed: bool,
}

fn sibling(out_dir: &Path, suffix: &str) -> PathBuf {
    let name = out_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    out_dir.with_file_name(format!(".{name}.{suffix}"))
}

impl Staging {
    pub(crate) fn create(out_dir: &Path) -> Result<Staging> {
        if let Some(parent) = out_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| IoError::os(parent, "cannot create directory", e))?;
        }
        let dir = sibling(out_dir, "tmp");
        // A leftover from a killed run: replace it.
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| IoError::os(&dir, "cannot remove stale temporary", e))?;
        }
        std::fs::create_dir(&dir).map_err(|e| IoError::os(&dir, "cannot create directory", e))?;
        Ok(Staging { dir, armed: true })
    }

    /// Moves the staged shards into place. An existing `out_dir` is first
    /// moved aside, then deleted once the new one is in place.
    pub(crate) fn commit(mut self, out_dir: &Path) -> Result<()> {
        let old = sibling(out_dir, "old");
        let had_old = out_dir.exists();
        if had_old {
            if old.exists() {
                std::fs::remove_dir_all(&old).map_err(|e| IoError::os(&old, "cannot remove stale directory", e))?;
            }
            std::fs::rename(out_dir, &old).map_err(|e| IoError::os(out_dir, "cannot move aside", e))?;
        }
        if let Err(e) = std::fs::rename(&self.dir, out_dir) {
            if had_old {
                let _ = std::fs::rename(&old, out_dir);
            }
            return Err(IoError::os(out_dir, "cannot rename into place", e));
        }
        self.armed = false;
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
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
        ))
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
            let props = writer_properties(self.row_group_rows, Vec::new(), true);
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
        let json = serde_json::to_string(&self.shard_stats).expect("statistics serialise");
        w.append_key_value_metadata(KeyValue::new(STATS_KEY.to_string(), json));
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
