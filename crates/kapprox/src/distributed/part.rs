//! One part of one pass: the next pass of a job over some shards, and the
//! document that a part file records with its state.

use super::ShardSelection;
use super::files::{AfterDoc, PartDoc, encode_job_progress, part_doc, resume_from_result};
use crate::fit::{FitConfig, FitJob, PassState};
use crate::observer::Observer;
use anyhow::Result;
use std::path::Path;
use std::time::Instant;

/// Test-only hook, read by `kapprox worker` and `kapprox fit --part I/N`:
/// the process whose part number `I` equals its value aborts (SIGABRT)
/// after its pass, before writing its part file. The CLI tests use it to
/// kill a worker or a part job at a known point; it has no other use.
pub const ABORT_HOOK: &str = "KAPPROX_TEST_WORKER_ABORT";

/// Runs the next pass of `job` (which started from `after`) on the shards
/// of `sel`; returns the part's document and state, to write with
/// [`super::files::write_part`].
pub fn run_part(
    job: &mut FitJob,
    after: AfterDoc,
    sel: &ShardSelection,
    observer: &dyn Observer,
) -> Result<(PartDoc, PassState)> {
    let shards = sel.resolve(job.n_shards())?;
    let t = Instant::now();
    let state = job.run_pass(&shards, observer)?;
    let seconds = t.elapsed().as_secs_f64();
    let doc = part_doc(job, after, sel.part(), &shards, state.rows(), seconds);
    Ok((doc, state))
}

/// The job a part runs: `cfg` from its first pass, or continued after the
/// pass result `after` (refused when that comes from another run).
pub fn part_job(cfg: &FitConfig, after: Option<&Path>) -> Result<(FitJob, AfterDoc)> {
    match after {
        Some(path) => resume_from_result(path, Some(cfg)),
        None => {
            let job = FitJob::new(cfg)?;
            let fingerprint = encode_job_progress(&job).fingerprint;
            Ok((job, AfterDoc { fingerprint, path: None }))
        }
    }
}
