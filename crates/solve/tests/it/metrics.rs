//! Metrics against closed forms, and streaming equal to one shot.

use crate::util::gaussian;
use kapprox_solve::{
    Classes, ClassificationAccumulator, RegressionAccumulator, SolveError, accuracy, classification_metrics,
    confusion_matrix, macro_f1, mae, r2, regression_metrics, relative_rmse, rmse,
};
use ndarray::{Array1, array, s};

#[test]
fn regression_metrics_match_their_definitions() {
    let y = array![1.0, 2.0, 3.0, 4.0];
    let p = array![1.5, 2.0, 2.0, 4.0];
    let sse: f64 = 0.25 + 0.0 + 1.0 + 0.0;
    assert!((rmse(y.view(), p.view()).unwrap() - (sse / 4.0).sqrt()).abs() < 1e-15);
    assert!((relative_rmse(y.view(), p.view()).unwrap() - (sse / 30.0).sqrt()).abs() < 1e-15);
    assert!((mae(y.view(), p.view()).unwrap() - 1.5 / 4.0).abs() < 1e-15);
    assert!((r2(y.view(), p.view()).unwrap() - (1.0 - sse / 5.0)).abs() < 1e-15);
    // The mean predictor scores R² = 0; constant targets follow scikit-learn.
    assert!(r2(y.view(), Array1::from_elem(4, 2.5).view()).unwrap().abs() < 1e-15);
    assert_eq!(r2(array![2.0, 2.0].view(), array![2.0, 2.0].view()).unwrap(), 1.0);
    assert_eq!(r2(array![2.0, 2.0].view(), array![2.0, 3.0].view()).unwrap(), 0.0);
    assert_eq!(rmse(array![].view(), array![].view()).unwrap_err(), SolveError::NoRows);
    assert!(rmse(y.view(), array![1.0].view()).is_err());
}

#[test]
fn streaming_regression_equals_one_shot_and_survives_large_means() {
    let n = 1000;
    // A large offset: Σy² − (Σy)²/n would lose ~10 digits of the TSS.
    let y = gaussian(n, 2, 1) + 1e5;
    let p = &y + &(0.1 * gaussian(n, 2, 2));
    let whole = regression_metrics(y.view(), p.view()).unwrap();
    let mut acc = RegressionAccumulator::new(2);
    for (a, b) in [(0, 7), (7, 300), (300, 301), (301, 1000)] {
        let mut part = RegressionAccumulator::new(2);
        part.update(y.slice(s![a..b, ..]), p.slice(s![a..b, ..])).unwrap();
        acc.merge(&part).unwrap();
    }
    let m = acc.metrics().unwrap();
    assert_eq!(m.n_samples, n as f64);
    for (u, v) in [(m.rmse, whole.rmse), (m.mae, whole.mae), (m.r2, whole.r2), (m.relative_rmse, whole.relative_rmse)] {
        assert!((u - v).abs() <= 1e-12 * v.abs().max(1.0), "{u} vs {v}");
    }
    // R² against a two-pass reference per target.
    for t in 0..2 {
        let yt = y.column(t);
        let mean = yt.mean().unwrap();
        let tss: f64 = yt.iter().map(|v| (v - mean) * (v - mean)).sum();
        let sse: f64 = yt.iter().zip(p.column(t)).map(|(a, b)| (a - b) * (a - b)).sum();
        assert!(
            (m.r2_per_target[t] - (1.0 - sse / tss)).abs() < 1e-10,
            "{} vs {}",
            m.r2_per_target[t],
            1.0 - sse / tss
        );
    }
    assert!(m.r2 > 0.98 && m.r2 < 1.0);
    assert!(acc.merge(&RegressionAccumulator::new(3)).is_err());
    assert_eq!(RegressionAccumulator::new(1).metrics().unwrap_err(), SolveError::NoRows);
}

#[test]
fn classification_metrics_match_scikit_learn() {
    // scikit-learn's f1_score docstring example: macro F1 = 0.2666...
    let classes = Classes::from_labels([0.0, 1.0, 2.0]).unwrap();
    let y = array![0.0, 1.0, 2.0, 0.0, 1.0, 2.0];
    let p = array![0.0, 2.0, 1.0, 0.0, 0.0, 1.0];
    assert!((macro_f1(&classes, y.view(), p.view()).unwrap() - 0.26666666666666666).abs() < 1e-15);
    assert!((accuracy(y.view(), p.view()).unwrap() - 2.0 / 6.0).abs() < 1e-15);
    let cm = confusion_matrix(&classes, y.view(), p.view()).unwrap();
    assert_eq!(cm, array![[2u64, 0, 0], [1, 0, 1], [0, 2, 0]]);
    let m = classification_metrics(&classes, y.view(), p.view()).unwrap();
    assert_eq!(m.classes, vec![0.0, 1.0, 2.0]);
    assert!((m.f1_per_class[0] - 0.8).abs() < 1e-15);

    // Streaming in two chunks equals one shot.
    let mut a = ClassificationAccumulator::new(&classes);
    a.update(y.slice(s![..4]), p.slice(s![..4])).unwrap();
    let mut b = ClassificationAccumulator::new(&classes);
    b.update(y.slice(s![4..]), p.slice(s![4..])).unwrap();
    a.merge(&b).unwrap();
    assert_eq!(a.metrics().unwrap(), m);

    // A class that never occurs is left out of the macro average.
    let wide = Classes::from_labels([0.0, 1.0, 2.0, 9.0]).unwrap();
    assert_eq!(macro_f1(&wide, y.view(), p.view()).unwrap(), m.macro_f1);
    // Unknown labels and mismatched accumulators are errors.
    assert!(matches!(a.update(array![5.0].view(), array![0.0].view()), Err(SolveError::UnknownLabel { .. })));
    assert_eq!(a.metrics().unwrap().n_samples, 6, "a failed update adds nothing");
    assert!(matches!(a.merge(&ClassificationAccumulator::new(&wide)), Err(SolveError::ClassesMismatch { .. })));
}
