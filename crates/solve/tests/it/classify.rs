//! One-vs-rest classification on planted problems.

use crate::util::{gaussian, moments};
use kapprox_core::rng::{Domain, hash64};
use kapprox_solve::{Classes, Ridge, RidgeClassifier, SolveError, accuracy};
use ndarray::{Array1, Array2, array, s};

/// Three well-separated Gaussian blobs in 2-D with arbitrary label values.
fn blobs(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let centres = [(0.0, 0.0, 7.0), (6.0, 0.0, -2.0), (0.0, 6.0, 3.5)];
    let noise = gaussian(n, 2, seed) * 0.5;
    let mut x = Array2::zeros((n, 2));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let (cx, cy, label) = centres[i % 3];
        x[[i, 0]] = cx + noise[[i, 0]];
        x[[i, 1]] = cy + noise[[i, 1]];
        y[i] = label;
    }
    (x, y)
}

#[test]
fn planted_separable_problem_is_recovered() {
    let (x, y) = blobs(300, 1);
    // Classes collected chunk by chunk and merged, as the pipeline does.
    let mut classes = Classes::new();
    classes.update(y.slice(s![..100])).unwrap();
    let mut rest = Classes::new();
    rest.update(y.slice(s![100..])).unwrap();
    classes.merge(&rest);
    assert_eq!(classes.values(), &[-2.0, 3.5, 7.0]);
    let targets = classes.encode_pm1(y.view()).unwrap();
    // Each row has one +1 and two -1.
    assert!(targets.rows().into_iter().all(|r| r.sum() == -1.0));
    let fit = Ridge::params().with_alpha(1e-3).check().unwrap().fit(&moments(x.view(), targets.view())).unwrap();
    let clf = RidgeClassifier::new(fit.model, classes).unwrap();
    assert_eq!(accuracy(y.view(), clf.predict(x.view()).unwrap().view()).unwrap(), 1.0);
    let (xt, yt) = blobs(150, 2);
    assert_eq!(accuracy(yt.view(), clf.predict(xt.view()).unwrap().view()).unwrap(), 1.0);
    // Shuffled labels carry no signal: accuracy falls to about chance.
    let labels = clf.classes.values().to_vec();
    let shuffled = Array1::from_shape_fn(300, |i| labels[(hash64(5, Domain::SPLIT, i as u64) % 3) as usize]);
    let tt = clf.classes.encode_pm1(shuffled.view()).unwrap();
    let fit = Ridge::params().with_alpha(1e-3).check().unwrap().fit(&moments(x.view(), tt.view())).unwrap();
    let bad = RidgeClassifier::new(fit.model, clf.classes.clone()).unwrap();
    assert!(accuracy(yt.view(), bad.predict(xt.view()).unwrap().view()).unwrap() < 0.8);
}

#[test]
fn binary_problems_use_two_columns_and_decode_the_same_way() {
    let c = Classes::from_labels([1.0, -1.0, 1.0]).unwrap();
    let t = c.encode_pm1(array![-1.0, 1.0].view()).unwrap();
    assert_eq!(t, array![[1.0, -1.0], [-1.0, 1.0]]);
    assert_eq!(c.decode_argmax(t.view()).unwrap(), array![-1.0, 1.0]);
    // Ties go to the first class.
    assert_eq!(c.decode_argmax(array![[0.5, 0.5]].view()).unwrap(), array![-1.0]);
}

#[test]
fn unknown_and_invalid_labels_are_errors() {
    let c = Classes::from_labels([0.0, 1.0, 2.0]).unwrap();
    assert_eq!(
        c.encode_pm1(array![1.0, 5.0].view()).unwrap_err(),
        SolveError::UnknownLabel { value: 5.0, n_classes: 3 }
    );
    assert_eq!(
        Classes::from_labels([f64::NAN]).unwrap_err().to_string(),
        "invalid label NaN: expected a finite number"
    );
    assert_eq!(c.index_of(-0.0).unwrap(), 0);
    assert!(c.decode_argmax(Array2::zeros((2, 2)).view()).is_err());
    assert!(c.decode_argmax(array![[0.0, f64::NAN, 1.0]].view()).is_err());
    let model = kapprox_solve::RidgeModel::new(Array2::zeros((2, 2)), Array1::zeros(2)).unwrap();
    assert!(RidgeClassifier::new(model, c).is_err());
}
