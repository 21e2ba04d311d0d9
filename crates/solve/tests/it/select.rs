//! Model selection from statistics against explicit refits.

use crate::util::{gaussian, moments, ridge_qr};
use kapprox_core::rng::{Domain, hash64};
use kapprox_solve::{Ridge, SolveError, cross_validate, holdout, log_grid, parse_alpha_grid};
use ndarray::{Array1, Array2, Axis, s};

/// Rows, targets and a fold id per row (a hash of the row id, as the
/// pipeline assigns folds).
fn dataset(n: usize, l: usize, k: usize, n_folds: u64, seed: u64) -> (Array2<f64>, Array2<f64>, Vec<usize>) {
    let z = gaussian(n, l, seed) * 2.0 + 1.0;
    let y = z.dot(&gaussian(l, k, seed + 1)) + 3.0 * gaussian(n, k, seed + 2) + 5.0;
    let fold = (0..n).map(|i| (hash64(seed, Domain::SPLIT, i as u64) % n_folds) as usize).collect();
    (z, y, fold)
}

fn rows(a: &Array2<f64>, idx: &[usize]) -> Array2<f64> {
    a.select(Axis(0), idx)
}

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a - b).abs() <= rtol * b.abs().max(1e-300)
}

#[test]
fn k_fold_cv_from_statistics_equals_explicit_k_fold_cv() {
    // l = 90 takes the α path through more than one panel of its band
    // reduction (b = 64).
    for (n, l) in [(240, 6), (500, 90)] {
        k_fold_cv_equals_explicit(n, l);
    }
}

fn k_fold_cv_equals_explicit(n: usize, l: usize) {
    let (k, n_folds) = (2, 4);
    let (z, y, fold) = dataset(n, l, k, n_folds as u64, 100);
    let alphas = log_grid(1e-3, 1e4, 9).unwrap();
    for intercept in [true, false] {
        let folds: Vec<_> = (0..n_folds)
            .map(|f| {
                let idx: Vec<usize> = (0..n).filter(|&i| fold[i] == f).collect();
                moments(rows(&z, &idx).view(), rows(&y, &idx).view())
            })
            .collect();
        let params = Ridge::params().with_fit_intercept(intercept).check().unwrap();
        let report = params.cross_validate(&folds, &alphas).unwrap();
        assert_eq!(report.fold_mse.dim(), (alphas.len(), n_folds));
        assert_eq!(report.target_mse.dim(), (alphas.len(), k));

        // Explicit CV: refit on the training rows (QR on the augmented
        // design), predict the fold, average squared errors.
        let mut explicit_mean = Array1::<f64>::zeros(alphas.len());
        for (a, &alpha) in alphas.iter().enumerate() {
            let mut total_sse = 0.0;
            for f in 0..n_folds {
                let tr: Vec<usize> = (0..n).filter(|&i| fold[i] != f).collect();
                let va: Vec<usize> = (0..n).filter(|&i| fold[i] == f).collect();
                let (w, b) = ridge_qr(rows(&z, &tr).view(), rows(&y, &tr).view(), alpha, intercept);
                let pred = rows(&z, &va).dot(&w) + &b;
                let sq = (pred - rows(&y, &va)).mapv(|v| v * v);
                let mse = sq.sum() / (va.len() * k) as f64;
                total_sse += sq.sum();
                assert!(
                    close(report.fold_mse[[a, f]], mse, 1e-9),
                    "alpha {alpha} fold {f}: {} vs {mse}",
                    report.fold_mse[[a, f]]
                );
                assert_eq!(report.fold_sizes[f], va.len() as f64);
                explicit_mean[a] += mse / n_folds as f64;
            }
            assert!(close(report.mean_mse[a], explicit_mean[a], 1e-9));
            assert!(close(report.pooled_mse[a], total_sse / (n * k) as f64, 1e-9));
        }
        let best = (0..alphas.len()).min_by(|&i, &j| explicit_mean[i].total_cmp(&explicit_mean[j])).unwrap();
        assert_eq!(report.best_index, best);
        assert_eq!(report.best_alpha, alphas[best]);
        assert_eq!(report.best_mse(), report.mean_mse[best]);
    }
    // The free function uses the defaults (intercept fitted).
    let folds: Vec<_> = (0..n_folds)
        .map(|f| {
            let idx: Vec<usize> = (0..n).filter(|&i| fold[i] == f).collect();
            moments(rows(&z, &idx).view(), rows(&y, &idx).view())
        })
        .collect();
    let a = cross_validate(&folds, &alphas).unwrap();
    let b = Ridge::params().check().unwrap().cross_validate(&folds, &alphas).unwrap();
    assert_eq!(a, b);
}

#[test]
fn noisy_problem_selects_an_interior_alpha() {
    // Few rows, many features, a weak signal: a moderate α must beat both
    // ends of a wide grid (a test that fails if the curve is wrong-signed).
    let (n, l) = (80, 40);
    let z = gaussian(n, l, 200);
    let y = z.dot(&(0.1 * gaussian(l, 1, 201))) + gaussian(n, 1, 202);
    let folds: Vec<_> = (0..5)
        .map(|f| {
            let idx: Vec<usize> = (0..n).filter(|i| i % 5 == f).collect();
            moments(rows(&z, &idx).view(), rows(&y, &idx).view())
        })
        .collect();
    let alphas = log_grid(1e-4, 1e6, 21).unwrap();
    let r = cross_validate(&folds, &alphas).unwrap();
    assert!(r.best_index > 0 && r.best_index < alphas.len() - 1, "{:?}", r.mean_mse);
    assert!(r.best_mse() < r.mean_mse[0] && r.best_mse() < r.mean_mse[alphas.len() - 1]);
}

#[test]
fn holdout_equals_explicit_holdout_and_ties_go_to_the_larger_alpha() {
    let (z, y, _) = dataset(150, 4, 1, 1, 300);
    let (zt, yt, zv, yv) =
        (z.slice(s![..100, ..]), y.slice(s![..100, ..]), z.slice(s![100.., ..]), y.slice(s![100.., ..]));
    let alphas = [10.0, 0.1, 1.0];
    let r = holdout(&moments(zt, yt), &moments(zv, yv), &alphas).unwrap();
    for (a, &alpha) in alphas.iter().enumerate() {
        let (w, b) = ridge_qr(zt, yt, alpha, true);
        let mse = (zv.dot(&w) + &b - yv).mapv(|v| v * v).mean().unwrap();
        assert!(close(r.mean_mse[a], mse, 1e-9));
    }
    // A single α takes the Cholesky route instead of the eigendecomposition:
    // the same error, for hold-out and for k folds.
    let folds = [moments(zt, yt), moments(zv, yv)];
    for (a, &alpha) in alphas.iter().enumerate() {
        let one = holdout(&folds[0], &folds[1], &[alpha]).unwrap();
        assert!(close(one.mean_mse[0], r.mean_mse[a], 1e-9), "alpha {alpha}: {} vs {}", one.mean_mse[0], r.mean_mse[a]);
        let cv_one = cross_validate(&folds, &[alpha]).unwrap();
        let cv_all = cross_validate(&folds, &alphas).unwrap();
        assert!(close(cv_one.mean_mse[0], cv_all.mean_mse[a], 1e-9));
    }
    // Constant targets: every α predicts exactly; all errors tie at ~0.
    let yc = Array2::from_elem((150, 1), 4.0);
    let r = holdout(&moments(zt, yc.slice(s![..100, ..])), &moments(zv, yc.slice(s![100.., ..])), &alphas).unwrap();
    assert_eq!(r.best_alpha, 10.0, "{:?}", r.mean_mse);
}

#[test]
fn selection_refuses_bad_input() {
    let (z, y, _) = dataset(40, 3, 1, 1, 400);
    let m = moments(z.view(), y.view());
    let empty = {
        let mut e = kapprox_core::Moments::new(3, 1);
        e.flush();
        e
    };
    assert_eq!(cross_validate(std::slice::from_ref(&m), &[1.0]).unwrap_err(), SolveError::TooFewFolds { n_folds: 1 });
    assert_eq!(cross_validate(&[m.clone(), empty.clone()], &[1.0]).unwrap_err(), SolveError::EmptyFold { fold: 1 });
    assert_eq!(holdout(&m, &m, &[]).unwrap_err(), SolveError::EmptyGrid);
    assert_eq!(holdout(&m, &m, &[1.0, -2.0]).unwrap_err(), SolveError::InvalidAlpha { value: -2.0 });
    assert_eq!(holdout(&m, &empty, &[1.0]).unwrap_err(), SolveError::EmptyFold { fold: 0 });
    let other = kapprox_core::Moments::new(4, 1);
    assert!(matches!(holdout(&m, &other, &[1.0]).unwrap_err(), SolveError::DimensionMismatch { .. }));
}

#[test]
fn alpha_grids_parse_and_refuse_nonsense() {
    let g = parse_alpha_grid("1e-4..1e1").unwrap();
    assert_eq!(g.len(), 8);
    assert_eq!((g[0], g[7]), (1e-4, 1e1));
    let ratios: Vec<f64> = g.windows(2).map(|w| w[1] / w[0]).collect();
    assert!(ratios.iter().all(|r| (r - ratios[0]).abs() < 1e-12 * ratios[0]));
    assert!((ratios[0] - 10f64.powf(5.0 / 7.0)).abs() < 1e-12);
    assert_eq!(parse_alpha_grid(" 1e-2 .. 1e2 : 5 ").unwrap().len(), 5);
    assert_eq!(parse_alpha_grid("3").unwrap(), vec![3.0]);
    assert_eq!(parse_alpha_grid("0,1e-3, 2").unwrap(), vec![0.0, 1e-3, 2.0]);
    assert_eq!(parse_alpha_grid("2..2:1").unwrap(), vec![2.0]);
    for bad in ["", "abc", "1..", "..1", "0..1", "1..0.5", "1..10:x", "1..10:0", "1..10:1", "1,,2", "1,-2", "nan"] {
        assert!(parse_alpha_grid(bad).is_err(), "{bad:?} parsed");
    }
    let e = parse_alpha_grid("1..0.5").unwrap_err();
    assert_eq!(e.to_string(), "invalid alpha grid \"1..0.5\": the range end must be >= its start");
    assert!(log_grid(0.0, 1.0, 3).is_err() && log_grid(1.0, 0.5, 3).is_err() && log_grid(1.0, 2.0, 1).is_err());
}
