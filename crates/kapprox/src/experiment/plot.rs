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
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
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

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` points, drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Half-widths of vertical error bars, one per point.
    pub err: Option<Vec<f64>>,
}

/// Where a chart's legend goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Legend {
    /// Top right corner.
    #[default]
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

/// One chart.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// X-axis description, with units.
    pub x_label: String,
    /// Y-axis description, with units.
    pub y_label: String,
    /// X-axis scale.
    pub x_scale: Scale,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Legend position.
    pub legend: Legend,
    /// The lines.
    pub series: Vec<Series>,
}

/// Tick labels: three significant digits, no trailing zeros.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.0e}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
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

fn draw_panel<DB, X, Y>(area: &DrawingArea<DB, Shift>, p: &Panel, xs: X, ys: Y) -> Result<()>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    // A base-2 axis gets one tick per power of two.
    let x_ticks = match p.x_scale {
        Scale::Log2 => {
            let xs = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
            let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
            ((hi - lo).ceil() as usize + 2).max(2)
        }
        _ => 10,
    };
    let x_fmt: &dyn Fn(&f64) -> String = if p.x_scale == Scale::Log2 { &tick_pow2 } else { &tick };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(56)
        .y_label_area_size(78)
        .build_cartesian_2d(xs, ys)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 14))
        .light_line_style(RGBColor(238, 238, 238))
        .x_labels(x_ticks)
        .x_label_formatter(x_fmt)
        .y_label_formatter(&tick)
        .draw()
        .map_err(plot_err)?;
    for (i, s) in p.series.iter().enumerate() {
        let c = color(i);
        let line = ShapeStyle { color: c.to_rgba(), filled: false, stroke_width: 2 };
        if let Some(err) = &s.err {
            let bars = s.points.iter().zip(err).filter(|(_, e)| **e > 0.0).map(|(&(x, y), &e)| {
                // On a log axis a bar reaching zero would have no end: clip it.
                let lo = if p.log_y { (y - e).max(y * 0.05) } else { y - e };
                ErrorBar::new_vertical(x, lo, y, y + e, c.stroke_width(1), 8)
            });
            chart.draw_series(bars).map_err(plot_err)?;
        }
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), line))
            .map_err(plot_err)?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(-14, 0), (14, 0)], line)
                    + Polygon::new(marker_shape(i, 5.0), c.filled())
            });
        chart
            .draw_series(
                s.points.iter().map(|&pt| EmptyElement::at(pt) + Polygon::new(marker_shape(i, 5.0), c.filled())),
            )
            .map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .position(match p.legend {
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
        })
        .background_style(WHITE.mix(0.88))
        .border_style(BLACK)
        .label_font((FONT_FAMILY, 15))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Renders the panels on a grid of `cols` columns (row by row) into a
/// `width × height` PNG at `path`, written under a temporary name and
/// renamed when complete.
pub fn line_chart(path: &Path, title: Option<&str>, panels: &[Panel], cols: usize, size: (u32, u32)) -> Result<()> {
    register_font()?;
    let tmp = temporary(path)?;
    let result = (|| -> Result<()> {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let root = match title {
            Some(t) => root.titled(t, (FONT_FAMILY, 26)).map_err(plot_err)?,
            None => root,
        };
        let cols = cols.clamp(1, panels.len().max(1));
        let areas = root.split_evenly((panels.len().div_ceil(cols).max(1), cols));
        for (area, p) in areas.iter().zip(panels) {
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
                        [q.1, q.1 + e]
                    })
                }),
                p.log_y,
            );
            match (log_x, p.log_y) {
                (false, false) => draw_panel(area, p, xr, yr)?,
                (true, false) => draw_panel(area, p, xr.log_scale(), yr)?,
                (false, true) => draw_panel(area, p, xr, yr.log_scale())?,
                (true, true) => draw_panel(area, p, xr.log_scale(), yr.log_scale())?,
            }
        }
        root.present().map_err(plot_err)?;
        Ok(())
    })();
    finish(result, &tmp, path)
}

/// Renders a table (header row, then rows; the first column left-aligned,
/// the others right-aligned) with a title and a footnote into a PNG.
pub fn table(path: &Path, title: &str, header: &[String], rows: &[Vec<String>], note: &str) -> Result<()> {
    register_font()?;
    let font = (FONT_FAMILY, 18).into_font();
    let bold = (FONT_FAMILY, 18).into_font().color(&BLACK);
    let pad = 18i32;
    let row_h = 32i32;
    // Column widths from the text extents.
    let width_of = |s: &str| font.box_size(s).map(|(w, _)| w as i32).unwrap_or(10 * s.len() as i32);
    let n_cols = header.len();
    let mut widths: Vec<i32> = header.iter().map(|h| width_of(h)).collect();
    for r in rows {
        for (j, c) in r.iter().enumerate().take(n_cols) {
            widths[j] = widths[j].max(width_of(c));
        }
    }
    let table_w: i32 = widths.iter().map(|w| w + 2 * pad).sum();
    let title_w = width_of(title) + 40;
    let note_w = note.lines().map(width_of).max().unwrap_or(0) + 40;
    let w = (table_w + 40).max(title_w).max(note_w).max(400) as u32;
    let note_lines = note.lines().count() as i32;
    let h = (70 + row_h * (rows.len() as i32 + 1) + 20 + 26 * note_lines + 20) as u32;
    let tmp = temporary(path)?;
    let result = (|| -> Result<()> {
        let root = BitMapBackend::new(&tmp, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        root.draw(&Text::new(title.to_string(), (20, 18), (FONT_FAMILY, 24).into_font())).map_err(plot_err)?;
        let x0 = 20;
        let y0 = 64;
        let mut y = y0;
        for (k, cells) in std::iter::once(header.to_vec()).chain(rows.iter().cloned()).enumerate() {
            if k > 0 && k % 2 == 0 {
                root.draw(&Rectangle::new([(x0, y), (x0 + table_w, y + row_h)], RGBColor(242, 246, 250).filled()))
                    .map_err(plot_err)?;
            }
            let mut x = x0;
            for (j, cell) in cells.iter().enumerate().take(n_cols) {
                let cw = widths[j] + 2 * pad;
                let tw = width_of(cell);
                let tx = if j == 0 { x + pad } else { x + cw - pad - tw };
                let style = if k == 0 { bold.clone() } else { font.color(&BLACK) };
                root.draw(&Text::new(cell.clone(), (tx, y + 7), style)).map_err(plot_err)?;
                x += cw;
            }
            y += row_h;
            if k == 0 {
                root.draw(&PathElement::new(vec![(x0, y), (x0 + table_w, y)], BLACK.stroke_width(2)))
                    .map_err(plot_err)?;
            }
        }
        root.draw(&PathElement::new(vec![(x0, y0), (x0 + table_w, y0)], BLACK.stroke_width(2))).map_err(plot_err)?;
        root.draw(&PathElement::new(vec![(x0, y), (x0 + table_w, y)], BLACK.stroke_width(2))).map_err(plot_err)?;
        for (k, line) in note.lines().enumerate() {
            let style = (FONT_FAMILY, 15).into_font().color(&RGBColor(70, 70, 70));
            root.draw(&Text::new(line.to_string(), (x0, y + 16 + 24 * k as i32), style)).map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
        Ok(())
    })();
    finish(result, &tmp, path)
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
