//! Progress reports: every pass starts, counts all its rows, and ends.

use crate::util::Fixture;
use kapprox::{FitConfig, MethodParams, Observer, SigmaSpec, fit};
use std::sync::Mutex;

/// Records `(pass, total rows, rows done)` per pass and checks the nesting.
#[derive(Default)]
struct Recorder {
    passes: Mutex<Vec<(String, u64, u64)>>,
    open: Mutex<bool>,
}

impl Observer for Recorder {
    fn pass_started(&self, name: &str, total_rows: u64) {
        let mut open = self.open.lock().unwrap();
        assert!(!*open, "pass {name} started inside another");
        *open = true;
        self.passes.lock().unwrap().push((name.to_string(), total_rows, 0));
    }

    fn rows_done(&self, rows: u64) {
        assert!(*self.open.lock().unwrap(), "rows outside a pass");
        self.passes.lock().unwrap().last_mut().unwrap().2 += rows;
    }

    fn pass_finished(&self) {
        let mut open = self.open.lock().unwrap();
        assert!(*open, "a pass finished twice");
        *open = false;
    }
}

#[test]
fn every_pass_reports_every_row() {
    let f = Fixture::new();
    // Nyström: a sample pass for the landmarks and σ, then the fit pass.
    let method = MethodParams { map: "nystrom".into(), n_components: 50, ..Default::default() }.check(1, None).unwrap();
    let cfg = FitConfig { sigmas: vec![SigmaSpec::Auto(1.0)], ..FitConfig::new(f.data(), method) };
    let recorder = Recorder::default();
    let (_, report) = fit(&cfg, &recorder).unwrap();
    assert_eq!(report.passes, 2);
    let passes = recorder.passes.into_inner().unwrap();
    assert_eq!(passes, [("sample".to_string(), 600, 600), ("fit".to_string(), 600, 600)]);
    assert!(!*recorder.open.lock().unwrap());
}
