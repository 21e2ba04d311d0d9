//! Random Fourier features (Rahimi & Recht 2007; paper 001, 000 eq. 2–3).
//!
//! `z(x) = √(2/l)·[cos(Wx), sin(Wx)]` (pairs) or `√(2/l)·cos(Wx + b)`
//! (phase), with the rows of `W` drawn i.i.d. from the kernel's spectral
//! density (see [`Kernel`]).

use crate::error::{FeatureError, Result};
use crate::fourier::{Real, Trig, apply_rows, check_shapes, for_each_tile};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::sampling::{self, Family};
use crate::spec::{Form, MapSpec, Tensors};
use crate::stored;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};
use std::sync::OnceLock;

/// Rows per tile: the projections of a tile are written into the output
/// and turned into features while they are still in cache, and a tile is
/// large enough for the GEMM to amortise reading `W`.
const TILE_ROWS: usize = 256;

/// The shared engine of the dense-frequency maps (RFF, ORF, QMC): one GEMM
/// `X·W` per tile straight into the output buffer, then the output stage.
#[derive(Clone, Debug)]
pub(crate) struct DenseFourier {
    /// Frequencies, `(n_input, n_freq)`, column-major so that `XW` is one GEMM.
    w: Array2<f64>,
    /// The single-precision copy, made on the first f32 call.
    w32: OnceLock<Array2<f32>>,
    trig: Trig,
}

/// The frequency matrix in the scalar type of a transform.
pub(crate) trait Weights<T> {
    fn weights(&self) -> ArrayView2<'_, T>;
}

impl Weights<f64> for DenseFourier {
    fn weights(&self) -> ArrayView2<'_, f64> {
        self.w.view()
    }
}

impl Weights<f32> for DenseFourier {
    fn weights(&self) -> ArrayView2<'_, f32> {
        self.w32
            .get_or_init(|| {
                let mut w = Array2::zeros(self.w.raw_dim().f());
                w.zip_mut_with(&self.w, |a, &b| *a = b as f32);
                w
            })
            .view()
    }
}

impl DenseFourier {
    /// `w` has shape `(n_input, trig.n_freq())`.
    pub(crate) fn new(w: Array2<f64>, trig: Trig) -> Self {
        debug_assert_eq!(w.ncols(), trig.n_freq());
        DenseFourier { w, w32: OnceLock::new(), trig }
    }

    /// Draws `n_freq` i.i.d. frequencies, one addressed stream each.
    pub(crate) fn iid(kernel: &Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Self {
        let trig = Trig::new(form, n_components, seed);
        let n_freq = trig.n_freq();
        let mut w = Array2::zeros((n_input, n_freq).f());
        let mut col = vec![0.0; n_input];
        for j in 0..n_freq {
            let mut r = sampling::stream(seed, Family::Rff, j as u64);
            sampling::sample_frequency(kernel, &mut r, &mut col);
            w.column_mut(j).assign(&ndarray::aview1(&col));
        }
        DenseFourier::new(w, trig)
    }

    /// The frequencies and phases stored by [`DenseFourier::store`], for
    /// the map named `map`.
    ///
    /// # Errors
    /// A missing tensor, a shape other than `(n_input, n_freq)` and
    /// `(1, n_components)`, or a non-finite entry.
    pub(crate) fn restore(
        map: &'static str,
        form: Form,
        n_input: usize,
        n_components: usize,
        tensors: &Tensors,
    ) -> Result<Self> {
        let trig = Trig::restore(form, n_components, tensors, map)?;
        let stored_w = stored::get(tensors, map, stored::FREQUENCIES, (n_input, trig.n_freq()))?;
        // The layout `iid` draws into, so that the GEMM (and its rounding) is the same.
        let mut w = Array2::zeros(stored_w.raw_dim().f());
        w.assign(stored_w);
        Ok(DenseFourier::new(w, trig))
    }

    /// Adds `frequencies (n_input, n_freq)` and, in the phase form,
    /// `phases (1, n_components)` to `out`.
    pub(crate) fn store(&self, out: &mut Tensors) {
        out.insert(stored::FREQUENCIES.to_string(), self.w.as_standard_layout().into_owned());
        self.trig.store(out);
    }

    pub(crate) fn n_input(&self) -> usize {
        self.w.nrows()
    }

    pub(crate) fn frequencies(&self) -> Array2<f64> {
        self.w.to_owned()
    }

    pub(crate) fn parameter_bytes(&self) -> usize {
        self.w.len() * 8 + self.trig.parameter_bytes()
    }

    pub(crate) fn transform<T: Real>(&self, x: ArrayView2<'_, T>, out: ArrayViewMut2<'_, T>)
    where
        Self: Weights<T>,
    {
        let w = self.weights();
        let n_freq = self.trig.n_freq();
        for_each_tile(x, out, TILE_ROWS, |xt, mut ot| {
            T::gemm(ot.slice_mut(s![.., ..n_freq]), xt, w);
            apply_rows(&self.trig, ot);
        });
    }
}

/// Checks the sizes shared by all Fourier maps and returns nothing or the
/// structured error.
pub(crate) fn check_fourier(kernel: &Kernel, form: Form, n_input: usize, n_components: usize) -> Result<()> {
    kernel.check()?;
    if n_input == 0 {
        return Err(FeatureError::InvalidParameter {
            name: "n_input",
            value: "0".into(),
            expected: "at least one input column",
        });
    }
    if n_components == 0 || (form == Form::Pairs && n_components % 2 == 1) {
        return Err(FeatureError::InvalidParameter {
            name: "features",
            value: n_components.to_string(),
            expected: "a positive number (even for the pairs form)",
        });
    }
    Ok(())
}

/// A random Fourier feature map for any [`Kernel`].
///
/// Cost: one GEMM, `n · d · l_f` multiply-adds for `n` rows (`l_f = l/2`
/// frequencies for pairs, `l` for phase), plus `l` sines/cosines per row.
/// Parameter memory: `d · l_f` doubles.
#[derive(Clone, Debug)]
pub struct Rff {
    kernel: Kernel,
    form: Form,
    n_components: usize,
    seed: u64,
    inner: DenseFourier,
}

impl Rff {
    /// Draws the frequencies for `kernel` from `seed`.
    ///
    /// # Errors
    /// Invalid bandwidth or ν; odd `n_components` in the pairs form; zero sizes.
    pub fn new(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Result<Self> {
        check_fourier(&kernel, form, n_input, n_components)?;
        let inner = DenseFourier::iid(&kernel, form, n_input, n_components, seed);
        Ok(Rff { kernel, form, n_components, seed, inner })
    }

    /// The map of [`Rff::new`] from its stored parameters
    /// ([`FeatureMap::random_parameters`]) when `tensors` has any, else
    /// regenerated from `seed`.
    ///
    /// # Errors
    /// As [`Rff::new`]; stored parameters missing, mis-shaped or not finite.
    pub fn restore(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        seed: u64,
        tensors: &Tensors,
    ) -> Result<Self> {
        if tensors.is_empty() {
            return Rff::new(kernel, form, n_input, n_components, seed);
        }
        check_fourier(&kernel, form, n_input, n_components)?;
        let inner = DenseFourier::restore("rff", form, n_input, n_components, tensors)?;
        Ok(Rff { kernel, form, n_components, seed, inner })
    }

    /// The frequency matrix `W`, shape `(n_input, n_freq)`.
    pub fn frequencies(&self) -> Array2<f64> {
        self.inner.frequencies()
    }
}

impl FeatureMap for Rff {
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
        MapSpec::rff(self.kernel, self.form, self.n_input(), self.n_components, self.seed)
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
