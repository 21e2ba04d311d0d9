//! CountSketch range sketch.

use crate::error::{Result, SketchError};
use crate::ids::{Ids, check_columns, check_same};
use crate::range_sketch::RangeSketch;
use kapprox_core::{Domain, rng};
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// CountSketch range sketch: accumulates `FᵀΘ (d, l)` where row `i` of `Θ`
/// has a single non-zero, the sign `s(i) = ±1` in column `h(i) ∈ [0, l)`.
///
/// `h` and `s` come from one `rng::hash64(seed, Domain::SKETCH_COUNT, i)`:
/// the bucket from its high bits (multiply-shift, unbiased to `2⁻⁶⁴·l`),
/// the sign from its lowest bit. `E[ΘΘᵀ] = I` with no scaling: the
/// diagonal is `s(i)² = 1`, and off-diagonal terms are `±1` or `0` with mean
/// zero. Column `h(i)` of the sketch receives `s(i)·f_i`.
///
/// There is no buffering: rows are added one by one in stream order, so the
/// result is bitwise the same for any chunking of the same ordered rows.
///
/// Memory: `d·l` doubles.
///
/// Cost: `n·d` additions (one per entry of `F`), independent of `l`.
#[derive(Clone, Debug)]
pub struct CountSketch {
    n_features: usize,
    n_components: usize,
    seed: u64,
    /// `(FᵀΘ)ᵀ`, `(l, d)` row-major, so that a bucket is one contiguous row.
    acc_t: Array2<f64>,
}

impl CountSketch {
    /// An empty sketch of `n_features` columns (`d`) into `n_components`
    /// buckets (`l`).
    ///
    /// # Errors
    /// [`SketchError::InvalidParameter`] if `n_components == 0`.
    pub fn new(n_features: usize, n_components: usize, seed: u64) -> Result<Self> {
        if n_components == 0 {
            return Err(SketchError::InvalidParameter { name: "sketch columns", value: 0, expected: "at least 1" });
        }
        Ok(CountSketch { n_features, n_components, seed, acc_t: Array2::zeros((n_components, n_features)) })
    }

    /// The bucket `h(i)` and sign `s(i)` of global row id `i`.
    #[inline]
    pub fn bucket_and_sign(&self, row_id: u64) -> (usize, f64) {
        let h = rng::hash64(self.seed, Domain::SKETCH_COUNT, row_id);
        let bucket = ((h as u128 * self.n_components as u128) >> 64) as usize;
        (bucket, if h & 1 == 1 { -1.0 } else { 1.0 })
    }

    fn update_impl(&mut self, rows: ArrayView2<'_, f64>, ids: Ids<'_>) -> Result<()> {
        check_columns(rows.ncols(), self.n_features)?;
        ids.check(rows.nrows(), true)?;
        for r in 0..rows.nrows() {
            let (bucket, sign) = self.bucket_and_sign(ids.get(r));
            self.acc_t.row_mut(bucket).scaled_add(sign, &rows.row(r));
        }
        Ok(())
    }
}

impl RangeSketch for CountSketch {
    fn n_features(&self) -> usize {
        self.n_features
    }

    fn n_components(&self) -> usize {
        self.n_components
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn update(&mut self, rows: ArrayView2<'_, f64>, first_row_id: u64) -> Result<()> {
        self.update_impl(rows, Ids::Range(first_row_id))
    }

    fn update_ids(&mut self, rows: ArrayView2<'_, f64>, ids: &[u64]) -> Result<()> {
        self.update_impl(rows, Ids::List(ids))
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        check_same("feature count", self.n_features as u64, other.n_features as u64)?;
        check_same("sketch columns", self.n_components as u64, other.n_components as u64)?;
        check_same("seed", self.seed, other.seed)?;
        self.acc_t += &other.acc_t;
        Ok(())
    }

    fn flush(&mut self) {}

    fn finish(self) -> Array2<f64> {
        self.acc_t.reversed_axes()
    }
}

#[derive(Serialize)]
struct CountStateRef<'a> {
    n_features: usize,
    n_components: usize,
    seed: u64,
    /// `FᵀΘ`, `(d, l)`.
    acc: ArrayView2<'a, f64>,
}

#[derive(Deserialize)]
struct CountState {
    n_features: usize,
    n_components: usize,
    seed: u64,
    acc: Array2<f64>,
}

impl Serialize for CountSketch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        CountStateRef {
            n_features: self.n_features,
            n_components: self.n_components,
            seed: self.seed,
            acc: self.acc_t.t(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CountSketch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let st = CountState::deserialize(deserializer)?;
        let mut sk = CountSketch::new(st.n_features, st.n_components, st.seed).map_err(serde::de::Error::custom)?;
        if st.acc.dim() != (st.n_features, st.n_components) {
            let e = SketchError::Shape {
                name: "stored sketch",
                found: st.acc.dim(),
                expected: (st.n_features, st.n_components),
            };
            return Err(serde::de::Error::custom(e));
        }
        sk.acc_t.assign(&st.acc.t());
        Ok(sk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theta_has_one_signed_unit_per_row_with_uniform_buckets() {
        // F = I_n gives FᵀΘ = Θ.
        let (n, l) = (4000, 8);
        let mut sk = CountSketch::new(n, l, 21).unwrap();
        sk.update(Array2::<f64>::eye(n).view(), 1_000_000).unwrap();
        let reference = sk.clone();
        let theta = sk.finish();
        let mut per_bucket = [0usize; 8];
        let mut positive = 0usize;
        for (i, row) in theta.rows().into_iter().enumerate() {
            let nz: Vec<usize> = (0..l).filter(|&j| row[j] != 0.0).collect();
            assert_eq!(nz.len(), 1);
            let (bucket, sign) = reference.bucket_and_sign(1_000_000 + i as u64);
            assert_eq!((nz[0], row[nz[0]]), (bucket, sign));
            per_bucket[bucket] += 1;
            positive += usize::from(sign > 0.0);
        }
        // Binomial counts: sd √(n p (1−p)); 5 sigma.
        let p = 1.0 / l as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(per_bucket.iter().all(|&c| (c as f64 - n as f64 * p).abs() < 5.0 * sd), "{per_bucket:?}");
        let sd_sign = (n as f64 * 0.25).sqrt();
        assert!((positive as f64 - n as f64 / 2.0).abs() < 5.0 * sd_sign, "{positive}");
    }
}
