//! From a [`MapSpec`] back to a map: the one place that knows every map.
//!
//! The registry sits above the maps (each map only knows the description
//! it returns from [`FeatureMap::spec`]), so a map defined in another crate
//! is one more entry here rather than a change to this crate: it returns a
//! [`MapSpec::Custom`] and its builder is registered under that name.

use crate::binning::RandomBinning;
use crate::comp::Comp;
use crate::error::{FeatureError, Result};
use crate::exact::KernelColumns;
use crate::fastfood::Fastfood;
use crate::map::FeatureMap;
use crate::nystrom::Nystrom;
use crate::orf::Orf;
use crate::qmc::Qmc;
use crate::rff::Rff;
use crate::sorf::Sorf;
use crate::spec::{MapSpec, Tensors};
use crate::tefm::Tefm;
use std::collections::BTreeMap;

/// Rebuilds a map of another crate from the `params` of its
/// [`MapSpec::Custom`] and its learned tensors.
pub type CustomBuilder = fn(params: &serde_json::Value, tensors: &Tensors) -> Result<Box<dyn FeatureMap>>;

/// Builds maps from their specs: every map of this crate, plus the maps of
/// other crates registered by name.
///
/// ```
/// use kapprox_features::{FeatureError, FeatureMap, MapSpec, Registry, Tensors};
/// use ndarray::{ArrayView2, ArrayViewMut2};
///
/// /// Another crate's map: the identity.
/// #[derive(Debug)]
/// struct Identity(usize);
///
/// impl FeatureMap for Identity {
///     fn n_input(&self) -> usize { self.0 }
///     fn n_output(&self) -> usize { self.0 }
///     fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) { out.assign(&x) }
///     fn spec(&self) -> MapSpec {
///         MapSpec::Custom { name: "identity".into(), n_input: self.0, n_output: self.0, params: serde_json::Value::Null }
///     }
/// }
///
/// fn identity(_: &serde_json::Value, _: &Tensors) -> Result<Box<dyn FeatureMap>, FeatureError> {
///     Ok(Box::new(Identity(3)))
/// }
///
/// let spec = Identity(3).spec();
/// assert!(spec.build(&Tensors::new()).is_err()); // not a map of this crate
/// let map = Registry::new().with("identity", identity).build(&spec, &Tensors::new())?;
/// assert_eq!(map.n_output(), 3);
/// # Ok::<(), FeatureError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    custom: BTreeMap<String, CustomBuilder>,
}

impl Registry {
    /// The maps of this crate only.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers the builder of [`MapSpec::Custom`] specs named `name`
    /// (replacing an earlier one of the same name).
    pub fn with(mut self, name: &str, builder: CustomBuilder) -> Self {
        self.custom.insert(name.to_string(), builder);
        self
    }

    /// Builds the map of `spec`. `tensors` holds the learned parts of maps
    /// learned from data and, when stored, the realised random parameters
    /// of the others ([`FeatureMap::random_parameters`]), which are then
    /// used instead of the seed; without them those maps are regenerated
    /// from their seed.
    ///
    /// # Errors
    /// Invalid parameters (see each map's constructor), counts past the
    /// limits of [`MapSpec::validate`], missing or mis-shaped tensors, or a
    /// custom map with no registered builder.
    pub fn build(&self, spec: &MapSpec, tensors: &Tensors) -> Result<Box<dyn FeatureMap>> {
        spec.check_counts()?;
        Ok(match *spec {
            MapSpec::Nystrom(ref p) => Box::new(Nystrom::from_tensors(p, tensors)?),
            MapSpec::Tefm { ref base, params } => {
                let base_tensors: Tensors = tensors
                    .iter()
                    .filter_map(|(k, v)| k.strip_prefix("base.").map(|b| (b.to_string(), v.clone())))
                    .collect();
                Box::new(Tefm::from_tensors(self.build(base, &base_tensors)?, params, tensors)?)
            }
            MapSpec::Eof(ref e) => Box::new(e.build()?),
            MapSpec::KernelColumns { kernel, n_input, n_points } => {
                Box::new(KernelColumns::from_tensors(kernel, n_input, n_points, tensors)?)
            }
            MapSpec::Custom { ref name, ref params, .. } => match self.custom.get(name) {
                Some(build) => build(params, tensors)?,
                None => return Err(FeatureError::UnregisteredMap { name: name.clone() }),
            },
            MapSpec::Rff { kernel, form, n_input, n_components, seed } => {
                Box::new(Rff::restore(kernel, form, n_input, n_components, seed, tensors)?)
            }
            MapSpec::Orf { kernel, form, n_input, n_components, seed } => {
                Box::new(Orf::restore(kernel, form, n_input, n_components, seed, tensors)?)
            }
            MapSpec::Sorf { kernel, form, n_input, n_components, seed } => {
                Box::new(Sorf::restore(kernel, form, n_input, n_components, seed, tensors)?)
            }
            MapSpec::Qmc { kernel, form, n_input, n_components, seed } => {
                Box::new(Qmc::restore(kernel, form, n_input, n_components, seed, tensors)?)
            }
            MapSpec::Fastfood { kernel, form, n_input, n_components, seed } => {
                Box::new(Fastfood::restore(kernel, form, n_input, n_components, seed, tensors)?)
            }
            MapSpec::Binning { kernel, n_input, n_components, n_grids, seed } => {
                Box::new(RandomBinning::new(kernel, n_input, n_components, n_grids, seed)?)
            }
            MapSpec::Comp { kernel, form, n_input, n_components, n_inner, seed } => {
                Box::new(Comp::restore(kernel, form, n_input, n_components, n_inner, seed, tensors)?)
            }
        })
    }
}

impl MapSpec {
    /// Builds a map of this crate ([`Registry::new`]); maps of other crates
    /// need their builder registered in a [`Registry`].
    ///
    /// # Errors
    /// As [`Registry::build`].
    pub fn build(&self, tensors: &Tensors) -> Result<Box<dyn FeatureMap>> {
        Registry::new().build(self, tensors)
    }

    /// Output dimension (for EOF, of the map its spec builds; 0 when that
    /// spec is invalid).
    pub fn n_output(&self) -> usize {
        match *self {
            MapSpec::Nystrom(ref p) => p.n_components,
            MapSpec::Tefm { ref params, .. } => params.n_components,
            MapSpec::Eof(ref e) => e.build().map_or(0, |m| m.n_output()),
            MapSpec::KernelColumns { n_points, .. } => n_points,
            MapSpec::Custom { n_output, .. } => n_output,
            MapSpec::Rff { n_components, .. }
            | MapSpec::Orf { n_components, .. }
            | MapSpec::Sorf { n_components, .. }
            | MapSpec::Qmc { n_components, .. }
            | MapSpec::Fastfood { n_components, .. }
            | MapSpec::Binning { n_components, .. }
            | MapSpec::Comp { n_components, .. } => n_components,
        }
    }
}
