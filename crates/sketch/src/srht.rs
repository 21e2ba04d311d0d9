//! Block subsampled randomised Hadamard transform (block SRHT) range sketch.

use crate::error::{Result, SketchError};
use crate::gaussian::{BlockState, BlockStateRef};
use crate::ids::{Ids, PendingBlock, check_columns, check_same};
use crate::range_sketch::RangeSketch;
use kapprox_core::{Domain, fwht, rng};
use ndarray::{Array2, ArrayView2};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

/// Columns transformed together at a flush (a `PANEL × B` scratch).
const PANEL: usize = 16;

/// Smallest SRHT block, in rows. Larger blocks mix more rows (closer to a
/// true SRHT); 1024 keeps the block buffer at `8·d` KiB and the transform
/// at `log₂ 1024 = 10` butterflies per value.
pub const SRHT_MIN_BLOCK_ROWS: usize = 1024;

/// The default SRHT block size for `n_components` sketch columns: the next
/// power of two `≥ max(n_components, SRHT_MIN_BLOCK_ROWS)`, because a
/// block can only sample `l ≤ B` of its rows.
pub fn default_srht_block_rows(n_components: usize) -> usize {
    n_components.max(SRHT_MIN_BLOCK_ROWS).next_power_of_two()
}

/// Block SRHT range sketch: accumulates `FᵀΘ (d, l)` where `Θ (n, l)` is
/// block-structured and never stored.
///
/// Rows are grouped into fixed blocks of `B` global row ids (block `b` =
/// ids `b·B .. (b+1)·B`, `B` a power of two `≥ l`). Within block `b`,
///
/// `Θ_b = √(B/l) · D_b (H_B/√B) P_bᵀ = D_b H_B P_bᵀ / √l`,
///
/// with `D_b` random signs per row, `H_B` the unnormalised Walsh–Hadamard
/// matrix and `P_b (l, B)` selecting `l` of the `B` rows without
/// replacement; signs and sample come from
/// `rng::stream(seed, Domain::SKETCH_SRHT, b)`. Since
/// `E[P_bᵀP_b] = (l/B)·I`, `E[Θ_bΘ_bᵀ] = I` on the block, and
/// `FᵀΘ = Σ_b F_bᵀΘ_b`. The contribution of a block is computed as the
/// sampled rows of `H_B D_b F_b` (one in-place transform of the block's
/// `d` columns with [`kapprox_core::fwht`]).
///
/// # Partial blocks
/// A block whose rows are split across chunks is buffered (missing rows are
/// zero) and transformed once it is complete, when a row of another block
/// arrives, on [`flush`](RangeSketch::flush) or on
/// [`finish`](RangeSketch::finish). A block split across accumulators
/// (shards, processes) contributes, by linearity, the transform of each
/// part with the other part's rows zero; [`merge`](RangeSketch::merge)
/// keeps the other accumulator's partial block pending, so merging the two
/// halves of a block before either is flushed transforms it once, exactly
/// as a single pass would. Either way the sum is the same to rounding.
///
/// Memory: `d·l + d·B + 16·B` doubles (sketch, one block buffer, a
/// transform panel), plus `B` signs and `B` sample indices.
///
/// Cost: `n·d·log₂B` additions (transform) plus `d·l` per block; cheaper
/// than the Gaussian sketch's `2·n·d·l` once `l > log₂B/2`.
#[derive(Clone, Debug)]
pub struct SrhtSketch {
    n_features: usize,
    n_components: usize,
    seed: u64,
    block_rows: usize,
    /// `(d, l)`, row-major.
    acc: Array2<f64>,
    /// Slot-indexed rows of the pending block, `(B, d)` row-major, so that
    /// inserting a row is one contiguous copy. Empty until the first update.
    rows: Array2<f64>,
    /// `PANEL` columns of the block, feature-major and signed
    /// (`panel[p·B + slot] = sign[slot]·F[slot, f₀ + p]`, zero for missing
    /// rows): each column is one contiguous, cache-resident length-`B` run
    /// for the transform.
    panel: Vec<f64>,
    /// `D_b` of the pending block.
    signs: Vec<f64>,
    /// First `l` entries: the rows sampled by `P_b`; rest: Fisher–Yates scratch.
    perm: Vec<u32>,
    pending: PendingBlock,
}

impl SrhtSketch {
    /// An empty sketch of `n_features` columns (`d`) into `n_components`
    /// columns (`l`), with the block size [`default_srht_block_rows`]`(l)`.
    ///
    /// # Errors
    /// [`SketchError::InvalidParameter`] if `n_components == 0`.
    pub fn new(n_features: usize, n_components: usize, seed: u64) -> Result<Self> {
        Self::with_block_rows(n_features, n_components, seed, default_srht_block_rows(n_components))
    }

    /// As [`SrhtSketch::new`] with an explicit block size `block_rows` (`B`).
    ///
    /// # Errors
    /// [`SketchError::InvalidParameter`] if `n_components == 0`, or if
    /// `block_rows` is not a power of two `≥ n_components`.
    pub fn with_block_rows(n_features: usize, n_components: usize, seed: u64, block_rows: usize) -> Result<Self> {
        if n_components == 0 {
            return Err(SketchError::InvalidParameter { name: "sketch columns", value: 0, expected: "at least 1" });
        }
        if !block_rows.is_power_of_two() || block_rows < n_components || block_rows > u32::MAX as usize {
            return Err(SketchError::InvalidParameter {
                name: "SRHT block size",
                value: block_rows,
                expected: "a power of two at least the number of sketch columns",
            });
        }
        Ok(SrhtSketch {
            n_features,
            n_components,
            seed,
            block_rows,
            acc: Array2::zeros((n_features, n_components)),
            rows: Array2::zeros((0, 0)),
            panel: Vec::new(),
            signs: Vec::new(),
            perm: Vec::new(),
            pending: PendingBlock::new(block_rows),
        })
    }

    /// The block size `B`.
    pub fn block_rows(&self) -> usize {
        self.block_rows
    }

    fn ensure_buffers(&mut self) {
        if self.signs.is_empty() {
            self.rows = Array2::zeros((self.block_rows, self.n_features));
            self.panel = vec![0.0; PANEL.min(self.n_features.max(1)) * self.block_rows];
            self.signs = vec![0.0; self.block_rows];
            self.perm = vec![0; self.block_rows];
        }
    }

    /// Starts block `b`: draws its signs and its sample of `l` rows.
    fn start_block(&mut self, b: u64) {
        self.pending.start(b);
        let bl = self.block_rows;
        let mut g = rng::stream(self.seed, Domain::SKETCH_SRHT, b);
        for chunk in self.signs.chunks_mut(64) {
            let bits = g.next_u64();
            for (t, s) in chunk.iter_mut().enumerate() {
                *s = if (bits >> t) & 1 == 1 { -1.0 } else { 1.0 };
            }
        }
        for (i, p) in self.perm.iter_mut().enumerate() {
            *p = i as u32;
        }
        // Partial Fisher–Yates: the first l entries are a uniform sample
        // without replacement, in a uniformly random order.
        for j in 0..self.n_components {
            let r = g.random_range(j..bl);
            self.perm.swap(j, r);
        }
    }

    #[inline]
    fn insert(&mut self, slot: usize, row: ndarray::ArrayView1<'_, f64>) {
        self.rows.row_mut(slot).assign(&row);
        self.pending.fill(slot);
    }

    fn update_impl(&mut self, rows: ArrayView2<'_, f64>, ids: Ids<'_>) -> Result<()> {
        check_columns(rows.ncols(), self.n_features)?;
        ids.check(rows.nrows(), true)?;
        self.pending.check_new(ids, rows.nrows())?;
        self.ensure_buffers();
        for r in 0..rows.nrows() {
            let (b, slot) = self.pending.locate(ids.get(r));
            if self.pending.block != Some(b) {
                self.flush_block();
                self.start_block(b);
            }
            self.insert(slot, rows.row(r));
            if self.pending.is_full() {
                self.flush_block();
            }
        }
        Ok(())
    }

    /// Transforms the pending block (if any) and adds its sampled rows.
    fn flush_block(&mut self) {
        if self.pending.count == 0 {
            self.pending.clear();
            return;
        }
        let (bl, l, d) = (self.block_rows, self.n_components, self.n_features);
        let scale = 1.0 / (l as f64).sqrt();
        let rows = self.rows.as_slice().expect("row buffer is standard layout");
        // Transform PANEL columns at a time: gathering a panel reads each
        // buffered row once in cache-line-sized pieces, and each column's
        // butterflies then run in L1.
        for f0 in (0..d).step_by(PANEL) {
            let p = PANEL.min(d - f0);
            let panel = &mut self.panel[..p * bl];
            for slot in 0..bl {
                if self.pending.filled[slot] {
                    let s = self.signs[slot];
                    let src = &rows[slot * d + f0..slot * d + f0 + p];
                    for (k, &v) in src.iter().enumerate() {
                        panel[k * bl + slot] = s * v;
                    }
                } else {
                    for k in 0..p {
                        panel[k * bl + slot] = 0.0;
                    }
                }
            }
            fwht::fwht_rows(panel, bl);
            for k in 0..p {
                let col = &panel[k * bl..(k + 1) * bl];
                let mut acc_row = self.acc.row_mut(f0 + k);
                for (a, &r) in acc_row.iter_mut().zip(&self.perm[..l]) {
                    *a += scale * col[r as usize];
                }
            }
        }
        self.pending.clear();
    }

    fn state(&self) -> BlockStateRef<'_> {
        let ids: Vec<u64> = self.pending.ids().collect();
        let base = self.pending.block.unwrap_or(0) * self.block_rows as u64;
        let rows =
            Array2::from_shape_fn((ids.len(), self.n_features), |(r, f)| self.rows[[(ids[r] - base) as usize, f]]);
        BlockStateRef {
            n_features: self.n_features,
            n_components: self.n_components,
            seed: self.seed,
            block_rows: self.block_rows,
            acc: self.acc.view(),
            pending_ids: ids,
            pending_rows: rows,
        }
    }
}

impl RangeSketch for SrhtSketch {
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
        check_same("block size", self.block_rows as u64, other.block_rows as u64)?;
        self.pending.check_disjoint(&other.pending)?;
        self.acc += &other.acc;
        if other.pending.count > 0 {
            // Keep other's partial block pending (see "Partial blocks").
            self.ensure_buffers();
            if self.pending.block != other.pending.block {
                self.flush_block();
                self.start_block(other.pending.block.expect("pending rows without a block"));
            }
            for slot in 0..self.block_rows {
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

impl Serialize for SrhtSketch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.state().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SrhtSketch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let st = BlockState::deserialize(deserializer)?;
        SrhtSketch::try_from(st).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<BlockState> for SrhtSketch {
    type Error = SketchError;

    fn try_from(st: BlockState) -> Result<Self> {
        st.validate()?;
        let mut sk = SrhtSketch::with_block_rows(st.n_features, st.n_components, st.seed, st.block_rows)?;
        sk.acc.assign(&st.acc);
        sk.update_ids(st.pending_rows.view(), &st.pending_ids)?;
        Ok(sk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{gaussian_rows, rel_diff};
    use ndarray::s;

    /// With `F = I_n`, `FᵀΘ = Θ` itself.
    fn theta(n: usize, l: usize, block: usize, seed: u64) -> Array2<f64> {
        let mut sk = SrhtSketch::with_block_rows(n, l, seed, block).unwrap();
        sk.update(Array2::<f64>::eye(n).view(), 0).unwrap();
        sk.finish()
    }

    #[test]
    fn each_block_is_signed_hadamard_columns_scaled_by_one_over_sqrt_l() {
        // Θ_b = D H Pᵀ/√l: entries ±1/√l, and Θ_bᵀΘ_b = P H D D H Pᵀ / l
        // = (B/l) I_l because H² = B·I and P samples distinct rows.
        let (b, l) = (16, 5);
        let t = theta(3 * b, l, b, 9);
        assert!(t.iter().all(|v| (v.abs() - 1.0 / (l as f64).sqrt()).abs() < 1e-15));
        for blk in 0..3 {
            let tb = t.slice(s![blk * b..(blk + 1) * b, ..]);
            let g = tb.t().dot(&tb);
            let want = Array2::<f64>::eye(l) * (b as f64 / l as f64);
            assert!((&g - &want).iter().all(|v| v.abs() < 1e-13), "block {blk}:\n{g}");
        }
        // Different blocks draw different signs/samples.
        assert_ne!(t.slice(s![0..b, ..]), t.slice(s![b..2 * b, ..]));
    }

    #[test]
    fn with_l_equal_b_a_full_block_preserves_the_gram_exactly() {
        // l = B: P is a permutation, so Θ_bΘ_bᵀ = D H H D / B = I and
        // (FᵀΘ)(FᵀΘ)ᵀ = FᵀF up to rounding.
        let (b, d) = (64, 7);
        let f = gaussian_rows(b, d, 3);
        let mut sk = SrhtSketch::with_block_rows(d, b, 1, b).unwrap();
        sk.update(f.view(), 5 * b as u64).unwrap();
        let y = sk.finish();
        let got = y.dot(&y.t());
        let want = f.t().dot(&f);
        assert!(rel_diff(&got, &want) < 1e-13, "{}", rel_diff(&got, &want));
    }

    #[test]
    fn block_size_rules() {
        assert_eq!(default_srht_block_rows(10), 1024);
        assert_eq!(default_srht_block_rows(1025), 2048);
        assert_eq!(SrhtSketch::new(3, 3000, 0).unwrap().block_rows(), 4096);
        assert!(SrhtSketch::with_block_rows(3, 4, 0, 12).is_err());
        assert!(SrhtSketch::with_block_rows(3, 32, 0, 16).is_err());
    }
}
