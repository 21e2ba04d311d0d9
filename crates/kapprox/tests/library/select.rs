//! Selection from the statistics against an explicit solve: the validation
//! curve of a classification fit is the squared error of one-vs-rest ridge
//! models fitted on the training rows by a dense solve of their own.

use kapprox::fit::Split;
use kapprox::generate::{GenerateConfig, generate};
use kapprox::io::read_columns;
use kapprox::{FitConfig, MethodParams, SigmaSpec, Silent, Task, fit};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// Solves the SPD system `a x = b` by a Cholesky factorisation written out
/// here (independent of the solve crate).
fn spd_solve(mut a: Array2<f64>, mut b: Array2<f64>) -> Array2<f64> {
    let n = a.nrows();
    for j in 0..n {
        let mut d = a[[j, j]];
        for k in 0..j {
            d -= a[[j, k]] * a[[j, k]];
        }
        assert!(d > 0.0, "not positive definite");
        let d = d.sqrt();
        a[[j, j]] = d;
        for i in j + 1..n {
            let mut s = a[[i, j]];
            for k in 0..j {
                s -= a[[i, k]] * a[[j, k]];
            }
            a[[i, j]] = s / d;
        }
    }
    for mut col in b.columns_mut() {
        for i in 0..n {
            let mut s = col[i];
            for k in 0..i {
                s -= a[[i, k]] * col[k];
            }
            col[i] = s / a[[i, i]];
        }
        for i in (0..n).rev() {
            let mut s = col[i];
            for k in i + 1..n {
                s -= a[[k, i]] * col[k];
            }
            col[i] = s / a[[i, i]];
        }
    }
    b
}

/// Ridge with an unpenalised intercept on rows `z`, targets `y`: weights and
/// intercepts.
fn ridge(z: ArrayView2<'_, f64>, y: ArrayView2<'_, f64>, alpha: f64) -> (Array2<f64>, Array1<f64>) {
    let zm = z.mean_axis(Axis(0)).unwrap();
    let ym = y.mean_axis(Axis(0)).unwrap();
    let zc = &z - &zm;
    let yc = &y - &ym;
    let mut a = zc.t().dot(&zc);
    a.diag_mut().mapv_inplace(|v| v + alpha);
    let w = spd_solve(a, zc.t().dot(&yc));
    let b = &ym - &zm.dot(&w);
    (w, b)
}

/// ±1 one-vs-rest targets of `labels` for the ascending class list.
fn pm1(labels: &Array1<f64>, classes: &[f64]) -> Array2<f64> {
    Array2::from_shape_fn((labels.len(), classes.len()), |(i, c)| if labels[i] == classes[c] { 1.0 } else { -1.0 })
}

#[test]
fn classification_selection_is_the_validation_squared_error_of_explicit_solves() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let g = GenerateConfig { rows: 900, features: 4, classes: 3, rows_per_shard: 300, seed: 11, overwrite: false };
    generate(&g, &data, &Silent).unwrap();
    let alphas = vec![1e-3, 1e-1, 1.0, 10.0, 100.0, 1e4];
    for split in [Split::Holdout(0.25), Split::Folds(3)] {
        let method =
            MethodParams { map: "rff".into(), n_components: 40, ..MethodParams::default() }.check(1, None).unwrap();
        let cfg = FitConfig {
            sigmas: vec![SigmaSpec::Value(2.0)],
            alphas: Some(alphas.clone()),
            task: Task::Classification,
            split,
            seed: 5,
            ..FitConfig::new(&data, method)
        };
        let (model, report) = fit(&cfg, &Silent).unwrap();
        let mut x = read_columns(&data, &model.doc.feature_columns).unwrap();
        let labels = read_columns(&data, &["label".to_string()]).unwrap().column(0).to_owned();
        model.doc.scaler.apply_in_place(x.view_mut());
        let z = model.map.transform(x.view());
        let mut classes: Vec<f64> = labels.to_vec();
        classes.sort_by(f64::total_cmp);
        classes.dedup();
        assert_eq!(classes.len(), 3);
        let y = pm1(&labels, &classes);
        let part: Vec<usize> = (0..z.nrows()).map(|i| split.part_of(cfg.seed, i as u64)).collect();
        let held = split.held_out_parts();
        let curve = &report.candidates[0].curve;
        let mut want = vec![0.0; alphas.len()];
        for (a, &alpha) in alphas.iter().enumerate() {
            for &p in &held {
                let train: Vec<usize> = (0..z.nrows()).filter(|&i| part[i] != p).collect();
                let val: Vec<usize> = (0..z.nrows()).filter(|&i| part[i] == p).collect();
                let (w, b) = ridge(z.select(Axis(0), &train).view(), y.select(Axis(0), &train).view(), alpha);
                let err = z.select(Axis(0), &val).dot(&w) + &b - y.select(Axis(0), &val);
                want[a] += err.mapv(|e| e * e).sum() / (val.len() * classes.len()) as f64 / held.len() as f64;
            }
            let got = curve[a].mse;
            assert!((got - want[a]).abs() <= 1e-9 * want[a], "{split:?} α = {alpha}: {got} vs explicit {}", want[a]);
            assert!(curve[a].accuracy.is_none(), "selection scores no rows");
        }
        let best = (0..alphas.len()).min_by(|&i, &j| want[i].total_cmp(&want[j])).unwrap();
        assert_eq!(report.alpha, alphas[best], "{split:?}: curve {want:?}");
        // The winner refitted on all rows is the explicit all-row solve.
        let (w, b) = ridge(z.view(), y.view(), report.alpha);
        let explicit = z.dot(&w) + &b;
        let scores = model.scores(z.view());
        let scale = explicit.iter().fold(0f64, |m, v| m.max(v.abs()));
        let diff = (&scores - &explicit).iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(diff <= 1e-9 * scale, "{split:?}: refit differs by {diff} (scale {scale})");
    }
}

/// Nyström with the default α grid accumulates the kernel columns and
/// projects their statistics by `N` (`kapprox::fit::nystrom_gram`): the
/// validation curve and the refitted model must still be those of ridge on
/// the Nyström features of the rows, solved explicitly.
#[test]
fn nystrom_selection_from_projected_kernel_columns_matches_explicit_solves() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let g = GenerateConfig { rows: 1200, features: 6, classes: 0, rows_per_shard: 400, seed: 3, overwrite: false };
    generate(&g, &data, &Silent).unwrap();
    projected_nystrom_matches_explicit_solves(&data, 1.5, false);
}

/// A wide kernel: every kernel value is near the landmarks' mean column
/// and `K_mm`'s spectrum decays, so the Gram of the raw kernel columns
/// would have been too inaccurate to project (`u·√m/λ_r > 10⁻¹²`); the
/// shifted columns are projected and must still give the explicit solves.
#[test]
fn nystrom_with_a_wide_kernel_projects_shifted_columns_accurately() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let g = GenerateConfig { rows: 1200, features: 6, classes: 0, rows_per_shard: 400, seed: 3, overwrite: false };
    generate(&g, &data, &Silent).unwrap();
    projected_nystrom_matches_explicit_solves(&data, WIDE_SIGMA, true);
}

const WIDE_SIGMA: f64 = 4.0;

fn projected_nystrom_matches_explicit_solves(data: &std::path::Path, sigma: f64, wide: bool) {
    let method =
        MethodParams { map: "nystrom".into(), n_components: 80, ..MethodParams::default() }.check(1, None).unwrap();
    let split = Split::Holdout(0.25);
    let cfg = FitConfig { sigmas: vec![SigmaSpec::Value(sigma)], split, seed: 4, ..FitConfig::new(data, method) };
    let (model, report) = fit(&cfg, &Silent).unwrap();
    assert!(
        kapprox::fit::nystrom_gram::kernel_gram(&cfg, model.map.as_ref()).unwrap().is_some(),
        "this fit must take the projected path"
    );
    // The bound on the raw columns' Gram (before the shift): 1/λ_r = ‖N‖₂².
    let n = model.map.tensors().remove("normalization").unwrap();
    let (eig, _) = kapprox::core::dense::eigh(n.t().dot(&n).view());
    let inv_lambda_r = eig[eig.len() - 1];
    let raw_bound = f64::EPSILON / 2.0 * (n.nrows() as f64).sqrt() * inv_lambda_r;
    eprintln!("sigma {sigma}: raw-column bound {raw_bound:e}, r = {}", n.ncols());
    assert_eq!(raw_bound > kapprox::fit::nystrom_gram::MAX_RELATIVE_GRAM_ERROR, wide, "σ = {sigma}: {raw_bound:e}");
    let own_grid = FitConfig { alphas: Some(vec![1.0]), ..cfg.clone() };
    assert!(kapprox::fit::nystrom_gram::kernel_gram(&own_grid, model.map.as_ref()).unwrap().is_none());
    let mut x = read_columns(data, &model.doc.feature_columns).unwrap();
    let y = read_columns(data, &["label".to_string()]).unwrap();
    model.doc.scaler.apply_in_place(x.view_mut());
    let z = model.map.transform(x.view());
    let part: Vec<usize> = (0..z.nrows()).map(|i| split.part_of(cfg.seed, i as u64)).collect();
    let train: Vec<usize> = (0..z.nrows()).filter(|&i| part[i] == 0).collect();
    let val: Vec<usize> = (0..z.nrows()).filter(|&i| part[i] == 1).collect();
    let curve = &report.candidates[0].curve;
    assert_eq!(curve.len(), 17, "the default grid");
    let mut want = Vec::new();
    for point in curve {
        let (w, b) = ridge(z.select(Axis(0), &train).view(), y.select(Axis(0), &train).view(), point.alpha);
        let err = z.select(Axis(0), &val).dot(&w) + &b - y.select(Axis(0), &val);
        want.push(err.mapv(|e| e * e).sum() / val.len() as f64);
        let last = *want.last().unwrap();
        assert!((point.mse - last).abs() <= 1e-8 * last, "α = {}: {} vs explicit {last}", point.alpha, point.mse);
    }
    let best = (0..want.len()).min_by(|&i, &j| want[i].total_cmp(&want[j])).unwrap();
    assert_eq!(report.alpha, curve[best].alpha, "curve {want:?}");
    let (w, b) = ridge(z.view(), y.view(), report.alpha);
    let explicit = z.dot(&w) + &b;
    let scores = model.scores(z.view());
    let scale = explicit.iter().fold(0f64, |m, v| m.max(v.abs()));
    let diff = (&scores - &explicit).iter().fold(0f64, |m, v| m.max(v.abs()));
    assert!(diff <= 1e-8 * scale, "refit differs by {diff} (scale {scale})");
}
