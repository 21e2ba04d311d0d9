//! Reduce: check that parts belong together, merge them in shard order,
//! advance the job.
//!
//! Parts are checked from their documents alone (cheap, and a truncated
//! file is caught by its length) before any state is read: the same run
//! (configuration and dataset), the same pass, computed after the same pass
//! result, and every shard in exactly one part. Then the states are read
//! one at a time, in the order of their first shard, and merged left to
//! right, so at most two states are in memory.

use super::files::{AfterDoc, PartDoc, encode_job_progress, read_part, read_part_doc, resume_from_result};
use super::{RunDoc, format_shards, part_shards};
use crate::fit::{FitJob, FitReport, PassState, Progress};
use crate::model::Model;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One reduced part, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct PartSummary {
    /// The file (as given) or the worker/rank.
    pub source: String,
    /// `part i/N (shards ...)` or `shards ...`.
    pub part: String,
    /// Rows the part read.
    pub rows: u64,
    /// Seconds its pass took.
    pub seconds: f64,
    /// Peak resident memory of the process that computed it.
    pub peak_rss_bytes: Option<u64>,
}

impl PartSummary {
    /// The summary of a part from `source`.
    pub fn of(source: &str, doc: &PartDoc) -> PartSummary {
        PartSummary {
            source: source.to_string(),
            part: doc.describe(),
            rows: doc.rows,
            seconds: doc.seconds,
            peak_rss_bytes: doc.peak_rss_bytes,
        }
    }
}

/// Wall-clock seconds of a reduce.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReduceSeconds {
    /// Reading and decoding the parts' states.
    pub read: f64,
    /// Merging them.
    pub merge: f64,
    /// Advancing the job: the next pass's inputs, or selection and the solve.
    pub advance: f64,
}

/// The outcome of reducing one pass.
pub struct Reduction {
    /// The model and report after the last pass; `None` before.
    pub result: Option<(Model, FitReport)>,
    /// The parts, in merge order.
    pub parts: Vec<PartSummary>,
    /// Where the time went.
    pub seconds: ReduceSeconds,
}

/// Checks that part `doc` (from `source`) belongs to `run`'s pass
/// `pass_index` computed after progress `after`; `reference` names what
/// they come from in messages.
pub fn check_part(
    source: &str,
    doc: &PartDoc,
    reference: &str,
    run: &RunDoc,
    pass: &super::files::PassDoc,
    after: &str,
) -> Result<()> {
    if let Some(d) = doc.run.difference(run) {
        bail!(
            "{source}: {} {} differs from {reference}'s {} {}; the parts of one fit need the same flags and data",
            d.what,
            d.ours,
            d.what,
            d.theirs
        );
    }
    if doc.pass != *pass {
        bail!("{source} holds {}, but {reference} is at {pass}: reduce the parts of one pass at a time", doc.pass);
    }
    if doc.after.fingerprint != after {
        let from = doc.after.path.as_ref().map(|p| format!(" from {}", p.display())).unwrap_or_default();
        bail!(
            "{source} was computed after another pass result (fingerprint {}{from}) than {reference} (fingerprint \
             {after}): rerun it with the current pass result",
            doc.after.fingerprint
        );
    }
    Ok(())
}

/// Checks that `docs` cover the shards of `run` exactly once; returns the
/// merge order (by first shard; parts without shards last).
pub fn check_coverage(run: &RunDoc, docs: &[(String, PartDoc)]) -> Result<Vec<usize>> {
    let shards = &run.base.shards;
    let n = shards.len();
    let mut owner: Vec<Option<usize>> = vec![None; n];
    for (i, (src, d)) in docs.iter().enumerate() {
        for &s in &d.shards {
            if s >= n {
                bail!("{src}: lists shard {s}, but the dataset has {n} shards");
            }
            if let Some(j) = owner[s] {
                let (other, od) = &docs[j];
                bail!(
                    "shard {s} ({}) is covered by both {other} ({}) and {src} ({}); each shard must be in exactly \
                     one part",
                    shards[s].name,
                    od.describe(),
                    d.describe()
                );
            }
            owner[s] = Some(i);
        }
    }
    let missing: Vec<usize> = (0..n).filter(|&s| owner[s].is_none()).collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().take(3).map(|&s| shards[s].name.as_str()).collect();
        let more = if missing.len() > 3 { format!(", ... {} in all", missing.len()) } else { String::new() };
        let (what, verb, them) = if missing.len() == 1 { ("shard", "is", "it") } else { ("shards", "are", "them") };
        // When every part is a `--part i/N` of the same N, name the part jobs
        // to rerun; else the shards.
        let ofs: Vec<usize> = docs.iter().filter_map(|(_, d)| d.part.map(|p| p[1])).collect();
        let rerun = match ofs.first() {
            Some(&of) if ofs.len() == docs.len() && ofs.iter().all(|&o| o == of) => {
                let lost: Vec<String> = (0..of)
                    .filter(|&i| part_shards(i, of, n).any(|s| owner[s].is_none()))
                    .map(|i| format!("`kapprox fit --part {}/{of} ...`", i + 1))
                    .collect();
                format!("rerun {} with the same flags", lost.join(", "))
            }
            _ => {
                format!("compute {them} with `kapprox fit --shards {} ...` and the same flags", format_shards(&missing))
            }
        };
        bail!(
            "{what} {} ({}{more}) {verb} covered by none of the {} part file(s); {rerun}, then reduce again",
            format_shards(&missing),
            names.join(", "),
            docs.len()
        );
    }
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (docs[i].1.shards.first().copied().unwrap_or(usize::MAX), docs[i].0.clone());
        key(a).cmp(&key(b))
    });
    Ok(order)
}

/// Merges part states `load(i)` for `i` in `order` (left to right), then
/// advances `job`.
pub fn merge_and_advance(
    job: &mut FitJob,
    sources: &[String],
    order: &[usize],
    mut load: impl FnMut(usize) -> Result<PassState>,
) -> Result<(Option<(Model, FitReport)>, ReduceSeconds)> {
    let mut seconds = ReduceSeconds::default();
    let mut merged: Option<PassState> = None;
    for &i in order {
        let t = Instant::now();
        let state = load(i)?;
        seconds.read += t.elapsed().as_secs_f64();
        let t = Instant::now();
        match merged.as_mut() {
            None => merged = Some(state),
            Some(m) => m.merge(&state).with_context(|| format!("merging {}", sources[i]))?,
        }
        seconds.merge += t.elapsed().as_secs_f64();
    }
    let merged = merged.context("no part to reduce")?;
    let t = Instant::now();
    let result = job.advance(merged)?;
    seconds.advance = t.elapsed().as_secs_f64();
    Ok((result, seconds))
}

/// Reduces the part files `paths` of the next pass of `job` (whose progress
/// has fingerprint `after`).
pub fn reduce_files_into(job: &mut FitJob, after: &str, paths: &[PathBuf]) -> Result<Reduction> {
    if paths.is_empty() {
        bail!("no part files to reduce");
    }
    let run = RunDoc::of(job);
    let pass =
        super::files::PassDoc { index: job.pass_index(), of: job.plan().len(), name: job.next_pass().to_string() };
    let docs = read_docs(paths)?;
    for (src, d) in &docs {
        check_part(src, d, "this fit", &run, &pass, after)?;
    }
    reduce_checked(job, paths, docs)
}

/// What to do about a part file that cannot be read.
const RERUN: &str = "rerun the part job that wrote it, then reduce again";

fn read_docs(paths: &[PathBuf]) -> Result<Vec<(String, PartDoc)>> {
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for p in paths {
        let canonical = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            bail!("{} is given twice (also as {}); give each part file once", p.display(), first.display());
        }
        seen.push((canonical, p));
    }
    paths
        .iter()
        .map(|p| {
            let doc = read_part_doc(p).map_err(|e| anyhow::anyhow!("{e:#}; {RERUN}"))?;
            Ok((p.display().to_string(), doc))
        })
        .collect()
}

fn reduce_checked(job: &mut FitJob, paths: &[PathBuf], docs: Vec<(String, PartDoc)>) -> Result<Reduction> {
    let run = RunDoc::of(job);
    let order = check_coverage(&run, &docs)?;
    let sources: Vec<String> = docs.iter().map(|(s, _)| s.clone()).collect();
    let (result, seconds) = merge_and_advance(job, &sources, &order, |i| {
        let (doc, state) = read_part(&paths[i]).map_err(|e| anyhow::anyhow!("{e:#}; {RERUN}"))?;
        if doc.shards != docs[i].1.shards || doc.pass != docs[i].1.pass {
            bail!("{}: the file changed while it was being reduced", paths[i].display());
        }
        Ok(state)
    })?;
    let parts = order.iter().map(|&i| PartSummary::of(&docs[i].0, &docs[i].1)).collect();
    Ok(Reduction { result, parts, seconds })
}

/// `kapprox reduce`: reduces part files into the job they belong to, found
/// from the files themselves (and the pass result they were computed after:
/// `after`, else the path recorded in the parts). Returns the job (advanced)
/// and the reduction.
pub fn reduce_files(paths: &[PathBuf], after: Option<&Path>) -> Result<(FitJob, Reduction)> {
    if paths.is_empty() {
        bail!("no part files to reduce");
    }
    let docs = read_docs(paths)?;
    let (first_src, first) = &docs[0];
    for (src, d) in &docs[1..] {
        check_part(src, d, first_src, &first.run, &first.pass, &first.after.fingerprint)?;
    }
    let (mut job, after_fp) = if first.pass.index == 0 {
        let cfg = first.run.config.clone();
        let job = FitJob::resume(cfg, first.run.base.clone(), Progress::default())?;
        let fp = encode_job_progress(&job).fingerprint;
        (job, fp)
    } else {
        let path = match (after, &first.after.path) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(p)) => p.clone(),
            (None, None) => bail!(
                "{first_src} holds {}, computed after a pass result whose path it does not record; name it with --after",
                first.pass
            ),
        };
        let (job, after_doc): (FitJob, AfterDoc) = resume_from_result(&path, None)
            .with_context(|| format!("the pass result {first_src} was computed after (pass it with --after)"))?;
        (job, after_doc.fingerprint)
    };
    let run = RunDoc::of(&job);
    let reference = "the pass result";
    if let Some(d) = first.run.difference(&run) {
        bail!("{first_src}: {} {} differs from {reference}'s {} {}", d.what, d.ours, d.what, d.theirs);
    }
    let pass =
        super::files::PassDoc { index: job.pass_index(), of: job.plan().len(), name: job.next_pass().to_string() };
    check_part(first_src, first, reference, &run, &pass, &after_fp)?;
    let reduction = reduce_checked(&mut job, paths, docs)?;
    Ok((job, reduction))
}

/// The part files of a reduce: those given, plus the `*.kpart` files of
/// `dir` (not hidden ones), sorted by name.
pub fn part_files(given: &[PathBuf], dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let mut paths = given.to_vec();
    if let Some(dir) = dir {
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
