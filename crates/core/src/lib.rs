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
//! - [`fastmath`]: vectorised `sin`/`cos` over slices.
//! - [`sparse`]: fixed-nnz sparse rows, the output of sparse feature maps.
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

pub mod dense;
pub mod fastmath;
pub mod fwht;
pub mod moments;
pub mod rng;
pub mod sparse;

pub use faer::Par;
pub use moments::{CenteredMoments, Moments};
pub use rng::Domain;
pub use sparse::{SparseRows, SparseRowsView};
