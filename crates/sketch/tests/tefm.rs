//! End to end: TEFM (paper 000) built with this crate's sketches on top of
//! kapprox-features' random Fourier features, against the exact kernel.
//!
//! Data: the first 1000 rows of the CPU set the paper uses (shipped in
//! `data/`), standardised; Gaussian kernel with σ = the median pairwise
//! distance. The metric is the paper's `‖K − GGᵀ‖₂ / ‖K‖₂` (Fig. 1), with
//! spectral norms from a dense symmetric eigendecomposition.

use flate2::read::GzDecoder;
use kapprox_core::{Moments, dense};
use kapprox_features::rff::Rff;
use kapprox_features::tefm::Tefm;
use kapprox_features::{FeatureMap, Form, Kernel};
use kapprox_sketch::{PowerIteration, ProductAccumulator, SketchKind, gram_range_finder, range_finder_start};
use ndarray::{Array2, Axis, s};
use std::io::{BufRead, BufReader};

const N: usize = 1000;
const CHUNK: usize = 300;

fn cpu_rows(n: usize) -> Array2<f64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cpu_rks_train.tsv.gz");
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = BufReader::new(GzDecoder::new(file)).lines();
    let header = lines.next().unwrap().unwrap();
    let d = header.split('\t').count() - 1; // last column is the target
    let mut x = Array2::zeros((n, d));
    for (i, line) in lines.take(n).enumerate() {
        let line = line.unwrap();
        for (j, v) in line.split('\t').take(d).enumerate() {
            x[[i, j]] = v.parse().unwrap_or_else(|e| panic!("{path}: row {i}, column {j}: {e}"));
        }
    }
    // Standardise each column (constant columns stay zero).
    let mean = x.mean_axis(Axis(0)).unwrap();
    let sd = x.std_axis(Axis(0), 0.0);
    for mut row in x.rows_mut() {
        for j in 0..d {
            row[j] = if sd[j] > 0.0 { (row[j] - mean[j]) / sd[j] } else { 0.0 };
        }
    }
    x
}

fn median_distance(x: &Array2<f64>) -> f64 {
    let n = x.nrows();
    let mut d = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in 0..i {
            d.push((&x.row(i) - &x.row(j)).mapv(|v| v * v).sum().sqrt());
        }
    }
    d.sort_by(f64::total_cmp);
    d[d.len() / 2]
}

/// `max |λ(A)|` of a symmetric matrix.
fn spectral_norm_sym(a: &Array2<f64>) -> f64 {
    let (lambda, _) = dense::eigh(a.view());
    lambda.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

struct Setup {
    x: Array2<f64>,
    kernel: Kernel,
    k: Array2<f64>,
    k_norm: f64,
}

impl Setup {
    fn new() -> Self {
        let x = cpu_rows(N);
        let kernel = Kernel::Gaussian { sigma: median_distance(&x) };
        let k = kernel.matrix(x.view(), x.view());
        let k_norm = spectral_norm_sym(&k);
        Setup { x, kernel, k, k_norm }
    }

    fn error(&self, g: &Array2<f64>) -> f64 {
        spectral_norm_sym(&(&self.k - &g.dot(&g.t()))) / self.k_norm
    }

    fn rff(&self, l: usize, seed: u64) -> Rff {
        Rff::new(self.kernel, Form::Pairs, self.x.ncols(), l, seed).unwrap()
    }

    /// Strategy (a): one chunked pass accumulating `FᵀF` (Moments); then
    /// `(FᵀF)Ω` and the power iterations in memory.
    fn tefm_one_pass(&self, base: &Rff, kind: SketchKind, l: usize, q: usize) -> (Array2<f64>, Moments) {
        let d = base.n_output();
        let mut moments = Moments::new(d, 1);
        let y = self.x.column(0).to_owned().insert_axis(Axis(1));
        for c in (0..N).step_by(CHUNK) {
            let e = (c + CHUNK).min(N);
            let f = base.transform(self.x.slice(s![c..e, ..]));
            moments.update(f.view(), y.slice(s![c..e, ..]));
        }
        moments.flush();
        (gram_range_finder(moments.zz().view(), kind, l, 3, q).unwrap(), moments)
    }

    /// Strategy (b): the product pass `Fᵀ(FΩ)`, then one product pass per
    /// power iteration.
    fn tefm_multi_pass(&self, base: &Rff, kind: SketchKind, l: usize, q: usize) -> Array2<f64> {
        let d = base.n_output();
        let mut it = PowerIteration::new(q);
        let mut first = ProductAccumulator::new(range_finder_start(kind, d, l, 3, q).unwrap().view());
        for c in (0..N).step_by(CHUNK) {
            let e = (c + CHUNK).min(N);
            first.update(base.transform(self.x.slice(s![c..e, ..])).view()).unwrap();
        }
        it.advance(first.finish().view()).unwrap();
        while !it.is_done() {
            let mut p = ProductAccumulator::new(it.current().unwrap());
            for c in (0..N).step_by(CHUNK) {
                let e = (c + CHUNK).min(N);
                p.update(base.transform(self.x.slice(s![c..e, ..])).view()).unwrap();
            }
            it.advance(p.finish().view()).unwrap();
        }
        it.finish().unwrap()
    }

    fn tefm_error(&self, kind: SketchKind, l: usize, q: usize) -> f64 {
        let base = self.rff(4 * l, 2);
        let (basis, _) = self.tefm_one_pass(&base, kind, l, q);
        let map = Tefm::new(Box::new(base), basis).unwrap();
        self.error(&map.transform(self.x.view()))
    }
}

/// The paper's claim (Fig. 1, `d = 4l`): TEFM roughly halves the spectral
/// error of random Fourier features with the same number `l` of features.
/// We require TEFM-G (q = 1) ≤ 0.65 × RFF-pairs at l = 50 and 100; TEFM-S
/// and TEFM-C within 10% of TEFM-G (q = 1), both with q = 0 (the paper's
/// TEFM-S) and q = 1; and errors that shrink from l = 50 to l = 100 (a
/// too-small l must be worse).
#[test]
fn tefm_beats_random_fourier_features_at_the_same_dimension() {
    let setup = Setup::new();
    let mut tefm_g = Vec::new();
    for l in [50, 100] {
        let rff = setup.error(&setup.rff(l, 1).transform(setup.x.view()));
        let g = setup.tefm_error(SketchKind::Gaussian, l, 1);
        eprintln!("l = {l:>3}: RFF-pairs {rff:.4}  TEFM-G(q=1) {g:.4} = {:.2} × RFF", g / rff);
        assert!(g <= 0.65 * rff, "l = {l}: TEFM-G {g} vs RFF {rff}");
        for kind in [SketchKind::Srht, SketchKind::CountSketch] {
            for q in [0, 1] {
                let e = setup.tefm_error(kind, l, q);
                eprintln!("         {kind}(q={q}) {e:.4} = {:.3} × TEFM-G(q=1)", e / g);
                assert!(e <= 1.10 * g, "l = {l}: {kind} (q = {q}) {e} vs TEFM-G {g}");
            }
        }
        tefm_g.push(g);
    }
    assert!(tefm_g[1] < tefm_g[0], "{tefm_g:?}");
}

/// Strategies (a) and (b) build the same `Q`, and with (a) the ridge
/// moments of `G = FQ` are `Moments::project(Q)` of the moments of `F`.
#[test]
fn one_pass_and_multi_pass_agree_and_project_gives_the_moments_of_g() {
    let setup = Setup::new();
    let l = 20;
    let base = setup.rff(4 * l, 2);
    for kind in [SketchKind::Gaussian, SketchKind::Srht, SketchKind::CountSketch] {
        let (qa, moments) = setup.tefm_one_pass(&base, kind, l, 2);
        let qb = setup.tefm_multi_pass(&base, kind, l, 2);
        let diff = (&qa - &qb).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(diff < 1e-10, "{kind}: {diff}");
        let map = Tefm::new(Box::new(setup.rff(4 * l, 2)), qa.clone()).unwrap();
        let g = map.transform(setup.x.view());
        let mut mg = Moments::new(l, 1);
        mg.update(g.view(), setup.x.column(0).insert_axis(Axis(1)));
        mg.flush();
        let proj = moments.project(qa.view());
        let d = &proj.augmented_gram() - &mg.augmented_gram();
        let scale = mg.augmented_gram().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(d.iter().all(|v| v.abs() < 1e-12 * scale), "{kind}");
    }
}

/// The whole table behind the paper's Fig. 1 on this data (slow: 33
/// dense 1000×1000 eigendecompositions). Run with `--ignored --nocapture`.
#[test]
#[ignore = "slow: full TEFM vs RFF table"]
fn tefm_table() {
    let setup = Setup::new();
    for l in [20, 50, 100, 200] {
        let rff = setup.error(&setup.rff(l, 1).transform(setup.x.view()));
        let mut line = format!("l = {l:>3}: RFF {rff:.4}");
        for (kind, q) in [
            (SketchKind::Gaussian, 0),
            (SketchKind::Gaussian, 1),
            (SketchKind::Gaussian, 2),
            (SketchKind::Srht, 0),
            (SketchKind::Srht, 1),
            (SketchKind::CountSketch, 0),
            (SketchKind::CountSketch, 1),
        ] {
            let e = setup.tefm_error(kind, l, q);
            line += &format!("  {kind}(q={q}) {e:.4}");
        }
        eprintln!("{line}");
    }
}
