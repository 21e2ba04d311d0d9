//! Feature maps for Python: construction from the same parameters the CLI
//! takes (so the same seed and inputs give the same map), transforms of
//! numpy arrays with the GIL released, and pickling as spec + tensors.

use crate::blocks::{to_csr, transform_dense, transform_dense_f32, transform_sparse};
use crate::prepare::landmarks;
use crate::value_error;
use kapprox_core::Moments;
use kapprox_features::eof::{EofBasis, EofKernel, EofSpec, EofSubset};
use kapprox_features::nystrom::{DEFAULT_REL_TOL, Nystrom};
use kapprox_features::tefm::{Tefm, TefmKind, TefmParams};
use kapprox_features::{FeatureMap, Form, Kernel, MapKind, MapParams, MapSpec, OutputKind, Tensors};
use kapprox_sketch::{SketchKind, gram_range_finder};
use ndarray::{Array2, ArrayView2, Axis};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::Arc;

/// Rows featurized at a time while TEFM accumulates `FᵀF`: bounds
/// the `(rows, d)` buffer of base features.
const TEFM_CHUNK_ROWS: usize = 4096;

/// CSR arrays for scipy: `(data, indices, indptr)`.
type CsrArrays<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyArray1<i64>>);

/// A fitted kapprox feature map (immutable, shareable between threads).
///
/// Pickles as its spec (JSON: kind, parameters, seed; never the random
/// matrix) plus the tensors a data-dependent map learned (Nyström
/// landmarks, TEFM's `Q`), and rebuilds through `MapSpec::build`, exactly
/// as a model file's map is rebuilt.
#[pyclass(module = "kapprox._native", name = "FeatureMap", frozen, from_py_object)]
#[derive(Clone)]
pub struct PyFeatureMap {
    pub(crate) map: Arc<dyn FeatureMap>,
}

impl PyFeatureMap {
    pub(crate) fn new_boxed(map: Box<dyn FeatureMap>) -> Self {
        PyFeatureMap { map: Arc::from(map) }
    }

    fn check_columns(&self, n: usize) -> PyResult<()> {
        let d = self.map.n_input();
        if n == d { Ok(()) } else { Err(value_error(format!("X has {n} features, but the map takes {d}"))) }
    }

    fn check_dense(&self) -> PyResult<()> {
        match self.map.output_kind() {
            OutputKind::Dense => Ok(()),
            OutputKind::Sparse { .. } => {
                Err(value_error(format!("the {} map is sparse: use transform_csr", self.name())))
            }
        }
    }

    /// The spec as JSON (what a model file stores).
    pub(crate) fn spec_json_string(&self) -> String {
        serde_json::to_string(&self.map.spec()).expect("a map spec serialises")
    }
}

#[pymethods]
impl PyFeatureMap {
    /// Rebuilds a map from its spec (JSON) and learned tensors (the
    /// arguments that pickling stores).
    #[new]
    fn py_new(spec_json: &str, tensors: HashMap<String, PyReadonlyArray2<'_, f64>>) -> PyResult<Self> {
        let spec: MapSpec =
            serde_json::from_str(spec_json).map_err(|e| value_error(format!("invalid map spec: {e}")))?;
        let tensors: Tensors = tensors.into_iter().map(|(k, v)| (k, v.as_array().to_owned())).collect();
        Ok(PyFeatureMap::new_boxed(spec.build(&tensors).map_err(value_error)?))
    }

    fn __getnewargs__<'py>(&self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        Ok((self.spec_json_string(), self.tensors(py)?))
    }

    fn __repr__(&self) -> String {
        format!("FeatureMap({})", self.spec_json_string())
    }

    /// Input dimension `d`.
    #[getter]
    fn n_input(&self) -> usize {
        self.map.n_input()
    }

    /// Output dimension `l`.
    #[getter]
    fn n_output(&self) -> usize {
        self.map.n_output()
    }

    /// Whether the map writes sparse rows (random binning, EOF).
    #[getter]
    fn is_sparse(&self) -> bool {
        matches!(self.map.output_kind(), OutputKind::Sparse { .. })
    }

    /// The map's short name (`rff`, `nystrom`, `tefm`, `eof`, ...).
    #[getter]
    fn name(&self) -> String {
        self.map.spec().name().to_string()
    }

    /// The spec as JSON.
    #[getter]
    fn spec_json(&self) -> String {
        self.spec_json_string()
    }

    /// The bandwidth σ of the kernel the map approximates (`None` for
    /// EOF's Sobolev kernel, which has no bandwidth).
    #[getter]
    fn sigma(&self) -> Option<f64> {
        self.map.spec().kernel().map(|k| k.sigma())
    }

    /// Bytes held by the map's parameters.
    #[getter]
    fn parameter_bytes(&self) -> usize {
        self.map.parameter_bytes()
    }

    /// The learned tensors by name (empty for data-independent maps).
    fn tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, t) in self.map.tensors() {
            out.set_item(name, t.into_pyarray(py))?;
        }
        Ok(out)
    }

    /// `z(x)` of a dense map, `(n, l)` float64.
    fn transform<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'py, f64>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.check_dense()?;
        self.check_columns(x.as_array().ncols())?;
        let (x, map) = (x.as_array(), self.map.clone());
        let z = py.detach(|| {
            let mut z = Array2::zeros((x.nrows(), map.n_output()));
            transform_dense(map.as_ref(), x, z.view_mut());
            z
        });
        Ok(z.into_pyarray(py))
    }

    /// `z(x)` of a dense map in single precision, `(n, l)` float32.
    fn transform_f32<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        self.check_dense()?;
        self.check_columns(x.as_array().ncols())?;
        let (x, map) = (x.as_array(), self.map.clone());
        let z = py.detach(|| {
            let mut z = Array2::zeros((x.nrows(), map.n_output()));
            transform_dense_f32(map.as_ref(), x, z.view_mut());
            z
        });
        Ok(z.into_pyarray(py))
    }

    /// `z(x)` of a sparse map as canonical CSR arrays `(data, indices,
    /// indptr)`; `data` is float32 when `single` is true; `indices` are
    /// int32 when `l < 2³¹`, else int64.
    #[pyo3(signature = (x, single=false))]
    fn transform_csr<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        single: bool,
    ) -> PyResult<CsrArrays<'py>> {
        if !self.is_sparse() {
            return Err(value_error(format!("the {} map is dense: use transform", self.name())));
        }
        self.check_columns(x.as_array().ncols())?;
        let (x, map) = (x.as_array(), self.map.clone());
        let csr = py.detach(|| to_csr(transform_sparse(map.as_ref(), x).view()));
        let data = if single {
            csr.data.iter().map(|&v| v as f32).collect::<Vec<f32>>().into_pyarray(py).into_any()
        } else {
            csr.data.into_pyarray(py).into_any()
        };
        let indices = if self.map.n_output() <= i32::MAX as usize {
            csr.indices.iter().map(|&c| c as i32).collect::<Vec<i32>>().into_pyarray(py).into_any()
        } else {
            csr.indices.iter().map(|&c| i64::from(c)).collect::<Vec<i64>>().into_pyarray(py).into_any()
        };
        Ok((data, indices, csr.indptr.into_pyarray(py)))
    }
}

fn kernel_of(name: &str, sigma: f64, nu: Option<f64>) -> PyResult<Kernel> {
    Kernel::from_name(name, sigma, nu).map_err(value_error)
}

fn parse_form(form: Option<&str>) -> PyResult<Option<Form>> {
    form.map(|f| f.parse::<Form>().map_err(value_error)).transpose()
}

fn build_independent(
    kind: &str,
    kernel: Kernel,
    n_input: usize,
    n_components: usize,
    seed: u64,
    form: Option<Form>,
    n_grids: Option<usize>,
    n_inner: Option<usize>,
) -> PyResult<Box<dyn FeatureMap>> {
    let kind: MapKind = kind.parse().map_err(value_error)?;
    let mut p = MapParams::new(kind, kernel, n_input, n_components).with_seed(seed);
    if let Some(f) = form {
        p = p.with_form(f);
    }
    if let Some(g) = n_grids {
        p = p.with_grids(g);
    }
    if let Some(i) = n_inner {
        p = p.with_inner(i);
    }
    p.check().and_then(|s| s.build(&Tensors::new())).map_err(value_error)
}

/// A data-independent map (`rff`, `orf`, `sorf`, `qmc`, `fastfood`,
/// `binning`, `comp`): the map `kapprox fit --map KIND --seed SEED` builds
/// for these parameters.
#[pyfunction]
#[pyo3(signature = (kind, kernel, sigma, n_input, n_components, seed, *, nu=None, form=None, n_grids=None, n_inner=None))]
pub(crate) fn independent_map(
    kind: &str,
    kernel: &str,
    sigma: f64,
    n_input: usize,
    n_components: usize,
    seed: u64,
    nu: Option<f64>,
    form: Option<&str>,
    n_grids: Option<usize>,
    n_inner: Option<usize>,
) -> PyResult<PyFeatureMap> {
    let kernel = kernel_of(kernel, sigma, nu)?;
    let map = build_independent(kind, kernel, n_input, n_components, seed, parse_form(form)?, n_grids, n_inner)?;
    Ok(PyFeatureMap::new_boxed(map))
}

/// Nyström over `n_landmarks` rows of `x` chosen as the CLI chooses them
/// (the rows with the smallest `hash(seed, row id)`, in row order; all rows
/// when there are fewer). Returns the map and the landmarks' row indices.
#[pyfunction]
#[pyo3(signature = (kernel, sigma, x, n_landmarks, seed, *, nu=None, rel_tol=DEFAULT_REL_TOL))]
pub(crate) fn nystrom_map(
    py: Python<'_>,
    kernel: &str,
    sigma: f64,
    x: PyReadonlyArray2<'_, f64>,
    n_landmarks: usize,
    seed: u64,
    nu: Option<f64>,
    rel_tol: f64,
) -> PyResult<(PyFeatureMap, Vec<u64>)> {
    let kernel = kernel_of(kernel, sigma, nu)?;
    let x = x.as_array();
    let fitted = py.detach(|| {
        let (ids, rows) = landmarks(x, n_landmarks, seed)?;
        Nystrom::fit(kernel, rows, rel_tol).map(|m| (ids, m)).map_err(|e| e.to_string())
    });
    let (ids, map) = fitted.map_err(value_error)?;
    Ok((PyFeatureMap::new_boxed(Box::new(map)), ids))
}

fn tefm_kind(name: &str) -> PyResult<TefmKind> {
    match name.to_ascii_lowercase().as_str() {
        "gaussian" | "g" | "tefm-g" => Ok(TefmKind::Gaussian),
        "srht" | "s" | "tefm-s" => Ok(TefmKind::Srht),
        "count-sketch" | "countsketch" | "count" | "c" | "tefm-c" => Ok(TefmKind::CountSketch),
        _ => Err(value_error(format!("unknown TEFM sketch {name:?}: expected gaussian, srht or count-sketch"))),
    }
}

fn sketch_kind(kind: TefmKind) -> SketchKind {
    match kind {
        TefmKind::Gaussian => SketchKind::Gaussian,
        TefmKind::Srht => SketchKind::Srht,
        TefmKind::CountSketch => SketchKind::CountSketch,
    }
}

/// `Q (d, l)` of TEFM from the base features of every row of `x`: one pass
/// accumulating `FᵀF`, then `(FᵀF)Ω` for the test matrix `Ω` of `kind`
/// and `q` power iterations in memory; the CLI's one-pass strategy.
fn tefm_basis(
    base: &dyn FeatureMap,
    x: ArrayView2<'_, f64>,
    kind: TefmKind,
    n_components: usize,
    power: usize,
    seed: u64,
) -> Result<Array2<f64>, String> {
    let d = base.n_output();
    let mut gram = Moments::new(d, 0);
    let mut f = Array2::zeros((TEFM_CHUNK_ROWS.min(x.nrows()), d));
    for xc in x.axis_chunks_iter(Axis(0), TEFM_CHUNK_ROWS) {
        let mut fc = f.slice_mut(ndarray::s![..xc.nrows(), ..]);
        transform_dense(base, xc, fc.view_mut());
        gram.update(fc.view(), Array2::zeros((xc.nrows(), 0)).view());
    }
    gram.flush();
    gram_range_finder(gram.zz().view(), sketch_kind(kind), n_components, seed, power).map_err(|e| e.to_string())
}

/// TEFM `x ↦ Qᵀ f(x)` over a base map with `sketch_features` outputs (a
/// data-independent map, or Nyström over that many landmarks), `Q` fitted
/// on the rows of `x` with `power` iterations and a `sketch` Θ (gaussian,
/// srht or count-sketch).
#[pyfunction]
#[pyo3(signature = (base, sketch, kernel, sigma, x, n_components, sketch_features, power, seed, *, nu=None, form=None))]
pub(crate) fn tefm_map(
    py: Python<'_>,
    base: &str,
    sketch: &str,
    kernel: &str,
    sigma: f64,
    x: PyReadonlyArray2<'_, f64>,
    n_components: usize,
    sketch_features: usize,
    power: usize,
    seed: u64,
    nu: Option<f64>,
    form: Option<&str>,
) -> PyResult<PyFeatureMap> {
    let kernel = kernel_of(kernel, sigma, nu)?;
    let kind = tefm_kind(sketch)?;
    let x = x.as_array();
    let base_map: Box<dyn FeatureMap> = if base.eq_ignore_ascii_case("nystrom") {
        let rows = py.detach(|| landmarks(x, sketch_features, seed)).map_err(value_error)?.1;
        Box::new(Nystrom::fit(kernel, rows, DEFAULT_REL_TOL).map_err(value_error)?)
    } else {
        build_independent(base, kernel, x.ncols(), sketch_features, seed, parse_form(form)?, None, None)?
    };
    if base_map.output_kind() != OutputKind::Dense {
        return Err(value_error(format!("TEFM needs a dense base map, not {base}")));
    }
    let params = TefmParams::new(kind, n_components, seed).with_power_iterations(power);
    if params.check(base_map.n_output()).is_err() {
        return Err(value_error(format!(
            "TEFM's n_components {n_components} must be between 1 and the base map's {} features{}",
            base_map.n_output(),
            if base_map.spec().name() == "nystrom" {
                " (Nyström keeps the eigenvalues above rel_tol·λ_max)"
            } else {
                ""
            }
        )));
    }
    let q = py.detach(|| tefm_basis(base_map.as_ref(), x, kind, n_components, power, seed)).map_err(value_error)?;
    let map = Tefm::new(base_map, q).and_then(|t| t.with_params(params)).map_err(value_error)?;
    Ok(PyFeatureMap::new_boxed(Box::new(map)))
}

/// Entropic optimal features for inputs in `[0, 1]^n_input`: the Laplace
/// kernel `exp(−ω‖x − y‖₁)` or the Sobolev kernel, with a feature budget
/// `n_components` or a sparse-grid `level` (exactly one of them).
#[pyfunction]
#[pyo3(signature = (kernel, omega, n_input, seed, *, n_components=None, level=None, basis="centred", subset="nested"))]
pub(crate) fn eof_map(
    kernel: &str,
    omega: f64,
    n_input: usize,
    seed: u64,
    n_components: Option<usize>,
    level: Option<u32>,
    basis: &str,
    subset: &str,
) -> PyResult<PyFeatureMap> {
    let kernel = match kernel.to_ascii_lowercase().as_str() {
        "laplace" | "laplacian" => EofKernel::Laplace,
        "sobolev" => EofKernel::Sobolev,
        _ => return Err(value_error(format!("unknown EOF kernel {kernel:?}: expected laplacian or sobolev"))),
    };
    let basis = match basis.to_ascii_lowercase().as_str() {
        "centred" | "centered" => EofBasis::Centred,
        "boundary" => EofBasis::Boundary,
        "paper" => EofBasis::Paper,
        _ => return Err(value_error(format!("unknown EOF basis {basis:?}: expected centred, boundary or paper"))),
    };
    let subset = match subset.to_ascii_lowercase().as_str() {
        "nested" => EofSubset::Nested,
        "uniform" => EofSubset::Uniform,
        _ => return Err(value_error(format!("unknown EOF subset {subset:?}: expected nested or uniform"))),
    };
    if !(omega.is_finite() && omega > 0.0) {
        return Err(value_error(format!("invalid EOF omega {omega}: expected a finite number > 0")));
    }
    let spec = match (n_components, level) {
        (Some(m), None) => EofSpec::budget(kernel, omega, n_input, m, seed).with_subset(subset),
        (None, Some(n)) => EofSpec::level(kernel, omega, n_input, n).with_seed(seed),
        _ => return Err(value_error("EOF takes exactly one of n_components (a feature budget) and level")),
    };
    Ok(PyFeatureMap::new_boxed(Box::new(spec.with_basis(basis).build().map_err(value_error)?)))
}
