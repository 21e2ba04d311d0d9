//! Orthogonal random features (Yu, Suresh, Choromanski, Holtmann-Rice,
//! Kumar: *Orthogonal Random Features*, NeurIPS 2016).
//!
//! Per block of `d` frequencies, `W_b = S·Q`: `Q` is the (Haar-distributed)
//! orthogonal factor of the QR decomposition of a `d × d` Gaussian matrix
//! and `S` draws each row's length from the kernel's radial distribution
//! (`χ(d)/σ` for the Gaussian kernel). Rows within a block are exactly
//! orthogonal, which lowers the variance of the kernel estimate; blocks are
//! independent.

use crate::error::{FeatureError, Result};
use crate::fourier::{Trig, check_shapes};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::rff::{DenseFourier, check_fourier};
use crate::sampling::{self, Family};
use crate::spec::{Form, MapSpec, Tensors};
use kapprox_core::dense;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};
use rand::Rng;
use rand_distr::StandardNormal;

/// An orthogonal random feature map for the isotropic kernels (Gaussian,
/// Matérn).
///
/// Cost: as [`crate::rff::Rff`] per row; construction adds one `d × d` QR
/// per block of `d` frequencies (`O(l_f · d²)`).
/// Parameter memory: `d · l_f` doubles.
#[derive(Clone, Debug)]
pub struct Orf {
    kernel: Kernel,
    form: Form,
    n_components: usize,
    seed: u64,
    inner: DenseFourier,
}

/// Checks that a direction-and-length map can approximate `kernel`.
pub(crate) fn check_isotropic(map: &'static str, kernel: &Kernel) -> Result<()> {
    if kernel.is_isotropic() {
        Ok(())
    } else {
        Err(FeatureError::UnsupportedKernel { map, kernel: kernel.name(), supported: "gaussian and matern" })
    }
}

impl Orf {
    /// Draws the orthogonal blocks for `kernel` from `seed`.
    ///
    /// # Errors
    /// A non-isotropic kernel (Laplacian, Cauchy); invalid σ or ν; odd
    /// `n_components` in the pairs form; zero sizes.
    pub fn new(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Result<Self> {
        check_fourier(&kernel, form, n_input, n_components)?;
        check_isotropic("orf", &kernel)?;
        let trig = Trig::new(form, n_components, seed);
        let d = n_input;
        let n_freq = trig.n_freq();
        let mut w = Array2::zeros((d, n_freq).f());
        for b in 0..n_freq.div_ceil(d) {
            let mut r = sampling::stream(seed, Family::Orf, b as u64);
            let g = Array2::from_shape_simple_fn((d, d), || r.sample::<f64, _>(StandardNormal));
            let (q, rr) = dense::qr_thin(g.view());
            let radii: Vec<f64> = (0..d).map(|_| sampling::sample_radius(&kernel, d, &mut r)).collect();
            for k in 0..d.min(n_freq - b * d) {
                // Multiplying by sign(R_kk) makes Q Haar-distributed.
                let sign = if rr[[k, k]] < 0.0 { -1.0 } else { 1.0 };
                let mut col = w.column_mut(b * d + k);
                col.assign(&q.column(k));
                col *= sign * radii[k];
            }
        }
        Ok(Orf { kernel, form, n_components, seed, inner: DenseFourier::new(w, trig) })
    }

    /// The map of [`Orf::new`] from its stored parameters
    /// ([`FeatureMap::random_parameters`]) when `tensors` has any, else
    /// regenerated from `seed`.
    ///
    /// # Errors
    /// As [`Orf::new`]; stored parameters missing, mis-shaped or not finite.
    pub fn restore(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        seed: u64,
        tensors: &Tensors,
    ) -> Result<Self> {
        if tensors.is_empty() {
            return Orf::new(kernel, form, n_input, n_components, seed);
        }
        check_fourier(&kernel, form, n_input, n_components)?;
        check_isotropic("orf", &kernel)?;
        let inner = DenseFourier::restore("orf", form, n_input, n_components, tensors)?;
        Ok(Orf { kernel, form, n_components, seed, inner })
    }

    /// The frequency matrix `W`, shape `(n_input, n_freq)`.
    pub fn frequencies(&self) -> Array2<f64> {
        self.inner.frequencies()
    }
}

impl FeatureMap for Orf {
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
        MapSpec::Orf {
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
