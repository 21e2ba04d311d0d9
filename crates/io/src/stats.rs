//! Mergeable per-column statistics: count, mean, variance, min and max.

use crate::error::{IoError, Result};
use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Streaming statistics of the columns of a row stream.
///
/// Each [`update`](ColumnStats::update) computes the mean and sum of squared
/// deviations `M2` of its block in two passes and combines them with the
/// running values by Chan et al.'s pairwise rule, so the result is accurate
/// even when the mean is large relative to the spread, and
/// [`merge`](ColumnStats::merge) is the same operation: statistics of
/// shards, threads or processes add up to those of one pass (equal to
/// rounding).
///
/// [`count`](ColumnStats::count) counts rows. A non-finite value (NaN,
/// ±Inf, or a null read as NaN) is a missing value: it is counted per
/// column ([`missing`](ColumnStats::missing)) and left out of that column's
/// mean, variance, minimum and maximum, which is what mean imputation
/// needs. Without missing values the arithmetic is exactly that of
/// statistics over complete rows.
///
/// Memory: six numbers per column. Serialises with serde (min/max of an
/// empty column are written as `null`; the missing counts only when some
/// value was missing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnStats {
    names: Vec<String>,
    count: u64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    #[serde(with = "inf_as_null::positive")]
    min: Vec<f64>,
    #[serde(with = "inf_as_null::negative")]
    max: Vec<f64>,
    /// Missing values per column; empty while none was seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    missing: Vec<u64>,
}

impl ColumnStats {
    /// Empty statistics for the named columns.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let d = names.len();
        ColumnStats {
            names,
            count: 0,
            mean: vec![0.0; d],
            m2: vec![0.0; d],
            min: vec![f64::INFINITY; d],
            max: vec![f64::NEG_INFINITY; d],
            missing: Vec::new(),
        }
    }

    /// Statistics from their parts (all of length `names.len()`).
    pub(crate) fn from_parts(
        names: Vec<String>,
        count: u64,
        mean: Vec<f64>,
        m2: Vec<f64>,
        min: Vec<f64>,
        max: Vec<f64>,
    ) -> Self {
        ColumnStats { names, count, mean, m2, min, max, missing: Vec::new() }
    }

    /// The columns of `self` followed by those of `other`, e.g. numeric
    /// columns and a [`Vocabulary`](crate::Vocabulary)'s indicator columns.
    ///
    /// # Panics
    /// Both must count the same rows.
    #[track_caller]
    pub fn concat(&self, other: &ColumnStats) -> ColumnStats {
        assert_eq!(self.count, other.count, "ColumnStats::concat: {} rows and {} rows", self.count, other.count);
        let mut out = self.clone();
        out.names.extend(other.names.iter().cloned());
        out.mean.extend(&other.mean);
        out.m2.extend(&other.m2);
        out.min.extend(&other.min);
        out.max.extend(&other.max);
        if !self.missing.is_empty() || !other.missing.is_empty() {
            out.missing = self.missing_or_zero().into_iter().chain(other.missing_or_zero()).collect();
        }
        out
    }

    fn missing_or_zero(&self) -> Vec<u64> {
        if self.missing.is_empty() { vec![0; self.n_columns()] } else { self.missing.clone() }
    }

    /// Empty statistics for `n_columns` columns named `c0, c1, ...`.
    pub fn unnamed(n_columns: usize) -> Self {
        ColumnStats::new((0..n_columns).map(|j| format!("c{j}")))
    }

    /// Column names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of columns.
    pub fn n_columns(&self) -> usize {
        self.names.len()
    }

    /// Number of rows seen.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Missing (non-finite) values per column.
    pub fn missing(&self) -> Vec<u64> {
        self.missing_or_zero()
    }

    /// Values present per column: [`count`](Self::count) minus
    /// [`missing`](Self::missing).
    pub fn present(&self) -> Vec<u64> {
        self.missing_or_zero().into_iter().map(|m| self.count - m).collect()
    }

    /// Column means over present values (0 when there is none).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Column sums of squared deviations from the mean, `M2 = n·variance`.
    pub fn m2(&self) -> &[f64] {
        &self.m2
    }

    /// Population variances `M2 / n` over present values (scikit-learn's
    /// `StandardScaler` convention, `ddof = 0`); 0 when there is none.
    pub fn variance(&self) -> Vec<f64> {
        self.m2.iter().zip(self.present()).map(|(&m2, n)| if n == 0 { 0.0 } else { m2 / n as f64 }).collect()
    }

    /// Population standard deviations, `sqrt(variance)`.
    pub fn std(&self) -> Vec<f64> {
        self.variance().into_iter().map(f64::sqrt).collect()
    }

    /// Column minima (`+inf` when no row was seen).
    pub fn min(&self) -> &[f64] {
        &self.min
    }

    /// Column maxima (`-inf` when no row was seen).
    pub fn max(&self) -> &[f64] {
        &self.max
    }

    /// Adds a block of rows, `x` of shape `(n_rows, n_columns)` in any layout.
    ///
    /// Cost: two passes over `x`, `O(n_rows · n_columns)`, plus a few
    /// allocations of `n_columns` numbers.
    ///
    /// # Panics
    /// `x.ncols() == self.n_columns()`.
    #[track_caller]
    pub fn update(&mut self, x: ArrayView2<'_, f64>) {
        let d = self.n_columns();
        assert_eq!(x.ncols(), d, "ColumnStats::update: x has {} columns, expected {d}", x.ncols());
        let n = x.nrows();
        if n == 0 {
            return;
        }
        let mut sum = vec![0.0; d];
        let mut lo = vec![f64::INFINITY; d];
        let mut hi = vec![f64::NEG_INFINITY; d];
        let mut missing = vec![0u64; d];
        for row in x.rows() {
            for (j, &v) in row.iter().enumerate() {
                if !v.is_finite() {
                    missing[j] += 1;
                    continue;
                }
                sum[j] += v;
                lo[j] = lo[j].min(v);
                hi[j] = hi[j].max(v);
            }
        }
        let mean_b: Vec<f64> = sum
            .iter()
            .zip(&missing)
            .map(|(s, &m)| if m as usize == n { 0.0 } else { s * (1.0 / (n as u64 - m) as f64) })
            .collect();
        // Second pass: deviations from the block mean, which is what keeps M2
        // accurate where the textbook Σx² − n·x̄² cancels catastrophically.
        let mut m2_b = sum;
        m2_b.fill(0.0);
        for row in x.rows() {
            for (j, &v) in row.iter().enumerate() {
                if v.is_finite() {
                    let dv = v - mean_b[j];
                    m2_b[j] += dv * dv;
                }
            }
        }
        self.combine(n as u64, &missing, &mean_b, &m2_b, &lo, &hi);
    }

    /// Adds `other`'s rows to `self`.
    ///
    /// # Panics
    /// Both must have the same number of columns.
    #[track_caller]
    pub fn merge(&mut self, other: &ColumnStats) {
        assert_eq!(
            self.n_columns(),
            other.n_columns(),
            "ColumnStats::merge: {} columns and {} columns",
            self.n_columns(),
            other.n_columns()
        );
        if other.count == 0 {
            return;
        }
        self.combine(other.count, &other.missing_or_zero(), &other.mean, &other.m2, &other.min, &other.max);
    }

    /// Chan et al.'s pairwise update, per column over its present values.
    /// Without missing values `na`/`nb` are the row counts, as in the
    /// row-wise rule.
    fn combine(&mut self, nb: u64, missing_b: &[u64], mean_b: &[f64], m2_b: &[f64], lo: &[f64], hi: &[f64]) {
        let d = self.n_columns();
        if self.missing.is_empty() && missing_b.iter().any(|&m| m > 0) {
            self.missing = vec![0; d];
        }
        for j in 0..d {
            let na = (self.count - self.missing.get(j).copied().unwrap_or(0)) as f64;
            let nbf = (nb - missing_b[j]) as f64;
            if let Some(m) = self.missing.get_mut(j) {
                *m += missing_b[j];
            }
            if nbf == 0.0 {
                continue;
            }
            let n = na + nbf;
            let delta = mean_b[j] - self.mean[j];
            self.mean[j] += delta * (nbf / n);
            self.m2[j] += m2_b[j] + delta * delta * (na * nbf / n);
            self.min[j] = self.min[j].min(lo[j]);
            self.max[j] = self.max[j].max(hi[j]);
        }
        self.count += nb;
    }

    /// Whether every statistic is a finite number: true when no row was seen
    /// (the bounds of empty columns are infinite by convention), false when
    /// a NaN was counted or a sum of squares overflowed.
    pub fn is_finite(&self) -> bool {
        self.count == 0 || [&self.mean, &self.m2, &self.min, &self.max].iter().all(|v| v.iter().all(|x| x.is_finite()))
    }

    /// The statistics of the named columns, in the order given.
    ///
    /// # Errors
    /// [`IoError::ColumnNotFound`] (with `path` as the location) when a name
    /// is not one of [`names`](ColumnStats::names).
    pub fn select<S: AsRef<str>>(&self, columns: &[S], path: &Path) -> Result<ColumnStats> {
        let mut out = ColumnStats::new(columns.iter().map(|c| c.as_ref().to_string()));
        out.count = self.count;
        let missing = self.missing_or_zero();
        let mut out_missing = vec![0; columns.len()];
        for (k, c) in columns.iter().enumerate() {
            let c = c.as_ref();
            let j = self.names.iter().position(|n| n == c).ok_or_else(|| IoError::ColumnNotFound {
                path: path.to_path_buf(),
                column: c.to_string(),
                available: self.names.clone(),
            })?;
            out.mean[k] = self.mean[j];
            out.m2[k] = self.m2[j];
            out.min[k] = self.min[j];
            out.max[k] = self.max[j];
            out_missing[k] = missing[j];
        }
        if !self.missing.is_empty() {
            out.missing = out_missing;
        }
        Ok(out)
    }
}

/// serde helpers that write infinite bounds (of empty columns) as `null`,
/// since JSON has no infinity, and read `null` back as the bound's infinity.
mod inf_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    fn ser<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let opt: Vec<Option<f64>> = v.iter().map(|&x| x.is_finite().then_some(x)).collect();
        opt.serialize(s)
    }

    fn de<'de, D: Deserializer<'de>>(d: D, fill: f64) -> Result<Vec<f64>, D::Error> {
        let opt = Vec::<Option<f64>>::deserialize(d)?;
        Ok(opt.into_iter().map(|x| x.unwrap_or(fill)).collect())
    }

    pub(super) mod positive {
        use super::*;
        pub(crate) fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
            ser(v, s)
        }
        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
            de(d, f64::INFINITY)
        }
    }

    pub(super) mod negative {
        use super::*;
        pub(crate) fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
            ser(v, s)
        }
        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
            de(d, f64::NEG_INFINITY)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapprox_core::rng::{Domain, unit};
    use ndarray::{Array2, s};

    fn data(n: usize, d: usize, seed: u64) -> Array2<f64> {
        // Large offset and small spread: the case where a naive Σx² formula
        // loses all digits.
        Array2::from_shape_fn((n, d), |(i, j)| {
            1e6 * (j as f64 + 1.0) + unit(seed, Domain(0xabc), (i * d + j) as u64) * (j as f64 + 0.5)
        })
    }

    fn naive(x: &Array2<f64>) -> (Vec<f64>, Vec<f64>) {
        let n = x.nrows() as f64;
        let mean: Vec<f64> = x.columns().into_iter().map(|c| c.sum() / n).collect();
        let var = x
            .columns()
            .into_iter()
            .zip(&mean)
            .map(|(c, m)| c.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n)
            .collect();
        (mean, var)
    }

    #[test]
    fn one_pass_matches_two_pass_reference() {
        let x = data(3000, 4, 1);
        let mut st = ColumnStats::unnamed(4);
        st.update(x.view());
        let (mean, var) = naive(&x);
        for j in 0..4 {
            assert!((st.mean()[j] - mean[j]).abs() < 1e-9 * mean[j].abs());
            assert!((st.variance()[j] - var[j]).abs() < 1e-9 * var[j], "{} vs {}", st.variance()[j], var[j]);
            let col = x.column(j);
            assert_eq!(st.min()[j], col.fold(f64::INFINITY, |a, &b| a.min(b)));
            assert_eq!(st.max()[j], col.fold(f64::NEG_INFINITY, |a, &b| a.max(b)));
        }
        assert_eq!(st.count(), 3000);
    }

    #[test]
    fn merge_of_random_splits_equals_one_pass() {
        let x = data(2000, 3, 7);
        let mut whole = ColumnStats::unnamed(3);
        whole.update(x.view());
        for trial in 0..20u64 {
            // Random cut points, including empty pieces, merged in random
            // tree shapes (left fold vs pairwise).
            let mut cuts: Vec<usize> = (0..5).map(|k| (unit(trial, Domain(0xdef), k) * 2001.0) as usize).collect();
            cuts.push(0);
            cuts.push(2000);
            cuts.sort();
            let parts: Vec<ColumnStats> = cuts
                .windows(2)
                .map(|w| {
                    let mut p = ColumnStats::unnamed(3);
                    p.update(x.slice(s![w[0]..w[1], ..]));
                    p
                })
                .collect();
            let mut merged = ColumnStats::unnamed(3);
            if trial % 2 == 0 {
                for p in &parts {
                    merged.merge(p);
                }
            } else {
                let mut level = parts;
                while level.len() > 1 {
                    level = level
                        .chunks(2)
                        .map(|c| {
                            let mut a = c[0].clone();
                            if let Some(b) = c.get(1) {
                                a.merge(b);
                            }
                            a
                        })
                        .collect();
                }
                merged.merge(&level[0]);
            }
            assert_eq!(merged.count(), whole.count());
            assert_eq!(merged.min(), whole.min());
            assert_eq!(merged.max(), whole.max());
            for j in 0..3 {
                assert!((merged.mean()[j] - whole.mean()[j]).abs() <= 1e-12 * whole.mean()[j].abs());
                assert!((merged.m2()[j] - whole.m2()[j]).abs() <= 1e-9 * whole.m2()[j], "trial {trial}");
            }
        }
    }

    #[test]
    fn missing_values_are_left_out_per_column_and_merge() {
        let nan = f64::NAN;
        let x = ndarray::array![[1.0, nan], [3.0, 4.0], [nan, 8.0], [5.0, f64::INFINITY]];
        let mut st = ColumnStats::new(["a", "b"]);
        st.update(x.view());
        assert_eq!(st.count(), 4);
        assert_eq!(st.missing(), [1, 2]);
        assert_eq!(st.mean(), [3.0, 6.0]);
        assert_eq!(st.variance(), [8.0 / 3.0, 4.0]);
        assert_eq!((st.min(), st.max()), (&[1.0, 4.0][..], &[5.0, 8.0][..]));
        // Row by row, merged, equals the block.
        let mut merged = ColumnStats::new(["a", "b"]);
        for i in 0..4 {
            let mut one = ColumnStats::new(["a", "b"]);
            one.update(x.slice(s![i..i + 1, ..]));
            merged.merge(&one);
        }
        assert_eq!(merged.missing(), st.missing());
        for j in 0..2 {
            assert!((merged.mean()[j] - st.mean()[j]).abs() < 1e-15);
            assert!((merged.m2()[j] - st.m2()[j]).abs() < 1e-12);
        }
        let json = serde_json::to_string(&st).unwrap();
        assert_eq!(serde_json::from_str::<ColumnStats>(&json).unwrap(), st);
        // Complete data serialises as before (no "missing" key).
        let mut full = ColumnStats::new(["a"]);
        full.update(ndarray::array![[1.0]].view());
        assert!(!serde_json::to_string(&full).unwrap().contains("missing"));
    }

    #[test]
    fn serde_round_trip_including_empty_columns() {
        let mut st = ColumnStats::new(["a", "b"]);
        let empty = st.clone();
        st.update(ndarray::array![[1.0, -2.0], [3.0, 5.0]].view());
        for s in [st, empty] {
            let json = serde_json::to_string(&s).unwrap();
            let back: ColumnStats = serde_json::from_str(&json).unwrap();
            assert_eq!(back, s, "{json}");
        }
    }

    #[test]
    fn huge_or_nan_values_make_statistics_non_finite() {
        let mut st = ColumnStats::unnamed(1);
        assert!(st.is_finite());
        st.update(ndarray::array![[1.0], [2.0]].view());
        assert!(st.is_finite());
        let mut huge = ColumnStats::unnamed(1);
        huge.update(ndarray::array![[1e300], [-1e300]].view());
        assert!(!huge.is_finite(), "m2 = {:?}", huge.m2());
        let mut nan = ColumnStats::unnamed(1);
        nan.update(ndarray::array![[f64::NAN]].view());
        assert!(!nan.is_finite());
    }

    #[test]
    fn select_reorders_and_names_missing_columns() {
        let mut st = ColumnStats::new(["a", "b", "c"]);
        st.update(ndarray::array![[1.0, 2.0, 3.0]].view());
        let sel = st.select(&["c", "a"], Path::new("d")).unwrap();
        assert_eq!(sel.names(), ["c", "a"]);
        assert_eq!(sel.mean(), [3.0, 1.0]);
        let err = st.select(&["zz"], Path::new("d")).unwrap_err().to_string();
        assert!(err.contains(r#"column "zz" not found"#) && err.contains(r#""a", "b", "c""#), "{err}");
    }
}
