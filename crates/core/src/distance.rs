//! Distances from one row to many points: the inner loops of the kernel
//! blocks whose kernels are not functions of a dot product (the
//! Laplacian's ℓ1 distance, the Cauchy kernel's product).
//!
//! The points are stored transposed, `(d, m)` row-major, so that the loop
//! over the `m` points is unit-stride and vectorises; each function is
//! compiled for AVX-512, AVX2+FMA and the baseline and picked at run time.
//! The sums run over the coordinates in order, as the scalar definitions
//! do.

multiversion! {
    /// ℓ1 distances from `x` to `m = out.len()` points:
    /// `out[q] = Σ_j |x[j] − points_t[j·m + q]|`, with `points_t` the
    /// points transposed, `(d, m)` row-major, `d = x.len()`.
    ///
    /// Cost: `2·d·m` flops.
    ///
    /// # Panics
    /// `points_t.len() == x.len() * out.len()` must hold.
    pub fn l1_distances_into(x: &[f64], points_t: &[f64], out: &mut [f64]) {
        let m = out.len();
        assert_eq!(points_t.len(), x.len() * m, "l1_distances_into: points are not (d, m)");
        out.fill(0.0);
        if m == 0 {
            return;
        }
        for (&xj, col) in x.iter().zip(points_t.chunks_exact(m)) {
            for (o, &p) in out.iter_mut().zip(col) {
                *o += (xj - p).abs();
            }
        }
    }
}

multiversion! {
    /// The Cauchy product kernel from `x` to `m = out.len()` points:
    /// `out[q] = 1 / Π_j (1 + ((x[j] − points_t[j·m + q]) · scale)²)`,
    /// `points_t` as in [`l1_distances_into`] (`scale = 1/σ`). A product
    /// that overflows gives 0, the kernel's limit.
    ///
    /// Cost: `4·d·m` flops and `m` divisions.
    ///
    /// # Panics
    /// `points_t.len() == x.len() * out.len()` must hold.
    pub fn cauchy_products_into(x: &[f64], points_t: &[f64], scale: f64, out: &mut [f64]) {
        let m = out.len();
        assert_eq!(points_t.len(), x.len() * m, "cauchy_products_into: points are not (d, m)");
        out.fill(1.0);
        if m == 0 {
            return;
        }
        for (&xj, col) in x.iter().zip(points_t.chunks_exact(m)) {
            for (o, &p) in out.iter_mut().zip(col) {
                let t = (xj - p) * scale;
                *o *= 1.0 + t * t;
            }
        }
        out.iter_mut().for_each(|o| *o = 1.0 / *o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_the_scalar_definitions() {
        let (d, m) = (5, 37);
        let x: Vec<f64> = (0..d).map(|j| j as f64 * 0.3 - 0.7).collect();
        let p: Vec<Vec<f64>> =
            (0..m).map(|q| (0..d).map(|j| ((q * 7 + j * 3) % 11) as f64 * 0.2 - 1.0).collect()).collect();
        let pt: Vec<f64> = (0..d).flat_map(|j| p.iter().map(move |row| row[j])).collect();
        let mut l1 = vec![0.0; m];
        l1_distances_into(&x, &pt, &mut l1);
        let mut c = vec![0.0; m];
        cauchy_products_into(&x, &pt, 1.0 / 0.8, &mut c);
        for q in 0..m {
            let want: f64 = x.iter().zip(&p[q]).map(|(a, b)| (a - b).abs()).sum();
            assert_eq!(l1[q], want, "same order, same bits");
            let want: f64 = x.iter().zip(&p[q]).map(|(a, b)| 1.0 / (1.0 + (a - b) * (a - b) / 0.64)).product();
            assert!((c[q] - want).abs() <= 8.0 * d as f64 * f64::EPSILON * want, "{} vs {want}", c[q]);
        }
        // Far points: the product overflows and the kernel is 0.
        let mut far = [0.0];
        cauchy_products_into(&[1e200; 3], &[0.0, 0.0, 0.0], 1.0, &mut far);
        assert_eq!(far, [0.0]);
    }
}
