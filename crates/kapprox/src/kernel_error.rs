//! `kernel-error`: how well a feature map approximates its kernel on data.
//!
//! On `n` rows (all of a dataset, or a seeded sample of them) the exact
//! kernel matrix `K` is compared with `ZZᵀ` for the features `Z` of a map:
//! `‖K − ZZᵀ‖₂ / ‖K‖₂` (both norms by Lanczos on the operator, without
//! forming `K − ZZᵀ`) and `‖K − ZZᵀ‖_F / ‖K‖_F` (row block by row block).
//! Maps learned from data (Nyström, TEFM, EOF) are learned on the same
//! rows, as in the TEFM paper's Fig. 1 protocol. Several seeds give several
//! independent maps; the report has each and their mean.
//!
//! Memory: `K` is held (`n²` doubles: 344 MB for the 6554 CPU rows) plus
//! the features `n × l` (TEFM: `n × d` base features and a `d²` Gram).

use crate::fit::exact::kernel_matrix;
use crate::fit::passes::prepare_pass;
use crate::fit::sketch_kind;
use crate::inputs::ColumnFlags;
use crate::method::MethodSpec;
use crate::observer::Observer;
use crate::sigma::{SIGMA_SAMPLE_ROWS, SigmaSpec, median_distance};
use anyhow::{Context, Result, bail};
use kapprox_core::{Domain, dense, rng};
use kapprox_features::nystrom::Nystrom;
use kapprox_features::{FeatureMap, OutputKind};
use kapprox_io::{Dataset, LabelSpec, ReadOptions, Scaler, ScalerKind};
use ndarray::{Array1, Array2, ArrayView2, Axis, s};
use serde::Serialize;
use std::path::PathBuf;

/// Lanczos iterations: the leading eigenvalue of these operators converges
/// to 1e-10 relative in far fewer.
const MAX_LANCZOS: usize = 300;
/// Rows per block of the Frobenius computation.
const ROW_BLOCK: usize = 1024;

/// What to measure.
#[derive(Clone, Debug)]
pub struct KernelErrorConfig {
    /// The data.
    pub data: PathBuf,
    /// Label column (excluded from the inputs).
    pub label: LabelSpec,
    /// Input columns (`--columns`, `--exclude`; numeric only).
    pub columns: ColumnFlags,
    /// The map family.
    pub method: MethodSpec,
    /// The bandwidth.
    pub sigma: SigmaSpec,
    /// Input scaling.
    pub scale: ScalerKind,
    /// One map per seed.
    pub seeds: Vec<u64>,
    /// At most this many rows (a seeded sample beyond).
    pub max_rows: usize,
}

/// One map's errors.
#[derive(Clone, Debug, Serialize)]
pub struct MapError {
    /// Seed of the map.
    pub seed: u64,
    /// Output features.
    pub n_features: usize,
    /// `‖K − ZZᵀ‖₂ / ‖K‖₂`.
    pub spectral: f64,
    /// `‖K − ZZᵀ‖_F / ‖K‖_F`.
    pub frobenius: f64,
    /// Seconds to build the map and compute `Z`.
    pub seconds: f64,
}

/// The report of `kernel-error`.
#[derive(Clone, Debug, Serialize)]
pub struct KernelErrorReport {
    /// The method.
    pub method: String,
    /// Rows compared.
    pub rows: usize,
    /// The bandwidth used.
    pub sigma: f64,
    /// `‖K‖₂`.
    pub kernel_norm: f64,
    /// Per seed.
    pub per_seed: Vec<MapError>,
    /// Mean spectral error over seeds.
    pub spectral: f64,
    /// Mean Frobenius error over seeds.
    pub frobenius: f64,
}

/// Loads up to `max_rows` scaled rows of the input columns that `columns`
/// selects (numeric only: `--categorical` is refused; a seeded reservoir
/// sample when there are more rows) and the median distance of the σ rule.
pub fn load_rows(
    data: &std::path::Path,
    columns: &ColumnFlags,
    label: &LabelSpec,
    scale: ScalerKind,
    max_rows: usize,
    seed: u64,
    observer: &dyn Observer,
) -> Result<(Array2<f64>, f64)> {
    columns.refuse_categorical("kernel-error")?;
    let ds = Dataset::open(data)?;
    let features = columns.select(&ds, label, false)?.numeric;
    let read = ReadOptions::new(features.clone());
    let stored = ds.stored_stats().and_then(|s| s.select(&features, ds.path()).ok());
    let (state, _) = prepare_pass(&ds, read, stored.is_none(), max_rows, seed, observer, None)?;
    let stats = stored.or(state.stats).context("column statistics")?;
    let (ids, mut x) = state.sample.context("row sample")?.finish();
    Scaler::fit(scale, &stats).apply_in_place(x.view_mut());
    // The σ rule uses the same rows as `fit`: the highest-priority ones.
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| rng::hash64(seed, Domain::RESERVOIR, ids[i]));
    order.truncate(SIGMA_SAMPLE_ROWS);
    let median = median_distance(&x.select(Axis(0), &order).view());
    Ok((x, median))
}

/// The features of `x` under `method` at bandwidth `sigma`, learning
/// data-dependent maps from `x` itself.
pub fn features_of(method: &MethodSpec, x: ArrayView2<'_, f64>, sigma: f64, seed: u64) -> Result<Array2<f64>> {
    let d_in = x.ncols();
    let dense = |m: &dyn FeatureMap| -> Array2<f64> {
        match m.output_kind() {
            OutputKind::Dense => m.transform(x),
            OutputKind::Sparse { .. } => m.transform_sparse(x).to_dense(),
        }
    };
    // The rows with the smallest hash of (seed, row): the fit's reservoir.
    let landmarks = |m: usize, flag: &str| -> Result<Array2<f64>> {
        if m > x.nrows() {
            bail!("{flag}: {m} landmarks but only {} rows", x.nrows());
        }
        let mut order: Vec<usize> = (0..x.nrows()).collect();
        order.sort_by_key(|&i| rng::hash64(seed, Domain::RESERVOIR, i as u64));
        order.truncate(m);
        order.sort_unstable();
        Ok(x.select(Axis(0), &order))
    };
    match method {
        MethodSpec::Nystrom { kernel, n_landmarks, rel_tol } => {
            let m = Nystrom::fit(kernel.at(sigma), landmarks(*n_landmarks, "--features")?, *rel_tol)?;
            Ok(dense(&m))
        }
        MethodSpec::Tefm { sketch, n_components, power, sketch_features, .. } => {
            let sample = match method.has_nystrom_base() {
                true => Some(landmarks(*sketch_features, "--sketch-features")?),
                false => None,
            };
            let base = method.tefm_base(sigma, d_in, seed, sample.as_ref())?;
            let f = base.transform(x);
            let ftf = dense::matmul(f.t(), f.view(), kapprox_core::dense_par());
            let q = kapprox_sketch::gram_range_finder(ftf.view(), sketch_kind(*sketch), *n_components, seed, *power)?;
            Ok(dense::matmul(f.view(), q.view(), kapprox_core::dense_par()))
        }
        _ => {
            let m = method.fit_pass_map(sigma, d_in, seed, None, None)?;
            Ok(dense(m.as_ref()))
        }
    }
}

/// `‖K‖₂` by Lanczos.
pub fn spectral_norm(k: &Array2<f64>, seed: u64) -> Result<f64> {
    let n = k.nrows();
    let est =
        kapprox_solve::spectral_norm_sym(n, |v, mut out| out.assign(&k.dot(&v)), MAX_LANCZOS.min(n), 1e-10, seed)?;
    Ok(est.value)
}

/// `(‖K − ZZᵀ‖₂, ‖K − ZZᵀ‖_F)` without forming `K − ZZᵀ`.
pub fn approximation_error(k: &Array2<f64>, z: ArrayView2<'_, f64>, seed: u64) -> Result<(f64, f64)> {
    let n = k.nrows();
    let est = kapprox_solve::spectral_norm_sym(
        n,
        |v, mut out| {
            let ztv: Array1<f64> = z.t().dot(&v);
            out.assign(&(k.dot(&v) - z.dot(&ztv)));
        },
        MAX_LANCZOS.min(n),
        1e-10,
        seed,
    )?;
    let mut fro2 = 0.0;
    let mut r = 0;
    while r < n {
        let e = (r + ROW_BLOCK).min(n);
        let zz = dense::matmul(z.slice(s![r..e, ..]), z.t(), kapprox_core::dense_par());
        fro2 += (&k.slice(s![r..e, ..]) - &zz).iter().map(|v| v * v).sum::<f64>();
        r = e;
    }
    Ok((est.value, fro2.sqrt()))
}

/// Runs the measurement.
pub fn kernel_error(cfg: &KernelErrorConfig, observer: &dyn Observer) -> Result<KernelErrorReport> {
    let sample_seed = cfg.seeds.first().copied().unwrap_or(0);
    let (x, median) = load_rows(&cfg.data, &cfg.columns, &cfg.label, cfg.scale, cfg.max_rows, sample_seed, observer)?;
    let sigma = cfg.sigma.resolve(Some(median));
    let kernel = cfg.method.kernel_at(sigma);
    if let MethodSpec::Eof { kernel: k, .. } = &cfg.method
        && *k != kapprox_features::eof::EofKernel::Laplace
    {
        bail!("kernel-error: eof is measured against the Laplace kernel only");
    }
    let k = kernel_matrix(kernel, x.view())?;
    let k_norm = spectral_norm(&k, 1)?;
    let k_fro = k.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut per_seed = Vec::new();
    for &seed in &cfg.seeds {
        let t = std::time::Instant::now();
        let z = features_of(&cfg.method, x.view(), sigma, seed)?;
        let seconds = t.elapsed().as_secs_f64();
        let (spec, fro) = approximation_error(&k, z.view(), seed ^ 0x5eed)?;
        per_seed.push(MapError {
            seed,
            n_features: z.ncols(),
            spectral: spec / k_norm,
            frobenius: fro / k_fro,
            seconds,
        });
    }
    let m = per_seed.len().max(1) as f64;
    Ok(KernelErrorReport {
        method: cfg.method.name().to_string(),
        rows: x.nrows(),
        sigma,
        kernel_norm: k_norm,
        spectral: per_seed.iter().map(|e| e.spectral).sum::<f64>() / m,
        frobenius: per_seed.iter().map(|e| e.frobenius).sum::<f64>() / m,
        per_seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::{KernelFamily, TefmBase};
    use kapprox_features::Kernel;

    /// With as many Nyström landmarks as rows, ZZᵀ = K: both errors vanish.
    /// With few random features they do not: the measure can tell.
    #[test]
    fn exact_reconstruction_measures_zero_and_few_features_do_not() {
        let x = Array2::from_shape_fn((120, 4), |(i, j)| ((i * 13 + j * 7) % 17) as f64 / 5.0 - 1.5);
        let kernel = Kernel::Gaussian { sigma: 1.3 };
        let k = kernel_matrix(kernel, x.view()).unwrap();
        let exact = MethodSpec::Nystrom { kernel: KernelFamily::Gaussian, n_landmarks: 120, rel_tol: 1e-12 };
        let z = features_of(&exact, x.view(), 1.3, 0).unwrap();
        let (spec, fro) = approximation_error(&k, z.view(), 1).unwrap();
        assert!(spec < 1e-8 && fro < 1e-8, "{spec} {fro}");
        let rff = |l| MethodSpec::independent(kapprox_features::MapKind::Rff, KernelFamily::Gaussian, l);
        let norm = spectral_norm(&k, 1).unwrap();
        let err =
            |l| approximation_error(&k, features_of(&rff(l), x.view(), 1.3, 3).unwrap().view(), 1).unwrap().0 / norm;
        let (small, large) = (err(16), err(4096));
        assert!(large < 0.1 && small > 3.0 * large, "l=16: {small}, l=4096: {large}");
        // The spectral norm agrees with a dense eigendecomposition.
        let (lambda, _) = kapprox_core::dense::eigh(k.view());
        assert!((norm - lambda[lambda.len() - 1]).abs() < 1e-8 * norm);
    }

    /// TEFM over a Nyström base compresses d = 4l Nyström features to l with
    /// little loss: its error is close to Nyström's with d landmarks (TEFM
    /// cannot beat its base: `K − GGᵀ = (K − FFᵀ) + F(I − QQᵀ)Fᵀ`, both
    /// terms PSD for Nyström), and well below Nyström's with l.
    #[test]
    fn tefm_over_nystrom_keeps_the_accuracy_of_its_base() {
        let x = Array2::from_shape_fn((400, 3), |(i, j)| ((i * 37 + j * 11) % 101) as f64 / 40.0 - 1.2);
        let sigma = 1.0;
        let k = kernel_matrix(Kernel::Gaussian { sigma }, x.view()).unwrap();
        let norm = spectral_norm(&k, 1).unwrap();
        let err = |m: &MethodSpec| {
            approximation_error(&k, features_of(m, x.view(), sigma, 5).unwrap().view(), 1).unwrap().0 / norm
        };
        let nystrom = |m| MethodSpec::Nystrom {
            kernel: KernelFamily::Gaussian,
            n_landmarks: m,
            rel_tol: kapprox_features::nystrom::DEFAULT_REL_TOL,
        };
        let l = 12;
        let tefm = MethodSpec::Tefm {
            sketch: kapprox_features::tefm::TefmKind::Gaussian,
            base: TefmBase::Nystrom,
            kernel: KernelFamily::Gaussian,
            form: None,
            n_components: l,
            sketch_features: 4 * l,
            power: 1,
            strategy: kapprox_features::tefm::Strategy::OnePass,
        };
        let (small, base, compressed) = (err(&nystrom(l)), err(&nystrom(4 * l)), err(&tefm));
        let (lambda, _) = kapprox_core::dense::eigh(k.view());
        let n = lambda.len();
        let best = lambda[n - 1 - l] / lambda[n - 1];
        eprintln!(
            "Nyström l = {l}: {small:.3e}, Nyström 4l: {base:.3e}, TEFM-G over Nyström 4l -> l: {compressed:.3e}, \
             best rank l: {best:.3e}"
        );
        assert!(compressed >= base.max(best) * (1.0 - 1e-6), "TEFM {compressed} below {base} or {best}");
        assert!(compressed < 1.5 * (base + best) && compressed < 0.5 * small, "{small} {base} {best} {compressed}");
    }
}
