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
mod sparse_product;
mod symmetric;
mod write_back;

pub use pack::{Element, Microkernel, PackedRows};
pub use sparse_product::gemm_tn_sparse;
pub use symmetric::PackedSymmetric;

use crate::cpu::Simd;
use faer::Par;
use kernels::{MAX_TILE, Operands};
use ndarray::ArrayViewMut2;
use rayon::prelude::*;
use std::ops::Range;
use write_back::{prefetch_tile, whole_tile};

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

/// Operand bytes a product reads per phase, where the last-level cache's
/// size is not known: every task of a phase sweeps the same rows, whose
/// slices of both operands then stay in that cache for all of them.
///
/// Why phases: one task per block of `C` over all `k` rows read its left
/// block and right columns from memory, and the other blocks' tasks read
/// them again. The products of TEFM's range finder (`k = d = 4096` rows of
/// `d + l = 5120` columns, 168 MB) ran at about 60 % of peak where the
/// pass's, over 512 rows at a time, run at 77–83 % (2-core AMD EPYC Zen 5,
/// 32 MB L3, `range_finder` and `ridge_accumulate` benches); in phases of
/// 12 MB, 62–69 %. A phase costs one barrier, and each task fetches its
/// block of `C` again (it had stayed in cache from chunk to chunk). That
/// is why the phases follow the cache ([`phase_bytes`]): on a 2-core Xeon
/// with 300 MB of L3, where these operands fit whole, 12 MB phases were
/// slower in 7 of 10 alternating runs of `A·Q` at `l = 1024` (median
/// 0.96×). The chunks, and the order in which their sums reach `C`, are
/// the same for any phase size: the bits do not change.
const PHASE_BYTES: usize = 12 << 20;

/// The phase size: 3/8 of the last-level cache (12 MB of Zen 5's 32 MB,
/// as measured), or [`PHASE_BYTES`] where its size is unknown.
#[cfg(not(test))]
fn phase_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| crate::cpu::last_level_cache_bytes().map_or(PHASE_BYTES, |llc| llc / 8 * 3))
}

#[cfg(test)]
thread_local! {
    /// The phase size of the products this thread starts (tests split small
    /// products into many phases with it).
    static PHASE_BYTES_FOR_TESTS: std::cell::Cell<usize> = const { std::cell::Cell::new(PHASE_BYTES) };
}

#[cfg(test)]
fn phase_bytes() -> usize {
    PHASE_BYTES_FOR_TESTS.get()
}

/// The row ranges of a product's phases: whole chunks of [`KC`] rows, as
/// many per phase as fit [`phase_bytes`] at `columns` operand columns of
/// `element_bytes` each (at least one).
fn phases(k: usize, columns: usize, element_bytes: usize) -> impl Iterator<Item = Range<usize>> {
    let chunks = (phase_bytes() / (columns * KC * element_bytes).max(1)).max(1);
    let rows = chunks * KC;
    (0..k).step_by(rows).map(move |start| start..(start + rows).min(k))
}

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
        for rows in phases(self.k, self.m + self.n, size_of::<T>()) {
            // SAFETY: blocks are disjoint; the caller's contract covers C.
            let task = |&(ic, jc): &(usize, usize)| unsafe { self.block(ic, jc, mc, nc, rows.clone()) };
            if parallel {
                blocks.par_iter().for_each(task);
            } else {
                blocks.iter().for_each(task);
            }
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
    unsafe fn block(&self, ic: usize, jc: usize, mc: usize, nc: usize, rows: Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        {
            /// # Safety
            /// As `block`, and the CPU runs AVX-512F.
            #[target_feature(enable = "avx512f")]
            unsafe fn v4<T: Element>(p: &Product<T>, ic: usize, jc: usize, mc: usize, nc: usize, rows: Range<usize>) {
                // SAFETY: forwarded contract.
                unsafe { p.block_any(ic, jc, mc, nc, rows) }
            }
            /// # Safety
            /// As `block`, and the CPU runs AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn v3<T: Element>(p: &Product<T>, ic: usize, jc: usize, mc: usize, nc: usize, rows: Range<usize>) {
                // SAFETY: forwarded contract.
                unsafe { p.block_any(ic, jc, mc, nc, rows) }
            }
            // SAFETY: the operands were packed for `simd`, which `run`'s
            // caller checked this CPU runs.
            match self.simd {
                Simd::Avx512 => return unsafe { v4(self, ic, jc, mc, nc, rows) },
                Simd::Avx2Fma => return unsafe { v3(self, ic, jc, mc, nc, rows) },
                Simd::Portable => {}
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.block_any(ic, jc, mc, nc, rows) }
    }

    /// [`Product::block`] for whichever target it is inlined into.
    ///
    /// # Safety
    /// As [`Product::block`].
    #[inline(always)]
    unsafe fn block_any(&self, ic: usize, jc: usize, mc: usize, nc: usize, rows: Range<usize>) {
        let Product { simd, layout, m, n, alpha, lower, zeros, .. } = *self;
        let c = self.c.ptr();
        let Microkernel(kernel, shape) = T::microkernel(simd);
        let w = shape.panel;
        let (mr, nr) = (shape.mr(), shape.nr);
        let (ap, bp) = (self.a.ptr, self.b.ptr);
        let (a_stride, b_stride) = (self.a.stride, self.b.stride);
        let mut tile = [T::default(); MAX_TILE];
        for k0 in rows.clone().step_by(KC) {
            let kk = KC.min(rows.end - k0);
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

#[cfg(test)]
mod tests;
