//! FWHT throughput: kapprox's batched, blocked transform against the plain
//! radix-2 butterfly (the loop of the `fwht` crate), at the row lengths that
//! Fastfood and block SRHT use.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kapprox_core::fwht::fwht_rows;
use std::hint::black_box;

/// The textbook in-place butterfly, one row at a time, written as a scalar
/// loop over index pairs the way most implementations do.
fn naive_rows(data: &mut [f64], len: usize) {
    for row in data.chunks_exact_mut(len) {
        let mut h = 1;
        while h < len {
            let mut i = 0;
            while i < len {
                for j in i..i + h {
                    let (u, v) = (row[j], row[j + h]);
                    row[j] = u + v;
                    row[j + h] = u - v;
                }
                i += 2 * h;
            }
            h *= 2;
        }
    }
}

/// The plain radix-2 butterfly over slices (what kapprox had before): the
/// stages of span ≥ 4 auto-vectorise, the first two do not.
fn butterfly_rows(data: &mut [f64], len: usize) {
    for row in data.chunks_exact_mut(len) {
        let mut h = 1;
        while h < len {
            for block in row.chunks_exact_mut(2 * h) {
                let (lo, hi) = block.split_at_mut(h);
                for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
                    let (u, v) = (*a, *b);
                    *a = u + v;
                    *b = u - v;
                }
            }
            h *= 2;
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("fwht");
    // (row length, rows): a chunk of 64 rows for Fastfood sizes, one long
    // vector for block SRHT.
    for (len, rows) in [(64usize, 1024usize), (1024, 64), (4096, 16), (16384, 4), (1 << 20, 1)] {
        let n = len * rows;
        g.throughput(Throughput::Elements(n as u64));
        let data: Vec<f64> = (0..n).map(|i| (i % 97) as f64 * 1e-3).collect();
        let mut buf = data.clone();
        let id = format!("{len}x{rows}");
        g.bench_with_input(BenchmarkId::new("kapprox_f64", &id), &len, |b, &len| {
            b.iter(|| fwht_rows(black_box(&mut buf), len))
        });
        let mut buf32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
        g.bench_with_input(BenchmarkId::new("kapprox_f32", &id), &len, |b, &len| {
            b.iter(|| fwht_rows(black_box(&mut buf32), len))
        });
        g.bench_with_input(BenchmarkId::new("naive_f64", &id), &len, |b, &len| {
            b.iter(|| naive_rows(black_box(&mut buf), len))
        });
        g.bench_with_input(BenchmarkId::new("butterfly_f64", &id), &len, |b, &len| {
            b.iter(|| butterfly_rows(black_box(&mut buf), len))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
