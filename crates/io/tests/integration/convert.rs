//! `convert`: round trips, bad input, atomicity.

use crate::util::*;
use kapprox_io::convert::Delimiter;
use kapprox_io::{
    ColumnStats, ConvertOptions, ConvertReport, Dataset, InputFormat, IoError, LabelSpec, NanPolicy, ReadOptions,
    Result, convert,
};
use ndarray::{Array2, s};
use std::io::Write;
use std::path::{Path, PathBuf};

fn run(input: &Path, out: &Path, opts: &ConvertOptions) -> Result<ConvertReport> {
    let mut calls = Vec::new();
    let r = convert(input, out, opts, &mut |n| calls.push(n));
    if let Ok(rep) = &r {
        assert!(calls.windows(2).all(|w| w[0] <= w[1]), "progress is monotone");
        assert_eq!(calls.last(), Some(&rep.rows_written));
    }
    r
}

/// Reads all columns of a converted dataset.
fn read_back(out: &Path) -> (Dataset, Array2<f64>) {
    let ds = Dataset::open(out).unwrap();
    let all = read_all(&ds, ReadOptions::new(ds.columns().to_vec()).with_chunk_rows(1000));
    (ds, all.x)
}

fn text_table(x: &Array2<f64>, names: Option<&[&str]>, sep: &str) -> String {
    let mut s = String::new();
    if let Some(n) = names {
        s.push_str(&n.join(sep));
        s.push('\n');
    }
    for row in x.rows() {
        let cells: Vec<String> = row.iter().map(|v| format!("{v}")).collect();
        s.push_str(&cells.join(sep));
        s.push('\n');
    }
    s
}

fn gz(path: &Path, text: &[u8]) {
    let f = std::fs::File::create(path).unwrap();
    let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap();
}

fn bz2(path: &Path, text: &[u8]) {
    let f = std::fs::File::create(path).unwrap();
    let mut e = bzip2::write::BzEncoder::new(f, bzip2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap();
}

#[test]
fn csv_tsv_and_whitespace_round_trip_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let x = matrix(2500, 4, 11);
    let names = ["alpha", "beta", "gamma", "y"];
    let cases: Vec<(&str, String, Option<&[&str]>)> = vec![
        ("a.csv", text_table(&x, Some(&names), ","), Some(&names)),
        ("b.tsv", text_table(&x, Some(&names), "\t"), Some(&names)),
        ("c.txt", text_table(&x, Some(&names), ";"), Some(&names)),
        ("d.dat", text_table(&x, None, "   "), None),
        ("e.csv", text_table(&x, None, ","), None),
    ];
    for (file, text, header) in cases {
        let input = tmp.path().join(file);
        std::fs::write(&input, &text).unwrap();
        let out = tmp.path().join(format!("out-{file}"));
        let opts = ConvertOptions::new().with_label(LabelSpec::Last).with_rows_per_shard(1000).with_row_group_rows(300);
        let rep = run(&input, &out, &opts).unwrap();
        assert_eq!((rep.rows_written, rep.rows_skipped, rep.shards.len()), (2500, 0, 3), "{file}");
        let expect_names: Vec<String> = match header {
            Some(h) => h.iter().map(|s| s.to_string()).collect(),
            None => vec!["x1".into(), "x2".into(), "x3".into(), "label".into()],
        };
        assert_eq!(rep.columns, expect_names, "{file}");
        let (ds, back) = read_back(&out);
        assert_eq!(back, x, "{file}");
        assert_eq!(ds.label_hint(), Some(expect_names[3].as_str()));
        assert_eq!(ds.shards()[0].n_row_groups, 4, "1000 rows in row groups of 300");
        let (features, label) = ds.resolve_columns(&LabelSpec::Hint).unwrap();
        assert_eq!((features.len(), label.as_deref()), (3, Some(expect_names[3].as_str())));
        // The footer statistics equal one pass over the data.
        let mut one = ColumnStats::new(expect_names.clone());
        one.update(x.view());
        let stored = ds.stored_stats().expect("convert records statistics");
        assert_eq!(stored.count(), 2500);
        assert_eq!((stored.min(), stored.max()), (one.min(), one.max()));
        for j in 0..4 {
            assert!((stored.mean()[j] - one.mean()[j]).abs() < 1e-9 * (1.0 + one.mean()[j].abs()));
            assert!((stored.m2()[j] - one.m2()[j]).abs() < 1e-9 * one.m2()[j]);
        }
        assert_eq!(&rep.stats, stored);
    }
}

#[test]
fn compressed_inputs_are_detected_by_magic_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let x = matrix(700, 3, 12);
    let text = text_table(&x, Some(&["a", "b", "c"]), "\t");
    // Misleading names: the content decides the compression.
    let g = tmp.path().join("data.tsv");
    gz(&g, text.as_bytes());
    let b = tmp.path().join("data2.tsv.gz");
    bz2(&b, text.as_bytes());
    for input in [g, b] {
        let out = tmp.path().join(format!("out-{}", input.file_name().unwrap().to_string_lossy()));
        let rep = run(&input, &out, &ConvertOptions::new()).unwrap();
        assert_eq!((rep.format, rep.label.as_deref()), (InputFormat::Tsv, None));
        assert_eq!(read_back(&out).1, x);
    }
}

#[test]
fn explicit_delimiter_header_and_label_name() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.txt");
    std::fs::write(&input, "\n\n1|2|3\n4|5|6\n").unwrap();
    let bom = tmp.path().join("bom.csv");
    std::fs::write(&bom, "\u{feff}a,b\r\n1,2\r\n").unwrap();
    let rep = run(&bom, &tmp.path().join("bom"), &ConvertOptions::new()).unwrap();
    assert_eq!(rep.columns, ["a", "b"]);
    let out = tmp.path().join("out");
    let opts = ConvertOptions::new()
        .with_format(Some(InputFormat::Csv))
        .with_delimiter(Some("|".parse::<Delimiter>().unwrap()))
        .with_header(Some(false))
        .with_label(LabelSpec::Name("x2".into()));
    let rep = run(&input, &out, &opts).unwrap();
    assert_eq!(rep.label.as_deref(), Some("x2"));
    let (ds, x) = read_back(&out);
    assert_eq!(x, ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    assert_eq!(ds.resolve_columns(&LabelSpec::Hint).unwrap().0, ["x1", "x3"]);
}

#[test]
fn nan_rows_are_refused_or_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("n.csv");
    std::fs::write(&input, "a,b\n1,2\n3,NaN\n5,6\ninf,8\n9,10\n").unwrap();
    let out = tmp.path().join("out");
    let err = run(&input, &out, &ConvertOptions::new()).unwrap_err().to_string();
    assert_eq!(err, format!("{}:3:2: column \"b\": expected a finite number, found \"NaN\"", input.display()));
    assert!(!out.exists());
    let rep = run(&input, &out, &ConvertOptions::new().with_nan_policy(NanPolicy::Skip)).unwrap();
    assert_eq!((rep.rows_written, rep.rows_skipped), (3, 2));
    assert_eq!(read_back(&out).1, ndarray::array![[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]]);
}

/// Converting `text` (written to `name`) must fail; returns the message and
/// checks that nothing was left behind.
fn fails(name: &str, text: &[u8], opts: &ConvertOptions) -> (PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap().keep();
    let input = tmp.join(name);
    std::fs::write(&input, text).unwrap();
    let out = tmp.join("out");
    let err = run(&input, &out, opts).unwrap_err();
    assert!(!out.exists(), "output left behind after: {err}");
    let leftovers: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "temporaries left behind: {leftovers:?}");
    let msg = err.to_string();
    std::fs::remove_dir_all(&tmp).unwrap();
    (input, msg)
}

#[test]
fn csv_non_numeric_cell_names_line_field_column_and_text() {
    let big: String = (0..20_000).map(|i| format!("{i},{i},{i},{i}\n")).collect();
    let text = format!("x1,x2,x3,x4\n{big}1,2,3,abc\n");
    // Many good rows first, so that shards were already being written.
    let opts = ConvertOptions::new().with_rows_per_shard(5000);
    let (input, msg) = fails("train.csv", text.as_bytes(), &opts);
    assert_eq!(msg, format!("{}:20002:4: column \"x4\": expected a number, found \"abc\"", input.display()));
    let (input, msg) = fails("e.csv", b"a,b\n1,\n", &ConvertOptions::new());
    assert_eq!(msg, format!("{}:2:2: column \"b\": expected a number, found \"\"", input.display()));
}

#[test]
fn csv_ragged_row_names_line_and_counts() {
    let (input, msg) = fails("r.csv", b"a,b,c\n1,2,3\n4,5\n", &ConvertOptions::new());
    assert_eq!(msg, format!("{}:3: expected 3 fields, found 2", input.display()));
    let (input, msg) = fails("r.txt", b"1 2 3\n4 5 6 7\n", &ConvertOptions::new());
    assert_eq!(msg, format!("{}:2: expected 3 fields, found 4", input.display()));
}

#[test]
fn missing_label_column_lists_the_columns() {
    let opts = ConvertOptions::new().with_label(LabelSpec::Name("target".into()));
    let (input, msg) = fails("l.csv", b"a,b\n1,2\n", &opts);
    assert_eq!(msg, format!("{}: column \"target\" not found; available columns: \"a\", \"b\"", input.display()));
}

#[test]
fn empty_inputs_are_refused() {
    for (name, text) in [("e.csv", &b""[..]), ("h.csv", b"a,b\n"), ("w.csv", b"\n\n  \n"), ("e.svm", b"")] {
        let (input, msg) = fails(name, text, &ConvertOptions::new());
        assert_eq!(msg, format!("{}: no data rows; expected at least one", input.display()), "{name}");
    }
}

#[test]
fn libsvm_round_trip_with_and_without_n_features() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("s.svm");
    std::fs::write(&input, "# comment line\n+1 1:0.5 3:-2 # trailing\n\n-1 2:1e3\n0.25 1:1 2:2 3:3\n").unwrap();
    let out = tmp.path().join("out");
    let rep = run(&input, &out, &ConvertOptions::new()).unwrap();
    assert_eq!(rep.columns, ["f1", "f2", "f3", "label"]);
    assert_eq!(rep.format, InputFormat::Libsvm);
    let (ds, x) = read_back(&out);
    assert_eq!(x, ndarray::array![[0.5, 0.0, -2.0, 1.0], [0.0, 1000.0, 0.0, -1.0], [1.0, 2.0, 3.0, 0.25]]);
    assert_eq!(ds.label_hint(), Some("label"));
    let out5 = tmp.path().join("out5");
    let rep = run(&input, &out5, &ConvertOptions::new().with_n_features(Some(5))).unwrap();
    assert_eq!(rep.columns.len(), 6);
    assert_eq!(read_back(&out5).1.slice(s![.., 3..5]), Array2::<f64>::zeros((3, 2)));
}

#[test]
fn libsvm_bad_lines_name_line_token_and_expectation() {
    let opts = ConvertOptions::new().with_format(Some(InputFormat::Libsvm));
    let cases: [(&[u8], &str); 7] = [
        (b"1 1:2\n1 0:3\n", ":2: expected a 1-based feature index (indices start at 1), found \"0:3\""),
        (b"1 1:2 5\n", ":1: expected index:value, found \"5\""),
        (b"1 2:1 2:1\n", ":1: expected feature indices in increasing order (after index 2), found \"2:1\""),
        (b"1 3:1 2:1\n", ":1: expected feature indices in increasing order (after index 3), found \"2:1\""),
        (b"1 x:1\n", ":1: expected a positive integer feature index, found \"x:1\""),
        (b"1 1:1\n1 2:abc\n", ":2:2: column \"f2\": expected a number, found \"abc\""),
        (b"yes 1:1\n", ":1:1: column \"label\": expected a number, found \"yes\""),
    ];
    for (text, expect) in cases {
        let (input, msg) = fails("bad.svm", text, &opts);
        assert_eq!(msg, format!("{}{expect}", input.display()));
    }
    let (_, msg) = fails("big.svm", b"1 1:1 9:1\n", &ConvertOptions::new().with_n_features(Some(4)));
    assert_contains(&msg, &[":1: expected a feature index of at most 4", "found \"9:1\""]);
}

/// An IDX file: `00 00 08 ndim`, dims, bytes.
fn idx_bytes(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        v.extend_from_slice(&d.to_be_bytes());
    }
    v.extend_from_slice(data);
    v
}

#[test]
fn idx_round_trip_with_labels_and_gzip() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, r, c) = (50u32, 3u32, 4u32);
    let pixels: Vec<u8> = (0..n * r * c).map(|i| (i * 7 % 256) as u8).collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    let images = tmp.path().join("imgs-idx3-ubyte.gz");
    gz(&images, &idx_bytes(&[n, r, c], &pixels));
    let lab = tmp.path().join("labels.idx1");
    std::fs::write(&lab, idx_bytes(&[n], &labels)).unwrap();
    let out = tmp.path().join("out");
    let opts = ConvertOptions::new().with_labels_path(Some(&lab)).with_rows_per_shard(20);
    let rep = run(&images, &out, &opts).unwrap();
    assert_eq!((rep.format, rep.rows_written, rep.shards.len()), (InputFormat::Idx, 50, 3));
    assert_eq!(rep.columns.len(), 13);
    assert_eq!((rep.columns[0].as_str(), rep.columns[12].as_str()), ("px0", "label"));
    let (ds, x) = read_back(&out);
    assert_eq!(ds.schema().field(0).data_type(), &arrow::datatypes::DataType::UInt8);
    for i in 0..n as usize {
        for j in 0..12 {
            assert_eq!(x[[i, j]], pixels[i * 12 + j] as f64);
        }
        assert_eq!(x[[i, 12]], labels[i] as f64);
    }
}

#[test]
fn idx_bad_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let labels2 = tmp.path().join("l2.idx");
    std::fs::write(&labels2, idx_bytes(&[2], &[1, 2])).unwrap();
    let opts = ConvertOptions::new().with_format(Some(InputFormat::Idx));
    let (input, msg) = fails("x.idx", b"\x89PNG\r\n\x1a\n", &opts);
    assert_eq!(
        msg,
        format!("{}: expected an IDX file (magic 00 00 <type> <ndim>), found bytes 89 50 4e 47", input.display())
    );
    let (_, msg) = fails("x.idx", &idx_bytes(&[3, 2], &[0; 5]), &opts);
    assert_contains(&msg, &["expected 3 items as declared in the header, found 2 (file is truncated)"]);
    let (_, msg) = fails("x.idx", &idx_bytes(&[2, 2], &[0; 5]), &opts);
    assert_contains(&msg, &["expected the file to end after the 2 items"]);
    let (input, msg) = fails("x.idx", &idx_bytes(&[3, 2], &[0; 6]), &opts.clone().with_labels_path(Some(&labels2)));
    assert_eq!(
        msg,
        format!("{}: expected 3 labels to match the 3 images of {}, found 2", labels2.display(), input.display())
    );
    let mut wrong_type = idx_bytes(&[1, 1], &[0]);
    wrong_type[2] = 0x07;
    let (_, msg) = fails("x.idx", &wrong_type, &opts);
    assert_contains(&msg, &["expected an IDX type code", "found 0x07"]);
}

#[test]
fn output_directory_is_refused_replaced_or_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("a.csv");
    std::fs::write(&input, "a,b\n1,2\n").unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // An empty directory is fine.
    run(&input, &out, &ConvertOptions::new()).unwrap();
    let err = run(&input, &out, &ConvertOptions::new()).unwrap_err();
    assert!(matches!(err, IoError::OutputExists { .. }));
    assert_contains(&err.to_string(), &["out: output exists", "(pass --overwrite to replace it)"]);
    std::fs::write(&input, "a,b\n3,4\n5,6\n").unwrap();
    run(&input, &out, &ConvertOptions::new().with_overwrite(true)).unwrap();
    assert_eq!(read_back(&out).1.nrows(), 2);
    // A failed overwrite leaves the previous output intact.
    std::fs::write(&input, "a,b\n3,4\n5,x\n").unwrap();
    run(&input, &out, &ConvertOptions::new().with_overwrite(true)).unwrap_err();
    assert_eq!(read_back(&out).1.nrows(), 2);
    // A killed run's temporary is replaced by the next run.
    std::fs::create_dir(tmp.path().join(".fresh.tmp")).unwrap();
    std::fs::write(tmp.path().join(".fresh.tmp/part-00000.parquet"), b"partial").unwrap();
    std::fs::write(&input, "a,b\n1,2\n").unwrap();
    run(&input, &tmp.path().join("fresh"), &ConvertOptions::new()).unwrap();
    assert!(!tmp.path().join(".fresh.tmp").exists());
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// Sizes read from the input are checked against the memory budget before
/// anything is allocated; the error names the file, the line and the number.
#[test]
fn sizes_read_from_the_input_are_refused_before_allocating() {
    let machine = ConvertOptions::new();
    // One LIBSVM line asking for two billion columns (48 GB of f64 per
    // 3-row batch and far more in the writer): refused by the default
    // budget, whatever this machine has.
    let (input, msg) = fails("big.svm", b"1 1:1\n-1 2000000000:1\n", &machine);
    assert_contains(
        &msg,
        &[&format!(
            "{}:2: feature index 2000000000 (2000000001 columns with the label) would need about",
            input.display()
        )],
    );
    assert_contains(&msg, &["more than the memory budget of", "give n_features"]);
    let (_, msg) = fails("x.svm", b"1 1:1\n", &machine.clone().with_n_features(Some(usize::MAX)));
    assert_contains(&msg, &["n_features 18446744073709551615", "more than the memory budget"]);
    // A 20-byte IDX header declaring 2^32 x 2^16 pixels per image.
    let (input, msg) = fails("x.idx", &idx_bytes(&[1, 65536, 65536, 65536], &[]), &machine);
    assert_contains(
        &msg,
        &[&format!(
            "{}: items of 65536 x 65536 x 65536 = 281474976710656 values (columns) would need",
            input.display()
        )],
    );
    // Dimensions whose product overflows 64 bits, and a zero dimension.
    let (_, msg) = fails("x.idx", &idx_bytes(&[1, u32::MAX, u32::MAX, u32::MAX], &[]), &machine);
    assert_contains(
        &msg,
        &[
            "expected positive item dimensions whose product fits in 64 bits, found 1 x 4294967295 x 4294967295 x 4294967295",
        ],
    );
    let (_, msg) = fails("x.idx", &idx_bytes(&[2, 0, 3], &[]), &machine);
    assert_contains(&msg, &["found 2 x 0 x 3"]);
    // A CSV header of 5000 columns under a 64 MiB budget (the measured
    // overhead is ~31 KiB per column: 5000 columns need ~200 MiB).
    let header: Vec<String> = (0..5000).map(|j| format!("c{j}")).collect();
    let text = format!("{}\n{}\n", header.join(","), vec!["1"; 5000].join(","));
    let small = ConvertOptions::new().with_max_memory(Some(64 << 20));
    let (input, msg) = fails("wide.csv", text.as_bytes(), &small);
    assert_contains(&msg, &[&format!("{}:1: 5000 columns would need about", input.display()), "64.0 MiB"]);
    // ... which the default budget of a machine allows.
    let tmp = tempfile::tempdir().unwrap();
    let wide = tmp.path().join("wide.csv");
    std::fs::write(&wide, &text).unwrap();
    assert_eq!(run(&wide, &tmp.path().join("out"), &machine).unwrap().columns.len(), 5000);
    // A line longer than the budget allows is refused, not buffered.
    let long = format!("a,b\n1,{}\n", "9".repeat(3 << 20));
    let (_, msg) = fails("long.csv", long.as_bytes(), &ConvertOptions::new().with_max_memory(Some(4 << 20)));
    assert_contains(&msg, &["line 2 is longer than 1.0 MiB"]);
}

/// Values whose squares overflow would make the footer statistics infinite:
/// they are refused with their location. A NaN kept on purpose is left out
/// of its column's statistics (as missing values are), so the footer stays
/// finite and describes the values that are there.
#[test]
fn footer_statistics_are_finite_or_absent() {
    let (input, msg) = fails("huge.csv", b"a,b\n1,2\n3,1e300\n", &ConvertOptions::new());
    assert_eq!(
        msg,
        format!(
            "{}:3:2: column \"b\": expected a number of magnitude at most 1e100 (larger values overflow the column statistics), found \"1e300\"",
            input.display()
        )
    );
    let (_, msg) = fails("huge.svm", b"1 1:1\n-1e200 2:1\n", &ConvertOptions::new());
    assert_contains(&msg, &[":2:1: column \"label\": expected a number of magnitude at most 1e100"]);
    let tmp = tempfile::tempdir().unwrap();
    let ok = tmp.path().join("ok.csv");
    std::fs::write(&ok, "a,b\n1,-1e100\n3,1e100\n").unwrap();
    let r = run(&ok, &tmp.path().join("ok"), &ConvertOptions::new()).unwrap();
    assert!(r.stats.is_finite(), "{:?}", r.stats);
    assert!(Dataset::open(tmp.path().join("ok")).unwrap().stored_stats().unwrap().is_finite());
    let nan = tmp.path().join("nan.csv");
    std::fs::write(&nan, "a,b\n1,nan\n3,4\n").unwrap();
    let keep = ConvertOptions::new().with_nan_policy(NanPolicy::Keep);
    run(&nan, &tmp.path().join("nan"), &keep).unwrap();
    let ds = Dataset::open(tmp.path().join("nan")).unwrap();
    let stats = ds.stored_stats().expect("statistics of the values that are there");
    assert!(stats.is_finite(), "{stats:?}");
    assert_eq!(stats.mean()[1], 4.0, "the NaN is left out of column b's mean");
}

/// Rewrites the shard `from` as `to` with the footer statistics of the
/// shard `stats_of` (the data, row groups and Parquet statistics of `from`).
fn transplant(from: &Path, stats_of: &Path, to: &Path) {
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::metadata::KeyValue;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let donor = SerializedFileReader::new(std::fs::File::open(stats_of).unwrap()).unwrap();
    let kv = donor.metadata().file_metadata().key_value_metadata().unwrap().clone();
    let stats = kv.iter().find(|k| k.key == kapprox_io::STATS_KEY).expect("convert records statistics").clone();
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(from).unwrap()).unwrap().build().unwrap();
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let mut w = None;
    for batch in reader {
        let batch = batch.unwrap();
        let w = w.get_or_insert_with(|| {
            ArrowWriter::try_new(std::fs::File::create(to).unwrap(), batch.schema(), None).unwrap()
        });
        w.write(&batch).unwrap();
    }
    let mut w = w.expect("a batch");
    w.append_key_value_metadata(KeyValue::new(stats.key, stats.value));
    w.close().unwrap();
}

/// Footer statistics copied from other data with the same row count and
/// schema are caught by their minimum and maximum against the Parquet
/// statistics, ignored with a note naming the shard and the column, and
/// the shard's own statistics still pass.
#[test]
fn footer_statistics_of_other_data_are_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.csv"), tmp.path().join("b.csv"));
    let rows = |scale: f64| -> String {
        let mut t = String::from("x,y,label\n");
        for i in 0..500 {
            let v = i as f64 * scale;
            t.push_str(&format!("{},{},{}\n", v.sin(), v - 0.5, v * v));
        }
        t
    };
    std::fs::write(&a, rows(0.01)).unwrap();
    std::fs::write(&b, rows(0.011)).unwrap();
    let opts = ConvertOptions::new().with_label(LabelSpec::Last);
    run(&a, &tmp.path().join("a"), &opts).unwrap();
    run(&b, &tmp.path().join("b"), &opts).unwrap();
    let shard = |d: &str| tmp.path().join(d).join("part-00000.parquet");

    transplant(&shard("a"), &shard("a"), &tmp.path().join("own/part-00000.parquet"));
    let own = Dataset::open(tmp.path().join("own")).unwrap();
    assert_eq!(own.notes(), &[] as &[String]);
    assert_eq!(own.stored_stats(), Dataset::open(tmp.path().join("a")).unwrap().stored_stats());

    transplant(&shard("a"), &shard("b"), &tmp.path().join("moved/part-00000.parquet"));
    let moved = Dataset::open(tmp.path().join("moved")).unwrap();
    assert!(moved.stored_stats().is_none(), "statistics of other data were trusted");
    assert_eq!(moved.notes().len(), 1, "{:?}", moved.notes());
    assert_contains(&moved.notes()[0], &["moved/part-00000.parquet", "column \"x\"", "other data", "ignored"]);
}
