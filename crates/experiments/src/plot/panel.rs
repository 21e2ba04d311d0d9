//! One panel of a line or bar chart: series with colours and markers, error
//! bars, axes, and a legend placed where no data is.

use super::axes::{linear_ticks, log_ticks, range, tick, tick_pow2, tick_sci, ticks, value_label};
use super::chart::{FONT_FAMILY, Kind, Legend, Panel, Scale, plot_err};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The tab10 palette: distinct for up to ten series.
pub(super) const PALETTE: [RGBColor; 10] = [
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

/// A marker polygon of `size` pixels for series `i`: circle, square,
/// triangle up, diamond, triangle down, plus, pentagon, star, ...
pub(super) fn marker_shape(i: usize, size: f64) -> Vec<(i32, i32)> {
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
pub(super) fn dashed(i: usize) -> bool {
    i % 2 == 1
}

/// The legend's box (width, height) in pixels for these entries, as
/// plotters lays it out (30 px of sample line, 10 px margins).
pub(super) fn legend_size<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, names: &[&str]) -> (i32, i32) {
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
pub(super) fn place_legend(samples: &[(i32, i32)], (w, h): (i32, i32), (pw, ph): (i32, i32)) -> (i32, i32) {
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

pub(super) const LEGEND_FONT: u32 = 16;

pub(super) fn draw_panel<DB, X, Y>(area: &DrawingArea<DB, Shift>, p: &Panel, xs: X, ys: Y) -> Result<()>
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
pub(super) fn render_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<()> {
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
