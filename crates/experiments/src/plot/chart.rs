//! What a chart shows: panels of series, tables, and the text style they
//! share.

use anyhow::anyhow;

pub(super) const FONT_FAMILY: &str = "sans-serif";

pub(super) fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
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
