//! What the prepare pass establishes: the scaler, the bandwidths and
//! Nyström's landmarks.

use super::FitConfig;
use crate::sigma::{SIGMA_SAMPLE_ROWS, median_distance};
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::{ColumnStats, Scaler};
use ndarray::{Array2, Axis};

/// What the passes before the fit pass established.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// Feature columns.
    pub features: Vec<String>,
    /// Label column.
    pub label: String,
    /// Input scaling.
    pub scaler: Scaler,
    /// Median distance (σ rule), if computed.
    pub median: Option<f64>,
    /// Resolved bandwidths.
    pub sigmas: Vec<f64>,
    /// Scaled landmark rows (Nyström).
    pub landmarks: Option<Array2<f64>>,
}

/// Scaler, bandwidths and landmarks from the prepare pass's results.
pub fn finish_prepare(
    cfg: &FitConfig,
    features: Vec<String>,
    label: String,
    stats: &ColumnStats,
    sample: Option<kapprox_sketch::Reservoir>,
) -> Result<Prepared> {
    let scaler = Scaler::fit(cfg.scale, stats);
    // Sampled rows in priority order: the first SIGMA_SAMPLE_ROWS of them
    // are exactly the σ sample a smaller reservoir would have kept.
    let (ids, mut rows) = match sample {
        Some(r) => {
            let seed = cfg.seed;
            let (ids, rows) = r.finish();
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&i| rng::hash64(seed, Domain::RESERVOIR, ids[i]));
            (order.iter().map(|&i| ids[i]).collect::<Vec<_>>(), rows.select(Axis(0), &order))
        }
        None => (Vec::new(), Array2::zeros((0, features.len()))),
    };
    scaler.apply_in_place(rows.view_mut());
    let median = cfg
        .needs_median()
        .then(|| median_distance(&rows.slice(ndarray::s![0..SIGMA_SAMPLE_ROWS.min(rows.nrows()), ..])));
    let mut sigmas: Vec<f64> = cfg.sigmas.iter().map(|s| s.resolve(median)).collect();
    sigmas.dedup();
    let m = cfg.method.sample_rows();
    let landmarks = (m > 0).then(|| {
        // Landmarks in row-id order (deterministic whatever the layout).
        let mut take: Vec<usize> = (0..m.min(ids.len())).collect();
        take.sort_by_key(|&i| ids[i]);
        rows.select(Axis(0), &take)
    });
    if let Some(l) = &landmarks
        && l.nrows() < m
    {
        bail!("Nyström needs {m} landmarks but the training data has only {} rows", l.nrows());
    }
    Ok(Prepared { features, label, scaler, median, sigmas, landmarks })
}
