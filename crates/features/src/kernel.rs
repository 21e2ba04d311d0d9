use ndarray::{Array2, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

/// Shift-invariant kernels, with kapprox's conventions.
///
/// - Gaussian: `k(x, y) = exp(−‖x−y‖² / (2σ²))` (scikit-learn's
///   `gamma = 1/(2σ²)`).
/// - Laplacian: `k = exp(−‖x−y‖₁ / σ)` (scikit-learn's
///   `laplacian_kernel` with `gamma = 1/σ`).
/// - Cauchy: `k = Π_j 1 / (1 + (x_j − y_j)² / σ²)`.
/// - Matérn(ν, σ): `k = 2^{1−ν}/Γ(ν) · (√(2ν) r/σ)^ν · K_ν(√(2ν) r/σ)`,
///   `r = ‖x − y‖₂`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kernel {
    /// Gaussian (RBF) kernel with bandwidth `sigma`.
    Gaussian {
        /// Bandwidth σ > 0.
        sigma: f64,
    },
    /// Laplacian (ℓ1) kernel with scale `sigma`.
    Laplacian {
        /// Scale σ > 0.
        sigma: f64,
    },
    /// Cauchy (product) kernel with scale `sigma`.
    Cauchy {
        /// Scale σ > 0.
        sigma: f64,
    },
    /// Matérn kernel with smoothness `nu` and length scale `sigma`.
    Matern {
        /// Smoothness ν > 0.
        nu: f64,
        /// Length scale σ > 0.
        sigma: f64,
    },
}

impl Kernel {
    /// The bandwidth / length scale σ.
    pub fn sigma(&self) -> f64 {
        match *self {
            Kernel::Gaussian { sigma }
            | Kernel::Laplacian { sigma }
            | Kernel::Cauchy { sigma }
            | Kernel::Matern { sigma, .. } => sigma,
        }
    }

    /// `k(x, y)`.
    ///
    /// # Panics
    /// `x.len() == y.len()` must hold.
    pub fn eval(&self, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
        assert_eq!(x.len(), y.len());
        match *self {
            Kernel::Gaussian { sigma } => {
                let d2: f64 = x.iter().zip(y.iter()).map(|(a, b)| (a - b) * (a - b)).sum();
                (-d2 / (2.0 * sigma * sigma)).exp()
            }
            Kernel::Laplacian { sigma } => {
                let d1: f64 = x.iter().zip(y.iter()).map(|(a, b)| (a - b).abs()).sum();
                (-d1 / sigma).exp()
            }
            Kernel::Cauchy { sigma } => {
                x.iter().zip(y.iter()).map(|(a, b)| 1.0 / (1.0 + (a - b) * (a - b) / (sigma * sigma))).product()
            }
            Kernel::Matern { .. } => unimplemented!("Matérn kernel evaluation"),
        }
    }

    /// The kernel matrix `K[i, j] = k(x_i, y_j)`, shape `(x.nrows(), y.nrows())`.
    pub fn matrix(&self, x: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Array2<f64> {
        Array2::from_shape_fn((x.nrows(), y.nrows()), |(i, j)| self.eval(x.row(i), y.row(j)))
    }
}
