//! Seeded data and independent reference solvers.

use kapprox_core::Moments;
use kapprox_core::rng::{Domain, unit};
use ndarray::{Array1, Array2, ArrayView2, Axis, s};

/// Test-only random domain.
const TEST: Domain = Domain(0xfd);

/// A standard Gaussian `(n, m)` matrix from `seed` (Box–Muller).
pub(crate) fn gaussian(n: usize, m: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, m), |(i, j)| {
        let idx = (i * m + j) as u64;
        let u1 = unit(seed, TEST, 2 * idx).max(f64::MIN_POSITIVE);
        let u2 = unit(seed, TEST, 2 * idx + 1);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    })
}

/// Flushed statistics of `(z, y)`, fed in chunks of 37 rows.
pub(crate) fn moments(z: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Moments {
    let mut m = Moments::new(z.ncols(), y.ncols());
    let mut r = 0;
    while r < z.nrows() {
        let e = (r + 37).min(z.nrows());
        m.update(z.slice(s![r..e, ..]), y.slice(s![r..e, ..]));
        r = e;
    }
    m.flush();
    m
}

/// Least squares `min ‖A x − B‖` by thin QR and back substitution (no
/// normal equations, no Cholesky, no eigensolver).
pub(crate) fn lstsq_qr(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Array2<f64> {
    let (q, r) = kapprox_core::dense::qr_thin(a);
    let qtb = q.t().dot(&b);
    let n = r.ncols();
    let mut x = Array2::zeros((n, b.ncols()));
    for c in 0..b.ncols() {
        for i in (0..n).rev() {
            let mut v = qtb[[i, c]];
            for j in i + 1..n {
                v -= r[[i, j]] * x[[j, c]];
            }
            x[[i, c]] = v / r[[i, i]];
        }
    }
    x
}

/// Ridge `‖Zw + b − y‖² + α‖w‖²` by QR on the augmented design
/// `[Z 1; √α I 0]` (or `[Z; √α I]` without intercept).
pub(crate) fn ridge_qr(
    z: ArrayView2<'_, f64>,
    y: ArrayView2<'_, f64>,
    alpha: f64,
    intercept: bool,
) -> (Array2<f64>, Array1<f64>) {
    let (n, l) = z.dim();
    let p = l + usize::from(intercept);
    let mut a = Array2::zeros((n + l, p));
    a.slice_mut(s![0..n, 0..l]).assign(&z);
    if intercept {
        a.slice_mut(s![0..n, l]).fill(1.0);
    }
    for i in 0..l {
        a[[n + i, i]] = alpha.sqrt();
    }
    let mut rhs = Array2::zeros((n + l, y.ncols()));
    rhs.slice_mut(s![0..n, ..]).assign(&y);
    let x = lstsq_qr(a.view(), rhs.view());
    let coef = x.slice(s![0..l, ..]).to_owned();
    let b = if intercept { x.row(l).to_owned() } else { Array1::zeros(y.ncols()) };
    (coef, b)
}

/// `‖a − b‖_F / ‖b‖_F`.
pub(crate) fn rel_err<D: ndarray::Dimension>(a: &ndarray::Array<f64, D>, b: &ndarray::Array<f64, D>) -> f64 {
    let num = (a - b).iter().map(|v| v * v).sum::<f64>().sqrt();
    let den = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    num / den
}

/// 2-norm condition number of `ZcᵀZc + αI` (Zc centred if `intercept`).
pub(crate) fn cond_shifted(z: ArrayView2<'_, f64>, alpha: f64, intercept: bool) -> f64 {
    let zc = if intercept { &z - &z.mean_axis(Axis(0)).unwrap() } else { z.to_owned() };
    let (lam, _) = kapprox_core::dense::eigh(zc.t().dot(&zc).view());
    (lam[lam.len() - 1] + alpha) / (lam[0].max(0.0) + alpha)
}

/// Features with column scales from 1 down to `1/spread` (so the Gram
/// has condition about `spread²`) and non-zero means.
pub(crate) fn scaled_features(n: usize, l: usize, spread: f64, seed: u64) -> Array2<f64> {
    let mut z = gaussian(n, l, seed);
    for (j, mut col) in z.columns_mut().into_iter().enumerate() {
        let scale = spread.powf(-(j as f64) / (l.max(2) - 1) as f64);
        col.mapv_inplace(|v| v * scale + 0.5 + 0.1 * j as f64);
    }
    z
}
