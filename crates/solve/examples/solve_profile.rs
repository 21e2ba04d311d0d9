//! Scratch: time select_17 + refit at one l (not committed).
#![allow(missing_docs)]
use kapprox_core::Moments;
use kapprox_solve::Ridge;
use ndarray::{Array2, s};
use std::time::Instant;

fn features(n: usize, l: usize, seed: usize) -> (Array2<f64>, Array2<f64>) {
    let unit = |i: usize| ((i.wrapping_mul(2_654_435_761) >> 7) % 10_007) as f64 / 10_007.0;
    let x = Array2::from_shape_fn((n, 20), |(i, j)| unit(i * 20 + j + seed) * 2.0 - 1.0);
    let w = Array2::from_shape_fn((20, l), |(i, j)| (unit(i * l + j + 77) - 0.5) * 6.0);
    let b = Array2::from_shape_fn((1, l), |(_, j)| unit(j + 991) * std::f64::consts::TAU);
    let scale = (2.0 / l as f64).sqrt();
    let z = (x.dot(&w) + &b).mapv(|v| scale * v.cos());
    let y = Array2::from_shape_fn((n, 1), |(i, _)| (3.0 * x[[i, 0]]).sin() + x[[i, 1]] + 0.1 * (unit(i + 5) - 0.5));
    (z, y)
}

fn main() {
    let l: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let reps: usize = std::env::args().nth(2).map_or(3, |s| s.parse().unwrap());
    let n = 2 * l + 500;
    let (z, y) = features(n, l, 1);
    let split = n * 3 / 4;
    let mut train = Moments::new(l, 1);
    train.update(z.slice(s![..split, ..]), y.slice(s![..split, ..]));
    train.flush();
    let mut val = Moments::new(l, 1);
    val.update(z.slice(s![split.., ..]), y.slice(s![split.., ..]));
    val.flush();
    let mut total = train.clone();
    total.merge(&val);
    total.flush();
    let alphas: Vec<f64> = (0..17).map(|i| n as f64 * 10f64.powf(-9.0 + 0.5 * i as f64)).collect();
    for _ in 0..reps {
        let t = Instant::now();
        let r = kapprox_solve::holdout(&train, &val, &alphas).unwrap();
        let t1 = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sol = Ridge::params().with_alpha(r.best_alpha).check().unwrap().fit(&total).unwrap();
        let t2 = t.elapsed().as_secs_f64();
        println!(
            "l={l} select {t1:.3} s refit {t2:.3} s  best {} mse {:.6e} cond {:.3e} w0 {:.12e}",
            r.best_alpha,
            r.best_mse(),
            sol.info.condition_estimate,
            sol.model.coef[[0, 0]]
        );
    }
}
