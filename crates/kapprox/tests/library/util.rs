//! Small datasets written by the library itself.

use kapprox::Silent;
use kapprox::generate::{GenerateConfig, generate};
use std::path::{Path, PathBuf};

/// A temporary directory with a synthetic regression dataset `data/`: 600
/// rows of 4 Gaussian inputs and a smooth target, in 3 shards of 200 rows
/// (the same rows as the fixtures were fitted on).
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let cfg = GenerateConfig { rows: 600, features: 4, classes: 0, rows_per_shard: 200, seed: 7, overwrite: false };
        generate(&cfg, &dir.path().join("data"), &Silent).expect("generate");
        Fixture { dir }
    }

    /// The dataset.
    pub(crate) fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A path in the directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A file of `tests/library/fixtures`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/library/fixtures").join(name)
}

/// The largest relative difference between two arrays (0 for equal ones).
pub(crate) fn rel_diff(a: ndarray::ArrayView1<'_, f64>, b: ndarray::ArrayView1<'_, f64>) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = a.iter().chain(b.iter()).fold(0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    a.iter().zip(b).fold(0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}
