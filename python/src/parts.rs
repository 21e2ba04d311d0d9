//! The engine's distributed fit for Python: a [`FitJob`] whose passes run
//! over shard subsets anywhere (Dask workers, other processes), as part
//! files — the same bytes format as `kapprox fit --part I/N` writes
//! (`.kpart`) — merged in shard order and advanced.
//!
//! The protocol, per pass: the driver sends the job's progress as
//! pass-result bytes ([`PyFitJob::result_bytes`], what `kapprox reduce`
//! writes); each worker resumes the job from them and runs the pass over
//! its shards ([`run_part`]); the driver reduces the parts
//! ([`PyFitJob::reduce`]): checks they belong to this run and pass and cover
//! every shard exactly once, merges their states left to right in shard
//! order (as `kapprox reduce` does, so the model is bitwise the one-process
//! model), and advances. After the last pass it returns the model.

use crate::engine::{PyModel, fit_config};
use crate::value_error;
use kapprox::Silent;
use kapprox::distributed::files::{
    AfterDoc, PartDoc, encode_job_progress, parse_part, parse_result, part_bytes, part_doc, result_bytes,
};
use kapprox::distributed::reduce::{check_coverage, check_part, merge_and_advance};
use kapprox::distributed::{RunDoc, row_ranges};
use kapprox::fit::{FitJob, PassState};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::time::Instant;

/// A fit as passes with mergeable states (the engine's `FitJob`).
#[pyclass(module = "kapprox._native", name = "FitJob")]
pub struct PyFitJob {
    job: FitJob,
    /// Set once the last pass is reduced.
    report: Option<String>,
}

fn anyhow_error(e: anyhow::Error) -> PyErr {
    value_error(format!("{e:#}"))
}

/// A job continued from pass-result bytes (the run recorded in them).
fn resume(result: &[u8]) -> anyhow::Result<FitJob> {
    let (doc, progress) = parse_result(result)?;
    FitJob::resume(doc.run.config, doc.run.base, progress)
}

/// The pass document of `job`'s next pass.
fn pass_doc(job: &FitJob) -> kapprox::distributed::files::PassDoc {
    kapprox::distributed::files::PassDoc {
        index: job.pass_index(),
        of: job.plan().len(),
        name: job.next_pass().to_string(),
    }
}

#[pymethods]
impl PyFitJob {
    /// Plans a fit of the settings (JSON, as for `fit_parquet`): reads the
    /// Parquet footers and decides the passes.
    #[new]
    fn new(py: Python<'_>, settings_json: &str) -> PyResult<PyFitJob> {
        let cfg = fit_config(settings_json).map_err(value_error)?;
        let job = py.detach(|| FitJob::new(&cfg)).map_err(anyhow_error)?;
        Ok(PyFitJob { job, report: None })
    }

    /// The job's progress as pass-result bytes (`kapprox-pass-result`): what
    /// a worker needs to run the next pass.
    fn result_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let (bytes, _) = result_bytes(&self.job, Vec::new()).map_err(anyhow_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Shards of the training data.
    #[getter]
    fn n_shards(&self) -> usize {
        self.job.n_shards()
    }

    /// Rows of each shard.
    #[getter]
    fn shard_rows(&self) -> Vec<u64> {
        self.job.base().shards.iter().map(|s| s.rows).collect()
    }

    /// The passes of the plan: `prepare`, `sketch 1`, ..., `fit`.
    #[getter]
    fn passes(&self) -> Vec<String> {
        self.job.plan().iter().map(|p| p.to_string()).collect()
    }

    /// Passes done (the index of the next pass).
    #[getter]
    fn pass_index(&self) -> usize {
        self.job.pass_index()
    }

    /// Whether the last pass is reduced (the model was returned).
    #[getter]
    fn done(&self) -> bool {
        self.report.is_some()
    }

    /// The training report (JSON) once done.
    #[getter]
    fn report(&self) -> Option<String> {
        self.report.clone()
    }

    /// Runs the next pass over `shards` in this process; returns the part's
    /// bytes.
    fn run_part<'py>(&mut self, py: Python<'py>, shards: Vec<usize>) -> PyResult<Bound<'py, PyBytes>> {
        if self.report.is_some() {
            return Err(value_error("this fit is done: every pass is reduced"));
        }
        let bytes = py.detach(|| part_of(&mut self.job, &shards)).map_err(anyhow_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Reduces the parts of the next pass (bytes from [`run_part`], in any
    /// order): checks that they belong to this fit and pass and cover every
    /// shard once, merges them in shard order and advances. Returns the
    /// model after the last pass, else `None`.
    fn reduce(&mut self, py: Python<'_>, parts: Vec<Vec<u8>>) -> PyResult<Option<PyModel>> {
        if self.report.is_some() {
            return Err(value_error("this fit is done: every pass is reduced"));
        }
        let job = &mut self.job;
        let done = py.detach(|| reduce_parts(job, parts)).map_err(anyhow_error)?;
        match done {
            None => Ok(None),
            Some((model, report)) => {
                self.report = Some(serde_json::to_string(&report).map_err(value_error)?);
                Ok(Some(PyModel { model }))
            }
        }
    }
}

/// The part of `job`'s next pass over `shards` (sorted, deduplicated).
fn part_of(job: &mut FitJob, shards: &[usize]) -> anyhow::Result<Vec<u8>> {
    let mut shards = shards.to_vec();
    shards.sort_unstable();
    shards.dedup();
    if let Some(&s) = shards.iter().find(|&&s| s >= job.n_shards()) {
        anyhow::bail!("shard {s} does not exist: the training data has {} shards", job.n_shards());
    }
    let after = AfterDoc { fingerprint: encode_job_progress(job).fingerprint, path: None };
    let t = Instant::now();
    let state = job.run_pass(&shards, &Silent)?;
    let doc = part_doc(job, after, None, &shards, state.rows(), t.elapsed().as_secs_f64());
    part_bytes(doc, state)
}

/// Runs the next pass of the job recorded in pass-result bytes `result`
/// over `shards`; returns the part's bytes (`kapprox-part`, the format of
/// `kapprox fit --part`). What a worker calls.
#[pyfunction]
pub(crate) fn run_part<'py>(py: Python<'py>, result: &[u8], shards: Vec<usize>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| {
            let mut job = resume(result)?;
            part_of(&mut job, &shards)
        })
        .map_err(anyhow_error)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Parsed parts, in the order given.
struct Parsed {
    /// `part 0 (shards 0)`, ...: what messages call them.
    sources: Vec<String>,
    docs: Vec<PartDoc>,
    /// Taken (once each) while merging.
    states: Vec<Option<PassState>>,
}

fn parse_all(parts: Vec<Vec<u8>>) -> anyhow::Result<Parsed> {
    let mut p = Parsed { sources: Vec::new(), docs: Vec::new(), states: Vec::new() };
    for (i, bytes) in parts.into_iter().enumerate() {
        let (doc, state) = parse_part(&bytes).map_err(|e| anyhow::anyhow!("part {i}: {e:#}"))?;
        p.sources.push(format!("part {i} ({})", doc.describe()));
        p.docs.push(doc);
        p.states.push(Some(state));
    }
    Ok(p)
}

fn reduce_parts(job: &mut FitJob, parts: Vec<Vec<u8>>) -> anyhow::Result<Option<(kapprox::Model, kapprox::FitReport)>> {
    if parts.is_empty() {
        anyhow::bail!("no parts to reduce");
    }
    let Parsed { sources, docs, mut states } = parse_all(parts)?;
    let run = RunDoc::of(job);
    let after = encode_job_progress(job).fingerprint;
    let pass = pass_doc(job);
    for (src, d) in sources.iter().zip(&docs) {
        check_part(src, d, "this fit", &run, &pass, &after)?;
    }
    let named: Vec<(String, PartDoc)> = sources.iter().cloned().zip(docs).collect();
    let order = check_coverage(&run, &named)?;
    let (result, _) = merge_and_advance(job, &sources, &order, |i| Ok(states[i].take().expect("each part once")))?;
    Ok(result)
}

/// Merges parts of one pass over disjoint shards (bytes, any order) into
/// one part over their union: their states merged left to right in shard
/// order, as a reduce merges them. Refuses parts of other runs, passes or
/// progress, and overlapping shards.
#[pyfunction]
pub(crate) fn merge_parts<'py>(py: Python<'py>, parts: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py.detach(|| merge_part_bytes(parts)).map_err(anyhow_error)?;
    Ok(PyBytes::new(py, &bytes))
}

fn merge_part_bytes(parts: Vec<Vec<u8>>) -> anyhow::Result<Vec<u8>> {
    if parts.is_empty() {
        anyhow::bail!("no parts to merge");
    }
    let Parsed { sources, docs, mut states } = parse_all(parts)?;
    let first = &docs[0];
    for (src, d) in sources.iter().zip(&docs).skip(1) {
        check_part(src, d, &sources[0], &first.run, &first.pass, &first.after.fingerprint)?;
    }
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| docs[i].shards.first().copied().unwrap_or(usize::MAX));
    let mut shards: Vec<usize> = Vec::new();
    for &i in &order {
        for &s in &docs[i].shards {
            if shards.contains(&s) {
                anyhow::bail!("shard {s} is in more than one part ({}); merge parts of disjoint shards", sources[i]);
            }
            shards.push(s);
        }
    }
    shards.sort_unstable();
    let mut merged: Option<PassState> = None;
    for &i in &order {
        let state = states[i].take().expect("each part once");
        match merged.as_mut() {
            None => merged = Some(state),
            Some(m) => m.merge(&state).map_err(|e| anyhow::anyhow!("merging {}: {e:#}", sources[i]))?,
        }
    }
    let merged = merged.expect("at least one part");
    let mut doc = docs[order[0]].clone();
    doc.row_ranges = row_ranges(&doc.run.base, &shards);
    doc.rows = docs.iter().map(|d| d.rows).sum();
    doc.seconds = docs.iter().map(|d| d.seconds).sum();
    doc.peak_rss_bytes = docs.iter().filter_map(|d| d.peak_rss_bytes).max();
    doc.part = None;
    doc.shards = shards;
    part_bytes(doc, merged)
}

/// A part's document (JSON): run, pass, shards, row ranges, rows, seconds.
#[pyfunction]
pub(crate) fn part_info(bytes: &[u8]) -> PyResult<String> {
    let (mut doc, _) = parse_part(bytes).map_err(anyhow_error)?;
    doc.state = serde_json::Value::Null;
    serde_json::to_string(&doc).map_err(value_error)
}
