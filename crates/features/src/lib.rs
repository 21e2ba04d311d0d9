//! Explicit kernel feature maps: `x ↦ z(x)` with `z(x)ᵀz(y) ≈ k(x, y)`.
//!
//! # Overview
//!
//! - [`FeatureMap`]: the object-safe trait every map implements; transforms
//!   a chunk of rows into a caller-provided buffer (f64 or f32, dense or
//!   fixed-nnz sparse).
//! - [`MapSpec`]: the serialisable description of a map (kind, parameters,
//!   seed; never the random matrix). [`MapSpec::build`] regenerates the map.
//!   [`MapParams`] builds a spec from generic parameters (kind, kernel,
//!   form, sizes, seed, options) and refuses unsupported combinations;
//!   [`MapKind`] parses the names the CLI uses.
//! - [`Registry`]: turns specs back into maps — this crate's, and maps of
//!   other crates, which implement [`FeatureMap`], describe themselves as
//!   [`MapSpec::Custom`] and register a builder by name.
//! - [`Kernel`]: exact kernels with their conventions (Gaussian, Laplacian,
//!   Cauchy, Matérn with any ν), for tests, metrics and the exact baseline.
//!
//! # Data-independent maps
//!
//! `d` is the input dimension, `l` the output dimension, `l_f` the number
//! of frequencies (`l/2` in the pairs form, `l` in the phase form) and
//! `D` the input dimension padded to a power of two. Every map's random
//! parameters are a pure function of `(seed, map family, block)` through
//! [`kapprox_core::rng`].
//!
//! | name | type | kernels | forms | cost per row | parameter memory |
//! |---|---|---|---|---|---|
//! | `rff` | [`Rff`] | gaussian, laplacian, cauchy, matern | pairs, phase | `d·l_f` (GEMM) + `l` sin/cos | `d·l_f` doubles |
//! | `orf` | [`Orf`] | gaussian, matern | pairs, phase | `d·l_f` (GEMM) + `l` sin/cos | `d·l_f` doubles |
//! | `sorf` | [`Sorf`] | gaussian, matern | pairs, phase | `3 l_f log2 D` adds + `l` sin/cos | `O(l_f)` |
//! | `qmc` | [`Qmc`] | gaussian, laplacian, cauchy, matern | pairs, phase | `d·l_f` (GEMM) + `l` sin/cos | `d·l_f` doubles |
//! | `fastfood` | [`Fastfood`] | gaussian, matern | pairs, phase | `2 l_f log2 D` adds + `l` sin/cos | `O(l_f)` |
//! | `binning` | [`RandomBinning`] | laplacian | sparse, `P` nnz | `P·d` floors and hashes | `2·P·d` doubles |
//! | `comp` | [`Comp`] | gaussian, laplacian, cauchy, matern | pairs, phase (inner) | `d·m_f + m·l` (two GEMMs) + `m` sin/cos | `d·m_f + m·l` doubles |
//!
//! Each map reports its parameter memory through
//! [`FeatureMap::parameter_bytes`].
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

pub mod binning;
pub mod comp;
pub mod eof;
mod error;
pub mod exact;
pub mod fastfood;
mod fourier;
mod kernel;
mod kernel_block;
mod kind;
mod limits;
mod map;
pub mod nystrom;
pub mod orf;
mod params;
pub mod qmc;
mod registry;
pub mod rff;
mod sampling;
pub mod sorf;
mod spec;
mod special;
mod stored;
mod structured;
pub mod tefm;

pub use binning::RandomBinning;
pub use comp::Comp;
pub use error::{FeatureError, Result};
pub use exact::KernelColumns;
pub use fastfood::Fastfood;
pub use kernel::Kernel;
pub use kind::MapKind;
pub use map::{FeatureMap, OutputKind};
pub use orf::Orf;
pub use params::MapParams;
pub use qmc::Qmc;
pub use registry::{CustomBuilder, Registry};
pub use rff::Rff;
pub use sorf::Sorf;
pub use spec::{Form, MAX_COMPONENTS, MAX_GRIDS, MAX_INPUT, MAX_POWER_ITERATIONS, MapSpec, TensorViews, Tensors};
