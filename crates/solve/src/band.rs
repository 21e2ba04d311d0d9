//! One orthogonal reduction to band form serves every ridge penalty.
//!
//! `A = Q B Qᵀ` with `B` symmetric banded (half-bandwidth [`BAND`]) and `Q`
//! a product of block Householder reflectors: the first stage of the
//! two-stage symmetric eigensolvers (LAPACK's `sytrd_sy2sb`). Then
//! `(A + αI)⁻¹ = Q (B + αI)⁻¹ Qᵀ` for every α, and `B + αI` is a band
//! matrix whose Cholesky factorisation costs `l·b²` flops instead of `l³/3`.
//!
//! The cost table, against the alternatives, is in the docs of
//! [`AlphaPath`](crate::AlphaPath). The result does not depend on the
//! thread count (faer with the fixed split of `kapprox_core::dense_par`,
//! and the Gram kernel).
//!
//! Memory: the `l²` working matrix (it keeps the reflectors), the band
//! `l (b + 1)`, and `(b, b)` factors per panel.

#![allow(non_snake_case)]

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::householder;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::qr::no_pivoting::factor as qr;
use faer::linalg::triangular_solve;
use faer::reborrow::ReborrowMut;
use faer::{Accum, Conj, Mat, MatMut, Par};
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::gram::{PackedRows, gemm_tn_lower_add};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};

/// Half-bandwidth of the reduced matrix: the panel width of the reduction.
/// Wide enough that the rank-`2b` updates run at matrix–matrix speed,
/// narrow enough that the per-α band Cholesky (`l b²`) stays negligible.
pub(crate) const BAND: usize = 64;

/// `A = Q B Qᵀ`: the reflectors of `Q` and the band of `B`.
#[derive(Clone, Debug)]
pub(crate) struct BandReduction {
    /// `(l, l)`, column-major: below each panel's block `R`, the essential
    /// parts of its Householder vectors (faer's QR layout).
    work: Array2<f64>,
    /// Per panel: first column, rows start, and the `(kb, kb)` factor `T`
    /// of faer's block reflector `I − V T⁻¹ Vᵀ`.
    panels: Vec<Panel>,
    /// `band[[j, r]] = B[j + r, j]`, `r = 0..=BAND`.
    band: Array2<f64>,
}

#[derive(Clone, Debug)]
struct Panel {
    col: usize,
    row: usize,
    t: Mat<f64>,
}

impl BandReduction {
    /// Reduces the symmetric `a (l, l)` (only its lower triangle is read).
    ///
    /// Cost: `4/3 l³` flops in matrix–matrix products, plus `O(l² b)` in
    /// the panel QRs.
    pub(crate) fn new(a: ArrayView2<'_, f64>, par: Par) -> Self {
        let l = a.nrows();
        let mut work = Array2::<f64>::zeros((l, l).f());
        for j in 0..l {
            for i in j..l {
                work[[i, j]] = a[[i, j]];
            }
        }
        let mut panels = Vec::new();
        let mut col = 0;
        while col + BAND < l {
            let row = col + BAND;
            panels.push(reduce_panel(&mut work, col, row, par));
            col = row;
        }
        let band = extract_band(&work, &panels);
        BandReduction { work, panels, band }
    }

    /// Dimension `l`.
    pub(crate) fn dim(&self) -> usize {
        self.work.nrows()
    }

    /// The band of `B`: `band[[j, r]] = B[j + r, j]`.
    pub(crate) fn band(&self) -> ArrayView2<'_, f64> {
        self.band.view()
    }

    /// `y ← Qᵀ y` for `y (l, k)`. Cost: `4 l² k` flops.
    pub(crate) fn apply_qt(&self, y: ArrayViewMut2<'_, f64>, par: Par) {
        let mut y = as_faer_mut(y);
        for p in &self.panels {
            self.apply_panel(p, y.rb_mut(), true, par);
        }
    }

    /// `y ← Q y` for `y (l, k)`. Cost: `4 l² k` flops.
    pub(crate) fn apply_q(&self, y: ArrayViewMut2<'_, f64>, par: Par) {
        let mut y = as_faer_mut(y);
        for p in self.panels.iter().rev() {
            self.apply_panel(p, y.rb_mut(), false, par);
        }
    }

    fn apply_panel(&self, p: &Panel, y: MatMut<'_, f64>, transpose: bool, par: Par) {
        let l = self.dim();
        let kb = p.t.nrows();
        let basis = as_faer(self.work.slice(s![p.row..l, p.col..p.col + kb]));
        let k = y.ncols();
        let rows = y.subrows_mut(p.row, l - p.row);
        let (scratch, apply) = if transpose {
            (
                householder::apply_block_householder_transpose_on_the_left_in_place_scratch::<f64>
                    as fn(usize, usize, usize) -> _,
                householder::apply_block_householder_transpose_on_the_left_in_place_with_conj::<f64>
                    as fn(_, _, _, _, _, &mut MemStack),
            )
        } else {
            (
                householder::apply_block_householder_on_the_left_in_place_scratch::<f64>
                    as fn(usize, usize, usize) -> _,
                householder::apply_block_householder_on_the_left_in_place_with_conj::<f64>
                    as fn(_, _, _, _, _, &mut MemStack),
            )
        };
        let mut mem = MemBuffer::new(scratch(l - p.row, kb, k));
        apply(basis, p.t.as_ref(), Conj::No, rows, par, MemStack::new(&mut mem));
    }

    /// `B` as a dense symmetric matrix (for the eigen fallback).
    pub(crate) fn dense_band(&self) -> Array2<f64> {
        let l = self.dim();
        let mut b = Array2::zeros((l, l).f());
        for j in 0..l {
            for r in 0..=BAND.min(l - 1 - j) {
                b[[j + r, j]] = self.band[[j, r]];
                b[[j, j + r]] = self.band[[j, r]];
            }
        }
        b
    }
}

/// QR of the panel `A[row.., col..row]`, then the two-sided update of the
/// trailing matrix `A[row.., row..]` (lower triangle):
/// `A₂₂ ← Qᵀ A₂₂ Q = A₂₂ − W Vᵀ − V Wᵀ` with `Q = I − V S Vᵀ`, `S = T⁻¹`,
/// `X = A₂₂ V S`, `W = X − ½ V (Sᵀ Vᵀ X)`.
///
/// The symmetric product `A₂₂ V` (from the lower triangle) is faer's
/// triangular GEMM; the rank-`2b` update, the other half of the flops, is
/// one product of the Gram kernel over the `2b` packed rows `[W V]ᵀ` and
/// `[V W]ᵀ` (`kapprox_core::gram::gemm_tn_lower_add`), on every core.
fn reduce_panel(work: &mut Array2<f64>, col: usize, row: usize, par: Par) -> Panel {
    let l = work.nrows();
    let (jb, n) = (row - col, l - row);
    let kb = jb.min(n);
    let mut t = Mat::<f64>::zeros(kb, kb);
    {
        let panel = as_faer_mut(work.slice_mut(s![row.., col..row]));
        let mut mem = MemBuffer::new(qr::qr_in_place_scratch::<f64>(n, jb, kb, par, Default::default()));
        qr::qr_in_place(panel, t.as_mut(), par, MemStack::new(&mut mem), Default::default());
    }
    // V explicitly: unit lower trapezoidal (n, kb).
    let mut v = Array2::<f64>::zeros((n, kb).f());
    for c in 0..kb {
        v[[c, c]] = 1.0;
        for r in c + 1..n {
            v[[r, c]] = work[[row + r, col + c]];
        }
    }
    // X = A₂₂ V from the lower triangle: tril(A₂₂) V + stril(A₂₂)ᵀ V.
    let mut x = Array2::<f64>::zeros((n, kb).f());
    {
        let a22 = as_faer(work.slice(s![row.., row..]));
        let (vf, mut xf) = (as_faer(v.view()), as_faer_mut(x.view_mut()));
        triangular::matmul(
            xf.rb_mut(),
            BlockStructure::Rectangular,
            Accum::Replace,
            a22,
            BlockStructure::TriangularLower,
            vf,
            BlockStructure::Rectangular,
            1.0,
            par,
        );
        triangular::matmul(
            xf.rb_mut(),
            BlockStructure::Rectangular,
            Accum::Add,
            a22.transpose(),
            BlockStructure::StrictTriangularUpper,
            vf,
            BlockStructure::Rectangular,
            1.0,
            par,
        );
        // X ← X T⁻¹, i.e. Tᵀ Xᵀ = Xᵀ.
        triangular_solve::solve_lower_triangular_in_place(t.as_ref().transpose(), xf.transpose_mut(), par);
    }
    // M = T⁻ᵀ (Vᵀ X), then W = X − ½ V M (in place of X).
    let mut m = as_faer(v.view()).transpose() * as_faer(x.view());
    triangular_solve::solve_lower_triangular_in_place(t.as_ref().transpose(), m.as_mut(), par);
    let vm = as_faer(v.view()) * m.as_ref();
    for c in 0..kb {
        for r in 0..n {
            x[[r, c]] -= 0.5 * vm[(r, c)];
        }
    }
    let w = x;
    // A₂₂ −= [W V] [V W]ᵀ (lower triangle), as one product over 2kb rows:
    // rows of `wv` are W's then V's columns, rows of `vw` V's then W's.
    let mut wv = PackedRows::new(n, 2 * kb);
    let mut vw = PackedRows::new(n, 2 * kb);
    for (first, second) in [(&w, &v), (&v, &w)] {
        for c in 0..kb {
            let r = wv.push_row();
            wv.set(r, 0, first.column(c));
            let r = vw.push_row();
            vw.set(r, 0, second.column(c));
        }
    }
    gemm_tn_lower_add(work.slice_mut(s![row.., row..]), &wv, &vw, -1.0, gram_par(par));
    Panel { col, row, t }
}

/// The Gram kernel's parallelism for a faer one: its bits do not depend
/// on it, so any split runs on the whole pool.
pub(crate) fn gram_par(par: Par) -> Par {
    if matches!(par, Par::Seq) { Par::Seq } else { Par::rayon(0) }
}

/// The band of the reduced matrix: each panel's diagonal block (lower) and
/// its `R` (upper trapezoidal) below it; the reflectors stored under `R`
/// are not part of `B`.
fn extract_band(work: &Array2<f64>, panels: &[Panel]) -> Array2<f64> {
    let l = work.nrows();
    let mut band = Array2::zeros((l, BAND + 1));
    let mut col = 0;
    let mut pi = 0;
    while col < l {
        let row = (col + BAND).min(l);
        let kb = panels.get(pi).filter(|p| p.col == col).map_or(0, |p| p.t.nrows());
        for j in col..row {
            for i in j..(j + BAND + 1).min(l) {
                let inside = if i < row { true } else { i - row <= j - col && i - row < kb };
                if inside {
                    band[[j, i - j]] = work[[i, j]];
                }
            }
        }
        pi += 1;
        col = row;
    }
    band
}

/// The Cholesky factor of a shifted band matrix, in the same band layout.
#[derive(Clone, Debug)]
pub(crate) struct BandCholesky {
    l: Array2<f64>,
}

impl BandCholesky {
    /// Factors `B + shift·I` (`band[[j, r]] = B[j + r, j]`), or returns the
    /// index of the first non-positive pivot.
    ///
    /// Cost: `l b²` flops.
    pub(crate) fn new(band: ArrayView2<'_, f64>, shift: f64) -> Result<Self, usize> {
        let (n, w) = band.dim();
        let bw = w - 1;
        let mut l = band.as_standard_layout().into_owned();
        let data = l.as_slice_mut().expect("standard layout");
        for j in 0..n {
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
            // its entries r − c = 0..=m − c are contiguous.
            for c in 1..=m {
                let lc = col[c];
                let target = &mut tail[(c - 1) * w..(c - 1) * w + (m - c + 1)];
                for (t, &v) in target.iter_mut().zip(&col[c..=m]) {
                    *t -= v * lc;
                }
            }
        }
        Ok(BandCholesky { l })
    }

    /// Solves `L Lᵀ x = y` in place for every column of `y (l, k)`.
    ///
    /// Cost: `4 l b k` flops.
    pub(crate) fn solve_in_place(&self, mut y: ArrayViewMut2<'_, f64>) {
        let (n, w) = self.l.dim();
        let bw = w - 1;
        let data = self.l.as_slice().expect("standard layout");
        let mut x = vec![0.0; n];
        for mut col in y.columns_mut() {
            x.iter_mut().zip(col.iter()).for_each(|(a, &b)| *a = b);
            for j in 0..n {
                let m = bw.min(n - 1 - j);
                let lj = &data[j * w..j * w + m + 1];
                let v = x[j] / lj[0];
                x[j] = v;
                for (t, &c) in x[j + 1..j + 1 + m].iter_mut().zip(&lj[1..]) {
                    *t -= c * v;
                }
            }
            for j in (0..n).rev() {
                let m = bw.min(n - 1 - j);
                let lj = &data[j * w..j * w + m + 1];
                let dot: f64 = x[j + 1..j + 1 + m].iter().zip(&lj[1..]).map(|(a, b)| a * b).sum();
                x[j] = (x[j] - dot) / lj[0];
            }
            col.iter_mut().zip(&x).for_each(|(a, &b)| *a = b);
        }
    }
}

/// `out = B x` for the symmetric band matrix `band` and vectors `x (l, k)`.
///
/// Cost: `4 l b k` flops.
pub(crate) fn band_matvec(band: ArrayView2<'_, f64>, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
    let (n, w) = band.dim();
    out.fill(0.0);
    for (xc, mut oc) in x.columns().into_iter().zip(out.columns_mut()) {
        for j in 0..n {
            let mut s = band[[j, 0]] * xc[j];
            for r in 1..=(w - 1).min(n - 1 - j) {
                let b = band[[j, r]];
                s += b * xc[j + r];
                oc[j + r] += b * xc[j];
            }
            oc[j] += s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn spd(l: usize, seed: u64) -> Array2<f64> {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let g = Array2::from_shape_fn((l + 5, l), |_| r.random_range(-1.0..1.0));
        g.t().dot(&g)
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn reduction_is_orthogonal_and_reproduces_a() {
        for l in [1, 5, BAND, BAND + 1, 2 * BAND + 17, 3 * BAND] {
            let a = spd(l, l as u64);
            let red = BandReduction::new(a.view(), Par::Seq);
            // Q B Qᵀ = A, with Q applied to the identity.
            let mut q = Array2::<f64>::eye(l);
            red.apply_q(q.view_mut(), Par::Seq);
            let b = red.dense_band();
            let back = q.dot(&b).dot(&q.t());
            let e = max_abs(&(&back - &a)) / max_abs(&a);
            assert!(e < 1e-13 * l as f64, "l = {l}: ‖QBQᵀ − A‖ / ‖A‖ = {e:e}");
            let qtq = q.t().dot(&q) - Array2::<f64>::eye(l);
            assert!(max_abs(&qtq) < 1e-13 * l as f64);
            // Qᵀ undoes Q.
            red.apply_qt(q.view_mut(), Par::Seq);
            assert!(max_abs(&(&q - &Array2::<f64>::eye(l))) < 1e-13 * l as f64);
            // B is banded: nothing outside the band (checked through the
            // dense form, which holds only band entries), symmetric.
            assert_eq!(b, b.t());
            for i in 0..l {
                for j in 0..l {
                    if i.abs_diff(j) > BAND {
                        assert_eq!(b[[i, j]], 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn band_cholesky_solves_and_refuses_indefinite_shifts() {
        let l = 2 * BAND + 9;
        let a = spd(l, 3);
        let red = BandReduction::new(a.view(), Par::Seq);
        let y = Array2::from_shape_fn((l, 2), |(i, j)| (i * 3 + j) as f64 * 0.01 - 0.5);
        for shift in [1e-3, 1.0, 100.0] {
            let ch = BandCholesky::new(red.band(), shift).unwrap();
            let mut x = y.clone();
            ch.solve_in_place(x.view_mut());
            let mut bx = Array2::zeros((l, 2));
            band_matvec(red.band(), x.view(), bx.view_mut());
            let r = bx + shift * &x - &y;
            assert!(max_abs(&r) < 1e-10 * max_abs(&y), "shift {shift}: residual {:e}", max_abs(&r));
        }
        let lambda_max = max_abs(&a) * l as f64;
        assert!(BandCholesky::new(red.band(), -lambda_max).is_err());
    }
}
