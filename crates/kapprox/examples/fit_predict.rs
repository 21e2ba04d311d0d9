//! Fit from a Parquet directory through the kapprox library, with σ and α
//! chosen on a validation split, then predict and evaluate.

use kapprox::io::{ConvertOptions, LabelSpec};
use kapprox::predict::{EvalMetrics, evaluate, predict_to_dir};
use kapprox::{FitConfig, Silent};

fn main() -> anyhow::Result<()> {
    // Any Parquet directories will do; here the CPU data shipped with kapprox.
    let dir = tempfile::tempdir()?;
    let (train, test, out) = (dir.path().join("train"), dir.path().join("test"), dir.path().join("predictions"));
    for (name, to) in [("train", &train), ("test", &test)] {
        let raw = format!("{}/../../data/cpu_rks_{name}.tsv.gz", env!("CARGO_MANIFEST_DIR"));
        kapprox::io::convert(raw.as_ref(), to, &ConvertOptions::new().with_label(LabelSpec::Last), &mut |_| {})?;
    }

    // Gaussian RFF, 1024 features; σ among auto*{0.5, 1, 2, 4} and α on the default grid.
    let cfg = FitConfig::new(&train, "rff".parse()?);
    let (model, report) = kapprox::fit(&cfg, &Silent)?;
    model.save(&dir.path().join("model.safetensors"))?;
    let written = predict_to_dir(&model, &test, &out, 8192, Default::default(), &Silent)?;
    let metrics = evaluate(&model, &test, 8192, Default::default(), &Silent)?;

    let EvalMetrics::Regression(m) = metrics else { anyhow::bail!("a regression model") };
    let (sigma, alpha, rows) = (report.sigma, report.alpha, written.rows);
    println!("sigma {sigma:.3}, alpha {alpha:.2e}: {rows} test predictions, RMSE {:.3}", m.rmse);
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
