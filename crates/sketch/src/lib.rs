//! Mergeable streaming sketches over row blocks: range sketches `FᵀΘ` with
//! `Θ` addressed by global row id, power-iteration products, range finders
//! and layout-independent reservoir samples.
//!
//! # Overview
//!
//! The crate takes dense rows (`ArrayView2<f64>`, shape `(n_rows, d)`) and
//! their global row ids; it knows nothing of feature maps. Every
//! accumulator has `update`, `merge` and `finish`, and serialises its
//! partial state (serde), so a pass can be split across threads, shards and
//! processes and reduced in any grouping.
//!
//! - Range sketches `FᵀΘ (d, l)` for a random `Θ (n, l)` that is never
//!   stored (row `i` of `Θ` is regenerated from `(seed, i)`), behind the
//!   [`RangeSketch`] trait: [`GaussianSketch`] (blocked GEMM),
//!   [`SrhtSketch`] (block subsampled randomised Hadamard transform over
//!   fixed row blocks aligned to row ids) and [`CountSketch`] (one signed
//!   bucket per row). [`Sketch`] chooses the kind at run time.
//! - [`ProductAccumulator`]: `Fᵀ(F Q)` for a fixed `Q`, the data pass of a
//!   power iteration.
//! - [`range_finder`] (with `FᵀF` in memory) and [`PowerIteration`] (one
//!   pass per multiplication): an orthonormal basis `Q (d, l)` of the
//!   dominant range of `(FᵀF)^q Y₀`, as in randomised SVD (Halko,
//!   Martinsson & Tropp 2011) and TEFM (paper 000, Algorithms 1–2), for a
//!   start `Y₀ = FᵀΘ` (a row sketch) or `Y₀ = (FᵀF)Ω` for a [`test_matrix`]
//!   `Ω (d, l)` of the columns ([`gram_range_finder`]: no sketch of the
//!   rows at all, the range follows from the Gram).
//! - [`Reservoir`]: the `k` rows with the smallest hashed priority, e.g.
//!   Nyström landmarks or the sample behind `--sigma auto`.
//!
//! Gram matrices `FᵀF` and ridge moments are accumulated by
//! [`kapprox_core::Moments`], not here.
//!
//! # Determinism
//!
//! All randomness is addressed: `rng::stream(seed, Domain::SKETCH_*, i)` or
//! `rng::hash64`, keyed by the global row id (or the SRHT block id). With
//! the same seed, rows and ids, a sketch is bitwise identical whatever the
//! chunk sizes; split across accumulators and merged, it is equal to
//! rounding.
//!
//! This crate does no I/O and never prints.
//!
//! # Example
//!
//! ```
//! use kapprox_sketch::{GaussianSketch, RangeSketch, range_finder};
//! use ndarray::Array2;
//!
//! // Rows of rank 2 in 6 columns.
//! let f = Array2::from_shape_fn((1000, 6), |(i, j)| {
//!     let t = i as f64 * 0.01;
//!     t.sin() * (j as f64 + 1.0) + t.cos() * (j % 2) as f64
//! });
//! // Two workers sketch halves of the rows; merge; orthonormalise.
//! let mut a = GaussianSketch::new(6, 2, 42)?;
//! let mut b = GaussianSketch::new(6, 2, 42)?;
//! a.update(f.slice(ndarray::s![..600, ..]), 0)?;
//! b.update(f.slice(ndarray::s![600.., ..]), 600)?;
//! a.merge(&b)?;
//! let sketch = a.finish();
//! let gram = f.t().dot(&f);
//! let q = range_finder(gram.view(), sketch.view(), 1)?;
//! // Q spans the row space of F: F − F Q Qᵀ vanishes.
//! let resid = &f - &f.dot(&q).dot(&q.t());
//! assert!(resid.iter().all(|v| v.abs() < 1e-9));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod count;
mod error;
mod gaussian;
mod ids;
mod kind;
mod product;
mod range;
mod range_sketch;
mod reservoir;
mod sketch;
mod srht;

pub use count::CountSketch;
pub use error::{Result, SketchError};
pub use gaussian::{BLOCK_ROWS, GaussianSketch};
pub use product::ProductAccumulator;
pub use range::{
    PowerIteration, SPARSE_SIGN_NONZEROS, gram_range_finder, gram_range_finder_packed, range_finder,
    range_finder_start, sparse_sign_matrix, test_matrix,
};
pub use reservoir::Reservoir;
pub use sketch::{RangeSketch, Sketch, SketchKind};
pub use srht::{SRHT_MIN_BLOCK_ROWS, SrhtSketch, default_srht_block_rows};

#[cfg(test)]
mod testutil;
