//! Bad input is refused with a message naming the file, the row (or line),
//! the column and what was expected; the exit code is 2; and nothing is
//! left behind, not even a temporary. One test per kind of bad input.

use crate::util::{Dir, check_error, check_error_parts, cpu_train};
use kapprox::io::{DenseFeatureWriter, FeatureFileOptions, RowIds, read_columns};
use ndarray::{Array1, Array2};

/// Runs a command that must fail, checks that it left the directory as it
/// was, and returns its stderr.
#[track_caller]
fn fails_cleanly(dir: &Dir, args: &[&str]) -> String {
    let before = dir.listing();
    let stderr = dir.cmd(args).fails();
    assert_eq!(dir.listing(), before, "a failed `kapprox {}` left files behind", args.join(" "));
    stderr
}

/// `fit` arguments that make a small, fast fit of `train`.
fn fit_args<'a>(train: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["fit", "--overwrite", "--train", train, "--out", "m.safetensors", "--features", "16"];
    v.extend_from_slice(&["--sigma", "1", "--alpha", "1", "--label", "y"]);
    v.extend_from_slice(extra);
    v
}

/// Writes a two-shard Parquet dataset `rel` of 10 rows per shard with
/// columns `z0, z1, z2` and label `y`, and with `bad = (shard, row in shard,
/// column, value)` cells planted. `convert` refuses NaN, so the file is
/// written through kapprox-io's feature writer (no row ids, `y` carried).
fn parquet_with(dir: &Dir, rel: &str, bad: &[(usize, usize, usize, f64)]) {
    let out = dir.mkdir(rel);
    for shard in 0..2 {
        let mut x = Array2::from_shape_fn((10, 3), |(i, j)| ((shard * 10 + i) * 3 + j) as f64 / 7.0);
        for &(s, i, j, v) in bad {
            if s == shard {
                x[[i, j]] = v;
            }
        }
        let y = Array1::from_shape_fn(10, |i| (shard * 10 + i) as f64);
        let opts = FeatureFileOptions::new().with_row_id(false).with_carried(["y"]);
        let mut w = DenseFeatureWriter::create(out.join(format!("part-{shard:05}.parquet")), 3, opts).unwrap();
        let ids = RowIds::Range(0..10);
        w.write(x.view(), Some(&ids), &[y.view()]).unwrap();
        w.finish().unwrap();
    }
}

kapprox_test!(fit_refuses_a_nonexistent_path, |dir| {
    let stderr = fails_cleanly(&dir, &fit_args("nosuch", &[]));
    check_error(&stderr, "nosuch: no such file or directory");
});

kapprox_test!(convert_refuses_a_nonexistent_input, |dir| {
    let stderr = fails_cleanly(&dir, &["convert", "nosuch.csv", "--out", "out"]);
    check_error(&stderr, "nosuch.csv: no such file or directory");
});

kapprox_test!(fit_refuses_an_empty_directory, |dir| {
    dir.mkdir("empty");
    let stderr = fails_cleanly(&dir, &fit_args("empty", &[]));
    check_error(&stderr, "empty: no parquet files found (expected a .parquet file or a directory of *.parquet shards)");
});

// A real shard cut in half, in the middle of a 7-shard dataset. The footers
// are read when the dataset is opened, so no command gets to write anything.
kapprox_test!(fit_and_predict_refuse_a_truncated_parquet_shard, |dir| {
    dir.convert(&cpu_train(), "data", &["--rows-per-shard", "937"]);
    dir.cmd(&["fit", "--train", "data", "--out", "m.safetensors", "--features", "16", "--sigma", "3", "--alpha", "1"])
        .stdout();
    let shard = dir.join("data/part-00003.parquet");
    let len = std::fs::metadata(&shard).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&shard).unwrap().set_len(len / 2).unwrap();

    let want =
        ["kapprox: data/part-00003.parquet: ", "cannot read the parquet footer (truncated or not a parquet file)"];
    let stderr =
        fails_cleanly(&dir, &["fit", "--train", "data", "--out", "m2.safetensors", "--sigma", "3", "--alpha", "1"]);
    check_error_parts(&stderr, &want);
    let stderr = fails_cleanly(&dir, &["predict", "--model", "m.safetensors", "--data", "data", "--out", "pred"]);
    check_error_parts(&stderr, &want);
});

// Garbage in the middle of a shard (its footer intact) is found when the
// row group is decoded, mid-pass: the message names the file, the row group
// and the column. `fit` keeps the previous model; `predict` and `featurize`
// remove the shards they had completed, and the directories they created.
kapprox_test!(a_corrupt_parquet_page_fails_every_command_without_leftovers, |dir| {
    dir.convert(&cpu_train(), "data", &["--rows-per-shard", "937"]);
    let fit = ["fit", "--train", "data", "--out", "m.safetensors", "--features", "16", "--sigma", "3", "--alpha", "1"];
    dir.cmd(&fit).stdout();
    let model = std::fs::read(dir.join("m.safetensors")).unwrap();
    let shard = dir.join("data/part-00002.parquet");
    let mut bytes = std::fs::read(&shard).unwrap();
    let at = bytes.len() / 3;
    bytes[at..at + 2000].fill(0xff);
    std::fs::write(&shard, bytes).unwrap();

    let want = ["kapprox: data/part-00002.parquet: row group 0, column \"", "cannot decode"];
    check_error_parts(&fails_cleanly(&dir, &[&fit[..], &["--overwrite"]].concat()), &want);
    assert!(std::fs::read(dir.join("m.safetensors")).unwrap() == model, "the failed fit changed the model file");
    let predict = ["predict", "--model", "m.safetensors", "--data", "data", "--out", "pred"];
    check_error_parts(&fails_cleanly(&dir, &predict), &want);
    let featurize = ["featurize", "--model", "m.safetensors", "--data", "data", "--out", "feat"];
    check_error_parts(&fails_cleanly(&dir, &featurize), &want);
});

// The bad cell is on line 7, after two complete shards of two rows were
// written into the staging directory: those must go too.
kapprox_test!(convert_refuses_a_non_numeric_csv_cell, |dir| {
    dir.write("bad.csv", "a,b,y\n1,2,3\n4,5,6\n7,8,9\n1,2,3\n4,5,6\n7,x8,9\n1,2,3\n");
    let stderr =
        fails_cleanly(&dir, &["convert", "bad.csv", "--out", "out", "--label", "last", "--rows-per-shard", "2"]);
    check_error(&stderr, r#"bad.csv:7:2: column "b": expected a number, found "x8""#);
});

kapprox_test!(convert_refuses_a_ragged_csv_row, |dir| {
    dir.write("ragged.csv", "a,b,y\n1,2,3\n4,5\n7,8,9\n");
    let stderr = fails_cleanly(&dir, &["convert", "ragged.csv", "--out", "out", "--label", "last"]);
    check_error(&stderr, "ragged.csv:3: expected 3 fields, found 2");
});

kapprox_test!(convert_refuses_nan_in_a_csv_feature, |dir| {
    dir.write("nan.csv", "a,b,y\n1,2,3\n4,NaN,6\n7,8,9\n");
    let stderr = fails_cleanly(&dir, &["convert", "nan.csv", "--out", "out", "--label", "last"]);
    check_error(&stderr, r#"nan.csv:3:2: column "b": expected a finite number, found "NaN""#);
});

kapprox_test!(convert_refuses_inf_in_a_csv_feature, |dir| {
    dir.write("inf.tsv", "a\tb\ty\n1\t2\t3\n4\t5\t6\n-inf\t8\t9\n");
    let stderr = fails_cleanly(&dir, &["convert", "inf.tsv", "--out", "out", "--label", "last"]);
    check_error(&stderr, r#"inf.tsv:4:1: column "a": expected a finite number, found "-inf""#);
});

kapprox_test!(convert_nan_skip_drops_and_counts_rows, |dir| {
    dir.write("nan.csv", "a,b,y\n1,2,3\n4,nan,6\n7,8,9\ninf,1,1\n");
    let report = dir.cmd(&["convert", "nan.csv", "--out", "out", "--label", "last", "--nan", "skip", "--json"]).json();
    assert_eq!(report["rows_skipped"], 2, "{report}");
    assert_eq!(report["rows_written"], 2, "{report}");
    let x = read_columns(dir.join("out"), &["a", "b", "y"]).unwrap();
    assert_eq!(x, ndarray::array![[1.0, 2.0, 3.0], [7.0, 8.0, 9.0]]);
});

kapprox_test!(convert_refuses_libsvm_index_zero, |dir| {
    dir.write("zero.svm", "1 1:0.5 3:2\n-1 0:1 2:3\n");
    let stderr = fails_cleanly(&dir, &["convert", "zero.svm", "--out", "out"]);
    check_error(&stderr, r#"zero.svm:2: expected a 1-based feature index (indices start at 1), found "0:1""#);
});

kapprox_test!(convert_refuses_a_malformed_libsvm_pair, |dir| {
    dir.write("pair.svm", "1 1:0.5 3:2\n-1 1:1 2=3\n");
    let stderr = fails_cleanly(&dir, &["convert", "pair.svm", "--out", "out"]);
    check_error(&stderr, r#"pair.svm:2: expected index:value, found "2=3""#);
});

kapprox_test!(convert_refuses_a_missing_label_column, |dir| {
    dir.write("d.csv", "a,b,y\n1,2,3\n");
    let stderr = fails_cleanly(&dir, &["convert", "d.csv", "--out", "out", "--label", "nosuch"]);
    check_error(&stderr, r#"d.csv: column "nosuch" not found; available columns: "a", "b", "y""#);
});

kapprox_test!(fit_refuses_a_missing_label_column, |dir| {
    parquet_with(&dir, "data", &[]);
    let mut args = fit_args("data", &[]);
    *args.last_mut().unwrap() = "nosuch";
    let stderr = fails_cleanly(&dir, &args);
    check_error(&stderr, r#"data: column "nosuch" not found; available columns: "z0", "z1", "z2", "y""#);
});

// The NaN is in the second shard, in the second chunk of 4 rows: the
// message must give the row within the file and the global row id, not a
// position within a chunk.
kapprox_test!(fit_refuses_nan_in_a_parquet_feature, |dir| {
    parquet_with(&dir, "data", &[(1, 5, 1, f64::NAN)]);
    let stderr = fails_cleanly(&dir, &fit_args("data", &["--chunk-rows", "4"]));
    check_error(
        &stderr,
        r#"data/part-00001.parquet: row 5 (global row id 15), column "z1": expected a finite number, found NaN"#,
    );
});

kapprox_test!(fit_refuses_inf_in_a_parquet_feature, |dir| {
    parquet_with(&dir, "data", &[(0, 9, 2, f64::NEG_INFINITY)]);
    let stderr = fails_cleanly(&dir, &fit_args("data", &[]));
    check_error(
        &stderr,
        r#"data/part-00000.parquet: row 9 (global row id 9), column "z2": expected a finite number, found -inf"#,
    );
});

// `--nan skip` drops the rows and counts them, whatever the chunk size:
// with one-row chunks every bad row is a chunk of its own that yields no
// rows, which must still be counted.
kapprox_test!(fit_nan_skip_drops_and_counts_rows, |dir| {
    parquet_with(&dir, "data", &[(0, 2, 0, f64::NAN), (1, 5, 1, f64::INFINITY), (1, 6, 1, f64::NAN)]);
    for chunk in ["1", "4", "8192"] {
        let report = dir.cmd(&fit_args("data", &["--nan", "skip", "--chunk-rows", chunk, "--json"])).json();
        assert_eq!(report["report"]["skipped"], 3, "--chunk-rows {chunk}: {report}");
        assert_eq!(report["report"]["rows"], 17, "--chunk-rows {chunk}: {report}");
        assert!(dir.join("m.safetensors").is_file());
    }
});
