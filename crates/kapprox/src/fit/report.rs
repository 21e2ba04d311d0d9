//! What a fit reports: the chosen bandwidth and penalty, every candidate's
//! validation curve, passes, statistics and time.

use anyhow::Result;
use serde::Serialize;

/// One α of a candidate's validation curve.
#[derive(Clone, Debug, Serialize)]
pub struct CurvePoint {
    /// Ridge penalty.
    pub alpha: f64,
    /// Mean validation MSE (over held-out parts and targets).
    pub mse: f64,
    /// Mean validation accuracy (classification).
    pub accuracy: Option<f64>,
    /// Mean validation macro-F1 (classification).
    pub macro_f1: Option<f64>,
}

/// One bandwidth candidate's selection result.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    /// Bandwidth.
    pub sigma: f64,
    /// Output features of the candidate's map.
    pub n_features: usize,
    /// Best α for this σ.
    pub best_alpha: f64,
    /// Validation MSE at the best α.
    pub validation_mse: f64,
    /// Validation accuracy at the best α (classification).
    pub validation_accuracy: Option<f64>,
    /// Validation macro-F1 at the best α (classification).
    pub validation_macro_f1: Option<f64>,
    /// The whole curve, in grid order.
    pub curve: Vec<CurvePoint>,
}

impl CandidateReport {
    /// Whether `self` selects before `other`: higher validation accuracy
    /// (classification; differences under 1e-12 are ties), else lower
    /// validation MSE.
    pub fn ranks_before(&self, other: &CandidateReport) -> std::cmp::Ordering {
        match (self.validation_accuracy, other.validation_accuracy) {
            (Some(x), Some(y)) if (x - y).abs() > 1e-12 => y.total_cmp(&x),
            _ => self.validation_mse.total_cmp(&other.validation_mse),
        }
    }
}

/// What `fit` did.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// The method, e.g. `rff`, `nystrom`, `tefm-g`.
    pub method: String,
    /// Rows used.
    pub rows: u64,
    /// Rows dropped under `--nan skip` (or for a missing label under `--nan impute`).
    pub skipped: u64,
    /// Missing values replaced by training means or "other" (`--nan impute`).
    #[serde(skip_serializing_if = "is_zero")]
    pub imputed: u64,
    /// Per categorical column: values of the fit pass outside the
    /// vocabulary (rarer than `--max-categories` allows, or imputed nulls).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<(String, u64)>,
    /// Rows held out for selection (validation part, or all rows with folds).
    pub validation_rows: f64,
    /// Full passes over the data.
    pub passes: u64,
    /// The median distance of the σ rule, if used.
    pub median_distance: Option<f64>,
    /// Chosen bandwidth.
    pub sigma: f64,
    /// Chosen ridge penalty.
    pub alpha: f64,
    /// Output features of the chosen map.
    pub n_features: usize,
    /// Per-candidate selection.
    pub candidates: Vec<CandidateReport>,
    /// Bytes of statistics held by the fit pass.
    pub statistics_bytes: u64,
    /// What `--extend-grid` added (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended: Option<super::extend::GridExtension>,
    /// Seconds per stage.
    pub seconds: Timings,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Wall-clock seconds per stage.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Statistics / sampling pass.
    pub prepare: f64,
    /// Sketch passes.
    pub sketch: f64,
    /// The fit pass (read, map, accumulate).
    pub pass: f64,
    /// Selection and the final solve.
    pub solve: f64,
    /// Everything.
    pub total: f64,
}

impl FitReport {
    /// The part of the report stored in the model: everything but timings,
    /// so that the same data, seed and layout give a bitwise-equal model
    /// file.
    pub fn training_record(&self) -> Result<serde_json::Value> {
        let mut v = serde_json::to_value(self)?;
        if let Some(o) = v.as_object_mut() {
            o.remove("seconds");
        }
        Ok(v)
    }
}

/// The default α grid: `n · 10^(−9..−1)`, 17 values. Features of every map
/// have `‖z‖² ≈ 1`, so ZᵀZ grows like n and useful penalties scale with it.
pub fn default_alphas(n: f64) -> Vec<f64> {
    (0..17).map(|i| n * 10f64.powf(-9.0 + 0.5 * i as f64)).collect()
}

impl FitReport {
    /// What a user should know about the selection: the chosen σ or α at
    /// the edge of its grid (the best value may lie beyond it), and a
    /// Nyström map that kept fewer features than the `requested` landmarks
    /// (eigenvalues of `K_mm` at or below `rel_tol · λ_max` are dropped).
    pub fn warnings(&self, requested: usize) -> Vec<String> {
        let mut out = Vec::new();
        let hint = if self.extended.is_some() { " (even after --extend-grid)" } else { " or use --extend-grid" };
        let sigmas: Vec<f64> = self.candidates.iter().map(|c| c.sigma).collect();
        if let Some(side) = edge(&sigmas, self.sigma) {
            out.push(format!(
                "sigma {:.4} is the {side} of the {} --sigma candidates: the best bandwidth may lie beyond; add \
                 candidates {} it (e.g. auto*{}){hint}",
                self.sigma,
                sigmas.len(),
                if side == "smallest" { "below" } else { "above" },
                if side == "smallest" { "0.25" } else { "8" }
            ));
        }
        let chosen = self.candidates.iter().find(|c| c.sigma == self.sigma);
        let alphas: Vec<f64> = chosen.map(|c| c.curve.iter().map(|p| p.alpha).collect()).unwrap_or_default();
        if let Some(side) = edge(&alphas, self.alpha) {
            out.push(format!(
                "alpha {:.3e} is the {side} of the {} --alpha values: the best penalty may lie beyond; extend the \
                 range {} (--alpha LO..HI:N){hint}",
                self.alpha,
                alphas.len(),
                if side == "smallest" { "downwards" } else { "upwards" }
            ));
        }
        if self.method == "nystrom" && self.n_features < requested {
            out.push(format!(
                "nystrom kept {} of {requested} features: the other eigenvalues of the landmarks' kernel matrix are \
                 below --rel-tol times the largest (numerically rank-deficient); --rel-tol 0 keeps every positive one",
                self.n_features
            ));
        }
        out
    }
}

/// `"smallest"` or `"largest"` when `chosen` is at that end of a grid of
/// more than one distinct value.
fn edge(grid: &[f64], chosen: f64) -> Option<&'static str> {
    let lo = grid.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = grid.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if grid.len() < 2 || lo >= hi {
        None
    } else if chosen <= lo {
        Some("smallest")
    } else if chosen >= hi {
        Some("largest")
    } else {
        None
    }
}
