//! The shared machinery of the Hadamard-based maps (SORF, Fastfood): row
//! tiles, zero padding to a power of two, and scratch buffers reused
//! across the blocks of one call.

use crate::fourier::multiversion;
use ndarray::{ArrayView2, ArrayViewMut2, Axis};

/// Elements per scratch buffer: tiles hold `TILE_ELEMS / d_pad` rows, so
/// that the two buffers of a tile stay in L2 while all blocks run over it.
pub(crate) const TILE_ELEMS: usize = 1 << 14;

/// Rows per tile for padded dimension `d_pad`.
pub(crate) fn tile_rows(d_pad: usize) -> usize {
    (TILE_ELEMS / d_pad).max(1)
}

multiversion! {
    /// `buf[i, j] = x[i, j]·sign[j]` for `j < d`, `0` for `d ≤ j < d_pad`,
    /// over the rows of `x` (`buf` holds `x.nrows()` rows of `d_pad`).
    pub(crate) fn load_signed<T: Real>(x: ArrayView2<'_, T>, sign: &[T], buf: &mut [T], d_pad: usize) {
        let d = x.ncols();
        for (row, dst) in x.axis_iter(Axis(0)).zip(buf.chunks_exact_mut(d_pad)) {
            let (head, tail) = dst.split_at_mut(d);
            match row.as_slice() {
                Some(src) => {
                    for ((o, &v), &s) in head.iter_mut().zip(src).zip(sign) {
                        *o = v * s;
                    }
                }
                None => {
                    for ((o, &v), &s) in head.iter_mut().zip(row.iter()).zip(sign) {
                        *o = v * s;
                    }
                }
            }
            tail.fill(T::zero());
        }
    }
}

multiversion! {
    /// `buf[i, k] *= v[k]` for every row.
    pub(crate) fn scale_rows<T: Real>(buf: &mut [T], v: &[T]) {
        for row in buf.chunks_exact_mut(v.len()) {
            for (o, &s) in row.iter_mut().zip(v) {
                *o = *o * s;
            }
        }
    }
}

multiversion! {
    /// `out[i, off + k] = buf[i, k]·scale[k]` for `k < scale.len()`.
    pub(crate) fn store_scaled<T: Real>(buf: &[T], d_pad: usize, scale: &[T], out: &mut ArrayViewMut2<'_, T>, off: usize) {
        for (src, mut row) in buf.chunks_exact(d_pad).zip(out.axis_iter_mut(Axis(0))) {
            let dst = &mut row.as_slice_mut().expect("tiles have contiguous rows")[off..off + scale.len()];
            for ((o, &v), &s) in dst.iter_mut().zip(src).zip(scale) {
                *o = v * s;
            }
        }
    }
}

multiversion! {
    /// `dst[i, k] = gauss[k]·src[i, perm[k]]` for every row: the `G Π` step of
    /// Fastfood.
    ///
    /// # Panics
    /// Every entry of `perm` must be `< d_pad` (it is a permutation of
    /// `0..d_pad`, checked at construction; checked here per call).
    pub(crate) fn permute_scale<T: Real>(src: &[T], dst: &mut [T], perm: &[u32], gauss: &[T], d_pad: usize) {
        assert!(perm.len() == d_pad && gauss.len() == d_pad && perm.iter().all(|&p| (p as usize) < d_pad));
        for (s, d) in src.chunks_exact(d_pad).zip(dst.chunks_exact_mut(d_pad)) {
            for ((o, &p), &g) in d.iter_mut().zip(perm).zip(gauss) {
                // SAFETY: p < d_pad = s.len(), asserted above.
                *o = g * unsafe { *s.get_unchecked(p as usize) };
            }
        }
    }
}
