//! Predictions and features streamed in chunks against the map and the
//! weights applied to all rows at once.

use crate::util::{Fixture, rel_diff};
use kapprox::features::{Kernel, MapKind, MapParams};
use kapprox::featurize::{FeatureSource, FeaturizeConfig, featurize};
use kapprox::io::{
    ColumnStats, ConvertOptions, Dataset, LabelSpec, NanPolicy, Scaler, ScalerKind, convert, read_column, read_columns,
};
use kapprox::predict::{EvalMetrics, PredictOutput, evaluate, predict_to_dir, predict_to_dir_with};
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

/// Every path under `dir`, relative, sorted (files and directories).
fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            if e.path().is_dir() {
                walk(root, &e.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// `rows` rows of `x1..x4` and `label` as CSV, the row `nan_row` (if any)
/// with a NaN input, converted into `out` (NaN kept).
fn csv_shard(f: &Fixture, out: &Path, offset: usize, rows: usize, nan_row: Option<usize>) {
    let mut csv = String::from("x1,x2,x3,x4,label\n");
    for i in offset..offset + rows {
        let t = i as f64 * 0.01;
        let x1 = if nan_row == Some(i - offset) { "NaN".to_string() } else { format!("{}", t.sin()) };
        csv.push_str(&format!("{x1},{},{},{},{}\n", t.cos(), (2.0 * t).sin(), t - 1.0, (3.0 * t).sin()));
    }
    let src = f.path(&format!("rows-{offset}.csv"));
    std::fs::write(&src, csv).unwrap();
    let opts = ConvertOptions::new().with_nan_policy(NanPolicy::Keep).with_label(LabelSpec::Last);
    convert(&src, out, &opts, &mut |_| {}).unwrap();
}

/// The output directory of `predict_to_dir` is staged: refused when it is
/// or lies inside the data, or exists without `overwrite` (then replaced
/// whole), and a run that fails part-way (a NaN in the last shard of a Hive
/// layout, a model with a NaN weight) leaves nothing at all: no shard, no
/// `key=value/` directory, no staging area.
#[test]
fn predictions_are_staged_whole_and_apart_from_the_data() {
    let f = Fixture::new();
    let method = MethodSpec::independent(MapKind::Rff, KernelFamily::Gaussian, 32);
    let cfg = FitConfig { sigmas: vec![SigmaSpec::Value(2.0)], ..FitConfig::new(f.data(), method) };
    let (model, _) = fit(&cfg, &Silent).unwrap();
    let (data, pred) = (f.data(), f.path("pred"));
    let err = |out: &Path, model: &Model, data: &Path| {
        format!("{:#}", predict_to_dir(model, data, out, 64, None, &Silent).expect_err("refused"))
    };

    let before = listing(&data);
    for out in [data.clone(), data.join("pred")] {
        let e = err(&out, &model, &data);
        assert!(e.contains("destroy the input"), "{e}");
        assert_eq!(listing(&data), before, "{}", out.display());
    }

    std::fs::create_dir_all(&pred).unwrap();
    std::fs::write(pred.join("old.txt"), "x").unwrap();
    let e = err(&pred, &model, &data);
    assert!(e.contains("--overwrite"), "{e}");
    assert_eq!(listing(&pred), ["old.txt"]);
    let over = PredictOutput { overwrite: true, ..PredictOutput::default() };
    let r = predict_to_dir_with(&model, &data, &pred, 64, None, &over, &Silent).unwrap();
    assert_eq!(r.files, 3);
    assert_eq!(listing(&pred), ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]);

    // A model fitted on a Hive layout's first shard; its last shard holds a NaN.
    let hive = f.path("hive");
    csv_shard(&f, &hive.join("k=a"), 0, 300, None);
    csv_shard(&f, &hive.join("k=b"), 300, 300, None);
    csv_shard(&f, &hive.join("k=c"), 600, 300, Some(250));
    let method = MethodSpec::independent(MapKind::Rff, KernelFamily::Gaussian, 16);
    let cfg = FitConfig { sigmas: vec![SigmaSpec::Value(1.0)], ..FitConfig::new(hive.join("k=a"), method) };
    let (hive_model, _) = fit(&cfg, &Silent).unwrap();
    let top = listing(f.path("").as_path());
    let e = err(&f.path("hive-pred"), &hive_model, &hive);
    assert!(e.contains("k=c"), "{e}");
    assert_eq!(listing(f.path("").as_path()), top, "a failed run leaves nothing behind");

    // A NaN weight: refused at the first row, naming the cause.
    hive_model.save(&f.path("m.safetensors")).unwrap();
    let top = listing(f.path("").as_path());
    let mut damaged = Model::load(&f.path("m.safetensors")).unwrap();
    damaged.coef[[3, 0]] = f64::NAN;
    let e = err(&f.path("nan-pred"), &damaged, &hive.join("k=a"));
    assert!(e.contains("prediction is NaN") && e.contains("damaged or degenerate"), "{e}");
    assert!(!f.path("nan-pred").exists());
    assert_eq!(listing(f.path("").as_path()), top);
}
