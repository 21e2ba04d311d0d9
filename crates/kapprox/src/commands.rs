//! Command handlers: validate arguments, call the library, print results.

use crate::cli::{
    ConvertArgs, DemoArgs, EvalArgs, FeaturizeArgs, FitArgs, FormatArg, GenerateArgs, PredictArgs, ScaleArg, SplitArgs,
    TaskArg,
};
use crate::config::{self, ReadConfig, SigmaSpec};
use crate::fit::method::{KernelFamily, Method};
use crate::fit::{FitConfig, FitReport, Split, fit};
use crate::model::{Model, Task};
use crate::outputs::{PerShard, output_path, prepare_output_dir};
use crate::pipeline::{Features, Pass};
use crate::predict::{EvalMetrics, evaluate, predict_to_dir};
use anyhow::{Context, Result, bail};
use kapprox_io::{
    ConvertOptions, Dataset, DenseFeatureWriter, FeatureDtype, FeatureFileOptions, InputFormat, LabelSpec, ReadOptions,
    Scaler, ScalerKind, SparseFeatureWriter,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string(v)?);
    Ok(())
}

/// `kapprox convert`.
pub fn convert(a: &ConvertArgs) -> Result<()> {
    let delimiter = match a.delimiter {
        Some(d) if !d.is_ascii() => bail!("--delimiter: {d:?} is not a single ASCII character"),
        Some(d) => Some(kapprox_io::Delimiter::Byte(d as u8)),
        None => None,
    };
    let opts = ConvertOptions::new()
        .with_format(a.format.map(|f| match f {
            FormatArg::Csv => InputFormat::Csv,
            FormatArg::Tsv => InputFormat::Tsv,
            FormatArg::Libsvm => InputFormat::Libsvm,
            FormatArg::Idx => InputFormat::Idx,
        }))
        .with_delimiter(delimiter)
        .with_header(a.header)
        .with_label(match a.label.as_str() {
            "last" => LabelSpec::Last,
            name => LabelSpec::Name(name.to_string()),
        })
        .with_labels_path(a.labels.clone())
        .with_n_features(a.n_features)
        .with_rows_per_shard(a.rows_per_shard as u64)
        .with_nan_policy(config::nan_policy(a.nan))
        .with_overwrite(a.overwrite);
    let bar = crate::progress::rows_bar(0, "convert");
    let report = kapprox_io::convert(&a.input, &a.out, &opts, &mut |rows| bar.set_position(rows))?;
    bar.finish_and_clear();
    if a.json {
        print_json(&report)?;
    } else {
        eprintln!(
            "wrote {} rows x {} features into {} shard(s) under {}{}",
            report.rows_written,
            report.columns.len() - usize::from(report.label.is_some()),
            report.shards.len(),
            a.out.display(),
            if report.rows_skipped > 0 {
                format!(" ({} rows with NaN/Inf skipped)", report.rows_skipped)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

pub(crate) fn scale_kind(a: ScaleArg) -> ScalerKind {
    match a {
        ScaleArg::Standard => ScalerKind::Standard,
        ScaleArg::Minmax => ScalerKind::MinMax,
        ScaleArg::None => ScalerKind::None,
    }
}

/// Builds the validated fit configuration from `fit`'s arguments.
pub fn fit_config(a: &FitArgs) -> Result<FitConfig> {
    let task = match a.task {
        TaskArg::Regression => Task::Regression,
        TaskArg::Classification => Task::Classification,
    };
    let max_memory = a.max_memory.as_deref().map(config::parse_bytes).transpose()?;
    let n_targets = if task == Task::Regression { 1 } else { 2 };
    let method = config::method_from_args(&a.map, n_targets, max_memory)?;
    // EOF lives on [0,1]^D: its inputs are min-max scaled.
    let scale = match (&method, a.scale) {
        (Method::Eof { .. }, None | Some(ScaleArg::Minmax)) => ScalerKind::MinMax,
        (Method::Eof { .. }, Some(other)) => {
            bail!("--scale: eof needs inputs in [0, 1]; use --scale minmax (its default), not {other:?}")
        }
        (_, s) => scale_kind(s.unwrap_or_default()),
    };
    Ok(FitConfig {
        train: a.train.clone(),
        method,
        sigmas: config::parse_sigmas(&a.map.sigma)?,
        alphas: a.alpha.as_deref().map(kapprox_solve::parse_alpha_grid).transpose().context("--alpha")?,
        task,
        scale,
        read: ReadConfig::from_args(&a.read)?,
        split: match a.folds {
            Some(k) => Split::Folds(k),
            None => Split::Holdout(a.validation),
        },
        seed: a.map.seed,
        max_memory,
    })
}

/// The exact-KRR configuration of `fit --map exact`.
pub fn exact_config(a: &FitArgs) -> Result<crate::exact::ExactConfig> {
    if a.folds.is_some() {
        bail!("--folds: exact kernel ridge selects on one held-out part (--validation)");
    }
    Ok(crate::exact::ExactConfig {
        train: a.train.clone(),
        kernel: KernelFamily::parse(&a.map.kernel, a.map.nu)?,
        sigmas: config::parse_sigmas(&a.map.sigma)?,
        alphas: a.alpha.as_deref().map(kapprox_solve::parse_alpha_grid).transpose().context("--alpha")?,
        task: match a.task {
            TaskArg::Regression => Task::Regression,
            TaskArg::Classification => Task::Classification,
        },
        scale: scale_kind(a.scale.unwrap_or_default()),
        read: ReadConfig::from_args(&a.read)?,
        validation: a.validation,
        seed: a.map.seed,
        max_rows: kapprox_solve::DEFAULT_MAX_ROWS,
    })
}

/// `kapprox fit`.
pub fn fit_cmd(a: &FitArgs) -> Result<()> {
    // --part, --shards, --after, --workers, --plan and MPI launches.
    if crate::distributed::cli::fit(a)? {
        return Ok(());
    }
    let (model, report) =
        if a.map.map == "exact" { crate::exact::fit_exact(&exact_config(a)?)? } else { fit(&fit_config(a)?)? };
    model.save(&a.out)?;
    if a.json {
        let rss = crate::sysinfo::peak_rss_bytes();
        print_json(&serde_json::json!({"model": a.out, "report": report, "peak_rss_bytes": rss}))?;
    } else {
        print_fit_report(&report, &a.out);
    }
    Ok(())
}

fn print_fit_report(r: &FitReport, out: &Path) {
    eprintln!(
        "fitted {} ({} features) on {} rows ({} held out) in {} pass(es), {:.2} s: sigma = {:.4}, alpha = {:.3e}",
        r.method, r.n_features, r.rows, r.validation_rows, r.passes, r.seconds.total, r.sigma, r.alpha
    );
    for c in &r.candidates {
        let acc = c.validation_accuracy.map(|a| format!(", accuracy {:.4}%", 100.0 * a)).unwrap_or_default();
        eprintln!(
            "  sigma {:>10.4}: best alpha {:.3e}, validation RMSE {:.4}{acc}",
            c.sigma,
            c.best_alpha,
            c.validation_mse.sqrt()
        );
    }
    eprintln!("model written to {}", out.display());
}

/// `kapprox predict`.
pub fn predict(a: &PredictArgs) -> Result<()> {
    let model = Model::load(&a.model)?;
    let r = predict_to_dir(&model, &a.data, &a.out, a.chunk_rows, config::nan_policy(a.nan))?;
    eprintln!("wrote {} predictions into {} file(s) under {} in {:.2} s", r.rows, r.files, a.out.display(), r.seconds);
    Ok(())
}

/// `kapprox eval`.
pub fn eval(a: &EvalArgs) -> Result<()> {
    let model = Model::load(&a.model)?;
    let m = evaluate(&model, &a.data, a.chunk_rows, config::nan_policy(a.nan))?;
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

/// `featurize --map` without a model: the method and its one bandwidth.
pub(crate) fn featurize_method(a: &FeaturizeArgs) -> Result<(Method, SigmaSpec)> {
    let method = config::method_from_args(&a.map, 1, None)?;
    let sigmas = config::parse_sigmas(&a.map.sigma)?;
    if sigmas.len() != 1 {
        bail!("--sigma: featurize takes one bandwidth, got {}", sigmas.len());
    }
    Ok((method, sigmas[0]))
}

/// `featurize --map` without a model, once the column statistics (and, for
/// `--sigma auto`, the bandwidth sample) are known: the scaler and the
/// data-independent map. Maps learned from data need a model.
pub(crate) fn featurize_map(
    a: &FeaturizeArgs,
    method: &Method,
    sigma: SigmaSpec,
    stats: &kapprox_io::ColumnStats,
    sample: Option<ndarray::Array2<f64>>,
    n_input: usize,
) -> Result<(Scaler, Box<dyn kapprox_features::FeatureMap>)> {
    let scaler = Scaler::fit(scale_kind(a.scale), stats);
    let median = sample.map(|mut s| {
        scaler.apply_in_place(s.view_mut());
        crate::fit::median_distance(&s.view())
    });
    match method.independent_map(sigma.resolve(median), n_input, a.map.seed)? {
        Some(map) => Ok((scaler, map)),
        None => bail!(
            "--map {}: this map is learned from data; fit a model first and run featurize --model MODEL",
            a.map.map
        ),
    }
}

/// `kapprox featurize`.
pub fn featurize(a: &FeaturizeArgs) -> Result<()> {
    // Under mpirun, each rank writes its own shards.
    if crate::distributed::cli::featurize(a)? {
        return Ok(());
    }
    let start = Instant::now();
    let ds = Dataset::open(&a.data)?;
    let read_cfg = ReadConfig::from_args(&a.read)?;
    let (features, scaler, map) = match &a.model {
        Some(path) => {
            let m = Model::load(path)?;
            (m.doc.feature_columns.clone(), m.doc.scaler.clone(), m.map)
        }
        None => {
            let (method, sigma) = featurize_method(a)?;
            let (features, label) = resolve_optional_label(&ds, &read_cfg.label)?;
            let shards: Vec<usize> = (0..ds.shards().len()).collect();
            let read = ReadOptions::new(features.clone())
                .with_label(label)
                .with_chunk_rows(read_cfg.chunk_rows)
                .with_nan_policy(read_cfg.nan)
                .with_shards(shards);
            let needs_sample = matches!(sigma, SigmaSpec::Auto(_));
            let stored = ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok());
            let (stats, sample) = match stored {
                Some(stats) if !needs_sample => (stats, None),
                stored => {
                    let rows = if needs_sample { crate::fit::passes::SIGMA_SAMPLE_ROWS } else { 0 };
                    let (st, _) = crate::fit::passes::prepare_pass(&ds, read, stored.is_none(), rows, a.map.seed)?;
                    (stored.or(st.stats).expect("statistics stored or computed"), st.sample.map(|r| r.finish().1))
                }
            };
            let (scaler, map) = featurize_map(a, &method, sigma, &stats, sample, features.len())?;
            (features, scaler, map)
        }
    };
    let label = resolve_optional_label(&ds, &read_cfg.label)?.1;
    let read = ReadOptions::new(features)
        .with_label(label.clone())
        .with_chunk_rows(read_cfg.chunk_rows)
        .with_nan_policy(read_cfg.nan);
    let existed = a.out.exists();
    prepare_output_dir(&a.out)?;
    let result = write_features(&ds, &a.out, read, &scaler, map.as_ref(), label, a.f32);
    if result.is_err() && !existed {
        // An output directory this run created holds nothing whole: remove it.
        let _ = std::fs::remove_dir_all(&a.out);
    }
    let (rows, files) = result?;
    let l = map.n_output();
    eprintln!(
        "wrote {rows} rows x {l} features into {files} file(s) under {} in {:.2} s",
        a.out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The featurize pass: one feature shard per input shard.
pub(crate) fn write_features(
    ds: &Dataset,
    out: &Path,
    read: ReadOptions,
    scaler: &Scaler,
    map: &dyn kapprox_features::FeatureMap,
    label: Option<String>,
    f32: bool,
) -> Result<(u64, usize)> {
    let opts = FeatureFileOptions::new()
        .with_dtype(if f32 { FeatureDtype::F32 } else { FeatureDtype::F64 })
        .with_carried(label.clone());
    let l = map.n_output();
    let mut dense = PerShard::new(|w: DenseFeatureWriter| Ok(w.finish()?));
    let mut sparse = PerShard::new(|w: SparseFeatureWriter| Ok(w.finish()?));
    let pass = Pass { dataset: ds, read, scaler, maps: vec![map], label: "featurize" };
    let report = pass.run(&mut |chunk, _, z| {
        let carried: Vec<_> = chunk.y.iter().map(|y| y.view()).collect();
        let path = output_path(ds, chunk.shard, out);
        match z {
            Features::Dense(z) => dense
                .writer(chunk.shard, || Ok(DenseFeatureWriter::create(&path, l, opts.clone())?))?
                .write(z.view(), Some(&chunk.row_ids), &carried)?,
            Features::Sparse(z) => sparse
                .writer(chunk.shard, || Ok(SparseFeatureWriter::create(&path, l, opts.clone())?))?
                .write(z.view(), Some(&chunk.row_ids), &carried)?,
        }
        Ok(())
    })?;
    dense.close()?;
    sparse.close()?;
    Ok((report.rows, dense.files() + sparse.files()))
}

/// Features and label; with `--label auto` and no recorded label, every
/// numeric column is a feature.
pub(crate) fn resolve_optional_label(ds: &Dataset, label: &LabelSpec) -> Result<(Vec<String>, Option<String>)> {
    match (label, ds.label_hint()) {
        (LabelSpec::Hint, None) => Ok(ds.resolve_columns(&LabelSpec::None)?),
        _ => Ok(ds.resolve_columns(label)?),
    }
}

/// Finds the shipped data directory: as given, else relative to the
/// workspace this binary was built from.
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

/// `kapprox demo`: the whole chain on the CPU data shipped in `data/`.
pub fn demo(a: &DemoArgs) -> Result<()> {
    let t0 = Instant::now();
    let data = locate_data(&a.data)?;
    let tmp;
    let work = match &a.work_dir {
        Some(w) => {
            std::fs::create_dir_all(w)?;
            w.clone()
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let mut timings = serde_json::Map::new();
    let mut convert_one = |name: &str| -> Result<PathBuf> {
        let out = work.join(name);
        let opts = ConvertOptions::new().with_label(LabelSpec::Last).with_overwrite(true);
        let t = Instant::now();
        kapprox_io::convert(&data.join(format!("cpu_rks_{name}.tsv.gz")), &out, &opts, &mut |_| {})?;
        timings.insert(format!("convert_{name}"), t.elapsed().as_secs_f64().into());
        Ok(out)
    };
    let train = convert_one("train")?;
    let test = convert_one("test")?;
    let cfg = FitConfig {
        train: train.clone(),
        method: Method::Independent {
            kind: "rff".into(),
            kernel: KernelFamily::Gaussian,
            form: None,
            n_components: a.features,
            grids: None,
            inner: None,
        },
        sigmas: config::parse_sigmas("auto*0.5,auto,auto*2,auto*4")?,
        alphas: None,
        task: Task::Regression,
        scale: ScalerKind::Standard,
        read: ReadConfig {
            label: LabelSpec::Hint,
            chunk_rows: kapprox_io::DEFAULT_CHUNK_ROWS,
            nan: Default::default(),
        },
        split: Split::Holdout(0.2),
        seed: a.seed,
        max_memory: None,
    };
    let t = Instant::now();
    let (model, report) = fit(&cfg)?;
    timings.insert("fit".into(), t.elapsed().as_secs_f64().into());
    let model_path = work.join("model.safetensors");
    model.save(&model_path)?;
    let model = Model::load(&model_path)?;
    let t = Instant::now();
    let metrics = evaluate(&model, &test, kapprox_io::DEFAULT_CHUNK_ROWS, Default::default())?;
    timings.insert("eval".into(), t.elapsed().as_secs_f64().into());
    timings.insert("total".into(), t0.elapsed().as_secs_f64().into());
    let m = match &metrics {
        EvalMetrics::Regression(m) => m.clone(),
        EvalMetrics::Classification(_) => unreachable!("the demo is a regression"),
    };
    if a.json {
        print_json(&serde_json::json!({
            "dataset": "cpu (Rahimi & Recht split): 6554 train / 819 test rows, 21 features",
            "map": model.doc.map,
            "test": m,
            "fit": report,
            "seconds": timings,
        }))?;
    } else {
        println!("kapprox demo: Gaussian random Fourier features + ridge on the CPU data (6554 train / 819 test rows)");
        println!(
            "  features l = {}, sigma = {:.4} (median rule x {:.1}), alpha = {:.3e}, chosen on a 20% validation split",
            a.features,
            report.sigma,
            report.sigma / report.median_distance.unwrap_or(report.sigma),
            report.alpha
        );
        println!(
            "  test RMSE {:.4}   relative RMSE {:.4}   MAE {:.4}   R² {:.4}",
            m.rmse, m.relative_rmse, m.mae, m.r2
        );
        println!(
            "  time: fit {:.2} s ({} pass(es)), eval {:.2} s, total {:.2} s",
            timings["fit"].as_f64().unwrap_or(0.0),
            report.passes,
            timings["eval"].as_f64().unwrap_or(0.0),
            timings["total"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}

/// `kapprox split`.
pub fn split(a: &SplitArgs) -> Result<()> {
    let r = crate::split::split(
        &a.input,
        &a.train,
        &a.test,
        &config::label_spec(&a.label),
        a.test_fraction,
        a.seed,
        a.chunk_rows,
        a.rows_per_shard,
        a.overwrite,
    )?;
    eprintln!(
        "wrote {} training rows to {} and {} test rows to {}",
        r.train_rows,
        a.train.display(),
        r.test_rows,
        a.test.display()
    );
    Ok(())
}

/// `kapprox generate`.
pub fn generate(a: &GenerateArgs) -> Result<()> {
    let cfg = crate::generate::GenerateConfig {
        rows: a.rows,
        features: a.features,
        classes: a.classes,
        rows_per_shard: a.rows_per_shard,
        seed: a.seed,
        overwrite: a.overwrite,
    };
    let t = Instant::now();
    let n = crate::generate::generate(&cfg, &a.out)?;
    eprintln!("wrote {n} rows x {} features to {} in {:.1} s", a.features, a.out.display(), t.elapsed().as_secs_f64());
    Ok(())
}

/// `kapprox kernel-error`.
pub fn kernel_error(a: &crate::cli::KernelErrorArgs) -> Result<()> {
    let method = config::method_from_args(&a.map, 1, None)?;
    let sigmas = config::parse_sigmas(&a.map.sigma)?;
    if sigmas.len() != 1 {
        bail!("--sigma: kernel-error takes one bandwidth, got {}", sigmas.len());
    }
    if a.repeats == 0 {
        bail!("--repeats: must be at least 1");
    }
    let scale = if matches!(method, Method::Eof { .. }) { ScalerKind::MinMax } else { scale_kind(a.scale) };
    let label = if a.label == "none" { LabelSpec::None } else { config::label_spec(&a.label) };
    let cfg = crate::kernel_error::KernelErrorConfig {
        data: a.data.clone(),
        label,
        method,
        sigma: sigmas[0],
        scale,
        seeds: (a.map.seed..a.map.seed + a.repeats).collect(),
        max_rows: a.rows,
    };
    let r = crate::kernel_error::kernel_error(&cfg)?;
    if a.json {
        print_json(&r)?;
    } else {
        println!(
            "{} on {} rows, sigma {:.4}: spectral error {:.4}, Frobenius error {:.4} (mean of {} map(s))",
            r.method,
            r.rows,
            r.sigma,
            r.spectral,
            r.frobenius,
            r.per_seed.len()
        );
    }
    Ok(())
}
