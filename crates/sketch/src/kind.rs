//! The name of each range sketch, below the sketches so that their errors
//! can name a kind without importing the sketches.

use serde::{Deserialize, Serialize};

/// The kind of a range sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SketchKind {
    /// The Gaussian sketch (`GaussianSketch`).
    Gaussian,
    /// The subsampled randomized Hadamard transform (`SrhtSketch`) with its
    /// default block size.
    Srht,
    /// The count sketch (`CountSketch`).
    CountSketch,
}

impl std::fmt::Display for SketchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SketchKind::Gaussian => "gaussian",
            SketchKind::Srht => "srht",
            SketchKind::CountSketch => "count-sketch",
        })
    }
}
