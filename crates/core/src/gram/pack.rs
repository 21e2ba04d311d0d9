//! Rows stored panel by panel, the operand layout of the Gram kernels.

use super::kernels::{self, Kernel, Shape};
use crate::cpu::Simd;
use faer::Par;
use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
}

/// The element type of packed rows: `f64`, or `f32`, whose products run in
/// single precision (twice the lanes) with each block's sums widened and
/// added to the `f64` output.
pub trait Element: sealed::Sealed + Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// Whether this is `f64` (whose tiles a write-back may read as such).
    const IS_F64: bool;
    /// Values per panel in the layout for `simd` (one vector register).
    fn panel_width(simd: Simd) -> usize;
    /// The value in double precision (exact).
    fn to_f64(self) -> f64;
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
    #[doc(hidden)]
    fn microkernel(simd: Simd) -> Microkernel<Self>;
}

/// A level's microkernel and tile shape for one element type (opaque).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Microkernel<T>(pub(crate) Kernel<T>, pub(crate) Shape);

impl Element for f64 {
    const IS_F64: bool = true;

    fn panel_width(simd: Simd) -> usize {
        if simd == Simd::Avx512 { 8 } else { 4 }
    }

    fn to_f64(self) -> f64 {
        self
    }

    fn from_f64(v: f64) -> Self {
        v
    }

    fn microkernel(simd: Simd) -> Microkernel<f64> {
        match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => Microkernel(kernels::avx512_f64, Shape { panel: 8, row_panels: 3, nr: 8 }),
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2Fma => Microkernel(kernels::avx2_f64, Shape { panel: 4, row_panels: 2, nr: 6 }),
            _ => Microkernel(kernels::portable_f64, Shape { panel: 4, row_panels: 2, nr: 4 }),
        }
    }
}

impl Element for f32 {
    const IS_F64: bool = false;

    fn panel_width(simd: Simd) -> usize {
        if simd == Simd::Avx512 { 16 } else { 8 }
    }

    fn to_f64(self) -> f64 {
        f64::from(self)
    }

    fn from_f64(v: f64) -> Self {
        v as f32
    }

    fn microkernel(simd: Simd) -> Microkernel<f32> {
        match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => Microkernel(kernels::avx512_f32, Shape { panel: 16, row_panels: 3, nr: 8 }),
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2Fma => Microkernel(kernels::avx2_f32, Shape { panel: 8, row_panels: 2, nr: 6 }),
            _ => Microkernel(kernels::portable_f32, Shape { panel: 8, row_panels: 2, nr: 4 }),
        }
    }
}

/// Writes the rows of `values` (or the `selected` ones) into rows `row0..`
/// of one group of panels, `slots` (`cap · W` values per panel), whose
/// first column is `c0`: row after row, each row's panels in turn.
///
/// The panel width is a constant so that a whole panel's run is a fixed
/// register move. With the width a runtime value, LLVM merged the width
/// cases into one `memcpy` call per 32 bytes, which cost more than the
/// copy (5 % of a fit at l = 1024 in a profile). The one partial panel a
/// row can end in is copied out of line for the same reason.
fn fill_panels<T: Copy, const W: usize>(
    slots: &mut [T],
    c0: usize,
    cap: usize,
    row0: usize,
    values: ArrayView2<'_, T>,
    selected: Option<&[usize]>,
) {
    let (n, cols) = (selected.map_or(values.nrows(), <[usize]>::len), values.ncols());
    let panels = slots.len() / (cap * W);
    // Panels of the group that hold `W` of the written columns.
    let whole = panels.min((cols - c0) / W);
    for i in 0..n {
        let row = values.row(selected.map_or(i, |s| s[i]));
        let base = (row0 + i) * W;
        match row.as_slice() {
            Some(row) => {
                for q in 0..whole {
                    let (at, c) = (q * cap * W + base, c0 + q * W);
                    let run: &[T; W] = row[c..c + W].try_into().expect("a whole panel's run");
                    slots[at..at + W].copy_from_slice(run);
                }
                if whole < panels {
                    let (at, c) = (whole * cap * W + base, c0 + whole * W);
                    copy_partial(&mut slots[at..at + (cols - c)], &row[c..]);
                }
            }
            None => {
                for q in 0..panels {
                    let (at, c) = (q * cap * W + base, c0 + q * W);
                    let dst = &mut slots[at..at + W.min(cols - c)];
                    for (o, d) in dst.iter_mut().enumerate() {
                        // SAFETY: c + o < cols.
                        *d = unsafe { *row.uget(c + o) };
                    }
                }
            }
        }
    }
}

/// The last, partial panel's run of a row (see [`fill_panels`]).
#[inline(never)]
fn copy_partial<T: Copy>(dst: &mut [T], src: &[T]) {
    dst.copy_from_slice(src);
}

/// Allocations hold one panel more than the columns need and are rounded
/// up to a multiple of this, so that an edge tile (2 or 3 panels of rows,
/// columns reaching into the next panel) reads zeros, not past the end.
const PANEL_ROUNDING: usize = 6;

/// 64 bytes: the allocation unit, so that every panel starts on a cache
/// line and vector loads are aligned.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// A block of up to `capacity` rows of `n_cols` columns, stored in column
/// panels: panel `p` holds columns `p·w .. (p+1)·w` of every row, row after
/// row (`w` = [`PackedRows::panel_width`]: one vector register, 4 doubles
/// or 8 floats for AVX2, 8 doubles or 16 floats for AVX-512).
///
/// This is the layout both operands of [`syrk_lower_add`](super::syrk_lower_add)
/// and [`gemm_tn_add`](super::gemm_tn_add) are read in: a microkernel
/// streams whole panels with aligned unit-stride loads. Rows can be written
/// straight into it (as [`Moments`](crate::Moments) does), so no separate
/// packing copy is needed. Columns past `n_cols` are zero.
///
/// Memory: `capacity · n_cols` values, rounded up to whole panels.
#[derive(Clone, Debug)]
pub struct PackedRows<T: Element = f64> {
    n_cols: usize,
    capacity: usize,
    panel: usize,
    shift: u32,
    n_panels: usize,
    rows: usize,
    simd: Simd,
    lines: Vec<Line>,
    element: std::marker::PhantomData<T>,
}

impl<T: Element> PackedRows<T> {
    /// An empty block for the kernels of this CPU ([`Simd::detect`]).
    pub fn new(n_cols: usize, capacity: usize) -> Self {
        Self::with_simd(Simd::detect(), n_cols, capacity)
    }

    /// An empty block laid out for the kernels of `simd` (which must be
    /// available when the block is multiplied).
    pub fn with_simd(simd: Simd, n_cols: usize, capacity: usize) -> Self {
        let panel = T::panel_width(simd);
        let n_panels = (n_cols.div_ceil(panel) + 1).div_ceil(PANEL_ROUNDING) * PANEL_ROUNDING;
        let bytes = n_panels * capacity * panel * std::mem::size_of::<T>();
        PackedRows {
            n_cols,
            capacity,
            panel,
            shift: panel.trailing_zeros(),
            n_panels,
            rows: 0,
            simd,
            lines: crate::buffer::filled_vec(bytes.div_ceil(64), Line::default()),
            element: std::marker::PhantomData,
        }
    }

    /// Empties the block and sets its shape to `n_cols` columns and
    /// `capacity` rows, reusing the storage when it is large enough (a
    /// loop of products of shrinking shapes then allocates once).
    ///
    /// Unlike a new block, stale values stay in the slots and in the
    /// columns past `n_cols`: every column of a new row must be written
    /// before the row is used. The products never mix padding columns
    /// into the elements they return, so stale padding is harmless there.
    pub fn reset(&mut self, n_cols: usize, capacity: usize) {
        let n_panels = (n_cols.div_ceil(self.panel) + 1).div_ceil(PANEL_ROUNDING) * PANEL_ROUNDING;
        let bytes = n_panels * capacity * self.panel * std::mem::size_of::<T>();
        if bytes > self.lines.len() * 64 {
            *self = Self::with_simd(self.simd, n_cols, capacity);
            return;
        }
        self.n_cols = n_cols;
        self.capacity = capacity;
        self.n_panels = n_panels;
        self.rows = 0;
    }

    /// Packs the rows of `a (n_rows, n_cols)` (any strides) for this CPU.
    pub fn from_rows(a: ArrayView2<'_, T>) -> Self {
        Self::from_rows_with(Simd::detect(), a)
    }

    /// Packs the rows of `a` laid out for `simd`.
    pub fn from_rows_with(simd: Simd, a: ArrayView2<'_, T>) -> Self {
        let mut p = Self::with_simd(simd, a.ncols(), a.nrows());
        p.push_rows(a.nrows());
        p.set_rows(0, a, None, Par::rayon(0));
        p
    }

    /// Columns per row.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Rows the block can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Rows added so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was added since the last [`clear`](PackedRows::clear).
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether the block holds `capacity` rows.
    pub fn is_full(&self) -> bool {
        self.rows == self.capacity
    }

    /// Columns per panel.
    pub fn panel_width(&self) -> usize {
        self.panel
    }

    /// The instruction set the layout was made for.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Forgets the rows (the storage is kept; stale values are never read,
    /// because every column of a new row is written by its producer).
    pub fn clear(&mut self) {
        self.rows = 0;
    }

    /// Appends a row and returns its index; its values are what the
    /// previous occupant of the slot left (zero for a new block) until
    /// [`set`](PackedRows::set) writes them.
    ///
    /// # Panics
    /// The block must not be full.
    #[track_caller]
    pub fn push_row(&mut self) -> usize {
        assert!(self.rows < self.capacity, "PackedRows: block of {} rows is full", self.capacity);
        self.rows += 1;
        self.rows - 1
    }

    /// Appends `n` rows and returns the index of the first; as
    /// [`push_row`](PackedRows::push_row) for each.
    ///
    /// # Panics
    /// The block must have room for `n` more rows.
    #[track_caller]
    pub fn push_rows(&mut self, n: usize) -> usize {
        assert!(
            n <= self.capacity - self.rows,
            "PackedRows: {n} rows more than the {} free",
            self.capacity - self.rows
        );
        self.rows += n;
        self.rows - n
    }

    /// Writes rows of `values (n_rows, c)` (`c ≤ n_cols`, any strides) into
    /// rows `row0..` from column 0 on: all of them in order, or the rows
    /// `selected` (indices into `values`) in that order. Columns `c..` of
    /// the rows are left as they are.
    ///
    /// By groups of panels (in parallel with `par`), row after row within a
    /// group: a row written whole touches every panel (`capacity ·
    /// panel_width` values apart), while a group reads a cache-friendly run
    /// of each row (row-major input) or a few columns in step
    /// (column-major) and writes its panels' slots in order, so this runs
    /// near memory speed where [`set`](PackedRows::set) row by row does not.
    ///
    /// # Panics
    /// The rows `row0..row0 + n` must have been added (`n` the number of
    /// rows written), `c ≤ n_cols()`, and every selected index `< n_rows`.
    #[track_caller]
    pub fn set_rows(&mut self, row0: usize, values: ArrayView2<'_, T>, selected: Option<&[usize]>, par: Par) {
        let n = selected.map_or(values.nrows(), <[usize]>::len);
        assert!(row0 + n <= self.rows, "PackedRows: rows {row0}+{n} of {} rows", self.rows);
        let cols = values.ncols();
        assert!(cols <= self.n_cols, "PackedRows: {cols} columns of {}", self.n_cols);
        if let Some(&bad) = selected.and_then(|s| s.iter().find(|&&i| i >= values.nrows())) {
            panic!("PackedRows: selected row {bad} of {} rows", values.nrows());
        }
        if n == 0 || cols == 0 {
            // Nothing to write (and chunks of an empty block's zero slots
            // would be chunks of size zero).
            return;
        }
        let (panel, cap) = (self.panel, self.capacity);
        // Panels per group: 64 values of a row (512 bytes of f64) when rows
        // are contiguous; one panel otherwise (its columns are then read in
        // step, each a stream of its own).
        let group = if values.strides()[1] == 1 { (64 / panel).max(1) } else { 1 };
        let used = cols.div_ceil(panel);
        let data = &mut self.as_mut_slice()[..used * cap * panel];
        let fill = |(g, slots): (usize, &mut [T])| {
            let c0 = g * group * panel;
            match panel {
                4 => fill_panels::<T, 4>(slots, c0, cap, row0, values, selected),
                8 => fill_panels::<T, 8>(slots, c0, cap, row0, values, selected),
                16 => fill_panels::<T, 16>(slots, c0, cap, row0, values, selected),
                _ => unreachable!("panel widths are 4, 8 or 16 (Element::panel_width)"),
            }
        };
        // Below a few pages per thread the pool costs more than it saves.
        if matches!(par, Par::Seq) || n * cols < 1 << 15 {
            data.chunks_mut(group * cap * panel).enumerate().for_each(fill);
        } else {
            data.par_chunks_mut(group * cap * panel).enumerate().for_each(fill);
        }
    }

    /// The rows of the symmetric `S = Σₚ Gₚ` from the lower triangles of
    /// the square `parts` (their upper triangles are not read): row `r`
    /// holds `S[r, ..]`, each entry summed over the parts in order starting
    /// from zero. These are the bits of summing the triangles into a dense
    /// matrix, mirroring it and packing its rows, without the dense matrix:
    /// one `n²` buffer and two passes over it fewer (0.38 s became 0.24 s
    /// at `n = 4096`, two parts, measured in one-pass TEFM).
    ///
    /// One pass on every core, a group of panels per task, each panel row
    /// by row: its columns of a column-major lower triangle are read in
    /// step left of the diagonal, and as one run of a row right of it.
    ///
    /// # Panics
    /// The parts must be square, of one size, and at least one.
    #[track_caller]
    pub fn symmetric_from_lower_sum(simd: Simd, parts: &[ArrayView2<'_, f64>]) -> PackedRows<f64> {
        assert!(!parts.is_empty(), "symmetric_from_lower_sum: no parts");
        let n = parts[0].nrows();
        for g in parts {
            assert_eq!(g.dim(), (n, n), "symmetric_from_lower_sum: parts of {:?} and {:?}", parts[0].dim(), g.dim());
        }
        let mut p = PackedRows::<f64>::with_simd(simd, n, n);
        p.push_rows(n);
        let (panel, stride) = (p.panel, p.panel_stride());
        // Entry (r, c) of the sum, from the lower triangles.
        let at = |r: usize, c: usize| {
            let at = (r.max(c), r.min(c));
            // SAFETY: r, c < n, and every part was checked to be n × n.
            parts.iter().fold(0.0, |sum, g| sum + unsafe { *g.uget(at) })
        };
        // 16 panels: 64 columns (AVX2), a row's run of 512 bytes.
        let group = 16;
        let used = n.div_ceil(panel);
        let fill = |(g, slots): (usize, &mut [f64])| {
            let first = g * group;
            for q in 0..group.min(used - first) {
                let c0 = (first + q) * panel;
                let width = panel.min(n - c0);
                let out = &mut slots[q * stride..][..n * panel];
                for (r, dst) in out.chunks_exact_mut(panel).enumerate() {
                    dst[..width].iter_mut().enumerate().for_each(|(o, d)| *d = at(r, c0 + o));
                }
            }
        };
        let data = &mut p.as_mut_slice()[..used * stride];
        if n * n < 1 << 15 {
            data.chunks_mut(group * stride).enumerate().for_each(fill);
        } else {
            data.par_chunks_mut(group * stride).enumerate().for_each(fill);
        }
        p
    }

    /// The rows of `L = tril(G, −1) + diag(G)/2` for the symmetric `g (n,
    /// n)`, of which only the lower triangle is read, so that
    /// `G = L + Lᵀ`: row `r` holds `G[r, ..r]`, then `G[r, r]/2`, then
    /// zeros. A product by `L` ([`crate::gram::Triangle::Lower`]) then
    /// costs half of one by `G`.
    ///
    /// One pass over the lower triangle, panel by panel on every core: a
    /// panel's columns of a column-major `g` are read in step and its slots
    /// written in order. In the memory of `storage` where it is laid out
    /// for `simd`: fresh memory costs a round of page faults (0.1 s per
    /// 134 MB here), so spent rows are worth reusing, every slot rewritten.
    ///
    /// # Panics
    /// `g` must be square.
    #[track_caller]
    pub(crate) fn lower_half_of_symmetric(
        storage: Option<PackedRows<f64>>,
        simd: Simd,
        g: ArrayView2<'_, f64>,
    ) -> PackedRows<f64> {
        let n = g.nrows();
        assert_eq!(g.ncols(), n, "lower_half_of_symmetric: {:?} is not square", g.dim());
        let (mut p, fresh) = match storage {
            Some(mut p) if p.simd == simd => {
                p.reset(n, n);
                (p, false)
            }
            _ => (PackedRows::<f64>::with_simd(simd, n, n), true),
        };
        p.push_rows(n);
        let (panel, stride) = (p.panel, p.panel_stride());
        let used = n.div_ceil(panel);
        let fill = |(q, slots): (usize, &mut [f64])| {
            let c0 = q * panel;
            let width = panel.min(n - c0);
            // Rows above the panel's first column are zero (a fresh
            // block's slots already are).
            if !fresh {
                slots[..c0 * panel].fill(0.0);
            }
            for r in c0..n {
                let dst = &mut slots[r * panel..r * panel + width];
                for (o, d) in dst.iter_mut().enumerate() {
                    let c = c0 + o;
                    *d = match c.cmp(&r) {
                        std::cmp::Ordering::Less => g[[r, c]],
                        std::cmp::Ordering::Equal => 0.5 * g[[r, r]],
                        std::cmp::Ordering::Greater => 0.0,
                    };
                }
            }
        };
        let data = &mut p.as_mut_slice()[..used * stride];
        if n * n < 1 << 15 {
            data.chunks_mut(stride).enumerate().for_each(fill);
        } else {
            data.par_chunks_mut(stride).enumerate().for_each(fill);
        }
        p
    }

    /// Writes `values` into row `row` from column `col0` on.
    ///
    /// # Panics
    /// `row < len()` and `col0 + values.len() <= n_cols()` must hold.
    #[track_caller]
    pub fn set(&mut self, row: usize, col0: usize, values: ArrayView1<'_, T>) {
        assert!(row < self.rows, "PackedRows: row {row} of {} rows", self.rows);
        assert!(col0 + values.len() <= self.n_cols, "PackedRows: columns {col0}+{} of {}", values.len(), self.n_cols);
        let (panel, shift, cap) = (self.panel, self.shift, self.capacity);
        let data = self.as_mut_slice();
        match values.as_slice() {
            Some(v) => {
                // Whole panel-sized runs at a time.
                let mut c = col0;
                let mut rest = v;
                while !rest.is_empty() {
                    let p = c >> shift;
                    let within = c & (panel - 1);
                    let take = (panel - within).min(rest.len());
                    let at = (p * cap + row) * panel + within;
                    data[at..at + take].copy_from_slice(&rest[..take]);
                    rest = &rest[take..];
                    c += take;
                }
            }
            None => {
                for (c, &v) in (col0..).zip(values.iter()) {
                    data[((c >> shift) * cap + row) * panel + (c & (panel - 1))] = v;
                }
            }
        }
    }

    /// Writes `values` (one per row added so far) into column `col`.
    ///
    /// # Panics
    /// `values.len() == len()` and `col < n_cols()` must hold.
    #[track_caller]
    pub fn set_column(&mut self, col: usize, values: ArrayView1<'_, T>) {
        assert!(col < self.n_cols, "PackedRows: column {col} of {}", self.n_cols);
        assert_eq!(values.len(), self.rows, "PackedRows: {} values for {} rows", values.len(), self.rows);
        let (panel, cap) = (self.panel, self.capacity);
        let at = (col >> self.shift) * cap * panel + (col & (panel - 1));
        let data = &mut self.as_mut_slice()[at..];
        for (r, &v) in values.iter().enumerate() {
            data[r * panel] = v;
        }
    }

    /// Writes one value at `(row, col)`.
    ///
    /// # Panics
    /// `row < len()` and `col < n_cols()` must hold.
    #[track_caller]
    pub fn set_value(&mut self, row: usize, col: usize, value: T) {
        assert!(row < self.rows && col < self.n_cols, "PackedRows: ({row}, {col}) out of range");
        let (panel, shift, cap) = (self.panel, self.shift, self.capacity);
        self.as_mut_slice()[((col >> shift) * cap + row) * panel + (col & (panel - 1))] = value;
    }

    /// The rows added so far as a row-major array `(len, n_cols)`.
    pub fn to_array(&self) -> Array2<T> {
        let (panel, shift, cap) = (self.panel, self.shift, self.capacity);
        let data = self.as_slice();
        Array2::from_shape_fn((self.rows, self.n_cols), |(r, c)| {
            data[((c >> shift) * cap + r) * panel + (c & (panel - 1))]
        })
    }

    /// Number of allocated panels.
    pub(crate) fn n_panels(&self) -> usize {
        self.n_panels
    }

    /// Doubles from one panel to the next.
    pub(crate) fn panel_stride(&self) -> usize {
        self.capacity * self.panel
    }

    /// The storage, panel after panel.
    pub(crate) fn as_slice(&self) -> &[T] {
        let len = self.n_panels * self.capacity * self.panel;
        // SAFETY: `Line` is 64 initialised bytes with no padding (repr(C)),
        // aligned to 64, so the vector is `64 · lines.len() ≥ len ·
        // size_of::<T>()` contiguous bytes, suitably aligned for T (f32 or
        // f64), and every bit pattern is a valid T.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<T>(), len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.n_panels * self.capacity * self.panel;
        // SAFETY: as in `as_slice`, and the mutable borrow of `self` makes it
        // the only view.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<T>(), len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_for_every_layout() {
        let a = Array2::from_shape_fn((7, 13), |(i, j)| (i * 100 + j) as f64);
        for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512] {
            let p = PackedRows::from_rows_with(simd, a.view());
            assert_eq!(p.to_array(), a);
            let a32 = a.mapv(|v| v as f32);
            assert_eq!(PackedRows::from_rows_with(simd, a32.view()).to_array(), a32);
            assert!(p.n_panels() > 13usize.div_ceil(p.panel_width()));
            assert_eq!(p.as_slice().as_ptr() as usize % 64, 0);
            // Strided input takes the element-wise path.
            let t = PackedRows::from_rows_with(simd, a.t().t());
            assert_eq!(t.to_array(), a);
            let f = a.t().to_owned();
            assert_eq!(PackedRows::from_rows_with(simd, f.t()).to_array(), a);
        }
    }

    #[test]
    fn a_reset_block_is_refilled_by_columns() {
        let a = Array2::from_shape_fn((9, 13), |(i, j)| (i * 100 + j) as f64);
        for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512] {
            let mut p = PackedRows::from_rows_with(simd, a.view());
            let b = Array2::from_shape_fn((7, 6), |(i, j)| -((i * 10 + j) as f64));
            p.reset(6, 7);
            assert!(p.is_empty() && (p.n_cols(), p.capacity()) == (6, 7));
            for _ in 0..7 {
                p.push_row();
            }
            for c in 0..6 {
                p.set_column(c, b.column(c));
            }
            assert_eq!(p.to_array(), b);
            // Growing past the storage reallocates.
            p.reset(40, 20);
            assert_eq!((p.n_cols(), p.capacity(), p.len()), (40, 20, 0));
            assert!(p.as_slice().len() >= 40 * 20);
        }
    }

    #[test]
    fn padding_columns_stay_zero() {
        let a = Array2::from_elem((3, 5), 1.0);
        let p = PackedRows::from_rows_with(Simd::Avx2Fma, a.view());
        // Columns 5..8 of the 2 used panels, and every further panel, are
        // padding.
        let s = p.as_slice();
        let stride = p.panel_stride();
        for r in 0..3 {
            assert_eq!(&s[stride + r * 4 + 1..stride + r * 4 + 4], &[0.0; 3]);
            assert_eq!(&s[2 * stride + r * 4..2 * stride + r * 4 + 4], &[0.0; 4]);
        }
    }
}
