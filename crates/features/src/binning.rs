//! Random binning features (Rahimi & Recht 2007, paper 001) for the
//! Laplacian kernel `exp(−‖x−y‖₁/σ)`.
//!
//! Each of `P` grids draws, per input dimension, a pitch `δ ~ Gamma(2, σ)`
//! (the density `δ·k''(δ)` of paper 001's Lemma 1 for `k = e^{−|t|/σ}`) and
//! a shift `u ~ U[0, δ)`. A point falls in bin `⌊(x_j − u_j)/δ_j⌋` along
//! each dimension; two points share a bin in every dimension with
//! probability `Π_j max(0, 1 − |x_j − y_j|/δ_j)`, which averages to the
//! kernel over the pitches.
//!
//! The bin tuple is hashed (with the grid id) into one of `l` buckets, and
//! the feature is `±1/√P` at that bucket, with the sign a second hash of
//! the tuple. The sign makes hash collisions between different bins cancel
//! in expectation, so `E[z(x)ᵀz(y)] = k(x, y)` exactly, for any number of
//! buckets; collisions only add variance (about `1/l`).
//!
//! The output is sparse: exactly `P` stored entries per row
//! ([`OutputKind::Sparse`]).

use crate::error::{FeatureError, Result};
use crate::fourier::{check_shapes, multiversion};
use crate::kernel::Kernel;
use crate::map::{FeatureMap, OutputKind};
use crate::sampling::{self, Family};
use crate::spec::MapSpec;
use kapprox_core::rng::mix64;
use kapprox_core::sparse::SparseRowsViewMut;
use ndarray::{Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use rand::Rng;
use rand_distr::{Distribution, Gamma};

/// Default number of grids `P` (stored entries per row).
pub const DEFAULT_GRIDS: usize = 256;

/// A random binning map for the Laplacian kernel, with sparse output.
///
/// Cost per row: `P·d` floor operations and multiply-adds for the hashes.
/// Parameter memory: `2·P·d` doubles (pitch and shift per grid and
/// dimension).
#[derive(Clone, Debug)]
pub struct RandomBinning {
    kernel: Kernel,
    n_input: usize,
    n_components: usize,
    n_grids: usize,
    seed: u64,
    /// `1/δ`, shape `(d, P)`: dimension-major, so the inner loop over grids
    /// is contiguous.
    inv_pitch: Array2<f64>,
    /// `u/δ`, shape `(d, P)`.
    offset: Array2<f64>,
    /// Per-grid hash seed.
    keys: Vec<u64>,
    /// Per-grid odd hash multiplier.
    muls: Vec<u64>,
}

impl RandomBinning {
    /// Draws `n_grids` random grids for the Laplacian `kernel`, hashed into
    /// `n_components` buckets.
    ///
    /// # Errors
    /// A kernel other than Laplacian; invalid σ; zero sizes; more than
    /// 2³² buckets.
    pub fn new(kernel: Kernel, n_input: usize, n_components: usize, n_grids: usize, seed: u64) -> Result<Self> {
        kernel.check()?;
        let Kernel::Laplacian { sigma } = kernel else {
            return Err(FeatureError::UnsupportedKernel {
                map: "binning",
                kernel: kernel.name(),
                supported: "laplacian",
            });
        };
        if n_input == 0 {
            return Err(FeatureError::InvalidParameter {
                name: "n_input",
                value: "0".into(),
                expected: "at least one input column",
            });
        }
        if n_components == 0 || n_components > u32::MAX as usize {
            return Err(FeatureError::InvalidParameter {
                name: "features",
                value: n_components.to_string(),
                expected: "a number of buckets between 1 and 2^32 - 1",
            });
        }
        if n_grids == 0 {
            return Err(FeatureError::InvalidParameter {
                name: "grids",
                value: "0".into(),
                expected: "a positive number of grids",
            });
        }
        let gamma = Gamma::new(2.0, sigma).expect("checked bandwidth");
        let mut inv_pitch = Array2::zeros((n_input, n_grids));
        let mut offset = Array2::zeros((n_input, n_grids));
        let mut keys = Vec::with_capacity(n_grids);
        let mut muls = Vec::with_capacity(n_grids);
        for p in 0..n_grids {
            let mut r = sampling::stream(seed, Family::Binning, p as u64);
            keys.push(r.random::<u64>());
            muls.push(r.random::<u64>() | 1);
            for j in 0..n_input {
                let delta: f64 = gamma.sample(&mut r);
                let u: f64 = r.random::<f64>();
                inv_pitch[[j, p]] = 1.0 / delta;
                offset[[j, p]] = u;
            }
        }
        Ok(RandomBinning { kernel, n_input, n_components, n_grids, seed, inv_pitch, offset, keys, muls })
    }

    /// Number of grids `P` (stored entries per row).
    pub fn n_grids(&self) -> usize {
        self.n_grids
    }

    #[inline]
    fn bucket(&self, h: u64) -> (u32, f64) {
        let m = mix64(h);
        let bucket = ((m as u128 * self.n_components as u128) >> 64) as u32;
        let sign = if m & 1 == 0 { 1.0 } else { -1.0 };
        (bucket, sign)
    }
}

impl FeatureMap for RandomBinning {
    fn n_input(&self) -> usize {
        self.n_input
    }

    fn n_output(&self) -> usize {
        self.n_components
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::Sparse { nnz_per_row: self.n_grids }
    }

    /// Writes the dense rows (for small `l`; prefer
    /// [`FeatureMap::transform_sparse_into`]).
    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        check_shapes(self.n_input, self.n_components, x.dim(), out.dim());
        let value = 1.0 / (self.n_grids as f64).sqrt();
        let mut h = vec![0u64; self.n_grids];
        for (row, mut o) in x.axis_iter(Axis(0)).zip(out.axis_iter_mut(Axis(0))) {
            o.fill(0.0);
            hash_row(row, self.inv_pitch.view(), self.offset.view(), &self.keys, &self.muls, &mut h);
            for &hp in &h {
                let (bucket, sign) = self.bucket(hp);
                o[bucket as usize] += sign * value;
            }
        }
    }

    fn transform_sparse_into(&self, x: ArrayView2<'_, f64>, mut out: SparseRowsViewMut<'_>) {
        assert_eq!(x.ncols(), self.n_input, "transform: x has {} columns, the map takes {}", x.ncols(), self.n_input);
        assert_eq!(out.n_cols, self.n_components, "transform: sparse rows have {} columns", out.n_cols);
        let shape = (x.nrows(), self.n_grids);
        assert_eq!(out.indices.dim(), shape, "transform: sparse indices have the wrong shape");
        assert_eq!(out.values.dim(), shape, "transform: sparse values have the wrong shape");
        let value = 1.0 / (self.n_grids as f64).sqrt();
        let mut h = vec![0u64; self.n_grids];
        for ((row, mut idx), mut val) in
            x.axis_iter(Axis(0)).zip(out.indices.axis_iter_mut(Axis(0))).zip(out.values.axis_iter_mut(Axis(0)))
        {
            hash_row(row, self.inv_pitch.view(), self.offset.view(), &self.keys, &self.muls, &mut h);
            for ((&hp, i), v) in h.iter().zip(idx.iter_mut()).zip(val.iter_mut()) {
                let (bucket, sign) = self.bucket(hp);
                *i = bucket;
                *v = sign * value;
            }
        }
    }

    fn spec(&self) -> MapSpec {
        MapSpec::Binning {
            kernel: self.kernel,
            n_input: self.n_input,
            n_components: self.n_components,
            n_grids: self.n_grids,
            seed: self.seed,
        }
    }

    fn parameter_bytes(&self) -> usize {
        (self.inv_pitch.len() + self.offset.len()) * 8 + (self.keys.len() + self.muls.len()) * 8
    }
}

multiversion! {
    /// The hash of each grid's bin tuple for one row, through the per-grid
    /// polynomial hash `h ← h·K + bin_j` (mixed and reduced to a bucket and
    /// a sign by the caller).
    /// The loop over grids is innermost so that it vectorises (64-bit
    /// multiply and float-to-int conversion need AVX-512 DQ; the baseline
    /// would call libm's `floor` per element).
    fn hash_row(row: ArrayView1<'_, f64>, inv_pitch: ArrayView2<'_, f64>, offset: ArrayView2<'_, f64>, keys: &[u64], muls: &[u64], h: &mut [u64]) {
        h.copy_from_slice(keys);
        for ((&x, inv), off) in row.iter().zip(inv_pitch.rows()).zip(offset.rows()) {
            let (inv, off) = (inv.as_slice().expect("standard layout"), off.as_slice().expect("standard layout"));
            for (((hp, &mul), &a), &b) in h.iter_mut().zip(muls).zip(inv).zip(off) {
                let bin = saturating_i64((x * a - b).floor());
                *hp = hp.wrapping_mul(mul).wrapping_add(bin as u64);
            }
        }
    }
}

/// `v as i64` (saturating, NaN to 0) in a form that vectorises: the
/// conversion of a value clamped into range, then the two cases the clamp
/// changed. Rust's `as` lowered to a compare and branch per lane, which
/// kept [`hash_row`] scalar (61 % of a binning fit's cycles at d = 100).
#[inline(always)]
fn saturating_i64(v: f64) -> i64 {
    // −2⁶³ converts exactly; the largest double below 2⁶³ is 2⁶³ − 1024.
    const LOW: f64 = -9_223_372_036_854_775_808.0;
    const HIGH: f64 = 9_223_372_036_854_774_784.0;
    // `max` takes LOW for NaN, so the argument is always in range (`clamp`
    // would pass NaN through, and converting it unchecked is undefined).
    #[allow(clippy::manual_clamp)]
    let clamped = v.max(LOW).min(HIGH);
    // SAFETY: `clamped` is finite and in [−2⁶³, 2⁶³ − 1024], which i64 holds.
    let converted = unsafe { clamped.to_int_unchecked::<i64>() };
    if v > HIGH {
        i64::MAX
    } else if v.is_nan() {
        0
    } else {
        converted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vectorisable_conversion_is_rusts_saturating_cast() {
        let two63 = 9_223_372_036_854_775_808.0f64;
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            12345.0,
            -98765.0,
            1e18,
            -1e18,
            two63,
            -two63,
            two63 - 1024.0,
            -two63 - 2048.0,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
        ];
        values.extend((0..200).map(|i| ((i as f64 - 100.0) * 1.37e16).floor()));
        for v in values {
            assert_eq!(saturating_i64(v), v as i64, "{v:e}");
        }
    }
}
