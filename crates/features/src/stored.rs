//! The realised random parameters of the maps regenerated from a seed, as
//! tensors: what [`crate::FeatureMap::random_parameters`] writes and what
//! the maps' `restore` constructors read back, so that a model file can
//! carry its frequencies, phases, diagonals and permutations and be
//! evaluated without kapprox's random streams (FORMAT.md, "Maps").
//!
//! Every tensor is 2-D (the model file's `map.*` convention); a vector is
//! stored as one row `(1, n)`. Stored parameters are checked for shape and
//! value (finite numbers, ±1 signs, permutations) and then used as they
//! are: they are the map the model was trained with.

use crate::error::{FeatureError, Result};
use crate::spec::Tensors;
use ndarray::Array2;

/// Frequencies `W (d, l_f)` of a dense Fourier map (RFF, ORF, QMC, Comp's inner RFF).
pub(crate) const FREQUENCIES: &str = "frequencies";
/// Phases `b (1, l)` of the phase form.
pub(crate) const PHASES: &str = "phases";
/// Comp's projection `(m, l)`.
pub(crate) const PROJECTION: &str = "projection";
/// SORF's sign diagonals `(3·blocks, D)`, three rows per block in the order they apply.
pub(crate) const SIGNS: &str = "signs";
/// Fastfood's sign diagonal `B (blocks, D)`.
pub(crate) const SIGN: &str = "sign";
/// Fastfood's permutation `Π (blocks, D)` (integers in `0..D`).
pub(crate) const PERMUTATION: &str = "permutation";
/// Fastfood's Gaussian diagonal `G (blocks, D)`.
pub(crate) const GAUSS: &str = "gauss";
/// The final per-frequency scale of SORF and Fastfood, `(1, l_f)`.
pub(crate) const SCALE: &str = "scale";

/// A vector as a one-row tensor.
pub(crate) fn row(v: &[f64]) -> Array2<f64> {
    Array2::from_shape_vec((1, v.len()), v.to_vec()).expect("one row of v.len() entries")
}

/// Tensor `name` of shape `shape`, every entry finite.
///
/// # Errors
/// Missing, mis-shaped, or holding a NaN or infinity (each named).
pub(crate) fn get<'a>(
    tensors: &'a Tensors,
    map: &'static str,
    name: &str,
    shape: (usize, usize),
) -> Result<&'a Array2<f64>> {
    let t = tensors.get(name).ok_or_else(|| FeatureError::MissingTensor { name: name.to_string(), map })?;
    if t.dim() != shape {
        return Err(FeatureError::TensorShape {
            name: name.to_string(),
            found: t.shape().to_vec(),
            expected: vec![shape.0, shape.1],
        });
    }
    if let Some(((r, c), v)) = t.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(invalid(name, format!("entry [{r}, {c}] is {v}, expected a finite number")));
    }
    Ok(t)
}

/// The stored phases of the phase form (none for pairs).
pub(crate) fn phases(tensors: &Tensors, map: &'static str, n_components: usize, phase_form: bool) -> Result<Vec<f64>> {
    if !phase_form {
        return Ok(Vec::new());
    }
    Ok(get(tensors, map, PHASES, (1, n_components))?.row(0).to_vec())
}

/// Checks that every entry of tensor `name` is ±1.
pub(crate) fn check_signs(name: &str, t: &Array2<f64>) -> Result<()> {
    match t.indexed_iter().find(|(_, v)| v.abs() != 1.0) {
        Some(((r, c), v)) => Err(invalid(name, format!("entry [{r}, {c}] is {v}, expected +1 or -1"))),
        None => Ok(()),
    }
}

/// The rows of tensor `name` as permutations of `0..t.ncols()`.
///
/// # Errors
/// A row that is not a permutation of `0..D` (named by row).
pub(crate) fn permutations(name: &str, t: &Array2<f64>) -> Result<Vec<Vec<u32>>> {
    let d = t.ncols();
    t.rows()
        .into_iter()
        .enumerate()
        .map(|(r, row)| {
            let mut seen = vec![false; d];
            row.iter()
                .map(|&v| {
                    let ok = v >= 0.0 && v < d as f64 && v.fract() == 0.0 && !seen[v as usize];
                    if !ok {
                        return Err(invalid(name, format!("row {r} is not a permutation of 0..{d} (entry {v})")));
                    }
                    seen[v as usize] = true;
                    Ok(v as u32)
                })
                .collect()
        })
        .collect()
}

fn invalid(name: &str, detail: String) -> FeatureError {
    FeatureError::InvalidTensor { name: name.to_string(), detail }
}

#[cfg(test)]
mod tests {
    use crate::error::FeatureError;
    use crate::kernel::Kernel;
    use crate::map::FeatureMap;
    use crate::spec::{Form, MapSpec, Tensors};
    use ndarray::Array2;

    fn specs() -> Vec<MapSpec> {
        let g = Kernel::Gaussian { sigma: 1.3 };
        let m = Kernel::Matern { nu: 1.5, sigma: 0.9 };
        let l = Kernel::Laplacian { sigma: 2.0 };
        let c = Kernel::Cauchy { sigma: 1.1 };
        // d = 5 pads to D = 8; 42 features in pairs leave a last block of 5 frequencies.
        vec![
            MapSpec::rff(g, Form::Pairs, 5, 42, 1),
            MapSpec::rff(l, Form::Phase, 5, 21, 2),
            MapSpec::rff(c, Form::Pairs, 5, 10, 3),
            MapSpec::Orf { kernel: m, form: Form::Phase, n_input: 5, n_components: 19, seed: 4 },
            MapSpec::Qmc { kernel: c, form: Form::Pairs, n_input: 5, n_components: 42, seed: 5 },
            MapSpec::Sorf { kernel: g, form: Form::Pairs, n_input: 5, n_components: 42, seed: 6 },
            MapSpec::Sorf { kernel: m, form: Form::Phase, n_input: 5, n_components: 13, seed: 7 },
            MapSpec::Fastfood { kernel: g, form: Form::Pairs, n_input: 5, n_components: 42, seed: 8 },
            MapSpec::Fastfood { kernel: m, form: Form::Phase, n_input: 5, n_components: 11, seed: 9 },
            MapSpec::Comp { kernel: g, form: Form::Pairs, n_input: 5, n_components: 7, n_inner: 12, seed: 10 },
        ]
    }

    fn rows() -> Array2<f64> {
        Array2::from_shape_fn((9, 5), |(i, j)| ((i * 5 + j) as f64 * 0.37).sin() * 2.0)
    }

    #[test]
    fn a_map_rebuilt_from_its_stored_parameters_is_the_map_its_seed_draws() {
        for spec in specs() {
            let map = spec.build(&Tensors::new()).unwrap();
            let t = map.random_parameters();
            assert!(!t.is_empty(), "{spec:?}");
            let back = spec.build(&t).unwrap();
            assert_eq!(back.random_parameters(), t, "{spec:?}");
            assert_eq!(back.transform(rows().view()), map.transform(rows().view()), "{spec:?}: bitwise");
        }
        // TEFM stores its base map's parameters under `base.`.
        let base = MapSpec::rff(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 5, 8, 11);
        let q = Array2::from_shape_fn((8, 3), |(i, j)| if i == j { 1.0 } else { 0.0 });
        let tefm = crate::tefm::Tefm::new(base.build(&Tensors::new()).unwrap(), q).unwrap();
        let t = tefm.random_parameters();
        assert_eq!(t.keys().collect::<Vec<_>>(), ["base.frequencies"]);
    }

    #[test]
    fn stored_parameters_are_used_instead_of_the_seed() {
        // With W = 0 every pairs feature is √(2/l)·(cos 0, sin 0), whatever the seed would draw.
        let spec = MapSpec::rff(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 5, 6, 1);
        let t = Tensors::from([(super::FREQUENCIES.to_string(), Array2::zeros((5, 3)))]);
        let z = spec.build(&t).unwrap().transform(rows().view());
        let c = (2.0f64 / 6.0).sqrt();
        assert!(z.rows().into_iter().all(|r| r.to_vec() == [c, c, c, 0.0, 0.0, 0.0]), "{z}");
    }

    #[test]
    fn damaged_stored_parameters_are_refused_with_the_tensor_named() {
        let spec = &specs()[7]; // Fastfood, pairs, 42 features: 3 blocks of D = 8.
        let good = spec.build(&Tensors::new()).unwrap().random_parameters();
        let with = |name: &str, f: &dyn Fn(&mut Array2<f64>)| {
            let mut t = good.clone();
            f(t.get_mut(name).unwrap());
            spec.build(&t).unwrap_err()
        };
        let e = with("permutation", &|p| p[[1, 2]] = p[[1, 3]]);
        assert!(matches!(&e, FeatureError::InvalidTensor { name, .. } if name == "permutation"), "{e}");
        assert!(e.to_string().contains("row 1 is not a permutation of 0..8"), "{e}");
        let e = with("sign", &|s| s[[0, 0]] = 0.5);
        assert!(e.to_string().contains("expected +1 or -1"), "{e}");
        let e = with("gauss", &|g| g[[2, 7]] = f64::NAN);
        assert!(e.to_string().contains("tensor \"gauss\": entry [2, 7] is NaN"), "{e}");
        let mut t = good.clone();
        t.remove("scale");
        let e = spec.build(&t).unwrap_err();
        assert!(matches!(&e, FeatureError::MissingTensor { name, .. } if name == "scale"), "{e}");
        let rff = MapSpec::rff(Kernel::Gaussian { sigma: 1.0 }, Form::Phase, 5, 6, 1);
        let t = Tensors::from([(super::FREQUENCIES.to_string(), Array2::zeros((5, 6)))]);
        let e = rff.build(&t).unwrap_err();
        assert!(matches!(&e, FeatureError::MissingTensor { name, .. } if name == "phases"), "{e}");
        let t = Tensors::from([
            (super::FREQUENCIES.to_string(), Array2::zeros((6, 5))),
            (super::PHASES.to_string(), Array2::zeros((1, 6))),
        ]);
        assert!(matches!(rff.build(&t).unwrap_err(), FeatureError::TensorShape { .. }));
    }
}
