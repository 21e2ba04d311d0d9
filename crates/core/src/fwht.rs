//! The fast Walsh–Hadamard transform, in place and unnormalised.
//!
//! `H_n x` for `n = 2^k`, where `H_1 = [1]` and
//! `H_2n = [[H_n, H_n], [H_n, -H_n]]`. Fastfood, SORF and block SRHT all
//! apply it, so it lives here, written once.
//!
//! Hand-written because it is the product: Fastfood is only worth having if
//! its transform beats a dense GEMM. A plain radix-2 butterfly (what the
//! `fwht` crate does) makes `log2 n` passes over memory, its first stages
//! do not vectorise, and it dispatches once per row. This one
//!
//! - does the stages inside one SIMD register (span 1, 2, 4 for AVX-512
//!   doubles; up to 8 for floats) with explicit lane permutations and a ±1
//!   FMA per stage,
//! - fuses the remaining stages three at a time (radix 8), so each element
//!   is loaded and stored once per three stages,
//! - is cache-blocked: all stages whose span fits a block of 16 KiB run
//!   block by block (in L1), and only the few stages that span blocks
//!   touch the whole vector,
//! - is compiled for AVX-512, AVX2+FMA and the baseline and picked at run
//!   time, once per batch of rows ([`fwht_rows`]).
//!
//! The stages of a Walsh–Hadamard transform commute (it is a tensor power
//! of `H_2`), which is what allows any grouping and order; each stage is
//! still exactly `(a + b, a − b)`, so results are bitwise those of the
//! textbook butterfly up to the order of the stages.

use num_traits::Float;

/// Bytes of a cache block: the stages with span below this many bytes run
/// block by block.
const BLOCK_BYTES: usize = 16 * 1024;

/// Radix-2 butterflies of span 1, 2 and 4 on one group of eight (the
/// portable path for the stages inside a vector).
#[inline(always)]
fn radix8<F: Float>(g: &mut [F]) {
    let [a0, a1, a2, a3, a4, a5, a6, a7] = [g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]];
    let (b0, b1, b2, b3) = (a0 + a1, a0 - a1, a2 + a3, a2 - a3);
    let (b4, b5, b6, b7) = (a4 + a5, a4 - a5, a6 + a7, a6 - a7);
    let (c0, c1, c2, c3) = (b0 + b2, b1 + b3, b0 - b2, b1 - b3);
    let (c4, c5, c6, c7) = (b4 + b6, b5 + b7, b4 - b6, b5 - b7);
    g[0] = c0 + c4;
    g[1] = c1 + c5;
    g[2] = c2 + c6;
    g[3] = c3 + c7;
    g[4] = c0 - c4;
    g[5] = c1 - c5;
    g[6] = c2 - c6;
    g[7] = c3 - c7;
}

/// Stages `h`, `2h` and `4h` fused over `x` (`8h` divides `x.len()`): eight
/// streams, each element loaded and stored once for three stages.
#[inline(always)]
fn radix8_pass<F: Float>(x: &mut [F], h: usize) {
    for block in x.chunks_exact_mut(8 * h) {
        let (lo, hi) = block.split_at_mut(4 * h);
        let (l0, l1) = lo.split_at_mut(2 * h);
        let (h0, h1) = hi.split_at_mut(2 * h);
        let (a, b) = l0.split_at_mut(h);
        let (c, d) = l1.split_at_mut(h);
        let (e, f) = h0.split_at_mut(h);
        let (g, k) = h1.split_at_mut(h);
        for i in 0..h {
            let (u0, u1, u2, u3, u4, u5, u6, u7) = (a[i], b[i], c[i], d[i], e[i], f[i], g[i], k[i]);
            let (v0, v1, v2, v3) = (u0 + u1, u0 - u1, u2 + u3, u2 - u3);
            let (v4, v5, v6, v7) = (u4 + u5, u4 - u5, u6 + u7, u6 - u7);
            let (w0, w1, w2, w3) = (v0 + v2, v1 + v3, v0 - v2, v1 - v3);
            let (w4, w5, w6, w7) = (v4 + v6, v5 + v7, v4 - v6, v5 - v7);
            a[i] = w0 + w4;
            b[i] = w1 + w5;
            c[i] = w2 + w6;
            d[i] = w3 + w7;
            e[i] = w0 - w4;
            f[i] = w1 - w5;
            g[i] = w2 - w6;
            k[i] = w3 - w7;
        }
    }
}

/// Stages `h` and `2h` fused over `x` (`4h` divides `x.len()`).
#[inline(always)]
fn radix4_pass<F: Float>(x: &mut [F], h: usize) {
    for block in x.chunks_exact_mut(4 * h) {
        let (ab, cd) = block.split_at_mut(2 * h);
        let (a, b) = ab.split_at_mut(h);
        let (c, d) = cd.split_at_mut(h);
        for i in 0..h {
            let (u0, u1, u2, u3) = (a[i], b[i], c[i], d[i]);
            let (v0, v1, v2, v3) = (u0 + u1, u0 - u1, u2 + u3, u2 - u3);
            a[i] = v0 + v2;
            b[i] = v1 + v3;
            c[i] = v0 - v2;
            d[i] = v1 - v3;
        }
    }
}

/// Stage `h` over `x` (`2h` divides `x.len()`).
#[inline(always)]
fn radix2_pass<F: Float>(x: &mut [F], h: usize) {
    for block in x.chunks_exact_mut(2 * h) {
        let (lo, hi) = block.split_at_mut(h);
        for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
            let (u, v) = (*a, *b);
            *a = u + v;
            *b = u - v;
        }
    }
}

/// Stages `h_start, 2·h_start, …, x.len()/2` over `x`, three at a time.
#[inline(always)]
fn stages<F: Float>(x: &mut [F], h_start: usize) {
    let n = x.len();
    let mut h = h_start;
    while 8 * h <= n {
        radix8_pass(x, h);
        h *= 8;
    }
    if 4 * h <= n {
        radix4_pass(x, h);
        h *= 4;
    }
    if 2 * h <= n {
        radix2_pass(x, h);
    }
}

/// The whole transform of one vector. `inner` applies every stage of span
/// `< width` (the stages inside a SIMD register); the rest are memory
/// passes, run block by block while their span fits a cache block.
#[inline(always)]
fn transform<F: Float>(x: &mut [F], width: usize, inner: impl Fn(&mut [F])) {
    let n = x.len();
    if n < width {
        stages(x, 1);
        return;
    }
    let block = (BLOCK_BYTES / std::mem::size_of::<F>()).max(width);
    if n <= block {
        inner(x);
        stages(x, width);
        return;
    }
    for b in x.chunks_exact_mut(block) {
        inner(b);
        stages(b, width);
    }
    stages(x, block);
}

/// The portable inner stages: radix 8 per group of eight. Plain `for`
/// loops, not `for_each`: `for_each` goes through `Iterator::fold`, which
/// LLVM did not inline into the AVX-512 caller, so these stages ran as
/// baseline scalar code.
#[inline(always)]
fn inner8<F: Float>(x: &mut [F]) {
    for g in x.chunks_exact_mut(8) {
        radix8(g);
    }
}

#[inline(always)]
fn rows_generic<F: Float>(data: &mut [F], len: usize) {
    for row in data.chunks_exact_mut(len) {
        transform(row, 8, inner8);
    }
}

/// Explicit SIMD for the stages inside one register: each is one lane
/// permutation and one FMA with a ±1 pattern (`v·s + swap(v)`, which is
/// exactly `a ± b`), instead of the gathers LLVM emits for the portable
/// radix-8.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::transform;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    fn inner_f64_v4(x: &mut [f64]) {
        let s1 = _mm512_setr_pd(1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0);
        let s2 = _mm512_setr_pd(1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0);
        let s4 = _mm512_setr_pd(1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0);
        for g in x.chunks_exact_mut(8) {
            let p = g.as_mut_ptr();
            // SAFETY: `g` holds exactly 8 doubles.
            let mut v = unsafe { _mm512_loadu_pd(p) };
            v = _mm512_fmadd_pd(v, s1, _mm512_permute_pd::<0x55>(v));
            v = _mm512_fmadd_pd(v, s2, _mm512_permutex_pd::<0x4E>(v));
            v = _mm512_fmadd_pd(v, s4, _mm512_shuffle_f64x2::<0x4E>(v, v));
            // SAFETY: as above.
            unsafe { _mm512_storeu_pd(p, v) };
        }
    }

    #[target_feature(enable = "avx512f")]
    fn inner_f32_v4(x: &mut [f32]) {
        let s1 = _mm512_setr_ps(1., -1., 1., -1., 1., -1., 1., -1., 1., -1., 1., -1., 1., -1., 1., -1.);
        let s2 = _mm512_setr_ps(1., 1., -1., -1., 1., 1., -1., -1., 1., 1., -1., -1., 1., 1., -1., -1.);
        let s4 = _mm512_setr_ps(1., 1., 1., 1., -1., -1., -1., -1., 1., 1., 1., 1., -1., -1., -1., -1.);
        let s8 = _mm512_setr_ps(1., 1., 1., 1., 1., 1., 1., 1., -1., -1., -1., -1., -1., -1., -1., -1.);
        for g in x.chunks_exact_mut(16) {
            let p = g.as_mut_ptr();
            // SAFETY: `g` holds exactly 16 floats.
            let mut v = unsafe { _mm512_loadu_ps(p) };
            v = _mm512_fmadd_ps(v, s1, _mm512_permute_ps::<0xB1>(v));
            v = _mm512_fmadd_ps(v, s2, _mm512_permute_ps::<0x4E>(v));
            v = _mm512_fmadd_ps(v, s4, _mm512_shuffle_f32x4::<0xB1>(v, v));
            v = _mm512_fmadd_ps(v, s8, _mm512_shuffle_f32x4::<0x4E>(v, v));
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(p, v) };
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn inner_f64_v3(x: &mut [f64]) {
        let s1 = _mm256_setr_pd(1.0, -1.0, 1.0, -1.0);
        let s2 = _mm256_setr_pd(1.0, 1.0, -1.0, -1.0);
        for g in x.chunks_exact_mut(4) {
            let p = g.as_mut_ptr();
            // SAFETY: `g` holds exactly 4 doubles.
            let mut v = unsafe { _mm256_loadu_pd(p) };
            v = _mm256_fmadd_pd(v, s1, _mm256_permute_pd::<0x5>(v));
            v = _mm256_fmadd_pd(v, s2, _mm256_permute4x64_pd::<0x4E>(v));
            // SAFETY: as above.
            unsafe { _mm256_storeu_pd(p, v) };
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn inner_f32_v3(x: &mut [f32]) {
        let s1 = _mm256_setr_ps(1., -1., 1., -1., 1., -1., 1., -1.);
        let s2 = _mm256_setr_ps(1., 1., -1., -1., 1., 1., -1., -1.);
        let s4 = _mm256_setr_ps(1., 1., 1., 1., -1., -1., -1., -1.);
        for g in x.chunks_exact_mut(8) {
            let p = g.as_mut_ptr();
            // SAFETY: `g` holds exactly 8 floats.
            let mut v = unsafe { _mm256_loadu_ps(p) };
            v = _mm256_fmadd_ps(v, s1, _mm256_permute_ps::<0xB1>(v));
            v = _mm256_fmadd_ps(v, s2, _mm256_permute_ps::<0x4E>(v));
            v = _mm256_fmadd_ps(v, s4, _mm256_permute2f128_ps::<0x01>(v, v));
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(p, v) };
        }
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn rows_f64_v4(data: &mut [f64], len: usize) {
        for row in data.chunks_exact_mut(len) {
            transform(row, 8, |b| inner_f64_v4(b));
        }
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn rows_f32_v4(data: &mut [f32], len: usize) {
        for row in data.chunks_exact_mut(len) {
            transform(row, 16, |b| inner_f32_v4(b));
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn rows_f64_v3(data: &mut [f64], len: usize) {
        for row in data.chunks_exact_mut(len) {
            transform(row, 4, |b| inner_f64_v3(b));
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn rows_f32_v3(data: &mut [f32], len: usize) {
        for row in data.chunks_exact_mut(len) {
            transform(row, 8, |b| inner_f32_v3(b));
        }
    }
}

fn dispatch<F: Float + 'static>(data: &mut [F], len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::any::TypeId;
        let avx512 = std::is_x86_feature_detected!("avx512f");
        let avx2 = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        if TypeId::of::<F>() == TypeId::of::<f64>() {
            // SAFETY: F is f64 (same type, so same layout).
            let d = unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<f64>(), data.len()) };
            if avx512 {
                // SAFETY: the CPU supports the features the function is compiled for.
                return unsafe { x86::rows_f64_v4(d, len) };
            }
            if avx2 {
                // SAFETY: as above.
                return unsafe { x86::rows_f64_v3(d, len) };
            }
        } else if TypeId::of::<F>() == TypeId::of::<f32>() {
            // SAFETY: F is f32.
            let d = unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<f32>(), data.len()) };
            if avx512 {
                // SAFETY: as above.
                return unsafe { x86::rows_f32_v4(d, len) };
            }
            if avx2 {
                // SAFETY: as above.
                return unsafe { x86::rows_f32_v3(d, len) };
            }
        }
    }
    rows_generic(data, len)
}

/// Transforms `x` in place by the unnormalised Walsh–Hadamard matrix.
///
/// Cost: `n log2 n` additions.
///
/// # Panics
/// `x.len().is_power_of_two()` must hold (an empty slice is a no-op).
pub fn fwht<F: Float + 'static>(x: &mut [F]) {
    let n = x.len();
    if n <= 1 {
        return;
    }
    assert!(n.is_power_of_two(), "fwht: length {n} is not a power of two");
    dispatch(x, n);
}

/// Transforms each consecutive run of `len` elements of `data` in place
/// (the rows of a row-major `(data.len() / len, len)` matrix).
///
/// Prefer this to calling [`fwht`] per row: the CPU dispatch happens once
/// per call and short rows stay in one inlined loop.
///
/// # Panics
/// `len.is_power_of_two() && data.len() % len == 0` must hold.
pub fn fwht_rows<F: Float + 'static>(data: &mut [F], len: usize) {
    assert!(len.is_power_of_two(), "fwht_rows: length {len} is not a power of two");
    assert_eq!(data.len() % len, 0, "fwht_rows: {} elements is not a whole number of rows of {len}", data.len());
    if len == 1 || data.is_empty() {
        return;
    }
    dispatch(data, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hadamard(n: usize) -> Vec<Vec<f64>> {
        // H[i][j] = (-1)^{popcount(i & j)}
        (0..n).map(|i| (0..n).map(|j| if (i & j).count_ones() % 2 == 0 { 1.0 } else { -1.0 }).collect()).collect()
    }

    fn naive(x: &mut [f64]) {
        let mut h = 1;
        while h < x.len() {
            radix2_pass(x, h);
            h *= 2;
        }
    }

    #[test]
    fn matches_the_hadamard_matrix() {
        for k in 0..12 {
            let n = 1usize << k;
            let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let h = hadamard(n);
            let want: Vec<f64> = h.iter().map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum()).collect();
            let mut got = x.clone();
            fwht(&mut got);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() < 1e-12 * n as f64, "n={n}, i={i}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn cache_blocked_sizes_match_the_plain_butterfly() {
        // Sizes above the 16 KiB block take the blocked path; integers keep
        // the comparison exact.
        for k in [11, 12, 13, 14, 15, 16, 17] {
            let n = 1usize << k;
            let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
            let mut want = x.clone();
            naive(&mut want);
            let mut got = x.clone();
            fwht(&mut got);
            assert_eq!(got, want, "n={n}");
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let mut got32 = x32.clone();
            fwht(&mut got32);
            let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
            assert_eq!(got32, want32, "f32 n={n}");
        }
    }

    #[test]
    fn rows_are_transformed_independently() {
        for len in [1, 2, 4, 8, 16, 64, 4096] {
            let rows = 5;
            let data: Vec<f64> = (0..rows * len).map(|i| ((i * 31) % 17) as f64).collect();
            let mut got = data.clone();
            fwht_rows(&mut got, len);
            for r in 0..rows {
                let mut want = data[r * len..(r + 1) * len].to_vec();
                naive(&mut want);
                assert_eq!(&got[r * len..(r + 1) * len], &want[..], "len={len} row={r}");
            }
        }
    }

    #[test]
    fn every_code_path_matches_the_plain_butterfly() {
        // The dispatcher takes one path on this machine; call each one that
        // the CPU can run, for the lengths around the vector widths.
        for k in 0..15 {
            let len = 1usize << k;
            let rows = 3;
            let data: Vec<f64> = (0..rows * len).map(|i| ((i * 7919) % 23) as f64 - 11.0).collect();
            let mut want = data.clone();
            for r in want.chunks_exact_mut(len) {
                naive(r);
            }
            let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
            let data32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
            let mut got = data.clone();
            rows_generic(&mut got, len);
            assert_eq!(got, want, "generic f64 len={len}");
            let mut got32 = data32.clone();
            rows_generic(&mut got32, len);
            assert_eq!(got32, want32, "generic f32 len={len}");
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    let (mut a, mut b) = (data.clone(), data32.clone());
                    // SAFETY: the CPU has the features.
                    unsafe { x86::rows_f64_v3(&mut a, len) };
                    unsafe { x86::rows_f32_v3(&mut b, len) };
                    assert_eq!(a, want, "avx2 f64 len={len}");
                    assert_eq!(b, want32, "avx2 f32 len={len}");
                }
                if std::is_x86_feature_detected!("avx512f") {
                    let (mut a, mut b) = (data.clone(), data32.clone());
                    // SAFETY: the CPU has the features.
                    unsafe { x86::rows_f64_v4(&mut a, len) };
                    unsafe { x86::rows_f32_v4(&mut b, len) };
                    assert_eq!(a, want, "avx512 f64 len={len}");
                    assert_eq!(b, want32, "avx512 f32 len={len}");
                }
            }
        }
    }

    #[test]
    fn applying_twice_scales_by_n() {
        let n = 64;
        let x: Vec<f32> = (0..2 * n).map(|i| i as f32 - 3.0).collect();
        let mut y = x.clone();
        fwht_rows(&mut y, n);
        fwht_rows(&mut y, n);
        for (a, b) in x.iter().zip(&y) {
            assert!((a * n as f32 - b).abs() < 1e-3);
        }
    }
}
