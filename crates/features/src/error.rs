use thiserror::Error;

/// Errors from building or checking feature maps.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeatureError {
    /// A bandwidth / length scale must be finite and positive.
    #[error("invalid bandwidth {value}: expected a finite number > 0")]
    InvalidBandwidth {
        /// The offending value.
        value: f64,
    },
    /// A parameter is out of its range.
    #[error("invalid {name} {value}: expected {expected}")]
    InvalidParameter {
        /// Parameter name as the user spells it.
        name: &'static str,
        /// The offending value, formatted.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A kernel name that kapprox does not know.
    #[error("unknown kernel {name:?}: expected gaussian, laplacian, cauchy or matern")]
    UnknownKernel {
        /// The name given.
        name: String,
    },
    /// A feature map name that kapprox does not know.
    #[error("unknown feature map {name:?}: expected rff, orf, sorf, qmc, fastfood, binning or comp")]
    UnknownMap {
        /// The name given.
        name: String,
    },
    /// A map of another crate whose builder is not registered.
    #[error("no builder is registered for the map {name:?} (register it with Registry::with)")]
    UnregisteredMap {
        /// The map's registered name.
        name: String,
    },
    /// The map cannot approximate this kernel.
    #[error("the {map} map does not support the {kernel} kernel: it supports {supported}")]
    UnsupportedKernel {
        /// Map name.
        map: &'static str,
        /// Kernel name.
        kernel: &'static str,
        /// The kernels it supports.
        supported: &'static str,
    },
    /// An option was given to a map that does not take it.
    #[error("the {map} map takes no {option} option")]
    UnsupportedOption {
        /// Map name.
        map: &'static str,
        /// Option name as the user spells it.
        option: &'static str,
    },
    /// The map's parameters would not fit in the memory budget.
    #[error(
        "the {map} map's parameters would need about {:.1} GiB, more than the memory budget of {:.1} GiB; expected fewer features or input columns (or a larger --max-memory)",
        *needed as f64 / 1073741824.0,
        *budget as f64 / 1073741824.0
    )]
    TooLarge {
        /// Map name.
        map: String,
        /// Bytes the parameters need.
        needed: u64,
        /// The budget in bytes.
        budget: u64,
    },
    /// A tensor that a data-dependent map needs is missing from the model.
    #[error("missing tensor {name:?} for a {map} map")]
    MissingTensor {
        /// Tensor name.
        name: String,
        /// Map kind.
        map: &'static str,
    },
    /// A stored tensor has the wrong shape.
    #[error("tensor {name:?} has shape {found:?}, expected {expected:?}")]
    TensorShape {
        /// Tensor name.
        name: String,
        /// Shape found.
        found: Vec<usize>,
        /// Shape expected.
        expected: Vec<usize>,
    },
    /// A stored tensor holds a value the map cannot use (a NaN, a sign
    /// other than ±1, a row that is not a permutation).
    #[error("tensor {name:?}: {detail}")]
    InvalidTensor {
        /// Tensor name.
        name: String,
        /// What is wrong, and what was expected.
        detail: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = FeatureError> = std::result::Result<T, E>;
