//! `update` throughput of the range sketches and the reservoir, against a
//! naive row-by-row rank-1 Gaussian sketch (the baseline the blocked GEMM
//! must beat).

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kapprox_core::{Domain, rng};
use kapprox_sketch::{RangeSketch, Reservoir, Sketch, SketchKind};
use ndarray::Array2;
use rand::Rng;
use rand_distr::StandardNormal;
use std::hint::black_box;

const N: usize = 8192;

fn rows(n: usize, d: usize) -> Array2<f64> {
    let mut a = Array2::zeros((n, d));
    for (i, mut row) in a.rows_mut().into_iter().enumerate() {
        let mut g = rng::stream(0, Domain::FEATURE_MAP_AUX, i as u64);
        row.iter_mut().for_each(|v| *v = g.sample(StandardNormal));
    }
    a
}

fn bench(c: &mut Criterion) {
    for (d, l) in [(400, 100), (2048, 512)] {
        let f = rows(N, d);
        let mut group = c.benchmark_group(format!("sketch_update/d={d}/l={l}"));
        group.throughput(Throughput::Elements(N as u64));
        group.sample_size(10);
        for kind in [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch] {
            group.bench_function(kind.to_string(), |b| {
                b.iter(|| {
                    let mut sk = Sketch::new(kind, d, l, 1).unwrap();
                    sk.update(f.view(), 0).unwrap();
                    black_box(sk.finish())
                })
            });
        }
        // The naive baseline takes ~10 s per iteration at d = 2048.
        if d <= 512 {
            group.bench_function("naive-rank1-gaussian", |b| {
                b.iter(|| {
                    let mut acc = Array2::<f64>::zeros((d, l));
                    let mut theta = vec![0.0; l];
                    for (i, row) in f.rows().into_iter().enumerate() {
                        let mut g = rng::stream(1, Domain::SKETCH_GAUSSIAN, i as u64);
                        theta.iter_mut().for_each(|t| *t = g.sample(StandardNormal));
                        for (a, &x) in acc.rows_mut().into_iter().zip(row.iter()) {
                            let mut a = a;
                            a.iter_mut().zip(&theta).for_each(|(v, &t)| *v += x * t);
                        }
                    }
                    black_box(acc)
                })
            });
        }
        group.bench_function("reservoir-k=1000", |b| {
            b.iter(|| {
                let mut r = Reservoir::new(1000, d, 1);
                r.update(f.view(), 0).unwrap();
                black_box(r.finish())
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
