//! Choosing the bandwidth and the ridge penalty from the fit pass's
//! statistics, without another pass.
//!
//! Regression: the validation MSE of every α follows from the held-out
//! parts' statistics (`kapprox_solve::holdout` / `cross_validate`).
//! Classification: accuracy is not a function of the statistics, so every
//! α's model (from the statistics of the training parts) scores the sample
//! of held-out rows the pass kept; ties go to the lower MSE, then the
//! larger α.

use super::acc::Acc;
use super::passes::FitState;
use super::report::{CandidateReport, CurvePoint, default_alphas};
use super::{FitConfig, Split};
use crate::method::MethodSpec;
use crate::model::Task;
use anyhow::{Context, Result, bail};
use kapprox_core::Moments;
use kapprox_features::{FeatureMap, OutputKind};
use kapprox_solve::{AlphaPath, Classes, ClassificationAccumulator, RidgeModel};
use ndarray::{Array1, Array2, s};

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
    sketch: Option<Array2<f64>>,
    map: Box<dyn FeatureMap>,
    classes: &[f64],
) -> Result<Finished> {
    let mut parts: Vec<Moments> = accs.into_iter().map(|a| a.into_moments(classes)).collect();
    if let (MethodSpec::Tefm { power, .. }, Some(sk)) = (method, sketch) {
        // One-pass TEFM: Q from FᵀF (all rows) and FᵀΘ, then the statistics
        // of G = FQ by projection.
        let mut total = parts[0].clone();
        for p in &parts[1..] {
            total.merge(p);
        }
        total.flush();
        let q = kapprox_sketch::range_finder(total.zz().view(), sk.view(), *power)?;
        parts = parts.iter().map(|p| p.project(q.view())).collect();
        // `map` is the base map the pass accumulated (one-pass TEFM).
        return Ok(Finished { parts, map: method.tefm_map(map, cfg.seed, q)? });
    }
    Ok(Finished { parts, map })
}

fn total_of(parts: &[Moments]) -> Moments {
    let mut t = parts[0].clone();
    for p in &parts[1..] {
        t.merge(p);
    }
    t.flush();
    t
}

/// Scores of `model` on sampled rows `x` mapped by `map`.
fn sample_scores(map: &dyn FeatureMap, model: &RidgeModel, x: ndarray::ArrayView2<'_, f64>) -> Result<Array2<f64>> {
    Ok(match map.output_kind() {
        OutputKind::Dense => model.predict(map.transform(x).view())?,
        OutputKind::Sparse { .. } => model.predict_sparse(map.transform_sparse(x).view())?,
    })
}

/// Selects σ and α and refits the winner on all rows.
pub fn select(
    cfg: &FitConfig,
    method: &MethodSpec,
    sigmas: &[f64],
    mut state: FitState,
    maps: Vec<Box<dyn FeatureMap>>,
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
    let class_list = classes.clone().unwrap_or_default();
    let samples: Option<Vec<(Array2<f64>, Array1<f64>)>> = state.samples.take().map(|ss| {
        ss.into_iter()
            .map(|r| {
                let (_, xy) = r.finish();
                let d = xy.ncols() - 1;
                (xy.slice(s![.., 0..d]).to_owned(), xy.column(d).to_owned())
            })
            .collect()
    });
    let mut reports: Vec<CandidateReport> = Vec::new();
    // Only the best candidate so far keeps its statistics: the peak of
    // selection is the pass's statistics plus one candidate's solve.
    let mut leader: Option<(usize, Finished)> = None;
    let sketches = std::mem::take(&mut state.sketches);
    let parts = std::mem::take(&mut state.parts);
    for (((accs, map), sk), &sigma) in parts.into_iter().zip(maps).zip(sketches).zip(sigmas) {
        let f = finish_candidate(cfg, method, accs, sk, map, &class_list)?;
        for &p in &held {
            if f.parts[p].n_samples() == 0.0 {
                bail!("held-out part {p} of the split has no rows: too few rows to validate");
            }
        }
        let n_total: f64 = f.parts.iter().map(Moments::n_samples).sum();
        let alphas = cfg.alphas.clone().unwrap_or_else(|| default_alphas(n_total));
        let sel = match cfg.split {
            Split::Holdout(_) => kapprox_solve::holdout(&f.parts[0], &f.parts[1], &alphas)?,
            Split::Folds(_) => kapprox_solve::cross_validate(&f.parts, &alphas)?,
        };
        let mut curve: Vec<CurvePoint> = alphas
            .iter()
            .zip(sel.mean_mse.iter())
            .map(|(&alpha, &mse)| CurvePoint { alpha, mse, accuracy: None, macro_f1: None })
            .collect();
        let mut best_i = sel.best_index;
        if let (Some(samples), Some(cl)) = (&samples, &classes) {
            let cls = Classes::from_labels(cl.iter().copied())?;
            let total = total_of(&f.parts);
            let mut acc = vec![0.0; alphas.len()];
            let mut f1 = vec![0.0; alphas.len()];
            for &p in &held {
                let train = if held.len() == 1 && f.parts.len() == 2 {
                    f.parts[1 - p].clone()
                } else {
                    total.minus(&f.parts[p])
                };
                let (x, y) = &samples[p];
                if x.nrows() == 0 {
                    continue;
                }
                // One α: a Cholesky solve instead of an eigendecomposition.
                let path = (alphas.len() > 1).then(|| AlphaPath::from_moments(&train, true)).transpose()?;
                for (i, &alpha) in alphas.iter().enumerate() {
                    let model = match &path {
                        Some(path) => path.model(alpha)?,
                        None => kapprox_solve::Ridge::params().with_alpha(alpha).check()?.fit(&train)?.model,
                    };
                    let scores = sample_scores(f.map.as_ref(), &model, x.view())?;
                    let pred = cls.decode_argmax(scores.view())?;
                    let mut a = ClassificationAccumulator::new(&cls);
                    a.update(y.view(), pred.view())?;
                    let m = a.metrics()?;
                    acc[i] += m.accuracy / held.len() as f64;
                    f1[i] += m.macro_f1 / held.len() as f64;
                }
            }
            for (i, c) in curve.iter_mut().enumerate() {
                c.accuracy = Some(acc[i]);
                c.macro_f1 = Some(f1[i]);
            }
            // Highest accuracy; ties (within one sampled row) by lower MSE,
            // then larger α.
            let n_sampled: usize = held.iter().map(|&p| samples[p].0.nrows()).sum::<usize>().max(1);
            let tol = 0.5 / n_sampled as f64;
            let top = acc.iter().copied().fold(f64::MIN, f64::max);
            best_i = (0..alphas.len())
                .filter(|&i| acc[i] >= top - tol)
                .min_by(|&a, &b| curve[a].mse.total_cmp(&curve[b].mse).then(alphas[b].total_cmp(&alphas[a])))
                .expect("non-empty grid");
        }
        let best = &curve[best_i];
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
    let total = total_of(&f.parts);
    let model = kapprox_solve::Ridge::params().with_alpha(alpha).check()?.fit(&total)?.model;
    Ok(Selection { best, alpha, candidates: reports, classes, map: f.map, model, held_out_rows })
}
