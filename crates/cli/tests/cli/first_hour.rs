//! A new user's first hour: commands that work on their own defaults, maps
//! fitted once and reused, selection at the edge of a grid said out loud,
//! and featurize memory bounded by the chunk size.

use crate::util::{Dir, check_error, cpu_test, cpu_train};
use kapprox::io::read_columns;

fn z_names(l: usize) -> Vec<String> {
    (0..l).map(|j| format!("z{j}")).collect()
}

kapprox_test!(featurize_and_kernel_error_run_on_their_defaults, |dir| {
    dir.convert(&cpu_test(), "test", &[]);
    // featurize: --sigma auto, rff, 1024 features; the label is carried.
    dir.cmd(&["featurize", "--data", "test", "--out", "f"]).stdout();
    let z = read_columns(dir.join("f"), &z_names(1024)).unwrap();
    assert_eq!(z.dim(), (819, 1024));
    let line = dir.cmd(&["kernel-error", "--data", "test"]).stdout();
    assert!(line.starts_with("rff on 819 rows"), "{line}");
    // The help of a one-bandwidth command shows its own default, and the
    // maps it cannot run are not offered.
    let help = dir.cmd(&["featurize", "--help"]).stdout();
    assert!(help.contains("[default: auto]") && !help.contains("validation split"), "{help}");
    assert!(!help.contains("exact"), "featurize offers --map exact:\n{help}");
    // --label none: every column is an input, nothing is carried.
    dir.cmd(&["featurize", "--data", "test", "--out", "g", "--label", "none", "--features", "8"]).stdout();
    let cols = crate::util::columns(&dir.join("g"));
    assert_eq!(cols, [z_names(8), vec!["row_id".to_string()]].concat());
});

// Acceptance 2: train and test features of the documented workflow
// (featurize --save-map, then --model MAP) equal those of fit +
// featurize --model, bit for bit, and the test directory's own statistics
// play no part.
kapprox_test!(a_saved_map_gives_the_features_of_a_fitted_model, |dir| {
    dir.convert(&cpu_train(), "train", &[]);
    dir.convert(&cpu_test(), "test", &[]);
    let l = "256";
    dir.cmd(&["featurize", "--data", "train", "--out", "ftrain", "--features", l, "--save-map", "map.safetensors"])
        .stdout();
    dir.cmd(&["featurize", "--data", "test", "--out", "ftest", "--model", "map.safetensors"]).stdout();
    dir.cmd(&["fit", "--train", "train", "--out", "m.safetensors", "--features", l, "--sigma", "auto"]).stdout();
    dir.cmd(&["featurize", "--data", "train", "--out", "mtrain", "--model", "m.safetensors"]).stdout();
    dir.cmd(&["featurize", "--data", "test", "--out", "mtest", "--model", "m.safetensors"]).stdout();
    for (a, b) in [("ftrain", "mtrain"), ("ftest", "mtest")] {
        let (za, zb) =
            (read_columns(dir.join(a), &z_names(256)).unwrap(), read_columns(dir.join(b), &z_names(256)).unwrap());
        assert!(za == zb, "{a} and {b} differ");
    }
    // Featurizing the test directory on its own fits other statistics: the
    // saved map is what makes train and test consistent.
    dir.cmd(&["featurize", "--data", "test", "--out", "own", "--features", l]).stdout();
    assert!(
        read_columns(dir.join("own"), &z_names(256)).unwrap()
            != read_columns(dir.join("ftest"), &z_names(256)).unwrap()
    );
    let err = dir.cmd(&["predict", "--model", "map.safetensors", "--data", "test", "--out", "p"]).fails();
    check_error(&err, "this is a map file (featurize --save-map) without ridge weights: fit a model to predict");
    let err =
        dir.cmd(&["featurize", "--data", "test", "--out", "x", "--model", "m.safetensors", "--save-map", "y"]).fails();
    assert!(err.contains("--save-map") && err.contains("--model"), "{err}");
});

kapprox_test!(selection_at_the_edge_of_a_grid_is_reported, |dir| {
    dir.convert(&cpu_test(), "test", &[]);
    let out = dir
        .cmd(&["fit", "--train", "test", "--out", "m.safetensors", "--features", "64", "--sigma", "0.01,0.02"])
        .args(&["--alpha", "1e-12,1e-11", "--json"])
        .json();
    let warnings: Vec<String> =
        out["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect();
    // Far too small bandwidths: the larger candidate wins, at the top edge;
    // tiny penalties: the larger one wins too.
    assert!(warnings.iter().any(|w| w.starts_with("sigma 0.0200 is the largest of the 2 --sigma")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("is the largest of the 2 --alpha values")), "{warnings:?}");
    // Nyström on more landmarks than the kernel matrix has numerical rank.
    let out = dir
        .cmd(&["fit", "--train", "test", "--out", "n.safetensors", "--map", "nystrom", "--features", "400"])
        .args(&["--sigma", "50", "--rel-tol", "1e-6", "--json"])
        .json();
    let kept = out["report"]["n_features"].as_u64().unwrap();
    assert!(kept < 400, "a very wide kernel on 400 landmarks keeps all of them: {out}");
    let text = out["warnings"].to_string();
    assert!(text.contains(&format!("nystrom kept {kept} of 400 features")), "{text}");
});

/// The featurize bound: the reader's chunks, one feature buffer and the
/// writer's row group (`max(C · l, 64 MiB / 8)` values, FORMAT.md), plus
/// the binary's fixed allowance. `C` chunk rows, `d` columns read.
fn featurize_bound(chunk_rows: u64, d: u64, l: u64) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let p = kapprox::io::DEFAULT_PREFETCH as u64;
    let t = cores.min(p);
    let reader = (p + 2 * t + 2) * chunk_rows * d * 8 + t * d * (2 << 20);
    let buffers = 2 * chunk_rows * l * 8;
    let row_group = (chunk_rows * l * 8).max(64 << 20);
    reader + buffers + row_group + (96 << 20)
}

fn featurize_peak(dir: &Dir, rows: u64, l: usize, chunk: usize) -> (u64, u64) {
    let data = format!("g{rows}");
    if !dir.join(&data).exists() {
        dir.cmd(&["generate", "--out", &data, "--rows", &rows.to_string(), "--columns", "20", "--rows-per-shard"])
            .args(&[&rows.to_string()])
            .stdout();
    }
    let out = dir
        .cmd(&["featurize", "--data", &data, "--out", "f", "--features", &l.to_string(), "--sigma", "3"])
        .args(&["--chunk-rows", &chunk.to_string(), "--json"])
        .json();
    assert_eq!(out["report"]["rows"], rows);
    std::fs::remove_dir_all(dir.join("f")).unwrap();
    (out["peak_rss_bytes"].as_u64().expect("peak_rss_bytes on Linux"), featurize_bound(chunk as u64, 21, l as u64))
}

// The output is written in row groups of about one chunk (or 64 MiB), so
// the peak does not follow the row count: before, a row group of up to
// 65 536 rows was buffered whole, here all 30 000 rows · 1024 doubles
// (234 MiB), above this bound.
kapprox_test!(featurize_memory_is_bounded_by_the_chunk_size, |dir| {
    let (peak, bound) = featurize_peak(&dir, 30_000, 1024, 512);
    eprintln!("featurize 30k rows, l = 1024, chunk 512: peak {} MiB, bound {} MiB", peak >> 20, bound >> 20);
    assert!(peak < bound, "peak RSS {peak} B exceeds the bound {bound} B");
});

// Acceptance 3: l = 4096 on 100k rows (3.3 GB of features) with
// --chunk-rows 1024 and 8192.
kapprox_test!(
    #[ignore = "slow: writes 3.3 GB of features twice"]
    featurize_at_l_4096_on_100k_rows_stays_within_its_bound,
    |dir| {
        for chunk in [1024, 8192] {
            let (peak, bound) = featurize_peak(&dir, 100_000, 4096, chunk);
            eprintln!(
                "featurize 100k rows, l = 4096, chunk {chunk}: peak {} MiB, bound {} MiB",
                peak >> 20,
                bound >> 20
            );
            assert!(peak < bound, "chunk {chunk}: peak RSS {peak} B exceeds the bound {bound} B");
        }
    }
);
