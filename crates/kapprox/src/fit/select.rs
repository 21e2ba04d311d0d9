//! Choosing the bandwidth and the ridge penalty from the fit pass's
//! statistics, without another pass.
//!
//! The validation MSE of every α follows from the held-out parts'
//! statistics (`kapprox_solve::holdout` / `cross_validate`), so selection
//! never maps a row again.
//!
//! Classification selects by the same criterion on the one-vs-rest ±1
//! targets: the validation squared error of the scores, mean over classes
//! (the loss the ridge classifier minimises, and a proper scoring rule for
//! the class indicators). Accuracy is not a function of second moments
//! (it needs the argmax of every row's scores), and scoring it would map the
//! held-out rows once per candidate and α — the cost issue 15 measured at
//! 62 % of a Nyström fit. The fit report therefore carries no validation
//! accuracy; `apply`/`eval` on a held-out file measure it. On the datasets
//! in `docs/PERFORMANCE.md` the squared-error picks reach the test accuracy
//! of the accuracy picks (table there).

use super::acc::Acc;
use super::extend::{ALPHA_ROUNDS, alpha_extension};
use super::nystrom_gram::{KernelGram, normalization};
use super::passes::FitState;
use super::report::{CandidateReport, CurvePoint, default_alphas};
use super::tefm_gram::project_one_pass;
use super::{FitConfig, Split};
use crate::method::MethodSpec;
use crate::model::Task;
use anyhow::{Context, Result, bail};
use kapprox_core::{AffineProjection, Moments};
use kapprox_features::FeatureMap;
use kapprox_features::tefm::Strategy;
use kapprox_solve::RidgeModel;

/// The outcome of selection: the winning map, its α, and its ridge model
/// refitted on all rows.
pub struct Selection {
    /// Index of the winning candidate.
    pub best: usize,
    /// Its α.
    pub alpha: f64,
    /// Every candidate's report.
    pub candidates: Vec<CandidateReport>,
    /// The class list (classification).
    pub classes: Option<Vec<f64>>,
    /// The winning feature map (for one-pass TEFM: base map + Q).
    pub map: Box<dyn FeatureMap>,
    /// Weights fitted on all rows.
    pub model: RidgeModel,
    /// Rows in the held-out parts (the validation set, or all rows for k folds).
    pub held_out_rows: f64,
    /// α values `--extend-grid` added past the grid's edge, over all candidates.
    pub alphas_added: usize,
}

/// A candidate's statistics after the pass, in final feature space.
struct Finished {
    parts: Vec<Moments>,
    map: Box<dyn FeatureMap>,
}

fn finish_candidate(
    cfg: &FitConfig,
    method: &MethodSpec,
    accs: Vec<Acc>,
    map: Box<dyn FeatureMap>,
    kernel_gram: Option<KernelGram>,
    classes: &[f64],
) -> Result<Finished> {
    let mut parts: Vec<Moments> = accs.into_iter().map(|a| a.into_moments(classes)).collect();
    if let Some(g) = kernel_gram {
        // The pass accumulated the shifted kernel columns: project them by
        // N and add back Nᵀc.
        drop(g.columns);
        let n = normalization(map.as_ref())?;
        let k = parts.first().map_or(0, Moments::n_targets);
        let projection = AffineProjection::new(n.view(), g.offset.view(), k, kapprox_core::dense_par());
        drop(n);
        parts = projection.apply_all(parts, None);
        return Ok(Finished { parts, map });
    }
    if let MethodSpec::Tefm { strategy: Strategy::OnePass, .. } = method {
        // `map` is the base map the pass accumulated: Q from its Gram, then
        // the statistics of G = FQ by projection.
        let (parts, map) = project_one_pass(method, cfg.seed, parts, map)?;
        return Ok(Finished { parts, map });
    }
    Ok(Finished { parts, map })
}

/// The parts summed into the first (consumed: no copy of an `(l+1+k)²`
/// Gram; the same sums in the same order as merging into a copy).
fn total_of(parts: Vec<Moments>) -> Moments {
    let mut parts = parts.into_iter();
    let mut t = parts.next().expect("a split has at least one part");
    for p in parts {
        t.merge(&p);
    }
    t.flush();
    t
}

/// Selects σ and α and refits the winner on all rows. `kernel_grams`: per
/// candidate, the split its fit pass used (see `nystrom_gram`).
pub fn select(
    cfg: &FitConfig,
    method: &MethodSpec,
    sigmas: &[f64],
    mut state: FitState,
    maps: Vec<Box<dyn FeatureMap>>,
    kernel_grams: Vec<Option<KernelGram>>,
) -> Result<Selection> {
    let held = cfg.split.held_out_parts();
    let classes: Option<Vec<f64>> = (cfg.task == Task::Classification).then(|| {
        let mut c: Vec<f64> = state.parts.iter().flatten().flat_map(|a| a.classes()).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    });
    if let Some(c) = &classes
        && c.len() < 2
    {
        bail!("classification needs at least 2 classes in the label, found {}", c.len());
    }
    if let Some(c) = &classes
        && c.len() > kapprox_solve::MAX_CLASSES
    {
        bail!(
            "classification with {} distinct labels: at most {} classes are supported (a continuous target is a \
             regression: --task regression)",
            c.len(),
            kapprox_solve::MAX_CLASSES
        );
    }
    let class_list = classes.clone().unwrap_or_default();
    let mut reports: Vec<CandidateReport> = Vec::new();
    // Only the best candidate so far keeps its statistics: the peak of
    // selection is the pass's statistics plus one candidate's solve.
    let mut leader: Option<(usize, Finished)> = None;
    let mut alphas_added = 0;
    let parts = std::mem::take(&mut state.parts);
    for (((accs, map), gram), &sigma) in parts.into_iter().zip(maps).zip(kernel_grams).zip(sigmas) {
        let f = finish_candidate(cfg, method, accs, map, gram, &class_list)?;
        for &p in &held {
            if f.parts[p].n_samples() == 0.0 {
                bail!("held-out part {p} of the split has no rows: too few rows to validate");
            }
        }
        let n_total: f64 = f.parts.iter().map(Moments::n_samples).sum();
        let mut alphas = cfg.alphas.clone().unwrap_or_else(|| default_alphas(n_total));
        let validate = |alphas: &[f64]| match cfg.split {
            Split::Holdout(_) => kapprox_solve::holdout(&f.parts[0], &f.parts[1], alphas),
            Split::Folds(_) => kapprox_solve::cross_validate(&f.parts, alphas),
        };
        let mut sel = validate(&alphas)?;
        // `--extend-grid`: past the edge holding the choice, from the same
        // statistics. With a hold-out, one band reduction of the training
        // part (the computation `holdout` does) serves every round.
        let rounds = if cfg.extend_grid { ALPHA_ROUNDS } else { 0 };
        let mut holdout_path = None;
        for _ in 0..rounds {
            let more = alpha_extension(&alphas, alphas[sel.best_index]);
            if more.is_empty() {
                break;
            }
            alphas_added += more.len();
            alphas.extend(more);
            sel = match cfg.split {
                Split::Holdout(_) => {
                    if holdout_path.is_none() {
                        holdout_path = Some(kapprox_solve::AlphaPath::from_moments(&f.parts[0], true)?);
                    }
                    holdout_path.as_ref().expect("set above").select(&f.parts[1], &alphas)?
                }
                Split::Folds(_) => validate(&alphas)?,
            };
        }
        let curve: Vec<CurvePoint> = alphas
            .iter()
            .zip(sel.mean_mse.iter())
            .map(|(&alpha, &mse)| CurvePoint { alpha, mse, accuracy: None, macro_f1: None })
            .collect();
        let best = &curve[sel.best_index];
        reports.push(CandidateReport {
            sigma,
            n_features: f.map.n_output(),
            best_alpha: best.alpha,
            validation_mse: best.mse,
            validation_accuracy: best.accuracy,
            validation_macro_f1: best.macro_f1,
            curve,
        });
        let i = reports.len() - 1;
        // Strictly better replaces: ties keep the earlier candidate.
        if leader.as_ref().is_none_or(|(b, _)| reports[i].ranks_before(&reports[*b]).is_lt()) {
            leader = Some((i, f));
        }
    }
    let (best, f) = leader.context("no candidates")?;
    let alpha = reports[best].best_alpha;
    let held_out_rows = held.iter().map(|&p| f.parts[p].n_samples()).sum();
    let Finished { parts, map } = f;
    let total = total_of(parts);
    let model = kapprox_solve::Ridge::params().with_alpha(alpha).check()?.fit_model(&total)?;
    Ok(Selection { best, alpha, candidates: reports, classes, map, model, held_out_rows, alphas_added })
}
