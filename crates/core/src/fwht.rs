//! The fast Walsh–Hadamard transform, in place and unnormalised.
//!
//! `H_n x` for `n = 2^k`, where `H_1 = [1]` and
//! `H_2n = [[H_n, H_n], [H_n, -H_n]]`. Fastfood, SORF and block SRHT all
//! apply it, so it lives here, written once.

use num_traits::Float;

/// Transforms `x` in place by the unnormalised Walsh–Hadamard matrix.
///
/// # Panics
/// `x.len().is_power_of_two()` must hold (an empty slice is a no-op).
pub fn fwht<F: Float>(x: &mut [F]) {
    let n = x.len();
    if n <= 1 {
        return;
    }
    assert!(n.is_power_of_two(), "fwht: length {n} is not a power of two");
    let mut h = 1;
    while h < n {
        for block in x.chunks_exact_mut(2 * h) {
            let (lo, hi) = block.split_at_mut(h);
            for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
                let (u, v) = (*a, *b);
                *a = u + v;
                *b = u - v;
            }
        }
        h *= 2;
    }
}

/// Transforms each consecutive run of `len` elements of `data` in place
/// (the rows of a row-major `(data.len() / len, len)` matrix).
///
/// # Panics
/// `len.is_power_of_two() && data.len() % len == 0` must hold.
pub fn fwht_rows<F: Float>(data: &mut [F], len: usize) {
    assert!(len.is_power_of_two(), "fwht_rows: length {len} is not a power of two");
    assert_eq!(data.len() % len, 0, "fwht_rows: {} elements is not a whole number of rows of {len}", data.len());
    for row in data.chunks_exact_mut(len) {
        fwht(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hadamard(n: usize) -> Vec<Vec<f64>> {
        // H[i][j] = (-1)^{popcount(i & j)}
        (0..n).map(|i| (0..n).map(|j| if (i & j).count_ones() % 2 == 0 { 1.0 } else { -1.0 }).collect()).collect()
    }

    #[test]
    fn matches_the_hadamard_matrix() {
        for k in 0..8 {
            let n = 1usize << k;
            let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let h = hadamard(n);
            let want: Vec<f64> = h.iter().map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum()).collect();
            let mut got = x.clone();
            fwht(&mut got);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12 * n as f64, "n={n}");
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
