//! Categorical columns: mergeable value counts, and the vocabulary learned
//! from them that one-hot encodes a column.
//!
//! The statistics pass reads a categorical column with
//! [`ReadOptions::with_categorical`](crate::ReadOptions::with_categorical):
//! every chunk carries [`CategoryCounts`] of its rows. Counts merge by
//! addition, so the merged counts, and the [`Vocabulary`] chosen from them,
//! are the same whatever the shard layout, chunk size, thread or worker
//! count and merge order. The vocabulary is stored in the model; later
//! passes and `predict` read with
//! [`ReadOptions::with_vocabularies`](crate::ReadOptions::with_vocabularies),
//! which appends one indicator column per vocabulary value plus one
//! "other" column to `x`.

use crate::error::{IoError, Result};
use crate::reader::values::CatColumn;
use crate::stats::ColumnStats;
use arrow::array::{Array, ArrayRef};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Default number of values kept per categorical column (besides "other").
pub const DEFAULT_MAX_CATEGORIES: usize = 64;

/// Most distinct values one categorical column may have while counting: a
/// column with more is an identifier rather than a category, and its counts
/// would not fit a bounded memory.
pub const MAX_DISTINCT: usize = 1 << 20;

/// Name suffix of the "other" indicator column.
pub const OTHER_SLOT: &str = "<other>";

/// Counts of the values of one categorical column.
///
/// Memory: one entry per distinct value (at most [`MAX_DISTINCT`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryCounts {
    /// The column.
    pub column: String,
    /// Rows per value.
    pub counts: BTreeMap<String, u64>,
    /// Rows with a null (missing) value.
    pub missing: u64,
}

impl CategoryCounts {
    /// No rows of `column` yet.
    pub fn new(column: impl Into<String>) -> Self {
        CategoryCounts { column: column.into(), counts: BTreeMap::new(), missing: 0 }
    }

    /// Rows counted, missing included.
    pub fn rows(&self) -> u64 {
        self.counts.values().sum::<u64>() + self.missing
    }

    /// Adds `other`'s rows. Addition of counts: associative and commutative,
    /// so any merge order gives the same result.
    ///
    /// # Errors
    /// Other columns ([`IoError::InvalidOption`]); more than
    /// [`MAX_DISTINCT`] values ([`IoError::TooManyCategories`]).
    pub fn merge(&mut self, other: &CategoryCounts) -> Result<()> {
        if other.column != self.column {
            return Err(IoError::InvalidOption {
                option: "category counts",
                value: other.column.clone(),
                expected: "counts of the same column",
            });
        }
        for (v, &n) in &other.counts {
            *self.counts.entry(v.clone()).or_insert(0) += n;
        }
        self.missing += other.missing;
        if self.counts.len() > MAX_DISTINCT {
            return Err(IoError::TooManyCategories { column: self.column.clone(), limit: MAX_DISTINCT });
        }
        Ok(())
    }
}

/// The one-hot encoding of a categorical column: its most frequent values
/// and an "other" slot.
///
/// Values are ordered by decreasing training count, ties by value (byte
/// order), so the encoding is a function of the merged counts alone. A
/// value outside the vocabulary (rare in training, or never seen), and a
/// null under [`NanPolicy::Impute`](crate::NanPolicy::Impute), goes to
/// "other", and the reader counts it.
///
/// Serialises with serde; store it in the model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Vocabulary {
    /// The column.
    pub column: String,
    /// The values, one indicator column each, most frequent first.
    pub values: Vec<String>,
    /// Training rows per value.
    pub counts: Vec<u64>,
    /// Training rows in the "other" slot (rarer values and imputed nulls).
    pub other: u64,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl PartialEq for Vocabulary {
    fn eq(&self, other: &Self) -> bool {
        // The lookup table is derived from `values`.
        (&self.column, &self.values, &self.counts, self.other)
            == (&other.column, &other.values, &other.counts, other.other)
    }
}

impl Vocabulary {
    /// The `max_categories` most frequent values of `counts` (ties broken
    /// by value). Nulls count towards "other", since that is where
    /// imputation puts them.
    pub fn from_counts(counts: &CategoryCounts, max_categories: usize) -> Vocabulary {
        let mut by_freq: Vec<(&String, u64)> = counts.counts.iter().map(|(v, &n)| (v, n)).collect();
        by_freq.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let kept = by_freq.len().min(max_categories);
        let other = by_freq[kept..].iter().map(|(_, n)| n).sum::<u64>() + counts.missing;
        let mut v = Vocabulary {
            column: counts.column.clone(),
            values: by_freq[..kept].iter().map(|(v, _)| (*v).clone()).collect(),
            counts: by_freq[..kept].iter().map(|(_, n)| *n).collect(),
            other,
            index: HashMap::new(),
        };
        v.rebuild_index();
        v
    }

    /// Restores the lookup table after deserialisation (done by
    /// [`ReadOptions::with_vocabularies`](crate::ReadOptions::with_vocabularies)).
    pub fn rebuild_index(&mut self) {
        self.index = self.values.iter().enumerate().map(|(i, v)| (v.clone(), i as u32)).collect();
    }

    /// Indicator columns: one per value, plus "other".
    pub fn width(&self) -> usize {
        self.values.len() + 1
    }

    /// The slot of a value: its index, or [`width`](Self::width)` - 1` for
    /// "other".
    #[inline]
    pub fn slot(&self, value: &str) -> usize {
        self.index.get(value).map_or(self.values.len(), |&i| i as usize)
    }

    /// Names of the indicator columns: `column=value` and `column=<other>`.
    pub fn column_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.values.iter().map(|v| format!("{}={v}", self.column)).collect();
        names.push(format!("{}={OTHER_SLOT}", self.column));
        names
    }

    /// Training rows.
    pub fn rows(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.other
    }

    /// Exact column statistics of the indicator columns over the training
    /// rows (a fraction `p` of ones: mean `p`, `M2 = n·p·(1 − p)`), so a
    /// statistics pass need not read them.
    pub fn indicator_stats(&self) -> ColumnStats {
        let n = self.rows();
        let per_slot = self.counts.iter().copied().chain([self.other]);
        let (mut mean, mut m2, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for c in per_slot {
            let (c, nf) = (c as f64, n as f64);
            let p = if n == 0 { 0.0 } else { c / nf };
            mean.push(p);
            // Σ (x − p)² over c ones and n − c zeros.
            m2.push(c * (1.0 - p) * (1.0 - p) + (nf - c) * p * p);
            lo.push(if n == 0 {
                f64::INFINITY
            } else if c == nf {
                1.0
            } else {
                0.0
            });
            hi.push(if n == 0 {
                f64::NEG_INFINITY
            } else if c > 0.0 {
                1.0
            } else {
                0.0
            });
        }
        ColumnStats::from_parts(self.column_names(), n, mean, m2, lo, hi)
    }
}

/// Bits of a [`value_code`]: codes are integers below 2^52, so an `f64`
/// holds them exactly.
const CODE_BITS: u32 = 52;

/// A stable numeric code of a category value (FNV-1a, 52 bits), exact in an
/// `f64`: lets a row sample hold category values before the vocabulary is
/// known (see [`Vocabulary::slot_of_code`]). Two values share a code with
/// probability about 2^-52 per pair.
pub fn value_code(value: &str) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h >> (64 - CODE_BITS)) as f64
}

/// The [`value_code`] of every value of a column (read as text like the
/// reader's categorical columns); NaN for a null.
///
/// # Errors
/// A column that cannot be cast to text.
pub fn value_codes(a: &ArrayRef) -> std::result::Result<Vec<f64>, arrow::error::ArrowError> {
    let col = CatColumn::new(a)?;
    let mut out = vec![f64::NAN; a.len()];
    col.for_each(0, a.len(), |k, v| {
        if let Some(v) = v {
            out[k] = value_code(v);
        }
    });
    Ok(out)
}

impl Vocabulary {
    /// The indicator slot of a [`value_code`]: the value's index, or
    /// "other" for an unknown code or NaN (a null).
    pub fn slot_of_code(&self, code: f64) -> usize {
        self.values.iter().position(|v| value_code(v) == code).unwrap_or(self.values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn counts(column: &str, pairs: &[(&str, u64)], missing: u64) -> CategoryCounts {
        let mut c = CategoryCounts::new(column);
        for (v, n) in pairs {
            c.counts.insert(v.to_string(), *n);
        }
        c.missing = missing;
        c
    }

    #[test]
    fn most_frequent_first_ties_by_value_rest_is_other() {
        let c = counts("cat", &[("b", 5), ("a", 5), ("c", 9), ("d", 1)], 2);
        let v = Vocabulary::from_counts(&c, 3);
        assert_eq!(v.values, ["c", "a", "b"]);
        assert_eq!(v.counts, [9, 5, 5]);
        assert_eq!(v.other, 3);
        assert_eq!((v.slot("a"), v.slot("d"), v.slot("never")), (1, 3, 3));
        assert_eq!(v.column_names(), ["cat=c", "cat=a", "cat=b", "cat=<other>"]);
        let json = serde_json::to_string(&v).unwrap();
        let mut back: Vocabulary = serde_json::from_str(&json).unwrap();
        back.rebuild_index();
        assert_eq!(back, v);
        assert_eq!(back.slot("b"), 2);
    }

    #[test]
    fn merge_is_order_independent() {
        let parts =
            [counts("k", &[("x", 1), ("y", 2)], 0), counts("k", &[("y", 3), ("z", 1)], 1), counts("k", &[("x", 4)], 2)];
        let mut ab = CategoryCounts::new("k");
        for p in &parts {
            ab.merge(p).unwrap();
        }
        let mut ba = CategoryCounts::new("k");
        for p in parts.iter().rev() {
            ba.merge(p).unwrap();
        }
        assert_eq!(ab, ba);
        assert_eq!(ab.rows(), 14);
        assert!(ab.merge(&CategoryCounts::new("other")).is_err());
    }

    #[test]
    fn indicator_stats_equal_a_pass_over_the_indicators() {
        let v = Vocabulary::from_counts(&counts("k", &[("x", 3), ("y", 1), ("z", 2)], 1), 2);
        // Rows: x x x z z then y and the null in "other".
        let slots = [0, 0, 0, 1, 1, 2, 2];
        let mut x = Array2::zeros((slots.len(), 3));
        for (r, &s) in slots.iter().enumerate() {
            x[[r, s]] = 1.0;
        }
        let mut pass = ColumnStats::new(v.column_names());
        pass.update(x.view());
        let exact = v.indicator_stats();
        assert_eq!(exact.count(), pass.count());
        for j in 0..3 {
            assert!((exact.mean()[j] - pass.mean()[j]).abs() < 1e-15);
            assert!((exact.m2()[j] - pass.m2()[j]).abs() < 1e-12);
            assert_eq!((exact.min()[j], exact.max()[j]), (pass.min()[j], pass.max()[j]));
        }
    }

    /// Codes are exact in an f64, differ between values, and map back to
    /// the value's slot; a null (NaN) and unknown codes go to "other".
    #[test]
    fn value_codes_find_their_slots() {
        let v = Vocabulary::from_counts(&counts("c", &[("a", 5), ("b", 3), ("7", 1)], 2), 2);
        for (i, value) in v.values.iter().enumerate() {
            let code = value_code(value);
            assert!(code < (1u64 << CODE_BITS) as f64 && code.fract() == 0.0);
            assert_eq!(v.slot_of_code(code), i);
        }
        assert_ne!(value_code("a"), value_code("b"));
        assert_eq!(v.slot_of_code(value_code("7")), 2);
        assert_eq!(v.slot_of_code(f64::NAN), 2);
        let a: ArrayRef = std::sync::Arc::new(arrow::array::Int64Array::from(vec![Some(7), None]));
        let codes = value_codes(&a).unwrap();
        assert_eq!(codes[0], value_code("7"));
        assert!(codes[1].is_nan());
    }
}
