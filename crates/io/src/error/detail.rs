//! The details an [`IoError`](super::IoError) carries: what is wrong with a
//! value, a LIBSVM line, an IDX header, or an output path.

use std::fmt;

/// A value that is not a finite number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BadValue {
    /// A null (missing) cell.
    Null,
    /// NaN or ±Inf.
    Value(f64),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Null => f.write_str("null"),
            BadValue::Value(v) => write!(f, "{v}"),
        }
    }
}

/// How an output path overlaps an input path (after resolving symlinks,
/// `..` and hard links).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// The same file or directory.
    Same,
    /// The output lies inside the input directory.
    Inside,
    /// The output directory contains the input.
    Contains,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Overlap::Same => "is the input",
            Overlap::Inside => "lies inside the input",
            Overlap::Contains => "contains the input",
        })
    }
}

/// What is wrong with a LIBSVM line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LibsvmProblem {
    /// The first token is not a number.
    Label,
    /// A token is not `index:value`.
    Pair,
    /// The index is not a positive integer.
    Index,
    /// The index is 0 (LIBSVM indices are 1-based).
    ZeroIndex,
    /// The value is not a number.
    Value {
        /// The index of the pair.
        index: u64,
    },
    /// The value is NaN or ±Inf (under `NanPolicy::Refuse`).
    NonFinite {
        /// The index of the pair.
        index: u64,
    },
    /// The index is not greater than the previous one.
    NotIncreasing {
        /// The previous index on the line.
        previous: u64,
    },
    /// The index exceeds the configured number of features.
    TooLarge {
        /// The configured number of features.
        n_features: usize,
    },
}

impl fmt::Display for LibsvmProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LibsvmProblem::Label => f.write_str("column \"label\": expected a number"),
            LibsvmProblem::Pair => f.write_str("expected index:value"),
            LibsvmProblem::Index => f.write_str("expected a positive integer feature index"),
            LibsvmProblem::ZeroIndex => f.write_str("expected a 1-based feature index (indices start at 1)"),
            LibsvmProblem::Value { index } => write!(f, "column \"f{index}\": expected a number"),
            LibsvmProblem::NonFinite { index } => write!(f, "column \"f{index}\": expected a finite number"),
            LibsvmProblem::NotIncreasing { previous } => {
                write!(f, "expected feature indices in increasing order (after index {previous})")
            }
            LibsvmProblem::TooLarge { n_features } => {
                write!(f, "expected a feature index of at most {n_features} (the configured n_features)")
            }
        }
    }
}

/// What is wrong with an IDX file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdxProblem {
    /// The first four bytes are not an IDX magic number.
    Magic {
        /// The first bytes found.
        found: [u8; 4],
    },
    /// The type code is not one of 0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E.
    TypeCode {
        /// The code found.
        code: u8,
    },
    /// The file ends before the item with this 0-based index is complete.
    Truncated {
        /// Items declared in the header.
        expected_items: u64,
        /// Complete items found.
        found_items: u64,
    },
    /// Bytes follow the last declared item.
    TrailingData {
        /// Items declared in the header.
        items: u64,
    },
    /// A labels file that is not one-dimensional.
    LabelDims {
        /// Its number of dimensions.
        ndim: u8,
    },
    /// Item dimensions with a zero, or whose product (the columns of a row)
    /// does not fit in 64 bits.
    Dimensions {
        /// The dimensions declared in the header.
        dims: Vec<u32>,
    },
}

impl fmt::Display for IdxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdxProblem::Magic { found } => write!(
                f,
                "expected an IDX file (magic 00 00 <type> <ndim>), found bytes {:02x} {:02x} {:02x} {:02x}",
                found[0], found[1], found[2], found[3]
            ),
            IdxProblem::TypeCode { code } => {
                write!(f, "expected an IDX type code 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e, found 0x{code:02x}")
            }
            IdxProblem::Truncated { expected_items, found_items } => {
                write!(
                    f,
                    "expected {expected_items} items as declared in the header, found {found_items} (file is truncated)"
                )
            }
            IdxProblem::TrailingData { items } => {
                write!(f, "expected the file to end after the {items} items declared in the header, found more bytes")
            }
            IdxProblem::LabelDims { ndim } => {
                write!(f, "expected a one-dimensional labels file (idx1), found {ndim} dimensions")
            }
            IdxProblem::Dimensions { dims } => {
                let shown: Vec<String> = dims.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "expected positive item dimensions whose product fits in 64 bits, found {}",
                    shown.join(" x ")
                )
            }
        }
    }
}
