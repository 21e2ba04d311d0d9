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

/// The portable kernel (panel width 4, tile 8 × 4): plain Rust,
/// `f64::mul_add`.
///
/// # Safety
/// `a`, `a + a_stride` and `b` must each be valid for `4k` reads; `off`
/// is 0.
pub(crate) unsafe fn portable(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
    const W: usize = 4;
    let Operands { k, a, a_stride, b, off, .. } = ops;
    debug_assert_eq!(off, 0);
    let mut acc = [[0.0f64; 2 * W]; W];
    for r in 0..k {
        let mut x = [0.0; 2 * W];
        for p in 0..2 {
            for i in 0..W {
                // SAFETY: within the panels, as the caller guarantees.
                x[p * W + i] = unsafe { *a.add(p * a_stride + r * W + i) };
            }
        }
        for (j, col) in acc.iter_mut().enumerate() {
            // SAFETY: as above.
            let bj = unsafe { *b.add(r * W + j) };
            for (t, &xi) in col.iter_mut().zip(&x) {
                *t = xi.mul_add(bj, *t);
            }
        }
    }
    for (j, col) in acc.iter().enumerate() {
        tile[j * 2 * W..(j + 1) * 2 * W].copy_from_slice(col);
    }
}

/// The AVX2+FMA kernel (panel width 4, tile 8 × 6): two vector loads and
/// six broadcasts feed twelve FMAs per row, with the twelve accumulators,
/// two loaded vectors and one broadcast in fifteen of the sixteen `ymm`
/// registers. (A 12 × 4 tile needs seventeen once the compiler keeps two
/// broadcasts in flight, and the spilled accumulator halves the rate.)
/// The six columns start at offset `OFF` (0 or 2) of panel `b` and run
/// into panel `b + b_stride`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `a` and `a + a_stride` valid for
/// `4k` reads, `b` and `b + b_stride` too.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_8x6<const OFF: usize>(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
    use std::arch::x86_64::*;
    let Operands { k, a, a_stride, b, b_stride, .. } = ops;
    let (a0, a1) = (a, a.wrapping_add(a_stride));
    let col = |jj: usize| if OFF + jj < 4 { b.wrapping_add(OFF + jj) } else { b.wrapping_add(b_stride + OFF + jj - 4) };
    let bp = [col(0), col(1), col(2), col(3), col(4), col(5)];
    let mut c = [[_mm256_setzero_pd(); 2]; 6];
    for r in 0..k {
        // SAFETY: `4r + 3 < 4k`, inside every panel (caller's contract).
        unsafe {
            let x0 = _mm256_load_pd(a0.add(4 * r));
            let x1 = _mm256_load_pd(a1.add(4 * r));
            for (cj, p) in c.iter_mut().zip(&bp) {
                let y = _mm256_broadcast_sd(&*p.add(4 * r));
                cj[0] = _mm256_fmadd_pd(x0, y, cj[0]);
                cj[1] = _mm256_fmadd_pd(x1, y, cj[1]);
            }
        }
    }
    let t = tile.as_mut_ptr();
    for (j, cj) in c.iter().enumerate() {
        // SAFETY: 8 · 6 ≤ MAX_TILE doubles, column j at 8·j.
        unsafe {
            _mm256_storeu_pd(t.add(8 * j), cj[0]);
            _mm256_storeu_pd(t.add(8 * j + 4), cj[1]);
        }
    }
}

/// [`avx2_8x6`] for a tile whose first column is `j0` (a multiple of 6,
/// so at offset 0 or 2 of its panel).
///
/// # Safety
/// As [`avx2_8x6`].
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn avx2(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
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

/// The AVX-512F kernel (panel width 8, tile 24 × 8).
///
/// # Safety
/// The CPU must support AVX-512F; `a`, `a + a_stride`, `a + 2·a_stride`
/// and `b` valid for `8k` reads each; `off` is 0.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn avx512(ops: Operands<f64>, tile: &mut [f64; MAX_TILE]) {
    use std::arch::x86_64::*;
    let Operands { k, a, a_stride, b, off, .. } = ops;
    debug_assert_eq!(off, 0);
    let (a0, a1, a2) = (a, a.wrapping_add(a_stride), a.wrapping_add(2 * a_stride));
    let mut c = [[_mm512_setzero_pd(); 3]; 8];
    for r in 0..k {
        // SAFETY: `8r + 7 < 8k`, inside every panel (caller's contract).
        unsafe {
            let x = [_mm512_load_pd(a0.add(8 * r)), _mm512_load_pd(a1.add(8 * r)), _mm512_load_pd(a2.add(8 * r))];
            let br = b.add(8 * r);
            for (j, cj) in c.iter_mut().enumerate() {
                let y = _mm512_set1_pd(*br.add(j));
                for (cp, &xp) in cj.iter_mut().zip(&x) {
                    *cp = _mm512_fmadd_pd(xp, y, *cp);
                }
            }
        }
    }
    let t = tile.as_mut_ptr();
    for (j, cj) in c.iter().enumerate() {
        for (p, &v) in cj.iter().enumerate() {
            // SAFETY: 24·8 = MAX_TILE doubles, column j at 24·j.
            unsafe { _mm512_storeu_pd(t.add(24 * j + 8 * p), v) };
        }
    }
}

/// The portable `f32` kernel (panel width 8, tile 16 × 4; the 4 columns
/// start at offset 0 or 4 of their panel).
///
/// # Safety
/// `a`, `a + a_stride` and `b` must each be valid for `8k` reads.
pub(crate) unsafe fn portable_f32(ops: Operands<f32>, tile: &mut [f32; MAX_TILE]) {
    const W: usize = 8;
    let Operands { k, a, a_stride, b, off, .. } = ops;
    debug_assert!(off + 4 <= W);
    let mut acc = [[0.0f32; 2 * W]; 4];
    for r in 0..k {
        let mut x = [0.0; 2 * W];
        for p in 0..2 {
            for i in 0..W {
                // SAFETY: within the panels, as the caller guarantees.
                x[p * W + i] = unsafe { *a.add(p * a_stride + r * W + i) };
            }
        }
        for (j, col) in acc.iter_mut().enumerate() {
            // SAFETY: as above; off + j < W.
            let bj = unsafe { *b.add(r * W + off + j) };
            for (t, &xi) in col.iter_mut().zip(&x) {
                *t = xi.mul_add(bj, *t);
            }
        }
    }
    for (j, col) in acc.iter().enumerate() {
        tile[j * 2 * W..(j + 1) * 2 * W].copy_from_slice(col);
    }
}

/// The AVX2+FMA `f32` kernel (panel width 8, tile 16 × 6): [`avx2_8x6`]
/// with eight lanes. The six columns start at offset `OFF` (0, 2, 4 or 6)
/// of panel `b` and may run into panel `b + b_stride`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `a`, `a + a_stride`, `b` and
/// `b + b_stride` valid for `8k` reads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_16x6<const OFF: usize>(ops: Operands<f32>, tile: &mut [f32; MAX_TILE]) {
    use std::arch::x86_64::*;
    let Operands { k, a, a_stride, b, b_stride, .. } = ops;
    let (a0, a1) = (a, a.wrapping_add(a_stride));
    let col = |jj: usize| if OFF + jj < 8 { b.wrapping_add(OFF + jj) } else { b.wrapping_add(b_stride + OFF + jj - 8) };
    let bp = [col(0), col(1), col(2), col(3), col(4), col(5)];
    let mut c = [[_mm256_setzero_ps(); 2]; 6];
    for r in 0..k {
        // SAFETY: `8r + 7 < 8k`, inside every panel (caller's contract).
        unsafe {
            let x0 = _mm256_load_ps(a0.add(8 * r));
            let x1 = _mm256_load_ps(a1.add(8 * r));
            for (cj, p) in c.iter_mut().zip(&bp) {
                let y = _mm256_broadcast_ss(&*p.add(8 * r));
                cj[0] = _mm256_fmadd_ps(x0, y, cj[0]);
                cj[1] = _mm256_fmadd_ps(x1, y, cj[1]);
            }
        }
    }
    let t = tile.as_mut_ptr();
    for (j, cj) in c.iter().enumerate() {
        // SAFETY: 16 · 6 ≤ MAX_TILE values, column j at 16·j.
        unsafe {
            _mm256_storeu_ps(t.add(16 * j), cj[0]);
            _mm256_storeu_ps(t.add(16 * j + 8), cj[1]);
        }
    }
}

/// [`avx2_16x6`] for a tile whose first column is a multiple of 6.
///
/// # Safety
/// As [`avx2_16x6`].
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

/// The AVX-512F `f32` kernel (panel width 16, tile 48 × 8; the 8 columns
/// start at offset 0 or 8 of their panel).
///
/// # Safety
/// The CPU must support AVX-512F; `a`, `a + a_stride`, `a + 2·a_stride`
/// and `b` valid for `16k` reads each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn avx512_f32(ops: Operands<f32>, tile: &mut [f32; MAX_TILE]) {
    use std::arch::x86_64::*;
    let Operands { k, a, a_stride, b, off, .. } = ops;
    debug_assert!(off + 8 <= 16);
    let (a0, a1, a2) = (a, a.wrapping_add(a_stride), a.wrapping_add(2 * a_stride));
    let mut c = [[_mm512_setzero_ps(); 3]; 8];
    for r in 0..k {
        // SAFETY: `16r + 15 < 16k`, inside every panel (caller's contract).
        unsafe {
            let x = [_mm512_load_ps(a0.add(16 * r)), _mm512_load_ps(a1.add(16 * r)), _mm512_load_ps(a2.add(16 * r))];
            let br = b.add(16 * r + off);
            for (j, cj) in c.iter_mut().enumerate() {
                let y = _mm512_set1_ps(*br.add(j));
                for (cp, &xp) in cj.iter_mut().zip(&x) {
                    *cp = _mm512_fmadd_ps(xp, y, *cp);
                }
            }
        }
    }
    let t = tile.as_mut_ptr();
    for (j, cj) in c.iter().enumerate() {
        for (p, &v) in cj.iter().enumerate() {
            // SAFETY: 48·8 = MAX_TILE values, column j at 48·j.
            unsafe { _mm512_storeu_ps(t.add(48 * j + 16 * p), v) };
        }
    }
}
