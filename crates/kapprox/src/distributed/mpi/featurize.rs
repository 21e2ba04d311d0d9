//! `mpirun -n P kapprox featurize ...`: each rank writes the feature
//! shards of its own input shards.

use super::{FAILED, OK, World};
use crate::distributed::codec::{Decoder, Encoder, decode_state, encode_state};
use crate::distributed::{format_shards, part_shards};
use crate::featurize::{
    FeatureSource, FeaturizeConfig, FeaturizeReport, file_options, from_model, learn_means, method_inputs, method_map,
    model_read, prepare_read, stage_features, stats_and_sample, write_features,
};
use crate::fit::PassState;
use crate::fit::passes::prepare_pass;
use crate::observer::Observer;
use crate::read::resolve_optional_label;
use crate::tensorfile::TensorFile;
use anyhow::{Result, anyhow, bail};
use kapprox_io::Dataset;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

/// `mpirun -n P kapprox featurize ...`: the column statistics and the
/// bandwidth sample (when needed) are computed by all ranks over their
/// shards and merged on rank 0 in rank order; then each rank writes the
/// feature shards of its own input shards. If any rank fails, every rank
/// removes the shards it wrote.
///
/// Returns, on rank 0, what all ranks wrote and the number of ranks
/// (`None` on the other ranks).
pub fn featurize(cfg: &FeaturizeConfig, observer: &dyn Observer) -> Result<Option<(FeaturizeReport, usize)>> {
    cfg.source.check()?;
    let w = World::init()?;
    let observer = w.observer(observer);
    let start = Instant::now();
    let read_cfg = &cfg.read;
    let setup = (|| -> Result<_> {
        let ds = Dataset::open(&cfg.data)?;
        let label = resolve_optional_label(&ds, &read_cfg.label)?.1;
        Ok((ds, label))
    })();
    let (ds, label) = match setup {
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
    // Rank 0 stages the directory before any pass (a refused output costs
    // nothing) and tells every rank where it is.
    let staged = if w.rank == 0 { Some(stage_features(cfg)) } else { None };
    let (status, body) = match &staged {
        Some(Ok(out)) => w.broadcast(OK, out.path().as_os_str().as_encoded_bytes().to_vec()),
        Some(Err(e)) => w.broadcast(FAILED, format!("{e:#}").into_bytes()),
        None => w.broadcast(0, Vec::new()),
    };
    if status != OK {
        bail!("{}", String::from_utf8_lossy(&body));
    }
    let out = PathBuf::from(OsStr::from_bytes(&body));
    let (inputs, scaler, map) = match &cfg.source {
        FeatureSource::Model(path) => {
            let m = from_model(path);
            w.agree(m.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")))?;
            m?
        }
        FeatureSource::Method { method, sigma, scale, seed } => {
            let mut inputs = method_inputs(cfg, &ds)?;
            let features = inputs.columns.numeric.clone();
            let (stats, sample) = stats_and_sample(&ds, &features, *sigma, |need_stats, rows| {
                // The prepare pass over every rank's shards, merged on rank 0.
                let read = prepare_read(cfg, &inputs)
                    .with_threads(rayon::current_num_threads())
                    .with_shards(shards.iter().copied());
                let local = prepare_pass(&ds, read, need_stats, rows, *seed, observer, None)
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
                Ok(st)
            })?;
            let sample = learn_means(cfg, &mut inputs, &stats, sample)?;
            let (scaler, map) = method_map(method, *sigma, *scale, *seed, &stats, sample, features.len())?;
            (inputs, scaler, map)
        }
    };
    let result = if shards.is_empty() {
        Ok((0, 0))
    } else {
        model_read(cfg, &ds, &inputs, label).and_then(|read| {
            let read = read.with_shards(shards.iter().copied());
            write_features(&ds, &out, read, &scaler, map.as_ref(), file_options(cfg, &ds)?, observer)
        })
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
        // Every rank is done writing: rank 0's staging area goes whole
        // when `staged` is dropped.
        bail!("featurize failed, no output was kept: {}", String::from_utf8_lossy(&body));
    }
    if let Some(staged) = staged {
        staged.expect("staged, or the job stopped above").commit()?;
    }
    if w.rank == 0 {
        let (mut rows, mut files) = (0u64, 0usize);
        for x in summary.expect("checked").iter().flatten() {
            let t = String::from_utf8_lossy(x);
            let mut it = t.split(' ');
            rows += it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            files += it.next().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
        }
        let report =
            FeaturizeReport { rows, files, n_features: map.n_output(), seconds: start.elapsed().as_secs_f64() };
        return Ok(Some((report, w.size)));
    }
    Ok(None)
}

/// A prepare state as bytes (the tensor-file encoding of part files).
fn encode_prepare(mut state: PassState) -> Result<Vec<u8>> {
    let mut enc = Encoder::default();
    let doc = encode_state(&mut state, &mut enc);
    TensorFile { doc, tensors: enc.tensors }.to_bytes_checked()
}

fn decode_prepare(bytes: &[u8]) -> Result<PassState> {
    let f = TensorFile::from_bytes_checked(bytes)?;
    decode_state(&f.doc, &mut Decoder::new(f.tensors))
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
