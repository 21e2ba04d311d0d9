//! What the prepare pass establishes: the categorical vocabularies, the
//! imputation means, the scaler, the bandwidths and Nyström's landmarks.

use super::FitConfig;
use super::plan::JobBase;
use crate::inputs::Inputs;
use crate::sigma::{SIGMA_SAMPLE_ROWS, median_distance};
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::{CategoryCounts, ColumnStats, NanPolicy, Scaler, SelectedColumns, Vocabulary};
use ndarray::{Array2, Axis};

/// What the passes before the fit pass established.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// Columns of the input matrix: numeric, then indicators.
    pub features: Vec<String>,
    /// The data columns and their encoding.
    pub inputs: Inputs,
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

/// Vocabularies, means, scaler, bandwidths and landmarks from the prepare
/// pass's results: `stats` of the numeric columns, `counts` of the
/// categorical ones, and the sample (numeric values, then one
/// [`kapprox_io::value_code`] per categorical column).
pub fn finish_prepare(
    cfg: &FitConfig,
    base: &JobBase,
    stats: &ColumnStats,
    counts: &[CategoryCounts],
    sample: Option<kapprox_sketch::Reservoir>,
) -> Result<Prepared> {
    let inputs = learn_inputs(cfg, base, stats, counts)?;
    let mut all_stats = stats.clone();
    for v in &inputs.vocabularies {
        if v.rows() != all_stats.count() {
            bail!("column {:?}: {} values counted for {} rows", v.column, v.rows(), all_stats.count());
        }
        all_stats = all_stats.concat(&v.indicator_stats());
    }
    let scaler = Scaler::fit(cfg.scale, &all_stats);
    let features = inputs.x_columns();
    // Sampled rows in priority order: the first SIGMA_SAMPLE_ROWS of them
    // are exactly the σ sample a smaller reservoir would have kept.
    let (ids, rows) = match sample {
        Some(r) => {
            let seed = cfg.seed;
            let (ids, rows) = r.finish();
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&i| rng::hash64(seed, Domain::RESERVOIR, ids[i]));
            (order.iter().map(|&i| ids[i]).collect::<Vec<_>>(), rows.select(Axis(0), &order))
        }
        None => (Vec::new(), Array2::zeros((0, base.features.len() + base.categorical.len()))),
    };
    let mut rows = encode_sample(&inputs, rows);
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
    Ok(Prepared { features, inputs, label: base.label.clone(), scaler, median, sigmas, landmarks })
}

/// The vocabularies (from the merged counts) and, under `--nan impute`,
/// the numeric columns' means.
fn learn_inputs(cfg: &FitConfig, base: &JobBase, stats: &ColumnStats, counts: &[CategoryCounts]) -> Result<Inputs> {
    let max = cfg.read.select.max_categories;
    if max == 0 && !base.categorical.is_empty() {
        bail!("--max-categories: must be at least 1");
    }
    let vocabularies: Vec<Vocabulary> = counts.iter().map(|c| Vocabulary::from_counts(c, max)).collect();
    let impute = match cfg.read.nan {
        NanPolicy::Impute => {
            if let Some(j) = stats.present().iter().position(|&n| n == 0) {
                bail!("--nan impute: column {:?} has no value to take a mean of", stats.names()[j]);
            }
            Some(stats.mean().to_vec())
        }
        _ => None,
    };
    let mut columns = SelectedColumns::default();
    columns.numeric = base.features.clone();
    columns.categorical = base.categorical.clone();
    columns.label = Some(base.label.clone());
    Ok(Inputs { columns, vocabularies, impute })
}

/// Sampled rows as the input matrix: missing numbers imputed, category
/// codes one-hot encoded.
fn encode_sample(inputs: &Inputs, rows: Array2<f64>) -> Array2<f64> {
    let d = inputs.columns.numeric.len();
    let mut out = Array2::zeros((rows.nrows(), inputs.n_x()));
    for (r, row) in rows.rows().into_iter().enumerate() {
        for j in 0..d {
            let v = row[j];
            out[[r, j]] = match &inputs.impute {
                Some(means) if !v.is_finite() => means[j],
                _ => v,
            };
        }
        let mut at = d;
        for (c, vocab) in inputs.vocabularies.iter().enumerate() {
            out[[r, at + vocab.slot_of_code(row[d + c])]] = 1.0;
            at += vocab.width();
        }
    }
    out
}
