//! A rendered table: columns sized to their text, numbers right-aligned.

use super::chart::{FONT_FAMILY, Table, plot_err};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Table geometry: column widths and the pixel size of the whole block.
pub(super) struct TableLayout {
    pub(super) widths: Vec<i32>,
    pub(super) right: Vec<bool>,
    pub(super) width: i32,
    pub(super) height: i32,
}

pub(super) const CELL_FONT: u32 = 18;

pub(super) const CELL_PAD: i32 = 16;

pub(super) const ROW_H: i32 = 32;

/// A cell that reads as a number (right-aligned when its whole column does).
pub(super) fn numeric(cell: &str) -> bool {
    let c = cell.trim();
    c == "n.a." || c == "—" || c.chars().next().is_some_and(|ch| ch.is_ascii_digit() || "+-−.".contains(ch))
}

pub(super) fn table_layout(t: &Table) -> TableLayout {
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

pub(super) fn draw_table<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    t: &Table,
    lay: &TableLayout,
) -> Result<()> {
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
