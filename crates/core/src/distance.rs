//! Distances from many rows to many points: the inner loops of the kernel
//! blocks whose kernels are not functions of a dot product (the
//! Laplacian's ℓ1 distance, the Cauchy kernel's product).
//!
//! The points are stored in tiles of consecutive points, transposed
//! ([`TiledPoints`]), so that a tile's coordinate is one unit-stride load
//! and the loop vectorises; each function is compiled for AVX-512, AVX2+FMA and the
//! baseline and picked at run time. The sums run over the coordinates in
//! order, as the scalar definitions do, so the bits do not depend on the
//! instruction set's tiling.

use ndarray::ArrayView2;

/// Points per register tile: one AVX-512 vector, two AVX2 ones.
const TILE_POINTS: usize = 8;
/// Rows per register tile. Per coordinate a tile loads its points once and
/// each row's coordinate once, for `TILE_ROWS · TILE_POINTS` updates: the
/// partial sums stay in registers instead of making a round trip through
/// memory per coordinate, as they did one row at a time.
const TILE_ROWS: usize = 4;

/// `m` points of `d` coordinates laid out for [`l1_distances_into`] and
/// [`cauchy_products_into`]: in tiles of consecutive points, each tile's
/// coordinates `(d, tile width)` row-major and contiguous, so that a
/// tile's loop over the coordinates reads consecutive memory. (The plain
/// transpose `(d, m)` strides by `m` per coordinate; at `m = 1024` that
/// maps all of a tile's loads to one L1 set, and they miss.)
///
/// Memory: `m·d` doubles.
#[derive(Clone, Debug)]
pub struct TiledPoints {
    data: Vec<f64>,
    m: usize,
    d: usize,
}

impl TiledPoints {
    /// Lays out the points `(m, d)`, one per row.
    pub fn new(points: ArrayView2<'_, f64>) -> Self {
        let (m, d) = points.dim();
        let mut data = Vec::with_capacity(m * d);
        for q0 in (0..m).step_by(TILE_POINTS) {
            let tile = points.slice(ndarray::s![q0..(q0 + TILE_POINTS).min(m), ..]);
            for j in 0..d {
                data.extend(tile.column(j).iter());
            }
        }
        TiledPoints { data, m, d }
    }

    /// The number of points `m`.
    pub fn len(&self) -> usize {
        self.m
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.m == 0
    }

    /// Coordinates per point `d`.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// The tile whose first point is `q0` (a multiple of [`TILE_POINTS`]):
    /// its `(d, width)` coordinates and its width.
    fn tile(&self, q0: usize) -> (&[f64], usize) {
        let width = TILE_POINTS.min(self.m - q0);
        (&self.data[q0 * self.d..(q0 + width) * self.d], width)
    }
}

/// `out[r·m + q] = fold_j step(·, x[r·d + j], point_q[j])` from `init`,
/// `j` in order, for `n = out.len() / m` rows of `d` coordinates: register
/// tiles of [`TILE_ROWS`] × [`TILE_POINTS`], then the leftover rows and
/// points with tiles of one row or one point. Every entry is the same
/// sequence of `step`s whatever tile computes it, so the result does not
/// depend on the tiling.
///
/// # Panics
/// `x.len() = n·d` and `out.len() = n·m` must hold.
#[inline(always)]
fn fold_tiles(x: &[f64], points: &TiledPoints, out: &mut [f64], init: f64, step: impl Fn(f64, f64, f64) -> f64) {
    let (m, d) = (points.len(), points.dim());
    if m == 0 || out.is_empty() {
        assert!(out.is_empty(), "distances: {} outputs for no points", out.len());
        return;
    }
    let n = out.len() / m;
    assert!(
        out.len() == n * m && x.len() == n * d,
        "distances: {} row values and {} outputs do not make n × {d} and n × {m}",
        x.len(),
        out.len()
    );
    let full_rows = n - n % TILE_ROWS;
    for q0 in (0..m).step_by(TILE_POINTS) {
        let (tile, width) = points.tile(q0);
        if width == TILE_POINTS {
            let at = |j: usize| j * TILE_POINTS;
            for r0 in (0..full_rows).step_by(TILE_ROWS) {
                fold_tile::<TILE_ROWS, TILE_POINTS>(x, d, r0, tile, at, &mut out[r0 * m + q0..], m, init, &step);
            }
            for r0 in full_rows..n {
                fold_tile::<1, TILE_POINTS>(x, d, r0, tile, at, &mut out[r0 * m + q0..], m, init, &step);
            }
        } else {
            for q in 0..width {
                let at = |j: usize| j * width + q;
                for r0 in 0..n {
                    fold_tile::<1, 1>(x, d, r0, tile, at, &mut out[r0 * m + q0 + q..], m, init, &step);
                }
            }
        }
    }
}

/// One `R × Q` tile of [`fold_tiles`]: rows `r0..r0 + R` against the
/// points whose coordinate `j` starts at `tile[at(j)]`, written to
/// `out[r·m..r·m + Q]` for `r < R`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the tile's coordinates, spelled out for the inliner
fn fold_tile<const R: usize, const Q: usize>(
    x: &[f64],
    d: usize,
    r0: usize,
    tile: &[f64],
    at: impl Fn(usize) -> usize,
    out: &mut [f64],
    m: usize,
    init: f64,
    step: &impl Fn(f64, f64, f64) -> f64,
) {
    let rows: [&[f64]; R] = std::array::from_fn(|r| &x[(r0 + r) * d..(r0 + r + 1) * d]);
    let mut acc = [[init; Q]; R];
    for j in 0..d {
        let p: &[f64; Q] = tile[at(j)..at(j) + Q].try_into().expect("Q points");
        for (a, row) in acc.iter_mut().zip(&rows) {
            let xj = row[j];
            for (a, &p) in a.iter_mut().zip(p) {
                *a = step(*a, xj, p);
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        out[r * m..r * m + Q].copy_from_slice(a);
    }
}

multiversion! {
    /// ℓ1 distances from `n` rows to `m` points:
    /// `out[r·m + q] = Σ_j |x[r·d + j] − point_q[j]|`, with `x` the rows
    /// row-major and `n = out.len() / m`.
    ///
    /// Cost: `3·n·d·m` flops.
    ///
    /// # Panics
    /// `x.len() = n·d` and `out.len() = n·m` must hold.
    pub fn l1_distances_into(x: &[f64], points: &TiledPoints, out: &mut [f64]) {
        fold_tiles(x, points, out, 0.0, |a, xj, p| a + (xj - p).abs());
    }
}

multiversion! {
    /// The Cauchy product kernel from `n` rows to `m` points:
    /// `out[r·m + q] = 1 / Π_j (1 + ((x[r·d + j] − point_q[j]) · scale)²)`,
    /// laid out as in [`l1_distances_into`] (`scale = 1/σ`). A product that
    /// overflows gives 0, the kernel's limit.
    ///
    /// Cost: `5·n·d·m` flops in 4 operations (`1 + t²` is one fused
    /// multiply-add, rounded once: a last-bit difference from the unfused
    /// definition) and `n·m` divisions.
    ///
    /// # Panics
    /// As [`l1_distances_into`].
    pub fn cauchy_products_into(x: &[f64], points: &TiledPoints, scale: f64, out: &mut [f64]) {
        fold_tiles(x, points, out, 1.0, |a, xj, p| {
            let t = (xj - p) * scale;
            a * t.mul_add(t, 1.0)
        });
        out.iter_mut().for_each(|o| *o = 1.0 / *o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_the_scalar_definitions_bit_for_bit() {
        // Shapes with and without leftover rows and points of the tiles.
        for (n, d, m) in [(1, 5, 1), (4, 5, 8), (7, 5, 37), (9, 3, 16), (13, 1, 19), (2, 0, 3)] {
            let x: Vec<f64> = (0..n * d).map(|i| ((i * 5) % 13) as f64 * 0.3 - 1.7).collect();
            let p: Vec<Vec<f64>> =
                (0..m).map(|q| (0..d).map(|j| ((q * 7 + j * 3) % 11) as f64 * 0.2 - 1.0).collect()).collect();
            let pts = TiledPoints::new(ndarray::Array2::from_shape_fn((m, d), |(q, j)| p[q][j]).view());
            let mut l1 = vec![f64::NAN; n * m];
            l1_distances_into(&x, &pts, &mut l1);
            let mut c = vec![f64::NAN; n * m];
            cauchy_products_into(&x, &pts, 1.0 / 0.8, &mut c);
            for r in 0..n {
                let row = &x[r * d..(r + 1) * d];
                for q in 0..m {
                    // The coordinates in order: the same bits as the plain sum.
                    let want = row.iter().zip(&p[q]).fold(0.0, |s, (a, b)| s + (a - b).abs());
                    assert_eq!(l1[r * m + q].to_bits(), want.to_bits(), "l1 ({n}, {d}, {m}) at ({r}, {q})");
                    let prod = row.iter().zip(&p[q]).fold(1.0, |s, (a, b)| {
                        let t = (a - b) * (1.0 / 0.8);
                        s * t.mul_add(t, 1.0)
                    });
                    assert_eq!(c[r * m + q].to_bits(), (1.0 / prod).to_bits(), "cauchy ({n}, {d}, {m}) at ({r}, {q})");
                    let direct: f64 =
                        row.iter().zip(&p[q]).map(|(a, b)| 1.0 / (1.0 + (a - b) * (a - b) / 0.64)).product();
                    assert!((c[r * m + q] - direct).abs() <= 8.0 * (d + 1) as f64 * f64::EPSILON * direct);
                }
            }
        }
        // Far points: the product overflows and the kernel is 0.
        let mut far = [0.0];
        cauchy_products_into(&[1e200; 3], &TiledPoints::new(ndarray::Array2::zeros((1, 3)).view()), 1.0, &mut far);
        assert_eq!(far, [0.0]);
        // No points or no rows: nothing to do.
        l1_distances_into(&[], &TiledPoints::new(ndarray::Array2::zeros((0, 2)).view()), &mut []);
        l1_distances_into(&[], &TiledPoints::new(ndarray::Array2::zeros((2, 1)).view()), &mut []);
    }

    #[test]
    #[should_panic(expected = "distances")]
    fn mismatched_shapes_are_refused() {
        l1_distances_into(&[1.0, 2.0, 3.0], &TiledPoints::new(ndarray::Array2::zeros((2, 2)).view()), &mut [0.0; 4]);
    }
}
