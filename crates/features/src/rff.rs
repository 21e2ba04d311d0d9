//! Random Fourier features (Rahimi & Recht 2007; paper 001, 000 eq. 2–3).
//!
//! `z(x) = √(2/l)·[cos(Wx), sin(Wx)]` (pairs) or `√(2/l)·cos(Wx + b)`
//! (phase), with the rows of `W` drawn from the kernel's spectral density.

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::spec::{Form, MapSpec, check_sigma};
use kapprox_core::{Domain, Par, dense, fastmath, rng};
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};
use rand::Rng;
use rand_distr::StandardNormal;

/// A random Fourier feature map.
#[derive(Clone, Debug)]
pub struct Rff {
    kernel: Kernel,
    form: Form,
    n_input: usize,
    n_components: usize,
    seed: u64,
    /// Frequencies, `(n_input, n_freq)` so that `XW` is one GEMM.
    w: Array2<f64>,
    /// Phases (phase form only), length `n_freq`.
    b: Array1<f64>,
}

impl Rff {
    /// Draws the frequencies for `kernel` from `seed`.
    ///
    /// # Errors
    /// Invalid bandwidth; odd `n_components` in the pairs form; zero sizes.
    pub fn new(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Result<Self> {
        check_sigma(kernel.sigma())?;
        if n_components == 0 || (form == Form::Pairs && n_components % 2 == 1) {
            return Err(FeatureError::InvalidParameter {
                name: "features",
                value: n_components.to_string(),
                expected: "a positive number (even for the pairs form)",
            });
        }
        let n_freq = match form {
            Form::Pairs => n_components / 2,
            Form::Phase => n_components,
        };
        let sigma = kernel.sigma();
        let mut w = Array2::zeros((n_input, n_freq).f());
        // One addressed stream per frequency: the map is the same whatever
        // the number of frequencies drawn after it.
        for j in 0..n_freq {
            let mut r = rng::stream(seed, Domain::FEATURE_MAP, j as u64);
            for i in 0..n_input {
                let g: f64 = r.sample(StandardNormal);
                w[[i, j]] = match kernel {
                    Kernel::Gaussian { .. } => g / sigma,
                    _ => unimplemented!("spectral sampler for {kernel:?}"),
                };
            }
        }
        let b = match form {
            Form::Pairs => Array1::zeros(0),
            Form::Phase => Array1::from_shape_fn(n_freq, |j| {
                let mut r = rng::stream(seed, Domain::FEATURE_MAP_AUX, j as u64);
                r.random::<f64>() * std::f64::consts::TAU
            }),
        };
        Ok(Rff { kernel, form, n_input, n_components, seed, w, b })
    }
}

impl FeatureMap for Rff {
    fn n_input(&self) -> usize {
        self.n_input
    }

    fn n_output(&self) -> usize {
        self.n_components
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        assert_eq!(x.ncols(), self.n_input);
        assert_eq!(out.dim(), (x.nrows(), self.n_components));
        let n_freq = self.w.ncols();
        let scale = (2.0 / self.n_components as f64).sqrt();
        let proj = dense::matmul(x, self.w.view(), Par::Seq);
        for (r, p) in out.rows_mut().into_iter().zip(proj.rows()) {
            let mut r = r;
            let row = r.as_slice_mut().expect("output rows must be contiguous");
            match self.form {
                Form::Pairs => {
                    let (c, s) = row.split_at_mut(n_freq);
                    let p: Vec<f64> = p.to_vec();
                    fastmath::sincos_into(&p, s, c);
                }
                Form::Phase => {
                    for j in 0..n_freq {
                        row[j] = p[j] + self.b[j];
                    }
                    fastmath::cos_in_place(row);
                }
            }
            row.iter_mut().for_each(|v| *v *= scale);
        }
    }

    fn spec(&self) -> MapSpec {
        MapSpec::rff(self.kernel, self.form, self.n_input, self.n_components, self.seed)
    }
}
