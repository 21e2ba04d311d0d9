//! The orthonormal 1-D hierarchical basis of each kernel's RKHS on `[0, 1]`,
//! evaluated at one coordinate for all levels `0..=n` at once.
//!
//! The formulas are derived in the parent module's docs. Here they are
//! written in forms that neither overflow nor cancel for any `ω > 0`:
//! `sinh(a)/sinh(b) = e^{a−b}·expm1(−2a)/expm1(−2b)` and
//! `cosh(ωt)/√(cosh(s)e^s) = e^{ωt−s}(1 + e^{−2ωt})/√(2(1 + e^{−2s}))`
//! with `t ≤ s`, so every exponential has a non-positive argument.

use super::EofKernel;

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

/// The 1-D basis of one kernel up to level `n`.
#[derive(Clone, Debug)]
pub(super) struct Basis1d {
    kernel: EofKernel,
    omega: f64,
    n: u32,
    /// `2^{n−2}` (1 when `n < 2`): the finest fixed-point scale.
    top: f64,
    /// Sobolev: `√ω`. Laplace: `1/√(2(1 + e^{−ω}))`, the even function's
    /// normalisation.
    c0: f64,
    /// Laplace: `1/√(2(−expm1(−ω)))`, the odd function's normalisation.
    c1: f64,
    /// Levels `2..=n`.
    hats: Vec<Hat>,
}

impl Basis1d {
    /// The basis of `kernel` with parameter `omega` (checked `> 0`, finite)
    /// up to level `n ≤ 32`.
    pub(super) fn new(kernel: EofKernel, omega: f64, n: u32) -> Self {
        debug_assert!(omega.is_finite() && omega > 0.0 && n <= super::MAX_LEVEL);
        let hats = (2..=n)
            .map(|j| {
                let h = 0.5f64.powi(j as i32 - 1);
                let a = omega * h;
                let c = match kernel {
                    EofKernel::Sobolev => (0.5 * a).sqrt(),
                    EofKernel::Laplace => a.tanh().sqrt() / -(-2.0 * a).exp_m1(),
                };
                Hat { scale: 2f64.powi(j as i32 - 2), last: (1u64 << (j - 2)) - 1, shift: n - j, a, c }
            })
            .collect();
        let (c0, c1) = match kernel {
            EofKernel::Sobolev => (omega.sqrt(), 0.0),
            EofKernel::Laplace => {
                (1.0 / (2.0 * (1.0 + (-omega).exp())).sqrt(), 1.0 / (2.0 * -(-omega).exp_m1()).sqrt())
            }
        };
        let top = if n >= 2 { 2f64.powi(n as i32 - 2) } else { 1.0 };
        Basis1d { kernel, omega, n, top, c0, c1, hats }
    }

    /// Writes the value of the one active function of each level
    /// `j = 0..=n` at `x` into `vals[j]`, and its index within the level
    /// into `idx[j]` (always 0 for levels 0 and 1).
    ///
    /// `x` is clamped to `[0, 1]`; NaN gives NaN values and index 0.
    #[inline]
    pub(super) fn eval(&self, x: f64, vals: &mut [f64], idx: &mut [u32]) {
        debug_assert_eq!(vals.len(), self.n as usize + 1);
        debug_assert_eq!(idx.len(), self.n as usize + 1);
        let x = x.clamp(0.0, 1.0);
        match self.kernel {
            EofKernel::Sobolev => {
                vals[0] = 1.0;
                if self.n >= 1 {
                    vals[1] = self.c0 * x;
                }
            }
            EofKernel::Laplace => {
                let u = x - 0.5;
                let wt = self.omega * u.abs();
                let e = (wt - 0.5 * self.omega).exp();
                vals[0] = self.c0 * e * (1.0 + (-2.0 * wt).exp());
                if self.n >= 1 {
                    vals[1] = u.signum() * self.c1 * e * -(-2.0 * wt).exp_m1();
                }
            }
        }
        idx[..self.n.min(1) as usize + 1].fill(0);
        if self.n < 2 {
            return;
        }
        // The fixed-point coordinate at the finest level; coarser levels
        // are right shifts of it (floor commutes with halving).
        let q = (x * self.top) as u64;
        for ((hat, v), i) in self.hats.iter().zip(&mut vals[2..]).zip(&mut idx[2..]) {
            let k = (q >> hat.shift).min(hat.last);
            // Exact: x·2^{j−2} is a scaling by a power of two and k its
            // integer part (or one less at x = 1).
            let frac = x * hat.scale - k as f64;
            let rho = 1.0 - (2.0 * frac - 1.0).abs();
            *v = match self.kernel {
                EofKernel::Sobolev => hat.c * rho,
                EofKernel::Laplace => hat.c * (hat.a * (rho - 1.0)).exp() * -(-2.0 * hat.a * rho).exp_m1(),
            };
            *i = k as u32;
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
    fn stable_forms_match_the_textbook_forms() {
        let n = 7;
        for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
            for omega in [0.01, 1.0, 7.5, 40.0] {
                let b = Basis1d::new(kernel, omega, n);
                let (mut v, mut i) = (vec![0.0; 8], vec![0u32; 8]);
                for step in 0..=200 {
                    let x = step as f64 / 200.0;
                    b.eval(x, &mut v, &mut i);
                    for j in 0..=n {
                        let (ev, ei) = naive(kernel, omega, j, x);
                        assert!(
                            (v[j as usize] - ev).abs() <= 1e-13 * (1.0 + ev.abs()),
                            "{kernel:?} ω={omega} j={j} x={x}"
                        );
                        assert_eq!(i[j as usize], ei, "{kernel:?} j={j} x={x}");
                    }
                }
            }
        }
    }

    #[test]
    fn huge_omega_stays_finite() {
        let b = Basis1d::new(EofKernel::Laplace, 5000.0, 6);
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
        let b = Basis1d::new(EofKernel::Laplace, 2.0, 5);
        let (mut v, mut w, mut i, mut k) = (vec![0.0; 6], vec![0.0; 6], vec![0u32; 6], vec![0u32; 6]);
        b.eval(-0.3, &mut v, &mut i);
        b.eval(0.0, &mut w, &mut k);
        assert_eq!((&v, &i), (&w, &k));
        b.eval(1.7, &mut v, &mut i);
        b.eval(1.0, &mut w, &mut k);
        assert_eq!((&v, &i), (&w, &k));
    }
}
