//! `kapprox experiment NAME`: the source papers' experiments as commands.
//!
//! Each experiment is a library function that takes an options struct and
//! returns rows ([`kernel_approx::run`], [`accuracy_vs_time::run`],
//! [`rmse_table::run`], [`nystrom_vs_rff::run`], [`eof_sparsity::run`]),
//! plus a writer of `results.csv` and `NAME.png` into `--out DIR`. Every
//! fit goes through the library ([`crate::fit::fit`],
//! [`crate::exact::fit_exact`], [`crate::predict::evaluate`]), never a
//! subprocess, with fixed seeds, so a rerun gives the same numbers
//! (timings aside).
//!
//! Inputs ([`data`]): Parquet directories, or the raw files of the shared
//! data (CSV/TSV, LIBSVM, IDX, gzip/bzip2), converted on the fly into a
//! temporary directory. A test split is the given `--test`, the raw file's
//! companion (`*_test*`, `*.t`, `t10k-*`), or a seeded 80/20 split.
//!
//! # Bandwidth protocol
//! Unless `--sigma` is given, σ is chosen once per dataset and kernel: `fit`
//! with random Fourier features and the candidates [`SIGMA_GRID`]
//! (`fit`'s default `auto*0.5, auto, auto*2, auto*4` and `auto*8`, chosen
//! on a 20 % validation split).
//! Every method then approximates that one kernel, as in the papers; the
//! ridge penalty α is chosen per fit on the validation split from
//! statistics (no extra pass).

pub mod accuracy_vs_time;
pub mod data;
pub mod eof_sparsity;
pub mod kernel_approx;
pub mod nystrom_vs_rff;
pub mod plot;
pub mod rmse_table;

use crate::config::{ReadConfig, SigmaSpec};
use crate::fit::method::{KernelFamily, Method};
use crate::fit::{FitConfig, FitReport, Split};
use crate::model::{Model, Task};
use crate::predict::{EvalMetrics, evaluate};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use kapprox_features::eof::{EofBasis, EofKernel, EofSize, EofSubset};
use kapprox_features::tefm::{Strategy, TefmKind};
use kapprox_io::{LabelSpec, ScalerKind};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The experiments. Each variant's text, with its defaults, is its `--help` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Experiment {
    /// TEFM paper Fig. 1: ‖K − ZZᵀ‖₂/‖K‖₂ against the number of features l, per map. Defaults: 3000
    /// rows sampled from the CPU training set, RFF, Quasi, Comp, Fastfood, ORF, Nyström, TEFM-G,
    /// TEFM-S (d = 4l) at l = 16..512 (powers of two), seeds 0,1,2, σ by the median rule.
    KernelApprox,
    /// TEFM paper Figs. 2–3: test error against l and against fit time (map + train), per map.
    /// Defaults: CPU (relative RMSE) and a9a (error rate), the eight maps of kernel-approx at
    /// l = 16..512, seeds 0,1,2.
    AccuracyVsTime,
    /// Fastfood paper Table 3: test RMSE of exact / Nyström / RFF / Fastfood, Gaussian and Matérn
    /// (ν = 1.5). Defaults: CPU (with its test file) and census house_16H (an 80/20 split), l = 2048,
    /// seed 0, exact kernel ridge up to --exact-rows training rows.
    RmseTable,
    /// Nyström-vs-RFF paper Fig. 2: test RMSE or accuracy against the number of landmarks / features.
    /// Defaults: CPU, census house_16H, a9a and a 15k Covertype sample, m = 10..1000, seeds 0,1,2.
    NystromVsRff,
    /// EOF paper Table 2: nnz of the feature matrix, fit time and test error of EOF vs dense maps.
    /// Defaults: CPU, RKS (Laplacian), ORF (Gaussian), EOF and the paper's EOF at M = 256, 1024,
    /// 2048, seeds 0,1,2.
    EofSparsity,
}

impl Experiment {
    /// The methods the experiment knows (its default set).
    pub fn methods(self) -> &'static [&'static str] {
        match self {
            Experiment::KernelApprox => &kernel_approx::METHODS,
            Experiment::AccuracyVsTime => &accuracy_vs_time::METHODS,
            Experiment::RmseTable => &rmse_table::METHODS,
            Experiment::NystromVsRff => &nystrom_vs_rff::METHODS,
            Experiment::EofSparsity => &eof_sparsity::METHODS,
        }
    }

    /// The command-line name (also the PNG's file stem).
    pub fn name(self) -> &'static str {
        match self {
            Experiment::KernelApprox => "kernel-approx",
            Experiment::AccuracyVsTime => "accuracy-vs-time",
            Experiment::RmseTable => "rmse-table",
            Experiment::NystromVsRff => "nystrom-vs-rff",
            Experiment::EofSparsity => "eof-sparsity",
        }
    }
}

/// Arguments of `experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The experiment: kernel-approx, accuracy-vs-time, rmse-table, nystrom-vs-rff or eof-sparsity.
    #[arg(value_enum)]
    pub name: Experiment,
    /// Dataset (repeatable): a Parquet directory, or a raw CSV/TSV/LIBSVM/IDX file (or a directory
    /// of IDX files) converted on the fly. Default: the experiment's sets from --shared-data.
    #[arg(long)]
    pub data: Vec<PathBuf>,
    /// Test set for the --data at the same position (Parquet directory or raw file). Default: the raw
    /// file's companion (`*_test*`, `*.t`, `t10k-*`), else a seeded split of --test-fraction.
    #[arg(long)]
    pub test: Vec<PathBuf>,
    /// Fraction of rows held out as the test set when a dataset has no test companion.
    #[arg(long, default_value_t = 0.2)]
    pub test_fraction: f64,
    /// Output directory: results.csv and NAME.png (created if missing; files replaced atomically).
    #[arg(long)]
    pub out: PathBuf,
    /// Seeds, comma-separated; results are averaged over them. Default: per experiment.
    #[arg(long, value_delimiter = ',')]
    pub seeds: Option<Vec<u64>>,
    /// Feature counts l (landmarks m, EOF budget M), comma-separated. Default: per experiment.
    #[arg(long, value_delimiter = ',')]
    pub features: Option<Vec<usize>>,
    /// Methods, comma-separated. Default: all of the experiment's: kernel-approx and accuracy-vs-time
    /// rff, qmc, comp, fastfood, orf, nystrom, tefm-g, tefm-s; rmse-table exact, nystrom, rff,
    /// fastfood, exact-matern, rff-matern, fastfood-matern; nystrom-vs-rff nystrom, rff; eof-sparsity
    /// rff-phase, orf, nystrom, eof, eof-uniform, eof-boundary, eof-paper.
    #[arg(long, value_delimiter = ',')]
    pub methods: Option<Vec<String>>,
    /// kernel-approx: rows sampled to form K (n² doubles: 72 MB at 3000). Default: 3000.
    #[arg(long)]
    pub rows: Option<usize>,
    /// One bandwidth for every method: a number, `auto` or `auto*F`. Default: chosen per dataset on
    /// validation by RFF among auto*0.5, auto, auto*2, auto*4, auto*8 (kernel-approx: auto).
    #[arg(long)]
    pub sigma: Option<String>,
    /// Learning task of user-given datasets. Default: the experiment's.
    #[arg(long, value_enum)]
    pub task: Option<crate::cli::TaskArg>,
    /// Label column of raw CSV/TSV files: a name or `last`.
    #[arg(long, default_value = "last")]
    pub label: String,
    /// rmse-table: exact kernel ridge only for training sets of at most this many rows (the
    /// eigendecomposition costs n³).
    #[arg(long, default_value_t = 8_000)]
    pub exact_rows: usize,
    /// Where the default datasets are looked for (relative paths: from the current directory, else
    /// from the source tree this binary was built from).
    #[arg(long, default_value = "../shared/data")]
    pub shared_data: PathBuf,
    /// Keep converted datasets here (reused by later runs) instead of a temporary directory.
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Print the rows as one JSON array instead of a markdown table.
    #[arg(long)]
    pub json: bool,
}

/// `kapprox experiment`.
pub fn run(a: &ExperimentArgs) -> Result<()> {
    let t0 = Instant::now();
    if !(a.test_fraction > 0.0 && a.test_fraction < 1.0) {
        bail!("--test-fraction: {} is not a fraction in (0, 1)", a.test_fraction);
    }
    if let Some(s) = &a.seeds
        && s.is_empty()
    {
        bail!("--seeds: give at least one seed");
    }
    if let Some(f) = &a.features
        && f.contains(&0)
    {
        bail!("--features: feature counts must be at least 1");
    }
    if a.test.len() > a.data.len() {
        bail!("--test: {} test sets for {} --data sets; pair each --test with a --data", a.test.len(), a.data.len());
    }
    let sigma = a.sigma.as_deref().map(parse_one_sigma).transpose()?;
    let common = Common { seeds: a.seeds.clone(), features: a.features.clone(), methods: a.methods.clone(), sigma };
    // Refuse unknown methods before converting any data.
    common.methods_or(a.name.methods())?;
    let mut ws = data::Workspace::new(a.work_dir.as_deref())?;
    let task = a.task.map(|t| match t {
        crate::cli::TaskArg::Regression => Task::Regression,
        crate::cli::TaskArg::Classification => Task::Classification,
    });
    let user_sets = |ws: &mut data::Workspace, default_task: Task| -> Result<Vec<data::DataSet>> {
        a.data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let spec = data::Source {
                    input: d.clone(),
                    test: a.test.get(i).cloned(),
                    label: a.label.clone(),
                    task: task.unwrap_or(default_task),
                };
                ws.resolve(&spec, a.test_fraction)
            })
            .collect()
    };
    let shared = || data::locate_shared(&a.shared_data);
    // The user's --data sets, or else the experiment's shared files (each
    // split 80/20), read as `task`.
    let sets = |ws: &mut data::Workspace, defaults: &[(&str, Task)], task: Task| -> Result<Vec<data::DataSet>> {
        if !a.data.is_empty() {
            return user_sets(ws, task);
        }
        let s = shared()?;
        defaults.iter().map(|&(file, t)| ws.resolve(&data::Source::shared(&s, file, t), 0.2)).collect()
    };
    const CPU: (&str, Task) = ("cpu_rks_train.tsv.gz", Task::Regression);
    const HOUSE: (&str, Task) = ("pmlb/574_house_16H.tsv.gz", Task::Regression);
    const A9A: (&str, Task) = ("libsvm/a9a", Task::Classification);
    let out = &a.out;
    match a.name {
        Experiment::KernelApprox => {
            let input = match a.data.first() {
                Some(d) => ws.resolve_train_only(d, &a.label)?,
                None => ws.resolve_train_only(&shared()?.join("cpu_rks_train.tsv.gz"), "last")?,
            };
            let opts = kernel_approx::Options::new(input, a.rows, common)?;
            let rows = kernel_approx::run(&opts)?;
            kernel_approx::write(&rows, &opts, out)?;
            report(&rows, a.json, &kernel_approx::markdown(&rows))?;
        }
        Experiment::AccuracyVsTime => {
            let opts = accuracy_vs_time::options(sets(&mut ws, &[CPU, A9A], Task::Regression)?, common)?;
            let rows = accuracy_vs_time::run(&opts)?;
            accuracy_vs_time::write(&rows, out)?;
            report(&rows, a.json, &accuracy_vs_time::markdown(&rows))?;
        }
        Experiment::RmseTable => {
            let opts = rmse_table::Options::new(sets(&mut ws, &[CPU, HOUSE], Task::Regression)?, a.exact_rows, common)?;
            let rows = rmse_table::run(&opts)?;
            rmse_table::write(&rows, &opts, out)?;
            report(&rows, a.json, &rmse_table::markdown(&rows, &opts))?;
        }
        Experiment::NystromVsRff => {
            // The paper's CPU, CENSUS, ADULT and COVTYPE (a 15k sample).
            let covtype = ("covtype_subsets/covtype_random15k.csv", Task::Classification);
            let sets = sets(&mut ws, &[CPU, HOUSE, A9A, covtype], Task::Classification)?;
            let opts = nystrom_vs_rff::options(sets, common)?;
            let rows = nystrom_vs_rff::run(&opts)?;
            nystrom_vs_rff::write(&rows, out)?;
            report(&rows, a.json, &nystrom_vs_rff::markdown(&rows))?;
        }
        Experiment::EofSparsity => {
            let opts = eof_sparsity::options(sets(&mut ws, &[CPU], Task::Regression)?, common)?;
            let rows = eof_sparsity::run(&opts)?;
            eof_sparsity::write(&rows, out)?;
            report(&rows, a.json, &eof_sparsity::markdown(&rows))?;
        }
    }
    eprintln!(
        "experiment {} done in {:.1} s: {} and {}",
        a.name.name(),
        t0.elapsed().as_secs_f64(),
        out.join("results.csv").display(),
        out.join(format!("{}.png", a.name.name())).display()
    );
    Ok(())
}

fn report<R: Serialize>(rows: &[R], json: bool, markdown: &str) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(rows)?);
    } else {
        print!("{markdown}");
    }
    Ok(())
}

/// What a sweep experiment runs (accuracy-vs-time, nystrom-vs-rff,
/// eof-sparsity): every method at every feature count for every seed, on
/// every dataset.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Datasets.
    pub sets: Vec<data::DataSet>,
    /// Method names (checked against the experiment's list).
    pub methods: Vec<String>,
    /// Feature counts (landmarks for Nyström, M for EOF).
    pub features: Vec<usize>,
    /// Seeds averaged over.
    pub seeds: Vec<u64>,
    /// One σ for every method (default: chosen on validation).
    pub sigma: Option<SigmaSpec>,
}

impl Sweep {
    /// The experiment's `methods` and `features` and seeds 0, 1, 2,
    /// overridden by the common flags.
    pub fn new(sets: Vec<data::DataSet>, c: Common, methods: &[&str], features: &[usize]) -> Result<Sweep> {
        Ok(Sweep {
            sets,
            methods: c.methods_or(methods)?,
            features: c.features.clone().unwrap_or(features.to_vec()),
            seeds: c.seeds.clone().unwrap_or(vec![0, 1, 2]),
            sigma: c.sigma,
        })
    }
}

/// Options every experiment shares; `None` = the experiment's default.
#[derive(Clone, Debug, Default)]
pub struct Common {
    /// Seeds to average over.
    pub seeds: Option<Vec<u64>>,
    /// Feature counts.
    pub features: Option<Vec<usize>>,
    /// Methods (experiment-specific names).
    pub methods: Option<Vec<String>>,
    /// One bandwidth for every method.
    pub sigma: Option<SigmaSpec>,
}

impl Common {
    /// The methods, checked against the experiment's list.
    pub fn methods_or(&self, all: &[&str]) -> Result<Vec<String>> {
        match &self.methods {
            None => Ok(all.iter().map(|s| s.to_string()).collect()),
            Some(m) => {
                for name in m {
                    if !all.contains(&name.as_str()) {
                        bail!("--methods: unknown method {name:?} (expected one of {})", all.join(", "));
                    }
                }
                Ok(m.clone())
            }
        }
    }
}

fn parse_one_sigma(text: &str) -> Result<SigmaSpec> {
    let s = crate::config::parse_sigmas(text)?;
    if s.len() != 1 {
        bail!("--sigma: experiments take one bandwidth for every method, got {}", s.len());
    }
    Ok(s[0])
}

/// The map of `name` with `l` output features for `kernel`: the maps of the
/// TEFM paper with its settings (Comp and TEFM compress `d = 4l` RFF
/// features; TEFM-G uses one power iteration, TEFM-S none, as the paper's
/// Theorem 2 requires), Nyström, EOF (budget `l`, Laplace kernel).
pub fn method(name: &str, kernel: KernelFamily, l: usize) -> Result<Method> {
    let independent = |kind: &str, inner: Option<usize>| Method::Independent {
        kind: kind.into(),
        kernel,
        form: None,
        n_components: l,
        grids: None,
        inner,
    };
    let tefm = |sketch, power| Method::Tefm {
        sketch,
        base: "rff".into(),
        kernel,
        form: None,
        n_components: l,
        sketch_features: 4 * l,
        power,
        // d = 4l keeps FᵀF small (d² doubles); one pass over the data.
        strategy: Strategy::OnePass,
    };
    Ok(match name {
        "rff" | "orf" | "qmc" | "fastfood" | "sorf" => independent(name, None),
        // RKS as in the EOF paper: cos(wᵀx + b), one frequency per feature.
        "rff-phase" => Method::Independent {
            kind: "rff".into(),
            kernel,
            form: Some(kapprox_features::Form::Phase),
            n_components: l,
            grids: None,
            inner: None,
        },
        "comp" => independent("comp", Some(4 * l)),
        "nystrom" => Method::Nystrom { kernel, n_landmarks: l, rel_tol: kapprox_features::nystrom::DEFAULT_REL_TOL },
        "tefm-g" => tefm(TefmKind::Gaussian, 1),
        "tefm-s" => tefm(TefmKind::Srht, 0),
        // kapprox's EOF: the centred basis, the nested (largest-weight) subset.
        "eof" => Method::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Centred,
            subset: EofSubset::Nested,
        },
        // The centred basis with M drawn uniformly from the level: sparser.
        "eof-uniform" => Method::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Centred,
            subset: EofSubset::Uniform,
        },
        // The boundary-rooted complete basis: exact, but nearly dense in many dimensions.
        "eof-boundary" => Method::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Boundary,
            subset: EofSubset::Nested,
        },
        // The EOF paper's own setting: hats only, M drawn uniformly from the level.
        "eof-paper" => Method::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Paper,
            subset: EofSubset::Uniform,
        },
        other => bail!("unknown method {other:?}"),
    })
}

/// What one fit + evaluation gave.
pub struct Trial {
    /// The fit's report (σ, α, features, per-stage seconds).
    pub report: FitReport,
    /// Test metrics.
    pub metrics: EvalMetrics,
    /// Wall-clock seconds of the fit (every pass: map + accumulate + solve).
    pub fit_seconds: f64,
    /// The model (to measure its features, e.g. nnz).
    pub model: Model,
}

impl Trial {
    /// The test error: RMSE (regression) or 1 − accuracy (classification).
    pub fn error(&self) -> f64 {
        match &self.metrics {
            EvalMetrics::Regression(m) => m.rmse,
            EvalMetrics::Classification(m) => 1.0 - m.accuracy,
        }
    }

    /// Relative RMSE ‖y − ŷ‖/‖y‖ (regression) or 1 − accuracy.
    pub fn relative_error(&self) -> f64 {
        match &self.metrics {
            EvalMetrics::Regression(m) => m.relative_rmse,
            EvalMetrics::Classification(m) => 1.0 - m.accuracy,
        }
    }

    /// Test accuracy (classification only).
    pub fn accuracy(&self) -> Option<f64> {
        match &self.metrics {
            EvalMetrics::Classification(m) => Some(m.accuracy),
            EvalMetrics::Regression(_) => None,
        }
    }
}

/// The reading options of every experiment fit: the label recorded by
/// `convert`, default chunks, NaN refused.
pub fn read_config() -> ReadConfig {
    ReadConfig { label: LabelSpec::Hint, chunk_rows: kapprox_io::DEFAULT_CHUNK_ROWS, nan: Default::default() }
}

/// Fits `method` on `set`'s training rows with the given bandwidth
/// candidates (α from `fit`'s default grid on a 20 % validation split),
/// times the fit and evaluates on the test rows.
pub fn fit_and_test(
    set: &data::DataSet,
    method: Method,
    sigmas: Vec<SigmaSpec>,
    scale: ScalerKind,
    seed: u64,
) -> Result<Trial> {
    let cfg = FitConfig {
        train: set.train.clone(),
        method,
        sigmas,
        alphas: None,
        task: set.task,
        scale,
        read: read_config(),
        split: Split::Holdout(0.2),
        seed,
        max_memory: None,
    };
    let t = Instant::now();
    let (model, report) = crate::fit::fit(&cfg).with_context(|| format!("{}: fit {}", set.name, cfg.method.name()))?;
    let fit_seconds = t.elapsed().as_secs_f64();
    let metrics = test_metrics(&model, &set.test)?;
    Ok(Trial { report, metrics, fit_seconds, model })
}

/// Test metrics of a fitted model.
pub fn test_metrics(model: &Model, test: &Path) -> Result<EvalMetrics> {
    evaluate(model, test, kapprox_io::DEFAULT_CHUNK_ROWS, Default::default())
}

/// The σ candidates of the bandwidth protocol: `fit`'s default grid and
/// one step further, since on the CPU and a9a sets the largest default
/// (`auto*4`) often wins.
pub const SIGMA_GRID: &str = "auto*0.5,auto,auto*2,auto*4,auto*8";

/// The bandwidth protocol (see the module docs): `given`, or the σ that
/// RFF with `l` features chooses on validation among `fit`'s default
/// candidates. Returns σ and how it was chosen.
pub fn choose_sigma(
    set: &data::DataSet,
    kernel: KernelFamily,
    scale: ScalerKind,
    given: Option<SigmaSpec>,
    l: usize,
    seed: u64,
) -> Result<(f64, String)> {
    let (sigmas, how) = match given {
        Some(SigmaSpec::Value(v)) => return Ok((v, "given".into())),
        Some(s) => (vec![s], "given (median rule)".to_string()),
        None => (crate::config::parse_sigmas(SIGMA_GRID)?, format!("validation (rff, l={l})")),
    };
    let trial = fit_and_test(set, method("rff", kernel, l)?, sigmas, scale, seed)?;
    let r = &trial.report;
    let factor = r.median_distance.map(|m| format!(", {:.2}x median", r.sigma / m)).unwrap_or_default();
    eprintln!("{}: sigma = {:.4} by {how}{factor}", set.name, r.sigma);
    Ok((r.sigma, how))
}

/// Mean and (population) standard deviation.
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// Writes `rows` as CSV (header from the field names) to `dir/results.csv`,
/// atomically; creates `dir`.
pub fn write_csv<R: Serialize>(rows: &[R], dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the output directory", dir.display()))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    let path = dir.join("results.csv");
    crate::tensorfile::write_atomic(&path, &bytes)?;
    Ok(path)
}

/// A markdown table.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// The name of a dataset in plot titles: the shared sets by what the papers
/// call them, others as they are.
pub fn dataset_title(name: &str) -> String {
    match name {
        "cpu_rks" => "CPU (cpu_rks)".into(),
        "574_house_16H" => "census house_16H".into(),
        "a9a" => "a9a (Adult)".into(),
        "covtype_random15k" => "Covertype, random 15k".into(),
        "covtype_balanced10k" => "Covertype, balanced 10k".into(),
        "magic" => "MAGIC gamma".into(),
        other => other.into(),
    }
}

/// The display name of a method in plots and tables (the TEFM paper's).
pub fn display_name(method: &str) -> &str {
    match method {
        "rff" => "RFF",
        "rff-phase" => "RKS",
        "qmc" => "Quasi",
        "comp" => "Comp",
        "fastfood" => "Fastfood",
        "orf" => "ORF",
        "sorf" => "SORF",
        "nystrom" => "Nyström",
        "tefm-g" => "TEFM-G",
        "tefm-s" => "TEFM-S",
        "eof" => "EOF",
        "eof-uniform" => "EOF (uniform M)",
        "eof-boundary" => "EOF (boundary basis)",
        "eof-paper" => "EOF (paper)",
        "exact" => "Exact",
        other => other,
    }
}

#[cfg(test)]
mod tests;
