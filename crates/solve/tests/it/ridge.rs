//! Ridge fits and the α path against QR references.

use crate::util::{cond_shifted, gaussian, moments, rel_err, ridge_qr, scaled_features};
use kapprox_core::SparseRows;
use kapprox_solve::{AlphaPath, Fallback, Ridge, SolveError, SolveMethod, log_grid};
use ndarray::{Array1, Array2, Axis, array, s};

const EPS: f64 = f64::EPSILON;

/// Planted problem: `y = Z w* + b* + σ ε`, with offset feature means so
/// that the intercept matters.
fn planted(
    n: usize,
    l: usize,
    k: usize,
    sigma: f64,
    seed: u64,
) -> (Array2<f64>, Array2<f64>, Array2<f64>, Array1<f64>) {
    let z = gaussian(n, l, seed) + 3.0;
    let w = gaussian(l, k, seed + 1);
    let b = Array1::from_shape_fn(k, |t| 1.5 - 2.0 * t as f64);
    let y = z.dot(&w) + &b + sigma * gaussian(n, k, seed + 2);
    (z, y, w, b)
}

#[test]
fn ridge_with_intercept_equals_augmented_qr_on_planted_data() {
    let (n, l, k) = (500, 10, 2);
    let (z, y, w_star, b_star) = planted(n, l, k, 0.01, 10);
    let m = moments(z.view(), y.view());
    for alpha in [0.0, 0.3, 30.0] {
        let fit = Ridge::params().with_alpha(alpha).check().unwrap().fit(&m).unwrap();
        assert_eq!(fit.info.method, SolveMethod::Cholesky);
        let (w_ref, b_ref) = ridge_qr(z.view(), y.view(), alpha, true);
        // Forward error of both solvers is O(ε · cond); allow a factor n.
        let tol = EPS * n as f64 * cond_shifted(z.view(), alpha, true);
        let (ew, eb) = (rel_err(&fit.model.coef, &w_ref), rel_err(&fit.model.intercept, &b_ref));
        // b = ȳ − Wᵀz̄ inherits the error of W amplified by ‖z̄‖‖W‖/‖b‖.
        let norm = |a: &ndarray::ArrayView1<f64>| a.dot(a).sqrt();
        let zbar = z.mean_axis(Axis(0)).unwrap();
        let w_norm = w_ref.iter().map(|v| v * v).sum::<f64>().sqrt();
        let tol_b = tol * (1.0 + norm(&zbar.view()) * w_norm / norm(&b_ref.view()));
        assert!(ew <= tol && eb <= tol_b, "alpha {alpha}: coef {ew:e}, intercept {eb:e}, tol {tol:e} / {tol_b:e}");
        assert!(fit.info.condition_estimate <= cond_shifted(z.view(), alpha, true) * (1.0 + 1e-9));
        if alpha < 1.0 {
            // The planted signal is recovered: noise σ·sqrt(l/n) ≈ 1.4e-3
            // plus ridge bias α‖w*‖/λ_min ≈ 3e-3.
            assert!(rel_err(&fit.model.coef, &w_star) < 1e-2, "alpha {alpha}");
            assert!((&fit.model.intercept - &b_star).iter().all(|v| v.abs() < 0.05));
        }
    }
}

#[test]
fn ridge_without_intercept_equals_augmented_qr() {
    let (z, y, _, _) = planted(300, 7, 2, 0.1, 20);
    let m = moments(z.view(), y.view());
    let fit = Ridge::params().with_alpha(2.0).with_fit_intercept(false).check().unwrap().fit(&m).unwrap();
    let (w_ref, _) = ridge_qr(z.view(), y.view(), 2.0, false);
    let tol = EPS * 300.0 * cond_shifted(z.view(), 2.0, false);
    assert!(rel_err(&fit.model.coef, &w_ref) <= tol);
    assert_eq!(fit.model.intercept, Array1::<f64>::zeros(2));
}

#[test]
fn normal_equation_residual_is_at_rounding_level() {
    let z = scaled_features(400, 30, 1e3, 3);
    let y = gaussian(400, 4, 4);
    let m = moments(z.view(), y.view());
    let c = m.centered();
    for alpha in [1e-3, 1.0, 1e3] {
        let fit = Ridge::params().with_alpha(alpha).check().unwrap().fit(&m).unwrap();
        let mut shifted = c.a.clone();
        shifted.diag_mut().mapv_inplace(|v| v + alpha);
        let r = shifted.dot(&fit.model.coef) - &c.b;
        let norm = |a: &Array2<f64>| a.iter().map(|v| v * v).sum::<f64>().sqrt();
        // Backward stability of Cholesky: ‖r‖ ≲ c · l · ε · ‖A + αI‖ ‖W‖.
        let bound = 30.0 * EPS * norm(&shifted) * norm(&fit.model.coef);
        assert!(norm(&r) <= bound, "alpha {alpha}: residual {:e} > {bound:e}", norm(&r));
        // The intercept makes the residuals sum to zero.
        let res = fit.model.predict(z.view()).unwrap() - &y;
        let scale = y.iter().map(|v| v.abs()).sum::<f64>();
        assert!(res.sum_axis(Axis(0)).iter().all(|v| v.abs() <= 1e-10 * scale));
    }
}

#[test]
fn multi_target_solve_equals_per_target_solves() {
    let (z, y, _, _) = planted(250, 12, 3, 0.5, 30);
    let params = Ridge::params().with_alpha(0.7).check().unwrap();
    let all = params.fit(&moments(z.view(), y.view())).unwrap().model;
    for t in 0..3 {
        let yt = y.slice(s![.., t..t + 1]);
        let one = params.fit(&moments(z.view(), yt)).unwrap().model;
        let e = rel_err(&all.coef.slice(s![.., t..t + 1]).to_owned(), &one.coef);
        assert!(e <= 1e-12, "target {t}: {e:e}");
        assert!((all.intercept[t] - one.intercept[0]).abs() <= 1e-12 * (1.0 + one.intercept[0].abs()));
    }
}

/// The Cholesky fit at `alpha` (no fallback allowed).
fn cholesky_refit(m: &kapprox_core::Moments, alpha: f64, intercept: bool) -> kapprox_solve::RidgeSolution {
    let fit = Ridge::params()
        .with_alpha(alpha)
        .with_fit_intercept(intercept)
        .with_fallback(Fallback::Error)
        .check()
        .unwrap()
        .fit(m)
        .unwrap();
    assert_eq!(fit.info.method, SolveMethod::Cholesky);
    fit
}

#[test]
fn alpha_path_equals_cholesky_refit_at_every_alpha() {
    // Gram condition ~1e4: eps · l · cond ≈ 1e-10, well under 1e-9.
    let (n, l, k) = (400, 40, 3);
    let z = scaled_features(n, l, 1e2, 5);
    let y = z.dot(&gaussian(l, k, 6)) + gaussian(n, k, 7);
    let m = moments(z.view(), y.view());
    for intercept in [true, false] {
        let params = Ridge::params().with_fit_intercept(intercept).check().unwrap();
        let path = params.path(&m).unwrap();
        let mut alphas = log_grid(1e-4, 1e3, 15).unwrap();
        alphas.push(0.0);
        for &alpha in &alphas {
            let from_path = path.model(alpha).unwrap();
            let refit = cholesky_refit(&m, alpha, intercept);
            let ew = rel_err(&from_path.coef, &refit.model.coef);
            let eb = (&from_path.intercept - &refit.model.intercept).iter().fold(0.0f64, |a, v| a.max(v.abs()))
                / refit.model.intercept.iter().fold(1.0f64, |a, v| a.max(v.abs()));
            let bound = EPS * l as f64 * cond_shifted(z.view(), alpha, intercept);
            assert!(ew <= 1e-9 && eb <= 1e-9, "alpha {alpha}: coef {ew:e}, intercept {eb:e}");
            assert!(ew <= 10.0 * bound, "alpha {alpha}: {ew:e} > 10 eps l cond = {:e}", 10.0 * bound);
        }
    }
}

#[test]
fn alpha_path_over_several_band_panels_equals_cholesky_refits() {
    // l = 200 spans three panels of the band reduction (b = 64), so the
    // path's reflectors and band solves are exercised, not just the band.
    let (n, l, k) = (900, 200, 2);
    let z = scaled_features(n, l, 30.0, 15);
    let y = z.dot(&gaussian(l, k, 16)) + gaussian(n, k, 17);
    let m = moments(z.view(), y.view());
    for intercept in [true, false] {
        let path = Ridge::params().with_fit_intercept(intercept).check().unwrap().path(&m).unwrap();
        for alpha in log_grid(1e-3, 1e3, 7).unwrap() {
            let sol = path.solution(alpha).unwrap();
            assert_eq!(sol.info.method, SolveMethod::BandCholesky);
            let refit = cholesky_refit(&m, alpha, intercept);
            let bound = EPS * l as f64 * cond_shifted(z.view(), alpha, intercept);
            let ew = rel_err(&sol.model.coef, &refit.model.coef);
            // Both solves are backward stable: they agree to O(ε l κ).
            assert!(ew <= 10.0 * bound, "alpha {alpha}: coef {ew:e} > 10 eps l cond = {:e}", 10.0 * bound);
            // The intercept ȳ − Wᵀz̄ inherits W's error times ‖z̄‖ (and is 0
            // without an intercept).
            let norm = |a: &Array1<f64>| a.dot(a).sqrt();
            let db = norm(&(&sol.model.intercept - &refit.model.intercept));
            let zbar = z.mean_axis(Axis(0)).unwrap();
            let w_norm = refit.model.coef.iter().map(|v| v * v).sum::<f64>().sqrt();
            let scale = norm(&refit.model.intercept) + norm(&zbar) * w_norm;
            assert!(db <= 10.0 * bound * scale, "alpha {alpha}: intercept error {db:e} (scale {scale:e})");
            // The condition estimate is a lower bound of the true one.
            assert!(sol.info.condition_estimate <= cond_shifted(z.view(), alpha, intercept) * (1.0 + 1e-9));
        }
    }
}

#[test]
fn alpha_path_falls_back_to_the_pseudo_inverse_on_a_singular_system() {
    // 70 features, the last duplicating the first: A is singular, so
    // α = 0 takes the eigen fallback and gives the minimum-norm solution,
    // while α > 0 stays on the band Cholesky.
    let base = gaussian(300, 69, 62);
    let mut z = Array2::zeros((300, 70));
    z.slice_mut(s![.., 0..69]).assign(&base);
    z.column_mut(69).assign(&base.column(0));
    let y = base.dot(&gaussian(69, 1, 63)) + 0.1 * gaussian(300, 1, 64);
    let m = moments(z.view(), y.view());
    let path = AlphaPath::from_moments(&m, true).unwrap();
    let sol = path.solution(0.0).unwrap();
    assert_eq!(sol.info.method, SolveMethod::Eigen);
    assert_eq!(sol.info.rank, 69);
    let (w, b) = ridge_qr(base.view(), y.view(), 0.0, true);
    let mut expect = Array2::zeros((70, 1));
    expect.slice_mut(s![0..69, ..]).assign(&w);
    expect[[0, 0]] = w[[0, 0]] / 2.0;
    expect[[69, 0]] = w[[0, 0]] / 2.0;
    assert!(rel_err(&sol.model.coef, &expect) < 1e-9, "{}", rel_err(&sol.model.coef, &expect));
    assert!((sol.model.intercept[0] - b[0]).abs() < 1e-9);
    assert_eq!(path.solution(1.0).unwrap().info.method, SolveMethod::BandCholesky);
    // A grid mixing the fallback and band solves scores each α's own model.
    let grid = [0.0, 1.0, 0.0];
    let report = path.select(&m, &grid).unwrap();
    for (i, &alpha) in grid.iter().enumerate() {
        let mse = path.validation_mse(alpha, &m).unwrap()[0];
        assert!((report.mean_mse[i] - mse).abs() <= 1e-10 * mse, "α = {alpha}: {} vs {mse}", report.mean_mse[i]);
    }
    let lambda = path.eigenvalues().unwrap();
    assert!(lambda[0].abs() < 1e-9 * lambda[69] && lambda[1] > 1e-6 * lambda[69]);
}

#[test]
fn alpha_path_from_centred_statistics_equals_path_from_moments() {
    let (z, y, _, _) = planted(200, 5, 2, 0.3, 40);
    let m = moments(z.view(), y.view());
    let a = AlphaPath::new(&m.centered()).unwrap();
    let b = AlphaPath::from_moments(&m, true).unwrap();
    assert_eq!(a.model(0.1).unwrap(), b.model(0.1).unwrap());
    let fc = Ridge::params().with_alpha(0.1).check().unwrap().fit_centered(&m.centered()).unwrap();
    assert!(rel_err(&fc.model.coef, &a.coef(0.1).unwrap()) < 1e-12);
    // Without an intercept, centred statistics are un-centred first.
    let p = Ridge::params().with_alpha(0.1).with_fit_intercept(false).check().unwrap();
    let (u, c) = (p.fit(&m).unwrap().model, p.fit_centered(&m.centered()).unwrap().model);
    assert!(rel_err(&c.coef, &u.coef) < 1e-10);
}

#[test]
fn validation_sse_equals_explicit_residuals() {
    let (z, y, _, _) = planted(300, 6, 2, 0.5, 50);
    let (zt, yt) = (z.slice(s![..200, ..]), y.slice(s![..200, ..]));
    let (zv, yv) = (z.slice(s![200.., ..]), y.slice(s![200.., ..]));
    let (train, val) = (moments(zt, yt), moments(zv, yv));
    for intercept in [true, false] {
        let path = AlphaPath::from_moments(&train, intercept).unwrap();
        for alpha in [0.0, 0.1, 10.0, 1e4] {
            let model = path.model(alpha).unwrap();
            let r = model.predict(zv).unwrap() - yv;
            let explicit = r.mapv(|v| v * v).sum_axis(Axis(0));
            let from_stats = path.validation_sse(alpha, &val).unwrap();
            // Cancellation: the expansion's terms are of size ‖y‖², not SSE.
            let scale = yv.iter().map(|v| v * v).sum::<f64>() + model.intercept.mapv(|b| b * b).sum() * 100.0;
            for t in 0..2 {
                assert!(
                    (from_stats[t] - explicit[t]).abs() <= 1e-12 * scale + 1e-9 * explicit[t],
                    "alpha {alpha} target {t}: {} vs {}",
                    from_stats[t],
                    explicit[t]
                );
            }
            let mse = path.validation_mse(alpha, &val).unwrap();
            assert!((mse[0] - from_stats[0] / 100.0).abs() <= 1e-15 * from_stats[0]);
        }
    }
}

#[test]
fn singular_system_takes_the_requested_fallback() {
    // Column 2 duplicates column 1: with α = 0, A is singular.
    let base = gaussian(150, 3, 60);
    let mut z = Array2::zeros((150, 4));
    z.slice_mut(s![.., 0..3]).assign(&base);
    z.column_mut(3).assign(&base.column(1));
    let y = base.dot(&array![[1.0], [2.0], [-1.0]]) + 0.1 * gaussian(150, 1, 61);
    let m = moments(z.view(), y.view());

    let err = Ridge::params().with_alpha(0.0).with_fallback(Fallback::Error).check().unwrap().fit(&m).unwrap_err();
    assert!(matches!(err, SolveError::NotPositiveDefinite { .. } | SolveError::IllConditioned { .. }), "{err}");

    // The eigen fallback gives the minimum-norm solution: the duplicated
    // column's weight is split evenly.
    let eig = Ridge::params().with_alpha(0.0).check().unwrap().fit(&m).unwrap();
    assert_eq!(eig.info.method, SolveMethod::Eigen);
    assert_eq!(eig.info.rank, 3);
    let (w3, b3) = ridge_qr(base.view(), y.view(), 0.0, true);
    let expect = array![[w3[[0, 0]]], [w3[[1, 0]] / 2.0], [w3[[2, 0]]], [w3[[1, 0]] / 2.0]];
    assert!(rel_err(&eig.model.coef, &expect) < 1e-9, "{} vs {expect}", eig.model.coef);
    assert!((eig.model.intercept[0] - b3[0]).abs() < 1e-9);

    let jit = Ridge::params().with_alpha(0.0).with_fallback(Fallback::Jitter).check().unwrap().fit(&m).unwrap();
    assert!(jit.info.jitter_added > 0.0);
    let (pj, pe) = (jit.model.predict(z.view()).unwrap(), eig.model.predict(z.view()).unwrap());
    assert!(rel_err(&pj, &pe) < 1e-6);
}

#[test]
fn invalid_input_is_an_error() {
    let e = Ridge::params().with_alpha(-1.0).check().unwrap_err();
    assert_eq!(e, SolveError::InvalidAlpha { value: -1.0 });
    assert!(Ridge::params().with_alpha(f64::NAN).check().is_err());
    assert!(matches!(Ridge::params().with_rcond(1.5).check(), Err(SolveError::InvalidParameter { name: "rcond", .. })));
    let mut empty = kapprox_core::Moments::new(3, 1);
    empty.flush();
    assert_eq!(Ridge::params().check().unwrap().fit(&empty).unwrap_err(), SolveError::NoRows);
    assert_eq!(AlphaPath::from_moments(&empty, true).unwrap_err(), SolveError::NoRows);
    let (z, y, _, _) = planted(50, 3, 1, 0.1, 70);
    let model = Ridge::params().check().unwrap().fit(&moments(z.view(), y.view())).unwrap().model;
    let e = model.predict(Array2::zeros((4, 2)).view()).unwrap_err();
    assert_eq!(e, SolveError::DimensionMismatch { what: "feature columns of z", expected: 3, found: 2 });
    assert!(model.predict_into(Array2::zeros((4, 3)).view(), Array2::zeros((5, 1)).view_mut()).is_err());
    assert_eq!(e.to_string(), "feature columns of z: expected 3, found 2");
}

#[test]
fn sparse_prediction_equals_dense_prediction() {
    let (n, l) = (60, 20);
    let z = gaussian(n, l, 80);
    let y = gaussian(n, 2, 81);
    let model = Ridge::params().check().unwrap().fit(&moments(z.view(), y.view())).unwrap().model;
    let mut sp = SparseRows::zeros(n, 4, l);
    for r in 0..n {
        for a in 0..4 {
            sp.indices[[r, a]] = ((r * 7 + a * 5) % l) as u32;
            sp.values[[r, a]] = (r as f64 - a as f64) / 10.0;
        }
    }
    sp.indices[[3, 1]] = sp.indices[[3, 0]]; // duplicates add up
    let dense = model.predict(sp.to_dense().view()).unwrap();
    let sparse = model.predict_sparse(sp.view()).unwrap();
    assert!(rel_err(&sparse, &dense) < 1e-14);
    sp.indices[[0, 0]] = l as u32;
    assert_eq!(model.predict_sparse(sp.view()).unwrap_err(), SolveError::IndexOutOfRange { index: l, n_cols: l });
}

#[test]
fn model_round_trips_through_json() {
    let (z, y, _, _) = planted(40, 3, 2, 0.1, 90);
    let sol = Ridge::params().check().unwrap().fit(&moments(z.view(), y.view())).unwrap();
    let text = serde_json::to_string(&sol).unwrap();
    let back: kapprox_solve::RidgeSolution = serde_json::from_str(&text).unwrap();
    // serde_json's default float parser may be off by one ulp.
    assert!(rel_err(&back.model.coef, &sol.model.coef) < 4.0 * EPS);
    assert!(rel_err(&back.model.intercept, &sol.model.intercept) < 4.0 * EPS);
    assert_eq!(back.info, sol.info);
}
