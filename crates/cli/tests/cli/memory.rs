//! Out of core: the peak resident memory of `fit` is bounded by a formula
//! in the chunk size, the columns and the features, and does not grow with
//! the number of rows; a σ × α grid holds one set of statistics per σ, as
//! stated, and `--max-memory` refuses a grid that would not fit.

use crate::util::check_error_parts;
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
/// No term depends on the number of rows. (The documented bound's rows kept
/// for a later pass, `S`, are 0 here: a one-pass fit keeps none, and the
/// multi-pass fits below read more rows than the store's 256 MiB.)
fn bound(train: &std::path::Path, statistics_bytes: u64) -> u64 {
    reader_and_buffer_bound(train, CHUNK_ROWS, FEATURES + 1, L) + statistics_bytes + FIXED_ALLOWANCE
}

/// The reader's terms and the feature buffer of the bound above.
fn reader_and_buffer_bound(train: &std::path::Path, chunk_rows: usize, columns: usize, l: usize) -> u64 {
    let p = DEFAULT_PREFETCH as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let t = cores.min(p);
    let (c, d, l) = (chunk_rows as u64, columns as u64, l as u64);
    let ds = Dataset::open(train).unwrap();
    // Shards of random doubles hardly compress: the file size over the row
    // groups is the compressed size of one row group.
    let row_group =
        ds.shards().iter().map(|s| std::fs::metadata(&s.path).unwrap().len() / s.n_row_groups as u64).max().unwrap();
    (p + 2 * t + 2) * c * d * 8 + t * row_group + t * d * (2 << 20) + c * l * 8
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

// Issue 3, acceptance 5: the statistics of a σ × α grid are one ridge
// accumulator per σ and split part, `S · parts · ((l+1+k)² + 512 (l+1+k))`
// doubles (README, "Passes and memory"); the α values cost nothing. The
// test checks the reported number against that formula, the peak RSS
// against the documented bound on data 20x the chunk size, that the grid
// reads the data once, and that `--max-memory` below the statistics
// refuses before reading, naming the numbers, with no model written.
kapprox_test!(grid_search_memory_is_stated_bounded_and_refused_when_too_large, |dir| {
    const ROWS: u64 = 40_000;
    const D: usize = 10;
    const CHUNK: usize = 2048;
    const L: usize = 1024;
    const SIGMAS: u64 = 4;
    dir.cmd(&["generate", "--out", "g", "--rows", &ROWS.to_string(), "--features", &D.to_string()])
        .args(&["--classes", "0", "--rows-per-shard", "10000"])
        .stdout();
    let grid = ["--sigma", "1,2,4,8", "--alpha", "1e-4..1e1", "--chunk-rows", "2048"];
    let report = dir
        .cmd(&["fit", "--train", "g", "--out", "m.safetensors", "--features", &L.to_string()])
        .args(&grid)
        .args(&["--json"])
        .json();
    let r = &report["report"];
    assert_eq!(r["passes"], 1, "a σ x α grid reads the data once: {report}");
    assert_eq!(r["candidates"].as_array().map(Vec::len), Some(SIGMAS as usize));
    assert_eq!(r["candidates"][0]["curve"].as_array().map(Vec::len), Some(8), "8 α values per σ");
    let w = (L + 1 + 1) as u64;
    let stated = SIGMAS * 2 * (w * w + 512 * w) * 8;
    assert_eq!(r["statistics_bytes"], stated, "hold-out: 2 parts per σ");
    // Selection and refit solve one candidate at a time: the training
    // system (total − held-out part), its eigenvectors and faer's
    // workspace, about 4 w² doubles.
    let solve = 4 * w * w * 8;
    let bound = reader_and_buffer_bound(&dir.join("g"), CHUNK, D + 1, L) + stated + solve + FIXED_ALLOWANCE;
    let peak = report["peak_rss_bytes"].as_u64().expect("peak_rss_bytes reported on Linux");
    eprintln!(
        "grid 4 σ x 8 α, l = {L}: statistics {:.1} MiB, peak RSS {:.1} MiB, bound {:.1} MiB",
        stated as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        bound as f64 / 1048576.0
    );
    assert!(peak < bound, "peak RSS {peak} B exceeds the stated bound {bound} B");

    let err = dir
        .cmd(&["fit", "--train", "g", "--out", "refused.safetensors", "--features", &L.to_string()])
        .args(&grid)
        .args(&["--max-memory", "50M"])
        .fails();
    check_error_parts(
        &err,
        &[
            "4 bandwidth candidate(s) with 1024 accumulated features and 2 split parts need 96.3 MiB",
            "more than --max-memory 50.0 MiB",
        ],
    );
    assert!(!dir.join("refused.safetensors").exists(), "a refused fit wrote a model");
});

// The passes before the fit pass hold, per bandwidth candidate, a `d × l`
// product `Fᵀ(FQ)` plus `Q` (`Ω` in the first pass) and the base
// features of one chunk (`chunk_rows × d`); the prepare pass holds a
// reservoir of at most `max(m, 1000) × columns` values. Nothing grows with
// the rows: TEFM with two sketch passes and Nyström with a sampling pass,
// at 1M and 3M rows, stay under the bound and within 20% of each other.
kapprox_test!(
    #[ignore = "slow: TEFM sketch passes and the Nyström sampling pass on 3M rows"]
    sketch_and_sampling_passes_do_not_grow_with_rows,
    |dir| {
        const TEFM_L: usize = 128;
        const TEFM_D: usize = 512;
        const NYSTROM_M: usize = 512;
        let mut peaks: Vec<(String, u64)> = Vec::new();
        for rows in [1_000_000u64, 3_000_000] {
            let out = format!("data-{rows}");
            dir.cmd(&["generate", "--out", &out, "--rows", &rows.to_string(), "--features", &FEATURES.to_string()])
                .args(&["--classes", "0", "--rows-per-shard", &ROWS_PER_SHARD.to_string()])
                .stdout();
            let runs: [(&str, Vec<&str>, usize, u64); 2] = [
                (
                    "tefm-g multi-pass",
                    vec![
                        "--map",
                        "tefm-g",
                        "--features",
                        "128",
                        "--sketch-features",
                        "512",
                        "--tefm-strategy",
                        "multi-pass",
                    ],
                    TEFM_D,
                    3,
                ),
                ("nystrom", vec!["--map", "nystrom", "--features", "512", "--sigma", "auto"], NYSTROM_M, 2),
            ];
            for (name, args, width, passes) in runs {
                let mut cmd = dir.cmd(&["fit", "--train", &out, "--out", "m.safetensors"]);
                cmd = cmd.args(&args).args(&["--alpha", "1", "--chunk-rows", &CHUNK_ROWS.to_string(), "--json"]);
                if name.starts_with("tefm") {
                    cmd = cmd.args(&["--sigma", "3"]);
                }
                let report = cmd.json();
                assert_eq!(report["report"]["passes"], passes, "{name}: {report}");
                let peak = report["peak_rss_bytes"].as_u64().expect("peak_rss_bytes reported on Linux");
                let stats = report["report"]["statistics_bytes"].as_u64().unwrap();
                // The fit pass's bound with the base width, plus the sketch
                // (`d × l`, twice in a power iteration: Q and the product) or
                // the landmarks and their kernel block (`m × columns + m²`).
                let extra = (2 * TEFM_D * TEFM_L * 8 + NYSTROM_M * (FEATURES + NYSTROM_M) * 8) as u64;
                let bound = reader_and_buffer_bound(&dir.join(&out), CHUNK_ROWS, FEATURES + 1, width)
                    + stats
                    + extra
                    + FIXED_ALLOWANCE;
                eprintln!(
                    "{name}, {rows} rows: peak RSS {:.1} MiB, bound {:.1} MiB",
                    peak as f64 / 1048576.0,
                    bound as f64 / 1048576.0
                );
                assert!(peak < bound, "{name}, {rows} rows: peak RSS {peak} B exceeds the bound {bound} B");
                peaks.push((name.to_string(), peak));
            }
            std::fs::remove_dir_all(dir.join(&out)).unwrap();
        }
        for i in 0..2 {
            let (name, small) = &peaks[i];
            let large = peaks[i + 2].1;
            let ratio = large as f64 / *small as f64;
            eprintln!("{name}: peak RSS at 3M rows / at 1M rows = {ratio:.3}");
            assert!(ratio < 1.2, "{name}: peak RSS grew from {small} to {large} B with 3x the rows");
        }
    }
);
