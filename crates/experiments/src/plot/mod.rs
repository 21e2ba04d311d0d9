//! Plots of the experiments: line charts (optionally log-scaled, with error
//! bars) and rendered tables, as PNG through plotters' pure-Rust bitmap
//! backend.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered
//! with ab_glyph as `sans-serif`, so plots need no system fonts. Each
//! series gets its own colour (the tab10 palette) and marker shape, so
//! lines stay distinguishable in greyscale too.

mod axes;
mod chart;
mod panel;
mod table;

pub use axes::value_label;
pub use chart::{Kind, Legend, Panel, Scale, Series, Table};
pub use panel::color;

use anyhow::{Context, Result, anyhow};
use chart::{FONT_FAMILY, plot_err};
use panel::render_panel;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use table::{draw_table, table_layout};

/// DejaVu Sans (Bitstream Vera license, see `assets/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn register_font() -> Result<()> {
    static ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *ONCE.get_or_init(|| plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(anyhow!("the embedded font cannot be read")) }
}

/// Renders the panels on a grid of `cols` columns (row by row) into a
/// `width × height` PNG at `path`, written under a temporary name and
/// renamed when complete.
pub fn line_chart(path: &Path, title: Option<&str>, panels: &[Panel], cols: usize, size: (u32, u32)) -> Result<()> {
    figure(path, title, panels, cols, size, None)
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
    use super::axes::{linear_ticks, log_ticks, tick, tick_sci};
    use super::panel::place_legend;
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
