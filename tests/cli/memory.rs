//! Out of core: the peak resident memory of `fit` is bounded by a formula
//! in the chunk size, the columns and the features, and does not grow with
//! the number of rows.

use kapprox::io::{DEFAULT_PREFETCH, Dataset};

const FEATURES: usize = 54;
const L: usize = 256;
const CHUNK_ROWS: usize = 4096;
const ROWS_PER_SHARD: u64 = 500_000;
/// Code, thread stacks, allocator arenas and the like: what the binary holds
/// whatever the data.
const FIXED_ALLOWANCE: u64 = 64 << 20;

/// The documented bound for a fit pass over `train` (ARCHITECTURE.md,
/// "Memory", with the reader's terms from `kapprox_io::reader`):
///
/// ```text
/// (P + 2T + 2) · C · d · 8       reader: decoded blocks in flight
/// + T · (largest row group)      reader: mapped pages of the row groups being decoded
/// + T · d · 2 MiB                reader: parquet dictionary + data page per column
/// + C · l · 8                    one feature buffer
/// + statistics_bytes             the accumulators (reported by fit)
/// + FIXED_ALLOWANCE
/// ```
///
/// with `P` the prefetch, `T = min(cores, P)` the decode threads, `C` the
/// chunk rows, `d` the columns read (features + label) and `l` the features.
/// No term depends on the number of rows.
fn bound(train: &std::path::Path, statistics_bytes: u64) -> u64 {
    let p = DEFAULT_PREFETCH as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let t = cores.min(p);
    let (c, d, l) = (CHUNK_ROWS as u64, FEATURES as u64 + 1, L as u64);
    let ds = Dataset::open(train).unwrap();
    // Shards of random doubles hardly compress: the file size over the row
    // groups is the compressed size of one row group.
    let row_group =
        ds.shards().iter().map(|s| std::fs::metadata(&s.path).unwrap().len() / s.n_row_groups as u64).max().unwrap();
    (p + 2 * t + 2) * c * d * 8 + t * row_group + t * d * (2 << 20) + c * l * 8 + statistics_bytes + FIXED_ALLOWANCE
}

kapprox_test!(
    #[ignore = "slow: out-of-core fit on 4M rows"]
    fit_peak_memory_does_not_grow_with_rows,
    |dir| {
        let mut peaks = Vec::new();
        for rows in [1_000_000u64, 4_000_000] {
            let out = format!("data-{rows}");
            dir.cmd(&["generate", "--out", &out, "--rows", &rows.to_string(), "--features", &FEATURES.to_string()])
                .args(&["--classes", "0", "--rows-per-shard", &ROWS_PER_SHARD.to_string()])
                .stdout();
            let shards = Dataset::open(dir.join(&out)).unwrap().shards().len();
            assert_eq!(shards as u64, rows / ROWS_PER_SHARD);
            let report = dir
                .cmd(&["fit", "--train", &out, "--out", "m.safetensors", "--features", &L.to_string()])
                .args(&["--sigma", "3", "--alpha", "1", "--chunk-rows", &CHUNK_ROWS.to_string(), "--json"])
                .json();
            assert_eq!(report["report"]["rows"], rows, "{report}");
            let peak = report["peak_rss_bytes"].as_u64().expect("peak_rss_bytes reported on Linux");
            let stats = report["report"]["statistics_bytes"].as_u64().unwrap();
            let bound = bound(&dir.join(&out), stats);
            eprintln!(
                "{rows} rows in {shards} shards: peak RSS {:.1} MiB, bound {:.1} MiB (statistics {:.1} MiB)",
                peak as f64 / 1048576.0,
                bound as f64 / 1048576.0,
                stats as f64 / 1048576.0
            );
            assert!(peak < bound, "{rows} rows: peak RSS {peak} B exceeds the documented bound {bound} B");
            peaks.push(peak);
            // Only one dataset on disk at a time (the 4M one is 2 GiB).
            std::fs::remove_dir_all(dir.join(&out)).unwrap();
        }
        let ratio = peaks[1] as f64 / peaks[0] as f64;
        eprintln!("peak RSS at 4M rows / at 1M rows = {ratio:.3}");
        assert!(ratio < 1.2, "peak RSS grew from {} to {} B with 4x the rows", peaks[0], peaks[1]);
    }
);
