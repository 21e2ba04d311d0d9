//! `ridge_solve`: what choosing α and fitting cost once the statistics are
//! accumulated, against the pass that accumulates them.
//!
//! For `l` features (one target), with statistics of random Fourier
//! features of synthetic rows:
//!
//! - `select_17/l`: hold-out selection over the default 17-point α grid
//!   (`kapprox_solve::holdout`: one band reduction, a band Cholesky per α)
//!   plus the final Cholesky refit on all rows — everything `fit` does
//!   after its pass;
//! - `cholesky/l`: one dense Cholesky fit (the final refit alone);
//! - `grid_17/l`: the 17-point grid given the reduction
//!   (`AlphaPath::select`: a band Cholesky and solve per α, `Q` applied to
//!   the grid's coefficients, the held-out products), i.e. `select_17`
//!   without the reduction and the refit;
//! - `eigh/l` and `cholesky_17/l` (up to `l = 2048`): the alternatives, an
//!   eigendecomposition (the path before issue 15) and a Cholesky per α;
//! - `pass_block/l`: one 512-row block of the `Moments` update, from which
//!   the table reports the cost of a pass over 60 000 rows and the ratio
//!   `select_17 / pass(60k)` (the target is ≤ 25 % at `l = 8192`).
//!
//! `l = 8192` takes minutes and 2 GiB: set `KAPPROX_BENCH_8K=1`.
//! `cargo bench -p kapprox-solve --bench ridge_solve`.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

#[path = "../../core/benches/support/mod.rs"]
mod support;

use criterion::{BenchmarkId, Criterion};
use kapprox_core::Moments;
use kapprox_core::moments::BLOCK_ROWS;
use kapprox_solve::Ridge;
use ndarray::{Array2, s};
use std::time::{Duration, Instant};

fn sizes() -> Vec<usize> {
    let mut v = vec![1024, 2048, 4096];
    if std::env::var_os("KAPPROX_BENCH_8K").is_some() {
        v.push(8192);
    }
    v
}

/// Random Fourier features of `n` synthetic rows in 20 dimensions and a
/// noisy smooth target.
fn features(n: usize, l: usize, seed: usize) -> (Array2<f64>, Array2<f64>) {
    let unit = |i: usize| ((i.wrapping_mul(2_654_435_761) >> 7) % 10_007) as f64 / 10_007.0;
    let x = Array2::from_shape_fn((n, 20), |(i, j)| unit(i * 20 + j + seed) * 2.0 - 1.0);
    let w = Array2::from_shape_fn((20, l), |(i, j)| (unit(i * l + j + 77) - 0.5) * 6.0);
    let b = Array2::from_shape_fn((1, l), |(_, j)| unit(j + 991) * std::f64::consts::TAU);
    let scale = (2.0 / l as f64).sqrt();
    let z = (x.dot(&w) + &b).mapv(|v| scale * v.cos());
    let y = Array2::from_shape_fn((n, 1), |(i, _)| (3.0 * x[[i, 0]]).sin() + x[[i, 1]] + 0.1 * (unit(i + 5) - 0.5));
    (z, y)
}

fn moments(z: &Array2<f64>, y: &Array2<f64>) -> Moments {
    let mut m = Moments::new(z.ncols(), 1);
    m.update(z.view(), y.view());
    m.flush();
    m
}

fn bench(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    let mut g = c.benchmark_group("ridge_solve");
    g.sample_size(10).warm_up_time(Duration::from_millis(100)).measurement_time(Duration::from_secs(2));
    for l in sizes() {
        let t = Instant::now();
        let n = 2 * l + 500;
        let (z, y) = features(n, l, 1);
        let split = n * 3 / 4;
        let train = moments(&z.slice(s![..split, ..]).to_owned(), &y.slice(s![..split, ..]).to_owned());
        let val = moments(&z.slice(s![split.., ..]).to_owned(), &y.slice(s![split.., ..]).to_owned());
        let mut total = train.clone();
        total.merge(&val);
        total.flush();
        eprintln!("l = {l}: statistics of {n} rows built in {:.1} s (not timed)", t.elapsed().as_secs_f64());
        let alphas: Vec<f64> = (0..17).map(|i| n as f64 * 10f64.powf(-9.0 + 0.5 * i as f64)).collect();
        let l3 = (l as f64).powi(3);
        g.bench_function(BenchmarkId::new("select_17", l), |b| {
            support::timed(b, &format!("select_17 + refit l={l}"), 4.0 / 3.0 * l3 + l3 / 3.0, threads, || {
                let r = kapprox_solve::holdout(&train, &val, &alphas).unwrap();
                // `fit_model`, as `kapprox fit` refits: `fit` adds a condition
                // estimate and a copy of `A` that the trace bound proves needless.
                Ridge::params().with_alpha(r.best_alpha).check().unwrap().fit_model(&total).unwrap();
            })
        });
        let path = kapprox_solve::AlphaPath::from_moments(&train, true).unwrap();
        let band = path.half_bandwidth() as f64;
        let (lf, grid) = (l as f64, alphas.len() as f64);
        // Per α: the band Cholesky, its solve, `Q` and the held-out Gram.
        let grid_flops = grid * (lf * band * band + 4.0 * lf * band + 6.0 * lf * lf);
        g.bench_function(BenchmarkId::new("grid_17", l), |b| {
            support::timed(b, &format!("grid_17 l={l}"), grid_flops, threads, || {
                path.select(&val, &alphas).unwrap();
            })
        });
        drop(path);
        g.bench_function(BenchmarkId::new("cholesky", l), |b| {
            support::timed(b, &format!("cholesky l={l}"), l3 / 3.0, threads, || {
                Ridge::params().with_alpha(alphas[8]).check().unwrap().fit_model(&total).unwrap();
            })
        });
        if l <= 2048 {
            let a = total.centered().a;
            g.bench_function(BenchmarkId::new("eigh", l), |b| {
                support::timed(b, &format!("eigh (old path) l={l}"), 9.0 * l3, threads, || {
                    kapprox_core::dense::eigh(a.view());
                })
            });
            g.bench_function(BenchmarkId::new("cholesky_17", l), |b| {
                support::timed(b, &format!("17 choleskys l={l}"), 17.0 * l3 / 3.0, threads, || {
                    for &alpha in &alphas {
                        Ridge::params().with_alpha(alpha).check().unwrap().fit(&train).unwrap();
                    }
                })
            });
        }
        let zb = z.slice(s![..BLOCK_ROWS, ..]).to_owned();
        let yb = y.slice(s![..BLOCK_ROWS, ..]).to_owned();
        let mut m = Moments::new(l, 1);
        let w = (l + 2) as f64;
        g.bench_function(BenchmarkId::new("pass_block", l), |b| {
            support::timed(b, &format!("pass block l={l}"), BLOCK_ROWS as f64 * w * (w + 1.0), threads, || {
                m.update(zb.view(), yb.view());
                m.flush();
            })
        });
    }
    g.finish();
}

fn main() {
    support::main(bench);
    println!();
    println!("{:<8} {:>14} {:>16} {:>18}", "l", "select+refit s", "pass 60k rows s", "select / pass");
    for l in sizes() {
        let (Some(sel), Some(block)) = (
            support::median_seconds(&format!("select_17 + refit l={l}")),
            support::median_seconds(&format!("pass block l={l}")),
        ) else {
            continue;
        };
        let pass = block * 60_000.0 / BLOCK_ROWS as f64;
        println!("{l:<8} {sel:>14.2} {pass:>16.2} {:>17.0}%", 100.0 * sel / pass);
    }
}
