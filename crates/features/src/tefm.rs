//! Training-efficient feature maps, TEFM (Chen, Yang, King & Lyu 2015;
//! paper 000, Algorithms 1–2).
//!
//! A base map `F: x ↦ f(x) ∈ R^d` (random Fourier features with `d ≫ l`,
//! or any dense [`FeatureMap`]) is compressed to the `l`-dimensional
//! dominant subspace of its feature matrix: `G = F Q` with `Q (d, l)` an
//! orthonormal basis of `Y = (FᵀF)^(q+1) Ω` for a random test matrix
//! `Ω (d, l)` of the `d` base features (`kapprox_sketch::test_matrix`).
//! The fitted map is `x ↦ Qᵀ f(x)` ([`Tefm`]); the kinds differ only in
//! `Ω` and so in how `Q` is built (by `kapprox-sketch`, orchestrated by
//! `kapprox`):
//!
//! - TEFM-G ([`TefmKind::Gaussian`]): Gaussian `Ω`, typically `q ∈ {0, 1, 2}`
//!   power iterations (Algorithm 1).
//! - TEFM-S ([`TefmKind::Srht`]): block SRHT `Ω` over the `d` coordinates
//!   (Algorithm 2; the paper uses `q = 0`).
//! - TEFM-C ([`TefmKind::CountSketch`]): CountSketch `Ω`, the cheapest
//!   (not in the paper).
//!
//! The paper starts from a sketch of the rows, `Y₀ = FᵀΘ` with `Θ (n, l)`;
//! its columns have covariance `FᵀF`, like `(FᵀF)^½ Ω`. Starting from
//! `(FᵀF)Ω` instead is half a power step further (at least as accurate)
//! and needs no per-row sketch: `FᵀF` is accumulated anyway, so the start
//! is one product after the pass (`2·d²·l` flops once) instead of
//! `2·d·l` flops per row — at `d = 4l`, a third of the per-row work of the
//! old one-pass strategy. With a power step (`q ≥ 1`) TEFM-G starts from a
//! sparse sign `Ω` (8 entries per row, `kapprox_sketch::range_finder_start`):
//! the power step makes the start's distribution immaterial, and the
//! start's product costs `16·d²` flops instead of `2·d²·l`.
//!
//! # Building Q: one pass or `q + 2` passes
//!
//! (a) [`Strategy::OnePass`]: one pass accumulates `FᵀF` and `FᵀY` (the
//! ridge moments, `kapprox_core::Moments` over `F`), exactly the pass of a
//! plain fit with `d` features; `(FᵀF)Ω` and the power iterations run in
//! memory. The ridge statistics of `G = FQ` then follow without another
//! pass: `GᵀG = Qᵀ(FᵀF)Q`, `GᵀY = Qᵀ(FᵀY)`, `Σg = QᵀΣf`, which is exactly
//! `kapprox_core::Moments::project(Q)`. `Q` is orthonormal, so the
//! projection does not amplify the rounding of the accumulated Gram
//! (`‖Qᵀ E Q‖₂ ≤ ‖E‖₂`), unlike a projection by a non-orthogonal matrix.
//!
//! (b) [`Strategy::MultiPass`]: when `(d + 1 + k)²` doubles do not fit, or
//! the per-row work of (a) exceeds that of (b): one product pass `Fᵀ(FΩ)`,
//! `q` product passes `Fᵀ(F Qᵢ)` (no `d × d` matrix), then one pass
//! accumulating the ridge moments of `G`. Both strategies run the same
//! steps, so they give the same `Q` and model up to rounding.
//!
//! [`choose_strategy`] picks between them by the cost model of
//! [`estimate_cost`].

use crate::error::{FeatureError, Result};
use crate::map::{FeatureMap, OutputKind};
pub use crate::spec::{DEFAULT_POWER_ITERATIONS, MAX_POWER_ITERATIONS, TefmKind, TefmParams};
use crate::spec::{MapSpec, TensorViews, Tensors, owned};
use kapprox_core::{Par, dense};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, s};
use serde::{Deserialize, Serialize};

/// Rows transformed per block, so that the `(rows, d)` scratch of the base
/// features stays bounded whatever the caller's chunk size.
const ROW_BLOCK: usize = 512;

/// How the passes that build `Q` are organised (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// (a) One pass accumulating `FᵀF` and `FᵀY`; `(FᵀF)Ω` and the power
    /// iterations in memory; ridge moments of `G` by projection.
    OnePass,
    /// (b) `1 + q` product passes, then one ridge pass over `G`.
    MultiPass,
}

/// The predicted cost of a [`Strategy`]; see [`estimate_cost`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CostEstimate {
    /// Passes over the data (each also featurizes every row with the base map).
    pub passes: usize,
    /// Peak memory of the statistics and scratch, in bytes (the data chunks
    /// and the base map are the same for both strategies and not counted).
    pub memory_bytes: u64,
    /// Flops per data row over all passes: accumulation plus
    /// [`FEATURIZE_FLOPS_PER_FEATURE`]` · d` per pass for featurizing.
    pub flops_per_row: f64,
    /// Flops once, after the passes, independent of the rows: for (a) the
    /// `q + 1` products by `FᵀF` and the projections of a hold-out split's
    /// two parts (`d²·l + 2·d·l²` each); for (b) the `q + 1`
    /// orthonormalisations.
    pub flops_after_passes: f64,
}

/// Rows per accumulation block of `kapprox_core::Moments` and of the
/// sketch accumulators (their `BLOCK_ROWS`).
const ACC_BLOCK_ROWS: u64 = 512;
/// The smallest block SRHT block (kapprox-sketch's `SRHT_MIN_BLOCK_ROWS`).
const SRHT_MIN_BLOCK_ROWS: u64 = 1024;

/// The cost model's price of featurizing one row, per base feature and
/// pass, in flops: a random Fourier map over `m` inputs spends `m` flops
/// per feature in its GEMM (`2·m` per frequency, two features per
/// frequency in the pairs form) plus a SIMD sine/cosine, and each pass
/// also decodes and scales the row. 128 stands for `m ≈ 100` inputs;
/// more inputs make extra passes dearer, so (a) is then chosen at least
/// as often. The strategies' accumulation flops differ by `d²` against
/// `(4q + 6)·d·l` per row, so this price decides only near
/// `d ≈ (4q + 6)·l` (never at the default `d = 4l`).
pub const FEATURIZE_FLOPS_PER_FEATURE: u64 = 128;

/// The cost model of the two strategies for a base map with `d` outputs,
/// `l` TEFM features, `q` power iterations and `k` target columns.
///
/// With `w = d + 1 + k`, `w' = l + 1 + k`, `f = 128·d` (featurizing a row,
/// [`FEATURIZE_FLOPS_PER_FEATURE`]) and `S = d·max(1024, l')` (`l'` = `l`
/// rounded up to a power of two) the largest sketch scratch (block SRHT's
/// block buffer, for `Ω` or for `(FᵀF)Ω`; the Gaussian kind needs
/// `512·(d + l) ≤ S`), all sizes in doubles:
///
/// | | (a) `OnePass` | (b) `MultiPass` |
/// |---|---|---|
/// | passes | `1` | `q + 2` |
/// | memory | `w² + 512·w + d² + 4·d·l + S` | `max(d·l + S, 3·d·l + 512·(d + l), 2·w'² + 512·w' + d·l)` |
/// | flops / row | `w² + f` | `(q + 1)·4·d·l + 2·d·l + w'² + (q + 2)·f` |
/// | flops once | `s + q·2·d²·l + 2·(d²·l + 2·d·l²)` | `(q + 1)·2·d·l²` |
///
/// `s` is the start `(FᵀF)Ω`: `2·d²·l` for a dense Gaussian `Ω` (`q =
/// 0`), `16·d²` for the sparse sign `Ω` with 8 entries per row that the
/// Gaussian kind starts from when `q ≥ 1` (`kapprox_sketch::
/// range_finder_start`); SRHT and CountSketch starts cost less than the
/// dense one, which the model charges them. (b) multiplies by `Ω` densely
/// in its first pass.
///
/// (a): the Moments Gram (`w²`, plus a 512-row buffer), the `d²` copy of
/// `FᵀF` taken for the products, sketch, basis and QR workspace
/// (`4·d·l`). (b): the largest of building `Ω`, a product pass (`Q`, the
/// product, the current basis, block buffers) and the ridge pass over `G`
/// (Moments of width `w'` and its copy, plus `Q`).
pub fn estimate_cost(strategy: Strategy, d: usize, l: usize, q: usize, n_targets: usize) -> CostEstimate {
    let (d, l, q, k) = (d as u64, l as u64, q as u64, n_targets as u64);
    let scratch = d * SRHT_MIN_BLOCK_ROWS.max(l.next_power_of_two());
    let featurize = FEATURIZE_FLOPS_PER_FEATURE * d;
    let doubles = |x: u64| x.saturating_mul(8);
    match strategy {
        Strategy::OnePass => {
            let w = d + 1 + k;
            let mem = w * w + ACC_BLOCK_ROWS * w + d * d + 4 * d * l + scratch;
            let start = if q == 0 { 2 * d * d * l } else { 2 * 8 * d * d };
            let once = start + q * 2 * d * d * l + 2 * (d * d * l + 2 * d * l * l);
            CostEstimate {
                passes: 1,
                memory_bytes: doubles(mem),
                flops_per_row: (w * w + featurize) as f64,
                flops_after_passes: once as f64,
            }
        }
        Strategy::MultiPass => {
            let wp = l + 1 + k;
            let omega = d * l + scratch;
            let product_pass = 3 * d * l + ACC_BLOCK_ROWS * (d + l);
            let ridge_pass = 2 * wp * wp + ACC_BLOCK_ROWS * wp + d * l;
            let mem = omega.max(product_pass).max(ridge_pass);
            let flops = (q + 1) * 4 * d * l + 2 * d * l + wp * wp + (q + 2) * featurize;
            CostEstimate {
                passes: q as usize + 2,
                memory_bytes: doubles(mem),
                flops_per_row: flops as f64,
                flops_after_passes: ((q + 1) * 2 * d * l * l) as f64,
            }
        }
    }
}

/// Chooses (a) [`Strategy::OnePass`] when its memory ([`estimate_cost`])
/// fits in `memory_budget_bytes` and its flops per row, featurizing
/// included, do not exceed those of (b) [`Strategy::MultiPass`]; else (b).
///
/// The per-row cost decides because the row count is not part of the
/// configuration (every process of a distributed fit must decide alike
/// before any data is read), and for large data it dominates; (a)'s
/// `flops_after_passes` are those of about `(2q + 4)·l` rows of its pass,
/// (b)'s extra passes also re-read the data. At the default `d = 4l`, (a)
/// does `≈ 16·l²` flops per row against (b)'s `≈ (16q + 25)·l²`, so (a) is
/// chosen whenever it fits. (b) is chosen even if it does not fit either;
/// compare its [`estimate_cost`] with the budget to report that.
pub fn choose_strategy(d: usize, l: usize, q: usize, n_targets: usize, memory_budget_bytes: u64) -> Strategy {
    let a = estimate_cost(Strategy::OnePass, d, l, q, n_targets);
    let b = estimate_cost(Strategy::MultiPass, d, l, q, n_targets);
    if a.memory_bytes <= memory_budget_bytes && a.flops_per_row <= b.flops_per_row {
        Strategy::OnePass
    } else {
        Strategy::MultiPass
    }
}

/// A fitted TEFM map `x ↦ Qᵀ f(x)`: a dense base map `f` with `d` outputs
/// and an orthonormal `Q (d, l)`.
///
/// Prediction needs only the base map (regenerated from its spec and seed)
/// and `Q`, stored as the tensor `"q"`.
///
/// Memory: `d·l` doubles plus the base map, and a `(512, d)` scratch per
/// transform call.
///
/// Cost: the base map's transform plus `2·n·d·l` flops (one GEMM per block
/// of 512 rows).
#[derive(Debug)]
pub struct Tefm {
    base: Box<dyn FeatureMap>,
    q: Array2<f64>,
    params: Option<TefmParams>,
}

impl Tefm {
    /// The map `x ↦ Qᵀ base(x)` for `q (d, l)`, `d = base.n_output()`.
    ///
    /// # Errors
    /// A sparse base map; `q.nrows() != d`; `q` with no columns; non-finite
    /// entries in `q`.
    pub fn new(base: Box<dyn FeatureMap>, q: Array2<f64>) -> Result<Self> {
        if base.output_kind() != OutputKind::Dense {
            return Err(FeatureError::InvalidParameter {
                name: "TEFM base map",
                value: format!("{:?}", base.output_kind()),
                expected: "a dense feature map",
            });
        }
        let d = base.n_output();
        if q.nrows() != d || q.ncols() == 0 {
            return Err(FeatureError::TensorShape {
                name: "q".to_string(),
                found: q.shape().to_vec(),
                expected: vec![d, q.ncols().max(1)],
            });
        }
        if q.iter().any(|v| !v.is_finite()) {
            return Err(FeatureError::InvalidParameter {
                name: "q",
                value: "a non-finite entry".to_string(),
                expected: "finite values",
            });
        }
        Ok(Tefm { base, q, params: None })
    }

    /// Records how `Q` was built.
    ///
    /// # Errors
    /// `params.n_components != q.ncols()`.
    pub fn with_params(mut self, params: TefmParams) -> Result<Self> {
        if params.n_components != self.q.ncols() {
            return Err(FeatureError::InvalidParameter {
                name: "features",
                value: params.n_components.to_string(),
                expected: "the number of columns of q",
            });
        }
        self.params = Some(params);
        Ok(self)
    }

    /// Rebuilds a fitted map from its base map, its recipe and its tensor
    /// `"q" (d, l)` (as returned by [`FeatureMap::tensors`]).
    ///
    /// # Errors
    /// The tensor is missing or mis-shaped, or as [`Tefm::new`].
    pub fn from_tensors(base: Box<dyn FeatureMap>, params: TefmParams, tensors: &Tensors) -> Result<Self> {
        let q = tensors.get("q").ok_or_else(|| FeatureError::MissingTensor { name: "q".to_string(), map: "tefm" })?;
        let expected = (base.n_output(), params.n_components);
        if q.dim() != expected {
            return Err(FeatureError::TensorShape {
                name: "q".to_string(),
                found: q.shape().to_vec(),
                expected: vec![expected.0, expected.1],
            });
        }
        Tefm::new(base, q.clone())?.with_params(params)
    }

    /// The base map `f`.
    pub fn base(&self) -> &dyn FeatureMap {
        self.base.as_ref()
    }

    /// The basis `Q (d, l)`.
    pub fn q(&self) -> ArrayView2<'_, f64> {
        self.q.view()
    }

    /// How `Q` was built, if recorded.
    pub fn params(&self) -> Option<&TefmParams> {
        self.params.as_ref()
    }

    fn registered_spec(&self) -> MapSpec {
        // A Q built outside the orchestration has no recipe: record a
        // Gaussian sketch with seed 0 (provenance only; Q is the tensor).
        let params = self.params.unwrap_or_else(|| TefmParams::new(TefmKind::Gaussian, self.q.ncols(), 0));
        MapSpec::Tefm { base: Box::new(self.base.spec()), params }
    }
}

impl FeatureMap for Tefm {
    fn n_input(&self) -> usize {
        self.base.n_input()
    }

    fn n_output(&self) -> usize {
        self.q.ncols()
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        assert_eq!(x.ncols(), self.n_input(), "tefm: x has {} columns, expected {}", x.ncols(), self.n_input());
        assert_eq!(out.dim(), (x.nrows(), self.n_output()), "tefm: output shape");
        let n = x.nrows();
        let mut f = Array2::zeros((ROW_BLOCK.min(n), self.q.nrows()));
        let mut r = 0;
        while r < n {
            let e = (r + ROW_BLOCK).min(n);
            let mut fb = f.slice_mut(s![..e - r, ..]);
            self.base.transform_into(x.slice(s![r..e, ..]), fb.view_mut());
            dense::matmul_into(out.slice_mut(s![r..e, ..]), fb.view(), self.q.view(), 1.0, false, Par::Seq);
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
        let mut t: TensorViews<'_> =
            self.base.tensor_views().into_iter().map(|(k, v)| (format!("base.{k}"), v)).collect();
        t.insert("q".to_string(), self.q.view().into());
        t
    }

    fn random_parameters(&self) -> Tensors {
        self.base.random_parameters().into_iter().map(|(k, v)| (format!("base.{k}"), v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::rff::Rff;
    use crate::spec::Form;

    fn base(d: usize) -> Box<dyn FeatureMap> {
        Box::new(Rff::new(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 3, d, 7).unwrap())
    }

    fn orthonormal(d: usize, l: usize) -> Array2<f64> {
        let a = Array2::from_shape_fn((d, l), |(i, j)| {
            ((i * 7 + j * 13) % 11) as f64 - 5.0 + if i == j { 9.0 } else { 0.0 }
        });
        dense::qr_thin_q(a.view())
    }

    #[test]
    fn transform_is_base_features_times_q() {
        let x = Array2::from_shape_fn((1100, 3), |(i, j)| ((i * 3 + j) % 17) as f64 * 0.1 - 0.8);
        let q = orthonormal(40, 6);
        let map = Tefm::new(base(40), q.clone()).unwrap();
        let want = base(40).transform(x.view()).dot(&q);
        let got = map.transform(x.view());
        let err = (&got - &want).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(err < 1e-13, "{err}");
        assert_eq!((map.n_input(), map.n_output()), (3, 6));
    }

    #[test]
    fn rebuilds_from_tensors_and_checks_them() {
        let q = orthonormal(20, 4);
        let params = TefmParams::new(TefmKind::Srht, 4, 9).with_power_iterations(0);
        let map = Tefm::new(base(20), q).unwrap().with_params(params).unwrap();
        let json = serde_json::to_string(map.params().unwrap()).unwrap();
        assert_eq!(json, r#"{"kind":"srht","n_components":4,"power_iterations":0,"seed":9}"#);
        let back = Tefm::from_tensors(base(20), serde_json::from_str(&json).unwrap(), &map.tensors()).unwrap();
        let x = Array2::from_shape_fn((5, 3), |(i, j)| (i + j) as f64 * 0.3);
        assert_eq!(back.transform(x.view()), map.transform(x.view()));
        assert_eq!(
            Tefm::from_tensors(base(20), params, &Tensors::new()).unwrap_err(),
            FeatureError::MissingTensor { name: "q".into(), map: "tefm" }
        );
        assert!(matches!(Tefm::new(base(20), orthonormal(10, 4)), Err(FeatureError::TensorShape { .. })));
        let wrong = TefmParams::new(TefmKind::Gaussian, 5, 0);
        assert!(Tefm::new(base(20), orthonormal(20, 4)).unwrap().with_params(wrong).is_err());
        assert!(wrong.check(4).is_err() && wrong.check(5).is_ok());
    }

    #[test]
    fn cost_model_follows_its_formula_and_switches_on_memory_and_flops() {
        let (d, l, q, k) = (4096, 1024, 1, 1);
        let a = estimate_cost(Strategy::OnePass, d, l, q, k);
        let w = (d + 1 + k) as u64;
        let (d64, l64) = (d as u64, l as u64);
        assert_eq!(a.memory_bytes, 8 * (w * w + 512 * w + d64 * d64 + 4 * d64 * l64 + d64 * 1024));
        assert_eq!(a.passes, 1);
        assert_eq!(a.flops_per_row, (w * w + 128 * d64) as f64);
        let b = estimate_cost(Strategy::MultiPass, d, l, q, k);
        assert_eq!(b.passes, 3);
        let wp = l64 + 2;
        assert_eq!(b.flops_per_row, (2 * 4 * d64 * l64 + 2 * d64 * l64 + wp * wp + 3 * 128 * d64) as f64);
        assert!(b.memory_bytes < a.memory_bytes / 2, "{b:?} vs {a:?}");
        // ~350 MB for (a): fits in 1 GB, not in 200 MB.
        assert_eq!(choose_strategy(d, l, q, k, 1 << 30), Strategy::OnePass);
        assert_eq!(choose_strategy(d, l, q, k, 200 << 20), Strategy::MultiPass);
        assert_eq!(choose_strategy(d, l, q, k, a.memory_bytes), Strategy::OnePass);
        assert_eq!(choose_strategy(d, l, q, k, a.memory_bytes - 1), Strategy::MultiPass);
        // The d² term: doubling d roughly quadruples (a)'s memory.
        let a2 = estimate_cost(Strategy::OnePass, 2 * d, l, q, k);
        assert!(a2.memory_bytes > 3 * a.memory_bytes);
        // Per row, d² against (4q + 6)·d·l plus featurizing: at d = 16l
        // (q = 1) the product passes do less work than the d² Gram, and are
        // chosen although (a) fits; at d = 8l (a) still does less.
        let huge = u64::MAX;
        assert_eq!(choose_strategy(16 * l, l, 1, k, huge), Strategy::MultiPass);
        assert_eq!(choose_strategy(8 * l, l, 1, k, huge), Strategy::OnePass);
        for (dd, qq) in [(16 * l, 1), (8 * l, 1), (12 * l, 2), (4 * l, 0)] {
            let (a, b) =
                (estimate_cost(Strategy::OnePass, dd, l, qq, k), estimate_cost(Strategy::MultiPass, dd, l, qq, k));
            let want = if a.flops_per_row <= b.flops_per_row { Strategy::OnePass } else { Strategy::MultiPass };
            assert_eq!(choose_strategy(dd, l, qq, k, huge), want, "d = {dd}, q = {qq}");
        }
        // (a)'s work after the pass: the sparse start, q products by FᵀF
        // and two projections (a triangular product and a small GEMM each);
        // at q = 0 the dense start.
        let projections = 2 * (d64 * d64 * l64 + 2 * d64 * l64 * l64);
        assert_eq!(a.flops_after_passes, (16 * d64 * d64 + 2 * d64 * d64 * l64 + projections) as f64);
        let a0 = estimate_cost(Strategy::OnePass, d, l, 0, k);
        assert_eq!(a0.flops_after_passes, (2 * d64 * d64 * l64 + projections) as f64);
    }
}
