//! How a long call reports its progress: passes over the data and rows done.
//!
//! Every function that reads a dataset takes an `&dyn Observer`. The library
//! never draws anything itself; a front end implements [`Observer`] (the
//! command line draws progress bars) or passes [`Silent`].

/// Receives the progress of passes over a dataset, one pass at a time, on
/// the thread that runs the pass.
///
/// Every method does nothing by default.
pub trait Observer: Sync {
    /// A pass named `name` (`statistics`, `sample`, `sketch 1`, `fit`,
    /// `featurize`, `predict`, `eval`, `split`, `load`, `generate`) starts
    /// over `total_rows` rows (0 when unknown).
    fn pass_started(&self, name: &str, total_rows: u64) {
        let _ = (name, total_rows);
    }

    /// `rows` more rows of the current pass are done (skipped rows count as
    /// done).
    fn rows_done(&self, rows: u64) {
        let _ = rows;
    }

    /// The current pass ended (successfully or not).
    fn pass_finished(&self) {}
}

/// The observer that reports nothing: the library's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Observer for Silent {}

/// Reports one pass to an observer: started on creation, finished when
/// dropped, so an early return by `?` still ends the pass.
pub(crate) struct PassProgress<'a> {
    observer: &'a dyn Observer,
}

impl<'a> PassProgress<'a> {
    /// Starts pass `name` over `total_rows` rows.
    pub(crate) fn start(observer: &'a dyn Observer, name: &str, total_rows: u64) -> Self {
        observer.pass_started(name, total_rows);
        PassProgress { observer }
    }

    /// `rows` more rows are done.
    pub(crate) fn rows_done(&self, rows: u64) {
        self.observer.rows_done(rows);
    }
}

impl Drop for PassProgress<'_> {
    fn drop(&mut self) {
        self.observer.pass_finished();
    }
}
