//! The crate's error type.
//!
//! Every variant carries the location of the problem as structured fields
//! (file path, line and field, global row id, row group, column name) and
//! renders them RG-style as a prefix: `path:line:field: column "x": ...`.
//!
//! Each message is complete on its own: an underlying parquet, arrow or OS
//! error is embedded in the text rather than exposed through
//! [`std::error::Error::source`], so an anyhow chain printed with `{:#}`
//! does not repeat it.

use arrow::datatypes::{DataType, FieldRef};
use arrow::error::ArrowError;
use parquet::errors::ParquetError;
use std::path::PathBuf;

mod detail;
mod render;

pub use detail::{BadValue, IdxProblem, LibsvmProblem, Overlap};
use render::{AtLine, Bare, ColumnList, InColumn, StoreProblem, describe_type};

/// `Result` with [`IoError`] as the default error type.
pub type Result<T, E = IoError> = std::result::Result<T, E>;

/// Errors of kapprox-io.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// A path does not exist.
    #[error("{}: no such file or directory", path.display())]
    NotFound {
        /// The missing path.
        path: PathBuf,
    },

    /// An operating-system error while reading or writing a file.
    #[error("{}: {what}: {error}", path.display())]
    Os {
        /// The file or directory.
        path: PathBuf,
        /// What was being done, e.g. "cannot open".
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },

    /// A dataset directory holds no `*.parquet` file.
    #[error("{}: no parquet files found (expected a .parquet file or a directory of *.parquet shards)", path.display())]
    NoParquetFiles {
        /// The directory.
        path: PathBuf,
    },

    /// A Parquet footer could not be read: the file is truncated, corrupt or
    /// not Parquet.
    #[error("{}: cannot read the parquet footer (truncated or not a parquet file): {}", path.display(), Bare(error))]
    Footer {
        /// The file.
        path: PathBuf,
        /// The parquet error.
        error: ParquetError,
    },

    /// A shard's schema differs from the first shard's.
    #[error(
        "{}: column {column:?}: expected {} as in {}, found {}",
        path.display(),
        describe_type(expected.as_ref()),
        reference.display(),
        describe_type(found.as_ref())
    )]
    SchemaMismatch {
        /// The shard that differs.
        path: PathBuf,
        /// The first shard, whose schema is the reference.
        reference: PathBuf,
        /// The column that differs.
        column: String,
        /// Its type in the reference (`None`: absent there).
        expected: Option<DataType>,
        /// Its type in `path` (`None`: absent here).
        found: Option<DataType>,
    },

    /// A shard has the same columns as the first shard in another order.
    #[error("{}: column {column:?}: expected at position {expected} as in {}, found at position {found}", path.display(), reference.display())]
    ColumnOrder {
        /// The shard that differs.
        path: PathBuf,
        /// The first shard.
        reference: PathBuf,
        /// The column.
        column: String,
        /// Its 1-based position in the reference.
        expected: usize,
        /// Its 1-based position in `path`.
        found: usize,
    },

    /// Two columns have the same name.
    #[error("{}: column {column:?} appears twice (fields {first} and {second}); expected unique column names", path.display())]
    DuplicateColumn {
        /// The file.
        path: PathBuf,
        /// The repeated name.
        column: String,
        /// 1-based position of its first occurrence.
        first: usize,
        /// 1-based position of its second occurrence.
        second: usize,
    },

    /// A requested column does not exist.
    #[error("{}: column {column:?} not found; available columns: {}", path.display(), ColumnList(available))]
    ColumnNotFound {
        /// The dataset or file.
        path: PathBuf,
        /// The requested name.
        column: String,
        /// The columns that exist, in schema order.
        available: Vec<String>,
    },

    /// [`LabelSpec::Hint`](crate::LabelSpec::Hint) was asked for but the
    /// shards record no label column.
    #[error(
        "{}: no label column recorded in the parquet metadata (key \"kapprox.label\"); expected the label column to be named",
        path.display()
    )]
    NoLabelHint {
        /// The dataset.
        path: PathBuf,
    },

    /// A requested column is neither a number, nor a string, nor a date or
    /// time (a list, a struct, binary data).
    #[error(
        "{}: column {column:?} has type {data_type}, expected a number (float, integer, decimal or boolean); leave it out with --exclude",
        path.display()
    )]
    NotNumeric {
        /// The shard.
        path: PathBuf,
        /// The column.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
    },

    /// A string column is an input but not declared categorical.
    #[error(
        "{}: column {column:?} has type {data_type} (text), expected a number; name it in --categorical to one-hot encode it, or in --exclude to leave it out",
        path.display()
    )]
    TextColumn {
        /// The shard.
        path: PathBuf,
        /// The column.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
    },

    /// A date/time column is an input without being named explicitly.
    #[error(
        "{}: column {column:?} has type {data_type} (a date or time), expected a number; leave it out with --exclude, or name it in --columns to read it as a number of units since the epoch",
        path.display()
    )]
    TemporalColumn {
        /// The shard.
        path: PathBuf,
        /// The column.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
    },

    /// A column pattern of a selection option matches no column.
    #[error("{}: {option} {pattern:?} matches no column; available columns: {}", path.display(), ColumnList(available))]
    PatternMatchesNothing {
        /// The dataset.
        path: PathBuf,
        /// The option, e.g. `--exclude`.
        option: &'static str,
        /// The name or glob.
        pattern: String,
        /// The columns that exist.
        available: Vec<String>,
    },

    /// Shards of a dataset sit under different Hive partition keys.
    #[error(
        "{}: expected hive partition keys [{}] as in {}, found [{}]",
        path.display(),
        expected.join(", "),
        reference.display(),
        found.join(", ")
    )]
    PartitionKeys {
        /// The shard that differs.
        path: PathBuf,
        /// The first shard.
        reference: PathBuf,
        /// The first shard's keys, outermost first.
        expected: Vec<String>,
        /// This shard's keys.
        found: Vec<String>,
    },

    /// An object store refused or failed a request.
    #[error("{}: {what}: {}", path.display(), StoreProblem(error))]
    Store {
        /// The object or prefix URL.
        path: PathBuf,
        /// What was being done, e.g. "cannot list".
        what: &'static str,
        /// The store's error.
        error: object_store::Error,
    },

    /// A remote object is shorter than its listing or footer said.
    #[error("{}: expected {expected} bytes, found {found} (object truncated or replaced while reading)", path.display())]
    Truncated {
        /// The object URL.
        path: PathBuf,
        /// Bytes expected up to the end of the requested range.
        expected: u64,
        /// Bytes available.
        found: u64,
    },

    /// A categorical column has more distinct values than counting allows.
    #[error(
        "column {column:?}: more than {limit} distinct values, expected a categorical column (an identifier? leave it out with --exclude or carry it with --keep)"
    )]
    TooManyCategories {
        /// The column.
        column: String,
        /// The limit ([`MAX_DISTINCT`](crate::categorical::MAX_DISTINCT)).
        limit: usize,
    },

    /// A null in a categorical column under
    /// [`NanPolicy::Refuse`](crate::NanPolicy::Refuse).
    #[error(
        "{}: row {row_in_file} (global row id {row_id}), column {column:?}: expected a value, found null (use --nan skip or impute)",
        path.display()
    )]
    MissingCategory {
        /// The shard.
        path: PathBuf,
        /// Global row id (0-based).
        row_id: u64,
        /// Row within the shard (0-based).
        row_in_file: u64,
        /// The column.
        column: String,
    },

    /// Decoding a row group failed (corrupt page, unsupported compression, ...).
    #[error("{}: row group {row_group}{}: cannot decode: {}", path.display(), InColumn(column.as_deref()), Bare(error))]
    Decode {
        /// The shard.
        path: PathBuf,
        /// 0-based row group index within the shard.
        row_group: usize,
        /// The column that failed, when it could be found.
        column: Option<String>,
        /// The underlying error.
        error: ArrowError,
    },

    /// A NaN, ±Inf or null cell in a Parquet shard under
    /// [`NanPolicy::Refuse`](crate::NanPolicy::Refuse).
    #[error(
        "{}: row {row_in_file} (global row id {row_id}), column {column:?}: expected a finite number, found {value}",
        path.display()
    )]
    NonFinite {
        /// The shard.
        path: PathBuf,
        /// Global row id (0-based).
        row_id: u64,
        /// Row within the shard (0-based).
        row_in_file: u64,
        /// The column.
        column: String,
        /// The offending value.
        value: BadValue,
    },

    /// A shard's size changed between [`Dataset::open`](crate::Dataset::open)
    /// and reading.
    #[error(
        "{}: file changed since the dataset was opened (expected {expected} bytes, found {found}); reopen the dataset",
        path.display()
    )]
    ShardChanged {
        /// The shard.
        path: PathBuf,
        /// Size recorded at open.
        expected: u64,
        /// Size now.
        found: u64,
    },

    /// A row group decoded to a different number of rows than its footer
    /// declares.
    #[error("{}: row group {row_group}: expected {expected} rows as declared in the footer, found {found}", path.display())]
    RowGroupRows {
        /// The shard.
        path: PathBuf,
        /// 0-based row group index.
        row_group: usize,
        /// Rows declared in the footer.
        expected: u64,
        /// Rows decoded.
        found: u64,
    },

    /// A decode thread stopped before delivering its rows (it panicked).
    #[error("{}: row group {row_group}: decode thread stopped unexpectedly", path.display())]
    WorkerLost {
        /// The shard.
        path: PathBuf,
        /// 0-based row group index.
        row_group: usize,
    },

    /// An option has an invalid value.
    #[error("invalid {option} {value:?}: expected {expected}")]
    InvalidOption {
        /// The option name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },

    /// A text cell is not a number.
    #[error("{}:{line}:{field}: column {column:?}: expected a number, found {text:?}", path.display())]
    ParseNumber {
        /// The input file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// 1-based field number.
        field: usize,
        /// The column name.
        column: String,
        /// The cell's text.
        text: String,
    },

    /// A NaN or ±Inf cell in a text input under
    /// [`NanPolicy::Refuse`](crate::NanPolicy::Refuse).
    #[error("{}:{line}:{field}: column {column:?}: expected a finite number, found {text:?}", path.display())]
    NonFiniteText {
        /// The input file.
        path: PathBuf,
        /// 1-based line number (for IDX: 1-based item number).
        line: u64,
        /// 1-based field number.
        field: usize,
        /// The column name.
        column: String,
        /// The cell's text.
        text: String,
    },

    /// A delimited row has the wrong number of fields.
    #[error("{}:{line}: expected {expected} fields, found {found}", path.display())]
    RaggedRow {
        /// The input file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Fields in the first row.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },

    /// A LIBSVM line is malformed.
    #[error("{}:{line}: {problem}, found {token:?}", path.display())]
    Libsvm {
        /// The input file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The offending token.
        token: String,
        /// What was expected.
        problem: LibsvmProblem,
    },

    /// An IDX file is malformed.
    #[error("{}: {problem}", path.display())]
    Idx {
        /// The input file.
        path: PathBuf,
        /// What is wrong.
        problem: IdxProblem,
    },

    /// IDX images and labels disagree on the number of items.
    #[error(
        "{}: expected {n_images} labels to match the {n_images} images of {}, found {n_labels}",
        labels.display(),
        images.display()
    )]
    IdxCountMismatch {
        /// The images file.
        images: PathBuf,
        /// The labels file.
        labels: PathBuf,
        /// Items in the images file.
        n_images: u64,
        /// Items in the labels file.
        n_labels: u64,
    },

    /// The input format could not be detected.
    #[error(
        "{}: cannot detect the input format from the file name or content; expected csv, tsv, libsvm or idx (name the format)",
        path.display()
    )]
    UnknownFormat {
        /// The input file.
        path: PathBuf,
    },

    /// The input has no data rows.
    #[error("{}: no data rows; expected at least one", path.display())]
    EmptyInput {
        /// The input file.
        path: PathBuf,
    },

    /// The output exists (a file, or a directory that is not empty) and
    /// replacing it was not asked for.
    #[error("{}: output exists; expected a new path or an empty directory (pass --overwrite to replace it)", path.display())]
    OutputExists {
        /// The output.
        path: PathBuf,
    },

    /// An output would be written over, into or around one of the inputs.
    #[error(
        "{}: the output {relation} {}; expected an output apart from every input, since writing it would destroy the input",
        output.display(),
        input.display()
    )]
    OutputIsInput {
        /// The output path as given.
        output: PathBuf,
        /// The input path as given.
        input: PathBuf,
        /// How the two overlap.
        relation: Overlap,
    },

    /// Overwriting would replace a directory with a file or a file with a
    /// directory (a mistyped path more likely than a wish).
    #[error("{}: output exists as {existing}; expected {wanted} (remove it first to replace it)", path.display())]
    OutputKind {
        /// The output.
        path: PathBuf,
        /// What is there: "a directory" or "a file".
        existing: &'static str,
        /// What would be written.
        wanted: &'static str,
    },

    /// Another run put an output in place while this one was writing.
    #[error(
        "{}: another run created this output while this one was writing; nothing was replaced (pass --overwrite to replace it)",
        path.display()
    )]
    OutputRaced {
        /// The output.
        path: PathBuf,
    },

    /// An output path that names no file or directory (`/`, `..`, empty).
    #[error("{}: expected an output path that ends in a file or directory name", path.display())]
    BadOutputPath {
        /// The path given.
        path: PathBuf,
    },

    /// Something sized by the input or the options would not fit in the
    /// memory budget.
    #[error(
        "{}{}: {what} would need about {}, more than the memory budget of {}; {advice}",
        path.display(),
        AtLine(*line),
        crate::budget::ByteSize(*needed),
        crate::budget::ByteSize(*budget)
    )]
    MemoryBudget {
        /// The input file (or the output, for options).
        path: PathBuf,
        /// 1-based line (or item) where the size was read, if it was.
        line: Option<u64>,
        /// What would be allocated, e.g. "2000000001 columns".
        what: String,
        /// Bytes it would need (`u64::MAX`: more than can be counted).
        needed: u64,
        /// The budget in bytes.
        budget: u64,
        /// What the user can do about it.
        advice: &'static str,
    },

    /// A finite text value so large that its square overflows, which would
    /// make the column statistics infinite.
    #[error(
        "{}:{line}:{field}: column {column:?}: expected a number of magnitude at most {max:e} (larger values overflow the column statistics), found {text:?}",
        path.display()
    )]
    ValueTooLarge {
        /// The largest magnitude accepted
        /// ([`MAX_MAGNITUDE`](crate::convert::MAX_MAGNITUDE)).
        max: f64,
        /// The input file.
        path: PathBuf,
        /// 1-based line number (for IDX: 1-based item number).
        line: u64,
        /// 1-based field number.
        field: usize,
        /// The column name.
        column: String,
        /// The value's text.
        text: String,
    },

    /// Writing Parquet failed.
    #[error("{}: cannot write parquet: {}", path.display(), Bare(error))]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The parquet error.
        error: ParquetError,
    },

    /// A batch handed to a writer has the wrong shape.
    #[error("{}: {what}: expected {expected}, found {found}", path.display())]
    BatchShape {
        /// The file being written.
        path: PathBuf,
        /// What was measured, e.g. "rows of `target`".
        what: &'static str,
        /// The expected size.
        expected: usize,
        /// The size given.
        found: usize,
    },

    /// A batch handed to a writer has a column of the wrong name or type.
    #[error(
        "{}: batch column {}: expected {:?} of type {}, found {:?} of type {}",
        path.display(),
        index + 1,
        expected.name(),
        expected.data_type(),
        found.name(),
        found.data_type()
    )]
    BatchColumn {
        /// The file being written.
        path: PathBuf,
        /// 0-based column index.
        index: usize,
        /// The writer's field.
        expected: FieldRef,
        /// The batch's field.
        found: FieldRef,
    },

    /// A kapprox key in the footer metadata is unreadable.
    #[error("{}: footer key {key:?}: expected {expected}, found invalid data: {error}", path.display())]
    BadMetadata {
        /// The shard.
        path: PathBuf,
        /// The key-value metadata key.
        key: &'static str,
        /// What the value should be.
        expected: &'static str,
        /// The parse error.
        error: serde_json::Error,
    },
}

impl IoError {
    /// An OS error on `path`; a missing file becomes [`IoError::NotFound`].
    pub(crate) fn os(path: impl Into<PathBuf>, what: &'static str, error: std::io::Error) -> IoError {
        let path = path.into();
        if error.kind() == std::io::ErrorKind::NotFound {
            IoError::NotFound { path }
        } else {
            IoError::Os { path, what, error }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_location_and_expectation() {
        let e = IoError::ParseNumber {
            path: "data/train.csv".into(),
            line: 17,
            field: 4,
            column: "x4".into(),
            text: "abc".into(),
        };
        assert_eq!(e.to_string(), r#"data/train.csv:17:4: column "x4": expected a number, found "abc""#);
        let e = IoError::NonFinite {
            path: "d/part-00001.parquet".into(),
            row_id: 20482,
            row_in_file: 10482,
            column: "age".into(),
            value: BadValue::Value(f64::NAN),
        };
        assert_eq!(
            e.to_string(),
            r#"d/part-00001.parquet: row 10482 (global row id 20482), column "age": expected a finite number, found NaN"#
        );
        let e = IoError::ColumnNotFound {
            path: "d".into(),
            column: "y".into(),
            available: (0..40).map(|i| format!("c{i}")).collect(),
        };
        let s = e.to_string();
        assert!(s.starts_with(r#"d: column "y" not found; available columns: "c0", "c1""#), "{s}");
        assert!(s.ends_with("... (10 more)"), "{s}");
    }
}
