//! Addressed parameter streams and the spectral samplers of each kernel.
//!
//! Every random parameter of a data-independent map is a pure function of
//! `(seed, map family, index)`: the map family selects a disjoint range of
//! the [`Domain::FEATURE_MAP`] index space, and the index is a frequency, a
//! block or a grid. So a map can be regenerated from its spec anywhere, and
//! its first `k` frequencies / blocks do not depend on how many follow.

use crate::kernel::Kernel;
use crate::special::{chi2_quantile, norm_quantile};
use kapprox_core::{Domain, rng};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Cauchy, ChiSquared, Distribution, StandardNormal};

/// Which map family a parameter stream belongs to (the top 16 bits of the
/// index). RFF is 0 so that its stream of frequency `j` is index `j`.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum Family {
    Rff = 0,
    Orf = 1,
    Sorf = 2,
    Qmc = 3,
    Fastfood = 4,
    Binning = 5,
    CompProjection = 6,
}

fn address(family: Family, index: u64) -> u64 {
    debug_assert!(index < 1 << 48);
    ((family as u64) << 48) | index
}

/// The generator of `(seed, family, index)`.
pub(crate) fn stream(seed: u64, family: Family, index: u64) -> ChaCha8Rng {
    rng::stream(seed, Domain::FEATURE_MAP, address(family, index))
}

/// One well-mixed number for `(seed, family, index)`.
pub(crate) fn hash(seed: u64, family: Family, index: u64) -> u64 {
    rng::hash64(seed, Domain::FEATURE_MAP, address(family, index))
}

/// The phase `b_j ~ U[0, 2π)` of frequency `j` (phase form), shared by all
/// Fourier maps.
pub(crate) fn phase(seed: u64, j: usize) -> f64 {
    let mut r = rng::stream(seed, Domain::FEATURE_MAP_AUX, j as u64);
    r.random::<f64>() * std::f64::consts::TAU
}

/// Draws one frequency vector `w` from the kernel's spectral density.
pub(crate) fn sample_frequency<R: Rng>(kernel: &Kernel, r: &mut R, w: &mut [f64]) {
    match *kernel {
        Kernel::Gaussian { sigma } => {
            for v in w.iter_mut() {
                let g: f64 = r.sample(StandardNormal);
                *v = g / sigma;
            }
        }
        Kernel::Laplacian { sigma } => {
            let c = Cauchy::new(0.0, 1.0 / sigma).expect("checked bandwidth");
            for v in w.iter_mut() {
                *v = c.sample(r);
            }
        }
        Kernel::Cauchy { sigma } => {
            // rand_distr has no Laplace distribution in every version; the
            // inverse CDF of a uniform is exact.
            for v in w.iter_mut() {
                *v = laplace_quantile(r.random::<f64>()) / sigma;
            }
        }
        Kernel::Matern { nu, sigma } => {
            for v in w.iter_mut() {
                *v = r.sample(StandardNormal);
            }
            let u = ChiSquared::new(2.0 * nu).expect("checked smoothness").sample(r);
            let s = (2.0 * nu / u).sqrt() / sigma;
            w.iter_mut().for_each(|v| *v *= s);
        }
    }
}

/// Draws the length `‖w‖` of a frequency vector in `dim` dimensions, for
/// the isotropic kernels (a χ(dim) radius, times the Student-t mixing
/// factor for Matérn), divided by σ.
///
/// # Panics
/// The kernel must be isotropic (callers check).
pub(crate) fn sample_radius<R: Rng>(kernel: &Kernel, dim: usize, r: &mut R) -> f64 {
    let chi = ChiSquared::new(dim as f64).expect("positive dimension").sample(r).sqrt();
    match *kernel {
        Kernel::Gaussian { sigma } => chi / sigma,
        Kernel::Matern { nu, sigma } => {
            let u = ChiSquared::new(2.0 * nu).expect("checked smoothness").sample(r);
            chi * (2.0 * nu / u).sqrt() / sigma
        }
        _ => panic!("sample_radius: the {} kernel is not isotropic", kernel.name()),
    }
}

/// Number of uniform coordinates a quasi-Monte Carlo point needs to make
/// one frequency vector in `dim` dimensions.
pub(crate) fn uniform_dim(kernel: &Kernel, dim: usize) -> usize {
    match kernel {
        Kernel::Matern { .. } => dim + 1,
        _ => dim,
    }
}

/// Maps a point `u ∈ (0,1)^uniform_dim` through the inverse CDF of the
/// spectral distribution (coordinate-wise for the product kernels; for
/// Matérn the last coordinate gives the χ² mixing variable).
pub(crate) fn frequency_from_uniform(kernel: &Kernel, u: &[f64], w: &mut [f64]) {
    match *kernel {
        Kernel::Gaussian { sigma } => {
            for (v, &p) in w.iter_mut().zip(u) {
                *v = norm_quantile(p) / sigma;
            }
        }
        Kernel::Laplacian { sigma } => {
            for (v, &p) in w.iter_mut().zip(u) {
                *v = (std::f64::consts::PI * (p - 0.5)).tan() / sigma;
            }
        }
        Kernel::Cauchy { sigma } => {
            for (v, &p) in w.iter_mut().zip(u) {
                *v = laplace_quantile(p) / sigma;
            }
        }
        Kernel::Matern { nu, sigma } => {
            let d = w.len();
            let chi2 = chi2_quantile(2.0 * nu, u[d]);
            let s = (2.0 * nu / chi2).sqrt() / sigma;
            for (v, &p) in w.iter_mut().zip(&u[..d]) {
                *v = norm_quantile(p) * s;
            }
        }
    }
}

/// The quantile of the standard Laplace distribution (density e^{−|w|}/2).
fn laplace_quantile(p: f64) -> f64 {
    let c = p - 0.5;
    -c.signum() * (1.0 - 2.0 * c.abs()).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Empirical characteristic function E[cos(w·δ)] against the kernel:
    /// that identity is what makes the samplers right.
    #[test]
    fn samplers_have_the_kernel_as_characteristic_function() {
        let dim = 3;
        let delta = [0.4, -0.3, 0.2];
        let zero = [0.0; 3];
        let kernels = [
            Kernel::Gaussian { sigma: 0.7 },
            Kernel::Laplacian { sigma: 0.7 },
            Kernel::Cauchy { sigma: 0.7 },
            Kernel::Matern { nu: 1.5, sigma: 0.7 },
            Kernel::Matern { nu: 0.8, sigma: 0.7 },
        ];
        let n = 200_000;
        for k in kernels {
            let want = k.eval(ndarray::aview1(&delta), ndarray::aview1(&zero));
            let mut r = ChaCha8Rng::seed_from_u64(3);
            let mut w = vec![0.0; dim];
            let mut sum = 0.0;
            for _ in 0..n {
                sample_frequency(&k, &mut r, &mut w);
                sum += (w.iter().zip(&delta).map(|(a, b)| a * b).sum::<f64>()).cos();
            }
            // sd of the mean ≤ sqrt(0.5/n) = 1.6e-3; 5 sd.
            let got = sum / n as f64;
            assert!((got - want).abs() < 8e-3, "{k:?}: {got} vs {want}");
        }
    }

    #[test]
    fn quantile_maps_have_the_kernel_as_characteristic_function() {
        // A midpoint grid in one dimension plus the χ² coordinate is enough
        // to check the inverse CDFs (not the QMC sequence).
        let delta = 0.9;
        for k in [
            Kernel::Gaussian { sigma: 1.3 },
            Kernel::Laplacian { sigma: 1.3 },
            Kernel::Cauchy { sigma: 1.3 },
            Kernel::Matern { nu: 2.5, sigma: 1.3 },
        ] {
            let want = k.eval(ndarray::aview1(&[delta]), ndarray::aview1(&[0.0]));
            let m = 400;
            let mut sum = 0.0;
            let mut w = [0.0];
            for i in 0..m {
                for j in 0..(if matches!(k, Kernel::Matern { .. }) { m } else { 1 }) {
                    let u = [(i as f64 + 0.5) / m as f64, (j as f64 + 0.5) / m as f64];
                    frequency_from_uniform(&k, &u[..uniform_dim(&k, 1)], &mut w);
                    sum += (w[0] * delta).cos();
                }
            }
            let count = if matches!(k, Kernel::Matern { .. }) { m * m } else { m };
            let got = sum / count as f64;
            assert!((got - want).abs() < 5e-3, "{k:?}: {got} vs {want}");
        }
    }

    #[test]
    fn radii_have_the_right_second_moment() {
        // Gaussian: E‖w‖² = dim/σ².
        let mut r = ChaCha8Rng::seed_from_u64(9);
        let n = 100_000;
        let k = Kernel::Gaussian { sigma: 2.0 };
        let m: f64 = (0..n).map(|_| sample_radius(&k, 16, &mut r).powi(2)).sum::<f64>() / n as f64;
        // sd of the mean: sqrt(2·16)/4/sqrt(n) = 4.5e-3.
        assert!((m - 4.0).abs() < 0.03, "{m}");
    }
}
