//! What the experiments share: the methods by name, one fit and test,
//! the bandwidth protocol.

use crate::data::DataSet;
use anyhow::{Context, Result, bail};
use kapprox::features::eof::{EofBasis, EofKernel, EofSize, EofSubset};
use kapprox::features::tefm::{Strategy, TefmKind};
use kapprox::features::{Form, MapKind};
use kapprox::io::{LabelSpec, ScalerKind};
use kapprox::method::TefmBase;
use kapprox::predict::{EvalMetrics, evaluate};
use kapprox::sigma::parse_sigmas;
use kapprox::{FitConfig, FitReport, KernelFamily, MethodSpec, Model, Observer, ReadConfig, SigmaSpec, Split};
use std::path::Path;
use std::time::Instant;

/// What a sweep experiment runs (accuracy-vs-time, nystrom-vs-rff,
/// eof-sparsity): every method at every feature count for every seed, on
/// every dataset.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Datasets.
    pub sets: Vec<DataSet>,
    /// Method names (checked against the experiment's list).
    pub methods: Vec<String>,
    /// Feature counts (landmarks for Nyström, M for EOF).
    pub features: Vec<usize>,
    /// Seeds averaged over.
    pub seeds: Vec<u64>,
    /// One σ for every method (default: chosen on validation).
    pub sigma: Option<SigmaSpec>,
}

impl Sweep {
    /// The experiment's `methods` and `features` and seeds 0, 1, 2,
    /// overridden by the common flags.
    pub fn new(sets: Vec<DataSet>, c: Common, methods: &[&str], features: &[usize]) -> Result<Sweep> {
        Ok(Sweep {
            sets,
            methods: c.methods_or(methods)?,
            features: c.features.clone().unwrap_or(features.to_vec()),
            seeds: c.seeds.clone().unwrap_or(vec![0, 1, 2]),
            sigma: c.sigma,
        })
    }
}

/// Options every experiment shares; `None` = the experiment's default.
#[derive(Clone, Debug, Default)]
pub struct Common {
    /// Seeds to average over.
    pub seeds: Option<Vec<u64>>,
    /// Feature counts.
    pub features: Option<Vec<usize>>,
    /// Methods (experiment-specific names).
    pub methods: Option<Vec<String>>,
    /// One bandwidth for every method.
    pub sigma: Option<SigmaSpec>,
}

impl Common {
    /// The methods, checked against the experiment's list.
    pub fn methods_or(&self, all: &[&str]) -> Result<Vec<String>> {
        match &self.methods {
            None => Ok(all.iter().map(|s| s.to_string()).collect()),
            Some(m) => {
                for name in m {
                    if !all.contains(&name.as_str()) {
                        bail!("--methods: unknown method {name:?} (expected one of {})", all.join(", "));
                    }
                }
                Ok(m.clone())
            }
        }
    }
}

pub(crate) fn parse_one_sigma(text: &str) -> Result<SigmaSpec> {
    let s = parse_sigmas(text)?;
    if s.len() != 1 {
        bail!("--sigma: experiments take one bandwidth for every method, got {}", s.len());
    }
    Ok(s[0])
}

/// The map of `name` with `l` output features for `kernel`: the maps of the
/// TEFM paper with its settings (Comp and TEFM compress `d = 4l` RFF
/// features; TEFM-G uses one power iteration, TEFM-S none, as the paper's
/// Theorem 2 requires), Nyström, EOF (budget `l`, Laplace kernel).
pub fn method(name: &str, kernel: KernelFamily, l: usize) -> Result<MethodSpec> {
    let independent = |kind: MapKind, inner: Option<usize>| MethodSpec::Independent {
        kind,
        kernel,
        form: None,
        n_components: l,
        grids: None,
        inner,
    };
    let tefm = |sketch, power| MethodSpec::Tefm {
        sketch,
        base: TefmBase::Map(MapKind::Rff),
        kernel,
        form: None,
        n_components: l,
        sketch_features: 4 * l,
        power,
        // d = 4l keeps FᵀF small (d² doubles); one pass over the data.
        strategy: Strategy::OnePass,
    };
    Ok(match name {
        "rff" | "orf" | "qmc" | "fastfood" | "sorf" => independent(name.parse()?, None),
        // RKS as in the EOF paper: cos(wᵀx + b), one frequency per feature.
        "rff-phase" => MethodSpec::Independent {
            kind: MapKind::Rff,
            kernel,
            form: Some(Form::Phase),
            n_components: l,
            grids: None,
            inner: None,
        },
        "comp" => independent(MapKind::Comp, Some(4 * l)),
        "nystrom" => {
            MethodSpec::Nystrom { kernel, n_landmarks: l, rel_tol: kapprox::features::nystrom::DEFAULT_REL_TOL }
        }
        "tefm-g" => tefm(TefmKind::Gaussian, 1),
        "tefm-s" => tefm(TefmKind::Srht, 0),
        // kapprox's EOF: the centred basis, the nested (largest-weight) subset.
        "eof" => MethodSpec::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Centred,
            subset: EofSubset::Nested,
        },
        // The centred basis with M drawn uniformly from the level: sparser.
        "eof-uniform" => MethodSpec::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Centred,
            subset: EofSubset::Uniform,
        },
        // The boundary-rooted complete basis: exact, but nearly dense in many dimensions.
        "eof-boundary" => MethodSpec::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Boundary,
            subset: EofSubset::Nested,
        },
        // The EOF paper's own setting: hats only, M drawn uniformly from the level.
        "eof-paper" => MethodSpec::Eof {
            kernel: EofKernel::Laplace,
            size: EofSize::Budget(l),
            basis: EofBasis::Paper,
            subset: EofSubset::Uniform,
        },
        other => bail!("unknown method {other:?}"),
    })
}

/// What one fit + evaluation gave.
pub struct Trial {
    /// The fit's report (σ, α, features, per-stage seconds).
    pub report: FitReport,
    /// Test metrics.
    pub metrics: EvalMetrics,
    /// Wall-clock seconds of the fit (every pass: map + accumulate + solve).
    pub fit_seconds: f64,
    /// The model (to measure its features, e.g. nnz).
    pub model: Model,
}

impl Trial {
    /// The test error: RMSE (regression) or 1 − accuracy (classification).
    pub fn error(&self) -> f64 {
        match &self.metrics {
            EvalMetrics::Regression(m) => m.rmse,
            EvalMetrics::Classification(m) => 1.0 - m.accuracy,
        }
    }

    /// Relative RMSE ‖y − ŷ‖/‖y‖ (regression) or 1 − accuracy.
    pub fn relative_error(&self) -> f64 {
        match &self.metrics {
            EvalMetrics::Regression(m) => m.relative_rmse,
            EvalMetrics::Classification(m) => 1.0 - m.accuracy,
        }
    }

    /// Test accuracy (classification only).
    pub fn accuracy(&self) -> Option<f64> {
        match &self.metrics {
            EvalMetrics::Classification(m) => Some(m.accuracy),
            EvalMetrics::Regression(_) => None,
        }
    }
}

/// The reading options of every experiment fit: the label recorded by
/// `convert`, default chunks, NaN refused.
pub fn read_config() -> ReadConfig {
    ReadConfig { label: LabelSpec::Hint, ..ReadConfig::default() }
}

/// Fits `method` on `set`'s training rows with the given bandwidth
/// candidates (α from `fit`'s default grid on a 20 % validation split),
/// times the fit and evaluates on the test rows.
pub fn fit_and_test(
    set: &DataSet,
    method: MethodSpec,
    sigmas: Vec<SigmaSpec>,
    scale: ScalerKind,
    seed: u64,
    observer: &dyn Observer,
) -> Result<Trial> {
    let cfg = FitConfig {
        train: set.train.clone(),
        method,
        sigmas,
        alphas: None,
        task: set.task,
        scale,
        read: read_config(),
        split: Split::Holdout(0.2),
        seed,
        max_memory: None,
        precision: kapprox::fit::Precision::F64,
        extend_grid: false,
    };
    let t = Instant::now();
    let (model, report) =
        kapprox::fit(&cfg, observer).with_context(|| format!("{}: fit {}", set.name, cfg.method.name()))?;
    let fit_seconds = t.elapsed().as_secs_f64();
    let metrics = test_metrics(&model, &set.test, observer)?;
    Ok(Trial { report, metrics, fit_seconds, model })
}

/// Test metrics of a fitted model.
pub fn test_metrics(model: &Model, test: &Path, observer: &dyn Observer) -> Result<EvalMetrics> {
    evaluate(model, test, kapprox::io::DEFAULT_CHUNK_ROWS, Default::default(), observer)
}

/// The σ candidates of the bandwidth protocol: `fit`'s default grid and
/// one step further, since on the CPU and a9a sets the largest default
/// (`auto*4`) often wins.
pub const SIGMA_GRID: &str = "auto*0.5,auto,auto*2,auto*4,auto*8";

/// The bandwidth protocol (see the module docs): `given`, or the σ that
/// RFF with `l` features chooses on validation among `fit`'s default
/// candidates. Returns σ and how it was chosen.
pub fn choose_sigma(
    set: &DataSet,
    kernel: KernelFamily,
    scale: ScalerKind,
    given: Option<SigmaSpec>,
    l: usize,
    seed: u64,
    observer: &dyn Observer,
) -> Result<(f64, String)> {
    let (sigmas, how) = match given {
        Some(SigmaSpec::Value(v)) => return Ok((v, "given".into())),
        Some(s) => (vec![s], "given (median rule)".to_string()),
        None => (parse_sigmas(SIGMA_GRID)?, format!("validation (rff, l={l})")),
    };
    let trial = fit_and_test(set, method("rff", kernel, l)?, sigmas, scale, seed, observer)?;
    let r = &trial.report;
    let factor = r.median_distance.map(|m| format!(", {:.2}x median", r.sigma / m)).unwrap_or_default();
    eprintln!("{}: sigma = {:.4} by {how}{factor}", set.name, r.sigma);
    Ok((r.sigma, how))
}
