//! Compact random feature maps, "Comp" (Hamid, Xiao, Gittens, DeCoste,
//! *Compact Random Feature Maps*, ICML 2014; the baseline of paper 000).
//!
//! Random Fourier features to an inner dimension `m`, then a
//! data-independent Gaussian projection to `l`:
//! `z(x) = P f(x)`, `P_ij ~ N(0, 1/l)`, so that
//! `E_P[z(x)ᵀz(y)] = f(x)ᵀf(y) ≈ k(x, y)`. The projection adds its own
//! error (about `√((1 + k²)/l)`), which is why paper 000 finds it worse
//! than a data-dependent subspace.

use crate::error::{FeatureError, Result};
use crate::fourier::{Real, check_shapes, for_each_tile};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::rff::{DenseFourier, check_fourier};
use crate::sampling::{self, Family};
use crate::spec::{Form, MapSpec, Tensors};
use crate::stored;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, s};
use rand::Rng;
use rand_distr::StandardNormal;

/// Rows per tile (the inner features of a tile live in one scratch buffer).
const TILE_ROWS: usize = 128;

/// The default inner dimension, `m = 2·l`: large enough that the RFF
/// error is below the projection's, small enough that `P` (`m·l` doubles)
/// stays within memory at `l` in the thousands.
pub fn default_inner(n_components: usize) -> usize {
    2 * n_components
}

/// A Comp map: RFF to `n_inner`, then a Gaussian projection to `l`.
///
/// Cost per row: `d·m_f + m·l` multiply-adds (two GEMMs) and `m`
/// sines/cosines. Parameter memory: `d·m_f + m·l` doubles.
#[derive(Clone, Debug)]
pub struct Comp {
    kernel: Kernel,
    form: Form,
    n_components: usize,
    n_inner: usize,
    seed: u64,
    inner: DenseFourier,
    /// `P`ᵀ, shape `(n_inner, n_components)`, entries `N(0, 1/l)`.
    projection: Array2<f64>,
}

impl Comp {
    /// RFF for `kernel` to `n_inner` features, projected to `n_components`.
    ///
    /// # Errors
    /// Invalid σ or ν; zero sizes; odd `n_inner` in the pairs form.
    pub fn new(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        n_inner: usize,
        seed: u64,
    ) -> Result<Self> {
        check_sizes(&kernel, form, n_input, n_components, n_inner)?;
        let inner = DenseFourier::iid(&kernel, form, n_input, n_inner, seed);
        let scale = 1.0 / (n_components as f64).sqrt();
        let mut projection = Array2::zeros((n_inner, n_components));
        for (i, mut row) in projection.rows_mut().into_iter().enumerate() {
            let mut r = sampling::stream(seed, Family::CompProjection, i as u64);
            row.iter_mut().for_each(|v| *v = r.sample::<f64, _>(StandardNormal) * scale);
        }
        Ok(Comp { kernel, form, n_components, n_inner, seed, inner, projection })
    }

    /// The map of [`Comp::new`] from its stored parameters
    /// ([`FeatureMap::random_parameters`]) when `tensors` has any, else
    /// regenerated from `seed`.
    ///
    /// # Errors
    /// As [`Comp::new`]; stored parameters missing, mis-shaped or not finite.
    pub fn restore(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        n_inner: usize,
        seed: u64,
        tensors: &Tensors,
    ) -> Result<Self> {
        if tensors.is_empty() {
            return Comp::new(kernel, form, n_input, n_components, n_inner, seed);
        }
        check_sizes(&kernel, form, n_input, n_components, n_inner)?;
        let inner = DenseFourier::restore("comp", form, n_input, n_inner, tensors)?;
        let projection = stored::get(tensors, "comp", stored::PROJECTION, (n_inner, n_components))?.clone();
        Ok(Comp { kernel, form, n_components, n_inner, seed, inner, projection })
    }

    /// The inner (RFF) dimension `m`.
    pub fn n_inner(&self) -> usize {
        self.n_inner
    }
}

/// The checks of [`Comp::new`] on the kernel and sizes.
fn check_sizes(kernel: &Kernel, form: Form, n_input: usize, n_components: usize, n_inner: usize) -> Result<()> {
    check_fourier(kernel, form, n_input, n_inner).map_err(|e| match e {
        FeatureError::InvalidParameter { name: "features", value, .. } => FeatureError::InvalidParameter {
            name: "inner",
            value,
            expected: "a positive inner dimension (even for the pairs form)",
        },
        e => e,
    })?;
    if n_components == 0 {
        return Err(FeatureError::InvalidParameter {
            name: "features",
            value: "0".into(),
            expected: "a positive number",
        });
    }
    Ok(())
}

impl FeatureMap for Comp {
    fn n_input(&self) -> usize {
        self.inner.n_input()
    }

    fn n_output(&self) -> usize {
        self.n_components
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>) {
        check_shapes(self.n_input(), self.n_components, x.dim(), out.dim());
        let mut f = Array2::<f64>::zeros((TILE_ROWS.min(x.nrows()), self.n_inner));
        for_each_tile(x, out, TILE_ROWS, |xt, ot| {
            let mut ft = f.slice_mut(s![..xt.nrows(), ..]);
            self.inner.transform(xt, ft.view_mut());
            f64::gemm(ot, ft.view(), self.projection.view());
        });
    }

    fn spec(&self) -> MapSpec {
        MapSpec::Comp {
            kernel: self.kernel,
            form: self.form,
            n_input: self.n_input(),
            n_components: self.n_components,
            n_inner: self.n_inner,
            seed: self.seed,
        }
    }

    fn parameter_bytes(&self) -> usize {
        self.inner.parameter_bytes() + self.projection.len() * 8
    }

    fn random_parameters(&self) -> Tensors {
        let mut t = Tensors::from([(stored::PROJECTION.to_string(), self.projection.clone())]);
        self.inner.store(&mut t);
        t
    }
}
