//! Statistical properties of the range sketches: `E[ΘΘᵀ] = I` (approximate
//! matrix products) and subspace embedding (the range finder captures the
//! dominant subspace of a matrix with a decaying spectrum).
//!
//! Tolerances come from the theory quoted at each test; seeds are fixed.

use kapprox_core::{Domain, Moments, dense, rng};
use kapprox_sketch::{RangeSketch, Sketch, SketchKind, gram_range_finder, range_finder, test_matrix};
use ndarray::{Array1, Array2, Axis, s};
use rand::Rng;
use rand_distr::StandardNormal;

const KINDS: [SketchKind; 3] = [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch];

fn gaussian(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut a = Array2::zeros((n, d));
    for (i, mut row) in a.rows_mut().into_iter().enumerate() {
        let mut g = rng::stream(seed, Domain::FEATURE_MAP_AUX, i as u64);
        row.iter_mut().for_each(|v| *v = g.sample(StandardNormal));
    }
    a
}

fn fro(a: &Array2<f64>) -> f64 {
    a.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn sketch(kind: SketchKind, rows: &Array2<f64>, l: usize, seed: u64) -> Array2<f64> {
    let mut sk = Sketch::new(kind, rows.ncols(), l, seed).unwrap();
    // Chunks that straddle SRHT and GEMM blocks.
    for c in (0..rows.nrows()).step_by(700) {
        let e = (c + 700).min(rows.nrows());
        sk.update(rows.slice(s![c..e, ..]), 10_000 + c as u64).unwrap();
    }
    sk.finish()
}

/// `(FᵀΘ)(GᵀΘ)ᵀ = FᵀΘΘᵀG` estimates `FᵀG` when `E[ΘΘᵀ] = I`. For a
/// Gaussian `Θ` with `N(0, 1/l)` entries the squared Frobenius error has
/// expectation `(‖F‖²‖G‖² + ‖FᵀG‖²)/l` (Frobenius norms); CountSketch has
/// the same bound minus a non-negative term (Clarkson & Woodruff 2013), and
/// SRHT within a block samples without replacement after an orthogonal
/// mixing, which does not increase it. Markov's inequality on the squared
/// error: a fixed seed exceeds 3× the rms with probability ≤ 1/9.
#[test]
fn sketched_products_are_unbiased_with_error_shrinking_as_one_over_sqrt_l() {
    let n = 4096;
    let f = gaussian(n, 6, 1);
    // G shares three directions with F, so FᵀG is far from zero.
    let g = &f.slice(s![.., 0..3]) + &(gaussian(n, 3, 2) * 0.5);
    let exact = f.t().dot(&g);
    let rms = |l: usize| ((fro(&f).powi(2) * fro(&g).powi(2) + fro(&exact).powi(2)) / l as f64).sqrt();
    for kind in KINDS {
        let mut errs = Vec::new();
        for l in [16, 256] {
            let est = sketch(kind, &f, l, 7).dot(&sketch(kind, &g, l, 7).t());
            let err = fro(&(&est - &exact));
            eprintln!("{kind:>12} l = {l:>3}: error {err:.1}, predicted rms {:.1}", rms(l));
            assert!(err < 3.0 * rms(l), "{kind} l = {l}: {err} vs rms {}", rms(l));
            errs.push(err);
        }
        // Theory: ratio 4 = √(256/16). A sketch whose error does not shrink
        // with l (e.g. one that ignores l) fails here.
        assert!(errs[1] < errs[0] / 2.0, "{kind}: {errs:?}");
        // Unbiased: the mean of S independent estimates has rms error rms/√S.
        let trials = 30;
        let mut mean = Array2::<f64>::zeros(exact.raw_dim());
        for seed in 0..trials {
            mean += &sketch(kind, &f, 16, 100 + seed).dot(&sketch(kind, &g, 16, 100 + seed).t());
        }
        mean /= trials as f64;
        let err = fro(&(&mean - &exact));
        let bound = 3.0 * rms(16) / (trials as f64).sqrt();
        eprintln!("{kind:>12} mean of {trials} at l = 16: error {err:.1}, bound {bound:.1}");
        assert!(err < bound, "{kind}: mean error {err} vs {bound}");
    }
}

/// The scale: `E‖FᵀΘ‖²_F = tr(Fᵀ E[ΘΘᵀ] F) = ‖F‖²_F`. For a Gaussian `Θ`
/// the variance is `2‖FᵀF‖²_F / l` (the others do not exceed it by much:
/// CountSketch subtracts a term, SRHT samples without replacement), so the
/// mean over `S` seeds is within 4 standard deviations
/// `√(2/l)·‖FᵀF‖_F / (‖F‖²_F √S)` (≈ 1.3% here) of 1. A sketch off by a
/// constant factor of a few percent fails.
#[test]
fn sketched_squared_norm_is_unbiased() {
    let (n, d, l, trials) = (4096, 6, 64, 30);
    let f = gaussian(n, d, 5);
    let fro2 = fro(&f).powi(2);
    let sd = (2.0 / l as f64).sqrt() * fro(&f.t().dot(&f)) / fro2 / (trials as f64).sqrt();
    for kind in KINDS {
        let mean = (0..trials).map(|seed| fro(&sketch(kind, &f, l, 500 + seed)).powi(2)).sum::<f64>() / trials as f64;
        let ratio = mean / fro2;
        eprintln!("{kind:>12}: mean ‖FᵀΘ‖² / ‖F‖² = {ratio:.4} (sd {sd:.4})");
        assert!((ratio - 1.0).abs() < 4.0 * sd, "{kind}: {ratio} (sd {sd})");
    }
}

/// `‖A‖₂` for a matrix, from the symmetric eigendecomposition of `AᵀA`.
fn spectral_norm(a: &Array2<f64>) -> f64 {
    let (lambda, _) = dense::eigh(a.t().dot(a).view());
    lambda.iter().fold(0.0f64, |m, v| m.max(*v)).sqrt()
}

/// `F = U diag(σ) Vᵀ (3000, 60)` with `σ_j = 2^{-j}`, its Gram, and
/// `(k, l) = (10, 15)`: returns `(k, l, F, FᵀF, σ)`.
fn decaying() -> (usize, usize, Array2<f64>, Array2<f64>, Array1<f64>) {
    let (n, d, k, p) = (3000, 60, 10, 5);
    let u = dense::qr_thin_q(gaussian(n, d, 3).view());
    let v = dense::qr_thin_q(gaussian(d, d, 4).view());
    let sigma = Array1::from_shape_fn(d, |j| 0.5f64.powi(j as i32));
    let f = (&u * &sigma.view().insert_axis(Axis(0))).dot(&v.t());
    let mut m = Moments::new(d, 0);
    m.update(f.view(), Array2::zeros((n, 0)).view());
    m.flush();
    // The exact singular values, as a check on the construction.
    assert!((spectral_norm(&f) - 1.0).abs() < 1e-12);
    (k, k + p, f, m.zz(), sigma)
}

/// The range finder on `F = U diag(σ) Vᵀ` with `σ_j = 2^{-j}`: with `l = k +
/// p` sketch columns (`k = 10`, `p = 5`), Halko, Martinsson & Tropp (2011,
/// Thm 10.8, probability ≥ 1 − 6e^{-p} for Gaussian Θ) bound
/// `‖F − FQQᵀ‖₂ ≤ [1 + 17√(1 + k/p)] σ_{k+1} + 8√(k+p)/(p+1) ‖σ_{>k}‖₂ ≈ 36 σ_{k+1}`
/// for `q = 0`, and the power scheme (Cor. 10.10) takes the
/// `(2q+1)`-th root of the factor: `≈ 3.3 σ_{k+1}` for `q = 1`. The
/// optimal rank-`l` error is `σ_{l+1}`; a basis that misses the dominant
/// subspace has error near `σ_1 = 1`.
#[test]
fn range_finder_captures_the_dominant_subspace() {
    let (k, l, f, gram, sigma) = decaying();
    let sigma_k1 = sigma[k];
    let optimal = sigma[l];
    for kind in KINDS {
        let y = sketch(kind, &f, l, 9);
        for (q, factor) in [(0usize, 36.0), (1, 3.3)] {
            let basis = range_finder(gram.view(), y.view(), q).unwrap();
            let err = spectral_norm(&(&f - &f.dot(&basis).dot(&basis.t())));
            eprintln!(
                "{kind:>12} q = {q}: ‖F − FQQᵀ‖ = {err:.3e} = {:.2} σ_(l+1) = {:.3} σ_(k+1)",
                err / optimal,
                err / sigma_k1
            );
            assert!(err >= optimal * (1.0 - 1e-9), "{kind}: below the optimal error?");
            assert!(err <= factor * sigma_k1, "{kind} q = {q}: {err} vs {}", factor * sigma_k1);
        }
    }
}

/// The range finder from the Gram alone, `Q = orth((FᵀF)^(q+1) Ω)`, on the
/// same `F`. With `M = FᵀF` and `P = I − QQᵀ`, `‖F − FQQᵀ‖² = ‖P M^½‖²`,
/// and Halko et al. (2011, Prop. 8.6, whose proof by the Hölder–McCarthy
/// inequality holds for any real power ≥ 1) give
/// `‖P M^½‖ ≤ ‖P M^(q+1)‖^(1/(2q+2))`. Thm 10.8 on `M^(q+1)` (singular
/// values `σ_j^(2q+2)`, Gaussian `Ω`, `l = k + p`) bounds
/// `‖P M^(q+1)‖ ≤ 36 σ_(k+1)^(2q+2)` as above, so
/// `‖F − FQQᵀ‖ ≤ 36^(1/(2q+2)) σ_(k+1)`: `6 σ_(k+1)` for `q = 0`,
/// `2.45 σ_(k+1)` for `q = 1` — tighter than the row sketch's, being half
/// a power step further. SRHT and CountSketch `Ω` are held to the same
/// factors, as above.
#[test]
fn gram_range_finder_captures_the_dominant_subspace() {
    let (k, l, f, gram, sigma) = decaying();
    let (sigma_k1, optimal) = (sigma[k], sigma[l]);
    for kind in KINDS {
        for (q, factor) in [(0usize, 6.0), (1, 2.45)] {
            let basis = gram_range_finder(gram.view(), kind, l, 9, q).unwrap();
            let err = spectral_norm(&(&f - &f.dot(&basis).dot(&basis.t())));
            eprintln!(
                "{kind:>12} (FᵀF)^{} Ω: ‖F − FQQᵀ‖ = {err:.3e} = {:.2} σ_(l+1) = {:.3} σ_(k+1)",
                q + 1,
                err / optimal,
                err / sigma_k1
            );
            assert!(err >= optimal * (1.0 - 1e-9), "{kind}: below the optimal error?");
            assert!(err <= factor * sigma_k1, "{kind} q = {q}: {err} vs {}", factor * sigma_k1);
        }
    }
}

/// The start the Gaussian kind uses with a power step, a sparse sign `Ω`
/// (8 entries per row), against a Gaussian `Ω` on a slowly decaying
/// spectrum (`σ_j = 1/(j+1)`, where the start matters most: the power step
/// gains only a factor `σ_(l+1)/σ_k` per iteration). Martinsson & Tropp
/// (2020, §9.2) report sparse sign test matrices as accurate as Gaussian
/// ones; over 20 seeds the mean error `‖F − FQQᵀ‖` at `q = 1` must be
/// within 10 % of the Gaussian start's. The same metric separates `q = 0`
/// from `q = 1` (more than 10 % apart), so a start that loses the
/// dominant directions would show.
#[test]
fn a_sparse_sign_start_is_as_good_as_a_gaussian_one_with_a_power_step() {
    let (n, d, l) = (2000, 200, 20);
    let u = dense::qr_thin_q(gaussian(n, d, 5).view());
    let v = dense::qr_thin_q(gaussian(d, d, 6).view());
    let sigma = Array1::from_shape_fn(d, |j| 1.0 / (j + 1) as f64);
    let f = (&u * &sigma.view().insert_axis(Axis(0))).dot(&v.t());
    let gram = f.t().dot(&f);
    let error = |q: &Array2<f64>| spectral_norm(&(&f - &f.dot(q).dot(&q.t())));
    let (mut sparse, mut gauss, mut gauss_q0) = (0.0, 0.0, 0.0);
    for seed in 0..20 {
        sparse += error(&gram_range_finder(gram.view(), SketchKind::Gaussian, l, seed, 1).unwrap());
        let start = gram.dot(&test_matrix(SketchKind::Gaussian, d, l, seed).unwrap());
        gauss += error(&range_finder(gram.view(), start.view(), 1).unwrap());
        gauss_q0 += error(&gram_range_finder(gram.view(), SketchKind::Gaussian, l, seed, 0).unwrap());
    }
    eprintln!(
        "mean ‖F − FQQᵀ‖ / σ_(l+1): sparse start q = 1 {:.3}, Gaussian start q = 1 {:.3}, q = 0 {:.3}",
        sparse / 20.0 / sigma[l],
        gauss / 20.0 / sigma[l],
        gauss_q0 / 20.0 / sigma[l]
    );
    assert!(sparse <= 1.1 * gauss, "sparse start {sparse} against Gaussian {gauss}");
    assert!(gauss_q0 > 1.1 * gauss, "q = 0 {gauss_q0} not apart from q = 1 {gauss}");
}
