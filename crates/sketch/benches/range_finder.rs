//! `range_finder`: one-pass TEFM's range finder after its pass, step by
//! step, at the rate of the Gram kernel the pass runs.
//!
//! For `d = 4·l` base features (TEFM's default) and a Gram `A = FᵀF` in
//! memory, packed once as the fit packs it:
//!
//! - `times/l`: one product `A·Q (d, l)` (`2·d²·l` flops), the range
//!   finder's unit of work (twice at the default `q = 1`);
//! - `cholesky_qr/l`: one Cholesky QR step of a `d × l` basis, the
//!   intermediate orthonormalisation (`2·d·l² + 2·l³/3` flops: the lower
//!   Gram, the Cholesky factor and its inverse, the triangular product);
//! - `orthonormal_basis/l`: CholeskyQR2, the final basis (two steps);
//! - `sparse_start/l`: the start `A·Ωₛ` for the sparse sign test matrix
//!   (8 entries per row, `16·d²` flops) that TEFM-G uses at `q ≥ 1`, its
//!   draws included;
//! - `gram_range_finder/l`: all of it, `Ωₛ`'s draws and packings included
//!   (`16·d² + 2·d²·l + 3·(2·d·l² + 2·l³/3)` flops at `q = 1`).
//!
//! The table reports each as a fraction of the measured peak, so the
//! difference between `gram_range_finder` and its parts' sum is the cost
//! that is not arithmetic (draws, packing, first touches of new memory).
//! The projections that follow are `moments_project` in kapprox-core's
//! `ridge_accumulate`.
//!
//! `cargo bench -p kapprox-sketch --bench range_finder`.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

#[path = "../../core/benches/support/mod.rs"]
mod support;

use criterion::{BenchmarkId, Criterion};
use kapprox_core::dense::{self, gram_lower_update};
use kapprox_core::gram::{PackedRows, gemm_tn_add, gemm_tn_sparse};
use kapprox_core::{Domain, Par, rng};
use kapprox_sketch::{SketchKind, gram_range_finder_packed, sparse_sign_matrix};
use ndarray::{Array2, ShapeBuilder};
use rand::Rng;
use rand_distr::StandardNormal;
use std::hint::black_box;
use std::time::Duration;

fn gaussian(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut a = Array2::zeros((n, d));
    for (i, mut row) in a.rows_mut().into_iter().enumerate() {
        let mut g = rng::stream(seed, Domain::FEATURE_MAP_AUX, i as u64);
        row.iter_mut().for_each(|v| *v = g.sample(StandardNormal));
    }
    a
}

/// The Gram `FᵀF` of `2·d` Gaussian rows, packed as the fit packs it: a
/// well-conditioned stand-in (the products' cost does not depend on the
/// values, and Cholesky QR needs `κ(AΩ) ≲ 10⁸`).
fn packed_gram(d: usize) -> PackedRows {
    let f = gaussian(2 * d, d, 1);
    let mut lower = Array2::<f64>::zeros((d, d).f());
    gram_lower_update(lower.view_mut(), f.view(), 1.0, Par::rayon(0));
    PackedRows::<f64>::symmetric_from_lower_sum(kapprox_core::cpu::Simd::detect(), &[lower.view()])
}

fn bench(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    let par = kapprox_core::dense_par();
    let mut g = c.benchmark_group("range_finder");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4));
    for l in [512, 1024] {
        let d = 4 * l;
        let (df, lf) = (d as f64, l as f64);
        let a = packed_gram(d);
        let product = 2.0 * df * df * lf;
        let step = 2.0 * df * lf * lf + 2.0 * lf * lf * lf / 3.0;
        let y = {
            let omega = gaussian(d, l, 2);
            let mut y = Array2::<f64>::zeros((d, l).f());
            gemm_tn_add(y.view_mut(), &a, &PackedRows::from_rows(omega.view()), 1.0, Par::rayon(0));
            y
        };
        g.bench_function(BenchmarkId::new("times", l), |b| {
            let q = PackedRows::from_rows(y.view());
            let mut out = Array2::<f64>::zeros((d, l).f());
            support::timed(b, &format!("A·Q d={d} l={l}"), product, threads, || {
                gemm_tn_add(out.view_mut(), &a, &q, 1.0, Par::rayon(0));
            })
        });
        g.bench_function(BenchmarkId::new("cholesky_qr", l), |b| {
            support::timed(b, &format!("Cholesky QR step d={d} l={l}"), step, threads, || {
                black_box(dense::cholesky_qr_q(y.view(), par).expect("a well-conditioned start"));
            })
        });
        g.bench_function(BenchmarkId::new("orthonormal_basis", l), |b| {
            support::timed(b, &format!("CholeskyQR2 d={d} l={l}"), 2.0 * step, threads, || {
                black_box(dense::orthonormal_basis(y.view(), par));
            })
        });
        let start = 16.0 * df * df;
        g.bench_function(BenchmarkId::new("sparse_start", l), |b| {
            support::timed(b, &format!("A·Ωₛ d={d} l={l}"), start, threads, || {
                black_box(gemm_tn_sparse(&a, sparse_sign_matrix(d, l, 3).view()));
            })
        });
        g.bench_function(BenchmarkId::new("gram_range_finder", l), |b| {
            support::timed(b, &format!("range finder q=1 d={d} l={l}"), start + product + 3.0 * step, threads, || {
                black_box(gram_range_finder_packed(&a, SketchKind::Gaussian, l, 3, 1).expect("l ≤ d"));
            })
        });
    }
    g.finish();
}

fn main() {
    support::main(bench);
}
