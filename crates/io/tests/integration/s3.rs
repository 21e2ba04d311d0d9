//! Object storage: the same dataset in a local S3-compatible server (moto,
//! started by the test on 127.0.0.1) reads exactly as the local directory;
//! missing bucket, wrong credentials and a truncated object fail clearly.
//!
//! Skipped, with the reason printed, when moto cannot be installed.

use crate::s3_server::S3;
use crate::util::*;
use kapprox_io::{Dataset, LabelSpec, ReadOptions};
use std::path::Path;

/// One test: the scenarios share the server and the process environment.
#[test]
fn s3_reads_like_a_local_directory_and_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("upload");
    let ds_dir = local.join("train");
    let x = matrix(5000, 4, 11);
    let y = ndarray::Array1::from_shape_fn(5000, |i| i as f64);
    for (dir, rows) in [("part=1", 0..3000), ("part=2", 3000..5000)] {
        std::fs::create_dir_all(ds_dir.join(dir)).unwrap();
        let (xs, ys) = (x.slice(ndarray::s![rows.clone(), ..]).to_owned(), y.slice(ndarray::s![rows]).to_owned());
        write_f64(&ds_dir.join(dir).join("a.parquet"), &xs, Some(&ys), 700, 1000);
    }
    std::fs::write(ds_dir.join("_SUCCESS"), b"").unwrap();
    std::fs::write(ds_dir.join("part=1/.a.parquet.crc"), b"crc").unwrap();
    let bytes = std::fs::read(ds_dir.join("part=1/a.parquet")).unwrap();
    std::fs::create_dir_all(local.join("broken")).unwrap();
    std::fs::write(local.join("broken/t.parquet"), &bytes[..bytes.len() - 100]).unwrap();
    let Some(s3) = S3::start(&local, "kapprox-test", false) else { return };
    s3.set_env(&s3.key_id, &s3.secret);

    let remote = Dataset::open("s3://kapprox-test/train").unwrap_or_else(|e| panic!("{e}"));
    let here = Dataset::open(&ds_dir).unwrap();
    assert_eq!(remote.shards().len(), 2);
    assert_eq!(remote.columns(), here.columns());
    assert_eq!(remote.partition_columns(), ["part"]);
    assert_eq!(remote.shards()[1].path, Path::new("s3://kapprox-test/train/part=2/a.parquet"));
    assert_eq!(remote.shards()[1].relative_path, Path::new("part=2/a.parquet"));
    assert_eq!(remote.shards()[1].first_row, 3000);
    let (f, l) = here.resolve_columns(&LabelSpec::Name("y".into())).unwrap();
    for chunk_rows in [512, 4096] {
        let opts = ReadOptions::new(f.clone()).with_label(l.clone()).with_chunk_rows(chunk_rows).with_keep(["part"]);
        let a = read_all(&remote, opts.clone());
        let b = read_all(&here, opts);
        assert_eq!((&a.x, &a.y, &a.ids), (&b.x, &b.y, &b.ids));
        assert_eq!(a.x, x);
    }
    // A single object, and only some shards of a prefix.
    let one = Dataset::open("s3://kapprox-test/train/part=2/a.parquet").unwrap();
    assert_eq!(one.n_rows(), 2000);
    let part = read_all(&remote, ReadOptions::new(f.clone()).with_shards([1]));
    assert_eq!(part.ids[0], 3000);

    let err = Dataset::open("s3://kapprox-test/broken").unwrap_err().to_string();
    assert!(err.contains("s3://kapprox-test/broken/t.parquet") && err.contains("parquet footer"), "{err}");
    let err = Dataset::open("s3://no-such-bucket/train").unwrap_err().to_string();
    assert!(err.contains("s3://no-such-bucket/train") && err.contains("not found"), "{err}");
    let err = Dataset::open("s3://kapprox-test/nothing-here").unwrap_err().to_string();
    assert!(err.contains("s3://kapprox-test/nothing-here") && err.contains("no such file"), "{err}");
    drop(s3);
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let guarded = S3::start(&empty, "kapprox-private", true).expect("moto is installed");
    guarded.set_env("AKIAWRONGWRONGWRONG", "wrong");
    let err = Dataset::open("s3://kapprox-private/train").unwrap_err().to_string();
    assert!(err.contains("s3://kapprox-private/train") && err.contains("access denied"), "{err}");
}
