//! Range finders: an orthonormal basis of the dominant column space of
//! `(FᵀF)^q FᵀΘ`, in memory or pass by pass.

use crate::error::{Result, SketchError};
use kapprox_core::dense;
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// `Q (d, l)` with orthonormal columns spanning
/// `Y = (FᵀF)^q FᵀΘ`, from `FᵀF` held in memory.
///
/// `gram` is `FᵀF (d, d)` (e.g. [`kapprox_core::Moments::zz`]), `sketch`
/// is `FᵀΘ (d, l)` from a [`RangeSketch`](crate::RangeSketch), and
/// `power_iterations` is `q`. The basis is re-orthonormalised (thin QR)
/// after every multiplication, which avoids the loss of the small singular
/// directions to rounding that `(FᵀF)^q` would cause (Halko et al. 2011,
/// Alg. 4.4). This runs exactly the steps of a [`PowerIteration`] fed by
/// multi-pass products, so both give the same `Q` up to rounding.
///
/// Cost: `q·2·d²·l + (q + 1)·O(d·l²)` flops. Memory: `3·d·l` doubles besides
/// the inputs.
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
    let mut it = PowerIteration::new(power_iterations);
    it.advance(sketch)?;
    while !it.is_done() {
        let q = it.current().expect("a started iteration has a current basis");
        // A fixed split of the product: deterministic, and on every core.
        let y = dense::matmul(gram, q, kapprox_core::dense_par());
        it.advance(y.view())?;
    }
    it.finish()
}

/// The pass-by-pass range finder: a small state machine over `1 + q` data
/// passes when `FᵀF (d, d)` does not fit in memory.
///
/// 1. Pass 1 accumulates the sketch `FᵀΘ` (a [`RangeSketch`](crate::RangeSketch));
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

    /// Feeds the result of the next pass: `FᵀΘ (d, l)` for the first pass,
    /// then `Fᵀ(F Q) (d, l)` for the current `Q`. Returns the new basis.
    ///
    /// Cost: one thin QR, `O(d·l²)` flops.
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
        self.q = Some(dense::qr_thin_q(pass_result));
        self.passes_done += 1;
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
