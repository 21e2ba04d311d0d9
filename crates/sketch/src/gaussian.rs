//! Gaussian range sketch `FᵀΘ` with `Θ` regenerated row by row.

use crate::error::{Result, SketchError};
use crate::ids::{Ids, PendingBlock, check_columns, check_same};
use crate::range_sketch::RangeSketch;
use kapprox_core::gram::{PackedRows, gemm_tn_add};
use kapprox_core::{Domain, Par, rng};
use ndarray::{Array2, ArrayView2, ArrayViewMut1, ShapeBuilder, s};
use rand::Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// Rows per GEMM block of the Gaussian sketch and of
/// [`ProductAccumulator`](crate::ProductAccumulator): the same constant as
/// [`kapprox_core::moments::BLOCK_ROWS`]. Fixed, because the summation order
/// (so the bitwise result) depends on it.
pub const BLOCK_ROWS: usize = kapprox_core::moments::BLOCK_ROWS;

/// Gaussian range sketch: accumulates `FᵀΘ (d, l)` for a Gaussian `Θ (n, l)`
/// that is never stored.
///
/// Row `i` of `Θ` is `θ_i = g_i/√l` with `g_i ~ N(0, I_l)` drawn from
/// `rng::stream(seed, Domain::SKETCH_GAUSSIAN, i)`, so `E[ΘΘᵀ] = I` (the
/// convention of all three sketches in this crate, see
/// [`RangeSketch`]).
///
/// Rows are buffered into blocks of [`BLOCK_ROWS`] global row ids
/// (block `b` = ids `b·B .. (b+1)·B`, aligned to ids, not to chunks); a block
/// is added with one product `acc += F_bᵀ Θ_b`
/// ([`kapprox_core::gram::gemm_tn_add`], whose bits do not depend on the
/// thread count) when it is complete, when a row of
/// another block arrives, or on [`flush`](RangeSketch::flush). The rows of
/// a partial block are packed in id order before the GEMM, so the result
/// depends only on which ids were seen, not on how they were chunked.
///
/// Memory: `d·l + BLOCK_ROWS·(d + l)` doubles.
///
/// Cost: `2·n·d·l` flops (GEMM) plus `n·l` normal draws.
#[derive(Clone, Debug)]
pub struct GaussianSketch {
    n_features: usize,
    n_components: usize,
    seed: u64,
    /// `(d, l)`, column-major (faer writes it fastest).
    acc: Array2<f64>,
    /// Slot-indexed rows of the pending block, `(BLOCK_ROWS, d)` row-major;
    /// empty until the first update.
    rows: Array2<f64>,
    /// Θ rows of the pending block, `(BLOCK_ROWS, l)`; scratch.
    theta: Array2<f64>,
    pending: PendingBlock,
    par: Par,
}

impl GaussianSketch {
    /// An empty sketch of `n_features` columns (`d`) into `n_components`
    /// columns (`l`).
    ///
    /// # Errors
    /// [`SketchError::InvalidParameter`] if `n_components == 0`.
    pub fn new(n_features: usize, n_components: usize, seed: u64) -> Result<Self> {
        if n_components == 0 {
            return Err(SketchError::InvalidParameter { name: "sketch columns", value: 0, expected: "at least 1" });
        }
        Ok(GaussianSketch {
            n_features,
            n_components,
            seed,
            acc: Array2::zeros((n_features, n_components).f()),
            rows: Array2::zeros((0, 0)),
            theta: Array2::zeros((0, 0)),
            pending: PendingBlock::new(BLOCK_ROWS),
            par: Par::rayon(0),
        })
    }

    /// Sets the parallelism of the block product. Default: every thread of
    /// the current rayon pool; the result is bitwise the same either way.
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    fn update_impl(&mut self, rows: ArrayView2<'_, f64>, ids: Ids<'_>) -> Result<()> {
        check_columns(rows.ncols(), self.n_features)?;
        ids.check(rows.nrows(), true)?;
        self.pending.check_new(ids, rows.nrows())?;
        if self.rows.nrows() != BLOCK_ROWS {
            self.rows = Array2::zeros((BLOCK_ROWS, self.n_features));
            self.theta = Array2::zeros((BLOCK_ROWS, self.n_components));
        }
        for r in 0..rows.nrows() {
            let (b, slot) = self.pending.locate(ids.get(r));
            if self.pending.block != Some(b) {
                self.flush_block();
                self.pending.start(b);
            }
            self.rows.row_mut(slot).assign(&rows.row(r));
            self.pending.fill(slot);
            if self.pending.is_full() {
                self.flush_block();
            }
        }
        Ok(())
    }

    /// Adds the pending block (if any) with one GEMM.
    fn flush_block(&mut self) {
        let c = self.pending.count;
        if c == 0 {
            self.pending.clear();
            return;
        }
        let d = self.n_features;
        let block = self.pending.block.expect("pending rows without a block");
        let base = block * BLOCK_ROWS as u64;
        let rows = self.rows.as_slice_mut().expect("row buffer is standard layout");
        let mut w = 0;
        for slot in 0..BLOCK_ROWS {
            if !self.pending.filled[slot] {
                continue;
            }
            if w != slot {
                rows.copy_within(slot * d..(slot + 1) * d, w * d);
            }
            theta_row_unscaled(self.seed, base + slot as u64, self.theta.row_mut(w));
            w += 1;
        }
        debug_assert_eq!(w, c);
        let alpha = 1.0 / (self.n_components as f64).sqrt();
        let f = PackedRows::from_rows(self.rows.slice(s![..c, ..]));
        let theta = PackedRows::from_rows(self.theta.slice(s![..c, ..]));
        gemm_tn_add(self.acc.view_mut(), &f, &theta, alpha, self.par);
        self.pending.clear();
    }

    fn state(&self) -> BlockStateRef<'_> {
        let ids: Vec<u64> = self.pending.ids().collect();
        let rows = if ids.is_empty() {
            Array2::zeros((0, self.n_features))
        } else {
            let base = self.pending.block.unwrap_or(0) * BLOCK_ROWS as u64;
            Array2::from_shape_fn((ids.len(), self.n_features), |(r, f)| self.rows[[(ids[r] - base) as usize, f]])
        };
        BlockStateRef {
            n_features: self.n_features,
            n_components: self.n_components,
            seed: self.seed,
            block_rows: BLOCK_ROWS,
            acc: self.acc.view(),
            pending_ids: ids,
            pending_rows: rows,
        }
    }
}

impl RangeSketch for GaussianSketch {
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
        self.pending.check_disjoint(&other.pending)?;
        self.acc += &other.acc;
        if other.pending.count > 0 {
            // Keep other's partial block pending: if another accumulator
            // holds the rest of that block, a later merge completes it and
            // the block is added with a single GEMM, as in one pass.
            if self.pending.block != other.pending.block {
                self.flush_block();
                self.pending.start(other.pending.block.expect("pending rows without a block"));
            }
            if self.rows.nrows() != BLOCK_ROWS {
                self.rows = Array2::zeros((BLOCK_ROWS, self.n_features));
                self.theta = Array2::zeros((BLOCK_ROWS, self.n_components));
            }
            for slot in 0..BLOCK_ROWS {
                if other.pending.filled[slot] {
                    self.rows.row_mut(slot).assign(&other.rows.row(slot));
                    self.pending.fill(slot);
                }
            }
            if self.pending.is_full() {
                self.flush_block();
            }
        }
        Ok(())
    }

    fn flush(&mut self) {
        self.flush_block();
    }

    fn finish(mut self) -> Array2<f64> {
        self.flush_block();
        self.acc
    }
}

/// Row `id` of `√l·Θ`: `l` standard normal draws from
/// `rng::stream(seed, Domain::SKETCH_GAUSSIAN, id)`.
pub(crate) fn theta_row_unscaled(seed: u64, id: u64, mut row: ArrayViewMut1<'_, f64>) {
    let mut g = rng::stream(seed, Domain::SKETCH_GAUSSIAN, id);
    for v in row.iter_mut() {
        *v = g.sample(StandardNormal);
    }
}

/// Serialised state shared by the block-buffered sketches: the accumulated
/// sketch plus the rows of the pending (partial) block, in id order.
#[derive(Serialize)]
pub(crate) struct BlockStateRef<'a> {
    pub(crate) n_features: usize,
    pub(crate) n_components: usize,
    pub(crate) seed: u64,
    pub(crate) block_rows: usize,
    pub(crate) acc: ArrayView2<'a, f64>,
    pub(crate) pending_ids: Vec<u64>,
    pub(crate) pending_rows: Array2<f64>,
}

/// Owned counterpart of [`BlockStateRef`] (same field names, so the same
/// serialised form).
#[derive(Deserialize)]
pub(crate) struct BlockState {
    pub(crate) n_features: usize,
    pub(crate) n_components: usize,
    pub(crate) seed: u64,
    pub(crate) block_rows: usize,
    pub(crate) acc: Array2<f64>,
    pub(crate) pending_ids: Vec<u64>,
    pub(crate) pending_rows: Array2<f64>,
}

impl BlockState {
    /// Checks shapes and that the pending ids lie in one block.
    pub(crate) fn validate(&self) -> Result<()> {
        let (d, l) = (self.n_features, self.n_components);
        if self.acc.dim() != (d, l) {
            return Err(SketchError::Shape { name: "stored sketch", found: self.acc.dim(), expected: (d, l) });
        }
        let k = self.pending_ids.len();
        if self.pending_rows.dim() != (k, d) {
            return Err(SketchError::Shape {
                name: "stored pending rows",
                found: self.pending_rows.dim(),
                expected: (k, d),
            });
        }
        if self.block_rows == 0 {
            return Err(SketchError::InvalidState { reason: "block size is zero" });
        }
        let b = self.block_rows as u64;
        if let Some(&first) = self.pending_ids.first() {
            if self.pending_ids.iter().any(|&i| i / b != first / b) {
                return Err(SketchError::InvalidState { reason: "pending rows span several blocks" });
            }
            if self.pending_ids.windows(2).any(|w| w[0] >= w[1]) {
                return Err(SketchError::InvalidState { reason: "pending row ids are not increasing" });
            }
        }
        Ok(())
    }
}

impl Serialize for GaussianSketch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.state().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for GaussianSketch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let st = BlockState::deserialize(deserializer)?;
        GaussianSketch::try_from(st).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<BlockState> for GaussianSketch {
    type Error = SketchError;

    fn try_from(st: BlockState) -> Result<Self> {
        st.validate()?;
        if st.block_rows != BLOCK_ROWS {
            return Err(SketchError::MergeMismatch {
                what: "block size",
                left: BLOCK_ROWS as u64,
                right: st.block_rows as u64,
            });
        }
        let mut sk = GaussianSketch::new(st.n_features, st.n_components, st.seed)?;
        sk.acc.assign(&st.acc);
        sk.update_ids(st.pending_rows.view(), &st.pending_ids)?;
        Ok(sk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{gaussian_rows, rel_diff};

    /// Θ written down from its definition, row by row.
    fn explicit_theta(ids: &[u64], l: usize, seed: u64) -> Array2<f64> {
        let mut t = Array2::zeros((ids.len(), l));
        for (r, &id) in ids.iter().enumerate() {
            let mut g = rng::stream(seed, Domain::SKETCH_GAUSSIAN, id);
            for j in 0..l {
                let v: f64 = g.sample(StandardNormal);
                t[[r, j]] = v / (l as f64).sqrt();
            }
        }
        t
    }

    #[test]
    fn equals_f_transpose_theta_from_the_definition() {
        let (n, d, l, seed) = (1300, 5, 9, 77);
        let f = gaussian_rows(n, d, 8);
        let ids: Vec<u64> = (0..n as u64).map(|i| 3 * i + 40).collect();
        let mut sk = GaussianSketch::new(d, l, seed).unwrap();
        sk.update_ids(f.view(), &ids).unwrap();
        let want = f.t().dot(&explicit_theta(&ids, l, seed));
        let got = sk.finish();
        assert!(rel_diff(&got, &want) < 1e-13, "{}", rel_diff(&got, &want));
    }

    #[test]
    fn theta_entries_are_n_0_1_over_l() {
        // F = I_n gives FᵀΘ = Θ. Mean of n·l entries has sd 1/√(l·n·l);
        // the variance estimate l·mean(θ²) has sd √(2/(n·l)). 5 sigma.
        let (n, l) = (2000, 10);
        let mut sk = GaussianSketch::new(n, l, 5).unwrap();
        sk.update(Array2::<f64>::eye(n).view(), 0).unwrap();
        let theta = sk.finish();
        let m = (n * l) as f64;
        let mean = theta.sum() / m;
        let var = theta.iter().map(|v| v * v).sum::<f64>() / m * l as f64;
        assert!(mean.abs() < 5.0 / ((l as f64) * m).sqrt(), "mean {mean}");
        assert!((var - 1.0).abs() < 5.0 * (2.0 / m).sqrt(), "l·var {var}");
    }
}
