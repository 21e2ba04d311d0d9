//! Entropic optimal features (EOF; Ding, Tuo & Shahrampour, NeurIPS 2020,
//! paper 002): deterministic, sparse, orthonormal features with compact
//! and nested supports for two product kernels on the unit cube `[0, 1]^D`.
//!
//! | kernel | `k(x, y)` | 1-D RKHS norm `‖f‖²_k` |
//! |---|---|---|
//! | [`EofKernel::Laplace`] | `exp(−ω‖x − y‖₁)` | `(1/(2ω))·∫₀¹ (f'² + ω² f²) + (f(0)² + f(1)²)/2` |
//! | [`EofKernel::Sobolev`] | `Π_d (1 + ω·min(x_d, y_d))` | `f(0)² + (1/ω)·∫₀¹ f'²` |
//!
//! The map is [`Eof`], built from an [`EofSpec`] (kernel, `ω`, `D`, basis,
//! level or feature budget, subset rule, seed). Its output is sparse
//! ([`OutputKind::Sparse`]): one stored entry per level multi-index, the
//! same ELL layout and accumulation path as random binning.
//!
//! Three bases (see "Bases" below), all orthonormal in the RKHS:
//! [`EofBasis::Centred`] (the default) roots the hierarchy at `k(·, ½)` and
//! puts two boundary half-hats at level 1: complete, exact on the faces of
//! the cube, and nearly as sparse as the paper's; [`EofBasis::Boundary`]
//! adds two boundary functions per dimension to the paper's hats: complete,
//! exact on the faces, but nearly dense in high dimension;
//! [`EofBasis::Paper`] is the paper's hats-only set `S_n^*`, sparse but zero
//! on the faces.
//!
#![doc = include_str!("eof/derivation.md")]

mod basis;
mod grid;
pub(crate) mod spec;

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::map::{FeatureMap, OutputKind};
use crate::spec::MapSpec;
use basis::Basis1d;
use grid::{Block, Levels, Subset};
use kapprox_core::sparse::SparseRowsViewMut;
use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2, Axis};
pub use spec::{EofBasis, EofKernel, EofSize, EofSpec, EofSubset, MAX_LEVEL, MAX_NNZ_PER_ROW};

/// Below this `Π_d ψ_0(x_d)`, a row takes the direct-product path (see the
/// module docs, "Numerics").
const TINY: f64 = 1e-150;

impl EofBasis {
    /// Features at level `level` in `n_input` dimensions (saturating):
    /// the sum of the coefficients of `t^0..t^n` in `W(t)^D` with `W` the
    /// basis's 1-D level sizes (module docs, "Counts"); for the paper
    /// basis `|S_n^*| = Σ_{s<n} 2^s C(s + D − 1, D − 1)` (0 at level 0).
    pub fn n_features(&self, n_input: usize, level: u32) -> u128 {
        grid::count_features(n_input, Levels::new(*self, level))
    }

    /// Blocks (stored entries per row of the full level) at level `level`
    /// in `n_input` dimensions (saturating): `C(n + D, D)` (centred,
    /// boundary) or `C(n + D − 1, D)` (paper; 0 at level 0).
    pub fn nnz(&self, n_input: usize, level: u32) -> u128 {
        grid::count_blocks(n_input, Levels::new(*self, level))
    }
}

impl EofSpec {
    /// The spec for kapprox's Laplacian kernel `exp(−‖x − y‖₁/σ)`, i.e.
    /// `ω = 1/σ`, with `σ` in units of the `[0, 1]`-scaled inputs (centred
    /// basis, nested subset).
    ///
    /// # Errors
    /// A kernel other than Laplacian, or an invalid σ.
    pub fn from_kernel(kernel: Kernel, n_input: usize, size: EofSize, seed: u64) -> Result<Self> {
        kernel.check()?;
        match kernel {
            Kernel::Laplacian { sigma } => {
                Ok(EofSpec { size, seed, ..EofSpec::level(EofKernel::Laplace, 1.0 / sigma, n_input, 0) })
            }
            _ => Err(FeatureError::UnsupportedKernel {
                map: "eof",
                kernel: kernel.name(),
                supported: "laplacian (and the sobolev kernel through EofKernel::Sobolev)",
            }),
        }
    }

    /// Builds the map.
    ///
    /// # Errors
    /// See [`Eof::new`].
    pub fn build(&self) -> Result<Eof> {
        Eof::new(self.clone())
    }
}

/// The EOF feature map (see the [module docs](self)): sparse output with a
/// fixed number of stored entries per row.
///
/// Parameter memory: the block table, 24 bytes per block of the table
/// (emitted blocks and their ancestors) plus 4 per emitted block, and
/// `0.19` bytes per candidate function (last shell, or all of `S_n`) for a
/// budget's subset.
#[derive(Clone)]
pub struct Eof {
    spec: EofSpec,
    level: u32,
    levels: Levels,
    n_output: usize,
    basis: Basis1d,
    /// The emitted blocks and their ancestors, parents first.
    blocks: Vec<Block>,
    /// Indices into `blocks` of the emitted blocks (one slot each).
    emit: Vec<u32>,
    /// The first column drawn from and the kept part of columns
    /// `start..|S_n|` (budget maps below `|S_n|` only).
    subset: Option<(u64, Subset)>,
    /// `Σ_{emitted b} kept_b / size_b`.
    expected_nnz: f64,
}

impl std::fmt::Debug for Eof {
    // The block table can hold a million entries: show the shape only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eof")
            .field("spec", &self.spec)
            .field("level", &self.level)
            .field("n_output", &self.n_output)
            .field("nnz_per_row", &self.emit.len())
            .field("expected_nnz", &self.expected_nnz)
            .finish()
    }
}

fn invalid(name: &'static str, value: impl ToString, expected: &'static str) -> FeatureError {
    FeatureError::InvalidParameter { name, value: value.to_string(), expected }
}

/// The sparse-grid level of `spec` and its feature budget (`None` for a
/// whole level), checked as [`Eof::new`] documents.
fn level_of(spec: &EofSpec) -> Result<(u32, Option<u64>)> {
    if !(spec.omega.is_finite() && spec.omega > 0.0) {
        return Err(invalid("omega", spec.omega, "a finite ω > 0"));
    }
    let d = spec.n_input;
    if d == 0 {
        return Err(invalid("n_input", 0, "at least one input column"));
    }
    let basis = spec.basis;
    let at = |n: u32| Levels::new(basis, n);
    let admissible = |n: u32| {
        n >= basis.min_level()
            && n <= MAX_LEVEL
            && grid::count_features(d, at(n)) <= u32::MAX as u128
            && grid::count_blocks(d, at(n)) <= MAX_NNZ_PER_ROW as u128
    };
    let (level, budget) = match spec.size {
        EofSize::Level(n) => {
            if !admissible(n) {
                return Err(invalid(
                    "level",
                    n,
                    match basis {
                        EofBasis::Centred | EofBasis::Boundary => {
                            "a level with fewer than 2^32 features and at most 2^20 non-zeros per row"
                        }
                        EofBasis::Paper => {
                            "a level of at least 1 with fewer than 2^32 features and at most 2^20 non-zeros per row"
                        }
                    },
                ));
            }
            (n, None)
        }
        EofSize::Budget(m) => {
            let too_large =
                || invalid("features", m, "a budget between 1 and |S_n| of a level with fewer than 2^32 features");
            if m == 0 {
                return Err(too_large());
            }
            let n = (basis.min_level()..=MAX_LEVEL)
                .find(|&n| grid::count_features(d, at(n)) >= m as u128)
                .ok_or_else(too_large)?;
            if !admissible(n) {
                return Err(too_large());
            }
            (n, Some(m as u64))
        }
    };
    Ok((level, budget))
}

impl EofSpec {
    /// The parameter memory of the map this spec builds, in bytes, from
    /// counts alone (nothing is enumerated): 28 bytes per block of the
    /// level and a quarter byte per candidate function (see [`Eof`]).
    ///
    /// # Errors
    /// As [`Eof::new`].
    pub fn parameter_bytes(&self) -> Result<u64> {
        let (level, _) = level_of(self)?;
        let levels = Levels::new(self.basis, level);
        let blocks = grid::count_blocks(self.n_input, levels);
        let features = grid::count_features(self.n_input, levels);
        Ok(u64::try_from(28 * blocks + features / 4).unwrap_or(u64::MAX))
    }
}

impl Eof {
    /// Builds the map of `spec`.
    ///
    /// # Errors
    /// [`FeatureError::InvalidParameter`] for `ω` not finite and positive
    /// (`omega`), `D = 0` (`n_input`), a level with `|S_n| ≥ 2^32` or more
    /// than [`MAX_NNZ_PER_ROW`] non-zeros, or level 0 of the paper basis
    /// (`level`), and a budget of 0 or larger than `|S_n|` of every
    /// admissible level (`features`).
    pub fn new(spec: EofSpec) -> Result<Self> {
        let (level, budget) = level_of(&spec)?;
        let (d, basis) = (spec.n_input, spec.basis);
        let at = |n: u32| Levels::new(basis, n);
        let levels = at(level);
        let full = grid::count_features(d, levels) as u64;
        let mut blocks = grid::enumerate(d, levels);
        let mut emit: Vec<u32> = (0..blocks.len() as u32).collect();
        let mut expected_nnz = blocks.len() as f64;
        let mut subset = None;
        let mut n_output = full;
        if let Some(m) = budget.filter(|&m| m < full) {
            // |S_{n−1}| < m < |S_n|, so n is above the minimal level (where
            // |S_n| = 1) and level − 1 is valid.
            let start = match spec.subset {
                EofSubset::Nested => grid::count_features(d, at(level - 1)) as u64,
                EofSubset::Uniform => 0,
            };
            let sub = Subset::sample(full - start, m - start, spec.seed);
            // `start` is a shell boundary, so a block lies wholly before it
            // (always kept) or wholly in the subset's range.
            let kept: Vec<u64> = blocks
                .iter()
                .map(|b| if b.offset < start { b.size() } else { sub.count_in(b.offset - start, b.size()) })
                .collect();
            expected_nnz = blocks.iter().zip(&kept).map(|(b, &k)| k as f64 / b.size() as f64).sum();
            (blocks, emit) = prune(&blocks, |b| kept[b] > 0);
            subset = Some((start, sub));
            n_output = m;
        }
        let basis = Basis1d::new(spec.kernel, spec.omega, basis, level);
        Ok(Eof { spec, level, levels, n_output: n_output as usize, basis, blocks, emit, subset, expected_nnz })
    }

    /// The description this map was built from.
    pub fn eof_spec(&self) -> &EofSpec {
        &self.spec
    }

    /// The sparse-grid level `n` in use (chosen from the budget, if any).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Stored entries (slots) per row: the ELL width of
    /// [`OutputKind::Sparse`], one per emitted block, and the bound on the
    /// true non-zeros of any row. It is what the solver's sparse path pays
    /// for (`nnz(nnz + 1)/2` Gram updates per row).
    pub fn nnz_per_row(&self) -> usize {
        self.emit.len()
    }

    /// Mean true entries per row for `x` uniform on the cube:
    /// `Σ_{emitted b} kept_b / size_b` (module docs, "Sparse layout and
    /// cost"). Equal to [`Eof::nnz_per_row`] for a level or a full budget;
    /// below it when a subset leaves slots padded.
    ///
    /// Values that vanish on a null set (a hat at the ends of its support)
    /// are counted: for data on the faces of the cube (binary columns, or
    /// min–max scaled columns at their extremes) the truth can be far lower,
    /// and for the paper basis zero. Measure it with [`Eof::count_nonzeros`].
    pub fn expected_nnz(&self) -> f64 {
        self.expected_nnz
    }

    /// The number of non-zero values over all rows of `x` `(n, D)`:
    /// padding and entries whose value is 0 at that row are not counted.
    /// Divide by `x.nrows()` for the measured mean true non-zeros per row.
    ///
    /// Cost: one transform of `x`, without allocating the output.
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()`.
    #[track_caller]
    pub fn count_nonzeros(&self, x: ArrayView2<'_, f64>) -> u64 {
        let d = self.spec.n_input;
        assert_eq!(x.ncols(), d, "count_nonzeros: x has {} columns, the map takes {d}", x.ncols());
        let mut count = 0u64;
        self.for_each_row(x, |_, _, vals| count += vals.iter().filter(|&&v| v != 0.0).count() as u64);
        count
    }

    /// Writes the `nnz` entries of one row into `cols` and `vals`: the kept
    /// functions in block order, then padding `(0, 0.0)`.
    fn row_into(&self, x: ArrayView1<'_, f64>, s: &mut Scratch, cols: &mut [u32], vals: &mut [f64]) {
        let n1 = self.levels.per_dim();
        match x.as_slice() {
            Some(row) => self.basis.eval_row(row, &mut s.vals, &mut s.idx, &mut s.terms),
            None => self.basis.eval_row(&x.to_vec(), &mut s.vals, &mut s.idx, &mut s.terms),
        }
        let blocks = &self.blocks;
        s.loc[0] = 0;
        for b in 1..blocks.len() {
            let blk = blocks[b];
            s.loc[b] = (s.loc[blk.parent as usize] << blk.shift) | s.idx[blk.slot as usize] as u64;
        }
        let paper = self.spec.basis == EofBasis::Paper;
        let p0: f64 = (0..x.len()).map(|d| s.vals[d * n1]).product();
        if paper && (0..x.len()).any(|d| s.vals[d * n1] == 0.0) {
            // A coordinate on a face: every hat vanishes there, so every
            // feature is exactly 0 (the ratio chain would divide by 0).
            s.val.fill(0.0);
        } else if p0 >= TINY {
            // The boundary Sobolev basis has ψ_0 = 1: no division needed.
            if !(self.spec.basis == EofBasis::Boundary && self.spec.kernel == EofKernel::Sobolev) {
                for chunk in s.vals.chunks_exact_mut(n1) {
                    let v0 = chunk[0];
                    chunk[1..].iter_mut().for_each(|v| *v /= v0);
                }
            }
            s.val[0] = p0;
            for b in 1..blocks.len() {
                let blk = blocks[b];
                s.val[b] = s.val[blk.parent as usize] * s.vals[blk.slot as usize];
            }
        } else {
            // Each product is formed from the D factors of the feature
            // itself: it underflows only if the value does. (For Laplace
            // every |ψ| ≤ 1, so the partial products only shrink.)
            for b in 0..blocks.len() {
                s.chain.clear();
                let mut at = b;
                while at != 0 {
                    s.chain.push(blocks[at].slot as usize);
                    at = blocks[at].parent as usize;
                }
                // `chain` lists the block's non-zero coordinates by
                // decreasing dimension.
                let mut next = s.chain.iter().copied().peekable();
                let mut prod = 1.0;
                for d in (0..x.len()).rev() {
                    match next.peek() {
                        Some(&slot) if slot / n1 == d => {
                            prod *= s.vals[slot];
                            next.next();
                        }
                        _ => prod *= s.vals[d * n1],
                    }
                }
                s.val[b] = prod;
            }
        }
        // Compaction: kept entries first, so that the padding is a tail a
        // consumer can skip (module docs, "Sparse layout and cost").
        let mut front = 0;
        for &b in &self.emit {
            let b = b as usize;
            let col = blocks[b].offset + s.loc[b];
            let entry = match &self.subset {
                Some((start, sub)) if col >= *start => sub.rank(col - start).map(|r| (*start as u32) + r),
                _ => Some(col as u32),
            };
            if let Some(c) = entry {
                (cols[front], vals[front]) = (c, s.val[b]);
                front += 1;
            }
        }
        cols[front..].fill(0);
        vals[front..].fill(0.0);
    }

    fn scratch(&self) -> Scratch {
        let n = self.spec.n_input * self.levels.per_dim();
        let nb = self.blocks.len();
        Scratch {
            vals: vec![0.0; n],
            idx: vec![0; n],
            val: vec![0.0; nb],
            loc: vec![0; nb],
            chain: Vec::with_capacity(self.levels.per_dim()),
            terms: basis::RowTerms::default(),
        }
    }

    /// Calls `emit(row, cols, vals)` for every row of `x`.
    fn for_each_row(&self, x: ArrayView2<'_, f64>, mut emit: impl FnMut(usize, &[u32], &[f64])) {
        let mut s = self.scratch();
        let nb = self.emit.len();
        let (mut cols, mut vals) = (vec![0u32; nb], vec![0.0; nb]);
        for (r, row) in x.axis_iter(Axis(0)).enumerate() {
            self.row_into(row, &mut s, &mut cols, &mut vals);
            emit(r, &cols, &vals);
        }
    }

    fn registered_spec(spec: &EofSpec) -> MapSpec {
        MapSpec::Eof(spec.clone())
    }
}

/// The blocks with `keep(b)` plus their ancestors, parents remapped, and
/// the indices of the kept ones in the new table. A uniform subset can drop
/// a block whose child it keeps; the transform still needs the parent's
/// value and local index to reach the child.
fn prune(blocks: &[Block], keep: impl Fn(usize) -> bool) -> (Vec<Block>, Vec<u32>) {
    let mut need: Vec<bool> = (0..blocks.len()).map(&keep).collect();
    // Children come after their parents: one backward sweep marks every
    // ancestor. The root (index 0) is an ancestor of every block.
    for b in (1..blocks.len()).rev() {
        if need[b] {
            need[blocks[b].parent as usize] = true;
        }
    }
    let mut new_index = vec![u32::MAX; blocks.len()];
    let (mut table, mut emit) = (Vec::new(), Vec::new());
    for (b, blk) in blocks.iter().enumerate().filter(|(b, _)| need[*b]) {
        new_index[b] = table.len() as u32;
        if keep(b) {
            emit.push(table.len() as u32);
        }
        table.push(Block { parent: new_index[blk.parent as usize], ..*blk });
    }
    (table, emit)
}

/// Per-call buffers of the transform.
struct Scratch {
    /// 1-D values (then ratios to level 0), `(D, levels)` row-major.
    vals: Vec<f64>,
    /// 1-D hat indices, `(D, levels)`.
    idx: Vec<u32>,
    /// Value of each block's active function.
    val: Vec<f64>,
    /// Local index of each block's active function.
    loc: Vec<u64>,
    /// Slots of one block (direct-product path).
    chain: Vec<usize>,
    /// The Laplace kernel's exponentials of one row, batched.
    terms: basis::RowTerms,
}

impl FeatureMap for Eof {
    fn n_input(&self) -> usize {
        self.spec.n_input
    }

    fn n_output(&self) -> usize {
        self.n_output
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::Sparse { nnz_per_row: self.emit.len() }
    }

    /// Writes the dense rows, `(n, n_output)`: meant for tests and small
    /// outputs. Prefer [`FeatureMap::transform_sparse_into`].
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()` and
    /// `out.dim() == (x.nrows(), self.n_output())`.
    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        let (d, l) = (self.spec.n_input, self.n_output);
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(
            out.dim(),
            (x.nrows(), l),
            "transform: out has shape {:?}, expected ({}, {l})",
            out.dim(),
            x.nrows()
        );
        out.fill(0.0);
        self.for_each_row(x, |r, cols, vals| {
            let mut o = out.row_mut(r);
            for (&c, &v) in cols.iter().zip(vals) {
                o[c as usize] += v;
            }
        });
    }

    /// # Panics
    /// `x.ncols() == self.n_input()`, `out.n_cols == self.n_output()`, and
    /// both buffers of shape `(x.nrows(), nnz_per_row)`.
    fn transform_sparse_into(&self, x: ArrayView2<'_, f64>, mut out: SparseRowsViewMut<'_>) {
        let d = self.spec.n_input;
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(out.n_cols, self.n_output, "transform: sparse rows have {} columns", out.n_cols);
        let shape = (x.nrows(), self.emit.len());
        assert_eq!(out.indices.dim(), shape, "transform: sparse indices have the wrong shape");
        assert_eq!(out.values.dim(), shape, "transform: sparse values have the wrong shape");
        self.for_each_row(x, |r, cols, vals| {
            out.indices.row_mut(r).iter_mut().zip(cols).for_each(|(o, &c)| *o = c);
            out.values.row_mut(r).iter_mut().zip(vals).for_each(|(o, &v)| *o = v);
        });
    }

    fn spec(&self) -> MapSpec {
        Self::registered_spec(&self.spec)
    }

    fn parameter_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
            + self.emit.len() * std::mem::size_of::<u32>()
            + self.subset.as_ref().map_or(0, |(_, s)| s.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        Array2::from_shape_fn((n, d), |(i, j)| {
            kapprox_core::rng::unit(seed, kapprox_core::Domain(0xEE), (i * d + j) as u64)
        })
    }

    /// The direct-product path must agree with the ratio path wherever both
    /// are valid; forcing it by hand checks the walk over parents.
    #[test]
    fn direct_products_match_the_ratio_chain() {
        for basis in [EofBasis::Boundary, EofBasis::Paper] {
            for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
                for (d, n) in [(1, 5), (3, 4), (5, 3)] {
                    let map = EofSpec::level(kernel, 3.0, d, n).with_basis(basis).build().unwrap();
                    let x = points(20, d, 1);
                    let mut s = map.scratch();
                    let nb = map.nnz_per_row();
                    assert_eq!(nb, map.blocks.len(), "a level emits every block");
                    let (mut c1, mut v1) = (vec![0u32; nb], vec![0.0; nb]);
                    let n1 = map.levels.per_dim();
                    for row in x.rows() {
                        map.row_into(row, &mut s, &mut c1, &mut v1);
                        for (dd, &xd) in row.iter().enumerate() {
                            let (v, i) = (&mut s.vals[dd * n1..(dd + 1) * n1], &mut s.idx[dd * n1..(dd + 1) * n1]);
                            map.basis.eval(xd, v, i);
                        }
                        for b in 0..nb {
                            let mut prod = 1.0;
                            let mut j = vec![0usize; d];
                            let mut at = b;
                            while at != 0 {
                                let slot = map.blocks[at].slot as usize;
                                j[slot / n1] = slot % n1;
                                at = map.blocks[at].parent as usize;
                            }
                            for dd in 0..d {
                                prod *= s.vals[dd * n1 + j[dd]];
                            }
                            assert!((prod - v1[b]).abs() < 1e-14, "{basis:?} block {b}: {prod} vs {}", v1[b]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn pruning_keeps_ancestors_and_remaps_parents() {
        let blocks = grid::enumerate(3, Levels::new(EofBasis::Paper, 4));
        // Keep only a few deep blocks: their ancestors must stay, parents
        // first, with the same (slot, shift) chain as before.
        let keep = |b: usize| b % 7 == 3 && blocks[b].shell >= 2;
        let (table, emit) = prune(&blocks, keep);
        let chain = |t: &[Block], mut at: usize| {
            let mut c = Vec::new();
            while at != 0 {
                c.push((t[at].slot, t[at].shift, t[at].offset));
                at = t[at].parent as usize;
            }
            c
        };
        let kept: Vec<usize> = (0..blocks.len()).filter(|&b| keep(b)).collect();
        assert_eq!(emit.len(), kept.len());
        for (&e, &b) in emit.iter().zip(&kept) {
            assert_eq!(chain(&table, e as usize), chain(&blocks, b));
        }
        assert!(table.iter().enumerate().all(|(i, t)| i == 0 || (t.parent as usize) < i));
        assert!(table.len() < blocks.len() && table.len() > emit.len());
    }

    #[test]
    fn budget_keeps_the_previous_level_whole() {
        let full = EofSpec::level(EofKernel::Sobolev, 1.0, 3, 4).build().unwrap();
        let prev = EofBasis::default().n_features(3, 3) as usize;
        let blocks3 = EofBasis::default().nnz(3, 3) as usize;
        let map = EofSpec::budget(EofKernel::Sobolev, 1.0, 3, prev + 7, 5).build().unwrap();
        assert_eq!((map.level(), map.n_output()), (4, prev + 7));
        assert_eq!(&map.blocks[..blocks3], &full.blocks[..blocks3]);
        assert!(map.nnz_per_row() <= blocks3 + 7);
    }
}
