//! One orthogonal reduction to band form serves every ridge penalty.
//!
//! `A = Q B Qᵀ` with `B` symmetric banded (half-bandwidth [`band_width`]) and `Q`
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
//! Memory: the `l (l + 2w)` packed working matrix (freed after the
//! reduction), the reflectors (`≈ l²/2`), the band `l (b + 1)`, and
//! `(b, b)` factors per panel.

#![allow(non_snake_case)]

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::householder;
use faer::linalg::matmul::matmul;
use faer::linalg::qr::no_pivoting::factor as qr;
use faer::linalg::triangular_solve;
use faer::reborrow::ReborrowMut;
use faer::{Accum, Conj, Mat, MatMut, Par};
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::gram::{PackedRows, PackedSymmetric, gram_par};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};
use std::ops::Range;

/// Half-bandwidth `b` of the reduced matrix of dimension `l`: the panel
/// width of the reduction, 64 below `l = 4096`, then 64 more per 2048 up
/// to 256 (a multiple of every kernel's panel width).
///
/// Why it grows: each panel reads the whole trailing matrix for `A₂₂V`
/// and reads and writes it for the rank-`2b` update, `2b` flops per value
/// moved, so a wider panel leans less on memory. At `l = 8192` (scratch
/// timers, 2-core Xeon with AVX-512, one run each in alternation) the
/// reduction took 8.0–8.8 s at `b = 64`, 7.0–7.6 at 128 and 6.5–7.2 at
/// 256. What limits it: the per-α band Cholesky costs `l b²` (17 of them
/// 0.08–0.12 s at `b = 64`, 0.42–0.44 at 256 before it was blocked; see
/// `band_cholesky`), and the panels' QRs and small products grow as
/// `l² b`; `l / 32` keeps the grid's band Choleskys near 1 % of the
/// reduction's `4/3 l³`.
pub(crate) fn band_width(l: usize) -> usize {
    64 * (l / 2048).clamp(1, 4)
}

/// `A = Q B Qᵀ`: the reflectors of `Q` and the band of `B`.
#[derive(Clone, Debug)]
pub(crate) struct BandReduction {
    l: usize,
    /// The half-bandwidth `b`.
    b: usize,
    /// One block reflector per panel.
    panels: Vec<Panel>,
    /// `band[[j, r]] = B[j + r, j]`, `r = 0..=b`.
    band: Array2<f64>,
}

#[derive(Clone, Debug)]
struct Panel {
    /// First row of the rows the reflector acts on.
    row: usize,
    /// `(l − row, jb)`, column-major: faer's QR of the panel, the essential
    /// parts of its Householder vectors below `R`.
    basis: Array2<f64>,
    /// The `(kb, kb)` factor `T` of faer's block reflector `I − V T⁻¹ Vᵀ`.
    t: Mat<f64>,
}

impl BandReduction {
    /// Reduces the symmetric matrix packed in `work` (its working copy).
    ///
    /// Cost: `4/3 l³` flops in matrix–matrix products (the Gram kernel's),
    /// plus `O(l² b)` in the panel QRs.
    pub(crate) fn new(work: PackedSymmetric, par: Par) -> Self {
        let b = band_width(work.dim());
        Self::with_width(work, b, par)
    }

    /// [`BandReduction::new`] to half-bandwidth `b`, a multiple of the
    /// layout's panel width.
    fn with_width(mut work: PackedSymmetric, b: usize, par: Par) -> Self {
        let l = work.dim();
        debug_assert!(b > 0 && b.is_multiple_of(work.panel_width()));
        let mut band = Array2::zeros((l, b + 1));
        let mut panels = Vec::new();
        let mut scratch = Scratch::new(work.simd());
        // The first panel's QR; each later one runs beside the previous
        // panel's update (see `reduce_panel`).
        let mut factored =
            (b < l).then(|| factor_panel(panel_below(&work, 0..b), b, &mut scratch.v, &mut scratch.v_rows));
        let mut col = 0;
        while col < l {
            let row = (col + b).min(l);
            // The diagonal block is final once the previous panel updated it.
            let mut diag = Array2::zeros((row - col, row - col).f());
            work.copy_block(col..row, col..row, diag.view_mut());
            for j in 0..row - col {
                for i in j..row - col {
                    band[[col + j, i - j]] = diag[[i, j]];
                }
            }
            if let Some(f) = factored.take() {
                let (p, next) = reduce_panel(&mut work, f, b, &mut scratch, par);
                // R (upper trapezoidal, kb × jb) is the block below the diagonal one.
                let kb = p.t.nrows();
                for c in 0..row - col {
                    for r in 0..=c.min(kb - 1) {
                        band[[col + c, row + r - col - c]] = p.basis[[r, c]];
                    }
                }
                panels.push(p);
                factored = next;
            }
            col = row;
        }
        BandReduction { l, b, panels, band }
    }

    /// Dimension `l`.
    pub(crate) fn dim(&self) -> usize {
        self.l
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
        let basis = as_faer(p.basis.slice(s![.., ..kb]));
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
            for r in 0..=self.b.min(l - 1 - j) {
                b[[j + r, j]] = self.band[[j, r]];
                b[[j, j + r]] = self.band[[j, r]];
            }
        }
        b
    }
}

/// The panel below the diagonal block of the columns `cols`:
/// `A[cols.end.., cols]`, column-major.
fn panel_below(work: &PackedSymmetric, cols: Range<usize>) -> Array2<f64> {
    let mut basis = Array2::zeros((work.dim() - cols.end, cols.len()).f());
    work.copy_block(cols.end..work.dim(), cols, basis.view_mut());
    basis
}

/// The QR of the panel `A[row.., row − b..row]` (its reflectors, `V`
/// explicit in `v` and packed in `v_rows`). On one thread: the panel is
/// thin (`n × b`), and faer's parallel split of it spent more in
/// synchronisation than it gained (the QRs took 2.5× longer on two threads
/// at l = 1024).
fn factor_panel(mut basis: Array2<f64>, row: usize, v: &mut Array2<f64>, v_rows: &mut PackedRows<f64>) -> Panel {
    let (n, jb) = basis.dim();
    let kb = jb.min(n);
    let mut t = Mat::<f64>::zeros(kb, kb);
    let mut mem = MemBuffer::new(qr::qr_in_place_scratch::<f64>(n, jb, kb, Par::Seq, Default::default()));
    qr::qr_in_place(as_faer_mut(basis.view_mut()), t.as_mut(), Par::Seq, MemStack::new(&mut mem), Default::default());
    // V explicitly: unit lower trapezoidal (n, kb), and as packed rows.
    let mut v = Scratch::zeroed(v, n, kb);
    for c in 0..kb {
        v[[c, c]] = 1.0;
        v.slice_mut(s![c + 1.., c]).assign(&basis.slice(s![c + 1.., c]));
    }
    v_rows.reset(kb, n);
    for _ in 0..n {
        v_rows.push_row();
    }
    for c in 0..kb {
        v_rows.set_column(c, v.column(c));
    }
    Panel { row, basis, t }
}

/// The two-sided update of the trailing matrix `A₂₂ = A[row.., row..]` by
/// the factored panel `f` (whose `V` is in `scratch`):
/// `A₂₂ ← Qᵀ A₂₂ Q = A₂₂ − W Vᵀ − V Wᵀ` with `Q = I − V S Vᵀ`, `S = T⁻¹`,
/// `X = A₂₂ V S`, `W = X − ½ V (Sᵀ Vᵀ X)`. Returns the panel and the next
/// panel factored, if there is one.
///
/// Both halves of the flops run in the Gram kernel on every core, with the
/// whole matrix kept symmetric in its packed layout: the product `A₂₂ V`
/// ([`PackedSymmetric::symm_add`]) and the rank-`2b` update as one product
/// over the `2b` packed rows `[W V]ᵀ` and `[V W]ᵀ`
/// ([`PackedSymmetric::symmetric_update`]). (faer's triangular products
/// ran `A₂₂ V` at 13–18 GFLOP/s per core, against ~40 for the kernel.)
///
/// Look-ahead: the update of the next panel's columns comes first; then
/// that panel's QR, on one thread, runs beside the rest of the update,
/// whose tasks the other threads take (and the QR's thread, once done).
/// The QRs no longer leave a core idle, and every entry gets the same bits
/// as from one whole update.
fn reduce_panel(
    work: &mut PackedSymmetric,
    f: Panel,
    b: usize,
    scratch: &mut Scratch,
    par: Par,
) -> (Panel, Option<Panel>) {
    let l = work.dim();
    let row = f.row;
    let (n, kb) = (l - row, f.t.nrows());
    let Scratch { v_rows, wv, vw, v, x } = scratch;
    let t = &f.t;
    // X = A₂₂ V.
    let mut x = Scratch::zeroed(x, n, kb);
    work.symm_add(row, v_rows, x.view_mut(), 1.0, gram_par(par));
    let v_view = v.slice(s![..n, ..kb]);
    {
        // X ← X T⁻¹, i.e. Tᵀ Xᵀ = Xᵀ.
        let mut xf = as_faer_mut(x.view_mut());
        triangular_solve::solve_lower_triangular_in_place(t.as_ref().transpose(), xf.rb_mut().transpose_mut(), par);
    }
    // M = T⁻ᵀ (Vᵀ X), then W = X − ½ V M (in place of X).
    let mut m = as_faer(v_view).transpose() * as_faer(x.view());
    triangular_solve::solve_lower_triangular_in_place(t.as_ref().transpose(), m.as_mut(), par);
    matmul(as_faer_mut(x.view_mut()), Accum::Add, as_faer(v_view), m.as_ref(), -0.5, par);
    let w = x;
    // A₂₂ −= [W V] [V W]ᵀ, as one product over 2kb rows: rows of `wv` are
    // W's then V's columns, rows of `vw` V's then W's.
    // A column of W or V is a row of the packed operands: the transposed
    // views have contiguous rows, which `set_rows` copies panel by panel
    // (`set` per row touched every panel for each row, 0.27 s at l = 4096).
    let gp = gram_par(par);
    for (rows, first, second) in [(&mut *wv, w.t(), v_view.t()), (&mut *vw, v_view.t(), w.t())] {
        rows.reset(n, 2 * kb);
        rows.push_rows(2 * kb);
        rows.set_rows(0, first, None, gp);
        rows.set_rows(kb, second, None, gp);
    }
    let next_row = (row + b).min(l);
    if next_row == l {
        work.symmetric_update(row, wv, vw, -1.0, gram_par(par));
        return (f, None);
    }
    work.symmetric_update_columns(row, row..next_row, wv, vw, -1.0, gram_par(par));
    let basis = panel_below(work, row..next_row);
    let (wv, vw) = (&*wv, &*vw);
    let next = if matches!(par, Par::Seq) {
        work.symmetric_update_columns(row, next_row..l, wv, vw, -1.0, Par::Seq);
        factor_panel(basis, next_row, v, v_rows)
    } else {
        rayon::join(
            || factor_panel(basis, next_row, v, v_rows),
            || work.symmetric_update_columns(row, next_row..l, wv, vw, -1.0, gram_par(par)),
        )
        .0
    };
    (f, Some(next))
}

/// The operands of a panel's products, allocated once for the first
/// (largest) panel and reused ([`PackedRows::reset`], [`Scratch::zeroed`]):
/// a fresh zeroed block per panel cost page faults and a fill of
/// megabytes (at l = 4096, 64 panels of 2 MB each for `V` and for `X`,
/// whose zero pages faulted 4 KiB at a time as the products wrote them).
struct Scratch {
    /// `V`'s rows.
    v_rows: PackedRows<f64>,
    /// `[W V]ᵀ` and `[V W]ᵀ`, `2b` rows each.
    wv: PackedRows<f64>,
    vw: PackedRows<f64>,
    /// Storage of `V` and of `X` (then `W`), column-major.
    v: Array2<f64>,
    x: Array2<f64>,
}

impl Scratch {
    fn new(simd: kapprox_core::cpu::Simd) -> Self {
        let empty = || PackedRows::with_simd(simd, 0, 0);
        Scratch {
            v_rows: empty(),
            wv: empty(),
            vw: empty(),
            v: Array2::zeros((0, 0).f()),
            x: Array2::zeros((0, 0).f()),
        }
    }

    /// A zero `(n, k)` view of `storage`, column-major with its leading
    /// dimension, which grows (fresh) only when too small.
    fn zeroed(storage: &mut Array2<f64>, n: usize, k: usize) -> ArrayViewMut2<'_, f64> {
        if storage.nrows() < n || storage.ncols() < k {
            *storage = kapprox_core::buffer::zeros((n, k), true);
        }
        let mut view = storage.slice_mut(s![..n, ..k]);
        view.fill(0.0);
        view
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
    use crate::band_cholesky::BandCholesky;
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
    fn band_width_grows_with_l_in_whole_panels() {
        let widths: Vec<usize> = [1, 2047, 2048, 4095, 4096, 6144, 8192, 16384].map(band_width).to_vec();
        assert_eq!(widths, [64, 64, 64, 64, 128, 192, 256, 256]);
    }

    #[test]
    fn reduction_is_orthogonal_and_reproduces_a() {
        for (l, bw) in [64, 128].into_iter().flat_map(|bw| [1, 5, bw, bw + 1, 2 * bw + 17, 3 * bw].map(|l| (l, bw))) {
            let a = spd(l, l as u64);
            let red = BandReduction::with_width(PackedSymmetric::from_lower(a.view()), bw, Par::Seq);
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
                    if i.abs_diff(j) > bw {
                        assert_eq!(b[[i, j]], 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn reduction_does_not_depend_on_the_thread_count() {
        let bw = 64;
        let l = 5 * bw + 3;
        let a = spd(l, 9);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                BandReduction::with_width(PackedSymmetric::from_lower(a.view()), bw, kapprox_core::dense_par())
            })
        };
        let (one, two) = (run(1), run(2));
        assert!(one.band.iter().zip(two.band.iter()).all(|(x, y)| x.to_bits() == y.to_bits()));
        for (p, q) in one.panels.iter().zip(&two.panels) {
            assert!(p.basis.iter().zip(q.basis.iter()).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn band_cholesky_solves_and_refuses_indefinite_shifts() {
        let l = 2 * 64 + 9;
        let a = spd(l, 3);
        let red = BandReduction::new(PackedSymmetric::from_lower(a.view()), Par::Seq);
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
