//! Nyström fits that accumulate the Gram of the kernel columns and project
//! it afterwards, instead of mapping every row through `N`.
//!
//! A Nyström feature is `z = Nᵀk` with `k = k(x, L)` the `m` kernel
//! columns and `N = U_r Λ_r^{-1/2} (m, r)`. Mapping every row costs the
//! kernel block (`2·m·d` flops) plus the product by `N` (`2·m·r`), and the
//! Gram another `r²`: at `m = r = l` the product by `N` is two thirds of
//! the pass. But the statistics are linear in `zzᵀ = Nᵀ(kkᵀ)N`, so the
//! pass can accumulate `[k 1 y]ᵀ[k 1 y]` and project it once with
//! `Moments::project(N)` (`≈ 3 m³` flops per split part, independent of the
//! rows; `≈ m³` for the Cholesky path's upper-triangular `N = L⁻ᵀ`,
//! whose zeros the products skip), exactly as one-pass TEFM does with its
//! `Q`. The model, its map
//! and every later use of it are unchanged; only the order of the
//! arithmetic differs.
//!
//! # Shifted columns
//!
//! The pass accumulates `k' = k − c` for a fixed vector `c`, the mean
//! kernel column of `S ≤ 256` landmarks (a stride through them), and the
//! projection adds `d = Nᵀc` back through the intercept row of
//! `Moments::project_affine`: `z = Nᵀk' + d`
//! exactly, in exact arithmetic, for any `c`. The shift is there for the
//! rounding. A wide kernel puts every kernel value near the same `c_j`
//! (`≈ 0.94` for the widest default bandwidth on the 100-column data of
//! `benches/sklearn_grid.py`); the Gram of the raw columns then holds
//! entries of about `n` whose rounding the projection multiplies by
//! `1/λ_r`, while the Gram of the shifted columns holds entries of about
//! `n·s²`, `s²` the spread of the kernel values around `c` (`≈ 2·10⁻⁵`
//! there). `d` itself is small: `c = K_mm e_S/S` (`e_S` the indicator of
//! those landmarks) makes `d = Λ_r^{1/2} U_rᵀ e_S/S` for
//! `N = U_r Λ_r^{-1/2}` (any other `N` is a rotation of it), of norm at
//! most `√(λ_max/S) ≤ √(m/S)`: no division by a small eigenvalue.
//!
//! # When the projection is accurate enough
//!
//! The Gram of the shifted columns is accumulated with rounding errors of
//! about `u·n·s²` per entry (`u = 2⁻⁵³`), of varying sign, so of about
//! `u·n·s²·√m` in norm, and projecting multiplies that by
//! `‖N‖² = 1/λ_r`; the column sums `Σk'` err by `u·n·s` per entry and are
//! projected by one `N` (`1/√λ_r`). A ridge solution at penalty `α` moves
//! by at most that error over `α`, relative to itself. (Mapping rows
//! through `N` first errs by about `u·n·√m/√λ_r` through the rounding of
//! the kernel values themselves, whatever the path.) So the projection is
//! used only when `u·√m·max(s²/λ_r, s/√λ_r) ≤`
//! [`MAX_RELATIVE_GRAM_ERROR`] — a thousandth of the default grid's
//! smallest `α/n = 10⁻⁹` — with the default α grid and `f64` statistics;
//! a grid of one's own, `--extend-grid` (which may go below that α) or
//! `--precision f32` (`u = 2⁻²⁴`) map every row through `N` as before.
//! `s²` is measured on the landmarks, a uniform sample of the training
//! rows: the largest over `j` of the mean of `(K_mm[i, j] − c_j)²` over
//! those `S` landmarks `i`, and `1/λ_r = ‖N‖₂²` is estimated by power iteration. On that data (1024 landmarks) the criterion is `3·10⁻¹⁶` to
//! `1.4·10⁻¹⁵` for the four default bandwidths, where the unshifted
//! columns' `u·√m/λ_r` was `1.1·10⁻¹⁴` to `2.7·10⁻¹¹` and the two widest
//! mapped every row through `N`; smooth kernels on low-dimensional data, whose
//! spectrum decays towards the `rel_tol` cut-off, may still keep the
//! row-wise map.

use super::{FitConfig, Precision};
use crate::method::MethodSpec;
use anyhow::{Context, Result, bail};
use kapprox_features::{FeatureMap, KernelColumns, MapSpec};
use ndarray::{Array1, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2, Axis, CowArray, Ix2, Zip, s};
use rayon::prelude::*;

/// The largest `u·√m·max(s²/λ_r, s/√λ_r)` for which the pass accumulates
/// kernel columns: the Gram's error estimate over `n`, at most `10⁻³` of
/// the default grid's smallest `α/n = 10⁻⁹`.
pub const MAX_RELATIVE_GRAM_ERROR: f64 = 1e-12;

/// A Nyström map split into what the pass applies (the kernel columns at
/// the landmarks) and what selection applies to the statistics (`N`, the
/// map's normalization, see [`normalization`], and the offset).
///
/// Deciding the split costs a few power sweeps over `N` (≈ 0.2 s at
/// `m = 4096`), so a fit makes it once per candidate and process and keeps
/// it from the pass to selection.
#[derive(Debug)]
pub struct KernelGram {
    /// `x ↦ k(x, L) − c`, the pass's map.
    pub columns: ShiftedColumns,
    /// `d = Nᵀc (r)`: the statistics of the shifted kernel columns,
    /// projected by `N` and offset by `d`, are those of the Nyström
    /// features.
    pub offset: Array1<f64>,
}

/// The normalization `N (m, r)` of a Nyström map, borrowed from it. Not
/// kept in [`KernelGram`]: the map holds it already, and a copy of `m²`
/// doubles through the pass would add 134 MB at `m = 4096`.
///
/// # Errors
/// A map without the tensor.
pub fn normalization(map: &dyn FeatureMap) -> Result<CowArray<'_, f64, Ix2>> {
    map.tensor_views().remove("normalization").context("a Nyström map without its normalization")
}

/// Kernel columns minus a fixed vector: `x ↦ k(x, L) − c`.
///
/// Lives only inside a fit (the pass's map of a projected Nyström
/// candidate); it is never written to a model, so its spec is a
/// [`MapSpec::Custom`] that no registry rebuilds.
#[derive(Debug)]
pub struct ShiftedColumns {
    columns: KernelColumns,
    shift: Array1<f64>,
}

impl FeatureMap for ShiftedColumns {
    fn n_input(&self) -> usize {
        self.columns.n_input()
    }

    fn n_output(&self) -> usize {
        self.columns.n_output()
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        self.columns.transform_into(x, out.view_mut());
        for mut row in out.rows_mut() {
            row -= &self.shift;
        }
    }

    fn spec(&self) -> MapSpec {
        MapSpec::Custom {
            name: "shifted-kernel-columns".into(),
            n_input: self.n_input(),
            n_output: self.n_output(),
            params: serde_json::Value::Null,
        }
    }

    fn parameter_bytes(&self) -> usize {
        self.columns.parameter_bytes() + self.shift.len() * 8
    }
}

/// Landmarks whose kernel columns estimate the shift and the spread:
/// `SPREAD_ROWS·m·d` flops instead of `m²·d` for all of them.
const SPREAD_ROWS: usize = 256;

/// The mean kernel column `c` of the `sample` rows (every
/// `⌈m/SPREAD_ROWS⌉`-th landmark, see [`kernel_gram`]), and the largest
/// spread `s² = max_j mean_i (k(l_i, l_j) − c_j)²`.
///
/// The landmarks are a uniform sample of the training rows, in row-id
/// order; a stride through them (not their first rows, which would all come
/// from the start of the data) keeps the subsample spread over the data,
/// so `c` and `s²` estimate the mean and spread of its kernel columns.
fn column_spread(columns: &KernelColumns, sample: ArrayView2<'_, f64>) -> (Array1<f64>, f64) {
    let k = columns.transform(sample);
    let c = k.mean_axis(Axis(0)).expect("at least one landmark");
    let mut spread = Array1::<f64>::zeros(c.len());
    for row in k.rows() {
        Zip::from(&mut spread).and(&row).and(&c).for_each(|s, &v, &cj| *s += (v - cj) * (v - cj));
    }
    let s2 = spread.iter().fold(0.0, |a: f64, &v| a.max(v)) / k.nrows() as f64;
    (c, s2)
}

/// Power iterations behind [`inverse_smallest_eigenvalue`]. The largest
/// eigenvalues of `NᵀN` are the inverses of `K_mm`'s smallest, which
/// spread apart (`1/λ`), so few steps suffice.
const POWER_STEPS: usize = 12;

/// `‖N‖₂² = 1/λ_r`, estimated: twice the larger of the largest column
/// norm² and the Rayleigh quotient of `NᵀN` after [`POWER_STEPS`] power
/// iterations from a fixed start. Both are lower bounds of `‖N‖₂²`, exact
/// for an eigenvector basis `N = U_r Λ_r^{-1/2}`; for `N = L⁻ᵀ` the power
/// iteration comes within a small factor, which the doubling covers. The
/// criterion it feeds keeps a factor of `10³` anyway.
///
/// Each step is one sweep over the rows of `N` (see [`RowSweep`]).
fn inverse_smallest_eigenvalue(sweep: &RowSweep<'_>) -> f64 {
    let column_norm2 = sweep.sum(&|_, row, mut acc| Zip::from(&mut acc).and(&row).for_each(|s, &v| *s += v * v));
    let mut estimate = column_norm2.iter().copied().fold(0.0, f64::max);
    let r = sweep.n.ncols();
    let mut v = Array1::from_shape_fn(r, |i| 1.0 + (i % 7) as f64 / 7.0);
    v /= v.dot(&v).sqrt();
    for _ in 0..POWER_STEPS {
        let w = sweep.gram_times(&v);
        // v is a unit vector: vᵀ(NᵀN)v = w·v.
        estimate = estimate.max(w.dot(&v));
        let norm = w.dot(&w).sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            break;
        }
        v = w / norm;
    }
    2.0 * estimate
}

/// Sweeps over the rows of a row-major `N (m, r)`: `4·m·r` flops for
/// `Nᵀ(Nv)`, fewer for the upper-triangular `N = L⁻ᵀ` (each row is read
/// from its first nonzero on, half the matrix), in [`SWEEP_BLOCKS`] fixed
/// blocks of rows on every core, summed in block order. The results are a
/// function of `N` alone, whatever the thread count, so every process of a
/// distributed fit computes the same bits.
struct RowSweep<'a> {
    n: CowArray<'a, f64, Ix2>,
    /// Row `i`'s first nonzero column: the zeros before it add nothing.
    first: Vec<usize>,
    blocks: Vec<std::ops::Range<usize>>,
}

impl<'a> RowSweep<'a> {
    fn new(n: ArrayView2<'a, f64>) -> Self {
        let n = if n.is_standard_layout() {
            CowArray::from(n)
        } else {
            CowArray::from(n.as_standard_layout().into_owned())
        };
        let r = n.ncols();
        let first = n.rows().into_iter().map(|row| row.iter().position(|&v| v != 0.0).unwrap_or(r)).collect();
        let block = n.nrows().div_ceil(SWEEP_BLOCKS).max(1);
        let blocks = (0..n.nrows()).step_by(block).map(|b| b..(b + block).min(n.nrows())).collect();
        RowSweep { n, first, blocks }
    }

    /// Row `i` from its first nonzero on.
    fn row(&self, i: usize) -> ArrayView1<'_, f64> {
        self.n.row(i).slice_move(s![self.first[i]..])
    }

    /// `Σ_i part(i, row_i, acc[first_i..])` over the rows, into a zero
    /// `(r)` accumulator per block, the blocks' sums added in order.
    fn sum(&self, part: &RowPart<'_>) -> Array1<f64> {
        let r = self.n.ncols();
        let parts: Vec<Array1<f64>> = self
            .blocks
            .par_iter()
            .map(|b| {
                let mut acc = Array1::<f64>::zeros(r);
                for i in b.clone() {
                    part(i, self.row(i), acc.slice_mut(s![self.first[i]..]));
                }
                acc
            })
            .collect();
        parts.into_iter().reduce(|a, b| a + b).unwrap_or_else(|| Array1::zeros(r))
    }

    /// `Nᵀ u` for `u (m)`.
    fn nt_times(&self, u: &Array1<f64>) -> Array1<f64> {
        self.sum(&|i, row, mut acc| acc.scaled_add(u[i], &row))
    }

    /// `Nᵀ(N v)` for `v (r)`, in one sweep: `Σ_i (n_i·v) n_i`.
    fn gram_times(&self, v: &Array1<f64>) -> Array1<f64> {
        self.sum(&|i, row, mut acc| acc.scaled_add(row.dot(&v.slice(s![self.first[i]..])), &row))
    }
}

/// What a sweep adds for row `i`: `(i, row_i, acc[first_i..])`.
type RowPart<'p> = dyn Fn(usize, ArrayView1<'_, f64>, ArrayViewMut1<'_, f64>) + Sync + 'p;

/// Fixed blocks of rows of the power sweeps (a few per core).
const SWEEP_BLOCKS: usize = 16;

/// The width of the statistics a fit pass accumulates for `map`: an upper
/// bound, for the memory estimate, that does not decide the path (the
/// kernel columns' `m` whenever the projection could be taken).
pub fn accumulated_width(cfg: &FitConfig, map: &dyn FeatureMap) -> usize {
    match (&cfg.method, map.spec()) {
        (MethodSpec::Nystrom { .. }, MapSpec::Nystrom(params)) if allows_projection(cfg) => {
            params.n_landmarks.max(map.n_output())
        }
        _ => map.n_output(),
    }
}

/// The accuracy bound holds down to the default grid's smallest α, in
/// `f64`; `--extend-grid` may go below it.
fn allows_projection(cfg: &FitConfig) -> bool {
    cfg.alphas.is_none() && !cfg.extend_grid && cfg.precision == Precision::F64
}

/// The split of `map` when `cfg` fits Nyström features and the projection
/// is accurate enough (see the module docs); `None` otherwise.
///
/// A function of the configuration and the map only, so every process of a
/// distributed fit decides the same.
///
/// # Errors
/// A Nyström map without its tensors.
pub fn kernel_gram(cfg: &FitConfig, map: &dyn FeatureMap) -> Result<Option<KernelGram>> {
    let (MethodSpec::Nystrom { .. }, MapSpec::Nystrom(params)) = (&cfg.method, map.spec()) else {
        return Ok(None);
    };
    if !allows_projection(cfg) {
        return Ok(None);
    }
    let mut tensors = map.tensor_views();
    let (Some(landmarks), Some(normalization)) = (tensors.remove("landmarks"), tensors.remove("normalization")) else {
        bail!("a Nyström map without its landmarks and normalization");
    };
    let landmarks = landmarks.into_owned();
    let step = landmarks.nrows().div_ceil(SPREAD_ROWS).max(1);
    let sample = landmarks.slice(s![..;step, ..]).to_owned();
    let columns = KernelColumns::new(params.kernel, landmarks)?;
    let (shift, s2) = column_spread(&columns, sample.view());
    let sweep = RowSweep::new(normalization.view());
    let inv_lambda_min = inverse_smallest_eigenvalue(&sweep);
    let m = normalization.nrows() as f64;
    let amplification = (s2 * inv_lambda_min).max((s2 * inv_lambda_min).sqrt());
    if f64::EPSILON / 2.0 * m.sqrt() * amplification > MAX_RELATIVE_GRAM_ERROR {
        return Ok(None);
    }
    let offset = sweep.nt_times(&shift);
    let columns = ShiftedColumns { columns, shift };
    Ok(Some(KernelGram { columns, offset }))
}
