//! The common interface of the range sketches, and a tagged union of them.

use crate::count::CountSketch;
use crate::error::{Result, SketchError};
use crate::gaussian::GaussianSketch;
pub use crate::kind::SketchKind;
pub use crate::range_sketch::RangeSketch;
use crate::srht::SrhtSketch;
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// Any range sketch, chosen at run time; serialises with a `kind` tag.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Sketch {
    /// A Gaussian sketch.
    Gaussian(GaussianSketch),
    /// A block SRHT sketch.
    Srht(SrhtSketch),
    /// A CountSketch.
    CountSketch(CountSketch),
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Sketch::Gaussian($s) => $e,
            Sketch::Srht($s) => $e,
            Sketch::CountSketch($s) => $e,
        }
    };
}

impl Sketch {
    /// An empty sketch of the given kind.
    ///
    /// # Errors
    /// [`SketchError::InvalidParameter`] if `n_components == 0`.
    pub fn new(kind: SketchKind, n_features: usize, n_components: usize, seed: u64) -> Result<Self> {
        Ok(match kind {
            SketchKind::Gaussian => Sketch::Gaussian(GaussianSketch::new(n_features, n_components, seed)?),
            SketchKind::Srht => Sketch::Srht(SrhtSketch::new(n_features, n_components, seed)?),
            SketchKind::CountSketch => Sketch::CountSketch(CountSketch::new(n_features, n_components, seed)?),
        })
    }

    /// The kind of this sketch.
    pub fn kind(&self) -> SketchKind {
        match self {
            Sketch::Gaussian(_) => SketchKind::Gaussian,
            Sketch::Srht(_) => SketchKind::Srht,
            Sketch::CountSketch(_) => SketchKind::CountSketch,
        }
    }
}

impl RangeSketch for Sketch {
    fn n_features(&self) -> usize {
        each!(self, s => s.n_features())
    }

    fn n_components(&self) -> usize {
        each!(self, s => s.n_components())
    }

    fn seed(&self) -> u64 {
        each!(self, s => s.seed())
    }

    fn update(&mut self, rows: ArrayView2<'_, f64>, first_row_id: u64) -> Result<()> {
        each!(self, s => s.update(rows, first_row_id))
    }

    fn update_ids(&mut self, rows: ArrayView2<'_, f64>, ids: &[u64]) -> Result<()> {
        each!(self, s => s.update_ids(rows, ids))
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        match (self, other) {
            (Sketch::Gaussian(a), Sketch::Gaussian(b)) => a.merge(b),
            (Sketch::Srht(a), Sketch::Srht(b)) => a.merge(b),
            (Sketch::CountSketch(a), Sketch::CountSketch(b)) => a.merge(b),
            (a, b) => Err(SketchError::KindMismatch { left: a.kind(), right: b.kind() }),
        }
    }

    fn flush(&mut self) {
        each!(self, s => s.flush())
    }

    fn finish(self) -> Array2<f64> {
        each!(self, s => s.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{feed_chunks, gaussian_rows, rel_diff};
    use ndarray::{Axis, s};

    const KINDS: [SketchKind; 3] = [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch];

    /// Rows 0..n with ids starting at an unaligned 777, crossing several
    /// Gaussian (512) and SRHT (1024) blocks.
    const FIRST: u64 = 777;

    fn one_pass(kind: SketchKind, f: &ndarray::Array2<f64>, chunk: usize) -> ndarray::Array2<f64> {
        let mut sk = Sketch::new(kind, f.ncols(), 7, 11).unwrap();
        feed_chunks(f, FIRST, chunk, |rows, id| sk.update(rows, id).unwrap());
        sk.finish()
    }

    #[test]
    fn chunking_does_not_change_a_single_bit() {
        let f = gaussian_rows(3000, 5, 1);
        for kind in KINDS {
            let want = one_pass(kind, &f, 3000);
            for chunk in [1, 7, 511, 1000, 1024, 4096] {
                assert_eq!(one_pass(kind, &f, chunk), want, "{kind} chunk {chunk}");
            }
        }
    }

    #[test]
    fn explicit_ids_equal_contiguous_ids_and_skip_rows_exactly() {
        let f = gaussian_rows(2000, 4, 2);
        for kind in KINDS {
            let mut a = Sketch::new(kind, 4, 6, 3).unwrap();
            a.update(f.view(), FIRST).unwrap();
            let mut b = Sketch::new(kind, 4, 6, 3).unwrap();
            let ids: Vec<u64> = (0..2000).map(|i| FIRST + i).collect();
            for c in (0..2000).step_by(300) {
                let e = (c + 300).min(2000);
                b.update_ids(f.slice(s![c..e, ..]), &ids[c..e]).unwrap();
            }
            assert_eq!(a.finish(), b.finish(), "{kind}");

            // A subset of rows (a "training split") fed with their ids equals
            // the full pass with the other rows zeroed, by linearity.
            let keep: Vec<usize> = (0..2000).filter(|i| i % 3 != 1).collect();
            let sub_ids: Vec<u64> = keep.iter().map(|&i| FIRST + i as u64).collect();
            let sub = f.select(Axis(0), &keep);
            let mut c = Sketch::new(kind, 4, 6, 3).unwrap();
            c.update_ids(sub.view(), &sub_ids).unwrap();
            let mut zeroed = f.clone();
            for i in (0..2000).filter(|i| i % 3 == 1) {
                zeroed.row_mut(i).fill(0.0);
            }
            let mut z = Sketch::new(kind, 4, 6, 3).unwrap();
            z.update(zeroed.view(), FIRST).unwrap();
            let (got, want) = (c.finish(), z.finish());
            assert!(rel_diff(&got, &want) < 1e-13, "{kind}: {}", rel_diff(&got, &want));
        }
    }

    #[test]
    fn merging_split_rows_equals_one_pass() {
        let f = gaussian_rows(5000, 6, 4);
        // Cut points inside Gaussian and SRHT blocks.
        let cuts = [0usize, 333, 1300, 1301, 2900, 5000];
        for kind in KINDS {
            let want = one_pass(kind, &f, 5000);
            let parts: Vec<Sketch> = cuts
                .windows(2)
                .map(|w| {
                    let mut sk = Sketch::new(kind, 6, 7, 11).unwrap();
                    sk.update(f.slice(s![w[0]..w[1], ..]), FIRST + w[0] as u64).unwrap();
                    sk
                })
                .collect();
            // Forward, reverse and via a serde round trip of partial state.
            let mut fwd = parts[0].clone();
            parts[1..].iter().for_each(|p| fwd.merge(p).unwrap());
            let mut rev = parts[4].clone();
            parts[..4].iter().rev().for_each(|p| rev.merge(p).unwrap());
            let mut via_json: Sketch = serde_json::from_str(&serde_json::to_string(&parts[0]).unwrap()).unwrap();
            for p in &parts[1..] {
                let p: Sketch = serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap();
                via_json.merge(&p).unwrap();
            }
            // Each part's partial blocks transformed on their own (linearity).
            let mut flushed = parts[0].clone();
            flushed.flush();
            for p in &parts[1..] {
                let mut p = p.clone();
                p.flush();
                flushed.merge(&p).unwrap();
            }
            let runs = [("forward", fwd), ("reverse", rev), ("json", via_json), ("flushed", flushed)];
            for (name, got) in runs.map(|(name, s)| (name, s.finish())) {
                let e = rel_diff(&got, &want);
                assert!(e < 1e-12, "{kind} {name}: {e}");
            }
        }
    }

    #[test]
    fn refuses_bad_input_and_keeps_state() {
        let f = gaussian_rows(10, 3, 5);
        for kind in KINDS {
            let mut sk = Sketch::new(kind, 3, 2, 1).unwrap();
            sk.update(f.slice(s![..5, ..]), 100).unwrap();
            let before = serde_json::to_string(&sk).unwrap();
            assert_eq!(sk.update(f.t(), 0), Err(SketchError::ColumnMismatch { expected: 3, found: 10 }));
            assert_eq!(sk.update_ids(f.view(), &[1, 2]), Err(SketchError::IdCountMismatch { rows: 10, ids: 2 }));
            let ids = [0, 1, 2, 3, 4, 6, 5, 7, 8, 9];
            assert_eq!(
                sk.update_ids(f.view(), &ids),
                Err(SketchError::IdsNotIncreasing { position: 6, previous: 6, id: 5 })
            );
            assert_eq!(
                sk.update(f.view(), u64::MAX - 3),
                Err(SketchError::RowIdOverflow { first: u64::MAX - 3, rows: 10 })
            );
            if kind != SketchKind::CountSketch {
                // CountSketch has no pending block to check against.
                assert_eq!(sk.update(f.slice(s![..2, ..]), 103), Err(SketchError::DuplicateRow { id: 103 }));
            }
            assert_eq!(serde_json::to_string(&sk).unwrap(), before, "{kind}: state changed by a refused update");
            let other = Sketch::new(kind, 3, 2, 2).unwrap();
            assert_eq!(sk.merge(&other), Err(SketchError::MergeMismatch { what: "seed", left: 1, right: 2 }));
        }
        let mut g = Sketch::new(SketchKind::Gaussian, 3, 2, 1).unwrap();
        let c = Sketch::new(SketchKind::CountSketch, 3, 2, 1).unwrap();
        let e = g.merge(&c).unwrap_err();
        assert_eq!(e.to_string(), "cannot merge a gaussian sketch with a count-sketch sketch");
        assert!(Sketch::new(SketchKind::Srht, 3, 0, 1).is_err());
    }

    #[test]
    fn overlapping_pending_blocks_are_refused_on_merge() {
        let f = gaussian_rows(20, 3, 6);
        for kind in [SketchKind::Gaussian, SketchKind::Srht] {
            let mut a = Sketch::new(kind, 3, 2, 1).unwrap();
            a.update(f.view(), 0).unwrap();
            let mut b = Sketch::new(kind, 3, 2, 1).unwrap();
            b.update(f.slice(s![..3, ..]), 17).unwrap();
            assert_eq!(a.merge(&b), Err(SketchError::DuplicateRow { id: 17 }));
        }
    }
}
