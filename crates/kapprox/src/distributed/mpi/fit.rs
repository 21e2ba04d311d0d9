//! `mpirun -n P kapprox fit ...`: the passes of a [`FitJob`] over every
//! rank's shards, merged on rank 0 in rank order.

use super::{CONTINUE, DONE, FAILED, OK, World};
use crate::distributed::files::{
    AfterDoc, PartDoc, PassDoc, encode_job_progress, parse_part, parse_result, part_bytes, result_bytes,
};
use crate::distributed::part::run_part;
use crate::distributed::reduce::{PartSummary, ReduceSeconds, check_part};
use crate::distributed::workers::{DistributedReport, PassTiming};
use crate::distributed::{RunDoc, ShardSelection, format_shards, part_shards};
use crate::fit::{FitConfig, FitJob, FitReport, PassState};
use crate::observer::Observer;
use anyhow::{Context, Result, anyhow, bail};
use std::path::Path;
use std::time::Instant;

/// What an MPI fit did, on rank 0.
#[derive(Clone, Debug)]
pub struct MpiFit {
    /// The fit's report.
    pub report: FitReport,
    /// Passes, parts and reduce times.
    pub distributed: DistributedReport,
    /// Number of ranks.
    pub ranks: usize,
}

/// The part of `rank` (of `size`) of the next pass of `job`, which started
/// from the pass result with fingerprint `after` (`None`: the job's own).
fn run_rank_part(
    job: &mut FitJob,
    after: &Option<String>,
    rank: usize,
    size: usize,
    observer: &dyn Observer,
) -> Result<(PartDoc, PassState)> {
    let fingerprint = match after {
        Some(f) => f.clone(),
        None => encode_job_progress(job).fingerprint,
    };
    run_part(job, AfterDoc { fingerprint, path: None }, &ShardSelection::Part { index: rank + 1, of: size }, observer)
}

/// `mpirun -n P kapprox fit ...`: every rank runs its part of every pass;
/// rank 0 merges, advances, writes the model to `out` and returns what it
/// did (`None` on the other ranks).
pub fn fit(cfg: &FitConfig, out: &Path, observer: &dyn Observer) -> Result<Option<MpiFit>> {
    let w = World::init()?;
    let observer = w.observer(observer);
    let t0 = Instant::now();
    let mut job: Result<FitJob, String> = FitJob::new(cfg).map_err(|e| format!("{e:#}"));
    let mut after: Option<String> = None;
    let mut passes = Vec::new();
    let mut broadcast_seconds = 0.0;
    loop {
        let t_pass = Instant::now();
        let local = match &mut job {
            Ok(job) => run_rank_part(job, &after, w.rank, w.size, observer).map_err(|e| format!("{e:#}")),
            Err(e) => Err(e.clone()),
        };
        if w.rank != 0 {
            match local.and_then(|(doc, state)| part_bytes(doc, state).map_err(|e| format!("{e:#}"))) {
                Ok(bytes) => w.send_to_root(OK, &bytes),
                Err(msg) => w.send_to_root(FAILED, msg.as_bytes()),
            }
            let (status, body) = w.broadcast(0, Vec::new());
            match status {
                DONE => return Ok(None),
                CONTINUE => {
                    let job = job.as_mut().map_err(|e| anyhow!("{e}"))?;
                    let (doc, progress) = parse_result(&body).context("the pass result broadcast by rank 0")?;
                    job.set_progress(progress)?;
                    after = Some(doc.fingerprint);
                }
                _ => bail!("rank {}: stopped, the fit failed: {}", w.rank, String::from_utf8_lossy(&body)),
            }
            continue;
        }
        // Rank 0: gather in rank order, merge, advance, broadcast.
        let own_seconds = t_pass.elapsed().as_secs_f64();
        let mut errors: Vec<String> = Vec::new();
        let mut merged: Option<PassState> = None;
        let mut parts = Vec::new();
        let mut seconds = ReduceSeconds::default();
        let mut wait = 0.0;
        let reference = match &job {
            Ok(j) => Some((
                RunDoc::of(j),
                PassDoc { index: j.pass_index(), of: j.plan().len(), name: j.next_pass().to_string() },
            )),
            Err(_) => None,
        };
        let mut own_fingerprint = None;
        match local {
            Ok((doc, state)) => {
                parts.push(PartSummary::of("rank 0", &doc));
                own_fingerprint = Some(doc.after.fingerprint.clone());
                merged = Some(state);
            }
            Err(msg) => errors.push(format!("rank 0 (shards {}): {msg}", shards_of(0, w.size, &job))),
        }
        for r in 1..w.size {
            let t = Instant::now();
            let (status, len) = w.receive_header(r);
            wait += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let body = w.receive_body(r, len);
            seconds.read += t.elapsed().as_secs_f64();
            if status != OK {
                errors.push(format!(
                    "rank {r} (shards {}): {}",
                    shards_of(r, w.size, &job),
                    String::from_utf8_lossy(&body)
                ));
                continue;
            }
            if !errors.is_empty() {
                continue;
            }
            let t = Instant::now();
            let checked = parse_part(&body).and_then(|(doc, state)| {
                let (run, pass) = reference.as_ref().expect("rank 0 has a job when it has no error");
                let fp = own_fingerprint.as_deref().unwrap_or_default();
                check_part(&format!("rank {r}"), &doc, "rank 0", run, pass, fp)?;
                Ok((doc, state))
            });
            seconds.read += t.elapsed().as_secs_f64();
            match checked {
                Ok((doc, state)) => {
                    parts.push(PartSummary::of(&format!("rank {r}"), &doc));
                    let t = Instant::now();
                    let m = merged.as_mut().expect("rank 0's own state comes first");
                    if let Err(e) = m.merge(&state) {
                        errors.push(format!("rank {r}: {e:#}"));
                    }
                    seconds.merge += t.elapsed().as_secs_f64();
                }
                Err(e) => errors.push(format!("rank {r}: {e:#}")),
            }
        }
        let outcome: Result<Option<_>> = if errors.is_empty() {
            let job = job.as_mut().expect("no error");
            let t = Instant::now();
            let kind = job.next_pass();
            job.add_pass_seconds(kind, 0.0);
            let r = job.advance(merged.take().expect("merged"));
            seconds.advance = t.elapsed().as_secs_f64();
            r
        } else {
            Err(anyhow!("{}", errors.join("; ")))
        };
        let pass_name = match &reference {
            Some((_, p)) => p.name.clone(),
            None => "?".into(),
        };
        passes.push(PassTiming {
            pass: pass_name,
            seconds: t_pass.elapsed().as_secs_f64(),
            wait,
            reduce: seconds,
            parts,
        });
        let _ = own_seconds;
        match outcome {
            Ok(Some((model, report))) => {
                let saved = model.save(out);
                let t = Instant::now();
                match &saved {
                    Ok(()) => w.broadcast(DONE, Vec::new()),
                    Err(e) => w.broadcast(FAILED, format!("{e:#}").into_bytes()),
                };
                broadcast_seconds += t.elapsed().as_secs_f64();
                saved?;
                let total = t0.elapsed().as_secs_f64();
                let distributed = DistributedReport::new("mpi", w.size, passes, broadcast_seconds, total);
                return Ok(Some(MpiFit { report, distributed, ranks: w.size }));
            }
            Ok(None) => {
                let job = job.as_mut().expect("advanced");
                let t = Instant::now();
                match result_bytes(job, Vec::new()) {
                    Ok((bytes, fp)) => {
                        w.broadcast(CONTINUE, bytes);
                        after = Some(fp);
                    }
                    Err(e) => {
                        w.broadcast(FAILED, format!("{e:#}").into_bytes());
                        return Err(e);
                    }
                }
                broadcast_seconds += t.elapsed().as_secs_f64();
            }
            Err(e) => {
                w.broadcast(FAILED, format!("{e:#}").into_bytes());
                return Err(e.context("no model was written"));
            }
        }
    }
}

fn shards_of(rank: usize, size: usize, job: &Result<FitJob, String>) -> String {
    match job {
        Ok(j) => format_shards(&part_shards(rank, size, j.n_shards()).collect::<Vec<_>>()),
        Err(_) => "?".into(),
    }
}
