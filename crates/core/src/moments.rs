//! Ridge sufficient statistics, accumulated in a layout-independent order.
//!
//! For features `Z (n, l)` and targets `Y (n, k)` ridge regression with an
//! unpenalised intercept needs only `ZᵀZ`, `ZᵀY`, the column sums of `Z` and
//! `Y`, `YᵀY` and `n`. All of them are blocks of one Gram matrix of the
//! augmented rows `[z, 1, y]`, so [`Moments`] keeps that single symmetric
//! `(l + 1 + k)²` matrix (lower triangle) and updates it with one
//! triangular product ([`crate::gram::syrk_lower_add`]) per block of rows.
//!
//! # Determinism
//!
//! Rows are buffered into blocks of [`BLOCK_ROWS`] consecutive rows of the
//! stream, written straight into the kernel's packed layout, and each block
//! is added to the Gram as one sum per element: a fused multiply-add chain
//! over the block's rows in order, then one addition. The result is
//! therefore the same sequence of floating-point operations whatever the
//! caller's chunk sizes, the thread count or the instruction set: feeding
//! rows 1000 at a time or 65536 at a time, or from 1 or 7 shards read in
//! order, gives bitwise-equal statistics. Merging accumulators from
//! different workers reassociates the sum (equal to rounding, ~1e-16
//! relative), and is itself deterministic for a fixed merge order.
//!
//! # Single precision
//!
//! [`Moments::update_f32`] takes `f32` features: each block's products run
//! in single precision (twice the SIMD lanes) and the block's sums are
//! widened and added to the same `f64` Gram. An element's block sum then
//! carries a relative error of at most `γ₅₁₄ = 514·2⁻²⁴ ≈ 3e-5` of
//! `Σ |z_i z_j|` over the block (typically `√512·2⁻²⁴ ≈ 1.3e-6`), on top of
//! the `f64` sum over blocks; whether that is within the noise of a fit is
//! the caller's call. A block holds rows of one precision: switching
//! precision adds the partial block first.
#![allow(non_snake_case)]

mod project;

pub use project::AffineProjection;

use crate::dense::symmetrize_from_lower;
use crate::gram::{Element, PackedRows, syrk_lower_add};
use crate::sparse::SparseRowsView;
use faer::Par;
use ndarray::parallel::prelude::*;
use ndarray::{Array1, Array2, ArrayView2, Axis, s};

/// Rows per accumulation block. Fixed, because the summation order (and so
/// the bitwise result) depends on it. A block's products are summed in
/// registers before touching the Gram, so the Gram is read and written once
/// per 512 rows (the `ridge_accumulate` bench measures the rate), and a
/// 512-row panel of one kernel tile's columns fits in L1.
pub const BLOCK_ROWS: usize = 512;

/// Mergeable accumulator of `ZᵀZ`, `ZᵀY`, `Σz`, `Σy`, `YᵀY` and `n`.
///
/// Memory: `(l + 1 + k)² + BLOCK_ROWS · (l + 1 + k)` doubles (the block's
/// columns rounded up to whole panels), and `BLOCK_ROWS · (l + 1 + k)`
/// floats more once [`Moments::update_f32`] is used.
#[derive(Clone, Debug)]
pub struct Moments {
    n_features: usize,
    n_targets: usize,
    /// Lower triangle of the augmented Gram, column-major `(w, w)`.
    gram: Array2<f64>,
    /// Buffered augmented rows, packed for the Gram kernel; allocated on
    /// the first dense update.
    pending: Option<PackedRows>,
    /// The same for rows added in single precision.
    pending_f32: Option<PackedRows<f32>>,
    par: Par,
    sparse_entries_touched: u64,
}

impl Moments {
    /// An empty accumulator for `n_features` feature columns and
    /// `n_targets` target columns (0 is allowed: Gram only).
    pub fn new(n_features: usize, n_targets: usize) -> Self {
        let w = n_features + 1 + n_targets;
        Moments {
            n_features,
            n_targets,
            gram: crate::buffer::zeros((w, w), true),
            pending: None,
            pending_f32: None,
            par: crate::dense_par(),
            sparse_entries_touched: 0,
        }
    }

    /// Rebuilds an accumulator from the lower triangle of its augmented Gram
    /// (as returned by [`Moments::augmented_gram`]), e.g. after reading a
    /// partial-statistics file.
    ///
    /// # Panics
    /// `gram` must be square of side `n_features + 1 + n_targets`.
    #[track_caller]
    pub fn from_augmented_gram(n_features: usize, n_targets: usize, gram: ArrayView2<'_, f64>) -> Self {
        let w = n_features + 1 + n_targets;
        assert_eq!(gram.dim(), (w, w), "augmented Gram must be {w}x{w}");
        let mut m = Moments::new(n_features, n_targets);
        m.gram.assign(&gram);
        for j in 0..w {
            for i in 0..j {
                m.gram[[i, j]] = 0.0;
            }
        }
        m
    }

    /// [`Moments::from_augmented_gram`] that takes the array instead of
    /// copying it: for statistics assembled in a fresh `(w, w)` column-major
    /// array (e.g. with target columns added), where a copy of an `l = 4096`
    /// Gram costs a 134 MB allocation and pass. Entries above the diagonal
    /// are zeroed; an array in another layout is copied.
    ///
    /// # Panics
    /// `gram` must be square of side `n_features + 1 + n_targets`.
    #[track_caller]
    pub fn from_augmented_gram_owned(n_features: usize, n_targets: usize, mut gram: Array2<f64>) -> Self {
        let w = n_features + 1 + n_targets;
        assert_eq!(gram.dim(), (w, w), "augmented Gram must be {w}x{w}");
        if !gram.t().is_standard_layout() {
            return Moments::from_augmented_gram(n_features, n_targets, gram.view());
        }
        // On every core: at l = 8192 one core took 0.055 s to read the
        // 268 MB above the diagonal (a scratch harness, 2-core Xeon VM;
        // 0.03 s on both).
        gram.axis_iter_mut(Axis(1)).into_par_iter().enumerate().for_each(|(j, mut col)| {
            // Test before writing: an untouched page of a fresh zeroed
            // array is only read, not faulted in as a private copy.
            for v in col.slice_mut(s![..j]) {
                if *v != 0.0 {
                    *v = 0.0;
                }
            }
        });
        let mut m = Moments::new(0, 0);
        m.n_features = n_features;
        m.n_targets = n_targets;
        m.gram = gram;
        m
    }

    /// Sets the parallelism of the block GEMM. Default: all rayon threads.
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// Number of feature columns `l`.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of target columns `k`.
    pub fn n_targets(&self) -> usize {
        self.n_targets
    }

    fn width(&self) -> usize {
        self.n_features + 1 + self.n_targets
    }

    /// Adds dense rows: `z` has shape `(n_rows, l)`, `y` shape `(n_rows, k)`.
    ///
    /// Cost: `n_rows · (l + 1 + k)²` flops, in blocks of [`BLOCK_ROWS`].
    #[track_caller]
    pub fn update(&mut self, z: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) {
        self.update_rows(z, y, None);
    }

    /// Adds the rows `rows` (ascending indices into `z` and `y`) only: the
    /// same as [`Moments::update`] on the selected rows, without copying
    /// them first (a train/validation split of a chunk).
    #[track_caller]
    pub fn update_selected(&mut self, z: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>, rows: &[usize]) {
        self.update_rows(z, y, Some(rows));
    }

    /// Adds rows with `f32` features (see the module docs, "Single
    /// precision"): `z` has shape `(n_rows, l)`, `y` shape `(n_rows, k)`
    /// (rounded to `f32` with the features).
    ///
    /// Cost: `n_rows · (l + 1 + k)²` single-precision flops (about half the
    /// time of [`Moments::update`]), in blocks of [`BLOCK_ROWS`].
    #[track_caller]
    pub fn update_f32(&mut self, z: ArrayView2<'_, f32>, y: ArrayView2<'_, f64>) {
        self.update_rows(z, y, None);
    }

    /// [`Moments::update_f32`] on the rows `rows` (ascending) only.
    #[track_caller]
    pub fn update_f32_selected(&mut self, z: ArrayView2<'_, f32>, y: ArrayView2<'_, f64>, rows: &[usize]) {
        self.update_rows(z, y, Some(rows));
    }

    #[track_caller]
    fn update_rows<T: Precision>(&mut self, z: ArrayView2<'_, T>, y: ArrayView2<'_, f64>, rows: Option<&[usize]>) {
        let (l, k, w) = (self.n_features, self.n_targets, self.width());
        assert_eq!(z.ncols(), l, "update: z has {} columns, expected {l}", z.ncols());
        assert_eq!(y.ncols(), k, "update: y has {} columns, expected {k}", y.ncols());
        assert_eq!(z.nrows(), y.nrows(), "update: z has {} rows, y has {}", z.nrows(), y.nrows());
        // A block holds one precision: add the other one's partial block.
        T::flush_other(self);
        let n = rows.map_or(z.nrows(), <[usize]>::len);
        let par = self.par;
        let mut i = 0;
        while i < n {
            let pending = T::pending(self).get_or_insert_with(|| PackedRows::new(w, BLOCK_ROWS));
            let take = (pending.capacity() - pending.len()).min(n - i);
            let slot = pending.push_rows(take);
            match rows {
                Some(r) => pending.set_rows(slot, z, Some(&r[i..i + take]), par),
                None => pending.set_rows(slot, z.slice(s![i..i + take, ..]), None, par),
            }
            for t in 0..take {
                let r = rows.map_or(i + t, |r| r[i + t]);
                pending.set_value(slot + t, l, T::from_f64(1.0));
                for (c, &v) in y.row(r).iter().enumerate() {
                    pending.set_value(slot + t, l + 1 + c, T::from_f64(v));
                }
            }
            i += take;
            if pending.is_full() {
                self.flush();
            }
        }
    }

    /// Adds sparse rows (see [`SparseRowsView`]); `y` has shape `(n_rows, k)`.
    ///
    /// Cost: `n_rows · (nnz + k)²/2` updates, independent of `l`: a row with
    /// `nnz` stored entries touches `nnz·(nnz+1)/2` entries of `ZᵀZ`
    /// (counted by [`Moments::sparse_entries_touched`]).
    #[track_caller]
    pub fn update_sparse(&mut self, z: SparseRowsView<'_>, y: ArrayView2<'_, f64>) {
        self.update_sparse_rows(z, y, None);
    }

    /// [`Moments::update_sparse`] on the rows `rows` (ascending) only.
    #[track_caller]
    pub fn update_sparse_selected(&mut self, z: SparseRowsView<'_>, y: ArrayView2<'_, f64>, rows: &[usize]) {
        self.update_sparse_rows(z, y, Some(rows));
    }

    #[track_caller]
    fn update_sparse_rows(&mut self, z: SparseRowsView<'_>, y: ArrayView2<'_, f64>, rows: Option<&[usize]>) {
        let (l, k) = (self.n_features, self.n_targets);
        assert_eq!(z.n_cols, l, "update_sparse: rows have {} columns, expected {l}", z.n_cols);
        assert_eq!(y.ncols(), k, "update_sparse: y has {} columns, expected {k}", y.ncols());
        assert_eq!(z.n_rows(), y.nrows(), "update_sparse: {} feature rows, {} target rows", z.n_rows(), y.nrows());
        // Dense rows buffered earlier come first in the stream.
        self.flush();
        let g = &mut self.gram;
        let one = l;
        let nnz = z.indices.ncols();
        let n = rows.map_or(z.n_rows(), <[usize]>::len);
        for t in 0..n {
            let r = rows.map_or(t, |rows| rows[t]);
            let idx = z.indices.row(r);
            let val = z.values.row(r);
            let yr = y.row(r);
            for a in 0..nnz {
                let (ia, va) = (idx[a] as usize, val[a]);
                debug_assert!(ia < l);
                for b in 0..a {
                    let (ib, vb) = (idx[b] as usize, val[b]);
                    if ia == ib {
                        g[[ia, ia]] += 2.0 * va * vb;
                    } else {
                        g[[ia.max(ib), ia.min(ib)]] += va * vb;
                    }
                }
                g[[ia, ia]] += va * va;
                g[[one, ia]] += va;
                for t in 0..k {
                    g[[one + 1 + t, ia]] += yr[t] * va;
                }
            }
            g[[one, one]] += 1.0;
            for t in 0..k {
                g[[one + 1 + t, one]] += yr[t];
                for u in 0..=t {
                    g[[one + 1 + t, one + 1 + u]] += yr[t] * yr[u];
                }
            }
            self.sparse_entries_touched += (nnz * (nnz + 1) / 2) as u64;
        }
    }

    /// Adds the buffered rows (if any) into the Gram. Call before reading
    /// the statistics; [`Moments::merge`] and the accessors require it.
    pub fn flush(&mut self) {
        flush_into(&mut self.gram, &mut self.pending, self.par);
        flush_into(&mut self.gram, &mut self.pending_f32, self.par);
    }

    /// Adds `other`'s statistics to `self` (both are flushed first; `other`'s
    /// buffered rows are added after `self`'s).
    ///
    /// # Panics
    /// The shapes `(l, k)` must agree.
    #[track_caller]
    pub fn merge(&mut self, other: &Moments) {
        assert_eq!((self.n_features, self.n_targets), (other.n_features, other.n_targets), "merge: shapes differ");
        self.flush();
        self.gram += &other.gram;
        if let Some(p) = other.pending.as_ref().filter(|p| !p.is_empty()) {
            syrk_lower_add(self.gram.view_mut(), p, 1.0, self.par);
        }
        if let Some(p) = other.pending_f32.as_ref().filter(|p| !p.is_empty()) {
            syrk_lower_add(self.gram.view_mut(), p, 1.0, self.par);
        }
        self.sparse_entries_touched += other.sparse_entries_touched;
    }

    /// `self − other`, e.g. the training statistics of a fold (total minus
    /// the fold). Both must be flushed.
    #[track_caller]
    pub fn minus(&self, other: &Moments) -> Moments {
        self.assert_flushed();
        other.assert_flushed();
        assert_eq!((self.n_features, self.n_targets), (other.n_features, other.n_targets), "minus: shapes differ");
        let mut out = Moments::new(self.n_features, self.n_targets).with_par(self.par);
        out.gram = &self.gram - &other.gram;
        out
    }

    /// Whether every row added so far is in the Gram (no buffered rows), as
    /// the accessors require.
    pub fn is_flushed(&self) -> bool {
        self.pending.as_ref().is_none_or(PackedRows::is_empty)
            && self.pending_f32.as_ref().is_none_or(PackedRows::is_empty)
    }

    #[track_caller]
    fn assert_flushed(&self) {
        assert!(self.is_flushed(), "Moments has buffered rows: call flush() first");
    }

    /// Entries of `ZᵀZ` touched by sparse updates so far (a cost counter).
    pub fn sparse_entries_touched(&self) -> u64 {
        self.sparse_entries_touched
    }

    /// Lower triangle of the augmented Gram `[Z 1 Y]ᵀ[Z 1 Y]` (upper part
    /// zero), for serialisation. Requires a flushed accumulator.
    #[track_caller]
    pub fn augmented_gram(&self) -> ArrayView2<'_, f64> {
        self.assert_flushed();
        self.gram.view()
    }

    /// The augmented Gram of [`Moments::augmented_gram`], by value (the
    /// accumulator's own storage, column-major, flushed first): for a
    /// caller that builds a larger matrix in the same memory instead of a
    /// fresh buffer.
    pub fn into_augmented_gram(mut self) -> Array2<f64> {
        self.flush();
        self.gram
    }

    /// Number of rows seen.
    #[track_caller]
    pub fn n_samples(&self) -> f64 {
        self.assert_flushed();
        self.gram[[self.n_features, self.n_features]]
    }

    /// `ZᵀZ`, symmetric `(l, l)`.
    #[track_caller]
    pub fn zz(&self) -> Array2<f64> {
        self.assert_flushed();
        let l = self.n_features;
        // Column-major like the Gram, so that the copy streams.
        let mut a = crate::buffer::zeros((l, l), true);
        a.assign(&self.gram.slice(s![0..l, 0..l]));
        symmetrize_from_lower(a.view_mut());
        a
    }

    /// `ZᵀY`, shape `(l, k)`.
    #[track_caller]
    pub fn zy(&self) -> Array2<f64> {
        self.assert_flushed();
        let l = self.n_features;
        self.gram.slice(s![l + 1.., 0..l]).t().to_owned()
    }

    /// Column sums of `Z`, length `l`.
    #[track_caller]
    pub fn z_sum(&self) -> Array1<f64> {
        self.assert_flushed();
        let l = self.n_features;
        self.gram.slice(s![l, 0..l]).to_owned()
    }

    /// Column sums of `Y`, length `k`.
    #[track_caller]
    pub fn y_sum(&self) -> Array1<f64> {
        self.assert_flushed();
        let l = self.n_features;
        self.gram.slice(s![l + 1.., l]).to_owned()
    }

    /// `YᵀY`, symmetric `(k, k)`.
    #[track_caller]
    pub fn yy(&self) -> Array2<f64> {
        self.assert_flushed();
        let l = self.n_features;
        let mut c = self.gram.slice(s![l + 1.., l + 1..]).to_owned();
        symmetrize_from_lower(c.view_mut());
        c
    }

    /// The statistics of the centred problem (intercept eliminated).
    ///
    /// With means `z̄ = Σz/n`, `ȳ = Σy/n`: `A = ZᵀZ − n z̄z̄ᵀ`,
    /// `B = ZᵀY − n z̄ȳᵀ`, `C = YᵀY − n ȳȳᵀ`.
    ///
    /// # Panics
    /// At least one row must have been seen.
    #[track_caller]
    pub fn centered(&self) -> CenteredMoments {
        let n = self.n_samples();
        assert!(n > 0.0, "centered: no rows were accumulated");
        let z_mean = self.z_sum() / n;
        let y_mean = self.y_sum() / n;
        let mut a = self.zz();
        let mut b = self.zy();
        let mut c = self.yy();
        // Rank-one corrections `X −= n·(u vᵀ)` column by column (no (l, l)
        // temporary; `n·(u_i v_j)` keeps A exactly symmetric).
        let rank_one = |x: &mut Array2<f64>, u: &Array1<f64>, v: &Array1<f64>| {
            for (mut col, &vj) in x.columns_mut().into_iter().zip(v) {
                col.zip_mut_with(u, |x, &ui| *x -= n * (ui * vj));
            }
        };
        rank_one(&mut a, &z_mean, &z_mean);
        rank_one(&mut b, &z_mean, &y_mean);
        rank_one(&mut c, &y_mean, &y_mean);
        CenteredMoments { a, b, c, z_mean, y_mean, n_samples: n }
    }
}

/// Adds the buffered rows of `pending` (if any) into the Gram.
fn flush_into<T: Element>(gram: &mut Array2<f64>, pending: &mut Option<PackedRows<T>>, par: Par) {
    if let Some(p) = pending.as_mut().filter(|p| !p.is_empty()) {
        syrk_lower_add(gram.view_mut(), p, 1.0, par);
        p.clear();
    }
}

/// The precisions [`Moments`] takes dense rows in, and their buffers.
trait Precision: Element {
    fn pending(m: &mut Moments) -> &mut Option<PackedRows<Self>>;
    fn flush_other(m: &mut Moments);
}

impl Precision for f64 {
    fn pending(m: &mut Moments) -> &mut Option<PackedRows<f64>> {
        &mut m.pending
    }

    fn flush_other(m: &mut Moments) {
        flush_into(&mut m.gram, &mut m.pending_f32, m.par);
    }
}

impl Precision for f32 {
    fn pending(m: &mut Moments) -> &mut Option<PackedRows<f32>> {
        &mut m.pending_f32
    }

    fn flush_other(m: &mut Moments) {
        flush_into(&mut m.gram, &mut m.pending, m.par);
    }
}

/// Centred ridge statistics; see [`Moments::centered`].
#[derive(Clone, Debug, PartialEq)]
pub struct CenteredMoments {
    /// `ZᵀZ − n z̄z̄ᵀ`, symmetric `(l, l)`.
    pub a: Array2<f64>,
    /// `ZᵀY − n z̄ȳᵀ`, `(l, k)`.
    pub b: Array2<f64>,
    /// `YᵀY − n ȳȳᵀ`, `(k, k)`.
    pub c: Array2<f64>,
    /// Column means of `Z`.
    pub z_mean: Array1<f64>,
    /// Column means of `Y`.
    pub y_mean: Array1<f64>,
    /// Number of rows.
    pub n_samples: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::SparseRows;
    use ndarray::ShapeBuilder;
    use rand::{Rng, SeedableRng};

    pub(super) fn data(n: usize, l: usize, k: usize) -> (Array2<f64>, Array2<f64>) {
        let z = Array2::from_shape_fn((n, l), |(i, j)| ((i * 31 + j * 17) % 23) as f64 / 7.0 - 1.0);
        let y = Array2::from_shape_fn((n, k), |(i, j)| ((i * 13 + j * 5) % 11) as f64 - 4.0);
        (z, y)
    }

    /// The flushed statistics of the rows `z` with targets `y`.
    pub(super) fn flushed(z: &Array2<f64>, y: &Array2<f64>) -> Moments {
        let mut m = Moments::new(z.ncols(), y.ncols());
        m.update(z.view(), y.view());
        m.flush();
        m
    }

    #[test]
    fn matches_naive_statistics() {
        let (z, y) = data(1300, 6, 2);
        let m = flushed(&z, &y);
        assert_eq!(m.n_samples(), 1300.0);
        let close = |a: &Array2<f64>, b: &Array2<f64>| {
            (a - b).iter().all(|v| v.abs() < 1e-9 * (1.0 + b.iter().fold(0.0f64, |m, x| m.max(x.abs()))))
        };
        assert!(close(&m.zz(), &z.t().dot(&z)));
        assert!(close(&m.zy(), &z.t().dot(&y)));
        assert!(close(&m.yy(), &y.t().dot(&y)));
        let zs = z.sum_axis(ndarray::Axis(0));
        assert!((m.z_sum() - zs).iter().all(|v| v.abs() < 1e-9));
    }

    #[test]
    fn an_owned_gram_is_taken_with_its_upper_part_zeroed() {
        let (z, y) = data(700, 5, 2);
        let m = flushed(&z, &y);
        let want = m.augmented_gram().to_owned();
        // Entries above the diagonal must not survive, in either layout.
        let junk = |(i, j): (usize, usize)| if i < j { 1e3 + (i * 8 + j) as f64 } else { want[[i, j]] };
        let column_major = Array2::from_shape_fn((8, 8).f(), junk);
        let row_major = Array2::from_shape_fn((8, 8), junk);
        for g in [column_major, row_major] {
            let owned = Moments::from_augmented_gram_owned(5, 2, g.clone());
            assert_eq!(owned.augmented_gram(), want.view());
            assert_eq!(owned.augmented_gram(), Moments::from_augmented_gram(5, 2, g.view()).augmented_gram());
            assert_eq!(owned.zz(), m.zz());
        }
    }

    #[test]
    fn chunking_does_not_change_a_single_bit() {
        let (z, y) = data(5000, 9, 3);
        let run = |chunk: usize| {
            let mut m = Moments::new(9, 3);
            let mut r = 0;
            while r < 5000 {
                let e = (r + chunk).min(5000);
                m.update(z.slice(s![r..e, ..]), y.slice(s![r..e, ..]));
                r = e;
            }
            m.flush();
            m.augmented_gram().to_owned()
        };
        let a = run(1000);
        assert_eq!(a, run(65536));
        assert_eq!(a, run(7));
        assert_eq!(a, run(1));
    }

    /// The f32 path against the f64 one, within the bound of the module
    /// docs: per element, `514·2⁻²⁴ · Σ_r |a_ri a_rj|` over the augmented
    /// rows (the f32 chain of at most 512 products plus the rounding of
    /// the inputs to f32); and it is really single precision (the error is
    /// not zero) and typically far below the bound.
    #[test]
    fn f32_updates_agree_with_f64_within_the_single_precision_bound() {
        let (n, l, k) = (3000, 40, 2);
        let mut r = rand::rngs::StdRng::seed_from_u64(4);
        let z = Array2::from_shape_fn((n, l), |_| r.random_range(-1.0..1.0));
        let y = Array2::from_shape_fn((n, k), |_| r.random_range(-3.0..3.0));
        let mut m64 = Moments::new(l, k);
        m64.update(z.view(), y.view());
        m64.flush();
        let z32 = z.mapv(|v| v as f32);
        let run32 = |chunk: usize| {
            let mut m = Moments::new(l, k);
            for s0 in (0..n).step_by(chunk) {
                let e = (s0 + chunk).min(n);
                m.update_f32(z32.slice(s![s0..e, ..]), y.slice(s![s0..e, ..]));
            }
            m.flush();
            m.augmented_gram().to_owned()
        };
        let g32 = run32(1000);
        assert_eq!(g32, run32(77), "f32 statistics depend on the chunking");
        let aug = ndarray::concatenate![ndarray::Axis(1), z.view(), Array2::ones((n, 1)).view(), y.view()];
        let abs = aug.mapv(f64::abs);
        let bound = abs.t().dot(&abs) * (514.0 * 2f64.powi(-24));
        let g64 = m64.augmented_gram();
        let (mut worst, mut mean_rel, mut count) = (0.0f64, 0.0, 0.0);
        for j in 0..l + 1 + k {
            for i in j..l + 1 + k {
                let d = (g32[[i, j]] - g64[[i, j]]).abs();
                assert!(d <= bound[[i, j]], "({i}, {j}): {d:e} > {:e}", bound[[i, j]]);
                worst = worst.max(d / bound[[i, j]]);
                mean_rel += d / abs.column(i).dot(&abs.column(j));
                count += 1.0;
            }
        }
        mean_rel /= count;
        assert!(mean_rel > 0.0 && mean_rel < 1e-5, "mean relative error {mean_rel:e}");
        assert!(worst < 0.5, "worst error {worst} of the bound");
        // Mixing precisions adds the partial block of the other first.
        let mut mixed = Moments::new(l, k);
        mixed.update(z.slice(s![..100, ..]), y.slice(s![..100, ..]));
        mixed.update_f32(z32.slice(s![100.., ..]), y.slice(s![100.., ..]));
        mixed.flush();
        assert_eq!(mixed.n_samples(), n as f64);
    }

    #[test]
    fn selected_rows_equal_copied_rows_bitwise() {
        let (z, y) = data(2000, 7, 2);
        let rows: Vec<usize> = (0..2000).filter(|i| i % 3 != 1).collect();
        let mut a = Moments::new(7, 2);
        a.update_selected(z.view(), y.view(), &rows);
        a.flush();
        let mut b = Moments::new(7, 2);
        b.update(z.select(ndarray::Axis(0), &rows).view(), y.select(ndarray::Axis(0), &rows).view());
        b.flush();
        assert_eq!(a.augmented_gram(), b.augmented_gram());
        let mut sp = SparseRows::zeros(2000, 2, 7);
        for r in 0..2000 {
            sp.indices[[r, 0]] = (r % 7) as u32;
            sp.indices[[r, 1]] = ((r * 3) % 7) as u32;
            sp.values[[r, 0]] = r as f64 * 0.01;
            sp.values[[r, 1]] = 1.0;
        }
        let mut c = Moments::new(7, 2);
        c.update_sparse_selected(sp.view(), y.view(), &rows);
        let mut d = Moments::new(7, 2);
        d.update_selected(sp.to_dense().view(), y.view(), &rows);
        d.flush();
        assert!((&c.augmented_gram() - &d.augmented_gram()).iter().all(|v| v.abs() < 1e-9));
    }

    #[test]
    fn merge_and_minus_agree_with_one_pass() {
        let (z, y) = data(3000, 5, 1);
        let mut all = Moments::new(5, 1);
        all.update(z.view(), y.view());
        all.flush();
        let mut a = Moments::new(5, 1);
        a.update(z.slice(s![..1234, ..]), y.slice(s![..1234, ..]));
        let mut b = Moments::new(5, 1);
        b.update(z.slice(s![1234.., ..]), y.slice(s![1234.., ..]));
        a.merge(&b);
        a.flush();
        let d = &a.augmented_gram() - &all.augmented_gram();
        assert!(d.iter().all(|v| v.abs() < 1e-8));
        let mut bf = b.clone();
        bf.flush();
        let rest = all.minus(&bf);
        assert_eq!(rest.n_samples(), 1234.0);
    }

    #[test]
    fn sparse_update_equals_dense_update_and_costs_nnz_squared() {
        let n = 200;
        let l = 50;
        let mut sp = SparseRows::zeros(n, 3, l);
        for r in 0..n {
            for a in 0..3 {
                // Include duplicates within a row: (r * 7 + a * a) % l repeats.
                sp.indices[[r, a]] = ((r * 7 + a * a * (r % 3)) % l) as u32;
                sp.values[[r, a]] = 0.5 + a as f64 - (r % 5) as f64 * 0.1;
            }
        }
        let y = Array2::from_shape_fn((n, 2), |(i, j)| (i + j) as f64 * 0.01);
        let mut ms = Moments::new(l, 2);
        ms.update_sparse(sp.view(), y.view());
        let mut md = Moments::new(l, 2);
        md.update(sp.to_dense().view(), y.view());
        md.flush();
        let d = &ms.augmented_gram() - &md.augmented_gram();
        assert!(d.iter().all(|v| v.abs() < 1e-10));
        assert_eq!(ms.sparse_entries_touched(), (n * 6) as u64);
    }

    #[test]
    fn centered_and_project() {
        let (z, y) = data(800, 4, 1);
        let m = flushed(&z, &y);
        let c = m.centered();
        let zc = &z - &z.mean_axis(ndarray::Axis(0)).unwrap();
        assert!((&c.a - &zc.t().dot(&zc)).iter().all(|v| v.abs() < 1e-8));
        let p = Array2::from_shape_fn((4, 2), |(i, j)| (i as f64 - j as f64) * 0.3);
        let zp = z.dot(&p);
        let mut mp = Moments::new(2, 1);
        mp.update(zp.view(), y.view());
        mp.flush();
        let proj = m.project(p.view());
        let d = &proj.augmented_gram() - &mp.augmented_gram();
        assert!(d.iter().all(|v| v.abs() < 1e-8), "{d}");
        // Wider than a kernel tile and a task block, more outputs than
        // inputs, several targets: against mapping the rows first.
        let (z, y) = data(600, 131, 3);
        let m = flushed(&z, &y);
        let p = Array2::from_shape_fn((131, 150), |(i, j)| ((i * 13 + j * 7) % 17) as f64 / 17.0 - 0.5);
        let zp = z.dot(&p);
        let mut mp = Moments::new(150, 3);
        mp.update(zp.view(), y.view());
        mp.flush();
        let proj = m.project(p.view());
        let want = mp.augmented_gram();
        let scale = want.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        let err = (&proj.augmented_gram() - &want).iter().fold(0.0f64, |s, v| s.max(v.abs()));
        assert!(err < 1e-12 * scale, "projection error {err} of {scale}");
        let one = Moments { par: Par::Seq, ..m.clone() }.project(p.view());
        assert!(one.augmented_gram().iter().zip(proj.augmented_gram()).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
