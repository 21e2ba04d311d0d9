//! Entropic optimal features (EOF; Ding, Tuo & Shahrampour, NeurIPS 2020,
//! paper 002): deterministic, sparse, orthonormal features with compact
//! and nested supports for two product kernels on the unit cube `[0, 1]^D`.
//!
//! | kernel | `k(x, y)` | 1-D RKHS norm `‖f‖²_k` |
//! |---|---|---|
//! | [`EofKernel::Laplace`] | `exp(−ω‖x − y‖₁)` | `(1/(2ω))·∫₀¹ (f'² + ω² f²) + (f(0)² + f(1)²)/2` |
//! | [`EofKernel::Sobolev`] | `Π_d (1 + ω·min(x_d, y_d))` | `f(0)² + (1/ω)·∫₀¹ f'²` |
//!
//! The map is [`Eof`], built from an [`EofSpec`] (kernel, `ω`, `D`, basis,
//! level or feature budget, subset rule, seed). Its output is sparse
//! ([`OutputKind::Sparse`]): one stored entry per level multi-index, the
//! same ELL layout and accumulation path as random binning.
//!
//! Three bases (see "Bases" below), all orthonormal in the RKHS:
//! [`EofBasis::Centred`] (the default) roots the hierarchy at `k(·, ½)` and
//! puts two boundary half-hats at level 1: complete, exact on the faces of
//! the cube, and nearly as sparse as the paper's; [`EofBasis::Boundary`]
//! adds two boundary functions per dimension to the paper's hats: complete,
//! exact on the faces, but nearly dense in high dimension;
//! [`EofBasis::Paper`] is the paper's hats-only set `S_n^*`, sparse but zero
//! on the faces.
//!
//! # Derivation
//!
//! **RKHS norms.** Both 1-D kernels have the form `p(min(x, y))·q(max(x, y))`
//! (the paper's Condition 1), the Green's function of a Sturm–Liouville
//! operator: `k_y = k(·, y)` solves `k_y'' = ω² k_y` (Laplace) or
//! `k_y'' = 0` (Sobolev) on both sides of `y`, and its slope jumps by
//! `−2ω` (Laplace) or `−ω` (Sobolev) at `y`. The norms of the table are
//! checked by the reproducing property. For Laplace, integrating by parts on
//! `[0, y]` and `[y, 1]`,
//! `∫(f'k_y' + ω² f k_y) = [f k_y']₀^{y⁻} + [f k_y']_{y⁺}^1 = 2ω f(y) − ω f(0) k_y(0) − ω f(1) k_y(1)`
//! (as `k_y'(0) = ω k_y(0)` and `k_y'(1) = −ω k_y(1)`), so the boundary term
//! `(f(0) k_y(0) + f(1) k_y(1))/2` completes `⟨f, k_y⟩ = f(y)`. For Sobolev,
//! `⟨f, k_y⟩ = f(0)·1 + (1/ω)∫₀^y f'·ω = f(y)`.
//!
//! **The hat identity.** Let `φ` be supported on `[a, b] = [c − h, c + h]`
//! inside `[0, 1]`, `φ(c) = 1`, and solve the homogeneous equation on each
//! half (`φ'' = ω²φ`, resp. `φ'' = 0`): the Laplace "exponential hat"
//! `φ(x) = sinh(ω(h − |x − c|))/sinh(ωh)` (the paper's eq. (4)), the
//! Sobolev hat `φ(x) = 1 − |x − c|/h`. Integrating by parts on both halves
//! (the boundary terms of the norm vanish since `φ(0) = φ(1) = 0`) gives,
//! for every `f` of the RKHS,
//!
//! `⟨f, φ⟩_k = α_h·f(c) − β_h·(f(a) + f(b))`,
//! Laplace: `α_h = coth(ωh)`, `β_h = 1/(2 sinh(ωh))`;
//! Sobolev: `α_h = 2/(ωh)`, `β_h = 1/(ωh)`.
//!
//! Hence (1) `‖φ‖²_k = α_h`: **`coth(ωh)`** for Laplace (the paper's
//! constant `C = sinh(ω2^{−l}) = 1/‖φ‖²` approximates the exact
//! `tanh(ω2^{−l})` to first order only; they differ by `O((ωh)³)`), `2/(ωh)`
//! for Sobolev. (2) `φ ⟂ g` for every `g` that solves the homogeneous
//! equation on `[a, b]`: then `g(c) = (g(a) + g(b))/(2 cosh(ωh))`, resp.
//! `(g(a) + g(b))/2`, and `α_h g(c) = β_h (g(a) + g(b))`. A hat of a coarser
//! level is such a `g` (its kinks lie on the coarser grid, never at `c`), and
//! so are the boundary functions below; hats of one level have disjoint
//! supports. So the whole basis is orthogonal: the paper's Theorem 1, with
//! the constants worked out.
//!
//! **1-D levels (boundary basis).** Level `j` holds:
//! - `j = 0`, one function that is positive everywhere. Laplace: the even
//!   `ψ_0 = cosh(ω(x − ½))/√(cosh(ω/2)·e^{ω/2})`. Sobolev: `ψ_0 = 1 = k(·, 0)`.
//! - `j = 1`, one function. Laplace: the odd
//!   `ψ_1 = sinh(ω(x − ½))/√(sinh(ω/2)·e^{ω/2})`. Sobolev: `ψ_1 = √ω·x`.
//!   Levels 0 and 1 span `{k(·, 0), k(·, 1)}`, the functions that solve the
//!   homogeneous equation on all of `[0, 1]`: these are the boundary
//!   functions without which a row on a face of the cube (a binary column at
//!   0 or 1) maps to zero. For such `g`, `‖g‖² = (g(1)g'(1) − g(0)g'(0))/(2ω)
//!   + (g(0)² + g(1)²)/2` (Laplace), which gives the two norms; the even and
//!   odd functions are orthogonal by the reflection `x ↦ 1 − x`. For
//!   Sobolev, `⟨1, x⟩ = 0` and `‖x‖² = 1/ω`.
//! - `j ≥ 2`, the `2^{j−2}` hats of half-width `h = 2^{−(j−1)}` centred at
//!   `(2i + 1)h`, `i = 0..2^{j−2}`, divided by their norm:
//!   Laplace `√tanh(ωh)·sinh(ω(h − |x − c|))/sinh(ωh)`, Sobolev
//!   `√(ωh/2)·(1 − |x − c|/h)`. Level `j` is the paper's level `j − 1`.
//!
//! Levels `≤ j` (for `j ≥ 1`) span the functions that solve the
//! homogeneous equation between the points of the dyadic grid
//! `G_j = {i·2^{−(j−1)}}`, i.e. `span{k(·, z) : z ∈ G_j}`. So the level-`j`
//! truncation `k_j(x, y) = Σ ψ(x)ψ(y)` is the orthogonal projection onto
//! that span: kernel interpolation on `G_j` (Nyström with landmarks `G_j`).
//! It is exact when `x` or `y` lies on `G_j`, and `k − k_j` is the
//! covariance of the Gaussian process with covariance `k` conditioned on
//! `G_j`: an Ornstein–Uhlenbeck bridge (Laplace) or `ω` times a Brownian
//! bridge (Sobolev) on each cell. Its maximum, at cell midpoints, is
//! `tanh(ω·2^{−j})` (Laplace) and `ω·2^{−(j+1)}` (Sobolev). For Sobolev
//! this is the Lévy–Ciesielski construction of Brownian motion.
//!
//! **1-D levels (centred basis).** The same construction from the other
//! end: the nested kriging spaces `V_j = span{k(·, z) : z ∈ G_j}` with
//! `G_0 = {½}` and, for `j ≥ 1`, `G_j` the dyadic grid of spacing `2^{−j}`
//! (0 and 1 included), and level `j` the orthogonal increment
//! `V_j ⊖ V_{j−1}`, i.e. the functions of `V_j` that vanish on `G_{j−1}`
//! (`⟨f, k(·, z)⟩ = f(z)`). Level `j` holds:
//! - `j = 0`: `ψ_0 = k(·, ½)/√k(½, ½)`, positive everywhere: Laplace
//!   `e^{−ω|x − ½|}`, Sobolev `(1 + ω·min(x, ½))/√(1 + ω/2)`;
//! - `j = 1`: the two half-hats, zero at ½ and homogeneous on `[0, ½]`
//!   (`L`, with `L(0) = 1`) and on `[½, 1]` (`R`, `R(1) = 1`). Laplace
//!   `sinh(ω|x − ½|)/sinh(ω/2)` on its half, `‖L‖² = ‖R‖² = 1/(1 − e^{−ω})`
//!   (integrate by parts: `(coth(ω/2) + 1)/2`); Sobolev `1 − 2x` with
//!   `‖L‖² = 1 + 2/ω` and `2x − 1` with `‖R‖² = 2/ω`. Their supports are
//!   disjoint, so exactly one is active at any `x ≠ ½`, and they are
//!   orthogonal to `ψ_0` because they vanish at ½;
//! - `j ≥ 2`: the `2^{j−1}` hats of half-width `2^{−j}` (the boundary
//!   basis's level `j + 1`), orthogonal to everything coarser by the hat
//!   identity, since `ψ_0`, `L` and `R` are homogeneous on every hat's
//!   support.
//!
//! Levels `≤ j` span `V_j`, so the truncation is again kriging on a dyadic
//! grid (spacing `2^{−j}`, one level finer than the boundary basis at the
//! same `j`), exact on `G_j`, faces included. What changes is the shape of
//! the index set: the boundary basis has two one-function levels before
//! the first hat, the centred basis one, and its level 1 already has two
//! functions with half the cube each. Level sizes are `1, 2, 2, 4, 8, …`
//! (boundary: `1, 1, 1, 2, 4, …`; paper: `1, 2, 4, 8, …` from its level 1),
//! which is what decides sparsity in many dimensions (see "Counts").
//!
//! **D dimensions.** `k` is a product of 1-D kernels, so its RKHS is the
//! tensor product and the products `ψ_{j,i}(x) = Π_d ψ_{j_d,i_d}(x_d)` are
//! an orthonormal basis. The map keeps the sparse grid
//! `S_n = {(j, i) : j ∈ ℕ₀^D, |j|₁ ≤ n}` and sets `z(x) = (ψ_{j,i}(x))`, so
//! `z(x)ᵀz(y) = Σ_{|j|₁ ≤ n} Π_d Δ_{j_d}(x_d, y_d)` with
//! `Δ_j = k_j − k_{j−1}` the 1-D level increments: a truncated orthonormal
//! expansion of `k`, exact when `x` is a sparse-grid point (every
//! coordinate on `G_{L_d}` with `Σ_d L_d ≤ n`).
//!
//! **Why levels 0 and 1 hold one function each.** At any `x` exactly one
//! function of each 1-D level is non-zero, so a row has exactly one entry
//! per level multi-index `j`, and the coarsest block `j = 0` is a single
//! feature. (Both boundary functions at one level would put `2^D` features
//! in that block.) Blocks with few non-zero coordinates come first, like an
//! ANOVA decomposition.
//!
//! **Counts.** With `w(0) = w(1) = 1` and `w(j) = 2^{j−2}` functions per
//! level:
//! - non-zeros per row: `nnz = #{j ∈ ℕ₀^D : |j|₁ ≤ n} = C(n + D, D)`;
//! - features: `|S_n| = Σ_{|j|₁ ≤ n} Π_d w(j_d)`, the sum of the
//!   coefficients of `t^0..t^n` in `W(t)^D` with
//!   `W(t) = (1 − t − t²)/(1 − 2t)`. In one dimension that is `2^{n−1} + 1`
//!   for `n ≥ 1`, the points of `G_n`.
//!
//! | D | n = 2 | n = 4 | n = 6 | n = 7 | n = 8 |
//! |---|---|---|---|---|---|
//! | 1 | 3 / 3 | 9 / 5 | 33 / 7 | 65 / 8 | 129 / 9 |
//! | 2 | 6 / 6 | 25 / 15 | 113 / 28 | 241 / 36 | 513 / 45 |
//! | 3 | 10 / 10 | 53 / 35 | 279 / 84 | 633 / 120 | 1425 / 165 |
//! | 8 | 45 / 45 | 583 / 495 | 5423 / 3003 | 15543 / 6435 | 43258 / 12870 |
//!
//! (features / non-zeros per row, boundary basis). The ratio grows like
//! `2^n/n`. Because the boundary functions and the first hat are non-zero
//! almost everywhere, low levels in many dimensions are barely sparse: at
//! `D = 21`, `|S_3| = 2045` features take `C(24, 3) = 2024` entries per row.
//!
//! The centred basis has the same `C(n + D, D)` entries per row and
//! `W(t) = 1 + 2t + 2t² + 4t³ + … = (1 − 2t²)/(1 − 2t)`: in one dimension
//! `2^n + 1` features (the points of `G_n`); at `D = 21`, `|S_2| = 925`
//! with 253 entries per row and `|S_3| = 13329` with 2024, a ratio of 6.6
//! at level 3 where the boundary basis has 1.0 (and the paper's 7.5 at its
//! level 4, the same entries per row).
//!
//! # Bases
//!
//! [`EofBasis::Centred`] and [`EofBasis::Boundary`] are the two complete
//! bases above: the same kernel, the same kind of truncation (kriging on a
//! sparse grid of the cube, faces included), different index sets. On the
//! shipped CPU data (`D = 21`, 88 % of the min–max scaled rows on a face,
//! Laplace kernel, `kapprox experiment eof-sparsity`, 3 seeds):
//!
//! | basis, subset | M = 1024: density, test RMSE | M = 2048: density, test RMSE |
//! |---|---|---|
//! | centred, nested (default) | 25.7 %, 2.47 | 18.8 %, 2.46 |
//! | centred, uniform | 14.0 %, 2.52 | 13.9 %, 2.36 |
//! | boundary, nested | 95.2 %, 2.98 | 94.6 %, 2.28 |
//! | paper, uniform | 1.6 %, 20.88 (the training mean) | 1.5 %, 20.88 |
//! | dense: RKS (Laplacian) | 100 %, 2.34 | 100 %, 2.31 |
//! | dense: Nyström (Laplacian) | 100 %, 2.21 | 100 %, 2.17 |
//!
//! (exact Laplacian kernel ridge: 2.19). The centred basis buys the
//! paper's sparsity with a small loss against the boundary basis at
//! `M = 2048`; the paper basis cannot see the rows on the faces.
//!
//! None of them approximates `K` itself well in 21 dimensions at this `M`:
//! `kapprox kernel-error` at `σ = 4` (the selected one) on the 6554
//! training rows gives `‖K − ZZᵀ‖₂/‖K‖₂` = 0.76 (centred, nested), 0.95
//! (centred, uniform), 0.26 (boundary), against 0.020 for Laplacian RFF.
//! With `ω = 1/4` every 1-D factor is close to its level-0 part, and the
//! product over 21 coordinates puts most of `K`'s mass in interactions of
//! many coordinates, which a sparse grid of level 3 or 4 leaves out (the
//! boundary basis keeps more of them: its one-function levels are cheap
//! breadth, the centred basis's two-function levels are resolution).
//! Ridge needs the function space, not `K`, and the test errors above show
//! that the low-order part carries this data.
//!
//! [`EofBasis::Paper`] is the paper's: hats only, the paper's level `l ≥ 1` holding the `2^{l−1}` hats
//! of half-width `2^{−l}` (the boundary basis's level `j = l + 1`, with the
//! same exact normalisation `√tanh(ω2^{−l})`, resp. `√(ω2^{−l}/2)`), and
//! at level `n ≥ 1` the index set `S_n^* = {(l, i) : l ≥ 1, |l|₁ ≤ n + D − 1}`.
//! Paper level 1 is the single hat on `[0, 1]`, and `S_1^*` is the one
//! product of those hats. Inside the boundary basis's tree this is the part
//! of `{|j|₁ ≤ n + 2D − 1}` with every `j_d ≥ 2`.
//!
//! **What it expands.** Every hat vanishes at 0 and 1, so the hats span the
//! subspace `H_0 = {f : f(0) = f(1) = 0}` of the 1-D RKHS, and the paper's
//! Theorem 1 (the hats are a basis of all of `H_k`) does not hold: the
//! boundary functions are orthogonal to every hat. The reproducing kernel
//! of `H_0` is `k_0 = k − k_1`, with `k_1` the projection on the boundary
//! functions (2-point kriging from 0 and 1): the Ornstein–Uhlenbeck bridge
//! pinned at both ends (Laplace), `ω(min(x, y) − xy)` (Sobolev). As the
//! level grows, `z(x)ᵀz(y)` converges to `Π_d k_0(x_d, y_d)`, not to `k`.
//! Consequences:
//! - a row with any coordinate at 0 or 1 (after clamping) maps to the zero
//!   vector, whatever the level: binary columns and min–max scaled columns
//!   at their training minimum or maximum erase the whole row;
//! - inside the cube the gap is exponentially small in the distance to the
//!   faces: for Laplace, `|k − Π_d k_0| ≤ D·β` on `[δ, 1 − δ]^D` with
//!   `β = (e^{−2ωδ} + e^{−2ω(1−δ)})/(1 − e^{−ω})` (telescoping the product,
//!   as `|k|, |k_0| ≤ 1` and `|k_1(x, y)|² ≤ k_1(x, x)k_1(y, y)`,
//!   `k_1(x, x) ≤ ‖(k(x, 0), k(x, 1))‖²/λ_min`). So the paper's regime,
//!   `ω = 1/σ` large on data away from the faces, hides the defect;
//! - every paper feature is a product of `D` hats, one per coordinate, so
//!   none is constant along a coordinate (the complete bases' `ψ_0` plays
//!   that part): functions of a few coordinates (additive, low-order ANOVA
//!   terms) are outside the span, and in many dimensions every feature
//!   carries the common factor `Π_d hat(x_d)`, which varies by orders of
//!   magnitude between rows. On the shipped CPU data (`D = 21`, 88 % of the
//!   min–max scaled rows on a face) ridge on paper features learns nothing,
//!   even with every row moved off the faces: test RMSE 20.8 against 20.9
//!   for the training mean, where the boundary basis reaches 2.28, Laplacian
//!   RFF 2.29 and exact kernel ridge 2.19 at `M = 2048`
//!   (`cpu_data_measurement` in `tests/eof.rs`);
//! - the paper's constant `C = Π sinh(ω2^{−l_d})` is again the first-order
//!   approximation of the exact `Π tanh(ω2^{−l_d})` used here.
//!
//! **Counts (paper).** The multi-indices `l − 1 ∈ ℕ₀^D` with
//! `|l − 1|₁ = s ≤ n − 1` number `C(s + D − 1, D − 1)`, each a block of
//! `2^s` hats:
//! - non-zeros per row: `nnz = C(n + D − 1, D)` (the paper's count);
//! - features: `|S_n^*| = Σ_{s=0}^{n−1} 2^s·C(s + D − 1, D − 1)`; in one
//!   dimension `2^n − 1`, the interior points of the grid of spacing `2^{−n}`.
//!
//! | D | n = 1 | n = 2 | n = 3 | n = 4 | n = 5 | n = 6 |
//! |---|---|---|---|---|---|---|
//! | 1 | 1 / 1 | 3 / 2 | 7 / 3 | 15 / 4 | 31 / 5 | 63 / 6 |
//! | 2 | 1 / 1 | 5 / 3 | 17 / 6 | 49 / 10 | 129 / 15 | 321 / 21 |
//! | 3 | 1 / 1 | 7 / 4 | 31 / 10 | 111 / 20 | 351 / 35 | 1023 / 56 |
//! | 8 | 1 / 1 | 17 / 9 | 161 / 45 | 1121 / 165 | 6401 / 495 | 31745 / 1287 |
//! | 21 | 1 / 1 | 43 / 22 | 967 / 253 | 15135 / 2024 | 185151 / 12650 | 1885311 / 65780 |
//!
//! At equal level the ratio features / non-zeros is `|S_n^*|/C(n+D−1, D)`
//! (7.5 at `D = 21`, `n = 4`), against about 1 for the boundary basis at
//! the same `M`, because the boundary basis spends its first `C(n + D, D)`
//! features on blocks of one function each.
//!
//! # Columns
//!
//! Blocks `j` are ordered by `|j|₁`, then lexicographically by the list
//! `((d₁, j_{d₁}), (d₂, j_{d₂}), …)` of their non-zero coordinates
//! (`d₁ < d₂ < …`; pairs compare by dimension, then level). Within a block,
//! the feature with hat indices `i_d` has the column
//! `offset(j) + Σ_d i_d·Π_{d' > d} w(j_{d'})`. All block sizes are powers of
//! two, so this sum is a concatenation of bit fields. The columns of level
//! `n − 1` are a prefix of those of level `n`. The paper basis numbers its
//! blocks the same way in `l − 1`.
//!
//! # Feature budget
//!
//! [`EofSize::Budget`]`(M)` takes the smallest level `n` with `|S_n| ≥ M`,
//! i.e. `|S_{n−1}| < M ≤ |S_n|` (the paper's rule), and keeps exactly `M`
//! of its functions. Which ones is the [`EofSubset`]:
//! - [`EofSubset::Nested`] (the default, both bases) keeps all of `S_{n−1}`
//!   (columns `0..|S_{n−1}|`, as above) and a uniformly random subset of
//!   `M − |S_{n−1}|` functions of the last shell `S_n \ S_{n−1}`.
//! - [`EofSubset::Uniform`] keeps a uniformly random subset of `M`
//!   functions of all of `S_n`: the paper's experiment (section 7).
//!
//! Nested is the default because it is what the paper's own criterion
//! asks for: the entropic design maximises `Σ_{S} C_{l,i}` over `|S| ≤ M`,
//! and every function of `S_{n−1}` has a larger weight `C = 1/‖φ‖²` than
//! every function of the last shell. So the nested set is the knapsack
//! optimum up to ties within the shell, and its kernel error is never worse
//! than at level `n − 1`. A uniform subset instead drops each coarse
//! function, the ones carrying most of the kernel, with probability
//! `1 − M/|S_n|` (already the single `j = 0` function of a complete
//! basis). What a uniform subset gains is sparsity, for the same reason:
//! the dropped coarse functions are the ones that are non-zero on many
//! rows (see "Sparse layout" below). On the CPU data the boundary basis
//! gives test RMSE 2.28 (nested) and 2.32 (uniform) at `M = 2048`, 3.37
//! and 3.43 at `M = 512` (means over 3 seeds; at `M = 1024` the seeds
//! spread by ±0.6 under both rules); the centred basis 2.46 (nested, 18.8 %
//! dense) and 2.36 (uniform, 13.9 % dense) at `M = 2048`.
//!
//! Kept functions take the columns `start, start + 1, …` in the order of
//! their level-`n` columns, with `start = |S_{n−1}|` (nested) or 0
//! (uniform). The subset is a pure function of the seed: Floyd's algorithm,
//! drawing from `rng::stream(seed, Domain::FEATURE_MAP, 0xE0F << 48)`
//! (EOF's range of the feature-map streams). A budget equal to `|S_n|` is
//! the level-`n` map under either rule.
//!
//! # Sparse layout and cost
//!
//! A row stores one slot per *emitted* block: a block with at least one
//! kept function. [`Eof::nnz_per_row`] (the ELL width `k` of
//! [`OutputKind::Sparse`]) is that slot count, fixed per map. A row whose
//! active function in an emitted block was not drawn has nothing to store
//! there: the slot holds the padding `(0, 0.0)`. Each row is compacted: its
//! true entries come first, in block order, and the padding fills the tail.
//! So the slots bound the true non-zeros, and
//! - [`Eof::expected_nnz`] is the mean number of true entries per row for
//!   `x` uniform on the cube: `Σ_{emitted b} kept_b / size_b`, since the
//!   functions of one block tile the cube in cells of equal volume. For a
//!   level (no subset) it is the block count; for a uniform subset its mean
//!   over seeds is `M·(blocks of S_n)/|S_n|`, as every function is kept
//!   with probability `M/|S_n|` (`M·2024/15135 ≈ M/7.5` for the paper basis
//!   at `D = 21`, `n = 4`);
//! - [`Eof::count_nonzeros`] measures the non-zero values on given rows
//!   (the truth for a data set: e.g. a paper-basis row on a face has none).
//!
//! The slot count is what consumers pay. `kapprox_core::Moments::update_sparse`
//! touches `k(k + 1)/2` Gram entries per row, padding included (a padded
//! entry adds exact zeros), so a uniform subset at `D = 21`, `M = 2000`,
//! paper basis, pays for about 1300 slots to accumulate about 270 true
//! non-zeros. A fixed `k` smaller than the slots would need the maximum of
//! the true non-zeros over all of the cube, which depends on the subset and
//! has no closed form; hence padding. The compaction is what lets a
//! consumer skip it cheaply (stop at the first padded slot, or drop zero
//! values before the pairwise loop), making the cost (true nnz)². The
//! kapprox pipeline accumulates sparse rows only when `16·k ≤ M` and
//! otherwise densifies them for the GEMM (`sparse_pays` in
//! `crates/kapprox/src/fit/passes.rs`), so at `D = 21` and `M ≈ 2000` every
//! EOF map above takes the dense path: the sparsity shows in memory and in
//! `nnz(F)`, not yet in the solver.
//!
//! # Inputs
//!
//! The map assumes inputs in `[0, 1]`. The pipeline min–max scales each
//! column with stored training statistics, so new rows can fall slightly
//! outside. Coordinates are clamped to `[0, 1]`, which evaluates the
//! features (and the approximated kernel) at the nearest point of the cube.
//! A NaN coordinate gives NaN values, with valid column indices.
//!
//! Cost per row: `D·(n + 1)` (centred, boundary) or `D·n` (paper) 1-D evaluations
//! (for Laplace two exponentials each), then one multiplication, shift and OR per block of the table (the
//! emitted blocks and their ancestors), and one rank lookup per emitted
//! block in the subset's range. There is no search and no allocation per
//! row; scratch is per call.
//!
//! # Numerics
//!
//! A block's value is its parent's times one 1-D ratio `ψ_{j_d}/ψ_0`, where
//! `ψ_0` is the level-0 function of the basis: `k(·, ½)/√k(½, ½)`
//! (centred), the even boundary function (boundary, Laplace), the constant
//! 1 (boundary, Sobolev: no division), or the hat on `[0, 1]` (paper).
//! `ψ_0 > 0` inside the cube; the paper's hat is 0 on the faces, and there
//! every paper feature is 0, which the transform writes directly. For
//! Laplace every `|ψ| ≤ 1`, so each partial product is itself a feature
//! value and cannot overflow. When `Π_d ψ_0(x_d) < 10^{−150}` (centred and
//! boundary: `ω·D` in the hundreds; paper: also rows very close to a face)
//! that product could underflow while finer blocks stay representable. Such rows take direct products over all `D`
//! coordinates (`O(D)` per block) instead.

mod basis;
mod grid;

use crate::error::{FeatureError, Result};
use crate::kernel::Kernel;
use crate::map::{FeatureMap, OutputKind};
use crate::spec::MapSpec;
use basis::Basis1d;
use grid::{Block, Levels, Subset};
use kapprox_core::sparse::SparseRowsViewMut;
use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use serde::{Deserialize, Serialize};

/// The finest admissible level: `|S_n| ≥ 2^{n−1} + 1` must fit `u32` column
/// indices, which already fails at `n = 33`.
pub const MAX_LEVEL: u32 = 32;

/// The most stored entries per row (blocks) a map may have. The sparse
/// accumulation costs `nnz²` per row, so this bound is far beyond useful
/// and only guards the block table's memory.
pub const MAX_NNZ_PER_ROW: usize = 1 << 20;

/// Below this `Π_d ψ_0(x_d)`, a row takes the direct-product path (see the
/// module docs, "Numerics").
const TINY: f64 = 1e-150;

/// The kernels EOF expands (the paper's two examples of Condition 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofKernel {
    /// `exp(−ω‖x − y‖₁)`: kapprox's Laplacian kernel with `σ = 1/ω`.
    #[serde(alias = "laplacian")]
    Laplace,
    /// `Π_d (1 + ω·min(x_d, y_d))`, the weighted Sobolev kernel of mixed
    /// first derivatives.
    Sobolev,
}

impl EofKernel {
    /// The kernel's name as the CLI spells it.
    pub fn name(&self) -> &'static str {
        match self {
            EofKernel::Laplace => "laplace",
            EofKernel::Sobolev => "sobolev",
        }
    }

    /// `k(x, y)` with parameter `omega`, for inputs clamped to `[0, 1]`
    /// (the kernel the map approximates, see the module docs, "Inputs").
    ///
    /// # Panics
    /// `x.len() == y.len()`.
    #[track_caller]
    pub fn eval(&self, omega: f64, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
        assert_eq!(x.len(), y.len(), "eval: x has {} entries, y has {}", x.len(), y.len());
        let pairs = x.iter().zip(y.iter()).map(|(a, b)| (a.clamp(0.0, 1.0), b.clamp(0.0, 1.0)));
        match self {
            EofKernel::Laplace => (-omega * pairs.map(|(a, b)| (a - b).abs()).sum::<f64>()).exp(),
            EofKernel::Sobolev => pairs.map(|(a, b)| 1.0 + omega * a.min(b)).product(),
        }
    }
}

/// Which 1-D functions the tensor products are built from (module docs,
/// "Bases").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofBasis {
    /// Rooted at the centre: `k(·, ½)`, then the two boundary half-hats on
    /// `[0, ½]` and `[½, 1]`, then the hats. A complete orthonormal basis,
    /// exact on the faces of the cube, with the paper's sparsity:
    /// `C(n + D, D)` entries per row at level `n`, blocks of `2^{j−1}`
    /// functions from level 1 on. The default.
    #[default]
    Centred,
    /// Rooted at the boundary: the two functions that solve the kernel's
    /// equation on all of `[0, 1]` (levels 0 and 1, one each), then the
    /// hats. Complete and orthonormal like [`EofBasis::Centred`], but in
    /// many dimensions nearly dense: the first `C(n + D, D)` features are
    /// blocks of one function each. Serialised as `boundary` (read also as
    /// `complete`, its earlier name); a spec without a `basis` field means
    /// this basis, the only one before the others existed.
    #[serde(alias = "complete")]
    Boundary,
    /// The paper's hats only, `S_n^* = {|l|₁ ≤ n + D − 1, l ≥ 1}`, level
    /// `n ≥ 1`: `C(n + D − 1, D)` entries per row, far sparser in many
    /// dimensions, but every feature vanishes on the faces of the cube and
    /// the expansion converges to the boundary-pinned kernel `Π_d k_0`.
    Paper,
}

impl EofBasis {
    /// The basis's name (as serialised).
    pub fn name(&self) -> &'static str {
        match self {
            EofBasis::Centred => "centred",
            EofBasis::Boundary => "boundary",
            EofBasis::Paper => "paper",
        }
    }

    /// The smallest valid level: 0 (centred, boundary), 1 (paper; `S_0^*`
    /// is empty).
    pub fn min_level(&self) -> u32 {
        match self {
            EofBasis::Centred | EofBasis::Boundary => 0,
            EofBasis::Paper => 1,
        }
    }

    /// Features at level `level` in `n_input` dimensions (saturating):
    /// the sum of the coefficients of `t^0..t^n` in `W(t)^D` with `W` the
    /// basis's 1-D level sizes (module docs, "Counts"); for the paper
    /// basis `|S_n^*| = Σ_{s<n} 2^s C(s + D − 1, D − 1)` (0 at level 0).
    pub fn n_features(&self, n_input: usize, level: u32) -> u128 {
        grid::count_features(n_input, Levels::new(*self, level))
    }

    /// Blocks (stored entries per row of the full level) at level `level`
    /// in `n_input` dimensions (saturating): `C(n + D, D)` (centred,
    /// boundary) or `C(n + D − 1, D)` (paper; 0 at level 0).
    pub fn nnz(&self, n_input: usize, level: u32) -> u128 {
        grid::count_blocks(n_input, Levels::new(*self, level))
    }

    /// What a spec without a `basis` field means: the boundary basis, the
    /// only one when such specs were written.
    fn legacy() -> Self {
        EofBasis::Boundary
    }

    fn is_legacy(&self) -> bool {
        *self == EofBasis::legacy()
    }
}

/// Which `M` functions a budget keeps of its level `n`, where
/// `|S_{n−1}| < M ≤ |S_n|` (module docs, "Feature budget").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofSubset {
    /// All of `S_{n−1}` plus a seeded uniform subset of the last shell: the
    /// largest-weight functions first, the knapsack optimum of the paper's
    /// entropy criterion. The default for both bases.
    #[default]
    Nested,
    /// A seeded uniform subset of all of `S_n`: the paper's experiment.
    /// Fewer true non-zeros per row (`≈ M·blocks/|S_n|`), a worse kernel
    /// approximation.
    Uniform,
}

impl EofSubset {
    /// The rule's name (as serialised).
    pub fn name(&self) -> &'static str {
        match self {
            EofSubset::Nested => "nested",
            EofSubset::Uniform => "uniform",
        }
    }

    fn is_default(&self) -> bool {
        *self == EofSubset::default()
    }
}

/// How many features: a sparse-grid level `n`, or a budget `M` met exactly
/// by a random subset (module docs, "Feature budget").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EofSize {
    /// All of `S_n`: [`EofBasis::n_features`] features,
    /// [`EofBasis::nnz`] non-zeros per row.
    Level(u32),
    /// Exactly this many features `M ≥ 1`.
    Budget(usize),
}

/// The serialisable description of an [`Eof`] map.
///
/// # Parameters
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `kernel` | — | [`EofKernel::Laplace`] or [`EofKernel::Sobolev`] | |
/// | `omega` | — | `ω`, in units of the `[0, 1]`-scaled inputs | finite, `> 0` |
/// | `n_input` | — | input dimension `D` | `≥ 1` |
/// | `size` | — | level `n` or budget `M` | below 2^32 features and 2^20 non-zeros per row; paper level `≥ 1` |
/// | `seed` | 0 | the budget's random subset (unused by a level) | any |
/// | `basis` | [`EofBasis::Centred`] | centre-rooted, boundary-rooted, or the paper's hats only | |
/// | `subset` | [`EofSubset::Nested`] | which `M` functions a budget keeps (unused by a level) | |
///
/// `subset` is left out of the JSON at its default and a missing field
/// reads as the default. `basis` is left out only when it is
/// [`EofBasis::Boundary`], and a missing `basis` reads as that: specs
/// written before the field existed meant the boundary basis, and still
/// do, although new specs default to [`EofBasis::Centred`].
///
/// ```
/// use kapprox_features::eof::{EofBasis, EofKernel, EofSpec, EofSubset};
///
/// let spec = EofSpec::level(EofKernel::Laplace, 2.0, 3, 5);
/// let json = serde_json::to_string(&spec)?;
/// assert_eq!(json, r#"{"kernel":"laplace","omega":2.0,"n_input":3,"size":{"level":5},"seed":0,"basis":"centred"}"#);
/// assert_eq!(serde_json::from_str::<EofSpec>(&json)?, spec);
///
/// // Written before `basis` existed: the boundary basis.
/// let old = r#"{"kernel":"laplace","omega":2.0,"n_input":3,"size":{"level":5},"seed":0}"#;
/// assert_eq!(serde_json::from_str::<EofSpec>(old)?.basis, EofBasis::Boundary);
///
/// let paper = EofSpec::budget(EofKernel::Laplace, 2.0, 3, 100, 7)
///     .with_basis(EofBasis::Paper)
///     .with_subset(EofSubset::Uniform);
/// let json = serde_json::to_string(&paper)?;
/// assert!(json.ends_with(r#""seed":7,"basis":"paper","subset":"uniform"}"#));
/// assert_eq!(paper.build()?.n_output(), 100);
/// # use kapprox_features::FeatureMap;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EofSpec {
    /// The kernel expanded.
    pub kernel: EofKernel,
    /// `ω > 0`: the Laplace rate, or the Sobolev weight.
    pub omega: f64,
    /// Input dimension `D`.
    pub n_input: usize,
    /// Level or budget.
    pub size: EofSize,
    /// Seed of the budget's subset.
    pub seed: u64,
    /// The 1-D functions and index set.
    #[serde(default = "EofBasis::legacy", skip_serializing_if = "EofBasis::is_legacy")]
    pub basis: EofBasis,
    /// The budget's subset rule.
    #[serde(default, skip_serializing_if = "EofSubset::is_default")]
    pub subset: EofSubset,
}

impl EofSpec {
    /// All features of level `n` of the centred basis (seed 0, which a
    /// level does not use).
    pub fn level(kernel: EofKernel, omega: f64, n_input: usize, level: u32) -> Self {
        EofSpec {
            kernel,
            omega,
            n_input,
            size: EofSize::Level(level),
            seed: 0,
            basis: EofBasis::default(),
            subset: EofSubset::default(),
        }
    }

    /// Exactly `n_components` features of the centred basis, nested
    /// subset.
    pub fn budget(kernel: EofKernel, omega: f64, n_input: usize, n_components: usize, seed: u64) -> Self {
        EofSpec { size: EofSize::Budget(n_components), seed, ..EofSpec::level(kernel, omega, n_input, 0) }
    }

    /// The spec for kapprox's Laplacian kernel `exp(−‖x − y‖₁/σ)`, i.e.
    /// `ω = 1/σ`, with `σ` in units of the `[0, 1]`-scaled inputs (centred
    /// basis, nested subset).
    ///
    /// # Errors
    /// A kernel other than Laplacian, or an invalid σ.
    pub fn from_kernel(kernel: Kernel, n_input: usize, size: EofSize, seed: u64) -> Result<Self> {
        kernel.check()?;
        match kernel {
            Kernel::Laplacian { sigma } => {
                Ok(EofSpec { size, seed, ..EofSpec::level(EofKernel::Laplace, 1.0 / sigma, n_input, 0) })
            }
            _ => Err(FeatureError::UnsupportedKernel {
                map: "eof",
                kernel: kernel.name(),
                supported: "laplacian (and the sobolev kernel through EofKernel::Sobolev)",
            }),
        }
    }

    /// Sets the seed. The default is 0.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the basis. The default is [`EofBasis::Centred`].
    pub fn with_basis(mut self, basis: EofBasis) -> Self {
        self.basis = basis;
        self
    }

    /// Sets the budget's subset rule. The default is [`EofSubset::Nested`].
    pub fn with_subset(mut self, subset: EofSubset) -> Self {
        self.subset = subset;
        self
    }

    /// Builds the map.
    ///
    /// # Errors
    /// See [`Eof::new`].
    pub fn build(&self) -> Result<Eof> {
        Eof::new(self.clone())
    }
}

/// The EOF feature map (see the [module docs](self)): sparse output with a
/// fixed number of stored entries per row.
///
/// Parameter memory: the block table, 24 bytes per block of the table
/// (emitted blocks and their ancestors) plus 4 per emitted block, and
/// `0.19` bytes per candidate function (last shell, or all of `S_n`) for a
/// budget's subset.
#[derive(Clone)]
pub struct Eof {
    spec: EofSpec,
    level: u32,
    levels: Levels,
    n_output: usize,
    basis: Basis1d,
    /// The emitted blocks and their ancestors, parents first.
    blocks: Vec<Block>,
    /// Indices into `blocks` of the emitted blocks (one slot each).
    emit: Vec<u32>,
    /// The first column drawn from and the kept part of columns
    /// `start..|S_n|` (budget maps below `|S_n|` only).
    subset: Option<(u64, Subset)>,
    /// `Σ_{emitted b} kept_b / size_b`.
    expected_nnz: f64,
}

impl std::fmt::Debug for Eof {
    // The block table can hold a million entries: show the shape only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eof")
            .field("spec", &self.spec)
            .field("level", &self.level)
            .field("n_output", &self.n_output)
            .field("nnz_per_row", &self.emit.len())
            .field("expected_nnz", &self.expected_nnz)
            .finish()
    }
}

fn invalid(name: &'static str, value: impl ToString, expected: &'static str) -> FeatureError {
    FeatureError::InvalidParameter { name, value: value.to_string(), expected }
}

/// The sparse-grid level of `spec` and its feature budget (`None` for a
/// whole level), checked as [`Eof::new`] documents.
fn level_of(spec: &EofSpec) -> Result<(u32, Option<u64>)> {
    if !(spec.omega.is_finite() && spec.omega > 0.0) {
        return Err(invalid("omega", spec.omega, "a finite ω > 0"));
    }
    let d = spec.n_input;
    if d == 0 {
        return Err(invalid("n_input", 0, "at least one input column"));
    }
    let basis = spec.basis;
    let at = |n: u32| Levels::new(basis, n);
    let admissible = |n: u32| {
        n >= basis.min_level()
            && n <= MAX_LEVEL
            && grid::count_features(d, at(n)) <= u32::MAX as u128
            && grid::count_blocks(d, at(n)) <= MAX_NNZ_PER_ROW as u128
    };
    let (level, budget) = match spec.size {
        EofSize::Level(n) => {
            if !admissible(n) {
                return Err(invalid(
                    "level",
                    n,
                    match basis {
                        EofBasis::Centred | EofBasis::Boundary => {
                            "a level with fewer than 2^32 features and at most 2^20 non-zeros per row"
                        }
                        EofBasis::Paper => {
                            "a level of at least 1 with fewer than 2^32 features and at most 2^20 non-zeros per row"
                        }
                    },
                ));
            }
            (n, None)
        }
        EofSize::Budget(m) => {
            let too_large =
                || invalid("features", m, "a budget between 1 and |S_n| of a level with fewer than 2^32 features");
            if m == 0 {
                return Err(too_large());
            }
            let n = (basis.min_level()..=MAX_LEVEL)
                .find(|&n| grid::count_features(d, at(n)) >= m as u128)
                .ok_or_else(too_large)?;
            if !admissible(n) {
                return Err(too_large());
            }
            (n, Some(m as u64))
        }
    };
    Ok((level, budget))
}

impl EofSpec {
    /// The parameter memory of the map this spec builds, in bytes, from
    /// counts alone (nothing is enumerated): 28 bytes per block of the
    /// level and a quarter byte per candidate function (see [`Eof`]).
    ///
    /// # Errors
    /// As [`Eof::new`].
    pub fn parameter_bytes(&self) -> Result<u64> {
        let (level, _) = level_of(self)?;
        let levels = Levels::new(self.basis, level);
        let blocks = grid::count_blocks(self.n_input, levels);
        let features = grid::count_features(self.n_input, levels);
        Ok(u64::try_from(28 * blocks + features / 4).unwrap_or(u64::MAX))
    }
}

impl Eof {
    /// Builds the map of `spec`.
    ///
    /// # Errors
    /// [`FeatureError::InvalidParameter`] for `ω` not finite and positive
    /// (`omega`), `D = 0` (`n_input`), a level with `|S_n| ≥ 2^32` or more
    /// than [`MAX_NNZ_PER_ROW`] non-zeros, or level 0 of the paper basis
    /// (`level`), and a budget of 0 or larger than `|S_n|` of every
    /// admissible level (`features`).
    pub fn new(spec: EofSpec) -> Result<Self> {
        let (level, budget) = level_of(&spec)?;
        let (d, basis) = (spec.n_input, spec.basis);
        let at = |n: u32| Levels::new(basis, n);
        let levels = at(level);
        let full = grid::count_features(d, levels) as u64;
        let mut blocks = grid::enumerate(d, levels);
        let mut emit: Vec<u32> = (0..blocks.len() as u32).collect();
        let mut expected_nnz = blocks.len() as f64;
        let mut subset = None;
        let mut n_output = full;
        if let Some(m) = budget.filter(|&m| m < full) {
            // |S_{n−1}| < m < |S_n|, so n is above the minimal level (where
            // |S_n| = 1) and level − 1 is valid.
            let start = match spec.subset {
                EofSubset::Nested => grid::count_features(d, at(level - 1)) as u64,
                EofSubset::Uniform => 0,
            };
            let sub = Subset::sample(full - start, m - start, spec.seed);
            // `start` is a shell boundary, so a block lies wholly before it
            // (always kept) or wholly in the subset's range.
            let kept: Vec<u64> = blocks
                .iter()
                .map(|b| if b.offset < start { b.size() } else { sub.count_in(b.offset - start, b.size()) })
                .collect();
            expected_nnz = blocks.iter().zip(&kept).map(|(b, &k)| k as f64 / b.size() as f64).sum();
            (blocks, emit) = prune(&blocks, |b| kept[b] > 0);
            subset = Some((start, sub));
            n_output = m;
        }
        let basis = Basis1d::new(spec.kernel, spec.omega, basis, level);
        Ok(Eof { spec, level, levels, n_output: n_output as usize, basis, blocks, emit, subset, expected_nnz })
    }

    /// The description this map was built from.
    pub fn eof_spec(&self) -> &EofSpec {
        &self.spec
    }

    /// The sparse-grid level `n` in use (chosen from the budget, if any).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Stored entries (slots) per row: the ELL width of
    /// [`OutputKind::Sparse`], one per emitted block, and the bound on the
    /// true non-zeros of any row. It is what the solver's sparse path pays
    /// for (`nnz(nnz + 1)/2` Gram updates per row).
    pub fn nnz_per_row(&self) -> usize {
        self.emit.len()
    }

    /// Mean true entries per row for `x` uniform on the cube:
    /// `Σ_{emitted b} kept_b / size_b` (module docs, "Sparse layout and
    /// cost"). Equal to [`Eof::nnz_per_row`] for a level or a full budget;
    /// below it when a subset leaves slots padded.
    ///
    /// Values that vanish on a null set (a hat at the ends of its support)
    /// are counted: for data on the faces of the cube (binary columns, or
    /// min–max scaled columns at their extremes) the truth can be far lower,
    /// and for the paper basis zero. Measure it with [`Eof::count_nonzeros`].
    pub fn expected_nnz(&self) -> f64 {
        self.expected_nnz
    }

    /// The number of non-zero values over all rows of `x` `(n, D)`:
    /// padding and entries whose value is 0 at that row are not counted.
    /// Divide by `x.nrows()` for the measured mean true non-zeros per row.
    ///
    /// Cost: one transform of `x`, without allocating the output.
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()`.
    #[track_caller]
    pub fn count_nonzeros(&self, x: ArrayView2<'_, f64>) -> u64 {
        let d = self.spec.n_input;
        assert_eq!(x.ncols(), d, "count_nonzeros: x has {} columns, the map takes {d}", x.ncols());
        let mut count = 0u64;
        self.for_each_row(x, |_, _, vals| count += vals.iter().filter(|&&v| v != 0.0).count() as u64);
        count
    }

    /// Writes the `nnz` entries of one row into `cols` and `vals`: the kept
    /// functions in block order, then padding `(0, 0.0)`.
    fn row_into(&self, x: ArrayView1<'_, f64>, s: &mut Scratch, cols: &mut [u32], vals: &mut [f64]) {
        let n1 = self.levels.per_dim();
        for (d, &xd) in x.iter().enumerate() {
            self.basis.eval(xd, &mut s.vals[d * n1..(d + 1) * n1], &mut s.idx[d * n1..(d + 1) * n1]);
        }
        let blocks = &self.blocks;
        s.loc[0] = 0;
        for b in 1..blocks.len() {
            let blk = blocks[b];
            s.loc[b] = (s.loc[blk.parent as usize] << blk.shift) | s.idx[blk.slot as usize] as u64;
        }
        let paper = self.spec.basis == EofBasis::Paper;
        let p0: f64 = (0..x.len()).map(|d| s.vals[d * n1]).product();
        if paper && (0..x.len()).any(|d| s.vals[d * n1] == 0.0) {
            // A coordinate on a face: every hat vanishes there, so every
            // feature is exactly 0 (the ratio chain would divide by 0).
            s.val.fill(0.0);
        } else if p0 >= TINY {
            // The boundary Sobolev basis has ψ_0 = 1: no division needed.
            if !(self.spec.basis == EofBasis::Boundary && self.spec.kernel == EofKernel::Sobolev) {
                for chunk in s.vals.chunks_exact_mut(n1) {
                    let v0 = chunk[0];
                    chunk[1..].iter_mut().for_each(|v| *v /= v0);
                }
            }
            s.val[0] = p0;
            for b in 1..blocks.len() {
                let blk = blocks[b];
                s.val[b] = s.val[blk.parent as usize] * s.vals[blk.slot as usize];
            }
        } else {
            // Each product is formed from the D factors of the feature
            // itself: it underflows only if the value does. (For Laplace
            // every |ψ| ≤ 1, so the partial products only shrink.)
            for b in 0..blocks.len() {
                s.chain.clear();
                let mut at = b;
                while at != 0 {
                    s.chain.push(blocks[at].slot as usize);
                    at = blocks[at].parent as usize;
                }
                // `chain` lists the block's non-zero coordinates by
                // decreasing dimension.
                let mut next = s.chain.iter().copied().peekable();
                let mut prod = 1.0;
                for d in (0..x.len()).rev() {
                    match next.peek() {
                        Some(&slot) if slot / n1 == d => {
                            prod *= s.vals[slot];
                            next.next();
                        }
                        _ => prod *= s.vals[d * n1],
                    }
                }
                s.val[b] = prod;
            }
        }
        // Compaction: kept entries first, so that the padding is a tail a
        // consumer can skip (module docs, "Sparse layout and cost").
        let mut front = 0;
        for &b in &self.emit {
            let b = b as usize;
            let col = blocks[b].offset + s.loc[b];
            let entry = match &self.subset {
                Some((start, sub)) if col >= *start => sub.rank(col - start).map(|r| (*start as u32) + r),
                _ => Some(col as u32),
            };
            if let Some(c) = entry {
                (cols[front], vals[front]) = (c, s.val[b]);
                front += 1;
            }
        }
        cols[front..].fill(0);
        vals[front..].fill(0.0);
    }

    fn scratch(&self) -> Scratch {
        let n = self.spec.n_input * self.levels.per_dim();
        let nb = self.blocks.len();
        Scratch {
            vals: vec![0.0; n],
            idx: vec![0; n],
            val: vec![0.0; nb],
            loc: vec![0; nb],
            chain: Vec::with_capacity(self.levels.per_dim()),
        }
    }

    /// Calls `emit(row, cols, vals)` for every row of `x`.
    fn for_each_row(&self, x: ArrayView2<'_, f64>, mut emit: impl FnMut(usize, &[u32], &[f64])) {
        let mut s = self.scratch();
        let nb = self.emit.len();
        let (mut cols, mut vals) = (vec![0u32; nb], vec![0.0; nb]);
        for (r, row) in x.axis_iter(Axis(0)).enumerate() {
            self.row_into(row, &mut s, &mut cols, &mut vals);
            emit(r, &cols, &vals);
        }
    }

    fn registered_spec(spec: &EofSpec) -> MapSpec {
        MapSpec::Eof(spec.clone())
    }
}

/// The blocks with `keep(b)` plus their ancestors, parents remapped, and
/// the indices of the kept ones in the new table. A uniform subset can drop
/// a block whose child it keeps; the transform still needs the parent's
/// value and local index to reach the child.
fn prune(blocks: &[Block], keep: impl Fn(usize) -> bool) -> (Vec<Block>, Vec<u32>) {
    let mut need: Vec<bool> = (0..blocks.len()).map(&keep).collect();
    // Children come after their parents: one backward sweep marks every
    // ancestor. The root (index 0) is an ancestor of every block.
    for b in (1..blocks.len()).rev() {
        if need[b] {
            need[blocks[b].parent as usize] = true;
        }
    }
    let mut new_index = vec![u32::MAX; blocks.len()];
    let (mut table, mut emit) = (Vec::new(), Vec::new());
    for (b, blk) in blocks.iter().enumerate().filter(|(b, _)| need[*b]) {
        new_index[b] = table.len() as u32;
        if keep(b) {
            emit.push(table.len() as u32);
        }
        table.push(Block { parent: new_index[blk.parent as usize], ..*blk });
    }
    (table, emit)
}

/// Per-call buffers of the transform.
struct Scratch {
    /// 1-D values (then ratios to level 0), `(D, levels)` row-major.
    vals: Vec<f64>,
    /// 1-D hat indices, `(D, levels)`.
    idx: Vec<u32>,
    /// Value of each block's active function.
    val: Vec<f64>,
    /// Local index of each block's active function.
    loc: Vec<u64>,
    /// Slots of one block (direct-product path).
    chain: Vec<usize>,
}

impl FeatureMap for Eof {
    fn n_input(&self) -> usize {
        self.spec.n_input
    }

    fn n_output(&self) -> usize {
        self.n_output
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::Sparse { nnz_per_row: self.emit.len() }
    }

    /// Writes the dense rows, `(n, n_output)`: meant for tests and small
    /// outputs. Prefer [`FeatureMap::transform_sparse_into`].
    ///
    /// # Panics
    /// `x.ncols() == self.n_input()` and
    /// `out.dim() == (x.nrows(), self.n_output())`.
    fn transform_into(&self, x: ArrayView2<'_, f64>, mut out: ArrayViewMut2<'_, f64>) {
        let (d, l) = (self.spec.n_input, self.n_output);
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(
            out.dim(),
            (x.nrows(), l),
            "transform: out has shape {:?}, expected ({}, {l})",
            out.dim(),
            x.nrows()
        );
        out.fill(0.0);
        self.for_each_row(x, |r, cols, vals| {
            let mut o = out.row_mut(r);
            for (&c, &v) in cols.iter().zip(vals) {
                o[c as usize] += v;
            }
        });
    }

    /// # Panics
    /// `x.ncols() == self.n_input()`, `out.n_cols == self.n_output()`, and
    /// both buffers of shape `(x.nrows(), nnz_per_row)`.
    fn transform_sparse_into(&self, x: ArrayView2<'_, f64>, mut out: SparseRowsViewMut<'_>) {
        let d = self.spec.n_input;
        assert_eq!(x.ncols(), d, "transform: x has {} columns, the map takes {d}", x.ncols());
        assert_eq!(out.n_cols, self.n_output, "transform: sparse rows have {} columns", out.n_cols);
        let shape = (x.nrows(), self.emit.len());
        assert_eq!(out.indices.dim(), shape, "transform: sparse indices have the wrong shape");
        assert_eq!(out.values.dim(), shape, "transform: sparse values have the wrong shape");
        self.for_each_row(x, |r, cols, vals| {
            out.indices.row_mut(r).iter_mut().zip(cols).for_each(|(o, &c)| *o = c);
            out.values.row_mut(r).iter_mut().zip(vals).for_each(|(o, &v)| *o = v);
        });
    }

    fn spec(&self) -> MapSpec {
        Self::registered_spec(&self.spec)
    }

    fn parameter_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
            + self.emit.len() * std::mem::size_of::<u32>()
            + self.subset.as_ref().map_or(0, |(_, s)| s.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        Array2::from_shape_fn((n, d), |(i, j)| {
            kapprox_core::rng::unit(seed, kapprox_core::Domain(0xEE), (i * d + j) as u64)
        })
    }

    /// The direct-product path must agree with the ratio path wherever both
    /// are valid; forcing it by hand checks the walk over parents.
    #[test]
    fn direct_products_match_the_ratio_chain() {
        for basis in [EofBasis::Boundary, EofBasis::Paper] {
            for kernel in [EofKernel::Laplace, EofKernel::Sobolev] {
                for (d, n) in [(1, 5), (3, 4), (5, 3)] {
                    let map = EofSpec::level(kernel, 3.0, d, n).with_basis(basis).build().unwrap();
                    let x = points(20, d, 1);
                    let mut s = map.scratch();
                    let nb = map.nnz_per_row();
                    assert_eq!(nb, map.blocks.len(), "a level emits every block");
                    let (mut c1, mut v1) = (vec![0u32; nb], vec![0.0; nb]);
                    let n1 = map.levels.per_dim();
                    for row in x.rows() {
                        map.row_into(row, &mut s, &mut c1, &mut v1);
                        for (dd, &xd) in row.iter().enumerate() {
                            let (v, i) = (&mut s.vals[dd * n1..(dd + 1) * n1], &mut s.idx[dd * n1..(dd + 1) * n1]);
                            map.basis.eval(xd, v, i);
                        }
                        for b in 0..nb {
                            let mut prod = 1.0;
                            let mut j = vec![0usize; d];
                            let mut at = b;
                            while at != 0 {
                                let slot = map.blocks[at].slot as usize;
                                j[slot / n1] = slot % n1;
                                at = map.blocks[at].parent as usize;
                            }
                            for dd in 0..d {
                                prod *= s.vals[dd * n1 + j[dd]];
                            }
                            assert!((prod - v1[b]).abs() < 1e-14, "{basis:?} block {b}: {prod} vs {}", v1[b]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn pruning_keeps_ancestors_and_remaps_parents() {
        let blocks = grid::enumerate(3, Levels::new(EofBasis::Paper, 4));
        // Keep only a few deep blocks: their ancestors must stay, parents
        // first, with the same (slot, shift) chain as before.
        let keep = |b: usize| b % 7 == 3 && blocks[b].shell >= 2;
        let (table, emit) = prune(&blocks, keep);
        let chain = |t: &[Block], mut at: usize| {
            let mut c = Vec::new();
            while at != 0 {
                c.push((t[at].slot, t[at].shift, t[at].offset));
                at = t[at].parent as usize;
            }
            c
        };
        let kept: Vec<usize> = (0..blocks.len()).filter(|&b| keep(b)).collect();
        assert_eq!(emit.len(), kept.len());
        for (&e, &b) in emit.iter().zip(&kept) {
            assert_eq!(chain(&table, e as usize), chain(&blocks, b));
        }
        assert!(table.iter().enumerate().all(|(i, t)| i == 0 || (t.parent as usize) < i));
        assert!(table.len() < blocks.len() && table.len() > emit.len());
    }

    #[test]
    fn budget_keeps_the_previous_level_whole() {
        let full = EofSpec::level(EofKernel::Sobolev, 1.0, 3, 4).build().unwrap();
        let prev = EofBasis::default().n_features(3, 3) as usize;
        let blocks3 = EofBasis::default().nnz(3, 3) as usize;
        let map = EofSpec::budget(EofKernel::Sobolev, 1.0, 3, prev + 7, 5).build().unwrap();
        assert_eq!((map.level(), map.n_output()), (4, prev + 7));
        assert_eq!(&map.blocks[..blocks3], &full.blocks[..blocks3]);
        assert!(map.nnz_per_row() <= blocks3 + 7);
    }
}
