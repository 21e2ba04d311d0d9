//! The microkernels: one output tile `T = Σ_r a_r b_rᵀ` over `k` packed rows.
//!
//! A tile has `MR` rows (a few panels of the left operand) and `NR`
//! columns (from one or two panels of the right operand). Every element is
//! the chain `t ← fma(a_ri, b_rj, t)` from `t = 0` over `r = 0, 1, …, k−1`,
//! whatever the instruction set and tile shape, so all kernels give the
//! same bits.
//!
//! | level | panel (f64 / f32) | tile `MR × NR` (f64 / f32) | registers |
//! | --- | --- | --- | --- |
//! | AVX-512 | 8 / 16 | 24 × 8 / 48 × 8 | 24 accumulators + 3 loads + 1 broadcast of 32 |
//! | AVX2+FMA | 4 / 8 | 8 × 6 / 16 × 6 | 12 accumulators + 2 loads + 1 broadcast of 16 |
//! | portable | 4 / 8 | 8 × 4 / 16 × 4 | (compiler's choice) |
//!
//! The `f32` kernels are the `f64` ones with twice the lanes: the chains run
//! in single precision and the driver widens each tile before adding it to
//! the `f64` output.

/// Largest tile, in values (AVX-512 in `f32`: 48 × 8).
pub(crate) const MAX_TILE: usize = 48 * 8;

/// Where a tile's operands are: `k` rows; the left operand's first panel
/// at `a` (the next ones `a_stride` apart); the right operand's tile
/// columns from offset `off` of the panel at `b` on, continuing into
/// `b + b_stride`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands<T> {
    pub(crate) k: usize,
    pub(crate) a: *const T,
    pub(crate) a_stride: usize,
    pub(crate) b: *const T,
    pub(crate) b_stride: usize,
    pub(crate) off: usize,
}

/// A microkernel: writes the tile of `ops` column-major (`MR` rows) into
/// `tile`.
pub(crate) type Kernel<T> = unsafe fn(ops: Operands<T>, tile: &mut [T; MAX_TILE]);

/// The shape of a level's tiles.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Panel width of the packed operands.
    pub(crate) panel: usize,
    /// Left-operand panels per tile (`MR = row_panels · panel`).
    pub(crate) row_panels: usize,
    /// Columns per tile.
    pub(crate) nr: usize,
}

impl Shape {
    pub(crate) fn mr(self) -> usize {
        self.row_panels * self.panel
    }
}

/// The portable kernel for panel width `W` (tile `2W × 4`, the 4 columns
/// from offset `off` of their panel): plain Rust, `mul_add`.
///
/// # Safety
/// `a`, `a + a_stride` and `b` must each be valid for `W·k` reads, and
/// `off + 4 ≤ W`.
unsafe fn portable<T: num_traits::Float, const W: usize>(ops: Operands<T>, tile: &mut [T; MAX_TILE]) {
    let Operands { k, a, a_stride, b, off, .. } = ops;
    debug_assert!(off + 4 <= W);
    let mut acc = [[T::zero(); MAX_TILE / 4]; 4];
    let mut x = [T::zero(); MAX_TILE / 4];
    for r in 0..k {
        for p in 0..2 {
            for i in 0..W {
                // SAFETY: within the panels, as the caller guarantees.
                x[p * W + i] = unsafe { *a.add(p * a_stride + r * W + i) };
            }
        }
        for (j, col) in acc.iter_mut().enumerate() {
            // SAFETY: as above; off + j < W.
            let bj = unsafe { *b.add(r * W + off + j) };
            for (t, &xi) in col[..2 * W].iter_mut().zip(&x[..2 * W]) {
                *t = xi.mul_add(bj, *t);
            }
        }
    }
    for (j, col) in acc.iter().enumerate() {
        tile[j * 2 * W..(j + 1) * 2 * W].copy_from_slice(&col[..2 * W]);
    }
}

/// The portable `f64` kernel (panel width 4, tile 8 × 4).
///
/// # Safety
/// As [`portable`] with `W = 4`.
pub(crate) unsafe fn portable_f64(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
    // SAFETY: forwarded contract.
    unsafe { portable::<f64, 4>(ops, tile) }
}

/// The portable `f32` kernel (panel width 8, tile 16 × 4).
///
/// # Safety
/// As [`portable`] with `W = 8`.
pub(crate) unsafe fn portable_f32(ops: Operands<f32>, tile: &mut [f32; MAX_TILE]) {
    // SAFETY: forwarded contract.
    unsafe { portable::<f32, 8>(ops, tile) }
}

/// Defines an AVX2+FMA kernel with a tile of two panels (`2L` rows, `L`
/// lanes) by 6 columns: two vector loads and six broadcasts feed twelve
/// FMAs per row, with the twelve accumulators, two loaded vectors and one
/// broadcast in fifteen of the sixteen `ymm` registers. (A 12 × 4 `f64`
/// tile needs seventeen once the compiler keeps two broadcasts in flight,
/// and the spilled accumulator halved the rate.) The six columns start at
/// offset `OFF` of panel `b` and may run into panel `b + b_stride`.
macro_rules! avx2_kernel {
    ($name:ident, $t:ty, $lanes:expr, $zero:ident, $load:ident, $bcast:ident, $fma:ident, $store:ident) => {
        /// See `avx2_kernel!`.
        ///
        /// # Safety
        /// The CPU must support AVX2 and FMA; `a`, `a + a_stride`, `b` and
        /// `b + b_stride` valid for `L·k` reads.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name<const OFF: usize>(ops: Operands<$t>, tile: &mut [$t; MAX_TILE]) {
            use std::arch::x86_64::*;
            const L: usize = $lanes;
            let Operands { k, a, a_stride, b, b_stride, .. } = ops;
            let (a0, a1) = (a, a.wrapping_add(a_stride));
            let col = |jj: usize| {
                if OFF + jj < L { b.wrapping_add(OFF + jj) } else { b.wrapping_add(b_stride + OFF + jj - L) }
            };
            let bp = [col(0), col(1), col(2), col(3), col(4), col(5)];
            let mut c = [[$zero(); 2]; 6];
            for r in 0..k {
                // SAFETY: `L·r + L − 1 < L·k`, inside every panel (caller's
                // contract).
                unsafe {
                    let x0 = $load(a0.add(L * r));
                    let x1 = $load(a1.add(L * r));
                    for (cj, p) in c.iter_mut().zip(&bp) {
                        let y = $bcast(&*p.add(L * r));
                        cj[0] = $fma(x0, y, cj[0]);
                        cj[1] = $fma(x1, y, cj[1]);
                    }
                }
            }
            let t = tile.as_mut_ptr();
            for (j, cj) in c.iter().enumerate() {
                // SAFETY: 2L · 6 ≤ MAX_TILE values, column j at 2L·j.
                unsafe {
                    $store(t.add(2 * L * j), cj[0]);
                    $store(t.add(2 * L * j + L), cj[1]);
                }
            }
        }
    };
}

avx2_kernel!(
    avx2_8x6,
    f64,
    4,
    _mm256_setzero_pd,
    _mm256_load_pd,
    _mm256_broadcast_sd,
    _mm256_fmadd_pd,
    _mm256_storeu_pd
);
avx2_kernel!(
    avx2_16x6,
    f32,
    8,
    _mm256_setzero_ps,
    _mm256_load_ps,
    _mm256_broadcast_ss,
    _mm256_fmadd_ps,
    _mm256_storeu_ps
);

/// The AVX2 `f64` kernel for a tile whose first column is a multiple of 6
/// (offset 0 or 2 of its 4-wide panel).
///
/// # Safety
/// As `avx2_8x6`.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn avx2_f64(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
    // SAFETY: forwarded contract.
    unsafe {
        if ops.off == 0 {
            avx2_8x6::<0>(ops, tile)
        } else {
            debug_assert_eq!(ops.off, 2);
            avx2_8x6::<2>(ops, tile)
        }
    }
}

/// The AVX2 `f32` kernel for a tile whose first column is a multiple of 6
/// (offset 0, 2, 4 or 6 of its 8-wide panel).
///
/// # Safety
/// As `avx2_16x6`.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn avx2_f32(ops: Operands<f32>, tile: &mut [f32; MAX_TILE]) {
    // SAFETY: forwarded contract.
    unsafe {
        match ops.off {
            0 => avx2_16x6::<0>(ops, tile),
            2 => avx2_16x6::<2>(ops, tile),
            4 => avx2_16x6::<4>(ops, tile),
            _ => {
                debug_assert_eq!(ops.off, 6);
                avx2_16x6::<6>(ops, tile)
            }
        }
    }
}

/// How many rows ahead the AVX-512 kernels prefetch their four operand
/// lines (a row of a panel is one 64-byte line in both precisions).
///
/// The tile's left operand streams from L2 and its right operand from L2
/// or L3; the hardware prefetchers, following four streams a panel stride
/// apart, left the FMA units waiting. Measured in one process with the
/// variants alternating (`syrk_lower_add` of 512 rows on 2 threads, Xeon
/// with AVX-512): without prefetch and with 8 rows ahead, faster in 20 of
/// 20 pairs at l = 1024 (medians 78 → 94 GFLOP/s) and 20 of 20 at 4096
/// (74 → 85); distances 4 to 32 were within noise of each other, and 16
/// was best in `f32` (144 → 165) and in `AᵀB` (103 → 118). The same
/// prefetch in the AVX2 kernel was slower (47 → 46 and 52 → 48 GFLOP/s on
/// that Xeon), and on a 2-core AMD EPYC (Zen 3) at 8, 16 and 32 rows
/// ahead (a one-off harness, `syrk_lower_add` on 2 threads alternating in
/// one process; 8 rows ahead: 51.4 → 45.0 GFLOP/s at l = 1024, 59.7 →
/// 51.9 at 4096), so the AVX2 kernels have none. A prefetch of an address past the panel's end does
/// not fault; it only fetches a line unused.
#[cfg(target_arch = "x86_64")]
const PREFETCH_ROWS: usize = 16;

/// Defines an AVX-512F kernel with a tile of three panels (`3L` rows, `L`
/// lanes) by 8 columns from offset `off` of one panel: 24 accumulators,
/// three loads and one broadcast of the 32 `zmm` registers, and a
/// prefetch of the four operand lines [`PREFETCH_ROWS`] rows ahead.
macro_rules! avx512_kernel {
    ($name:ident, $t:ty, $lanes:expr, $zero:ident, $load:ident, $set1:ident, $fma:ident, $store:ident) => {
        /// See `avx512_kernel!`.
        ///
        /// # Safety
        /// The CPU must support AVX-512F; `a`, `a + a_stride`,
        /// `a + 2·a_stride` and `b` valid for `L·k` reads each;
        /// `off + 8 ≤ L`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        pub(crate) unsafe fn $name(ops: Operands<$t>, tile: &mut [$t; MAX_TILE]) {
            use std::arch::x86_64::*;
            const L: usize = $lanes;
            let Operands { k, a, a_stride, b, off, .. } = ops;
            debug_assert!(off + 8 <= L);
            let (a0, a1, a2) = (a, a.wrapping_add(a_stride), a.wrapping_add(2 * a_stride));
            let mut c = [[$zero(); 3]; 8];
            for r in 0..k {
                // SAFETY: `L·r + L − 1 < L·k`, inside every panel (caller's
                // contract).
                unsafe {
                    let ahead = L * (r + PREFETCH_ROWS);
                    _mm_prefetch::<_MM_HINT_T0>(a0.wrapping_add(ahead) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(a1.wrapping_add(ahead) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(a2.wrapping_add(ahead) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(b.wrapping_add(ahead) as *const i8);
                    let x = [$load(a0.add(L * r)), $load(a1.add(L * r)), $load(a2.add(L * r))];
                    let br = b.add(L * r + off);
                    for (j, cj) in c.iter_mut().enumerate() {
                        let y = $set1(*br.add(j));
                        for (cp, &xp) in cj.iter_mut().zip(&x) {
                            *cp = $fma(xp, y, *cp);
                        }
                    }
                }
            }
            let t = tile.as_mut_ptr();
            for (j, cj) in c.iter().enumerate() {
                for (p, &v) in cj.iter().enumerate() {
                    // SAFETY: 3L · 8 ≤ MAX_TILE values, column j at 3L·j.
                    unsafe { $store(t.add(3 * L * j + L * p), v) };
                }
            }
        }
    };
}

avx512_kernel!(
    avx512_f64,
    f64,
    8,
    _mm512_setzero_pd,
    _mm512_load_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_storeu_pd
);
avx512_kernel!(
    avx512_f32,
    f32,
    16,
    _mm512_setzero_ps,
    _mm512_load_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_storeu_ps
);
