//! A symmetric matrix kept in full in the packed-rows layout, so that the
//! Gram kernel can both multiply by it and update it in place.
//!
//! Two-sided reductions (the band reduction of the ridge α path) alternate
//! a product `X = A₂₂ V` with a symmetric rank-`2b` update of `A₂₂`. With
//! `A` stored as packed rows (row `r` of the layout = row `r` of `A`), the
//! product is the Gram kernel's `AᵀB` over the rows of `A₂₂` (symmetric, so
//! `A₂₂ᵀ V = A₂₂ V`), and the update computes the lower triangle only
//! (half the flops) and writes every element to both triangles. No pass
//! packs `A₂₂` per step, and every product runs on every core with the
//! kernel's determinism: the bits do not depend on the thread count.
//!
//! Memory: `n (n + 2w)` doubles (`w` the panel width).

use super::{Element, Layout, Operand, Out, PackedRows, Product, Zeros, is_parallel};
use crate::cpu::Simd;
use faer::Par;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};
use rayon::prelude::*;
use std::ops::Range;

/// A symmetric `(n, n)` matrix, both triangles stored, in the layout of
/// [`PackedRows`] (row `r` of the layout is row `r` of the matrix).
///
/// Sub-blocks are addressed as the trailing block from `start` on, where
/// `start` is a multiple of the panel width.
#[derive(Clone, Debug)]
pub struct PackedSymmetric {
    n: usize,
    rows: PackedRows<f64>,
}

impl PackedSymmetric {
    /// Packs the symmetric `a (n, n)` for this CPU; only its lower triangle
    /// is read.
    ///
    /// # Panics
    /// `a` must be square.
    #[track_caller]
    pub fn from_lower(a: ArrayView2<'_, f64>) -> Self {
        Self::from_lower_with(Simd::detect(), a)
    }

    /// [`PackedSymmetric::from_lower`] laid out for `simd`.
    ///
    /// # Panics
    /// `a` must be square.
    #[track_caller]
    pub fn from_lower_with(simd: Simd, a: ArrayView2<'_, f64>) -> Self {
        let n = a.nrows();
        assert_eq!(a.ncols(), n, "PackedSymmetric: {:?} is not square", a.dim());
        Self::from_lower_fn(simd, n, |i, j| a[[i, j]])
    }

    /// Packs the symmetric `(n, n)` matrix whose entry `(i, j)`, `i ≥ j`,
    /// is `entry(i, j)`, laid out for `simd`.
    ///
    /// For a matrix that is a formula over other storage, such as the
    /// centred Gram `G − n z̄z̄ᵀ` of the ridge normal equations: packing
    /// it from the formula spares writing it densely first (one fresh
    /// `n²` buffer, which costs more than the arithmetic on it).
    pub fn from_lower_fn(simd: Simd, n: usize, entry: impl Fn(usize, usize) -> f64 + Sync) -> Self {
        let w = <f64 as Element>::panel_width(simd);
        // Two spare panels: a tile of a trailing block starts at any panel,
        // and reads up to two panels past its first.
        let mut rows = PackedRows::with_simd(simd, n + 2 * w, n);
        for _ in 0..n {
            rows.push_row();
        }
        let stride = rows.panel_stride();
        let data = rows.as_mut_slice();
        let len = data.len();
        let out = Out(data.as_mut_ptr());
        // In square tiles: both images of a tile then stay within a few
        // pages (element by element down a column, the layout's row
        // image jumps a whole panel, n·w values, every w elements).
        const TILE: usize = 64;
        // One task per column block of tiles, on every core.
        let column_block = |jb: usize| {
            let data = out.ptr();
            for ib in (jb..n).step_by(TILE) {
                for j in jb..(jb + TILE).min(n) {
                    let (row, col) = (j * w, (j / w) * stride + j % w);
                    for i in ib.max(j)..(ib + TILE).min(n) {
                        let v = entry(i, j);
                        let (direct, mirror) = ((i / w) * stride + row + i % w, col + i * w);
                        debug_assert!(direct < len && mirror < len);
                        // SAFETY: both positions lie inside the layout; the
                        // block of columns jb.. writes layout rows j and
                        // layout columns j of its own j only, at (j, i) and
                        // (i, j) with i ≥ j, which no other block writes
                        // (that would need i ≥ j and j ≥ i in two blocks).
                        unsafe {
                            *data.add(direct) = v;
                            *data.add(mirror) = v;
                        }
                    }
                }
            }
        };
        if n * n >= 1 << 16 {
            (0..n).into_par_iter().step_by(TILE).for_each(column_block);
        } else {
            (0..n).step_by(TILE).for_each(column_block);
        }
        PackedSymmetric { n, rows }
    }

    /// Whether every entry is finite (NaN and infinities are not).
    pub fn is_finite(&self) -> bool {
        // The padding past `n` holds zeros, so the whole storage can be
        // scanned in large chunks on every core.
        self.rows.as_slice().par_chunks(1 << 16).all(|c| c.iter().all(|v| v.is_finite()))
    }

    /// The dimension `n`.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Columns per panel: trailing blocks start at multiples of it.
    pub fn panel_width(&self) -> usize {
        self.rows.panel_width()
    }

    /// The instruction set the layout was made for.
    pub fn simd(&self) -> Simd {
        self.rows.simd()
    }

    /// Element `(i, j)`.
    ///
    /// # Panics
    /// `i, j < n`.
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> f64 {
        assert!(i < self.n && j < self.n, "PackedSymmetric: ({i}, {j}) of {}", self.n);
        let w = self.panel_width();
        self.rows.as_slice()[(j / w) * self.rows.panel_stride() + i * w + j % w]
    }

    /// Copies the block `rows × cols` into `out (rows.len(), cols.len())`.
    ///
    /// Column `j` of the block is read from column `j` of the layout,
    /// whose rows `rows` are one contiguous run of lines (`w` values
    /// apart), and a column-major `out` is written column by column. The
    /// mirror, row `j` of the layout, holds the same values but lies one
    /// panel (`n·w` values) apart every `w` entries: at n = 8192 a new
    /// page every 8 values, and the band reduction's panel copies took
    /// 0.3 s of its 7.5 s that way.
    ///
    /// # Panics
    /// The ranges must lie inside the matrix and match `out`.
    #[track_caller]
    pub fn copy_block(&self, rows: Range<usize>, cols: Range<usize>, mut out: ArrayViewMut2<'_, f64>) {
        assert!(rows.end <= self.n && cols.end <= self.n, "PackedSymmetric: block {rows:?} × {cols:?} of {}", self.n);
        assert_eq!(out.dim(), (rows.len(), cols.len()), "PackedSymmetric: output shape");
        let (w, stride) = (self.panel_width(), self.rows.panel_stride());
        let data = self.rows.as_slice();
        for (j, mut col) in cols.zip(out.columns_mut()) {
            let column = &data[(j / w) * stride + j % w..];
            for (i, o) in rows.clone().zip(col.iter_mut()) {
                *o = column[i * w];
            }
        }
    }

    /// `X += alpha · A[start.., start..] · V` for `V` packed with
    /// `n − start` rows and `x (n − start, v.n_cols())`.
    ///
    /// Bitwise the same for every `par` and thread count (each element is
    /// a fixed sequence of chains over 512-row chunks, added in order).
    ///
    /// Cost: `2 (n − start)² · v.n_cols()` flops.
    ///
    /// # Panics
    /// `start` a multiple of [`panel_width`](PackedSymmetric::panel_width),
    /// matching shapes, `v` packed for the same instruction set.
    #[track_caller]
    pub fn symm_add(&self, start: usize, v: &PackedRows<f64>, mut x: ArrayViewMut2<'_, f64>, alpha: f64, par: Par) {
        let (w, m) = (self.panel_width(), self.n.saturating_sub(start));
        assert!(
            start <= self.n && start.is_multiple_of(w),
            "symm_add: start {start} is not a panel edge of {}",
            self.n
        );
        assert_eq!(v.len(), m, "symm_add: V has {} rows, the block {m}", v.len());
        assert_eq!(x.dim(), (m, v.n_cols()), "symm_add: X is {:?}, expected ({m}, {})", x.dim(), v.n_cols());
        assert_eq!(v.simd(), self.simd(), "symm_add: operands packed for different instruction sets");
        let kv = v.n_cols();
        if m == 0 || kv == 0 {
            return;
        }
        if !(x.strides()[0] == 1 && x.strides()[1] >= m as isize) {
            let mut t = ndarray::Array2::<f64>::zeros((m, kv).f());
            t.assign(&x);
            self.symm_add(start, v, t.view_mut(), alpha, par);
            x.assign(&t);
            return;
        }
        let stride = self.rows.panel_stride();
        let base = self.rows.as_slice()[(start / w) * stride + start * w..].as_ptr();
        let product = Product {
            simd: self.simd(),
            c: Out(x.as_mut_ptr()),
            layout: Layout::ColumnMajor { ldc: x.strides()[1] as usize },
            m,
            n: kv,
            k: m,
            a: Operand { ptr: base, stride },
            b: Operand::whole(v),
            alpha,
            lower: false,
            zeros: Zeros::default(),
        };
        // SAFETY: x is a live column-major (m, kv) view borrowed mutably;
        // the left operand is the rows start.. of columns start.. of the
        // layout (spare panels cover every tile), the right one m rows.
        unsafe { product.run(is_parallel(par, m, m, kv)) };
    }

    /// `A[start.., start..] += alpha · AᵀB` for packed `a` and `b` with
    /// `n − start` columns, when `AᵀB` is symmetric (e.g. `[W V]ᵀ[V W]`):
    /// its lower triangle is computed and written to both triangles, so the
    /// matrix stays exactly symmetric.
    ///
    /// Bitwise the same for every `par` and thread count.
    ///
    /// Cost: `a.len() · m (m + 1)` flops, `m = n − start`.
    ///
    /// # Panics
    /// As [`symm_add`](PackedSymmetric::symm_add), and `a`, `b` of the same
    /// length.
    #[track_caller]
    pub fn symmetric_update(&mut self, start: usize, a: &PackedRows<f64>, b: &PackedRows<f64>, alpha: f64, par: Par) {
        self.symmetric_update_columns(start, start..self.n, a, b, alpha, par);
    }

    /// The part of [`symmetric_update`](PackedSymmetric::symmetric_update)
    /// in the columns `cols` of the matrix (and, mirrored, its rows): the
    /// entries `(i, j)`, `j ∈ cols`, `i ≥ j`, and their mirrors. Each entry
    /// gets the same bits as from the whole update, so updates of
    /// consecutive column ranges make the whole one; a reduction can then
    /// finish the next panel's columns first and work on that panel while
    /// the rest of the update runs (look-ahead).
    ///
    /// Cost: `a.len() · c (2m − c + 1)` flops, `c = cols.len()`,
    /// `m = n − cols.start`.
    ///
    /// # Panics
    /// As [`symmetric_update`](PackedSymmetric::symmetric_update), and
    /// `start ≤ cols.start ≤ cols.end ≤ n` with `cols.start` a panel edge
    /// (unless `cols` is empty).
    #[track_caller]
    pub fn symmetric_update_columns(
        &mut self,
        start: usize,
        cols: Range<usize>,
        a: &PackedRows<f64>,
        b: &PackedRows<f64>,
        alpha: f64,
        par: Par,
    ) {
        let (w, m) = (self.panel_width(), self.n.saturating_sub(start));
        assert!(
            start <= self.n && start.is_multiple_of(w),
            "symmetric_update: start {start} is not a panel edge of {}",
            self.n
        );
        assert!(
            start <= cols.start
                && cols.start <= cols.end
                && cols.end <= self.n
                && (cols.is_empty() || cols.start.is_multiple_of(w)),
            "symmetric_update: columns {cols:?} of the block {start}..{}",
            self.n
        );
        assert_eq!(
            (a.n_cols(), b.n_cols()),
            (m, m),
            "symmetric_update: operands of {} and {} columns, block {m}",
            a.n_cols(),
            b.n_cols()
        );
        assert_eq!(a.len(), b.len(), "symmetric_update: A has {} rows, B has {}", a.len(), b.len());
        assert!(
            a.simd() == self.simd() && b.simd() == self.simd(),
            "symmetric_update: operands packed for different instruction sets"
        );
        let rows = self.n - cols.start;
        if cols.is_empty() || a.is_empty() {
            return;
        }
        // Column `cols.start` of the matrix is column `skip` of the operands,
        // the first of one of their panels.
        let skip = (cols.start - start) / w;
        let from = |p: &PackedRows<f64>| {
            let whole = Operand::whole(p);
            Operand { ptr: whole.ptr.wrapping_add(skip * whole.stride), stride: whole.stride }
        };
        let stride = self.rows.panel_stride();
        let product = Product {
            simd: self.simd(),
            c: Out(self.rows.as_mut_slice().as_mut_ptr()),
            layout: Layout::Symmetric { start: cols.start, shift: w.trailing_zeros(), stride },
            m: rows,
            n: cols.len(),
            k: a.len(),
            a: from(a),
            b: from(b),
            alpha,
            lower: true,
            zeros: Zeros::default(),
        };
        // SAFETY: the layout is borrowed mutably; every written position
        // (cols.start + i, cols.start + j) and its mirror lie inside it; the
        // operands' panels from `skip` on hold the block's columns from
        // `cols.start` on (and the spare panels past them).
        unsafe { product.run(is_parallel(par, a.len(), rows, cols.len())) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, s};

    fn sym(n: usize) -> Array2<f64> {
        Array2::from_shape_fn((n, n), |(i, j)| {
            let (a, b) = (i.max(j), i.min(j));
            (((a * 37 + b * 11) % 29) as f64 - 14.0) / 9.0
        })
    }

    fn levels() -> Vec<Simd> {
        [Simd::Portable, Simd::Avx2Fma, Simd::Avx512].into_iter().filter(|s| s.is_available()).collect()
    }

    #[test]
    fn symm_and_update_of_trailing_blocks_match_dense_products() {
        for simd in levels() {
            let w = <f64 as Element>::panel_width(simd);
            for &(n, start, kv) in &[(1, 0, 1), (13, 4 * w / 4, 5), (70, 8, 7), (700, 64, 64), (300, 0, 13)] {
                if start >= n && n > 1 {
                    continue;
                }
                let a = sym(n);
                let mut lower = a.clone();
                for j in 0..n {
                    for i in 0..j {
                        lower[[i, j]] = f64::NAN; // the upper triangle is never read
                    }
                }
                let mut p = PackedSymmetric::from_lower_with(simd, lower.view());
                let m = n - start;
                let v = Array2::from_shape_fn((m, kv), |(i, j)| ((i * 7 + j * 3) % 13) as f64 / 13.0 - 0.4);
                let vp = PackedRows::from_rows_with(simd, v.view());
                let mut x = Array2::from_elem((m, kv).f(), 1.0);
                p.symm_add(start, &vp, x.view_mut(), 2.0, Par::rayon(0));
                let want = 1.0 + 2.0 * a.slice(s![start.., start..]).dot(&v);
                let err = (&x - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                assert!(err < 1e-12 * m as f64, "{simd:?} n {n} start {start}: symm error {err}");
                // Thread count does not change a bit.
                let mut x1 = Array2::from_elem((m, kv).f(), 1.0);
                p.symm_add(start, &vp, x1.view_mut(), 2.0, Par::Seq);
                assert!(x.iter().zip(&x1).all(|(a, b)| a.to_bits() == b.to_bits()));
                // A rank-2kv symmetric update [W V]ᵀ[V W] of the block.
                let wv = ndarray::concatenate![ndarray::Axis(1), v, 0.5 * &v].t().to_owned();
                let vw = ndarray::concatenate![ndarray::Axis(1), 0.5 * &v, v].t().to_owned();
                let (pa, pb) =
                    (PackedRows::from_rows_with(simd, wv.view()), PackedRows::from_rows_with(simd, vw.view()));
                p.symmetric_update(start, &pa, &pb, -1.0, Par::rayon(0));
                let mut want = a.clone();
                let upd = wv.t().dot(&vw);
                want.slice_mut(s![start.., start..]).scaled_add(-1.0, &upd);
                for i in 0..n {
                    for j in 0..n {
                        let (got, exp) = (p.get(i, j), want[[i, j]]);
                        assert!((got - exp).abs() < 1e-12 * kv as f64, "{simd:?} n {n}: ({i}, {j}) {got} vs {exp}");
                        assert_eq!(got.to_bits(), p.get(j, i).to_bits(), "not symmetric at ({i}, {j})");
                    }
                }
                // The same update in two column ranges (a panel, then the
                // rest) gives the same bits.
                let mut split = PackedSymmetric::from_lower_with(simd, lower.view());
                let mid = (start + 2 * w).min(n);
                split.symmetric_update_columns(start, start..mid, &pa, &pb, -1.0, Par::rayon(0));
                split.symmetric_update_columns(start, mid..n, &pa, &pb, -1.0, Par::Seq);
                for i in 0..n {
                    for j in 0..n {
                        assert_eq!(split.get(i, j).to_bits(), p.get(i, j).to_bits(), "split update at ({i}, {j})");
                    }
                }
                let mut block = Array2::zeros((3.min(n), n).f());
                p.copy_block(0..3.min(n), 0..n, block.view_mut());
                assert_eq!(block, want.slice(s![0..3.min(n), ..]));
            }
        }
    }
}
