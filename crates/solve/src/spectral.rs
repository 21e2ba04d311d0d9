//! The spectral norm of a symmetric operator known only through products,
//! by (block) Lanczos with full reorthogonalisation.
//!
//! Used to report `‖K − ZZᵀ‖₂ / ‖K‖₂` on a sample of a few thousand rows:
//! the caller forms `(K − ZZᵀ) X` blockwise without storing `K`, and a
//! block of `b` vectors lets it evaluate each kernel block once for `b`
//! products.

use crate::error::{Result, SolveError, check_finite};
use crate::solver::{eigh, mul, par};
use faer::Accum;
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::rng::{Domain, unit};
use ndarray::{Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2, ShapeBuilder, s};
use serde::{Deserialize, Serialize};

/// Random domain of the Lanczos start block (index = `row · b + column`).
const LANCZOS_DOMAIN: Domain = Domain::SOLVE_LANCZOS;

/// The result of [`spectral_norm_sym`] / [`spectral_norm_sym_block`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpectralEstimate {
    /// The estimate of `‖A‖₂ = max |λ(A)|`: the largest Ritz value in
    /// magnitude. It is never above `‖A‖₂` (up to rounding).
    pub value: f64,
    /// The signed eigenvalue whose magnitude is `value`.
    pub eigenvalue: f64,
    /// `‖A y − θ y‖` for the unit Ritz vector `y`; `|λ − θ|` is at most
    /// this for some eigenvalue `λ` of `A`.
    pub residual: f64,
    /// Number of operator applications (calls of the closure).
    pub iterations: usize,
    /// Number of vectors multiplied (`iterations · b` at most).
    pub matvecs: usize,
    /// Whether `residual ≤ tol · value` was reached, or the Krylov space was
    /// exhausted (then the value is exact).
    pub converged: bool,
}

/// `‖A‖₂` of a symmetric `(n, n)` operator given by `matvec(x, out)`
/// (`out ← A x`; `out` is zeroed before each call), by Lanczos with full
/// reorthogonalisation from a random start (seeded, reproducible).
///
/// Stops when the Ritz pair of largest magnitude has residual
/// `‖A y − θ y‖ ≤ tol · |θ|` (then `θ` is within `tol · |θ|` of an
/// eigenvalue, and usually within `tol²`), after `max_iter` products, or
/// when the Krylov space is exhausted.
///
/// Cost: `iterations` products, plus `O(n · iterations²)` flops of
/// reorthogonalisation and `O(iterations³)` per step for the Ritz values;
/// memory `2 n · min(n, max_iter)` doubles.
///
/// # Errors
/// [`SolveError::InvalidParameter`] for `max_iter = 0` or a negative or
/// non-finite `tol`; [`SolveError::NonFinite`] if the operator returns NaN
/// or an infinity.
///
/// # Example
///
/// ```
/// use ndarray::array;
///
/// let a = array![[2.0, 1.0], [1.0, -3.0]];
/// let est = kapprox_solve::spectral_norm_sym(2, |x, mut y| y.assign(&a.dot(&x)), 10, 1e-10, 7)?;
/// let exact = (0.5f64 + (6.25f64 + 1.0).sqrt()).abs(); // |-0.5 - sqrt(7.25)|
/// assert!((est.value - exact).abs() < 1e-12 && est.converged);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spectral_norm_sym(
    n: usize,
    mut matvec: impl FnMut(ArrayView1<'_, f64>, ArrayViewMut1<'_, f64>),
    max_iter: usize,
    tol: f64,
    seed: u64,
) -> Result<SpectralEstimate> {
    spectral_norm_sym_block(
        n,
        1,
        |x, mut y| {
            for (xc, yc) in x.columns().into_iter().zip(y.columns_mut()) {
                matvec(xc, yc);
            }
        },
        max_iter,
        tol,
        seed,
    )
}

/// [`spectral_norm_sym`] with blocks of `block_size` vectors:
/// `matmul(x, out)` sets `out ← A x` for `x (n, b')`, `b' ≤ block_size`
/// (smaller when directions deflate), `out` zeroed before each call.
///
/// Block Krylov with full reorthogonalisation and Rayleigh–Ritz on the
/// whole basis: the basis `Q` and the products `AQ` are kept, so the
/// projected matrix `QᵀAQ` and the Ritz residuals are computed exactly
/// rather than from the three-term recurrence.
///
/// Cost: `iterations` block products, `O(n d²)` reorthogonalisation and
/// `O(d³)` per step for the Ritz values (`d ≤ min(n, max_iter · b)` the
/// basis size); memory `2 n d` doubles.
///
/// # Errors
/// As [`spectral_norm_sym`], plus `block_size = 0`.
pub fn spectral_norm_sym_block(
    n: usize,
    block_size: usize,
    mut matmul: impl FnMut(ArrayView2<'_, f64>, ArrayViewMut2<'_, f64>),
    max_iter: usize,
    tol: f64,
    seed: u64,
) -> Result<SpectralEstimate> {
    if max_iter == 0 {
        return Err(SolveError::InvalidParameter { name: "max_iter", value: 0.0, expected: "at least 1" });
    }
    if block_size == 0 {
        return Err(SolveError::InvalidParameter { name: "block_size", value: 0.0, expected: "at least 1" });
    }
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(SolveError::InvalidParameter { name: "tol", value: tol, expected: "a finite number >= 0" });
    }
    let mut est =
        SpectralEstimate { value: 0.0, eigenvalue: 0.0, residual: 0.0, iterations: 0, matvecs: 0, converged: true };
    if n == 0 {
        return Ok(est);
    }
    let b = block_size.min(n);
    let cap = n.min(max_iter.saturating_mul(b));
    let mut q = Array2::<f64>::zeros((n, cap).f());
    let mut aq = Array2::<f64>::zeros((n, cap).f());
    let mut h = Array2::<f64>::zeros((cap, cap));
    let start = gaussian_block(n, b, seed);
    let mut dim = add_columns(&mut q, 0, start.view());
    let mut block_start = 0;
    est.converged = false;
    loop {
        let block = block_start..dim;
        if block.is_empty() {
            // Every candidate direction lay in the span: the Krylov space of
            // the start block is invariant, and its Ritz values are exact.
            est.converged = true;
            break;
        }
        {
            let mut out = aq.slice_mut(s![.., block.clone()]);
            out.fill(0.0);
            matmul(q.slice(s![.., block.clone()]), out);
        }
        est.iterations += 1;
        est.matvecs += block.len();
        check_finite("the operator output", aq.slice(s![.., block.clone()]).iter())?;
        // New columns of H = QᵀAQ, mirrored to keep it symmetric.
        let hb = mul(as_faer(q.slice(s![.., 0..dim])).transpose(), as_faer(aq.slice(s![.., block.clone()])));
        for (jj, j) in block.clone().enumerate() {
            for i in 0..dim {
                let v = if i >= block.start && i < j { 0.5 * (hb[[i, jj]] + h[[j, i]]) } else { hb[[i, jj]] };
                h[[i, j]] = v;
                h[[j, i]] = v;
            }
        }
        let e = eigh(h.slice(s![0..dim, 0..dim]))?;
        let top = (0..dim).max_by(|&i, &j| e.lambda[i].abs().total_cmp(&e.lambda[j].abs())).expect("dim > 0");
        let theta = e.lambda[top];
        let sv = e.u.as_ref().subcols(top, 1);
        let y = mul(as_faer(q.slice(s![.., 0..dim])), sv);
        let ay = mul(as_faer(aq.slice(s![.., 0..dim])), sv);
        let residual = (&ay - &(theta * &y)).iter().map(|v| v * v).sum::<f64>().sqrt();
        est.value = theta.abs();
        est.eigenvalue = theta;
        est.residual = residual;
        if residual <= tol * theta.abs() || dim == n {
            est.converged = true;
            break;
        }
        if est.iterations >= max_iter || dim == cap {
            break;
        }
        let candidates = aq.slice(s![.., block.clone()]).to_owned();
        block_start = dim;
        dim = add_columns(&mut q, dim, candidates.view());
    }
    Ok(est)
}

/// A deterministic Gaussian `(n, b)` block from `(seed, LANCZOS_DOMAIN)`.
fn gaussian_block(n: usize, b: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, b), |(i, j)| {
        let idx = (i * b + j) as u64;
        let u1 = unit(seed, LANCZOS_DOMAIN, 2 * idx).max(f64::MIN_POSITIVE);
        let u2 = unit(seed, LANCZOS_DOMAIN, 2 * idx + 1);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    })
}

/// Relative norm under which an orthogonalised candidate counts as lying
/// in the span of the basis and is dropped.
const DEFLATION_RTOL: f64 = 1e-10;

/// Orthonormalises the columns of `cand` against `q[:, 0..dim]` and each
/// other, appends the survivors to `q` and returns the new basis size.
///
/// Block classical Gram–Schmidt twice against the old basis (two GEMMs,
/// so the basis is read twice per block, not per column), then modified
/// Gram–Schmidt twice within the block; a column that lost more than
/// 99.9% of its norm gets a third projection against the old basis.
/// Columns whose remaining norm is under [`DEFLATION_RTOL`] of their
/// original norm are dropped.
fn add_columns(q: &mut Array2<f64>, dim: usize, cand: ArrayView2<'_, f64>) -> usize {
    let cap = q.ncols();
    let norm0: Vec<f64> = cand.columns().into_iter().map(|c| c.dot(&c).sqrt()).collect();
    let mut v = Array2::zeros(cand.raw_dim().f());
    v.assign(&cand);
    project_out(q.slice(s![.., 0..dim]), v.view_mut());
    project_out(q.slice(s![.., 0..dim]), v.view_mut());
    let mut new = dim;
    for (j, &n0) in norm0.iter().enumerate() {
        if new == cap {
            break;
        }
        if n0 == 0.0 {
            continue;
        }
        let mut c = v.column(j).to_owned();
        for _ in 0..2 {
            for i in dim..new {
                let qi = q.column(i);
                let h = qi.dot(&c);
                c.scaled_add(-h, &qi);
            }
        }
        let mut norm = c.dot(&c).sqrt();
        if norm < 1e-3 * n0 && norm > DEFLATION_RTOL * n0 {
            let mut cm = c.view_mut().insert_axis(ndarray::Axis(1));
            project_out(q.slice(s![.., 0..new]), cm.view_mut());
            norm = c.dot(&c).sqrt();
        }
        if norm <= DEFLATION_RTOL * n0 {
            continue;
        }
        c /= norm;
        q.column_mut(new).assign(&c);
        new += 1;
    }
    new
}

/// `V ← V − Q (Qᵀ V)` with faer GEMMs.
fn project_out(q: ArrayView2<'_, f64>, mut v: ArrayViewMut2<'_, f64>) {
    if q.ncols() == 0 {
        return;
    }
    let qf = as_faer(q);
    let c = mul(qf.transpose(), as_faer(v.view()));
    faer::linalg::matmul::matmul(as_faer_mut(v.view_mut()), Accum::Add, qf, as_faer(c.view()), -1.0, par());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{gaussian, random_orthogonal};
    use ndarray::Array1;

    fn sym_with_spectrum(lam: &Array1<f64>, seed: u64) -> Array2<f64> {
        let q = random_orthogonal(lam.len(), seed);
        q.dot(&Array2::from_diag(lam)).dot(&q.t())
    }

    fn exact_norm(a: &Array2<f64>) -> f64 {
        let e = crate::solver::eigh(a.view()).unwrap();
        e.lambda.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn matches_eigh_on_psd_and_indefinite_matrices() {
        for (n, seed) in [(50usize, 1u64), (120, 2), (300, 3)] {
            // Decaying spectrum (a kernel-approximation error looks like
            // this), PSD, then made indefinite with a negative top value.
            let lam = Array1::from_shape_fn(n, |i| 0.9f64.powi(i as i32));
            let mut lam_ind = lam.clone();
            lam_ind[0] = -1.3;
            for lam in [lam, lam_ind] {
                let a = sym_with_spectrum(&lam, seed);
                // Reference: a dense symmetric eigensolver on the matrix.
                let e = crate::solver::eigh(a.view()).unwrap();
                let (lo, hi) = (e.lambda[0], e.lambda[n - 1]);
                let (exact, sign) = if lo.abs() > hi.abs() { (-lo, -1.0) } else { (hi, 1.0) };
                assert!((exact - lam.iter().fold(0.0f64, |m, v| m.max(v.abs()))).abs() < 1e-12);
                for b in [1, 4] {
                    let est = spectral_norm_sym_block(n, b, |x, mut y| y.assign(&a.dot(&x)), 100, 1e-8, seed).unwrap();
                    let tol = 1e-10 * exact + 64.0 * f64::EPSILON * n as f64 * exact;
                    assert!(est.converged, "n {n} b {b}: {est:?}");
                    assert!((est.value - exact).abs() <= tol, "n {n} b {b}: {} vs {exact}", est.value);
                    assert!(est.value <= exact * (1.0 + 1e-12));
                    assert_eq!(est.eigenvalue.signum(), sign);
                    assert!(est.iterations < 60, "{est:?}");
                }
            }
        }
    }

    #[test]
    fn random_wigner_matrix_with_a_clustered_edge() {
        // Semicircle spectrum: the edge eigenvalues are close together, the
        // hard case for Lanczos; with enough steps it still converges.
        let n = 150;
        let g = gaussian(n, n, 11);
        let a = (&g + &g.t()) / (2.0 * (n as f64).sqrt());
        let exact = exact_norm(&a);
        let est = spectral_norm_sym(n, |x, mut y| y.assign(&a.dot(&x)), n, 1e-9, 5).unwrap();
        assert!(est.converged);
        assert!((est.value - exact).abs() <= 1e-9 * exact, "{} vs {exact}", est.value);
        // A budget that is too small gives a lower bound and says so.
        let short = spectral_norm_sym(n, |x, mut y| y.assign(&a.dot(&x)), 3, 1e-12, 5).unwrap();
        assert!(!short.converged && short.value < exact && short.iterations == 3);
    }

    #[test]
    fn low_rank_operator_exhausts_the_krylov_space() {
        let n = 300;
        let z = gaussian(n, 3, 4);
        let exact = exact_norm(&z.dot(&z.t()));
        let est = spectral_norm_sym(n, |x, mut y| y.assign(&z.dot(&z.t().dot(&x))), 50, 0.0, 9).unwrap();
        assert!(est.converged && est.iterations <= 5, "{est:?}");
        assert!((est.value - exact).abs() <= 1e-12 * exact);
    }

    #[test]
    fn rejects_bad_parameters_and_nan_output() {
        let e = spectral_norm_sym(3, |_, _| {}, 0, 1e-6, 0).unwrap_err();
        assert!(matches!(e, SolveError::InvalidParameter { name: "max_iter", .. }));
        let e = spectral_norm_sym(3, |_, _| {}, 5, f64::NAN, 0).unwrap_err();
        assert!(matches!(e, SolveError::InvalidParameter { name: "tol", .. }));
        let e = spectral_norm_sym(3, |_, mut y| y.fill(f64::NAN), 5, 1e-6, 0).unwrap_err();
        assert_eq!(e, SolveError::NonFinite { what: "the operator output" });
        let zero = spectral_norm_sym(3, |_, _| {}, 5, 1e-6, 0).unwrap();
        assert_eq!(zero.value, 0.0);
        assert!(zero.converged);
    }
}
