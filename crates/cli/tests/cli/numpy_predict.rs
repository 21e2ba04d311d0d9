//! A model file is portable: `tests/numpy_predict.py` (numpy only, the
//! container read by hand) reproduces `kapprox predict` from the file alone,
//! following FORMAT.md, for every map whose parameters the file stores:
//! Nyström, exact kernel columns, TEFM, and the random-feature maps (RFF,
//! ORF, QMC, SORF, Fastfood, Comp) with their random parameters stored
//! (`--store-map`, on by default for small maps).
//!
//! Python with numpy is looked for in `KAPPROX_PYTHON`, a virtual
//! environment under the target directory, then `python3`; numpy is
//! installed from PyPI into that environment when none has it
//! (`KAPPROX_NO_PIP=1` forbids it). Without it the test prints why and
//! skips.

use kapprox::io::read_column;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn has_numpy(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import numpy"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Python with numpy, or `None` with the reason printed.
fn python_with_numpy() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kapprox-cli-numpy-venv");
    let venv_python = venv.join("bin/python");
    let mut candidates: Vec<PathBuf> = std::env::var_os("KAPPROX_PYTHON").map(PathBuf::from).into_iter().collect();
    candidates.extend([venv_python.clone(), PathBuf::from("python3")]);
    if let Some(p) = candidates.into_iter().find(|p| has_numpy(p)) {
        return Some(p);
    }
    if std::env::var_os("KAPPROX_NO_PIP").is_some() {
        println!("skipping: no Python with numpy, and KAPPROX_NO_PIP forbids installing it");
        return None;
    }
    let made = venv_python.exists()
        || Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success());
    let installed = made
        && Command::new(&venv_python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "numpy"])
            .status()
            .is_ok_and(|s| s.success());
    if installed && has_numpy(&venv_python) {
        Some(venv_python)
    } else {
        println!("skipping: cannot install numpy from PyPI into {}", venv.display());
        None
    }
}

/// A smooth target of 4 columns on a fixed pseudo-random design, as CSV.
fn csv(rows: usize, offset: usize) -> String {
    let mut s = String::from("a,b,c,d,y\n");
    for i in offset..offset + rows {
        let u = |k: usize| ((i * 7919 + k * 104_729) % 1009) as f64 / 1009.0 * 4.0 - 2.0;
        let (a, b, c, d) = (u(1), u(2), u(3), 10.0 * u(4) + 50.0);
        let y = a.sin() + b * c - 0.05 * (d - 50.0).powi(2);
        s.push_str(&format!("{a},{b},{c},{d},{y}\n"));
    }
    s
}

/// Runs the numpy script; one row of `[prediction, scores...]` per line.
fn numpy_predictions(python: &Path, model: &Path, rows: &Path) -> Result<Vec<Vec<f64>>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/numpy_predict.py");
    let o = Command::new(python).arg(script).arg(model).arg(rows).output().expect("python runs");
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().expect("a float")).collect())
        .collect())
}

kapprox_test!(numpy_reproduces_predict_from_the_model_file_alone, |dir| {
    let Some(python) = python_with_numpy() else { return };
    dir.write("train.csv", &csv(1500, 0));
    let test_csv = dir.write("test.csv", &csv(300, 5000));
    dir.convert(&dir.join("train.csv"), "train", &[]);
    dir.convert(&test_csv, "test", &[]);
    // d = 3 (--columns a,b,c) pads to D = 4 for SORF and Fastfood; 42 features in pairs leave a
    // last block of one frequency.
    let maps: [(&str, &[&str]); 18] = [
        ("nystrom-gaussian", &["--map", "nystrom", "--features", "128"]),
        ("nystrom-laplacian", &["--map", "nystrom", "--kernel", "laplacian", "--features", "96"]),
        ("nystrom-matern", &["--map", "nystrom", "--kernel", "matern", "--nu", "2.5", "--features", "64"]),
        ("tefm-nystrom", &["--map", "tefm-g", "--base", "nystrom", "--features", "8", "--sketch-features", "64"]),
        ("exact", &["--map", "exact", "--sigma", "auto,auto*2"]),
        ("rff-gaussian", &["--features", "64"]),
        ("rff-laplacian-phase", &["--kernel", "laplacian", "--form", "phase", "--features", "48"]),
        ("rff-cauchy", &["--kernel", "cauchy", "--features", "40"]),
        ("rff-matern", &["--kernel", "matern", "--nu", "1.5", "--features", "40"]),
        ("orf", &["--map", "orf", "--features", "42", "--columns", "a,b,c"]),
        ("orf-phase", &["--map", "orf", "--form", "phase", "--features", "21"]),
        ("qmc", &["--map", "qmc", "--kernel", "laplacian", "--features", "40"]),
        ("sorf", &["--map", "sorf", "--features", "42", "--columns", "a,b,c"]),
        ("sorf-phase", &["--map", "sorf", "--form", "phase", "--features", "13"]),
        ("fastfood", &["--map", "fastfood", "--features", "42", "--columns", "a,b,c"]),
        ("fastfood-phase", &["--map", "fastfood", "--kernel", "matern", "--form", "phase", "--features", "11"]),
        ("comp", &["--map", "comp", "--features", "16", "--inner", "32"]),
        ("tefm-rff", &["--map", "tefm-g", "--features", "8", "--sketch-features", "64", "--store-map", "always"]),
    ];
    for (name, flags) in maps {
        let model = format!("{name}.safetensors");
        dir.cmd(&["fit", "--train", "train", "--out", &model]).args(flags).stdout();
        let pred_dir = format!("pred-{name}");
        dir.cmd(&["predict", "--model", &model, "--data", "test", "--out", &pred_dir]).stdout();
        let want = read_column(dir.join(&pred_dir), "prediction").unwrap();
        let got = numpy_predictions(&python, &dir.join(&model), &test_csv).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.len(), want.len(), "{name}: rows");
        let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let err = got.iter().zip(&want).map(|(g, w)| (g[0] - w).abs()).fold(0.0f64, f64::max) / scale;
        eprintln!("{name}: numpy vs predict, max relative difference {err:.2e}");
        assert!(err <= 1e-10, "{name}: numpy differs from predict by {err:e} (relative)");
    }
    // A model written with --store-map never holds the seed only: the script says so instead of
    // guessing, and kapprox still predicts the same from the seed.
    let flags = ["--features", "64", "--store-map", "never"];
    dir.cmd(&["fit", "--train", "train", "--out", "rff-seed.safetensors"]).args(&flags).stdout();
    let err = numpy_predictions(&python, &dir.join("rff-seed.safetensors"), &test_csv).expect_err("seed only");
    assert!(err.contains("map 'rff'") && err.contains("FORMAT.md"), "{err}");
    dir.cmd(&["predict", "--model", "rff-seed.safetensors", "--data", "test", "--out", "pred-rff-seed"]).stdout();
    let (seed, stored) = (read_column(dir.join("pred-rff-seed"), "prediction").unwrap(), "pred-rff-gaussian");
    assert_eq!(seed, read_column(dir.join(stored), "prediction").unwrap(), "stored parameters are the seed's");
});
