//! `experiment rmse-table`: the Fastfood paper's Table 3 layout.
//!
//! Test RMSE of exact kernel ridge, Nyström, random Fourier features (the
//! paper's RKS) and Fastfood with `l` basis functions (the paper's 2048),
//! for the Gaussian kernel and for Matérn (ν = 1.5), on each regression
//! set. σ (Gaussian) and the length scale (Matérn) are chosen once per
//! dataset on validation by RFF (see the [bandwidth protocol](super)); α
//! per method on validation. Exact kernel ridge runs only when the training
//! set has at most `--exact-rows` rows (`n²` memory, `n³` time), like the
//! paper's "n.a." for its large sets. The paper's FFT-Fastfood and
//! polynomial columns have no counterpart here.

use crate::data::DataSet;
use crate::plot;
use crate::sweep::{Common, choose_sigma, fit_and_test, read_config, test_metrics};
use crate::table::{markdown_table, mean_std};
use anyhow::{Result, bail};
use kapprox::io::ScalerKind;
use kapprox::predict::EvalMetrics;
use kapprox::{FitConfig, KernelFamily, MethodSpec, Observer, SigmaSpec, Split, Task};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// The table's columns: `(name, kernel, map)`.
pub const METHODS: [&str; 7] = ["exact", "nystrom", "rff", "fastfood", "exact-matern", "rff-matern", "fastfood-matern"];
/// Basis functions, as in the paper.
pub const FEATURES: usize = 2048;
/// Matérn smoothness.
pub const NU: f64 = 1.5;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Regression datasets.
    pub sets: Vec<DataSet>,
    /// Columns (names of [`METHODS`]).
    pub methods: Vec<String>,
    /// Basis functions l.
    pub l: usize,
    /// Seeds averaged over.
    pub seeds: Vec<u64>,
    /// One σ for every method (default: chosen on validation by RFF, per kernel).
    pub sigma: Option<SigmaSpec>,
    /// Exact kernel ridge only up to this many training rows.
    pub exact_rows: usize,
}

impl Options {
    /// The defaults, overridden by the common flags.
    pub fn new(sets: Vec<DataSet>, exact_rows: usize, c: Common) -> Result<Options> {
        let l = match c.features.as_deref() {
            None => FEATURES,
            Some([l]) => *l,
            Some(other) => bail!("--features: rmse-table takes one feature count, got {}", other.len()),
        };
        for s in &sets {
            if s.task != Task::Regression {
                bail!("{}: rmse-table compares regression sets (use --task regression)", s.name);
            }
        }
        Ok(Options {
            sets,
            methods: c.methods_or(&METHODS)?,
            l,
            seeds: c.seeds.clone().unwrap_or(vec![0]),
            sigma: c.sigma,
            exact_rows,
        })
    }
}

/// One fit.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Dataset.
    pub dataset: String,
    /// Training rows.
    pub n_train: u64,
    /// Test rows.
    pub n_test: u64,
    /// Input columns.
    pub d: usize,
    /// Column of the table.
    pub method: String,
    /// `gaussian` or `matern`.
    pub kernel: String,
    /// Matérn ν (empty for Gaussian).
    pub nu: Option<f64>,
    /// Basis functions (exact: training rows).
    pub l: usize,
    /// Seed.
    pub seed: u64,
    /// Bandwidth σ (Matérn: length scale).
    pub sigma: f64,
    /// Ridge penalty α chosen on validation.
    pub alpha: f64,
    /// Test RMSE.
    pub rmse: f64,
    /// Test ‖y − ŷ‖/‖y‖.
    pub relative_rmse: f64,
    /// Seconds of the fit.
    pub fit_seconds: f64,
}

fn kernel_of(method: &str) -> KernelFamily {
    if method.ends_with("matern") { KernelFamily::Matern { nu: NU } } else { KernelFamily::Gaussian }
}

/// Runs the table.
pub fn run(o: &Options, observer: &dyn Observer) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for set in &o.sets {
        let mut sigma_of: Vec<(bool, f64)> = Vec::new();
        for name in &o.methods {
            let kernel = kernel_of(name);
            let matern = matches!(kernel, KernelFamily::Matern { .. });
            let sigma = match sigma_of.iter().find(|(m, _)| *m == matern) {
                Some(&(_, s)) => s,
                None => {
                    let l = o.l.min(4096);
                    let (s, _) = choose_sigma(set, kernel, ScalerKind::Standard, o.sigma, l, 0, observer)?;
                    sigma_of.push((matern, s));
                    s
                }
            };
            let base = name.trim_end_matches("-matern");
            if base == "exact" && set.n_train > o.exact_rows as u64 {
                eprintln!("{}: {name} n.a. ({} training rows > --exact-rows {})", set.name, set.n_train, o.exact_rows);
                continue;
            }
            for &seed in &o.seeds {
                let (report, metrics, fit_seconds) = if base == "exact" {
                    let cfg = FitConfig {
                        train: set.train.clone(),
                        method: MethodSpec::Exact { kernel, max_rows: o.exact_rows },
                        sigmas: vec![SigmaSpec::Value(sigma)],
                        alphas: None,
                        task: set.task,
                        scale: ScalerKind::Standard,
                        read: read_config(),
                        split: Split::Holdout(0.2),
                        seed,
                        max_memory: None,
                        precision: kapprox::fit::Precision::F64,
                        extend_grid: false,
                    };
                    let t = Instant::now();
                    let (model, report) = kapprox::fit(&cfg, observer)?;
                    let secs = t.elapsed().as_secs_f64();
                    (report, test_metrics(&model, &set.test, observer)?, secs)
                } else {
                    let m = crate::sweep::method(base, kernel, o.l)?;
                    let t = fit_and_test(set, m, vec![SigmaSpec::Value(sigma)], ScalerKind::Standard, seed, observer)?;
                    (t.report, t.metrics, t.fit_seconds)
                };
                let EvalMetrics::Regression(m) = metrics else { bail!("{}: expected regression metrics", set.name) };
                eprintln!("{}: {name:>15}: test RMSE {:.4} (fit {fit_seconds:.1} s)", set.name, m.rmse);
                rows.push(Row {
                    dataset: set.name.clone(),
                    n_train: set.n_train,
                    n_test: set.n_test,
                    d: set.n_features,
                    method: name.clone(),
                    kernel: if matern { "matern".into() } else { "gaussian".into() },
                    nu: matern.then_some(NU),
                    l: report.n_features,
                    seed,
                    sigma,
                    alpha: report.alpha,
                    rmse: m.rmse,
                    relative_rmse: m.relative_rmse,
                    fit_seconds,
                });
            }
        }
    }
    Ok(rows)
}

/// Column headings in the paper's style.
fn heading(method: &str) -> &'static str {
    match method {
        "exact" => "Exact RBF",
        "nystrom" => "Nyström RBF",
        "rff" => "RKS RBF",
        "fastfood" => "Fastfood RBF",
        "exact-matern" => "Exact Matérn",
        "nystrom-matern" => "Nyström Matérn",
        "rff-matern" => "RKS Matérn",
        "fastfood-matern" => "Fastfood Matérn",
        _ => "?",
    }
}

/// The table: one line per dataset, `m`, `d`, then the mean test RMSE per
/// column (`n.a.` where it did not run).
fn table(rows: &[Row], o: &Options) -> (Vec<String>, Vec<Vec<String>>) {
    let header: Vec<String> = ["dataset", "m (train rows)", "test rows", "d"]
        .iter()
        .map(|s| s.to_string())
        .chain(o.methods.iter().map(|m| heading(m).to_string()))
        .collect();
    let body = o
        .sets
        .iter()
        .map(|s| {
            let mut line = vec![s.name.clone(), s.n_train.to_string(), s.n_test.to_string(), s.n_features.to_string()];
            for m in &o.methods {
                line.push(mean_rmse(rows, &s.name, m).map_or("n.a.".into(), plot::value_label));
            }
            line
        })
        .collect();
    (header, body)
}

/// Mean test RMSE of `method` on `dataset` over the seeds.
fn mean_rmse(rows: &[Row], dataset: &str, method: &str) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter(|r| r.dataset == dataset && r.method == method).map(|r| r.rmse).collect();
    (!v.is_empty()).then(|| mean_std(&v).0)
}

fn note(o: &Options) -> String {
    format!(
        "Test RMSE in the target's units; l = {} basis functions; Matérn ν = {NU}; σ per dataset and kernel chosen on\n\
         validation by RFF, α per method on validation; exact kernel ridge only for ≤ {} training rows (n.a. above); seeds {:?}.",
        o.l, o.exact_rows, o.seeds
    )
}

/// The markdown table.
pub fn markdown(rows: &[Row], o: &Options) -> String {
    let (header, body) = table(rows, o);
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    format!("{}\n{}\n", markdown_table(&h, &body), note(o).replace('\n', " "))
}

/// One bar chart per dataset: test RMSE per map (groups) and kernel (bars).
fn panels(rows: &[Row], o: &Options) -> Vec<plot::Panel> {
    let mut maps: Vec<&str> = Vec::new();
    for m in &o.methods {
        let base = m.trim_end_matches("-matern");
        if !maps.contains(&base) {
            maps.push(base);
        }
    }
    o.sets
        .iter()
        .map(|s| {
            let has = |m: &str| o.methods.iter().any(|x| x.trim_end_matches("-matern") == m);
            let categories: Vec<String> = maps
                .iter()
                .map(|m| {
                    let name = if *m == "rff" { "RKS (RFF)" } else { crate::table::display_name(m) };
                    let ran = o
                        .methods
                        .iter()
                        .any(|x| x.trim_end_matches("-matern") == *m && mean_rmse(rows, &s.name, x).is_some());
                    if has(m) && !ran { format!("{name}: n.a.") } else { name.to_string() }
                })
                .collect();
            let series = [("", "Gaussian RBF"), ("-matern", "Matérn ν = 1.5")]
                .iter()
                .filter(|(suffix, _)| o.methods.iter().any(|m| m.ends_with("-matern") != suffix.is_empty()))
                .map(|(suffix, name)| plot::Series {
                    name: name.to_string(),
                    points: maps
                        .iter()
                        .enumerate()
                        .filter_map(|(k, m)| mean_rmse(rows, &s.name, &format!("{m}{suffix}")).map(|v| (k as f64, v)))
                        .collect(),
                    err: None,
                })
                .collect();
            plot::Panel {
                title: format!("{}: test RMSE, l = {}", crate::table::dataset_title(&s.name), o.l),
                x_label: "kernel computation".into(),
                y_label: "test RMSE (target units)".into(),
                kind: plot::Kind::Bars(categories),
                series,
                ..Default::default()
            }
        })
        .collect()
}

/// Writes `results.csv` and `rmse-table.png` (a bar chart per dataset over
/// the rendered table).
pub fn write(rows: &[Row], o: &Options, dir: &Path) -> Result<()> {
    crate::table::write_csv(rows, dir)?;
    let (header, body) = table(rows, o);
    let panels = panels(rows, o);
    let cols = panels.len().clamp(1, 3);
    let size = (720 * cols as u32, 500 * panels.len().div_ceil(cols) as u32);
    let table = plot::Table {
        title: "Test RMSE of kernel approximations (Fastfood paper, Table 3 layout)".into(),
        header,
        rows: body,
        note: note(o),
    };
    plot::figure(&dir.join("rmse-table.png"), None, &panels, cols, size, Some(&table))
}
