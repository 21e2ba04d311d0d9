//! Quasi-Monte Carlo random features (Yang, Sindhwani, Avron, Mahoney:
//! *Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels*, ICML 2014;
//! the "Quasi" baseline of paper 000).
//!
//! The frequencies are the points of a randomised low-discrepancy sequence
//! in `(0,1)^m` mapped through the inverse CDF of the spectral distribution
//! (coordinate-wise for the product kernels; for Matérn, `m = d + 1` and
//! the last coordinate is the χ² mixing variable).
//!
//! The sequence is a **scrambled Halton sequence**: coordinate `j` uses the
//! `j`-th prime `p` as its base, and digit `k` of the radical inverse goes
//! through its own random affine permutation `t ↦ (a·t + b) mod p`,
//! `a ∈ [1, p)`, `b ∈ [0, p)`, applied to all 53 bits of depth (trailing zero
//! digits included). That is Matoušek's random linear scrambling without the
//! digit-mixing matrix: it keeps the stratification of Halton, makes every
//! point uniform on its own (so the estimate stays unbiased), and breaks
//! the correlation between coordinates with large bases that plain Halton
//! has in high dimension. We chose it over Sobol' because it needs no
//! table of direction numbers (thousands of dimensions would need one of
//! several megabytes); the scramble is a pure function of
//! `(seed, coordinate, digit)`.

use crate::error::Result;
use crate::fourier::{Trig, check_shapes};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::rff::{DenseFourier, check_fourier};
use crate::sampling::{self, Family};
use crate::spec::{Form, MapSpec, Tensors};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};

/// A quasi-Monte Carlo feature map for any [`Kernel`].
///
/// Cost: as [`crate::rff::Rff`] per row; construction evaluates `l_f`
/// points of an `m`-dimensional sequence (`O(l_f · m · log_p 2^53)`).
/// Parameter memory: `d · l_f` doubles.
#[derive(Clone, Debug)]
pub struct Qmc {
    kernel: Kernel,
    form: Form,
    n_components: usize,
    seed: u64,
    inner: DenseFourier,
}

impl Qmc {
    /// Builds the scrambled Halton frequencies for `kernel` from `seed`.
    ///
    /// # Errors
    /// Invalid σ or ν; odd `n_components` in the pairs form; zero sizes.
    pub fn new(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Result<Self> {
        check_fourier(&kernel, form, n_input, n_components)?;
        let trig = Trig::new(form, n_components, seed);
        let n_freq = trig.n_freq();
        let m = sampling::uniform_dim(&kernel, n_input);
        let halton = ScrambledHalton::new(m, seed);
        let mut w = Array2::zeros((n_input, n_freq).f());
        let mut u = vec![0.0; m];
        let mut col = vec![0.0; n_input];
        for j in 0..n_freq {
            halton.point(j as u64, &mut u);
            sampling::frequency_from_uniform(&kernel, &u, &mut col);
            w.column_mut(j).assign(&ndarray::aview1(&col));
        }
        Ok(Qmc { kernel, form, n_components, seed, inner: DenseFourier::new(w, trig) })
    }

    /// The map of [`Qmc::new`] from its stored parameters
    /// ([`FeatureMap::random_parameters`]) when `tensors` has any, else
    /// regenerated from `seed`.
    ///
    /// # Errors
    /// As [`Qmc::new`]; stored parameters missing, mis-shaped or not finite.
    pub fn restore(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        seed: u64,
        tensors: &Tensors,
    ) -> Result<Self> {
        if tensors.is_empty() {
            return Qmc::new(kernel, form, n_input, n_components, seed);
        }
        check_fourier(&kernel, form, n_input, n_components)?;
        let inner = DenseFourier::restore("qmc", form, n_input, n_components, tensors)?;
        Ok(Qmc { kernel, form, n_components, seed, inner })
    }

    /// The frequency matrix `W`, shape `(n_input, n_freq)`.
    pub fn frequencies(&self) -> Array2<f64> {
        self.inner.frequencies()
    }
}

impl FeatureMap for Qmc {
    fn n_input(&self) -> usize {
        self.inner.n_input()
    }

    fn n_output(&self) -> usize {
        self.n_components
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>) {
        check_shapes(self.n_input(), self.n_components, x.dim(), out.dim());
        self.inner.transform(x, out);
    }

    fn transform_into_f32(&self, x: ArrayView2<'_, f32>, out: ArrayViewMut2<'_, f32>) {
        check_shapes(self.n_input(), self.n_components, x.dim(), out.dim());
        self.inner.transform(x, out);
    }

    fn spec(&self) -> MapSpec {
        MapSpec::Qmc {
            kernel: self.kernel,
            form: self.form,
            n_input: self.n_input(),
            n_components: self.n_components,
            seed: self.seed,
        }
    }

    fn parameter_bytes(&self) -> usize {
        self.inner.parameter_bytes()
    }

    fn random_parameters(&self) -> Tensors {
        let mut t = Tensors::new();
        self.inner.store(&mut t);
        t
    }
}

/// The first `n` primes.
fn primes(n: usize) -> Vec<u64> {
    // p_n < n (ln n + ln ln n) for n ≥ 6.
    let nf = n.max(6) as f64;
    let limit = (nf * (nf.ln() + nf.ln().ln())).ceil() as usize + 1;
    let mut composite = vec![false; limit + 1];
    let mut out = Vec::with_capacity(n);
    for i in 2..=limit {
        if !composite[i] {
            out.push(i as u64);
            if out.len() == n {
                break;
            }
            let mut k = i * i;
            while k <= limit {
                composite[k] = true;
                k += i;
            }
        }
    }
    out
}

/// A Halton sequence with random affine digit scrambling (see the module
/// docs).
struct ScrambledHalton {
    bases: Vec<u64>,
    /// Per coordinate, `(a, b)` of each digit position, down to 2^-53.
    scrambles: Vec<Vec<(u64, u64)>>,
}

impl ScrambledHalton {
    fn new(dim: usize, seed: u64) -> Self {
        let bases = primes(dim);
        let scrambles = bases
            .iter()
            .enumerate()
            .map(|(j, &p)| {
                let depth = (53.0 * std::f64::consts::LN_2 / (p as f64).ln()).ceil() as usize;
                (0..depth)
                    .map(|k| {
                        let h = sampling::hash(seed, Family::Qmc, ((j as u64) << 8) | k as u64);
                        let a = 1 + (h >> 32) % (p - 1).max(1);
                        let b = (h & 0xffff_ffff) % p;
                        (if p == 2 { 1 } else { a }, b)
                    })
                    .collect()
            })
            .collect();
        ScrambledHalton { bases, scrambles }
    }

    /// Point `i`, clamped into the open unit cube.
    fn point(&self, i: u64, u: &mut [f64]) {
        for ((v, &p), digits) in u.iter_mut().zip(&self.bases).zip(&self.scrambles) {
            let inv = 1.0 / p as f64;
            let mut rest = i;
            let mut weight = inv;
            let mut acc = 0.0;
            for &(a, b) in digits {
                let t = rest % p;
                rest /= p;
                acc += ((a * t + b) % p) as f64 * weight;
                weight *= inv;
            }
            *v = acc.clamp(f64::EPSILON * 0.5, 1.0 - f64::EPSILON * 0.5);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_are_primes() {
        let p = primes(10);
        assert_eq!(p, vec![2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
        let big = primes(5000);
        assert_eq!(big.len(), 5000);
        assert_eq!(big[4999], 48611);
    }

    #[test]
    fn scrambled_points_are_stratified_in_every_coordinate() {
        // The first p^k points of a (scrambled) radical inverse in base p
        // put exactly one point in each interval [i/p^k, (i+1)/p^k).
        let h = ScrambledHalton::new(4, 7);
        for (j, &p) in h.bases.iter().enumerate() {
            let n = (p * p) as usize;
            let mut hit = vec![0; n];
            let mut u = vec![0.0; 4];
            for i in 0..n as u64 {
                h.point(i, &mut u);
                hit[(u[j] * n as f64) as usize] += 1;
            }
            assert!(hit.iter().all(|&c| c == 1), "coordinate {j}");
        }
    }

    #[test]
    fn scrambling_depends_on_the_seed() {
        let (a, b) = (ScrambledHalton::new(3, 1), ScrambledHalton::new(3, 2));
        let (mut u, mut v) = (vec![0.0; 3], vec![0.0; 3]);
        a.point(5, &mut u);
        b.point(5, &mut v);
        assert_ne!(u, v);
    }
}
