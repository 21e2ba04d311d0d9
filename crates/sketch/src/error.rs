use crate::kind::SketchKind;
use thiserror::Error;

/// Errors from updating, merging or finishing sketch accumulators.
///
/// Every variant is detected before any state changes, so an accumulator
/// that returned an error is unchanged and can still be used.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SketchError {
    /// The rows do not have the accumulator's number of columns.
    #[error("rows have {found} columns, expected {expected}")]
    ColumnMismatch {
        /// Columns the accumulator was built for.
        expected: usize,
        /// Columns of the rows passed in.
        found: usize,
    },
    /// An explicit id list does not have one id per row.
    #[error("{ids} row ids were given for {rows} rows")]
    IdCountMismatch {
        /// Number of rows.
        rows: usize,
        /// Number of ids.
        ids: usize,
    },
    /// Ids within one update must be strictly increasing.
    #[error("row ids must increase within an update: id {id} at position {position} follows id {previous}")]
    IdsNotIncreasing {
        /// Position of the offending id in the list.
        position: usize,
        /// The id before it.
        previous: u64,
        /// The offending id.
        id: u64,
    },
    /// A row id was added twice to the same pending block.
    #[error("row id {id} was already added")]
    DuplicateRow {
        /// The repeated id.
        id: u64,
    },
    /// `first_row_id + n_rows` does not fit in 64 bits.
    #[error("row ids overflow: {rows} rows starting at id {first}")]
    RowIdOverflow {
        /// First row id.
        first: u64,
        /// Number of rows.
        rows: usize,
    },
    /// Two accumulators built with different parameters cannot be merged.
    #[error("cannot merge accumulators with different {what}: {left} and {right}")]
    MergeMismatch {
        /// Which parameter differs (e.g. "seed").
        what: &'static str,
        /// Value in `self`.
        left: u64,
        /// Value in `other`.
        right: u64,
    },
    /// Two range sketches of different kinds cannot be merged.
    #[error("cannot merge a {left} sketch with a {right} sketch")]
    KindMismatch {
        /// Kind of `self`.
        left: SketchKind,
        /// Kind of `other`.
        right: SketchKind,
    },
    /// Two product accumulators were built for different `Q` matrices.
    #[error("cannot merge products against different Q matrices")]
    ProjectionMismatch,
    /// A parameter is out of range.
    #[error("invalid {name} {value}: expected {expected}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The offending value.
        value: usize,
        /// What was expected.
        expected: &'static str,
    },
    /// A matrix (argument or stored state) has the wrong shape.
    #[error("{name} has shape {found:?}, expected {expected:?}")]
    Shape {
        /// Which matrix.
        name: &'static str,
        /// Shape found.
        found: (usize, usize),
        /// Shape expected.
        expected: (usize, usize),
    },
    /// An orthonormal basis of `n_components` columns does not exist in
    /// dimension `n_features`.
    #[error("cannot orthonormalise {n_components} columns in dimension {n_features}: expected at most {n_features}")]
    TooManyComponents {
        /// Columns requested (`l`).
        n_components: usize,
        /// Dimension (`d`).
        n_features: usize,
    },
    /// A power iteration received a pass result after its last pass.
    #[error("power iteration is finished after {passes} passes")]
    PowerIterationFinished {
        /// Passes it needed.
        passes: usize,
    },
    /// A power iteration was finished before all its passes were fed.
    #[error("power iteration needs {total} passes, {done} were fed")]
    PowerIterationUnfinished {
        /// Passes fed so far.
        done: usize,
        /// Passes needed.
        total: usize,
    },
    /// Stored state is inconsistent (e.g. pending rows outside the pending
    /// block), so a file was corrupted or written by another version.
    #[error("invalid stored state: {reason}")]
    InvalidState {
        /// What is wrong.
        reason: &'static str,
    },
}

/// Result alias of this crate.
pub type Result<T, E = SketchError> = std::result::Result<T, E>;
