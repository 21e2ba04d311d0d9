//! Features and predictions written by kapprox read back in Rust (arrow,
//! through kapprox-io) and in Python (pyarrow, when installed), and agree
//! with the model they came from.

use crate::util::{columns, cpu_test, cpu_train, have_pyarrow, parts, python_json};
use kapprox::io::{read_column, read_columns};
use serde_json::Value;

const PYARROW_SCRIPT: &str = r#"
import json, sys
import pyarrow.parquet as pq
feat, pred = pq.read_table(sys.argv[1]), pq.read_table(sys.argv[2])
print(json.dumps({
    "feat_columns": feat.column_names,
    "feat_types": sorted({str(t) for t in feat.schema.types}),
    "feat_rows": feat.num_rows,
    "z0": feat.column("z0").to_pylist(),
    "z63": feat.column("z63").to_pylist(),
    "feat_row_id": feat.column("row_id").to_pylist(),
    "pred_columns": pred.column_names,
    "pred_rows": pred.num_rows,
    "prediction": pred.column("prediction").to_pylist(),
    "pred_row_id": pred.column("row_id").to_pylist(),
    "pred_file_rows": [pq.ParquetFile(f"{sys.argv[2]}/{p}").metadata.num_rows for p in sys.argv[3:]],
}))
"#;

kapprox_test!(features_and_predictions_read_back_in_rust_and_pyarrow, |dir| {
    dir.convert(&cpu_train(), "train", &[]);
    dir.convert(&cpu_test(), "test", &["--rows-per-shard", "300"]);
    dir.cmd(&["fit", "--train", "train", "--out", "m.safetensors", "--features", "64", "--sigma", "3", "--alpha", "1"])
        .stdout();
    dir.cmd(&["featurize", "--model", "m.safetensors", "--data", "test", "--out", "feat"]).stdout();
    dir.cmd(&["predict", "--model", "m.safetensors", "--data", "test", "--out", "pred"]).stdout();
    let model = dir.model("m.safetensors");
    let (feat, pred) = (dir.join("feat"), dir.join("pred"));
    assert_eq!(parts(&feat), parts(&dir.join("test")));
    assert_eq!(parts(&pred), parts(&dir.join("test")));

    // Rust: the features are the model's map of the scaled input rows, and
    // the predictions are the features times the weights.
    let z_names: Vec<String> = (0..64).map(|j| format!("z{j}")).collect();
    let mut want_cols = z_names.clone();
    want_cols.extend(["row_id".to_string(), "target".to_string()]);
    assert_eq!(columns(&feat.join("part-00000.parquet")), want_cols);
    let z = read_columns(&feat, &z_names).unwrap();
    let mut x = read_columns(dir.join("test"), &model.doc.feature_columns).unwrap();
    model.doc.scaler.apply_in_place(x.view_mut());
    let z_want = model.map.transform(x.view());
    assert_eq!(z.dim(), (819, 64));
    let z_err = (&z - &z_want).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(z_err <= 1e-12, "featurize differs from the model's map by {z_err:e}");
    let p_want = model.scores(z.view()).column(0).to_owned();
    let p = read_column(&pred, "prediction").unwrap();
    let p_err = (&p - &p_want).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(p_err <= 1e-9 * p_want.iter().fold(1.0f64, |m, v| m.max(v.abs())), "predictions differ by {p_err:e}");
    let target = read_column(dir.join("test"), "target").unwrap();
    assert_eq!(read_column(&feat, "target").unwrap(), target);
    assert_eq!(read_column(&pred, "target").unwrap(), target);
    let ids: Vec<f64> = (0..819).map(f64::from).collect();
    assert_eq!(read_column(&feat, "row_id").unwrap().to_vec(), ids);

    // Python: the same files through pyarrow, value for value.
    if !have_pyarrow() {
        return;
    }
    let mut args = vec![feat.as_path(), pred.as_path()];
    let names = parts(&pred);
    args.extend(names.iter().map(std::path::Path::new));
    let py = python_json(PYARROW_SCRIPT, &args);
    let floats = |v: &Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    assert_eq!(py["feat_columns"], serde_json::json!(want_cols));
    assert_eq!(py["feat_types"], serde_json::json!(["double", "uint64"]));
    assert_eq!(py["feat_rows"], 819);
    assert_eq!(floats(&py["z0"]), z.column(0).to_vec());
    assert_eq!(floats(&py["z63"]), z.column(63).to_vec());
    assert_eq!(floats(&py["feat_row_id"]), ids);
    assert_eq!(py["pred_columns"], serde_json::json!(["row_id", "prediction", "target"]));
    assert_eq!(py["pred_rows"], 819);
    assert_eq!(floats(&py["prediction"]), p.to_vec());
    assert_eq!(floats(&py["pred_row_id"]), ids);
    assert_eq!(py["pred_file_rows"], serde_json::json!([300, 300, 219]));
});
