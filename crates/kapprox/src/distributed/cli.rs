//! Command-line handlers of the distributed forms of `fit`, of `reduce`
//! and of the hidden `worker` subcommand.

use super::files::{AfterDoc, encode_job_progress, part_doc, resume_from_result, write_part, write_result};
use super::reduce::reduce_files;
use super::workers::{ABORT_HOOK, fit_with_workers};
use super::{ShardSelection, format_shards};
use crate::cli::{FitArgs, ReduceArgs, WorkerArgs};
use crate::fit::job::FitJob;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn print_json(v: &serde_json::Value) -> Result<()> {
    println!("{}", serde_json::to_string(v)?);
    Ok(())
}

/// Whether this process is one of several ranks started by an MPI
/// launcher: `OMPI_COMM_WORLD_SIZE` (Open MPI) or `PMI_SIZE` (MPICH, Intel
/// MPI, Slurm's PMI) above 1, or `PMIX_RANK` with `SLURM_NTASKS` above 1
/// (Slurm with PMIx). A single rank runs as an ordinary process.
pub fn launched_by_mpi() -> bool {
    let above_one = |v: &str| std::env::var(v).ok().and_then(|s| s.trim().parse::<u64>().ok()).is_some_and(|n| n > 1);
    above_one("OMPI_COMM_WORLD_SIZE")
        || above_one("PMI_SIZE")
        || (std::env::var_os("PMIX_RANK").is_some() && above_one("SLURM_NTASKS"))
}

/// The directory a file will be written into.
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Handles `fit` when it is distributed (`--part`, `--shards`, `--after`,
/// `--workers`, `--plan`, or an MPI launch); returns `false` for an
/// ordinary local fit, which the caller runs.
pub fn fit(a: &FitArgs) -> Result<bool> {
    let partial = a.part.is_some() || a.shards.is_some();
    let distributed = partial || a.after.is_some() || a.workers.is_some() || a.plan || launched_by_mpi();
    if a.map.map == "exact" && distributed {
        bail!("--map exact fits in one process; --part, --shards, --after, --workers, --plan and MPI do not apply");
    }
    if launched_by_mpi() && !partial && a.workers.is_none() && !a.plan {
        #[cfg(feature = "mpi")]
        {
            let cfg = crate::commands::fit_config(a)?;
            super::mpi::fit(&cfg, &a.out, a.json)?;
            return Ok(true);
        }
        #[cfg(not(feature = "mpi"))]
        bail!(
            "started by an MPI launcher, but this kapprox was built without MPI support: rebuild with `cargo build \
             --release --features mpi`, or use --workers P or --part I/N and reduce"
        );
    }
    if a.plan {
        let cfg = crate::commands::fit_config(a)?;
        let job = FitJob::new(&cfg)?;
        let passes: Vec<String> = job.plan().iter().map(|p| p.to_string()).collect();
        print_json(&serde_json::json!({"passes": passes, "shards": job.n_shards(), "rows": job.base().n_rows()}))?;
        return Ok(true);
    }
    if let Some(p) = a.workers {
        let cfg = crate::commands::fit_config(a)?;
        let (model, report, dist) = fit_with_workers(&cfg, p, &parent_dir(&a.out))?;
        model.save(&a.out)?;
        if a.json {
            let rss = crate::sysinfo::peak_rss_bytes();
            print_json(
                &serde_json::json!({"model": a.out, "report": report, "distributed": dist, "peak_rss_bytes": rss}),
            )?;
        } else {
            eprintln!(
                "fitted {} ({} features) on {} rows with {p} worker process(es) in {} pass(es), {:.2} s (reduce \
                 {:.2} s, {:.1}%): sigma = {:.4}, alpha = {:.3e}",
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
            eprintln!("model written to {}", a.out.display());
        }
        return Ok(true);
    }
    if !partial {
        let Some(after) = &a.after else { return Ok(false) };
        // The remaining passes in this process.
        let cfg = crate::commands::fit_config(a)?;
        let (mut job, _) = resume_from_result(after, Some(&cfg))?;
        let all: Vec<usize> = (0..job.n_shards()).collect();
        let (model, report) = loop {
            let state = job.run_pass(&all)?;
            if let Some(done) = job.advance(state)? {
                break done;
            }
        };
        model.save(&a.out)?;
        if a.json {
            let rss = crate::sysinfo::peak_rss_bytes();
            print_json(&serde_json::json!({"model": a.out, "report": report, "peak_rss_bytes": rss}))?;
        } else {
            eprintln!("fitted {} after {}; model written to {}", report.method, after.display(), a.out.display());
        }
        return Ok(true);
    }
    let sel = match (&a.part, &a.shards) {
        (Some(p), None) => ShardSelection::parse_part(p)?,
        (None, Some(s)) => ShardSelection::parse_list(s)?,
        _ => bail!("--part and --shards cannot be combined"),
    };
    let cfg = crate::commands::fit_config(a)?;
    let (job, after) = match &a.after {
        Some(path) => resume_from_result(path, Some(&cfg))?,
        None => {
            let job = FitJob::new(&cfg)?;
            let fingerprint = encode_job_progress(&job).fingerprint;
            (job, AfterDoc { fingerprint, path: None })
        }
    };
    run_part(job, after, &sel, &a.out, a.json, abort_hook()).map(|_| true)
}

/// Runs the next pass of `job` on the shards of `sel` and writes the part.
fn run_part(
    mut job: FitJob,
    after: AfterDoc,
    sel: &ShardSelection,
    out: &Path,
    json: bool,
    abort_hook: Option<usize>,
) -> Result<()> {
    let shards = sel.resolve(job.n_shards())?;
    let t = Instant::now();
    let state = job.run_pass(&shards)?;
    let seconds = t.elapsed().as_secs_f64();
    if let (Some(i), Some((index, _))) = (abort_hook, sel.part())
        && i == index
    {
        eprintln!("kapprox: worker {i} aborts ({ABORT_HOOK}={i}, a test hook)");
        std::process::abort();
    }
    let doc = part_doc(&job, after, sel.part(), &shards, state.rows(), seconds);
    let pass = doc.pass.clone();
    let (rows, rss) = (doc.rows, doc.peak_rss_bytes);
    write_part(out, doc, state)?;
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
pub fn worker(a: &WorkerArgs) -> Result<()> {
    let (job, after) = resume_from_result(&a.job, None)?;
    let sel = ShardSelection::parse_part(&a.part)?;
    run_part(job, after, &sel, &a.out, false, abort_hook())
}

/// The part number named by the test hook [`ABORT_HOOK`], if set.
fn abort_hook() -> Option<usize> {
    std::env::var(ABORT_HOOK).ok().and_then(|v| v.trim().parse().ok())
}

/// The part files of `reduce`: those given, plus the `*.kpart` files of
/// `--parts-dir`, sorted by name.
fn part_paths(a: &ReduceArgs) -> Result<Vec<PathBuf>> {
    let mut paths = a.parts.clone();
    if let Some(dir) = &a.parts_dir {
        let mut found = Vec::new();
        for e in std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))? {
            let p = e?.path();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.ends_with(".kpart") && !name.starts_with('.') && p.is_file() {
                found.push(p);
            }
        }
        if found.is_empty() {
            bail!("{}: no *.kpart files", dir.display());
        }
        found.sort();
        paths.extend(found);
    }
    if paths.is_empty() {
        bail!("no part files given (list them, or use --parts-dir DIR)");
    }
    Ok(paths)
}

/// `kapprox reduce`.
pub fn reduce(a: &ReduceArgs) -> Result<()> {
    let t = Instant::now();
    let paths = part_paths(a)?;
    let (job, red) = reduce_files(&paths, a.after.as_deref())?;
    let rss = crate::sysinfo::peak_rss_bytes();
    let total = t.elapsed().as_secs_f64();
    let reduce_seconds = red.seconds.read + red.seconds.merge;
    match red.result {
        Some((model, report)) => {
            model.save(&a.out)?;
            if a.json {
                print_json(&serde_json::json!({
                    "model": a.out,
                    "report": report,
                    "parts": red.parts,
                    "reduce": red.seconds,
                    "reduce_share": reduce_seconds / total.max(1e-12),
                    "seconds": total,
                    "peak_rss_bytes": rss,
                }))?;
            } else {
                eprintln!(
                    "reduced {} part(s) of the last pass ({} rows) in {total:.2} s: {} with sigma = {:.4}, alpha = \
                     {:.3e}; model written to {}",
                    red.parts.len(),
                    report.rows,
                    report.method,
                    report.sigma,
                    report.alpha,
                    a.out.display()
                );
            }
        }
        None => {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let fingerprint = write_result(&a.out, &job, names)?;
            let (done, of, next) = (job.pass_index(), job.plan().len(), job.next_pass());
            if a.json {
                print_json(&serde_json::json!({
                    "pass_result": a.out,
                    "done": done,
                    "of": of,
                    "next": next.to_string(),
                    "fingerprint": fingerprint,
                    "parts": red.parts,
                    "reduce": red.seconds,
                    "reduce_share": reduce_seconds / total.max(1e-12),
                    "seconds": total,
                    "peak_rss_bytes": rss,
                }))?;
            } else {
                eprintln!(
                    "reduced {} part(s) of pass {done} of {of} into the pass result {}; next, the {next} pass: run \
                     `kapprox fit <the same flags> --after {} --part I/N --out PART` for every part, then `kapprox \
                     reduce PARTS --out {}`",
                    red.parts.len(),
                    a.out.display(),
                    a.out.display(),
                    if done + 1 == of { "MODEL" } else { "RESULT" }
                );
            }
        }
    }
    Ok(())
}

/// Handles `featurize` under an MPI launcher (each rank writes the shards
/// of its part); returns `false` otherwise.
pub fn featurize(a: &crate::cli::FeaturizeArgs) -> Result<bool> {
    if !launched_by_mpi() {
        return Ok(false);
    }
    #[cfg(feature = "mpi")]
    {
        super::mpi::featurize(a)?;
        Ok(true)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = a;
        bail!(
            "started by an MPI launcher, but this kapprox was built without MPI support: rebuild with `cargo build \
             --release --features mpi`"
        )
    }
}
