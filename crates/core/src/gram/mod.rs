//! The Gram products of the ridge statistics: `C += α·AᵀA` (lower triangle)
//! and `C += α·AᵀB`, over blocks of packed rows.
//!
//! # Why a kernel of our own
//!
//! These two products are what a fit spends its time on: every row of the
//! data adds its outer product to `ZᵀZ` (and TEFM's sketches add `FᵀΘ`), so
//! the pass costs `n · l²` flops however the rest is written. faer's general
//! triangular GEMM reaches the machine's peak on one core but, split into a
//! fixed number of tasks for reproducibility, left the second core mostly
//! idle on these shapes (measured in issue 15: ~40 GFLOP/s where 75–85 are
//! possible on two cores). A kernel for exactly this product is small, and
//! it buys three things at once:
//!
//! - **Reproducibility for free.** Every output element is computed by one
//!   task as fused-multiply-add chains over the rows in row order, one per
//!   chunk of [`KC`] rows, each starting from zero and added to `C` in
//!   turn. Which partial sums are combined is fixed by the row count
//!   alone, so the bits do not depend on the thread count, the task
//!   split, the block sizes or the instruction set: any work distribution
//!   can use every core.
//! - **Runtime dispatch.** AVX-512 (24 × 8 tiles), AVX2+FMA (8 × 6) or
//!   portable Rust, chosen at run time ([`Simd::detect`]); one binary runs
//!   everywhere.
//! - **No packing pass.** The operands are [`PackedRows`], which producers
//!   (e.g. [`Moments`](crate::Moments)) write rows into directly.
//! - **Single precision where it is enough.** `PackedRows<f32>` runs the
//!   same products with twice the lanes: each block's chains in `f32`,
//!   widened and added to the `f64` output (see [`Element`]).
//!
//! Blocking (BLIS order): a task owns an `MC × NC` block of `C`; for each
//! chunk of [`KC`] rows and each tile's worth of columns of the right
//! operand (`KC · NR` doubles, meant to stay in L1) it sweeps the block's
//! row tiles (the left operand's `MC × KC` block, meant to stay in L2).
//! `MC`, `NC` and `KC` were chosen by measurement (`ridge_accumulate`
//! bench, and TEFM's range finder, whose products run over `d` rows).
//!
//! Cost: `k · m · n · 2` flops for [`gemm_tn_add`], `k · n · (n + 1)` for
//! [`syrk_lower_add`] and [`gemm_tn_lower_add`] (lower triangle only, up to
//! tile granularity).

mod kernels;
mod pack;
mod symmetric;

pub use pack::{Element, Microkernel, PackedRows};
pub use symmetric::PackedSymmetric;

use crate::cpu::Simd;
use faer::Par;
use kernels::{MAX_TILE, Operands};
use ndarray::ArrayViewMut2;
use rayon::prelude::*;
use std::ops::Range;

/// Rows of `C` per task block (rounded to whole tiles).
const MC: usize = 96;
/// Columns of `C` per task block (rounded to whole tiles).
const NC: usize = 240;
/// Below this many flops a product runs on the calling thread only.
const PARALLEL_FLOPS: f64 = 4.0e6;

/// `C_lower += alpha · AᵀA` for the rows of `a`, touching only the lower
/// triangle of `c (n_cols, n_cols)`.
///
/// Bitwise the same for every `par`, thread count and instruction set.
/// `par = Par::Seq` runs on the calling thread; any `Par::Rayon` uses the
/// whole current rayon pool.
///
/// Cost: `a.len() · n_cols · (n_cols + 1)` flops.
///
/// # Panics
/// `c.dim() == (a.n_cols(), a.n_cols())` must hold, and the CPU must run
/// `a.simd()`.
#[track_caller]
pub fn syrk_lower_add<T: Element>(c: ArrayViewMut2<'_, f64>, a: &PackedRows<T>, alpha: f64, par: Par) {
    let n = a.n_cols();
    assert_eq!(c.dim(), (n, n), "syrk_lower_add: C is {:?}, A has {n} columns", c.dim());
    product(c, a, a, alpha, true, par);
}

/// `C += alpha · AᵀB` for `a (k, m)` and `b (k, n)` packed with the same
/// number of rows, `c (m, n)`.
///
/// Bitwise the same for every `par`, thread count and instruction set.
///
/// Cost: `2 · k · m · n` flops.
///
/// # Panics
/// `c.dim() == (a.n_cols(), b.n_cols())`, `a.len() == b.len()`, both
/// packed for the same available instruction set.
#[track_caller]
pub fn gemm_tn_add<T: Element>(c: ArrayViewMut2<'_, f64>, a: &PackedRows<T>, b: &PackedRows<T>, alpha: f64, par: Par) {
    check_operands("gemm_tn_add", c.dim(), a, b);
    product(c, a, b, alpha, false, par);
}

/// The lower triangle of `C += alpha · AᵀB` (square `c (m, m)`, `a (k, m)`,
/// `b (k, m)`): e.g. a symmetric rank-`2k` update `C −= [W V]ᵀ[V W]`
/// written as one product over `2k` packed rows.
///
/// Bitwise the same for every `par`, thread count and instruction set.
///
/// Cost: `k · m · (m + 1)` flops.
///
/// # Panics
/// As [`gemm_tn_add`], and `c` must be square.
#[track_caller]
pub fn gemm_tn_lower_add<T: Element>(
    c: ArrayViewMut2<'_, f64>,
    a: &PackedRows<T>,
    b: &PackedRows<T>,
    alpha: f64,
    par: Par,
) {
    assert_eq!(c.nrows(), c.ncols(), "gemm_tn_lower_add: C is {:?}, not square", c.dim());
    check_operands("gemm_tn_lower_add", c.dim(), a, b);
    product(c, a, b, alpha, true, par);
}

/// `C += alpha · AᵀB` (as [`gemm_tn_add`]) with triangular rows in either
/// operand: the leading rows of `a` that `a_triangle` names are upper
/// (zero in every column `< r`) or lower triangular (zero in every column
/// `> r`), and rows `0..b_upper` of `b` upper triangular. The chains skip the
/// zeros, and a tile skips whole chunks of [`KC`] rows past its last
/// nonzero row: `C = LᵀU` for a lower `L` and an upper `U` costs about a
/// third of the dense product, `AᵀU` for a dense `A` or `LᵀB` for a dense
/// `B` about half.
///
/// Bitwise the same for every `par`, thread count and instruction set,
/// and the same as [`gemm_tn_add`] as long as the operands are finite.
///
/// # Panics
/// As [`gemm_tn_add`], and each count at most its operand's rows.
#[track_caller]
pub fn gemm_tn_add_triangular(
    c: ArrayViewMut2<'_, f64>,
    a: &PackedRows<f64>,
    a_triangle: Triangle,
    b: &PackedRows<f64>,
    b_upper: usize,
    alpha: f64,
    par: Par,
) {
    check_operands("gemm_tn_add_triangular", c.dim(), a, b);
    let zeros = match a_triangle {
        Triangle::Upper(rows) => Zeros { a_upper: rows, b_upper, a_lower: 0 },
        Triangle::Lower(rows) => Zeros { a_lower: rows, b_upper, a_upper: 0 },
    };
    assert!(
        zeros.a_upper.max(zeros.a_lower) <= a.len() && b_upper <= b.len(),
        "gemm_tn_add_triangular: triangular rows beyond the operands ({a_triangle:?} of {}, {b_upper} of {})",
        a.len(),
        b.len()
    );
    product_with(c, a, b, alpha, false, zeros, par);
}

/// The zero structure of the first rows of a product's left operand: the
/// number of leading rows that are upper or lower triangular.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Triangle {
    /// Rows `0..n` are zero left of their own column.
    Upper(usize),
    /// Rows `0..n` are zero right of their own column.
    Lower(usize),
}

/// Rows per chunk of every product: each chunk's chains start from zero
/// and are added to `C` in turn (so a `Moments` block of 512 rows is one
/// chain per element).
///
/// Why chunks: a task's left block (`MC × KC` doubles, 393 KB) then stays
/// in L2 while the task sweeps its columns. Over all `k` rows at once, the
/// products of TEFM's range finder (`k = d = 4096`) streamed a 3 MB block
/// from L3 for every tile column and ran at 63–69 GFLOP/s against 90 in
/// chunks (a TEFM-G fit at l = 1024 on a 2-core Xeon with AVX-512 and
/// 2 MB of L2 per core, scratch timers). On a 2-core AMD EPYC the chunks
/// had measured neither faster nor slower at `4098²`.
pub const KC: usize = 512;

/// The shape checks of an `AᵀB` product into `c_dim`.
#[track_caller]
fn check_operands<T: Element>(what: &str, c_dim: (usize, usize), a: &PackedRows<T>, b: &PackedRows<T>) {
    assert_eq!(
        c_dim,
        (a.n_cols(), b.n_cols()),
        "{what}: C is {c_dim:?}, A has {} and B {} columns",
        a.n_cols(),
        b.n_cols()
    );
    assert_eq!(a.len(), b.len(), "{what}: A has {} rows, B has {}", a.len(), b.len());
    assert_eq!(a.simd(), b.simd(), "{what}: operands packed for different instruction sets");
}

#[track_caller]
fn product<T: Element>(
    c: ArrayViewMut2<'_, f64>,
    a: &PackedRows<T>,
    b: &PackedRows<T>,
    alpha: f64,
    lower: bool,
    par: Par,
) {
    product_with(c, a, b, alpha, lower, Zeros::default(), par);
}

/// [`product`] with known zeros in the operands.
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn product_with<T: Element>(
    mut c: ArrayViewMut2<'_, f64>,
    a: &PackedRows<T>,
    b: &PackedRows<T>,
    alpha: f64,
    lower: bool,
    zeros: Zeros,
    par: Par,
) {
    let simd = a.simd();
    assert!(simd.is_available(), "rows packed for {}, which this CPU does not run", simd.name());
    let (m, n) = c.dim();
    if m == 0 || n == 0 || a.is_empty() {
        return;
    }
    // The kernels write columns of C with unit stride; other layouts go
    // through a column-major copy (not a hot path: Moments and the sketches
    // keep C column-major).
    if c.strides()[0] == 1 && c.strides()[1] >= m as isize {
        let ldc = c.strides()[1] as usize;
        let w = a.panel_width();
        debug_assert!(m.div_ceil(w) < a.n_panels() && n.div_ceil(w) < b.n_panels());
        let product = Product {
            simd,
            c: Out(c.as_mut_ptr()),
            layout: Layout::ColumnMajor { ldc },
            m,
            n,
            k: a.len(),
            a: Operand::whole(a),
            b: Operand::whole(b),
            alpha,
            lower,
            zeros,
        };
        // SAFETY: c is a live (m, n) view with unit row stride and column
        // stride ldc ≥ m, borrowed mutably for the call; a and b are whole
        // packed blocks of a.len() rows.
        unsafe { product.run(is_parallel(par, a.len(), m, n)) };
    } else {
        let mut t = crate::buffer::zeros((m, n), true);
        t.assign(&c);
        product_with(t.view_mut(), a, b, alpha, lower, zeros, par);
        if lower {
            for j in 0..n {
                for i in j..m {
                    c[[i, j]] = t[[i, j]];
                }
            }
        } else {
            c.assign(&t);
        }
    }
}

/// The Gram kernel's parallelism for a faer one: the kernel's bits do not
/// depend on its split, so any parallel faer setting runs it on the whole
/// pool.
pub fn gram_par(par: Par) -> Par {
    if matches!(par, Par::Seq) { Par::Seq } else { Par::rayon(0) }
}

/// Whether a product of `k` rows into an `(m, n)` output is worth the pool.
fn is_parallel(par: Par, k: usize, m: usize, n: usize) -> bool {
    !matches!(par, Par::Seq) && 2.0 * (k * m) as f64 * n as f64 >= PARALLEL_FLOPS
}

/// A raw pointer that tasks writing disjoint blocks of `C` share.
#[derive(Clone, Copy)]
struct Out(*mut f64);
// SAFETY: every task writes a disjoint set of elements (distinct blocks).
unsafe impl Send for Out {}
// SAFETY: as above; the pointer itself is only copied.
unsafe impl Sync for Out {}

impl Out {
    /// The pointer (a method, so that closures capture the `Sync` wrapper
    /// rather than its raw field).
    fn ptr(self) -> *mut f64 {
        self.0
    }
}

/// One operand of a product: panels `stride` values apart, the first of
/// them at `ptr` (row 0 of the product is the row at `ptr`).
struct Operand<T> {
    ptr: *const T,
    stride: usize,
}

// SAFETY: the operand is only read, by every task.
unsafe impl<T: Sync> Sync for Operand<T> {}

impl<T: Element> Operand<T> {
    fn whole(p: &PackedRows<T>) -> Self {
        Operand { ptr: p.as_slice().as_ptr(), stride: p.panel_stride() }
    }
}

/// Where element `(i, j)` of `C` lives.
#[derive(Clone, Copy)]
enum Layout {
    /// Column-major with column stride `ldc`.
    ColumnMajor { ldc: usize },
    /// The trailing block from row and column `start` on of a full
    /// symmetric matrix in the packed-rows layout ([`PackedSymmetric`]):
    /// `(i, j)` is written to both `(start + i, start + j)` and its mirror.
    /// The panel width is the kernel's (`1 << shift`).
    Symmetric { start: usize, shift: u32, stride: usize },
}

/// One product `C (+)= alpha · AᵀB` (lower triangle only if `lower`) over
/// `k` rows, into the `(m, n)` matrix at `c`.
struct Product<T: Element> {
    simd: Simd,
    c: Out,
    layout: Layout,
    m: usize,
    n: usize,
    k: usize,
    a: Operand<T>,
    b: Operand<T>,
    alpha: f64,
    lower: bool,
    /// The operands' zero structure (dense for most products).
    zeros: Zeros,
}

/// Rows of the operands known to be zero in some columns, which the
/// chains skip. Skipping a term `fma(a, 0, t) = t` (finite other factor)
/// or a chunk whose chain is `+0` changes no bit of the result, so a
/// product with known zeros is bitwise the product without them, at a
/// fraction of the flops.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Zeros {
    /// Rows `0..b_upper` of the right operand are upper triangular: row `r`
    /// is zero in every column `< r`.
    pub(crate) b_upper: usize,
    /// Rows `0..a_upper` of the left operand are upper triangular.
    pub(crate) a_upper: usize,
    /// Rows `0..a_lower` of the left operand are lower triangular: row `r`
    /// is zero in every column `> r`.
    pub(crate) a_lower: usize,
}

impl Zeros {
    /// The rows of `rows` a tile must visit whose left-operand columns
    /// (rows of `C`) are `a_cols` and whose right-operand columns end
    /// before `b_end`: `rows` without the zero bands `b_end..b_upper`,
    /// `a_cols.end..a_upper` and `..a_cols.start` (below `a_lower`), each
    /// where it cuts off a prefix or a suffix of it. A band strictly inside
    /// `rows` is kept (a chain is one contiguous run of rows).
    fn live(self, rows: Range<usize>, a_cols: Range<usize>, b_end: usize) -> Range<usize> {
        let rows = cut(rows, b_end.min(self.b_upper)..self.b_upper);
        let rows = cut(rows, a_cols.end.min(self.a_upper)..self.a_upper);
        cut(rows, 0..a_cols.start.min(self.a_lower))
    }
}

/// `rows` without the rows of `band` where those are a prefix or a suffix
/// of it.
fn cut(rows: Range<usize>, band: Range<usize>) -> Range<usize> {
    if band.is_empty() || band.end <= rows.start || band.start >= rows.end {
        rows
    } else if band.start <= rows.start {
        band.end.min(rows.end)..rows.end
    } else if band.end >= rows.end {
        rows.start..band.start
    } else {
        rows
    }
}

impl<T: Element> Product<T> {
    /// # Safety
    /// `c` points to the output of `layout`, valid and unaliased for the
    /// call; the operands hold `k` rows and enough panels for every tile
    /// (see [`PackedRows`]).
    unsafe fn run(&self, parallel: bool) {
        let Microkernel(_, shape) = T::microkernel(self.simd);
        let (mr, nr) = (shape.mr(), shape.nr);
        let (mc, nc) = (MC.div_ceil(mr) * mr, NC.div_ceil(nr) * nr);
        let mut blocks = Vec::new();
        for jc in (0..self.n).step_by(nc) {
            for ic in (0..self.m).step_by(mc) {
                // Skip blocks entirely above the diagonal.
                if !self.lower || ic + mc > jc {
                    blocks.push((ic, jc));
                }
            }
        }
        // SAFETY: blocks are disjoint; the caller's contract covers C.
        let task = |&(ic, jc): &(usize, usize)| unsafe { self.block(ic, jc, mc, nc) };
        if parallel {
            blocks.par_iter().for_each(task);
        } else {
            blocks.iter().for_each(task);
        }
    }

    /// One `mc × nc` block of `C` at `(ic, jc)`, its loops and write-backs
    /// compiled for the operands' instruction set. For the baseline target
    /// the tiles went back into `C` two doubles at a time (SSE2): 6 % of an
    /// RFF l = 4096 fit's cycles, beside the microkernel's 76 %. Compiled
    /// for AVX-512, the band reduction's `symmetric_update` at n = 4096 was
    /// faster in 25 of 30 alternating pairs (medians 57.8 → 61.9 GFLOP/s, a
    /// one-off harness); the column-major products did not move.
    ///
    /// # Safety
    /// As [`Product::run`]; no other task touches this block (nor, for the
    /// symmetric layout, its mirror).
    unsafe fn block(&self, ic: usize, jc: usize, mc: usize, nc: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            /// # Safety
            /// As `block`, and the CPU runs AVX-512F.
            #[target_feature(enable = "avx512f")]
            unsafe fn v4<T: Element>(p: &Product<T>, ic: usize, jc: usize, mc: usize, nc: usize) {
                // SAFETY: forwarded contract.
                unsafe { p.block_any(ic, jc, mc, nc) }
            }
            /// # Safety
            /// As `block`, and the CPU runs AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn v3<T: Element>(p: &Product<T>, ic: usize, jc: usize, mc: usize, nc: usize) {
                // SAFETY: forwarded contract.
                unsafe { p.block_any(ic, jc, mc, nc) }
            }
            // SAFETY: the operands were packed for `simd`, which `run`'s
            // caller checked this CPU runs.
            match self.simd {
                Simd::Avx512 => return unsafe { v4(self, ic, jc, mc, nc) },
                Simd::Avx2Fma => return unsafe { v3(self, ic, jc, mc, nc) },
                Simd::Portable => {}
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.block_any(ic, jc, mc, nc) }
    }

    /// [`Product::block`] for whichever target it is inlined into.
    ///
    /// # Safety
    /// As [`Product::block`].
    #[inline(always)]
    unsafe fn block_any(&self, ic: usize, jc: usize, mc: usize, nc: usize) {
        let Product { simd, layout, m, n, k, alpha, lower, zeros, .. } = *self;
        let c = self.c.ptr();
        let Microkernel(kernel, shape) = T::microkernel(simd);
        let w = shape.panel;
        let (mr, nr) = (shape.mr(), shape.nr);
        let (ap, bp) = (self.a.ptr, self.b.ptr);
        let (a_stride, b_stride) = (self.a.stride, self.b.stride);
        let mut tile = [T::default(); MAX_TILE];
        for k0 in (0..k).step_by(KC) {
            let kk = KC.min(k - k0);
            for j0 in (jc..(jc + nc).min(n)).step_by(nr) {
                for i0 in (ic..(ic + mc).min(m)).step_by(mr) {
                    if lower && i0 + mr <= j0 {
                        continue;
                    }
                    let rows = zeros.live(k0..k0 + kk, i0..i0 + mr, j0 + nr);
                    if rows.is_empty() {
                        continue;
                    }
                    // SAFETY: i0 is a multiple of MR and j0 of NR, so the
                    // tile's panels exist (allocations hold spare panels, see
                    // `PackedRows`); every panel holds the k rows.
                    let ops = Operands {
                        k: rows.len(),
                        a: ap.wrapping_add((i0 / w) * a_stride + rows.start * w),
                        a_stride,
                        b: bp.wrapping_add((j0 / w) * b_stride + rows.start * w),
                        b_stride,
                        off: j0 % w,
                    };
                    let whole = (!lower || i0 >= j0 + nr) && i0 + mr <= m && j0 + nr <= n;
                    if whole {
                        prefetch_tile(c, layout, i0, j0, mr, nr);
                    }
                    unsafe { kernel(ops, &mut tile) };
                    // Whole tiles (all but the edges and the diagonal) are
                    // written back with their shape known at compile time.
                    if whole {
                        // SAFETY: the tile lies inside C, in this task's
                        // block, and (symmetric layout) strictly below the
                        // diagonal, as only lower products use it.
                        unsafe { whole_tile(c, layout, i0, j0, shape, alpha, &tile) };
                        continue;
                    }
                    for jj in 0..nr.min(n - j0) {
                        let j = j0 + jj;
                        let lo = if lower { i0.max(j) } else { i0 };
                        let hi = (i0 + mr).min(m);
                        let values = (lo..hi).zip(&tile[jj * mr + (lo - i0)..]);
                        match layout {
                            Layout::ColumnMajor { ldc } => {
                                // SAFETY: (i, j) with i < m, j < n is inside C,
                                // in this task's block.
                                let col = unsafe { c.add(j * ldc) };
                                for (i, &t) in values {
                                    unsafe { *col.add(i) += alpha * t.to_f64() };
                                }
                            }
                            Layout::Symmetric { start, shift, stride } => {
                                // (r, c) of the layout is at
                                // (c >> shift)·stride + r·w + (c & (w − 1)).
                                let mask = w - 1;
                                let gj = start + j;
                                let mirror = (gj >> shift) * stride + (gj & mask);
                                let direct = gj * w;
                                for (i, &t) in values {
                                    let gi = start + i;
                                    let v = alpha * t.to_f64();
                                    // SAFETY: both positions are inside the
                                    // matrix; (gi, gj) with i ≥ j belongs to
                                    // this block and its mirror to no block.
                                    unsafe {
                                        *c.add(direct + (gi >> shift) * stride + (gi & mask)) += v;
                                        if gi != gj {
                                            *c.add(mirror + gi * w) += v;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

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
unsafe fn whole_tile<T: Element>(
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
fn prefetch_tile(c: *mut f64, layout: Layout, i0: usize, j0: usize, mr: usize, nr: usize) {
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

#[cfg(test)]
mod tests;
