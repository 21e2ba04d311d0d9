//! Part files and pass-result files.
//!
//! Both are checked tensor files ([`crate::tensorfile`]: safetensors with a
//! JSON document under the metadata key `"kapprox"` and a checksum of the
//! document and every tensor value under `"kapprox.checksum"`), written
//! atomically.
//!
//! A **part file** (`format: "kapprox-part"`, [`PartDoc`]) holds one pass's
//! state over some shards: every accumulator of the method (Grams as packed
//! lower triangles, sketches, samples, class sums) as tensors, described by
//! `state`; the run (`run`: the fit configuration and the dataset's columns,
//! stored statistics and shard names and row counts); the pass (`pass`:
//! index, count and name); the progress it started from (`after`: the
//! fingerprint of the pass result, and its path when it came from a file);
//! the part (`part: [i, N]` for `--part i/N`), its `shards` and global
//! `row_ranges`; and what it cost (`rows`, `seconds`, `peak_rss_bytes`).
//!
//! A **pass-result file** (`format: "kapprox-pass-result"`, [`ResultDoc`])
//! holds what the passes so far established (`progress`: scaler, bandwidths,
//! landmarks, TEFM bases, the fit pass's maps with their tensors), the run,
//! how many passes are done (`done`, `of`, `next`) and its `fingerprint`: a
//! hash of the run's key and the progress, which the parts of the next pass
//! record as `after.fingerprint`.

use super::codec::{Decoder, Encoder, decode_progress, decode_state, encode_progress, encode_state};
use super::{RunDoc, format_shards, row_ranges};
use crate::fit::{FitConfig, FitJob, PassState, Progress};
use crate::tensorfile::{Checksum, TensorFile};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `format` of part files.
pub const PART_FORMAT: &str = "kapprox-part";
/// `format` of pass-result files.
pub const RESULT_FORMAT: &str = "kapprox-pass-result";
/// Version of both formats.
pub const FILE_VERSION: u32 = 1;

/// Which pass a part belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassDoc {
    /// 0-based index in the plan.
    pub index: usize,
    /// Passes in the plan.
    pub of: usize,
    /// `prepare`, `sketch 1`, ..., `fit`.
    pub name: String,
}

impl std::fmt::Display for PassDoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pass {} of {} ({})", self.index + 1, self.of, self.name)
    }
}

/// The progress a pass started from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AfterDoc {
    /// Fingerprint of the progress (see [`fingerprint`]).
    pub fingerprint: String,
    /// The pass-result file it was read from, if any (absolute).
    pub path: Option<PathBuf>,
}

/// The JSON document of a part file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartDoc {
    /// Always [`PART_FORMAT`].
    pub format: String,
    /// [`FILE_VERSION`].
    pub version: u32,
    /// The run.
    pub run: RunDoc,
    /// The pass.
    pub pass: PassDoc,
    /// The progress the pass started from.
    pub after: AfterDoc,
    /// `[i, N]` for `--part i/N`.
    pub part: Option<[usize; 2]>,
    /// Shard indices, ascending.
    pub shards: Vec<usize>,
    /// Global row ranges `[start, end)` of the shards.
    pub row_ranges: Vec<[u64; 2]>,
    /// Rows the pass read.
    pub rows: u64,
    /// Seconds the pass took.
    pub seconds: f64,
    /// Peak resident memory of the process that wrote the part.
    pub peak_rss_bytes: Option<u64>,
    /// kapprox version that wrote the file.
    pub kapprox_version: String,
    /// The state: a JSON description referring to the file's tensors.
    pub state: serde_json::Value,
}

impl PartDoc {
    /// E.g. `part 3/10, shards 20-29` or `shards 0,4`.
    pub fn describe(&self) -> String {
        match self.part {
            Some([i, n]) => format!("part {i}/{n}, shards {}", format_shards(&self.shards)),
            None => format!("shards {}", format_shards(&self.shards)),
        }
    }
}

/// The JSON document of a pass-result file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultDoc {
    /// Always [`RESULT_FORMAT`].
    pub format: String,
    /// [`FILE_VERSION`].
    pub version: u32,
    /// The run.
    pub run: RunDoc,
    /// Passes done.
    pub done: usize,
    /// Passes in the plan.
    pub of: usize,
    /// The next pass's name.
    pub next: String,
    /// Fingerprint of the run and the progress.
    pub fingerprint: String,
    /// The part files reduced into this result (as given), if any.
    pub parts: Vec<String>,
    /// kapprox version that wrote the file.
    pub kapprox_version: String,
    /// The progress: a JSON description referring to the file's tensors.
    pub progress: serde_json::Value,
}

/// The progress of `job`, encoded, with its fingerprint.
pub struct EncodedProgress {
    /// JSON description.
    pub doc: serde_json::Value,
    /// Its tensors.
    pub tensors: Encoder,
    /// [`fingerprint`] of it.
    pub fingerprint: String,
}

/// Encodes `job`'s progress and fingerprints it with the run.
pub fn encode_job_progress(job: &FitJob) -> EncodedProgress {
    let mut enc = Encoder::default();
    let doc = encode_progress(job.progress(), &mut enc);
    let fp = fingerprint(&RunDoc::of(job), &doc, &enc);
    EncodedProgress { doc, tensors: enc, fingerprint: fp }
}

/// The fingerprint of a run's progress: a hash of the run's key (the
/// result-relevant configuration and the dataset), the progress document
/// and every tensor value.
pub fn fingerprint(run: &RunDoc, progress: &serde_json::Value, tensors: &Encoder) -> String {
    let mut h = Checksum::default();
    h.bytes(run.key().to_string().as_bytes());
    h.bytes(progress.to_string().as_bytes());
    for (name, a) in &tensors.tensors {
        h.tensor(name, a);
    }
    h.hex()
}

/// The doc of the part of `job`'s next pass over `shards`.
pub fn part_doc(
    job: &FitJob,
    after: AfterDoc,
    part: Option<(usize, usize)>,
    shards: &[usize],
    rows: u64,
    seconds: f64,
) -> PartDoc {
    PartDoc {
        format: PART_FORMAT.into(),
        version: FILE_VERSION,
        run: RunDoc::of(job),
        pass: PassDoc { index: job.pass_index(), of: job.plan().len(), name: job.next_pass().to_string() },
        after,
        part: part.map(|(i, n)| [i, n]),
        shards: shards.to_vec(),
        row_ranges: row_ranges(job.base(), shards),
        rows,
        seconds,
        peak_rss_bytes: crate::sysinfo::peak_rss_bytes(),
        kapprox_version: env!("CARGO_PKG_VERSION").into(),
        state: serde_json::Value::Null,
    }
}

/// A part's bytes: `doc` with `state` encoded into it.
pub fn part_bytes(mut doc: PartDoc, mut state: PassState) -> Result<Vec<u8>> {
    let mut enc = Encoder::default();
    doc.state = encode_state(&mut state, &mut enc);
    drop(state);
    let f = TensorFile { doc: serde_json::to_value(&doc)?, tensors: enc.tensors };
    f.to_bytes_checked()
}

/// Parses a part's bytes (checksum verified).
pub fn parse_part(bytes: &[u8]) -> Result<(PartDoc, PassState)> {
    let f = TensorFile::from_bytes_checked(bytes)?;
    let doc = part_doc_of(f.doc)?;
    let state = decode_state(&doc.state, &mut Decoder::new(f.tensors)).context("the part's state")?;
    Ok((doc, state))
}

fn part_doc_of(v: serde_json::Value) -> Result<PartDoc> {
    let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("").to_string();
    if format != PART_FORMAT {
        bail!("not a part file: format {format:?}, expected {PART_FORMAT:?}");
    }
    let doc: PartDoc = serde_json::from_value(v).context("not a part file of this kapprox version")?;
    if doc.version != FILE_VERSION {
        bail!("part file version {}, this kapprox reads {FILE_VERSION}", doc.version);
    }
    Ok(doc)
}

/// Writes a part file atomically.
pub fn write_part(path: &Path, doc: PartDoc, state: PassState) -> Result<()> {
    crate::tensorfile::write_atomic(path, &part_bytes(doc, state)?)
}

/// Reads only the document of a part file (cheap; checks the length).
pub fn read_part_doc(path: &Path) -> Result<PartDoc> {
    let v = crate::tensorfile::read_doc(path)?;
    part_doc_of(v).with_context(|| format!("{}", path.display()))
}

/// Reads a whole part file, verifying its checksum.
pub fn read_part(path: &Path) -> Result<(PartDoc, PassState)> {
    crate::tensorfile::read_doc(path)?;
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_part(&bytes).with_context(|| format!("{}", path.display()))
}

/// Writes `job`'s progress as a pass-result file; returns its fingerprint.
pub fn write_result(path: &Path, job: &FitJob, parts: Vec<String>) -> Result<String> {
    let bytes = result_bytes(job, parts)?;
    crate::tensorfile::write_atomic(path, &bytes.0)?;
    Ok(bytes.1)
}

/// A pass-result file's bytes and fingerprint.
pub fn result_bytes(job: &FitJob, parts: Vec<String>) -> Result<(Vec<u8>, String)> {
    let p = encode_job_progress(job);
    let doc = ResultDoc {
        format: RESULT_FORMAT.into(),
        version: FILE_VERSION,
        run: RunDoc::of(job),
        done: job.pass_index(),
        of: job.plan().len(),
        next: job.next_pass().to_string(),
        fingerprint: p.fingerprint.clone(),
        parts,
        kapprox_version: env!("CARGO_PKG_VERSION").into(),
        progress: p.doc,
    };
    let f = TensorFile { doc: serde_json::to_value(&doc)?, tensors: p.tensors.tensors };
    Ok((f.to_bytes_checked()?, p.fingerprint))
}

/// Parses a pass-result file's bytes (checksum verified).
pub fn parse_result(bytes: &[u8]) -> Result<(ResultDoc, Progress)> {
    let f = TensorFile::from_bytes_checked(bytes)?;
    let format = f.doc.get("format").and_then(|f| f.as_str()).unwrap_or("").to_string();
    if format != RESULT_FORMAT {
        bail!("not a pass-result file: format {format:?}, expected {RESULT_FORMAT:?}");
    }
    let doc: ResultDoc = serde_json::from_value(f.doc).context("not a pass-result file of this kapprox version")?;
    if doc.version != FILE_VERSION {
        bail!("pass-result file version {}, this kapprox reads {FILE_VERSION}", doc.version);
    }
    let progress = decode_progress(&doc.progress, &mut Decoder::new(f.tensors)).context("the pass result")?;
    if progress.done != doc.done {
        bail!("the pass result says {} passes are done, its progress {}", doc.done, progress.done);
    }
    Ok((doc, progress))
}

/// Reads a pass-result file, verifying its checksum.
pub fn read_result(path: &Path) -> Result<(ResultDoc, Progress)> {
    crate::tensorfile::read_doc(path)?;
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_result(&bytes).with_context(|| format!("{}", path.display()))
}

/// A job continued from a pass-result file: the run stored in it, with the
/// configuration's local parts (data path, chunk size, memory limit) taken
/// from `local` when given (after checking it is the same run).
pub fn resume_from_result(path: &Path, local: Option<&FitConfig>) -> Result<(FitJob, AfterDoc)> {
    let (doc, progress) = read_result(path)?;
    let mut cfg = doc.run.config.clone();
    let base = doc.run.base.clone();
    if let Some(local) = local {
        let here = RunDoc { config: local.clone(), base: base.clone() };
        if let Some(d) = here.difference(&doc.run) {
            bail!(
                "{}: this pass result is from another fit than the one on the command line: its {} is {}, the \
                 command line's is {}; run the next pass with the flags of the pass that made it",
                path.display(),
                d.what,
                d.theirs,
                d.ours
            );
        }
        cfg = local.clone();
    }
    let job = FitJob::resume(cfg, base, progress).with_context(|| format!("{}", path.display()))?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    Ok((job, AfterDoc { fingerprint: doc.fingerprint, path: Some(abs) }))
}
