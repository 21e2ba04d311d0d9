use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Learned tensors of a data-dependent map, by name (stored in the model
/// file beside the spec).
pub type Tensors = BTreeMap<String, Array2<f64>>;

/// The two forms of random Fourier features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// `z = √(2/l)·[cos(Wx), sin(Wx)]` with `l/2` frequencies (lower variance).
    #[default]
    Pairs,
    /// `z = √(2/l)·cos(Wx + b)`, `b ~ U[0, 2π]`, with `l` frequencies.
    Phase,
}

/// A serialisable feature map description: kind, parameters and seed.
///
/// Holds everything needed to regenerate the map, never the random matrix.
/// Data-dependent maps also need their [`Tensors`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "map", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum MapSpec {
    /// Random Fourier features.
    Rff {
        /// The kernel approximated.
        kernel: Kernel,
        /// Pairs or phase.
        form: Form,
        /// Input dimension.
        n_input: usize,
        /// Output dimension `l`.
        n_components: usize,
        /// Seed of the frequencies.
        seed: u64,
    },
}

impl MapSpec {
    /// Random Fourier features for `kernel`.
    pub fn rff(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Self {
        MapSpec::Rff { kernel, form, n_input, n_components, seed }
    }

    /// Input dimension.
    pub fn n_input(&self) -> usize {
        match self {
            MapSpec::Rff { n_input, .. } => *n_input,
        }
    }

    /// Output dimension.
    pub fn n_output(&self) -> usize {
        match self {
            MapSpec::Rff { n_components, .. } => *n_components,
        }
    }

    /// Builds the map. `tensors` holds learned parts for data-dependent maps
    /// (ignored by data-independent ones).
    ///
    /// # Errors
    /// Invalid parameters, or missing / mis-shaped tensors.
    pub fn build(&self, tensors: &Tensors) -> Result<Box<dyn FeatureMap>> {
        let _ = tensors;
        match *self {
            MapSpec::Rff { kernel, form, n_input, n_components, seed } => {
                Ok(Box::new(crate::rff::Rff::new(kernel, form, n_input, n_components, seed)?))
            }
        }
    }
}

pub(crate) fn check_sigma(sigma: f64) -> Result<()> {
    if sigma.is_finite() && sigma > 0.0 { Ok(()) } else { Err(FeatureError::InvalidBandwidth { value: sigma }) }
}
