//! MPI (cargo feature `mpi`): `mpirun -n P kapprox fit ...` and
//! `mpirun -n P kapprox featurize ...`.
//!
//! Rank `r` of `P` takes part `r + 1` of `P` (contiguous shards, so rank
//! order is shard order). For each pass of `fit`:
//!
//! 1. every rank runs the pass over its shards; ranks other than 0 encode
//!    their state exactly as a part file and send it to rank 0;
//! 2. rank 0 receives the states in rank order, checks them (same run,
//!    pass and progress), merges them left to right into its own and
//!    advances the job;
//! 3. rank 0 broadcasts the pass result (the bytes of a pass-result file),
//!    or "done" after writing the model, or the error that stopped it.
//!
//! States go point to point rather than through `MPI_Reduce`: the merge
//! order, and so the bitwise result, is then the rank order whatever the
//! MPI library's reduction algorithm, and equals the result of `fit --part
//! i/P` files reduced by `kapprox reduce`, or of `fit --workers P`. Messages
//! of any size go in pieces of at most 1 GiB.
//!
//! A rank that fails sends its error instead of a state; rank 0 still
//! receives from every rank (so none is left blocked), then broadcasts the
//! error and every rank exits with status 2. A rank that dies makes
//! `mpirun` stop the job. No model is written in either case.

use super::files::{
    AfterDoc, PassDoc, encode_job_progress, parse_part, parse_result, part_bytes, part_doc, result_bytes,
};
use super::reduce::{PartSummary, ReduceSeconds, check_part};
use super::workers::{DistributedReport, PassTiming};
use super::{RunDoc, format_shards, part_shards};
use crate::fit::FitConfig;
use crate::fit::job::{FitJob, PassState};
use anyhow::{Context, Result, anyhow, bail};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::path::Path;
use std::time::Instant;

/// Largest piece of one message.
const PIECE: usize = 1 << 30;

const OK: u64 = 0;
const FAILED: u64 = 1;
const CONTINUE: u64 = 2;
const DONE: u64 = 3;

/// Rank and size of `MPI_COMM_WORLD`, initialising MPI.
pub struct World {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
}

impl World {
    /// Initialises MPI.
    pub fn init() -> Result<World> {
        let universe = mpi::initialize().context("cannot initialise MPI (already initialised?)")?;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        if rank != 0 {
            crate::progress::set_quiet(true);
        }
        Ok(World { _universe: universe, world, rank, size })
    }

    /// Sends `status` and `bytes` to rank 0.
    fn send_to_root(&self, status: u64, bytes: &[u8]) {
        let root = self.world.process_at_rank(0);
        root.send(&[status, bytes.len() as u64][..]);
        for piece in bytes.chunks(PIECE) {
            root.send(piece);
        }
    }

    /// Receives the status and length of rank `r`'s message.
    fn receive_header(&self, r: usize) -> (u64, usize) {
        let mut h = [0u64; 2];
        self.world.process_at_rank(r as i32).receive_into(&mut h[..]);
        (h[0], h[1] as usize)
    }

    /// Receives the `len` bytes of rank `r`'s message.
    fn receive_body(&self, r: usize, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let p = self.world.process_at_rank(r as i32);
        for piece in buf.chunks_mut(PIECE) {
            p.receive_into(piece);
        }
        buf
    }

    /// Broadcasts `status` and `bytes` from rank 0; returns them on every rank.
    fn broadcast(&self, status: u64, bytes: Vec<u8>) -> (u64, Vec<u8>) {
        let root = self.world.process_at_rank(0);
        let mut h = [status, bytes.len() as u64];
        root.broadcast_into(&mut h[..]);
        let mut buf = if self.rank == 0 { bytes } else { vec![0u8; h[1] as usize] };
        for piece in buf.chunks_mut(PIECE) {
            root.broadcast_into(piece);
        }
        (h[0], buf)
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        self.world.barrier();
    }
}

/// The part of `rank` of the next pass of `job`.
fn run_rank_part(
    job: &mut FitJob,
    after: &Option<String>,
    rank: usize,
    size: usize,
) -> Result<(super::files::PartDoc, PassState)> {
    let fingerprint = match after {
        Some(f) => f.clone(),
        None => encode_job_progress(job).fingerprint,
    };
    let shards: Vec<usize> = part_shards(rank, size, job.n_shards()).collect();
    let t = Instant::now();
    let state = job.run_pass(&shards)?;
    let seconds = t.elapsed().as_secs_f64();
    let doc =
        part_doc(job, AfterDoc { fingerprint, path: None }, Some((rank + 1, size)), &shards, state.rows(), seconds);
    Ok((doc, state))
}

/// `mpirun -n P kapprox fit ...`: rank 0 writes the model to `out`.
pub fn fit(cfg: &FitConfig, out: &Path, json: bool) -> Result<()> {
    let w = World::init()?;
    let t0 = Instant::now();
    let mut job: Result<FitJob, String> = FitJob::new(cfg).map_err(|e| format!("{e:#}"));
    let mut after: Option<String> = None;
    let mut passes = Vec::new();
    let mut broadcast_seconds = 0.0;
    loop {
        let t_pass = Instant::now();
        let local = match &mut job {
            Ok(job) => run_rank_part(job, &after, w.rank, w.size).map_err(|e| format!("{e:#}")),
            Err(e) => Err(e.clone()),
        };
        if w.rank != 0 {
            match local.and_then(|(doc, state)| part_bytes(doc, state).map_err(|e| format!("{e:#}"))) {
                Ok(bytes) => w.send_to_root(OK, &bytes),
                Err(msg) => w.send_to_root(FAILED, msg.as_bytes()),
            }
            let (status, body) = w.broadcast(0, Vec::new());
            match status {
                DONE => return Ok(()),
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
                let dist = DistributedReport::new("mpi", w.size, passes, broadcast_seconds, total);
                if json {
                    let rss = crate::sysinfo::peak_rss_bytes();
                    let v =
                        serde_json::json!({"model": out, "report": report, "distributed": dist, "peak_rss_bytes": rss});
                    println!("{}", serde_json::to_string(&v)?);
                } else {
                    eprintln!(
                        "fitted {} ({} features) on {} rows with {} MPI ranks in {} pass(es), {total:.2} s (reduce \
                         {:.2} s, {:.1}%): sigma = {:.4}, alpha = {:.3e}",
                        report.method,
                        report.n_features,
                        report.rows,
                        w.size,
                        report.passes,
                        dist.reduce_seconds,
                        100.0 * dist.reduce_share,
                        report.sigma,
                        report.alpha
                    );
                    eprintln!("model written to {}", out.display());
                }
                return Ok(());
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

impl World {
    /// Every rank's `local` outcome, on rank 0 in rank order (empty on the
    /// other ranks).
    fn gather(&self, local: Result<Vec<u8>, String>) -> Vec<Result<Vec<u8>, String>> {
        if self.rank != 0 {
            match &local {
                Ok(b) => self.send_to_root(OK, b),
                Err(m) => self.send_to_root(FAILED, m.as_bytes()),
            }
            return Vec::new();
        }
        let mut all = vec![local];
        for r in 1..self.size {
            let (status, len) = self.receive_header(r);
            let body = self.receive_body(r, len);
            all.push(if status == OK { Ok(body) } else { Err(String::from_utf8_lossy(&body).into_owned()) });
        }
        all
    }

    /// A collective check: every rank learns whether all succeeded; the
    /// error names the failed ranks.
    fn agree(&self, local: Result<(), String>) -> Result<()> {
        let all = self.gather(local.map(|()| Vec::new()));
        let failed: Vec<String> =
            all.iter().enumerate().filter_map(|(r, x)| x.as_ref().err().map(|m| format!("rank {r}: {m}"))).collect();
        let (status, body) = if self.rank == 0 {
            if failed.is_empty() {
                self.broadcast(OK, Vec::new())
            } else {
                self.broadcast(FAILED, failed.join("; ").into_bytes())
            }
        } else {
            self.broadcast(0, Vec::new())
        };
        if status == OK { Ok(()) } else { Err(anyhow!("{}", String::from_utf8_lossy(&body))) }
    }
}

/// `mpirun -n P kapprox featurize ...`: the column statistics and the
/// bandwidth sample (when needed) are computed by all ranks over their
/// shards and merged on rank 0 in rank order; then each rank writes the
/// feature shards of its own input shards. If any rank fails, every rank
/// removes the shards it wrote.
pub fn featurize(a: &crate::cli::FeaturizeArgs) -> Result<()> {
    use crate::commands::{featurize_map, featurize_method, resolve_optional_label, write_features};
    use crate::config::{ReadConfig, SigmaSpec};
    use crate::fit::passes::{SIGMA_SAMPLE_ROWS, prepare_pass};
    use kapprox_io::{Dataset, ReadOptions};

    let w = World::init()?;
    let start = Instant::now();
    let setup = (|| -> Result<_> {
        let ds = Dataset::open(&a.data)?;
        let read_cfg = ReadConfig::from_args(&a.read)?;
        let label = resolve_optional_label(&ds, &read_cfg.label)?.1;
        Ok((ds, read_cfg, label))
    })();
    let (ds, read_cfg, label) = match setup {
        Ok(s) => {
            w.agree(Ok(()))?;
            s
        }
        Err(e) => {
            let msg = format!("{e:#}");
            w.agree(Err(msg.clone()))?;
            bail!("{msg}");
        }
    };
    let shards: Vec<usize> = part_shards(w.rank, w.size, ds.shards().len()).collect();
    let (features, scaler, map) = match &a.model {
        Some(path) => {
            let m = crate::model::Model::load(path);
            w.agree(m.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")))?;
            let m = m?;
            (m.doc.feature_columns.clone(), m.doc.scaler.clone(), m.map)
        }
        None => {
            let (method, sigma) = featurize_method(a)?;
            let (features, label) = resolve_optional_label(&ds, &read_cfg.label)?;
            let needs_sample = matches!(sigma, SigmaSpec::Auto(_));
            let stored = ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok());
            let (stats, sample) = match stored {
                Some(stats) if !needs_sample => (stats, None),
                stored => {
                    // The prepare pass over every rank's shards, merged on rank 0.
                    let rows = if needs_sample { SIGMA_SAMPLE_ROWS } else { 0 };
                    let read = ReadOptions::new(features.clone())
                        .with_label(label)
                        .with_chunk_rows(read_cfg.chunk_rows)
                        .with_nan_policy(read_cfg.nan)
                        .with_threads(rayon::current_num_threads())
                        .with_shards(shards.iter().copied());
                    let local = prepare_pass(&ds, read, stored.is_none(), rows, a.map.seed)
                        .and_then(|(st, _)| encode_prepare(PassState::Prepare(st)))
                        .map_err(|e| format!("{e:#}"));
                    let all = w.gather(local);
                    let merged = if w.rank == 0 { merge_prepare(all) } else { Ok(Vec::new()) };
                    let (status, body) = match (w.rank, merged) {
                        (0, Ok(bytes)) => w.broadcast(OK, bytes),
                        (0, Err(e)) => w.broadcast(FAILED, e.into_bytes()),
                        _ => w.broadcast(0, Vec::new()),
                    };
                    if status != OK {
                        bail!("the statistics pass failed: {}", String::from_utf8_lossy(&body));
                    }
                    let PassState::Prepare(st) = decode_prepare(&body)? else { unreachable!("a prepare state") };
                    (stored.or(st.stats).expect("statistics stored or computed"), st.sample.map(|r| r.finish().1))
                }
            };
            let (scaler, map) = featurize_map(a, &method, sigma, &stats, sample, features.len())?;
            (features, scaler, map)
        }
    };
    // Rank 0 makes the directory; then every rank writes its shards.
    let existed = a.out.exists();
    let made =
        if w.rank == 0 { crate::outputs::prepare_output_dir(&a.out).map_err(|e| format!("{e:#}")) } else { Ok(()) };
    w.agree(made)?;
    let read = ReadOptions::new(features)
        .with_label(label.clone())
        .with_chunk_rows(read_cfg.chunk_rows)
        .with_nan_policy(read_cfg.nan)
        .with_shards(shards.iter().copied());
    let result = if shards.is_empty() {
        Ok((0, 0))
    } else {
        write_features(&ds, &a.out, read, &scaler, map.as_ref(), label, a.f32)
    };
    let local =
        result.as_ref().map(|(rows, files)| format!("{rows} {files}").into_bytes()).map_err(|e| format!("{e:#}"));
    let all = w.gather(local);
    let summary = if w.rank == 0 {
        let failed: Vec<String> = all
            .iter()
            .enumerate()
            .filter_map(|(r, x)| {
                x.as_ref().err().map(|m| {
                    format!(
                        "rank {r} (shards {}): {m}",
                        format_shards(&part_shards(r, w.size, ds.shards().len()).collect::<Vec<_>>())
                    )
                })
            })
            .collect();
        if failed.is_empty() { Ok(all) } else { Err(failed.join("; ")) }
    } else {
        Ok(Vec::new())
    };
    let (status, body) = match (w.rank, &summary) {
        (0, Ok(_)) => w.broadcast(OK, Vec::new()),
        (0, Err(e)) => w.broadcast(FAILED, e.clone().into_bytes()),
        _ => w.broadcast(0, Vec::new()),
    };
    if status != OK {
        // Nothing partial stays: every rank removes the shards it wrote.
        for &s in &shards {
            let _ = std::fs::remove_file(crate::outputs::output_path(&ds, s, &a.out));
        }
        w.barrier();
        if w.rank == 0 && !existed {
            let _ = std::fs::remove_dir(&a.out);
        }
        bail!("featurize failed, no output was kept: {}", String::from_utf8_lossy(&body));
    }
    if w.rank == 0 {
        let (mut rows, mut files) = (0u64, 0usize);
        for x in summary.expect("checked").iter().flatten() {
            let t = String::from_utf8_lossy(x);
            let mut it = t.split(' ');
            rows += it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            files += it.next().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
        }
        eprintln!(
            "wrote {rows} rows x {} features into {files} file(s) under {} with {} MPI ranks in {:.2} s",
            map.n_output(),
            a.out.display(),
            w.size,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// A prepare state as bytes (the tensor-file encoding of part files).
fn encode_prepare(mut state: PassState) -> Result<Vec<u8>> {
    let mut enc = super::codec::Encoder::default();
    let doc = super::codec::encode_state(&mut state, &mut enc);
    crate::tensorfile::TensorFile { doc, tensors: enc.tensors }.to_bytes_checked()
}

fn decode_prepare(bytes: &[u8]) -> Result<PassState> {
    let f = crate::tensorfile::TensorFile::from_bytes_checked(bytes)?;
    super::codec::decode_state(&f.doc, &mut super::codec::Decoder::new(f.tensors))
}

/// Merges the gathered prepare states in rank order.
fn merge_prepare(all: Vec<Result<Vec<u8>, String>>) -> Result<Vec<u8>, String> {
    let mut merged: Option<PassState> = None;
    let mut failed = Vec::new();
    for (r, x) in all.into_iter().enumerate() {
        match x.map_err(|e| anyhow!(e)).and_then(|b| decode_prepare(&b)) {
            Ok(s) => match merged.as_mut() {
                None => merged = Some(s),
                Some(m) => m.merge(&s).map_err(|e| format!("rank {r}: {e:#}"))?,
            },
            Err(e) => failed.push(format!("rank {r}: {e:#}")),
        }
    }
    if !failed.is_empty() {
        return Err(failed.join("; "));
    }
    encode_prepare(merged.expect("at least one rank")).map_err(|e| format!("{e:#}"))
}
