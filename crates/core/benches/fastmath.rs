//! Vectorised sin/cos against libm's scalar calls, on the argument range of
//! random Fourier features, and vectorised exp against libm on the range of
//! kernel blocks (`exp(−d²/2σ²)`, arguments in `[−40, 0]`).

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kapprox_core::fastmath;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let n = 4096;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.731).sin() * 30.0).collect();
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let mut g = c.benchmark_group("sincos");
    g.throughput(Throughput::Elements(n as u64));
    let (mut s, mut co) = (vec![0.0; n], vec![0.0; n]);
    g.bench_function(BenchmarkId::new("cos", "kapprox"), |b| b.iter(|| fastmath::cos_into(black_box(&x), &mut co)));
    g.bench_function(BenchmarkId::new("cos", "libm"), |b| {
        b.iter(|| black_box(&x).iter().zip(co.iter_mut()).for_each(|(&v, o)| *o = v.cos()))
    });
    g.bench_function(BenchmarkId::new("sincos", "kapprox"), |b| {
        b.iter(|| fastmath::sincos_into(black_box(&x), &mut s, &mut co))
    });
    g.bench_function(BenchmarkId::new("sincos", "libm"), |b| {
        b.iter(|| {
            for ((&v, so), c) in black_box(&x).iter().zip(s.iter_mut()).zip(co.iter_mut()) {
                (*so, *c) = v.sin_cos();
            }
        })
    });
    let (mut s32, mut c32) = (vec![0.0f32; n], vec![0.0f32; n]);
    g.bench_function(BenchmarkId::new("sincos_f32", "kapprox"), |b| {
        b.iter(|| fastmath::sincos_into_f32(black_box(&x32), &mut s32, &mut c32))
    });
    g.bench_function(BenchmarkId::new("sincos_f32", "libm"), |b| {
        b.iter(|| {
            for ((&v, so), c) in black_box(&x32).iter().zip(s32.iter_mut()).zip(c32.iter_mut()) {
                (*so, *c) = v.sin_cos();
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("exp");
    g.throughput(Throughput::Elements(n as u64));
    let xe: Vec<f64> = x.iter().map(|v| -v.abs() * 4.0 / 3.0).collect();
    let mut e = vec![0.0; n];
    g.bench_function(BenchmarkId::new("exp", "kapprox"), |b| b.iter(|| fastmath::exp_into(black_box(&xe), &mut e)));
    g.bench_function(BenchmarkId::new("exp", "libm"), |b| {
        b.iter(|| black_box(&xe).iter().zip(e.iter_mut()).for_each(|(&v, o)| *o = v.exp()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
