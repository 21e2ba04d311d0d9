//! The Cholesky factorisation of a shifted band matrix `B + αI`: one per α
//! of a ridge path ([`AlphaPath`](crate::AlphaPath)), on the band the
//! reduction ([`crate::band`]) leaves.
//!
//! Blocked by [`BLOCK`] columns, right-looking: a block's columns are
//! factored one by one against each other, then their contribution to the
//! `b` columns after the block is one product `P Pᵀ` (`P` the block's
//! rows below it, `b × BLOCK`), which runs in faer's matrix product instead
//! of `b` separate sweeps over a `b`-long window per column.
//!
//! Each factorisation runs on one thread (the α of a grid are factored in
//! parallel), so its bits do not depend on the thread count. faer picks its
//! product's kernel by the CPU, so, as with the reduction's faer products,
//! they may differ between instruction sets.

use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::{Accum, Par};
use kapprox_core::dense::{as_faer, as_faer_mut};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};

/// Columns per block: the rank of each trailing product. Narrow blocks won
/// (a one-off timer, factors of `l = 8192` alternating with the previous
/// column-by-column code, medians of 9, 2-core Xeon with AVX-512): at
/// `b = 256` 16 columns took 26.8 ms against 41.4 (the old code), 32
/// columns 35.4 against 64.4, 64 columns 41.0 against 65.0 and 128
/// columns 51.3 against 62.5; at `b = 64` 16 columns 4.3 against 5.2, 128
/// columns 9.2 against 8.0. The within-block part is cheap, and the
/// product's `b × b` result makes a round trip through memory per block
/// whatever its rank.
const BLOCK: usize = 16;

/// The Cholesky factor of a shifted band matrix, in the same band layout.
#[derive(Clone, Debug)]
pub(crate) struct BandCholesky {
    l: Array2<f64>,
}

impl BandCholesky {
    /// Factors `B + shift·I` (`band[[j, r]] = B[j + r, j]`), or returns the
    /// index of the first non-positive pivot.
    ///
    /// Cost: `l b²` flops, all but `O(l b · BLOCK)` of them in products of
    /// `b × BLOCK` blocks.
    pub(crate) fn new(band: ArrayView2<'_, f64>, shift: f64) -> Result<Self, usize> {
        let mut l = band.as_standard_layout().into_owned();
        let (n, w) = l.dim();
        factor_band(l.as_slice_mut().expect("standard layout"), n, w, shift)?;
        Ok(BandCholesky { l })
    }

    /// Solves `L Lᵀ x = y` in place for every column of `y (l, k)`.
    ///
    /// Cost: `4 l b k` flops, and two sweeps over the factor (for all
    /// columns together: at `l = 8192, b = 256` the factor is 17 MB, and
    /// one sweep per column was bound by memory).
    pub(crate) fn solve_in_place(&self, mut y: ArrayViewMut2<'_, f64>) {
        let (n, w) = self.l.dim();
        let data = self.l.as_slice().expect("standard layout");
        let k = y.ncols();
        let mut x = vec![0.0; n * k];
        for (col, xc) in y.columns().into_iter().zip(x.chunks_exact_mut(n.max(1))) {
            xc.iter_mut().zip(col.iter()).for_each(|(a, &b)| *a = b);
        }
        substitute(data, n, w, &mut x);
        for (mut col, xc) in y.columns_mut().into_iter().zip(x.chunks_exact(n.max(1))) {
            col.iter_mut().zip(xc).for_each(|(a, &b)| *a = b);
        }
    }
}

kapprox_core::multiversion! {
    /// `x ← (L Lᵀ)⁻¹ x` for the band factor `data` (`n` rows of `w`) and
    /// every column of `x` (`n`-long columns, one after another).
    fn substitute(data: &[f64], n: usize, w: usize, x: &mut [f64]) {
        let bw = w - 1;
        if n == 0 {
            return;
        }
        for j in 0..n {
            let m = bw.min(n - 1 - j);
            let lj = &data[j * w..j * w + m + 1];
            for xc in x.chunks_exact_mut(n) {
                let v = xc[j] / lj[0];
                xc[j] = v;
                for (t, &c) in xc[j + 1..j + 1 + m].iter_mut().zip(&lj[1..]) {
                    *t -= c * v;
                }
            }
        }
        for j in (0..n).rev() {
            let m = bw.min(n - 1 - j);
            let lj = &data[j * w..j * w + m + 1];
            for xc in x.chunks_exact_mut(n) {
                xc[j] = (xc[j] - dot(&xc[j + 1..j + 1 + m], &lj[1..])) / lj[0];
            }
        }
    }
}

/// `Σ aᵢ bᵢ` in eight interleaved partial sums, added in a fixed order:
/// vectorises, where one running sum is a chain of dependent additions.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// [`BandCholesky::new`] in place on the band storage `data` (`n` rows of
/// `w = b + 1` values; row `j` holds column `j` of the lower band).
fn factor_band(data: &mut [f64], n: usize, w: usize, shift: f64) -> Result<(), usize> {
    let bw = w - 1;
    let rows = bw.min(n);
    // The block's rows below it, and their product.
    let mut p = Array2::<f64>::zeros((rows, BLOCK).f());
    let mut u = Array2::<f64>::zeros((rows, rows).f());
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        factor_block(data, n, w, shift, start, end)?;
        // Columns end..end + win are the ones the block reaches, and only
        // in rows end..end + win (a column reaches `b` rows below itself).
        let win = bw.min(n - end);
        if win > 0 {
            let cols = end - start;
            let mut pv = p.slice_mut(s![..win, ..cols]);
            for (q, mut dst) in pv.columns_mut().into_iter().enumerate() {
                let j = start + q;
                // Rows end + i of column j, for end + i − j ≤ b.
                let reach = (bw + j + 1).saturating_sub(end).min(win);
                let dst = dst.as_slice_mut().expect("column-major");
                dst[..reach].copy_from_slice(&data[j * w + (end - j)..][..reach]);
                dst[reach..].fill(0.0);
            }
            let pv = p.slice(s![..win, ..cols]);
            let lower = BlockStructure::TriangularLower;
            let rect = BlockStructure::Rectangular;
            let uv = u.slice_mut(s![..win, ..win]);
            matmul(as_faer_mut(uv), lower, Accum::Replace, as_faer(pv), rect, as_faer(pv.t()), rect, 1.0, Par::Seq);
            subtract_lower(data, w, end, u.slice(s![..win, ..win]));
        }
        start = end;
    }
    Ok(())
}

kapprox_core::multiversion! {
    /// Factors the columns `start..end` of the band, each against the
    /// earlier ones of the block (updates from earlier blocks are already
    /// in), column by column: every later column of the block loses
    /// `L[.., j] · L[t, j]` over its whole band.
    fn factor_block(data: &mut [f64], n: usize, w: usize, shift: f64, start: usize, end: usize) -> Result<(), usize> {
        let bw = w - 1;
        for j in start..end {
            let m = bw.min(n - 1 - j);
            let (head, tail) = data.split_at_mut((j + 1) * w);
            let col = &mut head[j * w..j * w + m + 1];
            let d = col[0] + shift;
            // Written so that NaN is refused too.
            if d.is_nan() || d <= 0.0 {
                return Err(j);
            }
            let s = d.sqrt();
            col[0] = s;
            col[1..].iter_mut().for_each(|v| *v /= s);
            // Column j + c loses L[j+c.., j] · L[j+c, j]; in band storage
            // its entries r = 0..=m − c are contiguous.
            for c in 1..=m.min(end - 1 - j) {
                let lc = col[c];
                let target = &mut tail[(c - 1) * w..(c - 1) * w + (m - c + 1)];
                for (t, &v) in target.iter_mut().zip(&col[c..=m]) {
                    *t -= v * lc;
                }
            }
        }
        Ok(())
    }
}

kapprox_core::multiversion! {
    /// The band's window of columns `first..first + win` loses the lower
    /// triangle of `u (win, win)`: column `first + c`, rows `c..win`, is a
    /// contiguous run of its band storage.
    fn subtract_lower(data: &mut [f64], w: usize, first: usize, u: ArrayView2<'_, f64>) {
        let win = u.nrows();
        for (c, col) in u.columns().into_iter().enumerate() {
            let t = first + c;
            let src = &col.to_slice().expect("column-major")[c..win];
            for (d, &v) in data[t * w..t * w + (win - c)].iter_mut().zip(src) {
                *d -= v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The column-by-column band Cholesky, the textbook algorithm: each
    /// column's update applied to every later column it reaches before the
    /// next column is factored.
    fn column_by_column(band: ArrayView2<'_, f64>, shift: f64) -> Result<Array2<f64>, usize> {
        let (n, w) = band.dim();
        let mut l = band.to_owned();
        for j in 0..n {
            let m = (w - 1).min(n - 1 - j);
            let d = l[[j, 0]] + shift;
            if d.is_nan() || d <= 0.0 {
                return Err(j);
            }
            let s = d.sqrt();
            l[[j, 0]] = s;
            for r in 1..=m {
                l[[j, r]] /= s;
            }
            for c in 1..=m {
                let lc = l[[j, c]];
                for r in 0..=m - c {
                    l[[j + c, r]] -= l[[j, c + r]] * lc;
                }
            }
        }
        Ok(l)
    }

    /// `L Lᵀ` of a band factor, in band storage.
    fn times_transpose(l: &Array2<f64>) -> Array2<f64> {
        let (n, w) = l.dim();
        Array2::from_shape_fn((n, w), |(j, r)| {
            let i = j + r;
            if i >= n {
                return 0.0;
            }
            // (L Lᵀ)[i, j] = Σ_k L[i, k] L[j, k] over k ≤ j with i − k ≤ b.
            (i.saturating_sub(w - 1)..=j).map(|k| l[[k, i - k]] * l[[k, j - k]]).sum()
        })
    }

    #[test]
    fn blocked_band_cholesky_matches_the_textbook_algorithm() {
        let mut r = ChaCha8Rng::seed_from_u64(21);
        // Partial blocks, bands shorter and longer than a block, bands
        // wider than the matrix, one column.
        for (n, bw) in [
            (1, 3),
            (5, 3),
            (40, 8),
            (BLOCK + 1, 8),
            (300, 64),
            (77, 100),
            (300, 128),
            (601, 193),
            (700, 256),
            (150, 200),
            (5, 230),
            (1, 192),
        ] {
            let band = Array2::from_shape_fn((n, bw + 1), |(j, k)| {
                if j + k >= n {
                    0.0
                } else if k == 0 {
                    4.0 * bw as f64 + r.random_range(0.0..1.0)
                } else {
                    r.random_range(-1.0..1.0)
                }
            });
            for shift in [0.0, 0.5] {
                let want = column_by_column(band.view(), shift).unwrap();
                let got = BandCholesky::new(band.view(), shift).unwrap().l;
                // The same factor up to the rounding of a different order
                // of the same subtractions (entries are O(1), b of them).
                let diff = want.iter().zip(got.iter()).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(diff <= 1e-14 * bw as f64, "n {n}, bw {bw}, shift {shift}: {diff:e}");
                let mut shifted = band.clone();
                shifted.column_mut(0).iter_mut().for_each(|v| *v += shift);
                let back = times_transpose(&got);
                let resid = back.iter().zip(shifted.iter()).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(resid <= 1e-12 * bw as f64, "n {n}, bw {bw}, shift {shift}: ‖LLᵀ − B‖ {resid:e}");
            }
            // A zero diagonal entry: the pivot there is negative (or zero
            // in the first column), and both stop at it.
            let mut broken = band.clone();
            broken[[n / 2, 0]] = 0.0;
            assert_eq!(BandCholesky::new(broken.view(), 0.0).err(), Some(n / 2));
            assert_eq!(column_by_column(broken.view(), 0.0).err(), Some(n / 2));
        }
    }
}
