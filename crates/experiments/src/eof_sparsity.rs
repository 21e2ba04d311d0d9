//! `experiment eof-sparsity`: the EOF paper's Table 2.
//!
//! At equal feature counts M: the number of non-zeros of the training
//! feature matrix `F` (n × M), the fit time and the test error of entropic
//! optimal features (sparse-grid, Laplace kernel) against dense maps — RKS
//! (`cos(wᵀx + b)` for the Laplacian kernel, the paper's baseline), ORF
//! (Gaussian) and Nyström (Laplacian, `M` landmarks). As in the paper, inputs are min–max scaled to [0, 1]. Each
//! method's σ is chosen on validation (seed 0) among [`crate::sweep::SIGMA_GRID`],
//! then the timed fits use that one σ; α on validation.
//!
//! Four EOF variants (see `kapprox::features::eof`, "Bases"): `eof`,
//! kapprox's default (the centred basis: complete and sparse, keeping the
//! largest-weight functions), `eof-uniform` (the same basis, `M` functions
//! drawn uniformly from the sparse-grid level, as in the paper), and two
//! that show why: `eof-boundary` (the boundary-rooted complete basis, exact
//! but nearly dense in 21 dimensions) and `eof-paper`, the paper's own
//! setting (hats only, `M` drawn uniformly), sparse but zero on the faces
//! of the cube, where 88 % of the min–max scaled CPU rows lie.

use crate::data::DataSet;
use crate::plot;
use crate::sweep::{Common, SIGMA_GRID, fit_and_test, method};
use crate::table::{display_name, markdown_table, mean_std};
use anyhow::{Context, Result};
use kapprox::io::{Dataset, ReadOptions, ScalerKind};
use kapprox::pipeline::{Features, Pass};
use kapprox::sigma::parse_sigmas;
use kapprox::{KernelFamily, Model, Observer, SigmaSpec, Task};
use serde::Serialize;
use std::path::Path;

/// The methods: RKS (Laplacian), ORF (Gaussian), Nyström (Laplacian), EOF
/// (Laplace): kapprox's
/// centred basis with the nested and the uniform subset, the boundary
/// basis, and the paper's hats-only basis with M functions drawn uniformly
/// from the level.
pub const METHODS: [&str; 7] = ["rff-phase", "orf", "nystrom", "eof", "eof-uniform", "eof-boundary", "eof-paper"];
/// Default feature counts M (EOF needs M ≈ 2000 on CPU's 21 inputs).
pub const FEATURES: [usize; 3] = [256, 1024, 2048];

/// What to run: a sweep over datasets, methods, feature counts and seeds.
pub type Options = crate::sweep::Sweep;

/// This experiment's defaults ([`METHODS`], [`FEATURES`], seeds 0, 1, 2),
/// overridden by the common flags.
pub fn options(sets: Vec<DataSet>, c: Common) -> Result<Options> {
    crate::sweep::Sweep::new(sets, c, &METHODS, &FEATURES)
}

/// One fit.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Dataset.
    pub dataset: String,
    /// Training rows N.
    pub n_train: u64,
    /// Method.
    pub method: String,
    /// Kernel the method approximates.
    pub kernel: String,
    /// Feature count M.
    pub m: usize,
    /// Seed.
    pub seed: u64,
    /// Bandwidth σ (EOF: ω = 1/σ on [0, 1]-scaled inputs).
    pub sigma: f64,
    /// Ridge penalty α chosen on validation.
    pub alpha: f64,
    /// Non-zeros of the training feature matrix.
    pub nnz: u64,
    /// `nnz / (N · M)`.
    pub density: f64,
    /// Seconds of the fit (one σ): passes and solve.
    pub fit_seconds: f64,
    /// `rmse` (regression) or `error_rate` (classification).
    pub metric: String,
    /// The test error under `metric`.
    pub test_error: f64,
}

fn kernel_of(name: &str) -> KernelFamily {
    match name {
        "orf" => KernelFamily::Gaussian,
        _ => KernelFamily::Laplacian,
    }
}

/// Non-zeros of the features of every training row under the model's map.
pub fn count_nnz(model: &Model, train: &Path, observer: &dyn Observer) -> Result<u64> {
    let ds = Dataset::open(train)?;
    let read = ReadOptions::new(model.doc.feature_columns.clone());
    let mut nnz = 0u64;
    let pass = Pass {
        dataset: &ds,
        read,
        scaler: &model.doc.scaler,
        maps: vec![model.map.as_ref()],
        label: "nnz",
        observer,
        store: None,
    };
    pass.run(&mut |_, _, z| {
        nnz += match z {
            Features::Dense(z) => z.iter().filter(|v| **v != 0.0).count() as u64,
            Features::Sparse(z) => z.values.iter().filter(|v| **v != 0.0).count() as u64,
        };
        Ok(())
    })?;
    Ok(nnz)
}

/// Runs every fit.
pub fn run(o: &Options, observer: &dyn Observer) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let grid = parse_sigmas(SIGMA_GRID)?;
    for set in &o.sets {
        for name in &o.methods {
            let kernel = kernel_of(name);
            for &m in &o.features {
                let mk = || method(name, kernel, m);
                let sigma = match o.sigma {
                    Some(SigmaSpec::Value(v)) => v,
                    given => {
                        let cands = given.map_or(grid.clone(), |g| vec![g]);
                        fit_and_test(set, mk()?, cands, ScalerKind::MinMax, 0, observer)?.report.sigma
                    }
                };
                for &seed in &o.seeds {
                    let t =
                        fit_and_test(set, mk()?, vec![SigmaSpec::Value(sigma)], ScalerKind::MinMax, seed, observer)?;
                    let nnz =
                        count_nnz(&t.model, &set.train, observer).with_context(|| format!("{}: nnz", set.name))?;
                    let n_features = t.report.n_features;
                    rows.push(Row {
                        dataset: set.name.clone(),
                        n_train: set.n_train,
                        method: name.clone(),
                        kernel: match kernel {
                            KernelFamily::Gaussian => "gaussian".into(),
                            _ => "laplacian".into(),
                        },
                        m: n_features,
                        seed,
                        sigma,
                        alpha: t.report.alpha,
                        nnz,
                        density: nnz as f64 / (set.n_train as f64 * n_features.max(1) as f64),
                        fit_seconds: t.fit_seconds,
                        metric: match set.task {
                            Task::Regression => "rmse".into(),
                            Task::Classification => "error_rate".into(),
                        },
                        test_error: t.error(),
                    });
                }
                let last: Vec<&Row> = rows.iter().rev().take(o.seeds.len()).collect();
                eprintln!(
                    "{}: {name:>9} M = {m:>5}: nnz {:.3e}, test error {:.4}, fit {:.2} s",
                    set.name,
                    last[0].nnz as f64,
                    mean_std(&last.iter().map(|r| r.test_error).collect::<Vec<_>>()).0,
                    mean_std(&last.iter().map(|r| r.fit_seconds).collect::<Vec<_>>()).0,
                );
            }
        }
    }
    Ok(rows)
}

/// Per (dataset, method, M): mean nnz, density, fit seconds and test error (± std).
struct Point<'a> {
    first: &'a Row,
    nnz: f64,
    density: f64,
    seconds: f64,
    error: f64,
    std: f64,
}

fn summary(rows: &[Row]) -> Vec<Point<'_>> {
    let mut keys: Vec<(&str, &str, usize)> = Vec::new();
    for r in rows {
        let k = (r.dataset.as_str(), r.method.as_str(), r.m);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // The paper's grouping: per dataset and M, the methods one under the other.
    keys.sort_by(|a, b| {
        let pos = |d: &str| rows.iter().position(|r| r.dataset == d).unwrap_or(0);
        pos(a.0).cmp(&pos(b.0)).then(a.2.cmp(&b.2))
    });
    keys.iter()
        .map(|&(d, m, l)| {
            let sel: Vec<&Row> = rows.iter().filter(|r| r.dataset == d && r.method == m && r.m == l).collect();
            let mean = |f: &dyn Fn(&Row) -> f64| mean_std(&sel.iter().map(|r| f(r)).collect::<Vec<_>>());
            let (error, std) = mean(&|r| r.test_error);
            Point {
                first: sel[0],
                nnz: mean(&|r| r.nnz as f64).0,
                density: mean(&|r| r.density).0,
                seconds: mean(&|r| r.fit_seconds).0,
                error,
                std,
            }
        })
        .collect()
}

/// The table: per dataset, method and M: nnz(F), density, fit seconds, test error.
fn table(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let body = summary(rows)
        .iter()
        .map(|p| {
            let r = p.first;
            vec![
                r.dataset.clone(),
                display_name(&r.method).to_string(),
                r.kernel.clone(),
                r.m.to_string(),
                format!("{:.3e}", p.nnz),
                format!("{:.1}%", 100.0 * p.density),
                format!("{:.3}", p.seconds),
                r.metric.clone(),
                format!("{:.4} ± {:.4}", p.error, p.std),
            ]
        })
        .collect();
    let header =
        ["dataset", "method", "kernel", "M", "nnz(F)", "density", "fit seconds", "metric", "test error (mean ± std)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    (header, body)
}

/// The markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let (header, body) = table(rows);
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown_table(&h, &body)
}

/// Per dataset: nnz(F) against M, and the test error against M.
fn panels(rows: &[Row]) -> Vec<plot::Panel> {
    let points = summary(rows);
    let mut datasets: Vec<&str> = Vec::new();
    let mut methods: Vec<&str> = Vec::new();
    for p in &points {
        if !datasets.contains(&p.first.dataset.as_str()) {
            datasets.push(&p.first.dataset);
        }
        if !methods.contains(&p.first.method.as_str()) {
            methods.push(&p.first.method);
        }
    }
    let mut panels = Vec::new();
    for d in datasets {
        let series = |f: &dyn Fn(&Point) -> f64, err: bool| -> Vec<plot::Series> {
            methods
                .iter()
                .filter_map(|m| {
                    let mut sel: Vec<&Point> =
                        points.iter().filter(|p| p.first.dataset == d && p.first.method == *m).collect();
                    sel.sort_by_key(|p| p.first.m);
                    (!sel.is_empty()).then(|| plot::Series {
                        name: format!("{} ({})", display_name(m), sel[0].first.kernel),
                        points: sel.iter().map(|p| (p.first.m as f64, f(p))).collect(),
                        err: err.then(|| sel.iter().map(|p| p.std).collect()),
                    })
                })
                .collect()
        };
        let regression = rows.iter().any(|r| r.dataset == d && r.metric == "rmse");
        let name = crate::table::dataset_title(d);
        panels.push(plot::Panel {
            title: format!("{name}: non-zeros of the training features F"),
            x_label: "features M (log scale)".into(),
            y_label: "nnz(F) over the training rows (log scale)".into(),
            x_scale: plot::Scale::Log2,
            log_y: true,
            series: series(&|p| p.nnz.max(1.0), false),
            ..Default::default()
        });
        panels.push(plot::Panel {
            title: format!("{name}: test error"),
            x_label: "features M (log scale)".into(),
            y_label: if regression { "test RMSE (target units, log scale)" } else { "test error rate (log scale)" }
                .into(),
            x_scale: plot::Scale::Log2,
            log_y: true,
            series: series(&|p| p.error, true),
            ..Default::default()
        });
    }
    panels
}

/// Writes `results.csv` and `eof-sparsity.png` (per dataset nnz(F) and test
/// error against M, over the rendered table).
pub fn write(rows: &[Row], dir: &Path) -> Result<()> {
    crate::table::write_csv(rows, dir)?;
    let (header, body) = table(rows);
    let seeds: Vec<u64> = {
        let mut s: Vec<u64> = rows.iter().map(|r| r.seed).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let note = format!(
        "nnz(F) over the training rows; fit = every pass + solve at one σ (chosen on validation per method); inputs\n\
         min–max scaled to [0, 1]; RKS = cos(wᵀx + b) and Nyström for the Laplacian kernel; EOF = centred basis, largest-weight\n\
         functions (kapprox's default); uniform M = M drawn uniformly from the level; boundary basis = complete but\n\
         nearly dense; EOF (paper) = the paper's hats only, uniform M; mean over seeds {seeds:?}."
    );
    let panels = panels(rows);
    let rows_of_panels = panels.len().div_ceil(2) as u32;
    let table = plot::Table {
        title: "EOF vs dense random features at equal M (EOF paper, Table 2)".into(),
        header,
        rows: body,
        note,
    };
    plot::figure(&dir.join("eof-sparsity.png"), None, &panels, 2, (1400, 560 * rows_of_panels), Some(&table))
}
