//! One-pass TEFM after its pass: the basis `Q` from the base map's Gram,
//! then the statistics of the TEFM features by projection.
//!
//! The fit pass of one-pass TEFM is the pass of a plain fit with the base
//! map's `d` features: per split part, the ridge moments of `[f 1 y]`. No
//! per-row sketch: the range finder starts from `(FᵀF)Ω` for the start
//! `Ω (d, l)` of the TEFM kind and power
//! ([`kapprox_sketch::range_finder_start`],
//! [`kapprox_sketch::gram_range_finder`]), so `Q` is a function of the
//! total Gram alone, and multi-pass TEFM (whose first pass accumulates
//! `Fᵀ(FΩ)`) runs the same steps over the rows. Then each part's moments
//! are projected, `GᵀG = Qᵀ(FᵀF)Q`, `Gᵀy = Qᵀ(Fᵀy)`, `Σg = QᵀΣf`
//! (`Moments::project`, lower triangles only, in the Gram kernel),
//! and selection runs on `l` features.
//!
//! # Cost
//!
//! After the pass, once: `q·2·d²·l` flops for the range finder's power
//! steps plus its start (`16·d²` for TEFM-G's sparse sign start at `q ≥ 1`,
//! `2·d²·l` at `q = 0`), `q + 1` thin QRs of `d × l` (`≈ 2·d·l²` each,
//! twice that for the last), and `d²·l + 2·d·l²` per split part for the
//! projections: at `d = 4l`, `q = 1` and a hold-out split `≈ 105·l³`
//! (plus the selection at `l`, `≈ 5/3·l³`), against the band reduction
//! and refit of a `d`-feature selection (`≈ 5/3·d³ ≈ 107·l³` flops) that a
//! plain fit with `d` features runs instead.
//!
//! # Precision
//!
//! The accumulated Gram `A = FᵀF` carries a rounding error `E` of about
//! `u·n` per entry (`u = 2⁻⁵³`) — the same error a plain fit with these
//! `d` features has. Projecting by the orthonormal `Q` does not amplify it:
//! `‖QᵀEQ‖₂ ≤ ‖E‖₂`, and the two products add at most `γ_{2d}·‖A‖`
//! (`γ_m ≈ m·u`), i.e. `≈ 2d·u·n·max‖f‖²` with `‖f‖² = 1` for the Fourier
//! maps: `≈ 10⁻¹²·n` at `d = 4096`, a thousandth of the default grid's
//! smallest `α = 10⁻⁹·n`. So, unlike Nyström's projection by
//! `N = U Λ^{-1/2}` (see `nystrom_gram`), no guard is needed; mapping the
//! rows through `Q` first (multi-pass) errs by the same order, which
//! `crates/cli/tests/cli/invariance.rs` checks (models equal to `1e-8`).

use super::sketch_kind;
use crate::method::MethodSpec;
use anyhow::{Result, bail};
use kapprox_core::cpu::Simd;
use kapprox_core::gram::PackedRows;
use kapprox_core::{AffineProjection, Moments};
use kapprox_features::FeatureMap;
use kapprox_sketch::gram_range_finder_packed;
use ndarray::{Array1, s};

/// The statistics of the TEFM features and the fitted map, from the split
/// parts' moments of the base features (`base`, the map the pass
/// accumulated) of a one-pass TEFM `method`.
///
/// # Errors
/// Not a TEFM method, `l > d`, or parts of different widths.
pub fn project_one_pass(
    method: &MethodSpec,
    seed: u64,
    parts: Vec<Moments>,
    base: Box<dyn FeatureMap>,
) -> Result<(Vec<Moments>, Box<dyn FeatureMap>)> {
    let MethodSpec::Tefm { sketch, n_components, power, .. } = method else { bail!("not a TEFM method") };
    let Some(first) = parts.first() else { bail!("no split parts") };
    // The Gram of all rows, summed in part order (deterministic), packed
    // for the range finder's products straight from the parts' lower
    // triangles.
    let d = first.n_features();
    let mut lower = Vec::with_capacity(parts.len());
    for p in &parts {
        if p.n_features() != d {
            bail!("split parts of {} and {d} base features", p.n_features());
        }
        lower.push(p.augmented_gram().slice_move(s![..d, ..d]));
    }
    let gram = PackedRows::<f64>::symmetric_from_lower_sum(Simd::detect(), &lower);
    drop(lower);
    let q = gram_range_finder_packed(&gram, sketch_kind(*sketch), *n_components, seed, *power)?;
    // One packing of Q for every part; the projections' packed rows reuse
    // the Gram's memory.
    let zero = Array1::zeros(q.ncols());
    let projection = AffineProjection::new(q.view(), zero.view(), first.n_targets(), kapprox_core::dense_par());
    let projected = projection.apply_all(parts, Some(gram));
    Ok((projected, method.tefm_map(base, seed, q)?))
}
