//! Shifted symmetric solves `(A + αI) X = B` with diagnostics, and the dense
//! helpers (faer) that the ridge, path and kernel ridge code share.

use crate::error::{Result, SolveError, check_finite, lower_is_finite};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::{Accum, Mat, MatRef, Par, Side};
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::rng::mix64;
use ndarray::{Array1, Array2, ArrayView2, ShapeBuilder, s};
use serde::{Deserialize, Serialize};

/// What to do when `A + αI` cannot be factored reliably by Cholesky: a
/// non-positive pivot, or a condition estimate above `1/rcond`.
///
/// Default: [`Fallback::Eigen`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Fallback {
    /// Eigendecompose `A` and apply the pseudo-inverse of `A + αI`, dropping
    /// the directions with `λᵢ + α ≤ rcond · (λ_max + α)`. With `α = 0` this
    /// is the minimum-norm least-squares solution. Cost: about `9 l³`
    /// flops instead of Cholesky's `l³/3`.
    #[default]
    Eigen,
    /// Retry Cholesky with a growing diagonal jitter, starting at
    /// `2 · rcond · trace(A + αI)` and growing tenfold per try (at most 8
    /// tries). The jitter is reported in [`SolveInfo::jitter_added`]; it
    /// acts as extra penalty.
    Jitter,
    /// Return [`SolveError::NotPositiveDefinite`] or
    /// [`SolveError::IllConditioned`].
    Error,
}

/// How a system was solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SolveMethod {
    /// Cholesky factorisation of `A + αI` (plus any jitter).
    Cholesky,
    /// Symmetric eigendecomposition of `A` with a pseudo-inverse cut-off.
    Eigen,
    /// Cholesky factorisation of the band matrix `B + αI`, where
    /// `A = Q B Qᵀ` is one orthogonal reduction shared by a whole α path
    /// ([`AlphaPath`](crate::AlphaPath)): as accurate as [`Cholesky`](SolveMethod::Cholesky).
    BandCholesky,
}

/// Diagnostics of a solve, returned next to the result (as faer's `LltInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SolveInfo {
    /// The factorisation that produced the result.
    pub method: SolveMethod,
    /// Diagonal added on top of `α` by [`Fallback::Jitter`] (0 otherwise).
    pub jitter_added: f64,
    /// Estimate of the 2-norm condition number of the matrix actually
    /// solved. For Cholesky it is a lower bound from a few power and
    /// inverse iterations; for the eigen solve it is exact over the kept
    /// directions, `(λ_max + α) / (λ_min,kept + α)`, and infinite if no
    /// direction is kept.
    pub condition_estimate: f64,
    /// Number of directions solved for: the dimension for Cholesky, the
    /// number of eigenvalues above the cut-off for the eigen solve.
    pub rank: usize,
}

/// Parallelism of the dense kernels: a fixed split, so that the solution
/// does not depend on the thread count (see `kapprox_core::DENSE_SPLIT`).
pub(crate) fn par() -> Par {
    kapprox_core::dense_par()
}

/// `lhs · rhs` as a new column-major array.
pub(crate) fn mul(lhs: MatRef<'_, f64>, rhs: MatRef<'_, f64>) -> Array2<f64> {
    let mut out = Array2::zeros((lhs.nrows(), rhs.ncols()).f());
    faer::linalg::matmul::matmul(as_faer_mut(out.view_mut()), Accum::Replace, lhs, rhs, 1.0, par());
    out
}

/// `A X` for the symmetric `a (n, n)` of which only the lower triangle is
/// read, `x (n, c)`: two triangular products (faer), `2 n² c` flops.
pub(crate) fn symmetric_mul(a: ArrayView2<'_, f64>, x: ArrayView2<'_, f64>) -> Array2<f64> {
    use faer::linalg::matmul::triangular::{BlockStructure, matmul};
    let mut out = Array2::zeros((a.nrows(), x.ncols()).f());
    let (af, xf) = (as_faer(a), as_faer(x));
    let rect = BlockStructure::Rectangular;
    matmul(
        as_faer_mut(out.view_mut()),
        rect,
        Accum::Replace,
        af,
        BlockStructure::TriangularLower,
        xf,
        rect,
        1.0,
        par(),
    );
    let upper = BlockStructure::StrictTriangularUpper;
    matmul(as_faer_mut(out.view_mut()), rect, Accum::Add, af.transpose(), upper, xf, rect, 1.0, par());
    out
}

/// A symmetric eigendecomposition `A = U diag(λ) Uᵀ`, eigenvalues ascending.
/// `U` stays a faer matrix (no copy into ndarray).
#[derive(Clone, Debug)]
pub(crate) struct Eigh {
    pub(crate) lambda: Array1<f64>,
    pub(crate) u: Mat<f64>,
}

/// Eigendecomposition of a symmetric matrix (lower triangle read).
///
/// Cost: about `9 n³` flops; memory: `U` plus faer's workspace (~`2 n²`).
pub(crate) fn eigh(a: ArrayView2<'_, f64>) -> Result<Eigh> {
    par();
    let evd = as_faer(a)
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| SolveError::NoConvergence { what: "the symmetric eigensolver" })?;
    let s = evd.S();
    let lambda = Array1::from_shape_fn(a.nrows(), |i| s[i]);
    let u = evd.U().to_owned();
    Ok(Eigh { lambda, u })
}

/// Pseudo-inverse weights `dᵢ = 1/(λᵢ + α)` for the kept directions
/// (`λᵢ + α > rcond · (max(λ_max, 0) + α)`), 0 for the others; with the
/// rank and condition number of the kept part.
pub(crate) fn pinv_weights(lambda: &Array1<f64>, alpha: f64, rcond: f64) -> (Array1<f64>, usize, f64) {
    let top = lambda.iter().fold(0.0f64, |m, &v| m.max(v)) + alpha;
    let cut = rcond * top;
    let mut rank = 0;
    let mut smallest = f64::INFINITY;
    let d = lambda.mapv(|l| {
        let s = l + alpha;
        if top > 0.0 && s > cut {
            rank += 1;
            smallest = smallest.min(s);
            1.0 / s
        } else {
            0.0
        }
    });
    let cond = if rank > 0 { top / smallest } else { f64::INFINITY };
    (d, rank, cond)
}

/// `U diag(d) Uᵀ B` given `UᵀB`.
pub(crate) fn apply_weights(u: &Mat<f64>, utb: &Array2<f64>, d: &Array1<f64>) -> Array2<f64> {
    let mut scaled = utb.clone();
    for (mut row, &di) in scaled.rows_mut().into_iter().zip(d.iter()) {
        row *= di;
    }
    mul(u.as_ref(), as_faer(scaled.view()))
}

/// The lower Cholesky factor of `A + shift·I`, or the failing pivot
/// (blocked, see [`kapprox_core::cholesky`]).
fn cholesky_shifted(a: ArrayView2<'_, f64>, shift: f64) -> std::result::Result<Array2<f64>, usize> {
    kapprox_core::cholesky::cholesky_shifted(a, shift, par())
}

/// Solves `L Lᵀ X = B` in place (only the lower triangle of `l` is read).
fn cholesky_solve_in_place(l: &Array2<f64>, x: &mut Array2<f64>, par: Par) {
    let mut mem = MemBuffer::new(llt::solve::solve_in_place_scratch::<f64>(l.nrows(), x.ncols(), par));
    let stack = MemStack::new(&mut mem);
    llt::solve::solve_in_place(as_faer(l.view()), as_faer_mut(x.view_mut()), par, stack);
}

/// A deterministic, well-spread unit start vector.
pub(crate) fn start_vector(n: usize) -> Array2<f64> {
    let mut v =
        Array2::from_shape_fn((n, 1), |(i, _)| (mix64(i as u64 ^ 0x5eed) >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v /= norm;
    }
    v
}

pub(crate) fn normalize(v: &mut Array2<f64>) -> f64 {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        *v /= norm;
    }
    norm
}

/// Iterations of each of the power and inverse iterations of the
/// condition estimate.
pub(crate) const COND_ITERS: usize = 12;

/// `y = A x` for the symmetric `a` (lower triangle read) and one vector.
/// Column-major `a` takes one pass over its lower triangle (this product
/// is memory bound: reading the triangle once is its whole cost).
fn symmetric_matvec(a: ArrayView2<'_, f64>, x: ArrayView2<'_, f64>, mut y: ndarray::ArrayViewMut2<'_, f64>) {
    let n = a.nrows();
    if a.strides()[0] != 1 || x.as_slice().is_none() || y.as_slice().is_none() {
        y.assign(&symmetric_mul(a, x));
        return;
    }
    let (x, y) = (x.to_slice().expect("contiguous"), y.as_slice_mut().expect("contiguous"));
    y.fill(0.0);
    for j in 0..n {
        let col = a.slice(s![j.., j]);
        let col = col.as_slice().expect("unit row stride");
        let xj = x[j];
        let (ys, xs, below) = (&mut y[j + 1..], &x[j + 1..], &col[1..]);
        // Four partial sums, so that the dot product vectorises.
        let mut acc = [0.0; 4];
        let (mut cs, mut xc) = (below.chunks_exact(4), xs.chunks_exact(4));
        let mut yc = ys.chunks_exact_mut(4);
        for ((c4, x4), y4) in (&mut cs).zip(&mut xc).zip(&mut yc) {
            for q in 0..4 {
                y4[q] += c4[q] * xj;
                acc[q] += c4[q] * x4[q];
            }
        }
        let mut dot = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for ((&c, &xi), yi) in cs.remainder().iter().zip(xc.remainder()).zip(yc.into_remainder()) {
            *yi += c * xj;
            dot += c * xi;
        }
        y[j] += col[0] * xj + dot;
    }
}

/// A lower bound on `cond₂(A + shift·I)`: `λ_max` by power iteration times
/// `1/λ_min` by inverse iteration with the Cholesky factor.
///
/// Cost: `COND_ITERS · 4 n²` flops.
fn condition_estimate(a: ArrayView2<'_, f64>, shift: f64, l: &Array2<f64>) -> f64 {
    let n = a.nrows();
    if n == 0 {
        return 1.0;
    }
    // Both iterations are bound by reading a triangle of n² / 2 values per
    // step: one per core. Each runs on one thread, so its bits do not
    // depend on the thread count.
    let power = || {
        let mut v = start_vector(n);
        let mut lmax = 0.0;
        let mut w = Array2::zeros((n, 1));
        for _ in 0..COND_ITERS {
            symmetric_matvec(a, v.view(), w.view_mut());
            w.scaled_add(shift, &v);
            lmax = (&w * &v).sum();
            if normalize(&mut w) == 0.0 {
                break;
            }
            std::mem::swap(&mut v, &mut w);
        }
        lmax
    };
    let inverse = || {
        let mut v = start_vector(n);
        let mut inv_min = 0.0;
        for _ in 0..COND_ITERS {
            let mut w = v.clone();
            cholesky_solve_in_place(l, &mut w, Par::Seq);
            inv_min = (&w * &v).sum();
            if normalize(&mut w) == 0.0 {
                break;
            }
            v = w;
        }
        inv_min
    };
    let (lmax, inv_min) = rayon::join(power, inverse);
    (lmax * inv_min).max(1.0)
}

/// Solves `(A + αI) X = B` for symmetric positive semi-definite `A (n, n)`
/// (full, symmetric) and `B (n, k)`, by Cholesky, falling back as told
/// when Cholesky fails or the condition estimate exceeds `1/rcond`.
///
/// Cost: `n³/3 + 2 n² k` flops (Cholesky), about `9 n³` (eigen).
pub(crate) fn solve_shifted(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    alpha: f64,
    fallback: Fallback,
    rcond: f64,
) -> Result<(Array2<f64>, SolveInfo)> {
    solve_shifted_bounded(a, b, alpha, fallback, rcond, None)
}

/// Whether `bound`, a proved upper bound of `κ(A + αI)`, settles that the
/// system needs no condition estimate and no fallback: at most half of
/// `1/rcond` (the estimate, a lower bound of `κ`, could not exceed the
/// limit). One test for [`solve_shifted_bounded`] and its callers.
pub(crate) fn bound_proves(bound: Option<f64>, rcond: f64) -> bool {
    bound.is_some_and(|c| c <= 0.5 * (1.0 / rcond))
}

/// `(A + αI)⁻¹ B` by a Cholesky factorisation of `a` in place, for a
/// system the caller has proved well conditioned (see
/// [`solve_shifted_bounded`]: then that function computes exactly this,
/// the same bits, with a copy of `A`). `a` is column-major; its lower
/// triangle is read and overwritten by the factor, its strict upper one is
/// scratch. `None` if the factorisation fails, with `a` spoilt: the caller
/// then takes the whole path from the statistics again.
///
/// Memory: no buffer besides `X`; the copy was a second `l²` buffer
/// (537 MB at `l = 8192`), its fresh pages' first writes included.
pub(crate) fn solve_proved_in_place(a: &mut Array2<f64>, b: ArrayView2<'_, f64>, alpha: f64) -> Option<Array2<f64>> {
    debug_assert!(a.is_square() && (a.nrows() < 2 || a.stride_of(ndarray::Axis(0)) == 1));
    for j in 0..a.nrows() {
        a[[j, j]] += alpha;
    }
    kapprox_core::cholesky::cholesky_lower_in_place(a.view_mut(), par()).ok()?;
    let mut x = Array2::zeros(b.raw_dim().f());
    x.assign(&b);
    cholesky_solve_in_place(a, &mut x, par());
    Some(x)
}

/// [`solve_shifted`] given `bound`, an upper bound of `κ(A + αI)` the
/// caller has proved. Where it is at most half of `1/rcond` the system is
/// well conditioned whatever the estimate would say (the estimate is a
/// lower bound of `κ`), so the estimate is skipped and `bound` is reported
/// in its place: the same solution, without the estimate's `COND_ITERS`
/// passes over `A` and its factor (memory bound: 0.13–0.2 s at `n = 4096`).
pub(crate) fn solve_shifted_bounded(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    alpha: f64,
    fallback: Fallback,
    rcond: f64,
    bound: Option<f64>,
) -> Result<(Array2<f64>, SolveInfo)> {
    if !lower_is_finite(a) {
        return Err(SolveError::NonFinite { what: "the system matrix" });
    }
    check_finite("the right-hand side", b.iter())?;
    let n = a.nrows();
    let limit = 1.0 / rcond;
    let attempt = |shift: f64| -> std::result::Result<(Array2<f64>, f64), (Option<usize>, f64)> {
        match cholesky_shifted(a, shift) {
            Err(pivot) => Err((Some(pivot), f64::INFINITY)),
            Ok(l) => {
                let cond = match bound {
                    Some(c) if shift == alpha && bound_proves(bound, rcond) => c,
                    _ => condition_estimate(a, shift, &l),
                };
                if cond > limit {
                    return Err((None, cond));
                }
                let mut x = Array2::zeros(b.raw_dim().f());
                x.assign(&b);
                cholesky_solve_in_place(&l, &mut x, par());
                Ok((x, cond))
            }
        }
    };
    let failure = match attempt(alpha) {
        Ok((x, cond)) => {
            let info =
                SolveInfo { method: SolveMethod::Cholesky, jitter_added: 0.0, condition_estimate: cond, rank: n };
            return Ok((x, info));
        }
        Err(f) => f,
    };
    match fallback {
        Fallback::Error => Err(match failure {
            (Some(pivot), _) => SolveError::NotPositiveDefinite { pivot, alpha },
            (None, cond) => SolveError::IllConditioned { alpha, condition_estimate: cond, limit },
        }),
        Fallback::Eigen => {
            let e = eigh(a)?;
            let (d, rank, cond) = pinv_weights(&e.lambda, alpha, rcond);
            let utb = mul(e.u.as_ref().transpose(), as_faer(b));
            let x = apply_weights(&e.u, &utb, &d);
            Ok((x, SolveInfo { method: SolveMethod::Eigen, jitter_added: 0.0, condition_estimate: cond, rank }))
        }
        Fallback::Jitter => {
            let trace: f64 = (0..n).map(|i| a[[i, i]]).sum::<f64>() + n as f64 * alpha;
            let mut jitter = 2.0 * rcond * trace.abs().max(f64::MIN_POSITIVE);
            let mut last = failure;
            for _ in 0..8 {
                match attempt(alpha + jitter) {
                    Ok((x, cond)) => {
                        let info = SolveInfo {
                            method: SolveMethod::Cholesky,
                            jitter_added: jitter,
                            condition_estimate: cond,
                            rank: n,
                        };
                        return Ok((x, info));
                    }
                    Err(f) => last = f,
                }
                jitter *= 10.0;
            }
            Err(match last {
                (Some(pivot), _) => SolveError::NotPositiveDefinite { pivot, alpha },
                (None, cond) => SolveError::IllConditioned { alpha, condition_estimate: cond, limit },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn condition_estimate_is_a_close_lower_bound() {
        // diag(1..=50) rotated: cond = 50 / (1 + shift) for shift 0.
        let n = 50;
        let q = kapprox_core::dense::qr_thin_q(
            Array2::from_shape_fn((n, n), |(i, j)| {
                ((i * 7 + j * 13) % 17) as f64 - 8.0 + if i == j { 20.0 } else { 0.0 }
            })
            .view(),
        );
        let lam = Array1::from_shape_fn(n, |i| (i + 1) as f64);
        let a = q.dot(&Array2::from_diag(&lam)).dot(&q.t());
        let l = cholesky_shifted(a.view(), 0.0).unwrap();
        let c = condition_estimate(a.view(), 0.0, &l);
        assert!(c <= 50.0 * (1.0 + 1e-10) && c > 0.8 * 50.0, "estimate {c}");
        let l = cholesky_shifted(a.view(), 1.0).unwrap();
        let c = condition_estimate(a.view(), 1.0, &l);
        assert!(c <= 25.5 * (1.0 + 1e-10) && c > 0.8 * 25.5, "estimate {c}");
    }

    #[test]
    fn singular_systems_follow_the_fallback() {
        let a = array![[1.0, 1.0], [1.0, 1.0]];
        let b = array![[2.0], [2.0]];
        let rcond = 2.0 * f64::EPSILON;
        let err = solve_shifted(a.view(), b.view(), 0.0, Fallback::Error, rcond).unwrap_err();
        assert!(matches!(err, SolveError::NotPositiveDefinite { .. } | SolveError::IllConditioned { .. }), "{err}");
        // Minimum-norm solution of [1 1; 1 1] x = [2; 2] is [1, 1].
        let (x, info) = solve_shifted(a.view(), b.view(), 0.0, Fallback::Eigen, rcond).unwrap();
        assert_eq!(info.method, SolveMethod::Eigen);
        assert_eq!(info.rank, 1);
        assert!((x[[0, 0]] - 1.0).abs() < 1e-14 && (x[[1, 0]] - 1.0).abs() < 1e-14, "{x}");
        let (x, info) = solve_shifted(a.view(), b.view(), 0.0, Fallback::Jitter, rcond).unwrap();
        assert!(info.jitter_added > 0.0 && info.jitter_added < 1e-6, "{info:?}");
        let r = a.dot(&x) - &b;
        assert!(r.iter().all(|v| v.abs() < 1e-6), "{r}");
    }

    #[test]
    fn a_proved_system_solved_in_place_is_the_copying_solve_bit_for_bit() {
        // Symmetric positive semi-definite, a junk upper triangle (scratch).
        let n = 300;
        let g = Array2::from_shape_fn((n + 7, n), |(i, j)| (((i * 31 + j * 17) % 23) as f64 - 11.0) / 7.0);
        let mut a = Array2::zeros((n, n).f());
        a.assign(&g.t().dot(&g));
        let b = Array2::from_shape_fn((n, 2), |(i, t)| (i % 9) as f64 - 4.0 + t as f64);
        let (want, _) = solve_shifted_bounded(a.view(), b.view(), 0.5, Fallback::Error, 1e-12, Some(1.0)).unwrap();
        for j in 0..n {
            for i in 0..j {
                a[[i, j]] = f64::NAN;
            }
        }
        let got = solve_proved_in_place(&mut a, b.view(), 0.5).unwrap();
        assert!(got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
        // An indefinite shift fails and says so.
        let mut indefinite = array![[1.0, 0.0], [0.0, 1.0]];
        indefinite.swap_axes(0, 1);
        assert!(solve_proved_in_place(&mut indefinite, b.slice(s![..2, ..]), -2.0).is_none());
    }

    #[test]
    fn non_finite_input_is_refused() {
        let a = array![[1.0, f64::NAN], [f64::NAN, 1.0]];
        let b = array![[1.0], [1.0]];
        let err = solve_shifted(a.view(), b.view(), 1.0, Fallback::Eigen, 1e-12).unwrap_err();
        assert_eq!(err, SolveError::NonFinite { what: "the system matrix" });
    }
}
