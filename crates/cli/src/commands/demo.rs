//! `demo`: the whole chain on the CPU data shipped in `data/`.

use super::output::line;
use super::print_json;
use crate::args::DemoArgs;
use crate::bars::Bars;
use anyhow::Result;
use kapprox::demo::DemoConfig;

/// `kapprox demo`.
pub(crate) fn demo(a: &DemoArgs, bars: &Bars) -> Result<()> {
    let cfg = DemoConfig { data: a.data.clone(), features: a.features, seed: a.seed, work_dir: a.work_dir.clone() };
    let r = kapprox::demo::run(&cfg, bars)?;
    let (m, report) = (&r.test, &r.fit);
    if a.json {
        print_json(&serde_json::json!({
            "dataset": "cpu (Rahimi & Recht split): 6554 train / 819 test rows, 21 features",
            "map": r.map,
            "test": m,
            "fit": report,
            "seconds": r.seconds,
        }))?;
    } else {
        let seconds = |k: &str| r.seconds.get(k).copied().unwrap_or(0.0);
        line("kapprox demo: Gaussian random Fourier features + ridge on the CPU data (6554 train / 819 test rows)")?;
        line(&format!(
            "  features l = {}, sigma = {:.4} (median rule x {:.1}), alpha = {:.3e}, chosen on a 20% validation split",
            a.features,
            report.sigma,
            report.sigma / report.median_distance.unwrap_or(report.sigma),
            report.alpha
        ))?;
        line(&format!(
            "  test RMSE {:.4}   relative RMSE {:.4}   MAE {:.4}   R² {:.4}",
            m.rmse, m.relative_rmse, m.mae, m.r2
        ))?;
        line(&format!(
            "  time: fit {:.2} s ({} pass(es)), eval {:.2} s, total {:.2} s",
            seconds("fit"),
            report.passes,
            seconds("eval"),
            seconds("total")
        ))?;
    }
    Ok(())
}
