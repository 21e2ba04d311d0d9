//! Each experiment on a tiny generated dataset with tiny grids: the CSV
//! has the stated columns and one row per fit, the PNG is a PNG of the
//! stated size, and the numbers behave (more features do not hurt much,
//! Nyström with all rows reproduces K).

use super::*;
use crate::data::{DataSet, Source, Workspace};
use crate::sweep::Common;
use kapprox::Silent;
use kapprox::generate::{GenerateConfig, generate};
use std::path::Path;

fn dataset(ws: &mut Workspace, dir: &Path, name: &str, classes: usize, rows: u64) -> DataSet {
    let raw = dir.join(name);
    let cfg = GenerateConfig { rows, features: 4, classes, rows_per_shard: rows, seed: 7, overwrite: true };
    generate(&cfg, &raw, &Silent).unwrap();
    let task = if classes > 0 { Task::Classification } else { Task::Regression };
    ws.resolve(&Source { input: raw, test: None, label: "last".into(), task }, 0.25, &Silent).unwrap()
}

fn common(features: &[usize], methods: &[&str]) -> Common {
    Common {
        seeds: Some(vec![0]),
        features: Some(features.to_vec()),
        methods: Some(methods.iter().map(|s| s.to_string()).collect()),
        sigma: None,
    }
}

/// The CSV's header and number of data lines.
fn csv_shape(dir: &Path) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(str::to_string).collect();
    (header, lines.count())
}

fn png(dir: &Path, name: &str) -> (u32, u32) {
    let bytes = std::fs::read(dir.join(name)).unwrap();
    plot::png_size(&bytes).unwrap_or_else(|| panic!("{name} is not a PNG"))
}

fn no_temporaries(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "temporary file left behind: {name}");
    }
}

#[test]
fn kernel_approx_writes_errors_that_shrink_with_l() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let set = dataset(&mut ws, tmp.path(), "reg", 0, 300);
    let o = kernel_approx::Options::new(
        set.train.clone(),
        Some(200),
        common(&[8, 128, 200], &["rff", "nystrom", "tefm-g"]),
    )
    .unwrap();
    let rows = kernel_approx::run(&o, &Silent).unwrap();
    assert_eq!(rows.len(), 9);
    let err = |m: &str, l: usize| rows.iter().find(|r| r.method == m && r.l == l).unwrap().spectral_error;
    assert!(err("rff", 8) > 2.0 * err("rff", 128), "{} vs {}", err("rff", 8), err("rff", 128));
    // Nyström with every row as a landmark reproduces K.
    assert!(err("nystrom", 200) < 1e-6, "{}", err("nystrom", 200));
    let out = tmp.path().join("out");
    kernel_approx::write(&rows, &o, &out).unwrap();
    let (header, n) = csv_shape(&out);
    assert_eq!(
        header,
        ["dataset", "method", "l", "seed", "rows", "sigma", "spectral_error", "frobenius_error", "seconds"]
    );
    assert_eq!(n, 9);
    assert_eq!(png(&out, "kernel-approx.png"), (1000, 700));
    no_temporaries(&out);
    assert!(kernel_approx::markdown(&rows).contains("| TEFM-G |"));
}

#[test]
fn accuracy_vs_time_fits_every_method_and_l() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let set = dataset(&mut ws, tmp.path(), "reg", 0, 600);
    let o = accuracy_vs_time::options(vec![set], common(&[4, 64], &["rff", "tefm-s", "nystrom"])).unwrap();
    let rows = accuracy_vs_time::run(&o, &Silent).unwrap();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert!(r.fit_seconds > 0.0 && r.test_error.is_finite() && r.metric == "relative_rmse", "{r:?}");
    }
    // 64 features fit the smooth target better than 4.
    let e = |l: usize| rows.iter().find(|r| r.method == "rff" && r.l == l).unwrap().test_error;
    assert!(e(64) < e(4), "l=64: {}, l=4: {}", e(64), e(4));
    let out = tmp.path().join("out");
    accuracy_vs_time::write(&rows, &out).unwrap();
    let (header, n) = csv_shape(&out);
    for col in ["dataset", "method", "l", "seed", "sigma", "alpha", "metric", "test_error", "fit_seconds"] {
        assert!(header.iter().any(|h| h == col), "missing column {col}: {header:?}");
    }
    assert_eq!(n, 6);
    assert_eq!(png(&out, "accuracy-vs-time.png"), (1500, 620));
}

#[test]
fn rmse_table_marks_exact_not_available_beyond_its_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let small = dataset(&mut ws, tmp.path(), "small", 0, 300);
    let large = dataset(&mut ws, tmp.path(), "large", 0, 700);
    let o =
        rmse_table::Options::new(vec![small, large], 400, common(&[32], &["exact", "rff", "fastfood-matern"])).unwrap();
    let rows = rmse_table::run(&o, &Silent).unwrap();
    // Exact on the small set only.
    assert_eq!(rows.len(), 5);
    assert!(!rows.iter().any(|r| r.dataset == "large" && r.method == "exact"));
    let md = rmse_table::markdown(&rows, &o);
    assert!(md.contains("| large |") && md.contains("n.a."), "{md}");
    let out = tmp.path().join("out");
    rmse_table::write(&rows, &o, &out).unwrap();
    let (header, n) = csv_shape(&out);
    assert_eq!(&header[..5], ["dataset", "n_train", "n_test", "d", "method"]);
    assert!(header.iter().any(|h| h == "rmse") && header.iter().any(|h| h == "sigma"));
    assert_eq!(n, 5);
    let (w, h) = png(&out, "rmse-table.png");
    assert!(w >= 400 && h >= 100, "{w}x{h}");
}

#[test]
fn nystrom_vs_rff_reports_accuracy_per_landmark_count() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let set = dataset(&mut ws, tmp.path(), "cls", 3, 600);
    let mut c = common(&[4, 32], &["nystrom", "rff"]);
    c.seeds = Some(vec![0, 1]);
    let o = nystrom_vs_rff::options(vec![set], c).unwrap();
    let rows = nystrom_vs_rff::run(&o, &Silent).unwrap();
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r.metric == "accuracy" && (0.0..=1.0).contains(&r.value)));
    let out = tmp.path().join("out");
    nystrom_vs_rff::write(&rows, &out).unwrap();
    let (header, n) = csv_shape(&out);
    assert_eq!(
        header,
        ["dataset", "method", "l", "n_features", "seed", "sigma", "alpha", "metric", "value", "fit_seconds"]
    );
    assert_eq!(n, 8);
    assert_eq!(png(&out, "nystrom-vs-rff.png"), (1000, 650));
}

#[test]
fn eof_is_sparser_than_dense_maps() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let set = dataset(&mut ws, tmp.path(), "reg", 0, 400);
    let o = eof_sparsity::options(vec![set.clone()], common(&[40, 300], &["rff-phase", "eof"])).unwrap();
    let rows = eof_sparsity::run(&o, &Silent).unwrap();
    assert_eq!(rows.len(), 4);
    let get = |m: &str, l: usize| rows.iter().find(|r| r.method == m && r.m == l).unwrap();
    // A dense map fills F.
    assert!(get("rff-phase", 300).density > 0.99, "{:?}", get("rff-phase", 300));
    assert_eq!(get("rff-phase", 40).nnz, set.n_train * 40);
    // EOF's finer levels have compact supports: the larger the budget, the sparser F.
    let (coarse, fine) = (get("eof", 40), get("eof", 300));
    eprintln!("eof density: M=40 {}, M=300 {}", coarse.density, fine.density);
    assert!(fine.density < 0.5 && fine.nnz > 0, "{fine:?}");
    assert!(fine.density < coarse.density, "{coarse:?} {fine:?}");
    let out = tmp.path().join("out");
    eof_sparsity::write(&rows, &out).unwrap();
    let (header, n) = csv_shape(&out);
    for col in ["dataset", "method", "m", "seed", "sigma", "alpha", "nnz", "fit_seconds", "metric", "test_error"] {
        assert!(header.iter().any(|h| h == col), "missing column {col}: {header:?}");
    }
    assert_eq!(n, 4);
    png(&out, "eof-sparsity.png");
}

#[test]
fn png_size_refuses_other_files() {
    assert_eq!(plot::png_size(b"GIF89a............................"), None);
    assert_eq!(plot::png_size(b""), None);
}

#[test]
fn the_centred_and_paper_bases_are_sparser_than_the_boundary_basis() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ws = Workspace::new(None).unwrap();
    let set = dataset(&mut ws, tmp.path(), "reg", 0, 300);
    let methods = ["eof", "eof-uniform", "eof-boundary", "eof-paper"];
    let o = eof_sparsity::options(vec![set], common(&[64], &methods)).unwrap();
    let rows = eof_sparsity::run(&o, &Silent).unwrap();
    let get = |m: &str| rows.iter().find(|r| r.method == m).unwrap();
    for m in methods {
        assert_eq!(get(m).m, 64);
    }
    // The boundary basis spends its budget on products of functions that
    // are non-zero everywhere; the others' blocks double with each level.
    for m in ["eof", "eof-uniform", "eof-paper"] {
        assert!(get(m).nnz * 2 < get("eof-boundary").nnz, "{:?} {:?}", get(m), get("eof-boundary"));
    }
    let out = tmp.path().join("out");
    eof_sparsity::write(&rows, &out).unwrap();
    let md = eof_sparsity::markdown(&rows);
    for name in ["| EOF |", "| EOF (uniform M) |", "| EOF (boundary basis) |", "| EOF (paper) |"] {
        assert!(md.contains(name), "{name} missing from {md}");
    }
    no_temporaries(&out);
}

#[test]
fn figures_with_bars_and_a_table_render() {
    let tmp = tempfile::tempdir().unwrap();
    let bars = plot::Panel {
        title: "bars".into(),
        x_label: "map".into(),
        y_label: "RMSE".into(),
        kind: plot::Kind::Bars(vec!["a".into(), "b: n.a.".into(), "c".into()]),
        series: vec![
            plot::Series { name: "one".into(), points: vec![(0.0, 2.5), (2.0, 3.0)], err: None },
            plot::Series { name: "two".into(), points: vec![(2.0, 40000.0)], err: None },
        ],
        ..Default::default()
    };
    let lines = plot::Panel {
        title: "lines".into(),
        x_scale: plot::Scale::Log,
        log_y: true,
        series: vec![plot::Series {
            name: "x".into(),
            points: vec![(10.0, 0.2), (100.0, 0.02), (1000.0, 0.002)],
            err: Some(vec![0.01, 0.0, 0.001]),
        }],
        ..Default::default()
    };
    let table = plot::Table {
        title: "t".into(),
        header: vec!["name".into(), "value".into()],
        rows: vec![vec!["a".into(), "1.5".into()], vec!["b".into(), "n.a.".into()]],
        note: "one\ntwo".into(),
    };
    let path = tmp.path().join("f.png");
    plot::figure(&path, Some("title"), &[bars, lines], 2, (1000, 400), Some(&table)).unwrap();
    let (w, h) = png(tmp.path(), "f.png");
    assert_eq!(w, 1000);
    assert!(h > 400, "{h}");
    no_temporaries(tmp.path());
}
