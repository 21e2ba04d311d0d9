//! A new user's first hour: commands that work on their own defaults, maps
//! fitted once and reused, selection at the edge of a grid said out loud,
//! and featurize memory bounded by the chunk size.

use crate::util::{Dir, check_error, check_error_parts, cpu_test, cpu_train};
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

/// The featurize bound of ARCHITECTURE.md ("Memory"): the reader's chunks,
/// the feature buffer and its Arrow batch, the writer's row group
/// (`max(C · l, 64 MiB / 8)` values, FORMAT.md) held twice (the open pages'
/// values and their encoded copy), the writer's per-column state (16 KiB a
/// column: encoders, page buffers, statistics), no compressor state (features
/// are written uncompressed by default), plus the binary's fixed allowance. `C` chunk
/// rows, `d` columns read.
fn featurize_bound(chunk_rows: u64, d: u64, l: u64) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let p = kapprox::io::DEFAULT_PREFETCH as u64;
    let t = cores.min(p);
    let reader = (p + 2 * t + 2) * chunk_rows * d * 8 + t * d * (2 << 20);
    let buffers = 2 * chunk_rows * l * 8;
    let row_group = (chunk_rows * l * 8).max(64 << 20);
    reader + buffers + 2 * row_group + l * (16 << 10) + (96 << 20)
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

// TEFM over a Nyström base needs at least --features base features; on data
// of low rank the base keeps fewer, and the error says so (before: "cannot
// orthonormalise 24 columns in dimension 16").
kapprox_test!(tefm_over_a_nystrom_base_of_low_rank_says_what_the_base_kept, |dir| {
    // 16 distinct points (a 4 × 4 grid): every kernel matrix has rank ≤ 16.
    let mut csv = String::from("a,b,y\n");
    for i in 0..400 {
        let (a, b) = ((i % 4) as f64, (i / 4 % 4) as f64);
        csv.push_str(&format!("{a},{b},{}\n", a * b));
    }
    let data = dir.write("grid.csv", &csv);
    dir.convert(&data, "grid", &[]);
    let err = dir
        .cmd(&["fit", "--train", "grid", "--out", "m.safetensors", "--map", "tefm-g", "--base", "nystrom"])
        .args(&["--features", "24", "--sketch-features", "64", "--sigma", "1"])
        .fails();
    check_error_parts(
        &err,
        &["tefm over nystrom at sigma 1.0000", "the Nyström base kept only", "ask for at most", "--features"],
    );
    let kept: usize = err.split("kept only ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(kept <= 16, "{err}");
});

// --extend-grid on a target whose best penalty lies below the default grid
// (a noise-free linear target: ever smaller penalties fit it better), and
// with bandwidth candidates far below the best one. Without the flag the
// choices sit at the edge (and say so); with it the α grid moves past the
// edge from the same statistics, the σ candidates by one more fit, and the
// validation error drops.
kapprox_test!(extend_grid_moves_sigma_and_alpha_past_the_edge_of_their_grids, |dir| {
    let mut csv = String::from("a,b,c,y\n");
    for i in 0..3000usize {
        let u = |k: usize| ((i * 7919 + k * 104_729) % 1009) as f64 / 1009.0 * 2.0 - 1.0;
        let (a, b, c) = (u(1), u(2), u(3));
        csv.push_str(&format!("{a},{b},{c},{}\n", a + 2.0 * b - c));
    }
    let data = dir.write("linear.csv", &csv);
    dir.convert(&data, "linear", &[]);
    let fit = |out: &str, extra: &[&str]| {
        dir.cmd(&["fit", "--train", "linear", "--out", out, "--features", "128", "--json"]).args(extra).json()
    };
    let mse = |r: &serde_json::Value| {
        let best = r["candidates"].as_array().unwrap().iter().find(|c| c["sigma"] == r["sigma"]).unwrap();
        best["validation_mse"].as_f64().unwrap()
    };
    let sigmas = |r: &serde_json::Value| -> Vec<f64> {
        r["candidates"].as_array().unwrap().iter().map(|c| c["sigma"].as_f64().unwrap()).collect()
    };
    // α: the default grid, extended downwards with no extra pass.
    let plain = fit("plain.safetensors", &[]);
    let warnings = plain["warnings"].to_string();
    assert!(warnings.contains("is the smallest of the 17 --alpha values"), "{warnings}");
    assert!(plain["report"].get("extended").is_none(), "{plain}");
    let ext = fit("extended.safetensors", &["--extend-grid"]);
    let (p, e) = (&plain["report"], &ext["report"]);
    let smallest_alpha = p["candidates"][0]["curve"][0]["alpha"].as_f64().unwrap();
    assert!(e["alpha"].as_f64().unwrap() < smallest_alpha, "alpha {} within the default grid", e["alpha"]);
    assert!(e["extended"]["alphas_added"].as_u64().unwrap() >= 8, "{e}");
    // α grows from the same statistics: only a σ extension adds passes.
    let extra = e["extended"]["extra_passes"].as_u64().unwrap();
    assert_eq!(e["passes"].as_u64().unwrap(), p["passes"].as_u64().unwrap() + extra, "{e}");
    assert!(mse(e) < mse(p), "extended {} vs plain {}", mse(e), mse(p));
    // σ: candidates far below the best, extended upwards by one more fit.
    let narrow = ["--sigma", "auto*0.01,auto*0.02", "--alpha", "1e-6"];
    let plain = fit("narrow.safetensors", &narrow);
    assert!(plain["warnings"].to_string().contains("is the largest of the 2 --sigma candidates"), "{plain}");
    let ext = fit("narrow-extended.safetensors", &[&narrow[..], &["--extend-grid"]].concat());
    let (p, e) = (&plain["report"], &ext["report"]);
    assert_eq!(e["extended"]["sigmas_added"].as_array().unwrap().len(), 3, "{e}");
    let largest = sigmas(p).into_iter().fold(0.0, f64::max);
    assert!(e["sigma"].as_f64().unwrap() > largest, "sigma {} within the given candidates", e["sigma"]);
    assert_eq!(sigmas(e).len(), 5, "{e}");
    let extra = e["extended"]["extra_passes"].as_u64().unwrap();
    assert!(extra >= 1 && e["passes"].as_u64().unwrap() == p["passes"].as_u64().unwrap() + extra, "{e}");
    assert!(mse(e) < mse(p), "extended {} vs plain {}", mse(e), mse(p));
    // The model records the extension; the text report says it.
    assert!(dir.model("extended.safetensors").doc.training["extended"]["sigmas_added"].is_array());
    let o = dir.cmd(&["fit", "--train", "linear", "--out", "t.safetensors", "--features", "32", "--extend-grid"]);
    let o = o.into_command().output().unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("--extend-grid: ") && text.contains("sigma candidates added"), "{text}");
    // One process only; exact kernel ridge has its own grids.
    let err =
        dir.cmd(&["fit", "--train", "linear", "--out", "w.safetensors", "--extend-grid", "--workers", "2"]).fails();
    assert!(err.contains("--extend-grid fits in one process"), "{err}");
});
