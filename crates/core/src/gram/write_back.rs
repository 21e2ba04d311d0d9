//! Adding a microkernel's tile to `C`: whole tiles with their shape known
//! at compile time, in either layout, and the prefetches that ask for
//! `C`'s lines before the tile is computed.

use super::Layout;
use super::kernels::{self, MAX_TILE};
use super::pack::Element;

/// Adds `alpha ·` a whole `MR × NR` tile at `(i0, j0)` of `C` in
/// `layout`, with the tile shape known at compile time for the kernels'
/// shapes, so that the write-back runs in whole columns (column-major), or
/// whole panels (the symmetric layout's row `gj`, the tile's column) and
/// fixed offsets (its mirror).
///
/// # Safety
/// As `Product::block`; for the symmetric layout the tile lies strictly
/// below the diagonal.
#[inline(always)]
pub(super) unsafe fn whole_tile<T: Element>(
    c: *mut f64,
    layout: Layout,
    i0: usize,
    j0: usize,
    shape: kernels::Shape,
    alpha: f64,
    tile: &[T; MAX_TILE],
) {
    // SAFETY: forwarded contract.
    unsafe {
        match (layout, shape.panel, shape.mr(), shape.nr) {
            (Layout::ColumnMajor { ldc }, _, 8, 6) => column_tile::<T, 8, 6>(c, i0, j0, ldc, alpha, tile),
            (Layout::ColumnMajor { ldc }, _, 24, 8) => column_tile::<T, 24, 8>(c, i0, j0, ldc, alpha, tile),
            (Layout::ColumnMajor { ldc }, _, 8, 4) => column_tile::<T, 8, 4>(c, i0, j0, ldc, alpha, tile),
            (Layout::ColumnMajor { ldc }, _, 16, 6) => column_tile::<T, 16, 6>(c, i0, j0, ldc, alpha, tile),
            (Layout::ColumnMajor { ldc }, _, 48, 8) => column_tile::<T, 48, 8>(c, i0, j0, ldc, alpha, tile),
            (Layout::ColumnMajor { ldc }, _, 16, 4) => column_tile::<T, 16, 4>(c, i0, j0, ldc, alpha, tile),
            (Layout::Symmetric { start, stride, .. }, 4, 8, 6) => {
                symmetric_tile::<T, 4, 8, 6>(c, start + i0, start + j0, stride, alpha, tile)
            }
            (Layout::Symmetric { start, stride, .. }, 8, 24, 8) => {
                symmetric_tile::<T, 8, 24, 8>(c, start + i0, start + j0, stride, alpha, tile)
            }
            (Layout::Symmetric { start, stride, .. }, 4, 8, 4) => {
                symmetric_tile::<T, 4, 8, 4>(c, start + i0, start + j0, stride, alpha, tile)
            }
            (layout, w, mr, nr) => {
                for jj in 0..nr {
                    for ii in 0..mr {
                        let v = alpha * tile[jj * mr + ii].to_f64();
                        let (i, j) = (i0 + ii, j0 + jj);
                        match layout {
                            Layout::ColumnMajor { ldc } => *c.add(j * ldc + i) += v,
                            Layout::Symmetric { start, stride, .. } => {
                                let (gi, gj) = (start + i, start + j);
                                *c.add((gi / w) * stride + gj * w + gi % w) += v;
                                *c.add((gj / w) * stride + gi * w + gj % w) += v;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// [`whole_tile`] into a column-major `C`.
///
/// # Safety
/// As [`whole_tile`].
#[inline(always)]
unsafe fn column_tile<T: Element, const MR: usize, const NR: usize>(
    c: *mut f64,
    i0: usize,
    j0: usize,
    ldc: usize,
    alpha: f64,
    tile: &[T; MAX_TILE],
) {
    for jj in 0..NR {
        // SAFETY: rows i0..i0 + MR of column j0 + jj are inside C.
        let col = unsafe { c.add((j0 + jj) * ldc + i0) };
        for ii in 0..MR {
            unsafe { *col.add(ii) += alpha * tile[jj * MR + ii].to_f64() };
        }
    }
}

/// Asks the cache for the lines a whole tile at rows `i0..i0 + mr` and
/// columns `j0..j0 + nr` of `C` will be added to, before the microkernel
/// computes it: the columns' runs (column-major), or the tile and its
/// mirror (the symmetric layout).
///
/// Why: the tile's lines lie a column (`ldc`) or a whole panel (`stride`)
/// apart, megabytes at large `l`, which no hardware prefetcher follows,
/// and `C` is far larger than the cache. Without this, the band
/// reduction's rank-`2b` updates waited on those misses in the write-back
/// (10 % of its profile at l = 4096, AMD EPYC), and the pass's `Moments`
/// update ran slower on a 2-core Xeon with AVX-512: 40 pairs of 512-row
/// products, with and without, alternating in one process (a one-off
/// harness), were faster with it in 36 pairs at l = 4096 (medians 75.8 →
/// 79.8 GFLOP/s), 34 at 2048 (76.1 → 80.7) and 27 at 1024 (83.1 → 85.2),
/// where more of `C` stays in cache.
#[inline(always)]
pub(super) fn prefetch_tile(c: *mut f64, layout: Layout, i0: usize, j0: usize, mr: usize, nr: usize) {
    match layout {
        Layout::ColumnMajor { ldc } => {
            for j in j0..j0 + nr {
                prefetch_run(c, j * ldc + i0, j * ldc + i0 + mr);
            }
        }
        Layout::Symmetric { start, shift, stride } => {
            prefetch_symmetric_tile(c, start + i0, start + j0, shift, stride, mr, nr)
        }
    }
}

/// The lines of a whole tile's write-back in the symmetric layout (see
/// [`prefetch_tile`]).
#[inline(always)]
fn prefetch_symmetric_tile(c: *mut f64, gi0: usize, gj0: usize, shift: u32, stride: usize, mr: usize, nr: usize) {
    let w = 1usize << shift;
    // The tile: rows gj0.. of the panels of columns gi0..; its mirror: rows
    // gi0.. of the panels of columns gj0...
    for (rows, panels) in [(gj0..gj0 + nr, gi0..gi0 + mr), (gi0..gi0 + mr, gj0..gj0 + nr)] {
        for p in (panels.start >> shift)..=((panels.end - 1) >> shift) {
            let first = p * stride + rows.start * w;
            prefetch_run(c, first, first + rows.len() * w);
        }
    }
}

/// Prefetches the lines of `c[from..to]` (a hint: no access, no fault).
#[inline(always)]
fn prefetch_run(c: *mut f64, from: usize, to: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut at = from;
        while at < to {
            // SAFETY: a prefetch reads nothing and cannot fault.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(c.wrapping_add(at).cast::<i8>())
            };
            at += 8;
        }
        // The run's last line when it starts mid-line.
        // SAFETY: as above.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(c.wrapping_add(to - 1).cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (c, from, to);
}

/// [`whole_tile`] into the symmetric layout of panel width `W`, at rows
/// `gi0..` (a multiple of `W`) and columns `gj0..` of the whole matrix.
///
/// # Safety
/// As [`whole_tile`].
#[inline(always)]
unsafe fn symmetric_tile<T: Element, const W: usize, const MR: usize, const NR: usize>(
    c: *mut f64,
    gi0: usize,
    gj0: usize,
    stride: usize,
    alpha: f64,
    tile: &[T; MAX_TILE],
) {
    debug_assert!(gi0.is_multiple_of(W));
    // SAFETY: forwarded contract; every offset is an element of the tile's
    // two images.
    unsafe {
        // Column jj of the tile is row gj0 + jj of the layout, whole panels.
        for jj in 0..NR {
            let row = c.add((gi0 / W) * stride + (gj0 + jj) * W);
            for p in 0..MR / W {
                let dst = row.add(p * stride);
                for q in 0..W {
                    *dst.add(q) += alpha * tile[jj * MR + p * W + q].to_f64();
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if T::IS_F64 && W == 8 && NR == 8 && MR.is_multiple_of(8) && gj0.is_multiple_of(8) {
            // Panels 8 wide are AVX-512's, so the CPU runs it.
            mirror_blocks_avx512::<MR>(c.add((gj0 / W) * stride + gi0 * W), alpha, tile.as_ptr().cast::<f64>());
            return;
        }
        // Row ii of the tile is row gi0 + ii of the layout, columns gj0...
        let cols: [usize; NR] = std::array::from_fn(|jj| ((gj0 + jj) / W) * stride + (gj0 + jj) % W);
        for ii in 0..MR {
            let row = c.add((gi0 + ii) * W);
            for jj in 0..NR {
                *row.add(cols[jj]) += alpha * tile[jj * MR + ii].to_f64();
            }
        }
    }
}

/// The mirror half of [`symmetric_tile`] for an AVX-512 tile of `MR`
/// rows by 8 columns that are one whole panel (`gj0` a multiple of 8):
/// rows `gi0 + ii` of that panel, contiguous from `dst` on, get the tile's
/// row `ii`, i.e. every 8 × 8 block of the column-major tile transposed.
/// In registers (unpack pairs of columns, then two rounds of 128-bit lane
/// shuffles), where the scalar loop gathered each value at a stride of
/// `MR`. Each sum is `dst + alpha·t` with the product rounded first, as in
/// the scalar loop: the same bits.
///
/// Why: the band reduction's rank-128 updates write every tile twice. In
/// a one-off harness (30 pairs of `symmetric_update` with and without it,
/// alternating in one process, 2-core Xeon) it was faster in 28 pairs at
/// n = 4096 (medians 63.6 → 69.5 GFLOP/s) and 29 at 2048 (61.4 → 65.2).
///
/// # Safety
/// AVX-512F available; `dst` valid for `MR · 8` values, `tile` for
/// `MR · 8` (column-major, `MR` rows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn mirror_blocks_avx512<const MR: usize>(dst: *mut f64, alpha: f64, tile: *const f64) {
    use std::arch::x86_64::*;
    let a = _mm512_set1_pd(alpha);
    for b in 0..MR / 8 {
        // SAFETY: column jj of block b is tile[jj·MR + 8b ..][..8]; row q of
        // block b goes to dst[(8b + q)·8 ..][..8], inside the caller's ranges.
        unsafe {
            let v: [__m512d; 8] = std::array::from_fn(|jj| _mm512_loadu_pd(tile.add(jj * MR + 8 * b)));
            // t[2i] = (v[2i][0], v[2i+1][0], v[2i][2], v[2i+1][2], …), t[2i+1]
            // the same for the odd rows.
            let t: [__m512d; 8] = std::array::from_fn(|i| {
                let (x, y) = (v[i & !1], v[i | 1]);
                if i % 2 == 0 { _mm512_unpacklo_pd(x, y) } else { _mm512_unpackhi_pd(x, y) }
            });
            // 128-bit lanes (0, 2) (imm 0x88) or (1, 3) (0xDD) of two vectors.
            let lanes = |even: bool, x: __m512d, y: __m512d| {
                if even { _mm512_shuffle_f64x2::<0x88>(x, y) } else { _mm512_shuffle_f64x2::<0xDD>(x, y) }
            };
            // First rows {0, 4} / {1, 5} / {2, 6} / {3, 7} of columns 0–3
            // (u[0..4]) and of columns 4–7 (u[4..8]), then each row whole.
            let u: [__m512d; 8] = std::array::from_fn(|k| {
                let (g, h) = (4 * (k / 4), k % 4);
                lanes(h < 2, t[g + (h & 1)], t[g + 2 + (h & 1)])
            });
            let rows: [__m512d; 8] = std::array::from_fn(|q| lanes(q < 4, u[q % 4], u[q % 4 + 4]));
            for (q, &r) in rows.iter().enumerate() {
                let at = dst.add((8 * b + q) * 8);
                _mm512_storeu_pd(at, _mm512_add_pd(_mm512_loadu_pd(at), _mm512_mul_pd(a, r)));
            }
        }
    }
}
