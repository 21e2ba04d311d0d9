//! Test data from addressed streams (a domain no sketch uses for data).

use kapprox_core::{Domain, rng};
use ndarray::Array2;
use rand::Rng;
use rand_distr::StandardNormal;

/// A standard normal `(n, d)` matrix; row `i` from `stream(seed, FEATURE_MAP_AUX, i)`.
pub(crate) fn gaussian_rows(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut a = Array2::zeros((n, d));
    for (i, mut row) in a.rows_mut().into_iter().enumerate() {
        let mut g = rng::stream(seed, Domain::FEATURE_MAP_AUX, i as u64);
        row.iter_mut().for_each(|v| *v = g.sample(StandardNormal));
    }
    a
}

/// Max-abs difference relative to the max-abs of `want`.
pub(crate) fn rel_diff(got: &Array2<f64>, want: &Array2<f64>) -> f64 {
    assert_eq!(got.dim(), want.dim());
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    got.iter().zip(want.iter()).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// Feeds `rows` (ids `first..`) to `update` in chunks of `chunk` rows.
pub(crate) fn feed_chunks(
    rows: &Array2<f64>,
    first: u64,
    chunk: usize,
    mut update: impl FnMut(ndarray::ArrayView2<'_, f64>, u64),
) {
    let n = rows.nrows();
    let mut r = 0;
    while r < n {
        let e = (r + chunk).min(n);
        update(rows.slice(ndarray::s![r..e, ..]), first + r as u64);
        r = e;
    }
}
