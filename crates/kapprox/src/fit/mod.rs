//! `fit`: prepare, (sketch,) fit, select — the passes and what they need.
//!
//! # Passes
//!
//! 1. **prepare** (only when needed): column statistics when the footers
//!    written by `convert` hold none, and a reservoir sample of rows for
//!    `--sigma auto` (median rule) and for Nyström's landmarks.
//! 2. **sketch** (multi-pass TEFM only): `Fᵀ(FΩ)` for TEFM's test matrix
//!    `Ω`, then one `Fᵀ(FQ)` per power iteration, for every bandwidth
//!    candidate at once.
//! 3. **fit**: every candidate's map transforms every chunk; each row's
//!    statistics go to its split part (by a seeded hash of its global row
//!    id: hold-out or k folds). Then every (σ, α) pair is scored from the
//!    statistics ([`select`]) and the winner is refitted on all rows — no
//!    further pass.
//!
//! With statistics in the footers and explicit bandwidths, a data-
//! independent map, Nyström-free and one-pass TEFM fits read the data once.
//!
//! # Memory
//!
//! The fit pass holds, per candidate and split part, one ridge accumulator
//! of `(l' + 1 + k)² + 512·(l' + 1 + k)` doubles (`l'` = features
//! accumulated: `l`, or TEFM's base `d` in one-pass mode; `k` = targets or
//! classes), plus the pipeline's chunk buffers. [`estimate_memory`] states
//! it and `--max-memory` refuses configurations that exceed it. A job's
//! prepare and sketch passes keep the decoded rows for the passes after
//! them when they fit in [`crate::pipeline::CHUNK_STORE_BYTES`] (a quarter
//! of `--max-memory` if that is less); the fit pass replays them and keeps
//! nothing, and they are freed before selection.

pub mod acc;
pub mod class_moments;
pub mod config;
pub mod exact;
pub mod extend;
pub mod job;
pub mod memory;
pub mod nystrom_gram;
pub mod passes;
pub mod plan;
pub mod prepare;
pub mod report;
pub mod select;
pub mod tefm_gram;

pub use config::{FitConfig, Precision, Split};
pub use extend::GridExtension;
pub use job::{FitJob, PassState, Progress};
pub use memory::{check_memory, estimate_memory, human_bytes};
pub use plan::{JobBase, PassKind, ShardFingerprint};
pub use prepare::{Prepared, finish_prepare};
pub use report::{CandidateReport, CurvePoint, FitReport, Timings, default_alphas};

use crate::model::Model;
use crate::observer::Observer;
use anyhow::Result;
use kapprox_features::tefm::TefmKind;
use kapprox_sketch::SketchKind;

/// Fits `cfg` in this process; returns the model (not yet saved) and the
/// report.
///
/// The passes of a [`FitJob`] run one after the other over all shards; a
/// distributed fit (`crate::distributed`) runs the same passes on shard
/// subsets and merges their states in shard order instead. Exact kernel
/// ridge ([`crate::method::MethodSpec::Exact`]) holds all rows instead
/// ([`exact`]).
///
/// With `cfg.extend_grid`, a σ at the edge of its candidates runs one more
/// fit beyond it ([`extend`]).
///
/// # Errors
/// Unreadable or bad data (naming the file, row and column), a missing
/// label column, statistics beyond `cfg.max_memory`, or a failed solve.
pub fn fit(cfg: &FitConfig, observer: &dyn Observer) -> Result<(Model, FitReport)> {
    if cfg.method.is_exact() {
        return exact::fit_exact(cfg, observer);
    }
    if cfg.extend_grid {
        return extend::fit_extending_sigma(cfg, observer);
    }
    FitJob::new(cfg)?.run_to_end(observer)
}

pub(crate) fn sketch_kind(k: TefmKind) -> SketchKind {
    match k {
        TefmKind::Gaussian => SketchKind::Gaussian,
        TefmKind::Srht => SketchKind::Srht,
        TefmKind::CountSketch => SketchKind::CountSketch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_parts_have_the_right_sizes() {
        let n = 100_000u64;
        let mut counts = [0usize; 5];
        for id in 0..n {
            counts[Split::Folds(5).part_of(3, id)] += 1;
        }
        // Binomial(1e5, 0.2): sd ~ 126; allow 5 sd.
        assert!(counts.iter().all(|&c| (c as f64 - 20_000.0).abs() < 630.0), "{counts:?}");
        let val = (0..n).filter(|&id| Split::Holdout(0.2).part_of(3, id) == 1).count();
        assert!((val as f64 - 20_000.0).abs() < 630.0);
    }
}
