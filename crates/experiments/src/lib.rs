//! The source papers' experiments over the kapprox library
//! (`kapprox experiment NAME`).
//!
//! Each experiment is a library function that takes an options struct and
//! returns rows ([`kernel_approx::run`], [`accuracy_vs_time::run`],
//! [`rmse_table::run`], [`nystrom_vs_rff::run`], [`eof_sparsity::run`]),
//! plus a writer of `results.csv` and `NAME.png` into `--out DIR`. Every
//! fit goes through the library ([`kapprox::fit()`],
//! [`kapprox::predict::evaluate`]), never a
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
//! with random Fourier features and the candidates [`SIGMA_GRID`](sweep::SIGMA_GRID)
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
pub mod sweep;
pub mod table;

use anyhow::{Result, bail};
use kapprox::{Observer, Task};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use sweep::{Common, parse_one_sigma};

/// The experiments (the command line's help describes each with its
/// defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// What to run: the experiment and the options its command takes.
///
/// `None` and empty lists mean the experiment's defaults.
#[derive(Clone, Debug)]
pub struct Request {
    /// The experiment.
    pub name: Experiment,
    /// Datasets: Parquet directories or raw files (default: the
    /// experiment's shared sets).
    pub data: Vec<PathBuf>,
    /// Test sets for the `data` at the same position.
    pub test: Vec<PathBuf>,
    /// Fraction held out as the test set when a dataset has no test companion.
    pub test_fraction: f64,
    /// Output directory of `results.csv` and `NAME.png`.
    pub out: PathBuf,
    /// Seeds to average over.
    pub seeds: Option<Vec<u64>>,
    /// Feature counts.
    pub features: Option<Vec<usize>>,
    /// Methods (the experiment's names).
    pub methods: Option<Vec<String>>,
    /// kernel-approx: rows sampled to form K.
    pub rows: Option<usize>,
    /// One bandwidth for every method (`auto`, `auto*F` or a number).
    pub sigma: Option<String>,
    /// Learning task of user-given datasets.
    pub task: Option<Task>,
    /// Label column of raw CSV/TSV files: a name or `last`.
    pub label: String,
    /// rmse-table: exact kernel ridge only up to this many training rows.
    pub exact_rows: usize,
    /// Where the default datasets are looked for.
    pub shared_data: PathBuf,
    /// Keep converted datasets here instead of a temporary directory.
    pub work_dir: Option<PathBuf>,
}

/// What an experiment produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The rows as one JSON array.
    pub json: String,
    /// The rows as a markdown table.
    pub markdown: String,
    /// The CSV written.
    pub csv: PathBuf,
    /// The PNG written.
    pub png: PathBuf,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Runs the experiment `a.name`: writes `results.csv` and `NAME.png` into
/// `a.out` and returns the rows.
pub fn run(a: &Request, observer: &dyn Observer) -> Result<Outcome> {
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
    let task = a.task;
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
                ws.resolve(&spec, a.test_fraction, observer)
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
        defaults.iter().map(|&(file, t)| ws.resolve(&data::Source::shared(&s, file, t), 0.2, observer)).collect()
    };
    const CPU: (&str, Task) = ("cpu_rks_train.tsv.gz", Task::Regression);
    const HOUSE: (&str, Task) = ("pmlb/574_house_16H.tsv.gz", Task::Regression);
    const A9A: (&str, Task) = ("libsvm/a9a", Task::Classification);
    let out = &a.out;
    let mut outcome = match a.name {
        Experiment::KernelApprox => {
            let input = match a.data.first() {
                Some(d) => ws.resolve_train_only(d, &a.label)?,
                None => ws.resolve_train_only(&shared()?.join("cpu_rks_train.tsv.gz"), "last")?,
            };
            let opts = kernel_approx::Options::new(input, a.rows, common)?;
            let rows = kernel_approx::run(&opts, observer)?;
            kernel_approx::write(&rows, &opts, out)?;
            outcome(&rows, kernel_approx::markdown(&rows))?
        }
        Experiment::AccuracyVsTime => {
            let opts = accuracy_vs_time::options(sets(&mut ws, &[CPU, A9A], Task::Regression)?, common)?;
            let rows = accuracy_vs_time::run(&opts, observer)?;
            accuracy_vs_time::write(&rows, out)?;
            outcome(&rows, accuracy_vs_time::markdown(&rows))?
        }
        Experiment::RmseTable => {
            let opts = rmse_table::Options::new(sets(&mut ws, &[CPU, HOUSE], Task::Regression)?, a.exact_rows, common)?;
            let rows = rmse_table::run(&opts, observer)?;
            rmse_table::write(&rows, &opts, out)?;
            outcome(&rows, rmse_table::markdown(&rows, &opts))?
        }
        Experiment::NystromVsRff => {
            // The paper's CPU, CENSUS, ADULT and COVTYPE (a 15k sample).
            let covtype = ("covtype_subsets/covtype_random15k.csv", Task::Classification);
            let sets = sets(&mut ws, &[CPU, HOUSE, A9A, covtype], Task::Classification)?;
            let opts = nystrom_vs_rff::options(sets, common)?;
            let rows = nystrom_vs_rff::run(&opts, observer)?;
            nystrom_vs_rff::write(&rows, out)?;
            outcome(&rows, nystrom_vs_rff::markdown(&rows))?
        }
        Experiment::EofSparsity => {
            let opts = eof_sparsity::options(sets(&mut ws, &[CPU], Task::Regression)?, common)?;
            let rows = eof_sparsity::run(&opts, observer)?;
            eof_sparsity::write(&rows, out)?;
            outcome(&rows, eof_sparsity::markdown(&rows))?
        }
    };
    outcome.seconds = t0.elapsed().as_secs_f64();
    outcome.csv = out.join("results.csv");
    outcome.png = out.join(format!("{}.png", a.name.name()));
    Ok(outcome)
}

/// The rows rendered both ways.
fn outcome<R: Serialize>(rows: &[R], markdown: String) -> Result<Outcome> {
    Ok(Outcome { json: serde_json::to_string(rows)?, markdown, csv: PathBuf::new(), png: PathBuf::new(), seconds: 0.0 })
}

#[cfg(test)]
mod tests;
