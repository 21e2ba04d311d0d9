//! Range finders: an orthonormal basis of the dominant column space of
//! `(FᵀF)^q Y₀` for a start `Y₀` — a row sketch `FᵀΘ`, or `(FᵀF)Ω` for a
//! test matrix `Ω` of the `d` columns — in memory or pass by pass.

use crate::error::{Result, SketchError};
use crate::gaussian::theta_row_unscaled;
use crate::range_sketch::RangeSketch;
use crate::sketch::{Sketch, SketchKind};
use kapprox_core::Par;
use kapprox_core::dense;
use kapprox_core::gram::{PackedRows, gemm_tn_add, gemm_tn_sparse};
use kapprox_core::rng::{self, Domain};
use kapprox_core::sparse::SparseRows;
use ndarray::{Array2, ArrayView2, s};
use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Rows of the identity fed to a sketch at a time by [`test_matrix`].
const IDENTITY_BLOCK: usize = 512;

/// The test matrix `Ω (d, l)` of a range finder over the `d` columns of
/// `F`: rows `0 .. d` of the sketch `Θ` of `kind` with `seed` — a Gaussian
/// matrix, a block SRHT or a CountSketch of the `d` coordinates (the same
/// definitions and scaling as the row sketches, with the column index as
/// the row id). `(FᵀF)Ω` is then the range sketch of the rows of `FᵀF`,
/// and `Fᵀ(FΩ)` (a [`ProductAccumulator`](crate::ProductAccumulator) with
/// `Q = Ω`) the same product pass by pass.
///
/// Cost: `d·l` normal draws (Gaussian), or the sketch of the `d × d`
/// identity fed `512` rows at a time (`d²·log₂B` additions for SRHT, `d²`
/// for CountSketch). Memory: `d·l + 512·d` doubles plus the sketch's
/// scratch.
///
/// # Errors
/// [`SketchError::InvalidParameter`] if `l == 0`.
pub fn test_matrix(kind: SketchKind, d: usize, l: usize, seed: u64) -> Result<Array2<f64>> {
    if kind == SketchKind::Gaussian && l > 0 {
        // Θ's rows directly: the sketch of the identity would spend a GEMM.
        let mut omega = kapprox_core::buffer::zeros((d, l), false);
        let scale = 1.0 / (l as f64).sqrt();
        // Every row is its own stream: the same bits on any number of cores.
        let slots = omega.as_slice_mut().expect("a fresh row-major matrix");
        slots.par_chunks_mut(l).enumerate().for_each(|(j, row)| {
            let mut row = ndarray::ArrayViewMut1::from(row);
            theta_row_unscaled(seed, j as u64, row.view_mut());
            row *= scale;
        });
        return Ok(omega);
    }
    let mut sketch = Sketch::new(kind, d, l, seed)?;
    let mut eye = Array2::zeros((IDENTITY_BLOCK.min(d), d));
    for start in (0..d).step_by(IDENTITY_BLOCK) {
        let rows = IDENTITY_BLOCK.min(d - start);
        let mut block = eye.slice_mut(s![..rows, ..]);
        block.fill(0.0);
        for r in 0..rows {
            block[[r, start + r]] = 1.0;
        }
        sketch.update(block.view(), start as u64)?;
    }
    Ok(sketch.finish())
}

/// Stored entries per row of [`sparse_sign_matrix`]: Martinsson and
/// Tropp (2020, §9.2) find 8 enough for a sparse sign test matrix to
/// capture a range as well as a Gaussian one.
pub const SPARSE_SIGN_NONZEROS: usize = 8;

/// The sparse sign test matrix `Ωₛ (d, l)`: row `j` holds `±1/√s` in
/// `s = min(8, l)` distinct columns drawn uniformly (signs and columns
/// from `(seed, j)`), zeros elsewhere. Its columns are nearly orthogonal
/// with norm about `√(d/l)`, like a Gaussian `Ω`'s scaled by `1/√l`.
///
/// It is the start of a range finder that runs power iterations: `(FᵀF)Ωₛ`
/// costs `2·s·d²` flops where a dense `Ω` costs `2·l·d²`, and the power
/// step that follows makes the start's distribution immaterial (see
/// [`range_finder_start`]).
///
/// Memory: `s·d` indices and values.
pub fn sparse_sign_matrix(d: usize, l: usize, seed: u64) -> SparseRows {
    let s = SPARSE_SIGN_NONZEROS.min(l);
    let mut omega = SparseRows::zeros(d, s, l);
    if s == 0 {
        return omega;
    }
    let value = 1.0 / (s as f64).sqrt();
    for (j, (mut columns, mut values)) in omega.indices.rows_mut().into_iter().zip(omega.values.rows_mut()).enumerate()
    {
        let mut g = rng::stream(seed, Domain::SKETCH_SPARSE_SIGN, j as u64);
        for e in 0..s {
            // Rejection keeps the columns distinct; s ≤ l, and s ≤ 8 makes
            // a repeat rare unless l is tiny.
            let column = loop {
                let c = g.random_range(0..l as u32);
                if !columns.iter().take(e).any(|&taken| taken == c) {
                    break c;
                }
            };
            columns[e] = column;
            values[e] = if g.random::<bool>() { value } else { -value };
        }
    }
    omega
}

/// Whether the range finder of `kind` with `power_iterations` starts from
/// the sparse sign matrix: the Gaussian kind with at least one power step.
fn starts_sparse(kind: SketchKind, power_iterations: usize) -> bool {
    kind == SketchKind::Gaussian && power_iterations > 0
}

/// The test matrix `Ω (d, l)` the range finder of `kind` with `q =
/// power_iterations` starts from, dense: [`test_matrix`], except that the
/// Gaussian kind with `q ≥ 1` starts from the [`sparse_sign_matrix`].
/// [`gram_range_finder`] multiplies `FᵀF` by it; the pass-by-pass range
/// finder's first pass accumulates `Fᵀ(FΩ)` with it, so both run the same
/// steps.
///
/// Why the Gaussian kind changes its start: with a power step, the basis
/// spans `(FᵀF)^(q+1) Ω`, and the start only has to give every dominant
/// direction a fair share; a sparse sign `Ω` does that as well as a
/// Gaussian one (Martinsson & Tropp 2020, §9.2; Tropp et al. 2019), and
/// the product `(FᵀF)Ω` becomes `8/l` of its dense cost — at `d = 4l` a
/// quarter of TEFM-G's flops after its pass (issue 15, item 4). Without a
/// power step the start *is* the basis, and the kind's own `Ω` stays.
///
/// # Errors
/// As [`test_matrix`].
pub fn range_finder_start(
    kind: SketchKind,
    d: usize,
    l: usize,
    seed: u64,
    power_iterations: usize,
) -> Result<Array2<f64>> {
    if starts_sparse(kind, power_iterations) && l > 0 {
        return Ok(sparse_sign_matrix(d, l, seed).to_dense());
    }
    test_matrix(kind, d, l, seed)
}

/// `Q (d, l)` with orthonormal columns spanning `(FᵀF)^(q+1) Ω` for the
/// start `Ω` ([`range_finder_start`]) of `kind`, `l`, `seed` and `q`, from
/// `FᵀF` in memory: the range finder of one-pass TEFM, which needs no
/// sketch of the rows.
///
/// `Y₀ = (FᵀF)Ω` is the sketch of the rows of the symmetric `gram` (row
/// `j` has id `j`; for the Gaussian kind a product by the explicit `Ω`, or
/// by the [`sparse_sign_matrix`] when `q ≥ 1`), then `power_iterations` (`q`) further products run as in
/// [`range_finder`]. The products use the Gram kernel of
/// `kapprox_core::gram` on the packed `gram` (bitwise the same for any
/// thread count). A [`PowerIteration`] fed first by
/// the product pass `Fᵀ(FΩ)`, then by `q` product passes, runs the same
/// steps over the rows and gives the same `Q` up to rounding.
///
/// Against the row sketch `FᵀΘ` (whose columns have covariance `FᵀF`, so
/// behave like `(FᵀF)^½ Ω`), the start `(FᵀF)Ω` is half a power step
/// further along: the same `q` captures the dominant subspace at least as
/// well (Halko et al. 2011, §10.4).
///
/// Cost: `q·2·d²·l` flops for the power steps plus the first product:
/// `2·d²·l` for the Gaussian kind at `q = 0`, `16·d²` for its sparse sign
/// start at `q ≥ 1`, `O(d²·log B)` for SRHT and `O(d²)` for CountSketch;
/// and `q + 1` thin QRs.
/// Memory: a packed copy of `gram` (`d²` doubles, rounded up to whole
/// panels) and `4·d·l` doubles, plus the sketch's scratch.
///
/// # Errors
/// [`SketchError::Shape`] if `gram` is not square;
/// [`SketchError::InvalidParameter`] if `l == 0`;
/// [`SketchError::TooManyComponents`] if `l > d`.
pub fn gram_range_finder(
    gram: ArrayView2<'_, f64>,
    kind: SketchKind,
    l: usize,
    seed: u64,
    power_iterations: usize,
) -> Result<Array2<f64>> {
    let d = gram.nrows();
    if gram.ncols() != d {
        return Err(SketchError::Shape { name: "Gram matrix", found: gram.dim(), expected: (d, d) });
    }
    gram_range_finder_packed(&pack_symmetric(gram), kind, l, seed, power_iterations)
}

/// [`gram_range_finder`] on the rows of the symmetric `FᵀF` already packed
/// (e.g. by [`PackedRows::symmetric_from_lower_sum`], which builds them
/// from the lower triangles of split parts' Grams without a dense copy):
/// the same basis, bit for bit.
///
/// Memory: `4·d·l` doubles, plus a dense copy of the Gram for the
/// structured kinds (SRHT, CountSketch), whose sketches read rows.
///
/// # Errors
/// As [`gram_range_finder`].
pub fn gram_range_finder_packed(
    gram: &PackedRows,
    kind: SketchKind,
    l: usize,
    seed: u64,
    power_iterations: usize,
) -> Result<Array2<f64>> {
    let d = gram.n_cols();
    if gram.len() != d {
        return Err(SketchError::Shape { name: "Gram matrix", found: (gram.len(), d), expected: (d, d) });
    }
    let y0 = match kind {
        // 8 entries per row of Ω: 2·8·d² flops instead of 2·l·d².
        _ if starts_sparse(kind, power_iterations) && l > 0 => {
            gemm_tn_sparse(gram, sparse_sign_matrix(d, l, seed).view())
        }
        // Ω's rows directly, then one product on every core.
        SketchKind::Gaussian if l > 0 => times(gram, test_matrix(kind, d, l, seed)?.view()),
        // The structured sketches of the Gram's rows cost far less than a
        // product by Ω.
        _ => {
            let mut sketch = Sketch::new(kind, d, l, seed)?;
            sketch.update(gram.to_array().view(), 0)?;
            sketch.finish()
        }
    };
    power_steps(gram, y0.view(), power_iterations)
}

/// The rows of a symmetric matrix, read contiguously from whichever
/// layout it has (its rows are its columns).
fn rows_of_symmetric(a: ArrayView2<'_, f64>) -> ArrayView2<'_, f64> {
    if a.t().is_standard_layout() { a.reversed_axes() } else { a }
}

/// A symmetric matrix packed for [`times`].
fn pack_symmetric(a: ArrayView2<'_, f64>) -> PackedRows {
    PackedRows::from_rows(rows_of_symmetric(a))
}

/// `A·Q` for the symmetric `A` packed by [`pack_symmetric`]: `AᵀQ` with
/// the Gram kernel, on every core and bitwise the same for any thread
/// count (faer's GEMM reached about two thirds of its rate on these
/// shapes).
fn times(a: &PackedRows, q: ArrayView2<'_, f64>) -> Array2<f64> {
    let mut y = kapprox_core::buffer::zeros((a.n_cols(), q.ncols()), true);
    gemm_tn_add(y.view_mut(), a, &PackedRows::from_rows(q), 1.0, Par::rayon(0));
    y
}

/// Orthonormalises `y0`, then `q` times multiplies by `A` and
/// orthonormalises again.
fn power_steps(a: &PackedRows, y0: ArrayView2<'_, f64>, power_iterations: usize) -> Result<Array2<f64>> {
    let mut it = PowerIteration::new(power_iterations);
    it.advance(y0)?;
    while !it.is_done() {
        let q = it.current().expect("a started iteration has a current basis");
        let y = times(a, q);
        it.advance(y.view())?;
    }
    it.finish()
}

/// `Q (d, l)` with orthonormal columns spanning
/// `Y = (FᵀF)^q Y₀`, from `FᵀF` held in memory.
///
/// `gram` is `FᵀF (d, d)` (e.g. [`kapprox_core::Moments::zz`]), `sketch`
/// is the start `Y₀ (d, l)`, e.g. `FᵀΘ` from a
/// [`RangeSketch`](crate::RangeSketch) (see [`gram_range_finder`] for the
/// start `(FᵀF)Ω`), and
/// `power_iterations` is `q`. The basis is re-orthonormalised (thin QR)
/// after every multiplication, which avoids the loss of the small singular
/// directions to rounding that `(FᵀF)^q` would cause (Halko et al. 2011,
/// Alg. 4.4). This runs exactly the steps of a [`PowerIteration`] fed by
/// multi-pass products, so both give the same `Q` up to rounding.
///
/// Cost: `q·2·d²·l + (q + 1)·O(d·l²)` flops. Memory: a packed copy of
/// `gram` and `3·d·l` doubles besides the inputs.
///
/// # Errors
/// [`SketchError::Shape`] if `gram` is not `(d, d)`;
/// [`SketchError::TooManyComponents`] if `l > d`.
pub fn range_finder(
    gram: ArrayView2<'_, f64>,
    sketch: ArrayView2<'_, f64>,
    power_iterations: usize,
) -> Result<Array2<f64>> {
    let d = sketch.nrows();
    if gram.dim() != (d, d) {
        return Err(SketchError::Shape { name: "Gram matrix", found: gram.dim(), expected: (d, d) });
    }
    power_steps(&pack_symmetric(gram), sketch, power_iterations)
}

/// The pass-by-pass range finder: a small state machine over `1 + q` data
/// passes when `FᵀF (d, d)` does not fit in memory.
///
/// 1. Pass 1 accumulates the start `Y₀`: `Fᵀ(FΩ)` for a [`test_matrix`]
///    `Ω` (a [`ProductAccumulator`](crate::ProductAccumulator), as
///    [`gram_range_finder`] starts), or a row sketch `FᵀΘ` (a
///    [`RangeSketch`](crate::RangeSketch));
///    [`advance`](PowerIteration::advance) orthonormalises it into `Q₀`.
/// 2. Each of the `q` further passes accumulates `Fᵀ(F Qᵢ)` for the
///    current basis ([`current`](PowerIteration::current), fed to a
///    [`ProductAccumulator`](crate::ProductAccumulator));
///    `advance` orthonormalises it into `Qᵢ₊₁`.
/// 3. [`finish`](PowerIteration::finish) returns `Q_q`.
///
/// The state is serialisable, so the passes can run in separate processes.
///
/// Memory: `d·l` doubles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerIteration {
    power_iterations: usize,
    passes_done: usize,
    q: Option<Array2<f64>>,
}

impl PowerIteration {
    /// A range finder that will run `power_iterations` (`q`) power
    /// iterations after the sketch pass.
    pub fn new(power_iterations: usize) -> Self {
        PowerIteration { power_iterations, passes_done: 0, q: None }
    }

    /// Passes needed in total, `1 + q`.
    pub fn passes_total(&self) -> usize {
        1 + self.power_iterations
    }

    /// Passes fed so far.
    pub fn passes_done(&self) -> usize {
        self.passes_done
    }

    /// Whether all passes have been fed.
    pub fn is_done(&self) -> bool {
        self.passes_done >= self.passes_total()
    }

    /// The current orthonormal basis `(d, l)`: the `Q` to multiply by in the
    /// next pass (or the final one when done). `None` before the first pass.
    pub fn current(&self) -> Option<ArrayView2<'_, f64>> {
        self.q.as_ref().map(|q| q.view())
    }

    /// Feeds the result of the next pass: the start `Y₀ (d, l)` for the first pass,
    /// then `Fᵀ(F Q) (d, l)` for the current `Q`. Returns the new basis.
    ///
    /// Cost: one thin QR (`≈ 4·d·l²` flops: two Cholesky QR steps, see
    /// `kapprox_core::dense::orthonormal_basis`; one step of `2·d·l²` for
    /// the passes before the last, see `kapprox_core::dense::cholesky_qr_q`).
    ///
    /// # Errors
    /// [`SketchError::PowerIterationFinished`] after the last pass;
    /// [`SketchError::Shape`] if the shape differs from the first pass;
    /// [`SketchError::TooManyComponents`] if `l > d`.
    pub fn advance(&mut self, pass_result: ArrayView2<'_, f64>) -> Result<ArrayView2<'_, f64>> {
        if self.is_done() {
            return Err(SketchError::PowerIterationFinished { passes: self.passes_total() });
        }
        let (d, l) = pass_result.dim();
        if let Some(q) = &self.q
            && q.dim() != (d, l)
        {
            return Err(SketchError::Shape { name: "pass result", found: (d, l), expected: q.dim() });
        }
        if l > d {
            return Err(SketchError::TooManyComponents { n_components: l, n_features: d });
        }
        self.passes_done += 1;
        // Only the final basis must be orthonormal to rounding; an
        // intermediate one needs the span (one Cholesky QR step, with
        // Householder QR when YᵀY is too ill-conditioned for it).
        let par = kapprox_core::dense_par();
        self.q = Some(if self.is_done() {
            dense::orthonormal_basis(pass_result, par)
        } else {
            dense::cholesky_qr_q(pass_result, par).unwrap_or_else(|| dense::qr_thin_q(pass_result))
        });
        Ok(self.q.as_ref().expect("just set").view())
    }

    /// The final basis `Q (d, l)`.
    ///
    /// # Errors
    /// [`SketchError::PowerIterationUnfinished`] if passes are missing.
    pub fn finish(self) -> Result<Array2<f64>> {
        match self.q {
            Some(q) if self.passes_done == self.power_iterations + 1 => Ok(q),
            _ => Err(SketchError::PowerIterationUnfinished { done: self.passes_done, total: self.passes_total() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{gaussian_rows, rel_diff};
    use crate::{GaussianSketch, ProductAccumulator, RangeSketch};
    use kapprox_core::Moments;

    #[test]
    fn in_memory_and_pass_by_pass_give_the_same_basis() {
        let (n, d, l) = (3000, 40, 8);
        let f = gaussian_rows(n, d, 1);
        let mut sk = GaussianSketch::new(d, l, 5).unwrap();
        sk.update(f.view(), 0).unwrap();
        let sketch = sk.finish();
        let mut m = Moments::new(d, 0);
        m.update(f.view(), Array2::zeros((n, 0)).view());
        m.flush();
        let gram = m.zz();
        for q in 0..=2 {
            let a = range_finder(gram.view(), sketch.view(), q).unwrap();
            let mut it = PowerIteration::new(q);
            it.advance(sketch.view()).unwrap();
            while !it.is_done() {
                // The pass: a fresh product accumulator over the rows.
                let mut p = ProductAccumulator::new(it.current().unwrap());
                p.update(f.view()).unwrap();
                let y = p.finish();
                it.advance(y.view()).unwrap();
            }
            let it: PowerIteration = serde_json::from_str(&serde_json::to_string(&it).unwrap()).unwrap();
            let b = it.finish().unwrap();
            let qtq = a.t().dot(&a);
            assert!(rel_diff(&qtq, &Array2::eye(l)) < 1e-13);
            let e = rel_diff(&b, &a);
            assert!(e < 1e-10, "q = {q}: {e}");
        }
    }

    #[test]
    fn test_matrix_is_the_sketch_of_the_identity() {
        let (d, l) = (1100, 6);
        for kind in [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch] {
            let omega = test_matrix(kind, d, l, 4).unwrap();
            let mut sk = Sketch::new(kind, d, l, 4).unwrap();
            sk.update(Array2::<f64>::eye(d).view(), 0).unwrap();
            let want = sk.finish();
            assert!(rel_diff(&omega, &want) < 1e-15, "{kind}: {}", rel_diff(&omega, &want));
        }
        // CountSketch: one ±1 per row, in the bucket the sketch assigns.
        let omega = test_matrix(SketchKind::CountSketch, d, l, 4).unwrap();
        let cs = crate::CountSketch::new(d, l, 4).unwrap();
        for (j, row) in omega.rows().into_iter().enumerate() {
            let (bucket, sign) = cs.bucket_and_sign(j as u64);
            let mut want = ndarray::Array1::zeros(l);
            want[bucket] = sign;
            assert_eq!(row, want, "row {j}");
        }
        assert!(test_matrix(SketchKind::Gaussian, d, 0, 4).is_err());
    }

    #[test]
    fn a_sparse_sign_matrix_has_distinct_signed_entries_and_nearly_orthogonal_columns() {
        let (d, l) = (4096, 64);
        let omega = sparse_sign_matrix(d, l, 7);
        assert_eq!((omega.n_rows(), omega.nnz_per_row(), omega.n_cols), (d, SPARSE_SIGN_NONZEROS, l));
        let value = 1.0 / (SPARSE_SIGN_NONZEROS as f64).sqrt();
        for (columns, values) in omega.indices.rows().into_iter().zip(omega.values.rows()) {
            let mut sorted = columns.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), SPARSE_SIGN_NONZEROS, "a repeated column: {columns}");
            assert!(values.iter().all(|v| v.abs() == value));
        }
        assert_eq!(sparse_sign_matrix(d, l, 7), omega);
        assert_ne!(sparse_sign_matrix(d, l, 8), omega);
        // ΩᵀΩ ≈ (d/l)·I: a column's squared norm is Binomial(d, s/l)/s
        // (mean 64, sd √8 ≈ 2.8 here), an off-diagonal entry a sum of
        // ±1/s over about d·(s/l)² rows (sd √d/l = 1).
        let dense = omega.to_dense();
        let gram = dense.t().dot(&dense);
        let mean = d as f64 / l as f64;
        for ((i, j), v) in gram.indexed_iter() {
            let bound = if i == j { 6.0 * 8f64.sqrt() } else { 5.0 };
            let want = if i == j { mean } else { 0.0 };
            assert!((v - want).abs() < bound, "(ΩᵀΩ)[{i}, {j}] = {v}");
        }
        // Signs balance: about half of the entries are negative.
        let negative = omega.values.iter().filter(|v| **v < 0.0).count() as f64 / (d * SPARSE_SIGN_NONZEROS) as f64;
        assert!((negative - 0.5).abs() < 0.02, "{negative}");
        // Fewer columns than 8: every row holds all of them.
        let narrow = sparse_sign_matrix(10, 3, 1);
        assert_eq!(narrow.nnz_per_row(), 3);
        assert!(narrow.to_dense().iter().all(|v| (v.abs() - 1.0 / 3f64.sqrt()).abs() < 1e-15));
    }

    #[test]
    fn only_the_gaussian_kind_with_a_power_step_starts_sparse() {
        let (d, l) = (300, 16);
        let sparse = sparse_sign_matrix(d, l, 3).to_dense();
        for q in 1..=2 {
            assert_eq!(range_finder_start(SketchKind::Gaussian, d, l, 3, q).unwrap(), sparse);
        }
        assert_eq!(
            range_finder_start(SketchKind::Gaussian, d, l, 3, 0).unwrap(),
            test_matrix(SketchKind::Gaussian, d, l, 3).unwrap()
        );
        for kind in [SketchKind::Srht, SketchKind::CountSketch] {
            for q in 0..=2 {
                assert_eq!(range_finder_start(kind, d, l, 3, q).unwrap(), test_matrix(kind, d, l, 3).unwrap());
            }
        }
    }

    #[test]
    fn gram_range_finder_equals_product_passes_from_the_test_matrix() {
        let (n, d, l) = (3000, 40, 8);
        let f = gaussian_rows(n, d, 1);
        let mut m = Moments::new(d, 0);
        m.update(f.view(), Array2::zeros((n, 0)).view());
        m.flush();
        let gram = m.zz();
        for kind in [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch] {
            for q in 0..=2 {
                let omega = range_finder_start(kind, d, l, 5, q).unwrap();
                let a = gram_range_finder(gram.view(), kind, l, 5, q).unwrap();
                // From the lower triangle packed directly: the same bits.
                let packed =
                    PackedRows::<f64>::symmetric_from_lower_sum(kapprox_core::cpu::Simd::detect(), &[gram.view()]);
                assert_eq!(gram_range_finder_packed(&packed, kind, l, 5, q).unwrap(), a, "{kind} q = {q}");
                // The explicit definition: the span of (FᵀF)^(q+1) Ω, with
                // the naive product and Householder QR throughout (the
                // bases may differ by the signs of their columns).
                let mut y = gram.dot(&omega);
                for _ in 0..q {
                    y = gram.dot(&dense::qr_thin_q(y.view()));
                }
                let want = dense::qr_thin_q(y.view());
                let (pa, pw) = (a.dot(&a.t()), want.dot(&want.t()));
                assert!(rel_diff(&pa, &pw) < 1e-10, "{kind} q = {q}: {}", rel_diff(&pa, &pw));
                assert!(rel_diff(&a.t().dot(&a), &Array2::eye(l)) < 1e-13);
                // Pass by pass: Fᵀ(FΩ), then q products.
                let mut it = PowerIteration::new(q);
                let mut p = ProductAccumulator::new(omega.view());
                p.update(f.view()).unwrap();
                it.advance(p.finish().view()).unwrap();
                while !it.is_done() {
                    let mut p = ProductAccumulator::new(it.current().unwrap());
                    p.update(f.view()).unwrap();
                    let y = p.finish();
                    it.advance(y.view()).unwrap();
                }
                let b = it.finish().unwrap();
                assert!(rel_diff(&b, &a) < 1e-10, "{kind} q = {q}: {}", rel_diff(&b, &a));
            }
        }
        assert!(matches!(
            gram_range_finder(gram.slice(s![.., ..5]), SketchKind::Gaussian, 2, 0, 0),
            Err(SketchError::Shape { .. })
        ));
        assert_eq!(
            gram_range_finder(gram.view(), SketchKind::Gaussian, d + 1, 0, 0).unwrap_err(),
            SketchError::TooManyComponents { n_components: d + 1, n_features: d }
        );
    }

    #[test]
    fn state_machine_refuses_misuse() {
        let y = gaussian_rows(5, 2, 1);
        let mut it = PowerIteration::new(1);
        assert!(it.current().is_none());
        it.advance(y.view()).unwrap();
        assert_eq!(it.clone().finish(), Err(SketchError::PowerIterationUnfinished { done: 1, total: 2 }));
        let bad = gaussian_rows(5, 3, 1);
        assert!(matches!(it.advance(bad.view()), Err(SketchError::Shape { .. })));
        it.advance(y.view()).unwrap();
        assert_eq!(it.advance(y.view()).unwrap_err(), SketchError::PowerIterationFinished { passes: 2 });
        let wide = gaussian_rows(2, 5, 1);
        assert_eq!(
            PowerIteration::new(0).advance(wide.view()).unwrap_err(),
            SketchError::TooManyComponents { n_components: 5, n_features: 2 }
        );
        let gram = Array2::<f64>::eye(4);
        assert!(matches!(range_finder(gram.view(), y.view(), 1), Err(SketchError::Shape { .. })));
    }
}
