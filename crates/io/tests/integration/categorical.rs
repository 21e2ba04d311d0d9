//! Categorical encoding does not depend on the shard layout, chunk size or
//! merge order: the vocabulary comes from counts that add up, and the
//! encoded rows are the same bitwise.

use arrow::array::{ArrayRef, DictionaryArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema};
use kapprox_io::{AtomicParquetWriter, CategoryCounts, Dataset, NanPolicy, ReadOptions, Vocabulary};
use ndarray::Array2;
use std::path::Path;
use std::sync::Arc;

const N: usize = 3000;

/// Row `i`'s category: 9 values with tied frequencies, and some nulls.
fn category(i: usize) -> Option<String> {
    let k = (i * 7919) % 30;
    match k {
        0 => None,
        1..=6 => Some("alpha".into()),
        7..=12 => Some("beta".into()),
        13..=17 => Some("gamma".into()),
        18..=22 => Some("delta".into()),
        23..=25 => Some("eps".into()),
        26 | 27 => Some("zeta".into()),
        28 => Some("eta".into()),
        _ => Some(format!("rare{}", i % 3)),
    }
}

/// Writes rows `range` to `path`; `dictionary` stores the category as a
/// dictionary of strings instead of plain strings.
fn write(path: &Path, range: std::ops::Range<usize>, dictionary: bool) {
    let cat_type = if dictionary {
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
    } else {
        DataType::Utf8
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("cat", cat_type, true),
        Field::new("y", DataType::Float64, false),
    ]));
    let x: Float64Array = range.clone().map(|i| (i % 13 != 4).then_some(i as f64 * 0.5)).collect();
    let cats: Vec<Option<String>> = range.clone().map(category).collect();
    let cat: ArrayRef = if dictionary {
        Arc::new(cats.iter().map(|c| c.as_deref()).collect::<DictionaryArray<Int32Type>>())
    } else {
        Arc::new(cats.iter().map(|c| c.as_deref()).collect::<StringArray>())
    };
    let y: Float64Array = range.map(|i| (i % 10) as f64).collect();
    let mut w = AtomicParquetWriter::create_with(path, schema.clone(), 128, Vec::new()).unwrap();
    w.write(&RecordBatch::try_new(schema, vec![Arc::new(x), cat, Arc::new(y)]).unwrap()).unwrap();
    w.finish().unwrap();
}

/// Counts, imputation means and the encoded rows of a dataset.
fn encode(dir: &Path, chunk_rows: usize, reverse_merge: bool) -> (CategoryCounts, Vocabulary, Vec<f64>, Array2<f64>) {
    let ds = Dataset::open(dir).unwrap();
    let count = ReadOptions::new(["x"]).with_categorical(["cat"]).with_nan_policy(NanPolicy::Keep);
    let mut parts = Vec::new();
    let mut stats = kapprox_io::ColumnStats::new(["x"]);
    for shard in 0..ds.shards().len() {
        let mut c = CategoryCounts::new("cat");
        for chunk in ds.reader(count.clone().with_shards([shard]).with_chunk_rows(chunk_rows)).unwrap() {
            let chunk = chunk.unwrap();
            c.merge(&chunk.category_counts[0]).unwrap();
            stats.update(chunk.x.view());
        }
        parts.push(c);
    }
    if reverse_merge {
        parts.reverse();
    }
    let mut counts = CategoryCounts::new("cat");
    for p in &parts {
        counts.merge(p).unwrap();
    }
    let vocab = Vocabulary::from_counts(&counts, 5);
    let mean = stats.mean().to_vec();
    let read = ReadOptions::new(["x"])
        .with_label(Some("y"))
        .with_vocabularies([vocab.clone()])
        .with_nan_policy(NanPolicy::Impute)
        .with_impute_values(mean.clone())
        .with_chunk_rows(chunk_rows);
    let chunks: Vec<_> = ds.reader(read).unwrap().map(|c| c.unwrap()).collect();
    let views: Vec<_> = chunks.iter().map(|c| c.x.view()).collect();
    (counts, vocab, mean, ndarray::concatenate(ndarray::Axis(0), &views).unwrap())
}

#[test]
fn one_shard_seven_shards_any_chunking_give_the_same_vocabulary_and_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one");
    std::fs::create_dir(&one).unwrap();
    write(&one.join("part-0.parquet"), 0..N, false);
    let seven = tmp.path().join("seven");
    std::fs::create_dir(&seven).unwrap();
    let cuts = [0, 100, 101, 700, 1500, 1501, 2600, N];
    for (k, w) in cuts.windows(2).enumerate() {
        // Odd shards store the category as a dictionary: reconciled with strings.
        write(&seven.join(format!("part-{k}.parquet")), w[0]..w[1], k % 2 == 1);
    }
    // A null category is a missing value like a null number.
    let ds = Dataset::open(&one).unwrap();
    let err =
        ds.reader(ReadOptions::new(Vec::<String>::new()).with_categorical(["cat"])).unwrap().find_map(|c| c.err());
    let err = err.expect("the null in row 0 is refused").to_string();
    assert!(err.contains("row 0 (global row id 0), column \"cat\": expected a value, found null"), "{err}");
    let (counts, vocab, mean, x) = encode(&one, 1000, false);
    // Ties (alpha/beta, gamma/delta) broken by value; 5 values kept.
    assert_eq!(vocab.values, ["alpha", "beta", "delta", "gamma", "eps"]);
    assert_eq!(counts.missing, 100);
    assert_eq!(vocab.rows(), N as u64);
    assert_eq!(x.ncols(), 1 + 6);
    for (dir, chunk_rows, reverse) in [(&seven, 1000, false), (&seven, 77, true), (&one, 64, true)] {
        let (c, v, m, xs) = encode(dir, chunk_rows, reverse);
        assert_eq!((&c, &v), (&counts, &vocab), "{} by {chunk_rows}", dir.display());
        // The mean merges in another association: equal to rounding; the
        // indicator columns are bitwise equal.
        assert!((m[0] - mean[0]).abs() <= 1e-12 * mean[0].abs());
        assert_eq!(xs.slice(ndarray::s![.., 1..]), x.slice(ndarray::s![.., 1..]));
    }
}
