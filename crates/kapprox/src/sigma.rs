//! Bandwidth candidates: numbers or multiples of the median rule, and the
//! rule itself.
//!
//! `auto` is the median Euclidean distance between [`SIGMA_SAMPLE_ROWS`]
//! rows after scaling, the rows with the smallest seeded hash of their
//! global row id (the prepare pass's reservoir), so every layout and every
//! process picks the same rows.

use anyhow::{Result, bail};
use ndarray::ArrayView2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Rows sampled for the median rule of `auto` bandwidths.
pub const SIGMA_SAMPLE_ROWS: usize = 1000;

/// A bandwidth candidate: a number, or a multiple of the median rule.
///
/// Parses from `2.5`, `auto` or `auto*0.5`; stored in part files as
/// `{"value": 2.5}` or `{"auto": 0.5}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SigmaSpec {
    /// σ given explicitly.
    Value(f64),
    /// σ = factor × median pairwise distance of a row sample.
    Auto(f64),
}

impl SigmaSpec {
    /// Whether this candidate needs the median distance.
    pub fn is_auto(self) -> bool {
        matches!(self, SigmaSpec::Auto(_))
    }

    /// Resolves against the median distance (when needed).
    ///
    /// # Panics
    /// An `auto` candidate without a median: `median.is_some() || !self.is_auto()`.
    pub fn resolve(self, median: Option<f64>) -> f64 {
        match self {
            SigmaSpec::Value(v) => v,
            SigmaSpec::Auto(f) => f * median.expect("median distance computed when auto bandwidths are used"),
        }
    }
}

impl std::str::FromStr for SigmaSpec {
    type Err = anyhow::Error;

    /// A positive number, `auto` or `auto*F` with `F > 0`.
    fn from_str(text: &str) -> Result<SigmaSpec> {
        let part = text.trim();
        Ok(if part == "auto" {
            SigmaSpec::Auto(1.0)
        } else if let Some(f) = part.strip_prefix("auto*") {
            SigmaSpec::Auto(positive(f)?)
        } else {
            SigmaSpec::Value(positive(part)?)
        })
    }
}

impl std::fmt::Display for SigmaSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            SigmaSpec::Value(v) => write!(f, "{v}"),
            SigmaSpec::Auto(1.0) => f.write_str("auto"),
            SigmaSpec::Auto(x) => write!(f, "auto*{x}"),
        }
    }
}

/// Parses a comma-separated list of candidates (`--sigma`); a candidate
/// listed twice is refused.
pub fn parse_sigmas(text: &str) -> Result<Vec<SigmaSpec>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let spec: SigmaSpec = part.parse()?;
        if out.contains(&spec) {
            bail!("--sigma: {part:?} is listed twice");
        }
        out.push(spec);
    }
    Ok(out)
}

fn positive(text: &str) -> Result<f64> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => bail!("--sigma: {text:?} is not a positive number"),
    }
}

/// Median Euclidean distance over all pairs of rows of `x` (1 when there
/// are fewer than two distinct rows).
///
/// Every pair's squared distance is summed over the columns in order, as a
/// plain loop would, so the median does not depend on the thread count; the
/// loops run over a column-major copy so that one column's differences to
/// all earlier rows vectorise, and rows are spread over threads.
pub fn median_distance(x: &ArrayView2<'_, f64>) -> f64 {
    let n = x.nrows();
    let columns = x.t().as_standard_layout().into_owned();
    let mut d = vec![0.0f64; n * n.saturating_sub(1) / 2];
    // Row i's distances to rows 0..i occupy d[i(i-1)/2 ..][..i].
    let mut rows: Vec<(usize, &mut [f64])> = Vec::with_capacity(n);
    let mut rest = d.as_mut_slice();
    for i in 0..n {
        let (row, tail) = rest.split_at_mut(i);
        rows.push((i, row));
        rest = tail;
    }
    rows.into_par_iter().for_each(|(i, acc)| {
        for column in columns.rows() {
            let column = column.as_slice().expect("standard layout");
            let xi = column[i];
            for (a, &xj) in acc.iter_mut().zip(&column[..i]) {
                let t = xi - xj;
                *a += t * t;
            }
        }
        acc.iter_mut().for_each(|a| *a = a.sqrt());
    });
    if d.is_empty() {
        return 1.0;
    }
    let mid = d.len() / 2;
    let (_, m, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if *m > 0.0 { *m } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigma_lists() {
        assert_eq!(
            parse_sigmas("auto*0.5, auto,2").unwrap(),
            vec![SigmaSpec::Auto(0.5), SigmaSpec::Auto(1.0), SigmaSpec::Value(2.0)]
        );
        assert!(parse_sigmas("0").unwrap_err().to_string().contains("\"0\" is not a positive number"));
        assert!(parse_sigmas("auto*x").is_err());
        assert!(parse_sigmas("1,1").is_err());
    }

    #[test]
    fn text_round_trips() {
        for s in [SigmaSpec::Auto(1.0), SigmaSpec::Auto(0.25), SigmaSpec::Value(3.5)] {
            assert_eq!(s.to_string().parse::<SigmaSpec>().unwrap(), s);
        }
    }

    #[test]
    fn the_median_equals_the_plain_pairwise_loop_bitwise() {
        let x = ndarray::Array2::from_shape_fn((203, 7), |(i, j)| ((i * 31 + j * 17) % 29) as f64 * 0.37 - (j as f64));
        let mut all = Vec::new();
        for i in 0..x.nrows() {
            for j in 0..i {
                let s: f64 = x.row(i).iter().zip(x.row(j)).map(|(a, b)| (a - b) * (a - b)).sum();
                all.push(s.sqrt());
            }
        }
        all.sort_by(f64::total_cmp);
        assert_eq!(median_distance(&x.view()).to_bits(), all[all.len() / 2].to_bits());
    }

    #[test]
    fn the_median_of_a_known_set() {
        // Points 0, 1, 3 on a line: distances 1, 2, 3.
        let x = ndarray::array![[0.0], [1.0], [3.0]];
        assert_eq!(median_distance(&x.view()), 2.0);
        assert_eq!(median_distance(&ndarray::array![[5.0]].view()), 1.0);
    }
}
