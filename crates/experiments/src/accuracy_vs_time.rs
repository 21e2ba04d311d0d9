//! `experiment accuracy-vs-time`: the TEFM paper's Figs. 2–3.
//!
//! For each map and feature count `l`, `fit` on the training rows (one σ
//! for every map, see the [bandwidth protocol](super); α on validation),
//! evaluate on the test rows, and time the whole fit: every pass (reading,
//! mapping, accumulating, TEFM's sketch) and the solve — the paper's "map +
//! train" time. The test error is the relative RMSE `‖y − ŷ‖/‖y‖` (the
//! paper's measure) for regression and the error rate for classification.

use crate::data::DataSet;
use crate::plot;
use crate::sweep::{Common, choose_sigma, fit_and_test, method};
use crate::table::{display_name, markdown_table, mean_std};
use anyhow::Result;
use kapprox::io::ScalerKind;
use kapprox::{KernelFamily, MethodSpec, Observer, SigmaSpec, Task};
use serde::Serialize;
use std::path::Path;

/// Every map, in the paper's order (plus ORF and Nyström).
pub const METHODS: [&str; 8] = ["rff", "qmc", "comp", "fastfood", "orf", "nystrom", "tefm-g", "tefm-s"];
/// Default feature counts l. (TEFM-G/S at l = 1024 accumulate a 4096²
/// FᵀF: half a minute per fit on a9a, which would take the default run past
/// ten minutes on two cores.)
pub const FEATURES: [usize; 6] = [16, 32, 64, 128, 256, 512];

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
    /// Map.
    pub method: String,
    /// Requested features l.
    pub l: usize,
    /// Features of the fitted map (Nyström may drop some).
    pub n_features: usize,
    /// Seed of the map and the validation split.
    pub seed: u64,
    /// Gaussian bandwidth σ.
    pub sigma: f64,
    /// Ridge penalty α chosen on validation.
    pub alpha: f64,
    /// `relative_rmse` (regression) or `error_rate` (classification).
    pub metric: String,
    /// The test error under `metric`.
    pub test_error: f64,
    /// Test RMSE (regression).
    pub rmse: Option<f64>,
    /// Seconds of the whole fit: every pass (map + accumulate) and the solve.
    pub fit_seconds: f64,
    /// Seconds of the fit pass alone (read, map, accumulate).
    pub pass_seconds: f64,
    /// Seconds of TEFM's sketch passes and of the preparing pass (samples, statistics).
    pub other_pass_seconds: f64,
    /// Seconds of selection and the final solve.
    pub solve_seconds: f64,
}

/// Runs every fit.
pub fn run(o: &Options, observer: &dyn Observer) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for set in &o.sets {
        let l_sigma = o.features.iter().copied().max().unwrap_or(256);
        let (sigma, _) =
            choose_sigma(set, KernelFamily::Gaussian, ScalerKind::Standard, o.sigma, l_sigma, 0, observer)?;
        for name in &o.methods {
            for &l in &o.features {
                let m = method(name, KernelFamily::Gaussian, l)?;
                if matches!(m, MethodSpec::Nystrom { .. }) && l as u64 > set.n_train {
                    continue;
                }
                for &seed in &o.seeds {
                    let t = fit_and_test(
                        set,
                        m.clone(),
                        vec![SigmaSpec::Value(sigma)],
                        ScalerKind::Standard,
                        seed,
                        observer,
                    )?;
                    let r = &t.report;
                    rows.push(Row {
                        dataset: set.name.clone(),
                        method: name.clone(),
                        l,
                        n_features: r.n_features,
                        seed,
                        sigma,
                        alpha: r.alpha,
                        metric: match set.task {
                            Task::Regression => "relative_rmse".into(),
                            Task::Classification => "error_rate".into(),
                        },
                        test_error: t.relative_error(),
                        rmse: (set.task == Task::Regression).then(|| t.error()),
                        fit_seconds: t.fit_seconds,
                        pass_seconds: r.seconds.pass,
                        other_pass_seconds: r.seconds.prepare + r.seconds.sketch,
                        solve_seconds: r.seconds.solve,
                    });
                }
                let last: Vec<&Row> = rows.iter().rev().take(o.seeds.len()).collect();
                eprintln!(
                    "{}: {name:>9} l = {l:>5}: test error {:.4}, fit {:.2} s",
                    set.name,
                    mean_std(&last.iter().map(|r| r.test_error).collect::<Vec<_>>()).0,
                    mean_std(&last.iter().map(|r| r.fit_seconds).collect::<Vec<_>>()).0
                );
            }
        }
    }
    Ok(rows)
}

/// Per (dataset, method, l): mean error, its std, and the fastest fit's
/// seconds (other processes on a shared machine only ever add time).
struct Point {
    dataset: String,
    method: String,
    l: usize,
    error: f64,
    std: f64,
    seconds: f64,
}

fn summary(rows: &[Row]) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for r in rows {
        if out.iter().any(|p| p.dataset == r.dataset && p.method == r.method && p.l == r.l) {
            continue;
        }
        let sel: Vec<&Row> =
            rows.iter().filter(|q| q.dataset == r.dataset && q.method == r.method && q.l == r.l).collect();
        let (error, std) = mean_std(&sel.iter().map(|q| q.test_error).collect::<Vec<_>>());
        let seconds = sel.iter().map(|q| q.fit_seconds).fold(f64::INFINITY, f64::min);
        out.push(Point { dataset: r.dataset.clone(), method: r.method.clone(), l: r.l, error, std, seconds });
    }
    out
}

/// The markdown table: per dataset, method and l, mean test error and fit time.
pub fn markdown(rows: &[Row]) -> String {
    let metric_of = |d: &str| rows.iter().find(|r| r.dataset == d).map_or("", |r| r.metric.as_str()).to_string();
    let body: Vec<Vec<String>> = summary(rows)
        .iter()
        .map(|p| {
            vec![
                p.dataset.clone(),
                display_name(&p.method).to_string(),
                p.l.to_string(),
                metric_of(&p.dataset),
                format!("{:.4} ± {:.4}", p.error, p.std),
                format!("{:.3}", p.seconds),
            ]
        })
        .collect();
    markdown_table(
        &["dataset", "method", "l", "metric", "test error (mean ± std)", "fit seconds (fastest seed)"],
        &body,
    )
}

/// Writes `results.csv` and `accuracy-vs-time.png` (per dataset: error vs
/// l, error vs fit time).
pub fn write(rows: &[Row], dir: &Path) -> Result<()> {
    crate::table::write_csv(rows, dir)?;
    let points = summary(rows);
    let mut datasets: Vec<&str> = Vec::new();
    for p in &points {
        if !datasets.contains(&p.dataset.as_str()) {
            datasets.push(&p.dataset);
        }
    }
    let mut panels = Vec::new();
    for d in &datasets {
        let metric = rows.iter().find(|r| r.dataset == *d).map_or("test error", |r| r.metric.as_str());
        let y_label = match metric {
            "relative_rmse" => "test relative RMSE ‖y − ŷ‖/‖y‖",
            _ => "test error rate (1 − accuracy)",
        };
        let mut methods: Vec<&str> = Vec::new();
        for p in points.iter().filter(|p| p.dataset == *d) {
            if !methods.contains(&p.method.as_str()) {
                methods.push(&p.method);
            }
        }
        let series = |time: bool| -> Vec<plot::Series> {
            methods
                .iter()
                .map(|m| {
                    let sel: Vec<&Point> = points.iter().filter(|p| p.dataset == *d && p.method == *m).collect();
                    plot::Series {
                        name: display_name(m).to_string(),
                        points: sel.iter().map(|p| (if time { p.seconds } else { p.l as f64 }, p.error)).collect(),
                        err: (!time).then(|| sel.iter().map(|p| p.std).collect()),
                    }
                })
                .collect()
        };
        let name = crate::table::dataset_title(d);
        panels.push(plot::Panel {
            title: format!("{name}: test error vs number of features"),
            x_label: "number of features l (log scale)".into(),
            y_label: y_label.into(),
            x_scale: plot::Scale::Log2,
            log_y: false,
            legend: plot::Legend::Auto,
            kind: plot::Kind::Lines,
            series: series(false),
        });
        panels.push(plot::Panel {
            title: format!("{name}: test error vs fit time"),
            x_label: "fit time: map + train, fastest of the seeds (seconds, log scale)".into(),
            y_label: y_label.into(),
            x_scale: plot::Scale::Log,
            log_y: false,
            legend: plot::Legend::Auto,
            kind: plot::Kind::Lines,
            series: series(true),
        });
    }
    let h = 620 * datasets.len().max(1) as u32;
    plot::line_chart(&dir.join("accuracy-vs-time.png"), None, &panels, 2, (1500, h))
}
