//! One split part's ridge statistics for one candidate map.

use super::class_moments::ClassMoments;
use crate::model::Task;
use crate::pipeline::Features;
use kapprox_core::Moments;
use ndarray::{ArrayView1, ArrayView2, Axis};

/// Regression keeps target moments directly; classification keeps class
/// sums, because the classes are only known when the pass ends.
#[derive(Clone, Debug)]
pub enum Acc {
    /// One target column.
    Regression(Moments),
    /// One-vs-rest, classes discovered on the way.
    Classification(ClassMoments),
}

impl Acc {
    /// An empty accumulator over `l` features.
    pub fn new(task: Task, l: usize) -> Acc {
        match task {
            Task::Regression => Acc::Regression(Moments::new(l, 1)),
            Task::Classification => Acc::Classification(ClassMoments::new(l)),
        }
    }

    /// Adds the chunk rows `rows` (ascending).
    pub fn update(&mut self, z: &Features, y: ArrayView1<'_, f64>, rows: &[usize]) {
        if rows.is_empty() {
            return;
        }
        match self {
            Acc::Regression(m) => {
                let y2 = y.insert_axis(Axis(1));
                match z {
                    Features::Dense(z) => m.update_selected(z.view(), y2, rows),
                    Features::Sparse(z) => m.update_sparse_selected(z.view(), y2, rows),
                }
            }
            Acc::Classification(m) => match z {
                Features::Dense(z) => m.update_selected(z.view(), y, rows),
                Features::Sparse(z) => m.update_sparse_selected(z.view(), y, rows),
            },
        }
    }

    /// [`Acc::update`] with dense `f32` features (`--precision f32`).
    pub fn update_f32(&mut self, z: ArrayView2<'_, f32>, y: ArrayView1<'_, f64>, rows: &[usize]) {
        if rows.is_empty() {
            return;
        }
        match self {
            Acc::Regression(m) => m.update_f32_selected(z, y.insert_axis(Axis(1)), rows),
            Acc::Classification(m) => m.update_f32_selected(z, y, rows),
        }
    }

    /// Adds another accumulator of the same kind.
    pub fn merge(&mut self, other: &Acc) {
        match (self, other) {
            (Acc::Regression(a), Acc::Regression(b)) => a.merge(b),
            (Acc::Classification(a), Acc::Classification(b)) => a.merge(b),
            _ => panic!("merging a regression and a classification accumulator"),
        }
    }

    /// Flushes buffered rows.
    pub fn flush(&mut self) {
        match self {
            Acc::Regression(m) => m.flush(),
            Acc::Classification(m) => m.flush(),
        }
    }

    /// Classes seen (classification).
    pub fn classes(&self) -> Vec<f64> {
        match self {
            Acc::Regression(_) => Vec::new(),
            Acc::Classification(m) => m.classes(),
        }
    }

    /// Feature Gram plus targets: regression as is, classification for the
    /// class list `classes` (±1 one-vs-rest). Consumes the accumulator, so
    /// that selection never holds two copies of the statistics.
    pub fn into_moments(self, classes: &[f64]) -> Moments {
        match self {
            Acc::Regression(mut m) => {
                m.flush();
                m
            }
            Acc::Classification(m) => m.into_moments(classes),
        }
    }

    /// Row count.
    pub fn n_samples(&mut self) -> f64 {
        self.flush();
        match self {
            Acc::Regression(m) => m.n_samples(),
            Acc::Classification(m) => m.n_samples(),
        }
    }
}
