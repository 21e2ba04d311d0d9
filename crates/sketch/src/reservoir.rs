//! A uniform sample of rows that does not depend on how the stream was cut.

use crate::error::{Result, SketchError};
use crate::ids::{Ids, check_columns, check_same};
use kapprox_core::{Domain, rng};
use ndarray::{Array2, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A mergeable reservoir sample: the `k` rows whose priority
/// `rng::hash64(seed, Domain::RESERVOIR, row_id)` is smallest.
///
/// Priorities are a pure function of the row id, so the sample is a
/// function of the *set* of rows seen: the same whatever the chunking, the
/// order, the sharding or the number of workers whose reservoirs are
/// merged. Each row is in the sample with probability `k/n`, and every
/// `k`-subset is equally likely (as for classical reservoir sampling).
/// Ties between priorities are broken by the id; a row id seen twice is
/// kept once.
///
/// Memory: `k·d` doubles for the rows plus `O(k)` for the index.
///
/// Cost: `O(1)` per rejected row (one hash, one comparison); `O(d + log k)`
/// per accepted row, and `O(k·log(n/k))` rows are accepted in expectation.
#[derive(Clone, Debug)]
pub struct Reservoir {
    capacity: usize,
    n_features: usize,
    seed: u64,
    /// `(priority, id)` -> slot in `rows`; the largest key is evicted first.
    index: BTreeMap<(u64, u64), usize>,
    /// `(k, d)`; slots `0..index.len()` are in use. Empty until first use.
    rows: Array2<f64>,
}

impl Reservoir {
    /// An empty reservoir of `capacity` (`k`) rows of `n_features` (`d`)
    /// columns.
    pub fn new(capacity: usize, n_features: usize, seed: u64) -> Self {
        Reservoir { capacity, n_features, seed, index: BTreeMap::new(), rows: Array2::zeros((0, n_features)) }
    }

    /// The sample size `k`.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Columns of the rows, `d`.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The seed of the priorities.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Rows currently held (`min(k, rows seen)`).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The priority of global row id `row_id` (smaller is kept).
    #[inline]
    pub fn priority(&self, row_id: u64) -> u64 {
        rng::hash64(self.seed, Domain::RESERVOIR, row_id)
    }

    /// Offers one row; keeps it if its key is among the `k` smallest.
    fn offer(&mut self, key: (u64, u64), row: ArrayView1<'_, f64>) {
        if self.capacity == 0 {
            return;
        }
        let full = self.index.len() == self.capacity;
        if full && key >= *self.index.last_key_value().expect("a full reservoir is not empty").0 {
            return;
        }
        if self.index.contains_key(&key) {
            return;
        }
        let slot = if full {
            self.index.pop_last().expect("a full reservoir is not empty").1
        } else {
            if self.rows.nrows() != self.capacity {
                self.rows = Array2::zeros((self.capacity, self.n_features));
            }
            self.index.len()
        };
        self.rows.row_mut(slot).assign(&row);
        self.index.insert(key, slot);
    }

    fn update_impl(&mut self, rows: ArrayView2<'_, f64>, ids: Ids<'_>) -> Result<()> {
        check_columns(rows.ncols(), self.n_features)?;
        ids.check(rows.nrows(), false)?;
        for r in 0..rows.nrows() {
            let id = ids.get(r);
            self.offer((self.priority(id), id), rows.row(r));
        }
        Ok(())
    }

    /// Offers rows `(n_rows, d)` with global ids `first_row_id ..
    /// first_row_id + n_rows`.
    ///
    /// # Errors
    /// Wrong column count or id overflow.
    pub fn update(&mut self, rows: ArrayView2<'_, f64>, first_row_id: u64) -> Result<()> {
        self.update_impl(rows, Ids::Range(first_row_id))
    }

    /// Offers rows `(n_rows, d)` with explicit global ids (any order).
    ///
    /// # Errors
    /// Wrong column count or `ids.len() != n_rows`.
    pub fn update_ids(&mut self, rows: ArrayView2<'_, f64>, ids: &[u64]) -> Result<()> {
        self.update_impl(rows, Ids::List(ids))
    }

    /// Keeps the `k` smallest keys of both reservoirs.
    ///
    /// # Errors
    /// [`SketchError::MergeMismatch`] if `k`, `d` or the seed differ.
    pub fn merge(&mut self, other: &Reservoir) -> Result<()> {
        check_same("reservoir size", self.capacity as u64, other.capacity as u64)?;
        check_same("feature count", self.n_features as u64, other.n_features as u64)?;
        check_same("seed", self.seed, other.seed)?;
        for (&key, &slot) in &other.index {
            self.offer(key, other.rows.row(slot));
        }
        Ok(())
    }

    /// The sampled row ids, ascending, and the rows in that order
    /// `(len, d)`.
    pub fn finish(self) -> (Vec<u64>, Array2<f64>) {
        let mut order: Vec<(u64, usize)> = self.index.iter().map(|(&(_, id), &slot)| (id, slot)).collect();
        order.sort_unstable();
        let ids = order.iter().map(|&(id, _)| id).collect();
        let mut rows = Array2::zeros((order.len(), self.n_features));
        for (r, &(_, slot)) in order.iter().enumerate() {
            rows.row_mut(r).assign(&self.rows.row(slot));
        }
        (ids, rows)
    }
}

#[derive(Serialize, Deserialize)]
struct ReservoirState {
    capacity: usize,
    n_features: usize,
    seed: u64,
    ids: Vec<u64>,
    rows: Array2<f64>,
}

impl Serialize for Reservoir {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let (ids, rows) = self.clone().finish();
        ReservoirState { capacity: self.capacity, n_features: self.n_features, seed: self.seed, ids, rows }
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Reservoir {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let st = ReservoirState::deserialize(deserializer)?;
        if st.ids.len() > st.capacity {
            let e = SketchError::InvalidState { reason: "more stored rows than the reservoir size" };
            return Err(serde::de::Error::custom(e));
        }
        if st.rows.dim() != (st.ids.len(), st.n_features) {
            let e = SketchError::Shape {
                name: "stored reservoir rows",
                found: st.rows.dim(),
                expected: (st.ids.len(), st.n_features),
            };
            return Err(serde::de::Error::custom(e));
        }
        let mut r = Reservoir::new(st.capacity, st.n_features, st.seed);
        r.update_ids(st.rows.view(), &st.ids).map_err(serde::de::Error::custom)?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{feed_chunks, gaussian_rows};
    use ndarray::s;

    fn reference(n: u64, k: usize, seed: u64) -> Vec<u64> {
        let r = Reservoir::new(k, 1, seed);
        let mut keys: Vec<(u64, u64)> = (0..n).map(|i| (r.priority(i), i)).collect();
        keys.sort_unstable();
        let mut ids: Vec<u64> = keys[..k.min(keys.len())].iter().map(|&(_, i)| i).collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn same_sample_for_any_chunking_sharding_and_merge_order() {
        let (n, d, k) = (5000, 3, 37);
        let f = gaussian_rows(n, d, 4);
        let want_ids = reference(n as u64, k, 9);
        let want_rows = f.select(ndarray::Axis(0), &want_ids.iter().map(|&i| i as usize).collect::<Vec<_>>());
        let mut results = Vec::new();
        for chunk in [1, 64, 1000, 5000] {
            let mut r = Reservoir::new(k, d, 9);
            feed_chunks(&f, 0, chunk, |rows, id| r.update(rows, id).unwrap());
            results.push(r.finish());
        }
        // Shards fed in reverse order, each with explicit ids, merged as a tree.
        let shards: Vec<Reservoir> = [0usize, 1200, 1201, 4000, 5000]
            .windows(2)
            .rev()
            .map(|w| {
                let mut r = Reservoir::new(k, d, 9);
                let ids: Vec<u64> = (w[0] as u64..w[1] as u64).rev().collect();
                let rows = f.slice(s![w[0]..w[1];-1, ..]);
                r.update_ids(rows, &ids).unwrap();
                r
            })
            .collect();
        let mut left = shards[0].clone();
        left.merge(&shards[1]).unwrap();
        let mut right: Reservoir = serde_json::from_str(&serde_json::to_string(&shards[2]).unwrap()).unwrap();
        right.merge(&shards[3]).unwrap();
        right.merge(&left).unwrap();
        // Overlapping data (a shard read twice) does not duplicate rows.
        right.merge(&shards[3]).unwrap();
        results.push(right.finish());
        for (ids, rows) in results {
            assert_eq!(ids, want_ids);
            assert_eq!(rows, want_rows);
        }
    }

    #[test]
    fn inclusion_is_uniform() {
        // Over 400 seeds each of n = 50 rows is kept with probability
        // k/n = 0.2: counts are Binomial(400, 0.2), sd 8; allow 5 sigma.
        let (n, k, trials) = (50u64, 10, 400);
        let mut hits = vec![0u32; n as usize];
        for seed in 0..trials {
            for id in reference(n, k, seed) {
                hits[id as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (h as f64 - 80.0).abs() < 40.0), "{hits:?}");
    }

    #[test]
    fn small_streams_and_errors() {
        let f = gaussian_rows(5, 2, 1);
        let mut r = Reservoir::new(10, 2, 0);
        r.update(f.view(), 0).unwrap();
        let (ids, rows) = r.clone().finish();
        assert_eq!(ids, vec![0, 1, 2, 3, 4]);
        assert_eq!(rows, f);
        assert_eq!(r.update(f.t(), 0), Err(SketchError::ColumnMismatch { expected: 2, found: 5 }));
        let other = Reservoir::new(11, 2, 0);
        assert!(matches!(r.merge(&other), Err(SketchError::MergeMismatch { what: "reservoir size", .. })));
        let mut z = Reservoir::new(0, 2, 0);
        z.update(f.view(), 0).unwrap();
        assert!(z.is_empty());
    }
}
