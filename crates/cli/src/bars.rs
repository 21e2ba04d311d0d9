//! Progress bars for passes over the data (stderr, hidden when quiet or not
//! a terminal): the command line's [`Observer`].

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kapprox::Observer;
use std::sync::Mutex;

/// One bar per pass over `total` rows, showing rows/s and the ETA.
pub(crate) struct Bars {
    hidden: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Bars {
    /// Bars that draw unless `hidden` (`--quiet`, `--json`).
    pub(crate) fn new(hidden: bool) -> Self {
        Bars { hidden, current: Mutex::new(None) }
    }

    /// A bar over `total` rows labelled `label`.
    pub(crate) fn bar(&self, total: u64, label: &str) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(4));
        if self.hidden {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>12} [{bar:30}] {human_pos}/{human_len} rows  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar
    }

    fn with_current(&self, f: impl FnOnce(&mut Option<ProgressBar>)) {
        let mut current = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut current);
    }
}

impl Observer for Bars {
    fn pass_started(&self, name: &str, total_rows: u64) {
        let bar = self.bar(total_rows, name);
        self.with_current(|c| *c = Some(bar));
    }

    fn rows_done(&self, rows: u64) {
        self.with_current(|c| {
            if let Some(bar) = c {
                bar.inc(rows);
            }
        });
    }

    fn pass_finished(&self) {
        self.with_current(|c| {
            if let Some(bar) = c.take() {
                bar.finish_and_clear();
            }
        });
    }
}
