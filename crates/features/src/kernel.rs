use crate::error::{FeatureError, Result};
use crate::special::{bessel_k, ln_gamma};
use ndarray::{Array2, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

/// Shift-invariant kernels, with kapprox's conventions.
///
/// | kernel | `k(x, y)` | spectral density of the frequencies `w` | scikit-learn |
/// |---|---|---|---|
/// | Gaussian | `exp(−‖x−y‖² / (2σ²))` | `N(0, σ⁻² I)` | `rbf_kernel(gamma = 1/(2σ²))` |
/// | Laplacian | `exp(−‖x−y‖₁ / σ)` | `w_j ~ Cauchy(0, 1/σ)` i.i.d. | `laplacian_kernel(gamma = 1/σ)` |
/// | Cauchy | `Π_j 1 / (1 + (x_j − y_j)² / σ²)` | `w_j ~ Laplace(0, 1/σ)` i.i.d. | — |
/// | Matérn(ν, σ) | `2^{1−ν}/Γ(ν) · (√(2ν) r/σ)^ν · K_ν(√(2ν) r/σ)`, `r = ‖x − y‖₂` | `g·√(2ν/u)/σ`, `g ~ N(0, I)`, `u ~ χ²(2ν)` (multivariate Student-t) | `Matern(length_scale = σ, nu = ν)` |
///
/// Matérn with ν = 1/2 is `exp(−r/σ)` (the ℓ2 "exponential" kernel, not the
/// ℓ1 Laplacian), and ν → ∞ tends to the Gaussian.
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
    /// The Gaussian kernel with scikit-learn's `gamma`: `exp(−γ‖x−y‖²)`,
    /// i.e. `σ = 1/√(2γ)`.
    ///
    /// # Errors
    /// `gamma` must be finite and positive.
    pub fn gaussian_from_gamma(gamma: f64) -> Result<Kernel> {
        check_gamma(gamma)?;
        Ok(Kernel::Gaussian { sigma: (0.5 / gamma).sqrt() })
    }

    /// The Laplacian kernel with scikit-learn's `gamma`:
    /// `exp(−γ‖x−y‖₁)`, i.e. `σ = 1/γ`.
    ///
    /// # Errors
    /// `gamma` must be finite and positive.
    pub fn laplacian_from_gamma(gamma: f64) -> Result<Kernel> {
        check_gamma(gamma)?;
        Ok(Kernel::Laplacian { sigma: 1.0 / gamma })
    }

    /// scikit-learn's `gamma` for the kernels where it maps exactly
    /// (Gaussian and Laplacian), `None` otherwise.
    pub fn sklearn_gamma(&self) -> Option<f64> {
        match *self {
            Kernel::Gaussian { sigma } => Some(0.5 / (sigma * sigma)),
            Kernel::Laplacian { sigma } => Some(1.0 / sigma),
            _ => None,
        }
    }

    /// A kernel from its name as the CLI spells it (`gaussian` or `rbf`,
    /// `laplacian`, `cauchy`, `matern`), its scale σ and, for Matérn, ν.
    ///
    /// # Errors
    /// Unknown name, invalid σ or ν, a Matérn kernel without ν, or ν given
    /// for another kernel.
    pub fn from_name(name: &str, sigma: f64, nu: Option<f64>) -> Result<Kernel> {
        let kernel = match name.to_ascii_lowercase().as_str() {
            "gaussian" | "rbf" => Kernel::Gaussian { sigma },
            "laplacian" | "laplace" => Kernel::Laplacian { sigma },
            "cauchy" => Kernel::Cauchy { sigma },
            "matern" | "matérn" => Kernel::Matern {
                nu: nu.ok_or(FeatureError::InvalidParameter {
                    name: "nu",
                    value: "none".into(),
                    expected: "a smoothness ν > 0 for the matern kernel (e.g. 0.5, 1.5, 2.5)",
                })?,
                sigma,
            },
            _ => return Err(FeatureError::UnknownKernel { name: name.to_string() }),
        };
        if let (Some(v), false) = (nu, matches!(kernel, Kernel::Matern { .. })) {
            return Err(FeatureError::InvalidParameter {
                name: "nu",
                value: v.to_string(),
                expected: "no ν: only the matern kernel takes one",
            });
        }
        kernel.check()?;
        Ok(kernel)
    }

    /// The kernel's name as the CLI spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Gaussian { .. } => "gaussian",
            Kernel::Laplacian { .. } => "laplacian",
            Kernel::Cauchy { .. } => "cauchy",
            Kernel::Matern { .. } => "matern",
        }
    }

    /// The bandwidth / length scale σ.
    pub fn sigma(&self) -> f64 {
        match *self {
            Kernel::Gaussian { sigma }
            | Kernel::Laplacian { sigma }
            | Kernel::Cauchy { sigma }
            | Kernel::Matern { sigma, .. } => sigma,
        }
    }

    /// Whether `k` depends on `‖x − y‖₂` only (Gaussian, Matérn): the
    /// kernels that orthogonal and structured maps (ORF, SORF, Fastfood)
    /// can approximate, since they draw a direction and a length separately.
    pub fn is_isotropic(&self) -> bool {
        matches!(self, Kernel::Gaussian { .. } | Kernel::Matern { .. })
    }

    /// Checks σ (and ν).
    ///
    /// # Errors
    /// σ and ν must be finite and positive.
    pub fn check(&self) -> Result<()> {
        check_sigma(self.sigma())?;
        match *self {
            Kernel::Matern { nu, .. } if !(nu.is_finite() && nu > 0.0) => Err(FeatureError::InvalidParameter {
                name: "nu",
                value: nu.to_string(),
                expected: "a finite smoothness ν > 0",
            }),
            _ => Ok(()),
        }
    }

    /// `k(x, y)`.
    ///
    /// # Panics
    /// `x.len() == y.len()` must hold.
    pub fn eval(&self, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
        assert_eq!(x.len(), y.len(), "eval: x has {} entries, y has {}", x.len(), y.len());
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
            Kernel::Matern { nu, sigma } => {
                let d2: f64 = x.iter().zip(y.iter()).map(|(a, b)| (a - b) * (a - b)).sum();
                matern(nu, d2.sqrt() / sigma)
            }
        }
    }

    /// The kernel matrix `K[i, j] = k(x_i, y_j)`, shape `(x.nrows(), y.nrows())`,
    /// entry by entry from [`Kernel::eval`]: the reference the vectorised
    /// blocks of the maps are tested against (they are much faster; see
    /// [`KernelColumns`](crate::KernelColumns)).
    ///
    /// Cost: `x.nrows() · y.nrows() · d` (plus one `K_ν` per entry for
    /// Matérn with ν not in {1/2, 3/2, 5/2}).
    pub fn matrix(&self, x: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>) -> Array2<f64> {
        Array2::from_shape_fn((x.nrows(), y.nrows()), |(i, j)| self.eval(x.row(i), y.row(j)))
    }
}

fn check_gamma(gamma: f64) -> Result<()> {
    if gamma.is_finite() && gamma > 0.0 {
        Ok(())
    } else {
        Err(FeatureError::InvalidParameter { name: "gamma", value: gamma.to_string(), expected: "a finite number > 0" })
    }
}

/// The Matérn correlation at scaled distance `t = r/σ`.
pub(crate) fn matern(nu: f64, t: f64) -> f64 {
    if t == 0.0 {
        return 1.0;
    }
    // The half-integer orders people use have closed forms; they are also
    // what the general branch is tested against.
    if nu == 0.5 {
        return (-t).exp();
    }
    if nu == 1.5 {
        let s = 3f64.sqrt() * t;
        return (1.0 + s) * (-s).exp();
    }
    if nu == 2.5 {
        let s = 5f64.sqrt() * t;
        return (1.0 + s + s * s / 3.0) * (-s).exp();
    }
    let z = (2.0 * nu).sqrt() * t;
    if z > 700.0 + nu {
        return 0.0;
    }
    let log_pre = (1.0 - nu) * std::f64::consts::LN_2 - ln_gamma(nu) + nu * z.ln();
    let k = bessel_k(nu, z);
    let v = (log_pre + k.ln()).exp();
    if v.is_finite() {
        v.min(1.0)
    } else {
        // z^ν K_ν(z) overflowed its parts at tiny z, where the kernel is 1
        // to first order: 1 − z²/(4(ν − 1)) for ν > 1.
        1.0
    }
}

/// A bandwidth is a positive finite length.
fn check_sigma(sigma: f64) -> Result<()> {
    if sigma.is_finite() && sigma > 0.0 { Ok(()) } else { Err(FeatureError::InvalidBandwidth { value: sigma }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn closed_form_materns_match_the_bessel_form() {
        // The general branch at ν ± tiny is continuous with the closed forms.
        for &nu in &[0.5, 1.5, 2.5] {
            for &t in &[1e-3, 0.1, 0.7, 1.0, 2.5, 8.0] {
                let closed = matern(nu, t);
                let z = (2.0 * nu).sqrt() * t;
                let general =
                    ((1.0 - nu) * std::f64::consts::LN_2 - ln_gamma(nu) + nu * z.ln()).exp() * bessel_k(nu, z);
                assert!((closed - general).abs() < 1e-13, "nu={nu} t={t}: {closed} vs {general}");
            }
        }
    }

    #[test]
    fn matern_is_a_correlation_and_tends_to_the_gaussian() {
        for &nu in &[0.3, 1.0, 2.2, 4.0] {
            assert_eq!(matern(nu, 0.0), 1.0);
            // 1 − k = O(t^{2ν}) for ν < 1, O(t²) above: continuous at 0.
            assert!((matern(nu, 1e-12) - 1.0).abs() < 1e-5, "nu={nu}");
            let mut prev = 1.0;
            for i in 1..50 {
                let v = matern(nu, i as f64 * 0.1);
                assert!(v < prev && v > 0.0, "nu={nu}");
                prev = v;
            }
        }
        // ν = 200: within 1% of exp(−t²/2).
        for &t in &[0.3, 1.0, 2.0] {
            assert!((matern(200.0, t) - (-0.5 * t * t).exp()).abs() < 0.01);
        }
    }

    #[test]
    fn kernels_follow_their_conventions() {
        let x = array![0.0, 0.0];
        let y = array![1.0, 2.0];
        let g = Kernel::Gaussian { sigma: 2.0 }.eval(x.view(), y.view());
        assert!((g - (-5.0f64 / 8.0).exp()).abs() < 1e-15);
        let l = Kernel::Laplacian { sigma: 2.0 }.eval(x.view(), y.view());
        assert!((l - (-1.5f64).exp()).abs() < 1e-15);
        let c = Kernel::Cauchy { sigma: 2.0 }.eval(x.view(), y.view());
        assert!((c - 1.0 / (1.25 * 2.0)).abs() < 1e-15);
        let m = Kernel::Matern { nu: 0.5, sigma: 2.0 }.eval(x.view(), y.view());
        assert!((m - (-5f64.sqrt() / 2.0).exp()).abs() < 1e-15);
    }

    #[test]
    fn sklearn_gamma_round_trips() {
        let g = Kernel::gaussian_from_gamma(0.125).unwrap();
        assert_eq!(g, Kernel::Gaussian { sigma: 2.0 });
        assert_eq!(g.sklearn_gamma(), Some(0.125));
        let l = Kernel::laplacian_from_gamma(0.5).unwrap();
        assert_eq!(l, Kernel::Laplacian { sigma: 2.0 });
        assert_eq!(l.sklearn_gamma(), Some(0.5));
        assert!(matches!(Kernel::gaussian_from_gamma(-1.0), Err(FeatureError::InvalidParameter { name: "gamma", .. })));
        assert_eq!(Kernel::Cauchy { sigma: 1.0 }.sklearn_gamma(), None);
    }

    #[test]
    fn names_parse_and_refuse() {
        assert_eq!(Kernel::from_name("RBF", 1.0, None).unwrap(), Kernel::Gaussian { sigma: 1.0 });
        assert_eq!(Kernel::from_name("matern", 1.0, Some(1.5)).unwrap(), Kernel::Matern { nu: 1.5, sigma: 1.0 });
        assert_eq!(Kernel::from_name("poly", 1.0, None), Err(FeatureError::UnknownKernel { name: "poly".into() }));
        assert!(matches!(
            Kernel::from_name("matern", 1.0, None),
            Err(FeatureError::InvalidParameter { name: "nu", .. })
        ));
        assert!(matches!(
            Kernel::from_name("gaussian", 1.0, Some(1.5)),
            Err(FeatureError::InvalidParameter { name: "nu", .. })
        ));
        assert_eq!(Kernel::from_name("cauchy", 0.0, None), Err(FeatureError::InvalidBandwidth { value: 0.0 }));
    }
}
