//! Model and part files: they round-trip, and files written by earlier
//! versions (the fixtures, written by kapprox at df6e2ee) still load.

use crate::util::{Fixture, fixture, rel_diff};
use kapprox::distributed::RunDoc;
use kapprox::distributed::files::read_part;
use kapprox::features::FeatureMap;
use kapprox::io::read_column;
use kapprox::predict::predict_to_dir;
use kapprox::{FitConfig, MethodParams, Model, SigmaSpec, Silent, StoreMap, fit};

#[test]
fn a_saved_model_loads_into_an_equal_model() {
    let f = Fixture::new();
    let cfg =
        FitConfig { sigmas: vec![SigmaSpec::Value(1.5)], ..FitConfig::new(f.data(), "fastfood".parse().unwrap()) };
    let (model, _) = fit(&cfg, &Silent).unwrap();
    let (a, b) = (f.path("a.safetensors"), f.path("b.safetensors"));
    model.save(&a).unwrap();
    let back = Model::load(&a).unwrap();
    assert_eq!((&back.doc, &back.coef, &back.intercept), (&model.doc, &model.coef, &model.intercept));
    back.save(&b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "saving a loaded model is bitwise the same");
}

/// Predictions of the model file `path` on `f`'s data.
fn predict(f: &Fixture, model: &Model, out: &str) -> ndarray::Array1<f64> {
    predict_to_dir(model, &f.data(), &f.path(out), 64, Default::default(), &Silent).unwrap();
    let shards: Vec<_> =
        (0..3).map(|i| read_column(f.path(out).join(format!("part-{i:05}.parquet")), "prediction").unwrap()).collect();
    ndarray::concatenate(ndarray::Axis(0), &shards.iter().map(|s| s.view()).collect::<Vec<_>>()).unwrap()
}

/// The fixtures were written by `kapprox fit --train DATA --out M --features
/// 32 --sigma 1.5` and `--map nystrom --features 40 --sigma auto` on the
/// same generated rows: they load, and today's fit of the same flags has the
/// same map and scaling and predicts the same.
#[test]
fn model_files_of_earlier_versions_load_and_predict_the_same() {
    let f = Fixture::new();
    let cases = [
        ("rff-df6e2ee.safetensors", "rff", 32, SigmaSpec::Value(1.5)),
        ("nystrom-df6e2ee.safetensors", "nystrom", 40, SigmaSpec::Auto(1.0)),
    ];
    for (file, map, l, sigma) in cases {
        let old = Model::load(&fixture(file)).unwrap_or_else(|e| panic!("{file}: {e:#}"));
        let method =
            MethodParams { map: map.into(), n_components: l, ..MethodParams::default() }.check(1, None).unwrap();
        let cfg = FitConfig { sigmas: vec![sigma], ..FitConfig::new(f.data(), method) };
        let (now, _) = fit(&cfg, &Silent).unwrap();
        assert_eq!(old.doc.map, now.doc.map, "{file}");
        assert_eq!((&old.doc.scaler, &old.doc.feature_columns), (&now.doc.scaler, &now.doc.feature_columns));
        let (a, b) = (predict(&f, &old, &format!("old-{map}")), predict(&f, &now, &format!("now-{map}")));
        assert!(rel_diff(a.view(), b.view()) < 1e-9, "{file}: {}", rel_diff(a.view(), b.view()));
    }
}

/// The fixture is part 1/2 (shard 0) of the first pass of `kapprox fit
/// --map tefm-g --features 8 --tefm-strategy multi-pass --part 1/2` at
/// df6e2ee: it reads back, and it belongs to today's run of those flags.
#[test]
fn part_files_of_earlier_versions_load_into_todays_run() {
    let f = Fixture::new();
    let (doc, state) = read_part(&fixture("tefm-prepare-1of2-df6e2ee.kpart")).unwrap();
    assert_eq!((doc.pass.name.as_str(), doc.shards.as_slice(), state.rows()), ("prepare", &[0][..], 200));
    let method = MethodParams {
        map: "tefm-g".into(),
        n_components: 8,
        tefm_strategy: "multi-pass".into(),
        ..MethodParams::default()
    }
    .check(1, None)
    .unwrap();
    let today = RunDoc { config: FitConfig::new(f.data(), method), base: doc.run.base.clone() };
    assert_eq!(today.difference(&doc.run), None);
    assert_eq!(doc.run.config.sigmas, FitConfig::new(f.data(), "rff".parse().unwrap()).sigmas);
}

/// The byte range of tensor `name` in safetensors `bytes`.
fn tensor_bytes(bytes: &[u8], name: &str) -> std::ops::Range<usize> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let off = &header[name]["data_offsets"];
    let (a, b) = (off[0].as_u64().unwrap() as usize, off[1].as_u64().unwrap() as usize);
    8 + n + a..8 + n + b
}

/// `--store-map`: the realised random parameters are stored (by default
/// for small maps), covered by the checksum, and give the seed's model.
#[test]
fn stored_random_parameters_load_into_the_seeds_model_and_are_checksummed() {
    let f = Fixture::new();
    for map in ["rff", "orf", "qmc", "sorf", "fastfood", "comp", "tefm-g"] {
        let method = MethodParams { map: map.into(), n_components: 24, ..MethodParams::default() }.check(1, None);
        let cfg = FitConfig { sigmas: vec![SigmaSpec::Value(1.5)], ..FitConfig::new(f.data(), method.unwrap()) };
        let (model, _) = fit(&cfg, &Silent).unwrap();
        let (stored, seed) = (f.path(&format!("{map}-stored")), f.path(&format!("{map}-seed")));
        model.save(&stored).unwrap();
        model.save_with(&seed, StoreMap::Never).unwrap();
        let (a, b) = (Model::load(&stored).unwrap(), Model::load(&seed).unwrap());
        let names: Vec<String> = a.map.random_parameters().into_keys().collect();
        assert!(!names.is_empty() && b.map.random_parameters() == a.map.random_parameters(), "{map}");
        assert_eq!(predict(&f, &a, &format!("{map}-a")), predict(&f, &b, &format!("{map}-b")), "{map}: bitwise");
        // One flipped bit in the stored frequencies (or diagonals) is caught by the checksum.
        let mut bytes = std::fs::read(&stored).unwrap();
        let range = tensor_bytes(&bytes, &format!("map.{}", names[0]));
        bytes[range.start + 3] ^= 0x10;
        std::fs::write(&stored, &bytes).unwrap();
        let e = format!("{:#}", Model::load(&stored).unwrap_err());
        assert!(e.contains("checksum mismatch"), "{map}: {e}");
    }
}

/// `StoreMap::Auto` stores at most 64 MiB of random parameters.
#[test]
fn auto_stores_random_parameters_up_to_64_mib() {
    use kapprox::features::{Form, Kernel, Rff};
    assert_eq!(kapprox::model::STORE_MAP_AUTO_BYTES, 64 << 20);
    let rff = |l| Rff::new(Kernel::Gaussian { sigma: 1.0 }, Form::Pairs, 1024, l, 1).unwrap();
    // 1024 · 8192 frequencies of 8 bytes: exactly 64 MiB; one more frequency is over.
    let (at, over) = (rff(16_384), rff(16_386));
    assert_eq!(StoreMap::Auto.tensors(&at)["frequencies"].dim(), (1024, 8192));
    assert!(StoreMap::Auto.tensors(&over).is_empty());
    assert_eq!(StoreMap::Always.tensors(&over).len(), over.random_parameters().len());
    assert!(StoreMap::Never.tensors(&at).is_empty());
}
