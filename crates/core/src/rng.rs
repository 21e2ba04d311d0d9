//! Randomness addressed by `(seed, domain, index)`.
//!
//! kapprox never streams random state through a computation. Every random
//! quantity is a pure function of the user's seed, a [`Domain`] that says what
//! it is for, and an index that says which one (a block of a frequency
//! matrix, a data row, ...). That is what makes a model independent of chunk
//! size, shard layout and worker count: any process can regenerate the Θ row
//! of data row `i` or the frequencies of block `b` on its own.
//!
//! Two tools:
//! - [`stream`] returns a ChaCha8 generator keyed by the full address (no
//!   hashing, so distinct addresses never collide). Use it when one address
//!   needs many numbers (a frequency block, a Θ row).
//! - [`hash64`] / [`unit`](fn@unit) return one well-mixed number per address. Use it
//!   for per-row decisions (split membership, CountSketch buckets, reservoir
//!   priorities).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a random quantity is for. Distinct domains give independent streams
/// for the same seed and index.
///
/// Every domain used anywhere in kapprox is listed here, so that two
/// components can never draw from the same stream by accident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Domain(pub u64);

impl Domain {
    /// Parameters of a data-independent feature map (frequencies, phases,
    /// signs, permutations). The index encodes the map's component/block.
    pub const FEATURE_MAP: Domain = Domain(0x01);
    /// A second, independent stream for composite maps (e.g. the projection
    /// of Comp on top of its inner RFF).
    pub const FEATURE_MAP_AUX: Domain = Domain(0x02);
    /// Row `i` of a Gaussian sketch matrix Θ (index = global row id).
    pub const SKETCH_GAUSSIAN: Domain = Domain(0x10);
    /// Signs and sampled rows of block SRHT (index = row block id or row id).
    pub const SKETCH_SRHT: Domain = Domain(0x11);
    /// CountSketch bucket and sign of a row (index = global row id).
    pub const SKETCH_COUNT: Domain = Domain(0x12);
    /// Columns and signs of row `j` of a sparse sign test matrix (index =
    /// `j`, the column of `FᵀF` it weights).
    pub const SKETCH_SPARSE_SIGN: Domain = Domain(0x13);
    /// Reservoir priorities (index = global row id).
    pub const RESERVOIR: Domain = Domain(0x20);
    /// Train / validation / fold assignment (index = global row id).
    pub const SPLIT: Domain = Domain(0x30);
    /// Train / test assignment of `kapprox split` (index = global row id);
    /// distinct from [`Domain::SPLIT`] so that a test split and a later
    /// validation split with the same seed are independent.
    pub const TEST_SPLIT: Domain = Domain(0x31);
    /// Start vectors of Lanczos iterations (index = block number).
    pub const SOLVE_LANCZOS: Domain = Domain(0x40);
    /// Synthetic datasets of `kapprox generate`: the target function
    /// (index 0) and the rows of block `b` (index = b + 1).
    pub const GENERATE: Domain = Domain(0x50);
}

/// A ChaCha8 generator keyed by `(seed, domain, index)`.
///
/// The key is the address itself, laid out in the 256-bit ChaCha key, so
/// distinct addresses give independent streams and the result is the same on
/// every platform.
pub fn stream(seed: u64, domain: Domain, index: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[0..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&domain.0.to_le_bytes());
    key[16..24].copy_from_slice(&index.to_le_bytes());
    key[24..32].copy_from_slice(b"kapprox1");
    ChaCha8Rng::from_seed(key)
}

/// The SplitMix64 finaliser: a bijective, well-mixing function of 64 bits.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One well-mixed 64-bit number for the address `(seed, domain, index)`.
#[inline]
pub fn hash64(seed: u64, domain: Domain, index: u64) -> u64 {
    let a = mix64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let b = mix64(a ^ domain.0.wrapping_mul(0xd6e8_feb8_6659_fd93));
    mix64(b ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A uniform number in `[0, 1)` for the address `(seed, domain, index)`,
/// with 53 random bits.
#[inline]
pub fn unit(seed: u64, domain: Domain, index: u64) -> f64 {
    (hash64(seed, domain, index) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_pure_functions_of_the_address() {
        let a: Vec<u64> = (0..4).map(|_| 0).collect();
        let mut r1 = stream(7, Domain::FEATURE_MAP, 3);
        let mut r2 = stream(7, Domain::FEATURE_MAP, 3);
        let x: Vec<u64> = a.iter().map(|_| r1.random()).collect();
        let y: Vec<u64> = a.iter().map(|_| r2.random()).collect();
        assert_eq!(x, y);
        let mut r3 = stream(7, Domain::FEATURE_MAP, 4);
        let z: Vec<u64> = a.iter().map(|_| r3.random()).collect();
        assert_ne!(x, z);
        let mut r4 = stream(7, Domain::SKETCH_GAUSSIAN, 3);
        let w: Vec<u64> = a.iter().map(|_| r4.random()).collect();
        assert_ne!(x, w);
    }

    #[test]
    fn unit_is_uniform_enough() {
        // Mean of 1e5 uniforms has standard deviation 1/sqrt(12e5) ~ 9e-4;
        // allow 5 sigma.
        let n = 100_000u64;
        let mean: f64 = (0..n).map(|i| unit(1, Domain::SPLIT, i)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 5.0 * 9.2e-4, "mean {mean}");
        // Fraction below 0.2 has sd sqrt(0.16/1e5) ~ 1.3e-3.
        let frac = (0..n).filter(|&i| unit(1, Domain::SPLIT, i) < 0.2).count() as f64 / n as f64;
        assert!((frac - 0.2).abs() < 5.0 * 1.3e-3, "fraction {frac}");
    }
}
