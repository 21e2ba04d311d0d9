//! `experiment nystrom-vs-rff`: the Nyström-vs-RFF paper's Fig. 2.
//!
//! Test accuracy (classification) or test RMSE (regression) of Nyström
//! with `m` uniformly sampled landmarks against random Fourier features
//! with `m` features, for the same Gaussian kernel (one σ per dataset, see
//! the [bandwidth protocol](super)); α on validation; mean ± standard
//! deviation over the seeds (the paper: ten trials).

use crate::data::DataSet;
use crate::plot;
use crate::sweep::{Common, choose_sigma, fit_and_test, method};
use crate::table::{display_name, markdown_table, mean_std};
use anyhow::Result;
use kapprox::io::ScalerKind;
use kapprox::{KernelFamily, Observer, SigmaSpec};
use serde::Serialize;
use std::path::Path;

/// The two methods.
pub const METHODS: [&str; 2] = ["nystrom", "rff"];
/// Default landmarks / features: the paper's 10 to 1000 (it stops at 200
/// for its large sets).
pub const FEATURES: [usize; 7] = [10, 20, 50, 100, 200, 500, 1000];

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
    /// `nystrom` or `rff`.
    pub method: String,
    /// Landmarks / features requested.
    pub l: usize,
    /// Features of the fitted map.
    pub n_features: usize,
    /// Seed.
    pub seed: u64,
    /// Gaussian bandwidth σ.
    pub sigma: f64,
    /// Ridge penalty α chosen on validation.
    pub alpha: f64,
    /// `accuracy` (classification) or `rmse` (regression).
    pub metric: String,
    /// The test value under `metric`.
    pub value: f64,
    /// Seconds of the fit.
    pub fit_seconds: f64,
}

/// Runs every fit.
pub fn run(o: &Options, observer: &dyn Observer) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for set in &o.sets {
        let l_sigma = o.features.iter().copied().max().unwrap_or(200);
        let (sigma, _) =
            choose_sigma(set, KernelFamily::Gaussian, ScalerKind::Standard, o.sigma, l_sigma, 0, observer)?;
        for name in &o.methods {
            for &l in &o.features {
                if name == "nystrom" && l as u64 > set.n_train {
                    continue;
                }
                for &seed in &o.seeds {
                    let m = method(name, KernelFamily::Gaussian, l)?;
                    let t = fit_and_test(set, m, vec![SigmaSpec::Value(sigma)], ScalerKind::Standard, seed, observer)?;
                    let (metric, value) = match t.accuracy() {
                        Some(a) => ("accuracy", a),
                        None => ("rmse", t.error()),
                    };
                    rows.push(Row {
                        dataset: set.name.clone(),
                        method: name.clone(),
                        l,
                        n_features: t.report.n_features,
                        seed,
                        sigma,
                        alpha: t.report.alpha,
                        metric: metric.into(),
                        value,
                        fit_seconds: t.fit_seconds,
                    });
                }
                let last: Vec<f64> = rows.iter().rev().take(o.seeds.len()).map(|r| r.value).collect();
                eprintln!("{}: {name:>8} m = {l:>5}: {:.4}", set.name, mean_std(&last).0);
            }
        }
    }
    Ok(rows)
}

/// Per (dataset, method, l): mean and std of the value, mean seconds.
fn summary(rows: &[Row]) -> Vec<(String, String, usize, f64, f64, f64)> {
    let mut out: Vec<(String, String, usize, f64, f64, f64)> = Vec::new();
    for r in rows {
        if out.iter().any(|p| p.0 == r.dataset && p.1 == r.method && p.2 == r.l) {
            continue;
        }
        let sel: Vec<&Row> =
            rows.iter().filter(|q| q.dataset == r.dataset && q.method == r.method && q.l == r.l).collect();
        let (mean, std) = mean_std(&sel.iter().map(|q| q.value).collect::<Vec<_>>());
        let secs = mean_std(&sel.iter().map(|q| q.fit_seconds).collect::<Vec<_>>()).0;
        out.push((r.dataset.clone(), r.method.clone(), r.l, mean, std, secs));
    }
    out
}

/// The markdown table: per dataset and m, each method's mean ± std.
pub fn markdown(rows: &[Row]) -> String {
    let s = summary(rows);
    let mut keys: Vec<(String, usize)> = Vec::new();
    for p in &s {
        if !keys.contains(&(p.0.clone(), p.2)) {
            keys.push((p.0.clone(), p.2));
        }
    }
    let mut methods: Vec<String> = Vec::new();
    for p in &s {
        if !methods.contains(&p.1) {
            methods.push(p.1.clone());
        }
    }
    let scale = |d: &str| if rows.iter().any(|r| r.dataset == d && r.metric == "accuracy") { 100.0 } else { 1.0 };
    let body: Vec<Vec<String>> = keys
        .iter()
        .map(|(d, l)| {
            let metric = rows.iter().find(|r| r.dataset == *d).map_or("", |r| r.metric.as_str());
            let mut line = vec![d.clone(), metric.to_string(), l.to_string()];
            for m in &methods {
                line.push(s.iter().find(|p| p.0 == *d && p.1 == *m && p.2 == *l).map_or("—".into(), |p| {
                    let k = scale(d);
                    format!("{:.2} ± {:.2}", k * p.3, k * p.4)
                }));
            }
            line
        })
        .collect();
    let header: Vec<String> = ["dataset", "metric (%, or RMSE)", "m"]
        .iter()
        .map(|s| s.to_string())
        .chain(methods.iter().map(|m| display_name(m).to_string()))
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown_table(&h, &body)
}

/// Writes `results.csv` and `nystrom-vs-rff.png` (one panel per dataset).
pub fn write(rows: &[Row], dir: &Path) -> Result<()> {
    crate::table::write_csv(rows, dir)?;
    let s = summary(rows);
    let mut datasets: Vec<String> = Vec::new();
    for p in &s {
        if !datasets.contains(&p.0) {
            datasets.push(p.0.clone());
        }
    }
    let panels: Vec<plot::Panel> = datasets
        .iter()
        .map(|d| {
            let accuracy = rows.iter().any(|r| r.dataset == *d && r.metric == "accuracy");
            let k = if accuracy { 100.0 } else { 1.0 };
            let mut methods: Vec<String> = Vec::new();
            for p in s.iter().filter(|p| p.0 == *d) {
                if !methods.contains(&p.1) {
                    methods.push(p.1.clone());
                }
            }
            let series = methods
                .iter()
                .map(|m| {
                    let sel: Vec<_> = s.iter().filter(|p| p.0 == *d && p.1 == *m).collect();
                    plot::Series {
                        name: display_name(m).to_string(),
                        points: sel.iter().map(|p| (p.2 as f64, k * p.3)).collect(),
                        err: Some(sel.iter().map(|p| k * p.4).collect()),
                    }
                })
                .collect();
            plot::Panel {
                title: format!("{}: Nyström vs random Fourier features", crate::table::dataset_title(d)),
                x_label: "landmarks m = random features (log scale)".into(),
                y_label: if accuracy { "test accuracy (%)".into() } else { "test RMSE (target units)".into() },
                x_scale: plot::Scale::Log,
                log_y: false,
                legend: plot::Legend::Auto,
                kind: plot::Kind::Lines,
                series,
            }
        })
        .collect();
    let w = if panels.len() > 1 { 1500 } else { 1000 };
    plot::line_chart(&dir.join("nystrom-vs-rff.png"), None, &panels, 2, (w, 650 * panels.len().div_ceil(2) as u32))
}
