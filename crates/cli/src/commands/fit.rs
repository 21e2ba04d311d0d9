//! `fit` in every mode ([`FitMode`]), `reduce`, and the hidden `worker`.

use super::output;
use super::print_json;
use crate::args::{FitArgs, ReduceArgs, WorkerArgs};
use crate::bars::Bars;
use crate::validate::{fit_config, fit_mode};
use anyhow::{Context, Result};
use kapprox::FitReport;
use kapprox::distributed::files::{AfterDoc, part_bytes, result_bytes, resume_from_result};
use kapprox::distributed::part::{ABORT_HOOK, part_job, run_part};
use kapprox::distributed::reduce::{part_files, reduce_files};
use kapprox::distributed::workers::{DistributedReport, WorkerTask, fit_with_workers};
use kapprox::distributed::{FitMode, ShardSelection, format_shards};
use kapprox::fit::FitJob;
use kapprox::io::StagedOutput;
use kapprox::sysinfo::peak_rss_bytes;
use std::path::Path;
use std::time::Instant;

/// `kapprox fit`.
pub(crate) fn fit(a: &FitArgs, bars: &Bars) -> Result<()> {
    let mode = fit_mode(a)?;
    let cfg = fit_config(a)?;
    let out = a.out.clone();
    // The output is staged before any data is read: a refused output costs
    // nothing, and a killed fit leaves only a staging area the next run removes.
    let stage = || output::file(&a.out, a.output.overwrite, output::inputs([Some(&*a.train), a.after.as_deref()]));
    match mode {
        FitMode::Local => {
            let staged = stage()?;
            let (model, report) = kapprox::fit(&cfg, bars)?;
            model.write_staged(staged, a.store.policy())?;
            let warnings = report.warnings(a.map.features);
            if a.json {
                let rss = peak_rss_bytes();
                print_json(
                    &serde_json::json!({"model": out, "report": report, "warnings": warnings, "peak_rss_bytes": rss}),
                )?;
            } else {
                print_fit_report(&report, &out);
            }
            for w in &warnings {
                eprintln!("warning: {w}");
            }
        }
        FitMode::Plan => {
            let job = FitJob::new(&cfg)?;
            let passes: Vec<String> = job.plan().iter().map(|p| p.to_string()).collect();
            print_json(&serde_json::json!({"passes": passes, "shards": job.n_shards(), "rows": job.base().n_rows()}))?;
        }
        FitMode::Workers(p) => {
            let staged = stage()?;
            let exe = std::env::current_exe().context("cannot locate the kapprox executable to start workers")?;
            let command = |t: &WorkerTask| -> Result<std::process::Command> {
                let mut cmd = std::process::Command::new(&exe);
                cmd.args(["--threads", &t.threads.to_string(), "--quiet", "worker", "--job"])
                    .arg(&t.job)
                    .args(["--part", &format!("{}/{}", t.part, t.of), "--out"])
                    .arg(&t.out);
                Ok(cmd)
            };
            // The workers' scratch lives in the output's staging area: a
            // killed fit's scratch goes with it when the next run cleans up.
            let scratch = staged.path().parent().unwrap_or(Path::new("."));
            let (model, report, dist) = fit_with_workers(&cfg, p, scratch, &command)?;
            model.write_staged(staged, a.store.policy())?;
            print_distributed(&report, &dist, &format!("{p} worker process(es)"), &out, a.json)?;
        }
        FitMode::After(after) => {
            // The remaining passes in this process.
            let staged = stage()?;
            let (mut job, _) = resume_from_result(&after, Some(&cfg))?;
            let (model, report) = job.run_to_end(bars)?;
            model.write_staged(staged, a.store.policy())?;
            if a.json {
                print_json(&serde_json::json!({"model": out, "report": report, "peak_rss_bytes": peak_rss_bytes()}))?;
            } else {
                eprintln!("fitted {} after {}; model written to {}", report.method, after.display(), out.display());
            }
        }
        FitMode::Part { shards, after } => {
            // Checked up front; staged only to write, so that a part job
            // that dies during its pass leaves nothing at all.
            drop(stage()?);
            let (job, after) = part_job(&cfg, after.as_deref())?;
            part(job, after, &shards, &stage, a.json, bars)?;
        }
        FitMode::Mpi => {
            // Rank 0 writes the model atomically; checked here, on every rank.
            drop(stage()?);
            fit_mpi(&cfg, &out, a.json, bars)?
        }
    }
    Ok(())
}

fn print_fit_report(r: &FitReport, out: &Path) {
    eprintln!(
        "fitted {} ({} features) on {} rows ({} held out) in {} pass(es), {:.2} s: sigma = {:.4}, alpha = {:.3e}",
        r.method, r.n_features, r.rows, r.validation_rows, r.passes, r.seconds.total, r.sigma, r.alpha
    );
    for c in &r.candidates {
        let acc = c.validation_accuracy.map(|a| format!(", accuracy {:.4}%", 100.0 * a)).unwrap_or_default();
        eprintln!(
            "  sigma {:>10.4}: best alpha {:.3e}, validation RMSE {:.4}{acc}",
            c.sigma,
            c.best_alpha,
            c.validation_mse.sqrt()
        );
    }
    if let Some(e) = &r.extended {
        let sigmas: Vec<String> = e.sigmas_added.iter().map(|s| format!("{s:.4}")).collect();
        eprintln!(
            "  --extend-grid: {} alpha value(s) added; sigma candidates added: {} ({} more pass(es))",
            e.alphas_added,
            if sigmas.is_empty() { "none".to_string() } else { sigmas.join(", ") },
            e.extra_passes
        );
    }
    super::apply::print_missing(r.skipped, r.imputed, &r.other);
    eprintln!("model written to {}", out.display());
}

#[cfg(feature = "mpi")]
fn fit_mpi(cfg: &kapprox::FitConfig, out: &Path, json: bool, bars: &Bars) -> Result<()> {
    match kapprox::distributed::mpi::fit(cfg, out, bars)? {
        Some(r) => print_distributed(&r.report, &r.distributed, &format!("{} MPI ranks", r.ranks), out, json),
        None => Ok(()),
    }
}

/// The report of a fit run by several processes (`what`: `4 worker
/// process(es)`, `8 MPI ranks`).
fn print_distributed(report: &FitReport, dist: &DistributedReport, what: &str, out: &Path, json: bool) -> Result<()> {
    if json {
        let rss = peak_rss_bytes();
        print_json(&serde_json::json!({"model": out, "report": report, "distributed": dist, "peak_rss_bytes": rss}))?;
    } else {
        eprintln!(
            "fitted {} ({} features) on {} rows with {what} in {} pass(es), {:.2} s (reduce {:.2} s, {:.1}%): sigma = \
             {:.4}, alpha = {:.3e}",
            report.method,
            report.n_features,
            report.rows,
            report.passes,
            dist.total_seconds,
            dist.reduce_seconds,
            100.0 * dist.reduce_share,
            report.sigma,
            report.alpha
        );
        eprintln!("model written to {}", out.display());
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn fit_mpi(_: &kapprox::FitConfig, _: &Path, _: bool, _: &Bars) -> Result<()> {
    unreachable!("fit_mode refuses MPI launches without the mpi feature")
}

/// Runs the next pass of `job` on the shards of `sel` and writes the part.
fn part(
    mut job: FitJob,
    after: AfterDoc,
    sel: &ShardSelection,
    stage: &dyn Fn() -> Result<StagedOutput>,
    json: bool,
    bars: &Bars,
) -> Result<()> {
    let (doc, state) = run_part(&mut job, after, sel, bars)?;
    if let (Some(i), Some((index, _))) = (abort_hook(), sel.part())
        && i == index
    {
        eprintln!("kapprox: worker {i} aborts ({ABORT_HOOK}={i}, a test hook)");
        std::process::abort();
    }
    let (pass, shards, rows, seconds, rss) =
        (doc.pass.clone(), doc.shards.clone(), doc.rows, doc.seconds, doc.peak_rss_bytes);
    let out = stage()?;
    let target = out.target().to_path_buf();
    output::commit_file(out, &part_bytes(doc, state)?)?;
    let out = &target;
    if json {
        print_json(&serde_json::json!({
            "part": out,
            "pass": pass,
            "shards": shards,
            "rows": rows,
            "seconds": seconds,
            "peak_rss_bytes": rss,
        }))?;
    } else {
        eprintln!(
            "wrote {pass} over shards {} ({rows} rows) to {} in {seconds:.2} s",
            format_shards(&shards),
            out.display()
        );
    }
    Ok(())
}

/// `kapprox worker` (hidden): one part of one pass for `fit --workers`.
pub(crate) fn worker(a: &WorkerArgs, bars: &Bars) -> Result<()> {
    let (job, after) = resume_from_result(&a.job, None)?;
    let sel = ShardSelection::parse_part(&a.part)?;
    // In the coordinator's scratch directory, which only it reads.
    part(job, after, &sel, &|| output::file(&a.out, true, [&a.job]), false, bars)
}

/// The part number named by the test hook [`ABORT_HOOK`], if set.
fn abort_hook() -> Option<usize> {
    std::env::var(ABORT_HOOK).ok().and_then(|v| v.trim().parse().ok())
}

/// `kapprox reduce`.
pub(crate) fn reduce(a: &ReduceArgs) -> Result<()> {
    let t = Instant::now();
    let paths = part_files(&a.parts, a.parts_dir.as_deref())?;
    // The parts themselves, not `--parts-dir`: a model beside its parts is fine.
    let inputs = paths.iter().map(|p| Some(p.as_path())).chain([a.after.as_deref()]);
    let staged = output::file(&a.out, a.output.overwrite, output::inputs(inputs))?;
    let out = a.out.clone();
    let (job, red) = reduce_files(&paths, a.after.as_deref())?;
    let rss = peak_rss_bytes();
    let total = t.elapsed().as_secs_f64();
    let reduce_seconds = red.seconds.read + red.seconds.merge;
    // What both kinds of result report about the reduce, merged into each.
    let with_reduce = |mut doc: serde_json::Value| -> serde_json::Value {
        let timing = serde_json::json!({
            "parts": red.parts,
            "reduce": red.seconds,
            "reduce_share": reduce_seconds / total.max(1e-12),
            "seconds": total,
            "peak_rss_bytes": rss,
        });
        if let (Some(doc), serde_json::Value::Object(timing)) = (doc.as_object_mut(), timing) {
            doc.extend(timing);
        }
        doc
    };
    match red.result {
        Some((model, report)) => {
            model.write_staged(staged, a.store.policy())?;
            if a.json {
                print_json(&with_reduce(serde_json::json!({"model": out, "report": report})))?;
            } else {
                eprintln!(
                    "reduced {} part(s) of the last pass ({} rows) in {total:.2} s: {} with sigma = {:.4}, alpha = \
                     {:.3e}; model written to {}",
                    red.parts.len(),
                    report.rows,
                    report.method,
                    report.sigma,
                    report.alpha,
                    out.display()
                );
            }
        }
        None => {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let (bytes, fingerprint) = result_bytes(&job, names)?;
            output::commit_file(staged, &bytes)?;
            let (done, of, next) = (job.pass_index(), job.plan().len(), job.next_pass());
            if a.json {
                print_json(&with_reduce(serde_json::json!({
                    "pass_result": out,
                    "done": done,
                    "of": of,
                    "next": next.to_string(),
                    "fingerprint": fingerprint,
                })))?;
            } else {
                eprintln!(
                    "reduced {} part(s) of pass {done} of {of} into the pass result {}; next, the {next} pass: run \
                     `kapprox fit <the same flags> --after {} --part I/N --out PART` for every part, then `kapprox \
                     reduce PARTS --out {}`",
                    red.parts.len(),
                    out.display(),
                    out.display(),
                    if done + 1 == of { "MODEL" } else { "RESULT" }
                );
            }
        }
    }
    Ok(())
}
