//! The main paths work end to end and their reports hold together.

use crate::util::{columns, cpu_test, cpu_train, parts, repo_data};
use kapprox::io::{read_column, read_columns};
use serde_json::Value;

/// A number from a JSON report, with the report shown when it is missing.
#[track_caller]
fn num(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or_else(|| panic!("no number at {pointer} in {v}"))
}

// The headline number: the demo (2048 Gaussian random Fourier
// features + ridge, σ and α chosen on a validation split) beats RMSE 3.4 on
// the CPU test rows. It must clean up after itself, too.
kapprox_test!(demo_json_reports_test_rmse_below_3_4, |dir| {
    let data = repo_data("cpu_rks_train.tsv.gz");
    let data_dir = data.parent().unwrap().to_str().unwrap();
    let report = dir.cmd(&["demo", "--json", "--data", data_dir]).json();
    let rmse = num(&report, "/test/rmse");
    eprintln!("demo test RMSE {rmse:.4}");
    assert!(rmse < 3.4, "demo test RMSE {rmse} is not below 3.4: {report}");
    assert_eq!(num(&report, "/test/n_samples"), 819.0);
    assert_eq!(num(&report, "/fit/rows"), 6554.0);
    assert!(dir.listing().is_empty(), "demo left files in its working directory: {:?}", dir.listing());
});

// convert -> fit -> predict -> eval for regression. The test set is cut
// into 3 shards so that "one prediction file per input shard" is visible,
// and the metrics of `eval` are recomputed from the prediction files.
kapprox_test!(regression_round_trip, |dir| {
    let report =
        dir.cmd(&["convert", cpu_train().to_str().unwrap(), "--out", "train", "--label", "last", "--json"]).json();
    assert_eq!(num(&report, "/rows_written"), 6554.0);
    assert_eq!(report["label"], "target");
    dir.convert(&cpu_test(), "test", &["--rows-per-shard", "300"]);
    assert_eq!(parts(&dir.join("test")), ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]);

    let fit = dir
        .cmd(&["fit", "--train", "train", "--out", "m.safetensors", "--features", "256", "--sigma", "auto", "--json"])
        .json();
    assert_eq!(num(&fit, "/report/rows"), 6554.0);
    assert_eq!(num(&fit, "/report/skipped"), 0.0);
    assert!(num(&fit, "/report/sigma") > 0.0 && num(&fit, "/report/alpha") > 0.0, "{fit}");

    let out = dir.cmd(&["predict", "--model", "m.safetensors", "--data", "test", "--out", "pred"]).stdout();
    assert!(out.is_empty(), "predict prints its summary on stderr, not stdout: {out}");
    let pred = dir.join("pred");
    assert_eq!(parts(&pred), parts(&dir.join("test")), "one prediction file per input shard");
    let mut next_id = 0.0;
    for (name, rows) in parts(&pred).iter().zip([300, 300, 219]) {
        let file = pred.join(name);
        assert_eq!(columns(&file), ["row_id", "prediction", "target"], "{name}");
        let ids = read_column(&file, "row_id").unwrap();
        assert_eq!(ids.len(), rows, "{name}");
        // Global row ids continue across shards.
        for id in ids {
            assert_eq!(id, next_id, "{name}");
            next_id += 1.0;
        }
    }
    // The target column is the test label, in row order.
    let label = read_column(dir.join("test"), "target").unwrap();
    let pt = read_columns(&pred, &["prediction", "target"]).unwrap();
    assert_eq!(pt.column(1), label);

    let eval = dir.cmd(&["eval", "--model", "m.safetensors", "--data", "test", "--json"]).json();
    for key in ["n_samples", "rmse", "relative_rmse", "mae", "r2"] {
        assert!(eval[key].is_number(), "eval --json lacks {key}: {eval}");
    }
    assert_eq!(num(&eval, "/n_samples"), 819.0);
    let n = pt.nrows() as f64;
    let sse: f64 = pt.rows().into_iter().map(|r| (r[0] - r[1]).powi(2)).sum();
    let mae: f64 = pt.rows().into_iter().map(|r| (r[0] - r[1]).abs()).sum::<f64>() / n;
    let norm_y: f64 = pt.column(1).iter().map(|y| y * y).sum::<f64>().sqrt();
    let rmse = (sse / n).sqrt();
    assert!((num(&eval, "/rmse") - rmse).abs() <= 1e-9 * rmse, "eval {eval} vs predictions RMSE {rmse}");
    assert!((num(&eval, "/mae") - mae).abs() <= 1e-9 * mae, "eval {eval} vs predictions MAE {mae}");
    let rel = sse.sqrt() / norm_y;
    assert!((num(&eval, "/relative_rmse") - rel).abs() <= 1e-9 * rel, "eval {eval} vs relative RMSE {rel}");
    eprintln!("regression round trip: test RMSE {rmse:.4}, R² {:.4}", num(&eval, "/r2"));
    // A working model, not just a consistent one: the label's standard
    // deviation on these rows is about 21.
    assert!(rmse < 7.0 && num(&eval, "/r2") > 0.85, "{eval}");

    // The plain-text report goes to stdout and names the metrics.
    let text = dir.cmd(&["eval", "--model", "m.safetensors", "--data", "test"]).stdout();
    assert!(text.starts_with("rows 819  RMSE ") && text.contains("R²"), "{text}");
});

// generate --classes 3 -> split -> fit --task classification -> predict ->
// eval. Predictions are classes, equal to the argmax of the score columns,
// and the accuracy of `eval` is the one of the prediction files.
kapprox_test!(classification_round_trip, |dir| {
    dir.cmd(&["generate", "--out", "all", "--rows", "6000", "--features", "8", "--classes", "3", "--seed", "1"])
        .stdout();
    dir.cmd(&[
        "split",
        "all",
        "--train",
        "train",
        "--test",
        "test",
        "--test-fraction",
        "0.25",
        "--rows-per-shard",
        "600",
    ])
    .stdout();
    let n_train = kapprox::io::Dataset::open(dir.join("train")).unwrap().n_rows();
    let test = kapprox::io::Dataset::open(dir.join("test")).unwrap();
    let n_test = test.n_rows();
    assert_eq!(n_train + n_test, 6000);
    assert!((1200..1800).contains(&n_test), "test part of {n_test} rows for a fraction of 0.25");
    let shard_rows: Vec<u64> = test.shards().iter().map(|s| s.n_rows).collect();
    assert!(shard_rows.len() >= 2 && shard_rows[..shard_rows.len() - 1].iter().all(|&r| r == 600), "{shard_rows:?}");

    let fit = dir
        .cmd(&["fit", "--train", "train", "--out", "c.safetensors", "--task", "classification"])
        .args(&["--features", "256", "--sigma", "auto", "--json"])
        .json();
    assert_eq!(num(&fit, "/report/rows"), n_train as f64);
    let model = dir.model("c.safetensors");
    assert_eq!(model.doc.classes.as_deref(), Some(&[0.0, 1.0, 2.0][..]));
    assert_eq!(model.coef.ncols(), 3);

    dir.cmd(&["predict", "--model", "c.safetensors", "--data", "test", "--out", "pred"]).stdout();
    let pred = dir.join("pred");
    assert_eq!(parts(&pred), parts(&dir.join("test")));
    for (name, &rows) in parts(&pred).iter().zip(&shard_rows) {
        let file = pred.join(name);
        assert_eq!(columns(&file), ["row_id", "prediction", "target", "score_0", "score_1", "score_2"]);
        assert_eq!(read_column(&file, "row_id").unwrap().len() as u64, rows, "{name}");
    }
    let p = read_columns(&pred, &["prediction", "target", "score_0", "score_1", "score_2"]).unwrap();
    let mut correct = 0;
    for r in p.rows() {
        let argmax = (0..3).max_by(|&a, &b| r[2 + a].total_cmp(&r[2 + b])).unwrap() as f64;
        assert_eq!(r[0], argmax, "prediction is not the argmax of the scores: {r}");
        correct += usize::from(r[0] == r[1]);
    }
    let accuracy = correct as f64 / p.nrows() as f64;
    let majority =
        (0..3).map(|c| p.column(1).iter().filter(|&&y| y == c as f64).count()).max().unwrap() as f64 / p.nrows() as f64;

    let eval = dir.cmd(&["eval", "--model", "c.safetensors", "--data", "test", "--json"]).json();
    for key in ["n_samples", "accuracy", "macro_f1", "f1_per_class", "classes", "confusion"] {
        assert!(!eval[key].is_null(), "eval --json lacks {key}: {eval}");
    }
    assert_eq!(num(&eval, "/n_samples"), n_test as f64);
    assert_eq!(num(&eval, "/accuracy"), accuracy, "{eval}");
    eprintln!("classification round trip: accuracy {accuracy:.4} (majority class {majority:.4})");
    assert!(accuracy > majority + 0.2, "accuracy {accuracy} hardly beats the majority class {majority}");
});

// split is a pure function of (row id, seed): the same seed gives the same
// parts, another seed other parts, and no row is lost.
kapprox_test!(split_is_seeded_and_complete, |dir| {
    dir.convert(&cpu_train(), "all", &["--rows-per-shard", "2000"]);
    let split = |seed: &str, out: &str| {
        let (train, test) = (format!("{out}-train"), format!("{out}-test"));
        dir.cmd(&["split", "all", "--train", &train, "--test", &test, "--seed", seed]).stdout();
        (read_column(dir.join(&train), "target").unwrap(), read_column(dir.join(&test), "target").unwrap())
    };
    let (a_train, a_test) = split("7", "a");
    let (b_train, b_test) = split("7", "b");
    let (c_train, _) = split("8", "c");
    assert_eq!(a_train.len() + a_test.len(), 6554);
    assert!((1000..1650).contains(&a_test.len()), "test part of {} rows for the default 0.2", a_test.len());
    assert_eq!((a_train.clone(), a_test), (b_train, b_test));
    assert_ne!(a_train, c_train, "another seed gave the same split");
    // The label recorded by convert survives the split.
    let ds = kapprox::io::Dataset::open(dir.join("a-train")).unwrap();
    assert_eq!(ds.label_hint(), Some("target"));
});

// `fit --map eof` with each basis -> eval on the CPU test rows. The default
// (centred) basis learns the data although 88 % of the min–max scaled rows
// lie on a face of the cube; the paper's hats-only basis maps those rows to
// zero and cannot (features crate, `cpu_data_measurement`: test RMSE 2.50
// centred, 2.94 boundary, 30 paper at M = 1024 over 3 seeds; the label's
// standard deviation is about 21).
kapprox_test!(eof_fits_and_predicts_with_each_basis, |dir| {
    dir.convert(&cpu_train(), "train", &[]);
    dir.convert(&cpu_test(), "test", &[]);
    let mut rmse = Vec::new();
    for basis in ["centred", "boundary", "paper"] {
        let model = format!("{basis}.safetensors");
        let fit = dir
            .cmd(&[
                "fit",
                "--train",
                "train",
                "--out",
                &model,
                "--map",
                "eof",
                "--eof-basis",
                basis,
                "--features",
                "1024",
                "--sigma",
                "4",
                "--json",
            ])
            .json();
        assert_eq!(num(&fit, "/report/n_features"), 1024.0, "{fit}");
        let eval = dir.cmd(&["eval", "--model", &model, "--data", "test", "--json"]).json();
        eprintln!("eof {basis}: test RMSE {:.3}", num(&eval, "/rmse"));
        rmse.push(num(&eval, "/rmse"));
    }
    assert!(rmse[0] < 3.2 && rmse[1] < 3.6, "{rmse:?}");
    assert!(rmse[2] > 15.0, "the paper basis cannot see rows on a face: {rmse:?}");
    // The flags belong to eof.
    let err = dir.cmd(&["fit", "--train", "train", "--out", "x.safetensors", "--eof-basis", "paper"]).fails();
    assert!(err.contains("--eof-basis applies to eof"), "{err}");
});
