//! The orthonormal 1-D hierarchical basis of each kernel's RKHS on `[0, 1]`,
//! evaluated at one coordinate for all levels at once.
//!
//! Levels are numbered as in the boundary basis, where level `j ≥ 2` holds
//! the `2^{j−2}` hats of half-width `2^{−(j−1)}`:
//! - boundary: levels `0..=n`, the two boundary functions, then the hats of
//!   levels `j = 2..=n`;
//! - centred: levels `0..=n`, the kernel section `k(·, ½)`, the boundary
//!   half-hats, then the hats of levels `j = 3..=n + 1` (centred level
//!   `j − 1`);
//! - paper: the hats of levels `j = 2..=n + 1` only (the paper's levels
//!   `1..=n`), stored from index 0.
//!
//! The formulas are derived in the parent module's docs. Here they are
//! written in forms that neither overflow nor cancel for any `ω > 0`:
//! `sinh(a)/sinh(b) = e^{a−b}·expm1(−2a)/expm1(−2b)` and
//! `cosh(ωt)/√(cosh(s)e^s) = e^{ωt−s}(1 + e^{−2ωt})/√(2(1 + e^{−2s}))`
//! with `t ≤ s`, so every exponential has a non-positive argument.

use super::spec::{EofBasis, EofKernel, MAX_LEVEL};

/// Constants of the level-`j` hats (`j ≥ 2`): half-width `h = 2^{−(j−1)}`,
/// `2^{j−2}` hats centred at `(2i + 1)h`.
#[derive(Clone, Copy, Debug)]
struct Hat {
    /// `2^{j−2}`: multiplies `x` into hat units (hat `i` covers `[i, i+1)`).
    scale: f64,
    /// `2^{j−2} − 1`, the last hat (where `x = 1` lands).
    last: u64,
    /// `n − j`: the level-`j` hat of `x` is the finest fixed-point index
    /// `⌊x·2^{n−2}⌋` shifted right by this much.
    shift: u32,
    /// `ωh` (Laplace only).
    a: f64,
    /// The normalisation, folded with the constant denominator: Sobolev
    /// `√(ωh/2)`; Laplace `√tanh(ωh) / (−expm1(−2ωh))`.
    c: f64,
}

/// The 1-D basis of one kernel and basis up to level `n`.
#[derive(Clone, Debug)]
pub(super) struct Basis1d {
    kernel: EofKernel,
    omega: f64,
    basis: EofBasis,
    /// Entries written per coordinate: `n + 1` (boundary, centred) or `n`
    /// (paper).
    len: usize,
    /// Where the first hat goes: 2 (boundary, centred) or 0 (paper).
    first_hat: usize,
    /// `2^{j_max−2}` (1 without hats): the finest fixed-point scale.
    top: f64,
    /// Boundary: Sobolev `√ω`, Laplace `1/√(2(1 + e^{−ω}))`, the even
    /// function's normalisation. Centred: Sobolev `1/√(1 + ω/2)`, Laplace
    /// `1/√(−expm1(−ω))`, the half-hats' denominator.
    c0: f64,
    /// Boundary: Laplace `1/√(2(−expm1(−ω)))`, the odd function's
    /// normalisation. Centred: Sobolev `√(ω/(ω + 2))` and `√(ω/2)`, the
    /// left and right half-hats' normalisations (`c1`, `c2`).
    c1: f64,
    c2: f64,
    /// Hat levels `2..=j_max`.
    hats: Vec<Hat>,
}

impl Basis1d {
    /// The basis of `kernel` with parameter `omega` (checked `> 0`, finite)
    /// at level `n ≤ 32`: boundary or centred levels `0..=n`, or paper
    /// levels `1..=n` (`n ≥ 1`; hat levels `2..=n + 1`).
    pub(super) fn new(kernel: EofKernel, omega: f64, basis: EofBasis, n: u32) -> Self {
        debug_assert!(omega.is_finite() && omega > 0.0 && n <= MAX_LEVEL);
        let (len, first_hat, j_min, j_max) = match basis {
            EofBasis::Boundary => (n as usize + 1, 2, 2, n),
            EofBasis::Centred => (n as usize + 1, 2, 3, n + 1),
            EofBasis::Paper => {
                debug_assert!(n >= 1);
                (n as usize, 0, 2, n + 1)
            }
        };
        let hats = (j_min..=j_max)
            .map(|j| {
                let h = 0.5f64.powi(j as i32 - 1);
                let a = omega * h;
                let c = match kernel {
                    EofKernel::Sobolev => (0.5 * a).sqrt(),
                    EofKernel::Laplace => a.tanh().sqrt() / -(-2.0 * a).exp_m1(),
                };
                Hat { scale: 2f64.powi(j as i32 - 2), last: (1u64 << (j - 2)) - 1, shift: j_max - j, a, c }
            })
            .collect();
        let (c0, c1, c2) = match (basis, kernel) {
            (EofBasis::Centred, EofKernel::Sobolev) => {
                (1.0 / (1.0 + 0.5 * omega).sqrt(), (omega / (omega + 2.0)).sqrt(), (0.5 * omega).sqrt())
            }
            (EofBasis::Centred, EofKernel::Laplace) => (1.0 / (-(-omega).exp_m1()).sqrt(), 0.0, 0.0),
            (_, EofKernel::Sobolev) => (omega.sqrt(), 0.0, 0.0),
            (_, EofKernel::Laplace) => {
                (1.0 / (2.0 * (1.0 + (-omega).exp())).sqrt(), 1.0 / (2.0 * -(-omega).exp_m1()).sqrt(), 0.0)
            }
        };
        let top = if j_max >= j_min { 2f64.powi(j_max as i32 - 2) } else { 1.0 };
        Basis1d { kernel, basis, omega, len, first_hat, top, c0, c1, c2, hats }
    }

    /// Writes the value of the one active function of each level at `x`
    /// into `vals` (boundary and centred: `vals[j]` for `j = 0..=n`; paper:
    /// `vals[j − 2]` for the hat levels `j = 2..=n + 1`), and its index
    /// within the level into `idx` (0 for the one-function levels; for the
    /// centred half-hats 0 on `[0, ½)` and 1 on `[½, 1]`).
    ///
    /// `x` is clamped to `[0, 1]`; NaN gives NaN values and index 0.
    #[inline]
    pub(super) fn eval(&self, x: f64, vals: &mut [f64], idx: &mut [u32]) {
        debug_assert_eq!(vals.len(), self.len);
        debug_assert_eq!(idx.len(), self.len);
        let x = x.clamp(0.0, 1.0);
        // The levels before the hats, `min(len, first_hat)` of them.
        let coarse = self.first_hat.min(self.len);
        if coarse > 0 {
            idx[..coarse].fill(0);
            let u = x - 0.5;
            match (self.basis, self.kernel) {
                (EofBasis::Centred, EofKernel::Sobolev) => {
                    vals[0] = self.c0 * (1.0 + self.omega * x.min(0.5));
                    if coarse > 1 {
                        (vals[1], idx[1]) = if u < 0.0 { (-2.0 * u * self.c1, 0) } else { (2.0 * u * self.c2, 1) };
                    }
                }
                (EofBasis::Centred, EofKernel::Laplace) => {
                    // k(x, ½) = e^{−a}, and the half-hat sinh(a)/sinh(ω/2)
                    // normalised by √(1 − e^{−ω}), a = ω|x − ½|.
                    let a = self.omega * u.abs();
                    vals[0] = (-a).exp();
                    if coarse > 1 {
                        vals[1] = self.c0 * (a - 0.5 * self.omega).exp() * -(-2.0 * a).exp_m1();
                        idx[1] = u32::from(u >= 0.0);
                    }
                }
                (_, EofKernel::Sobolev) => {
                    vals[0] = 1.0;
                    if coarse > 1 {
                        vals[1] = self.c0 * x;
                    }
                }
                (_, EofKernel::Laplace) => {
                    let wt = self.omega * u.abs();
                    let e = (wt - 0.5 * self.omega).exp();
                    vals[0] = self.c0 * e * (1.0 + (-2.0 * wt).exp());
                    if coarse > 1 {
                        vals[1] = u.signum() * self.c1 * e * -(-2.0 * wt).exp_m1();
                    }
                }
            }
        }
        if self.hats.is_empty() {
            return;
        }
        // The fixed-point coordinate at the finest level; coarser levels
        // are right shifts of it (floor commutes with halving).
        let q = (x * self.top) as u64;
        let f = self.first_hat;
        for ((hat, v), i) in self.hats.iter().zip(&mut vals[f..]).zip(&mut idx[f..]) {
            let k = (q >> hat.shift).min(hat.last);
            // Exact: x·2^{j−2} is a scaling by a power of two and k its
            // integer part (or one less at x = 1).
            let frac = x * hat.scale - k as f64;
            // `1 − |2·frac − 1|`, written so that it is exact: `2·frac` and
            // (Sterbenz) `1 − frac` for `frac ≥ ½` are. The naive form
            // rounds to 0 for `frac < 2^{−54}`, which would turn a row near a
            // face into a face row for the paper basis.
            let rho = 2.0 * frac.min(1.0 - frac);
            *v = match self.kernel {
                EofKernel::Sobolev => hat.c * rho,
                EofKernel::Laplace => hat.c * (hat.a * (rho - 1.0)).exp() * -(-2.0 * hat.a * rho).exp_m1(),
            };
            *i = k as u32;
        }
    }
}

/// The factors of the Laplace kernel's values for a whole row, gathered so
/// that the exponentials run in vectorised passes: every value is
/// `m · e^A · (s + t · expm1(B))`.
#[derive(Clone, Debug, Default)]
pub(super) struct RowTerms {
    m: Vec<f64>,
    a: Vec<f64>,
    b: Vec<f64>,
    s: Vec<f64>,
    t: Vec<f64>,
}

impl Basis1d {
    /// [`Basis1d::eval`] for every coordinate of a row: `vals` and `idx` are
    /// `(x.len(), len)` row-major. The Laplace kernel's exponentials (two or
    /// three per coordinate and level) go through `kapprox_core::fastmath`
    /// over the whole row instead of one libm call each (they were a sixth
    /// of an EOF fit's cycles); the values agree with [`Basis1d::eval`] to a
    /// few ulp.
    pub(super) fn eval_row(&self, x: &[f64], vals: &mut [f64], idx: &mut [u32], terms: &mut RowTerms) {
        let len = self.len;
        debug_assert_eq!(vals.len(), x.len() * len);
        if self.kernel == EofKernel::Sobolev {
            for ((&xd, v), i) in x.iter().zip(vals.chunks_exact_mut(len)).zip(idx.chunks_exact_mut(len)) {
                self.eval(xd, v, i);
            }
            return;
        }
        let n = vals.len();
        for f in [&mut terms.m, &mut terms.a, &mut terms.b, &mut terms.s, &mut terms.t] {
            f.resize(n, 0.0);
        }
        for (d, &xd) in x.iter().enumerate() {
            let at = d * len..(d + 1) * len;
            self.laplace_terms(
                xd,
                [&mut terms.m[at.clone()], &mut terms.a[at.clone()], &mut terms.b[at.clone()]],
                [&mut terms.s[at.clone()], &mut terms.t[at.clone()]],
                &mut idx[at],
            );
        }
        kapprox_core::fastmath::exp_in_place(&mut terms.a);
        kapprox_core::fastmath::expm1_in_place(&mut terms.b);
        for (k, v) in vals.iter_mut().enumerate() {
            *v = terms.m[k] * terms.a[k] * (terms.s[k] + terms.t[k] * terms.b[k]);
        }
    }

    /// The Laplace values of [`Basis1d::eval`] at one coordinate as factors
    /// `m · e^A · (s + t · expm1(B))` (`1 + e^B = 2 + expm1(B)`), and the
    /// indices.
    fn laplace_terms(&self, x: f64, [m, a, b]: [&mut [f64]; 3], [s, t]: [&mut [f64]; 2], idx: &mut [u32]) {
        let x = x.clamp(0.0, 1.0);
        let coarse = self.first_hat.min(self.len);
        // (m, A, B, s, t) of one value.
        let mut put = |k: usize, terms: (f64, f64, f64, f64, f64)| {
            (m[k], a[k], b[k], s[k], t[k]) = terms;
        };
        if coarse > 0 {
            idx[..coarse].fill(0);
            let u = x - 0.5;
            let wt = self.omega * u.abs();
            if self.basis == EofBasis::Centred {
                put(0, (1.0, -wt, 0.0, 1.0, 0.0));
                if coarse > 1 {
                    put(1, (self.c0, wt - 0.5 * self.omega, -2.0 * wt, 0.0, -1.0));
                    idx[1] = u32::from(u >= 0.0);
                }
            } else {
                put(0, (self.c0, wt - 0.5 * self.omega, -2.0 * wt, 2.0, 1.0));
                if coarse > 1 {
                    put(1, (u.signum() * self.c1, wt - 0.5 * self.omega, -2.0 * wt, 0.0, -1.0));
                }
            }
        }
        let q = (x * self.top) as u64;
        for (k, hat) in self.hats.iter().enumerate() {
            let slot = self.first_hat + k;
            if slot >= self.len {
                break;
            }
            let level = (q >> hat.shift).min(hat.last);
            let frac = x * hat.scale - level as f64;
            let rho = 2.0 * frac.min(1.0 - frac);
            put(slot, (hat.c, hat.a * (rho - 1.0), -2.0 * hat.a * rho, 0.0, -1.0));
            idx[slot] = level as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook forms, fine for moderate ω.
    fn naive(kernel: EofKernel, omega: f64, j: u32, x: f64) -> (f64, u32) {
        match (kernel, j) {
            (EofKernel::Sobolev, 0) => (1.0, 0),
            (EofKernel::Sobolev, 1) => (omega.sqrt() * x, 0),
            (EofKernel::Laplace, 0) => {
                let s = 0.5 * omega;
                ((omega * (x - 0.5)).cosh() / (s.cosh() * s.exp()).sqrt(), 0)
            }
            (EofKernel::Laplace, 1) => {
                let s = 0.5 * omega;
                ((omega * (x - 0.5)).sinh() / (s.sinh() * s.exp()).sqrt(), 0)
            }
            _ => {
                let h = 0.5f64.powi(j as i32 - 1);
                let n_hats = 1u32 << (j - 2);
                let i = ((x / (2.0 * h)).floor() as u32).min(n_hats - 1);
                let r = (x - (2 * i + 1) as f64 * h).abs();
                let v = match kernel {
                    EofKernel::Sobolev => (omega * h / 2.0).sqrt() * (1.0 - r / h),
                    EofKernel::Laplace => (omega * h).tanh().sqrt() * (omega * (h - r)).sinh() / (omega * h).sinh(),
                };
                (v, i)
            }
        }
    }

    #[test]
    fn a_row_at_once_gives_the_values_of_one_coordinate_at_a_time() {
        let mut xs: Vec<f64> = (0..997).map(|i| ((i * 7919) % 1000) as f64 / 999.0).collect();
        // Faces, the centre, points a hair from a hat's edge, outside [0, 1], NaN.
        xs.extend([0.0, 1.0, 0.5, 1e-300, 1.0 - 1e-16, 0.25 + 1e-17, 0.75, -0.3, 1.7, f64::NAN]);
        for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
            for basis in [EofBasis::Centred, EofBasis::Boundary, EofBasis::Paper] {
                for (omega, n) in [(0.3, 4), (3.0, 6), (40.0, 3)] {
                    let b = Basis1d::new(kernel, omega, basis, n);
                    let len = b.len;
                    let (mut vals, mut idx) = (vec![0.0; xs.len() * len], vec![0u32; xs.len() * len]);
                    b.eval_row(&xs, &mut vals, &mut idx, &mut RowTerms::default());
                    for (d, &x) in xs.iter().enumerate() {
                        let (mut v, mut i) = (vec![0.0; len], vec![0u32; len]);
                        b.eval(x, &mut v, &mut i);
                        assert_eq!(&idx[d * len..(d + 1) * len], &i[..], "{kernel:?} {basis:?} x = {x}");
                        for (k, (&got, &want)) in vals[d * len..(d + 1) * len].iter().zip(&v).enumerate() {
                            let ok = if want.is_nan() {
                                got.is_nan()
                            } else {
                                (got - want).abs() <= 1e-14 * want.abs().max(f64::MIN_POSITIVE)
                            };
                            assert!(ok, "{kernel:?} {basis:?} ω = {omega} x = {x} level {k}: {got} vs {want}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stable_forms_match_the_textbook_forms() {
        let n = 7;
        for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
            for omega in [0.01, 1.0, 7.5, 40.0] {
                // Boundary: levels 0..=n; paper: hat levels 2..=n + 1.
                for (basis, len, first) in [(EofBasis::Boundary, n + 1, 0), (EofBasis::Paper, n, 2)] {
                    let b = Basis1d::new(kernel, omega, basis, n);
                    let (mut v, mut i) = (vec![0.0; len as usize], vec![0u32; len as usize]);
                    for step in 0..=200 {
                        let x = step as f64 / 200.0;
                        b.eval(x, &mut v, &mut i);
                        for k in 0..len {
                            let j = k + first;
                            let (ev, ei) = naive(kernel, omega, j, x);
                            assert!(
                                (v[k as usize] - ev).abs() <= 1e-13 * (1.0 + ev.abs()),
                                "{basis:?} {kernel:?} ω={omega} j={j} x={x}"
                            );
                            assert_eq!(i[k as usize], ei, "{basis:?} {kernel:?} j={j} x={x}");
                        }
                    }
                }
            }
        }
    }

    /// The centred basis's level `k` in textbook form: `k(·, ½)/√k(½, ½)`,
    /// the half-hats divided by their norms, then the boundary basis's hat
    /// level `k + 1`.
    fn naive_centred(kernel: EofKernel, omega: f64, k: u32, x: f64) -> (f64, u32) {
        let right = u32::from(x >= 0.5);
        match (kernel, k) {
            (EofKernel::Laplace, 0) => ((-omega * (x - 0.5).abs()).exp(), 0),
            (EofKernel::Sobolev, 0) => ((1.0 + omega * x.min(0.5)) / (1.0 + omega / 2.0).sqrt(), 0),
            // ‖L‖² = ‖R‖² = 1/(1 − e^{−ω}).
            (EofKernel::Laplace, 1) => {
                let v = (omega * (x - 0.5).abs()).sinh() / (omega / 2.0).sinh();
                (v * (1.0 - (-omega).exp()).sqrt(), right)
            }
            // ‖1 − 2x‖² = 1 + 2/ω (it is 1 at 0), ‖2x − 1‖² = 2/ω.
            (EofKernel::Sobolev, 1) if x < 0.5 => ((1.0 - 2.0 * x) / (1.0 + 2.0 / omega).sqrt(), 0),
            (EofKernel::Sobolev, 1) => ((2.0 * x - 1.0) / (2.0 / omega).sqrt(), 1),
            _ => naive(kernel, omega, k + 1, x),
        }
    }

    #[test]
    fn centred_stable_forms_match_the_textbook_forms() {
        let n = 7;
        for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
            for omega in [0.01, 1.0, 7.5, 40.0] {
                let b = Basis1d::new(kernel, omega, EofBasis::Centred, n);
                let (mut v, mut i) = (vec![0.0; n as usize + 1], vec![0u32; n as usize + 1]);
                for step in 0..=200 {
                    let x = step as f64 / 200.0;
                    b.eval(x, &mut v, &mut i);
                    for k in 0..=n {
                        let (ev, ei) = naive_centred(kernel, omega, k, x);
                        assert!(
                            (v[k as usize] - ev).abs() <= 1e-13 * (1.0 + ev.abs()),
                            "{kernel:?} ω={omega} k={k} x={x}"
                        );
                        assert_eq!(i[k as usize], ei, "{kernel:?} k={k} x={x}");
                    }
                }
            }
        }
    }

    #[test]
    fn paper_hats_vanish_on_the_faces() {
        for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
            let b = Basis1d::new(kernel, 3.0, EofBasis::Paper, 5);
            let (mut v, mut i) = (vec![1.0; 5], vec![0u32; 5]);
            for x in [0.0, 1.0, -2.0, 3.0] {
                b.eval(x, &mut v, &mut i);
                assert!(v.iter().all(|&a| a == 0.0), "{kernel:?} x={x}: {v:?}");
            }
            // Inside, the coarsest hat (the one function of paper level 1)
            // is positive: the transform divides by it.
            for x in [1e-300, 0.25, 0.5, 1.0 - 1e-16] {
                b.eval(x, &mut v, &mut i);
                assert!(v[0] > 0.0, "{kernel:?} x={x}");
            }
        }
    }

    #[test]
    fn huge_omega_stays_finite() {
        let b = Basis1d::new(EofKernel::Laplace, 5000.0, EofBasis::Boundary, 6);
        let (mut v, mut i) = (vec![0.0; 7], vec![0u32; 7]);
        for x in [0.0, 0.25, 0.5, 0.5 + 1e-9, 1.0] {
            b.eval(x, &mut v, &mut i);
            assert!(v.iter().all(|a| a.is_finite() && a.abs() <= 1.0), "x={x}: {v:?}");
        }
        // At a hat centre the hat is exactly its normalisation √tanh(ωh) ≈ 1.
        b.eval(0.5, &mut v, &mut i);
        assert!((v[2] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn clamps_outside_the_unit_interval() {
        let b = Basis1d::new(EofKernel::Laplace, 2.0, EofBasis::Boundary, 5);
        let (mut v, mut w, mut i, mut k) = (vec![0.0; 6], vec![0.0; 6], vec![0u32; 6], vec![0u32; 6]);
        b.eval(-0.3, &mut v, &mut i);
        b.eval(0.0, &mut w, &mut k);
        assert_eq!((&v, &i), (&w, &k));
        b.eval(1.7, &mut v, &mut i);
        b.eval(1.0, &mut w, &mut k);
        assert_eq!((&v, &i), (&w, &k));
    }
}
