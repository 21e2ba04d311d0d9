//! The reader's memory bound, measured as the process's peak resident set.
//!
//! A test binary of its own: peak RSS is per process, and other tests
//! running in parallel threads would pollute it; the tests here take
//! [`ONE_AT_A_TIME`] for the same reason.

#[path = "integration/python.rs"]
mod python;
#[path = "integration/s3_server.rs"]
mod s3_server;

use arrow::array::{ArrayRef, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use kapprox_core::rng::{Domain, hash64};
use kapprox_io::{AtomicParquetWriter, Dataset, ReadOptions};
use std::sync::Arc;

/// Peak resident set size (`VmHWM`) in bytes.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets the peak to the current RSS (Linux ≥ 4.0).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Serialises the tests of this binary: each measures the process's peak.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes `n` rows of `d` incompressible Float64 columns (~`n·d·8` bytes).
fn write_big(path: &std::path::Path, n: usize, d: usize) {
    let batch = 65_536usize;
    let fields: Vec<Field> = (0..d).map(|j| Field::new(format!("c{j}"), DataType::Float64, false)).collect();
    let schema = Arc::new(Schema::new(fields));
    let mut w = AtomicParquetWriter::create(path, schema.clone()).unwrap();
    let mut r = 0;
    while r < n {
        let e = (r + batch).min(n);
        // Random mantissas: no codec can shrink them, so the file is ~n·d·8 bytes.
        let cols: Vec<ArrayRef> = (0..d)
            .map(|j| {
                let v = (r..e).map(|i| (hash64(1, Domain(0x3e3), (i * d + j) as u64) >> 11) as f64);
                Arc::new(Float64Array::from_iter_values(v)) as ArrayRef
            })
            .collect();
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap()).unwrap();
        r = e;
    }
    w.finish().unwrap();
}

/// The bound documented in `kapprox_io::reader`: decoded blocks, plus per
/// decode thread one row group's column chunks (mapped or fetched) and one
/// dictionary + data page per column (1 MiB each at most with default
/// writer settings), plus 8 MiB of allocator slack.
fn documented_bound(path: &std::path::Path, chunk: u64, prefetch: u64, threads: u64, d: u64) -> u64 {
    let md = parquet::file::serialized_reader::SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let md = parquet::file::reader::FileReader::metadata(&md);
    let max_rg = md.row_groups().iter().map(|rg| rg.compressed_size() as u64).max().unwrap();
    (prefetch + 2 * threads + 2) * chunk * d * 8 + threads * (max_rg + d * (2 << 20)) + (8 << 20)
}

/// Reads every row; returns the growth of the peak RSS.
fn peak_growth(ds: &Dataset, opts: ReadOptions, n: usize) -> u64 {
    let reader = ds.reader(opts).unwrap();
    assert!(reset_peak());
    let before = peak_rss().unwrap();
    let mut rows = 0;
    let mut checksum = 0.0;
    for c in reader {
        let c = c.unwrap();
        rows += c.n_rows();
        checksum += c.x[[0, 0]];
    }
    assert_eq!(rows, n);
    assert!(checksum > 0.0);
    peak_rss().unwrap().saturating_sub(before)
}

#[test]
fn reading_a_large_shard_does_not_grow_resident_memory_with_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if peak_rss().is_none() || !reset_peak() {
        println!("skipping: /proc/self/status or clear_refs unavailable");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.parquet");
    let (n, d) = (1_000_000usize, 16usize);
    write_big(&path, n, d);
    let file_size = std::fs::metadata(&path).unwrap().len();
    assert!(file_size > 120 << 20, "file of {file_size} bytes");
    let ds = Dataset::open(&path).unwrap();
    let columns: Vec<String> = ds.columns().to_vec();

    let (chunk, prefetch, threads) = (8192u64, 4u64, 2u64);
    let opts = |release: bool| {
        ReadOptions::new(columns.clone())
            .with_chunk_rows(chunk as usize)
            .with_prefetch(prefetch as usize)
            .with_threads(threads as usize)
            .with_release_pages(release)
    };
    let released = peak_growth(&ds, opts(true), n);
    let kept = peak_growth(&ds, opts(false), n);
    let bound = documented_bound(&path, chunk, prefetch, threads, d as u64);
    println!("file {file_size} B; bound {bound} B; peak growth: {released} B with release, {kept} B without");
    assert!(released < bound, "peak RSS grew by {released} bytes (> bound {bound}) reading a {file_size}-byte file");
    // Without releasing, every mapped page stays resident and the bound is
    // exceeded: the measure can tell the difference.
    assert!(kept > bound && kept > file_size * 3 / 4, "without release the peak grew by only {kept} bytes");
}

/// Object storage: a shard larger than the bound, read through ranged
/// requests, keeps the peak within the same documented bound (the fetched
/// column chunks of one row group per thread replace the mapped pages).
#[test]
#[ignore = "slow: uploads a 128 MB object to a local S3 server"]
fn reading_a_large_remote_shard_stays_within_the_bound() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if peak_rss().is_none() || !reset_peak() {
        println!("skipping: /proc/self/status or clear_refs unavailable");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let upload = tmp.path().join("upload");
    std::fs::create_dir_all(upload.join("big")).unwrap();
    let path = upload.join("big/part-0.parquet");
    let (n, d) = (1_000_000usize, 16usize);
    write_big(&path, n, d);
    let file_size = std::fs::metadata(&path).unwrap().len();
    let Some(s3) = s3_server::S3::start(&upload, "kapprox-big", false) else { return };
    s3.set_env(&s3.key_id, &s3.secret);
    let ds = Dataset::open("s3://kapprox-big/big").unwrap();
    let (chunk, prefetch, threads) = (8192u64, 4u64, 2u64);
    let opts = ReadOptions::new(ds.columns().to_vec())
        .with_chunk_rows(chunk as usize)
        .with_prefetch(prefetch as usize)
        .with_threads(threads as usize);
    let growth = peak_growth(&ds, opts, n);
    let bound = documented_bound(&path, chunk, prefetch, threads, d as u64);
    println!("object {file_size} B; bound {bound} B; peak growth {growth} B");
    assert!(bound < file_size, "the object must be larger than the bound");
    assert!(growth < bound, "peak RSS grew by {growth} bytes (> bound {bound}) reading a {file_size}-byte object");
}
