//! `AᵀB` for packed rows `A` and sparse rows `B`: the cheap start of a
//! range finder whose test matrix is sparse.

use super::Out;
use super::pack::PackedRows;
use crate::sparse::SparseRowsView;
use ndarray::Array2;
use rayon::prelude::*;

/// `AᵀB (n, m)`, column-major, for the packed rows of `a (k, n)` and the
/// sparse rows of `b (k, m)`; for a symmetric `A` (a Gram matrix) that is
/// `A·B`. Element `(i, c)` is `Σⱼ A[j, i]·B[j, c]` over the stored entries
/// of column `c` of `B`, in increasing `j` (and stored order within a
/// row): the same bits on any number of cores and at every SIMD level.
///
/// Why not the Gram kernel: `B` has a few entries per row (8 for the
/// sparse sign test matrix), so the dense product would spend `m/8` times
/// the flops on zeros. Here a task owns one panel of `A` (its `w` columns
/// over all `k` rows, contiguous and cache-resident) and, for each column
/// of `B`, adds the panel rows its entries select: one vector
/// multiply-add per stored entry and panel.
///
/// Cost: `2·n·nnz(B)` flops (`16·d²` for a `d × d` Gram and 8 entries
/// per row), reading `A` once. Memory: the output and `B`'s columns
/// (`nnz(B)` indices and values).
///
/// # Panics
/// If `b` has not `a.len()` rows or an index of `b` is `≥ b.n_cols`.
pub fn gemm_tn_sparse(a: &PackedRows<f64>, b: SparseRowsView<'_>) -> Array2<f64> {
    let (k, n, m) = (a.len(), a.n_cols(), b.n_cols);
    assert_eq!(b.n_rows(), k, "gemm_tn_sparse: B has {} rows, A has {k}", b.n_rows());
    let columns = SparseColumns::of(b);
    let mut out = crate::buffer::zeros((n, m), true);
    if n == 0 || m == 0 || k == 0 {
        return out;
    }
    let (w, stride) = (a.panel_width(), a.panel_stride());
    let data = a.as_slice();
    let target = Out(out.as_mut_ptr());
    (0..n.div_ceil(w)).into_par_iter().for_each(|p| {
        let panel = &data[p * stride..p * stride + k * w];
        let rows = w.min(n - p * w);
        let mut acc = [0.0; 8];
        for c in 0..m {
            let (js, vs) = columns.column(c);
            let acc = &mut acc[..w];
            match w {
                8 => add_rows_8(panel, js, vs, acc),
                _ => add_rows_4(panel, js, vs, acc),
            }
            // SAFETY: `out` is column-major `(n, m)`, so element `(i, c)` is
            // at `c·n + i`; this task writes rows `p·w .. p·w + rows < n` of
            // each column, and no other task writes those rows.
            unsafe {
                std::ptr::copy_nonoverlapping(acc.as_ptr(), target.ptr().add(c * n + p * w), rows);
            }
        }
    });
    out
}

/// `acc = Σ vs[e]·panel[js[e]·W ..][..W]`, summed from zero in order;
/// `W` a constant, so that a row is one vector register (two for AVX2).
#[inline(always)]
fn add_rows<const W: usize>(panel: &[f64], js: &[u32], vs: &[f64], acc: &mut [f64]) {
    let acc: &mut [f64; W] = acc.try_into().expect("a panel's width");
    *acc = [0.0; W];
    for (&j, &v) in js.iter().zip(vs) {
        let row: &[f64; W] = panel[j as usize * W..(j as usize + 1) * W].try_into().expect("W values");
        for (a, x) in acc.iter_mut().zip(row) {
            *a += v * x;
        }
    }
}

crate::multiversion! {
    /// [`add_rows`] for the AVX-512 layout's 8-wide panels.
    fn add_rows_8(panel: &[f64], js: &[u32], vs: &[f64], acc: &mut [f64]) {
        add_rows::<8>(panel, js, vs, acc)
    }
}

crate::multiversion! {
    /// [`add_rows`] for the 4-wide panels of the other layouts.
    fn add_rows_4(panel: &[f64], js: &[u32], vs: &[f64], acc: &mut [f64]) {
        add_rows::<4>(panel, js, vs, acc)
    }
}

/// The stored entries of sparse rows regrouped by column (row indices in
/// increasing order, a row's entries in stored order).
struct SparseColumns {
    starts: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<f64>,
}

impl SparseColumns {
    fn of(b: SparseRowsView<'_>) -> Self {
        let m = b.n_cols;
        let mut starts = vec![0usize; m + 1];
        for &c in b.indices.iter() {
            assert!((c as usize) < m, "gemm_tn_sparse: an index of B is ≥ {m}");
            starts[c as usize + 1] += 1;
        }
        for c in 0..m {
            starts[c + 1] += starts[c];
        }
        let nnz = starts[m];
        let (mut rows, mut values, mut next) = (vec![0u32; nnz], vec![0.0; nnz], starts.clone());
        for (j, (cols, vals)) in b.indices.rows().into_iter().zip(b.values.rows()).enumerate() {
            for (&c, &v) in cols.iter().zip(vals) {
                let slot = &mut next[c as usize];
                rows[*slot] = u32::try_from(j).expect("fewer than 2³² rows");
                values[*slot] = v;
                *slot += 1;
            }
        }
        SparseColumns { starts, rows, values }
    }

    fn column(&self, c: usize) -> (&[u32], &[f64]) {
        let range = self.starts[c]..self.starts[c + 1];
        (&self.rows[range.clone()], &self.values[range])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Simd;
    use crate::sparse::SparseRows;

    #[test]
    fn equals_the_dense_product_for_every_layout_and_thread_count() {
        let (k, n, m, s) = (37, 70, 11, 3);
        let a = Array2::from_shape_fn((k, n), |(i, j)| ((i * 31 + j * 17) % 23) as f64 - 11.0);
        let mut b = SparseRows::zeros(k, s, m);
        for j in 0..k {
            for e in 0..s {
                // Duplicates (e = 0 and 2 when j is even) must add up.
                b.indices[[j, e]] = ((j * 7 + if e == 2 && j % 2 == 0 { 0 } else { e * 5 }) % m) as u32;
                b.values[[j, e]] = if (j + e) % 2 == 0 { 0.5 } else { -1.25 };
            }
        }
        let want = a.t().dot(&b.to_dense());
        for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512].into_iter().filter(|s| s.is_available()) {
            let packed = PackedRows::from_rows_with(simd, a.view());
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let got = pool.install(|| gemm_tn_sparse(&packed, b.view()));
                // Small integers times dyadic values: exact in any order.
                assert_eq!(got, want, "{simd:?}, {threads} threads");
                assert!(got.t().is_standard_layout(), "column-major");
            }
        }
    }

    #[test]
    fn rounding_follows_the_row_order_whatever_the_layout() {
        // Values whose sums round: the order of the additions shows in the
        // bits, which must not depend on the panel width or thread count.
        let (k, n, m) = (300, 29, 5);
        let a = Array2::from_shape_fn((k, n), |(i, j)| ((i * 7919 + j * 104_729) % 1000) as f64 / 997.0 + 1e-3);
        let mut b = SparseRows::zeros(k, 2, m);
        for j in 0..k {
            b.indices[[j, 0]] = (j % m) as u32;
            b.indices[[j, 1]] = ((j * 3 + 1) % m) as u32;
            b.values[[j, 0]] = 1.0 / (j + 3) as f64;
            b.values[[j, 1]] = -0.7 / (j + 1) as f64;
        }
        // The definition, summed in increasing j for each element.
        let mut want = Array2::<f64>::zeros((n, m));
        for j in 0..k {
            for e in 0..2 {
                let (c, v) = (b.indices[[j, e]] as usize, b.values[[j, e]]);
                for i in 0..n {
                    want[[i, c]] += v * a[[j, i]];
                }
            }
        }
        for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512].into_iter().filter(|s| s.is_available()) {
            let packed = PackedRows::from_rows_with(simd, a.view());
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                assert_eq!(pool.install(|| gemm_tn_sparse(&packed, b.view())), want, "{simd:?}, {threads} threads");
            }
        }
    }

    #[test]
    #[should_panic(expected = "B has 4 rows")]
    fn a_mismatched_inner_dimension_is_refused() {
        let a = PackedRows::from_rows(Array2::<f64>::zeros((3, 5)).view());
        let _ = gemm_tn_sparse(&a, SparseRows::zeros(4, 1, 2).view());
    }
}
