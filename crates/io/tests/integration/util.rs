//! Fixtures shared by the integration tests.

use arrow::array::{ArrayRef, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use kapprox_core::rng::{Domain, unit};
use kapprox_io::{AtomicParquetWriter, Chunk, Dataset, ReadOptions};
use ndarray::{Array1, Array2, s};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the shared real datasets live, relative to this crate.
pub(crate) fn shared_data(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(rel);
    if p.exists() {
        Some(p)
    } else {
        println!("skipping: {} not found", p.display());
        None
    }
}

/// Deterministic test matrix `(n, d)` with a few digits of spread.
pub(crate) fn matrix(n: usize, d: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |(i, j)| {
        let u = unit(seed, Domain(0x7e57), (i * d + j) as u64);
        ((u * 2000.0 - 1000.0) * 1e3).round() / 1e3 + j as f64
    })
}

/// Schema of Float64 columns `c0..`, plus `y` if `label`.
pub(crate) fn f64_schema(d: usize, label: bool) -> SchemaRef {
    let mut f: Vec<Field> = (0..d).map(|j| Field::new(format!("c{j}"), DataType::Float64, true)).collect();
    if label {
        f.push(Field::new("y", DataType::Float64, true));
    }
    Arc::new(Schema::new(f))
}

/// Writes rows `x` (and `y`) to `path` as Float64 columns, in batches of
/// `batch` rows, with row groups of `rg` rows.
pub(crate) fn write_f64(path: &Path, x: &Array2<f64>, y: Option<&Array1<f64>>, rg: usize, batch: usize) {
    let schema = f64_schema(x.ncols(), y.is_some());
    let mut w = AtomicParquetWriter::create_with(path, schema.clone(), rg, Vec::new()).unwrap();
    let mut r = 0;
    while r < x.nrows() {
        let e = (r + batch).min(x.nrows());
        let mut cols: Vec<ArrayRef> = x
            .slice(s![r..e, ..])
            .columns()
            .into_iter()
            .map(|c| Arc::new(Float64Array::from_iter_values(c.iter().copied())) as ArrayRef)
            .collect();
        if let Some(y) = y {
            cols.push(Arc::new(Float64Array::from_iter_values(y.slice(s![r..e]).iter().copied())));
        }
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap()).unwrap();
        r = e;
    }
    w.finish().unwrap();
}

/// Splits `x`/`y` into `k` shards of near-equal size under `dir`.
pub(crate) fn write_shards(dir: &Path, x: &Array2<f64>, y: Option<&Array1<f64>>, k: usize, rg: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let n = x.nrows();
    for i in 0..k {
        let (a, b) = (i * n / k, (i + 1) * n / k);
        let ys = y.map(|y| y.slice(s![a..b]).to_owned());
        write_f64(&dir.join(format!("part-{i:05}.parquet")), &x.slice(s![a..b, ..]).to_owned(), ys.as_ref(), rg, 777);
    }
}

/// Everything a reader yields, flattened.
#[derive(Debug, PartialEq)]
pub(crate) struct All {
    pub(crate) ids: Vec<u64>,
    pub(crate) x: Array2<f64>,
    pub(crate) y: Option<Array1<f64>>,
    pub(crate) chunks: Vec<(usize, u64, usize, usize)>,
    pub(crate) skipped: u64,
}

/// Reads every chunk and checks the per-chunk invariants on the way.
pub(crate) fn read_all(ds: &Dataset, opts: ReadOptions) -> All {
    let chunk_rows = opts.chunk_rows;
    let d = opts.columns.len();
    let label = opts.label.is_some();
    let mut reader = ds.reader(opts).unwrap();
    let mut ids = Vec::new();
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut chunks = Vec::new();
    for c in reader.by_ref() {
        let c: Chunk = c.unwrap();
        let shard = &ds.shards()[c.shard];
        assert!(c.n_rows() <= chunk_rows, "chunk of {} rows > {chunk_rows}", c.n_rows());
        assert!(c.x.is_standard_layout());
        assert_eq!(c.x.ncols(), d);
        assert_eq!(c.row_ids.len(), c.n_rows());
        let src = c.source_rows();
        assert!(src.start >= shard.first_row && src.end <= shard.first_row + shard.n_rows, "chunk crosses its shard");
        assert_eq!((src.start - shard.first_row) % chunk_rows as u64, 0, "chunk off the grid");
        if c.skipped == 0 {
            assert_eq!(c.row_ids.as_range(), Some(src.clone()));
        }
        for i in 0..c.n_rows() {
            assert_eq!(c.row_id(i), c.row_ids.iter().nth(i).unwrap());
        }
        ids.extend(c.row_ids.iter());
        xs.push(c.x.clone());
        if label {
            ys.push(c.y.clone().expect("label requested"));
        } else {
            assert!(c.y.is_none());
        }
        chunks.push((c.shard, c.first_row, c.n_rows(), c.skipped));
    }
    let xv: Vec<_> = xs.iter().map(|a| a.view()).collect();
    let x = if xv.is_empty() { Array2::zeros((0, d)) } else { ndarray::concatenate(ndarray::Axis(0), &xv).unwrap() };
    let y = label.then(|| {
        let yv: Vec<_> = ys.iter().map(|a| a.view()).collect();
        if yv.is_empty() { Array1::zeros(0) } else { ndarray::concatenate(ndarray::Axis(0), &yv).unwrap() }
    });
    All { ids, x, y, chunks, skipped: reader.rows_skipped() }
}

/// Asserts that `text` contains every needle.
#[track_caller]
pub(crate) fn assert_contains(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "expected {n:?} in:\n{text}");
    }
}
