//! Properties every data-independent map must have: specs round-trip,
//! randomness is addressed, f32 agrees with f64, any output layout works,
//! unsupported combinations are refused, and the structured maps have the
//! distributions their papers claim.

use kapprox_core::SparseRows;
use kapprox_features::{
    Fastfood, FeatureError, FeatureMap, Form, Kernel, MapKind, MapParams, MapSpec, Orf, OutputKind, Qmc, RandomBinning,
    Rff, Sorf,
};
use ndarray::{Array2, ShapeBuilder, s};

fn x(n: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |(i, j)| (((i * 37 + j * 11) % 29) as f64 / 29.0 - 0.5) * 0.8)
}

fn kernel_for(kind: MapKind) -> Kernel {
    match kind {
        MapKind::Binning => Kernel::Laplacian { sigma: 1.5 },
        MapKind::Orf | MapKind::Sorf | MapKind::Fastfood => Kernel::Matern { nu: 1.5, sigma: 1.5 },
        _ => Kernel::Cauchy { sigma: 1.5 },
    }
}

fn all_specs(d: usize, l: usize) -> Vec<MapSpec> {
    let mut v = Vec::new();
    for kind in MapKind::ALL {
        let base = MapParams::new(kind, kernel_for(kind), d, l).with_seed(5);
        if kind == MapKind::Binning {
            v.push(base.with_grids(16).check().unwrap());
        } else {
            v.push(base.clone().check().unwrap());
            v.push(base.with_form(Form::Phase).check().unwrap());
        }
    }
    v
}

#[test]
fn specs_round_trip_through_json_and_rebuild_the_same_map() {
    let data = x(7, 13);
    for spec in all_specs(13, 64) {
        let json = serde_json::to_string(&spec).unwrap();
        assert!(json.len() < 300, "the spec holds parameters, not matrices: {json}");
        let back: MapSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
        let (a, b) = (spec.build(&Default::default()).unwrap(), back.build(&Default::default()).unwrap());
        assert_eq!(a.spec(), spec);
        assert_eq!((a.n_input(), a.n_output()), (spec.n_input(), spec.n_output()));
        assert_eq!(a.transform(data.view()), b.transform(data.view()), "{json}");
        spec.validate().unwrap();
    }
}

#[test]
fn the_map_depends_on_the_seed() {
    let data = x(3, 5);
    let a = Rff::new(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 5, 32, 1).unwrap();
    let b = Rff::new(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 5, 32, 2).unwrap();
    assert_ne!(a.transform(data.view()), b.transform(data.view()));
}

#[test]
fn frequencies_are_addressed_so_a_longer_map_extends_a_shorter_one() {
    let k = Kernel::Gaussian { sigma: 0.7 };
    let (d, small, big) = (6, 40, 100);
    let pairs = |a: Array2<f64>, b: Array2<f64>| {
        assert_eq!(a, b.slice(s![.., ..a.ncols()]).to_owned());
    };
    pairs(
        Rff::new(k, Form::Pairs, d, small, 3).unwrap().frequencies(),
        Rff::new(k, Form::Pairs, d, big, 3).unwrap().frequencies(),
    );
    pairs(
        Orf::new(k, Form::Pairs, d, small, 3).unwrap().frequencies(),
        Orf::new(k, Form::Pairs, d, big, 3).unwrap().frequencies(),
    );
    pairs(
        Qmc::new(k, Form::Pairs, d, small, 3).unwrap().frequencies(),
        Qmc::new(k, Form::Pairs, d, big, 3).unwrap().frequencies(),
    );
    pairs(
        Sorf::new(k, Form::Pairs, d, small, 3).unwrap().frequencies(),
        Sorf::new(k, Form::Pairs, d, big, 3).unwrap().frequencies(),
    );
    pairs(
        Fastfood::new(k, Form::Pairs, d, small, 3).unwrap().frequencies(),
        Fastfood::new(k, Form::Pairs, d, big, 3).unwrap().frequencies(),
    );
}

#[test]
fn structured_maps_agree_with_their_frequency_matrix() {
    // z(x) = √(2/l)·[cos(xW), sin(xW)] with W from `frequencies()`: the
    // Hadamard pipeline computes the same projections as the dense matrix.
    let k = Kernel::Gaussian { sigma: 1.1 };
    let data = x(9, 11);
    let l = 80;
    let check = |z: Array2<f64>, w: Array2<f64>| {
        let p = data.dot(&w);
        let scale = (2.0 / l as f64).sqrt();
        for i in 0..data.nrows() {
            for j in 0..l / 2 {
                assert!((z[[i, j]] - scale * p[[i, j]].cos()).abs() < 1e-12);
                assert!((z[[i, l / 2 + j]] - scale * p[[i, j]].sin()).abs() < 1e-12);
            }
        }
    };
    let f = Fastfood::new(k, Form::Pairs, 11, l, 9).unwrap();
    check(f.transform(data.view()), f.frequencies());
    let so = Sorf::new(k, Form::Pairs, 11, l, 9).unwrap();
    check(so.transform(data.view()), so.frequencies());
}

#[test]
fn f32_agrees_with_f64() {
    let data = x(33, 10);
    let data32 = data.mapv(|v| v as f32);
    for spec in all_specs(10, 96) {
        let map = spec.build(&Default::default()).unwrap();
        if map.output_kind() != OutputKind::Dense {
            continue;
        }
        let z = map.transform(data.view());
        let mut z32 = Array2::<f32>::zeros(z.raw_dim());
        map.transform_into_f32(data32.view(), z32.view_mut());
        // Features are O(√(2/l)); single precision of inputs and
        // frequencies moves the phase by ~1e-6 relative.
        let err = z.iter().zip(z32.iter()).map(|(a, &b)| (a - b as f64).abs()).fold(0.0, f64::max);
        assert!(err < 2e-5, "{spec:?}: f32 error {err}");
    }
}

#[test]
fn any_output_layout_gives_the_same_rows() {
    let data = x(300, 9);
    for spec in all_specs(9, 40) {
        let map = spec.build(&Default::default()).unwrap();
        let want = map.transform(data.view());
        // Column-major output.
        let mut f = Array2::zeros((300, 40).f());
        map.transform_into(data.view(), f.view_mut());
        assert_eq!(f, want, "{spec:?}");
        // A column window of a wider matrix, and a non-contiguous input.
        let mut wide = Array2::zeros((300, 50));
        map.transform_into(data.view(), wide.slice_mut(s![.., 5..45]));
        assert_eq!(wide.slice(s![.., 5..45]), want, "{spec:?}");
        let xt = data.t().to_owned();
        assert_eq!(map.transform(xt.t()), want, "{spec:?}");
    }
}

#[test]
fn binning_sparse_rows_match_its_dense_rows() {
    let data = x(50, 7);
    let map = RandomBinning::new(Kernel::Laplacian { sigma: 0.5 }, 7, 64, 32, 11).unwrap();
    assert_eq!(map.output_kind(), OutputKind::Sparse { nnz_per_row: 32 });
    let sparse: SparseRows = map.transform_sparse(data.view());
    assert!(sparse.indices.iter().all(|&i| i < 64));
    let v = 1.0 / 32f64.sqrt();
    assert!(sparse.values.iter().all(|&a| (a.abs() - v).abs() < 1e-15));
    let dense = map.transform(data.view());
    let diff = (&sparse.to_dense() - &dense).iter().fold(0.0f64, |m, a| m.max(a.abs()));
    assert!(diff < 1e-14);
    // A point shares every bin with itself: z(x)ᵀz(x) counts each grid once,
    // plus signed collisions.
    let self_sim: f64 = dense.row(0).dot(&dense.row(0));
    assert!(self_sim > 0.0);
}

#[test]
fn unsupported_combinations_are_refused_with_structured_errors() {
    let g = Kernel::Gaussian { sigma: 1.0 };
    let c = Kernel::Cauchy { sigma: 1.0 };
    let l = Kernel::Laplacian { sigma: 1.0 };
    let err = |p: MapParams| p.check().unwrap_err();
    assert_eq!(
        err(MapParams::new(MapKind::Binning, g, 3, 100)),
        FeatureError::UnsupportedKernel { map: "binning", kernel: "gaussian", supported: "laplacian" }
    );
    assert_eq!(
        err(MapParams::new(MapKind::Fastfood, c, 3, 100)),
        FeatureError::UnsupportedKernel { map: "fastfood", kernel: "cauchy", supported: "gaussian and matern" }
    );
    assert!(matches!(err(MapParams::new(MapKind::Orf, l, 3, 100)), FeatureError::UnsupportedKernel { map: "orf", .. }));
    assert!(matches!(
        err(MapParams::new(MapKind::Sorf, c, 3, 100)),
        FeatureError::UnsupportedKernel { map: "sorf", .. }
    ));
    assert_eq!(
        err(MapParams::new(MapKind::Binning, l, 3, 100).with_form(Form::Phase)),
        FeatureError::UnsupportedOption { map: "binning", option: "form" }
    );
    assert_eq!(
        err(MapParams::new(MapKind::Rff, g, 3, 100).with_grids(4)),
        FeatureError::UnsupportedOption { map: "rff", option: "grids" }
    );
    assert_eq!(
        err(MapParams::new(MapKind::Fastfood, g, 3, 100).with_inner(400)),
        FeatureError::UnsupportedOption { map: "fastfood", option: "inner" }
    );
    assert!(matches!(
        err(MapParams::new(MapKind::Rff, g, 3, 101)),
        FeatureError::InvalidParameter { name: "features", .. }
    ));
    assert!(MapParams::new(MapKind::Rff, g, 3, 101).with_form(Form::Phase).check().is_ok());
    assert!(matches!(
        err(MapParams::new(MapKind::Rff, g, 0, 100)),
        FeatureError::InvalidParameter { name: "n_input", .. }
    ));
    assert!(matches!(
        err(MapParams::new(MapKind::Comp, g, 3, 100).with_inner(7)),
        FeatureError::InvalidParameter { name: "inner", .. }
    ));
    assert_eq!(
        err(MapParams::new(MapKind::Rff, Kernel::Gaussian { sigma: -1.0 }, 3, 100)),
        FeatureError::InvalidBandwidth { value: -1.0 }
    );
    assert_eq!("poly".parse::<MapKind>(), Err(FeatureError::UnknownMap { name: "poly".into() }));
    // The constructors refuse the same things as the checks.
    assert!(matches!(Fastfood::new(c, Form::Pairs, 3, 10, 0), Err(FeatureError::UnsupportedKernel { .. })));
    assert!(matches!(RandomBinning::new(g, 3, 10, 4, 0), Err(FeatureError::UnsupportedKernel { .. })));
    // Messages are lower-case and name what was expected.
    let msg = err(MapParams::new(MapKind::Binning, g, 3, 100)).to_string();
    assert_eq!(msg, "the binning map does not support the gaussian kernel: it supports laplacian");
}

#[test]
fn names_parse_with_their_aliases() {
    for (name, kind) in [
        ("rff", MapKind::Rff),
        ("rff-gaussian", MapKind::Rff),
        ("orf", MapKind::Orf),
        ("sorf", MapKind::Sorf),
        ("qmc", MapKind::Qmc),
        ("quasi", MapKind::Qmc),
        ("fastfood", MapKind::Fastfood),
        ("binning", MapKind::Binning),
        ("comp", MapKind::Comp),
    ] {
        assert_eq!(name.parse::<MapKind>().unwrap(), kind);
    }
    for kind in MapKind::ALL {
        assert_eq!(kind.to_string().parse::<MapKind>().unwrap(), kind);
    }
    assert_eq!("phase".parse::<Form>().unwrap(), Form::Phase);
    assert_eq!("pairs".parse::<Form>().unwrap(), Form::Pairs);
}

#[test]
fn fastfood_memory_is_linear_in_l_and_dense_memory_is_not() {
    let k = Kernel::Gaussian { sigma: 1.0 };
    let (d, l) = (4096, 16384);
    let ff = Fastfood::new(k, Form::Pairs, d, l, 1).unwrap();
    let so = Sorf::new(k, Form::Pairs, d, l, 1).unwrap();
    // Four length-D vectors per block (f64 and f32 copies): ≤ 40 bytes per
    // frequency, whatever d.
    assert!(ff.parameter_bytes() <= 40 * l / 2, "{}", ff.parameter_bytes());
    assert!(so.parameter_bytes() <= 60 * l / 2, "{}", so.parameter_bytes());
    let small = Rff::new(k, Form::Pairs, 64, 1000, 1).unwrap();
    assert_eq!(small.parameter_bytes(), 64 * 500 * 8);
}

/// Fastfood rows are N(0, σ⁻² I) vectors in distribution (paper 003 §4.3):
/// their squared lengths are exactly σ⁻²·χ²(D) (by the choice of S), their
/// coordinates are Gaussian with variance σ⁻², rows of different blocks are
/// uncorrelated like independent Gaussian vectors (E cos² = 1/d), and rows
/// of one block are more correlated, E cos² = 2/d: the inner product of
/// rows i and k of H G Π H B is d·Σ_j H_ij H_kj g_j², whose variance is
/// d²·Σ Var(g_j²) = 2d³, over squared lengths d²‖G‖⁴ ≈ d⁴.
#[test]
fn fastfood_rows_have_the_moments_of_a_gaussian() {
    let (d, blocks, sigma) = (64, 64, 0.5);
    let l_f = d * blocks;
    let ff = Fastfood::new(Kernel::Gaussian { sigma }, Form::Pairs, d, 2 * l_f, 17).unwrap();
    let w = ff.frequencies() * sigma; // (d, l_f), standardised
    let norms2: Vec<f64> = w.columns().into_iter().map(|c| c.dot(&c)).collect();
    let mean = norms2.iter().sum::<f64>() / l_f as f64;
    let var = norms2.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (l_f - 1) as f64;
    // χ²(64): mean 64 (sd of the mean sqrt(128/4096) = 0.18), variance 128.
    assert!((mean - 64.0).abs() < 1.0, "mean squared length {mean}");
    assert!((var / 128.0 - 1.0).abs() < 0.15, "variance of squared lengths {var}");
    // Coordinates: variance 1 and Gaussian kurtosis 3.
    let n = w.len() as f64;
    let m2 = w.iter().map(|v| v * v).sum::<f64>() / n;
    let m4 = w.iter().map(|v| v.powi(4)).sum::<f64>() / n;
    assert!((m2 - 1.0).abs() < 0.03, "coordinate variance {m2}");
    assert!((m4 / (m2 * m2) - 3.0).abs() < 0.2, "kurtosis {}", m4 / (m2 * m2));
    let cos2 = |a: usize, b: usize| {
        let (u, v) = (w.column(a), w.column(b));
        let c = u.dot(&v) / (u.dot(&u) * v.dot(&v)).sqrt();
        c * c
    };
    let across: Vec<f64> = (0..l_f - d).map(|i| cos2(i, i + d)).collect();
    let within: Vec<f64> = (0..l_f).filter(|i| i % d != d - 1).map(|i| cos2(i, i + 1)).collect();
    let across = across.iter().sum::<f64>() / across.len() as f64 * d as f64;
    let within = within.iter().sum::<f64>() / within.len() as f64 * d as f64;
    // i.i.d. rows: d·E cos² = d/(d) = 1 (sd of the mean ≈ 0.02).
    assert!((across - 1.0).abs() < 0.1, "across blocks d·E cos² = {across}");
    assert!((within - 2.0).abs() < 0.3, "within a block d·E cos² = {within}");
}

#[test]
fn fastfood_pads_to_a_power_of_two_and_keeps_gaussian_lengths() {
    // d = 50 inside D = 64: the rows restricted to the input coordinates are
    // still N(0, σ⁻² I_50), so their squared lengths have mean 50.
    let (d, sigma) = (50, 2.0);
    let ff = Fastfood::new(Kernel::Gaussian { sigma }, Form::Phase, d, 4096, 23).unwrap();
    assert_eq!(ff.padded_input(), 64);
    let w = ff.frequencies() * sigma;
    let mean = w.columns().into_iter().map(|c| c.dot(&c)).sum::<f64>() / 4096.0;
    // sd of the mean ≈ sqrt(100/4096) = 0.16, plus within-block dependence.
    assert!((mean - 50.0).abs() < 1.0, "{mean}");
}

#[test]
fn orf_rows_are_exactly_orthogonal_within_a_block() {
    let d = 24;
    let sigma = 0.8;
    let orf = Orf::new(Kernel::Gaussian { sigma }, Form::Phase, d, 5 * d, 4).unwrap();
    let w = orf.frequencies();
    let gram = w.t().dot(&w);
    let mut max_in = 0.0f64;
    let mut mean_across = 0.0;
    let mut count = 0;
    for i in 0..5 * d {
        for j in 0..i {
            let c = gram[[i, j]] / (gram[[i, i]] * gram[[j, j]]).sqrt();
            if i / d == j / d {
                max_in = max_in.max(c.abs());
            } else {
                mean_across += c * c;
                count += 1;
            }
        }
    }
    assert!(max_in < 1e-12, "within-block cosine {max_in}");
    // Different blocks are independent: E cos² = 1/d.
    let across = mean_across / count as f64 * d as f64;
    assert!((across - 1.0).abs() < 0.15, "{across}");
    // Lengths are σ⁻¹·χ(d): mean squared length d/σ².
    let mean_len2 = (0..5 * d).map(|i| gram[[i, i]]).sum::<f64>() / (5 * d) as f64 * sigma * sigma;
    assert!((mean_len2 / d as f64 - 1.0).abs() < 0.15, "{mean_len2}");
}

#[test]
fn sorf_rows_are_exactly_orthogonal_within_a_block() {
    let d = 32;
    let sorf = Sorf::new(Kernel::Gaussian { sigma: 1.0 }, Form::Phase, d, 3 * d, 8).unwrap();
    let w = sorf.frequencies();
    let gram = w.t().dot(&w);
    for i in 0..3 * d {
        for j in 0..i {
            if i / d == j / d {
                let c = gram[[i, j]] / (gram[[i, i]] * gram[[j, j]]).sqrt();
                assert!(c.abs() < 1e-12, "rows {i}, {j}: {c}");
            }
        }
    }
}

/// Maps learned from data rebuild from their spec (through JSON, as in a
/// model file) plus their tensors, and transform exactly as before.
#[test]
fn data_dependent_specs_round_trip_through_json_and_tensors() {
    use kapprox_features::eof::{EofKernel, EofSpec};
    use kapprox_features::nystrom::Nystrom;
    use kapprox_features::tefm::{Tefm, TefmKind, TefmParams};
    use kapprox_features::{FeatureMap, KernelColumns, MapSpec};
    let x = ndarray::Array2::from_shape_fn((40, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
    let landmarks = x.slice(ndarray::s![0..12, ..]).to_owned();
    let nystrom = Nystrom::fit(Kernel::Laplacian { sigma: 0.8 }, landmarks.clone(), 1e-10).unwrap();
    let q = kapprox_core::dense::qr_thin_q(
        ndarray::Array2::from_shape_fn((nystrom.n_output(), 4), |(i, j)| ((i + 2 * j) % 5) as f64 - 2.0).view(),
    );
    let tefm =
        Tefm::new(Box::new(nystrom.clone()), q).unwrap().with_params(TefmParams::new(TefmKind::Srht, 4, 9)).unwrap();
    let eof = EofSpec::level(EofKernel::Laplace, 1.5, 3, 3).build().unwrap();
    let columns = KernelColumns::new(Kernel::Gaussian { sigma: 0.5 }, landmarks).unwrap();
    let maps: Vec<Box<dyn FeatureMap>> = vec![Box::new(nystrom), Box::new(tefm), Box::new(eof), Box::new(columns)];
    for m in maps {
        let json = serde_json::to_string(&m.spec()).unwrap();
        let spec: MapSpec = serde_json::from_str(&json).unwrap();
        let back = spec.build(&m.tensors()).unwrap();
        assert_eq!(back.n_output(), m.n_output(), "{json}");
        assert_eq!(back.transform(x.view()), m.transform(x.view()), "{json}");
        // Without its tensors a learned map is refused, not silently wrong.
        if !m.tensors().is_empty() {
            assert!(spec.build(&Default::default()).is_err(), "{json}");
        }
    }
}

/// Counts that cannot be meaningful are refused by `check` (and by `build`,
/// for specs read from a damaged model file) before anything is allocated,
/// naming the option.
#[test]
fn absurd_counts_are_refused_before_allocating() {
    let gauss = Kernel::Gaussian { sigma: 1.0 };
    let refused = |p: MapParams, name: &str| match p.check() {
        Err(FeatureError::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
        other => panic!("{name}: {other:?}"),
    };
    refused(MapParams::new(MapKind::Rff, gauss, 10, 1 << 40), "features");
    refused(MapParams::new(MapKind::Fastfood, gauss, 10, (1 << 24) + 2), "features");
    refused(MapParams::new(MapKind::Rff, gauss, 1 << 30, 100), "n_input");
    refused(
        MapParams::new(MapKind::Binning, Kernel::Laplacian { sigma: 1.0 }, 10, 100).with_grids(1_000_000_000),
        "grids",
    );
    refused(MapParams::new(MapKind::Comp, gauss, 10, 100).with_inner(1_000_000_000), "inner");
    let msg = MapParams::new(MapKind::Rff, gauss, 10, 1 << 40).check().unwrap_err().to_string();
    assert_eq!(msg, "invalid features 1099511627776: expected at most 2^24 = 16777216 features");
    // A spec as a damaged model file could hold it: build refuses it too.
    let spec = MapSpec::rff(gauss, Form::Pairs, 10, 1 << 40, 0);
    assert!(matches!(spec.build(&Default::default()), Err(FeatureError::InvalidParameter { name: "features", .. })));
    let tefm = MapSpec::Tefm {
        base: Box::new(MapSpec::rff(gauss, Form::Pairs, 10, 64, 0)),
        params: kapprox_features::tefm::TefmParams::new(kapprox_features::tefm::TefmKind::Gaussian, 8, 0)
            .with_power_iterations(1_000_000),
    };
    assert!(matches!(tefm.build(&Default::default()), Err(FeatureError::InvalidParameter { name: "power", .. })));
    // The limits themselves are allowed.
    MapParams::new(MapKind::Fastfood, gauss, 10, 1 << 24).check().unwrap();
}

/// `parameter_bytes` is known from the spec, before building, and agrees
/// with what a built map holds; `check_memory` refuses a map past a budget.
#[test]
fn parameter_memory_is_known_before_building() {
    let gauss = Kernel::Gaussian { sigma: 1.0 };
    // Dense frequencies: d × l/2 doubles plus their f32 copy.
    let rff = MapSpec::rff(gauss, Form::Pairs, 100, 1000, 0);
    assert_eq!(rff.parameter_bytes(), 100 * 500 * 12 + 8 * 1000);
    let structured = MapParams::new(MapKind::Fastfood, gauss, 100, 1000).check().unwrap();
    assert!(structured.parameter_bytes() < rff.parameter_bytes() / 10, "Fastfood stores O(l), not O(d·l)");
    // 100,000 features over 10,000 columns: ~6 GB of frequencies.
    let big = MapSpec::rff(gauss, Form::Pairs, 10_000, 100_000, 0);
    assert!(big.parameter_bytes() > 5 << 30);
    let err = big.check_memory(1 << 30).unwrap_err();
    assert!(matches!(err, FeatureError::TooLarge { ref map, .. } if map == "rff"), "{err}");
    assert!(err.to_string().contains("would need about 5.6 GiB, more than the memory budget of 1.0 GiB"), "{err}");
    rff.check_memory(1 << 30).unwrap();
    // A learned map: the tensors it holds once fitted.
    let landmarks = x(40, 6);
    let nystrom = kapprox_features::nystrom::Nystrom::fit(gauss, landmarks, 1e-12).unwrap();
    let held: usize = nystrom.tensors().values().map(|t| t.len() * 8).sum();
    assert_eq!(nystrom.spec().parameter_bytes(), held as u64);
}
