//! `experiment kernel-approx`: the TEFM paper's Fig. 1.
//!
//! On `n` sampled rows of a dataset (standardised), the exact Gaussian
//! kernel matrix `K` is compared with `ZZᵀ` for each map and feature count
//! `l`: `‖K − ZZᵀ‖₂ / ‖K‖₂` (Lanczos) and the Frobenius analogue, through
//! [`kapprox::kernel_error`]. Data-dependent maps (Nyström, TEFM) learn from
//! the same rows, as in the paper. σ is the median rule unless `--sigma`
//! says otherwise (no labels are involved). Each (map, l) is measured for
//! every seed; the plot shows the mean with ± one standard deviation.
//!
//! Cost: `K` is `n²` doubles (3000 rows: 72 MB); each map costs `O(n² l)`
//! for the Frobenius error and a few hundred `O(n²)` Lanczos products.

use crate::plot;
use crate::sweep::{Common, method};
use crate::table::{display_name, markdown_table, mean_std};
use anyhow::{Result, bail};
use kapprox::fit::exact::kernel_matrix;
use kapprox::io::{LabelSpec, ScalerKind};
use kapprox::kernel_error::{approximation_error, features_of, load_rows, spectral_norm};
use kapprox::{KernelFamily, MethodSpec, Observer, SigmaSpec};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Every map of the figure, in the paper's order (plus ORF and Nyström).
pub const METHODS: [&str; 8] = ["rff", "qmc", "comp", "fastfood", "orf", "nystrom", "tefm-g", "tefm-s"];
/// Default feature counts l.
pub const FEATURES: [usize; 6] = [16, 32, 64, 128, 256, 512];
/// Default rows forming `K`.
pub const ROWS: usize = 3000;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Dataset name for the report.
    pub dataset: String,
    /// Parquet data (the label, if recorded, is not an input).
    pub data: PathBuf,
    /// Rows sampled to form `K`.
    pub rows: usize,
    /// MethodSpecs (names of [`METHODS`]).
    pub methods: Vec<String>,
    /// Feature counts.
    pub features: Vec<usize>,
    /// One map per seed.
    pub seeds: Vec<u64>,
    /// Bandwidth (default: the median rule).
    pub sigma: SigmaSpec,
}

impl Options {
    /// The defaults, overridden by the common flags.
    pub fn new(data: PathBuf, rows: Option<usize>, c: Common) -> Result<Options> {
        let rows = rows.unwrap_or(ROWS);
        if rows < 2 {
            bail!("--rows: {rows} rows cannot form a kernel matrix; use at least 2");
        }
        let name = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dataset = name.strip_suffix("-train").map(str::to_string).unwrap_or(name);
        Ok(Options {
            dataset,
            data,
            rows,
            methods: c.methods_or(&METHODS)?,
            features: c.features.unwrap_or(FEATURES.to_vec()),
            seeds: c.seeds.unwrap_or(vec![0, 1, 2]),
            sigma: c.sigma.unwrap_or(SigmaSpec::Auto(1.0)),
        })
    }
}

/// One map's errors.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Dataset.
    pub dataset: String,
    /// Map.
    pub method: String,
    /// Output features l.
    pub l: usize,
    /// Seed of the map.
    pub seed: u64,
    /// Rows of `K`.
    pub rows: usize,
    /// Gaussian bandwidth σ.
    pub sigma: f64,
    /// `‖K − ZZᵀ‖₂ / ‖K‖₂`.
    pub spectral_error: f64,
    /// `‖K − ZZᵀ‖_F / ‖K‖_F`.
    pub frobenius_error: f64,
    /// Seconds to build the map and compute `Z` on the rows.
    pub seconds: f64,
}

/// Runs the measurement.
pub fn run(o: &Options, observer: &dyn Observer) -> Result<Vec<Row>> {
    let (x, median) =
        load_rows(&o.data, &Default::default(), &LabelSpec::Hint, ScalerKind::Standard, o.rows, 0, observer)?;
    let sigma = o.sigma.resolve(Some(median));
    let n = x.nrows();
    eprintln!("{}: {n} rows x {} columns, sigma = {sigma:.4} (median distance {median:.4})", o.dataset, x.ncols());
    let k = kernel_matrix(KernelFamily::Gaussian.at(sigma), x.view())?;
    let k_norm = spectral_norm(&k, 1)?;
    let k_fro = k.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut rows = Vec::new();
    for name in &o.methods {
        for &l in &o.features {
            let m = method(name, KernelFamily::Gaussian, l)?;
            if matches!(m, MethodSpec::Nystrom { .. }) && l > n {
                eprintln!("{name}: skipping l = {l} > {n} rows (landmarks are rows)");
                continue;
            }
            for &seed in &o.seeds {
                let t = std::time::Instant::now();
                let z = features_of(&m, x.view(), sigma, seed)?;
                let seconds = t.elapsed().as_secs_f64();
                let (spec, fro) = approximation_error(&k, z.view(), seed ^ 0x5eed)?;
                rows.push(Row {
                    dataset: o.dataset.clone(),
                    method: name.clone(),
                    l,
                    seed,
                    rows: n,
                    sigma,
                    spectral_error: spec / k_norm,
                    frobenius_error: fro / k_fro,
                    seconds,
                });
            }
            let last: Vec<f64> = rows.iter().rev().take(o.seeds.len()).map(|r| r.spectral_error).collect();
            eprintln!("{name:>9} l = {l:>5}: spectral error {:.4}", mean_std(&last).0);
        }
    }
    Ok(rows)
}

/// Per (method, l): mean and standard deviation of the spectral error.
fn summary(rows: &[Row]) -> Vec<(String, usize, f64, f64, f64)> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !keys.iter().any(|(m, l)| *m == r.method && *l == r.l) {
            keys.push((r.method.clone(), r.l));
        }
    }
    keys.into_iter()
        .map(|(m, l)| {
            let sel: Vec<&Row> = rows.iter().filter(|r| r.method == m && r.l == l).collect();
            let (mean, std) = mean_std(&sel.iter().map(|r| r.spectral_error).collect::<Vec<_>>());
            let fro = mean_std(&sel.iter().map(|r| r.frobenius_error).collect::<Vec<_>>()).0;
            (m, l, mean, std, fro)
        })
        .collect()
}

/// The markdown table: mean spectral error per method (rows) and l (columns).
pub fn markdown(rows: &[Row]) -> String {
    let s = summary(rows);
    let mut ls: Vec<usize> = s.iter().map(|r| r.1).collect();
    ls.sort_unstable();
    ls.dedup();
    let mut methods: Vec<String> = Vec::new();
    for r in &s {
        if !methods.contains(&r.0) {
            methods.push(r.0.clone());
        }
    }
    let header: Vec<String> =
        std::iter::once("method".to_string()).chain(ls.iter().map(|l| format!("l = {l}"))).collect();
    let body: Vec<Vec<String>> =
        methods
            .iter()
            .map(|m| {
                std::iter::once(display_name(m).to_string())
                    .chain(ls.iter().map(|l| {
                        s.iter().find(|r| r.0 == *m && r.1 == *l).map_or("—".into(), |r| format!("{:.4}", r.2))
                    }))
                    .collect()
            })
            .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    format!("Mean relative spectral error ‖K − ZZᵀ‖₂/‖K‖₂\n\n{}", markdown_table(&h, &body))
}

/// Writes `results.csv` and `kernel-approx.png` into `dir`.
pub fn write(rows: &[Row], o: &Options, dir: &Path) -> Result<()> {
    crate::table::write_csv(rows, dir)?;
    let s = summary(rows);
    let mut series: Vec<plot::Series> = Vec::new();
    for m in &o.methods {
        let pts: Vec<&(String, usize, f64, f64, f64)> = s.iter().filter(|r| r.0 == *m).collect();
        if pts.is_empty() {
            continue;
        }
        series.push(plot::Series {
            name: display_name(m).to_string(),
            points: pts.iter().map(|r| (r.1 as f64, r.2)).collect(),
            err: Some(pts.iter().map(|r| r.3).collect()),
        });
    }
    let (n, sigma) = rows.first().map_or((0, 0.0), |r| (r.rows, r.sigma));
    let panel = plot::Panel {
        title: format!(
            "Kernel approximation on {}: {n} sampled rows, Gaussian σ = {sigma:.3}{}",
            crate::table::dataset_title(&o.dataset),
            if o.sigma == SigmaSpec::Auto(1.0) { " (median rule)" } else { "" }
        ),
        x_label: "number of features l (log scale; Comp, TEFM-G, TEFM-S compress d = 4l RFF)".into(),
        y_label: "‖K − ZZᵀ‖₂ / ‖K‖₂ (relative spectral error)".into(),
        x_scale: plot::Scale::Log2,
        log_y: true,
        legend: plot::Legend::Auto,
        kind: plot::Kind::Lines,
        series,
    };
    plot::line_chart(&dir.join("kernel-approx.png"), None, &[panel], 1, (1000, 700))
}
