//! Plots of the experiments: line charts (optionally log-scaled, with error
//! bars) and rendered tables, as PNG through plotters' pure-Rust bitmap
//! backend.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered
//! with ab_glyph as `sans-serif`, so plots need no system fonts. Each
//! series gets its own colour (the tab10 palette) and marker shape, so
//! lines stay distinguishable in greyscale too.

use anyhow::{Context, Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// DejaVu Sans (Bitstream Vera license, see `assets/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
const FONT_FAMILY: &str = "sans-serif";

/// The tab10 palette: distinct for up to ten series.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn register_font() -> Result<()> {
    static ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *ONCE.get_or_init(|| plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(anyhow!("the embedded font cannot be read")) }
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plot: {e:?}")
}

/// One line (or, in a bar chart, one group of bars) of a chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` points, drawn in order. In a bar chart `x` is the index of
    /// the category.
    pub points: Vec<(f64, f64)>,
    /// Half-widths of vertical error bars, one per point.
    pub err: Option<Vec<f64>>,
}

/// Where a chart's legend goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Legend {
    /// The corner (or side) where it covers the fewest drawn points.
    #[default]
    Auto,
    /// Top right corner.
    UpperRight,
    /// Bottom left corner.
    LowerLeft,
    /// Bottom right corner.
    LowerRight,
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Logarithmic, ticks at powers of ten and their multiples.
    Log,
    /// Logarithmic with ticks at powers of two (feature counts).
    Log2,
}

/// What a chart draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Kind {
    /// Lines with markers (and error bars).
    #[default]
    Lines,
    /// Grouped bars from zero: one group per category (the x axis), one bar
    /// per series within a group, the value written above each bar.
    Bars(Vec<String>),
}

/// One chart.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// X-axis description, with units.
    pub x_label: String,
    /// Y-axis description, with units.
    pub y_label: String,
    /// X-axis scale (lines only).
    pub x_scale: Scale,
    /// Logarithmic y axis (lines only).
    pub log_y: bool,
    /// Legend position.
    pub legend: Legend,
    /// Lines or bars.
    pub kind: Kind,
    /// The lines (bar groups).
    pub series: Vec<Series>,
}

/// A table drawn under the charts of a figure.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Heading above the table.
    pub title: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// Footnote lines under the table.
    pub note: String,
}

/// An axis with the given tick positions: `bold` (labelled, darker grid
/// lines) and `light` (lighter grid lines) over the inner axis' mapping.
struct Ticks<R> {
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
fn ticks<A: AsRangedCoord<Value = f64>>(inner: A, (bold, light): (Vec<f64>, Vec<f64>)) -> Ticks<A::CoordDescType>
where
    A::CoordDescType: Ranged<ValueType = f64>,
{
    Ticks { inner: inner.into(), bold, light }
}

/// Tick labels: three significant digits, no trailing zeros.
fn tick(v: &f64) -> String {
    tick_with(*v, false)
}

/// Tick labels of an axis reaching 10⁶: from 10⁴ up in e-notation (`2.5e4`),
/// so that its labels stay short and alike.
fn tick_sci(v: &f64) -> String {
    tick_with(*v, true)
}

fn tick_with(v: f64, sci: bool) -> String {
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
fn linear_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, Vec<f64>) {
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
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
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

/// A marker polygon of `size` pixels for series `i`: circle, square,
/// triangle up, diamond, triangle down, plus, pentagon, star, ...
fn marker_shape(i: usize, size: f64) -> Vec<(i32, i32)> {
    let poly = |n: usize, r: f64, rot: f64| -> Vec<(i32, i32)> {
        (0..n)
            .map(|k| {
                let t = rot + 2.0 * std::f64::consts::PI * k as f64 / n as f64;
                ((r * t.sin()).round() as i32, (-r * t.cos()).round() as i32)
            })
            .collect()
    };
    let s = size;
    match i % 8 {
        0 => poly(16, s, 0.0),
        1 => poly(4, s * 1.2, std::f64::consts::FRAC_PI_4),
        2 => poly(3, s * 1.3, 0.0),
        3 => poly(4, s * 1.3, 0.0),
        4 => poly(3, s * 1.3, std::f64::consts::PI),
        5 => {
            let (a, b) = ((s * 0.4).round() as i32, (s * 1.2).round() as i32);
            vec![
                (-a, -b),
                (a, -b),
                (a, -a),
                (b, -a),
                (b, a),
                (a, a),
                (a, b),
                (-a, b),
                (-a, a),
                (-b, a),
                (-b, -a),
                (-a, -a),
            ]
        }
        6 => poly(5, s * 1.2, 0.0),
        _ => (0..10)
            .map(|k| {
                let r = if k % 2 == 0 { s * 1.4 } else { s * 0.6 };
                let t = std::f64::consts::PI * k as f64 / 5.0;
                ((r * t.sin()).round() as i32, (-r * t.cos()).round() as i32)
            })
            .collect(),
    }
}

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Series with an odd index are drawn dashed, so that lines lying on top of
/// each other stay visible.
fn dashed(i: usize) -> bool {
    i % 2 == 1
}

/// Axis range of values, padded; positive for log axes.
fn range(values: impl Iterator<Item = f64>, log: bool) -> std::ops::Range<f64> {
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
fn tick_pow2(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 { tick(&2f64.powf(v.round())) } else { String::new() }
}

/// The legend's box (width, height) in pixels for these entries, as
/// plotters lays it out (30 px of sample line, 10 px margins).
fn legend_size<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, names: &[&str]) -> (i32, i32) {
    let font = (FONT_FAMILY, LEGEND_FONT).into_font();
    let mut text = MultiLineText::<_, &str>::new((0, 0), font);
    for n in names {
        text.push_line(*n);
    }
    let (w, h) = text.estimate_dimension().unwrap_or_else(|_| {
        let chars = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as i32;
        (chars * 9, names.len() as i32 * 19)
    });
    let _ = area;
    (w + 30 + 20, h + 20)
}

/// The legend position (relative to the plotting area of `pw × ph`
/// pixels) whose box covers the fewest of `samples` (pixels relative to
/// the same area), preferring the corners in reading order.
fn place_legend(samples: &[(i32, i32)], (w, h): (i32, i32), (pw, ph): (i32, i32)) -> (i32, i32) {
    let (left, centre, right) = (5, (pw - w) / 2, pw - w - 5);
    let (top, middle, bottom) = (5, (ph - h) / 2, ph - h - 5);
    let candidates = [
        (right, top),
        (left, top),
        (right, bottom),
        (left, bottom),
        (right, middle),
        (left, middle),
        (centre, top),
        (centre, bottom),
    ];
    let pad = 4;
    let hits = |&(x, y): &(i32, i32)| {
        samples
            .iter()
            .filter(|&&(sx, sy)| sx >= x - pad && sx <= x + w + pad && sy >= y - pad && sy <= y + h + pad)
            .count()
    };
    let mut best = candidates[0];
    let mut best_hits = usize::MAX;
    for c in &candidates {
        let n = hits(c);
        if n < best_hits {
            best = *c;
            best_hits = n;
        }
    }
    best
}

const LEGEND_FONT: u32 = 16;

fn draw_panel<DB, X, Y>(area: &DrawingArea<DB, Shift>, p: &Panel, xs: X, ys: Y) -> Result<()>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let categories = match &p.kind {
        Kind::Bars(c) => Some(c.clone()),
        Kind::Lines => None,
    };
    let category = |v: &f64| -> String {
        let k = v.round();
        match &categories {
            Some(c) if (v - k).abs() < 1e-9 && k >= 0.0 && (k as usize) < c.len() => c[k as usize].clone(),
            _ => String::new(),
        }
    };
    let x_fmt: &dyn Fn(&f64) -> String = match (&p.kind, p.x_scale) {
        (Kind::Bars(_), _) => &category,
        (_, Scale::Log2) => &tick_pow2,
        _ => &tick,
    };
    let ys: Y::CoordDescType = ys.into();
    let yr = ys.range();
    let y_fmt: &dyn Fn(&f64) -> String = if yr.start.abs().max(yr.end.abs()) >= 1e6 { &tick_sci } else { &tick };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(58)
        .y_label_area_size(84)
        .build_cartesian_2d(xs, ys)
        .map_err(plot_err)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 15))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(240, 240, 240))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt);
    if categories.is_some() {
        mesh.disable_x_mesh().x_label_style((FONT_FAMILY, 16));
    }
    mesh.draw().map_err(plot_err)?;
    let base = chart.plotting_area().get_base_pixel();
    let to_px = |chart: &ChartContext<DB, _>, pt: (f64, f64)| {
        let (x, y) = chart.backend_coord(&pt);
        (x - base.0, y - base.1)
    };
    // Pixels the legend should not cover.
    let mut samples: Vec<(i32, i32)> = Vec::new();
    let n_series = p.series.len().max(1);
    for (i, s) in p.series.iter().enumerate() {
        let c = color(i);
        let line = ShapeStyle { color: c.to_rgba(), filled: false, stroke_width: 2 };
        if let Some(names) = &categories {
            // Bars: group of n_series bars centred on each category.
            let bw = 0.8 / n_series as f64;
            for &(x, y) in &s.points {
                let x0 = x - 0.4 + i as f64 * bw;
                let x1 = x0 + bw * 0.92;
                chart
                    .draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, y)], c.filled())))
                    .map_err(plot_err)?;
                let top = to_px(&chart, ((x0 + x1) / 2.0, y));
                let text = value_label(y);
                let style = (FONT_FAMILY, 14).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom));
                chart
                    .plotting_area()
                    .strip_coord_spec()
                    .draw(&Text::new(text, (top.0, top.1 - 3), style))
                    .map_err(plot_err)?;
                let (a, b) = (to_px(&chart, (x0, 0.0)), to_px(&chart, (x1, y)));
                for sx in (a.0..=b.0).step_by(4) {
                    for sy in (b.1 - 20..=a.1).step_by(4) {
                        samples.push((sx, sy));
                    }
                }
            }
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                .map_err(plot_err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 7), (x + 24, y + 7)], c.filled()));
            let _ = names;
            continue;
        }
        if let Some(err) = &s.err {
            let bars: Vec<_> = s
                .points
                .iter()
                .zip(err)
                .filter(|(_, e)| **e > 0.0)
                .map(|(&(x, y), &e)| {
                    // On a log axis a bar reaching zero would have no end: clip it.
                    let lo = if p.log_y { (y - e).max(y * 0.05) } else { y - e };
                    (x, y, lo, y + e)
                })
                .collect();
            for &(x, _, lo, hi) in &bars {
                samples.push(to_px(&chart, (x, lo)));
                samples.push(to_px(&chart, (x, hi)));
            }
            chart
                .draw_series(
                    bars.iter().map(|&(x, y, lo, hi)| ErrorBar::new_vertical(x, lo, y, hi, c.stroke_width(1), 8)),
                )
                .map_err(plot_err)?;
        }
        // The line, sampled every few pixels, and the markers.
        let px: Vec<(i32, i32)> = s.points.iter().map(|&pt| to_px(&chart, pt)).collect();
        for w in px.windows(2) {
            let (a, b) = (w[0], w[1]);
            let steps = (((b.0 - a.0).abs().max((b.1 - a.1).abs())) / 4).max(1);
            for k in 0..=steps {
                let t = k as f64 / steps as f64;
                samples
                    .push(((a.0 as f64 + t * (b.0 - a.0) as f64) as i32, (a.1 as f64 + t * (b.1 - a.1) as f64) as i32));
            }
        }
        samples.extend(px.iter().copied());
        let is_dashed = dashed(i);
        let anno = if is_dashed {
            chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 9, 5, line)).map_err(plot_err)?
        } else {
            chart.draw_series(LineSeries::new(s.points.iter().copied(), line)).map_err(plot_err)?
        };
        // plotters anchors legend samples 10 px inside the box, with 30 px
        // before the text: the sample spans x - 2 .. x + 26.
        anno.label(s.name.as_str()).legend(move |(x, y)| {
            let marker: Vec<(i32, i32)> = marker_shape(i, 5.0).into_iter().map(|(a, b)| (a + 12, b)).collect();
            let (a, b) = if is_dashed { ((-2, 7), (17, 26)) } else { ((-2, 12), (12, 26)) };
            EmptyElement::at((x, y))
                + PathElement::new(vec![(a.0, 0), (a.1, 0)], line)
                + PathElement::new(vec![(b.0, 0), (b.1, 0)], line)
                + Polygon::new(marker, c.filled())
        });
        chart
            .draw_series(
                s.points.iter().map(|&pt| EmptyElement::at(pt) + Polygon::new(marker_shape(i, 5.0), c.filled())),
            )
            .map_err(plot_err)?;
    }
    let names: Vec<&str> = p.series.iter().map(|s| s.name.as_str()).collect();
    let (pw, ph) = chart.plotting_area().dim_in_pixel();
    let size = legend_size(area, &names);
    let position = match p.legend {
        Legend::Auto => {
            let (x, y) = place_legend(&samples, size, (pw as i32, ph as i32));
            SeriesLabelPosition::Coordinate(x, y)
        }
        Legend::UpperRight => SeriesLabelPosition::UpperRight,
        Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
        Legend::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(120, 120, 120))
        .label_font((FONT_FAMILY, LEGEND_FONT))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Draws one panel into `area`: axis ranges from the data, ticks, scales.
fn render_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<()> {
    if let Kind::Bars(categories) = &p.kind {
        let top = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.1)).fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.12 } else { 1.0 };
        let n = categories.len().max(1);
        let xr = -0.5..n as f64 - 0.5;
        let xb: Vec<f64> = (0..n).map(|k| k as f64).collect();
        let (yb, yl) = linear_ticks(0.0, top, 8);
        return draw_panel(area, p, ticks(xr, (xb, vec![])), ticks(0.0..top, (yb, yl)));
    }
    // Base 2: draw log2(x) on a linear axis labelled with powers of two.
    let p2;
    let p = if p.x_scale == Scale::Log2 {
        let mut q = p.clone();
        for s in &mut q.series {
            s.points.retain(|pt| pt.0 > 0.0);
            s.points.iter_mut().for_each(|pt| pt.0 = pt.0.log2());
        }
        p2 = q;
        &p2
    } else {
        p
    };
    let log_x = p.x_scale == Scale::Log;
    let xr = range(p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)), log_x);
    let yr = range(
        p.series.iter().flat_map(|s| {
            s.points.iter().enumerate().flat_map(move |(k, q)| {
                let e = s.err.as_ref().map_or(0.0, |e| e[k]);
                [q.1 - if p.log_y { 0.0 } else { e }, q.1 + e]
            })
        }),
        p.log_y,
    );
    let xt = match p.x_scale {
        Scale::Log2 => ((xr.start.ceil() as i64..=xr.end.floor() as i64).map(|k| k as f64).collect(), vec![]),
        Scale::Log => log_ticks(xr.start, xr.end),
        Scale::Linear => linear_ticks(xr.start, xr.end, 10),
    };
    let yt = if p.log_y { log_ticks(yr.start, yr.end) } else { linear_ticks(yr.start, yr.end, 10) };
    match (log_x, p.log_y) {
        (false, false) => draw_panel(area, p, ticks(xr, xt), ticks(yr, yt)),
        (true, false) => draw_panel(area, p, ticks(xr.log_scale(), xt), ticks(yr, yt)),
        (false, true) => draw_panel(area, p, ticks(xr, xt), ticks(yr.log_scale(), yt)),
        (true, true) => draw_panel(area, p, ticks(xr.log_scale(), xt), ticks(yr.log_scale(), yt)),
    }
}

/// Renders the panels on a grid of `cols` columns (row by row) into a
/// `width × height` PNG at `path`, written under a temporary name and
/// renamed when complete.
pub fn line_chart(path: &Path, title: Option<&str>, panels: &[Panel], cols: usize, size: (u32, u32)) -> Result<()> {
    figure(path, title, panels, cols, size, None)
}

/// Table geometry: column widths and the pixel size of the whole block.
struct TableLayout {
    widths: Vec<i32>,
    right: Vec<bool>,
    width: i32,
    height: i32,
}

const CELL_FONT: u32 = 18;
const CELL_PAD: i32 = 16;
const ROW_H: i32 = 32;

/// A cell that reads as a number (right-aligned when its whole column does).
fn numeric(cell: &str) -> bool {
    let c = cell.trim();
    c == "n.a." || c == "—" || c.chars().next().is_some_and(|ch| ch.is_ascii_digit() || "+-−.".contains(ch))
}

fn table_layout(t: &Table) -> TableLayout {
    let font = (FONT_FAMILY, CELL_FONT).into_font();
    let width_of = |s: &str| font.box_size(s).map(|(w, _)| w as i32).unwrap_or(10 * s.chars().count() as i32);
    let n_cols = t.header.len();
    let mut widths: Vec<i32> = t.header.iter().map(|h| width_of(h)).collect();
    for r in &t.rows {
        for (j, c) in r.iter().enumerate().take(n_cols) {
            widths[j] = widths[j].max(width_of(c));
        }
    }
    let right = (0..n_cols).map(|j| j > 0 && t.rows.iter().all(|r| r.get(j).is_none_or(|c| numeric(c)))).collect();
    let table_w: i32 = widths.iter().map(|w| w + 2 * CELL_PAD).sum();
    let small = (FONT_FAMILY, 15).into_font();
    let title_w = (FONT_FAMILY, 22).into_font().box_size(&t.title).map(|(w, _)| w as i32).unwrap_or(0);
    let note_w = t.note.lines().map(|l| small.box_size(l).map(|(w, _)| w as i32).unwrap_or(0)).max().unwrap_or(0);
    let width = table_w.max(title_w).max(note_w) + 40;
    let height = 60 + ROW_H * (t.rows.len() as i32 + 1) + 16 + 24 * t.note.lines().count() as i32 + 16;
    TableLayout { widths, right, width, height }
}

fn draw_table<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, t: &Table, lay: &TableLayout) -> Result<()> {
    let font = (FONT_FAMILY, CELL_FONT).into_font();
    let width_of = |s: &str| font.box_size(s).map(|(w, _)| w as i32).unwrap_or(10 * s.chars().count() as i32);
    let table_w: i32 = lay.widths.iter().map(|w| w + 2 * CELL_PAD).sum();
    area.draw(&Text::new(t.title.clone(), (20, 16), (FONT_FAMILY, 22).into_font())).map_err(plot_err)?;
    let x0 = 20;
    let y0 = 56;
    let mut y = y0;
    for (k, cells) in std::iter::once(&t.header).chain(t.rows.iter()).enumerate() {
        if k > 0 && k % 2 == 0 {
            area.draw(&Rectangle::new([(x0, y), (x0 + table_w, y + ROW_H)], RGBColor(242, 246, 250).filled()))
                .map_err(plot_err)?;
        }
        let mut x = x0;
        for (j, cell) in cells.iter().enumerate().take(lay.widths.len()) {
            let cw = lay.widths[j] + 2 * CELL_PAD;
            let tx = if lay.right[j] { x + cw - CELL_PAD - width_of(cell) } else { x + CELL_PAD };
            area.draw(&Text::new(cell.clone(), (tx, y + 7), font.color(&BLACK))).map_err(plot_err)?;
            x += cw;
        }
        y += ROW_H;
        if k == 0 {
            area.draw(&PathElement::new(vec![(x0, y), (x0 + table_w, y)], BLACK.stroke_width(1))).map_err(plot_err)?;
        }
    }
    area.draw(&PathElement::new(vec![(x0, y0), (x0 + table_w, y0)], BLACK.stroke_width(2))).map_err(plot_err)?;
    area.draw(&PathElement::new(vec![(x0, y), (x0 + table_w, y)], BLACK.stroke_width(2))).map_err(plot_err)?;
    for (k, line) in t.note.lines().enumerate() {
        let style = (FONT_FAMILY, 15).into_font().color(&RGBColor(60, 60, 60));
        area.draw(&Text::new(line.to_string(), (x0, y + 14 + 24 * k as i32), style)).map_err(plot_err)?;
    }
    Ok(())
}

/// Renders a figure: an optional title, the panels on a grid of `cols`
/// columns filling `size` (width × height of the charts), and an optional
/// table underneath (the image widens to fit it). Written under a
/// temporary name and renamed when complete.
pub fn figure(
    path: &Path,
    title: Option<&str>,
    panels: &[Panel],
    cols: usize,
    size: (u32, u32),
    table: Option<&Table>,
) -> Result<()> {
    register_font()?;
    let lay = table.map(table_layout);
    let charts_h = if panels.is_empty() { 0 } else { size.1 };
    let width = size.0.max(lay.as_ref().map_or(0, |l| l.width as u32));
    let height = charts_h + lay.as_ref().map_or(0, |l| l.height as u32);
    let tmp = temporary(path)?;
    let result = (|| -> Result<()> {
        let root = BitMapBackend::new(&tmp, (width, height.max(1))).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (top, bottom) = root.split_vertically(charts_h);
        if !panels.is_empty() {
            let top = match title {
                Some(t) => top.titled(t, (FONT_FAMILY, 26)).map_err(plot_err)?,
                None => top,
            };
            let cols = cols.clamp(1, panels.len());
            let areas = top.split_evenly((panels.len().div_ceil(cols), cols));
            for (area, p) in areas.iter().zip(panels) {
                render_panel(area, p)?;
            }
        }
        if let (Some(t), Some(lay)) = (table, &lay) {
            draw_table(&bottom, t, lay)?;
        }
        root.present().map_err(plot_err)?;
        Ok(())
    })();
    finish(result, &tmp, path)
}

/// Renders a table (header row, then rows; text columns left-aligned,
/// numeric columns right-aligned) with a title and a footnote into a PNG.
pub fn table(path: &Path, title: &str, header: &[String], rows: &[Vec<String>], note: &str) -> Result<()> {
    let t = Table { title: title.into(), header: header.to_vec(), rows: rows.to_vec(), note: note.into() };
    figure(path, None, &[], 1, (400, 0), Some(&t))
}

/// A temporary name beside `path` that still ends in `.png` (plotters
/// picks the encoder from the extension).
fn temporary(path: &Path) -> Result<PathBuf> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the output directory", dir.display()))?;
    let name = path.file_name().with_context(|| format!("{}: not a file path", path.display()))?;
    Ok(dir.join(format!(".{}.{}.tmp.png", name.to_string_lossy(), std::process::id())))
}

fn finish(result: Result<()>, tmp: &Path, path: &Path) -> Result<()> {
    match result {
        Ok(()) => std::fs::rename(tmp, path).with_context(|| format!("{}: cannot write", path.display())),
        Err(e) => {
            let _ = std::fs::remove_file(tmp);
            Err(e.context(format!("{}: cannot draw", path.display())))
        }
    }
}

/// Width and height of a PNG file, from its IHDR chunk; `None` when the
/// file is not a PNG.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    if bytes.len() < 24 || bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&bytes[16..20]), be(&bytes[20..24])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_multiples() {
        let (bold, light) = linear_ticks(0.031, 0.19, 10);
        assert_eq!(bold.len(), 8, "{bold:?}");
        assert!((bold[0] - 0.04).abs() < 1e-12 && (bold[7] - 0.18).abs() < 1e-12, "{bold:?}");
        assert!(light.iter().all(|v| (0.031..=0.19).contains(v)));
        assert_eq!(linear_ticks(-1.0, 1.0, 4).0, vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
    }

    #[test]
    fn log_ticks_label_at_most_ten_values() {
        // Two decades and a half: 1, 2, 5 times the powers of ten.
        let (bold, light) = log_ticks(0.0015, 0.3);
        assert_eq!(bold.iter().map(tick).collect::<Vec<_>>(), ["0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2"]);
        assert!((19..=20).contains(&light.len()), "{light:?}");
        // About one decade: every multiple.
        let (bold, _) = log_ticks(2.2, 21.0);
        assert_eq!(bold.iter().map(tick).collect::<Vec<_>>(), ["3", "4", "5", "6", "7", "8", "9", "10", "20"]);
        // Within a decade without three multiples: linear ticks.
        let (bold, _) = log_ticks(0.031, 0.038);
        assert!(bold.len() >= 3, "{bold:?}");
        // Many decades: the powers only.
        assert_eq!(log_ticks(1e-3, 1e7).0.len(), 11);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(&0.05), "0.05");
        assert_eq!(tick(&45000.0), "45000");
        assert_eq!(tick_sci(&45000.0), "4.5e4");
        assert_eq!(tick_sci(&2e6), "2e6");
        assert_eq!(tick(&0.0002), "2e-4");
        assert_eq!(value_label(38465.23), "38465");
        assert_eq!(value_label(2.7482), "2.748");
    }

    #[test]
    fn the_legend_goes_where_no_data_is() {
        let area = (600, 400);
        let size = (150, 100);
        // Data along the top: the legend goes to a bottom corner.
        let top: Vec<(i32, i32)> = (0..600).step_by(5).map(|x| (x, 20)).collect();
        assert_eq!(place_legend(&top, size, area), (600 - 150 - 5, 400 - 100 - 5));
        // Nothing drawn: the upper right corner.
        assert_eq!(place_legend(&[], size, area), (600 - 150 - 5, 5));
        // A falling line from the upper left: the upper right is free.
        let falling: Vec<(i32, i32)> = (0..600).step_by(5).map(|x| (x, x * 2 / 3)).collect();
        assert_eq!(place_legend(&falling, size, area), (600 - 150 - 5, 5));
    }
}
