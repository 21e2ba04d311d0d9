//! `ridge_accumulate`: how fast the ridge statistics accumulate, against the
//! measured FMA peak of the machine the bench runs on.
//!
//! Prints the CPU, its SIMD level and the measured f64 peak (per core and on
//! all cores), runs the criterion groups, then prints a table of median
//! GFLOP/s and the fraction of peak:
//!
//! - `moments_update/l`: one block of 512 rows into `Moments::new(l, 1)`
//!   (the augmented Gram has width `w = l + 2`; `512 · w · (w + 1)` flops),
//!   on every rayon thread;
//! - `moments_update_f32/l`: the same with `f32` features
//!   (`Moments::update_f32`), against twice the f64 peak;
//! - `faer_triangular/l`: the same product through faer's triangular GEMM
//!   split into `DENSE_SPLIT` tasks (the previous implementation), as the
//!   baseline;
//! - `tefm_sketch/l`: the product of TEFM's multi-pass product passes,
//!   `C (d, l) += F_bᵀ Y_b` with `Y_b = F_b Q` (a 512 × l block) for `d = 4l`
//!   base features (`2 · 512 · d · l` flops); the one-pass strategy's `FᵀF`
//!   is `moments_update` at `l = d`. (Before issue 15's range finder from the
//!   Gram, `Y_b` was the row sketch `Θ_b`: the same shapes.)
//! - `moments_project/…`: projecting one split part's statistics after the
//!   pass (`AffineProjection::apply`, `TᵀGT = M + Mᵀ` for `M = (LᵀT)ᵀT`):
//!   `tefm-d` by a dense `Q (d, d/4)` (`w²w' + 2ww'²` flops, `w = d + 2`,
//!   `w' = d/4 + 2`) and `nystrom-m` by an upper-triangular `N (m, m)` with
//!   an offset (`≈ w³` flops), the packing passes included.
//!
//! `l = 16384` needs 2 GiB for the Gram and about a minute: set
//! `KAPPROX_BENCH_16K=1` to include it. Run it with
//! `cargo bench -p kapprox-core --bench ridge_accumulate` on a quiet
//! machine: the peak is measured before and after the runs (the larger
//! one counts), but other load during the runs still lowers the rates.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

mod support;

use criterion::{BenchmarkId, Criterion, Throughput};
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Par};
use kapprox_core::dense::{as_faer, as_faer_mut};
use kapprox_core::gram::{PackedRows, gemm_tn_add};
use kapprox_core::moments::BLOCK_ROWS;
use kapprox_core::{AffineProjection, DENSE_SPLIT, Moments};
use ndarray::{Array1, Array2, ShapeBuilder};
use std::time::Duration;

fn sizes() -> Vec<usize> {
    let mut v = vec![512, 1024, 2048, 4096, 8192];
    if std::env::var_os("KAPPROX_BENCH_16K").is_some() {
        v.push(16384);
    }
    v
}

fn rows(n: usize, l: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, l), |(i, j)| (((i * 7919 + j * 104_729 + seed) % 1000) as f64 - 500.0) * 1e-3)
}

fn configure(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
}

/// `Moments` updates of 512-row blocks at every size, with features in
/// `f64` or (`single`) `f32`.
fn bench_moments(c: &mut Criterion, single: bool) {
    let threads = rayon::current_num_threads();
    let name = if single { "moments_update_f32" } else { "moments_update" };
    let mut g = c.benchmark_group(name);
    configure(&mut g);
    for l in sizes() {
        let w = (l + 2) as f64;
        let flops = BLOCK_ROWS as f64 * w * (w + 1.0);
        let z = rows(BLOCK_ROWS, l, 1);
        let z32 = z.mapv(|v| v as f32);
        let y = rows(BLOCK_ROWS, 1, 2);
        let mut m = Moments::new(l, 1);
        let label = format!("{name} l={l}");
        g.throughput(Throughput::Elements(flops as u64));
        g.bench_function(BenchmarkId::from_parameter(l), |b| {
            let mut step = || {
                if single {
                    m.update_f32(z32.view(), y.view());
                } else {
                    m.update(z.view(), y.view());
                }
                m.flush();
            };
            if single {
                support::timed_f32(b, &label, flops, threads, step)
            } else {
                support::timed(b, &label, flops, threads, &mut step)
            }
        });
    }
    g.finish();
}

fn bench_faer_baseline(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    let mut g = c.benchmark_group("faer_triangular");
    configure(&mut g);
    for l in sizes().into_iter().filter(|&l| l <= 4096) {
        let w = l + 2;
        let flops = BLOCK_ROWS as f64 * w as f64 * (w as f64 + 1.0);
        let a = rows(BLOCK_ROWS, w, 3);
        let mut gram = Array2::<f64>::zeros((w, w).f());
        g.throughput(Throughput::Elements(flops as u64));
        g.bench_function(BenchmarkId::from_parameter(l), |b| {
            support::timed(b, &format!("faer triangular (split {DENSE_SPLIT}) l={l}"), flops, threads, || {
                let af = as_faer(a.view());
                triangular::matmul(
                    as_faer_mut(gram.view_mut()),
                    BlockStructure::TriangularLower,
                    Accum::Add,
                    af.transpose(),
                    BlockStructure::Rectangular,
                    af,
                    BlockStructure::Rectangular,
                    1.0,
                    Par::rayon(DENSE_SPLIT),
                );
            })
        });
    }
    g.finish();
}

fn bench_tefm_sketch(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    let mut g = c.benchmark_group("tefm_sketch");
    configure(&mut g);
    for l in [256, 1024, 2048] {
        let d = 4 * l;
        let flops = 2.0 * BLOCK_ROWS as f64 * d as f64 * l as f64;
        let f = PackedRows::from_rows(rows(BLOCK_ROWS, d, 4).view());
        let theta = PackedRows::from_rows(rows(BLOCK_ROWS, l, 5).view());
        let mut acc = Array2::<f64>::zeros((d, l).f());
        g.throughput(Throughput::Elements(flops as u64));
        g.bench_function(BenchmarkId::from_parameter(l), |b| {
            support::timed(b, &format!("tefm product Fᵀ(FQ) d={d} l={l}"), flops, threads, || {
                gemm_tn_add(acc.view_mut(), &f, &theta, 1.0, Par::rayon(0));
            })
        });
    }
    g.finish();
}

fn bench_project(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    let mut g = c.benchmark_group("moments_project");
    configure(&mut g);
    for n in [1024, 2048, 4096] {
        let mut m = Moments::new(n, 1);
        m.update(rows(BLOCK_ROWS, n, 6).view(), rows(BLOCK_ROWS, 1, 7).view());
        m.flush();
        let w = (n + 2) as f64;
        let lp = n / 4;
        let wp = (lp + 2) as f64;
        let q = rows(n, lp, 8);
        let tefm = AffineProjection::new(q.view(), Array1::zeros(lp).view(), 1, Par::rayon(0));
        g.bench_function(BenchmarkId::new("tefm-d", n), |b| {
            let flops = w * w * wp + 2.0 * w * wp * wp;
            support::timed(b, &format!("project tefm d={n} l={lp}"), flops, threads, || {
                std::hint::black_box(tefm.apply(&m));
            })
        });
        let upper =
            Array2::from_shape_fn((n, n), |(i, j)| if i <= j { ((i * 13 + j * 7) % 17) as f64 - 8.0 } else { 0.0 });
        let offset = Array1::from_shape_fn(n, |j| (j % 5) as f64 * 1e-2);
        let nystrom = AffineProjection::new(upper.view(), offset.view(), 1, Par::rayon(0));
        g.bench_function(BenchmarkId::new("nystrom-m", n), |b| {
            support::timed(b, &format!("project nystrom m={n}"), w * w * w, threads, || {
                std::hint::black_box(nystrom.apply(&m));
            })
        });
    }
    g.finish();
}

fn main() {
    support::main(|c| {
        bench_moments(c, false);
        bench_moments(c, true);
        bench_faer_baseline(c);
        bench_tefm_sketch(c);
        bench_project(c);
    });
}
