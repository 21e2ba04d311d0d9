//! A blocked Cholesky factorisation whose flops go through the Gram kernel.
//!
//! Why by hand: on 2 cores, faer's `cholesky_in_place` reaches 8–24 % of
//! the measured f64 peak at `l = 1024..8192` (`cargo bench -p
//! kapprox-solve --bench ridge_solve`), while
//! [`crate::gram`] runs a rank-`k` lower update at 75–80 %. A
//! right-looking Cholesky spends all but `O(l² nb)` of its `l³/3` flops in
//! such trailing updates, so routing them through the Gram kernel is the
//! whole speed-up; the small diagonal factorisations and the triangular
//! solves of the panels stay faer's.
//!
//! The factor is bitwise the same for every thread count: faer runs with
//! the fixed split of [`crate::dense_par`], and the Gram kernel's bits do
//! not depend on its parallelism. Used by the ridge refit
//! (`kapprox-solve`) and by Nyström's factorisations of `K_mm`
//! (`kapprox-features`).

use crate::dense::{as_faer, as_faer_mut};
use crate::gram::{PackedRows, gram_par, syrk_lower_add};
use faer::Par;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use ndarray::parallel::prelude::*;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, s};

/// Columns per panel of the blocked Cholesky: the rank of each trailing
/// update. Wide enough for the Gram kernel to run at its rate, narrow
/// enough that the panel work (`O(l · nb²)`, faer's) stays small.
const CHOLESKY_BLOCK: usize = 256;

/// Factors the symmetric positive definite `a (n, n)` in place as `L Lᵀ`:
/// on return the lower triangle holds `L`. Only the lower triangle is read;
/// the strict upper triangle is scratch. Returns the index of the
/// first non-positive (or NaN) pivot instead.
///
/// Cost: `n³/3` flops, all but `O(n² nb)` of them in the Gram kernel.
/// Memory: one `(nb, n)` packed panel.
pub fn cholesky_lower_in_place(mut a: ArrayViewMut2<'_, f64>, par: Par) -> Result<(), usize> {
    let n = a.nrows();
    debug_assert_eq!(a.ncols(), n);
    // One panel's storage for every panel (the first is the largest).
    let mut panel = PackedRows::new(n.saturating_sub(CHOLESKY_BLOCK), CHOLESKY_BLOCK.min(n));
    let mut k = 0;
    while k < n {
        let nb = CHOLESKY_BLOCK.min(n - k);
        let end = k + nb;
        let (mut diag, mut below) = a.multi_slice_mut((s![k..end, k..end], s![end.., k..end]));
        let mut mem = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(nb, Par::Seq, Default::default()));
        if let Err(llt::factor::LltError::NonPositivePivot { index }) = llt::factor::cholesky_in_place(
            as_faer_mut(diag.view_mut()),
            Default::default(),
            Par::Seq,
            MemStack::new(&mut mem),
            Default::default(),
        ) {
            return Err(k + index);
        }
        if end == n {
            break;
        }
        // L₂₁ = A₂₁ L₁₁⁻ᵀ, i.e. L₁₁ L₂₁ᵀ = A₂₁ᵀ.
        solve_lower_triangular_in_place(as_faer(diag.view()), as_faer_mut(below.view_mut()).transpose_mut(), par);
        // A₂₂ −= L₂₁ L₂₁ᵀ: the Gram kernel over the rows of L₂₁ᵀ, which are
        // the columns of L₂₁ (contiguous rows of the transposed view, which
        // `set_rows` copies panel by panel).
        panel.reset(n - end, nb);
        panel.push_rows(nb);
        panel.set_rows(0, below.t(), None, gram_par(par));
        syrk_lower_add(a.slice_mut(s![end.., end..]), &panel, -1.0, gram_par(par));
        k = end;
    }
    Ok(())
}

/// The lower Cholesky factor of `A + shift·I` (only the lower triangle of
/// `a` is read), in a new column-major buffer; or the failing pivot.
///
/// Cost: `n³/3` flops (see [`cholesky_lower_in_place`]); memory: one `n²`
/// buffer ([`crate::buffer`]).
pub fn cholesky_shifted(a: ArrayView2<'_, f64>, shift: f64, par: Par) -> Result<Array2<f64>, usize> {
    let n = a.nrows();
    let mut l = crate::buffer::zeros((n, n), true);
    cholesky_shifted_into(l.view_mut(), a, shift, par)?;
    Ok(l)
}

/// [`cholesky_shifted`] into `work (n, n)`, column-major, whose previous
/// contents are overwritten (so one buffer serves several factorisations).
///
/// # Panics
/// `work` must be a column-major `(n, n)` matrix for `a (n, n)`.
pub fn cholesky_shifted_into(
    mut work: ArrayViewMut2<'_, f64>,
    a: ArrayView2<'_, f64>,
    shift: f64,
    par: Par,
) -> Result<(), usize> {
    let n = a.nrows();
    assert_eq!((a.ncols(), work.dim()), (n, (n, n)), "cholesky_shifted: a and work must be (n, n)");
    assert!(n == 0 || work.stride_of(Axis(0)) == 1, "cholesky_shifted: work must be column-major");
    // The lower triangle, column by column on every core.
    work.axis_iter_mut(Axis(1)).into_par_iter().enumerate().for_each(|(j, mut col)| {
        col.iter_mut().zip(a.column(j)).skip(j).for_each(|(w, &v)| *w = v);
        col[j] += shift;
    });
    cholesky_lower_in_place(work, par)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, ShapeBuilder};

    /// A symmetric positive definite matrix with a spread spectrum, only
    /// its lower triangle meaningful (the upper is filled with junk).
    fn spd(n: usize) -> Array2<f64> {
        let g = Array2::from_shape_fn((n, n + 3), |(i, j)| (((i * 31 + j * 17) % 23) as f64 - 11.0) / 7.0);
        let mut a = g.dot(&g.t());
        for i in 0..n {
            a[[i, i]] += 1e-3 * (i + 1) as f64;
            for j in i + 1..n {
                a[[i, j]] = 1e300;
            }
        }
        a
    }

    #[test]
    fn blocked_cholesky_reproduces_the_matrix_across_panel_edges() {
        for n in [1, 7, CHOLESKY_BLOCK, CHOLESKY_BLOCK + 1, 2 * CHOLESKY_BLOCK + 37] {
            let a = spd(n);
            let mut f = Array2::zeros((n, n).f());
            f.assign(&a);
            cholesky_lower_in_place(f.view_mut(), crate::dense_par()).unwrap();
            let l = Array2::from_shape_fn((n, n), |(i, j)| if i >= j { f[[i, j]] } else { 0.0 });
            let llt = l.dot(&l.t());
            let scale = (0..n).map(|i| a[[i, i]]).fold(0.0, f64::max);
            for i in 0..n {
                for j in 0..=i {
                    let err = (llt[[i, j]] - a[[i, j]]).abs();
                    assert!(err <= 1e-12 * scale * n as f64, "n = {n}: LLᵀ[{i},{j}] off by {err}");
                }
            }
        }
    }

    #[test]
    fn a_shifted_factor_reads_the_lower_triangle_and_reuses_its_buffer() {
        let n = CHOLESKY_BLOCK + 9;
        let a = spd(n);
        let fresh = cholesky_shifted(a.view(), 0.5, Par::Seq).unwrap();
        // The junk upper triangle of `a` is never read, and a buffer that
        // held another factorisation gives the same bits.
        let mut work = Array2::from_elem((n, n).f(), 7.0);
        cholesky_shifted_into(work.view_mut(), a.view(), 2.0, Par::Seq).unwrap();
        cholesky_shifted_into(work.view_mut(), a.view(), 0.5, Par::Seq).unwrap();
        for j in 0..n {
            for i in j..n {
                assert_eq!(work[[i, j]].to_bits(), fresh[[i, j]].to_bits(), "({i}, {j})");
            }
        }
        let mut shifted = a.clone();
        shifted.diag_mut().iter_mut().for_each(|v| *v += 0.5);
        let mut direct = Array2::zeros((n, n).f());
        direct.assign(&shifted);
        cholesky_lower_in_place(direct.view_mut(), Par::Seq).unwrap();
        assert!((0..n).all(|j| (j..n).all(|i| direct[[i, j]].to_bits() == fresh[[i, j]].to_bits())));
        // A shift that makes it indefinite names a pivot.
        assert!(cholesky_shifted(a.view(), -1e9, Par::Seq).is_err());
    }

    #[test]
    fn blocked_cholesky_names_the_first_bad_pivot() {
        let n = CHOLESKY_BLOCK + 40;
        let mut a = spd(n);
        // The leading p × p block stays positive definite; a very negative
        // diagonal entry makes pivot p the first non-positive one.
        let p = CHOLESKY_BLOCK + 5;
        a[[p, p]] = -1e6;
        let err = cholesky_lower_in_place(a.view_mut(), Par::Seq).unwrap_err();
        assert_eq!(err, p);
        let mut nan = spd(5);
        nan[[3, 3]] = f64::NAN;
        assert_eq!(cholesky_lower_in_place(nan.view_mut(), Par::Seq), Err(3));
    }

    #[test]
    fn blocked_cholesky_does_not_depend_on_the_thread_count() {
        let n = 2 * CHOLESKY_BLOCK + 3;
        let a = spd(n);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut f = a.clone();
                cholesky_lower_in_place(f.view_mut(), crate::dense_par()).unwrap();
                f
            })
        };
        let (one, two) = (run(1), run(2));
        assert!(one.iter().zip(two.iter()).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
