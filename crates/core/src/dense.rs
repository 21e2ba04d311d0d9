//! Dense kernels over `faer`, with `ndarray` views in and owned arrays out.
//!
//! kapprox's public types are `ndarray` arrays; the dense kernels are faer's
//! (pure Rust, and measured as fast as a tuned BLAS on our machines; see
//! ARCHITECTURE.md). The views here are zero-copy: faer reads the ndarray
//! buffer through its strides.
#![allow(non_snake_case)]

use faer::{Accum, MatMut, MatRef, Par, Side};
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};

/// A faer view of an ndarray matrix (any strides, no copy).
pub fn as_faer(a: ArrayView2<'_, f64>) -> MatRef<'_, f64> {
    let (m, n) = a.dim();
    let s = a.strides();
    // SAFETY: the pointer, shape and strides come from a live ndarray view
    // whose lifetime bounds the returned faer view.
    unsafe { MatRef::from_raw_parts(a.as_ptr(), m, n, s[0], s[1]) }
}

/// A mutable faer view of an ndarray matrix (any strides, no copy).
pub fn as_faer_mut(mut a: ArrayViewMut2<'_, f64>) -> MatMut<'_, f64> {
    let (m, n) = a.dim();
    let s = a.strides().to_vec();
    // SAFETY: as in `as_faer`; the mutable borrow of the view is moved into
    // the returned faer view, so no alias exists.
    unsafe { MatMut::from_raw_parts_mut(a.as_mut_ptr(), m, n, s[0], s[1]) }
}

/// Copies a faer matrix into a new (row-major) ndarray.
pub fn to_ndarray(a: MatRef<'_, f64>) -> Array2<f64> {
    Array2::from_shape_fn((a.nrows(), a.ncols()), |(i, j)| a[(i, j)])
}

/// `C_lower += alpha * Aᵀ A`, touching only the lower triangle of `C`.
///
/// `a` has shape `(n_rows, w)` and `c` shape `(w, w)`. Packs `a` and calls
/// [`crate::gram::syrk_lower_add`] (bitwise the same for every `par`);
/// producers that can write rows into a [`crate::gram::PackedRows`] directly
/// save the packing copy.
/// Cost: `n_rows · w²` flops (half a GEMM) plus one copy of `a`.
pub fn gram_lower_update(c: ArrayViewMut2<'_, f64>, a: ArrayView2<'_, f64>, alpha: f64, par: Par) {
    assert_eq!(
        c.nrows(),
        a.ncols(),
        "gram_lower_update: c is {}x{}, a has {} columns",
        c.nrows(),
        c.ncols(),
        a.ncols()
    );
    let packed = crate::gram::PackedRows::from_rows(a);
    crate::gram::syrk_lower_add(c, &packed, alpha, par);
}

/// Copies the lower triangle of a square matrix onto its upper triangle.
///
/// In square tiles, so that the transposed reads stay in cache (at
/// `l = 8192` the matrix is 512 MiB, and an untiled transpose misses on
/// every element).
pub fn symmetrize_from_lower(mut c: ArrayViewMut2<'_, f64>) {
    const TILE: usize = 64;
    let n = c.nrows();
    assert_eq!(n, c.ncols());
    for jb in (0..n).step_by(TILE) {
        for ib in (0..=jb).step_by(TILE) {
            for j in jb..(jb + TILE).min(n) {
                for i in ib..(ib + TILE).min(j) {
                    c[[i, j]] = c[[j, i]];
                }
            }
        }
    }
}

/// `C = beta_accumulate ? C + alpha·A·B : alpha·A·B` with explicit parallelism.
///
/// Shapes: `a (m, k)`, `b (k, n)`, `c (m, n)`.
pub fn matmul_into(
    c: ArrayViewMut2<'_, f64>,
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    alpha: f64,
    accumulate: bool,
    par: Par,
) {
    assert_eq!(a.ncols(), b.nrows(), "matmul: inner dimensions {} and {}", a.ncols(), b.nrows());
    assert_eq!((c.nrows(), c.ncols()), (a.nrows(), b.ncols()), "matmul: output shape");
    let beta = if accumulate { Accum::Add } else { Accum::Replace };
    faer::linalg::matmul::matmul(as_faer_mut(c), beta, as_faer(a), as_faer(b), alpha, par);
}

/// `A · B` as a new array (column-major layout, which faer writes fastest).
pub fn matmul(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>, par: Par) -> Array2<f64> {
    let mut c = crate::buffer::zeros((a.nrows(), b.ncols()), true);
    matmul_into(c.view_mut(), a, b, 1.0, false, par);
    c
}

/// The Cholesky factorisation failed: the matrix is not (numerically)
/// positive definite.
#[derive(Debug, Clone, PartialEq)]
pub struct NotPositiveDefinite;

impl std::fmt::Display for NotPositiveDefinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "matrix is not positive definite")
    }
}

impl std::error::Error for NotPositiveDefinite {}

/// Solves `A X = B` for symmetric positive definite `A` (only its lower
/// triangle is read) by Cholesky. Shapes: `a (n, n)`, `b (n, k)`.
pub fn cholesky_solve(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Result<Array2<f64>, NotPositiveDefinite> {
    use faer::linalg::solvers::Solve;
    // faer's decompositions read its global parallelism: install the fixed
    // split first, or the bits would depend on what the process ran before.
    crate::dense_par();
    let llt = as_faer(a).llt(Side::Lower).map_err(|_| NotPositiveDefinite)?;
    let mut x = Array2::zeros(b.raw_dim().f());
    x.assign(&b);
    llt.solve_in_place(as_faer_mut(x.view_mut()));
    Ok(x)
}

/// Symmetric eigendecomposition `A = U diag(λ) Uᵀ` (lower triangle read).
///
/// Returns eigenvalues in non-decreasing order and the eigenvectors as the
/// columns of `U`.
pub fn eigh(a: ArrayView2<'_, f64>) -> (Array1<f64>, Array2<f64>) {
    crate::dense_par();
    let evd = as_faer(a).self_adjoint_eigen(Side::Lower).expect("symmetric eigendecomposition did not converge");
    let s = evd.S();
    let lambda = Array1::from_shape_fn(a.nrows(), |i| s[i]);
    (lambda, to_ndarray(evd.U()))
}

/// A basis of the columns of `y (m, n)`, `m ≥ n`, by one Cholesky QR:
/// `Y R⁻¹` with `RᵀR = YᵀY` — `None` when `YᵀY` is not numerically
/// positive definite (`κ(Y) ≳ u^(-1/2)`).
///
/// Its columns are orthonormal only to about `u·κ(Y)²` (one pass of
/// CholeskyQR), so it suits an intermediate basis of a power iteration,
/// where only the span and a moderate condition number matter; use
/// [`orthonormal_basis`] or [`qr_thin_q`] for a final basis. Cost:
/// `2·m·n²` flops in two level-3 kernels (a Gram and a triangular solve),
/// about half of a Householder QR with its thin `Q`, and faster per flop.
/// Bitwise the same for a given `par`.
pub fn cholesky_qr_q(y: ArrayView2<'_, f64>, par: Par) -> Option<Array2<f64>> {
    cholesky_qr_step(y, lower_gram(y, par).view(), par)
}

/// The lower triangle of `YᵀY` (column-major, upper triangle zero).
fn lower_gram(y: ArrayView2<'_, f64>, par: Par) -> Array2<f64> {
    let mut g = crate::buffer::zeros((y.ncols(), y.ncols()), true);
    gram_lower_update(g.view_mut(), y, 1.0, par);
    g
}

/// `Y R⁻¹` for the Cholesky factor `RᵀR` of `g`, the lower triangle of
/// `YᵀY`; `None` where `g` is not numerically positive definite or the
/// basis overflows.
///
/// `Q = Y L⁻ᵀ` is one product in the Gram kernel by the explicit inverse
/// `L⁻¹` (`n³/3` flops, small beside the product's `m·n²` at `m ≫ n`),
/// skipping the zeros of the triangular `L⁻ᵀ`: at `m = 4096, n = 1024` on
/// 2 cores faer's triangular solve took 0.10 s of a 0.24 s step, and
/// copying `Y` for it and a finiteness check across its memory order 0.06 s
/// more (TEFM-G fit, scratch timers). The inverse adds a rounding error of
/// order `u·κ(Y)²` to `Q`, the order of one Cholesky QR step's own loss
/// of orthogonality, and `κ(Y) ≤ √3` in the second step of
/// [`orthonormal_basis`].
fn cholesky_qr_step(y: ArrayView2<'_, f64>, g: ArrayView2<'_, f64>, par: Par) -> Option<Array2<f64>> {
    use crate::gram::{PackedRows, Triangle, gemm_tn_add_triangular, gram_par};
    crate::dense_par();
    let llt = as_faer(g).llt(Side::Lower).ok()?;
    let (m, n) = y.dim();
    // L⁻¹ column-major: its columns are the rows of the upper triangular
    // L⁻ᵀ, and the columns of Y the rows of Yᵀ, so `Q = (Yᵀ)ᵀ L⁻ᵀ`.
    let mut inverse = crate::buffer::zeros((n, n), true);
    faer::linalg::triangular_inverse::invert_lower_triangular(as_faer_mut(inverse.view_mut()), llt.L(), par);
    let simd = crate::cpu::Simd::detect();
    let (yt, upper) = (PackedRows::from_rows_with(simd, y.t()), PackedRows::from_rows_with(simd, inverse.t()));
    drop(inverse);
    let mut q = crate::buffer::zeros((m, n), true);
    gemm_tn_add_triangular(q.view_mut(), &yt, Triangle::Upper(0), &upper, n, 1.0, gram_par(par));
    // In memory order: the column-major basis read row by row strides
    // through all of it for every row.
    q.fold(true, |finite, v| finite && v.is_finite()).then_some(q)
}

/// The Frobenius distance of a Gram matrix from the identity, from its
/// lower triangle (the off-diagonal entries count twice).
fn distance_from_identity(g: ArrayView2<'_, f64>) -> f64 {
    let mut sum = 0.0;
    for j in 0..g.ncols() {
        sum += (g[[j, j]] - 1.0).powi(2);
        sum += 2.0 * g.slice(ndarray::s![j + 1.., j]).iter().map(|v| v * v).sum::<f64>();
    }
    sum.sqrt()
}

/// The `Q (m, n)` of `Y = QR` with `R`'s diagonal positive, for `y (m, n)`
/// of full column rank, `m ≥ n`: an orthonormal basis of its columns.
///
/// By CholeskyQR2 (Yamamoto et al. 2015): one Cholesky QR step gives
/// `Q₁` orthonormal to about `u·κ(Y)²`, and where that leaves
/// `‖Q₁ᵀQ₁ − I‖_F ≤ ½` (so `κ(Q₁) ≤ √3`) a second step on `Q₁` is
/// orthonormal to rounding, like Householder QR. Where the first step
/// fails or leaves `Q₁` further from orthonormal (`κ(Y) ≳ u^(-1/2)`), the
/// basis comes from Householder QR ([`qr_thin_q`]) with its columns' signs
/// set to the same convention, so both paths give the same `Q` up to
/// rounding.
///
/// Why: at `m = 4096, n = 1024` on 2 cores faer's Householder QR with its
/// thin `Q` took 0.92 s inside a TEFM fit (0.6–0.9 s alone), the two steps
/// 0.59–0.70 s (0.4–0.5 s alone): each step is a Gram and one triangular
/// product in the Gram kernel, where Householder spends much of its time
/// in panel factorisations. Cost: `4·m·n²` flops (as Householder's
/// `≈ 4·m·n²`). Bitwise the same for a given `par`.
///
/// # Panics
/// `m < n`.
pub fn orthonormal_basis(y: ArrayView2<'_, f64>, par: Par) -> Array2<f64> {
    orthonormal_basis_by(y, par).0
}

/// How [`orthonormal_basis`] computed a basis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BasisPath {
    /// Two Cholesky QR steps.
    CholeskyQr2,
    /// The first step failed.
    HouseholderAfterFailure,
    /// The first step left `Q₁` too far from orthonormal.
    HouseholderAfterOneStep,
}

fn orthonormal_basis_by(y: ArrayView2<'_, f64>, par: Par) -> (Array2<f64>, BasisPath) {
    assert!(y.nrows() >= y.ncols(), "orthonormal_basis: {:?} has more columns than rows", y.dim());
    let path = match cholesky_qr_q(y, par) {
        None => BasisPath::HouseholderAfterFailure,
        Some(q1) => {
            let g1 = lower_gram(q1.view(), par);
            let second = (distance_from_identity(g1.view()) <= 0.5)
                .then(|| cholesky_qr_step(q1.view(), g1.view(), par))
                .flatten();
            match second {
                Some(q) => return (q, BasisPath::CholeskyQr2),
                None => BasisPath::HouseholderAfterOneStep,
            }
        }
    };
    (householder_positive(y), path)
}

/// The thin `Q` of Householder QR with each column's sign set so that
/// `R`'s diagonal is positive (faer's convention differs).
fn householder_positive(y: ArrayView2<'_, f64>) -> Array2<f64> {
    crate::dense_par();
    let qr = as_faer(y).qr();
    let mut q = to_ndarray(qr.compute_thin_Q().as_ref());
    let r = qr.R();
    for (j, mut col) in q.columns_mut().into_iter().enumerate() {
        if r[(j, j)] < 0.0 {
            col.mapv_inplace(|v| -v);
        }
    }
    q
}

/// The thin Q factor of `A = QR`, shape `(m, min(m, n))`.
pub fn qr_thin_q(a: ArrayView2<'_, f64>) -> Array2<f64> {
    crate::dense_par();
    let qr = as_faer(a).qr();
    to_ndarray(qr.compute_thin_Q().as_ref())
}

/// The thin QR factors of `A`: `Q (m, k)` and upper-triangular `R (k, n)`,
/// `k = min(m, n)`.
pub fn qr_thin(a: ArrayView2<'_, f64>) -> (Array2<f64>, Array2<f64>) {
    crate::dense_par();
    let qr = as_faer(a).qr();
    let q = to_ndarray(qr.compute_thin_Q().as_ref());
    let r_full = qr.R();
    let k = a.nrows().min(a.ncols());
    let r = Array2::from_shape_fn((k, a.ncols()), |(i, j)| if i <= j { r_full[(i, j)] } else { 0.0 });
    (q, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn gram_update_matches_naive() {
        let a = Array2::from_shape_fn((37, 5), |(i, j)| ((i * 3 + j * 7) % 11) as f64 - 5.0);
        let mut c = Array2::<f64>::zeros((5, 5).f());
        gram_lower_update(c.view_mut(), a.view(), 1.0, Par::Seq);
        symmetrize_from_lower(c.view_mut());
        let naive = a.t().dot(&a);
        assert_eq!(c, naive);
    }

    #[test]
    fn cholesky_qr_spans_the_columns_or_declines() {
        let y = Array2::from_shape_fn((60, 5), |(i, j)| ((i * 7 + j * 13) % 11) as f64 - 5.0 + (i == j) as u8 as f64);
        let q = cholesky_qr_q(y.view(), crate::dense_par()).unwrap();
        assert!((q.t().dot(&q) - Array2::<f64>::eye(5)).iter().all(|v| v.abs() < 1e-12));
        // Same span: Y = Q (QᵀY).
        let back = q.dot(&q.t().dot(&y));
        assert!((back - &y).iter().all(|v| v.abs() < 1e-11));
        // A repeated column: YᵀY is singular.
        let mut dup = y.clone();
        let c0 = dup.column(0).to_owned();
        dup.column_mut(3).assign(&c0);
        assert_eq!(cholesky_qr_q(dup.view(), crate::dense_par()), None);
    }

    /// `Y (m, n)` with singular values `κ^(-j/(n-1))`, mixed by orthogonal
    /// factors on both sides.
    fn conditioned(m: usize, n: usize, kappa: f64) -> Array2<f64> {
        let u = qr_thin_q(
            Array2::from_shape_fn((m, n), |(i, j)| ((i * 31 + j * 17) % 23) as f64 - 11.0 + (i == j) as u8 as f64)
                .view(),
        );
        let v = qr_thin_q(
            Array2::from_shape_fn((n, n), |(i, j)| ((i * 13 + j * 7) % 19) as f64 - 9.0 + (i == j) as u8 as f64).view(),
        );
        let s = Array1::from_shape_fn(n, |j| kappa.powf(-(j as f64) / (n - 1) as f64));
        (u * &s).dot(&v.t())
    }

    #[test]
    fn orthonormal_basis_is_the_positive_diagonal_qr_factor_at_any_conditioning() {
        let (m, n) = (300, 40);
        // Two Cholesky steps at small κ, Householder where YᵀY is not
        // numerically positive definite, and in between (u·κ² near 1) a
        // first step too far from orthonormal for the second.
        let sweep = (0..=16).map(|i| 1.0e8 * 4f64.powf(f64::from(i) / 16.0));
        let mut paths = Vec::new();
        for kappa in [1.0e3, 1.0e6].into_iter().chain(sweep).chain([1.0e12]) {
            let y = conditioned(m, n, kappa);
            let (q, path) = orthonormal_basis_by(y.view(), crate::dense_par());
            paths.push(path);
            let dev = (q.t().dot(&q) - Array2::<f64>::eye(n)).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(dev < 1e-13, "κ = {kappa:e} ({path:?}): QᵀQ deviates from I by {dev:e}");
            // R = QᵀY is upper triangular with a positive diagonal, and QR = Y.
            let r = q.t().dot(&y);
            for i in 0..n {
                assert!(r[[i, i]] > 0.0, "κ = {kappa:e} ({path:?}): R[{i}, {i}] = {:e}", r[[i, i]]);
                for j in 0..i {
                    assert!(r[[i, j]].abs() < 1e-12, "κ = {kappa:e} ({path:?}): R[{i}, {j}] = {:e}", r[[i, j]]);
                }
            }
            let back = (q.dot(&r) - &y).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(back < 1e-13, "κ = {kappa:e} ({path:?}): QR − Y is {back:e}");
            // Householder's factor with the signs aligned is the same matrix,
            // to the sensitivity of Q to rounding (u·κ).
            let mut h = qr_thin_q(y.view());
            for (j, mut col) in h.columns_mut().into_iter().enumerate() {
                if col.dot(&y.column(j)) < 0.0 {
                    col.mapv_inplace(|v| -v);
                }
            }
            let gap = (&h - &q).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(gap < 1e-14 * kappa, "κ = {kappa:e} ({path:?}): differs from Householder by {gap:e}");
        }
        assert_eq!(paths[..2], [BasisPath::CholeskyQr2; 2]);
        assert_eq!(paths.last(), Some(&BasisPath::HouseholderAfterFailure));
        assert!(paths.contains(&BasisPath::HouseholderAfterOneStep), "{paths:?}");
    }

    #[test]
    fn cholesky_solves_spd_system() {
        let a = array![[4.0, 1.0], [1.0, 3.0]];
        let b = array![[1.0], [2.0]];
        let x = cholesky_solve(a.view(), b.view()).unwrap();
        let r = a.dot(&x) - &b;
        assert!(r.iter().all(|v| v.abs() < 1e-14));
        let bad = array![[1.0, 2.0], [2.0, 1.0]];
        assert_eq!(cholesky_solve(bad.view(), b.view()), Err(NotPositiveDefinite));
    }

    #[test]
    fn eigh_reconstructs() {
        let a = array![[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]];
        let (l, u) = eigh(a.view());
        assert!(l[0] <= l[1] && l[1] <= l[2]);
        let rec = u.dot(&Array2::from_diag(&l)).dot(&u.t());
        assert!((rec - &a).iter().all(|v| v.abs() < 1e-13));
    }

    #[test]
    fn qr_is_orthonormal_and_reconstructs() {
        let a = Array2::from_shape_fn((9, 4), |(i, j)| ((i * 5 + j * 3) % 7) as f64 + if i == j { 3.0 } else { 0.0 });
        let (q, r) = qr_thin(a.view());
        let qtq = q.t().dot(&q);
        assert!((qtq - Array2::<f64>::eye(4)).iter().all(|v| v.abs() < 1e-13));
        assert!((q.dot(&r) - &a).iter().all(|v| v.abs() < 1e-12));
    }
}
