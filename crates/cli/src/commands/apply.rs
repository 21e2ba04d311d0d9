//! `featurize`, `predict` and `eval`: data through a map or a model.

use super::output::{self, load_model};
use super::print_json;
use crate::args::{EvalArgs, FeaturizeArgs, PredictArgs};
use crate::bars::Bars;
use crate::validate::{compression, featurize_config, nan_policy};
use anyhow::Result;
use kapprox::featurize::{FeaturizeConfig, FeaturizeReport};
use kapprox::predict::{EvalMetrics, PredictOutput, evaluate, predict_to_dir_with};

/// `kapprox featurize` (under `mpirun`, each rank writes its own shards).
/// The engine stages the output directory and the map file: see
/// [`kapprox::featurize::featurize`].
pub(crate) fn featurize(a: &FeaturizeArgs, bars: &Bars) -> Result<()> {
    if kapprox::distributed::launched_by_mpi() {
        if a.map_output.save_map.is_some() {
            anyhow::bail!("--save-map: not under MPI; save the map in one process, then run featurize --model MAP");
        }
        return featurize_mpi(a, bars);
    }
    let cfg = featurize_config(a)?;
    if let Some(model) = &a.model {
        // Verified (and noted when unchecked) before the pass loads it again.
        load_model(model)?;
    }
    // The engine stages the features and the map file apart from the inputs.
    let r = kapprox::featurize::featurize(&cfg, bars)?;
    if a.map_output.json {
        let rss = kapprox::sysinfo::peak_rss_bytes();
        print_json(&serde_json::json!({"out": cfg.out, "report": r, "map": cfg.save_map, "peak_rss_bytes": rss}))?;
    } else {
        print_featurized(&r, &cfg, "");
        if let Some(map) = &cfg.save_map {
            eprintln!("map written to {} (apply it with featurize --model {})", map.display(), map.display());
        }
    }
    Ok(())
}

/// What featurize wrote (`by`: how many processes wrote it, if several).
fn print_featurized(r: &FeaturizeReport, cfg: &FeaturizeConfig, by: &str) {
    let (rows, l, files, out, seconds) = (r.rows, r.n_features, r.files, cfg.out.display(), r.seconds);
    eprintln!("wrote {rows} rows x {l} features into {files} file(s) under {out}{by} in {seconds:.2} s");
}

#[cfg(feature = "mpi")]
fn featurize_mpi(a: &FeaturizeArgs, bars: &Bars) -> Result<()> {
    // Rank 0 stages the directory, every rank writes its shards into it.
    let cfg = featurize_config(a)?;
    if let Some((r, ranks)) = kapprox::distributed::mpi::featurize(&cfg, bars)? {
        print_featurized(&r, &cfg, &format!(" with {ranks} MPI ranks"));
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn featurize_mpi(_: &FeaturizeArgs, _: &Bars) -> Result<()> {
    anyhow::bail!(
        "started by an MPI launcher, but this kapprox was built without MPI support: rebuild with `cargo build \
         --release --features mpi`"
    )
}

/// `kapprox predict`.
pub(crate) fn predict(a: &PredictArgs, bars: &Bars) -> Result<()> {
    let model = load_model(&a.model)?;
    // The engine stages the output apart from the data and the model.
    let files = PredictOutput {
        keep: a.written.keep.clone(),
        compression: a.written.compression.as_deref().map(compression).transpose()?.unwrap_or_default(),
        overwrite: a.output.overwrite,
        apart: vec![a.model.clone()],
    };
    let r = predict_to_dir_with(&model, &a.data, &a.out, a.chunk_rows, a.nan.map(nan_policy), &files, bars)?;
    let out = &a.out;
    eprintln!("wrote {} predictions into {} file(s) under {} in {:.2} s", r.rows, r.files, out.display(), r.seconds);
    print_missing(r.skipped, r.imputed, &r.other);
    Ok(())
}

/// What happened to missing values and categories outside the vocabulary.
pub(crate) fn print_missing(skipped: u64, imputed: u64, other: &[(String, u64)]) {
    if skipped > 0 {
        eprintln!("skipped {skipped} row(s) with missing values");
    }
    if imputed > 0 {
        eprintln!("imputed {imputed} missing value(s)");
    }
    for (column, n) in other {
        if *n > 0 {
            eprintln!("{n} value(s) of {column:?} outside the model's vocabulary: encoded as \"other\"");
        }
    }
}

/// `kapprox eval`.
pub(crate) fn eval(a: &EvalArgs, bars: &Bars) -> Result<()> {
    let model = load_model(&a.model)?;
    let m = evaluate(&model, &a.data, a.chunk_rows, a.nan.map(nan_policy), bars)?;
    if a.json {
        print_json(&m)?;
    } else {
        match m {
            EvalMetrics::Regression(m) => output::line(&format!(
                "rows {}  RMSE {:.4}  relative RMSE {:.4}  MAE {:.4}  R² {:.4}",
                m.n_samples, m.rmse, m.relative_rmse, m.mae, m.r2
            ))?,
            EvalMetrics::Classification(m) => output::line(&format!(
                "rows {}  accuracy {:.4}%  macro-F1 {:.4}",
                m.n_samples,
                100.0 * m.accuracy,
                m.macro_f1
            ))?,
        }
    }
    Ok(())
}
