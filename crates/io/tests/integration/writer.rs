//! Atomic writes and kapprox's file layouts.

use crate::util::*;
use arrow::array::{Array, AsArray, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, UInt32Type};
use kapprox_core::SparseRows;
use kapprox_io::writer::N_COLS_KEY;
use kapprox_io::{
    AtomicParquetWriter, Dataset, DenseFeatureWriter, FeatureDtype, FeatureFileOptions, IoError, PredictionFileOptions,
    PredictionWriter, RowIds, SparseFeatureWriter, read_column, read_columns,
};
use ndarray::{Array1, array, s};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::sync::Arc;

fn dir_names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn atomic_writer_leaves_nothing_on_error_drop_or_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("out.parquet");
    let schema = f64_schema(1, false);
    // Dropped without finish.
    let mut w = AtomicParquetWriter::create(&path, schema.clone()).unwrap();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(vec![1.0]))]).unwrap();
    w.write(&batch).unwrap();
    let staging = dir_names(tmp.path());
    assert!(
        staging.len() == 1 && staging[0].starts_with(".out.parquet.kapprox-") && staging[0].ends_with(".tmp"),
        "{staging:?}"
    );
    drop(w);
    assert!(dir_names(tmp.path()).is_empty());
    // A write error, then drop.
    let mut w = AtomicParquetWriter::create(&path, schema.clone()).unwrap();
    let wrong = RecordBatch::try_new(
        f64_schema(2, false),
        vec![Arc::new(Float64Array::from(vec![1.0])), Arc::new(Float64Array::from(vec![2.0]))],
    )
    .unwrap();
    let err = w.write(&wrong).unwrap_err();
    assert!(matches!(err, IoError::BatchShape { .. }));
    assert_contains(&err.to_string(), &["out.parquet: columns of the batch: expected 1, found 2"]);
    let ints = arrow::array::Int64Array::from(vec![1]);
    let int_schema =
        Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new("c0", DataType::Int64, true)]));
    let err = w.write(&RecordBatch::try_new(int_schema, vec![Arc::new(ints)]).unwrap()).unwrap_err().to_string();
    assert_contains(&err, &["batch column 1: expected \"c0\" of type Float64, found \"c0\" of type Int64"]);
    drop(w);
    assert!(dir_names(tmp.path()).is_empty());
    // A panic while writing.
    let p = path.clone();
    let s2 = schema.clone();
    let r = std::panic::catch_unwind(move || {
        let _w = AtomicParquetWriter::create(&p, s2).unwrap();
        panic!("boom");
    });
    assert!(r.is_err());
    assert!(dir_names(tmp.path()).is_empty());
    // A stale temporary of an earlier version (a killed process) is
    // removed; finish renames.
    std::fs::write(tmp.path().join(".out.parquet.tmp"), b"half a file").unwrap();
    let mut w = AtomicParquetWriter::create(&path, schema).unwrap();
    w.write(&batch).unwrap();
    assert_eq!(w.finish().unwrap(), 1);
    assert_eq!(dir_names(tmp.path()), ["out.parquet"]);
    assert_eq!(read_column(&path, "c0").unwrap().to_vec(), [1.0]);
}

#[test]
fn dense_features_round_trip_in_f64_and_f32() {
    let tmp = tempfile::tempdir().unwrap();
    let z = matrix(1000, 5, 21) / 7.0;
    let y: Array1<f64> = (0..1000).map(|i| i as f64).collect();
    for dtype in [FeatureDtype::F64, FeatureDtype::F32] {
        let path = tmp.path().join(format!("{dtype:?}.parquet"));
        let opts = FeatureFileOptions::new().with_dtype(dtype).with_carried(["target"]).with_row_group_rows(300);
        let mut w = DenseFeatureWriter::create(&path, 5, opts).unwrap();
        for k in 0..2 {
            let r = k * 500..(k + 1) * 500;
            let ids = RowIds::Range(10_000 + r.start as u64..10_000 + r.end as u64);
            w.write(z.slice(s![r.clone(), ..]), Some(&ids), &[y.slice(s![r])]).unwrap();
        }
        assert_eq!(w.finish().unwrap(), 1000);
        let ds = Dataset::open(&path).unwrap();
        assert_eq!(ds.columns(), ["z0", "z1", "z2", "z3", "z4", "row_id", "target"]);
        assert_eq!(ds.shards()[0].n_row_groups, 4);
        let back = read_columns(&path, &["z0", "z1", "z2", "z3", "z4"]).unwrap();
        match dtype {
            FeatureDtype::F64 => assert_eq!(back, z),
            FeatureDtype::F32 => assert_eq!(back, z.mapv(|v| v as f32 as f64)),
        }
        assert_eq!(read_column(&path, "target").unwrap(), y);
        assert_eq!(read_column(&path, "row_id").unwrap()[999], 10_999.0);
    }
    let path = tmp.path().join("bad.parquet");
    let mut w = DenseFeatureWriter::create(&path, 5, FeatureFileOptions::new()).unwrap();
    let err = w.write(z.slice(s![..3, ..4]), Some(&RowIds::Range(0..3)), &[]).unwrap_err().to_string();
    assert_eq!(err, format!("{}: feature columns: expected 5, found 4", path.display()));
    let err = w.write(z.slice(s![..3, ..]), None, &[]).unwrap_err().to_string();
    assert_contains(&err, &["row ids (the file has a row_id column)"]);
}

#[test]
fn sparse_features_are_lists_of_equal_length() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("sparse.parquet");
    let mut rows = SparseRows::zeros(4, 3, 100);
    for r in 0..4 {
        for k in 0..3 {
            rows.indices[[r, k]] = (r * 10 + k * 3) as u32;
            rows.values[[r, k]] = r as f64 + k as f64 / 10.0;
        }
    }
    let mut w = SparseFeatureWriter::create(&path, 100, FeatureFileOptions::new().with_carried(["y"])).unwrap();
    w.write(rows.view(), Some(&RowIds::List(vec![3, 5, 8, 13])), &[array![1.0, 2.0, 3.0, 4.0].view()]).unwrap();
    w.finish().unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let kv = builder.metadata().file_metadata().key_value_metadata().unwrap().clone();
    assert!(kv.iter().any(|k| k.key == N_COLS_KEY && k.value.as_deref() == Some("100")));
    let batch = builder.build().unwrap().next().unwrap().unwrap();
    assert_eq!(batch.schema().field(0).name(), "indices");
    assert!(matches!(batch.schema().field(1).data_type(), DataType::List(f) if f.data_type() == &DataType::Float64));
    let idx = batch.column(0).as_list::<i32>();
    assert_eq!(idx.len(), 4);
    assert_eq!(idx.value(2).as_primitive::<UInt32Type>().values().to_vec(), [20, 23, 26]);
    let dense = rows.to_dense();
    assert_eq!(dense[[3, 36]], 3.2);
    assert_eq!(read_column(&path, "row_id").unwrap().to_vec(), [3.0, 5.0, 8.0, 13.0]);
    // List columns are not numeric features.
    let ds = Dataset::open(&path).unwrap();
    let err = ds.reader(kapprox_io::ReadOptions::new(["values"])).unwrap_err().to_string();
    assert_contains(&err, &["column \"values\" has type List", "expected a number", "--exclude"]);
}

#[test]
fn predictions_with_target_and_class_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("pred.parquet");
    let opts = PredictionFileOptions::new().with_target(true).with_classes(["a", "b"]);
    let mut w = PredictionWriter::create(&path, opts).unwrap();
    let scores = array![[0.9, 0.1], [0.2, 0.8]];
    w.write(&RowIds::Range(7..9), array![0.0, 1.0].view(), Some(array![0.0, 0.0].view()), Some(scores.view())).unwrap();
    w.finish().unwrap();
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.columns(), ["row_id", "prediction", "target", "score_a", "score_b"]);
    assert_eq!(read_column(&path, "score_b").unwrap().to_vec(), [0.1, 0.8]);
    assert_eq!(read_column(&path, "row_id").unwrap().to_vec(), [7.0, 8.0]);
    let mut w = PredictionWriter::create(tmp.path().join("p2.parquet"), PredictionFileOptions::new()).unwrap();
    let err = w.write(&RowIds::Range(0..3), array![1.0].view(), None, None).unwrap_err().to_string();
    assert_contains(&err, &["p2.parquet: predictions: expected 3, found 1"]);
}
