//! What a map will cost before it is built: its parameter memory from the
//! spec alone, and the counts that cannot be meaningful.
//!
//! Both are checked before anything is allocated, so a flag such as
//! `--features 1e9` or a damaged model file is refused with a message
//! instead of an allocation failure.

use crate::error::{FeatureError, Result};
use crate::spec::{Form, MAX_COMPONENTS, MAX_GRIDS, MAX_INPUT, MapSpec};

fn at_most(name: &'static str, value: usize, max: usize, expected: &'static str) -> Result<()> {
    if value > max {
        return Err(FeatureError::InvalidParameter { name, value: value.to_string(), expected });
    }
    Ok(())
}

impl MapSpec {
    /// The memory of the map's parameters in bytes, from the spec alone
    /// (before building), as each map documents it: frequency matrices
    /// (with their single-precision copy), diagonals, grids, projections,
    /// and the learned tensors of data-dependent maps. Saturates at
    /// `u64::MAX`; an EOF spec that cannot be built counts as `u64::MAX`,
    /// and a map of another crate as 0 (its crate knows its cost).
    pub fn parameter_bytes(&self) -> u64 {
        let d = self.n_input() as u64;
        let l = self.n_output() as u64;
        let mul = |a: u64, b: u64| a.saturating_mul(b);
        let freq = |form: Form, l: u64| if form == Form::Pairs { l / 2 } else { l };
        // w (d, m) in f64 plus its f32 copy, and the phases.
        let dense = |form: Form, l: u64| mul(mul(12, d), freq(form, l)).saturating_add(mul(8, l));
        // Four length-D vectors per block of D frequencies, f64 and f32.
        let structured = |form: Form| {
            let d_pad = d.max(1).checked_next_power_of_two().unwrap_or(u64::MAX);
            mul(48, mul(freq(form, l).div_ceil(d_pad).max(1), d_pad))
        };
        match *self {
            MapSpec::Rff { form, .. } | MapSpec::Orf { form, .. } | MapSpec::Qmc { form, .. } => dense(form, l),
            MapSpec::Sorf { form, .. } | MapSpec::Fastfood { form, .. } => structured(form),
            MapSpec::Binning { n_grids, .. } => mul(mul(16, n_grids as u64), d).saturating_add(mul(8, n_grids as u64)),
            MapSpec::Comp { form, n_inner, .. } => {
                dense(form, n_inner as u64).saturating_add(mul(mul(8, n_inner as u64), l))
            }
            MapSpec::Nystrom(ref p) => mul(mul(8, p.n_landmarks as u64), d.saturating_add(l)),
            MapSpec::Tefm { ref base, ref params } => {
                base.parameter_bytes().saturating_add(mul(mul(8, base.n_output() as u64), params.n_components as u64))
            }
            MapSpec::Eof(ref e) => e.parameter_bytes().unwrap_or(u64::MAX),
            MapSpec::KernelColumns { n_points, .. } => mul(mul(8, n_points as u64), d.saturating_add(1)),
            MapSpec::Custom { .. } => 0,
        }
    }

    /// Refuses a map whose [`parameter_bytes`](Self::parameter_bytes)
    /// exceed `budget_bytes`, before anything is allocated.
    ///
    /// # Errors
    /// [`FeatureError::TooLarge`].
    pub fn check_memory(&self, budget_bytes: u64) -> Result<()> {
        let needed = self.parameter_bytes();
        if needed > budget_bytes {
            return Err(FeatureError::TooLarge { map: self.name().to_string(), needed, budget: budget_bytes });
        }
        Ok(())
    }

    /// Refuses counts that cannot be meaningful ([`MAX_COMPONENTS`],
    /// [`MAX_INPUT`], [`MAX_GRIDS`], TEFM's power iterations), for every map,
    /// learned ones included: a damaged model file must not make the loader
    /// allocate terabytes.
    pub(crate) fn check_counts(&self) -> Result<()> {
        const FEATURES: &str = "at most 2^24 = 16777216 features";
        at_most("n_input", self.n_input(), MAX_INPUT, "at most 2^24 = 16777216 input columns")?;
        match *self {
            // Buckets of a hash, checked against u32 in `validate`.
            MapSpec::Binning { n_grids, .. } => {
                at_most("grids", n_grids, MAX_GRIDS, "at most 2^16 = 65536 grids (each row stores one entry per grid)")
            }
            MapSpec::Comp { n_components, n_inner, .. } => {
                at_most("features", n_components, MAX_COMPONENTS, FEATURES)?;
                at_most("inner", n_inner, MAX_COMPONENTS, "at most 2^24 = 16777216 inner features")
            }
            MapSpec::Nystrom(ref p) => {
                at_most("landmarks", p.n_landmarks, MAX_COMPONENTS, "at most 2^24 = 16777216 landmarks")?;
                at_most("features", p.n_components, p.n_landmarks, "at most the number of landmarks")
            }
            MapSpec::Tefm { ref base, ref params } => {
                base.check_counts()?;
                params.check(base.n_output())
            }
            MapSpec::Eof(_) => Ok(()),
            MapSpec::KernelColumns { n_points, .. } => {
                at_most("points", n_points, MAX_COMPONENTS, "at most 2^24 = 16777216 kernel columns")
            }
            MapSpec::Custom { n_output, .. } => at_most("features", n_output, MAX_COMPONENTS, FEATURES),
            MapSpec::Rff { n_components, .. }
            | MapSpec::Orf { n_components, .. }
            | MapSpec::Sorf { n_components, .. }
            | MapSpec::Qmc { n_components, .. }
            | MapSpec::Fastfood { n_components, .. } => at_most("features", n_components, MAX_COMPONENTS, FEATURES),
        }
    }
}
