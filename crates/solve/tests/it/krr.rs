//! Exact kernel ridge against feature-space ridge and its own path.

use crate::util::{gaussian, moments, rel_err};
use kapprox_solve::{ExactKrr, Fallback, Ridge, SolveError, log_grid};
use ndarray::{Array1, Array2, Axis, s};

fn gaussian_kernel(a: &Array2<f64>, b: &Array2<f64>, sigma: f64) -> Array2<f64> {
    Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| {
        let d: f64 = a.row(i).iter().zip(b.row(j)).map(|(x, y)| (x - y) * (x - y)).sum();
        (-d / (2.0 * sigma * sigma)).exp()
    })
}

#[test]
fn linear_kernel_krr_equals_feature_ridge() {
    // K = ZZᵀ: kernel ridge with intercept is ridge on Z with intercept.
    let (n, l) = (120, 8);
    let z = gaussian(n, l, 1) + 0.7;
    let y = z.dot(&gaussian(l, 2, 2)) + gaussian(n, 2, 3) + 4.0;
    let zt = gaussian(30, l, 4);
    let k = z.dot(&z.t());
    let kt = zt.dot(&z.t());
    for intercept in [true, false] {
        for alpha in [0.1, 10.0] {
            let krr = ExactKrr::params().with_alpha(alpha).with_fit_intercept(intercept).check().unwrap();
            let sol = krr.fit(k.view(), y.view()).unwrap();
            let ridge = Ridge::params().with_alpha(alpha).with_fit_intercept(intercept).check().unwrap();
            let m = ridge.fit(&moments(z.view(), y.view())).unwrap().model;
            let e = rel_err(&sol.model.predict(kt.view()).unwrap(), &m.predict(zt.view()).unwrap());
            assert!(e < 1e-9, "intercept {intercept} alpha {alpha}: {e:e}");
            // w = Zᵀc and, with an intercept, 1ᵀc = 0.
            assert!(rel_err(&z.t().dot(&sol.model.dual_coef), &m.coef) < 1e-9);
            if intercept {
                let s = sol.model.dual_coef.sum_axis(Axis(0));
                assert!(s.iter().all(|v| v.abs() < 1e-10 * sol.model.dual_coef.mapv(f64::abs).sum()));
            }
        }
    }
}

#[test]
fn gaussian_kernel_fit_satisfies_the_optimality_conditions() {
    let x = gaussian(200, 3, 10);
    let y = x.column(0).mapv(f64::sin).insert_axis(Axis(1)).to_owned() + 2.0;
    let k = gaussian_kernel(&x, &x, 1.0);
    let alpha = 1e-2;
    let sol = ExactKrr::params().with_alpha(alpha).check().unwrap().fit(k.view(), y.view()).unwrap();
    let c = &sol.model.dual_coef;
    // (K + αI)c + b1 = y and 1ᵀc = 0.
    let r = k.dot(c) + alpha * c + sol.model.intercept[0] - &y;
    let scale = y.mapv(f64::abs).sum();
    assert!(r.iter().all(|v| v.abs() < 1e-9 * scale), "{:e}", r.mapv(f64::abs).sum());
    assert!(c.sum().abs() < 1e-9 * c.mapv(f64::abs).sum());
}

#[test]
fn krr_path_equals_cholesky_fit_at_every_alpha_and_scores_validation() {
    let x = gaussian(150, 2, 20);
    let y = Array2::from_shape_fn((150, 2), |(i, t)| (x[[i, 0]] * (t + 1) as f64).sin() + x[[i, 1]]);
    let (xt, yt) = (x.slice(s![..100, ..]).to_owned(), y.slice(s![..100, ..]));
    let (xv, yv) = (x.slice(s![100.., ..]).to_owned(), y.slice(s![100.., ..]));
    let k = gaussian_kernel(&xt, &xt, 0.8);
    let kv = gaussian_kernel(&xv, &xt, 0.8);
    let alphas = log_grid(1e-3, 1e2, 6).unwrap();
    let path = ExactKrr::params().check().unwrap().path(k.view(), yt).unwrap();
    for &alpha in &alphas {
        let chol = ExactKrr::params()
            .with_alpha(alpha)
            .with_fallback(Fallback::Error)
            .check()
            .unwrap()
            .fit(k.view(), yt)
            .unwrap();
        let p = path.model(alpha).unwrap();
        // cond(K + αI) ≤ (λ_max + α)/α ≤ 1e5 here: eps · n · cond ≈ 2e-9
        // bounds both; measured errors are far smaller.
        assert!(rel_err(&p.dual_coef, &chol.model.dual_coef) < 1e-9, "alpha {alpha}");
        assert!(rel_err(&p.intercept, &chol.model.intercept) < 1e-9);
        let mse = path.validation_mse(alpha, kv.view(), yv).unwrap();
        let explicit = (chol.model.predict(kv.view()).unwrap() - yv).mapv(|v| v * v).mean_axis(Axis(0)).unwrap();
        assert!(rel_err(&mse, &explicit) < 1e-9);
    }
    let report = path.select(kv.view(), yv, &alphas).unwrap();
    let best = report.mean_mse.iter().cloned().fold(f64::INFINITY, f64::min);
    assert_eq!(report.best_mse(), best);
    assert!(report.best_index < alphas.len() - 1, "a smooth target should prefer less than α = 100");
}

#[test]
fn krr_refuses_too_many_rows_and_bad_shapes() {
    let k = Array2::<f64>::eye(10);
    let y = Array2::<f64>::zeros((10, 1));
    let p = ExactKrr::params().with_max_rows(5).check().unwrap();
    let e = p.fit(k.view(), y.view()).unwrap_err();
    assert_eq!(e, SolveError::TooManyRows { n_rows: 10, max_rows: 5 });
    assert_eq!(
        SolveError::TooManyRows { n_rows: 20_000, max_rows: 10_000 }.to_string(),
        "20000 rows exceed max_rows 10000: exact kernel ridge holds n^2 doubles (3.0 GiB for the kernel matrix alone)"
    );
    assert!(p.path(k.view(), y.view()).is_err());
    let ok = ExactKrr::params().check().unwrap();
    assert!(matches!(ok.fit(k.view(), Array2::zeros((9, 1)).view()), Err(SolveError::DimensionMismatch { .. })));
    assert!(ExactKrr::params().with_max_rows(0).check().is_err());
    let model = ok.fit(k.view(), y.view()).unwrap().model;
    assert!(model.predict(Array2::zeros((3, 9)).view()).is_err());
    assert_eq!(model.intercept, Array1::<f64>::zeros(1));
}
