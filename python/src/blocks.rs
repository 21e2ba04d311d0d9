//! Transforming many rows at once: rayon tasks over fixed row blocks (maps
//! transform sequentially; the caller splits rows), and the CSR form of
//! sparse maps' fixed-nnz rows that scipy wants.

use kapprox_core::SparseRows;
use kapprox_core::sparse::{SparseRowsView, SparseRowsViewMut};
use kapprox_features::{FeatureMap, OutputKind};
use ndarray::{ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Rows per parallel transform task, as in the CLI's pipeline: small enough
/// to balance a few threads, large enough for each map's GEMM. Maps are
/// row-wise, so the blocking never changes a feature value.
const BLOCK_ROWS: usize = 256;

/// `out = z(x)` for a dense map, in parallel over row blocks.
pub(crate) fn transform_dense(map: &dyn FeatureMap, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
    let xs: Vec<_> = x.axis_chunks_iter(Axis(0), BLOCK_ROWS).collect();
    let zs: Vec<_> = out.axis_chunks_iter_mut(Axis(0), BLOCK_ROWS).collect();
    zs.into_par_iter().zip(xs).for_each(|(z, x)| map.transform_into(x, z));
}

/// The `f32` path of [`transform_dense`] (the map's own single-precision kernel).
pub(crate) fn transform_dense_f32(map: &dyn FeatureMap, x: ArrayView2<'_, f32>, mut out: ArrayViewMut2<'_, f32>) {
    let xs: Vec<_> = x.axis_chunks_iter(Axis(0), BLOCK_ROWS).collect();
    let zs: Vec<_> = out.axis_chunks_iter_mut(Axis(0), BLOCK_ROWS).collect();
    zs.into_par_iter().zip(xs).for_each(|(z, x)| map.transform_into_f32(x, z));
}

/// Fixed-nnz sparse rows `z(x)` of a sparse map, in parallel over row blocks.
///
/// # Panics
/// The map must be sparse.
pub(crate) fn transform_sparse(map: &dyn FeatureMap, x: ArrayView2<'_, f64>) -> SparseRows {
    let OutputKind::Sparse { nnz_per_row } = map.output_kind() else { panic!("transform_sparse on a dense map") };
    let mut z = SparseRows::zeros(x.nrows(), nnz_per_row, map.n_output());
    let n_cols = z.n_cols;
    let is: Vec<_> = z.indices.axis_chunks_iter_mut(Axis(0), BLOCK_ROWS).collect();
    let vs: Vec<_> = z.values.axis_chunks_iter_mut(Axis(0), BLOCK_ROWS).collect();
    let xs: Vec<_> = x.axis_chunks_iter(Axis(0), BLOCK_ROWS).collect();
    is.into_par_iter()
        .zip(vs)
        .zip(xs)
        .for_each(|((indices, values), x)| map.transform_sparse_into(x, SparseRowsViewMut { n_cols, indices, values }));
    z
}

/// A canonical CSR matrix: column indices sorted within each row, duplicates
/// summed, explicit zeros dropped.
pub(crate) struct Csr {
    /// Stored values.
    pub data: Vec<f64>,
    /// Column index of each stored value.
    pub indices: Vec<u32>,
    /// Row `r` is `indptr[r]..indptr[r + 1]`; length `n_rows + 1`.
    pub indptr: Vec<i64>,
}

/// The canonical CSR form of fixed-nnz rows (in parallel over row blocks).
pub(crate) fn to_csr(z: SparseRowsView<'_>) -> Csr {
    let blocks: Vec<(Vec<usize>, Vec<u32>, Vec<f64>)> = z
        .indices
        .axis_chunks_iter(Axis(0), BLOCK_ROWS)
        .zip(z.values.axis_chunks_iter(Axis(0), BLOCK_ROWS))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(idx, val)| {
            let (mut counts, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            let mut row: Vec<(u32, f64)> = Vec::with_capacity(idx.ncols());
            for (i, v) in idx.rows().into_iter().zip(val.rows()) {
                row.clear();
                row.extend(i.iter().copied().zip(v.iter().copied()));
                row.sort_unstable_by_key(|&(c, _)| c);
                let start = cols.len();
                for &(c, v) in &row {
                    match cols.last() {
                        Some(&last) if cols.len() > start && last == c => *vals.last_mut().expect("paired") += v,
                        _ => {
                            cols.push(c);
                            vals.push(v);
                        }
                    }
                }
                // Drop entries that are (or summed to) exactly zero.
                let mut keep = start;
                for k in start..cols.len() {
                    if vals[k] != 0.0 {
                        cols[keep] = cols[k];
                        vals[keep] = vals[k];
                        keep += 1;
                    }
                }
                cols.truncate(keep);
                vals.truncate(keep);
                counts.push(keep - start);
            }
            (counts, cols, vals)
        })
        .collect();
    let nnz: usize = blocks.iter().map(|b| b.1.len()).sum();
    let mut csr = Csr { data: Vec::with_capacity(nnz), indices: Vec::with_capacity(nnz), indptr: vec![0] };
    csr.indptr.reserve(z.n_rows());
    for (counts, cols, vals) in blocks {
        for c in counts {
            let last = *csr.indptr.last().expect("starts at 0");
            csr.indptr.push(last + c as i64);
        }
        csr.indices.extend(cols);
        csr.data.extend(vals);
    }
    csr
}
