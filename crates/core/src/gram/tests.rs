use super::*;
use ndarray::{Array2, ArrayView2, ShapeBuilder, s};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random(n: usize, m: usize, seed: u64) -> Array2<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((n, m), |_| r.random_range(-1.0..1.0))
}

/// Naive `AᵀB` by a triple loop, in the kernel's order (for the bitwise
/// check) but with separate multiply and add (for the tolerance check).
fn naive_tn(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Array2<f64> {
    let mut c = Array2::zeros((a.ncols(), b.ncols()));
    for i in 0..a.ncols() {
        for j in 0..b.ncols() {
            let mut s = 0.0;
            for r in 0..a.nrows() {
                s += a[[r, i]] * b[[r, j]];
            }
            c[[i, j]] = s;
        }
    }
    c
}

/// The kernel's exact order: one FMA chain per element from zero.
fn fma_chain_tn(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Array2<f64> {
    Array2::from_shape_fn((a.ncols(), b.ncols()), |(i, j)| {
        (0..a.nrows()).fold(0.0, |t: f64, r| a[[r, i]].mul_add(b[[r, j]], t))
    })
}

fn levels() -> Vec<Simd> {
    let mut v = vec![Simd::Portable];
    for s in [Simd::Avx2Fma, Simd::Avx512] {
        if s.is_available() {
            v.push(s);
        } else {
            eprintln!("skipping the {} kernel: this CPU does not support it", s.name());
        }
    }
    v
}

fn max_rel(got: &Array2<f64>, want: &Array2<f64>) -> f64 {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    (got - want).iter().fold(0.0f64, |m, v| m.max(v.abs())) / scale
}

#[test]
fn syrk_matches_a_naive_triple_loop_at_every_level_and_edge_shape() {
    for simd in levels() {
        for &(k, n) in &[(1, 1), (3, 5), (17, 12), (40, 13), (64, 49), (9, 100), (512, 131)] {
            let a = random(k, n, (k * 1000 + n) as u64);
            let p = PackedRows::from_rows_with(simd, a.view());
            let mut c = Array2::from_elem((n, n).f(), 0.5);
            syrk_lower_add(c.view_mut(), &p, 1.0, Par::Seq);
            let naive = naive_tn(a.view(), a.view());
            let chain = fma_chain_tn(a.view(), a.view());
            for j in 0..n {
                for i in 0..n {
                    if i < j {
                        assert_eq!(c[[i, j]], 0.5, "{simd:?}: upper triangle touched at ({i}, {j})");
                    } else {
                        assert_eq!(c[[i, j]], 0.5 + chain[[i, j]], "{simd:?} ({k}, {n}): not the FMA chain");
                    }
                }
            }
            let mut lower = c.clone() - 0.5;
            for j in 0..n {
                for i in 0..j {
                    lower[[i, j]] = lower[[j, i]];
                }
            }
            let e = max_rel(&lower, &naive);
            assert!(e <= 1e-12, "{simd:?} ({k}, {n}): relative error {e}");
        }
    }
}

#[test]
fn gemm_tn_matches_a_naive_triple_loop_with_alpha() {
    for simd in levels() {
        for &(k, m, n) in &[(1, 1, 1), (5, 3, 7), (33, 40, 9), (512, 70, 129), (100, 257, 31)] {
            let a = random(k, m, 7 + k as u64);
            let b = random(k, n, 9 + n as u64);
            let (pa, pb) = (PackedRows::from_rows_with(simd, a.view()), PackedRows::from_rows_with(simd, b.view()));
            let mut c = Array2::zeros((m, n).f());
            gemm_tn_add(c.view_mut(), &pa, &pb, -0.5, Par::rayon(0));
            let want = naive_tn(a.view(), b.view()) * -0.5;
            let e = max_rel(&c, &want);
            assert!(e <= 1e-12, "{simd:?} ({k}, {m}, {n}): relative error {e}");
            assert_eq!(c, fma_chain_tn(a.view(), b.view()) * -0.5, "{simd:?}: not the FMA chain");
        }
    }
}

#[test]
fn lower_gemm_touches_only_the_lower_triangle() {
    for simd in levels() {
        let (k, m) = (64, 77);
        let a = random(k, m, 11);
        let b = random(k, m, 12);
        let (pa, pb) = (PackedRows::from_rows_with(simd, a.view()), PackedRows::from_rows_with(simd, b.view()));
        let mut c = Array2::from_elem((m, m).f(), 3.0);
        gemm_tn_lower_add(c.view_mut(), &pa, &pb, 1.0, Par::rayon(0));
        let chain = fma_chain_tn(a.view(), b.view());
        for j in 0..m {
            for i in 0..m {
                let want = if i >= j { 3.0 + chain[[i, j]] } else { 3.0 };
                assert_eq!(c[[i, j]], want, "{simd:?} ({i}, {j})");
            }
        }
    }
}

#[test]
fn results_are_bitwise_equal_across_thread_counts_and_levels() {
    let a = random(512, 301, 3);
    let b = random(512, 77, 4);
    let run = |threads: usize, simd: Simd| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let p = PackedRows::from_rows_with(simd, a.view());
            let q = PackedRows::from_rows_with(simd, b.view());
            let mut c = Array2::from_elem((301, 301).f(), 1.0);
            syrk_lower_add(c.view_mut(), &p, 1.0, Par::rayon(threads));
            let mut d = Array2::zeros((301, 77).f());
            gemm_tn_add(d.view_mut(), &p, &q, 2.0, Par::rayon(threads));
            (c, d)
        })
    };
    let reference = run(1, Simd::Portable);
    for simd in levels() {
        for threads in [1, 2, 3] {
            assert_eq!(run(threads, simd), reference, "{simd:?} on {threads} threads");
        }
    }
}

/// The f32 products: every element is the single-precision FMA chain over
/// the rows, widened, times alpha, added to C — at every level, on any
/// number of threads.
#[test]
fn f32_products_are_the_single_precision_chain_at_every_level() {
    let (k, m, n) = (300, 53, 29);
    let a = random(k, m, 21).mapv(|v| v as f32);
    let b = random(k, n, 22).mapv(|v| v as f32);
    let chain = |x: &Array2<f32>, y: &Array2<f32>| {
        Array2::from_shape_fn((x.ncols(), y.ncols()), |(i, j)| {
            (0..k).fold(0.0f32, |t, r| x[[r, i]].mul_add(y[[r, j]], t)) as f64
        })
    };
    let (want_tn, want_sq) = (chain(&a, &b) * 0.5, chain(&a, &a));
    for simd in levels() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let (pa, pb) = (PackedRows::from_rows_with(simd, a.view()), PackedRows::from_rows_with(simd, b.view()));
                let mut c = Array2::zeros((m, n).f());
                gemm_tn_add(c.view_mut(), &pa, &pb, 0.5, Par::rayon(threads));
                assert_eq!(c, want_tn, "{simd:?} on {threads} threads");
                let mut g = Array2::zeros((m, m).f());
                syrk_lower_add(g.view_mut(), &pa, 1.0, Par::rayon(threads));
                for j in 0..m {
                    for i in 0..m {
                        assert_eq!(g[[i, j]], if i >= j { want_sq[[i, j]] } else { 0.0 }, "{simd:?} ({i}, {j})");
                    }
                }
            });
        }
    }
}

#[test]
fn strided_outputs_take_the_copy_path() {
    let a = random(20, 9, 5);
    let p = PackedRows::from_rows(a.view());
    let mut row_major = Array2::zeros((9, 9));
    syrk_lower_add(row_major.view_mut(), &p, 1.0, Par::Seq);
    let mut col_major = Array2::zeros((9, 9).f());
    syrk_lower_add(col_major.view_mut(), &p, 1.0, Par::Seq);
    assert_eq!(row_major, col_major);
    // A sub-view with a column stride larger than its height.
    let mut big = Array2::zeros((12, 12).f());
    syrk_lower_add(big.slice_mut(s![1..10, 2..11]), &p, 1.0, Par::Seq);
    assert_eq!(big.slice(s![1..10, 2..11]), col_major);
}

#[test]
fn avx512_kernel_agrees_with_the_portable_one() {
    if !Simd::Avx512.is_available() {
        eprintln!("skipping: this CPU has no AVX-512F, so the AVX-512 kernel cannot run here");
        return;
    }
    let a = random(300, 61, 8);
    let mut want = Array2::zeros((61, 61).f());
    syrk_lower_add(want.view_mut(), &PackedRows::from_rows_with(Simd::Portable, a.view()), 1.0, Par::Seq);
    let mut got = Array2::zeros((61, 61).f());
    syrk_lower_add(got.view_mut(), &PackedRows::from_rows_with(Simd::Avx512, a.view()), 1.0, Par::Seq);
    assert_eq!(got, want);
}

/// An upper-triangular block over `rows` of its `n` rows (zero left of
/// the diagonal), dense below them.
fn upper_then_dense(n: usize, cols: usize, rows: usize, seed: u64) -> Array2<f64> {
    let mut a = random(n, cols, seed);
    for r in 0..rows {
        for c in 0..r.min(cols) {
            a[[r, c]] = if (r + c) % 2 == 0 { 0.0 } else { -0.0 };
        }
    }
    a
}

/// A lower-triangular block over `rows` of its `n` rows (zero right of
/// the diagonal), dense below them.
fn lower_then_dense(n: usize, cols: usize, rows: usize, seed: u64) -> Array2<f64> {
    let mut a = random(n, cols, seed);
    for r in 0..rows {
        for c in r + 1..cols {
            a[[r, c]] = 0.0;
        }
    }
    a
}

#[test]
fn triangular_left_operands_skip_their_zeros_without_changing_a_bit() {
    for simd in levels() {
        for &(n, cols, tri) in &[(7, 7, 5), (130, 97, 128), (600, 600, 598), (600, 530, 512), (1040, 300, 1040)] {
            let b_dense = random(n, cols, 3 + n as u64);
            let b_upper = upper_then_dense(n, cols, tri.min(cols), 5 + n as u64);
            let lower = lower_then_dense(n, cols, tri, 11 + n as u64);
            let upper = upper_then_dense(n, cols, tri, 13 + n as u64);
            for (a, triangle) in [(&lower, Triangle::Lower(tri)), (&upper, Triangle::Upper(tri))] {
                for (b, b_tri) in [(&b_dense, 0), (&b_upper, tri.min(cols))] {
                    let (pa, pb) =
                        (PackedRows::from_rows_with(simd, a.view()), PackedRows::from_rows_with(simd, b.view()));
                    // The dense product, and skipping.
                    let mut dense = Array2::from_elem((cols, cols).f(), 0.5);
                    gemm_tn_add(dense.view_mut(), &pa, &pb, 1.0, Par::rayon(0));
                    let mut skip = Array2::from_elem((cols, cols).f(), 0.5);
                    gemm_tn_add_triangular(skip.view_mut(), &pa, triangle, &pb, b_tri, 1.0, Par::rayon(0));
                    assert!(
                        dense.iter().zip(&skip).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{simd:?} n {n} {triangle:?} b_upper {b_tri}: skipping changed the product"
                    );
                    let err = max_rel(&skip, &(0.5 + a.t().dot(b)));
                    assert!(err < 1e-13 * n as f64, "{simd:?} n {n} {triangle:?}: error {err}");
                }
            }
        }
    }
    // The promise is the caller's; this checks that the skip is real (so
    // the bitwise check above can fail): a dense operand declared
    // triangular loses entries.
    let (a, b) = (random(600, 600, 1), random(600, 600, 2));
    let (pa, pb) = (PackedRows::from_rows(a.view()), PackedRows::from_rows(b.view()));
    for (triangle, b_upper) in [(Triangle::Lower(600), 0), (Triangle::Upper(600), 0), (Triangle::Upper(0), 600)] {
        let mut skip = Array2::zeros((600, 600).f());
        gemm_tn_add_triangular(skip.view_mut(), &pa, triangle, &pb, b_upper, 1.0, Par::Seq);
        assert!(max_rel(&skip, &a.t().dot(&b)) > 1e-3, "{triangle:?}, b_upper {b_upper}");
    }
}

#[test]
fn symmetric_products_match_the_dense_product() {
    for simd in levels() {
        for n in [7, 130, 600] {
            let g = {
                let r = random(n, n, 99);
                &r + &r.t()
            };
            let v = random(n, 37, 3);
            let gs = PackedSymmetric::from_lower_with(simd, g.view());
            let mut x = Array2::from_elem((n, 37).f(), -1.0);
            gs.symm_add(0, &PackedRows::from_rows_with(simd, v.view()), x.view_mut(), 0.5, Par::rayon(0));
            let err = max_rel(&x, &(-1.0 + 0.5 * g.dot(&v)));
            assert!(err < 1e-13 * n as f64, "{simd:?} n {n}: symm error {err}");
            // L = tril(G, -1) + diag(G)/2 packed: G = L + Lᵀ.
            let lower = PackedRows::<f64>::lower_half_of_symmetric(None, simd, g.view()).to_array();
            assert!(max_rel(&(&lower + &lower.t()), &g) == 0.0, "{simd:?} n {n}");
            assert!((0..n).all(|r| lower.row(r).iter().skip(r + 1).all(|&v| v == 0.0)));
        }
    }
}

#[test]
fn symmetric_rows_from_lower_triangles_are_the_dense_sum_packed() {
    // Layout only (no kernel runs): every level's panel width on any CPU.
    for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512] {
        // Below and above the parallel threshold.
        for n in [1, 7, 130, 300] {
            // Upper triangles of NaN (never read); the second part is the
            // corner of a larger column-major matrix (strides (1, n + 3)).
            let nan_upper = |mut g: Array2<f64>| {
                g.indexed_iter_mut().filter(|((i, j), _)| j > i).for_each(|(_, v)| *v = f64::NAN);
                g
            };
            let mut big = Array2::<f64>::zeros((n + 3, n + 3).f());
            big.assign(&nan_upper(random(n + 3, n + 3, 5)));
            let (p0, p2) = (nan_upper(random(n, n, 1)), nan_upper(random(n, n, 2)));
            let parts = [p0.view(), big.slice(s![..n, ..n]), p2.view()];
            assert!(n == 1 || parts[1].strides() == [1, (n + 3) as isize]);
            // The dense reference: lower triangles summed in part order, mirrored.
            let entry = |i: usize, j: usize| parts.iter().fold(0.0, |sum, p| sum + p[[i.max(j), i.min(j)]]);
            let want = Array2::from_shape_fn((n, n), |(i, j)| entry(i, j));
            let packed = PackedRows::<f64>::symmetric_from_lower_sum(simd, &parts);
            assert_eq!((packed.len(), packed.n_cols()), (n, n));
            assert_eq!(packed.to_array(), want, "{simd:?} n {n}");
            let one = PackedRows::<f64>::symmetric_from_lower_sum(simd, &parts[1..2]).to_array();
            assert!(one.iter().all(|v| v.is_finite()) && one == one.t(), "{simd:?} n {n}");
        }
    }
}

#[test]
fn set_rows_matches_setting_row_by_row_for_every_layout_and_selection() {
    // An empty block (capacity 0) packs an empty matrix.
    for simd in levels() {
        let empty = PackedRows::<f64>::from_rows_with(simd, Array2::<f64>::zeros((0, 5)).view());
        assert!(empty.is_empty());
    }
    // Only the layout is exercised (no kernel runs), so every level's panel
    // width is checked on any CPU: 4, 8 (f64) and 8, 16 (f32).
    for simd in [Simd::Portable, Simd::Avx2Fma, Simd::Avx512] {
        for &(n, cols, width) in &[(3, 5, 7), (300, 70, 73), (513, 200, 203), (40, 64, 64)] {
            let a = random(n, cols, 21);
            set_rows_case(simd, a.view(), width);
            set_rows_case(simd, a.mapv(|v| v as f32).view(), width);
        }
    }
}

/// `set_rows` against `set` row by row, for row- and column-major input,
/// all rows or a selection, in sequence or in parallel.
fn set_rows_case<T: Element + PartialEq>(simd: Simd, a: ArrayView2<'_, T>, width: usize) {
    let n = a.nrows();
    let af = a.t().as_standard_layout().t().to_owned(); // column-major
    let selected: Vec<usize> = (0..n).filter(|i| i % 3 != 1).rev().collect();
    for par in [Par::Seq, Par::rayon(0)] {
        for src in [a.view(), af.view()] {
            for sel in [None, Some(&selected[..])] {
                let mut want = PackedRows::<T>::with_simd(simd, width, n + 4);
                let mut got = PackedRows::<T>::with_simd(simd, width, n + 4);
                let k = sel.map_or(n, <[usize]>::len);
                want.push_rows(k + 2);
                got.push_rows(k + 2);
                for i in 0..k {
                    want.set(i + 2, 0, src.row(sel.map_or(i, |s| s[i])));
                }
                got.set_rows(2, src, sel, par);
                let what = format!("{simd:?} panel {} {n}x{} {par:?}", got.panel_width(), a.ncols());
                assert!(got.to_array() == want.to_array(), "{what}");
                // No rows, or no columns: nothing to write.
                got.set_rows(0, src.slice(s![..0, ..]), None, par);
                got.set_rows(0, src.slice(s![..2, ..0]), None, par);
                assert!(got.to_array() == want.to_array(), "{what}");
            }
        }
    }
}

#[test]
fn a_formula_packs_the_matrix_it_describes_and_non_finite_entries_are_found() {
    for simd in levels() {
        for n in [1, 9, 130] {
            let g = {
                let r = random(n, n, 5);
                &r + &r.t()
            };
            let z = random(n, 1, 6).column(0).to_owned();
            let formula = |i: usize, j: usize| g[[i, j]] - 3.0 * (z[i] * z[j]);
            let dense = Array2::from_shape_fn((n, n), |(i, j)| formula(i.max(j), i.min(j)));
            let (packed, want) = (
                PackedSymmetric::from_lower_fn(simd, n, formula),
                PackedSymmetric::from_lower_with(simd, dense.view()),
            );
            assert!(
                (0..n).all(|i| (0..n).all(|j| packed.get(i, j).to_bits() == want.get(i, j).to_bits())),
                "{simd:?} n {n}"
            );
            assert!(packed.is_finite());
            for bad in [f64::NAN, f64::INFINITY] {
                let spoilt =
                    PackedSymmetric::from_lower_fn(
                        simd,
                        n,
                        |i, j| if (i, j) == (n - 1, n / 2) { bad } else { formula(i, j) },
                    );
                assert!(!spoilt.is_finite(), "{simd:?} n {n}: {bad} not found");
            }
        }
    }
}

#[test]
fn phases_are_whole_chunks_covering_every_row_once() {
    for (k, columns) in [(0, 10), (1, 10), (KC, 5000), (3 * KC + 7, 5000), (10 * KC, 100), (10 * KC + 1, 1500)] {
        let ranges: Vec<_> = phases(k, columns, 8).collect();
        assert_eq!(ranges.iter().map(|r| r.len()).sum::<usize>(), k, "k {k}");
        let mut next = 0;
        for r in &ranges {
            assert_eq!(r.start, next, "k {k}: gap or overlap");
            assert!(r.start.is_multiple_of(KC), "k {k}: a phase starts inside a chunk");
            assert!(r.len() <= KC || r.len() * columns * 8 <= PHASE_BYTES, "k {k}: a phase beyond the limit");
            next = r.end;
        }
    }
    // Wide operands: one chunk per phase; narrow ones: one phase.
    assert_eq!(phases(3 * KC, 5000, 8).count(), 3);
    assert_eq!(phases(3 * KC, 100, 8).count(), 1);
}

/// Products over many chunks, split into one phase per chunk, are bitwise
/// the products in one phase: every kind of product and layout.
#[test]
fn products_split_into_phases_change_no_bit() {
    let k = 3 * KC + 77;
    let (a, b) = (random(k, 150, 21), random(k, 61, 22));
    let g = {
        let r = random(k, 130, 23);
        r.t().dot(&r)
    };
    let v = random(130, 29, 24);
    let run = |phase: usize, simd: Simd| {
        PHASE_BYTES_FOR_TESTS.set(phase);
        let (p, q) = (PackedRows::from_rows_with(simd, a.view()), PackedRows::from_rows_with(simd, b.view()));
        let mut c = Array2::from_elem((150, 150).f(), 0.5);
        syrk_lower_add(c.view_mut(), &p, 1.0, Par::rayon(0));
        let mut d = Array2::from_elem((150, 61).f(), -0.5);
        gemm_tn_add(d.view_mut(), &p, &q, 2.0, Par::rayon(0));
        let mut e = Array2::zeros((150, 61).f());
        gemm_tn_add_triangular(e.view_mut(), &p, Triangle::Lower(100), &q, 0, 1.0, Par::rayon(0));
        let gs = PackedSymmetric::from_lower_with(simd, g.view());
        let mut x = Array2::from_elem((130, 29).f(), 1.0);
        gs.symm_add(0, &PackedRows::from_rows_with(simd, v.view()), x.view_mut(), 0.5, Par::rayon(0));
        PHASE_BYTES_FOR_TESTS.set(PHASE_BYTES);
        (c, d, e, x)
    };
    for simd in levels() {
        let whole = run(usize::MAX, simd);
        assert_eq!(phases(k, 211, 8).count(), 1, "the reference runs in one phase");
        assert_eq!(run(1, simd), whole, "{simd:?}: one chunk per phase");
        assert_eq!(run(2 * KC * 211 * 8, simd), whole, "{simd:?}: two chunks per phase");
    }
}
