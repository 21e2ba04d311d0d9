//! Real pipelines' tables (issue 12): text ids, categorical columns, nulls,
//! timestamps, Hive directories, kept columns and output compression,
//! through fit, predict, featurize and eval.
//!
//! The tables are written here with arrow-rs, from a seeded generator, so
//! every test knows each value (and so the expected counts) exactly.

use crate::util::{Dir, check_error_parts, rel_max_diff, weights};
use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use kapprox::model::Model;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::path::Path;
use std::sync::Arc;

/// Category values by frequency class: most rows hold the first ones.
const CATS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "eps"];
/// A category that only the test rows hold.
const UNSEEN: &str = "zeta";

/// One generated row.
struct Row {
    id: String,
    cat: Option<&'static str>,
    x1: f64,
    x2: f64,
    xn: Option<f64>,
    ts: i64,
    target: f64,
}

/// `n` rows from `first` on; `unseen_every > 0` puts [`UNSEEN`] in every
/// such row; `null_cat_every > 0` leaves the category null there.
fn rows(first: usize, n: usize, unseen_every: usize, null_cat_every: usize) -> Vec<Row> {
    (first..first + n)
        .map(|i| {
            let u = |k: u64| {
                let mut h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                h ^= h >> 31;
                h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
                (h >> 11) as f64 / (1u64 << 53) as f64
            };
            // Frequencies 40, 25, 15, 12, 8 %: a strict order.
            let c = [0.40, 0.65, 0.80, 0.92, 1.0].iter().position(|&p| u(1) < p).unwrap();
            let cat = if unseen_every > 0 && i % unseen_every == 0 {
                Some(UNSEEN)
            } else if null_cat_every > 0 && i % null_cat_every == 1 {
                None
            } else {
                Some(CATS[c])
            };
            let (x1, x2, xn) = (4.0 * u(2) - 2.0, 2.0 * u(3), 3.0 * u(4));
            let target = x1.sin() + 0.5 * x2 + [0.0, 1.0, -1.0, 2.0, 0.5][c] + 0.3 * xn;
            Row {
                id: format!("r{i:05}"),
                cat,
                x1,
                x2,
                xn: (i % 9 != 4).then_some(xn),
                ts: 1_700_000_000_000 + i as i64 * 60_000,
                target,
            }
        })
        .collect()
}

/// The columns of `rows` by name.
fn column(rows: &[Row], name: &str) -> ArrayRef {
    match name {
        "id" => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.id.clone()))),
        "cat" => Arc::new(StringArray::from_iter(rows.iter().map(|r| r.cat))),
        "x1" => Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.x1))),
        "x2" => Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.x2))),
        "xn" => Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.xn))),
        "ts" => Arc::new(TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.ts))),
        "target" => Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.target))),
        other => panic!("no generated column {other}"),
    }
}

/// The generated table's columns in their usual order.
const ALL: [&str; 7] = ["id", "cat", "x1", "xn", "ts", "x2", "target"];

/// Writes `names` of `rows` to `path` (creating directories).
fn write(path: &Path, rows: &[Row], names: &[&str], compression: Compression) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let batch = RecordBatch::try_from_iter(names.iter().map(|n| (*n, column(rows, n)))).unwrap();
    let props = WriterProperties::builder().set_compression(compression).set_max_row_group_row_count(Some(250)).build();
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A training directory of `rows` in `shards` files.
fn write_shards(dir: &Dir, rel: &str, rows: &[Row], shards: usize) {
    let per = rows.len().div_ceil(shards);
    for (s, chunk) in rows.chunks(per).enumerate() {
        write(&dir.join(format!("{rel}/part-{s:05}.parquet")), chunk, &ALL, Compression::SNAPPY);
    }
}

const FIT: [&str; 9] = ["fit", "--label", "target", "--features", "64", "--alpha", "1e-3", "--seed", "5"];

fn fit_args<'a>(train: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = FIT[..FIT.len()].to_vec();
    a.extend_from_slice(&["--train", train, "--out", out]);
    a.extend_from_slice(extra);
    a
}

fn read_f64(path: &Path, name: &str) -> Vec<f64> {
    kapprox::io::read_column_vec(path, name).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_strings(path: &Path, name: &str) -> Vec<String> {
    let ds = kapprox::io::Dataset::open(path).unwrap();
    let mut out = Vec::new();
    let mut r = ds.reader(kapprox::io::ReadOptions::new(Vec::<String>::new()).with_keep([name])).unwrap();
    for chunk in r.by_ref() {
        let chunk = chunk.unwrap();
        let a = chunk.keep[0].as_any().downcast_ref::<StringArray>().expect("a string column");
        out.extend(a.iter().map(|v| v.unwrap_or("<null>").to_string()));
    }
    out
}

kapprox_test!(a_text_column_is_refused_naming_both_flags, |dir| {
    write_shards(&dir, "train", &rows(0, 300, 0, 0), 1);
    let e = dir.cmd(&fit_args("train", "m.safetensors", &[])).fails();
    check_error_parts(&e, &["train/part-00000.parquet", "column \"id\"", "--categorical", "--exclude"]);
    // With the id left out, the timestamp is next: refused naming --exclude.
    let e = dir.cmd(&fit_args("train", "m.safetensors", &["--exclude", "id", "--categorical", "cat"])).fails();
    check_error_parts(&e, &["column \"ts\"", "--exclude"]);
    let e = dir.cmd(&fit_args("train", "m.safetensors", &["--exclude", "nope"])).fails();
    check_error_parts(&e, &["--exclude", "nope"]);
    assert!(!dir.join("m.safetensors").exists());
});

kapprox_test!(categorical_and_imputed_columns_fit_predict_and_keep_the_id, |dir| {
    let train = rows(0, 1200, 0, 0);
    write_shards(&dir, "train", &train, 3);
    let test = rows(5000, 200, 10, 0);
    write(&dir.join("test/part-00000.parquet"), &test, &ALL, Compression::ZSTD(Default::default()));

    let flags = ["--exclude", "id,ts", "--categorical", "cat", "--nan", "impute", "--json"];
    let r = dir.cmd(&fit_args("train", "m.safetensors", &flags)).json();
    // Fit pass: the xn nulls (every 9th row) are imputed, no row skipped.
    let nulls = train.iter().filter(|r| r.xn.is_none()).count() as u64;
    assert_eq!(r["report"]["imputed"].as_u64(), Some(nulls), "{r}");
    assert_eq!(r["report"]["rows"].as_u64(), Some(1200), "{r}");

    let m = dir.model("m.safetensors");
    let inputs = m.doc.inputs.clone().expect("inputs recorded");
    assert_eq!(inputs.columns.numeric, ["x1", "xn", "x2"]);
    assert_eq!(inputs.columns.categorical, ["cat"]);
    // Vocabulary by frequency, counted independently here.
    let v = &inputs.vocabularies[0];
    let mut counts: Vec<(u64, &str)> =
        CATS.iter().map(|c| (train.iter().filter(|r| r.cat == Some(*c)).count() as u64, *c)).collect();
    counts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    assert_eq!(v.values, counts.iter().map(|c| c.1).collect::<Vec<_>>());
    assert_eq!(v.counts, counts.iter().map(|c| c.0).collect::<Vec<_>>());
    // The imputation value of xn is its mean over present values.
    let present: Vec<f64> = train.iter().filter_map(|r| r.xn).collect();
    let mean = present.iter().sum::<f64>() / present.len() as f64;
    let impute = inputs.impute.clone().expect("means stored");
    assert!((impute[1] - mean).abs() <= 1e-12 * mean.abs(), "{} vs {mean}", impute[1]);
    assert_eq!(m.doc.feature_columns.len(), 3 + 6);
    assert_eq!(
        m.doc.feature_columns[3..],
        ["cat=alpha", "cat=beta", "cat=gamma", "cat=delta", "cat=eps", "cat=<other>"]
    );

    // predict imputes by default (the model's policy), counts the unseen
    // category, and carries the id.
    let out = dir.cmd(&["predict", "--model", "m.safetensors", "--data", "test", "--out", "pred", "--keep", "id"]);
    let o = out.into_command().output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let unseen = test.iter().filter(|r| r.cat == Some(UNSEEN)).count();
    assert!(stderr.contains(&format!("{unseen} value(s) of \"cat\" outside the model's vocabulary")), "{stderr}");
    let test_nulls = test.iter().filter(|r| r.xn.is_none()).count();
    assert!(stderr.contains(&format!("imputed {test_nulls} missing value(s)")), "{stderr}");
    let ids = read_strings(&dir.join("pred"), "id");
    assert_eq!(ids, test.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
    let pred = read_f64(&dir.join("pred"), "prediction");
    // Rows of known categories: the target's spread is ~1.3, the category
    // effects 1 to 3; an encoding that lost them would be far worse.
    let seen: Vec<(f64, f64)> =
        pred.iter().zip(&test).filter(|(_, r)| r.cat != Some(UNSEEN)).map(|(p, r)| (*p, r.target)).collect();
    let rmse = (seen.iter().map(|(p, t)| (p - t).powi(2)).sum::<f64>() / seen.len() as f64).sqrt();
    assert!(rmse < 0.35, "test RMSE {rmse} on {} rows of known categories", seen.len());
    assert!(pred.iter().all(|p| p.is_finite()));

    // --nan refuse overrides the model's policy: the first null is refused.
    let e =
        dir.cmd(&["predict", "--model", "m.safetensors", "--data", "test", "--out", "p2", "--nan", "refuse"]).fails();
    check_error_parts(&e, &["test/part-00000.parquet", "column \"xn\""]);
});

// The one-hot encoding is what it says: a fit with `--categorical` equals
// (to rounding) a fit on the same table with the indicator columns written
// out by hand, in the vocabulary's order; predictions too.
kapprox_test!(categorical_encoding_equals_hand_written_indicators, |dir| {
    let train = rows(0, 900, 0, 0);
    let test = rows(7000, 150, 7, 0);
    let filled = |rs: &[Row]| -> Vec<Row> {
        rs.iter().map(|r| Row { xn: Some(r.xn.unwrap_or(1.0)), cat: r.cat, id: r.id.clone(), ..*r }).collect()
    };
    let (train, test) = (filled(&train), filled(&test));
    write_shards(&dir, "train", &train, 2);
    write(&dir.join("test/part-00000.parquet"), &test, &ALL, Compression::UNCOMPRESSED);
    dir.cmd(&fit_args("train", "cat.safetensors", &["--exclude", "id,ts", "--categorical", "cat"])).stdout();
    let m = dir.model("cat.safetensors");
    let vocab = m.doc.inputs.as_ref().unwrap().vocabularies[0].values.clone();

    let one_hot = |rs: &[Row], path: &Path| {
        let mut cols: Vec<(String, ArrayRef)> =
            ["x1", "xn", "x2"].iter().map(|n| (n.to_string(), column(rs, n))).collect();
        for v in vocab.iter().map(Some).chain([None]) {
            let hot = rs.iter().map(|r| match v {
                Some(v) => f64::from(r.cat == Some(v.as_str())),
                None => f64::from(!vocab.iter().any(|w| r.cat == Some(w.as_str()))),
            });
            cols.push((format!("h{}", cols.len()), Arc::new(Float64Array::from_iter_values(hot))));
        }
        cols.push(("target".into(), column(rs, "target")));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    one_hot(&train[..450], &dir.join("hot/part-00000.parquet"));
    one_hot(&train[450..], &dir.join("hot/part-00001.parquet"));
    one_hot(&test, &dir.join("hot_test/part-00000.parquet"));
    dir.cmd(&fit_args("hot", "hot.safetensors", &[])).stdout();
    let h = dir.model("hot.safetensors");
    let d = rel_max_diff(&weights(&h), &weights(&m));
    assert!(d <= 1e-9, "one-hot by hand vs --categorical: {d:e}");

    dir.cmd(&["predict", "--model", "cat.safetensors", "--data", "test", "--out", "pc"]).stdout();
    dir.cmd(&["predict", "--model", "hot.safetensors", "--data", "hot_test", "--out", "ph"]).stdout();
    let d = rel_max_diff(&read_f64(&dir.join("ph"), "prediction"), &read_f64(&dir.join("pc"), "prediction"));
    assert!(d <= 1e-9, "predictions: {d:e}");
});

kapprox_test!(predict_reads_the_model_columns_by_name, |dir| {
    let train = rows(0, 600, 0, 0);
    write_shards(&dir, "train", &train, 1);
    dir.cmd(&fit_args("train", "m.safetensors", &["--columns", "x*", "--nan", "skip"])).stdout();
    let m = dir.model("m.safetensors");
    assert_eq!(m.doc.feature_columns, ["x1", "xn", "x2"]);
    let test = rows(9000, 100, 0, 0);
    let full: Vec<Row> = test.iter().map(|r| Row { xn: Some(r.xn.unwrap_or(0.5)), id: r.id.clone(), ..*r }).collect();
    write(&dir.join("a/part-0.parquet"), &full, &ALL, Compression::SNAPPY);
    // Other order, extra columns, another codec.
    write(&dir.join("b/part-0.parquet"), &full, &["target", "x2", "ts", "xn", "id", "x1", "cat"], Compression::LZ4_RAW);
    for d in ["a", "b"] {
        dir.cmd(&["predict", "--model", "m.safetensors", "--data", d, "--out", &format!("p{d}")]).stdout();
    }
    assert_eq!(read_f64(&dir.join("pa"), "prediction"), read_f64(&dir.join("pb"), "prediction"));
    write(&dir.join("c/part-0.parquet"), &full, &["x1", "x2", "target"], Compression::SNAPPY);
    let e = dir.cmd(&["predict", "--model", "m.safetensors", "--data", "c", "--out", "pc"]).fails();
    check_error_parts(&e, &["c", "column \"xn\" that the model needs is missing"]);
    assert!(!dir.join("pc").exists());
});

// Spark's layout: Hive directories with repeated file names, `_SUCCESS`
// and `.crc` files. fit equals the same rows in a flat directory; predict
// and featurize write one file per input file under the same relative
// paths, with the chosen codec; eval reads it.
kapprox_test!(hive_directories_fit_predict_featurize_and_eval, |dir| {
    let all = rows(0, 800, 0, 0);
    let full: Vec<Row> = all.iter().map(|r| Row { xn: Some(r.xn.unwrap_or(0.5)), id: r.id.clone(), ..*r }).collect();
    let cols = ["id", "x1", "xn", "x2", "target"];
    write(&dir.join("hive/region=a/part-0.parquet"), &full[..300], &cols, Compression::ZSTD(Default::default()));
    write(&dir.join("hive/region=b/part-0.parquet"), &full[300..], &cols, Compression::GZIP(Default::default()));
    dir.write("hive/_SUCCESS", "");
    dir.write("hive/region=a/.part-0.parquet.crc", "crc");
    write(&dir.join("flat/part-0.parquet"), &full[..300], &cols, Compression::SNAPPY);
    write(&dir.join("flat/part-1.parquet"), &full[300..], &cols, Compression::BROTLI(Default::default()));

    dir.cmd(&fit_args("hive", "hive.safetensors", &["--exclude", "id"])).stdout();
    dir.cmd(&fit_args("flat", "flat.safetensors", &["--exclude", "id"])).stdout();
    let (h, f) = (dir.model("hive.safetensors"), dir.model("flat.safetensors"));
    assert_eq!(h.doc.feature_columns, ["x1", "xn", "x2"], "the partition key is not an input by default");
    assert_eq!(weights(&h), weights(&f), "same rows in the same order: the same model");
    // The partition key is an input when selected.
    dir.cmd(&fit_args("hive", "region.safetensors", &["--exclude", "id", "--categorical", "region"])).stdout();
    let r = dir.model("region.safetensors");
    assert_eq!(r.doc.inputs.as_ref().unwrap().vocabularies[0].values, ["b", "a"]);

    let pred = ["predict", "--model", "hive.safetensors", "--data", "hive", "--out", "pred", "--keep", "id"];
    dir.cmd(&[&pred[..], &["--compression", "gzip"]].concat()).stdout();
    for part in ["region=a/part-0.parquet", "region=b/part-0.parquet"] {
        let file = std::fs::File::open(dir.join("pred").join(part)).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let codec = reader.metadata().row_group(0).column(0).compression();
        assert!(matches!(codec, Compression::GZIP(_)), "{part}: {codec:?}");
    }
    assert_eq!(read_strings(&dir.join("pred"), "id"), full.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
    // The outputs are a Hive directory too: region is read from the path.
    let regions = read_strings(&dir.join("pred"), "region");
    assert_eq!(regions.iter().filter(|r| *r == "a").count(), 300);
    let e = dir
        .cmd(&["predict", "--model", "hive.safetensors", "--data", "hive", "--out", "p2", "--keep", "region"])
        .fails();
    check_error_parts(&e, &["--keep region", "partition key"]);
    dir.cmd(&["featurize", "--model", "hive.safetensors", "--data", "hive", "--out", "feat", "--keep", "id"]).stdout();
    assert!(dir.join("feat/region=b/part-0.parquet").exists());
    assert_eq!(read_strings(&dir.join("feat"), "id").len(), 800);
    let m = dir.cmd(&["eval", "--model", "hive.safetensors", "--data", "hive", "--json"]).json();
    assert_eq!(m["n_samples"].as_f64(), Some(800.0), "{m}");
});

// Categorical + impute: the same vocabulary and means whatever the chunk
// size and worker count; bitwise the same model for one layout and chunk
// sizes, and for `--workers 2` and 2 parts + reduce; ≤ 1e-9 across
// layouts.
kapprox_test!(categorical_and_impute_are_layout_independent, |dir| {
    let train = rows(0, 1400, 0, 11);
    write_shards(&dir, "one", &train, 1);
    write_shards(&dir, "seven", &train, 7);
    let flags = ["--exclude", "id,ts", "--categorical", "cat", "--nan", "impute"];
    let fit = |data: &str, out: &str, extra: &[&str]| {
        let mut a = fit_args(data, out, &flags);
        a.extend_from_slice(extra);
        dir.cmd(&a).stdout();
        dir.model(out)
    };
    let a = fit("seven", "a.safetensors", &[]);
    fit("seven", "b.safetensors", &["--chunk-rows", "37"]);
    let w = fit("seven", "w.safetensors", &["--workers", "2"]);
    let one = fit("one", "one.safetensors", &[]);
    let bytes = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(bytes("a.safetensors") == bytes("b.safetensors"), "chunk size changed the model");
    let inputs = |m: &Model| m.doc.inputs.clone().unwrap();
    for (name, other) in [("--workers 2", &w), ("one shard", &one)] {
        assert_eq!(inputs(&a).vocabularies, inputs(other).vocabularies, "{name}");
        let (x, y) = (inputs(&a).impute.unwrap(), inputs(other).impute.unwrap());
        assert!(rel_max_diff(&x, &y) <= 1e-12, "{name}: means {x:?} vs {y:?}");
        let d = rel_max_diff(&weights(&a), &weights(other));
        assert!(d <= 1e-9, "{name}: weights differ by {d:e}");
    }
    // Nulls in the category went to "other".
    let nulls = train.iter().filter(|r| r.cat.is_none()).count() as u64;
    assert_eq!(inputs(&a).vocabularies[0].other, nulls);

    // 2 parts + reduce, pass by pass: bitwise --workers 2.
    let mut after: Option<String> = None;
    let passes = 2;
    for pass in 0..passes {
        let mut parts = Vec::new();
        for i in 1..=2 {
            let out = format!("p{pass}-{i}.kpart");
            let part = format!("{i}/2");
            let mut extra = vec!["--part", part.as_str()];
            if let Some(a) = &after {
                extra.extend_from_slice(&["--after", a.as_str()]);
            }
            let mut args = fit_args("seven", &out, &flags);
            args.extend_from_slice(&extra);
            dir.cmd(&args).stdout();
            parts.push(out);
        }
        let out = if pass + 1 == passes { "p.safetensors".to_string() } else { format!("p{pass}.kresult") };
        let mut args = vec!["reduce"];
        args.extend(parts.iter().map(String::as_str));
        args.extend_from_slice(&["--out", out.as_str()]);
        dir.cmd(&args).stdout();
        after = Some(out);
    }
    assert!(bytes("w.safetensors") == bytes("p.safetensors"), "--workers 2 != 2 parts + reduce");
});

/// The README's "Your data" example: a Hive directory `sales/` with the
/// columns the README names.
pub(crate) fn write_sales(root: &Path) {
    let all = rows(0, 1000, 0, 0);
    let names = [("id", "id"), ("store", "cat"), ("size", "x1"), ("discount", "xn"), ("age", "x2")];
    let names = [&names[..], &[("ts", "ts"), ("price", "target")]].concat();
    for (region, part) in [("north", &all[..400]), ("south", &all[400..])] {
        let path = root.join(format!("region={region}/part-0.parquet"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let batch = RecordBatch::try_from_iter(names.iter().map(|(to, from)| (*to, column(part, from)))).unwrap();
        let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    std::fs::write(root.join("_SUCCESS"), "").unwrap();
}

/// The `kapprox` commands of the README's "Your data" section, as argument
/// lists (without the program name).
pub(crate) fn readme_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = readme.find("## Your data").expect("a Your data section");
    let section = &readme[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |e| e + 2)];
    let mut in_code = false;
    let mut commands = Vec::new();
    for line in section.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if let Some(args) = line.strip_prefix("kapprox ").filter(|_| in_code) {
            commands.push(args.split_whitespace().map(str::to_string).collect());
        }
    }
    commands
}

// Every command of the README's "Your data" section runs as shown (the
// s3:// one in the s3 test).
kapprox_test!(readme_your_data_commands_run, |dir| {
    write_sales(&dir.join("sales"));
    let commands = readme_commands();
    assert!(commands.len() >= 5, "{commands:?}");
    for args in commands.iter().filter(|a| !a.iter().any(|x| x.starts_with("s3://"))) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        dir.cmd(&args).stdout();
    }
    assert_eq!(read_strings(&dir.join("pred"), "id").len(), 1000);
    assert!(dir.join("feat/region=south/part-0.parquet").exists());
    assert_eq!(dir.model("numeric.safetensors").doc.feature_columns, ["size", "age"]);
});

/// Whether a column chunk's codec is the one asked for.
type CodecCheck = fn(&Compression) -> bool;

/// The codec of every column chunk of every shard under `dir`.
fn codecs(dir: &Path) -> Vec<Compression> {
    let mut found = Vec::new();
    for part in crate::util::parts(dir) {
        let reader = SerializedFileReader::new(std::fs::File::open(dir.join(part)).unwrap()).unwrap();
        for g in reader.metadata().row_groups() {
            found.extend(g.columns().iter().map(|c| c.compression()));
        }
    }
    found
}

kapprox_test!(convert_writes_the_compression_asked_for_and_zstd_by_default, |dir| {
    let cpu = crate::util::cpu_train();
    dir.convert(&cpu, "default", &["--rows-per-shard", "3000"]);
    assert!(codecs(&dir.join("default")).iter().all(|c| matches!(c, Compression::ZSTD(_))));
    let columns = kapprox::io::Dataset::open(dir.join("default")).unwrap().columns().to_vec();
    let values = |d: &str| kapprox::io::read_columns(dir.join(d), &columns).unwrap();
    let checks: [(&str, CodecCheck); 4] = [
        ("none", |c| *c == Compression::UNCOMPRESSED),
        ("snappy", |c| *c == Compression::SNAPPY),
        ("gzip:9", |c| matches!(c, Compression::GZIP(_))),
        ("brotli", |c| matches!(c, Compression::BROTLI(_))),
    ];
    for (flag, expected) in checks {
        let out = format!("c-{flag}");
        dir.convert(&cpu, &out, &["--rows-per-shard", "3000", "--compression", flag]);
        let found = codecs(&dir.join(&out));
        assert!(!found.is_empty() && found.iter().all(expected), "--compression {flag}: {found:?}");
        assert_eq!(values(&out), values("default"), "--compression {flag}: other values");
    }
    let e = dir.cmd(&["convert", cpu.to_str().unwrap(), "--out", "bad", "--compression", "zip"]).fails();
    check_error_parts(&e, &["--compression", "zip"]);
    assert!(!dir.join("bad").exists());
});

// featurize with a data-independent map learns the means under --nan
// impute, as fit does: the nulls take the mean of the values present,
// the map file stores it, and applying the map file imputes the same.
// Categorical columns still need a fitted vocabulary.
kapprox_test!(featurize_with_a_map_imputes_the_means_and_stores_them, |dir| {
    let train = rows(0, 900, 0, 0);
    write_shards(&dir, "train", &train, 3);
    let args = ["featurize", "--data", "train", "--label", "target", "--exclude", "id,ts,cat", "--sigma", "2"];
    let e = dir.cmd(&[&args[..], &["--features", "8", "--out", "refused"]].concat()).fails();
    check_error_parts(&e, &["column \"xn\""]);
    let impute = ["--features", "8", "--nan", "impute", "--out", "f", "--save-map", "map.st"];
    dir.cmd(&[&args[..], &impute[..]].concat()).stdout();
    let present: Vec<f64> = train.iter().filter_map(|r| r.xn).collect();
    let mean = present.iter().sum::<f64>() / present.len() as f64;
    let map = Model::load(&dir.join("map.st")).unwrap();
    let means = map.doc.inputs.clone().unwrap().impute.expect("means stored in the map file");
    assert!((means[1] - mean).abs() <= 1e-12 * mean.abs(), "{} vs {mean}", means[1]);
    let z0 = read_f64(&dir.join("f"), "z0");
    assert_eq!(z0.len(), 900);
    assert!(z0.iter().all(|z| z.is_finite()));
    let apply = ["featurize", "--data", "train", "--label", "target", "--model", "map.st", "--nan", "impute"];
    dir.cmd(&[&apply[..], &["--out", "g"]].concat()).stdout();
    for j in 0..8 {
        let z = format!("z{j}");
        assert_eq!(read_f64(&dir.join("f"), &z), read_f64(&dir.join("g"), &z), "{z}: the map file imputes otherwise");
    }
    let categorical = ["--exclude", "id,ts", "--categorical", "cat", "--sigma", "2", "--features", "8", "--out", "c"];
    let e = dir.cmd(&[&args[..5], &categorical[..]].concat()).fails();
    check_error_parts(&e, &["--categorical", "vocabulary", "--model"]);
});
