//! Explicit kernel feature maps: `x ↦ z(x)` with `z(x)ᵀz(y) ≈ k(x, y)`.
//!
//! # Overview
//!
//! - [`FeatureMap`]: the object-safe trait every map implements; transforms
//!   a chunk of rows into a caller-provided buffer.
//! - [`MapSpec`]: the serialisable description of a map (kind, parameters,
//!   seed; never the random matrix). [`MapSpec::build`] regenerates the map.
//! - [`Kernel`]: exact kernels with their conventions, for tests, metrics
//!   and the exact baseline.
//! - [`rff`]: random Fourier features.
//!
//! This crate does no I/O and never prints.
//!
//! # Example
//!
//! ```
//! use kapprox_features::{FeatureMap, Form, Kernel, MapSpec};
//! use ndarray::array;
//!
//! let spec = MapSpec::rff(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 2, 1000, 42);
//! let map = spec.build(&Default::default())?;
//! let x = array![[0.0, 0.0], [0.5, 0.5]];
//! let z = map.transform(x.view());
//! let approx = z.row(0).dot(&z.row(1));
//! let exact = Kernel::Gaussian { sigma: 1.0 }.eval(x.row(0), x.row(1));
//! assert!((approx - exact).abs() < 0.1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod kernel;
mod map;
pub mod nystrom;
pub mod rff;
mod spec;
pub mod tefm;

pub use error::{FeatureError, Result};
pub use kernel::Kernel;
pub use map::{FeatureMap, OutputKind};
pub use spec::{Form, MapSpec, Tensors};
