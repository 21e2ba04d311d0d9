//! Numerical primitives shared by the kapprox numerical crates.
//!
//! # Overview
//!
//! - [`rng`]: randomness addressed by `(seed, domain, index)`, so that any
//!   random quantity can be regenerated anywhere without streaming state.
//! - [`dense`]: zero-copy views from `ndarray` into `faer` and the dense
//!   kernels kapprox needs (Gram updates, GEMM, Cholesky, symmetric eigen,
//!   thin QR).
//! - [`moments`]: [`Moments`], the mergeable accumulator of ridge sufficient
//!   statistics with a row-blocked, layout-independent summation order.
//! - [`fwht`]: the in-place, batched fast Walsh–Hadamard transform.
//! - [`fastmath`]: vectorised `sin`/`cos`/`exp` over slices.
//! - [`distance`]: vectorised ℓ1 distances and Cauchy products from a row
//!   to many points.
//! - [`gram`]: the Gram products `AᵀA`/`AᵀB` of the statistics, on every
//!   core, bitwise independent of the thread count; [`cpu`]: run-time
//!   SIMD detection.
//! - [`sparse`]: fixed-nnz sparse rows, the output of sparse feature maps.
//! - [`cholesky`]: a blocked Cholesky factorisation whose flops run in the
//!   Gram kernel.
//! - [`buffer`]: large working buffers, written once and backed by huge
//!   pages where the system offers them.
//!
//! This crate does no I/O and never prints.
//!
//! # Example
//!
//! ```
//! use kapprox_core::Moments;
//! use ndarray::array;
//!
//! let z = array![[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]];
//! let y = array![[1.0], [2.0], [3.0]];
//! let mut m = Moments::new(2, 1);
//! m.update(z.view(), y.view());
//! m.flush();
//! assert_eq!(m.n_samples(), 3.0);
//! assert_eq!(m.zz()[[1, 1]], 5.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[macro_use]
mod multiversion;

pub mod buffer;
pub mod cholesky;
pub mod cpu;
pub mod dense;
pub mod distance;
pub mod fastmath;
pub mod fwht;
pub mod gram;
pub mod moments;
pub mod rng;
pub mod sparse;

pub use faer::Par;

/// How many tasks faer splits a dense kernel into.
///
/// faer divides the work of a product, a factorisation or an
/// eigendecomposition by the parallelism it is given, and the division
/// changes the rounding. Passing the number of rayon threads would make a
/// model depend on `--threads` and on how many processes share a machine;
/// a fixed split keeps it bitwise equal, while rayon still runs the tasks
/// on however many threads it has (8 tasks on 2 threads cost nothing
/// measurable at the sizes where faer parallelises at all).
pub const DENSE_SPLIT: usize = 8;

/// The parallelism of every dense kernel whose result feeds a model: a
/// fixed split of [`DENSE_SPLIT`] tasks. Also installed as faer's global
/// parallelism (for the decompositions that read it) on first use.
pub fn dense_par() -> Par {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    let par = Par::rayon(DENSE_SPLIT);
    INSTALLED.call_once(|| faer::set_global_parallelism(par));
    par
}
pub use moments::{AffineProjection, CenteredMoments, Moments};
pub use rng::Domain;
pub use sparse::{SparseRows, SparseRowsView};
