//! Nyström fits that accumulate the Gram of the kernel columns and project
//! it afterwards, instead of mapping every row through `N`.
//!
//! A Nyström feature is `z = Nᵀk` with `k = k(x, L)` the `m` kernel
//! columns and `N = U_r Λ_r^{-1/2} (m, r)`. Mapping every row costs the
//! kernel block (`2·m·d` flops) plus the product by `N` (`2·m·r`), and the
//! Gram another `r²`: at `m = r = l` the product by `N` is two thirds of
//! the pass. But the statistics are linear in `zzᵀ = Nᵀ(kkᵀ)N`, so the
//! pass can accumulate `[k 1 y]ᵀ[k 1 y]` and project it once with
//! `Moments::project(N)` (`≈ 4 m³` flops per split part, independent of the
//! rows), exactly as one-pass TEFM does with its `Q`. The model, its map
//! and every later use of it are unchanged; only the order of the
//! arithmetic differs.
//!
//! # When the projection is accurate enough
//!
//! The Gram of the kernel columns (entries in `[0, 1]`) is accumulated with
//! rounding errors of about `u·n` per entry (`u = 2⁻⁵³`), of varying sign,
//! so of about `u·n·√m` in norm, and projecting multiplies that by
//! `‖N‖² = 1/λ_r`. A ridge solution at penalty `α` moves by at most that
//! error over `α`, relative to itself. (Mapping rows through `N` first errs
//! by about `u·n·√m` whatever `λ_r`.) So the projection is used only when
//! `u·√m/λ_r ≤` [`MAX_RELATIVE_GRAM_ERROR`] — a thousandth of the default
//! grid's smallest `α/n = 10⁻⁹` — with the default α grid and `f64`
//! statistics; a grid of one's own, `--extend-grid` (which may go below
//! that α) or `--precision f32` (`u = 2⁻²⁴`) map
//! every row through `N` as before. Kernel matrices of high-dimensional
//! data have eigenvalues bounded away from zero (the diagonal stands out
//! of the off-diagonal kernel values; `λ_r ≈ 0.03` for 1024 landmarks of
//! the 100-column data of `benches/sklearn_grid.py`) and take the
//! projection; smooth kernels on low-dimensional data, whose spectrum
//! decays towards the `rel_tol` cut-off, keep the row-wise map.

use super::{FitConfig, Precision};
use crate::method::MethodSpec;
use anyhow::{Result, bail};
use kapprox_features::{FeatureMap, KernelColumns, MapSpec};
use ndarray::Array2;

/// The largest `u·√m/λ_r` for which the pass accumulates kernel columns:
/// the Gram's error estimate over `n`, at most `10⁻³` of the default
/// grid's smallest `α/n = 10⁻⁹`.
pub const MAX_RELATIVE_GRAM_ERROR: f64 = 1e-12;

/// A Nyström map split into what the pass applies (the kernel columns at
/// the landmarks) and what selection applies to the statistics (`N`).
pub struct KernelGram {
    /// `x ↦ k(x, L)`, the pass's map.
    pub columns: KernelColumns,
    /// `N (m, r)`: the statistics of the kernel columns, projected by `N`,
    /// are those of the Nyström features.
    pub normalization: Array2<f64>,
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
    // The accuracy bound holds down to the default grid's smallest α;
    // `--extend-grid` may go below it.
    if cfg.alphas.is_some() || cfg.extend_grid || cfg.precision != Precision::F64 {
        return Ok(None);
    }
    let mut tensors = map.tensors();
    let (Some(landmarks), Some(normalization)) = (tensors.remove("landmarks"), tensors.remove("normalization")) else {
        bail!("a Nyström map without its landmarks and normalization");
    };
    // Column i of N is u_i/√λ_i with a unit u_i: 1/λ_r = max ‖N_i‖².
    let inv_lambda_min = normalization.columns().into_iter().map(|c| c.dot(&c)).fold(0.0, f64::max);
    let m = normalization.nrows() as f64;
    if f64::EPSILON / 2.0 * m.sqrt() * inv_lambda_min > MAX_RELATIVE_GRAM_ERROR {
        return Ok(None);
    }
    let columns = KernelColumns::new(params.kernel, landmarks)?;
    Ok(Some(KernelGram { columns, normalization }))
}
