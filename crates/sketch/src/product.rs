//! The pass of a power iteration: `Fᵀ(F Q)` accumulated over row blocks.

use crate::error::{Result, SketchError};
use crate::gaussian::BLOCK_ROWS;
use crate::ids::check_columns;
use kapprox_core::Par;
use kapprox_core::gram::{PackedRows, gemm_tn_add};
use ndarray::{Array2, ArrayView2, ShapeBuilder, s};
use serde::{Deserialize, Serialize};

/// Mergeable accumulator of `Fᵀ(F Q) (d, l)` for a fixed `Q (d, l)`: one
/// pass of a power iteration that does not keep `FᵀF (d, d)` in memory.
///
/// Rows are buffered into blocks of [`BLOCK_ROWS`] consecutive rows of the
/// stream (as in [`kapprox_core::Moments`]; no randomness is involved, so
/// no row ids are needed), and each block is added with two products,
/// `T = F_b Q` then `acc += F_bᵀ T` (both by
/// [`kapprox_core::gram::gemm_tn_add`]). The result is bitwise the same for
/// any chunking of the same ordered rows and any thread count; merging
/// changes only the summation order.
///
/// Memory: `2·d·l + BLOCK_ROWS·(d + l)` doubles.
///
/// Cost: `4·n·d·l` flops.
#[derive(Clone, Debug)]
pub struct ProductAccumulator {
    q: Array2<f64>,
    /// `Q` packed for the kernel (its `d` rows are the product's rows).
    q_packed: PackedRows,
    /// `(d, l)`, column-major.
    acc: Array2<f64>,
    /// Pending rows, `(BLOCK_ROWS, d)`; empty until the first update.
    rows: Array2<f64>,
    /// `F_b Q`, `(BLOCK_ROWS, l)`; scratch.
    t: Array2<f64>,
    pending: usize,
    par: Par,
}

impl ProductAccumulator {
    /// An empty accumulator for `q (d, l)` (typically the current iterate of
    /// a [`PowerIteration`](crate::PowerIteration)).
    pub fn new(q: ArrayView2<'_, f64>) -> Self {
        ProductAccumulator {
            q: q.to_owned(),
            q_packed: PackedRows::from_rows(q),
            acc: Array2::zeros(q.raw_dim().f()),
            rows: Array2::zeros((0, 0)),
            t: Array2::zeros((0, 0)),
            pending: 0,
            par: Par::rayon(0),
        }
    }

    /// Sets the parallelism of the block products. Default: every thread of
    /// the current rayon pool; the result is bitwise the same either way.
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// Columns of the rows, `d`.
    pub fn n_features(&self) -> usize {
        self.q.nrows()
    }

    /// Columns of `Q`, `l`.
    pub fn n_components(&self) -> usize {
        self.q.ncols()
    }

    /// The fixed `Q (d, l)`.
    pub fn q(&self) -> ArrayView2<'_, f64> {
        self.q.view()
    }

    /// Adds rows `(n_rows, d)`.
    ///
    /// # Errors
    /// [`SketchError::ColumnMismatch`] if `rows.ncols() != d`.
    pub fn update(&mut self, rows: ArrayView2<'_, f64>) -> Result<()> {
        check_columns(rows.ncols(), self.n_features())?;
        if self.rows.nrows() != BLOCK_ROWS {
            self.rows = Array2::zeros((BLOCK_ROWS, self.n_features()));
            self.t = Array2::zeros((BLOCK_ROWS, self.n_components()).f());
        }
        let mut r = 0;
        while r < rows.nrows() {
            let take = (BLOCK_ROWS - self.pending).min(rows.nrows() - r);
            self.rows.slice_mut(s![self.pending..self.pending + take, ..]).assign(&rows.slice(s![r..r + take, ..]));
            self.pending += take;
            r += take;
            if self.pending == BLOCK_ROWS {
                self.flush();
            }
        }
        Ok(())
    }

    /// Adds the buffered rows. Needed only before reading intermediate
    /// results; [`finish`](ProductAccumulator::finish) flushes.
    pub fn flush(&mut self) {
        let c = self.pending;
        if c == 0 {
            return;
        }
        let f = self.rows.slice(s![..c, ..]);
        // T = F_b Q = (F_bᵀ)ᵀ Q: the d rows of F_bᵀ and Q are the sum.
        let mut t = self.t.slice_mut(s![..c, ..]);
        t.fill(0.0);
        gemm_tn_add(t, &PackedRows::from_rows(f.t()), &self.q_packed, 1.0, self.par);
        let t = PackedRows::from_rows(self.t.slice(s![..c, ..]));
        gemm_tn_add(self.acc.view_mut(), &PackedRows::from_rows(f), &t, 1.0, self.par);
        self.pending = 0;
    }

    /// Adds `other`'s rows to `self` (other's buffered rows are added after
    /// self's).
    ///
    /// # Errors
    /// [`SketchError::ProjectionMismatch`] if the two were built for
    /// different `Q` (equal to 1e-12 relative counts as the same).
    pub fn merge(&mut self, other: &ProductAccumulator) -> Result<()> {
        if !same_projection(self.q.view(), other.q.view()) {
            return Err(SketchError::ProjectionMismatch);
        }
        self.flush();
        self.acc += &other.acc;
        if other.pending > 0 {
            self.update(other.rows.slice(s![..other.pending, ..]))?;
            self.flush();
        }
        Ok(())
    }

    /// `Fᵀ(F Q)`, shape `(d, l)`.
    pub fn finish(mut self) -> Array2<f64> {
        self.flush();
        self.acc
    }
}

/// Whether two `Q` are the same matrix, allowing the last-digit changes of
/// a text round trip (serde_json without `float_roundtrip` may be one ulp
/// off); different iterates differ in the leading digits.
fn same_projection(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> bool {
    if a.dim() != b.dim() {
        return false;
    }
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(b.iter()).all(|(x, y)| (x - y).abs() <= 1e-12 * scale)
}

#[derive(Serialize)]
struct ProductStateRef<'a> {
    q: ArrayView2<'a, f64>,
    acc: ArrayView2<'a, f64>,
    pending_rows: ArrayView2<'a, f64>,
}

#[derive(Deserialize)]
struct ProductState {
    q: Array2<f64>,
    acc: Array2<f64>,
    pending_rows: Array2<f64>,
}

impl Serialize for ProductAccumulator {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let pending = if self.pending == 0 {
            ArrayView2::from_shape((0, self.n_features()), &[]).expect("empty view")
        } else {
            self.rows.slice(s![..self.pending, ..])
        };
        ProductStateRef { q: self.q.view(), acc: self.acc.view(), pending_rows: pending }.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ProductAccumulator {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let st = ProductState::deserialize(deserializer)?;
        let mut p = ProductAccumulator::new(st.q.view());
        if st.acc.dim() != st.q.dim() {
            let e = SketchError::Shape { name: "stored product", found: st.acc.dim(), expected: st.q.dim() };
            return Err(serde::de::Error::custom(e));
        }
        if st.pending_rows.nrows() >= BLOCK_ROWS {
            return Err(serde::de::Error::custom(SketchError::InvalidState { reason: "too many pending rows" }));
        }
        p.acc.assign(&st.acc);
        p.update(st.pending_rows.view()).map_err(serde::de::Error::custom)?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{gaussian_rows, rel_diff};

    #[test]
    fn equals_the_naive_product_for_any_chunking_and_merge() {
        let f = gaussian_rows(2100, 9, 1);
        let q = gaussian_rows(9, 4, 2);
        let want = f.t().dot(&f.dot(&q));
        let run = |chunk: usize| {
            let mut p = ProductAccumulator::new(q.view());
            crate::testutil::feed_chunks(&f, 0, chunk, |rows, _| p.update(rows).unwrap());
            p.finish()
        };
        let one = run(2100);
        assert!(rel_diff(&one, &want) < 1e-13, "{}", rel_diff(&one, &want));
        for chunk in [1, 100, 512, 1000] {
            assert_eq!(run(chunk), one, "chunk {chunk}");
        }
        let mut a = ProductAccumulator::new(q.view());
        a.update(f.slice(s![..700, ..])).unwrap();
        let mut b = ProductAccumulator::new(q.view());
        b.update(f.slice(s![700.., ..])).unwrap();
        let b: ProductAccumulator = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        a.merge(&b).unwrap();
        assert!(rel_diff(&a.finish(), &one) < 1e-13);
        let mut c = ProductAccumulator::new(q.view());
        let other = ProductAccumulator::new(gaussian_rows(9, 4, 3).view());
        assert_eq!(c.merge(&other), Err(SketchError::ProjectionMismatch));
        assert_eq!(c.update(f.t()), Err(SketchError::ColumnMismatch { expected: 9, found: 2100 }));
    }
}
