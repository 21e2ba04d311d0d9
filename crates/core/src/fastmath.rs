//! `sin`/`cos` over slices, the inner loop of every Fourier feature map, and
//! `exp` over slices, the inner loop of every kernel block (Nyström, exact
//! kernel ridge, kernel error).
//!
//! Random Fourier features spend most of their time in `l` cosines per row
//! (RFF with `l = 1000` on 581k rows needs 5.8e8 of them), and libm's scalar
//! `cos` does not vectorise. So this module is hand-written on purpose: a
//! branch-free Cody–Waite range reduction and the fdlibm minimax polynomials,
//! written so that the compiler vectorises them, compiled three times
//! (AVX-512, AVX2+FMA, baseline) and picked at run time, since kapprox is not
//! built with `target-cpu=native`.
//!
//! Accuracy: absolute error within 2.3e-16 of libm for `|x| ≤ 1e6` (the
//! tests measure it over every magnitude); beyond that, and for non-finite inputs, each block of 256
//! elements that contains such a value falls back to libm, which is exact
//! for any argument.
//!
//! `exp` ([`exp_in_place`], [`exp_into`], and [`expm1_in_place`] from the
//! same polynomial): a Cody–Waite reduction
//! `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2`, the Taylor polynomial of degree 13
//! (its truncation error is below 5e-18; the tail evaluated in Estrin's
//! scheme), and the scaling by `2ⁿ` in two
//! exact halves so that subnormal results round once. Measured error: at
//! most 1 ulp against libm over the whole range `[−745.2, 709.8]` (the
//! tests check every magnitude and the subnormal range); `exp(+∞) = +∞`,
//! `exp(−∞) = 0`, `exp(NaN) = NaN`, overflow gives `+∞` and underflow `0`.
//! No branches, no table: it vectorises like sin/cos, and it uses no fused
//! multiply-add, so every instruction set gives the same bits.
//!
//! The `*_f32` functions compute in `f64` internally (the reduction and the
//! polynomials are the same) and round once at the end, so they are
//! correctly rounded up to one ulp of `f32`.

// The constants below are fdlibm's published decimal values, kept digit for
// digit so they can be checked against the source; they round to the
// intended doubles.
#![allow(clippy::excessive_precision)]

/// Arguments with `|x|` above this use libm (the three-part reduction below
/// is exact for quotients `|x|·2/π < 2^20`).
const LIMIT: f64 = 1.0e6;

/// Elements per block for the large-argument check.
const BLOCK: usize = 256;

/// `1.5·2^52`: adding it rounds to the nearest integer and leaves that
/// integer (mod 2^51) in the low mantissa bits.
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

// π/2 as the sum of two 33-bit parts and a full-precision tail (fdlibm's
// pio2_1, pio2_2, pio2_2t): n·PIO2_1 and n·PIO2_2 are exact for n < 2^20.
const PIO2_1: f64 = 1.570_796_326_734_125_614_17e+00;
const PIO2_2: f64 = 6.077_100_506_303_965_976_6e-11;
const PIO2_2T: f64 = 2.022_266_248_795_950_631_54e-21;

// fdlibm's minimax coefficients on [-π/4, π/4] (__kernel_sin, __kernel_cos),
// both with error below 2^-58.
const S1: f64 = -1.666_666_666_666_663_243_48e-01;
const S2: f64 = 8.333_333_333_322_489_461_24e-03;
const S3: f64 = -1.984_126_982_985_794_931_34e-04;
const S4: f64 = 2.755_731_370_707_006_767_89e-06;
const S5: f64 = -2.505_076_025_340_686_341_95e-08;
const S6: f64 = 1.589_690_995_211_550_102_21e-10;
const C1: f64 = 4.166_666_666_666_660_190_37e-02;
const C2: f64 = -1.388_888_888_887_410_957_49e-03;
const C3: f64 = 2.480_158_728_947_672_941_78e-05;
const C4: f64 = -2.755_731_435_139_066_330_35e-07;
const C5: f64 = 2.087_572_321_298_174_827_90e-09;
const C6: f64 = -1.135_964_755_778_819_482_65e-11;

/// `(sin x, cos x)` without branches, for `|x| ≤ LIMIT`.
#[inline(always)]
fn sincos_kernel(x: f64) -> (f64, f64) {
    let t = x * std::f64::consts::FRAC_2_PI + ROUND_MAGIC;
    let q = t.to_bits();
    let n = t - ROUND_MAGIC;
    let r = ((x - n * PIO2_1) - n * PIO2_2) - n * PIO2_2T;
    let z = r * r;
    let ps = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
    let pc = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
    // Quadrant q = n mod 4: sin x = (s, c, -s, -c)[q], cos x = (c, -s, -c, s)[q].
    let odd = q & 1 == 1;
    let (s, c) = if odd { (pc, ps) } else { (ps, pc) };
    let sin_neg = (q & 2) << 62;
    let cos_neg = (q.wrapping_add(1) & 2) << 62;
    (f64::from_bits(s.to_bits() ^ sin_neg), f64::from_bits(c.to_bits() ^ cos_neg))
}

#[inline(always)]
fn cos_kernel(x: f64) -> f64 {
    sincos_kernel(x).1
}

#[inline(always)]
fn sin_kernel(x: f64) -> f64 {
    sincos_kernel(x).0
}

/// Inputs above this overflow (`exp(709.79) > f64::MAX`); clamping keeps
/// `2ⁿ` constructible while the result still overflows to `+∞`.
const EXP_HI: f64 = 710.0;
/// Inputs below this underflow to 0 (`exp(−745.14)` is below half the
/// smallest subnormal).
const EXP_LO: f64 = -746.0;
/// ln 2 in two parts (fdlibm's ln2HI, ln2LO): `n·LN2_HI` is exact for
/// `|n| < 2^11`.
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
// 1/k! for k = 2..=13.
const E2: f64 = 0.5;
const E3: f64 = 0.166_666_666_666_666_66;
const E4: f64 = 0.041_666_666_666_666_664;
const E5: f64 = 0.008_333_333_333_333_333;
const E6: f64 = 0.001_388_888_888_888_889;
const E7: f64 = 0.000_198_412_698_412_698_4;
const E8: f64 = 2.480_158_730_158_73e-5;
const E9: f64 = 2.755_731_922_398_589_3e-6;
const E10: f64 = 2.755_731_922_398_589e-7;
const E11: f64 = 2.505_210_838_544_172e-8;
const E12: f64 = 2.087_675_698_786_81e-9;
const E13: f64 = 1.605_904_383_682_161_3e-10;

/// `2ⁿ` for an integer-valued `n` with `−1022 ≤ n ≤ 1023`, from its bits.
#[inline(always)]
fn pow2(n: f64) -> f64 {
    let i = (n + ROUND_MAGIC).to_bits().wrapping_sub(ROUND_MAGIC.to_bits());
    f64::from_bits(i.wrapping_add(1023) << 52)
}

/// `e^r − 1 = r + r²·q(r)` for `|r| ≤ ln 2 / 2`, the Taylor polynomial of
/// degree 13: the tail `q` in Estrin's scheme (short dependency chains, so
/// consecutive vectors overlap); its rounding is scaled by `r² ≤ 0.12`, so
/// the last addition decides the error.
#[inline(always)]
fn exp_minus_one_reduced(r: f64) -> f64 {
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let q0 = (E2 + r * E3) + r2 * (E4 + r * E5);
    let q1 = (E6 + r * E7) + r2 * (E8 + r * E9);
    let q2 = (E10 + r * E11) + r2 * (E12 + r * E13);
    let q = (q0 + r4 * q1) + r8 * q2;
    r + r2 * q
}

/// `exp(x)` without branches (see the module docs for the error).
#[inline(always)]
fn exp_kernel(x: f64) -> f64 {
    // `clamp` keeps NaN (min/max would not).
    let x = x.clamp(EXP_LO, EXP_HI);
    let n = (x * std::f64::consts::LOG2_E + ROUND_MAGIC) - ROUND_MAGIC;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let e = 1.0 + exp_minus_one_reduced(r);
    // n ∈ [−1076, 1024]: two halves in [−538, 512] keep both factors normal.
    let h = (n * 0.5 + ROUND_MAGIC) - ROUND_MAGIC;
    e * pow2(h) * pow2(n - h)
}

/// `exp(x) − 1` without branches: [`exp_minus_one_reduced`] where `|x| ≤ ln 2 / 2` (so small arguments keep their
/// relative accuracy), `exp(x) − 1` elsewhere (where the subtraction loses
/// at most a factor 3.4). Error at most 4 ulp (see the tests).
#[inline(always)]
fn expm1_kernel(x: f64) -> f64 {
    let small = x.abs() <= 0.5 * std::f64::consts::LN_2;
    let near = exp_minus_one_reduced(if small { x } else { 0.0 });
    let far = exp_kernel(x) - 1.0;
    if small { near } else { far }
}

/// True when every element can take the polynomial path. Written as a
/// reduction without early exit so that it vectorises.
#[inline(always)]
fn all_small(x: &[f64]) -> bool {
    let mut bad = false;
    for &v in x {
        // Written so that NaN counts as out of range.
        let ok = v.abs() <= LIMIT;
        bad |= !ok;
    }
    !bad
}

#[inline(always)]
fn all_small_f32(x: &[f32]) -> bool {
    let mut bad = false;
    for &v in x {
        let ok = (v as f64).abs() <= LIMIT;
        bad |= !ok;
    }
    !bad
}

multiversion! {
    /// `out[i] = cos(x[i])`.
    ///
    /// # Panics
    /// `x.len() == out.len()` must hold.
    pub fn cos_into(x: &[f64], out: &mut [f64]) {
        assert_eq!(x.len(), out.len(), "cos_into: input and output lengths differ");
        for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
            if all_small(xb) {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = cos_kernel(v);
                }
            } else {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = v.cos();
                }
            }
        }
    }
}

multiversion! {
    /// `x[i] = cos(x[i])` in place.
    pub fn cos_in_place(x: &mut [f64]) {
        for xb in x.chunks_mut(BLOCK) {
            if all_small(xb) {
                xb.iter_mut().for_each(|v| *v = cos_kernel(*v));
            } else {
                xb.iter_mut().for_each(|v| *v = v.cos());
            }
        }
    }
}

multiversion! {
    /// `out[i] = sin(x[i])`.
    ///
    /// # Panics
    /// `x.len() == out.len()` must hold.
    pub fn sin_into(x: &[f64], out: &mut [f64]) {
        assert_eq!(x.len(), out.len(), "sin_into: input and output lengths differ");
        for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
            if all_small(xb) {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = sin_kernel(v);
                }
            } else {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = v.sin();
                }
            }
        }
    }
}

multiversion! {
    /// `s[i] = sin(x[i])`, `c[i] = cos(x[i])`.
    ///
    /// # Panics
    /// `x.len() == s.len() && x.len() == c.len()` must hold.
    pub fn sincos_into(x: &[f64], s: &mut [f64], c: &mut [f64]) {
        assert_eq!(x.len(), s.len(), "sincos_into: input and sine lengths differ");
        assert_eq!(x.len(), c.len(), "sincos_into: input and cosine lengths differ");
        for ((xb, sb), cb) in x.chunks(BLOCK).zip(s.chunks_mut(BLOCK)).zip(c.chunks_mut(BLOCK)) {
            if all_small(xb) {
                for ((so, co), &v) in sb.iter_mut().zip(cb.iter_mut()).zip(xb) {
                    (*so, *co) = sincos_kernel(v);
                }
            } else {
                for ((so, co), &v) in sb.iter_mut().zip(cb.iter_mut()).zip(xb) {
                    (*so, *co) = v.sin_cos();
                }
            }
        }
    }
}

multiversion! {
    /// The pairs form of Fourier features, in place: on return
    /// `x[i] = scale·cos(x₀[i])` and `s[i] = scale·sin(x₀[i])`, where `x₀` is
    /// the input `x`.
    ///
    /// # Panics
    /// `x.len() == s.len()` must hold.
    pub fn sincos_scaled_in_place(x: &mut [f64], s: &mut [f64], scale: f64) {
        assert_eq!(x.len(), s.len(), "sincos_scaled_in_place: lengths differ");
        for (xb, sb) in x.chunks_mut(BLOCK).zip(s.chunks_mut(BLOCK)) {
            if all_small(xb) {
                for (v, so) in xb.iter_mut().zip(sb.iter_mut()) {
                    let (sv, cv) = sincos_kernel(*v);
                    *v = scale * cv;
                    *so = scale * sv;
                }
            } else {
                for (v, so) in xb.iter_mut().zip(sb.iter_mut()) {
                    let (sv, cv) = v.sin_cos();
                    *v = scale * cv;
                    *so = scale * sv;
                }
            }
        }
    }
}

multiversion! {
    /// The phase form of Fourier features, in place:
    /// `x[i] = scale·cos(x[i] + shift[i])`.
    ///
    /// # Panics
    /// `x.len() == shift.len()` must hold.
    pub fn cos_shifted_scaled_in_place(x: &mut [f64], shift: &[f64], scale: f64) {
        assert_eq!(x.len(), shift.len(), "cos_shifted_scaled_in_place: lengths differ");
        for (xb, bb) in x.chunks_mut(BLOCK).zip(shift.chunks(BLOCK)) {
            xb.iter_mut().zip(bb).for_each(|(v, &b)| *v += b);
            if all_small(xb) {
                xb.iter_mut().for_each(|v| *v = scale * cos_kernel(*v));
            } else {
                xb.iter_mut().for_each(|v| *v = scale * v.cos());
            }
        }
    }
}

multiversion! {
    /// `out[i] = cos(x[i])` in single precision (computed in `f64`).
    ///
    /// # Panics
    /// `x.len() == out.len()` must hold.
    pub fn cos_into_f32(x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), out.len(), "cos_into_f32: input and output lengths differ");
        for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
            if all_small_f32(xb) {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = cos_kernel(v as f64) as f32;
                }
            } else {
                for (o, &v) in ob.iter_mut().zip(xb) {
                    *o = (v as f64).cos() as f32;
                }
            }
        }
    }
}

multiversion! {
    /// `s[i] = sin(x[i])`, `c[i] = cos(x[i])` in single precision (computed
    /// in `f64`).
    ///
    /// # Panics
    /// `x.len() == s.len() && x.len() == c.len()` must hold.
    pub fn sincos_into_f32(x: &[f32], s: &mut [f32], c: &mut [f32]) {
        assert_eq!(x.len(), s.len(), "sincos_into_f32: input and sine lengths differ");
        assert_eq!(x.len(), c.len(), "sincos_into_f32: input and cosine lengths differ");
        for ((xb, sb), cb) in x.chunks(BLOCK).zip(s.chunks_mut(BLOCK)).zip(c.chunks_mut(BLOCK)) {
            if all_small_f32(xb) {
                for ((so, co), &v) in sb.iter_mut().zip(cb.iter_mut()).zip(xb) {
                    let (sv, cv) = sincos_kernel(v as f64);
                    (*so, *co) = (sv as f32, cv as f32);
                }
            } else {
                for ((so, co), &v) in sb.iter_mut().zip(cb.iter_mut()).zip(xb) {
                    let (sv, cv) = (v as f64).sin_cos();
                    (*so, *co) = (sv as f32, cv as f32);
                }
            }
        }
    }
}

multiversion! {
    /// Single-precision [`sincos_scaled_in_place`] (computed in `f64`).
    ///
    /// # Panics
    /// `x.len() == s.len()` must hold.
    pub fn sincos_scaled_in_place_f32(x: &mut [f32], s: &mut [f32], scale: f64) {
        assert_eq!(x.len(), s.len(), "sincos_scaled_in_place_f32: lengths differ");
        for (xb, sb) in x.chunks_mut(BLOCK).zip(s.chunks_mut(BLOCK)) {
            if all_small_f32(xb) {
                for (v, so) in xb.iter_mut().zip(sb.iter_mut()) {
                    let (sv, cv) = sincos_kernel(*v as f64);
                    *v = (scale * cv) as f32;
                    *so = (scale * sv) as f32;
                }
            } else {
                for (v, so) in xb.iter_mut().zip(sb.iter_mut()) {
                    let (sv, cv) = (*v as f64).sin_cos();
                    *v = (scale * cv) as f32;
                    *so = (scale * sv) as f32;
                }
            }
        }
    }
}

multiversion! {
    /// Single-precision [`cos_shifted_scaled_in_place`] (the shift is added
    /// and the cosine taken in `f64`).
    ///
    /// # Panics
    /// `x.len() == shift.len()` must hold.
    pub fn cos_shifted_scaled_in_place_f32(x: &mut [f32], shift: &[f64], scale: f64) {
        assert_eq!(x.len(), shift.len(), "cos_shifted_scaled_in_place_f32: lengths differ");
        for (xb, bb) in x.chunks_mut(BLOCK).zip(shift.chunks(BLOCK)) {
            let mut bad = false;
            for (&v, &b) in xb.iter().zip(bb) {
                let ok = (v as f64 + b).abs() <= LIMIT;
                bad |= !ok;
            }
            if !bad {
                xb.iter_mut().zip(bb).for_each(|(v, &b)| *v = (scale * cos_kernel(*v as f64 + b)) as f32);
            } else {
                xb.iter_mut().zip(bb).for_each(|(v, &b)| *v = (scale * (*v as f64 + b).cos()) as f32);
            }
        }
    }
}

multiversion! {
    /// `x[i] = exp(x[i])` in place (error at most 1 ulp; see the module
    /// docs).
    pub fn exp_in_place(x: &mut [f64]) {
        x.iter_mut().for_each(|v| *v = exp_kernel(*v));
    }
}

multiversion! {
    /// `out[i] = exp(x[i])` (error at most 1 ulp; see the module docs).
    ///
    /// # Panics
    /// `x.len() == out.len()` must hold.
    pub fn exp_into(x: &[f64], out: &mut [f64]) {
        assert_eq!(x.len(), out.len(), "exp_into: input and output lengths differ");
        for (o, &v) in out.iter_mut().zip(x) {
            *o = exp_kernel(v);
        }
    }
}

multiversion! {
    /// `x[i] = exp(x[i]) − 1` in place, accurate for small `x[i]` too
    /// (error at most 4 ulp; `expm1(−∞) = −1`, NaN stays NaN).
    pub fn expm1_in_place(x: &mut [f64]) {
        x.iter_mut().for_each(|v| *v = expm1_kernel(*v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Inputs spread over every order of magnitude up to `max`, both signs,
    /// plus multiples of π/4 (where the quadrant logic switches) and the
    /// neighbours of the fallback threshold.
    fn inputs(max: f64, n: usize) -> Vec<f64> {
        let mut r = ChaCha8Rng::seed_from_u64(11);
        let mut v: Vec<f64> = (0..n)
            .map(|_| {
                let mag = 10f64.powf(r.random_range(-8.0..max.log10()));
                if r.random::<bool>() { mag } else { -mag }
            })
            .collect();
        for k in -400..400 {
            let x = k as f64 * std::f64::consts::FRAC_PI_4;
            v.extend([x, f64::from_bits(x.to_bits() + 1), f64::from_bits(x.to_bits().saturating_sub(1))]);
        }
        v.extend([0.0, -0.0, LIMIT, -LIMIT, f64::from_bits(LIMIT.to_bits() + 1), 1e300, -3e22, f64::MIN_POSITIVE]);
        v
    }

    fn max_abs_err(got: &[f64], want: impl Iterator<Item = f64>) -> f64 {
        got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn cos_and_sin_match_libm_to_1e_15() {
        for max in [10.0, 1e3, 1e5, 1e6, 1e12] {
            let x = inputs(max, 200_000);
            let mut c = vec![0.0; x.len()];
            let mut s = vec![0.0; x.len()];
            cos_into(&x, &mut c);
            sin_into(&x, &mut s);
            // libm is correctly rounded to within 1 ulp; for |x| ≤ 1e6 the
            // reduction error is ≤ 1e-16 + |x|·2^-53·1e-10.
            let ec = max_abs_err(&c, x.iter().map(|v| v.cos()));
            let es = max_abs_err(&s, x.iter().map(|v| v.sin()));
            eprintln!("max |x| {max:e}: cos error {ec:e}, sin error {es:e}");
            assert!(ec < 1e-15, "cos error {ec} up to {max}");
            assert!(es < 1e-15, "sin error {es} up to {max}");
            let (mut s2, mut c2) = (vec![0.0; x.len()], vec![0.0; x.len()]);
            sincos_into(&x, &mut s2, &mut c2);
            assert_eq!(s, s2);
            assert_eq!(c, c2);
            let mut c3 = x.clone();
            cos_in_place(&mut c3);
            assert_eq!(c, c3);
        }
    }

    #[test]
    fn polynomial_path_is_accurate_near_the_threshold() {
        // Every block here is below the libm fallback, so the error measured
        // is the kernel's own.
        let mut r = ChaCha8Rng::seed_from_u64(5);
        let x: Vec<f64> = (0..100_000).map(|_| r.random_range(-LIMIT..LIMIT)).collect();
        assert!(all_small(&x));
        let mut c = vec![0.0; x.len()];
        cos_into(&x, &mut c);
        let e = max_abs_err(&c, x.iter().map(|v| v.cos()));
        assert!(e < 1e-15, "cos error {e}");
    }

    #[test]
    fn non_finite_inputs_give_nan() {
        let x = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0];
        let mut c = [0.0; 4];
        cos_into(&x, &mut c);
        assert!(c[..3].iter().all(|v| v.is_nan()));
        assert_eq!(c[3], 1f64.cos());
    }

    #[test]
    fn fused_forms_match_their_definitions() {
        let x = inputs(1e4, 5000);
        let shift: Vec<f64> = (0..x.len()).map(|i| (i as f64 * 0.1) % std::f64::consts::TAU).collect();
        let mut a = x.clone();
        cos_shifted_scaled_in_place(&mut a, &shift, 0.5);
        let want = x.iter().zip(&shift).map(|(v, b)| 0.5 * (v + b).cos());
        assert!(max_abs_err(&a, want) < 1e-15);

        let mut c = x.clone();
        let mut s = vec![0.0; x.len()];
        sincos_scaled_in_place(&mut c, &mut s, 2.0);
        assert!(max_abs_err(&c, x.iter().map(|v| 2.0 * v.cos())) < 2e-15);
        assert!(max_abs_err(&s, x.iter().map(|v| 2.0 * v.sin())) < 2e-15);
    }

    #[test]
    fn f32_variants_are_within_an_ulp() {
        let x64 = inputs(1e5, 50_000);
        let x: Vec<f32> = x64.iter().filter(|v| v.abs() < 1e30).map(|&v| v as f32).collect();
        let mut c = vec![0.0f32; x.len()];
        let mut s = vec![0.0f32; x.len()];
        cos_into_f32(&x, &mut c);
        for (g, &v) in c.iter().zip(&x) {
            assert_eq!(*g, (v as f64).cos() as f32, "cos({v})");
        }
        let mut c2 = vec![0.0f32; x.len()];
        sincos_into_f32(&x, &mut s, &mut c2);
        assert_eq!(c, c2);
        for (g, &v) in s.iter().zip(&x) {
            assert!((*g as f64 - (v as f64).sin()).abs() <= 6e-8, "sin({v})");
        }
        let mut a = x.clone();
        let mut b = vec![0.0f32; x.len()];
        sincos_scaled_in_place_f32(&mut a, &mut b, 1.0);
        assert_eq!(a, c);
        assert_eq!(b, s);
        let shift = vec![0.25f64; x.len()];
        let mut p = x.clone();
        cos_shifted_scaled_in_place_f32(&mut p, &shift, 1.0);
        for (g, &v) in p.iter().zip(&x) {
            assert!((*g as f64 - (v as f64 + 0.25).cos()).abs() <= 6e-8);
        }
    }

    /// Distance in units in the last place (both finite and of one sign,
    /// or equal).
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn exp_is_within_one_ulp_of_libm_over_the_whole_range() {
        let mut r = ChaCha8Rng::seed_from_u64(21);
        let mut x: Vec<f64> = (0..400_000).map(|_| r.random_range(-745.2..709.78)).collect();
        // Small magnitudes (where the polynomial alone matters) and the
        // subnormal range, where the scaling must round once.
        x.extend((0..100_000).map(|_| r.random_range(-1.0..1.0) * 10f64.powf(r.random_range(-12.0..0.0))));
        x.extend((0..50_000).map(|_| r.random_range(-745.1..-708.0)));
        for k in -1076..1025 {
            x.push(k as f64 * std::f64::consts::LN_2);
        }
        let mut got = vec![0.0; x.len()];
        exp_into(&x, &mut got);
        let mut worst = (0, 0.0);
        for (&g, &v) in got.iter().zip(&x) {
            let want = v.exp();
            let u = ulps(g, want);
            if u > worst.0 {
                worst = (u, v);
            }
        }
        eprintln!("exp: worst error {} ulp at x = {}", worst.0, worst.1);
        assert!(worst.0 <= 1, "exp error {} ulp at x = {}", worst.0, worst.1);
        let mut inplace = x.clone();
        exp_in_place(&mut inplace);
        assert_eq!(inplace, got);
    }

    #[test]
    fn expm1_is_within_four_ulp_of_libm_and_keeps_small_arguments_accurate() {
        let mut r = ChaCha8Rng::seed_from_u64(22);
        let mut x: Vec<f64> = (0..200_000).map(|_| r.random_range(-745.2..709.78)).collect();
        x.extend((0..200_000).map(|_| r.random_range(-1.0..1.0) * 10f64.powf(r.random_range(-300.0..0.5))));
        x.extend([0.0, -0.0, 0.5 * std::f64::consts::LN_2, -0.5 * std::f64::consts::LN_2, 1e-310, -1e-310]);
        let mut got = x.clone();
        expm1_in_place(&mut got);
        let mut worst = (0, 0.0);
        for (&g, &v) in got.iter().zip(&x) {
            let u = ulps(g, v.exp_m1());
            if u > worst.0 {
                worst = (u, v);
            }
        }
        eprintln!("expm1: worst error {} ulp at x = {}", worst.0, worst.1);
        assert!(worst.0 <= 4, "expm1 error {} ulp at x = {}", worst.0, worst.1);
        let mut edges = [f64::NEG_INFINITY, f64::INFINITY, f64::NAN, -1e300];
        expm1_in_place(&mut edges);
        assert_eq!((edges[0], edges[1], edges[3]), (-1.0, f64::INFINITY, -1.0));
        assert!(edges[2].is_nan());
    }

    #[test]
    fn exp_handles_the_edges() {
        let x = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            709.78,
            709.79,
            710.0,
            1e300,
            -745.2,
            -746.0,
            -1e300,
        ];
        let mut e = x;
        exp_in_place(&mut e);
        assert_eq!(&e[..4], &[1.0, 1.0, f64::INFINITY, 0.0]);
        assert!(e[4].is_nan());
        assert_eq!(e[5], 709.78f64.exp());
        assert_eq!(&e[6..9], &[f64::INFINITY; 3]);
        assert_eq!(&e[9..], &[0.0; 3]);
    }
}
