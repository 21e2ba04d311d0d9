//! The demo: convert -> fit -> evaluate on the CPU data shipped in `data/`.
//!
//! Gaussian random Fourier features and ridge, σ among the default
//! candidates and α on the default grid, chosen on a 20 % validation
//! split; the test rows are the data set's own test file.

use crate::fit::{FitConfig, FitReport, fit};
use crate::method::{KernelFamily, MethodSpec};
use crate::model::Model;
use crate::observer::Observer;
use crate::predict::{EvalMetrics, evaluate};
use anyhow::{Result, bail};
use kapprox_features::{MapKind, MapSpec};
use kapprox_io::{ConvertOptions, LabelSpec};
use kapprox_solve::RegressionMetrics;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the demo runs.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Directory holding `cpu_rks_train.tsv.gz` and `cpu_rks_test.tsv.gz`
    /// (found relative to the source tree kapprox was built from when it is
    /// not there).
    pub data: PathBuf,
    /// Number of features `l`.
    pub features: usize,
    /// Seed.
    pub seed: u64,
    /// Where the converted data and the model go (created if missing);
    /// `None`: a temporary directory, removed at the end.
    pub work_dir: Option<PathBuf>,
}

/// What the demo measured.
#[derive(Clone, Debug)]
pub struct DemoReport {
    /// The fitted map.
    pub map: MapSpec,
    /// Test metrics.
    pub test: RegressionMetrics,
    /// The fit's report.
    pub fit: FitReport,
    /// Seconds of `convert_train`, `convert_test`, `fit`, `eval` and `total`.
    pub seconds: BTreeMap<String, f64>,
}

/// Finds the shipped data directory: as given, else relative to the
/// workspace this library was built from.
fn locate_data(dir: &Path) -> Result<PathBuf> {
    let want = "cpu_rks_train.tsv.gz";
    if dir.join(want).exists() {
        return Ok(dir.to_path_buf());
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    if built.join(want).exists() {
        return Ok(built);
    }
    bail!("{}: {want} not found (run from the repository root or pass --data DIR)", dir.display())
}

/// Runs the demo.
pub fn run(cfg: &DemoConfig, observer: &dyn Observer) -> Result<DemoReport> {
    let t0 = Instant::now();
    let data = locate_data(&cfg.data)?;
    let tmp;
    let work = match &cfg.work_dir {
        Some(w) => {
            std::fs::create_dir_all(w)?;
            w.clone()
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let mut seconds = BTreeMap::new();
    let mut convert_one = |name: &str| -> Result<PathBuf> {
        let out = work.join(name);
        let opts = ConvertOptions::new().with_label(LabelSpec::Last).with_overwrite(true);
        let t = Instant::now();
        kapprox_io::convert(&data.join(format!("cpu_rks_{name}.tsv.gz")), &out, &opts, &mut |_| {})?;
        seconds.insert(format!("convert_{name}"), t.elapsed().as_secs_f64());
        Ok(out)
    };
    let train = convert_one("train")?;
    let test = convert_one("test")?;
    let method = MethodSpec::independent(MapKind::Rff, KernelFamily::Gaussian, cfg.features);
    let fit_cfg = FitConfig { seed: cfg.seed, ..FitConfig::new(train, method) };
    let t = Instant::now();
    let (model, report) = fit(&fit_cfg, observer)?;
    seconds.insert("fit".into(), t.elapsed().as_secs_f64());
    let model_path = work.join("model.safetensors");
    model.save(&model_path)?;
    let model = Model::load(&model_path)?;
    let t = Instant::now();
    let metrics = evaluate(&model, &test, kapprox_io::DEFAULT_CHUNK_ROWS, Default::default(), observer)?;
    seconds.insert("eval".into(), t.elapsed().as_secs_f64());
    seconds.insert("total".into(), t0.elapsed().as_secs_f64());
    let EvalMetrics::Regression(test) = metrics else { unreachable!("the demo is a regression") };
    Ok(DemoReport { map: model.doc.map, test, fit: report, seconds })
}
