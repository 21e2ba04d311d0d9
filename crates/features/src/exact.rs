//! Kernel columns `z(x) = [k(x, p_1), …, k(x, p_n)]`: exact kernel ridge
//! regression as a feature map.
//!
//! The dual solution of kernel ridge, `f(x) = Σ_i c_i k(x, x_i) + b`, is a
//! linear model over these features with weights `c`, so the exact
//! baseline shares the model files and the prediction path of every other
//! map. The map stores its points (the training rows), so it is meant for
//! the `n ≤ ~20k` rows exact kernel ridge can afford anyway.

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::kernel_block::{Points, kernel_block_into};
use crate::map::FeatureMap;
use crate::spec::{MapSpec, TensorViews, Tensors, owned};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, s};

/// Rows per kernel block (bounds the scratch of a transform call).
const ROW_BLOCK: usize = 512;

/// The kernel columns of a set of points.
///
/// Memory: `2·n·d` doubles for the points (kept transposed too, for the
/// vectorised ℓ1 and Cauchy blocks).
///
/// Cost: one `(rows, n)` kernel block per call: `2·rows·n·d` flops plus
/// `rows·n` vectorised exponentials.
#[derive(Clone, Debug)]
pub struct KernelColumns {
    kernel: Kernel,
    points: Points,
}

impl KernelColumns {
    /// The columns of `kernel` at `points (n, d)`.
    ///
    /// # Errors
    /// An invalid kernel, or no points.
    pub fn new(kernel: Kernel, points: Array2<f64>) -> Result<Self> {
        kernel.check()?;
        if points.nrows() == 0 || points.ncols() == 0 {
            return Err(FeatureError::InvalidParameter {
                name: "points",
                value: format!("{}x{}", points.nrows(), points.ncols()),
                expected: "at least one point with at least one column",
            });
        }
        Ok(KernelColumns { kernel, points: Points::new(points) })
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The points `(n, d)`.
    pub fn points(&self) -> ArrayView2<'_, f64> {
        self.points.view()
    }

    /// Rebuilds the map from its spec parameters and the `"points"` tensor.
    ///
    /// # Errors
    /// A missing or mis-shaped tensor.
    pub fn from_tensors(kernel: Kernel, n_input: usize, n_points: usize, tensors: &Tensors) -> Result<Self> {
        let p = tensors
            .get("points")
            .ok_or(FeatureError::MissingTensor { name: "points".into(), map: "kernel-columns" })?;
        if p.dim() != (n_points, n_input) {
            return Err(FeatureError::TensorShape {
                name: "points".into(),
                found: p.shape().to_vec(),
                expected: vec![n_points, n_input],
            });
        }
        KernelColumns::new(kernel, p.clone())
    }
}

impl FeatureMap for KernelColumns {
    fn n_input(&self) -> usize {
        self.points.view().ncols()
    }

    fn n_output(&self) -> usize {
        self.points.len()
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        assert_eq!(
            x.ncols(),
            self.n_input(),
            "kernel-columns: x has {} columns, expected {}",
            x.ncols(),
            self.n_input()
        );
        assert_eq!(out.dim(), (x.nrows(), self.n_output()), "kernel-columns: output shape");
        let n = x.nrows();
        let mut r = 0;
        while r < n {
            let e = (r + ROW_BLOCK).min(n);
            kernel_block_into(&self.kernel, x.slice(s![r..e, ..]), &self.points, out.slice_mut(s![r..e, ..]));
            r = e;
        }
    }

    fn spec(&self) -> MapSpec {
        MapSpec::KernelColumns { kernel: self.kernel, n_input: self.n_input(), n_points: self.n_output() }
    }

    fn tensors(&self) -> Tensors {
        owned(self.tensor_views())
    }

    fn tensor_views(&self) -> TensorViews<'_> {
        TensorViews::from([("points".to_string(), self.points.view().into())])
    }

    fn parameter_bytes(&self) -> usize {
        self.points.array().len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn columns_are_the_exact_kernel_and_round_trip() {
        let p = array![[0.0, 0.0], [1.0, 0.5], [-0.3, 2.0]];
        let x = array![[0.1, 0.2], [1.0, 0.5]];
        for kernel in [Kernel::Gaussian { sigma: 0.7 }, Kernel::Laplacian { sigma: 1.3 }] {
            let m = KernelColumns::new(kernel, p.clone()).unwrap();
            let z = m.transform(x.view());
            for i in 0..2 {
                for j in 0..3 {
                    assert!((z[[i, j]] - kernel.eval(x.row(i), p.row(j))).abs() < 1e-14);
                }
            }
            let back = m.spec().build(&m.tensors()).unwrap();
            assert_eq!(back.transform(x.view()), z);
        }
    }
}
