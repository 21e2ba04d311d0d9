//! Nyström features (Williams & Seeger 2001; paper 004, Yang et al. 2012).
//!
//! For landmarks `L = {l_1, …, l_m}` (a uniform sample of the data, e.g.
//! a reservoir sample over the stream), eigendecompose the landmark kernel
//! matrix `K_mm = UΛUᵀ`, keep the `r` eigenpairs with `λ_i > rel_tol·λ_max`,
//! and map
//!
//! `z(x) = Λ_r^{-1/2} U_rᵀ k(x, L) = Nᵀ k(x, L)`, with `N = U_r Λ_r^{-1/2} (m, r)`.
//!
//! Then `z(x)ᵀz(y) = k(x, L) K_mm⁺ k(L, y)` (the pseudo-inverse restricted
//! to the kept eigenvalues): the Nyström approximation of `k(x, y)`. With
//! every data point a landmark it reproduces `K` exactly (up to the
//! eigenvalues dropped), duplicated landmarks included.
//!
//! Any `N` with `NNᵀ = K_mm⁻¹` gives the same `z(x)ᵀz(y)`, and features
//! that differ by a rotation give the same ridge predictions. So when a
//! shifted Cholesky factorisation proves that no eigenvalue falls below the
//! cut (the usual case on data of more than a few dimensions), `N = L⁻ᵀ`
//! from `K_mm = LLᵀ` (`r = m`, upper triangular) replaces the
//! eigendecomposition, at a ninth of its flops; see
//! `cholesky_normalization`.
//!
//! The fitted map stores its landmarks and `N` as [`Tensors`]
//! (`"landmarks"` and `"normalization"`); [`NystromParams`] holds the rest.

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::kernel_block::{Points, kernel_block_into};
use crate::map::FeatureMap;
pub use crate::spec::NystromParams;
use crate::spec::{MapSpec, TensorViews, Tensors, owned};
use faer::linalg::triangular_inverse::invert_lower_triangular;
use kapprox_core::cholesky::cholesky_shifted_into;
use kapprox_core::{Par, dense};
use ndarray::parallel::prelude::*;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, s};

/// Default relative eigenvalue cut-off of [`Nystrom::fit`].
///
/// Eigenvalues `λ_i ≤ 1e-10·λ_max` are dropped. `K_mm` is computed to about
/// `1e-16·m·λ_max`, so eigenvectors of smaller eigenvalues are rounding
/// noise, and `z` divides by `√λ_i`: keeping them would amplify that noise
/// by up to `10^5` in each kept direction. The price is an absolute kernel
/// error of at most the sum of the dropped eigenvalues on the landmarks.
pub const DEFAULT_REL_TOL: f64 = 1e-10;

/// Rows transformed per kernel block, so that the `(rows, m)` scratch stays
/// bounded whatever the caller's chunk size.
const ROW_BLOCK: usize = 512;

/// A fitted Nyström feature map `z(x) = Nᵀ k(x, L)`.
///
/// Memory: `m·(d + r)` doubles, plus a `(512, m)` scratch per transform call.
///
/// Cost: `transform_into` takes `n·m·(2d + 2r)` flops plus `n·m`
/// vectorised exponentials: the `(n, m)` kernel block (a GEMM for the
/// Gaussian and Matérn distances, SIMD loops for the Laplacian and Cauchy
/// kernels; see `kernel_block`) and the GEMM by `N`; `fit` takes `m²·d`
/// for `K_mm` plus `O(m³)` for its eigendecomposition.
#[derive(Clone, Debug)]
pub struct Nystrom {
    kernel: Kernel,
    rel_tol: f64,
    /// `(m, d)`, prepared for kernel blocks.
    landmarks: Points,
    /// `N = U_r Λ_r^{-1/2}`, `(m, r)`, columns by decreasing eigenvalue.
    normalization: Array2<f64>,
}

fn check_kernel(kernel: &Kernel) -> Result<()> {
    let sigma = kernel.sigma();
    if sigma.is_finite() && sigma > 0.0 { Ok(()) } else { Err(FeatureError::InvalidBandwidth { value: sigma }) }
}

fn check_rel_tol(rel_tol: f64) -> Result<()> {
    if rel_tol.is_finite() && (0.0..1.0).contains(&rel_tol) {
        Ok(())
    } else {
        Err(FeatureError::InvalidParameter {
            name: "rel_tol",
            value: rel_tol.to_string(),
            expected: "a number in [0, 1)",
        })
    }
}

impl Nystrom {
    /// Fits the map on `landmarks (m, d)`: eigendecomposes `K_mm` and keeps
    /// the eigenvalues above `rel_tol·λ_max` (see [`DEFAULT_REL_TOL`]).
    ///
    /// Takes the landmarks by value because the map stores them.
    ///
    /// # Errors
    /// Invalid bandwidth; `rel_tol` outside `[0, 1)`; no landmarks or zero
    /// columns; non-finite landmarks; a kernel matrix without a positive
    /// eigenvalue.
    pub fn fit(kernel: Kernel, landmarks: Array2<f64>, rel_tol: f64) -> Result<Self> {
        check_kernel(&kernel)?;
        check_rel_tol(rel_tol)?;
        let (m, d) = landmarks.dim();
        if m == 0 || d == 0 {
            return Err(FeatureError::InvalidParameter {
                name: "landmarks",
                value: format!("{m}x{d}"),
                expected: "at least one landmark with at least one column",
            });
        }
        if let Some(pos) = landmarks.iter().position(|v| !v.is_finite()) {
            return Err(FeatureError::InvalidParameter {
                name: "landmarks",
                value: format!("{} at row {}, column {}", landmarks[[pos / d, pos % d]], pos / d, pos % d),
                expected: "finite values",
            });
        }
        let landmarks = Points::new(landmarks);
        // By blocks of rows on every core (one block took 0.1 s on one core
        // at m = 4096); each row's values do not depend on the split.
        let mut kmm = kapprox_core::buffer::zeros((m, m), false);
        kmm.axis_chunks_iter_mut(Axis(0), ROW_BLOCK).into_par_iter().enumerate().for_each(|(b, mut rows)| {
            let first = b * ROW_BLOCK;
            let x = landmarks.view().slice_move(s![first..first + rows.nrows(), ..]);
            kernel_block_into(&kernel, x, &landmarks, rows.view_mut());
        });
        let normalization = match cholesky_normalization(kmm, rel_tol) {
            Ok(n) => n,
            Err(kmm) => eigen_normalization(kmm.view(), rel_tol)?,
        };
        Ok(Nystrom { kernel, rel_tol, landmarks, normalization })
    }

    /// Rebuilds a fitted map from its params and its tensors
    /// `"landmarks" (m, d)` and `"normalization" (m, r)` (as returned by
    /// [`FeatureMap::tensors`]).
    ///
    /// # Errors
    /// Invalid params, a missing tensor, or a tensor whose shape disagrees
    /// with the params.
    pub fn from_tensors(params: &NystromParams, tensors: &Tensors) -> Result<Self> {
        check_kernel(&params.kernel)?;
        check_rel_tol(params.rel_tol)?;
        let get = |name: &str, expected: (usize, usize)| -> Result<Array2<f64>> {
            let t = tensors
                .get(name)
                .ok_or_else(|| FeatureError::MissingTensor { name: name.to_string(), map: "nystrom" })?;
            if t.dim() != expected {
                return Err(FeatureError::TensorShape {
                    name: name.to_string(),
                    found: t.shape().to_vec(),
                    expected: vec![expected.0, expected.1],
                });
            }
            Ok(t.clone())
        };
        let landmarks = get("landmarks", (params.n_landmarks, params.n_input))?;
        let normalization = get("normalization", (params.n_landmarks, params.n_components))?;
        Ok(Nystrom { kernel: params.kernel, rel_tol: params.rel_tol, landmarks: Points::new(landmarks), normalization })
    }

    /// The description of this map (with [`FeatureMap::tensors`], all that
    /// [`Nystrom::from_tensors`] needs).
    pub fn params(&self) -> NystromParams {
        NystromParams {
            kernel: self.kernel,
            n_input: self.landmarks.view().ncols(),
            n_landmarks: self.landmarks.len(),
            n_components: self.normalization.ncols(),
            rel_tol: self.rel_tol,
        }
    }

    /// The kernel approximated.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The landmarks, `(m, d)`.
    pub fn landmarks(&self) -> ArrayView2<'_, f64> {
        self.landmarks.view()
    }

    /// `N (m, r)` with `NNᵀ = K_mm⁺` (restricted to the kept eigenvalues):
    /// `L⁻ᵀ` or `U_r Λ_r^{-1/2}` (see the module docs).
    pub fn normalization(&self) -> ArrayView2<'_, f64> {
        self.normalization.view()
    }

    fn registered_spec(&self) -> MapSpec {
        MapSpec::Nystrom(self.params())
    }
}

/// `N = L⁻ᵀ (m, m)` from `K_mm = LLᵀ`, when every eigenvalue of `K_mm` is
/// provably above the `rel_tol` cut, so that the eigendecomposition would
/// keep all `m`; otherwise `K_mm` back, for the eigendecomposition.
///
/// The proof is a second Cholesky factorisation, of `K_mm − τI`. One
/// computed in floating point is exact for a matrix within
/// `m(m+1)u·‖K_mm‖₂` of it (Higham, *Accuracy and Stability*, Thm 10.5),
/// so its success shows `λ_min > τ − m(m+1)u·λ_max`, and
/// `τ = (rel_tol + m(m+1)u)·b` with `b ≥ λ_max` (the largest absolute row
/// sum) makes that `> rel_tol·λ_max`. The two factorisations and the
/// triangular inverse cost `m³` flops where the eigendecomposition costs
/// about `9m³` (faer on two cores, 100-column data: 0.03 s against
/// 0.15–0.21 s at `m = 1024`, 0.16 s against 0.96–1.15 s at `m = 2048`),
/// and every later product is the same.
fn cholesky_normalization(kmm: Array2<f64>, rel_tol: f64) -> std::result::Result<Array2<f64>, Array2<f64>> {
    let m = kmm.nrows();
    let par = kapprox_core::dense_par();
    let bound = kmm.rows().into_iter().map(|r| r.iter().map(|v| v.abs()).sum::<f64>()).fold(0.0, f64::max);
    let backward = m as f64 * (m as f64 + 1.0) * (f64::EPSILON / 2.0);
    let tau = (rel_tol + backward) * bound;
    if !(tau.is_finite() && tau > 0.0) {
        return Err(kmm);
    }
    // Both factorisations in one column-major buffer, in the blocked
    // Cholesky whose flops run in the Gram kernel (faer's `llt` took about
    // twice as long at m = 4096); its strict upper triangle is scratch.
    let mut work = kapprox_core::buffer::zeros((m, m), true);
    for shift in [-tau, 0.0] {
        if cholesky_shifted_into(work.view_mut(), kmm.view(), shift, par).is_err() {
            return Err(kmm);
        }
    }
    // L⁻¹ column-major is N = L⁻ᵀ row-major in the same memory: no copy.
    // Only the lower triangles are read and written; N's zeros below its
    // diagonal are the buffer's, which is K_mm's, spent by now (fresh
    // memory costs a round of page faults: 0.1 s per 134 MB here).
    let mut inv = kapprox_core::buffer::zeros_reusing(kmm, (m, m), true);
    invert_lower_triangular(dense::as_faer_mut(inv.view_mut()), dense::as_faer(work.view()), par);
    drop(work);
    Ok(inv.reversed_axes())
}

/// `N = U_r Λ_r^{-1/2} (m, r)` from the eigendecomposition of `K_mm`, the
/// `r` eigenvalues above `rel_tol·λ_max`, largest first.
fn eigen_normalization(kmm: ArrayView2<'_, f64>, rel_tol: f64) -> Result<Array2<f64>> {
    let m = kmm.nrows();
    let (lambda, u) = dense::eigh(kmm);
    let lambda_max = lambda[m - 1];
    if !(lambda_max.is_finite() && lambda_max > 0.0) {
        return Err(FeatureError::InvalidParameter {
            name: "landmarks",
            value: format!("largest kernel eigenvalue {lambda_max}"),
            expected: "finite landmarks (a kernel matrix with a positive eigenvalue)",
        });
    }
    // eigh sorts ascending; emit columns by decreasing eigenvalue.
    let kept: Vec<usize> = (0..m).rev().filter(|&i| lambda[i] > rel_tol * lambda_max).collect();
    let mut normalization = Array2::zeros((m, kept.len()));
    for (c, &i) in kept.iter().enumerate() {
        let inv_sqrt = 1.0 / lambda[i].sqrt();
        normalization.column_mut(c).zip_mut_with(&u.column(i), |n, &v| *n = v * inv_sqrt);
    }
    Ok(normalization)
}

impl FeatureMap for Nystrom {
    fn n_input(&self) -> usize {
        self.landmarks.view().ncols()
    }

    fn n_output(&self) -> usize {
        self.normalization.ncols()
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        assert_eq!(x.ncols(), self.n_input(), "nystrom: x has {} columns, expected {}", x.ncols(), self.n_input());
        assert_eq!(out.dim(), (x.nrows(), self.n_output()), "nystrom: output shape");
        let n = x.nrows();
        let m = self.landmarks.len();
        let mut kb = Array2::zeros((ROW_BLOCK.min(n), m));
        let mut r = 0;
        while r < n {
            let e = (r + ROW_BLOCK).min(n);
            let mut k = kb.slice_mut(s![..e - r, ..]);
            kernel_block_into(&self.kernel, x.slice(s![r..e, ..]), &self.landmarks, k.view_mut());
            dense::matmul_into(out.slice_mut(s![r..e, ..]), k.view(), self.normalization.view(), 1.0, false, Par::Seq);
            r = e;
        }
    }

    fn spec(&self) -> MapSpec {
        self.registered_spec()
    }

    fn tensors(&self) -> Tensors {
        owned(self.tensor_views())
    }

    fn tensor_views(&self) -> TensorViews<'_> {
        TensorViews::from([
            ("landmarks".to_string(), self.landmarks.view().into()),
            ("normalization".to_string(), self.normalization.view().into()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapprox_core::{Domain, rng};
    use rand::Rng;
    use rand_distr::StandardNormal;

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut a = Array2::zeros((n, d));
        for (i, mut row) in a.rows_mut().into_iter().enumerate() {
            let mut g = rng::stream(seed, Domain::FEATURE_MAP_AUX, i as u64);
            row.iter_mut().for_each(|v| *v = g.sample(StandardNormal));
        }
        a
    }

    fn max_abs_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        a.iter().zip(b.iter()).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
    }

    #[test]
    fn all_points_as_landmarks_reproduce_the_kernel_matrix() {
        let x = points(500, 5, 1);
        for kernel in [Kernel::Gaussian { sigma: 2.0 }, Kernel::Laplacian { sigma: 3.0 }] {
            let map = Nystrom::fit(kernel, x.clone(), DEFAULT_REL_TOL).unwrap();
            let z = map.transform(x.view());
            let k = kernel.matrix(x.view(), x.view());
            let err = max_abs_diff(&z.dot(&z.t()), &k);
            eprintln!("nystrom m = n = 500, {kernel:?}: r = {}, max |K − ZZᵀ| = {err:.2e}", map.n_output());
            assert!(err < 1e-8, "{kernel:?}: max error {err}, r = {}", map.n_output());
        }
    }

    #[test]
    fn dropped_eigenvalues_bound_the_error_of_a_smooth_kernel() {
        // σ = 8 on standard normal points: K has rapidly decaying
        // eigenvalues, many below rel_tol·λ_max. K − ZZᵀ = Σ_dropped λ_i u_i u_iᵀ
        // (up to rounding), whose entries are at most Σ_dropped |λ_i|.
        let x = points(500, 5, 6);
        let kernel = Kernel::Gaussian { sigma: 8.0 };
        let k = kernel.matrix(x.view(), x.view());
        let (lambda, _) = dense::eigh(k.view());
        let lambda_max = lambda[lambda.len() - 1];
        let dropped: f64 = lambda.iter().filter(|&&v| v <= DEFAULT_REL_TOL * lambda_max).map(|v| v.abs()).sum();
        let map = Nystrom::fit(kernel, x.clone(), DEFAULT_REL_TOL).unwrap();
        let z = map.transform(x.view());
        let err = max_abs_diff(&z.dot(&z.t()), &k);
        eprintln!(
            "nystrom σ = 8: r = {} of 500, max |K − ZZᵀ| = {err:.2e}, Σ dropped λ = {dropped:.2e}",
            map.n_output()
        );
        assert!(map.n_output() < 500);
        assert!(err <= dropped + 1e-12, "{err} vs {dropped}");
    }

    #[test]
    fn duplicated_landmarks_still_reproduce_the_kernel_matrix() {
        // 300 distinct points, 200 of them repeated: K_mm has rank 300 of 500.
        let base = points(300, 4, 2);
        let mut x = Array2::zeros((500, 4));
        x.slice_mut(s![..300, ..]).assign(&base);
        for i in 300..500 {
            x.row_mut(i).assign(&base.row((i * 7) % 300));
        }
        for kernel in [Kernel::Gaussian { sigma: 1.5 }, Kernel::Laplacian { sigma: 2.0 }] {
            let map = Nystrom::fit(kernel, x.clone(), DEFAULT_REL_TOL).unwrap();
            assert!(map.n_output() <= 300, "{kernel:?}: r = {} > rank 300", map.n_output());
            let z = map.transform(x.view());
            let err = max_abs_diff(&z.dot(&z.t()), &kernel.matrix(x.view(), x.view()));
            eprintln!("nystrom 300 distinct of 500, {kernel:?}: r = {}, max |K − ZZᵀ| = {err:.2e}", map.n_output());
            assert!(err < 1e-8, "{kernel:?}: max error {err}");
        }
    }

    #[test]
    fn the_cholesky_normalization_is_taken_exactly_when_no_eigenvalue_is_cut() {
        let x = points(300, 6, 7);
        let kernel = Kernel::Gaussian { sigma: 2.0 };
        let k = kernel.matrix(x.view(), x.view());
        let (lambda, _) = dense::eigh(k.view());
        let ratio = lambda[0] / lambda[lambda.len() - 1];
        assert!(ratio > 1e-8, "a well-conditioned case: {ratio}");
        // Below the smallest eigenvalue: taken, and the same kernel as the
        // eigendecomposition's N (NNᵀ = K⁻¹ either way).
        let chol = cholesky_normalization(k.clone(), ratio / 10.0).expect("every eigenvalue is above the cut");
        let eig = eigen_normalization(k.view(), ratio / 10.0).unwrap();
        assert_eq!((chol.ncols(), eig.ncols()), (300, 300));
        let y = points(50, 6, 8);
        let ky = kernel.matrix(y.view(), x.view());
        let (zc, ze) = (ky.dot(&chol), ky.dot(&eig));
        let (gc, ge) = (zc.dot(&zc.t()), ze.dot(&ze.t()));
        let err = max_abs_diff(&gc, &ge);
        assert!(err < 1e-9, "kernel of the two normalizations differs by {err}");
        // Above it: refused, so the eigendecomposition drops what it must.
        // Refused, it hands K_mm back unchanged for the eigendecomposition.
        assert_eq!(cholesky_normalization(k.clone(), ratio * 10.0), Err(k.clone()));
        assert!(eigen_normalization(k.view(), ratio * 10.0).unwrap().ncols() < 300);
        // A rank-deficient matrix is never factored.
        let dup = ndarray::concatenate(ndarray::Axis(0), &[x.view(), x.slice(s![..10, ..])]).unwrap();
        let kd = kernel.matrix(dup.view(), dup.view());
        assert_eq!(cholesky_normalization(kd.clone(), DEFAULT_REL_TOL), Err(kd));
    }

    #[test]
    fn more_landmarks_approximate_better() {
        // A test that can fail: the relative Frobenius error must drop
        // clearly from m = 20 to m = 200 landmarks.
        let x = points(600, 3, 3);
        let kernel = Kernel::Gaussian { sigma: 1.0 };
        let k = kernel.matrix(x.view(), x.view());
        let fro = |a: &Array2<f64>| a.iter().map(|v| v * v).sum::<f64>().sqrt();
        let err = |m: usize| {
            let map = Nystrom::fit(kernel, x.slice(s![..m, ..]).to_owned(), DEFAULT_REL_TOL).unwrap();
            let z = map.transform(x.view());
            fro(&(&k - &z.dot(&z.t()))) / fro(&k)
        };
        let (e20, e200) = (err(20), err(200));
        eprintln!("nystrom relative Frobenius error: m = 20: {e20:.3e}, m = 200: {e200:.3e}");
        assert!(e200 < e20 / 4.0, "m = 20: {e20}, m = 200: {e200}");
    }

    /// The views are the map's own arrays (a model writer reads `N`
    /// without a copy) and hold what `tensors` copies; `N` is upper
    /// triangular and in standard layout, as the projection and the file
    /// writer expect of it.
    #[test]
    fn tensor_views_borrow_the_map_and_agree_with_its_tensors() {
        let x = points(40, 3, 5);
        let map = Nystrom::fit(Kernel::Gaussian { sigma: 2.0 }, x.slice(s![..30, ..]).to_owned(), 1e-10).unwrap();
        let views = map.tensor_views();
        assert!(views.values().all(|v| v.is_view()));
        assert_eq!(views["normalization"].as_ptr(), map.normalization().as_ptr());
        let owned = map.tensors();
        assert_eq!(views.len(), owned.len());
        assert!(views.iter().all(|(k, v)| owned[k] == v));
        let n = map.normalization();
        assert!(n.is_standard_layout());
        assert!(n.indexed_iter().all(|((i, j), &v)| i <= j || v == 0.0), "N = L⁻ᵀ is not upper triangular");
    }

    #[test]
    fn rebuilds_from_tensors_and_checks_them() {
        let x = points(50, 3, 4);
        let map = Nystrom::fit(Kernel::Gaussian { sigma: 1.0 }, x.slice(s![..20, ..]).to_owned(), 1e-8).unwrap();
        let params = map.params();
        let tensors = map.tensors();
        assert_eq!(tensors["landmarks"].dim(), (20, 3));
        assert_eq!(tensors["normalization"].dim(), (20, map.n_output()));
        let json = serde_json::to_string(&params).unwrap();
        let back = Nystrom::from_tensors(&serde_json::from_str(&json).unwrap(), &tensors).unwrap();
        assert_eq!(back.transform(x.view()), map.transform(x.view()));
        let mut missing = tensors.clone();
        missing.remove("normalization");
        assert!(matches!(Nystrom::from_tensors(&params, &missing), Err(FeatureError::MissingTensor { .. })));
        let mut wrong = tensors.clone();
        wrong.insert("landmarks".into(), Array2::zeros((20, 4)));
        assert_eq!(
            Nystrom::from_tensors(&params, &wrong).unwrap_err(),
            FeatureError::TensorShape { name: "landmarks".into(), found: vec![20, 4], expected: vec![20, 3] }
        );
    }

    #[test]
    fn refuses_bad_parameters() {
        let x = points(5, 2, 5);
        assert_eq!(
            Nystrom::fit(Kernel::Gaussian { sigma: 0.0 }, x.clone(), 1e-10).unwrap_err(),
            FeatureError::InvalidBandwidth { value: 0.0 }
        );
        assert!(Nystrom::fit(Kernel::Gaussian { sigma: 1.0 }, x.clone(), 1.0).is_err());
        assert!(Nystrom::fit(Kernel::Gaussian { sigma: 1.0 }, Array2::zeros((0, 2)), 1e-10).is_err());
        let mut nan = x.clone();
        nan[[0, 0]] = f64::NAN;
        assert!(Nystrom::fit(Kernel::Laplacian { sigma: 1.0 }, nan, 1e-10).is_err());
    }
}
