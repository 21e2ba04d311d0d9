//! `kernel-error` and `experiment`: measurements rather than models.

use super::output;
use super::print_json;
use crate::args::{ExperimentArg, ExperimentArgs, KernelErrorArgs};
use crate::bars::Bars;
use crate::validate::{kernel_error_config, task};
use anyhow::Result;
use kapprox_experiments::{Experiment, Request};

/// `kapprox kernel-error`.
pub(crate) fn kernel_error(a: &KernelErrorArgs, bars: &Bars) -> Result<()> {
    let cfg = kernel_error_config(a)?;
    let r = kapprox::kernel_error::kernel_error(&cfg, bars)?;
    if a.json {
        print_json(&r)?;
    } else {
        output::line(&format!(
            "{} on {} rows, sigma {:.4}: spectral error {:.4}, Frobenius error {:.4} (mean of {} map(s))",
            r.method,
            r.rows,
            r.sigma,
            r.spectral,
            r.frobenius,
            r.per_seed.len()
        ))?;
    }
    Ok(())
}

/// `kapprox experiment`.
pub(crate) fn experiment(a: &ExperimentArgs, bars: &Bars) -> Result<()> {
    let name = match a.name {
        ExperimentArg::KernelApprox => Experiment::KernelApprox,
        ExperimentArg::AccuracyVsTime => Experiment::AccuracyVsTime,
        ExperimentArg::RmseTable => Experiment::RmseTable,
        ExperimentArg::NystromVsRff => Experiment::NystromVsRff,
        ExperimentArg::EofSparsity => Experiment::EofSparsity,
    };
    let request = Request {
        name,
        data: a.data.clone(),
        test: a.test.clone(),
        test_fraction: a.test_fraction,
        out: a.out.clone(),
        seeds: a.seeds.clone(),
        features: a.features.clone(),
        methods: a.methods.clone(),
        rows: a.rows,
        sigma: a.sigma.clone(),
        task: a.task.map(task),
        label: a.label.clone(),
        exact_rows: a.exact_rows,
        shared_data: a.shared_data.clone(),
        work_dir: a.work_dir.clone(),
    };
    // The results directory collects files across runs (each replaced
    // atomically by the experiment), so it is only kept apart from the
    // datasets, not staged whole.
    let datasets = a.data.iter().chain(&a.test).chain(&a.work_dir);
    kapprox::io::check_apart(&a.out, datasets)?;
    let outcome = kapprox_experiments::run(&request, bars)?;
    if a.json {
        output::line(&outcome.json)?;
    } else {
        output::text(&outcome.markdown)?;
    }
    eprintln!(
        "experiment {} done in {:.1} s: {} and {}",
        name.name(),
        outcome.seconds,
        outcome.csv.display(),
        outcome.png.display()
    );
    Ok(())
}
