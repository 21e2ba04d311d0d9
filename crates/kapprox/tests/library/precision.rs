//! `--precision f32` against the f64 fit: the same model up to the bound
//! of single-precision block products.

use kapprox::fit::Precision;
use kapprox::generate::{GenerateConfig, generate};
use kapprox::io::read_columns;
use kapprox::{FitConfig, MethodParams, SigmaSpec, Silent, fit};

#[test]
fn f32_block_products_stay_within_their_bound_of_the_f64_fit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let g = GenerateConfig { rows: 1500, features: 4, classes: 0, rows_per_shard: 500, seed: 3, overwrite: false };
    generate(&g, &data, &Silent).unwrap();
    let alpha = 10.0;
    let method =
        MethodParams { map: "rff".into(), n_components: 48, ..MethodParams::default() }.check(1, None).unwrap();
    let base =
        FitConfig { sigmas: vec![SigmaSpec::Value(2.0)], alphas: Some(vec![alpha]), ..FitConfig::new(&data, method) };
    let (m64, r64) = fit(&base, &Silent).unwrap();
    let (m32, r32) = fit(&FitConfig { precision: Precision::F32, ..base.clone() }, &Silent).unwrap();
    let mut x = read_columns(&data, &m64.doc.feature_columns).unwrap();
    let y = read_columns(&data, &["label".to_string()]).unwrap().column(0).to_owned();
    m64.doc.scaler.apply_in_place(x.view_mut());
    let z = m64.map.transform(x.view());
    let (s64, s32) = (m64.scores(z.view()), m32.scores(z.view()));
    // Each block's Gram entry errs by at most γ = 514·2⁻²⁴ of Σ|a_i b_i|
    // over the augmented rows (z, 1, y); so ‖ΔG‖₂ ≤ γ·Σ‖(z, 1, y)‖², and the
    // solve of (G_c + αI) w = g amplifies that by at most 1/α per unit of
    // the solution: |Δscore| ≤ ‖z‖·‖Δw‖ + |Δb| ≲ 4·γ·S/α·(1 + ‖w‖) in the
    // units of the scores.
    let gamma = 514.0 * 2f64.powi(-24);
    let s_aug: f64 = z.rows().into_iter().zip(&y).map(|(r, &t)| r.dot(&r) + 1.0 + t * t).sum();
    let scale = s64.iter().fold(0f64, |m, v| m.max(v.abs()));
    let diff = (&s64 - &s32).iter().fold(0f64, |m, v| m.max(v.abs()));
    let bound = 4.0 * gamma * s_aug / alpha * (1.0 + scale);
    eprintln!("f32 vs f64: max |Δscore| {diff:.3e} (scores up to {scale:.3}; bound {bound:.3e})");
    assert!(diff <= bound, "f32 scores differ by {diff}, above the bound {bound}");
    assert!(diff > 0.0, "the f32 path was not taken (bitwise equal to f64)");
    let (v64, v32) = (r64.candidates[0].validation_mse, r32.candidates[0].validation_mse);
    // The training part's model obeys the same bound (fewer rows), and an
    // MSE moves by at most 2·√MSE·|Δscore| + |Δscore|².
    assert!((v64 - v32).abs() <= 2.0 * v64.sqrt() * bound + bound * bound, "validation MSE {v32} vs {v64}");
}
