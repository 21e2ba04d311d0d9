//! Stream a Parquet directory with kapprox-io, accumulate ridge statistics
//! with kapprox-core (one row in five held out by its row id), and choose α
//! and solve with kapprox-solve: linear ridge on the raw columns.

use kapprox_core::Moments;
use kapprox_io::{ConvertOptions, Dataset, LabelSpec, ReadOptions};
use ndarray::Axis;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Any Parquet directory will do; here the CPU data shipped with kapprox.
    let dir = tempfile::tempdir()?;
    let raw = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cpu_rks_train.tsv.gz");
    let opts = ConvertOptions::new().with_label(LabelSpec::Last).with_overwrite(true);
    kapprox_io::convert(raw.as_ref(), dir.path(), &opts, &mut |_| {})?;

    let ds = Dataset::open(dir.path())?;
    let (features, label) = ds.resolve_columns(&LabelSpec::Hint)?;
    let (mut train, mut valid) = (Moments::new(features.len(), 1), Moments::new(features.len(), 1));
    for chunk in ds.reader(ReadOptions::new(features).with_label(label).with_chunk_rows(4096))? {
        let chunk = chunk?;
        let y = chunk.y.as_ref().expect("a label column").view().insert_axis(Axis(1));
        let (fit_rows, held_out): (Vec<usize>, Vec<usize>) =
            (0..chunk.n_rows()).partition(|&i| chunk.row_id(i) % 5 != 0);
        train.update_selected(chunk.x.view(), y, &fit_rows);
        valid.update_selected(chunk.x.view(), y, &held_out);
    }
    train.flush();
    valid.flush();

    let alphas = kapprox_solve::log_grid(1e-3, 1e5, 17)?;
    let choice = kapprox_solve::holdout(&train, &valid, &alphas)?;
    let alpha = alphas[choice.best_index];
    let model = kapprox_solve::Ridge::params().with_alpha(alpha).check()?.fit(&train)?.model;
    let rmse = choice.mean_mse[choice.best_index].sqrt();
    println!("{} weights, alpha {alpha:.2e}, held-out RMSE {rmse:.3}", model.coef.nrows());
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
