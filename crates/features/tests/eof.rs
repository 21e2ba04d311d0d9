//! The EOF map against references that share no code with it:
//!
//! - the RKHS inner products of the table in the module docs, by quadrature
//!   (the 1-D features must be orthonormal);
//! - the exact kernels `exp(−ω‖x − y‖₁)` and `Π(1 + ω min(x_d, y_d))`;
//! - the closed form of the truncated expansion. The level-`j` part of a 1-D
//!   kernel (`j ≥ 1`) is kernel interpolation on the dyadic grid of spacing
//!   `2^{−(j−1)}`. Both processes are Markov, so it is `k(x, y)` for points
//!   in different cells and 2-point kriging from the cell's ends within a
//!   cell. Level 0 is the projection on the even function (Laplace) or the
//!   constant (Sobolev). In `D` dimensions
//!   `z(x)ᵀz(y) = Σ_{|j|₁ ≤ n} Π_d (k_{j_d} − k_{j_d − 1})(x_d, y_d)`.

use kapprox_core::Moments;
use kapprox_features::eof::{self, Eof, EofKernel, EofSize, EofSpec};
use kapprox_features::{FeatureError, FeatureMap, Kernel, OutputKind};
use ndarray::{Array1, Array2, ArrayView1, Axis, array};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const KERNELS: [EofKernel; 2] = [EofKernel::Laplace, EofKernel::Sobolev];

fn map(kernel: EofKernel, omega: f64, d: usize, level: u32) -> Eof {
    EofSpec::level(kernel, omega, d, level).build().expect("valid spec")
}

fn exact(kernel: EofKernel, omega: f64, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
    match kernel {
        EofKernel::Laplace => (-omega * x.iter().zip(y).map(|(a, b)| (a - b).abs()).sum::<f64>()).exp(),
        EofKernel::Sobolev => x.iter().zip(y).map(|(a, b)| 1.0 + omega * a.min(*b)).product(),
    }
}

fn k1(kernel: EofKernel, omega: f64, x: f64, y: f64) -> f64 {
    exact(kernel, omega, array![x].view(), array![y].view())
}

/// The 1-D truncation `k_j(x, y)`, from the kernel alone.
fn k1_level(kernel: EofKernel, omega: f64, j: u32, x: f64, y: f64) -> f64 {
    if j == 0 {
        return match kernel {
            // ⟨k_x, c⟩ = c(x), and ‖c‖² from the norm's definition:
            // (1/2ω)∫ω²(sinh² + cosh²)(ω(t − ½))dt + c(0)² = sinh(ω)/2 + cosh²(ω/2).
            EofKernel::Laplace => {
                let c = |t: f64| (omega * (t - 0.5)).cosh();
                c(x) * c(y) / (omega.sinh() / 2.0 + (omega / 2.0).cosh().powi(2))
            }
            EofKernel::Sobolev => 1.0,
        };
    }
    let h = 0.5f64.powi(j as i32 - 1);
    let cells = 1u64 << (j - 1);
    let cell = |t: f64| ((t / h).floor() as u64).min(cells - 1);
    if cell(x) != cell(y) {
        return k1(kernel, omega, x, y);
    }
    let (a, b) = (cell(x) as f64 * h, (cell(x) + 1) as f64 * h);
    let (kaa, kab, kbb) = (k1(kernel, omega, a, a), k1(kernel, omega, a, b), k1(kernel, omega, b, b));
    let det = kaa * kbb - kab * kab;
    let (xa, xb, ya, yb) =
        (k1(kernel, omega, x, a), k1(kernel, omega, x, b), k1(kernel, omega, y, a), k1(kernel, omega, y, b));
    (xa * (kbb * ya - kab * yb) + xb * (kaa * yb - kab * ya)) / det
}

/// `Σ_{|j|₁ ≤ n} Π_d Δ_{j_d}(x_d, y_d)` by a convolution over dimensions.
fn truncated(kernel: EofKernel, omega: f64, n: u32, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
    let len = n as usize + 1;
    let mut acc = vec![0.0; len];
    acc[0] = 1.0;
    for (&xd, &yd) in x.iter().zip(y) {
        let levels: Vec<f64> = (0..len as u32).map(|j| k1_level(kernel, omega, j, xd, yd)).collect();
        let delta: Vec<f64> = (0..len).map(|j| levels[j] - if j == 0 { 0.0 } else { levels[j - 1] }).collect();
        let mut next = vec![0.0; len];
        for s in 0..len {
            for j in 0..=s {
                next[s] += acc[s - j] * delta[j];
            }
        }
        acc = next;
    }
    acc.iter().sum()
}

/// Random points in `[0, 1]^d`, a third of the coordinates snapped to the
/// dyadic grid of spacing 1/8 (0 and 1 included).
fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((n, d), |_| {
        if r.random::<f64>() < 1.0 / 3.0 { r.random_range(0..=8) as f64 / 8.0 } else { r.random::<f64>() }
    })
}

/// The regular grid of `(steps + 1)^d` points with spacing `1/steps`.
fn grid(d: usize, steps: usize) -> Array2<f64> {
    let n = (steps + 1).pow(d as u32);
    Array2::from_shape_fn((n, d), |(i, j)| ((i / (steps + 1).pow(j as u32)) % (steps + 1)) as f64 / steps as f64)
}

fn kernel_matrix(kernel: EofKernel, omega: f64, x: &Array2<f64>) -> Array2<f64> {
    Array2::from_shape_fn((x.nrows(), x.nrows()), |(i, j)| exact(kernel, omega, x.row(i), x.row(j)))
}

/// Gauss–Legendre nodes and weights on [−1, 1], 5 points.
const GL5: [(f64, f64); 5] = [
    (-0.906_179_845_938_664, 0.236_926_885_056_189_1),
    (-0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (0.0, 0.568_888_888_888_888_9),
    (0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (0.906_179_845_938_664, 0.236_926_885_056_189_1),
];

#[test]
fn one_dimensional_features_are_orthonormal_in_the_rkhs() {
    // ⟨f, g⟩ by composite Gauss–Legendre on sub-cells of the finest cells
    // (the features are smooth inside them), derivatives by central
    // differences that stay inside a sub-cell. Error ≈ 1e-9.
    let level = 5;
    let cells = 1usize << (level - 1);
    let sub = 4;
    let w = 1.0 / (cells * sub) as f64;
    let step = 1e-6;
    for kernel in KERNELS {
        for omega in [0.7, 5.0] {
            let m = map(kernel, omega, 1, level);
            let mut xs = vec![0.0, 1.0];
            let mut weights = Vec::new();
            for c in 0..cells * sub {
                for &(t, wt) in &GL5 {
                    let x = (c as f64 + 0.5 + 0.5 * t) * w;
                    xs.extend([x - step, x, x + step]);
                    weights.push(0.5 * w * wt);
                }
            }
            let z = m.transform(Array2::from_shape_vec((xs.len(), 1), xs).unwrap().view());
            let l = m.n_output();
            let mut gram = Array2::<f64>::zeros((l, l));
            let (z0, z1) = (z.row(0), z.row(1));
            for (q, &wq) in weights.iter().enumerate() {
                let (lo, mid, hi) = (z.row(2 + 3 * q), z.row(3 + 3 * q), z.row(4 + 3 * q));
                let der = (&hi - &lo) / (2.0 * step);
                for a in 0..l {
                    for b in 0..l {
                        gram[[a, b]] += wq
                            * match kernel {
                                EofKernel::Laplace => {
                                    (der[a] * der[b] + omega * omega * mid[a] * mid[b]) / (2.0 * omega)
                                }
                                EofKernel::Sobolev => der[a] * der[b] / omega,
                            };
                    }
                }
            }
            for a in 0..l {
                for b in 0..l {
                    gram[[a, b]] += match kernel {
                        EofKernel::Laplace => 0.5 * (z0[a] * z0[b] + z1[a] * z1[b]),
                        EofKernel::Sobolev => z0[a] * z0[b],
                    };
                }
            }
            let err = (&gram - &Array2::<f64>::eye(l)).iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(err < 1e-7, "{kernel:?} ω={omega}: max |G − I| = {err:e}");
        }
    }
}

#[test]
fn expansion_equals_the_closed_form_truncation() {
    for kernel in KERNELS {
        for (d, omega) in [(1, 0.5), (1, 9.0), (2, 2.0), (3, 1.0), (4, 0.3)] {
            let x = points(12, d, d as u64);
            let y = points(12, d, 100 + d as u64);
            for level in 0..=6 {
                let m = map(kernel, omega, d, level);
                let (zx, zy) = (m.transform(x.view()), m.transform(y.view()));
                for i in 0..x.nrows() {
                    for k in 0..y.nrows() {
                        let got = zx.row(i).dot(&zy.row(k));
                        let want = truncated(kernel, omega, level, x.row(i), y.row(k));
                        let scale = exact(kernel, omega, Array1::ones(d).view(), Array1::ones(d).view());
                        assert!(
                            (got - want).abs() <= 1e-12 * scale,
                            "{kernel:?} d={d} ω={omega} n={level} x={} y={}: {got} vs {want}",
                            x.row(i),
                            y.row(k)
                        );
                    }
                }
            }
        }
    }
}

/// The finest 1-D level whose grid holds `t` (only dyadic `t` are used).
fn grid_level(kernel: EofKernel, t: f64) -> u32 {
    if t == 0.0 && kernel == EofKernel::Sobolev {
        return 0;
    }
    (1..=30).find(|&j| (t * 2f64.powi(j as i32 - 1)).fract() == 0.0).expect("dyadic")
}

#[test]
fn exact_at_sparse_grid_points_boundary_included() {
    // k(·, x) lies in the span of the features when Σ_d L(x_d) ≤ n, so
    // z(x)ᵀz(y) = k(x, y) for every y. This covers the faces and corners
    // of the cube, where hats alone give zero.
    let mut r = ChaCha8Rng::seed_from_u64(3);
    for kernel in KERNELS {
        for d in 1..=3 {
            for level in [3u32, 5] {
                let m = map(kernel, 1.7, d, level);
                let y = points(10, d, 7);
                let mut checked = 0;
                for _ in 0..400 {
                    let x: Array1<f64> = (0..d).map(|_| r.random_range(0..=8) as f64 / 8.0).collect();
                    if x.iter().map(|&t| grid_level(kernel, t)).sum::<u32>() > level {
                        continue;
                    }
                    checked += 1;
                    let zx = m.transform(x.view().insert_axis(Axis(0)));
                    let zy = m.transform(y.view());
                    for row in 0..y.nrows() {
                        let got = zx.row(0).dot(&zy.row(row));
                        let want = exact(kernel, 1.7, x.view(), y.row(row));
                        assert!(
                            (got - want).abs() < 1e-12 * want.max(1.0),
                            "{kernel:?} n={level} x={x}: {got} vs {want}"
                        );
                    }
                }
                assert!(checked > 0, "no sparse-grid point drawn for d={d} n={level}");
            }
        }
    }
    // Binary rows (a corner of the cube) reproduce k(x, x) = 1 once n ≥ D.
    let m = map(EofKernel::Laplace, 1.0, 3, 3);
    let z = m.transform(array![[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]].view());
    assert!((z.row(0).dot(&z.row(0)) - 1.0).abs() < 1e-12);
    assert!((z.row(0).dot(&z.row(1)) - (-3.0f64).exp()).abs() < 1e-12);
}

#[test]
fn kernel_error_decreases_with_the_level() {
    // Max |k − zᵀz| over all pairs of a grid with 0 and 1. By Cauchy–Schwarz
    // it is the max of the diagonal error, which the nested index sets make
    // non-increasing in n. In 1-D the max is at the midpoints of the finest
    // cells (spacing 2^{−(n−1)}, all on the 1/64 grid): tanh(ω·2^{−n}) for
    // the Ornstein–Uhlenbeck bridge, ω·2^{−(n+1)} for the Brownian one.
    let omega = 1.0;
    let levels = 2..=6u32;
    // Bounds at level 6 for D = 2, 3: measured 0.0557, 0.1220 (Laplace) and
    // 0.0149, 0.0644 (Sobolev), plus 5 %.
    let bound6 = |kernel: EofKernel, d: usize| match (kernel, d) {
        (EofKernel::Laplace, 2) => 0.0585,
        (EofKernel::Laplace, _) => 0.128,
        (EofKernel::Sobolev, 2) => 0.0157,
        (EofKernel::Sobolev, _) => 0.0677,
    };
    for kernel in KERNELS {
        println!("{kernel:?}, ω = {omega}: max |k − zᵀz| on the grid (features, nnz per row)");
        for (d, steps) in [(1usize, 64usize), (2, 16), (3, 8)] {
            let x = grid(d, steps);
            let k = kernel_matrix(kernel, omega, &x);
            let mut errors = Vec::new();
            let mut line = format!("  D = {d}:");
            for level in levels.clone() {
                let m = map(kernel, omega, d, level);
                let z = m.transform(x.view());
                let err = (&k - &z.dot(&z.t())).iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let nnz = match m.output_kind() {
                    OutputKind::Sparse { nnz_per_row } => nnz_per_row,
                    OutputKind::Dense => unreachable!("EOF is sparse"),
                };
                line += &format!("  n={level}: {err:.4e} ({}, {nnz})", m.n_output());
                errors.push(err);
                if d == 1 {
                    let want = match kernel {
                        EofKernel::Laplace => (omega * 0.5f64.powi(level as i32)).tanh(),
                        EofKernel::Sobolev => omega * 0.5f64.powi(level as i32 + 1),
                    };
                    assert!((err - want).abs() < 1e-12, "{kernel:?} n={level}: {err} vs closed form {want}");
                }
            }
            println!("{line}");
            assert!(errors.windows(2).all(|w| w[1] < w[0]), "{kernel:?} D={d}: not decreasing: {errors:?}");
            if d > 1 {
                let last = *errors.last().unwrap();
                assert!(last < bound6(kernel, d), "{kernel:?} D={d}: {last} at level 6");
            }
        }
    }
}

#[test]
fn counts_match_the_formulas() {
    for d in 1..=4usize {
        for level in 0..=7u32 {
            // Brute force over (n+1)^D level vectors; w(0) = w(1) = 1, w(j) = 2^{j−2}.
            let (mut blocks, mut features) = (0u64, 0u64);
            for code in 0..(level as usize + 1).pow(d as u32) {
                let j: Vec<u32> = (0..d)
                    .map(|k| ((code / (level as usize + 1).pow(k as u32)) % (level as usize + 1)) as u32)
                    .collect();
                if j.iter().sum::<u32>() <= level {
                    blocks += 1;
                    features += j.iter().map(|&l| 1u64 << l.saturating_sub(2)).product::<u64>();
                }
            }
            let binom = (1..=d as u64).fold(1u64, |c, i| c * (level as u64 + i) / i);
            assert_eq!(blocks, binom, "C(n + D, D)");
            let m = map(EofKernel::Laplace, 1.0, d, level);
            assert_eq!(m.output_kind(), OutputKind::Sparse { nnz_per_row: binom as usize }, "d={d} n={level}");
            assert_eq!(m.n_output() as u64, features, "d={d} n={level}");
            assert_eq!(eof::nnz_at_level(d, level), binom as u128);
            assert_eq!(eof::n_features_at_level(d, level), features as u128);
            if d == 1 && level >= 1 {
                assert_eq!(features, (1 << (level - 1)) + 1);
            }
            // One entry per block: distinct columns, all in range, and
            // every column is active somewhere on a fine grid.
            let x = grid(d, if d == 1 { 256 } else { 16 });
            let sp = m.transform_sparse(x.view());
            let mut seen = vec![false; m.n_output()];
            for row in sp.indices.rows() {
                let mut cols: Vec<u32> = row.to_vec();
                cols.sort_unstable();
                assert!(cols.windows(2).all(|w| w[0] < w[1]), "duplicate column in a row");
                cols.iter().for_each(|&c| seen[c as usize] = true);
            }
            if level <= 5 {
                assert!(seen.iter().all(|&s| s), "d={d} n={level}: a column is never used");
            }
        }
    }
}

#[test]
fn sparse_rows_match_dense_rows_and_moments() {
    for spec in [
        EofSpec::level(EofKernel::Laplace, 2.0, 3, 5),
        EofSpec::budget(EofKernel::Sobolev, 1.0, 2, 40, 11),
        EofSpec::budget(EofKernel::Laplace, 0.5, 4, 200, 2),
    ] {
        let m = spec.build().unwrap();
        let x = points(50, spec.n_input, 5);
        let sp = m.transform_sparse(x.view());
        let dense = m.transform(x.view());
        assert_eq!(sp.to_dense(), dense, "{spec:?}");
        let y = Array2::from_shape_fn((50, 1), |(i, _)| i as f64 * 0.1);
        let (mut ms, mut md) = (Moments::new(m.n_output(), 1), Moments::new(m.n_output(), 1));
        ms.update_sparse(sp.view(), y.view());
        md.update(dense.view(), y.view());
        md.flush();
        let diff = &ms.augmented_gram() - &md.augmented_gram();
        assert!(diff.iter().all(|v| v.abs() < 1e-12), "{spec:?}");
    }
}

#[test]
fn far_fewer_non_zeros_than_features() {
    // A dense map with M features stores M values per row.
    for (d, level) in [(1usize, 7u32), (1, 11), (2, 7), (2, 9), (3, 7), (3, 8)] {
        let m = map(EofKernel::Laplace, 1.0, d, level);
        let nnz = m.nnz_per_row();
        println!(
            "D = {d}, n = {level}: M = {}, nnz = {nnz}, ratio {:.1}",
            m.n_output(),
            m.n_output() as f64 / nnz as f64
        );
        assert!(5 * nnz <= m.n_output(), "D={d} n={level}: {nnz} non-zeros for {} features", m.n_output());
    }
}

#[test]
fn budget_meets_m_exactly_between_two_levels() {
    let (kernel, omega, d) = (EofKernel::Laplace, 1.5, 2);
    let prev = map(kernel, omega, d, 4);
    let full = map(kernel, omega, d, 5);
    let (lo, hi) = (prev.n_output(), full.n_output());
    let x = points(200, d, 8);
    let (zp, zf) = (prev.transform(x.view()), full.transform(x.view()));
    for (budget, seed) in [(lo + 1, 0), (lo + 9, 1), (hi - 1, 2), (hi, 3)] {
        let m = EofSpec::budget(kernel, omega, d, budget, seed).build().unwrap();
        assert_eq!((m.n_output(), m.level()), (budget, 5));
        let z = m.transform(x.view());
        // Level 4's columns come first, unchanged.
        assert_eq!(z.slice(ndarray::s![.., ..lo]), zp);
        // The diagonal error lies between those of levels 5 and 4.
        for i in 0..x.nrows() {
            let k = exact(kernel, omega, x.row(i), x.row(i));
            let (e, ef, ep) =
                (k - z.row(i).dot(&z.row(i)), k - zf.row(i).dot(&zf.row(i)), k - zp.row(i).dot(&zp.row(i)));
            assert!(ef - 1e-13 <= e && e <= ep + 1e-13, "budget {budget}: {ef} ≤ {e} ≤ {ep}");
        }
        // Column 0 is the positive level-0 function, stored first; any later
        // entry in column 0 is padding and must be exactly 0.0.
        let sp = m.transform_sparse(x.view());
        let mut padded = 0;
        for (idx, val) in sp.indices.rows().into_iter().zip(sp.values.rows()) {
            assert!(idx[0] == 0 && val[0] > 0.0);
            for (&c, &v) in idx.iter().zip(val.iter()).skip(1) {
                assert!((c as usize) < budget);
                if c == 0 {
                    assert_eq!(v, 0.0);
                    padded += 1;
                }
            }
        }
        assert_eq!(padded > 0, budget < hi, "budget {budget}: {padded} padding entries");
        let nnz = m.nnz_per_row();
        assert!(nnz >= prev.nnz_per_row() && nnz <= full.nnz_per_row(), "nnz {nnz}");
    }
    // Same seed, same map; another seed, another subset.
    let a = EofSpec::budget(kernel, omega, d, lo + 9, 4).build().unwrap().transform(x.view());
    let b = EofSpec::budget(kernel, omega, d, lo + 9, 4).build().unwrap().transform(x.view());
    let c = EofSpec::budget(kernel, omega, d, lo + 9, 5).build().unwrap().transform(x.view());
    assert_eq!(a, b);
    assert_ne!(a, c);
    // A budget equal to |S_n| is the level-n map.
    let exact_fit = EofSpec::budget(kernel, omega, d, hi, 9).build().unwrap();
    assert_eq!(exact_fit.transform(x.view()), zf);
    assert_eq!(exact_fit.nnz_per_row(), full.nnz_per_row());
}

#[test]
fn kept_shell_functions_are_level_n_functions() {
    // Every column of a budget map equals some column of the level-n map
    // (on all rows): the subset picks functions, it does not mix them.
    let x = points(300, 2, 12);
    let full = map(EofKernel::Sobolev, 1.0, 2, 5).transform(x.view());
    let m = EofSpec::budget(EofKernel::Sobolev, 1.0, 2, 40, 6).build().unwrap();
    let z = m.transform(x.view());
    let mut used = vec![false; full.ncols()];
    for c in 0..z.ncols() {
        let hit = (0..full.ncols()).find(|&f| !used[f] && full.column(f) == z.column(c));
        let f = hit.unwrap_or_else(|| panic!("column {c} is no level-5 function"));
        used[f] = true;
    }
}

#[test]
fn invalid_parameters_are_refused() {
    let name = |r: Result<Eof, FeatureError>| match r {
        Err(FeatureError::InvalidParameter { name, .. }) => name,
        other => panic!("expected InvalidParameter, got {other:?}"),
    };
    for omega in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(name(EofSpec::level(EofKernel::Laplace, omega, 2, 3).build()), "omega");
    }
    assert_eq!(name(EofSpec::level(EofKernel::Sobolev, 1.0, 0, 3).build()), "n_input");
    assert_eq!(name(EofSpec::level(EofKernel::Sobolev, 1.0, 1, 33).build()), "level");
    assert_eq!(name(EofSpec::level(EofKernel::Sobolev, 1.0, 1, 200).build()), "level");
    // 2^31 + 1 features fit u32 columns, 2^32 + 1 do not.
    assert!(EofSpec::level(EofKernel::Sobolev, 1.0, 1, 32).build().is_ok());
    assert_eq!(name(EofSpec::level(EofKernel::Sobolev, 1.0, 4000, 2).build()), "level");
    assert_eq!(name(EofSpec::budget(EofKernel::Laplace, 1.0, 2, 0, 0).build()), "features");
    assert_eq!(name(EofSpec::budget(EofKernel::Laplace, 1.0, 1, usize::MAX, 0).build()), "features");
    assert!(matches!(
        EofSpec::from_kernel(Kernel::Gaussian { sigma: 1.0 }, 2, EofSize::Level(3), 0),
        Err(FeatureError::UnsupportedKernel { map: "eof", .. })
    ));
    let spec = EofSpec::from_kernel(Kernel::Laplacian { sigma: 0.25 }, 2, EofSize::Level(3), 0).unwrap();
    assert_eq!((spec.kernel, spec.omega), (EofKernel::Laplace, 4.0));
}

#[test]
fn inputs_outside_the_cube_are_clamped() {
    let m = map(EofKernel::Laplace, 2.0, 2, 5);
    let outside = m.transform(array![[-0.01, 1.2], [0.5, -3.0]].view());
    let clamped = m.transform(array![[0.0, 1.0], [0.5, 0.0]].view());
    assert_eq!(outside, clamped);
    let nan = m.transform_sparse(array![[f64::NAN, 0.5]].view());
    assert!(nan.indices.iter().all(|&c| (c as usize) < m.n_output()));
}

#[test]
fn huge_omega_keeps_full_accuracy() {
    // ω = 800 puts Π_d ψ_0(x_d) near e^{−800} at x = (½, ½, 0, 0), below
    // f64's range, and near e^{−400} at (½, 0, 1, 0): both rows take the
    // direct-product path. They are sparse-grid points (levels
    // 2 + 2 + 1 + 1 = 6 and 2 + 1 + 1 + 1 = 5), so zᵀz is exact.
    let omega = 800.0;
    let m = map(EofKernel::Laplace, omega, 4, 6);
    let x = array![[0.5, 0.5, 0.0, 0.0], [0.5, 0.0, 1.0, 0.0], [0.3, 0.7, 0.1, 0.9]];
    let z = m.transform(x.view());
    for i in 0..2 {
        for k in 0..3 {
            let want = exact(EofKernel::Laplace, omega, x.row(i), x.row(k));
            assert!((z.row(i).dot(&z.row(k)) - want).abs() < 1e-12, "rows {i}, {k}");
        }
    }
    // An off-grid row: finite, and zᵀz ≤ k(x, x) = 1.
    let d = z.row(2).dot(&z.row(2));
    assert!(z.iter().all(|v| v.is_finite()) && d > 0.0 && d <= 1.0 + 1e-12, "{d}");
    let want = truncated(EofKernel::Laplace, omega, 6, x.row(2), x.row(2));
    assert!((d - want).abs() < 1e-12, "{d} vs {want}");
}

#[test]
fn spec_round_trips_through_json() {
    let spec = EofSpec::budget(EofKernel::Sobolev, 0.5, 7, 1000, 42);
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(json, r#"{"kernel":"sobolev","omega":0.5,"n_input":7,"size":{"budget":1000},"seed":42}"#);
    assert_eq!(serde_json::from_str::<EofSpec>(&json).unwrap(), spec);
    let alias: EofSpec =
        serde_json::from_str(r#"{"kernel":"laplacian","omega":1.0,"n_input":2,"size":{"level":3},"seed":0}"#).unwrap();
    assert_eq!(alias, EofSpec::level(EofKernel::Laplace, 1.0, 2, 3));
}
