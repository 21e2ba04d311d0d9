//! The reader's memory bound, measured as the process's peak resident set.
//!
//! A test binary of its own: peak RSS is per process, and other tests
//! running in parallel threads would pollute it.

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

#[test]
fn reading_a_large_shard_does_not_grow_resident_memory_with_its_size() {
    if peak_rss().is_none() || !reset_peak() {
        println!("skipping: /proc/self/status or clear_refs unavailable");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.parquet");
    let (n, d, batch) = (1_000_000usize, 16usize, 65_536usize);
    let fields: Vec<Field> = (0..d).map(|j| Field::new(format!("c{j}"), DataType::Float64, false)).collect();
    let schema = Arc::new(Schema::new(fields));
    let mut w = AtomicParquetWriter::create(&path, schema.clone()).unwrap();
    let mut r = 0;
    while r < n {
        let e = (r + batch).min(n);
        // Random mantissas: snappy cannot shrink them, so the file is ~n·d·8 bytes.
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
    let file_size = std::fs::metadata(&path).unwrap().len();
    assert!(file_size > 120 << 20, "file of {file_size} bytes");
    let ds = Dataset::open(&path).unwrap();
    let columns: Vec<String> = ds.columns().to_vec();

    let (chunk, prefetch, threads) = (8192u64, 4u64, 2u64);
    let growth = |release: bool| {
        let opts = ReadOptions::new(columns.clone())
            .with_chunk_rows(chunk as usize)
            .with_prefetch(prefetch as usize)
            .with_threads(threads as usize)
            .with_release_pages(release);
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
    };
    let released = growth(true);
    let kept = growth(false);
    // The bound documented in `kapprox_io::reader`: decoded blocks, plus per
    // decode thread one mapped row group and one dictionary + data page per
    // column (1 MiB each at most with default writer settings), plus 8 MiB
    // of allocator slack.
    let md = parquet::file::serialized_reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let md = parquet::file::reader::FileReader::metadata(&md);
    let max_rg = md.row_groups().iter().map(|rg| rg.compressed_size() as u64).max().unwrap();
    let d = d as u64;
    let bound = (prefetch + 2 * threads + 2) * chunk * d * 8 + threads * (max_rg + d * (2 << 20)) + (8 << 20);
    println!("file {file_size} B; bound {bound} B; peak growth: {released} B with release, {kept} B without");
    assert!(released < bound, "peak RSS grew by {released} bytes (> bound {bound}) reading a {file_size}-byte file");
    // Without releasing, every mapped page stays resident and the bound is
    // exceeded: the measure can tell the difference.
    assert!(kept > bound && kept > file_size * 3 / 4, "without release the peak grew by only {kept} bytes");
}
