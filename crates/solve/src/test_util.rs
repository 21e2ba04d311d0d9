//! Seeded random matrices for the unit tests.

use kapprox_core::rng::{Domain, unit};
use ndarray::Array2;

/// Test-only random domain.
const TEST: Domain = Domain(0xfe);

/// A standard Gaussian `(n, m)` matrix from `seed` (Box–Muller).
pub(crate) fn gaussian(n: usize, m: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, m), |(i, j)| {
        let idx = (i * m + j) as u64;
        let u1 = unit(seed, TEST, 2 * idx).max(f64::MIN_POSITIVE);
        let u2 = unit(seed, TEST, 2 * idx + 1);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    })
}

/// A random orthogonal `(n, n)` matrix (Q of a Gaussian matrix).
pub(crate) fn random_orthogonal(n: usize, seed: u64) -> Array2<f64> {
    kapprox_core::dense::qr_thin_q(gaussian(n, n, seed).view())
}
