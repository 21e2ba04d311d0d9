//! `kapprox._native`: the Rust half of the `kapprox` Python package.
//!
//! The Python layer (`python/kapprox/*.py`) holds the scikit-learn
//! conventions (parameters, validation, fitted attributes); this module
//! holds what must be fast or must be kapprox's own code:
//!
//! - [`map::PyFeatureMap`]: a fitted kapprox feature map (`kapprox-features`),
//!   built from the same [`kapprox_features::MapSpec`] the CLI builds, so
//!   the same seed and inputs give the same map; transforms numpy arrays in
//!   parallel row blocks with the GIL released; pickles as its spec and
//!   learned tensors.
//! - [`statistics::PyStatistics`]: mergeable ridge statistics
//!   ([`kapprox_core::Moments`]) per bandwidth candidate and split part,
//!   selection of σ and α from them (`kapprox-solve`) and the final solve.
//! - [`prepare`]: what a fit learns from the data before its statistics:
//!   column scaling (`kapprox-io`'s `ColumnStats`/`Scaler`), the bandwidth
//!   rule's row sample and Nyström landmarks (`kapprox-sketch`'s reservoir).
//!
//! - [`engine`]: the engine library (`kapprox`): fits streamed from Parquet
//!   exactly as `kapprox fit` streams them, model files (`Model`), numpy
//!   and Parquet predictions.
//! - [`parts`]: the engine's fit as passes whose part states (the bytes of
//!   `.kpart` files) are computed anywhere, merged in shard order and
//!   advanced (`FitJob`, `run_part`, `merge_parts`).
//!
//! Errors become `ValueError` with the library's message.

// The module docs map this extension's private modules for its maintainers
// (no Rust user links against it), so links to private items are intended.
#![allow(rustdoc::private_intra_doc_links)]

mod blocks;
mod engine;
mod map;
mod parts;
mod prepare;
mod statistics;

use pyo3::prelude::*;

/// A `ValueError` carrying a library error's message.
pub(crate) fn value_error(err: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(err.to_string())
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<map::PyFeatureMap>()?;
    m.add_class::<statistics::PyStatistics>()?;
    m.add_class::<engine::PyModel>()?;
    m.add_class::<parts::PyFitJob>()?;
    m.add_function(wrap_pyfunction!(engine::fit_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(parts::run_part, m)?)?;
    m.add_function(wrap_pyfunction!(parts::merge_parts, m)?)?;
    m.add_function(wrap_pyfunction!(parts::part_info, m)?)?;
    m.add_function(wrap_pyfunction!(map::independent_map, m)?)?;
    m.add_function(wrap_pyfunction!(map::nystrom_map, m)?)?;
    m.add_function(wrap_pyfunction!(map::tefm_map, m)?)?;
    m.add_function(wrap_pyfunction!(map::eof_map, m)?)?;
    m.add_function(wrap_pyfunction!(prepare::fit_scaler, m)?)?;
    m.add_function(wrap_pyfunction!(prepare::median_distance, m)?)?;
    m.add_function(wrap_pyfunction!(statistics::split_parts, m)?)?;
    m.add("DEFAULT_REL_TOL", kapprox_features::nystrom::DEFAULT_REL_TOL)?;
    m.add("DEFAULT_GRIDS", kapprox_features::binning::DEFAULT_GRIDS)?;
    Ok(())
}
