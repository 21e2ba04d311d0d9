//! One-vs-rest statistics without knowing the classes before the pass.
//!
//! One-vs-rest ridge regresses on ±1 targets `y_c = 2·[label = c] − 1`.
//! Every target statistic follows from per-class feature sums and counts:
//! `Zᵀy_c = 2·S_c − Σz` with `S_c = Σ_{label = c} z`, `Σy_c = 2n_c − n`,
//! `y_cᵀy_c = n` and `y_cᵀy_d = n − 2n_c − 2n_d` for `c ≠ d`. So the pass
//! accumulates a target-free [`Moments`] plus `S_c` and `n_c` for the
//! classes as they appear, and the full statistics are assembled at the end.

use kapprox_core::Moments;
use kapprox_core::sparse::SparseRowsView;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, ShapeBuilder};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Ordered key for a class label (labels are finite f64 values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelKey(i64, u64);

impl LabelKey {
    /// The key of a label value (total order of f64, -0.0 == 0.0).
    pub fn of(v: f64) -> Self {
        let v = if v == 0.0 { 0.0 } else { v };
        LabelKey(v.floor() as i64, v.to_bits())
    }
}

/// Feature Gram plus per-class sums; see the module docs.
#[derive(Clone, Debug)]
pub struct ClassMoments {
    gram: Moments,
    sums: BTreeMap<LabelKey, (f64, Array1<f64>, f64)>,
}

impl ClassMoments {
    /// An empty accumulator for `n_features` feature columns.
    pub fn new(n_features: usize) -> Self {
        ClassMoments { gram: Moments::new(n_features, 0), sums: BTreeMap::new() }
    }

    /// Adds dense rows `z (n, l)` with their labels.
    pub fn update(&mut self, z: ArrayView2<'_, f64>, labels: ArrayView1<'_, f64>) {
        let all: Vec<usize> = (0..z.nrows()).collect();
        self.update_selected(z, labels, &all);
    }

    /// Adds the rows `rows` (ascending) of `z` with their labels.
    pub fn update_selected(&mut self, z: ArrayView2<'_, f64>, labels: ArrayView1<'_, f64>, rows: &[usize]) {
        let empty = Array2::<f64>::zeros((z.nrows(), 0));
        self.gram.update_selected(z, empty.view(), rows);
        self.add_class_sums(z, labels, rows);
    }

    /// Adds the rows `rows` of `z` to their class's sum and count.
    fn add_class_sums<T: Copy + Into<f64>>(
        &mut self,
        z: ArrayView2<'_, T>,
        labels: ArrayView1<'_, f64>,
        rows: &[usize],
    ) {
        let l = z.ncols();
        for &r in rows {
            let y = labels[r];
            let e = self.sums.entry(LabelKey::of(y)).or_insert_with(|| (y, Array1::zeros(l), 0.0));
            e.1.zip_mut_with(&z.row(r), |s, &v| *s += v.into());
            e.2 += 1.0;
        }
    }

    /// [`ClassMoments::update_selected`] with `f32` features: the Gram's
    /// block products in single precision (see
    /// [`kapprox_core::Moments::update_f32`]), the class sums in `f64`.
    pub fn update_f32_selected(&mut self, z: ArrayView2<'_, f32>, labels: ArrayView1<'_, f64>, rows: &[usize]) {
        let empty = Array2::<f64>::zeros((z.nrows(), 0));
        self.gram.update_f32_selected(z, empty.view(), rows);
        self.add_class_sums(z, labels, rows);
    }

    /// Adds sparse rows with their labels.
    pub fn update_sparse(&mut self, z: SparseRowsView<'_>, labels: ArrayView1<'_, f64>) {
        let all: Vec<usize> = (0..z.n_rows()).collect();
        self.update_sparse_selected(z, labels, &all);
    }

    /// Adds the sparse rows `rows` (ascending) with their labels.
    pub fn update_sparse_selected(&mut self, z: SparseRowsView<'_>, labels: ArrayView1<'_, f64>, rows: &[usize]) {
        let empty = Array2::<f64>::zeros((z.n_rows(), 0));
        self.gram.update_sparse_selected(z, empty.view(), rows);
        let l = z.n_cols;
        for &r in rows {
            let y = labels[r];
            let e = self.sums.entry(LabelKey::of(y)).or_insert_with(|| (y, Array1::zeros(l), 0.0));
            for (&j, &v) in z.indices.row(r).iter().zip(z.values.row(r)) {
                e.1[j as usize] += v;
            }
            e.2 += 1.0;
        }
    }

    /// Adds another accumulator's statistics.
    pub fn merge(&mut self, other: &ClassMoments) {
        self.gram.merge(&other.gram);
        for (k, (y, s, n)) in &other.sums {
            let e = self.sums.entry(*k).or_insert_with(|| (*y, Array1::zeros(s.len()), 0.0));
            e.1 += s;
            e.2 += n;
        }
    }

    /// Flushes buffered rows.
    pub fn flush(&mut self) {
        self.gram.flush();
    }

    /// Rows seen (flushes first).
    pub fn n_samples(&mut self) -> f64 {
        self.gram.flush();
        self.gram.n_samples()
    }

    /// The target-free feature statistics `[Z 1]ᵀ[Z 1]` (flushed first),
    /// e.g. to store a partial state.
    pub fn feature_moments(&mut self) -> &Moments {
        self.gram.flush();
        &self.gram
    }

    /// Per class seen, by ascending label: the label, `S_c = Σ_{label = c} z`
    /// and the count `n_c`.
    pub fn class_sums(&self) -> impl Iterator<Item = (f64, &Array1<f64>, f64)> + '_ {
        self.sums.values().map(|(y, s, n)| (*y, s, *n))
    }

    /// Rebuilds an accumulator from [`ClassMoments::feature_moments`] (with
    /// no target columns) and [`ClassMoments::class_sums`].
    ///
    /// # Panics
    /// `gram` must have no targets, and every sum `n_features` entries.
    #[track_caller]
    pub fn from_parts(gram: Moments, sums: impl IntoIterator<Item = (f64, Array1<f64>, f64)>) -> Self {
        assert_eq!(gram.n_targets(), 0, "class moments keep a target-free Gram");
        let l = gram.n_features();
        let mut out = ClassMoments { gram, sums: BTreeMap::new() };
        for (y, s, n) in sums {
            assert_eq!(s.len(), l, "class sums must have {l} entries");
            out.sums.insert(LabelKey::of(y), (y, s, n));
        }
        out
    }

    /// The classes seen, ascending.
    pub fn classes(&self) -> Vec<f64> {
        self.sums.values().map(|(y, _, _)| *y).collect()
    }

    /// Full one-vs-rest statistics for the class list `classes` (ascending;
    /// may include classes this accumulator never saw, e.g. a validation
    /// part missing a rare class).
    ///
    /// Built in the accumulator's own storage: the `(l+1)²` Gram grows to
    /// `(l+1+k)²` in place (a reallocation, which on Linux moves no data
    /// for a buffer of [`kapprox_core::buffer`]: `mremap`), its columns
    /// move to the wider stride from the last to the first (each column's
    /// destination lies past the sources of the columns before it), then
    /// the target rows and columns are written on every core. The stale
    /// values left above the diagonal are zeroed by
    /// [`Moments::from_augmented_gram_owned`].
    ///
    /// Why not a fresh `(l+1+k)²` buffer: its first touch, 538 MB of new
    /// pages per split part at `l = 8192`. With scratch timers in a
    /// Fashion-MNIST fit (10 classes, 2-core Xeon VM) building both parts
    /// took 0.73–0.76 s that way and 0.15 s in place; the next fresh
    /// buffer (the reduction's packed matrix) then pays about 0.2 s more
    /// for its own first touch.
    pub fn into_moments(mut self, classes: &[f64]) -> Moments {
        self.gram.flush();
        let l = self.gram.n_features();
        let k = classes.len();
        let (n, zsum) = {
            let g0 = self.gram.augmented_gram();
            (g0[[l, l]], g0.row(l).slice(ndarray::s![0..l]).to_owned())
        };
        let per: Vec<(Array1<f64>, f64)> = classes
            .iter()
            .map(|&c| match self.sums.get(&LabelKey::of(c)) {
                Some((_, s, nc)) => (s.clone(), *nc),
                None => (Array1::zeros(l), 0.0),
            })
            .collect();
        let (old, w) = (l + 1, l + 1 + k);
        let g0 = self.gram.into_augmented_gram();
        assert!(g0.t().is_standard_layout(), "Moments keeps its Gram column-major");
        let (mut v, offset) = g0.into_raw_vec_and_offset();
        assert_eq!((offset.unwrap_or(0), v.len()), (0, old * old), "a whole (l+1)² Gram");
        v.reserve_exact(w * w - v.len());
        v.resize(w * w, 0.0);
        // Rows j..=l of column j (the lower triangle) to stride w. Column
        // j's destination starts at j·w + j ≥ j·old, past column j−1's
        // source, which ends at j·old.
        for j in (0..old).rev() {
            v.copy_within(j * old + j..(j + 1) * old, j * w + j);
        }
        let mut g = Array2::from_shape_vec((w, w).f(), v).expect("w² values");
        g.axis_iter_mut(Axis(1)).into_par_iter().enumerate().for_each(|(j, mut col)| {
            for (t, (s, nc)) in per.iter().enumerate() {
                let r = l + 1 + t;
                col[r] = match j {
                    // Zᵀy_t = 2·S_t − Σz, then Σy_t.
                    j if j < l => 2.0 * s[j] - zsum[j],
                    j if j == l => 2.0 * nc - n,
                    // y_tᵀy_u for u ≤ t.
                    j if j <= r => {
                        let (u, nd) = (j - l - 1, per[j - l - 1].1);
                        if u == t { n } else { n - 2.0 * nc - 2.0 * nd }
                    }
                    _ => continue,
                };
            }
        });
        Moments::from_augmented_gram_owned(l, k, g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `got` against the statistics of `z` with explicit ±1 targets, one
    /// per class of `classes`.
    fn assert_matches_explicit_targets(got: &Moments, z: &Array2<f64>, labels: &Array1<f64>, classes: &[f64]) {
        let y = Array2::from_shape_fn(
            (z.nrows(), classes.len()),
            |(i, c)| {
                if labels[i] == classes[c] { 1.0 } else { -1.0 }
            },
        );
        let mut want = Moments::new(z.ncols(), classes.len());
        want.update(z.view(), y.view());
        want.flush();
        let d = &got.augmented_gram() - &want.augmented_gram();
        assert!(d.iter().all(|v| v.abs() < 1e-9), "{d}");
    }

    #[test]
    fn equals_moments_of_explicit_pm1_targets() {
        let z = Array2::from_shape_fn((700, 4), |(i, j)| ((i * 7 + j * 3) % 13) as f64 * 0.1 - 0.4);
        let labels = Array1::from_shape_fn(700, |i| [3.0, -1.0, 7.5][(i * 5) % 3]);
        let mut cm = ClassMoments::new(4);
        cm.update(z.view(), labels.view());
        let classes = vec![-1.0, 3.0, 7.5, 9.0];
        assert_eq!(cm.classes(), vec![-1.0, 3.0, 7.5]);
        assert_matches_explicit_targets(&cm.into_moments(&classes), &z, &labels, &classes);
    }

    /// More classes than feature columns: the Gram grows to more than
    /// twice its width, and every column moves past several others.
    #[test]
    fn many_classes_over_few_features() {
        let z = Array2::from_shape_fn((90, 1), |(i, _)| (i % 11) as f64 * 0.2 - 0.7);
        let labels = Array1::from_shape_fn(90, |i| (i % 6) as f64);
        let mut cm = ClassMoments::new(1);
        cm.update(z.view(), labels.view());
        let classes: Vec<f64> = (0..7).map(f64::from).collect();
        assert_matches_explicit_targets(&cm.into_moments(&classes), &z, &labels, &classes);
    }

    #[test]
    fn parts_round_trip() {
        let z = Array2::from_shape_fn((300, 3), |(i, j)| ((i * 5 + j) % 7) as f64 * 0.3);
        let labels = Array1::from_shape_fn(300, |i| [1.0, 0.0, -2.5][i % 3]);
        let mut cm = ClassMoments::new(3);
        cm.update(z.view(), labels.view());
        let g = cm.feature_moments().clone();
        let sums: Vec<(f64, Array1<f64>, f64)> = cm.class_sums().map(|(y, s, n)| (y, s.clone(), n)).collect();
        let back = ClassMoments::from_parts(g, sums);
        let classes = cm.classes();
        assert_eq!(back.classes(), classes);
        assert_eq!(back.into_moments(&classes).augmented_gram(), cm.into_moments(&classes).augmented_gram());
    }
}
