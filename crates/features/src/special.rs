//! Special functions: Γ, the modified Bessel function K_ν, the regularised
//! incomplete gamma function and the quantiles of the normal and χ²
//! distributions.
//!
//! Hand-written because the exact Matérn kernel needs K_ν for any real ν and
//! quasi-Monte Carlo features need inverse CDFs, and no pure-Rust crate in
//! the workspace provides them. Each is a textbook method, cited at the
//! function, and tested against independent evaluations.

// Published coefficients are kept digit for digit (they round to the
// intended doubles), so they can be checked against their sources.
#![allow(clippy::excessive_precision)]

use std::f64::consts::PI;

const EPS: f64 = 1e-16;
const MAX_ITER: usize = 10_000;

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: relative error ~1e-15).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const P: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = P[0];
    for (i, &p) in P.iter().enumerate().skip(1) {
        a += p / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// 1/Γ(1+μ) and 1/Γ(1−μ) and Temme's γ₁ = (1/Γ(1−μ) − 1/Γ(1+μ))/(2μ),
/// γ₂ = (1/Γ(1−μ) + 1/Γ(1+μ))/2, for |μ| ≤ 1/2, from the Taylor series of
/// 1/Γ (Abramowitz & Stegun 6.1.34), which has no cancellation at μ → 0.
fn temme_gammas(mu: f64) -> (f64, f64, f64, f64) {
    // 1/Γ(z) = Σ_{k≥1} c_k z^k.
    const C: [f64; 26] = [
        1.0,
        0.577_215_664_901_532_9,
        -0.655_878_071_520_253_8,
        -0.042_002_635_034_095_2,
        0.166_538_611_382_291_5,
        -0.042_197_734_555_544_3,
        -0.009_621_971_527_877_0,
        0.007_218_943_246_663_0,
        -0.001_165_167_591_859_1,
        -0.000_215_241_674_114_9,
        0.000_128_050_282_388_2,
        -0.000_020_134_854_780_7,
        -0.000_001_250_493_482_1,
        0.000_001_133_027_232_0,
        -0.000_000_205_633_841_7,
        0.000_000_006_116_095_0,
        0.000_000_005_002_007_5,
        -0.000_000_001_181_274_6,
        0.000_000_000_104_342_7,
        0.000_000_000_007_782_3,
        -0.000_000_000_003_696_8,
        0.000_000_000_000_510_0,
        -0.000_000_000_000_020_6,
        -0.000_000_000_000_005_4,
        0.000_000_000_000_001_4,
        0.000_000_000_000_000_1,
    ];
    // 1/Γ(1+μ) = Σ c_k μ^{k−1}; split into even and odd powers of μ.
    let m2 = mu * mu;
    let (mut even, mut odd) = (0.0, 0.0);
    // even = Σ c_{2i+1} μ^{2i}, odd = Σ c_{2i+2} μ^{2i} (Horner from the top).
    for i in (0..13).rev() {
        even = even * m2 + C[2 * i];
        odd = odd * m2 + C[2 * i + 1];
    }
    let gampl = even + mu * odd;
    let gammi = even - mu * odd;
    (-odd, even, gampl, gammi)
}

/// The modified Bessel function of the second kind `K_ν(x)`, `ν ≥ 0`,
/// `x > 0`, by Temme's method (Numerical Recipes §6.7 `bessik`): a series
/// for `x < 2` or Steed's continued fraction CF2 otherwise gives `K_μ` and
/// `K_{μ+1}` for `|μ| ≤ 1/2`, and forward recurrence (stable for `K`)
/// reaches `ν`. Relative error ~1e-15.
pub(crate) fn bessel_k(nu: f64, x: f64) -> f64 {
    debug_assert!(nu >= 0.0 && x > 0.0);
    let nl = (nu + 0.5).floor();
    let mu = nu - nl;
    let mu2 = mu * mu;
    let xi = 1.0 / x;
    let xi2 = 2.0 * xi;
    let (mut k_mu, mut k_mu1);
    if x < 2.0 {
        let x2 = 0.5 * x;
        let pimu = PI * mu;
        let fact = if pimu.abs() < EPS { 1.0 } else { pimu / pimu.sin() };
        let d = -x2.ln();
        let e = mu * d;
        let fact2 = if e.abs() < EPS { 1.0 } else { e.sinh() / e };
        let (gam1, gam2, gampl, gammi) = temme_gammas(mu);
        let mut ff = fact * (gam1 * e.cosh() + gam2 * fact2 * d);
        let mut sum = ff;
        let ee = e.exp();
        let mut p = 0.5 * ee / gampl;
        let mut q = 0.5 / (ee * gammi);
        let mut c = 1.0;
        let dd = x2 * x2;
        let mut sum1 = p;
        for i in 1..MAX_ITER {
            let fi = i as f64;
            ff = (fi * ff + p + q) / (fi * fi - mu2);
            c *= dd / fi;
            p /= fi - mu;
            q /= fi + mu;
            let del = c * ff;
            sum += del;
            sum1 += c * (p - fi * ff);
            if del.abs() < sum.abs() * EPS {
                break;
            }
        }
        k_mu = sum;
        k_mu1 = sum1 * xi2;
    } else {
        let mut b = 2.0 * (1.0 + x);
        let mut d = 1.0 / b;
        let mut delh = d;
        let mut h = d;
        let (mut q1, mut q2) = (0.0, 1.0);
        let a1 = 0.25 - mu2;
        let mut q = a1;
        let mut c = a1;
        let mut a = -a1;
        let mut s = 1.0 + q * delh;
        for i in 2..MAX_ITER {
            let fi = i as f64;
            a -= 2.0 * (fi - 1.0);
            c = -a * c / fi;
            let qnew = (q1 - b * q2) / a;
            q1 = q2;
            q2 = qnew;
            q += c * qnew;
            b += 2.0;
            d = 1.0 / (b + a * d);
            delh *= b * d - 1.0;
            h += delh;
            let dels = q * delh;
            s += dels;
            if (dels / s).abs() < EPS {
                break;
            }
        }
        h *= a1;
        k_mu = (PI / (2.0 * x)).sqrt() * (-x).exp() / s;
        k_mu1 = k_mu * (mu + x + 0.5 - h) * xi;
    }
    for i in 1..=(nl as usize) {
        let next = (mu + i as f64) * xi2 * k_mu1 + k_mu;
        k_mu = k_mu1;
        k_mu1 = next;
    }
    k_mu
}

/// The regularised lower incomplete gamma function `P(a, x)`, `a > 0`,
/// `x ≥ 0` (series for `x < a + 1`, Lentz's continued fraction for `Q`
/// otherwise; Numerical Recipes §6.2).
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x < a + 1.0 { gamma_series(a, x) } else { 1.0 - gamma_cf(a, x) }
}

/// The regularised upper incomplete gamma function `Q(a, x) = 1 − P(a, x)`.
pub(crate) fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x < a + 1.0 { 1.0 - gamma_series(a, x) } else { gamma_cf(a, x) }
}

fn gamma_prefactor(a: f64, x: f64) -> f64 {
    (-x + a * x.ln() - ln_gamma(a)).exp()
}

fn gamma_series(a: f64, x: f64) -> f64 {
    let mut ap = a;
    let mut del = 1.0 / a;
    let mut sum = del;
    for _ in 0..MAX_ITER {
        ap += 1.0;
        del *= x / ap;
        sum += del;
        if del.abs() < sum.abs() * EPS {
            break;
        }
    }
    sum * gamma_prefactor(a, x)
}

fn gamma_cf(a: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..MAX_ITER {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    gamma_prefactor(a, x) * h
}

/// The inverse of `x ↦ P(a, x)`: the `p`-quantile of Gamma(a, 1), by
/// Halley's method from the starting points of Numerical Recipes (3rd ed.,
/// `invgammp`).
pub(crate) fn inv_gamma_p(a: f64, p: f64) -> f64 {
    debug_assert!(a > 0.0);
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let gln = ln_gamma(a);
    let a1 = a - 1.0;
    let lna1 = if a > 1.0 { a1.ln() } else { 0.0 };
    let afac = if a > 1.0 { (a1 * (lna1 - 1.0) - gln).exp() } else { 0.0 };
    let mut x = if a > 1.0 {
        let pp = if p < 0.5 { p } else { 1.0 - p };
        let t = (-2.0 * pp.ln()).sqrt();
        let mut z = (2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t;
        if p < 0.5 {
            z = -z;
        }
        (a * (1.0 - 1.0 / (9.0 * a) - z / (3.0 * a.sqrt())).powi(3)).max(1e-3)
    } else {
        let t = 1.0 - a * (0.253 + a * 0.12);
        if p < t { (p / t).powf(1.0 / a) } else { 1.0 - (1.0 - (p - t) / (1.0 - t)).ln() }
    };
    for _ in 0..100 {
        if x <= 0.0 {
            return 0.0;
        }
        // Near p → 1 the difference of P is cancellation-prone; use Q.
        let err = if p < 0.5 { gamma_p(a, x) - p } else { (1.0 - p) - gamma_q(a, x) };
        let t = if a > 1.0 { afac * (-(x - a1) + a1 * (x.ln() - lna1)).exp() } else { (-x + a1 * x.ln() - gln).exp() };
        if t == 0.0 {
            break;
        }
        let u = err / t;
        let step = u / (1.0 - 0.5 * (u * (a1 / x - 1.0)).min(1.0));
        x -= step;
        if x <= 0.0 {
            x = 0.5 * (x + step);
        }
        if step.abs() < 1e-15 * x {
            break;
        }
    }
    x
}

/// The standard normal CDF Φ(x) = erfc(−x/√2)/2, with erfc from `Q(1/2, ·)`.
#[cfg(test)]
fn norm_cdf(x: f64) -> f64 {
    let q = 0.5 * gamma_q(0.5, 0.5 * x * x);
    if x < 0.0 { q } else { 1.0 - q }
}

/// The standard normal quantile Φ⁻¹(p), `0 < p < 1`: Acklam's rational
/// approximation (relative error 1.2e-9) refined by one Halley step on
/// Φ, which brings it to ~1e-15.
pub(crate) fn norm_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    const P_LOW: f64 = 0.024_25;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let x = if p < P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    // Halley refinement; the error is taken in the tail that has precision.
    let tail = 0.5 * gamma_q(0.5, 0.5 * x * x);
    let e = if x < 0.0 { tail - p } else { (1.0 - p) - tail };
    let u = e * (2.0 * PI).sqrt() * (0.5 * x * x).exp();
    x - u / (1.0 + 0.5 * x * u)
}

/// The `p`-quantile of χ²(k), `k > 0`.
pub(crate) fn chi2_quantile(k: f64, p: f64) -> f64 {
    2.0 * inv_gamma_p(0.5 * k, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn gamma_matches_known_values() {
        assert!(rel(ln_gamma(0.5).exp(), PI.sqrt()) < 1e-14);
        assert!(rel(ln_gamma(1.5).exp(), 0.5 * PI.sqrt()) < 1e-14);
        assert!(rel(ln_gamma(5.0).exp(), 24.0) < 1e-14);
        assert!(ln_gamma(1.0).abs() < 1e-15 && ln_gamma(2.0).abs() < 1e-15);
        assert!(rel(ln_gamma(0.1).exp(), 9.513_507_698_668_732) < 1e-14);
        assert!(rel(ln_gamma(100.0), 359.134_205_369_575_4) < 1e-14);
    }

    #[test]
    fn temme_series_agrees_with_lanczos() {
        for &mu in &[-0.5, -0.3, -0.01, 1e-9, 0.2, 0.5] {
            let (gam1, gam2, gampl, gammi) = temme_gammas(mu);
            let want_pl = (-ln_gamma(1.0 + mu)).exp();
            let want_mi = (-ln_gamma(1.0 - mu)).exp();
            assert!(rel(gampl, want_pl) < 1e-14, "mu={mu}");
            assert!(rel(gammi, want_mi) < 1e-14, "mu={mu}");
            assert!(rel(gam2, 0.5 * (want_mi + want_pl)) < 1e-14, "mu={mu}");
            if mu.abs() > 0.1 {
                assert!(rel(gam1, (want_mi - want_pl) / (2.0 * mu)) < 1e-13, "mu={mu}");
            }
        }
        // γ₁(0) = −Euler's constant.
        assert!(rel(temme_gammas(0.0).0, -0.577_215_664_901_532_9) < 1e-15);
    }

    /// K_ν(x) = ∫_0^∞ exp(−x cosh t) cosh(νt) dt, by the trapezoid rule
    /// (exponentially accurate for this smooth, doubly-exponentially
    /// decaying integrand).
    fn bessel_k_quadrature(nu: f64, x: f64) -> f64 {
        let h: f64 = 1e-3;
        let mut sum = 0.5 * (-x).exp();
        let mut t = h;
        loop {
            let f = (-x * t.cosh() + nu * t).exp() * 0.5 * (1.0 + (-2.0 * nu * t).exp());
            sum += f;
            if f < 1e-300 || t > 50.0 {
                break;
            }
            t += h;
        }
        sum * h
    }

    #[test]
    fn bessel_k_matches_known_values() {
        let known = [
            (0.0, 1.0, 0.421_024_438_240_708_33),
            (1.0, 1.0, 0.601_907_230_197_234_6),
            (0.0, 0.1, 2.427_069_024_702_016_6),
            (0.0, 10.0, 1.778_006_231_616_917e-5),
            (1.0, 10.0, 1.864_877_345_382_558e-5),
            (2.0, 2.0, 0.253_759_754_566_055_9),
        ];
        for (nu, x, want) in known {
            assert!(rel(bessel_k(nu, x), want) < 1e-13, "K_{nu}({x}) = {} vs {want}", bessel_k(nu, x));
        }
        // Half-integer orders have closed forms.
        for &x in &[0.01, 0.5, 1.9, 2.1, 7.0, 40.0] {
            let k12 = (PI / (2.0 * x)).sqrt() * (-x).exp();
            assert!(rel(bessel_k(0.5, x), k12) < 1e-14, "K_1/2({x})");
            assert!(rel(bessel_k(1.5, x), k12 * (1.0 + 1.0 / x)) < 1e-14, "K_3/2({x})");
            assert!(rel(bessel_k(2.5, x), k12 * (1.0 + 3.0 / x + 3.0 / (x * x))) < 1e-14, "K_5/2({x})");
        }
    }

    #[test]
    fn bessel_k_matches_its_integral_for_any_order() {
        for &nu in &[0.1, 0.3, 0.75, 1.2, 2.9, 4.4, 7.3] {
            for &x in &[0.05, 0.7, 1.99, 2.0, 3.5, 12.0] {
                let (got, want) = (bessel_k(nu, x), bessel_k_quadrature(nu, x));
                assert!(rel(got, want) < 1e-12, "K_{nu}({x}) = {got} vs {want}");
            }
        }
    }

    #[test]
    fn incomplete_gamma_and_its_inverse() {
        // P(1, x) = 1 − e^{−x}; P(1/2, x) = erf(√x).
        for &x in &[0.01, 0.5, 1.0, 3.0, 20.0] {
            assert!((gamma_p(1.0, x) - (1.0 - (-x).exp())).abs() < 1e-15);
        }
        assert!((gamma_p(0.5, 1.0) - 0.842_700_792_949_714_9).abs() < 1e-15);
        for &a in &[0.3, 0.5, 1.0, 2.5, 10.0, 300.0] {
            for &p in &[1e-10, 1e-4, 0.1, 0.5, 0.9, 0.999_999] {
                let x = inv_gamma_p(a, p);
                let back = gamma_p(a, x);
                assert!((back - p).abs() < 1e-12 * p.max(1e-3), "a={a} p={p}: P({x}) = {back}");
            }
        }
        // χ²(1) median and χ²(2) 95% point.
        assert!(rel(chi2_quantile(1.0, 0.5), 0.454_936_423_119_572_7) < 1e-12);
        assert!(rel(chi2_quantile(2.0, 0.95), -2.0 * 0.05f64.ln()) < 1e-12);
    }

    #[test]
    fn normal_quantile_inverts_the_cdf() {
        assert!(norm_quantile(0.5).abs() < 1e-15);
        assert!(rel(norm_quantile(0.975), 1.959_963_984_540_054) < 1e-14);
        assert!(rel(norm_quantile(1e-10), -6.361_340_902_404_056) < 1e-13);
        for i in 1..1000 {
            let p = i as f64 / 1000.0;
            let x = norm_quantile(p);
            assert!((norm_cdf(x) - p).abs() < 1e-15, "p={p}");
        }
        assert!(rel(norm_cdf(-3.0), 1.349_898_031_630_094_5e-3) < 1e-13);
    }
}
