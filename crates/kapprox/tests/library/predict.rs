//! Predictions and features streamed in chunks against the map and the
//! weights applied to all rows at once.

use crate::util::{Fixture, rel_diff};
use kapprox::features::{Kernel, MapKind, MapParams};
use kapprox::featurize::{FeatureSource, FeaturizeConfig, featurize};
use kapprox::io::{ColumnStats, Dataset, Scaler, ScalerKind, read_column, read_columns};
use kapprox::predict::{EvalMetrics, evaluate, predict_to_dir};
use kapprox::{FitConfig, KernelFamily, MethodSpec, Model, ReadConfig, SigmaSpec, Silent, fit};
use ndarray::{Array2, Axis, concatenate};
use std::path::Path;

/// Column `name` of every shard of the directory `dir`, in shard order.
fn column(dir: &Path, name: &str) -> ndarray::Array1<f64> {
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let parts: Vec<_> = files.iter().map(|p| read_column(p, name).unwrap()).collect();
    concatenate(Axis(0), &parts.iter().map(|p| p.view()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn predictions_are_the_map_and_weights_applied_to_scaled_rows() {
    let f = Fixture::new();
    let method = MethodSpec::independent(MapKind::Orf, KernelFamily::Gaussian, 64);
    let cfg = FitConfig { sigmas: vec![SigmaSpec::Auto(1.0)], ..FitConfig::new(f.data(), method) };
    let (model, _) = fit(&cfg, &Silent).unwrap();
    // Chunks of 64 rows: 200-row shards end mid-chunk.
    let r = predict_to_dir(&model, &f.data(), &f.path("pred"), 64, Default::default(), &Silent).unwrap();
    assert_eq!((r.rows, r.files), (600, 3));
    let streamed = column(&f.path("pred"), "prediction");

    let mut x = read_columns(f.data(), &model.doc.feature_columns).unwrap();
    model.doc.scaler.apply_in_place(x.view_mut());
    let direct = model.map.transform(x.view()).dot(&model.coef).column(0).to_owned() + model.intercept[0];
    assert!(rel_diff(streamed.view(), direct.view()) < 1e-12, "{}", rel_diff(streamed.view(), direct.view()));

    let y = read_column(f.data(), "label").unwrap();
    let rmse = ((&direct - &y).mapv(|e| e * e).sum() / y.len() as f64).sqrt();
    let EvalMetrics::Regression(m) = evaluate(&model, &f.data(), 100, Default::default(), &Silent).unwrap() else {
        panic!("a regression")
    };
    assert!((m.rmse - rmse).abs() < 1e-9 * rmse, "{} vs {rmse}", m.rmse);
}

#[test]
fn featurize_writes_the_features_of_its_method() {
    let f = Fixture::new();
    let source = FeatureSource::Method {
        method: MethodSpec::independent(MapKind::Rff, KernelFamily::Gaussian, 16),
        sigma: SigmaSpec::Value(2.0),
        scale: ScalerKind::Standard,
        seed: 3,
    };
    let read = ReadConfig { chunk_rows: 128, ..ReadConfig::default() };
    let save_map = Some(f.path("map.safetensors"));
    let cfg = FeaturizeConfig {
        data: f.data(),
        out: f.path("feat"),
        source,
        read,
        f32: false,
        save_map,
        output: Default::default(),
    };
    let r = featurize(&cfg, &Silent).unwrap();
    assert_eq!((r.rows, r.files, r.n_features), (600, 3, 16));

    // The same map applied to all rows, scaled by statistics computed here.
    let columns: Vec<String> = (1..=4).map(|j| format!("x{j}")).collect();
    let mut x = read_columns(f.data(), &columns).unwrap();
    let mut stats = ColumnStats::new(columns.clone());
    stats.update(x.view());
    Scaler::fit(ScalerKind::Standard, &stats).apply_in_place(x.view_mut());
    let map = MapParams::new(MapKind::Rff, Kernel::Gaussian { sigma: 2.0 }, 4, 16).with_seed(3).check().unwrap();
    let want = map.build(&Default::default()).unwrap().transform(x.view());
    let got: Vec<_> = (0..16).map(|j| column(&f.path("feat"), &format!("z{j}"))).collect();
    let got = Array2::from_shape_fn((600, 16), |(i, j)| got[j][i]);
    let err = (&got - &want).iter().fold(0f64, |m, v| m.max(v.abs()));
    assert!(err < 1e-9, "{err}");
    // The label travels with the features, never into them.
    assert_eq!(column(&f.path("feat"), "label"), read_column(f.data(), "label").unwrap());
    assert_eq!(Dataset::open(f.path("feat")).unwrap().n_rows(), 600);

    // The saved map (scaling statistics, σ, spec) gives the same features
    // on its own, and is no model to predict with.
    let reuse = FeaturizeConfig {
        out: f.path("again"),
        source: FeatureSource::Model(f.path("map.safetensors")),
        save_map: None,
        ..cfg.clone()
    };
    featurize(&reuse, &Silent).unwrap();
    for j in 0..16 {
        assert_eq!(column(&f.path("again"), &format!("z{j}")), column(&f.path("feat"), &format!("z{j}")));
    }
    let map_file = Model::load(&f.path("map.safetensors")).unwrap();
    assert!(map_file.is_map_only() && map_file.check_has_weights().is_err());
}

/// Maps learned from data need a model: refused before any data is read
/// (here there is none), naming the map; TEFM used to write its base map's
/// `4l` columns instead.
#[test]
fn featurize_refuses_maps_learned_from_data() {
    let f = Fixture::new();
    for name in ["tefm-g", "nystrom", "eof"] {
        let method: MethodSpec = name.parse().unwrap();
        let source =
            FeatureSource::Method { method, sigma: SigmaSpec::Auto(1.0), scale: ScalerKind::Standard, seed: 0 };
        let out = f.path(name);
        let cfg = FeaturizeConfig {
            data: f.path("missing"),
            out: out.clone(),
            source,
            read: ReadConfig::default(),
            f32: false,
            save_map: None,
            output: Default::default(),
        };
        let e = featurize(&cfg, &Silent).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("--map {name}: this map is learned from data; fit a model first and run featurize --model MODEL")
        );
        assert!(!out.exists());
    }
}
