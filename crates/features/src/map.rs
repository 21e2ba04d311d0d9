use crate::spec::{MapSpec, TensorViews, Tensors};
use kapprox_core::sparse::{SparseRows, SparseRowsViewMut};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// Whether a map writes dense rows or fixed-nnz sparse rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// `transform_into` writes `(n, n_output)` dense rows.
    Dense,
    /// `transform_sparse_into` writes `nnz_per_row` (index, value) entries
    /// per row (see [`kapprox_core::SparseRows`]).
    Sparse {
        /// Stored entries per row.
        nnz_per_row: usize,
    },
}

/// An explicit feature map `z: R^{n_input} → R^{n_output}`.
///
/// Maps are immutable after construction and `Send + Sync`, so the
/// pipeline can transform different row blocks of a chunk on different
/// threads with the same map. Implementations transform sequentially; the
/// caller splits rows for parallelism.
pub trait FeatureMap: Send + Sync + std::fmt::Debug {
    /// Input dimension `d`.
    fn n_input(&self) -> usize;

    /// Output dimension `l`.
    fn n_output(&self) -> usize;

    /// Dense or sparse output. Default: dense.
    fn output_kind(&self) -> OutputKind {
        OutputKind::Dense
    }

    /// Transforms rows `x (n, n_input)` into `out (n, n_output)`.
    ///
    /// Allocates at most per call (scratch for the chunk), never per row.
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()`, `out.dim() == (x.nrows(), self.n_output())`,
    /// and the map must be dense.
    fn transform_into(&self, x: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>);

    /// The `f32` path of [`FeatureMap::transform_into`].
    ///
    /// The default converts through an `f64` scratch buffer per call; maps
    /// with a native single-precision kernel override it.
    fn transform_into_f32(&self, x: ArrayView2<'_, f32>, mut out: ArrayViewMut2<'_, f32>) {
        let x64 = x.mapv(f64::from);
        let mut z = Array2::<f64>::zeros((x.nrows(), self.n_output()));
        self.transform_into(x64.view(), z.view_mut());
        out.zip_mut_with(&z, |o, &v| *o = v as f32);
    }

    /// Transforms rows into fixed-nnz sparse rows (sparse maps only).
    ///
    /// # Panics
    /// The map must be sparse and the buffers must have shape
    /// `(x.nrows(), nnz_per_row)`.
    fn transform_sparse_into(&self, x: ArrayView2<'_, f64>, out: SparseRowsViewMut<'_>) {
        let _ = (x, out);
        panic!("{:?} is a dense map: call transform_into", self.spec());
    }

    /// The serialisable description that [`MapSpec::build`] turns back into
    /// an equal map.
    fn spec(&self) -> MapSpec;

    /// Bytes held by the map's parameters (frequencies, diagonals, grids,
    /// learned tensors), for reporting memory. Structured maps such as
    /// Fastfood hold `O(l)`, dense ones `O(l·d)`. The default, 0, suits a
    /// map without parameters; every map in this crate overrides it.
    fn parameter_bytes(&self) -> usize {
        0
    }

    /// Learned tensors that the spec alone cannot regenerate (Nyström
    /// landmarks, TEFM's Q, ...). Data-independent maps have none.
    fn tensors(&self) -> Tensors {
        Tensors::default()
    }

    /// The tensors of [`FeatureMap::tensors`], borrowed where the map holds
    /// them: a Nyström map's `N` is 134 MB at m = 4096, and writing a model
    /// or projecting statistics needs only to read it. The default copies
    /// them through [`FeatureMap::tensors`], so a map that overrides only
    /// that still gives every tensor.
    fn tensor_views(&self) -> TensorViews<'_> {
        self.tensors().into_iter().map(|(k, v)| (k, v.into())).collect()
    }

    /// The realised random parameters that the spec regenerates from its
    /// seed (frequencies, phases, sign and Gaussian diagonals, permutations,
    /// projections; see FORMAT.md), for a model file that other languages
    /// can evaluate. [`MapSpec::build`] uses them instead of the seed when
    /// they are given. Default: none (maps without random parameters, and
    /// maps whose parameters are not exported).
    fn random_parameters(&self) -> Tensors {
        Tensors::default()
    }

    /// Convenience: transform into a new dense array.
    fn transform(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let mut out = Array2::zeros((x.nrows(), self.n_output()));
        self.transform_into(x, out.view_mut());
        out
    }

    /// Convenience: transform into new sparse rows (sparse maps only).
    fn transform_sparse(&self, x: ArrayView2<'_, f64>) -> SparseRows {
        let nnz = match self.output_kind() {
            OutputKind::Sparse { nnz_per_row } => nnz_per_row,
            OutputKind::Dense => panic!("transform_sparse on a dense map"),
        };
        let mut out = SparseRows::zeros(x.nrows(), nnz, self.n_output());
        self.transform_sparse_into(x, out.view_mut());
        out
    }
}
