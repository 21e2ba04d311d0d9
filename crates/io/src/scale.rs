//! Column scaling fitted from [`ColumnStats`].

use crate::stats::ColumnStats;
use ndarray::ArrayViewMut2;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which scaling to fit; see [`Scaler::fit`]. Parses from `none`,
/// `standard` and `minmax` (also `min-max`, `min_max`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalerKind {
    /// No scaling.
    #[default]
    None,
    /// Zero mean, unit variance.
    Standard,
    /// Into `[0, 1]`.
    MinMax,
}

impl FromStr for ScalerKind {
    type Err = crate::IoError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(ScalerKind::None),
            "standard" => Ok(ScalerKind::Standard),
            "minmax" | "min-max" | "min_max" => Ok(ScalerKind::MinMax),
            _ => Err(crate::IoError::InvalidOption {
                option: "scaler",
                value: s.to_string(),
                expected: "one of none, standard, minmax",
            }),
        }
    }
}

impl fmt::Display for ScalerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScalerKind::None => "none",
            ScalerKind::Standard => "standard",
            ScalerKind::MinMax => "minmax",
        })
    }
}

/// A per-column affine scaling, stored in model files (serde, tagged by
/// `kind`).
///
/// - `Standard`: `x ↦ (x − mean) / scale` with `scale` the population
///   standard deviation (scikit-learn's `StandardScaler`).
/// - `MinMax`: `x ↦ clamp((x − min) / range, 0, 1)` with `range = max − min`.
///   Values outside the fitted range (new data at predict time) are clamped
///   so that the result always lies in `[0, 1]`, which EOF feature maps
///   require.
///
/// A constant column (zero variance or zero range) gets `scale = 1` /
/// `range = 1`, so it maps to 0 instead of dividing by zero.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scaler {
    /// Identity.
    None,
    /// `(x − mean) / scale`.
    Standard {
        /// Column means.
        mean: Vec<f64>,
        /// Column standard deviations (1 for constant columns).
        scale: Vec<f64>,
    },
    /// `clamp((x − min) / range, 0, 1)`.
    MinMax {
        /// Column minima.
        min: Vec<f64>,
        /// `max − min` (1 for constant columns).
        range: Vec<f64>,
    },
}

impl Scaler {
    /// Standard scaling from statistics.
    pub fn standard(stats: &ColumnStats) -> Scaler {
        let scale = stats.std().into_iter().map(|s| if s > 0.0 && s.is_finite() { s } else { 1.0 }).collect();
        Scaler::Standard { mean: stats.mean().to_vec(), scale }
    }

    /// Min-max scaling from statistics.
    pub fn min_max(stats: &ColumnStats) -> Scaler {
        Scaler::min_max_from_bounds(stats.min(), stats.max())
    }

    /// Min-max scaling from column bounds, e.g. from
    /// [`Dataset::footer_min_max`](crate::Dataset::footer_min_max).
    ///
    /// # Panics
    /// `min.len() == max.len()`.
    #[track_caller]
    pub fn min_max_from_bounds(min: &[f64], max: &[f64]) -> Scaler {
        assert_eq!(min.len(), max.len(), "min_max_from_bounds: {} minima, {} maxima", min.len(), max.len());
        let lo: Vec<f64> = min.iter().map(|&m| if m.is_finite() { m } else { 0.0 }).collect();
        let range = lo
            .iter()
            .zip(max)
            .map(|(&l, &h)| {
                let r = h - l;
                if r > 0.0 && r.is_finite() { r } else { 1.0 }
            })
            .collect();
        Scaler::MinMax { min: lo, range }
    }

    /// Fits the scaling of the given kind.
    pub fn fit(kind: ScalerKind, stats: &ColumnStats) -> Scaler {
        match kind {
            ScalerKind::None => Scaler::None,
            ScalerKind::Standard => Scaler::standard(stats),
            ScalerKind::MinMax => Scaler::min_max(stats),
        }
    }

    /// The kind of this scaling.
    pub fn kind(&self) -> ScalerKind {
        match self {
            Scaler::None => ScalerKind::None,
            Scaler::Standard { .. } => ScalerKind::Standard,
            Scaler::MinMax { .. } => ScalerKind::MinMax,
        }
    }

    /// Number of columns it applies to (`None` for the identity, which fits
    /// any width).
    pub fn n_columns(&self) -> Option<usize> {
        match self {
            Scaler::None => None,
            Scaler::Standard { mean, .. } => Some(mean.len()),
            Scaler::MinMax { min, .. } => Some(min.len()),
        }
    }

    /// Scales the rows of `x`, shape `(n_rows, n_columns)`, in place.
    ///
    /// Cost: one pass over `x`, no allocation.
    ///
    /// # Panics
    /// `x.ncols()` must equal [`n_columns`](Scaler::n_columns) (any width
    /// for `None`).
    #[track_caller]
    pub fn apply_in_place(&self, mut x: ArrayViewMut2<'_, f64>) {
        if let Some(d) = self.n_columns() {
            assert_eq!(x.ncols(), d, "Scaler::apply_in_place: x has {} columns, expected {d}", x.ncols());
        }
        match self {
            Scaler::None => {}
            Scaler::Standard { mean, scale } => {
                for mut row in x.rows_mut() {
                    for ((v, m), s) in row.iter_mut().zip(mean).zip(scale) {
                        *v = (*v - m) / s;
                    }
                }
            }
            Scaler::MinMax { min, range } => {
                for mut row in x.rows_mut() {
                    for ((v, m), r) in row.iter_mut().zip(min).zip(range) {
                        *v = ((*v - m) / r).clamp(0.0, 1.0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn standard_centres_and_scales_like_sklearn() {
        let x = array![[1.0, 5.0, 2.0], [3.0, 5.0, 4.0], [5.0, 5.0, 9.0]];
        let mut st = ColumnStats::unnamed(3);
        st.update(x.view());
        let sc = Scaler::standard(&st);
        let mut y = x.clone();
        sc.apply_in_place(y.view_mut());
        // Column 0: mean 3, population sd sqrt(8/3).
        let sd = (8.0f64 / 3.0).sqrt();
        assert!((y[[0, 0]] + 2.0 / sd).abs() < 1e-12);
        // Constant column: scale 1, maps to 0.
        assert_eq!(y.column(1).to_vec(), vec![0.0; 3]);
        for j in [0, 2] {
            let c = y.column(j);
            assert!(c.sum().abs() < 1e-12);
            assert!((c.mapv(|v| v * v).sum() / 3.0 - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn min_max_maps_into_unit_interval_and_clamps() {
        let x = array![[1.0, 7.0], [3.0, 7.0], [5.0, 7.0]];
        let mut st = ColumnStats::unnamed(2);
        st.update(x.view());
        let sc = Scaler::min_max(&st);
        let mut y = array![[1.0, 7.0], [4.0, 7.0], [5.0, 8.0], [-10.0, 0.0], [99.0, 7.0]];
        sc.apply_in_place(y.view_mut());
        assert_eq!(y, array![[0.0, 0.0], [0.75, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]]);
    }

    #[test]
    fn serde_is_tagged_and_round_trips() {
        let sc = Scaler::MinMax { min: vec![0.0, 1.0], range: vec![2.0, 1.0] };
        let json = serde_json::to_string(&sc).unwrap();
        assert_eq!(json, r#"{"kind":"min_max","min":[0.0,1.0],"range":[2.0,1.0]}"#);
        assert_eq!(serde_json::from_str::<Scaler>(&json).unwrap(), sc);
        assert_eq!(serde_json::to_string(&Scaler::None).unwrap(), r#"{"kind":"none"}"#);
        assert_eq!("MinMax".parse::<ScalerKind>().unwrap(), ScalerKind::MinMax);
        assert!("zscore".parse::<ScalerKind>().unwrap_err().to_string().contains(r#""zscore""#));
    }
}
