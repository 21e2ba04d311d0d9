//! Kernel blocks `K[i, j] = k(x_i, p_j)` of many rows against a fixed set
//! of points (Nyström's landmarks, exact kernel ridge's training rows),
//! vectorised.
//!
//! - Gaussian and Matérn: `‖x − p‖² = ‖x‖² + ‖p‖² − 2xᵀp`, the cross terms
//!   as one GEMM, then one SIMD pass (`kapprox_core::fastmath::exp_in_place`;
//!   Matérn ν ∈ {1/2, 3/2, 5/2} through its closed form `poly(s)·e^{−s}`).
//!   The expansion cancels for near points: the squared distance is
//!   clamped at 0, and its absolute error is about
//!   `ε·(‖x‖² + ‖p‖²)` (the tests bound it against the direct formula).
//! - Laplacian and Cauchy: SIMD loops over register tiles of rows ×
//!   points, the points laid out in tiles (`kapprox_core::distance`), then
//!   the SIMD `exp` for the Laplacian.
//!
//! No scalar transcendental function is called per entry, except for
//! Matérn with a ν other than 1/2, 3/2, 5/2, whose correlation needs the
//! Bessel function `K_ν` (no closed form): that path evaluates it per
//! entry from the vectorised distances.

use crate::kernel::{Kernel, matern};
use kapprox_core::{Par, dense, distance, fastmath};
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut1, ArrayViewMut2, Axis};

/// A set of points prepared for kernel blocks: the points, their squared
/// norms, and the points tiled for the distance loops.
///
/// Memory: `2·m·d + m` doubles.
#[derive(Clone, Debug)]
pub(crate) struct Points {
    /// `(m, d)`.
    points: Array2<f64>,
    /// `‖p_j‖²`.
    sq_norms: Array1<f64>,
    /// The points laid out for `kapprox_core::distance`.
    tiled: distance::TiledPoints,
}

impl Points {
    pub(crate) fn new(points: Array2<f64>) -> Self {
        let sq_norms = points.map_axis(Axis(1), |r| r.dot(&r));
        let tiled = distance::TiledPoints::new(points.view());
        Points { points, sq_norms, tiled }
    }

    /// The points, `(m, d)`.
    pub(crate) fn view(&self) -> ArrayView2<'_, f64> {
        self.points.view()
    }

    /// The stored array (for serialisation).
    pub(crate) fn array(&self) -> &Array2<f64> {
        &self.points
    }

    pub(crate) fn len(&self) -> usize {
        self.points.nrows()
    }
}

/// Runs `f` on a contiguous copy of `row` when it is not contiguous.
fn with_slice(mut row: ArrayViewMut1<'_, f64>, scratch: &mut Vec<f64>, f: impl FnOnce(&mut [f64])) {
    match row.as_slice_mut() {
        Some(s) => f(s),
        None => {
            scratch.clear();
            scratch.extend(row.iter());
            f(scratch);
            row.iter_mut().zip(scratch.iter()).for_each(|(o, &v)| *o = v);
        }
    }
}

/// Runs `f(x, out)` on `x`'s rows and `out` as contiguous row-major
/// slices, through copies where they are not.
fn with_block(x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>, f: impl FnOnce(&[f64], &mut [f64])) {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard layout");
    match out.as_slice_mut() {
        Some(o) => f(xs, o),
        None => {
            let mut o = Array2::zeros(out.raw_dim());
            f(xs, o.as_slice_mut().expect("fresh array"));
            out.assign(&o);
        }
    }
}

/// `out[i, j] = k(x_i, p_j)`; `out` has shape `(x.nrows(), p.len())`.
///
/// Cost: `2·n·m·d` flops plus `n·m` exponentials (Gaussian, Laplacian,
/// half-integer Matérn); runs on the calling thread.
pub(crate) fn kernel_block_into(kernel: &Kernel, x: ArrayView2<'_, f64>, p: &Points, mut out: ArrayViewMut2<'_, f64>) {
    debug_assert_eq!(out.dim(), (x.nrows(), p.len()));
    let mut scratch = Vec::new();
    match *kernel {
        Kernel::Gaussian { sigma } => {
            dense::matmul_into(out.view_mut(), x, p.points.t(), -2.0, false, Par::Seq);
            let c = -1.0 / (2.0 * sigma * sigma);
            for (xr, row) in x.rows().into_iter().zip(out.rows_mut()) {
                let xn = xr.dot(&xr);
                with_slice(row, &mut scratch, |v| {
                    for (v, &pn) in v.iter_mut().zip(&p.sq_norms) {
                        *v = (*v + xn + pn).max(0.0) * c;
                    }
                    fastmath::exp_in_place(v);
                });
            }
        }
        Kernel::Matern { nu, sigma } => {
            dense::matmul_into(out.view_mut(), x, p.points.t(), -2.0, false, Par::Seq);
            let mut e = Vec::new();
            for (xr, row) in x.rows().into_iter().zip(out.rows_mut()) {
                let xn = xr.dot(&xr);
                with_slice(row, &mut scratch, |v| {
                    // t = r/σ, the scaled distance of `matern`.
                    for (v, &pn) in v.iter_mut().zip(&p.sq_norms) {
                        *v = (*v + xn + pn).max(0.0).sqrt() / sigma;
                    }
                    matern_in_place(nu, v, &mut e);
                });
            }
        }
        Kernel::Laplacian { sigma } => with_block(x, out, |xs, o| {
            distance::l1_distances_into(xs, &p.tiled, o);
            o.iter_mut().for_each(|d| *d = -*d / sigma);
            fastmath::exp_in_place(o);
        }),
        Kernel::Cauchy { sigma } => {
            with_block(x, out, |xs, o| distance::cauchy_products_into(xs, &p.tiled, 1.0 / sigma, o))
        }
    }
}

/// `t ← matern(ν, t)` for scaled distances `t = r/σ`; `e` is scratch.
fn matern_in_place(nu: f64, t: &mut [f64], e: &mut Vec<f64>) {
    // The closed forms in s = √(2ν)·t, with e^{−s} vectorised.
    let closed = |t: &mut [f64], e: &mut Vec<f64>, a: f64, poly: fn(f64) -> f64| {
        e.clear();
        e.extend(t.iter().map(|&v| -(a * v)));
        fastmath::exp_in_place(e);
        for (v, &ev) in t.iter_mut().zip(e.iter()) {
            *v = poly(a * *v) * ev;
        }
    };
    if nu == 0.5 {
        closed(t, e, 1.0, |_| 1.0);
    } else if nu == 1.5 {
        closed(t, e, 3f64.sqrt(), |s| 1.0 + s);
    } else if nu == 2.5 {
        closed(t, e, 5f64.sqrt(), |s| 1.0 + s + s * s / 3.0);
    } else {
        // K_ν has no closed form: one Bessel evaluation per entry.
        t.iter_mut().for_each(|v| *v = matern(nu, *v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(n: usize, d: usize, scale: f64, seed: u64) -> Array2<f64> {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        Array2::from_shape_fn((n, d), |_| r.random_range(-1.0..1.0) * scale)
    }

    /// Every kernel against its direct definition, with the error the
    /// distance expansion allows. The expanded `d²` is off by at most
    /// `δ = 8ε(‖x‖² + ‖p‖²)`; the Gaussian's slope in `d²` is `k/(2σ²)`;
    /// the Matérn correlation's slope in `r` is below `(√(2ν) + 1)/σ` and
    /// `r` moves by at most `min(√δ, δ/(2r))`. On top, a few ulp per
    /// coordinate for the rounding of either side (the ℓ1 and Cauchy
    /// loops follow the definition's order, so that is all they get).
    #[test]
    fn blocks_match_the_direct_formula() {
        for &(scale, d) in &[(1.0, 3), (10.0, 13), (0.01, 40)] {
            let x = random(37, d, scale, 1);
            let p = random(53, d, scale, 2);
            let pts = Points::new(p.clone());
            for sigma in [0.3 * scale, scale, 5.0 * scale] {
                let kernels = [
                    Kernel::Gaussian { sigma },
                    Kernel::Laplacian { sigma },
                    Kernel::Cauchy { sigma },
                    Kernel::Matern { nu: 0.5, sigma },
                    Kernel::Matern { nu: 1.5, sigma },
                    Kernel::Matern { nu: 2.5, sigma },
                    Kernel::Matern { nu: 1.2, sigma },
                ];
                for kernel in kernels {
                    let mut out = Array2::zeros((37, 53));
                    kernel_block_into(&kernel, x.view(), &pts, out.view_mut());
                    for i in 0..37 {
                        for j in 0..53 {
                            let want = kernel.eval(x.row(i), p.row(j));
                            let delta = 8.0 * f64::EPSILON * (x.row(i).dot(&x.row(i)) + p.row(j).dot(&p.row(j)));
                            let r = (&x.row(i) - &p.row(j)).mapv(|v| v * v).sum().sqrt();
                            let expansion = match kernel {
                                Kernel::Gaussian { .. } => want / (2.0 * sigma * sigma) * delta,
                                Kernel::Matern { nu, .. } => {
                                    ((2.0 * nu).sqrt() + 1.0) / sigma * delta.sqrt().min(delta / (2.0 * r))
                                }
                                _ => 0.0,
                            };
                            let tol = expansion + 8.0 * d as f64 * f64::EPSILON * want;
                            let got = out[[i, j]];
                            assert!(
                                (got - want).abs() <= tol,
                                "{kernel:?} scale {scale}: {got} vs {want} (tol {tol:e})"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn coincident_points_give_exactly_one_or_nearly() {
        let p = random(20, 6, 100.0, 3);
        let pts = Points::new(p.clone());
        let mut out = Array2::zeros((20, 20));
        kernel_block_into(&Kernel::Gaussian { sigma: 1.0 }, p.view(), &pts, out.view_mut());
        for i in 0..20 {
            // ‖x‖² = 3e4: the cancelled distance is within 8ε·6e4 of 0.
            assert!((out[[i, i]] - 1.0).abs() <= 8.0 * f64::EPSILON * 6e4, "{}", out[[i, i]]);
            assert!(out[[i, i]] <= 1.0);
        }
    }

    #[test]
    fn non_contiguous_outputs_are_filled_too() {
        let x = random(5, 4, 1.0, 4);
        let pts = Points::new(random(7, 4, 1.0, 5));
        for kernel in [Kernel::Gaussian { sigma: 1.0 }, Kernel::Laplacian { sigma: 1.0 }, Kernel::Cauchy { sigma: 1.0 }]
        {
            let mut a = Array2::zeros((5, 7));
            kernel_block_into(&kernel, x.view(), &pts, a.view_mut());
            let mut b = Array2::zeros((7, 5));
            kernel_block_into(&kernel, x.view(), &pts, b.view_mut().reversed_axes());
            assert_eq!(a, b.t());
        }
    }
}
