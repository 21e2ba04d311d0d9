//! `featurize`, `predict` and `eval`: data through a map or a model.

use super::{output, print_json};
use crate::args::{EvalArgs, FeaturizeArgs, PredictArgs};
use crate::bars::Bars;
use crate::validate::{compression, featurize_config, nan_policy};
use anyhow::Result;
use kapprox::Model;
use kapprox::featurize::{FeaturizeConfig, FeaturizeReport};
use kapprox::predict::{EvalMetrics, PredictOutput, evaluate, predict_to_dir_with};

/// `kapprox featurize` (under `mpirun`, each rank writes its own shards).
pub(crate) fn featurize(a: &FeaturizeArgs, bars: &Bars) -> Result<()> {
    if kapprox::distributed::launched_by_mpi() {
        return featurize_mpi(a, bars);
    }
    let cfg = FeaturizeConfig { out: output(&a.out), ..featurize_config(a)? };
    let r = kapprox::featurize::featurize(&cfg, bars)?;
    print_featurized(&r, &cfg, "");
    Ok(())
}

/// What featurize wrote (`by`: how many processes wrote it, if several).
fn print_featurized(r: &FeaturizeReport, cfg: &FeaturizeConfig, by: &str) {
    let (rows, l, files, out, seconds) = (r.rows, r.n_features, r.files, cfg.out.display(), r.seconds);
    eprintln!("wrote {rows} rows x {l} features into {files} file(s) under {out}{by} in {seconds:.2} s");
}

#[cfg(feature = "mpi")]
fn featurize_mpi(a: &FeaturizeArgs, bars: &Bars) -> Result<()> {
    let cfg = FeaturizeConfig { out: output(&a.out), ..featurize_config(a)? };
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
    let model = Model::load(&a.model)?;
    let out = output(&a.out);
    let files = PredictOutput { keep: a.output.keep.clone(), compression: compression(&a.output.compression)? };
    let r = predict_to_dir_with(&model, &a.data, &out, a.chunk_rows, a.nan.map(nan_policy), &files, bars)?;
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
    let model = Model::load(&a.model)?;
    let m = evaluate(&model, &a.data, a.chunk_rows, a.nan.map(nan_policy), bars)?;
    if a.json {
        print_json(&m)?;
    } else {
        match m {
            EvalMetrics::Regression(m) => println!(
                "rows {}  RMSE {:.4}  relative RMSE {:.4}  MAE {:.4}  R² {:.4}",
                m.n_samples, m.rmse, m.relative_rmse, m.mae, m.r2
            ),
            EvalMetrics::Classification(m) => {
                println!("rows {}  accuracy {:.4}%  macro-F1 {:.4}", m.n_samples, 100.0 * m.accuracy, m.macro_f1)
            }
        }
    }
    Ok(())
}
