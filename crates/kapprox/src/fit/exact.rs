//! `fit --map exact`: exact kernel ridge regression, the reference every
//! approximation is measured against.
//!
//! All training rows are held in memory (`n ≤ 20 000` by default): the
//! kernel matrix takes `n²` doubles and its eigendecomposition as much
//! again (`n = 6554`: ~1 GB in all). Bandwidth candidates and the hold-out
//! split follow `fit`'s rules exactly (median rule on the same sampled
//! rows, seeded hash of the row id), so approximate and exact fits are
//! selected the same way. Per bandwidth, one eigendecomposition of the
//! training kernel serves every α (`kapprox_solve::ExactKrrPath`); the
//! winner is refitted on all rows by Cholesky. The model is a linear model
//! over the kernel columns `k(x, x_i)` of the training rows
//! ([`kapprox_features::KernelColumns`]), so `predict` and `eval` work
//! unchanged.

use super::config::{FitConfig, Precision, Split};
use super::report::{CandidateReport, CurvePoint, FitReport, Timings, default_alphas};
use crate::method::MethodSpec;
use crate::model::{MODEL_FORMAT, MODEL_VERSION, Model, ModelDoc, Task};
use crate::observer::Observer;
use crate::pipeline::Pass;
use crate::sigma::{SIGMA_SAMPLE_ROWS, median_distance};
use anyhow::{Context, Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_features::{FeatureMap, Kernel, KernelColumns};
use kapprox_io::{ColumnStats, Dataset, ReadOptions, Scaler};
use kapprox_solve::{Classes, ClassificationAccumulator, ExactKrr};
use ndarray::{Array1, Array2, ArrayView2, Axis, concatenate};
use std::time::Instant;

/// Reads every row (inputs and label) with its global id.
fn load_all(
    cfg: &FitConfig,
    ds: &Dataset,
    features: &[String],
    label: &str,
    observer: &dyn Observer,
) -> Result<(Vec<u64>, Array2<f64>, Array1<f64>)> {
    let read = ReadOptions::new(features.to_vec())
        .with_label(Some(label.to_string()))
        .with_chunk_rows(cfg.read.chunk_rows)
        .with_nan_policy(cfg.read.nan);
    let identity = Scaler::None;
    let mut ids = Vec::new();
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    Pass { dataset: ds, read, scaler: &identity, maps: vec![], label: "load", observer, store: None }.run_chunks(
        &mut |chunk| {
            ids.extend(chunk.row_ids.iter());
            xs.push(chunk.x.clone());
            ys.push(chunk.y.clone().expect("label requested"));
            Ok(())
        },
    )?;
    let views: Vec<_> = xs.iter().map(|x| x.view()).collect();
    let yviews: Vec<_> = ys.iter().map(|y| y.view()).collect();
    Ok((ids, concatenate(Axis(0), &views)?, concatenate(Axis(0), &yviews)?))
}

/// Fits exact kernel ridge (`cfg.method` is [`MethodSpec::Exact`], the
/// split a hold-out); returns the model and the report.
pub fn fit_exact(cfg: &FitConfig, observer: &dyn Observer) -> Result<(Model, FitReport)> {
    let t0 = Instant::now();
    let MethodSpec::Exact { kernel: family, max_rows } = cfg.method else {
        bail!("not exact kernel ridge: {}", cfg.method)
    };
    let Split::Holdout(_) = cfg.split else {
        bail!("--folds: exact kernel ridge selects on one held-out part (--validation)")
    };
    cfg.split.check()?;
    if cfg.precision != Precision::F64 {
        bail!("--precision f32: exact kernel ridge solves in f64; the f32 path is for feature maps")
    }
    let passes_before = crate::pipeline::passes_made();
    let ds = Dataset::open(&cfg.train)?;
    if ds.n_rows() > max_rows as u64 {
        bail!(
            "{}: exact kernel ridge holds all {} rows (n² = {} kernel entries) but is limited to {} rows; \
             use an approximate map (e.g. --map nystrom) or subsample the data",
            cfg.train.display(),
            ds.n_rows(),
            ds.n_rows() * ds.n_rows(),
            max_rows
        );
    }
    cfg.read.select.refuse_categorical("--map exact")?;
    if cfg.read.nan == kapprox_io::NanPolicy::Impute {
        bail!("--nan impute: exact kernel ridge holds the rows as read; use --nan skip, or an approximate map");
    }
    let columns = cfg.read.select.select(&ds, &cfg.read.label, true)?;
    let features = columns.numeric.clone();
    let label = columns
        .label
        .clone()
        .with_context(|| format!("{}: a label column is needed to fit (use --label)", cfg.train.display()))?;
    let (ids, mut x, y) = load_all(cfg, &ds, &features, &label, observer)?;
    let stats = match ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok()) {
        Some(s) => s,
        None => {
            let mut s = ColumnStats::new(features.clone());
            s.update(x.view());
            s
        }
    };
    let scaler = Scaler::fit(cfg.scale, &stats);
    scaler.apply_in_place(x.view_mut());

    // Bandwidths by fit's median rule: the highest-priority rows.
    let median = cfg.needs_median().then(|| {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| rng::hash64(cfg.seed, Domain::RESERVOIR, ids[i]));
        order.truncate(SIGMA_SAMPLE_ROWS);
        median_distance(&x.select(Axis(0), &order).view())
    });
    let mut sigmas: Vec<f64> = cfg.sigmas.iter().map(|s| s.resolve(median)).collect();
    sigmas.dedup();

    // Targets: the label, or ±1 one-vs-rest columns.
    let classes = match cfg.task {
        Task::Classification => Some(Classes::from_labels(y.iter().copied())?),
        Task::Regression => None,
    };
    let targets = match &classes {
        Some(c) => c.encode_pm1(y.view())?,
        None => y.clone().insert_axis(Axis(1)),
    };
    let (mut tr, mut va) = (Vec::new(), Vec::new());
    for (i, &id) in ids.iter().enumerate() {
        if cfg.split.part_of(cfg.seed, id) == 1 { va.push(i) } else { tr.push(i) }
    }
    if tr.is_empty() || va.is_empty() {
        bail!("{} training and {} validation rows: too few rows to fit and validate", tr.len(), va.len());
    }
    let alphas = cfg.alphas.clone().unwrap_or_else(|| default_alphas(ids.len() as f64));
    let t_prepare = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let mut reports = Vec::new();
    for &sigma in &sigmas {
        let kernel = family.at(sigma);
        let k = kernel_matrix(kernel, x.view())?;
        let k_tt = k.select(Axis(0), &tr).select(Axis(1), &tr);
        let k_vt = k.select(Axis(0), &va).select(Axis(1), &tr);
        drop(k);
        let y_t = targets.select(Axis(0), &tr);
        let y_v = targets.select(Axis(0), &va);
        let path = ExactKrr::params().with_max_rows(max_rows).check()?.path(k_tt.view(), y_t.view())?;
        let sel = path.select(k_vt.view(), y_v.view(), &alphas)?;
        let mut curve: Vec<CurvePoint> = alphas
            .iter()
            .zip(sel.mean_mse.iter())
            .map(|(&alpha, &mse)| CurvePoint { alpha, mse, accuracy: None, macro_f1: None })
            .collect();
        let mut best = sel.best_index;
        if let Some(cls) = &classes {
            let yv = y.select(Axis(0), &va);
            for c in curve.iter_mut() {
                let pred = cls.decode_argmax(path.model(c.alpha)?.predict(k_vt.view())?.view())?;
                let mut acc = ClassificationAccumulator::new(cls);
                acc.update(yv.view(), pred.view())?;
                let m = acc.metrics()?;
                c.accuracy = Some(m.accuracy);
                c.macro_f1 = Some(m.macro_f1);
            }
            let top = curve.iter().filter_map(|c| c.accuracy).fold(f64::MIN, f64::max);
            best = (0..curve.len())
                .filter(|&i| curve[i].accuracy.unwrap_or(0.0) >= top - 0.5 / va.len() as f64)
                .min_by(|&a, &b| curve[a].mse.total_cmp(&curve[b].mse).then(alphas[b].total_cmp(&alphas[a])))
                .expect("non-empty grid");
        }
        let b = &curve[best];
        reports.push(CandidateReport {
            sigma,
            n_features: tr.len(),
            best_alpha: b.alpha,
            validation_mse: b.mse,
            validation_accuracy: b.accuracy,
            validation_macro_f1: b.macro_f1,
            curve,
        });
    }
    let best = (0..reports.len()).min_by(|&a, &b| reports[a].ranks_before(&reports[b])).context("no candidates")?;
    let (sigma, alpha) = (sigmas[best], reports[best].best_alpha);
    let t_select = t1.elapsed().as_secs_f64();

    // Refit on all rows.
    let t2 = Instant::now();
    let kernel = family.at(sigma);
    let k = kernel_matrix(kernel, x.view())?;
    let sol = ExactKrr::params().with_alpha(alpha).with_max_rows(max_rows).check()?.fit(k.view(), targets.view())?;
    drop(k);
    let map = KernelColumns::new(kernel, x)?;
    let t_solve = t2.elapsed().as_secs_f64();

    let report = FitReport {
        method: "exact".into(),
        rows: ids.len() as u64,
        skipped: 0,
        imputed: 0,
        other: Vec::new(),
        validation_rows: va.len() as f64,
        passes: crate::pipeline::passes_made() - passes_before,
        median_distance: median,
        sigma,
        alpha,
        n_features: map.n_output(),
        candidates: reports,
        statistics_bytes: (ids.len() * ids.len() * 8) as u64,
        extended: None,
        seconds: Timings {
            prepare: t_prepare,
            sketch: 0.0,
            pass: t_select,
            solve: t_solve,
            total: t0.elapsed().as_secs_f64(),
        },
    };
    let training = report.training_record()?;
    let doc = ModelDoc {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        task: cfg.task,
        feature_columns: features,
        inputs: Some(crate::inputs::Inputs { columns, ..Default::default() }),
        label_column: Some(label),
        scaler,
        map: map.spec(),
        classes: classes.map(|c| c.values().to_vec()),
        alpha,
        training,
        kapprox_version: env!("CARGO_PKG_VERSION").into(),
    };
    let model = Model { doc, map: Box::new(map), coef: sol.model.dual_coef, intercept: sol.model.intercept };
    Ok((model, report))
}

/// The exact kernel matrix `K (n, n)` of the rows of `x`, in parallel
/// over row blocks.
pub fn kernel_matrix(kernel: Kernel, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
    let cols = KernelColumns::new(kernel, x.to_owned())?;
    let mut k = Array2::zeros((x.nrows(), x.nrows()));
    let blocks: Vec<_> = k.axis_chunks_iter_mut(Axis(0), 256).collect();
    let xs: Vec<_> = x.axis_chunks_iter(Axis(0), 256).collect();
    use rayon::prelude::*;
    blocks.into_par_iter().zip(xs).for_each(|(kb, xb)| cols.transform_into(xb, kb));
    Ok(k)
}
