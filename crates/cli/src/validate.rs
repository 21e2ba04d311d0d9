//! Flags -> the library's typed configurations, once, before any data is
//! touched. Every refused value is named with its flag.
//!
//! This is the one place where flags become configurations: reading
//! options ([`read_config`]), the method ([`method_params`]), the fit and
//! how it runs ([`fit_config`], [`fit_mode`]), and the other commands'
//! configurations.

use crate::args::{
    ColumnArgs, FeaturizeArgs, FitArgs, KernelErrorArgs, MapArgs, NanArg, ReadArgs, ScaleArg, SplitArgs, TaskArg,
};
use anyhow::{Context, Result, bail};
use kapprox::distributed::{FitMode, ShardSelection, launched_by_mpi};
use kapprox::featurize::{DEFAULT_FEATURE_COMPRESSION, FeatureOutput, FeatureSource, FeaturizeConfig};
use kapprox::io::{Compression, LabelSpec, MemoryBudget, NanPolicy, ScalerKind};
use kapprox::kernel_error::KernelErrorConfig;
use kapprox::sigma::parse_sigmas;
use kapprox::split::SplitConfig;
use kapprox::{ColumnFlags, FitConfig, MethodParams, ReadConfig, SigmaSpec, Split, Task};

/// Parses a byte size such as `512M`, `4G`, `1.5GiB` or `1000000`
/// (`--max-memory`).
pub(crate) fn parse_bytes(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.trim().parse().map_err(|_| anyhow::anyhow!("--max-memory: {text:?} is not a size like 4G"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0f64.powi(4),
        _ => bail!("--max-memory: unknown unit {unit:?} in {text:?} (use K, M, G or T)"),
    };
    Ok((v * mult) as u64)
}

/// `--label`: a name, `last`, `auto` (the label recorded by convert) or
/// `none` (no label column: every column is an input).
pub(crate) fn label_spec(text: &str) -> LabelSpec {
    match text {
        "last" => LabelSpec::Last,
        "none" => LabelSpec::None,
        "auto" => LabelSpec::Hint,
        name => LabelSpec::Name(name.to_string()),
    }
}

/// `--nan`.
pub(crate) fn nan_policy(arg: NanArg) -> NanPolicy {
    match arg {
        NanArg::Refuse => NanPolicy::Refuse,
        NanArg::Skip => NanPolicy::Skip,
        NanArg::Impute => NanPolicy::Impute,
    }
}

/// `convert --nan`: `impute` keeps missing values as NaN, for a fit with
/// `--nan impute` to fill.
pub(crate) fn convert_nan_policy(arg: NanArg) -> NanPolicy {
    match arg {
        NanArg::Impute => NanPolicy::Keep,
        other => nan_policy(other),
    }
}

/// `--columns`, `--exclude`, `--categorical`, `--max-categories`.
pub(crate) fn column_flags(a: &ColumnArgs) -> Result<ColumnFlags> {
    if a.max_categories == 0 {
        bail!("--max-categories: must be at least 1");
    }
    Ok(ColumnFlags {
        columns: a.columns.clone(),
        exclude: a.exclude.clone(),
        categorical: a.categorical.clone(),
        max_categories: a.max_categories,
    })
}

/// `--compression`.
pub(crate) fn compression(text: &str) -> Result<Compression> {
    text.parse().with_context(|| format!("--compression: {text:?}"))
}

/// `--scale`.
pub(crate) fn scale_kind(a: ScaleArg) -> ScalerKind {
    match a {
        ScaleArg::Standard => ScalerKind::Standard,
        ScaleArg::Minmax => ScalerKind::MinMax,
        ScaleArg::None => ScalerKind::None,
    }
}

/// `--task`.
pub(crate) fn task(a: TaskArg) -> Task {
    match a {
        TaskArg::Regression => Task::Regression,
        TaskArg::Classification => Task::Classification,
    }
}

/// The reading flags shared by the commands that read Parquet.
pub(crate) fn read_config(a: &ReadArgs) -> Result<ReadConfig> {
    if a.chunk_rows == 0 {
        bail!("--chunk-rows: must be at least 1");
    }
    Ok(ReadConfig {
        label: label_spec(&a.label),
        chunk_rows: a.chunk_rows,
        nan: nan_policy(a.nan),
        select: ColumnFlags::default(),
    })
}

/// The map flags as the library's method parameters (checked by the caller).
pub(crate) fn method_params(a: &MapArgs) -> MethodParams {
    MethodParams {
        map: a.map.clone(),
        kernel: a.kernel.clone(),
        nu: a.nu,
        form: a.form.clone(),
        n_components: a.features,
        grids: a.grids,
        inner: a.inner,
        base: a.base.clone(),
        sketch_features: a.sketch_features,
        power: a.power,
        tefm_strategy: a.tefm_strategy.clone(),
        rel_tol: a.rel_tol,
        level: a.level,
        eof_basis: a.eof_basis.clone(),
        eof_subset: a.eof_subset.clone(),
    }
}

/// `--sigma` of a command that takes one bandwidth.
fn one_sigma(text: &str, command: &str) -> Result<SigmaSpec> {
    let sigmas = parse_sigmas(text)?;
    if sigmas.len() != 1 {
        bail!("--sigma: {command} takes one bandwidth, got {}", sigmas.len());
    }
    Ok(sigmas[0])
}

/// `--alpha`: a number, a comma list, or a log range `LO..HI[:N]`.
fn alphas(a: &FitArgs) -> Result<Option<Vec<f64>>> {
    a.alpha.as_deref().map(kapprox::solve::parse_alpha_grid).transpose().context("--alpha")
}

/// The validated configuration of `fit`.
pub(crate) fn fit_config(a: &FitArgs) -> Result<FitConfig> {
    let params = method_params(&a.map);
    if params.names_exact() {
        if a.folds.is_some() {
            bail!("--folds: exact kernel ridge selects on one held-out part (--validation)");
        }
        if a.selection.extend_grid {
            bail!("--extend-grid: exact kernel ridge selects on its own grids; give wider --sigma and --alpha instead");
        }
        let method = params.check_exact()?;
        return Ok(FitConfig {
            train: a.train.clone(),
            method,
            sigmas: parse_sigmas(&a.map.sigma)?,
            alphas: alphas(a)?,
            task: task(a.task),
            scale: scale_kind(a.scale.unwrap_or_default()),
            read: ReadConfig { select: column_flags(&a.columns)?, ..read_config(&a.read)? },
            split: Split::Holdout(a.validation),
            seed: a.map.seed,
            max_memory: None,
            precision: a.precision.precision(),
            extend_grid: false,
        });
    }
    let task = task(a.task);
    // Every fit has a budget: the flag, else a share of the machine's memory.
    let max_memory = Some(MemoryBudget::or_machine(a.max_memory.as_deref().map(parse_bytes).transpose()?).bytes());
    if let Some(k) = a.folds {
        kapprox::solve::check_folds(k).context("--folds")?;
    }
    let n_targets = if task == Task::Regression { 1 } else { 2 };
    let method = params.check(n_targets, max_memory)?;
    let scale = match (method.needs_unit_cube(), a.scale) {
        (true, None | Some(ScaleArg::Minmax)) => ScalerKind::MinMax,
        (true, Some(other)) => {
            bail!("--scale: eof needs inputs in [0, 1]; use --scale minmax (its default), not {other:?}")
        }
        (false, s) => scale_kind(s.unwrap_or_default()),
    };
    Ok(FitConfig {
        train: a.train.clone(),
        method,
        sigmas: parse_sigmas(&a.map.sigma)?,
        alphas: alphas(a)?,
        task,
        scale,
        read: ReadConfig { select: column_flags(&a.columns)?, ..read_config(&a.read)? },
        split: match a.folds {
            Some(k) => Split::Folds(k),
            None => Split::Holdout(a.validation),
        },
        seed: a.map.seed,
        max_memory,
        precision: a.precision.precision(),
        extend_grid: a.selection.extend_grid,
    })
}

/// How `fit` runs: `--plan`, `--workers`, `--part`/`--shards` (after
/// `--after`), the passes after `--after`, an MPI launch, or locally.
pub(crate) fn fit_mode(a: &FitArgs) -> Result<FitMode> {
    let partial = a.part.is_some() || a.shards.is_some();
    let mpi = launched_by_mpi();
    let distributed = partial || a.after.is_some() || a.workers.is_some() || a.plan || mpi;
    if distributed && method_params(&a.map).names_exact() {
        bail!("--map exact fits in one process; --part, --shards, --after, --workers, --plan and MPI do not apply");
    }
    if distributed && a.selection.extend_grid {
        bail!(
            "--extend-grid fits in one process (a sigma at the edge costs one more fit there); --part, --shards, \
             --after, --workers, --plan and MPI do not apply"
        );
    }
    if mpi && !partial && a.workers.is_none() && !a.plan {
        if !cfg!(feature = "mpi") {
            bail!(
                "started by an MPI launcher, but this kapprox was built without MPI support: rebuild with `cargo \
                 build --release --features mpi`, or use --workers P or --part I/N and reduce"
            );
        }
        return Ok(FitMode::Mpi);
    }
    if a.plan {
        return Ok(FitMode::Plan);
    }
    if let Some(p) = a.workers {
        return Ok(FitMode::Workers(p));
    }
    if !partial {
        return Ok(a.after.clone().map_or(FitMode::Local, FitMode::After));
    }
    let shards = match (&a.part, &a.shards) {
        (Some(p), None) => ShardSelection::parse_part(p)?,
        (None, Some(s)) => ShardSelection::parse_list(s)?,
        _ => bail!("--part and --shards cannot be combined"),
    };
    Ok(FitMode::Part { shards, after: a.after.clone() })
}

/// The validated configuration of `featurize`.
pub(crate) fn featurize_config(a: &FeaturizeArgs) -> Result<FeaturizeConfig> {
    let read = ReadConfig { select: column_flags(&a.columns)?, ..read_config(&a.read)? };
    let source = match &a.model {
        Some(path) => FeatureSource::Model(path.clone()),
        None => FeatureSource::Method {
            method: method_params(&a.map).check(1, None)?,
            sigma: one_sigma(&a.map.sigma, "featurize")?,
            scale: scale_kind(a.scale),
            seed: a.map.seed,
        },
    };
    let save_map = a.map_output.save_map.clone();
    let output = FeatureOutput {
        keep: a.written.keep.clone(),
        compression: a
            .written
            .compression
            .as_deref()
            .map(compression)
            .transpose()?
            .unwrap_or(DEFAULT_FEATURE_COMPRESSION),
        store_map: a.map_output.store.policy(),
        overwrite: a.output.overwrite,
    };
    Ok(FeaturizeConfig { data: a.data.clone(), out: a.out.clone(), source, read, f32: a.f32, save_map, output })
}

/// The validated configuration of `kernel-error`.
pub(crate) fn kernel_error_config(a: &KernelErrorArgs) -> Result<KernelErrorConfig> {
    let method = method_params(&a.map).check(1, None)?;
    let sigma = one_sigma(&a.map.sigma, "kernel-error")?;
    if a.repeats == 0 {
        bail!("--repeats: must be at least 1");
    }
    let scale = if method.needs_unit_cube() { ScalerKind::MinMax } else { scale_kind(a.scale) };
    let label = label_spec(&a.label);
    Ok(KernelErrorConfig {
        data: a.data.clone(),
        label,
        columns: column_flags(&a.columns)?,
        method,
        sigma,
        scale,
        seeds: (a.map.seed..a.map.seed + a.repeats).collect(),
        max_rows: a.rows,
    })
}

/// The configuration of `split`.
pub(crate) fn split_config(a: &SplitArgs) -> SplitConfig {
    SplitConfig {
        input: a.input.clone(),
        train: a.train.clone(),
        test: a.test.clone(),
        label: label_spec(&a.label),
        test_fraction: a.test_fraction,
        seed: a.seed,
        chunk_rows: a.chunk_rows,
        rows_per_shard: a.rows_per_shard,
        overwrite: a.overwrite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4G").unwrap(), 4 << 30);
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1000").unwrap(), 1000);
        assert!(parse_bytes("4Q").is_err());
    }
}
