//! `kapprox fit --workers P`: every pass runs in `P` child processes of
//! this executable over disjoint contiguous shard sets; this process
//! reduces their part files and advances.
//!
//! Before each pass the coordinator writes the job's progress as a
//! pass-result file into a scratch directory beside the output; worker `i`
//! runs part `i/P` of the pass from it and writes its part file there
//! ([`WorkerTask`]; the command line starts `kapprox worker --job RESULT
//! --part i/P --out PART`, a hidden subcommand). A worker that exits with an
//! error or is killed makes the fit fail with its number, its shards and
//! the tail of its stderr; the other workers are stopped and no model is
//! written. The scratch directory is removed in every case.
//!
//! Workers die with this process: each is started with the parent-death
//! signal SIGKILL (`prctl(PR_SET_PDEATHSIG)`, Linux) and checks, once set,
//! that its parent is still this process (the parent may have died between
//! the fork and the `prctl`). They stay in this process's process group, so
//! a signal to the group (Ctrl-C in a terminal) reaches them too. Give
//! [`fit_with_workers`] a scratch directory inside a
//! [`kapprox_io::StagedOutput`]'s staging area (the CLI uses the model
//! output's) and a killed fit's scratch goes with that area when the next
//! run on the same output removes it.
//!
//! Processes isolate memory and crashes; threads stay the default inside
//! one process. Each worker gets `max(1, T / P)` threads for the `T` of
//! this process (`--threads`, else one per core).

use super::files::write_result;
use super::reduce::{PartSummary, ReduceSeconds, reduce_files_into};
use super::{format_shards, part_shards};
use crate::fit::{FitConfig, FitJob, FitReport};
use crate::model::Model;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What one worker process does for one pass: run part `part` of `of`
/// of the pass whose inputs are the pass-result file `job`, with
/// `threads` threads, and write the part file `out`.
#[derive(Clone, Debug)]
pub struct WorkerTask {
    /// The pass-result file to continue from.
    pub job: PathBuf,
    /// 1-based part number.
    pub part: usize,
    /// Number of parts (workers).
    pub of: usize,
    /// The part file to write.
    pub out: PathBuf,
    /// Threads the worker may use.
    pub threads: usize,
}

/// One pass of a distributed fit, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct PassTiming {
    /// `prepare`, `sketch 1`, ..., `fit`.
    pub pass: String,
    /// Wall-clock seconds from starting the pass to having advanced.
    pub seconds: f64,
    /// Seconds the coordinator waited for the slowest other process after
    /// finishing its own part (MPI rank 0; load imbalance, not reduce cost).
    pub wait: f64,
    /// Reading, merging and advancing.
    pub reduce: ReduceSeconds,
    /// The parts, in merge order.
    pub parts: Vec<PartSummary>,
}

/// What a distributed fit did.
#[derive(Clone, Debug, Serialize)]
pub struct DistributedReport {
    /// `workers` or `mpi`.
    pub mode: String,
    /// Processes that ran the passes.
    pub processes: usize,
    /// Per pass.
    pub passes: Vec<PassTiming>,
    /// Seconds spent moving and merging states (reading or receiving,
    /// decoding, merging; broadcasting pass results under MPI).
    pub reduce_seconds: f64,
    /// `reduce_seconds` over the whole fit's wall time.
    pub reduce_share: f64,
    /// Wall-clock seconds of the whole fit.
    pub total_seconds: f64,
}

impl DistributedReport {
    /// Sums the reduce times and their share of `total` seconds.
    pub fn new(mode: &str, processes: usize, passes: Vec<PassTiming>, extra_reduce: f64, total: f64) -> Self {
        let reduce_seconds = passes.iter().map(|p| p.reduce.read + p.reduce.merge).sum::<f64>() + extra_reduce;
        DistributedReport {
            mode: mode.into(),
            processes,
            passes,
            reduce_seconds,
            reduce_share: if total > 0.0 { reduce_seconds / total } else { 0.0 },
            total_seconds: total,
        }
    }
}

struct Worker {
    index: usize,
    part: PathBuf,
    child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// Runs `cfg` with `workers` worker processes, started by `command` (the
/// process that runs a [`WorkerTask`], with stdin, stdout and stderr left
/// to this function); scratch files go into a hidden temporary directory
/// in `scratch_dir`.
pub fn fit_with_workers(
    cfg: &FitConfig,
    workers: usize,
    scratch_dir: &Path,
    command: &dyn Fn(&WorkerTask) -> Result<Command>,
) -> Result<(Model, FitReport, DistributedReport)> {
    if workers == 0 {
        bail!("--workers: must be at least 1");
    }
    let t0 = Instant::now();
    let mut job = FitJob::new(cfg)?;
    let tmp = tempfile::Builder::new()
        .prefix(".kapprox-workers-")
        .tempdir_in(scratch_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", scratch_dir.display()))?;
    let threads = (rayon::current_num_threads() / workers).max(1);
    let mut passes = Vec::new();
    loop {
        let k = job.pass_index();
        let kind = job.next_pass();
        let job_path = tmp.path().join(format!("pass-{k}.kresult"));
        let fingerprint = write_result(&job_path, &job, Vec::new())?;
        let t = Instant::now();
        let mut running = Vec::with_capacity(workers);
        for i in 1..=workers {
            let part = tmp.path().join(format!("pass-{k}-part-{i}.kpart"));
            let task = WorkerTask { job: job_path.clone(), part: i, of: workers, out: part.clone(), threads };
            let mut cmd = command(&task)?;
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
            die_with_parent(&mut cmd);
            let program = cmd.get_program().to_string_lossy().into_owned();
            let mut child = cmd.spawn().with_context(|| format!("cannot start worker {i} ({program})"))?;
            let mut pipe = child.stderr.take().expect("piped");
            let stderr = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = pipe.read_to_string(&mut s);
                s
            });
            running.push(Worker { index: i, part, child, stderr: Some(stderr) });
        }
        wait_all(&mut running, workers, job.n_shards(), &kind.to_string(), k, job.plan().len())?;
        job.add_pass_seconds(kind, t.elapsed().as_secs_f64());
        let seconds = t.elapsed().as_secs_f64();
        let paths: Vec<PathBuf> = running.iter().map(|w| w.part.clone()).collect();
        let red = reduce_files_into(&mut job, &fingerprint, &paths)?;
        for p in paths.iter().chain([&job_path]) {
            let _ = std::fs::remove_file(p);
        }
        // The summaries are in merge order and name the part files: name
        // the workers instead.
        let mut parts = red.parts;
        for p in parts.iter_mut() {
            if let Some(w) = running.iter().find(|w| w.part.display().to_string() == p.source) {
                p.source = format!("worker {}", w.index);
            }
        }
        passes.push(PassTiming { pass: kind.to_string(), seconds, wait: 0.0, reduce: red.seconds, parts });
        if let Some((model, report)) = red.result {
            let total = t0.elapsed().as_secs_f64();
            return Ok((model, report, DistributedReport::new("workers", workers, passes, 0.0, total)));
        }
    }
}

/// Waits for every worker; on the first failure stops the others and
/// reports the failed one.
fn wait_all(running: &mut [Worker], of: usize, n_shards: usize, pass: &str, k: usize, n_passes: usize) -> Result<()> {
    let mut done = vec![false; running.len()];
    loop {
        let mut all = true;
        for (j, w) in running.iter_mut().enumerate() {
            if done[j] {
                continue;
            }
            match w.child.try_wait().with_context(|| format!("cannot wait for worker {}", w.index))? {
                None => all = false,
                Some(status) if status.success() => done[j] = true,
                Some(status) => {
                    let stderr = w.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
                    let shards: Vec<usize> = part_shards(w.index - 1, of, n_shards).collect();
                    let index = w.index;
                    for (o, other) in running.iter_mut().enumerate() {
                        if !done[o] && o != j {
                            let _ = other.child.kill();
                            let _ = other.child.wait();
                        }
                    }
                    bail!(
                        "worker {index} of {of} (pass {} of {n_passes}, {pass}; shards {}) {}{}; no model was written",
                        k + 1,
                        format_shards(&shards),
                        describe_status(status),
                        tail(&stderr)
                    );
                }
            }
        }
        if all {
            for w in running.iter_mut() {
                if let Some(h) = w.stderr.take() {
                    let _ = h.join();
                }
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes the child started by `cmd` receive SIGKILL when this process
/// (precisely: the thread that starts it, which in the CLI is the main
/// thread) ends, however it ends.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use rustix::process::{Signal, getpid, getppid, set_parent_process_death_signal};
    use std::os::unix::process::CommandExt;
    let parent = getpid();
    // SAFETY: the closure runs in the forked child before exec; it makes two
    // async-signal-safe system calls (prctl, getppid) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            if getppid() != Some(parent) {
                // The parent died before the signal was armed: the child
                // fails to start and exits.
                return Err(std::io::ErrorKind::NotFound.into());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}

fn describe_status(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            return format!("was killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("failed with exit code {c}"),
        None => format!("failed ({status})"),
    }
}

/// `: <last lines of stderr>` (at most 5 lines / 1000 characters), or nothing.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let t = lines[lines.len().saturating_sub(5)..].join(" | ");
    let n = t.chars().count();
    if n > 1000 { format!(": ...{}", t.chars().skip(n - 1000).collect::<String>()) } else { format!(": {t}") }
}
