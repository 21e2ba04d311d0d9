//! Smoke tests on the shared real datasets (skipped when absent).

use crate::util::*;
use kapprox_io::{ConvertOptions, Dataset, InputFormat, LabelSpec, ReadOptions, convert};
use std::io::Read;

#[test]
fn cpu_tsv_gz_converts_and_reads_back_exactly() {
    let Some(input) = shared_data("cpu_rks_train.tsv.gz") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cpu");
    let rep = convert(&input, &out, &ConvertOptions::new().with_label(LabelSpec::Last), &mut |_| {}).unwrap();
    assert_eq!((rep.format, rep.rows_written, rep.columns.len()), (InputFormat::Tsv, 6554, 22));
    assert_eq!(rep.label.as_deref(), Some("target"));
    // Reference: parse the TSV independently.
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&input).unwrap()).read_to_string(&mut text).unwrap();
    let rows: Vec<Vec<f64>> =
        text.lines().skip(1).map(|l| l.split('\t').map(|v| v.parse().unwrap()).collect()).collect();
    let ds = Dataset::open(&out).unwrap();
    let (features, label) = ds.resolve_columns(&LabelSpec::Hint).unwrap();
    assert_eq!(features.len(), 21);
    let all = read_all(&ds, ReadOptions::new(features).with_label(label));
    for i in [0, 1, 3000, 6553] {
        assert_eq!(all.x.row(i).to_vec(), rows[i][..21]);
        assert_eq!(all.y.as_ref().unwrap()[i], rows[i][21]);
    }
    let y = all.y.unwrap();
    assert!(y.iter().all(|&v| (1.0..=100.0).contains(&v)));
}

#[test]
fn a9a_and_ijcnn1_libsvm_convert() {
    for (rel, n, d) in [("libsvm/a9a", 32561, 123), ("libsvm/ijcnn1.tst.bz2", 91701, 22)] {
        let Some(input) = shared_data(rel) else { continue };
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("o");
        let opts = ConvertOptions::new().with_n_features(Some(d)).with_rows_per_shard(40_000);
        let rep = convert(&input, &out, &opts, &mut |_| {}).unwrap();
        assert_eq!((rep.format, rep.rows_written, rep.columns.len()), (InputFormat::Libsvm, n, d + 1), "{rel}");
        let ds = Dataset::open(&out).unwrap();
        assert_eq!(ds.n_rows(), n);
        let stats = ds.stored_stats().unwrap().select(&["label"], ds.path()).unwrap();
        assert_eq!((stats.min()[0], stats.max()[0]), (-1.0, 1.0), "{rel}");
        let (features, label) = ds.resolve_columns(&LabelSpec::Hint).unwrap();
        let all = read_all(&ds, ReadOptions::new(features).with_label(label).with_chunk_rows(10_000));
        assert_eq!(all.ids.len() as u64, n);
        if rel.ends_with("a9a") {
            // a9a features are binary.
            assert!(all.x.iter().all(|&v| v == 0.0 || v == 1.0));
        }
    }
}

#[test]
fn fashion_mnist_test_set_idx_converts() {
    let (Some(images), Some(labels)) = (
        shared_data("fashion-mnist/t10k-images-idx3-ubyte.gz"),
        shared_data("fashion-mnist/t10k-labels-idx1-ubyte.gz"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fm");
    let rep = convert(&images, &out, &ConvertOptions::new().with_labels_path(Some(labels)), &mut |_| {}).unwrap();
    assert_eq!((rep.rows_written, rep.columns.len()), (10_000, 785));
    let ds = Dataset::open(&out).unwrap();
    let all = read_all(&ds, ReadOptions::new(["px0", "px400"]).with_label(Some("label")));
    assert!(all.x.iter().all(|&v| (0.0..=255.0).contains(&v)));
    let y = all.y.unwrap();
    assert_eq!((y.iter().cloned().fold(f64::INFINITY, f64::min), y.iter().cloned().fold(0.0, f64::max)), (0.0, 9.0));
    // The test set is balanced: 1000 of each class.
    assert_eq!(y.iter().filter(|&&v| v == 3.0).count(), 1000);
}

#[test]
#[ignore = "slow: converts the 60000 x 784 Fashion-MNIST training set"]
fn fashion_mnist_train_set_idx_converts() {
    let (Some(images), Some(labels)) = (
        shared_data("fashion-mnist/train-images-idx3-ubyte.gz"),
        shared_data("fashion-mnist/train-labels-idx1-ubyte.gz"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fm");
    let rep = convert(&images, &out, &ConvertOptions::new().with_labels_path(Some(labels)), &mut |_| {}).unwrap();
    assert_eq!(rep.rows_written, 60_000);
    let ds = Dataset::open(&out).unwrap();
    let cols = ds.resolve_columns(&LabelSpec::Hint).unwrap();
    let all = read_all(&ds, ReadOptions::new(cols.0).with_label(cols.1));
    assert_eq!(all.x.dim(), (60_000, 784));
}
