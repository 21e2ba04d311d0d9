//! Statistics of linearly mapped features, from the statistics of the
//! features: `TᵀGT` for the augmented map `T`, without another pass.

use super::Moments;
use crate::buffer;
use crate::gram::{PackedRows, Triangle, gemm_tn_add, gemm_tn_add_triangular};
use faer::Par;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis, ShapeBuilder};
use rayon::prelude::*;

impl Moments {
    /// The statistics of the linearly mapped features `z ↦ Pᵀz` for
    /// `p (l, l')`, without another pass: `PᵀZᵀZP`, `PᵀZᵀY`, `PᵀΣz`.
    /// (TEFM gets the ridge statistics of `G = FQ` this way, and Nyström
    /// fits those of `Nᵀk` from the kernel columns' Gram.)
    ///
    /// With `T = [P 0; 0 I]` the augmented map and the symmetric Gram
    /// split as `G = L + Lᵀ` (`L` its strict lower triangle plus half its
    /// diagonal), `TᵀGT = M + Mᵀ` for `M = (LᵀT)ᵀT`: the product by the
    /// triangular `L` costs half of one by `G`, and no product is formed
    /// twice. `w² w' + 2 w w'²` flops on every core (`w = l + 1 + k`,
    /// `w' = l' + 1 + k`), against `2 w² w' + w w'²` for `(GT)ᵀT` — a third
    /// less at TEFM's `l = 4l'`. An upper-triangular `P` (Nyström's
    /// `N = L⁻ᵀ`) is detected and its zeros skipped: `LᵀT` and `(LᵀT)ᵀT`
    /// then cost `≈ w³/3` and `≈ 2w³/3` flops. Bitwise the same for every
    /// thread count.
    #[track_caller]
    pub fn project(&self, p: ArrayView2<'_, f64>) -> Moments {
        self.project_affine(p, Array1::zeros(p.ncols()).view())
    }

    /// The statistics of `z ↦ Pᵀz + d` for `p (l, l')` and `d (l')`: as
    /// [`Moments::project`], with `d` in the intercept row of `T`
    /// (Nyström fits accumulate shifted kernel columns `k − c` and add
    /// `d = Nᵀc` back here). To project several statistics by the same map
    /// (the split parts of a fit), prepare it once with
    /// [`AffineProjection::new`].
    #[track_caller]
    pub fn project_affine(&self, p: ArrayView2<'_, f64>, d: ArrayView1<'_, f64>) -> Moments {
        AffineProjection::new(p, d, self.n_targets, self.par).apply(self)
    }
}

/// The map `z ↦ Pᵀz + d` of [`Moments::project_affine`], packed once for
/// any number of statistics with `l` features and `k` targets: packing
/// `T` costs a pass over `P` (0.12 s for a 4096 × 4096 `P`, a seventh of
/// one projection's products).
///
/// The offset is kept out of the packed map: `T = T₀ + e_l d̂ᵀ` with
/// `T₀ = [P 0 0; 0 1 0; 0 0 I]` and `d̂ = [d 0 0]`, so
/// `TᵀGT = T₀ᵀGT₀ + v d̂ᵀ + d̂ vᵀ + G_ll d̂ d̂ᵀ` with `v = T₀ᵀ G e_l`, the
/// intercept column of `G` mapped (a matrix–vector product). `T₀` keeps the
/// triangular structure of an upper-triangular `P` whatever `d` is.
#[derive(Debug)]
pub struct AffineProjection {
    /// Rows of `T₀`, packed.
    t: PackedRows<f64>,
    /// The offset `d (l')`, `None` when it is zero.
    offset: Option<Array1<f64>>,
    /// Leading rows of `T₀` zero left of their own column (all `w` for a
    /// square upper-triangular `P`, `l` for a wider one, else 0).
    upper: usize,
    n_features: usize,
    n_targets: usize,
    par: Par,
}

impl AffineProjection {
    /// Packs `T` for statistics with `p.nrows()` features and `n_targets`
    /// targets, projected with parallelism `par`.
    ///
    /// # Panics
    /// `d` must have `p.ncols()` entries.
    #[track_caller]
    pub fn new(p: ArrayView2<'_, f64>, d: ArrayView1<'_, f64>, n_targets: usize, par: Par) -> Self {
        let (l, k) = (p.nrows(), n_targets);
        let lp = p.ncols();
        assert_eq!(d.len(), lp, "project: d has {} entries, expected {lp}", d.len());
        let (w, wp) = (l + 1 + k, lp + 1 + k);
        // Rows of T₀, packed: row i of T₀ is row i of P, then the identity
        // of the intercept and target columns.
        let mut t = PackedRows::<f64>::new(wp, w);
        t.push_rows(l);
        t.set_rows(0, p, None, par);
        for i in 0..1 + k {
            let r = t.push_row();
            t.set_value(r, lp + i, 1.0);
        }
        // Row l + i has its one in column l' + i: zero left of its own
        // column too when l' ≥ l.
        let upper = match (is_upper_triangular(p), lp >= l) {
            (true, true) => w,
            (true, false) => l,
            (false, _) => 0,
        };
        let offset = d.iter().any(|&v| v != 0.0).then(|| d.to_owned());
        AffineProjection { t, offset, upper, n_features: l, n_targets: k, par }
    }

    /// The statistics of the mapped features: `TᵀGT` for `m`'s augmented
    /// Gram `G`; see [`Moments::project`] for the products and their cost.
    ///
    /// # Panics
    /// `m` must be flushed, with the `l` features and `k` targets this map
    /// was made for.
    #[track_caller]
    pub fn apply(&self, m: &Moments) -> Moments {
        self.apply_with(m, &mut Scratch::default())
    }

    /// [`AffineProjection::apply`] for every part, consumed in order: the
    /// same bits, with each part's temporaries (and `storage`, spent packed
    /// rows of the caller's, e.g. the range finder's) reused by the next.
    ///
    /// Why: at `l = 4096` every temporary is 134 MB, and fresh memory cost
    /// about 0.1 s per such matrix here (the first write of each page).
    /// Nyström's two parts took six fresh matrices and now four, one-pass
    /// TEFM's none for the packed Grams where it took two. A part's
    /// statistics are dropped once projected, so the peak is no higher
    /// than projecting every part with [`AffineProjection::apply`].
    ///
    /// # Panics
    /// As [`AffineProjection::apply`], for every part.
    #[track_caller]
    pub fn apply_all(&self, parts: Vec<Moments>, storage: Option<PackedRows<f64>>) -> Vec<Moments> {
        let n = parts.len();
        let mut scratch = Scratch { rows: storage, product: None, keep: true };
        let mut out = Vec::with_capacity(n);
        for (i, m) in parts.into_iter().enumerate() {
            scratch.keep = i + 1 < n;
            out.push(self.apply_with(&m, &mut scratch));
        }
        out
    }

    #[track_caller]
    fn apply_with(&self, m: &Moments, scratch: &mut Scratch) -> Moments {
        m.assert_flushed();
        let (l, k) = (self.n_features, self.n_targets);
        assert_eq!(m.n_features, l, "project: P has {l} rows, expected {}", m.n_features);
        assert_eq!(m.n_targets, k, "project: the map was made for {k} targets, the statistics have {}", m.n_targets);
        let t = &self.t;
        let (w, wp) = (t.len(), t.n_cols());
        // H = LᵀT₀, upper triangular when T₀ is throughout (rows c of L
        // are zero right of c, rows r of T₀ left of r).
        // Each product's operand and result reuse the storage of the one
        // before (H's rows that of L's, M that of H): at l = 4096 each is
        // 134 MB, and fresh memory costs a round of page faults.
        let mut rows = PackedRows::<f64>::lower_half_of_symmetric(scratch.rows.take(), t.simd(), m.gram.view());
        let mut h = match scratch.product.take() {
            Some(used) => buffer::zeros_reusing(used, (w, wp), true),
            None => buffer::zeros((w, wp), true),
        };
        gemm_tn_add_triangular(h.view_mut(), &rows, Triangle::Lower(w), t, self.upper, 1.0, self.par);
        rows.reset(wp, w);
        rows.push_rows(w);
        rows.set_rows(0, h.view(), None, self.par);
        let h_upper = if self.upper == w { w } else { 0 };
        // M = HᵀT₀ = T₀ᵀLT₀, and T₀ᵀGT₀ = M + Mᵀ.
        let mut mt = buffer::zeros_reusing(h, (wp, wp), true);
        gemm_tn_add_triangular(mt.view_mut(), &rows, Triangle::Upper(h_upper), t, self.upper, 1.0, self.par);
        // Kept for the next part where there is one (`apply_all` has
        // dropped the part before, which balances it), else freed before
        // the result is allocated.
        if scratch.keep {
            scratch.rows = Some(rows);
        } else {
            drop(rows);
        }
        let mut out = Moments::new(wp - 1 - k, k).with_par(self.par);
        add_transposed_lower(out.gram.view_mut(), mt.view(), self.par);
        if scratch.keep {
            scratch.product = Some(mt);
        }
        if let Some(d) = &self.offset {
            self.add_offset(&mut out.gram, m.gram.view(), d);
        }
        out
    }

    /// Adds `v d̂ᵀ + d̂ vᵀ + G_ll d̂ d̂ᵀ` (see [`AffineProjection`]) to the
    /// lower triangle of `s`, `g` the input Gram (lower triangle).
    fn add_offset(&self, s: &mut Array2<f64>, g: ArrayView2<'_, f64>, d: &Array1<f64>) {
        let (l, t) = (self.n_features, &self.t);
        let w = t.len();
        // G e_l from the lower triangle: row l left of the diagonal, then
        // column l.
        let mut g_l = Array2::<f64>::zeros((w, 1));
        for r in 0..w {
            g_l[[r, 0]] = if r < l { g[[l, r]] } else { g[[r, l]] };
        }
        let mut v = Array2::<f64>::zeros((t.n_cols(), 1).f());
        gemm_tn_add(v.view_mut(), t, &PackedRows::from_rows_with(t.simd(), g_l.view()), 1.0, self.par);
        let g_ll = g[[l, l]];
        let lp = d.len();
        for j in 0..lp {
            for i in j..s.nrows() {
                let d_i = if i < lp { d[i] } else { 0.0 };
                s[[i, j]] += v[[i, 0]] * d[j] + d_i * v[[j, 0]] + g_ll * d_i * d[j];
            }
        }
    }
}

/// The temporaries of one projection, kept for the next
/// ([`AffineProjection::apply_all`]).
#[derive(Default)]
struct Scratch {
    /// Packed rows (of `L`, then of `H`).
    rows: Option<PackedRows<f64>>,
    /// `H`, then `M`.
    product: Option<Array2<f64>>,
    /// Whether to keep this projection's temporaries for another.
    keep: bool,
}

/// The lower triangle of `out = M + Mᵀ`, in square tiles (the transposed
/// reads of a tile stay in cache), column blocks on every core with `par`.
fn add_transposed_lower(mut out: ArrayViewMut2<'_, f64>, m: ArrayView2<'_, f64>, par: Par) {
    const TILE: usize = 64;
    let n = m.nrows();
    let blocks: Vec<(usize, ArrayViewMut2<'_, f64>)> =
        out.axis_chunks_iter_mut(Axis(1), TILE).enumerate().map(|(b, v)| (b * TILE, v)).collect();
    let add = |(j0, mut cols): (usize, ArrayViewMut2<'_, f64>)| {
        for i0 in (j0..n).step_by(TILE) {
            for jj in 0..cols.ncols() {
                let j = j0 + jj;
                for i in i0.max(j)..(i0 + TILE).min(n) {
                    cols[[i, jj]] = m[[i, j]] + m[[j, i]];
                }
            }
        }
    };
    if matches!(par, Par::Seq) || n < 4 * TILE {
        blocks.into_iter().for_each(add);
    } else {
        blocks.into_par_iter().for_each(add);
    }
}

/// Whether `p` is zero below its diagonal (exact zeros: the products skip
/// them, see [`gemm_tn_add_triangular`]).
fn is_upper_triangular(p: ArrayView2<'_, f64>) -> bool {
    p.rows().into_iter().enumerate().all(|(i, row)| row.iter().take(i).all(|&v| v == 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::tests::{data, flushed};
    use ndarray::s;

    /// The statistics of the rows `z P + d` (with targets `y`).
    fn moments_of_mapped_rows(z: &Array2<f64>, y: &Array2<f64>, p: &Array2<f64>, d: &Array1<f64>) -> Moments {
        flushed(&(z.dot(p) + d), y)
    }

    /// The largest difference of `got`'s augmented Gram from `want`'s, and
    /// the largest entry of `want`'s.
    fn gram_error(got: &Moments, want: &Moments) -> (f64, f64) {
        let want = want.augmented_gram();
        let scale = want.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        let err = (&got.augmented_gram() - &want).iter().fold(0.0f64, |s, v| s.max(v.abs()));
        (err, scale)
    }

    #[test]
    fn one_prepared_projection_serves_every_part_with_the_same_bits() {
        let (z, y) = data(900, 131, 2);
        let p = Array2::from_shape_fn((131, 150), |(i, j)| ((i * 13 + j * 7) % 17) as f64 / 17.0 - 0.5);
        let d = Array1::from_shape_fn(150, |j| (j % 5) as f64 - 2.0);
        let parts: Vec<Moments> = [0..500, 500..900]
            .into_iter()
            .map(|rows| {
                let mut m = Moments::new(131, 2);
                m.update(z.slice(s![rows.clone(), ..]), y.slice(s![rows, ..]));
                m.flush();
                m
            })
            .collect();
        let projection = AffineProjection::new(p.view(), d.view(), 2, Par::rayon(0));
        for (i, part) in parts.iter().enumerate() {
            let once = projection.apply(part);
            assert_eq!(once.augmented_gram(), part.project_affine(p.view(), d.view()).augmented_gram());
            let rows = if i == 0 { 0..500 } else { 500..900 };
            let zs = z.slice(s![rows.clone(), ..]).to_owned();
            let ys = y.slice(s![rows, ..]).to_owned();
            let (err, scale) = gram_error(&once, &moments_of_mapped_rows(&zs, &ys, &p, &d));
            assert!(err < 1e-12 * scale, "part {i}: projection error {err} of {scale}");
        }
        // All parts at once, each reusing the temporaries before it, first
        // those of spent rows full of NaN (every slot must be rewritten):
        // the same bits.
        let want: Vec<Array2<f64>> = parts.iter().map(|m| projection.apply(m).augmented_gram().to_owned()).collect();
        let spent = PackedRows::from_rows(Array2::from_elem((300, 300), f64::NAN).view());
        for storage in [None, Some(spent)] {
            let got = projection.apply_all(vec![parts[0].clone(), parts[1].clone(), parts[0].clone()], storage);
            for (i, (g, w)) in got.iter().zip([&want[0], &want[1], &want[0]]).enumerate() {
                assert_eq!(g.augmented_gram(), w.view(), "part {i}");
            }
        }
    }

    #[test]
    fn project_affine_adds_the_offset_to_every_row() {
        let (z, y) = data(600, 131, 2);
        let m = flushed(&z, &y);
        let p = Array2::from_shape_fn((131, 150), |(i, j)| ((i * 13 + j * 7) % 17) as f64 / 17.0 - 0.5);
        let d = Array1::from_shape_fn(150, |j| (j % 5) as f64 - 2.0);
        let mp = moments_of_mapped_rows(&z, &y, &p, &d);
        let proj = m.project_affine(p.view(), d.view());
        let (err, scale) = gram_error(&proj, &mp);
        assert!(err < 1e-12 * scale, "projection error {err} of {scale}");
        // The offset is what moves the statistics: without it, z̄ is wrong.
        let plain = m.project(p.view());
        let off = (&plain.z_sum() - &mp.z_sum()).iter().fold(0.0f64, |s, v| s.max(v.abs()));
        assert!(off > 100.0, "{off}");
        let centred = (&proj.centered().a - &mp.centered().a).iter().fold(0.0f64, |s, v| s.max(v.abs()));
        assert!(centred < 1e-9 * scale, "{centred}");
    }

    #[test]
    fn every_shape_of_map_gives_the_statistics_of_the_mapped_rows() {
        // Narrower and wider P, dense and upper triangular (a narrower
        // triangular P keeps only its first rows triangular), no target,
        // one feature, with and without an offset.
        for &(l, lp, k, upper, offset) in &[
            (70, 40, 1, true, true),
            (70, 40, 0, false, true),
            (40, 70, 2, true, false),
            (1, 1, 1, false, true),
            (1, 3, 0, true, true),
            (300, 300, 3, true, true),
        ] {
            let (z, y) = data(500, l, k);
            let m = flushed(&z, &y);
            let p = Array2::from_shape_fn((l, lp), |(i, j)| {
                if upper && j < i { 0.0 } else { ((i * 13 + j * 7) % 17) as f64 / 17.0 - 0.5 }
            });
            let d = Array1::from_shape_fn(lp, |j| if offset { (j % 5) as f64 - 2.0 } else { 0.0 });
            let got = AffineProjection::new(p.view(), d.view(), k, Par::rayon(0)).apply(&m);
            let (err, scale) = gram_error(&got, &moments_of_mapped_rows(&z, &y, &p, &d));
            assert!(err < 1e-12 * scale, "l {l} → {lp}, k {k}, upper {upper}: error {err} of {scale}");
            // The thread count changes no bit.
            let seq = AffineProjection::new(p.view(), d.view(), k, Par::Seq).apply(&m);
            assert!(
                seq.augmented_gram().iter().zip(got.augmented_gram().iter()).all(|(a, b)| a.to_bits() == b.to_bits())
            );
        }
    }

    #[test]
    fn an_upper_triangular_projection_is_detected_and_gives_the_same_statistics() {
        // Past one 512-row chunk of the triangular products, with an offset.
        let (l, k) = (600, 2);
        let (z, y) = data(700, l, k);
        let m = flushed(&z, &y);
        let p = Array2::from_shape_fn(
            (l, l),
            |(i, j)| if i <= j { ((i * 13 + j * 7) % 17) as f64 / 17.0 - 0.5 } else { 0.0 },
        );
        assert!(is_upper_triangular(p.view()));
        let d = Array1::from_shape_fn(l, |j| (j % 5) as f64 - 2.0);
        let (err, scale) = gram_error(&m.project_affine(p.view(), d.view()), &moments_of_mapped_rows(&z, &y, &p, &d));
        assert!(err < 1e-12 * scale, "projection error {err} of {scale}");
        // One entry below the diagonal makes it dense again.
        let mut q = p.clone();
        q[[l - 1, 0]] = 1e-3;
        assert!(!is_upper_triangular(q.view()));
        let (err, scale) = gram_error(&m.project_affine(q.view(), d.view()), &moments_of_mapped_rows(&z, &y, &q, &d));
        assert!(err < 1e-12 * scale, "dense projection error {err} of {scale}");
    }
}
