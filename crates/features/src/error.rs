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
}

/// Result alias of this crate.
pub type Result<T, E = FeatureError> = std::result::Result<T, E>;
