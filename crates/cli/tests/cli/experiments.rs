//! `kapprox experiment`: the command writes its CSV and PNG, prints a
//! markdown table, and refuses bad flags before touching data.
//! (Each experiment's numbers are tested in `kapprox_experiments`.)

use crate::util::check_error;

kapprox_test!(experiment_kernel_approx_writes_csv_png_and_table, |dir| {
    dir.cmd(&["generate", "--out", "data", "--rows", "300", "--features", "3"]).stdout();
    let args = [
        "-q",
        "experiment",
        "kernel-approx",
        "--data",
        "data",
        "--rows",
        "120",
        "--features",
        "8,32",
        "--seeds",
        "0",
        "--methods",
        "rff,nystrom",
        "--out",
        "out",
    ];
    let stdout = dir.cmd(&args).stdout();
    assert!(stdout.contains("| Nyström |") && stdout.contains("l = 32"), "{stdout}");
    let csv = std::fs::read_to_string(dir.join("out/results.csv")).expect("results.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "dataset,method,l,seed,rows,sigma,spectral_error,frobenius_error,seconds");
    assert_eq!(lines.len(), 5, "{csv}");
    let png = std::fs::read(dir.join("out/kernel-approx.png")).expect("kernel-approx.png");
    assert_eq!(kapprox_experiments::plot::png_size(&png), Some((1000, 700)));
    // --json prints the rows instead of the table.
    let json = dir.cmd(&args).args(&["--json"]).json();
    assert_eq!(json.as_array().map(Vec::len), Some(4));
});

kapprox_test!(experiment_refuses_bad_flags, |dir| {
    let err = dir.cmd(&["experiment", "kernel-approx", "--out", "o", "--methods", "rff,nope"]).fails();
    check_error(
        &err,
        "--methods: unknown method \"nope\" (expected one of rff, qmc, comp, fastfood, orf, nystrom, tefm-g, tefm-s)",
    );
    let err = dir.cmd(&["experiment", "rmse-table", "--out", "o", "--test-fraction", "1.5"]).fails();
    check_error(&err, "--test-fraction: 1.5 is not a fraction in (0, 1)");
    let err = dir.cmd(&["experiment", "nystrom-vs-rff", "--out", "o", "--data", "missing"]).fails();
    check_error(&err, "missing: no such file or directory");
    assert!(!dir.join("o").exists());
});
