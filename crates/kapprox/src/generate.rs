//! `generate`: synthetic datasets of any size, for benchmarks and
//! out-of-core tests.
//!
//! Rows are `x ~ N(0, I_d)`. The target is a random smooth function of `x`
//! that a Gaussian kernel machine can learn and a linear model cannot: for
//! each output `t`, `f_t(x) = Σ_j a_tj cos(w_tjᵀx / s + b_tj)` with
//! `w ~ N(0, I)`, `s = √d` (so arguments have unit variance) and 16 terms.
//! Regression: `y = f_0(x) + 0.1·ε`. Classification with `K` classes:
//! `y = argmax_t f_t(x)`. Every block of 8192 rows is drawn from its own
//! addressed stream, so blocks are generated in parallel and the dataset
//! is the same whatever the thread count.

use crate::observer::{Observer, PassProgress};
use anyhow::{Result, bail};
use kapprox_core::{Domain, rng};
use kapprox_io::DatasetWriter;
use ndarray::{Array1, Array2};
use rand::Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::path::Path;

const BLOCK_ROWS: usize = 8192;
const TERMS: usize = 16;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenerateConfig {
    /// Rows.
    pub rows: u64,
    /// Feature columns.
    pub features: usize,
    /// Classes (0 = regression).
    pub classes: usize,
    /// Rows per shard.
    pub rows_per_shard: u64,
    /// Seed.
    pub seed: u64,
    /// Replace an existing output.
    pub overwrite: bool,
}

struct Target {
    w: Array2<f64>,
    a: Array1<f64>,
    b: Array1<f64>,
    outputs: usize,
}

impl Target {
    fn new(seed: u64, d: usize, outputs: usize) -> Target {
        let mut r = rng::stream(seed, Domain::GENERATE, 0);
        let m = outputs * TERMS;
        let scale = (d as f64).sqrt();
        let w = Array2::from_shape_fn((m, d), |_| r.sample::<f64, _>(StandardNormal) / scale);
        let a = Array1::from_shape_fn(m, |_| r.sample::<f64, _>(StandardNormal));
        let b = Array1::from_shape_fn(m, |_| r.random::<f64>() * std::f64::consts::TAU);
        Target { w, a, b, outputs }
    }

    fn eval(&self, x: &[f64], out: &mut [f64]) {
        for (t, o) in out.iter_mut().enumerate().take(self.outputs) {
            *o = (t * TERMS..(t + 1) * TERMS)
                .map(|j| self.a[j] * (self.w.row(j).iter().zip(x).map(|(w, x)| w * x).sum::<f64>() + self.b[j]).cos())
                .sum();
        }
    }
}

fn block(seed: u64, index: u64, rows: usize, d: usize, classes: usize, target: &Target) -> (Array2<f64>, Array1<f64>) {
    let mut r = rng::stream(seed, Domain::GENERATE, index + 1);
    let x = Array2::from_shape_fn((rows, d), |_| r.sample::<f64, _>(StandardNormal));
    let mut f = vec![0.0; target.outputs];
    let y = Array1::from_shape_fn(rows, |i| {
        target.eval(x.row(i).as_slice().expect("standard layout"), &mut f);
        if classes == 0 {
            f[0] + 0.1 * r.sample::<f64, _>(StandardNormal)
        } else {
            f.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(k, _)| k as f64).expect("classes > 0")
        }
    });
    (x, y)
}

/// Writes the dataset; returns the rows written.
pub fn generate(cfg: &GenerateConfig, out: &Path, observer: &dyn Observer) -> Result<u64> {
    if cfg.features == 0 || cfg.rows == 0 {
        bail!("generate: --rows and --features must be positive");
    }
    if cfg.classes == 1 {
        bail!("generate: --classes must be 0 (regression) or at least 2");
    }
    let names: Vec<String> = (1..=cfg.features).map(|j| format!("x{j}")).collect();
    let mut w = DatasetWriter::create(out, &names, Some("label"), cfg.rows_per_shard, cfg.overwrite)?;
    let target = Target::new(cfg.seed, cfg.features, cfg.classes.max(1));
    let n_blocks = cfg.rows.div_ceil(BLOCK_ROWS as u64);
    let progress = PassProgress::start(observer, "generate", cfg.rows);
    // Generate a few blocks per thread at a time: bounded memory, parallel work.
    let batch = (rayon::current_num_threads() * 2) as u64;
    let mut b0 = 0;
    while b0 < n_blocks {
        let b1 = (b0 + batch).min(n_blocks);
        let blocks: Vec<_> = (b0..b1)
            .into_par_iter()
            .map(|b| {
                let rows = (cfg.rows - b * BLOCK_ROWS as u64).min(BLOCK_ROWS as u64) as usize;
                block(cfg.seed, b, rows, cfg.features, cfg.classes, &target)
            })
            .collect();
        for (x, y) in blocks {
            w.push_rows(x.view(), Some(y.view()))?;
            progress.rows_done(x.nrows() as u64);
        }
        b0 = b1;
    }
    drop(progress);
    Ok(w.finish()?.rows_written)
}
