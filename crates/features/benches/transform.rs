//! Rows per second of every data-independent map at
//! (d, l) = (54, 1000), (784, 4096), (4096, 16384), and Fastfood against the
//! dense map (GEMM + cos) at the acceptance sizes (784 → 1024, 8192) and
//! (4096, 16384).
//!
//! Also the kernel blocks of Nyström and exact kernel ridge
//! (`KernelColumns`: 512 rows against 1024 points in 13 dimensions) for
//! every kernel, against the entry-by-entry reference `Kernel::matrix`.
//!
//! `cargo bench -p kapprox-features --bench transform`. Construction is not
//! timed. Comp is skipped at (4096, 16384): its projection alone would be
//! 4 GiB.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kapprox_core::SparseRows;
use kapprox_features::{FeatureMap, Kernel, KernelColumns, MapKind, MapParams, OutputKind};
use ndarray::Array2;
use std::hint::black_box;
use std::time::Duration;

fn rows(n: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |(i, j)| (((i * 31 + j * 17) % 101) as f64 / 101.0 - 0.5) * 0.2)
}

fn build(kind: MapKind, d: usize, l: usize) -> Box<dyn FeatureMap> {
    let kernel =
        if kind == MapKind::Binning { Kernel::Laplacian { sigma: 1.0 } } else { Kernel::Gaussian { sigma: 1.0 } };
    let mut p = MapParams::new(kind, kernel, d, l).with_seed(1);
    if kind == MapKind::Binning {
        p = p.with_grids(256);
    }
    p.check().expect("valid").build(&Default::default()).expect("builds")
}

fn bench_maps(c: &mut Criterion) {
    for (d, l, n) in [(54usize, 1000usize, 512usize), (784, 4096, 64), (4096, 16384, 16)] {
        let mut g = c.benchmark_group(format!("transform_d{d}_l{l}"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        g.throughput(Throughput::Elements(n as u64));
        let x = rows(n, d);
        for kind in MapKind::ALL {
            if kind == MapKind::Comp && d == 4096 {
                continue;
            }
            let map = build(kind, d, l);
            match map.output_kind() {
                OutputKind::Dense => {
                    let mut out = Array2::zeros((n, l));
                    g.bench_function(BenchmarkId::new(kind.name(), "f64"), |b| {
                        b.iter(|| map.transform_into(black_box(x.view()), out.view_mut()))
                    });
                    if matches!(kind, MapKind::Rff | MapKind::Fastfood) {
                        let x32 = x.mapv(|v| v as f32);
                        let mut out32 = Array2::<f32>::zeros((n, l));
                        g.bench_function(BenchmarkId::new(kind.name(), "f32"), |b| {
                            b.iter(|| map.transform_into_f32(black_box(x32.view()), out32.view_mut()))
                        });
                    }
                }
                OutputKind::Sparse { nnz_per_row } => {
                    let mut out = SparseRows::zeros(n, nnz_per_row, l);
                    g.bench_function(BenchmarkId::new(kind.name(), "sparse"), |b| {
                        b.iter(|| map.transform_sparse_into(black_box(x.view()), out.view_mut()))
                    });
                }
            }
        }
        g.finish();
    }
}

/// Acceptance 4: Fastfood against the dense map on the same chunk.
fn bench_fastfood_vs_dense(c: &mut Criterion) {
    for (d, l, n) in [(784usize, 8192usize, 256usize), (4096, 16384, 256)] {
        let mut g = c.benchmark_group(format!("fastfood_vs_dense_d{d}_l{l}"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        g.throughput(Throughput::Elements(n as u64));
        let x = rows(n, d);
        let mut out = Array2::zeros((n, l));
        for kind in [MapKind::Fastfood, MapKind::Rff] {
            let map = build(kind, d, l);
            // The map's own memory: O(l) for Fastfood, O(l·d) for the dense map.
            eprintln!("{} (d = {d}, l = {l}): parameters {} bytes", kind.name(), map.parameter_bytes());
            g.bench_function(kind.name(), |b| b.iter(|| map.transform_into(black_box(x.view()), out.view_mut())));
        }
        g.finish();
    }
}

fn bench_kernel_blocks(c: &mut Criterion) {
    // A PMLB-sized input dimension, and the bench data's (`kapprox generate`,
    // 256 rows: one transform block of a pass).
    for (n, m, d) in [(512, 1024, 13), (256, 1024, 100)] {
        kernel_blocks(c, n, m, d);
    }
}

fn kernel_blocks(c: &mut Criterion, n: usize, m: usize, d: usize) {
    let mut g = c.benchmark_group(format!("kernel_block_n{n}_m{m}_d{d}"));
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements((n * m) as u64));
    let x = rows(n, d);
    let points = rows(m + 7, d).slice_move(ndarray::s![7.., ..]);
    let kernels = [
        Kernel::Gaussian { sigma: 0.5 },
        Kernel::Laplacian { sigma: 0.5 },
        Kernel::Cauchy { sigma: 0.5 },
        Kernel::Matern { nu: 1.5, sigma: 0.5 },
    ];
    for kernel in kernels {
        let map = KernelColumns::new(kernel, points.clone()).expect("valid");
        let mut out = Array2::zeros((n, m));
        g.bench_function(BenchmarkId::new(kernel.name(), "vectorised"), |b| {
            b.iter(|| map.transform_into(black_box(x.view()), out.view_mut()))
        });
        g.bench_function(BenchmarkId::new(kernel.name(), "entrywise"), |b| {
            b.iter(|| kernel.matrix(black_box(x.view()), points.view()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_kernel_blocks, bench_fastfood_vs_dense, bench_maps);
criterion_main!(benches);
