//! `--extend-grid`: when the chosen α or σ is at the edge of its grid, the
//! best value may lie beyond it, so the grid is extended in that direction.
//!
//! - α: the validation error of any α follows from the fit pass's
//!   statistics, so the grid grows from the same statistics, with no extra
//!   pass: up to [`ALPHA_ROUNDS`] rounds of [`ALPHA_STEPS`] values each, at
//!   the grid's own ratio at that end, until the best α is inside.
//! - σ: another bandwidth needs its own features, so one more fit (one more
//!   pass, plus the prepare pass where the method needs one) runs with
//!   [`SIGMA_STEPS`] candidates beyond the edge; the better of the two fits
//!   by validation error wins. Both fits hold out the same rows (the split
//!   is a seeded hash of the row id), so their validation errors compare.

use super::report::{CandidateReport, FitReport};
use super::{FitConfig, FitJob};
use crate::model::Model;
use crate::observer::Observer;
use crate::sigma::SigmaSpec;
use anyhow::Result;
use serde::Serialize;

/// α values added per round of extension.
pub const ALPHA_STEPS: usize = 8;
/// Most rounds of α extension (so at most 32 values are added).
pub const ALPHA_ROUNDS: usize = 4;
/// σ candidates of the extra fit.
pub const SIGMA_STEPS: usize = 3;
/// The step used when a grid's end is too dense to give one (ratio < 1.5):
/// a factor of 2 for σ, √10 for α (the default grid's).
const MIN_RATIO: f64 = 1.5;

/// What `--extend-grid` added.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct GridExtension {
    /// α values added beyond the edge, over all candidates.
    pub alphas_added: usize,
    /// σ candidates added by the extra fit.
    pub sigmas_added: Vec<f64>,
    /// Passes of the extra fit.
    pub extra_passes: u64,
}

/// Which end of `grid` holds `chosen`, if an end does (grids of two or
/// more distinct values only): `Some(false)` the smallest, `Some(true)` the
/// largest.
fn at_edge(grid: &[f64], chosen: f64) -> Option<bool> {
    let mut sorted: Vec<f64> = grid.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    if sorted.len() < 2 {
        None
    } else if chosen <= sorted[0] {
        Some(false)
    } else if chosen >= sorted[sorted.len() - 1] {
        Some(true)
    } else {
        None
    }
}

/// `steps` values beyond the end of `grid` that holds `chosen`, spaced by
/// the grid's ratio at that end (at least `fallback` when the end is dense),
/// kept within `(lo, hi)`; empty when `chosen` is not at an end.
fn beyond(grid: &[f64], chosen: f64, steps: usize, fallback: f64, (lo, hi): (f64, f64)) -> Vec<f64> {
    let Some(upwards) = at_edge(grid, chosen) else { return Vec::new() };
    let mut sorted: Vec<f64> = grid.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    let n = sorted.len();
    let ratio = if upwards { sorted[n - 1] / sorted[n - 2] } else { sorted[1] / sorted[0] };
    let ratio = if ratio.is_finite() && ratio >= MIN_RATIO { ratio } else { fallback };
    let end = if upwards { sorted[n - 1] } else { sorted[0] };
    (1..=steps as i32)
        .map(|k| if upwards { end * ratio.powi(k) } else { end / ratio.powi(k) })
        .take_while(|v| v.is_finite() && *v > lo && *v < hi)
        .collect()
}

/// The α values to add to `alphas` when `chosen` is at an edge (none when
/// it is inside, or past `f64` range).
pub fn alpha_extension(alphas: &[f64], chosen: f64) -> Vec<f64> {
    beyond(alphas, chosen, ALPHA_STEPS, 10f64.sqrt(), (1e-300, 1e300))
}

/// [`super::fit`] with `--extend-grid`'s σ extension: when the first fit's
/// σ is at the edge of its candidates, one more fit over [`SIGMA_STEPS`]
/// candidates beyond it, and the better of the two.
pub(crate) fn fit_extending_sigma(cfg: &FitConfig, observer: &dyn Observer) -> Result<(Model, FitReport)> {
    let (model, report) = FitJob::new(cfg)?.run_to_end(observer)?;
    let sigmas: Vec<f64> = report.candidates.iter().map(|c| c.sigma).collect();
    let added = beyond(&sigmas, report.sigma, SIGMA_STEPS, 2.0, (1e-300, 1e300));
    if added.is_empty() {
        return Ok((model, report));
    }
    let more = FitConfig { sigmas: added.iter().map(|&s| SigmaSpec::Value(s)).collect(), ..cfg.clone() };
    let (model2, report2) = FitJob::new(&more)?.run_to_end(observer)?;
    let best = |r: &FitReport| -> CandidateReport {
        r.candidates.iter().find(|c| c.sigma == r.sigma).cloned().expect("the chosen σ is a candidate")
    };
    let second_wins = best(&report2).ranks_before(&best(&report)).is_lt();
    let extension = GridExtension {
        alphas_added: report.extended.as_ref().map_or(0, |e| e.alphas_added)
            + report2.extended.as_ref().map_or(0, |e| e.alphas_added),
        sigmas_added: added,
        extra_passes: report2.passes,
    };
    let (mut model, first, second) = if second_wins { (model2, report2, report) } else { (model, report, report2) };
    let mut merged = first.clone();
    merged.candidates = if second_wins {
        second.candidates.iter().chain(&first.candidates).cloned().collect()
    } else {
        first.candidates.iter().chain(&second.candidates).cloned().collect()
    };
    merged.passes = first.passes + second.passes;
    merged.median_distance = first.median_distance.or(second.median_distance);
    merged.statistics_bytes = first.statistics_bytes.max(second.statistics_bytes);
    merged.seconds.total = first.seconds.total + second.seconds.total;
    merged.extended = Some(extension);
    model.doc.training = merged.training_record()?;
    Ok((model, merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_extend_past_the_edge_that_holds_the_choice() {
        let default: Vec<f64> = (0..17).map(|i| 10f64.powf(-9.0 + 0.5 * i as f64)).collect();
        let up = alpha_extension(&default, 0.1);
        assert_eq!(up.len(), ALPHA_STEPS);
        assert!((up[0] / 0.1 - 10f64.sqrt()).abs() < 1e-12 && (up[7] / 1e3 - 1.0).abs() < 1e-9, "{up:?}");
        let down = alpha_extension(&default, 1e-9);
        assert!((down[0] * 10f64.sqrt() / 1e-9 - 1.0).abs() < 1e-12, "{down:?}");
        assert!(alpha_extension(&default, 1e-5).is_empty(), "inside the grid");
        assert!(alpha_extension(&[3.0], 3.0).is_empty(), "one value has no edge");
        // Unsorted candidates, the largest chosen: steps of the top ratio 4.
        let s = beyond(&[2.0, 8.0, 0.5], 8.0, SIGMA_STEPS, 2.0, (0.0, f64::INFINITY));
        assert_eq!(s, vec![32.0, 128.0, 512.0]);
        // A dense end (ratio 1.1 < 1.5) steps by the fallback.
        assert_eq!(beyond(&[1.0, 1.1], 1.0, 2, 2.0, (0.0, f64::INFINITY)), vec![0.5, 0.25]);
        // Never past the bounds.
        assert_eq!(beyond(&[1e299, 1e300], 1e300, 3, 10.0, (0.0, 1e302)), vec![1e301]);
    }
}
