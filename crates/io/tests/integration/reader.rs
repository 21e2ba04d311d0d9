//! Dataset opening and the chunk reader.

use crate::util::*;
use arrow::array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch,
    StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema};
use kapprox_io::{AtomicParquetWriter, Dataset, IoError, LabelSpec, NanPolicy, ReadOptions, RowIds};
use ndarray::{Array1, s};
use std::sync::Arc;

fn cols(d: usize) -> Vec<String> {
    (0..d).map(|j| format!("c{j}")).collect()
}

#[test]
fn same_rows_and_ids_for_1_vs_7_shards_and_any_chunk_size() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, d) = (20_011, 4);
    let x = matrix(n, d, 1);
    let y: Array1<f64> = x.column(0).mapv(|v| v * 2.0 + 1.0);
    let one = tmp.path().join("one");
    let seven = tmp.path().join("seven");
    write_shards(&one, &x, Some(&y), 1, 65536);
    // Row groups of 1500 rows: the chunk grid and the row groups disagree.
    write_shards(&seven, &x, Some(&y), 7, 1500);
    let ds1 = Dataset::open(&one).unwrap();
    let ds7 = Dataset::open(&seven).unwrap();
    assert_eq!((ds1.n_rows(), ds7.n_rows()), (n as u64, n as u64));
    assert_eq!(ds7.shards().len(), 7);
    let mut next = 0;
    for s in ds7.shards() {
        assert_eq!(s.first_row, next);
        next += s.n_rows;
        assert_eq!(s.n_row_groups as u64, s.n_rows.div_ceil(1500));
    }
    let mut reference = None;
    for ds in [&ds1, &ds7] {
        for chunk_rows in [1000, 65536, 333] {
            let opts = ReadOptions::new(cols(d)).with_label(Some("y")).with_chunk_rows(chunk_rows);
            let all = read_all(ds, opts);
            assert_eq!(all.ids, (0..n as u64).collect::<Vec<_>>());
            assert_eq!(all.x, x);
            assert_eq!(all.y.as_ref(), Some(&y));
            match &reference {
                None => reference = Some(all),
                Some(r) => assert_eq!((&r.ids, &r.x, &r.y), (&all.ids, &all.x, &all.y)),
            }
        }
    }
    // Columns come in the requested order, not the file's.
    let all = read_all(&ds7, ReadOptions::new(["c3", "c0"]).with_chunk_rows(4096));
    assert_eq!(all.x.column(0), x.column(3));
    assert_eq!(all.x.column(1), x.column(0));
}

#[test]
fn parallel_decode_delivers_rows_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, d) = (30_000, 3);
    let x = matrix(n, d, 2);
    let dir = tmp.path().join("ds");
    // Many small row groups so that several decode at once.
    write_shards(&dir, &x, None, 3, 700);
    let ds = Dataset::open(&dir).unwrap();
    let serial = read_all(&ds, ReadOptions::new(cols(d)).with_chunk_rows(512).with_prefetch(1).with_threads(1));
    for (threads, prefetch) in [(2, 2), (4, 8), (3, 3), (0, 16)] {
        let opts = ReadOptions::new(cols(d)).with_chunk_rows(512).with_prefetch(prefetch).with_threads(threads);
        let reader = ds.reader(opts.clone()).unwrap();
        assert!(reader.n_threads() <= prefetch);
        drop(reader);
        let par = read_all(&ds, opts);
        assert_eq!(par, serial, "threads {threads}, prefetch {prefetch}");
    }
    assert_eq!(serial.x, x);
    // Chunks of a shard: full cells except the last one of each shard.
    for w in serial.chunks.windows(2) {
        if w[0].0 == w[1].0 {
            assert_eq!(w[0].2, 512);
        }
    }
}

#[test]
fn shard_selection_keeps_global_row_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let x = matrix(1000, 2, 3);
    let dir = tmp.path().join("ds");
    write_shards(&dir, &x, None, 4, 100);
    let ds = Dataset::open(&dir).unwrap();
    let all = read_all(&ds, ReadOptions::new(cols(2)).with_shards([3, 1]).with_chunk_rows(64));
    let mut expect: Vec<u64> = (250..500).collect();
    expect.extend(750..1000);
    assert_eq!(all.ids, expect);
    assert_eq!(all.x.slice(s![..250, ..]), x.slice(s![250..500, ..]));
    let all = read_all(&ds, ReadOptions::new(cols(2)).with_shards(2..3));
    assert_eq!(all.ids, (500..750).collect::<Vec<_>>());
    let err = ds.reader(ReadOptions::new(cols(2)).with_shards([4])).unwrap_err();
    assert_contains(&err.to_string(), &["invalid shard index \"4\"", "expected an index below"]);
}

/// A shard of `n` rows; if `dirty`, with NaN, -inf and null cells at rows
/// 1500, 10 and 1700.
fn write_dirty(path: &std::path::Path, n: usize, dirty: bool) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Float64, true),
        Field::new("b", DataType::Float32, true),
        Field::new("target", DataType::Float64, true),
    ]));
    let a: Float64Array = (0..n).map(|i| Some(if dirty && i == 1500 { f64::NAN } else { i as f64 })).collect();
    let b: Float32Array = (0..n).map(|i| if dirty && i == 1700 { None } else { Some(i as f32 * 0.5) }).collect();
    let t: Float64Array = (0..n).map(|i| Some(if dirty && i == 10 { f64::NEG_INFINITY } else { 1.0 })).collect();
    let mut w = AtomicParquetWriter::create_with(path, schema.clone(), 512, Vec::new()).unwrap();
    let cols: Vec<ArrayRef> = vec![Arc::new(a), Arc::new(b), Arc::new(t)];
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.finish().unwrap();
}

#[test]
fn non_finite_cells_are_refused_with_file_row_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    std::fs::create_dir(&dir).unwrap();
    // A clean first shard shifts global ids by 300.
    write_dirty(&dir.join("part-0.parquet"), 300, false);
    write_dirty(&dir.join("part-1.parquet"), 2000, true);
    let ds = Dataset::open(&dir).unwrap();
    let dirty = dir.join("part-1.parquet");

    let err = ds.reader(ReadOptions::new(["a", "b"]).with_label(Some("target"))).unwrap().find_map(Result::err);
    let msg = err.expect("refused").to_string();
    assert_eq!(
        msg,
        format!(
            "{}: row 10 (global row id 310), column \"target\": expected a finite number, found -inf",
            dirty.display()
        )
    );
    let err = ds.reader(ReadOptions::new(["a", "b"])).unwrap().find_map(Result::err).unwrap();
    assert!(matches!(err, IoError::NonFinite { row_id: 1800, row_in_file: 1500, .. }), "{err}");
    assert_contains(&err.to_string(), &["part-1.parquet", "row 1500", "column \"a\"", "found NaN"]);
    let err = ds.reader(ReadOptions::new(["b"])).unwrap().find_map(Result::err).unwrap();
    assert_contains(&err.to_string(), &["row 1700", "column \"b\"", "expected a finite number, found null"]);
}

#[test]
fn non_finite_rows_are_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dirty.parquet");
    write_dirty(&path, 2000, true);
    let ds = Dataset::open(&path).unwrap();
    let opts = ReadOptions::new(["a", "b"]).with_label(Some("target")).with_nan_policy(NanPolicy::Skip);
    let all = read_all(&ds, opts.clone().with_chunk_rows(1000));
    assert_eq!(all.skipped, 3);
    assert_eq!(all.chunks.iter().map(|c| c.3).sum::<usize>(), 3);
    let expect: Vec<u64> = (0..2000).filter(|i| ![10, 1500, 1700].contains(i)).collect();
    assert_eq!(all.ids, expect);
    assert_eq!(all.x.column(0).to_vec(), expect.iter().map(|&i| i as f64).collect::<Vec<_>>());
    assert!(all.x.iter().all(|v| v.is_finite()));
    // Skipping does not depend on the chunking.
    let small = read_all(&ds, opts.with_chunk_rows(7));
    assert_eq!((small.ids, small.x, small.skipped), (all.ids, all.x, 3));
    // Keep passes values through, nulls as NaN.
    let keep = read_all(&ds, ReadOptions::new(["b"]).with_nan_policy(NanPolicy::Keep));
    assert!(keep.x[[1700, 0]].is_nan());
    assert_eq!(keep.x[[1699, 0]], 849.5);
}

#[test]
fn every_numeric_arrow_type_reads_as_f64_and_others_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("types.parquet");
    let fields = vec![
        Field::new("i8", DataType::Int8, false),
        Field::new("i16", DataType::Int16, false),
        Field::new("i32", DataType::Int32, false),
        Field::new("i64", DataType::Int64, false),
        Field::new("u8", DataType::UInt8, false),
        Field::new("u16", DataType::UInt16, false),
        Field::new("u32", DataType::UInt32, false),
        Field::new("u64", DataType::UInt64, false),
        Field::new("f32", DataType::Float32, false),
        Field::new("bool", DataType::Boolean, false),
        Field::new("name", DataType::Utf8, false),
    ];
    let schema = Arc::new(Schema::new(fields));
    let n: usize = 300;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter_values((0..n).map(|i| (i % 200) as i8 - 100))),
        Arc::new(Int16Array::from_iter_values((0..n).map(|i| -(i as i16)))),
        Arc::new(Int32Array::from_iter_values((0..n).map(|i| i as i32 * 1000))),
        Arc::new(Int64Array::from_iter_values((0..n).map(|i| i as i64 - (1 << 40)))),
        Arc::new(UInt8Array::from_iter_values((0..n).map(|i| (i % 256) as u8))),
        Arc::new(UInt16Array::from_iter_values((0..n).map(|i| 60000 + i as u16))),
        Arc::new(UInt32Array::from_iter_values((0..n).map(|i| 4_000_000_000 + i as u32))),
        Arc::new(UInt64Array::from_iter_values((0..n).map(|i| i as u64 * 3))),
        Arc::new(Float32Array::from_iter_values((0..n).map(|i| i as f32 * 0.25))),
        Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 3 == 0)))),
        Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("r{i}")))),
    ];
    let mut w = AtomicParquetWriter::create_with(&path, schema.clone(), 128, Vec::new()).unwrap();
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.finish().unwrap();
    let ds = Dataset::open(&path).unwrap();
    let names = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "bool"];
    let all = read_all(&ds, ReadOptions::new(names).with_chunk_rows(100));
    for i in [0usize, 57, 299] {
        let expect = [
            ((i % 200) as i8 - 100) as f64,
            -(i as f64),
            i as f64 * 1000.0,
            i as f64 - (1u64 << 40) as f64,
            (i % 256) as f64,
            60000.0 + i as f64,
            4e9 + i as f64,
            i as f64 * 3.0,
            i as f64 * 0.25,
            if i % 3 == 0 { 1.0 } else { 0.0 },
        ];
        assert_eq!(all.x.row(i).to_vec(), expect, "row {i}");
    }
    let err = ds.reader(ReadOptions::new(["i8", "name"])).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: column \"name\" has type Utf8 (text), expected a number; name it in --categorical to one-hot encode it, or in --exclude to leave it out",
            path.display()
        )
    );
    let err = ds.reader(ReadOptions::new(["nope"])).unwrap_err().to_string();
    assert_contains(&err, &["column \"nope\" not found; available columns: \"i8\", \"i16\""]);
}

#[test]
fn resolve_columns_by_name_last_hint_and_none() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.parquet");
    write_f64(&path, &matrix(10, 3, 4), Some(&Array1::zeros(10)), 100, 100);
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.columns(), ["c0", "c1", "c2", "y"]);
    assert_eq!(ds.resolve_columns(&LabelSpec::Last).unwrap(), (cols(3), Some("y".to_string())));
    let (f, l) = ds.resolve_columns(&LabelSpec::Name("c1".into())).unwrap();
    assert_eq!((f, l), (vec!["c0".to_string(), "c2".into(), "y".into()], Some("c1".to_string())));
    assert_eq!(ds.resolve_columns(&LabelSpec::None).unwrap().0.len(), 4);
    let err = ds.resolve_columns(&LabelSpec::Name("target".into())).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: column \"target\" not found; available columns: \"c0\", \"c1\", \"c2\", \"y\"", path.display())
    );
    let err = ds.resolve_columns(&LabelSpec::Hint).unwrap_err().to_string();
    assert_contains(&err, &["no label column recorded", "kapprox.label"]);
    assert!(ds.stored_stats().is_none());
    let (lo, hi) = ds.footer_min_max(&["c1"]).unwrap().expect("kapprox writes statistics");
    let x = matrix(10, 3, 4);
    assert_eq!(lo[0], x.column(1).fold(f64::INFINITY, |a, &b| a.min(b)));
    assert_eq!(hi[0], x.column(1).fold(f64::NEG_INFINITY, |a, &b| a.max(b)));
}

#[test]
fn open_refuses_missing_empty_truncated_and_mismatched_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let err = Dataset::open(&missing).unwrap_err();
    assert_eq!(err.to_string(), format!("{}: no such file or directory", missing.display()));

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    // Hidden and temporary files are not shards.
    std::fs::write(empty.join(".part-0.parquet.tmp"), b"junk").unwrap();
    std::fs::write(empty.join("part-1.parquet.tmp"), b"junk").unwrap();
    std::fs::write(empty.join("README"), b"not a shard").unwrap();
    let err = Dataset::open(&empty).unwrap_err().to_string();
    assert_contains(&err, &[&empty.display().to_string(), "no parquet files found"]);

    let good = tmp.path().join("good");
    write_shards(&good, &matrix(100, 2, 5), None, 2, 30);
    // A leftover temporary next to real shards is ignored.
    std::fs::write(good.join(".part-00002.parquet.tmp"), b"half a file").unwrap();
    assert_eq!(Dataset::open(&good).unwrap().shards().len(), 2);

    let bytes = std::fs::read(good.join("part-00001.parquet")).unwrap();
    let trunc = tmp.path().join("trunc.parquet");
    std::fs::write(&trunc, &bytes[..bytes.len() / 2]).unwrap();
    let err = Dataset::open(&trunc).unwrap_err().to_string();
    assert_contains(&err, &[&trunc.display().to_string(), "cannot read the parquet footer", "truncated"]);
    let zero = tmp.path().join("zero.parquet");
    std::fs::write(&zero, b"").unwrap();
    assert_contains(&Dataset::open(&zero).unwrap_err().to_string(), &["zero.parquet", "parquet footer"]);

    let mixed = tmp.path().join("mixed");
    write_shards(&mixed, &matrix(50, 2, 6), None, 1, 30);
    let schema =
        Arc::new(Schema::new(vec![Field::new("c0", DataType::Float64, true), Field::new("c1", DataType::Int64, true)]));
    let mut w = AtomicParquetWriter::create(mixed.join("part-00001.parquet"), schema.clone()).unwrap();
    let c: Vec<ArrayRef> = vec![Arc::new(Float64Array::from(vec![1.0])), Arc::new(Int64Array::from(vec![1]))];
    w.write(&RecordBatch::try_new(schema, c).unwrap()).unwrap();
    w.finish().unwrap();
    // Float64 in one shard, Int64 in the other: the same kind, reconciled.
    let ds = Dataset::open(&mixed).unwrap();
    let x = kapprox_io::read_columns(&mixed, &["c1"]).unwrap();
    assert_eq!((ds.n_rows(), x[[50, 0]]), (51, 1.0));
    // A string where the first shard has a number: refused, naming both files.
    let schema =
        Arc::new(Schema::new(vec![Field::new("c0", DataType::Float64, true), Field::new("c1", DataType::Utf8, true)]));
    let mut w = AtomicParquetWriter::create(mixed.join("part-00002.parquet"), schema.clone()).unwrap();
    let c: Vec<ArrayRef> =
        vec![Arc::new(Float64Array::from(vec![1.0])), Arc::new(arrow::array::StringArray::from(vec!["a"]))];
    w.write(&RecordBatch::try_new(schema, c).unwrap()).unwrap();
    w.finish().unwrap();
    let err = Dataset::open(&mixed).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: column \"c1\": expected type Float64 as in {}, found type Utf8",
            mixed.join("part-00002.parquet").display(),
            mixed.join("part-00000.parquet").display()
        )
    );
}

#[test]
fn corrupt_page_names_file_row_group_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.parquet");
    write_f64(&path, &matrix(3000, 3, 7), None, 1000, 1000);
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.shards()[0].n_row_groups, 3);
    // Overwrite the page header at the start of row group 1, column c2.
    let md = parquet::file::serialized_reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let (start, _) = parquet::file::reader::FileReader::metadata(&md).row_group(1).column(2).byte_range();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[start as usize..start as usize + 24] {
        *b = 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    let ds = Dataset::open(&path).unwrap();
    let mut reader = ds.reader(ReadOptions::new(cols(3)).with_chunk_rows(500)).unwrap();
    let mut good = 0;
    let err = loop {
        match reader.next().expect("an error before the end") {
            Ok(c) => good += c.n_rows(),
            Err(e) => break e,
        }
    };
    assert_eq!(good, 1000, "row group 0 is intact and delivered first");
    assert!(reader.next().is_none(), "the reader ends after an error");
    let msg = err.to_string();
    assert!(matches!(err, IoError::Decode { row_group: 1, .. }), "{msg}");
    assert_contains(&msg, &[&path.display().to_string(), "row group 1", "column \"c2\"", "cannot decode"]);
}

#[test]
fn one_row_group_decoded_by_column_groups_gives_the_same_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, d) = (9_001, 7);
    let mut x = matrix(n, d, 3);
    // Missing values in two columns: the NaN policy sees every column of a
    // row, whichever group decoded it.
    x[[17, 2]] = f64::NAN;
    x[[4_321, 6]] = f64::NAN;
    let y: Array1<f64> = x.column(0).mapv(|v| v - 1.0);
    let path = tmp.path().join("one.parquet");
    write_f64(&path, &x, Some(&y), n, 1000);
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.shards()[0].n_row_groups, 1);
    for nan in [NanPolicy::Skip, NanPolicy::Impute] {
        let opts = |threads: usize| {
            ReadOptions::new(cols(d))
                .with_label(Some("y"))
                .with_chunk_rows(1000)
                .with_nan_policy(nan)
                .with_impute_values(vec![0.5; d])
                .with_threads(threads)
                .with_prefetch(4)
        };
        // One thread decodes all columns; 2-4 threads split one row group's
        // columns (the dataset has fewer row groups than threads).
        let serial = read_all(&ds, opts(1));
        assert_eq!(serial.ids.len(), if nan == NanPolicy::Skip { n - 2 } else { n });
        for threads in [2, 3, 4] {
            assert_eq!(read_all(&ds, opts(threads)), serial, "{nan:?}, {threads} threads");
        }
    }
}

#[test]
fn a_corrupt_column_decoded_in_a_column_group_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.parquet");
    write_f64(&path, &matrix(3000, 4, 7), None, 3000, 1000);
    let md = parquet::file::serialized_reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let (start, _) = parquet::file::reader::FileReader::metadata(&md).row_group(0).column(3).byte_range();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[start as usize..start as usize + 24] {
        *b = 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    let ds = Dataset::open(&path).unwrap();
    for threads in [1, 2, 4] {
        let reader = ds.reader(ReadOptions::new(cols(4)).with_chunk_rows(500).with_threads(threads)).unwrap();
        let err = reader.into_iter().find_map(Result::err).expect("an error").to_string();
        assert_contains(&err, &[&path.display().to_string(), "row group 0", "column \"c3\"", "cannot decode"]);
    }
}

#[test]
fn dropping_a_reader_early_stops_its_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    write_shards(&dir, &matrix(20_000, 2, 8), None, 2, 500);
    let ds = Dataset::open(&dir).unwrap();
    for _ in 0..20 {
        let mut r = ds.reader(ReadOptions::new(cols(2)).with_chunk_rows(100).with_threads(2).with_prefetch(4)).unwrap();
        let c = r.next().unwrap().unwrap();
        assert_eq!(c.row_ids, RowIds::Range(0..100));
        drop(r);
    }
}

#[test]
fn a_changed_shard_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("a.parquet");
    write_f64(&path, &matrix(100, 2, 1), None, 100, 100);
    let ds = Dataset::open(&path).unwrap();
    write_f64(&path, &matrix(200, 2, 1), None, 100, 100);
    let err = ds.reader(ReadOptions::new(cols(2))).unwrap().find_map(Result::err).unwrap().to_string();
    assert_contains(&err, &["a.parquet", "file changed since the dataset was opened"]);
}
