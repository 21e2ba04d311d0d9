//! Axis ranges and tick marks: round linear multiples, 1-2-5 logarithmic
//! steps, short labels.

use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged};

/// An axis with the given tick positions: `bold` (labelled, darker grid
/// lines) and `light` (lighter grid lines) over the inner axis' mapping.
pub(super) struct Ticks<R> {
    inner: R,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticks<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { self.light.clone() } else { self.bold.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

/// `inner` (a range, or a range with `.log_scale()`) with these ticks.
pub(super) fn ticks<A: AsRangedCoord<Value = f64>>(
    inner: A,
    (bold, light): (Vec<f64>, Vec<f64>),
) -> Ticks<A::CoordDescType>
where
    A::CoordDescType: Ranged<ValueType = f64>,
{
    Ticks { inner: inner.into(), bold, light }
}

/// Tick labels: three significant digits, no trailing zeros.
pub(super) fn tick(v: &f64) -> String {
    tick_with(*v, false)
}

/// Tick labels of an axis reaching 10⁶: from 10⁴ up in e-notation (`2.5e4`),
/// so that its labels stay short and alike.
pub(super) fn tick_sci(v: &f64) -> String {
    tick_with(*v, true)
}

pub(super) fn tick_with(v: f64, sci: bool) -> String {
    let a = v.abs();
    if a < 1e-12 {
        return "0".into();
    }
    if a < 1e-3 || a >= if sci { 1e4 } else { 1e6 } {
        let s = format!("{v:.2e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        return format!("{m}e{e}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A value written on a bar: four significant digits.
pub fn value_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e7).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = (3 - a.log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// Ticks of a linear axis over `lo..hi`: about `target` multiples of 1, 2
/// or 5 times a power of ten (bold, labelled), and the halves between them
/// (light).
pub(super) fn linear_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, Vec<f64>) {
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return (vec![lo], vec![]);
    }
    let raw = span / target.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    let bold: Vec<f64> =
        (first..=last).map(|k| k as f64 * step).map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v }).collect();
    let light = ((2 * first - 1)..=(2 * last + 1))
        .filter(|k| k % 2 != 0)
        .map(|k| k as f64 * step / 2.0)
        .filter(|v| (lo..=hi).contains(v))
        .collect();
    (bold, light)
}

/// Ticks of a logarithmic axis over `lo..hi` (positive): labels at the
/// densest of (1..9, 1-2-3-5-7, 1-2-5, 1-3, 1) times the powers of ten that
/// gives at most ten, light lines at every multiple; a range too narrow for
/// three such labels gets linear ticks.
pub(super) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut light = Vec::new();
    let mut all = Vec::new();
    for e in e0..=e1 {
        let p = 10f64.powi(e);
        for m in 1..10 {
            let v = m as f64 * p;
            if v >= lo && v <= hi {
                light.push(v);
                all.push((m, v));
            }
        }
    }
    let pick = |ms: &[i32]| -> Vec<f64> { all.iter().filter(|(m, _)| ms.contains(m)).map(|(_, v)| *v).collect() };
    // The densest labelling with at most ten labels.
    let sets: [&[i32]; 5] = [&[1, 2, 3, 4, 5, 6, 7, 8, 9], &[1, 2, 3, 5, 7], &[1, 2, 5], &[1, 3], &[1]];
    let bold = sets.iter().map(|m| pick(m)).find(|b| b.len() <= 10).unwrap_or_else(|| pick(&[1]));
    if bold.len() >= 3 { (bold, light) } else { linear_ticks(lo, hi, 5) }
}

/// Axis range of values, padded; positive for log axes.
pub(super) fn range(values: impl Iterator<Item = f64>, log: bool) -> std::ops::Range<f64> {
    let v: Vec<f64> = values.filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
    let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    if !lo.is_finite() {
        return if log { 0.1..10.0 } else { 0.0..1.0 };
    }
    if log {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo / 2.0, hi * 2.0) };
        let pad = (hi / lo).powf(0.06);
        lo / pad..hi * pad
    } else {
        let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
        lo - 0.06 * span..hi + 0.06 * span
    }
}

/// Tick labels of a base-2 axis holding `log2(x)`: the power of two at
/// integer positions, nothing between them.
pub(super) fn tick_pow2(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 { tick(&2f64.powf(v.round())) } else { String::new() }
}
